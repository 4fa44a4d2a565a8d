/*
 * test-conv.c — kiln_conv2d() against a naive double precision reference,
 * on every backend (IM2COL and DIRECT must run every case; CLBLAST may
 * refuse one with KILN_ERR_UNSUPPORTED and a reason; AUTO must run it),
 * in NCHW and NHWC, for float32, float64 (with fp64) and float16 storage.
 *
 * Tolerance: each output is a dot product of m = c/groups * r * s terms
 * plus the bias, accumulated in precision u (2^-24 for float32 and float16
 * storage, 2^-53 for float64), so it is within gamma_m = m u / (1 - m u) of
 * the exact value, relative to sum |x w| + |bias| (Higham, Accuracy and
 * Stability, 3.1). ReLU is 1-Lipschitz and adds nothing. Half storage adds
 * one rounding of the result to half (2^-11 relative, 2^-24 absolute below
 * half's normal range).
 *
 * Inputs lie in [-2, 2), exact in their dtype: multiples of 2^-8 for half
 * storage; multiples of 2^-18 for float32 and float64, whose 40-bit
 * products make float32 round at every step (so the bound is exercised, and
 * float64 computed in float32 shows). Every sum of fewer than 2^15 such
 * products is exact in double, so the reference is exact.
 */
#include "common.h"

#include <math.h>

#include "activation.h"
#include "conv-case.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "tuning/tuning.h"
#include "kiln_config.h"
#include "values.h"

static void *to_bytes(const double *x, size_t n, kiln_dtype t)
{
  unsigned char *out = malloc(n * kiln_dtype_size(t) + 1);
  for (size_t i = 0; i < n; i++)
    kiln_test_put(t, out, i, x[i]);
  return out;
}

/* 31 random bits. */
static uint64_t lcg(uint64_t *s)
{
  return kiln_test_random(s) >> 22;
}

static double *values(size_t n, kiln_dtype t, uint64_t *seed)
{
  int bits = t == KILN_F16 ? 10 : 20;
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = ldexp((double)(lcg(seed) % (1u << bits)) - ldexp(1, bits - 1), 2 - bits);
  return v;
}

/* ---- the cases ----------------------------------------------------------- */

static const conv_case cases[] = {
  /* n  c   h   w   k  r  s sh sw pt pb pl pr dh dw  g  b  a: kiln_activation */
  {1, 4, 7, 9, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0},   /* 1x1 */
  {3, 8, 5, 7, 6, 1, 1, 1, 1, 0, 0, 0, 0, 2, 1, 2, 1, 2},   /* 1x1 product, g2 */
  {3, 8, 5, 5, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 2, 1, 0},   /* 1x1 s2 g2 */
  {1, 6, 13, 11, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 6, 1, 3}, /* 1x1 pad dw */
  {1, 3, 7, 9, 4, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1},   /* bias-only rim */
  {1, 3, 13, 11, 4, 1, 1, 3, 3, 0, 0, 0, 0, 1, 1, 1, 0, 0}, /* stride 3 */
  {1, 3, 7, 9, 5, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0},   /* 3x3 */
  {1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
  {3, 4, 13, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {1, 4, 13, 11, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0},
  {3, 4, 13, 11, 6, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 2, 0, 4},
  {1, 8, 7, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 1, 0},   /* depthwise */
  {3, 5, 7, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, 0, 1},   /* dw s2 */
  {1, 4, 13, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 0}, /* dw x2 */
  {1, 4, 13, 11, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2, 1, 0}, /* dilation 2 */
  {3, 3, 13, 11, 4, 3, 3, 1, 1, 0, 0, 0, 0, 2, 2, 1, 0, 0},
  {1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 0, 2, 1, 1, 1, 1, 1, 0}, /* asymmetric */
  {3, 4, 13, 11, 4, 3, 3, 2, 2, 1, 0, 2, 1, 1, 1, 2, 1, 1},
  {1, 3, 13, 11, 5, 3, 3, 2, 1, 0, 1, 1, 0, 1, 2, 1, 0, 1}, /* mixed */
  {1, 6, 7, 9, 6, 3, 3, 1, 1, 1, 0, 2, 1, 2, 2, 6, 1, 1},
  {1, 2, 7, 9, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0},   /* defaults */
  {1, 32, 9, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, /* m = 289 */
  {3, 16, 13, 11, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2},
  {1, 3, 7, 9, 4, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0}, /* 5x5 */
  {3, 4, 13, 11, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2, 1, 1},
  {1, 4, 13, 11, 4, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 4, 1, 0},
  {1, 3, 13, 11, 5, 5, 5, 2, 2, 1, 0, 2, 1, 1, 1, 1, 0, 1},
  {1, 2, 13, 11, 4, 5, 5, 1, 1, 2, 2, 2, 2, 2, 2, 2, 1, 0},
  {3, 6, 7, 9, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 6, 1, 4},
  {1, 16, 7, 9, 8, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2, 1, 0},
  {1, 3, 13, 11, 4, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 3}, /* 7x7 stem */
  {3, 3, 13, 11, 6, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, 3, 0, 0},
  {1, 4, 7, 9, 4, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 0},
  {1, 2, 7, 9, 4, 7, 7, 2, 2, 1, 0, 2, 1, 1, 1, 2, 1, 1},
  {1, 4, 13, 11, 4, 7, 7, 1, 1, 2, 2, 2, 2, 2, 2, 1, 0, 1},
  {1, 3, 5, 5, 4, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, /* filter = input */
  {1, 3, 7, 9, 4, 1, 3, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0}, /* 1x3 */
  {1, 4, 9, 7, 4, 5, 3, 2, 1, 2, 2, 1, 1, 1, 1, 2, 1, 0}, /* 5x3 */
  {3, 5, 1, 1, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 2}, /* 1 pixel */
};
#define NCASES (sizeof cases / sizeof cases[0])

/* ---- the reference --------------------------------------------------------- */

typedef struct problem {
  kiln_conv2d_desc d;
  size_t p, q, nx, nw, ny;
  double *x, *w, *b; /* b is NULL without bias */
} problem;

static void make(problem *p, const conv_case *cc, kiln_dtype t, kiln_tensor_layout l,
                 uint64_t seed)
{
  p->d = conv_case_desc(cc, t, l);
  const kiln_conv2d_desc *d = &p->d;
  conv_case_output(d, &p->p, &p->q);
  p->nx = d->n * d->c * d->h * d->w;
  p->nw = d->k * (d->c / conv_or1(d->groups)) * d->r * d->s;
  p->ny = d->n * d->k * p->p * p->q;
  p->x = values(p->nx, t, &seed);
  p->w = values(p->nw, t, &seed);
  p->b = cc->bias ? values(d->k, t, &seed) : NULL;
}

static void unmake(problem *p)
{
  free(p->x);
  free(p->w);
  free(p->b);
}

/* want and bound, in y's layout, from conv-case.h's reference. */
static void reference(const problem *p, double *want, double *bound)
{
  const kiln_conv2d_desc *d = &p->d;
  double u = ldexp(1, d->dtype == KILN_F64 ? -53 : -24);
  double m = (double)(d->c / conv_or1(d->groups) * d->r * d->s + 1);
  double gamma = m * u / (1 - m * u);
  conv_case_reference(d, p->x, p->w, p->b, want, bound); /* sums, magnitudes */
  kiln_activation act = d->relu ? KILN_ACTIVATION_RELU : d->activation;
  for (size_t o = 0; o < p->ny; o++) {
    double sum = want[o], mag = bound[o];
    want[o] = kiln_test_activate(act, sum);
    bound[o] = kiln_test_activation_bound(act, sum, gamma * mag, u);
    if (d->dtype == KILN_F16)
      bound[o] += ldexp(1, -11) * (fabs(want[o]) + bound[o]) + ldexp(1, -24);
  }
}

/* ---- running --------------------------------------------------------------- */

static kiln_buffer *upload(kiln_runtime *rt, kiln_dtype t, const double *v, size_t n)
{
  kiln_buffer *buf = NULL;
  void *bytes = to_bytes(v, n, t);
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, n, 0, &buf));
  assert_kiln_ok(rt, kiln_buffer_write(buf, 0, n, bytes));
  free(bytes);
  return buf;
}

/* Runs the problem; on KILN_OK, got holds y. y starts as NaN, so an
 * element never written shows. The message of a failure goes to msg. */
static kiln_status run_conv(kiln_runtime *rt, const problem *p, double *got, char *msg,
                            size_t msg_size)
{
  kiln_dtype t = p->d.dtype;
  kiln_buffer *x = upload(rt, t, p->x, p->nx), *w = upload(rt, t, p->w, p->nw);
  kiln_buffer *b = p->b ? upload(rt, t, p->b, p->d.k) : NULL, *y = NULL;
  double nan = NAN;
  void *nan_bytes = to_bytes(&nan, 1, t);
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, p->ny, 0, &y));
  assert_kiln_ok(rt, kiln_buffer_fill(y, 0, p->ny, nan_bytes));
  free(nan_bytes);
  kiln_status st = kiln_conv2d(rt, &p->d, x, w, b, y);
  snprintf(msg, msg_size, "%s", st == KILN_OK ? "" : kiln_last_error(rt));
  if (st == KILN_OK) {
    void *bytes = malloc(p->ny * kiln_dtype_size(t));
    assert_kiln_ok(rt, kiln_buffer_read(y, 0, p->ny, bytes));
    assert_kiln_ok(rt, kiln_finish(rt));
    for (size_t i = 0; i < p->ny; i++)
      got[i] = kiln_test_get(t, bytes, i);
    free(bytes);
  }
  kiln_buffer_destroy(x);
  kiln_buffer_destroy(w);
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(y);
  return st;
}

