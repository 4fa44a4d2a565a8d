/*
 * tune_clblast_rematch.c — the rematch of `kiln tune --clblast`: a tuner's
 * result, right in CLBlast's GEMM (tune_clblast_check.c), is kept only when
 * CLBlast's GEMM runs faster with it than with CLBlast's own parameters at
 * the sizes `kiln bench gemm` measures on the device, timed side by side.
 *
 * Why: a tuner times its kernel at one size, and what wins there can lose
 * at others; on an H200 the tuners' best at 512^3 halved CLBlast at 4096^3
 * and 8192^3 (docs/performance.md has the figures). So, as kiln's own tuner
 * rematches its best against its baseline, each side runs three rounds in
 * turn, in alternating order (ABBA), each round a process of its own
 * (CLBlast keeps parameters for its whole process and cannot be given its
 * own back): `kiln tune --clblast-check ... time=N,...`, which writes the
 * median of its runs at each size. The medians of the rounds are compared
 * size by size; within 3% of each other (kiln's own tuner's margin) they
 * are alike, the noise of a run. A result is kept when it is faster at one
 * size at least and slower at none: a kernel that CLBlast's routine does
 * not run at a size (the direct kernel above its switch) is alike there.
 *
 * --rematch-times FILE is the tests' seam: its lines give the sizes, each
 * alone (timed) or with CLBlast's own and the tuned time in ms (taken as
 * measured), so that a test decides the outcome, not a device's noise.
 */
#define _GNU_SOURCE
#define KILN_EXPERIMENTAL
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "kiln/kiln.h"

extern char **environ;

enum { ROUNDS = 3, MAX_SIZES = 16 };
#define MARGIN 1.03 /* as kiln's own tuner's: within it, alike */

int kiln_cli_clblast_fits(const kiln_device_info *d, size_t n, size_t elem)
{
  uint64_t one = (uint64_t)n * n * elem;
  return one <= d->max_alloc_bytes && 3 * one <= d->global_mem_bytes / 2;
}

int kiln_cli_spawn_self(char *const argv[], const char *log)
{
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    fprintf(stderr, "cannot start /proc/self/exe: %s\n", strerror(err));
    return -1;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The sizes of `kiln bench gemm` on d that fit its memory: a GPU's are
 * those its notes bench at (docs/gpu.md), a CPU's the bench's defaults. */
static size_t device_sizes(const kiln_device_info *d, size_t elem, size_t *out)
{
  static const size_t gpu[] = {256, 1024, 2048, 4096, 8192};
  static const size_t cpu[] = {128, 256, 512, 1024, 2048};
  const size_t *v = d->type & KILN_DEVICE_GPU ? gpu : cpu;
  size_t n = 0;
  for (size_t i = 0; i < 5; i++)
    if (kiln_cli_clblast_fits(d, v[i], elem))
      out[n++] = v[i];
  return n;
}

/* The sizes and given times of the tests' file: how many, or 0 (said). */
size_t kiln_cli_clblast_read_times(const char *file, size_t *sizes, double given[][2])
{
  char *text = kiln_cli_read_file(file);
  size_t n = 0;
  for (char *line = text ? strtok(text, "\n") : NULL; line && n < MAX_SIZES;
       line = strtok(NULL, "\n")) {
    unsigned long v = 0;
    double a = 0, b = 0;
    int k = sscanf(line, "%lu %lf %lf", &v, &a, &b);
    if ((k != 1 && k != 3) || v == 0 || v > 65536) {
      n = 0;
      break;
    }
    sizes[n] = v;
    given[n][0] = k == 3 ? a : 0;
    given[n++][1] = k == 3 ? b : 0;
  }
  free(text);
  if (n == 0)
    fprintf(stderr,
            "kiln tune --clblast: --rematch-times %s: not lines of N or N MS MS\n", file);
  return n;
}

/* One round of one side (tuned: with params) in a process of its own:
 * the times of the sizes not given into t[]: 0, or -1 (said). */
static int time_round(const kiln_cli_clblast_job *j, int tuned, const size_t *sizes,
                      size_t n, double given[][2], double *t, const char *dir)
{
  char list[256] = "time=", sel[32], scratch[4096], log[4096], path[4200];
  size_t len = strlen(list), timed = 0;
  for (size_t i = 0; i < n; i++)
    if (given[i][0] == 0) {
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%zu", timed++ ? "," : "",
                              sizes[i]);
    } else {
      t[i] = given[i][tuned];
    }
  if (timed == 0)
    return 0;
  static unsigned seq;
  snprintf(sel, sizeof sel, "%u:%u", j->dev->platform_index, j->dev->device_index);
  snprintf(scratch, sizeof scratch, "%s/time-%u", dir, seq++);
  snprintf(log, sizeof log, "%s/time.log", dir);
  char *argv[48] = {
    "kiln",         "tune", "--clblast-check", sel, scratch, (char *)j->kernel,
    (char *)j->tag, list};
  size_t argc = 8;
  for (size_t i = 0; tuned && i < j->nparams && argc < 47; i++)
    argv[argc++] = j->params[i];
  argv[argc] = NULL;
  if (mkdir(scratch, 0700) != 0 || kiln_cli_spawn_self(argv, log) != 0) {
    snprintf(path, sizeof path, "%s/verdict", scratch);
    char *why = kiln_cli_read_file(path);
    fprintf(stderr, "  %s: timing CLBlast's GEMM %s failed: %s", j->label,
            tuned ? "tuned" : "with its own parameters",
            why && *why ? why : "(see time.log)\n");
    free(why);
    return -1;
  }
  snprintf(path, sizeof path, "%s/times", scratch);
  char *text = kiln_cli_read_file(path), *p = text;
  for (size_t i = 0; p && i < n; i++) {
    unsigned long v;
    double ms;
    int used;
    if (given[i][0] != 0)
      continue;
    if (sscanf(p, "%lu %lf%n", &v, &ms, &used) != 2 || v != sizes[i])
      break;
    t[i] = ms, p += used;
  }
  free(text);
  for (size_t i = 0; i < n; i++)
    if (!(t[i] > 0)) {
      fprintf(stderr, "  %s: timing CLBlast's GEMM gave no time at %zu^3 (%s)\n",
              j->label, sizes[i], path);
      return -1;
    }
  return 0;
}

