/*
 * bench_compile.c — `kiln bench compile`: milliseconds for one of kiln's
 * kernel files (kiln_program_create_builtin()) in a new runtime (runtime
 * creation not counted), medians:
 *   cold   kiln's cache empty: a temporary folder of this run's own, cleared
 *          before each build. The driver's own cache is left as it is (PoCL
 *          keeps one, ~/.cache/pocl; POCL_KERNEL_CACHE=0 turns it off), so
 *          this is kiln compiling from source, not the driver from nothing.
 *   warm   the same folder holding the program: a kiln cache hit.
 * The rows are the kernel files (--sizes). Each build is checked by the
 * runtime's cache counts: cold compiled once and loaded nothing, warm the
 * other way round.
 */
/* kiln_program_create_builtin() is experimental API. */
#define KILN_EXPERIMENTAL
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "kiln/kiln.h"

enum { COLD, WARM };
static const char *const compile_peers[] = {"cold", "warm"};
static const int compile_built[] = {1, 1};
static const char *const compile_not_built[] = {NULL, NULL};
static const char *const compile_labels[] = {"gemm", "scale"};
static const size_t compile_defaults[] = {1};
static const size_t compile_quick[] = {2};
static const char *const compile_ratios[][2] = {{"warm", "cold"}};
/* cl/gemm.cl is built with the record's GEMM parameters as defines. */
static const char *const compile_reach[] = {"gemm", ""};
_Static_assert(BENCH_COUNT(compile_reach) == BENCH_COUNT(compile_labels),
               "a reach per case");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec compile_spec = {
  .op = "compile",
  .summary = "ms to build a kernel file, kiln's cache cold and warm",
  .sizes_value = "FILE,...",
  BENCH_TABLES(compile),
  .reach = compile_reach, .reach_by_case = 1,
  .selectable = 2,
  .min_size = 1, .max_size = 2, .size_multiple = 1,
  .sizes_help = "kernel file numbers such as 1,2 (1: cl/gemm.cl, 2: cl/scale.cl)",
  .repeats = 3,
  .figure = BENCH_MS,
  .labels = compile_labels,
  .note = "compile: ms for one kernel file in a new runtime; cold: kiln's cache empty "
          "(the driver's own cache as it is: PoCL's, unless POCL_KERNEL_CACHE=0), "
          "warm: from kiln's cache",
};
/* clang-format on */

/* One kernel file's builds, for compile_once(). */
typedef struct compile_run {
  int k;            /* the peer */
  const char *name; /* the kernel file */
  const char *dir;  /* the temporary cache folder */
  int cache_off;    /* cold is measured, warm cannot be */
  char off[512];    /* why the cache is off */
  char error[512];  /* why the last build failed */
} compile_run;

/* Whether the runtime's cache did what peer k means; else says why. */
static int cache_as_expected(kiln_runtime *rt, compile_run *g)
{
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  kiln_cache_stats(rt, &u);
  g->cache_off = u.dir == NULL;
  if (g->cache_off)
    kiln_cli_cache_off_why(rt, g->off, sizeof g->off);
  uint64_t built = g->k == COLD ? u.compiles : u.hits;
  uint64_t other = g->k == COLD ? u.hits : u.compiles;
  if (built == 1 && other == 0)
    return 1;
  snprintf(g->error, sizeof g->error,
           "expected a cache %s; compiled %llu, from the "
           "cache %llu",
           g->k == COLD ? "miss" : "hit", (unsigned long long)u.compiles,
           (unsigned long long)u.hits);
  return 0;
}

/* One timed build in a new runtime over the folder (emptied first when
 * cold), checked; milliseconds, or -1 after keeping why in g->error. */
static double compile_once(void *ctx)
{
  compile_run *g = ctx;
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = g->dir;
  kiln_runtime *rt = NULL;
  kiln_program *p = NULL;
  double ms = -1;
  if (kiln_runtime_create(&o, &rt) != KILN_OK) {
    snprintf(g->error, sizeof g->error, "%s", kiln_last_error(NULL));
    return -1;
  }
  if (g->k == WARM || kiln_cache_clear(rt, NULL) == KILN_OK) {
    double t0 = bench_now_ms();
    if (kiln_program_create_builtin(rt, g->name, &p) == KILN_OK)
      ms = bench_now_ms() - t0;
  }
  if (ms < 0)
    snprintf(g->error, sizeof g->error, "%s", kiln_last_error(rt));
  else if (!cache_as_expected(rt, g))
    ms = -1;
  kiln_program_destroy(p);
  kiln_runtime_destroy(rt);
  return ms;
}

/* Checks, then times peer g->k; adds its record. */
static int measure_peer(const bench_args *args, compile_run *g, size_t index,
                        bench_records *out)
{
  double med = 0;
  fprintf(stderr, "  compile cl/%s.cl %-4s warm-up and check...", g->name,
          compile_peers[g->k]);
  if (g->k == WARM && g->cache_off) {
    fprintf(stderr, " skipped (kiln's cache is off: %s)\n", g->off);
    return 0;
  }
  if (compile_once(g) < 0 || bench_time(compile_once, g, args->repeats, &med) != 0) {
    fprintf(stderr, " FAILED (%s)\n", g->error);
    return -1;
  }
  bench_record r = {.op = "compile",
                    .backend = compile_peers[g->k],
                    .size = index,
                    .median_ms = med,
                    .gflops = NAN,
                    .gbps = NAN};
  snprintf(r.shape, sizeof r.shape, "cl/%s.cl", g->name);
  bench_add(out, &r);
  fprintf(stderr, " %.1f ms\n", med);
  return 0;
}

/* Empties the temporary folder and removes it; says so when it cannot. */
static void remove_folder(const char *dir)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = dir;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(&o, &rt) == KILN_OK)
    kiln_cache_clear(rt, NULL);
  kiln_runtime_destroy(rt);
  if (rmdir(dir) != 0)
    fprintf(stderr, "kiln bench compile: cannot remove %s: %s\n", dir, strerror(errno));
}

static int run_compile(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/kiln-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "kiln bench compile: cannot make a folder in %s: %s\n",
            tmp && *tmp ? tmp : "/tmp", strerror(errno));
    return -1;
  }
  fprintf(stderr,
          "kiln bench compile on %s (ms per kernel file in a new runtime; cold: "
          "kiln's cache empty, the driver's as it is; warm: from kiln's cache)\n",
          kiln_runtime_device(rt)->name);
  compile_run g = {.dir = dir};
  int rc = 0;
  for (size_t s = 0; s < a->nsizes && rc == 0; s++) {
    g.name = compile_labels[a->sizes[s] - 1];
    /* warm needs the program in the folder: a cold build leaves it there */
    g.k = COLD;
    if (!a->use[COLD] && a->use[WARM] && compile_once(&g) < 0) {
      fprintf(stderr, "kiln bench compile: %s\n", g.error);
      rc = -1;
    }
    for (g.k = COLD; g.k <= WARM && rc == 0; g.k++)
      if (a->use[g.k])
        rc = measure_peer(a, &g, a->sizes[s], out);
  }
  remove_folder(dir);
  return rc;
}

const bench_group bench_compile_group = {&compile_spec, run_compile};
