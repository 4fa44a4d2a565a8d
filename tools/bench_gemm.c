/*
 * bench_gemm.c — `kiln bench gemm`: GFLOP/s of each GEMM backend and of
 * OpenBLAS on the CPU, as medians over repeats after a warm-up, each result
 * checked against OpenBLAS (or a naive loop without it) before it is timed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_OPENBLAS
#  include "blas.h"
#endif

static const char *const gemm_peers[] = {"kiln", "clblast", "openblas"};
static const int gemm_built[] = {1, HAVE_CLBLAST, HAVE_OPENBLAS};
static const char *const gemm_not_built[] = {
  NULL, "this kiln was built without CLBlast",
  "this kiln was built without OpenBLAS (Debian libopenblas-dev)"};
static const size_t gemm_defaults[] = {128, 256, 512, 1024, 2048};
static const size_t gemm_quick[] = {32, 64};
static const char *const gemm_ratios[][2] = {{"kiln", "openblas"}, {"kiln", "clblast"}};
/* kiln's GEMM runs with the record's float32 parameters, CLBlast's with
 * the CLBlast parameters it holds (kiln tune --clblast). */
static const char *const gemm_reach[] = {"gemm.f32", "clblast", ""};
_Static_assert(BENCH_COUNT(gemm_reach) == BENCH_COUNT(gemm_peers), "a reach per peer");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec gemm_spec = {
  .op = "gemm",
  .summary = "GFLOP/s of each GEMM backend against OpenBLAS",
  .sizes_value = "N,...",
  BENCH_TABLES(gemm),
  .reach = gemm_reach,
  .selectable = 3,
  .host_peers = 1,
  .min_size = 1, .max_size = 65536, .size_multiple = 1,
  .sizes_help = "sizes such as 512,1024 (at most 16, each 1 to 65536)",
  .repeats = 5,
  .figure = BENCH_GFLOPS,
  .axis = "n (C = A B, each n x n)",
};
/* clang-format on */

/* The reference C for the check: OpenBLAS when built in, else naive. */
static void reference(size_t n, const float *a, const float *b, float *c)
{
#if HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a,
              (int)n, b, (int)n, 0.0f, c, (int)n);
#else
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < n; p++)
        s += (double)a[i * n + p] * b[p * n + j];
      c[i * n + j] = (float)s;
    }
#endif
}

/* One product's inputs, for run_once(). */
typedef struct gemm_run {
  kiln_runtime *rt;
  int k; /* the peer */
  size_t n;
  const float *a, *b;
  float *c;
  kiln_buffer *da, *db, *dc;
} gemm_run;

/* One timed run of peer g->k; returns milliseconds, or -1 on failure. */
static double run_once(void *ctx)
{
  const gemm_run *g = ctx;
  size_t n = g->n;
  double t0 = bench_now_ms();
  if (g->k == 2) {
#if HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
                g->a, (int)n, g->b, (int)n, 0.0f, g->c, (int)n);
#endif
    return bench_now_ms() - t0;
  }
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, n, n, n);
  d.backend = g->k == 0 ? KILN_BACKEND_KILN : KILN_BACKEND_CLBLAST;
  if (kiln_gemm(g->rt, &d, g->da, g->db, g->dc) != KILN_OK ||
      kiln_finish(g->rt) != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* Largest difference from the reference, relative to sqrt(n) * max |C|. */
static double check(size_t n, const float *want, const float *got)
{
  double err = 0, top = 0;
  for (size_t i = 0; i < n * n; i++) {
    err = fmax(err, fabs((double)got[i] - want[i]));
    top = fmax(top, fabs((double)want[i]));
  }
  return err / (top * sqrt((double)n) + 1e-30);
}

/* Checks, then times peer g->k; adds its record. */
static int measure_peer(const bench_args *args, gemm_run *g, const float *ref,
                        bench_records *out)
{
  size_t n = g->n, nn = n * n;
  fprintf(stderr, "  gemm %zu^3 %-8s warm-up and check...", n, gemm_peers[g->k]);
  double t = run_once(g), med = 0;
  if (t >= 0 && g->k != 2 && kiln_buffer_read(g->dc, 0, nn, g->c) != KILN_OK)
    t = -1;
  double err = t < 0 ? 0 : check(n, ref, g->c);
  if (t < 0 || err > 1e-5) {
    fprintf(stderr, " FAILED (%s)\n", t < 0 ? kiln_last_error(g->rt) : "wrong result");
    return -1;
  }
  if (bench_time_kiln(g->rt, run_once, g, args->repeats, &med) != 0)
    return -1;
  /* with OpenBLAS, its check is against itself */
  bench_record r = {.op = "gemm",
                    .backend = gemm_peers[g->k],
                    .dtype = "float32",
                    .size = n,
                    .median_ms = med,
                    .gflops = 2.0 * (double)n * n * n / med / 1e6,
                    .gbps = NAN,
                    .reference = g->k == 2};
  snprintf(r.shape, sizeof r.shape, "%zux%zux%zu", n, n, n);
  bench_add(out, &r);
  fprintf(stderr, " %.1f GFLOP/s\n", r.gflops);
  return 0;
}

/* Measures the peers `which` selects (bit k: peer k) at size n. */
static int measure(kiln_runtime *rt, const bench_args *args, unsigned which, size_t n,
                   bench_records *out)
{
  size_t nn = n * n;
  float *a = malloc(nn * 4), *b = malloc(nn * 4), *c = malloc(nn * 4),
        *ref = malloc(nn * 4);
  gemm_run g = {rt, 0, n, a, b, c, NULL, NULL, NULL};
  int rc = a && b && c && ref ? 0 : -1;
  for (size_t i = 0; i < nn && rc == 0; i++) {
    a[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    b[i] = (float)((i * 104729) % 1000) / 500.0f - 1.0f;
  }
  if (rc == 0)
    reference(n, a, b, ref);
  if (rc == 0 && (kiln_buffer_create(rt, KILN_F32, nn, 0, &g.da) ||
                  kiln_buffer_create(rt, KILN_F32, nn, 0, &g.db) ||
                  kiln_buffer_create(rt, KILN_F32, nn, 0, &g.dc) ||
                  kiln_buffer_write(g.da, 0, nn, a) || kiln_buffer_write(g.db, 0, nn, b)))
    rc = -1;
  for (g.k = 0; g.k < 3 && rc == 0; g.k++)
    if (args->use[g.k] && (which & (1u << g.k)))
      rc = measure_peer(args, &g, ref, out);
  kiln_buffer_destroy(g.da);
  kiln_buffer_destroy(g.db);
  kiln_buffer_destroy(g.dc);
  free(a), free(b), free(c), free(ref);
  return rc;
}

static int run_gemm(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr, "kiln bench gemm on %s (float32, row-major, C = A B)\n",
          kiln_runtime_device(rt)->name);
  int rc = 0;
  /* OpenBLAS last, after every device run: its worker threads spin for a
   * while after each call and would take the CPU from PoCL's. */
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    rc = measure(rt, a, 3, a->sizes[s], out);
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    rc = measure(rt, a, 4, a->sizes[s], out);
  return rc;
}

const bench_group bench_gemm_group = {&gemm_spec, run_gemm};