static const kiln_backend all_backends[] = {KILN_BACKEND_AUTO, KILN_BACKEND_IM2COL,
                                            KILN_BACKEND_DIRECT, KILN_BACKEND_CLBLAST};
static unsigned ran[5], refused[5]; /* by backend, for the summary */

static void describe(const problem *p, const char *what, char *out, size_t size)
{
  const kiln_conv2d_desc *d = &p->d;
  snprintf(
    out, size,
    "%s %s %s n=%zu c=%zu %zux%zu k=%zu %zux%zu stride %zu,%zu pad %zu,%zu,%zu,%zu "
    "dilation %zu,%zu groups %zu bias %d relu %d activation %s",
    what, kiln_dtype_name(d->dtype), d->layout == KILN_NCHW ? "NCHW" : "NHWC", d->n, d->c,
    d->h, d->w, d->k, d->r, d->s, d->stride_h, d->stride_w, d->pad_top, d->pad_bottom,
    d->pad_left, d->pad_right, d->dilation_h, d->dilation_w, d->groups, p->b != NULL,
    d->relu, kiln_activation_name(d->activation));
}

/* Checks y against the reference; the first bad element names the case. */
static void check_y(const problem *p, const double *got, const double *want,
                    const double *bound, const char *backend)
{
  for (size_t i = 0; i < p->ny; i++)
    if (!(fabs(got[i] - want[i]) <= bound[i])) {
      char what[400];
      describe(p, backend, what, sizeof what);
      fail_msg("%s: y[%zu] = %.9g, expected %.9g (bound %.3g)", what, i, got[i], want[i],
               bound[i]);
    }
}

/* One case in both layouts on backends be[0..nbe). */
static void run_case_on(kiln_runtime *rt, const conv_case *cc, kiln_dtype t,
                        uint64_t seed, const kiln_backend *bes, size_t nbe)
{
  for (int l = 0; l < 2; l++) {
    problem p;
    make(&p, cc, t, (kiln_tensor_layout)l, seed);
    size_t pp = 0, qq = 0;
    assert_kiln_ok(NULL, kiln_conv2d_output(&p.d, &pp, &qq));
    assert_int_equal(pp, p.p);
    assert_int_equal(qq, p.q);
    double *want = malloc(3 * p.ny * sizeof *want), *bound = want + p.ny,
           *got = bound + p.ny;
    reference(&p, want, bound);
    for (size_t bi = 0; bi < nbe; bi++) {
      kiln_backend be = bes[bi];
      char msg[1024], what[400];
      p.d.backend = be;
      kiln_status st = run_conv(rt, &p, got, msg, sizeof msg);
      if (st == KILN_ERR_UNSUPPORTED && be == KILN_BACKEND_CLBLAST) {
        if (strlen(msg) < 20)
          fail_msg("clblast refused without a reason: '%s'", msg);
        refused[be]++;
        continue;
      }
      if (st == KILN_ERR_UNSUPPORTED && strstr(msg, "loops after 65535") &&
          kiln_test_on_llvmpipe(rt)) {
        refused[be]++; /* test_conv_long_loops says which */
        continue;
      }
      if (st != KILN_OK) {
        describe(&p, kiln_backend_name(be), what, sizeof what);
        fail_msg("%s: kiln_conv2d returned %s: %s", what, kiln_status_name(st), msg);
      }
      ran[be]++;
      check_y(&p, got, want, bound, kiln_backend_name(be));
    }
    free(want);
    unmake(&p);
  }
}

