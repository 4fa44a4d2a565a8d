/*
 * cli.h — the commands of the kiln program that live in their own files,
 * and what the commands share (kiln.c).
 */
#ifndef KILN_TOOLS_CLI_H
#define KILN_TOOLS_CLI_H

#include <signal.h>
#include <stdio.h>

#include "kiln/kiln.h"
#include "opts.h"

/* The commands that live in their own files, each with its rows (opts.h):
 * `kiln info` (info.c); `kiln cache`, `kiln kernels` and `kiln build`
 * (cache.c); `kiln bench` and its groups (bench.c and the bench_*.c beside
 * it); `kiln tune` (tune.c); `kiln check` (check.c); `kiln run` and its
 * operations (run.c and the run_*.c beside it). */
extern const cli_command kiln_info_command, kiln_cache_command, kiln_kernels_command,
  kiln_build_command, kiln_bench_command, kiln_tune_command, kiln_check_command,
  kiln_run_command;

/* `kiln tune --clblast [--tuners DIR]` for rt's device (tune_clblast.c):
 * runs CLBlast's GEMM tuners from DIR (NULL: PATH) and keeps their best
 * parameters in the record where they beat CLBlast's own in a rematch;
 * times (--rematch-times, the tests' seam; NULL: time them) as
 * kiln_cli_clblast_rematch() takes it; stops between tuners once *stop is
 * set. Returns the exit status. */
int kiln_cli_tune_clblast(kiln_runtime *rt, const char *dir, const char *times,
                          const volatile sig_atomic_t *stop);

/* `kiln tune --clblast-check DEVICE DIR KERNEL PREC [time=N,...]
 * NAME=VALUE...` (tune_clblast_check.c; argv after --clblast-check): the
 * process that checks a tuner's candidate in CLBlast's GEMM, or times it.
 * Exit status 0 when right. */
int kiln_cli_clblast_check(int argc, char **argv);

/* One candidate of `kiln tune --clblast` for its rematch. */
typedef struct kiln_cli_clblast_job {
  const kiln_device_info *dev;
  const char *kernel, *tag, *label; /* "Xgemm", "f32", "Xgemm f32" */
  kiln_dtype dtype;
  size_t nparams;
  char **params;          /* "NAME=VALUE" */
  const char *times_file; /* --rematch-times, or NULL */
} kiln_cli_clblast_job;

/* The rematch (tune_clblast_rematch.c): CLBlast's GEMM with j's parameters
 * against its own at the device's bench sizes, scratch in dir, each size's
 * verdict on stderr and the outcome in one line into summary. 1: keep it,
 * 0: refuse it, -1: the rematch failed. */
int kiln_cli_clblast_rematch(const kiln_cli_clblast_job *j, const char *dir,
                             char *summary, size_t size);

/* The sizes (at most 16) and given times (ms, 0 for "time it") of a
 * --rematch-times file: how many, or 0 after saying why. */
size_t kiln_cli_clblast_read_times(const char *file, size_t *sizes, double given[][2]);

/* Whether three n x n matrices of elem bytes fit d (tune_clblast_rematch.c). */
int kiln_cli_clblast_fits(const kiln_device_info *d, size_t n, size_t elem);

/* Runs this program with argv, stdout and stderr appended to log, and
 * waits: 0 when it exited 0, else -1 (tune_clblast_rematch.c). */
int kiln_cli_spawn_self(char *const argv[], const char *log);

/* One line on whether the runtime's device is tuned (tune.c): its record,
 * or why none applies. */
void kiln_cli_print_tuning(FILE *out, kiln_runtime *rt);

/* Writes "who: msg" and a newline on stderr as one line (kiln.c): the line
 * breaks of msg (a library message may list the devices, one a line) become
 * "; ", or a space after a colon, and the indentation after them goes. So a
 * failure is always one line, whatever the library said. */
void kiln_cli_say(const char *who, const char *msg);

/* A whole file (or stdin for "-") as a malloc'd string; NULL when it cannot
 * be read or memory runs out. */
char *kiln_cli_read_file(const char *path);

/* For the commands that time (bench, tune), before any OpenCL call: sets
 * POCL_AFFINITY=1 unless the environment says otherwise, so that PoCL pins
 * its worker threads one a core. Unpinned, the scheduler sometimes put two
 * of them on one core for a whole run: GEMM 1024 ran at 116-229 GFLOP/s
 * from one process to the next, pinned at 221-231. The library leaves
 * PoCL's threads alone: several processes on one machine (MPI ranks) would
 * all pin theirs to the same first cores. */
void kiln_cli_pin_pocl(void);

/* Says "kiln WHAT: <status> (<name>): <rt's last error>" as one line on
 * stderr (kiln.c); returns 1, the exit status of a failed command. */
int kiln_cli_fail(const char *what, kiln_status st, const kiln_runtime *rt);

/* One line on the runtime's kernel cache (kiln.c): its folder, and whether
 * it is a team folder; or, when it is off, why, as the runtime's
 * diagnostics say it, with the fix. */
void kiln_cli_print_cache(FILE *out, kiln_runtime *rt);

/* Why rt's kernel cache is off, into buf: the runtime's diagnostics' words
 * (what is wrong and the fix), or that KILN_CACHE=0 or no_cache asked for
 * it. For every line that says the cache is off. */
const char *kiln_cli_cache_off_why(kiln_runtime *rt, char *buf, size_t size);

/* The notes of diagnostics (a runtime's or a device list's) on installed
 * OpenCL drivers that no .icd file names, one "note: " line each with the
 * fix (drivers.c). */
void kiln_cli_print_driver_notes(FILE *out, const char *diagnostics);

/* `kiln devices --icd-dir DIR` (drivers.c): writes DIR for OCL_ICD_VENDORS
 * (kiln_driver_list_write_icd_dir()), says what it wrote on stderr, and
 * prints the export lines alone on stdout. Returns the exit status. */
int kiln_cli_icd_dir(const char *dir);

/* What every command does with its runtime at the end (kiln.c): with
 * profiling on (KILN_PROFILE=1, KILN_TRACE), waits for the queue and prints
 * the profile table on stdout; then destroys the runtime, and says on
 * stderr when that fails (a trace that could not be written). */
void kiln_cli_runtime_destroy(kiln_runtime *rt);

#endif /* KILN_TOOLS_CLI_H */
