/*
 * bench_mlp.c — `kiln bench mlp`: inference of examples/mlp.c's 2-layer
 * perceptron (784-512-10, ReLU, argmax) over a batch, as an application
 * runs it: the batch written to the device, two kiln_gemm() calls with
 * fused epilogues (bias, ReLU), an argmax kiln_reduce() and the classes read
 * back; against the same network on the CPU with OpenBLAS's sgemm and C
 * loops for the bias, ReLU and argmax. The figure is GFLOP/s of the two
 * products, so the ratio is how many times faster kiln classifies a batch.
 * Both are checked against a double-precision reference first.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_OPENBLAS
#  include "blas.h"
#endif

enum { IN = 784, HIDDEN = 512, OUT = 10 };

static const char *const mlp_peers[] = {"kiln", "openblas"};
static const int mlp_built[] = {1, HAVE_OPENBLAS};
static const char *const mlp_not_built[] = {
  NULL, "this kiln was built without OpenBLAS (Debian libopenblas-dev)"};
static const size_t mlp_defaults[] = {64, 256, 1024};
static const size_t mlp_quick[] = {8};
static const char *const mlp_ratios[][2] = {{"kiln", "openblas"}};
/* AUTO's GEMMs (kiln's or CLBlast's) and argmax. */
static const char *const mlp_reach[] = {"gemm.f32 reduce choices clblast", ""};
_Static_assert(BENCH_COUNT(mlp_reach) == BENCH_COUNT(mlp_peers), "a reach per peer");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec mlp_spec = {
  .op = "mlp",
  .summary = "a 784-512-10 perceptron's inference on a batch, against OpenBLAS",
  .sizes_value = "BATCH,...",
  BENCH_TABLES(mlp),
  .reach = mlp_reach,
  .selectable = 2,
  .host_peers = 1,
  .min_size = 1, .max_size = 65536, .size_multiple = 1,
  .sizes_help = "batch sizes such as 64,256 (at most 16, each 1 to 65536)",
  .repeats = 9,
  .figure = BENCH_GFLOPS,
  .axis = "batch (images of 784 values)",
};
/* clang-format on */

/* One batch size's network and data, for mlp_once(). */
typedef struct mlp_run {
  kiln_runtime *rt;
  int k; /* the peer */
  size_t batch;
  const float *x, *w1, *b1, *w2, *b2;
  float *h, *y; /* OpenBLAS's hidden layer and logits */
  int64_t *cls; /* the classes, either peer's */
  kiln_buffer *dx, *dw1, *db1, *dh, *dw2, *db2, *dy, *dc;
  kiln_gemm_desc l1, l2;
  kiln_reduce_desc am;
} mlp_run;

/* y = x w + b, then max(y, 0) with relu; x rows x k, w k x n. */
static void cpu_layer(size_t rows, size_t n, size_t k, const float *x, const float *w,
                      const float *b, int relu, float *y)
{
#if HAVE_OPENBLAS
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < n; j++)
      y[i * n + j] = b[j];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)n, (int)k, 1.0f,
              x, (int)k, w, (int)n, 1.0f, y, (int)n);
  if (relu)
    for (size_t i = 0; i < rows * n; i++)
      y[i] = y[i] > 0 ? y[i] : 0;
#else
  (void)rows, (void)n, (void)k, (void)x, (void)w, (void)b, (void)relu, (void)y;
#endif
}

/* One timed inference of peer r->k; milliseconds, or -1 on failure. */
static double mlp_once(void *ctx)
{
  mlp_run *r = ctx;
  size_t n = r->batch;
  double t0 = bench_now_ms();
  if (r->k == 1) {
    cpu_layer(n, HIDDEN, IN, r->x, r->w1, r->b1, 1, r->h);
    cpu_layer(n, OUT, HIDDEN, r->h, r->w2, r->b2, 0, r->y);
    for (size_t i = 0; i < n; i++) {
      int64_t best = 0;
      for (int64_t j = 1; j < OUT; j++)
        if (r->y[i * OUT + j] > r->y[i * OUT + best])
          best = j;
      r->cls[i] = best;
    }
    return bench_now_ms() - t0;
  }
  if (kiln_buffer_write(r->dx, 0, n * IN, r->x) ||
      kiln_gemm(r->rt, &r->l1, r->dx, r->dw1, r->dh) ||
      kiln_gemm(r->rt, &r->l2, r->dh, r->dw2, r->dy) ||
      kiln_reduce(r->rt, &r->am, r->dy, r->dc) || kiln_buffer_read(r->dc, 0, n, r->cls) ||
      kiln_finish(r->rt))
    return -1;
  return bench_now_ms() - t0;
}

/* The classes in double, from the definition. */
static void reference(const mlp_run *r, int64_t *want)
{
  double *h = malloc(HIDDEN * sizeof *h);
  for (size_t i = 0; h && i < r->batch; i++) {
    for (size_t j = 0; j < HIDDEN; j++) {
      double s = r->b1[j];
      for (size_t p = 0; p < IN; p++)
        s += (double)r->x[i * IN + p] * r->w1[p * HIDDEN + j];
      h[j] = s > 0 ? s : 0;
    }
    double best = -INFINITY;
    for (int64_t j = 0; j < OUT; j++) {
      double s = r->b2[j];
      for (size_t p = 0; p < HIDDEN; p++)
        s += h[p] * r->w2[p * OUT + j];
      if (s > best)
        best = s, want[i] = j;
    }
  }
  free(h);
}