/* One case in both layouts on every backend. */
static void run_case(kiln_runtime *rt, const conv_case *cc, kiln_dtype t, uint64_t seed)
{
  run_case_on(rt, cc, t, seed, all_backends, COUNT(all_backends));
}

static void run_table(kiln_runtime *rt, kiln_dtype t)
{
  if (t == KILN_F64 && !kiln_runtime_device(rt)->has_fp64) {
    const conv_case *cc = &cases[0]; /* refused, on arrays of zeros */
    kiln_conv2d_desc d = conv_case_desc(cc, t, KILN_NCHW);
    size_t p, q;
    conv_case_output(&d, &p, &q);
    double *x = calloc(cc->n * cc->c * cc->h * cc->w, sizeof *x);
    double *w = calloc(cc->k * (cc->c / conv_or1(cc->groups)) * cc->r * cc->s, sizeof *w);
    double *y = calloc(conv_or1(cc->n * cc->k * p * q), sizeof *y);
    kiln_test_refuses_fp64(rt, kiln_conv2d_host(rt, &d, x, w, NULL, y),
                           "kiln_conv2d_host of float64");
    free(x), free(w), free(y);
    return;
  }
  for (size_t i = 0; i < NCASES; i++)
    run_case(rt, &cases[i], t, 100 * (uint64_t)t + i);
}

static void test_conv_float32(void **state)
{
  run_table(*state, KILN_F32);
}
/* Loops longer than Mesa's llvmpipe lets a work-item run (65535 iterations
 * in all, then it stops without a word): an output of 262 x 262 pixels
 * (im2col's work-items each walk an image's rows: kiln cuts the image
 * there) and a depth c x r x s of 7000 (the GEMM's k, about ten iterations
 * each: im2col refuses it there, saying so, and AUTO runs direct). Every
 * backend elsewhere. */
