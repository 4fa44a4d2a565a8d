/*
 * bench_conv.c — `kiln bench conv`: GFLOP/s of each convolution backend on
 * ResNet-like float32 NCHW layers (and one NHWC), next to im2col + OpenBLAS on the host
 * (the CPU peer "openblas", when kiln is built with OpenBLAS), as medians of
 * one kiln_conv2d() and kiln_finish() on buffers already on the device,
 * after a warm-up that also compiles the kernels. The ratio column is the
 * best kiln backend over OpenBLAS; issue 7's goal is >= 0.5 on layer 3x3.
 *
 * The layers (rows; --sizes picks them by number), each with "same" padding
 * (r - 1) / 2 and N = 8 images but the last:
 *   1  3x3    C=64, 56x56, K=64                  (ResNet's conv2_x)
 *   2  1x1    C=256, 56x56, K=64                 (a bottleneck's reduction)
 *   3  7x7/2  C=3, 224x224, K=64, stride 2       (ResNet's first layer)
 *   4  dw3x3  C=K=128, 56x56, groups 128         (a depthwise layer)
 *   5  small  N=1, C=16, 32x32, K=16, 3x3        (--quick's; not by default)
 *   6  1x1nhwc N=256, C=784, 1x1, K=512, NHWC    (a fully connected layer as a
 *                                                 convolution: a matrix product)
 * GFLOP/s counts 2 * n * k * p * q * (c / groups) * r * s.
 *
 * Each result is checked against im2col + OpenBLAS (a naive loop without
 * OpenBLAS), computed once per layer before anything is timed, within 1e-4
 * of the largest |y|. A backend that cannot run a layer (CLBlast's convgemm
 * has no groups) is skipped with kiln's reason and shows "-". The CPU peer
 * runs after every device run: OpenBLAS's threads spin for a while after
 * each call and would take the CPU from PoCL's. Its im2col is serial, and
 * its GEMM one cblas_sgemm per image and group, as a framework's
 * im2col + BLAS path does.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_OPENBLAS
#  include "blas.h"
#endif

typedef struct conv_layer {
  const char *label;
  size_t n, c, h, w, k, r, s, stride, groups;
  int nhwc; /* only for 1 x 1 layers of stride 1, whose im2col is x itself */
} conv_layer;

/* clang-format off */
static const conv_layer layers[] = {
  /* label      n    c    h    w    k  r  s  stride groups nhwc */
  {"3x3",       8,  64,  56,  56,  64, 3, 3, 1,     1,     0},
  {"1x1",       8, 256,  56,  56,  64, 1, 1, 1,     1,     0},
  {"7x7/2",     8,   3, 224, 224,  64, 7, 7, 2,     1,     0},
  {"dw3x3",     8, 128,  56,  56, 128, 3, 3, 1,     128,   0},
  {"small",     1,  16,  32,  32,  16, 3, 3, 1,     1,     0},
  {"1x1nhwc", 256, 784,   1,   1, 512, 1, 1, 1,     1,     1},
};
/* clang-format on */
#define NLAYERS (sizeof layers / sizeof layers[0])

static const char *const conv_labels[] = {"3x3",   "1x1",   "7x7/2",
                                          "dw3x3", "small", "1x1nhwc"};
static const char *const conv_peers[] = {"im2col", "direct", "clblast", "openblas"};
static const kiln_backend conv_backends[] = {KILN_BACKEND_IM2COL, KILN_BACKEND_DIRECT,
                                             KILN_BACKEND_CLBLAST};
static const int conv_built[] = {1, 1, HAVE_CLBLAST, HAVE_OPENBLAS};
static const char *const conv_not_built[] = {
  NULL, NULL, "this kiln was built without CLBlast",
  "this kiln was built without OpenBLAS (Debian libopenblas-dev)"};
static const size_t conv_defaults[] = {1, 2, 3, 4, 6};
static const size_t conv_quick[] = {5};
static const char *const conv_ratios[][2] = {{"best", "openblas"}};
/* im2col's blocking and the GEMM it runs; the direct kernel's own. */
static const char *const conv_reach[] = {
  "conv.col_kib gemm.f32", "conv.qw conv.kb conv.lq conv.lp", "clblast", ""};