static int upload(kiln_runtime *rt, const float *v, size_t n, kiln_buffer **out)
{
  return kiln_buffer_create(rt, KILN_F32, n, 0, out) || kiln_buffer_write(*out, 0, n, v);
}

static int setup(mlp_run *r)
{
  size_t n = r->batch;
  kiln_gemm_desc_init(&r->l1, KILN_F32, n, HIDDEN, IN);
  r->l1.bias = KILN_BIAS_COL, r->l1.activation = KILN_ACTIVATION_RELU;
  kiln_gemm_desc_init(&r->l2, KILN_F32, n, OUT, HIDDEN);
  r->l2.bias = KILN_BIAS_COL;
  kiln_reduce_desc_init(&r->am, KILN_REDUCE_ARGMAX, KILN_F32, n);
  r->am.ndim = 2, r->am.shape[1] = OUT, r->am.axis = -1;
  int rc =
    upload(r->rt, r->w1, IN * HIDDEN, &r->dw1) || upload(r->rt, r->b1, HIDDEN, &r->db1) ||
    upload(r->rt, r->w2, HIDDEN * OUT, &r->dw2) || upload(r->rt, r->b2, OUT, &r->db2) ||
    kiln_buffer_create(r->rt, KILN_F32, n * IN, 0, &r->dx) ||
    kiln_buffer_create(r->rt, KILN_F32, n * HIDDEN, 0, &r->dh) ||
    kiln_buffer_create(r->rt, KILN_F32, n * OUT, 0, &r->dy) ||
    kiln_buffer_create(r->rt, KILN_I64, n, 0, &r->dc);
  r->l1.bias_buffer = r->db1;
  r->l2.bias_buffer = r->db2;
  return rc ? -1 : 0;
}

/* Checks, then times peer r->k; adds its record. Classes may differ from
 * the reference where two logits lie within float32's rounding: at most
 * one in 64 (and one at any size). */
static int measure_peer(const bench_args *a, mlp_run *r, const int64_t *want,
                        bench_records *out)
{
  size_t n = r->batch, wrong = 0;
  fprintf(stderr, "  mlp batch %zu %-8s warm-up and check...", n, mlp_peers[r->k]);
  double t = mlp_once(r), med = 0;
  for (size_t i = 0; t >= 0 && i < n; i++)
    wrong += r->cls[i] != want[i];
  if (t < 0 || wrong > 1 + n / 64) {
    fprintf(stderr, " FAILED (%s)\n",
            t < 0 ? kiln_last_error(r->rt) : "classes differ from the reference");
    return -1;
  }
  if (bench_time_kiln(r->rt, mlp_once, r, a->repeats, &med) != 0)
    return -1;
  bench_record rec = {.op = "mlp",
                      .backend = mlp_peers[r->k],
                      .dtype = "float32",
                      .size = n,
                      .median_ms = med,
                      .gflops =
                        2.0 * (double)n * (IN * HIDDEN + HIDDEN * OUT) / med / 1e6,
                      .gbps = NAN};
  snprintf(rec.shape, sizeof rec.shape, "%zux%dx%dx%d", n, IN, HIDDEN, OUT);
  bench_add(out, &rec);
  fprintf(stderr, " %.1f GFLOP/s\n", rec.gflops);
  return 0;
}

/* Measures peer k at batch n. */
static int measure(kiln_runtime *rt, const bench_args *a, int k, size_t n,
                   bench_records *out)
{
  mlp_run r = {.rt = rt, .batch = n};
  float *x = bench_values(n * IN, 1), *w1 = bench_values(IN * HIDDEN, 2),
        *b1 = bench_values(HIDDEN, 3), *w2 = bench_values(HIDDEN * OUT, 4),
        *b2 = bench_values(OUT, 5);
  r.x = x, r.w1 = w1, r.b1 = b1, r.w2 = w2, r.b2 = b2;
  r.h = malloc(n * HIDDEN * sizeof *r.h);
  r.y = malloc(n * OUT * sizeof *r.y);
  r.cls = malloc(n * sizeof *r.cls);
  int64_t *want = malloc(n * sizeof *want);
  int rc = x && w1 && b1 && w2 && b2 && r.h && r.y && r.cls && want ? setup(&r) : -1;
  if (rc == 0)
    reference(&r, want);
  r.k = k;
  if (rc == 0)
    rc = measure_peer(a, &r, want, out);
  kiln_buffer *all[] = {r.dx, r.dw1, r.db1, r.dh, r.dw2, r.db2, r.dy, r.dc};
  for (size_t i = 0; i < BENCH_COUNT(all); i++)
    kiln_buffer_destroy(all[i]);
  free(x), free(w1), free(b1), free(w2), free(b2);
  free(r.h), free(r.y), free(r.cls), free(want);
  return rc;
}

static int run_mlp(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench mlp on %s (float32, %d-%d-%d, ReLU, argmax; batch in, "
          "classes out)\n",
          kiln_runtime_device(rt)->name, IN, HIDDEN, OUT);
  int rc = 0;
  /* OpenBLAS after every device run: its threads spin for a while after
   * each call and would take the CPU from PoCL's (bench_gemm.c) */
  for (int k = 0; k < 2 && rc == 0; k++)
    for (size_t s = 0; s < a->nsizes && rc == 0 && a->use[k]; s++)
      rc = measure(rt, a, k, a->sizes[s], out);
  return rc;
}

const bench_group bench_mlp_group = {&mlp_spec, run_mlp};