static void test_conv_long_loops(void **state)
{
  kiln_runtime *rt = *state;
  static const conv_case big[] = {
    /* n  c    h    w  k  r  s sh sw pt pb pl pr dh dw  g  b  a */
    {1, 1, 262, 262, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
    {1, 7000, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1},
  };
  unsigned before = refused[KILN_BACKEND_IM2COL];
  for (size_t i = 0; i < COUNT(big); i++)
    run_case(rt, &big[i], KILN_F32, 900 + i);
  /* the deep case, in both layouts, on llvmpipe alone */
  assert_int_equal(refused[KILN_BACKEND_IM2COL] - before,
                   kiln_test_on_llvmpipe(rt) ? 2 : 0);
}

/* Depthwise layers (groups == c, multiplier 1 to 3), wide and tall enough
 * for several of the GPU shape's depthwise tiles (64 x 8 outputs) with
 * ragged ends, at every stride, dilation, padding (asymmetric too),
 * bias and activation; the last one's input tile (dilation 40) outgrows
 * that kernel's local memory, so the direct kernel runs it. On AUTO and
 * the direct backend, every dtype; in the GPU shape (conv-gpu-shape) the
 * depthwise kernel runs all but the last. */
static void test_conv_gpu_depthwise(void **state)
{
  kiln_runtime *rt = *state;
  if (!kiln__gpu_shape(rt)) { /* the CPU shape runs the direct kernel: run_table's */
    fprintf(stderr, "# on a CPU's shape: the GPU shape's run has these cases "
                    "(KILN_TEST_SHAPE=gpu, meson test conv-gpu-shape)\n");
    return;
  }
  static const conv_case dw[] = {
    /* n  c   h   w  k  r  s sh sw pt pb pl pr dh dw  g  b  a */
    {2, 3, 19, 70, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1},
    {1, 2, 21, 75, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 2},
    {1, 3, 17, 69, 6, 5, 3, 3, 2, 2, 0, 1, 2, 2, 3, 3, 0, 4},
    {1, 2, 11, 9, 2, 7, 7, 1, 2, 3, 3, 3, 3, 1, 1, 2, 1, 3},
    {2, 1, 9, 131, 1, 1, 5, 1, 1, 0, 0, 2, 2, 1, 2, 1, 1, 0},
    {1, 2, 85, 85, 2, 3, 3, 1, 1, 0, 0, 0, 0, 40, 40, 2, 1, 1},
  };
  static const kiln_backend bes[] = {KILN_BACKEND_AUTO, KILN_BACKEND_DIRECT};
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64};
  for (size_t t = 0; t < COUNT(types); t++) {
    if (types[t] == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
      continue; /* run_table says it refuses */
    for (size_t i = 0; i < COUNT(dw); i++) {
      kiln_conv2d_desc d = conv_case_desc(&dw[i], types[t], KILN_NCHW);
      assert_int_equal(kiln__conv_depthwise_kernel(&d, 1), i + 1 < COUNT(dw));
      run_case_on(rt, &dw[i], types[t], 700 + 10 * t + i, bes, COUNT(bes));
    }
  }
}

/* Layers the GPU shape's implicit GEMM takes (kiln__conv_implicit_gemm):
 * output channels and pixels past one 64 x 64 tile with ragged ends,
 * depths past one slice of 16 with a ragged last one, groups, strides,
 * dilations, asymmetric padding, 1x1, 3x3, 5x3 and the 7x7/2 stem, every
 * activation; on AUTO and the direct backend, every dtype, both layouts.
 * In the GPU shape (conv-gpu-shape) the implicit GEMM runs them. */
static void test_conv_gpu_implicit_gemm(void **state)
{
  kiln_runtime *rt = *state;
  if (!kiln__gpu_shape(rt)) { /* the CPU shape runs the direct kernel: run_table's */
    fprintf(stderr, "# on a CPU's shape: the GPU shape's run has these cases "
                    "(KILN_TEST_SHAPE=gpu, meson test conv-gpu-shape)\n");
    return;
  }
  static const conv_case ig[] = {
    /* n  c   h   w  k  r  s sh sw pt pb pl pr dh dw  g  b  a */
    {2, 5, 9, 11, 67, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 32, 7, 13, 18, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, 1, 2},
    {1, 8, 13, 11, 20, 3, 3, 2, 2, 1, 0, 2, 1, 2, 1, 2, 0, 4},
    {1, 3, 17, 15, 9, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 3},
    {2, 6, 9, 7, 10, 5, 3, 1, 2, 2, 1, 1, 1, 1, 2, 1, 1, 0},
  };
  static const kiln_backend bes[] = {KILN_BACKEND_AUTO, KILN_BACKEND_DIRECT};
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64};
  for (size_t t = 0; t < COUNT(types); t++) {
    if (types[t] == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
      continue; /* run_table says it refuses */
    for (size_t i = 0; i < COUNT(ig); i++) {
      kiln_conv2d_desc d = conv_case_desc(&ig[i], types[t], KILN_NCHW);
      assert_true(kiln__conv_implicit_gemm(&d, 1));
      run_case_on(rt, &ig[i], types[t], 800 + 10 * t + i, bes, COUNT(bes));
    }
  }
}

static void test_conv_float64(void **state)
{
  run_table(*state, KILN_F64);
}
static void test_conv_float16(void **state)
{
  run_table(*state, KILN_F16);
}

/* The least workspace of backend p->d.backend on rt's shape, from the
 * GEMM's tiles (tuning.h), not from kiln's own sizing: one panel of the
 * im2col matrix and the weights' pack, each padded as the packs pad them.
 * The GPU shape pads A's rows to tiles of tsm, op(B)'s to tsn, and the
 * depth to slices of tsk;
 * the CPU shape packs A in panels of tm rows and op(B)' in panels of 2 vw,
 * the depth as it is. The im2col matrix is op(B)' for NCHW (y = W x'), A
 * for NHWC. None for direct. The budgets below are the CPU shape's (a
 * panel of 32 rows on PoCL); where a device's shape needs more for one
 * piece (the GPU shape's 128-row tiles), a case gets that much, so that it
 * tests the same split on any device (KILN_TEST_SHAPE=gpu, in CI). */
static uint64_t least_workspace(kiln_runtime *rt, const problem *p)
{
  const kiln_conv2d_desc *d = &p->d;
  if (d->backend == KILN_BACKEND_DIRECT)
    return 0;
  const kiln__gemm_tuning *g = &rt->tuning->t.gemm[kiln__gemm_variant_of(d->dtype)];
  size_t depth = d->c / d->groups * d->r * d->s, kg = d->k / d->groups;
  size_t es = d->dtype == KILN_F64 ? 8 : 4, nchw = d->layout == KILN_NCHW;
  size_t kp = depth, panel, wrows, tn = 2 * g->vw;
  if (g->gpu_shape) {
    kp = (depth + g->tsk - 1) / g->tsk * g->tsk;
    size_t wt = nchw ? g->tsm : g->tsn; /* the weights' side */
    panel = nchw ? g->tsn : g->tsm, wrows = (kg + wt - 1) / wt * wt;
  } else {
    panel = nchw ? tn : g->tm;
    wrows = nchw ? (kg + g->tm - 1) / g->tm * g->tm : (kg + tn - 1) / tn * tn;
  }
  return (uint64_t)(panel + wrows) * kp * es;
}

/* Bytes of the buffers a request holds besides the workspace: x, the
 * weights, the bias and y. */
static uint64_t request_bytes(const problem *p)
{
  return (uint64_t)(p->nx + p->nw + (p->b ? p->d.k : 0) + p->ny) *
         kiln_dtype_size(p->d.dtype);
}

/* When im2col's workspace for the whole batch exceeds the memory budget, it
 * works image by image; when not even one image's fits, in chunks of an
 * image's rows (whole panels); when not even one panel fits,
 * OUT_OF_MEMORY. */
static void test_conv_im2col_chunks_over_the_batch(void **state)
{
  /* x 18.3 KB, w 1.2 KB, y 9.2 KB; the workspace 41 KB an image, 165 KB
   * for all four, a panel of 32 rows (PoCL's) about 9 KB. */
  static const conv_case cc = {4, 8, 13, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
  static const uint64_t limits[] = {128 * 1024, 48 * 1024, 32 * 1024};
  for (size_t li = 0; li < COUNT(limits); li++) {
    problem p;
    make(&p, &cc, KILN_F32, KILN_NCHW, 7);
    p.d.backend = KILN_BACKEND_IM2COL;
    uint64_t request = request_bytes(&p), least = request + least_workspace(*state, &p);
    uint64_t limit = limits[li];
    if (li < 2 && limit < least + least / 8) { /* a panel, with room to spare */
      fprintf(stderr, "# budget %llu raised to %llu, what one panel needs here\n",
              (unsigned long long)limit, (unsigned long long)(least + least / 8));
      limit = least + least / 8;
    }
    if (li == 2 && limit >= least)             /* not even one panel, on any device: */
      limit = request + (least - request) / 2; /* the buffers and half of one */
    if (li == 2)
      assert_true(limit < least);
    kiln_options opts;
    kiln_options_init(&opts);
    opts.memory_limit = limit;
    /* The limits are set to the byte against the buffers' sizes: without
     * the pool, which rounds each block up to its size class. */
    opts.no_memory_pool = 1;
    kiln_runtime *rt = NULL;
    assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
    double *want = malloc(3 * p.ny * sizeof *want), *bound = want + p.ny,
           *got = bound + p.ny;
    reference(&p, want, bound);
    char msg[1024];
    for (int be = KILN_BACKEND_IM2COL; be <= KILN_BACKEND_DIRECT; be++) {
      p.d.backend = (kiln_backend)be; /* direct has no workspace: runs under both */
      kiln_status st = run_conv(rt, &p, got, msg, sizeof msg), want_st = KILN_OK;
      if (li == 2 && be == KILN_BACKEND_IM2COL)
        want_st = KILN_ERR_OUT_OF_MEMORY;
      if (st != want_st)
        fail_msg("%s under a %zu-byte budget returned %s, expected %s: %s",
                 kiln_backend_name(p.d.backend), (size_t)limit, kiln_status_name(st),
                 kiln_status_name(want_st), msg);
      if (st == KILN_OK)
        check_y(&p, got, want, bound, kiln_backend_name(p.d.backend));
    }
    kiln_memory_usage mu;
    kiln_memory_usage_init(&mu);
    assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
    assert_true(mu.peak_bytes <= limit);
    assert_int_equal(mu.live_buffers, 0);
    free(want);
    unmake(&p);
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  }
}

/* ---- kiln_conv2d_host --------------------------------------------------- */

/* A runtime whose budget is `limit` bytes to the byte: no pool, whose
 * classes round blocks up. */
static kiln_runtime *budget_runtime(uint64_t limit)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = limit;
  opts.no_memory_pool = 1;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  return rt;
}

/* The problem through kiln_conv2d_host() on rt into got (y starts as NaN);
 * its status, the message into msg. */
static kiln_status run_host(kiln_runtime *rt, const problem *p, double *got, char *msg,
                            size_t msg_size)
{
  kiln_dtype t = p->d.dtype;
  void *x = to_bytes(p->x, p->nx, t), *w = to_bytes(p->w, p->nw, t);
  void *b = p->b ? to_bytes(p->b, p->d.k, t) : NULL;
  double *nan = malloc(p->ny * sizeof *nan);
  for (size_t i = 0; i < p->ny; i++)
    nan[i] = NAN;
  void *y = to_bytes(nan, p->ny, t);
  kiln_status st = kiln_conv2d_host(rt, &p->d, x, w, b, y);
  snprintf(msg, msg_size, "%s", st == KILN_OK ? "" : kiln_last_error(rt));
  for (size_t i = 0; st == KILN_OK && i < p->ny; i++)
    got[i] = kiln_test_get(t, y, i);
  free(x), free(w), free(b), free(y), free(nan);
  return st;
}

/* Bytes of one image's input and output. */
static void image_bytes(const problem *p, uint64_t *x, uint64_t *y)
{
  size_t es = kiln_dtype_size(p->d.dtype);
  *x = (uint64_t)p->nx / p->d.n * es, *y = (uint64_t)p->ny / p->d.n * es;
}

/* The budget of a host case: `nominal`, or what one piece (an image; one
 * output row with rows) needs in this device's shape where that is more
 * (least_workspace()): the weights and bias, and the piece's input, output
 * and workspace with the tenth of what is left that kiln_conv2d_host()
 * keeps for the driver, and 1 KiB for rounding. */
static uint64_t host_budget(kiln_runtime *rt, const problem *p, uint64_t nominal,
                            int rows)
{
  const kiln_conv2d_desc *d = &p->d;
  size_t es = kiln_dtype_size(d->dtype), reach = (d->r - 1) * d->dilation_h + 1;
  uint64_t xb, yb;
  image_bytes(p, &xb, &yb);
  if (rows) {
    xb = (uint64_t)(reach < d->h ? reach : d->h) * d->w * d->c * es;
    yb = (uint64_t)p->q * d->k * es;
  }
  uint64_t fixed = (uint64_t)(p->nw + (p->b ? d->k : 0)) * es,
           floor = fixed + (xb + yb + least_workspace(rt, p)) * 10 / 9 + 1024;
  if (nominal < floor)
    fprintf(stderr, "# %s: budget %llu raised to %llu, what one %s needs here\n",
            kiln_backend_name(p->d.backend), (unsigned long long)nominal,
            (unsigned long long)floor, rows ? "output row" : "image");
  return nominal > floor ? nominal : floor;
}

/* Under each budget (in bytes; 0: none), kiln_conv2d_host() gives exactly
 * what kiln_conv2d() gives on the whole batch on the same backend, within
 * the reference's bound, using at most the budget: a batch of images split
 * into runs of images (budgets below the batch's bytes), one image's output
 * rows split (budgets below an image's), in both layouts, on im2col and
 * direct. */
static void host_case(kiln_runtime *whole, const conv_case *cc, const uint64_t *limits,
                      size_t nlimits, int rows)
{
  for (int l = 0; l < 2; l++) {
    problem p;
    make(&p, cc, KILN_F32, (kiln_tensor_layout)l, 11);
    double *want = malloc(4 * p.ny * sizeof *want), *bound = want + p.ny,
           *one = bound + p.ny, *got = one + p.ny;
    reference(&p, want, bound);
    uint64_t xb, yb;
    image_bytes(&p, &xb, &yb);
    for (int be = KILN_BACKEND_IM2COL; be <= KILN_BACKEND_DIRECT; be++) {
      char msg[1024], what[400];
      p.d.backend = (kiln_backend)be;
      describe(&p, kiln_backend_name(p.d.backend), what, sizeof what);
      kiln_status st = run_conv(whole, &p, one, msg, sizeof msg);
      if (st != KILN_OK)
        fail_msg("%s: kiln_conv2d: %s", what, msg);
      for (size_t li = 0; li < nlimits; li++) {
        /* the budget is below what one image (rows) or the batch needs */
        uint64_t limit = host_budget(whole, &p, limits[li], rows);
        assert_true(limit < request_bytes(&p) - (rows ? (p.d.n - 1) * (xb + yb) : 0) +
                              least_workspace(whole, &p));
        kiln_runtime *rt = budget_runtime(limit);
        st = run_host(rt, &p, got, msg, sizeof msg);
        if (st != KILN_OK)
          fail_msg("%s under %llu bytes: %s: %s", what, (unsigned long long)limit,
                   kiln_status_name(st), msg);
        check_y(&p, got, want, bound, what);
        for (size_t i = 0; i < p.ny; i++)
          if (got[i] != one[i])
            fail_msg("%s under %llu bytes: y[%zu] = %.9g split, %.9g whole", what,
                     (unsigned long long)limit, i, got[i], one[i]);
        kiln_memory_usage mu;
        kiln_memory_usage_init(&mu);
        assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
        assert_true(mu.peak_bytes <= limit);
        assert_int_equal(mu.live_buffers, 0);
        assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
      }
    }
    free(want);
    unmake(&p);
  }
}

static void test_conv_host_batch_split(void **state)
{
  /* 6 images of 3.8 KB in, 5.8 KB out, bias and ReLU; im2col's least
   * workspace, a panel of 32 rows, is 11.5 KB on PoCL */
  static const conv_case cc = {6, 4, 16, 15, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint64_t limits[] = {48 * 1024, 30 * 1024};
  host_case(*state, &cc, limits, COUNT(limits), 0);
}

/* One image of 23.8 KB in and 10.2 KB out, a 3 x 3 filter at stride 2 with
 * padding (asymmetric on the rows); then two of 6 KB in and 10.4 KB out, a
 * 5 x 5 filter with dilation 2 on the rows and stride 2 on the columns: in
 * runs of output rows, each reading the input rows it needs, the first and
 * last with the padding's rows. */
static void test_conv_host_row_split(void **state)
{
  static const conv_case s2 = {1, 3, 64, 31, 5, 3, 3, 2, 2, 1, 2, 1, 1, 1, 1, 1, 1, 0};
  static const conv_case dil = {2, 1, 60, 25, 4, 5, 5, 1, 2, 4, 3, 2, 2, 2, 1, 1, 0, 1};
  static const uint64_t limits[] = {24 * 1024, 12 * 1024}, dil_limit = 14 * 1024;
  host_case(*state, &s2, limits, COUNT(limits), 1);
  host_case(*state, &dil, &dil_limit, 1, 1);
}

/* Rows that read padding only (a 1 x 1 filter, padding 2): their pieces
 * stand a row of zeros for it, and give the bias. */
static void test_conv_host_rows_of_padding(void **state)
{
  static const conv_case cc = {1, 3, 30, 21, 4, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 0};
  static const uint64_t limits[] = {5 * 1024};
  host_case(*state, &cc, limits, COUNT(limits), 1);
}

/* Too small a budget for one output row: OUT_OF_MEMORY naming the piece;
 * NULL arrays and bad descriptors: their statuses. */
static void test_conv_host_errors(void **state)
{
  kiln_runtime *rt = *state;
  static const conv_case cc = {1, 3, 64, 31, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  problem p;
  make(&p, &cc, KILN_F32, KILN_NCHW, 3);
  float x[4] = {0}, w[4] = {0}, y[4] = {0};
  kiln_runtime *tiny = budget_runtime(2 * 1024);
  double *got = malloc(p.ny * sizeof *got);
  char msg[1024];
  p.d.backend = KILN_BACKEND_DIRECT;
  assert_int_equal(run_host(tiny, &p, got, msg, sizeof msg), KILN_ERR_OUT_OF_MEMORY);
  if (!strstr(msg, "kiln_conv2d_host: one output row of one image"))
    fail_msg("the message does not name the piece: %s", msg);
  assert_kiln_ok(NULL, kiln_runtime_destroy(tiny));
  free(got);
  kiln_conv2d_desc d = p.d;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "x is NULL",
                    kiln_conv2d_host(rt, &d, NULL, w, NULL, y));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "weights is NULL",
                    kiln_conv2d_host(rt, &d, x, NULL, NULL, y));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "y is NULL",
                    kiln_conv2d_host(rt, &d, x, w, NULL, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "desc",
                    kiln_conv2d_host(rt, NULL, x, w, NULL, y));
  d.layout = (kiln_tensor_layout)7;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "layout 7",
                    kiln_conv2d_host(rt, &d, x, w, NULL, y));
  d = p.d, d.dtype = KILN_I32;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "int32",
                    kiln_conv2d_host(rt, &d, x, w, NULL, y));
  d = p.d, d.groups = 2;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "groups",
                    kiln_conv2d_host(rt, &d, x, w, NULL, y));
  d = p.d, d.r = 99;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "no rows or columns",
                    kiln_conv2d_host(rt, &d, x, w, NULL, y));
  d = p.d, d.struct_size = 0;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d_desc_init",
                    kiln_conv2d_host(rt, &d, x, w, NULL, y));
  unmake(&p);
}

