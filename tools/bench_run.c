/*
 * bench_run.c — `kiln bench`'s measuring (bench.c parses): the groups on
 * one runtime, or with --untuned (bench_untuned.c) on two in rounds; then
 * the tables, --compare's, and the files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "bench_cmd.h"
#include "cli.h"
#include "kiln/kiln.h"

/* Puts the records in the order of the tables: by group, then by row (in
 * the order first measured), then by peer; the CPU peers run last. */
static void sort_records(bench_records *rs)
{
  size_t key[BENCH_MAX_RECORDS];
  for (size_t i = 0; i < rs->n; i++) {
    const bench_record *r = &rs->r[i];
    size_t group = 0, row = 0;
    while (rs->r[group].spec != r->spec)
      group++;
    while (rs->r[row].spec != r->spec || rs->r[row].size != r->size)
      row++;
    key[i] = (group * BENCH_MAX_RECORDS + row) * BENCH_MAX_PEERS +
             (size_t)bench_peer_index(r->spec, r->backend);
  }
  for (size_t i = 1; i < rs->n; i++) { /* insertion: stable, and few records */
    bench_record r = rs->r[i];
    size_t k = key[i], j = i;
    for (; j > 0 && key[j - 1] > k; j--) {
      rs->r[j] = rs->r[j - 1];
      key[j] = key[j - 1];
    }
    rs->r[j] = r;
    key[j] = k;
  }
}

/* The run: the device, its driver and platform, kiln's version, and the
 * time, now. */
static void describe_run(kiln_runtime *rt, bench_run *run)
{
  const kiln_device_info *d = kiln_runtime_device(rt);
  time_t now = time(NULL);
  struct tm utc;
  *run = (bench_run){.device = d->name,
                     .driver = d->driver_version,
                     .platform = d->platform_name,
                     .kiln = kiln_version()};
  if (gmtime_r(&now, &utc))
    strftime(run->time, sizeof run->time, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* A runtime on the device kiln picks; without the device's tuning record
 * (its parameters and per-shape choices) when untuned. */
static kiln_runtime *open_runtime(int untuned)
{
  kiln_options o;
  kiln_options_init(&o);
  o.no_tuning = untuned;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(&o, &rt) != KILN_OK)
    kiln_cli_say("kiln bench", kiln_last_error(NULL));
  return rt;
}

/* What one `kiln bench` holds while it measures: OLD.json's cases with
 * --compare, the runtime (and with --untuned the one without the tuning
 * record, and what it knows of both), and the records of each round:
 * ts[0 .. rounds - 1], then the median round's at ts[rounds]; us alike. */
typedef struct session {
  bench_old *old;
  kiln_runtime *rt, *plain;
  bench_untuned u;
  bench_records *ts, *us;
  int rounds;
} session;

static void session_close(session *x)
{
  free(x->ts);
  free(x->us);
  bench_untuned_close(&x->u);
  kiln_cli_runtime_destroy(x->plain);
  kiln_cli_runtime_destroy(x->rt);
  bench_old_free(x->old);
}

/* Opens what x holds for the options o; 0, or 1 after a line on stderr. */
static int session_open(session *x, const bench_args *o)
{
  *x = (session){.rounds = o->untuned ? BENCH_UNTUNED_ROUNDS : 1};
  if (o->compare && bench_old_load(o->compare, &x->old) != 0)
    return 1;
  x->rt = open_runtime(0);
  x->plain = o->untuned && x->rt ? open_runtime(1) : NULL;
  if (x->plain)
    bench_untuned_open(&x->u, x->rt, x->plain);
  x->ts = calloc((size_t)x->rounds + 1, sizeof *x->ts);
  x->us = o->untuned ? calloc((size_t)x->rounds + 1, sizeof *x->us) : NULL;
  if (!x->rt || !x->ts || (o->untuned && (!x->plain || !x->us))) {
    if (x->rt && (!o->untuned || x->plain))
      fprintf(stderr, "kiln bench: out of host memory\n");
    session_close(x);
    return 1;
  }
  return 0;
}

/* Runs group gr with the options a on x's runtimes, each round into its
 * records: with --untuned tuned and untuned in turn, T U, U T, T U. 0, or
 * 1 when a run failed. */
static int measure_group(session *x, const bench_group *gr, const bench_args *a)
{
  int failed = 0, untuned_too = x->us != NULL;
  for (int k = 0; k < x->rounds; k++)
    for (int side = 0; side < (untuned_too ? 2 : 1); side++) {
      int untuned = untuned_too && side != (k & 1);
      bench_records *r = untuned ? &x->us[k] : &x->ts[k];
      if (untuned_too)
        fprintf(stderr, "kiln bench %s: round %d of %d, %s\n", gr->spec->op, k + 1,
                x->rounds, untuned ? "untuned" : "tuned");
      r->spec = gr->spec;
      r->repeats = a->repeats;
      failed |= gr->run(untuned ? x->plain : x->rt, a, r) != 0;
    }
  return failed;
}

/* The results of the groups measured: --compare's comparison, or the
 * table (and the files), then --untuned's table. The exit status. */
static int report(session *x, const bench_spec *s, const bench_args *o, bench_records *rs,
                  int cases)
{
  int rc = 0;
  if (x->old && !cases)
    fprintf(stderr, "kiln bench: --compare %s has no case of %s\n", o->compare,
            s ? s->op : "the groups kiln bench knows");
  else if (x->old)
    rc = (bench_compare(x->old, rs, o->tolerance) > 0) | bench_write_files(o, rs);
  else if (rs->n)
    rc = bench_print(s, o, rs);
  if (x->us && !o->json)
    bench_print_untuned(&x->u, rs, &x->us[x->rounds], x->ts, x->us, x->rounds);
  return rc;
}

int bench_run_groups(const bench_group *const *gs, size_t count, const bench_spec *s,
                     const bench_args *o)
{
  session x;
  if (session_open(&x, o) != 0)
    return 1;
  describe_run(x.rt, &x.ts[0].run);
  double t0 = bench_now_ms();
  int failed = 0, cases = 0;
  if (!s)
    fprintf(stderr, "kiln bench: the whole suite on %s%s\n", x.ts[0].run.device,
            o->quick ? " (--quick: small sizes, figures not to quote)" : "");
  for (size_t g = 0; g < count; g++) {
    bench_args a = *o;
    if (x.old && !bench_old_cases(x.old, gs[g]->spec, &a))
      continue; /* OLD.json has none of this group's cases */
    cases++;
    if (!s && !x.old) /* the suite: each group's own sizes and peers */
      bench_fill_defaults(gs[g]->spec, &a, 0, o->repeats > 0, 0);
    else if (x.old)
      bench_fill_defaults(gs[g]->spec, &a, 1, o->repeats > 0, 1); /* the repeats */
    failed |= measure_group(&x, gs[g], &a);
  }
  bench_records *rs = &x.ts[0];
  if (o->untuned) {
    bench_median_round(x.ts, x.rounds, &x.ts[x.rounds]);
    bench_median_round(x.us, x.rounds, &x.us[x.rounds]);
    rs = &x.ts[x.rounds];
  }
  if (!s)
    fprintf(stderr, "kiln bench: %zu results in %.1f s%s\n", rs->n,
            (bench_now_ms() - t0) / 1e3, failed ? "; a group FAILED (above)" : "");
  sort_records(rs);
  int rc = report(&x, s, o, rs, cases);
  int none = x.old && !cases;
  session_close(&x);
  return failed || rc || none ? 1 : 0;
}
