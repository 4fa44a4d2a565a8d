/*
 * bench_reduce.c — `kiln bench reduce`: GB/s of a float32 sum by each
 * reduction backend, next to the machine's memory bandwidth measured in the
 * same run by a threaded C loop over the same bytes (bench_cloop.c), with
 * the ratio kiln / c-loop. GB/s is bytes read / the median time of one
 * kiln_reduce() and kiln_finish() on a buffer already on the device.
 *
 * Each backend's result is checked against a float64 sum before it is
 * timed: within 1e-6 relative for kiln, which accumulates in float64 (or
 * compensated float32); within 1e-4 for CLBlast's Ssum and the C loop,
 * which accumulate in float32. The C loop runs after the device backends at
 * each size, as OpenBLAS does in `kiln bench gemm`.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static const char *const reduce_peers[] = {"kiln", "clblast", "c-loop"};
static const int reduce_built[] = {1, HAVE_CLBLAST, 1};
static const char *const reduce_not_built[] = {
  NULL, "this kiln was built without CLBlast", NULL};
static const size_t reduce_defaults[] = {1 * MiB, 16 * MiB, 256 * MiB};
static const size_t reduce_quick[] = {64 * KiB, 256 * KiB};
static const char *const reduce_ratios[][2] = {{"kiln", "c-loop"}};
static const double reduce_tolerance[] = {1e-6, 1e-4, 1e-4};
static const char *const reduce_reach[] = {"reduce", "clblast", ""};
_Static_assert(BENCH_COUNT(reduce_reach) == BENCH_COUNT(reduce_peers),
               "a reach per peer");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec reduce_spec = {
  .op = "reduce",
  .summary = "GB/s of a float32 sum against a threaded C loop over the same bytes",
  .sizes_value = "BYTES,...",
  BENCH_TABLES(reduce),
  .reach = reduce_reach,
  .selectable = 2,
  .host_peers = 1,
  .byte_sizes = 1, .min_size = 1024, .max_size = (size_t)4 << 30, .size_multiple = 4,
  .sizes_help = "bytes such as 1M,16M,256M (K, M, G: powers of 1024; at most 16, "
                "each a multiple of 4 from 1K to 4G)",
  .repeats = 10,
  .figure = BENCH_GBPS,
  .axis = "bytes summed",
};
/* clang-format on */

/* One size's data, for reduce_once(). */
typedef struct reduce_run {
  kiln_runtime *rt;
  int k; /* the peer */
  size_t n;
  const float *x;
  kiln_buffer *din, *dout;
  double sum; /* the last result */
} reduce_run;

/* One timed sum by peer g->k; returns milliseconds, or -1 on failure. */
static double reduce_once(void *ctx)
{
  reduce_run *g = ctx;
  double t0 = bench_now_ms();
  if (g->k == 2) {
    g->sum = bench_cloop_sum(g->x, g->n, 0);
    return bench_now_ms() - t0;
  }
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, g->n);
  d.backend = g->k == 0 ? KILN_BACKEND_KILN : KILN_BACKEND_CLBLAST;
  if (kiln_reduce(g->rt, &d, g->din, g->dout) != KILN_OK || kiln_finish(g->rt) != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* Checks, then times peer g->k; adds its record. */
static int measure_peer(const bench_args *args, reduce_run *g, double ref,
                        bench_records *out)
{
  char label[32];
  bench_size_label(&reduce_spec, g->n * 4, label, sizeof label);
  fprintf(stderr, "  reduce %-8s %-8s warm-up and check...", label, reduce_peers[g->k]);
  double t = reduce_once(g), med = 0;
  float got = 0;
  if (t >= 0 && g->k != 2) {
    if (kiln_buffer_read(g->dout, 0, 1, &got) != KILN_OK)
      t = -1;
    g->sum = got;
  }
  double err = fabs(g->sum - ref) / fabs(ref);
  if (t < 0 || !(err <= reduce_tolerance[g->k])) {
    if (t < 0)
      fprintf(stderr, " FAILED (%s)\n", kiln_last_error(g->rt));
    else
      fprintf(stderr, " FAILED (sum %.9g, expected %.9g: %.2g relative, more than %g)\n",
              g->sum, ref, err, reduce_tolerance[g->k]);
    return -1;
  }
  if (bench_time_kiln(g->rt, reduce_once, g, args->repeats, &med) != 0)
    return -1;
  bench_record r = {.op = "reduce",
                    .backend = reduce_peers[g->k],
                    .dtype = "float32",
                    .size = g->n * 4,
                    .median_ms = med,
                    .gflops = NAN,
                    .gbps = (double)g->n * 4 / med / 1e6};
  snprintf(r.shape, sizeof r.shape, "%zu", g->n);
  bench_add(out, &r);
  fprintf(stderr, " %.2f GB/s (%.3g relative error)\n", r.gbps, err);
  return 0;
}

/* Every chosen peer at one size: the device backends, then the C loop. */
static int measure(kiln_runtime *rt, const bench_args *args, size_t bytes,
                   bench_records *out)
{
  size_t n = bytes / 4;
  float *x = malloc(n * sizeof *x);
  reduce_run g = {rt, 0, n, x, NULL, NULL, 0};
  double ref = 0;
  if (!x) {
    fprintf(stderr, "kiln bench reduce: out of host memory for %zu bytes\n", bytes);
    return -1;
  }
  int rc = 0;
  /* positive values, so the relative error of the sum is well defined */
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)((i * 7919) % 1000) / 1000.0f + 0.5f;
    ref += x[i];
  }
  if ((kiln_buffer_create(rt, KILN_F32, n, 0, &g.din) != KILN_OK ||
       kiln_buffer_create(rt, KILN_F32, 1, 0, &g.dout) != KILN_OK ||
       kiln_buffer_write(g.din, 0, n, x) != KILN_OK)) {
    fprintf(stderr, "kiln bench reduce: %s\n", kiln_last_error(rt));
    rc = -1;
  }
  for (g.k = 0; g.k < 3 && rc == 0; g.k++)
    if (args->use[g.k])
      rc = measure_peer(args, &g, ref, out);
  kiln_buffer_destroy(g.din);
  kiln_buffer_destroy(g.dout);
  free(x);
  return rc;
}

static int run_reduce(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench reduce on %s (float32 sum; the C loop runs one thread "
          "per online core)\n",
          kiln_runtime_device(rt)->name);
  return bench_each_size(rt, a, out, measure);
}

const bench_group bench_reduce_group = {&reduce_spec, run_reduce};