/* The conv parameters of kiln tune (kiln__conv_tuning) that the rules never
 * pick, extremes of what kiln__tuning_check() allows included, on the
 * table's cases (half of them each) for both kiln backends: 16 columns a work-item, 16
 * channels, 64 accumulators, odd blocks and odd groups, one-work-item
 * groups, the smallest im2col step (chunks of an image's rows, on the last
 * case) and the largest. float32 everywhere, half and double storage on a
 * few cases (the kernel's other passes). The rules' values are restored. */
static void test_conv_tuned_params(void **state)
{
  kiln_runtime *rt = *state;
  static const kiln__conv_tuning sets[] = {
    /* qw kb  lq  lp  col_kib */
    {16, 4, 0, 0, 64},
    {1, 16, 1, 1, 1u << 20},
    {3, 5, 16, 4, 100},
    {8, 8, 64, 64, 64},
  };
  static const conv_case big = {2, 8, 30, 27, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  static const kiln_backend kiln_backends[] = {KILN_BACKEND_IM2COL, KILN_BACKEND_DIRECT};
  const kiln__tuning rules = rt->tuning->t;
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  for (size_t i = 0; i < COUNT(sets); i++) {
    kiln__tuning t = rules;
    t.conv = sets[i];
    kiln__str why = {0};
    if (kiln__tuning_check(dev, &t, &why) != 0) {
      fprintf(stderr, "# conv set %zu: %s\n", i, kiln__str_get(&why));
      kiln__str_free(&why);
      continue; /* the device cannot run it: kiln tune skips it too */
    }
    kiln__runtime_set_tuning(rt, &t);
    for (size_t c = i % 2; c < NCASES; c += 2) /* half the table a set */
      run_case_on(rt, &cases[c], KILN_F32, 7 * i + c, kiln_backends,
                  COUNT(kiln_backends));
    run_case_on(rt, &big, KILN_F32, 5, kiln_backends, COUNT(kiln_backends));
    run_case_on(rt, &big, KILN_F16, 6, kiln_backends, COUNT(kiln_backends));
    run_case_on(rt, &cases[10], KILN_F16, 8, kiln_backends, COUNT(kiln_backends));
    if (dev->has_fp64)
      run_case_on(rt, &cases[13], KILN_F64, 9, kiln_backends, COUNT(kiln_backends));
  }
  kiln__runtime_set_tuning(rt, &rules);
}

/* ---- the descriptor and the output size ------------------------------------ */

static void test_conv_desc_init(void **state)
{
  (void)state;
  kiln_conv2d_desc d;
  memset(&d, 0x5a, sizeof d);
  kiln_conv2d_desc_init(&d, KILN_F16, 2, 3, 4, 5, 6, 7, 8);
  assert_int_equal(d.dtype, KILN_F16);
  assert_int_equal(d.layout, KILN_NCHW);
  assert_true(d.n == 2 && d.c == 3 && d.h == 4 && d.w == 5);
  assert_true(d.k == 6 && d.r == 7 && d.s == 8);
  assert_true(d.stride_h <= 1 && d.stride_w <= 1); /* 1, or 0 meaning 1 */
  assert_true(d.pad_top == 0 && d.pad_bottom == 0 && d.pad_left == 0 && d.pad_right == 0);
  assert_true(d.dilation_h <= 1 && d.dilation_w <= 1 && d.groups <= 1);
  assert_int_equal(d.relu, 0);
  assert_int_equal(d.backend, KILN_BACKEND_AUTO);
  kiln_conv2d_desc_init(NULL, KILN_F32, 1, 1, 1, 1, 1, 1, 1);
}

static void test_conv_output_sizes(void **state)
{
  (void)state;
  static const struct {
    conv_case cc;
    size_t p, q;
  } t[] = {
    {{1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 0, 0}, 112, 112},
    {{8, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 56, 56},
    {{1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 0, 2, 1, 1, 1, 1, 0, 0}, 6, 10},
    {{1, 3, 13, 11, 4, 3, 3, 2, 2, 0, 0, 0, 0, 2, 2, 1, 0, 0}, 5, 4},
    {{1, 3, 13, 11, 4, 5, 3, 2, 3, 2, 1, 0, 2, 1, 2, 1, 0, 0}, 6, 3},
    {{1, 3, 5, 5, 4, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 1, 1},
    {{1, 3, 7, 9, 4, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 5, 7},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    kiln_conv2d_desc d = conv_case_desc(&t[i].cc, KILN_F32, (kiln_tensor_layout)(i & 1));
    size_t p = 0, q = 0;
    assert_kiln_ok(NULL, kiln_conv2d_output(&d, &p, &q));
    if (p != t[i].p || q != t[i].q)
      fail_msg("case %zu: output %zu x %zu, expected %zu x %zu", i, p, q, t[i].p, t[i].q);
  }
}

/* A dilated filter larger than the padded input: kiln_conv2d_output() and
 * kiln_conv2d() both refuse it, also where C's truncating division would
 * make (padded - extent) / stride + 1 come out as 1. */
static void test_conv_output_too_small(void **state)
{
  kiln_runtime *rt = *state;
  static const conv_case bad[] = {
    {1, 3, 4, 9, 4, 3, 3, 1, 1, 1, 0, 0, 0, 3, 1, 1, 0, 0}, /* extent 7 > 5 rows */
    {1, 3, 9, 4, 4, 3, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0}, /* 5 > 4 columns */
    {1, 3, 5, 9, 4, 6, 3, 2, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0}, /* 6 > 5, stride 2 */
    {1, 3, 9, 3, 4, 3, 5, 1, 3, 0, 0, 1, 0, 1, 1, 1, 0, 0}, /* 5 > 4, stride 3 */
    {1, 3, 2, 2, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0}, /* 3 > 2 */
  };
  kiln_buffer *buf = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 4096, KILN_BUFFER_ZERO, &buf));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kiln_conv2d_desc d = conv_case_desc(&bad[i], KILN_F32, KILN_NCHW);
    size_t p = 99, q = 99;
    kiln_status st = kiln_conv2d_output(&d, &p, &q);
    if (st != KILN_ERR_INVALID_ARGUMENT)
      fail_msg("bad[%zu]: kiln_conv2d_output returned %s with %zu x %zu", i,
               kiln_status_name(st), p, q);
    if (!*kiln_last_error(NULL))
      fail_msg("bad[%zu]: no message for kiln_last_error(NULL)", i);
    if (i == 0)
      fprintf(stderr, "# output too small: %s\n", kiln_last_error(NULL));
    for (int l = 0; l < 2; l++) {
      d.layout = (kiln_tensor_layout)l;
      assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d",
                        kiln_conv2d(rt, &d, buf, buf, NULL, buf));
    }
  }
  kiln_buffer_destroy(buf);
}