_Static_assert(BENCH_COUNT(conv_reach) == BENCH_COUNT(conv_peers), "a reach per peer");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec conv_spec = {
  .op = "conv",
  .summary = "GFLOP/s of ResNet-like layers and a 1x1 NHWC layer against "
             "im2col+OpenBLAS",
  .sizes_value = "LAYER,...",
  BENCH_TABLES(conv),
  .reach = conv_reach,
  .selectable = 4,
  .host_peers = 1,
  .min_size = 1, .max_size = NLAYERS, .size_multiple = 1,
  .sizes_help = "layer numbers such as 1,3 (1: 3x3, 2: 1x1, 3: 7x7 stride 2, "
                "4: depthwise 3x3, 5: a small 3x3, 6: 1x1 NHWC, 784 -> 512 channels)",
  .repeats = 5,
  .figure = BENCH_GFLOPS,
  .labels = conv_labels,
  .best_of = 3,
};
/* clang-format on */

/* One layer's data, for conv_once(). */
typedef struct conv_run {
  kiln_runtime *rt;
  int k; /* the peer */
  const conv_layer *l;
  kiln_conv2d_desc d;
  size_t p, q;
  const float *x, *w;
  float *y, *col; /* col: the host im2col matrix of one group of one image */
  kiln_buffer *dx, *dw, *dy;
  kiln_status st; /* of the last device run */
} conv_run;

/* The host im2col of image b's group g: row (cj, ri, si), column (pi, qi). */
static void im2col(const conv_run *g, size_t b, size_t grp)
{
  const conv_layer *l = g->l;
  size_t cg = l->c / l->groups, pad = (l->r - 1) / 2, pq = g->p * g->q;
  for (size_t cj = 0; cj < cg; cj++)
    for (size_t ri = 0; ri < l->r; ri++)
      for (size_t si = 0; si < l->s; si++) {
        const float *plane = g->x + ((b * l->c + grp * cg + cj) * l->h) * l->w;
        float *row = g->col + ((cj * l->r + ri) * l->s + si) * pq;
        for (size_t pi = 0; pi < g->p; pi++) {
          size_t hi = pi * l->stride + ri; /* + pad: unsigned, checked below */
          for (size_t qi = 0; qi < g->q; qi++) {
            size_t wi = qi * l->stride + si;
            int in = hi >= pad && hi - pad < l->h && wi >= pad && wi - pad < l->w;
            row[pi * g->q + qi] = in ? plane[(hi - pad) * l->w + wi - pad] : 0.0f;
          }
        }
      }
}

/* y = im2col(x) by the weights into y (NCHW): OpenBLAS, else a naive loop
 * accumulating in double. An NHWC layer (1 x 1, stride 1) is one product,
 * y (nhw x k) = x (nhw x c) W', as a framework runs it. */
static void host_conv(const conv_run *g, float *y)
{
  const conv_layer *l = g->l;
  if (l->nhwc) {
    size_t rows = l->n * l->h * l->w;
#if HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)l->k, (int)l->c,
                1.0f, g->x, (int)l->c, g->w, (int)l->c, 0.0f, y, (int)l->k);
#else
    for (size_t i = 0; i < rows; i++)
      for (size_t j = 0; j < l->k; j++) {
        double sum = 0;
        for (size_t t = 0; t < l->c; t++)
          sum += (double)g->x[i * l->c + t] * g->w[j * l->c + t];
        y[i * l->k + j] = (float)sum;
      }
#endif
    return;
  }
  size_t cg = l->c / l->groups, kg = l->k / l->groups, depth = cg * l->r * l->s;
  size_t pq = g->p * g->q;
  for (size_t b = 0; b < l->n; b++)
    for (size_t grp = 0; grp < l->groups; grp++) {
      im2col(g, b, grp);
      const float *a = g->w + grp * kg * depth;
      float *c = y + (b * l->k + grp * kg) * pq;
#if HAVE_OPENBLAS
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)kg, (int)pq, (int)depth,
                  1.0f, a, (int)depth, g->col, (int)pq, 0.0f, c, (int)pq);
