/*
 * bench_cmd.h — what the files of the `kiln bench` command share (bench.c:
 * its options; bench_run.c: the measuring; bench_untuned.c: --untuned);
 * the groups need only bench.h.
 */
#ifndef KILN_TOOLS_BENCH_CMD_H
#define KILN_TOOLS_BENCH_CMD_H

#include "bench.h"

/* A group's sizes, repeats and peers where the options leave them out. */
void bench_fill_defaults(const bench_spec *s, bench_args *a, int sizes_given,
                         int repeats_given, int backends_given);

/* Measures `count` groups with the options o into one set of records and
 * prints it (s: the one group's table, NULL: the suite's). With --untuned,
 * each group runs BENCH_UNTUNED_ROUNDS times on this runtime and as many
 * on a second one without the tuning record, in turn, and the table is of
 * the median rounds. The exit status. */
int bench_run_groups(const bench_group *const *gs, size_t count, const bench_spec *s,
                     const bench_args *o);

/* ---- --untuned (bench_untuned.c) ----------------------------------------- */

/* --untuned's rounds: each group runs this many times on each runtime,
 * tuned and untuned in turn and in alternating order, so that a slow spell
 * of the machine (a shared VM's last seconds) falls on both sides. */
#define BENCH_UNTUNED_ROUNDS 3

/* What --untuned knows of its two runtimes: whether a tuning record applies
 * to the tuned one at all, and whether it hands CLBlast parameters (kiln
 * tune --clblast); kiln_tuning_get() of the tuned runtime and of the
 * untuned one (the rules' values), parsed (json_object), NULL when either
 * cannot be had. */
typedef struct bench_untuned {
  int record_applies, clblast_tuned;
  struct json_object *tuned_params, *rule_params;
} bench_untuned;

/* Fills u from the tuned runtime rt and the untuned one plain. */
void bench_untuned_open(bench_untuned *u, kiln_runtime *rt, kiln_runtime *plain);

/* Frees what bench_untuned_open() parsed. */
void bench_untuned_close(bench_untuned *u);

/* Into out, every record of rounds[0] as its median round (by speed)
 * measured it: a figure that one slow round cannot move. */
void bench_median_round(const bench_records *rounds, int n, bench_records *out);

/* --untuned: every figure tuned beside untuned (each its median round),
 * their ratio, and its lowest and highest round by round. The noise rows
 * (noise_row()) run the same code on both sides, so how far their ratios
 * stray from 1 is the run's noise: a kiln figure is named slower when it
 * was slower in every round and further below 1 than the noise rows of its
 * case (measured in the same rounds) stray either way, or in a group
 * without any, than the furthest noise row of the run; and never by less
 * than the noise rows' median stray (a case whose one host peer read 1.00
 * by chance would otherwise name a kiln row at 0.99). */
void bench_print_untuned(const bench_untuned *u, const bench_records *tuned,
                         const bench_records *untuned, const bench_records *t_rounds,
                         const bench_records *u_rounds, int rounds);

#endif /* KILN_TOOLS_BENCH_CMD_H */