/* ---- errors ---------------------------------------------------------------- */

/* x, weights, bias, y: four buffers of one type and runtime. */
enum { X, W, B, Y };

static void make_bufs(kiln_runtime *rt, kiln_dtype t, const size_t n[4],
                      kiln_buffer *v[4])
{
  for (int i = 0; i < 4; i++)
    assert_kiln_ok(rt, kiln_buffer_create(rt, t, n[i], KILN_BUFFER_ZERO, &v[i]));
}

static void free_bufs(kiln_buffer *v[4])
{
  for (int i = 0; i < 4; i++)
    kiln_buffer_destroy(v[i]);
}

static const size_t roomy[4] = {4096, 4096, 64, 4096};

#define CONV(rt, d, v) kiln_conv2d(rt, &(d), (v)[X], (v)[W], (v)[B], (v)[Y])

static void test_conv_errors_groups(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *v[4];
  make_bufs(rt, KILN_F32, roomy, v);
  static const size_t ckg[][3] = {{6, 8, 4}, {8, 6, 4}, {2, 4, 4}, {6, 9, 3}};
  for (size_t i = 0; i < 4; i++) { /* c, then k, then both not divisible */
    kiln_conv2d_desc d;
    kiln_conv2d_desc_init(&d, KILN_F32, 1, ckg[i][0], 5, 5, ckg[i][1], 3, 3);
    d.groups = ckg[i][2];
    d.layout = (kiln_tensor_layout)(i & 1);
    if (i == 3) /* 6 and 9 both divide by 3 */
      assert_kiln_ok(rt, CONV(rt, d, v));
    else
      assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "group", CONV(rt, d, v));
  }
  free_bufs(v);
  assert_kiln_ok(rt, kiln_finish(rt));
}