#else
      for (size_t i = 0; i < kg; i++)
        for (size_t j = 0; j < pq; j++) {
          double sum = 0;
          for (size_t t = 0; t < depth; t++)
            sum += (double)a[i * depth + t] * g->col[t * pq + j];
          c[i * pq + j] = (float)sum;
        }
#endif
    }
}

/* One timed run of peer g->k; milliseconds, or -1 on failure. */
static double conv_once(void *ctx)
{
  conv_run *g = ctx;
  double t0 = bench_now_ms();
  if (g->k == 3) {
    host_conv(g, g->y);
    return bench_now_ms() - t0;
  }
  g->d.backend = conv_backends[g->k];
  g->st = kiln_conv2d(g->rt, &g->d, g->dx, g->dw, NULL, g->dy);
  if (g->st == KILN_OK)
    g->st = kiln_finish(g->rt);
  if (g->st != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* Largest difference from the reference over the largest |reference|. */
static double conv_error(size_t n, const float *want, const float *got)
{
  double err = 0, top = 0;
  for (size_t i = 0; i < n; i++) {
    err = fmax(err, fabs((double)got[i] - want[i]));
    top = fmax(top, fabs((double)want[i]));
  }
  return err / (top + 1e-30);
}

static double conv_flops(const conv_run *g)
{
  const conv_layer *l = g->l;
  return 2.0 * (double)(l->n * l->k * g->p * g->q) * (double)(l->c / l->groups) *
         (double)(l->r * l->s);
}

/* Checks, then times peer g->k; adds its record. A backend that cannot run
 * the layer is skipped. */
static int measure_peer(const bench_args *args, conv_run *g, const float *ref,
                        bench_records *out)
{
  size_t ny = g->l->n * g->l->k * g->p * g->q;
  fprintf(stderr, "  conv %-6s %-8s warm-up and check...", g->l->label, conv_peers[g->k]);
  double t = conv_once(g), med = 0;
  if (t < 0 && g->k < 3 && g->st == KILN_ERR_UNSUPPORTED) {
    fprintf(stderr, " skipped (%s)\n", kiln_last_error(g->rt));
    return 0;
  }
  if (t >= 0 && g->k != 3 && kiln_buffer_read(g->dy, 0, ny, g->y) != KILN_OK)
    t = -1;
  double err = t < 0 ? 0 : conv_error(ny, ref, g->y);
  if (t < 0 || !(err <= 1e-4)) {
    if (t < 0)
      fprintf(stderr, " FAILED (%s)\n", kiln_last_error(g->rt));
    else
      fprintf(stderr, " FAILED (wrong result: %.2g of the largest |y| off)\n", err);
    return -1;
  }
  if (bench_time_kiln(g->rt, conv_once, g, args->repeats, &med) != 0)
    return -1;
  const conv_layer *l = g->l;
  /* the CPU peer is the reference itself */
  bench_record r = {.op = "conv2d",
                    .backend = conv_peers[g->k],
                    .dtype = "float32",
                    .size = (size_t)(l - layers) + 1,
                    .median_ms = med,
                    .gflops = conv_flops(g) / med / 1e6,
                    .gbps = NAN,
                    .reference = g->k == 3};
  snprintf(r.shape, sizeof r.shape, "n%zuc%zuh%zuw%zuk%zur%zus%zu", l->n, l->c, l->h,
           l->w, l->k, l->r, l->s);
  if (l->stride > 1)
    snprintf(r.shape + strlen(r.shape), sizeof r.shape - strlen(r.shape), "stride%zu",
             l->stride);
  if (l->groups > 1)
    snprintf(r.shape + strlen(r.shape), sizeof r.shape - strlen(r.shape), "g%zu",
             l->groups);
  if (l->nhwc)
    snprintf(r.shape + strlen(r.shape), sizeof r.shape - strlen(r.shape), "nhwc");
  bench_add(out, &r);
  fprintf(stderr, " %.1f GFLOP/s (%.2g relative error)\n", r.gflops, err);
  return 0;
}

/* Fills x and the weights with values in [-1, 1) and the descriptor. */
static int conv_setup(kiln_runtime *rt, conv_run *g)
{
  const conv_layer *l = g->l;
  size_t nx = l->n * l->c * l->h * l->w, nw = l->k * (l->c / l->groups) * l->r * l->s;
  size_t pad = (l->r - 1) / 2;
  kiln_conv2d_desc_init(&g->d, KILN_F32, l->n, l->c, l->h, l->w, l->k, l->r, l->s);
  g->d.stride_h = g->d.stride_w = l->stride;
  g->d.pad_top = g->d.pad_bottom = g->d.pad_left = g->d.pad_right = pad;
  g->d.groups = l->groups;
  g->d.layout = l->nhwc ? KILN_NHWC : KILN_NCHW;
  if (kiln_conv2d_output(&g->d, &g->p, &g->q) != KILN_OK)
    return fprintf(stderr, "kiln bench conv: %s\n", kiln_last_error(NULL)), -1;
  size_t ny = l->n * l->k * g->p * g->q;
  size_t ncol = (l->c / l->groups) * l->r * l->s * g->p * g->q;
  float *x = malloc(nx * 4), *w = malloc(nw * 4);
  g->x = x, g->w = w, g->y = malloc(ny * 4), g->col = malloc(ncol * 4);
  if (!x || !w || !g->y || !g->col)
    return fprintf(stderr, "kiln bench conv: out of host memory\n"), -1;
  for (size_t i = 0; i < nx; i++)
    x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
  for (size_t i = 0; i < nw; i++)
    w[i] = (float)((i * 104729) % 1000) / 500.0f - 1.0f;
  if (kiln_buffer_create(rt, KILN_F32, nx, 0, &g->dx) != KILN_OK ||
      kiln_buffer_create(rt, KILN_F32, nw, 0, &g->dw) != KILN_OK ||
      kiln_buffer_create(rt, KILN_F32, ny, 0, &g->dy) != KILN_OK ||
      kiln_buffer_write(g->dx, 0, nx, x) != KILN_OK ||
      kiln_buffer_write(g->dw, 0, nw, w) != KILN_OK)
    return fprintf(stderr, "kiln bench conv: %s\n", kiln_last_error(rt)), -1;
  return 0;
}

/* Measures the peers `which` selects (bit k: peer k) on layer `index`. */
static int measure(kiln_runtime *rt, const bench_args *args, unsigned which, size_t index,
                   bench_records *out)
{
  conv_run g = {.rt = rt, .l = &layers[index - 1]};
  float *ref = NULL;
  int rc = conv_setup(rt, &g);
  if (rc == 0) {
    ref = malloc(g.l->n * g.l->k * g.p * g.q * 4);
    if (ref) {
      host_conv(&g, ref);
    } else {
      fprintf(stderr, "kiln bench conv: out of host memory\n");
      rc = -1;
    }
  }
  for (g.k = 0; g.k < 4 && rc == 0; g.k++)
    if (args->use[g.k] && (which & (1u << g.k)))
      rc = measure_peer(args, &g, ref, out);
  kiln_buffer_destroy(g.dx), kiln_buffer_destroy(g.dw), kiln_buffer_destroy(g.dy);
  free((void *)g.x), free((void *)g.w), free(g.y), free(g.col), free(ref);
  return rc;
}

static int run_conv(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench conv on %s (float32 NCHW but 1x1nhwc, \"same\" padding; checked "
          "against im2col + %s)\n",
          kiln_runtime_device(rt)->name, HAVE_OPENBLAS ? "OpenBLAS" : "a naive loop");
  int rc = 0;
  /* OpenBLAS last, after every device run (see the top of the file) */
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    rc = measure(rt, a, 7, a->sizes[s], out);
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    if (a->use[3])
      rc = measure(rt, a, 8, a->sizes[s], out);
  return rc;
}

const bench_group bench_conv_group = {&conv_spec, run_conv};