static double median3(const double *v)
{
  double a = v[0], b = v[1], c = v[2];
  return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

int kiln_cli_clblast_rematch(const kiln_cli_clblast_job *j, const char *dir,
                             char *summary, size_t size)
{
  size_t sizes[MAX_SIZES], n;
  double given[MAX_SIZES][2] = {{0}}, t[2][ROUNDS][MAX_SIZES] = {{{0}}};
  n = j->times_file ? kiln_cli_clblast_read_times(j->times_file, sizes, given)
                    : device_sizes(j->dev, kiln_dtype_size(j->dtype), sizes);
  if (n == 0) {
    snprintf(summary, size, "no size to rematch at");
    return -1;
  }
  fprintf(stderr,
          "  %s: rematch against CLBlast's own parameters, %d rounds each:", j->label,
          ROUNDS);
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, " %zu^3", sizes[i]);
  fprintf(stderr, "\n");
  for (int r = 0; r < ROUNDS; r++)
    for (int k = 0; k < 2; k++) {
      int tuned = r % 2 ? !k : k; /* ABBA: a slow spell falls on both */
      if (time_round(j, tuned, sizes, n, given, t[tuned][r], dir) != 0) {
        snprintf(summary, size, "the rematch failed (%s has the logs)", dir);
        return -1;
      }
    }
  size_t faster = 0, slower = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < n; i++) {
    double own[ROUNDS], tuned[ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
      own[r] = t[0][r][i], tuned[r] = t[1][r][i];
    double a = median3(own), b = median3(tuned), ratio = b > 0 ? a / b : 0;
    const char *verdict = b < a / MARGIN ? "faster" : b > a * MARGIN ? "slower" : "alike";
    faster += b < a / MARGIN;
    if (b > a * MARGIN && (!slower++ || ratio < worst_ratio))
      worst = i, worst_ratio = ratio;
    fprintf(stderr,
            "  %s: %zu^3: %.3f ms tuned, %.3f ms with CLBlast's own (%.2fx): %s\n",
            j->label, sizes[i], b, a, ratio, verdict);
    given[i][0] = a, given[i][1] = b; /* the medians, for the summary */
  }
  if (slower)
    snprintf(summary, size,
             "slower than CLBlast's own at %zu^3 (%.3f ms tuned against %.3f ms)%s",
             sizes[worst], given[worst][1], given[worst][0],
             slower > 1 ? " and other sizes" : "");
  else if (!faster)
    snprintf(summary, size, "no faster than CLBlast's own at any of %zu sizes", n);
  else
    snprintf(summary, size,
             "faster than CLBlast's own at %zu of %zu sizes, slower at none", faster, n);
  return slower == 0 && faster > 0;
}