/* Each buffer one element short: OUT_OF_BOUNDS naming needed and held. */
static void test_conv_errors_buffers_too_small(void **state)
{
  kiln_runtime *rt = *state;
  kiln_conv2d_desc d; /* x 3*6*7*9 = 1134; w 12*3*3*3 = 324; y 3*12*7*9 = 2268 */
  kiln_conv2d_desc_init(&d, KILN_F32, 3, 6, 7, 9, 12, 3, 3);
  d.layout = KILN_NHWC;
  d.groups = 2;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  static const size_t need[4] = {1134, 324, 12, 2268};
  static const kiln_backend be[3] = {KILN_BACKEND_IM2COL, KILN_BACKEND_DIRECT,
                                     KILN_BACKEND_AUTO};
  kiln_buffer *v[4];
  for (int which = 0; which < 4; which++) {
    size_t n[4] = {need[0], need[1], need[2], need[3]};
    n[which]--;
    make_bufs(rt, KILN_F32, n, v);
    char want_need[32], want_held[32];
    snprintf(want_need, sizeof want_need, "%zu", need[which]);
    snprintf(want_held, sizeof want_held, "%zu", n[which]);
    for (size_t bi = 0; bi < 3; bi++) {
      d.backend = be[bi];
      assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, want_need, CONV(rt, d, v));
      assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, want_held, CONV(rt, d, v));
    }
    free_bufs(v);
  }
  make_bufs(rt, KILN_F32, need, v);
  assert_kiln_ok(rt, CONV(rt, d, v));
  assert_kiln_ok(rt, kiln_conv2d(rt, &d, v[X], v[W], NULL, v[Y]));
  free_bufs(v);
  assert_kiln_ok(rt, kiln_finish(rt));
}

/* One buffer of another type, or a descriptor type conv does not take. */
static void test_conv_errors_dtype(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *f[4], *h[4], *i32[4];
  make_bufs(rt, KILN_F32, roomy, f);
  make_bufs(rt, KILN_F16, roomy, h);
  make_bufs(rt, KILN_I32, roomy, i32);
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, 1, 3, 5, 5, 4, 3, 3);
  for (int which = 0; which < 4; which++) {
    kiln_buffer *v[4] = {f[X], f[W], f[B], f[Y]};
    v[which] = h[which];
    assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "float16", CONV(rt, d, v));
  }
  d.dtype = KILN_F16;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "float32", CONV(rt, d, f));
  assert_kiln_ok(rt, CONV(rt, d, h));
  d.dtype = KILN_I32;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "int32", CONV(rt, d, i32));
  d.dtype = KILN_C32;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "complex64", CONV(rt, d, f));
  d.dtype = (kiln_dtype)0;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "kiln_conv2d", CONV(rt, d, f));
  if (!kiln_runtime_device(rt)->has_fp64) {
    d.dtype = KILN_F64;
    kiln_test_refuses_fp64(rt, CONV(rt, d, f), "kiln_conv2d of float64");
  }
  free_bufs(f);
  free_bufs(h);
  free_bufs(i32);
  assert_kiln_ok(rt, kiln_finish(rt));
}

static void test_conv_errors_null_zero_backend(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *v[4];
  make_bufs(rt, KILN_F32, roomy, v);
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, 1, 3, 5, 5, 4, 3, 3);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "NULL", CONV(NULL, d, v));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "NULL",
                    kiln_conv2d(rt, NULL, v[X], v[W], v[B], v[Y]));
  for (int which = 0; which < 4; which++) {
    if (which == B)
      continue; /* NULL bias: no bias */
    kiln_buffer *n[4] = {v[X], v[W], v[B], v[Y]};
    n[which] = NULL;
    assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "NULL", CONV(rt, d, n));
  }
  size_t p, q;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "NULL",
                    kiln_conv2d_output(NULL, &p, &q));
  for (int f = 0; f < 7; f++) { /* each size zero in turn */
    kiln_conv2d_desc z = d;
    size_t *field[7] = {&z.n, &z.c, &z.k, &z.h, &z.w, &z.r, &z.s};
    *field[f] = 0;
    assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d", CONV(rt, z, v));
    if (f >= 3) /* n, c and k do not enter the output size */
      assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d",
                        kiln_conv2d_output(&z, &p, &q));
  }
  d.backend = (kiln_backend)42;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "42", CONV(rt, d, v));
  d.backend = KILN_BACKEND_AUTO;
  d.layout = (kiln_tensor_layout)2;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d", CONV(rt, d, v));
  d.layout = KILN_NCHW;
  d.activation = (kiln_activation)5;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "activation 5", CONV(rt, d, v));
  d.activation = KILN_ACTIVATION_TANH;
  d.relu = 1;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "relu is set and activation is tanh",
                    CONV(rt, d, v));
  d.relu = 0;
#if HAVE_CLBLAST
  d.backend = KILN_BACKEND_CLBLAST;
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "convgemm has no activation",
                    kiln_conv2d(rt, &d, v[X], v[W], NULL, v[Y]));
#endif
#if !HAVE_CLBLAST
  d.layout = KILN_NCHW;
  d.backend = KILN_BACKEND_CLBLAST;
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "CLBlast", CONV(rt, d, v));
#endif
  free_bufs(v);
  assert_kiln_ok(rt, kiln_finish(rt));
}

/* Any one buffer from another runtime, on every kiln backend. */
static void test_conv_errors_wrong_runtime(void **state)
{
  kiln_runtime *rt = *state, *other = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &other));
  kiln_buffer *mine[4], *theirs[4];
  make_bufs(rt, KILN_F32, roomy, mine);
  make_bufs(other, KILN_F32, roomy, theirs);
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, 1, 3, 5, 5, 4, 3, 3);
  for (int be = 0; be < 3; be++)
    for (int which = 0; which < 4; which++) {
      kiln_buffer *v[4] = {mine[X], mine[W], mine[B], mine[Y]};
      v[which] = theirs[which];
      d.backend = all_backends[be];
      assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "kiln_conv2d", CONV(rt, d, v));
    }
  free_bufs(mine);
  free_bufs(theirs);
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_kiln_ok(other, kiln_runtime_destroy(other));
}

static int teardown(void **state)
{
  for (size_t i = 0; i < sizeof all_backends / sizeof all_backends[0]; i++)
    fprintf(stderr, "# %s: %u runs checked, %u refused as unsupported\n",
            kiln_backend_name(all_backends[i]), ran[all_backends[i]],
            refused[all_backends[i]]);
  return kiln_test_runtime_teardown(state);
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  if (argc > 1) /* a pattern of test names: the budget cases alone, as meson runs them */
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_conv_desc_init),
    cmocka_unit_test(test_conv_output_sizes),
    cmocka_unit_test(test_conv_output_too_small),
    cmocka_unit_test(test_conv_errors_groups),
    cmocka_unit_test(test_conv_errors_buffers_too_small),
    cmocka_unit_test(test_conv_errors_dtype),
    cmocka_unit_test(test_conv_errors_null_zero_backend),
    cmocka_unit_test(test_conv_errors_wrong_runtime),
    cmocka_unit_test(test_conv_float32),
    cmocka_unit_test(test_conv_long_loops),
    cmocka_unit_test(test_conv_gpu_depthwise),
    cmocka_unit_test(test_conv_gpu_implicit_gemm),
    cmocka_unit_test(test_conv_float64),
    cmocka_unit_test(test_conv_float16),
    cmocka_unit_test(test_conv_im2col_chunks_over_the_batch),
    cmocka_unit_test(test_conv_host_batch_split),
    cmocka_unit_test(test_conv_host_row_split),
    cmocka_unit_test(test_conv_host_rows_of_padding),
    cmocka_unit_test(test_conv_host_errors),
    cmocka_unit_test(test_conv_tuned_params),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup, teardown);
}
