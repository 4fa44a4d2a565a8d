/*
 * test-gemm.c — kiln_gemm() and kiln_gemm_host() against a naive double
 * precision reference, on every backend built in and on both shapes of
 * kiln's kernel (the GPU shape is forced on PoCL through the tuning seam).
 *
 * Tolerance: a dot product of k terms accumulated in precision u is within
 * gamma_k = k u / (1 - k u) of the exact value, relative to sum |a_i b_i|
 * (Higham, Accuracy and Stability, 3.1); C adds alpha and beta terms. Half
 * storage adds one rounding of the result to half (u = 2^-11) on top of the
 * float32 accumulation. The epilogue adds the bias's rounding and what
 * activation.h bounds.
 */
/* kiln_gemm_backend_for() is experimental API. */
#define KILN_EXPERIMENTAL
#include "common.h"

#include <math.h>

#include "activation.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "tuning/tuning.h"
#include "kiln_config.h"
#include "values.h"

/* ---- matrices ------------------------------------------------------------ */

typedef struct problem {
  kiln_gemm_desc d;
  size_t na, nb, nc, nbias; /* elements of each buffer */
  double *a, *b, *c, *bias; /* the values, as doubles; bias NULL for none */
} problem;

/* Element (i, j) of a matrix stored with ld in the descriptor's layout. */
static size_t at(const kiln_gemm_desc *d, size_t i, size_t j, size_t ld)
{
  return d->layout == KILN_ROW_MAJOR ? i * ld + j : j * ld + i;
}

static size_t packed_ld(const kiln_gemm_desc *d, size_t rows, size_t cols)
{
  return d->layout == KILN_ROW_MAJOR ? cols : rows;
}

/* 31 random bits. */
static uint64_t lcg(uint64_t *s)
{
  return kiln_test_random(s) >> 22;
}

/* Values on a 2^-8 grid in [-2, 2): exact in every dtype, and products
 * that do round when summed. */
static double value(uint64_t *seed)
{
  return ((double)(lcg(seed) % 1024) - 512.0) / 256.0;
}

static void fill(double *x, size_t n, uint64_t *seed)
{
  for (size_t i = 0; i < n; i++)
    x[i] = value(seed);
}

/* What the descriptor implies, defaults resolved: each operand's stored
 * rows and columns, leading dimension and batch stride. */
typedef struct geometry {
  size_t batch, ar, ac, br, bc, lda, ldb, ldc, sa, sb, sc;
} geometry;

static geometry geometry_of(const kiln_gemm_desc *d)
{
  geometry g = {.batch = d->batch ? d->batch : 1};
  int row = d->layout == KILN_ROW_MAJOR;
  g.ar = d->trans_a ? d->k : d->m, g.ac = d->trans_a ? d->m : d->k;
  g.br = d->trans_b ? d->n : d->k, g.bc = d->trans_b ? d->k : d->n;
  g.lda = d->lda ? d->lda : packed_ld(d, g.ar, g.ac);
  g.ldb = d->ldb ? d->ldb : packed_ld(d, g.br, g.bc);
  g.ldc = d->ldc ? d->ldc : packed_ld(d, d->m, d->n);
  g.sa = d->stride_a ? d->stride_a : g.lda * (row ? g.ar : g.ac);
  g.sb = d->stride_b ? d->stride_b : g.ldb * (row ? g.br : g.bc);
  g.sc = d->stride_c ? d->stride_c : g.ldc * (row ? d->m : d->n);
  return g;
}

/* The buffers' sizes from the descriptor, stride and ld included. */
static void sizes(problem *p)
{
  const kiln_gemm_desc *d = &p->d;
  geometry g = geometry_of(d);
  p->na = d->offset_a + (g.batch - 1) * g.sa + at(d, g.ar - 1, g.ac - 1, g.lda) + 1;
  p->nb = d->offset_b + (g.batch - 1) * g.sb + at(d, g.br - 1, g.bc - 1, g.ldb) + 1;
  p->nc = d->offset_c + (g.batch - 1) * g.sc + at(d, d->m - 1, d->n - 1, g.ldc) + 1;
  p->nbias = d->bias == KILN_BIAS_NONE ? 0
                                       : d->offset_bias + (g.batch - 1) * d->stride_bias +
                                           (d->bias == KILN_BIAS_ROW ? d->m : d->n);
}

/* C = alpha op(A) op(B) + beta C in double, and the bound on each element's
 * error: gamma * (|alpha| sum |a b| + |beta c|) plus the final rounding. */
static void reference(const problem *p, double *want, double *bound)
{
  const kiln_gemm_desc *d = &p->d;
  geometry g = geometry_of(d);
  size_t batch = g.batch, lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  size_t sa = g.sa, sb = g.sb, sc = g.sc;
  double u = d->dtype == KILN_F64 ? ldexp(1, -53) : ldexp(1, -24);
  double gamma = (double)(d->k + 2) * u / (1 - (double)(d->k + 2) * u);
  double round_out = d->dtype == KILN_F16 ? ldexp(1, -11) : u;
  memcpy(want, p->c, p->nc * sizeof *want);
  for (size_t i = 0; i < p->nc; i++)
    bound[i] = 0;
  for (size_t b = 0; b < batch; b++)
    for (size_t i = 0; i < d->m; i++)
      for (size_t j = 0; j < d->n; j++) {
        double s = 0, mag = 0;
        for (size_t q = 0; q < d->k; q++) {
          double x = p->a[d->offset_a + b * sa +
                          (d->trans_a ? at(d, q, i, lda) : at(d, i, q, lda))];
          double y = p->b[d->offset_b + b * sb +
                          (d->trans_b ? at(d, j, q, ldb) : at(d, q, j, ldb))];
          s += x * y;
          mag += fabs(x * y);
        }
        size_t ci = d->offset_c + b * sc + at(d, i, j, ldc);
        double old = d->beta == 0 ? 0 : d->beta * p->c[ci];
        double pre = d->alpha * s + old, err = gamma * (fabs(d->alpha) * mag + fabs(old));
        if (p->bias) { /* one more addition, rounded */
          pre += p->bias[d->offset_bias + b * d->stride_bias +
                         (d->bias == KILN_BIAS_ROW ? i : j)];
          err += u * fabs(pre);
        }
        want[ci] = kiln_test_activate(d->activation, pre);
        /* half's subnormals below 2^-14 are 2^-24 apart */
        bound[ci] = kiln_test_activation_bound(d->activation, pre, err, u) +
                    round_out * fabs(want[ci]) +
                    (d->dtype == KILN_F16 ? ldexp(1, -24) : 1e-300);
      }
}

/* Host values to the dtype's bytes and back. */
static void *to_bytes(const double *x, size_t n, kiln_dtype t)
{
  unsigned char *out = malloc(n * kiln_dtype_size(t) + 1);
  for (size_t i = 0; i < n; i++)
    kiln_test_put(t, out, i, x[i]);
  return out;
}

/* Makes the problem's data; C holds NaN when beta is 0, which must not show. */
static void make(problem *p, uint64_t seed)
{
  sizes(p);
  p->a = malloc(p->na * sizeof(double));
  p->b = malloc(p->nb * sizeof(double));
  p->c = malloc(p->nc * sizeof(double));
  fill(p->a, p->na, &seed);
  fill(p->b, p->nb, &seed);
  fill(p->c, p->nc, &seed);
  p->bias = p->nbias ? malloc(p->nbias * sizeof(double)) : NULL;
  if (p->bias)
    fill(p->bias, p->nbias, &seed);
  if (p->d.beta == 0)
    for (size_t i = 0; i < p->nc; i++)
      p->c[i] = NAN;
}

static void unmake(problem *p)
{
  free(p->a);
  free(p->b);
  free(p->c);
  free(p->bias);
}

/* Checks C element by element; the first bad one names the problem. */
static void check_c(const problem *p, const void *got, const char *how)
{
  double *want = malloc(p->nc * sizeof *want), *bound = malloc(p->nc * sizeof *bound);
  reference(p, want, bound);
  const kiln_gemm_desc *d = &p->d;
  for (size_t i = 0; i < p->nc; i++) {
    double g = kiln_test_get(d->dtype, got, i);
    int same_nan = isnan(want[i]) && isnan(g);
    if (!same_nan && !(fabs(g - want[i]) <= bound[i]))
      fail_msg("%s: %s m=%zu n=%zu k=%zu %s ta=%d tb=%d alpha=%g beta=%g batch=%zu "
               "lda=%zu ldb=%zu ldc=%zu bias %d (offset %zu stride %zu) %s: C[%zu] = "
               "%.9g, expected %.9g (bound %.3g)",
               how, kiln_dtype_name(d->dtype), d->m, d->n, d->k,
               d->layout == KILN_ROW_MAJOR ? "row" : "col", d->trans_a, d->trans_b,
               d->alpha, d->beta, d->batch, d->lda, d->ldb, d->ldc, (int)d->bias,
               d->offset_bias, d->stride_bias, kiln_activation_name(d->activation), i, g,
               want[i], bound[i]);
  }
  free(want);
  free(bound);
}

/* Runs the problem on the device through kiln_gemm() and checks it. */
static void run_device(kiln_runtime *rt, problem *p)
{
  kiln_dtype t = p->d.dtype;
  void *ha = to_bytes(p->a, p->na, t), *hb = to_bytes(p->b, p->nb, t),
       *hc = to_bytes(p->c, p->nc, t);
  kiln_buffer *a = NULL, *b = NULL, *c = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, p->na, 0, &a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, p->nb, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, p->nc, 0, &c));
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, p->na, ha));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, p->nb, hb));
  assert_kiln_ok(rt, kiln_buffer_write(c, 0, p->nc, hc));
  kiln_gemm_desc d = p->d;
  kiln_buffer *bias = NULL;
  if (p->bias) {
    void *hbias = to_bytes(p->bias, p->nbias, t);
    assert_kiln_ok(rt, kiln_buffer_create(rt, t, p->nbias, 0, &bias));
    assert_kiln_ok(rt, kiln_buffer_write(bias, 0, p->nbias, hbias));
    free(hbias);
    d.bias_buffer = bias;
  }
  assert_kiln_ok(rt, kiln_gemm(rt, &d, a, b, c));
  assert_kiln_ok(rt, kiln_buffer_read(c, 0, p->nc, hc));
  check_c(p, hc, kiln_backend_name(p->d.backend));
  kiln_buffer_destroy(bias);
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(c);
  free(ha);
  free(hb);
  free(hc);
}

/* The backends to test: kiln's, and CLBlast's when built in and able. */
static const kiln_backend backends[] = {KILN_BACKEND_KILN, KILN_BACKEND_CLBLAST};
static size_t nbackends = HAVE_CLBLAST ? 2 : 1; /* 1 in test_gemm_gpu_shape */

static void for_backends(kiln_runtime *rt, problem *p)
{
  for (size_t i = 0; i < nbackends; i++) {
    p->d.backend = backends[i];
    if (kiln_gemm_backend_for(rt, &p->d) != backends[i])
      continue; /* e.g. CLBlast's Hgemm without cl_khr_fp16: its own test */
    run_device(rt, p);
  }
}

static void one(kiln_runtime *rt, kiln_gemm_desc d, uint64_t seed)
{
  problem p = {.d = d};
  make(&p, seed);
  for_backends(rt, &p);
  unmake(&p);
}

static kiln_gemm_desc desc(kiln_dtype t, size_t m, size_t n, size_t k)
{
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, t, m, n, k);
  return d;
}

static void test_gemm_every_size_to_70(void **state)
{
  for (size_t s = 1; s <= 70; s++)
    one(*state, desc(KILN_F32, s, s, s), s);
  /* Non-square too: every m with fixed odd n, k. */
  for (size_t s = 1; s <= 70; s += 3)
    one(*state, desc(KILN_F32, s, 71 - s, (s * 7) % 37 + 1), 100 + s);
}

static void test_gemm_primes_and_odd_sizes(void **state)
{
  static const size_t sz[][3] = {{97, 101, 103}, {131, 7, 257},   {1, 293, 2},
                                 {263, 1, 17},   {127, 129, 255}, {300, 299, 301}};
  for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
    one(*state, desc(KILN_F32, sz[i][0], sz[i][1], sz[i][2]), i);
}

static void test_gemm_transposes_layouts_alpha_beta(void **state)
{
  static const double ab[][2] = {{1, 0}, {-0.5, 0}, {2, 1}, {1.5, -0.75}, {0, 2}};
  for (int layout = 0; layout < 2; layout++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++) {
          kiln_gemm_desc d = desc(KILN_F32, 19 + i, 37, 23 + 2 * i);
          d.layout = (kiln_layout)layout;
          d.trans_a = (kiln_transpose)ta;
          d.trans_b = (kiln_transpose)tb;
          d.alpha = ab[i][0];
          d.beta = ab[i][1];
          one(*state, d, 7 * i + (size_t)ta + 2 * (size_t)tb);
        }
}

static void test_gemm_leading_dimensions_offsets_batches(void **state)
{
  for (int layout = 0; layout < 2; layout++)
    for (int t = 0; t < 4; t++) {
      kiln_gemm_desc d = desc(KILN_F32, 13, 29, 17);
      d.layout = (kiln_layout)layout;
      d.trans_a = (kiln_transpose)(t & 1);
      d.trans_b = (kiln_transpose)(t >> 1);
      d.lda = 41;
      d.ldb = 43;
      d.ldc = 47;
      d.offset_a = 5;
      d.offset_b = 3;
      d.offset_c = 11;
      d.beta = 0.5;
      one(*state, d, (size_t)t);
      d.batch = 4; /* strided batch: packed, then with gaps */
      one(*state, d, 10 + (size_t)t);
      d.stride_a = 41 * 41;
      d.stride_b = 43 * 45;
      d.stride_c = 47 * 50;
      one(*state, d, 20 + (size_t)t);
    }
}

static void test_gemm_dtypes(void **state)
{
  kiln_runtime *rt = *state;
  static const kiln_dtype types[] = {KILN_F64, KILN_F16};
  for (size_t i = 0; i < 2; i++) {
    if (types[i] == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
      continue;
    for (size_t s = 1; s <= 40; s += 13)
      one(rt, desc(types[i], s, s + 2, s + 5), s);
    kiln_gemm_desc d = desc(types[i], 67, 45, 129);
    d.trans_a = KILN_TRANS;
    d.beta = -1;
    d.batch = 3;
    one(rt, d, 99);
    d.layout = KILN_COL_MAJOR;
    d.trans_b = KILN_TRANS;
    d.beta = 0;
    one(rt, d, 98);
  }
}

/* The epilogue: every activation without a bias, with a row bias and with
 * a column bias, over both layouts and every transpose (so through the
 * packed and the unpacked kernels), beta 0 and not, batches whose products
 * have their own bias vectors or share one, and the dtypes; sizes that give
 * whole tiles (the vector path) and edges. CLBlast's second pass too. */
/* A long k: 70001 terms, more than a work-item of Mesa's llvmpipe may loop
 * over (it stops every loop of a work-item after 65535 iterations in all,
 * silently; kiln runs k in slices there). Both transposes, both layouts,
 * beta and an epilogue, which only the last slice may apply. */
static void test_gemm_long_k(void **state)
{
  kiln_runtime *rt = *state;
  for (int t = 0; t < 2; t++) {
    kiln_gemm_desc d = desc(KILN_F32, 3, 5, 70001);
    d.trans_a = d.trans_b = (kiln_transpose)t;
    d.layout = t ? KILN_COL_MAJOR : KILN_ROW_MAJOR;
    d.beta = 0.5;
    d.bias = t ? KILN_BIAS_ROW : KILN_BIAS_COL;
    d.activation = t ? KILN_ACTIVATION_TANH : KILN_ACTIVATION_RELU;
    one(rt, d, 40 + (uint64_t)t);
  }
}

static void test_gemm_epilogue(void **state)
{
  kiln_runtime *rt = *state;
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64};
  int i = 0;
  for (int act = KILN_ACTIVATION_NONE; act <= KILN_ACTIVATION_TANH; act++)
    for (int bias = KILN_BIAS_NONE; bias <= KILN_BIAS_COL; bias++, i++) {
      kiln_dtype t = types[i % 3];
      if (t == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
        t = KILN_F32;
      kiln_gemm_desc d =
        desc(t, 37 + (size_t)i, 64 + (size_t)(i % 2), 29 + (size_t)i % 5);
      d.layout = (kiln_layout)(i & 1);
      d.trans_a = (kiln_transpose)(i >> 1 & 1);
      d.trans_b = (kiln_transpose)(i >> 2 & 1);
      d.activation = (kiln_activation)act;
      d.bias = (kiln_bias)bias;
      d.beta = i % 4 ? 0.5 : 0;
      d.batch = 1 + (size_t)i % 3;
      d.offset_bias = i % 2 ? 3 : 0;
      d.stride_bias = i % 3 == 2 ? 0 : (bias == KILN_BIAS_ROW ? d.m : d.n) + 1;
      one(rt, d, 100 + (uint64_t)i);
    }
}

/* kiln's GPU shape, run on this device by overriding the tuning: the same
 * answers from local-memory tiles, the rules' for a GPU of this device's
 * limits (tuning.c's kiln__gemm_gpu_rule: 128 x 128 where it fits). */
static void test_gemm_gpu_shape(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  const kiln_device_info *dev = kiln_runtime_device(rt);
  kiln__tuning t = rt->tuning->t;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
    t.gemm[v].gpu_shape = 1;
    kiln__gemm_gpu_rule(dev->max_work_group_size, dev->local_mem_bytes,
                        v == KILN__GEMM_F64 ? 8 : 4, &t.gemm[v]);
  }
  kiln__runtime_set_tuning(rt, &t); /* the kernels are rebuilt with it */
  size_t saved_n = nbackends;
  nbackends = 1; /* kiln's only */
  for (size_t s = 1; s <= 70; s += 23)
    one(rt, desc(KILN_F32, s, s + 1, s + 2), s);
  one(rt, desc(KILN_F32, 131, 257, 35), 3); /* past one tile each way */
  kiln_gemm_desc d = desc(KILN_F16, 33, 65, 17);
  d.trans_a = d.trans_b = KILN_TRANS;
  d.beta = 2;
  d.batch = 2;
  one(rt, d, 5);
  d.bias = KILN_BIAS_COL;
  d.stride_bias = 70;
  d.activation = KILN_ACTIVATION_GELU;
  one(rt, d, 7);
  if (kiln_runtime_device(rt)->has_fp64) {
    d.dtype = KILN_F64;
    d.layout = KILN_COL_MAJOR;
    d.bias = KILN_BIAS_ROW;
    d.activation = KILN_ACTIVATION_SIGMOID;
    one(rt, d, 6);
  }
  nbackends = saved_n;
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* The GPU kernel's parameters (tuning.h), each at its extremes somewhere
 * below: tsm, tsn 8 to 256; tsk 1 to 64 (and 3, 5: slices whose vectors
 * do not divide among the group); wptm, wptn 1 to 16; vwm, vwn 1 to 8;
 * strided and contiguous; padding 0 to 8; one buffer and two; groups row
 * by row and in bands of 2 to 64 tile rows, the last band short. */
static const kiln__gemm_tuning gpu_corners[] = {
  /* tsm tsn tsk wptm wptn vwm vwn strm strn pad db gm */
  {.tsm = 8, .tsn = 8, .tsk = 1, .wptm = 1, .wptn = 1, .vwm = 1, .vwn = 1, .gm = 1},
  {.tsm = 128,
   .tsn = 128,
   .tsk = 16,
   .wptm = 8,
   .wptn = 8,
   .vwm = 4,
   .vwn = 4,
   .strm = 1,
   .strn = 1,
   .db = 1,
   .gm = 8},
  {.tsm = 128,
   .tsn = 256,
   .tsk = 32,
   .wptm = 8,
   .wptn = 16,
   .vwm = 8,
   .vwn = 8,
   .pad = 1,
   .db = 1,
   .gm = 64},
  {.tsm = 256,
   .tsn = 128,
   .tsk = 64,
   .wptm = 16,
   .wptn = 8,
   .vwm = 2,
   .vwn = 1,
   .strm = 1,
   .pad = 8,
   .gm = 3},
  {.tsm = 16,
   .tsn = 32,
   .tsk = 3,
   .wptm = 2,
   .wptn = 4,
   .vwm = 2,
   .vwn = 4,
   .strn = 1,
   .pad = 1,
   .db = 1,
   .gm = 4},
  {.tsm = 64,
   .tsn = 32,
   .tsk = 5,
   .wptm = 4,
   .wptn = 2,
   .vwm = 4,
   .vwn = 2,
   .strm = 1,
   .db = 1,
   .gm = 2},
};

/* The variants each corner runs (bits: 1 f32, 2 f16, 4 f64): every one
 * on the smallest and the rules', float alone on the largest (PoCL's
 * compiler takes long over their unrolled register tiles). */
static const unsigned gpu_corner_types[] = {7, 7, 1, 1, 3, 5};
_Static_assert(1u << KILN__GEMM_F32 == 1 && 1u << KILN__GEMM_F16 == 2 &&
                 1u << KILN__GEMM_F64 == 4,
               "the bits are the variants'");

/* Each corner on this device, in the GPU shape (on PoCL under
 * KILN_TEST_SHAPE=gpu: gemm-gpu-shape; refused ones skipped, as kiln_tune()
 * skips them, the reason printed), against the reference: odd sizes over
 * several tiles and bands, both transposes, a batch, alpha and beta, a
 * bias and an activation, both layouts. Small sizes: PoCL runs a group's
 * work-items one after another. */
static void test_gemm_gpu_corners(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  if (!kiln__gpu_shape(rt)) { /* the corners set every parameter: one run is enough */
    fprintf(stderr, "# on a CPU's shape: the GPU shape's run has the corners "
                    "(KILN_TEST_SHAPE=gpu, meson test gemm-gpu-shape)\n");
    assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
    return;
  }
  const kiln__tuning saved = rt->tuning->t;
  size_t saved_n = nbackends, ran = 0;
  nbackends = 1;
  _Static_assert(sizeof gpu_corners / sizeof *gpu_corners ==
                   sizeof gpu_corner_types / sizeof *gpu_corner_types,
                 "a variant set for each corner");
  for (size_t i = 0; i < sizeof gpu_corners / sizeof *gpu_corners; i++) {
    /* each variant the corner, where the device can run it for that type
     * (double's slices take twice the local memory) */
    kiln__tuning t = saved;
    unsigned types = 0;
    for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
      kiln__tuning one = saved;
      kiln__gemm_tuning *g = &one.gemm[v];
      *g = gpu_corners[i];
      g->gpu_shape = 1, g->tm = saved.gemm[v].tm, g->vw = saved.gemm[v].vw;
      g->akib = saved.gemm[v].akib;
      kiln__str why = {0};
      if (kiln__tuning_check(&kiln__runtime_device(rt)->info, &one, &why) != 0)
        fprintf(stderr, "# corner %zu: %s\n", i, kiln__str_get(&why));
      else
        t.gemm[v] = *g, types |= 1u << v;
      kiln__str_free(&why);
    }
    types &= gpu_corner_types[i];
    if (!(types & 1))
      continue; /* float32 runs on every corner that fits */
    kiln__runtime_set_tuning(rt, &t);
    ran++;
    kiln_gemm_desc d = desc(KILN_F32, 131, 67, 45);
    d.batch = 2;
    one(rt, d, 10 + i);
    d = desc(KILN_F32, 37, 290, 7);
    d.trans_a = KILN_TRANS;
    d.alpha = 0.5, d.beta = -1;
    d.bias = KILN_BIAS_ROW, d.activation = KILN_ACTIVATION_RELU;
    one(rt, d, 20 + i);
    if (types & 2) {
      d = desc(KILN_F16, 19, 33, 70);
      d.trans_b = KILN_TRANS;
      d.layout = KILN_COL_MAJOR;
      d.bias = KILN_BIAS_COL, d.activation = KILN_ACTIVATION_TANH;
      one(rt, d, 30 + i);
    }
    if (types & 4 && kiln_runtime_device(rt)->has_fp64) {
      d = desc(KILN_F64, 45, 21, 33);
      d.trans_a = d.trans_b = KILN_TRANS;
      d.beta = 2, d.batch = 3;
      one(rt, d, 40 + i);
    }
  }
  nbackends = saved_n;
  assert_true(ran >= 1); /* none run would test nothing */
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* The CPU shape, packed (small = 0: the sizes here would run unpacked), in
 * groups of cg work-items along M (kiln_tune()'s choice), where cg divides
 * M's tiles and where only a smaller power of two does. */
static void test_gemm_cpu_groups(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  int gpu_shape = rt->tuning->t.gemm[KILN__GEMM_F32].gpu_shape;
  if (gpu_shape)
    assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_test_require(!gpu_shape, "a device with the CPU shape's GEMM (the GPU shape "
                                "has groups of its own)");
  size_t saved_n = nbackends;
  nbackends = 1; /* kiln's only */
  static const unsigned cgs[] = {1, 4, 16, 64};
  for (size_t i = 0; i < COUNT(cgs); i++) {
    kiln__tuning t = rt->tuning->t;
    for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
      t.gemm[v].cg = cgs[i];
      t.gemm[v].tm = 6;
      t.gemm[v].small = 0;
    }
    kiln__runtime_set_tuning(rt, &t);
    /* 6-row tiles: 96 rows are 16 of them, 67 rows 12, 33 rows 6. */
    one(rt, desc(KILN_F32, 96, 40, 33), 11);
    one(rt, desc(KILN_F32, 67, 45, 20), 12);
    kiln_gemm_desc d = desc(KILN_F16, 33, 17, 9);
    d.trans_a = KILN_TRANS;
    d.beta = 2;
    d.batch = 3;
    one(rt, d, 13);
  }
  nbackends = saved_n;
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* kiln_gemm_host() on the caller's arrays, with a memory limit so small that
 * it must cut the product into panels. */
static void test_gemm_host_panels(void **state)
{
  (void)state;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = 96 * 1024; /* ~24k floats for blocks and workspace */
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  for (int layout = 0; layout < 2; layout++)
    for (int t = 0; t < 4; t++) {
      problem p = {.d = desc(KILN_F32, 150, 130, 170)};
      p.d.layout = (kiln_layout)layout;
      p.d.trans_a = (kiln_transpose)(t & 1);
      p.d.trans_b = (kiln_transpose)(t >> 1);
      p.d.beta = t == 3 ? 0 : 0.25;
      p.d.batch = 2;
      /* the epilogue on the last k slice, a row or column block's bias */
      p.d.bias = (kiln_bias)(t % 3);
      p.d.activation = (kiln_activation)(t + layout);
      p.d.offset_bias = 2;
      p.d.stride_bias = t == 1 ? 0 : 170;
      make(&p, (uint64_t)(t + 4 * layout));
      void *ha = to_bytes(p.a, p.na, KILN_F32), *hb = to_bytes(p.b, p.nb, KILN_F32),
           *hc = to_bytes(p.c, p.nc, KILN_F32),
           *hbias = p.bias ? to_bytes(p.bias, p.nbias, KILN_F32) : NULL;
      p.d.bias_host = hbias;
      assert_kiln_ok(rt, kiln_gemm_host(rt, &p.d, ha, hb, hc));
      check_c(&p, hc, "kiln_gemm_host");
      free(ha);
      free(hb);
      free(hc);
      free(hbias);
      unmake(&p);
    }
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
  assert_int_equal(mu.live_buffers, 0);
  assert_true(mu.peak_bytes <= 96 * 1024);
  /* Too small for even one panel: the sizes are in the message. */
  kiln_runtime_destroy(rt);
  opts.memory_limit = 1024;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  float x[4] = {1, 2, 3, 4};
  kiln_gemm_desc d = desc(KILN_F32, 2, 2, 1);
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "left of the budget",
                    kiln_gemm_host(rt, &d, x, x, x));
  kiln_runtime_destroy(rt);
}

static void test_gemm_errors(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *a = NULL, *b = NULL, *c = NULL, *i32 = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 6 * 5, 0, &a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 5 * 7, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 6 * 7, 0, &c));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, 6 * 7, 0, &i32));
  kiln_gemm_desc d = desc(KILN_F32, 6, 7, 5);
  assert_kiln_ok(rt, kiln_gemm(rt, &d, a, b, c));
  d.k = 6; /* A is 6 x 5: too small now */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "A needs 36 elements",
                    kiln_gemm(rt, &d, a, b, c));
  d = desc(KILN_F32, 6, 7, 5);
  d.lda = 4;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "ldA is 4, smaller than the 5 columns",
                    kiln_gemm(rt, &d, a, b, c));
  d = desc(KILN_F32, 6, 7, 0);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "expected all above 0",
                    kiln_gemm(rt, &d, a, b, c));
  d = desc(KILN_F32, 6, 7, 5);
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "buffer C holds int32",
                    kiln_gemm(rt, &d, a, b, i32));
  d.dtype = KILN_I32;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "dtype int32",
                    kiln_gemm(rt, &d, a, b, c));
  d = desc(KILN_F32, 3, 7, 5);
  d.batch = 2;
  d.stride_c = 10; /* C is 3 x 7 = 21 elements */
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "overlap", kiln_gemm(rt, &d, a, b, c));
  d = desc(KILN_F32, 6, 7, 5);
  d.backend = (kiln_backend)42;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "backend 42",
                    kiln_gemm(rt, &d, a, b, c));
#if !HAVE_CLBLAST
  d.backend = KILN_BACKEND_CLBLAST;
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "built without CLBlast",
                    kiln_gemm(rt, &d, a, b, c));
#else
  /* A type the device lacks for that backend: Hgemm needs cl_khr_fp16. */
  if (!kiln_runtime_device(rt)->has_fp16) {
    kiln_buffer *h[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
      assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F16, 64, 0, &h[i]));
    kiln_gemm_desc hd = desc(KILN_F16, 4, 4, 4);
    hd.backend = KILN_BACKEND_CLBLAST;
    assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "cl_khr_fp16",
                      kiln_gemm(rt, &hd, h[0], h[1], h[2]));
    hd.backend = KILN_BACKEND_AUTO; /* AUTO goes to kiln's kernel instead */
    assert_int_equal(kiln_gemm_backend_for(rt, &hd), KILN_BACKEND_KILN);
    for (int i = 0; i < 3; i++)
      kiln_buffer_destroy(h[i]);
  }
#endif
  if (!kiln_runtime_device(rt)->has_fp64) {
    d = desc(KILN_F64, 6, 7, 5);
    kiln_test_refuses_fp64(rt, kiln_gemm(rt, &d, a, b, c), "kiln_gemm of float64");
  }
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "buffer B is NULL",
                    kiln_gemm(rt,
                              &(kiln_gemm_desc){.struct_size = sizeof(kiln_gemm_desc),
                                                .dtype = KILN_F32,
                                                .m = 6,
                                                .n = 7,
                                                .k = 5,
                                                .alpha = 1},
                              a, NULL, c));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_gemm(NULL, &d, a, b, c));
  /* The epilogue: each kind of mistake by name. */
  d = desc(KILN_F32, 6, 7, 5);
  d.activation = (kiln_activation)9;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "activation 9",
                    kiln_gemm(rt, &d, a, b, c));
  d = desc(KILN_F32, 6, 7, 5);
  d.bias = (kiln_bias)3;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "bias 3", kiln_gemm(rt, &d, a, b, c));
  d.bias = KILN_BIAS_COL;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "bias is KILN_BIAS_COL but bias_buffer is NULL; expected 7 values",
                    kiln_gemm(rt, &d, a, b, c));
  d.bias_buffer = a;
  d.offset_bias = 24; /* a holds 30: 31 needed */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "bias_buffer needs 31 elements",
                    kiln_gemm(rt, &d, a, b, c));
  d.offset_bias = 0;
  d.bias_buffer = i32;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "bias_buffer holds int32",
                    kiln_gemm(rt, &d, a, b, c));
  d.bias = KILN_BIAS_NONE;
  d.bias_buffer = a;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "bias_buffer is set but bias is KILN_BIAS_NONE",
                    kiln_gemm(rt, &d, a, b, c));
  float host[64] = {0};
  d.bias_buffer = NULL;
  d.bias = KILN_BIAS_ROW;
  d.bias_host = host;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "kiln_gemm: bias_host is set; expected the bias in bias_buffer",
                    kiln_gemm(rt, &d, a, b, c));
  d.bias_host = NULL;
  d.bias_buffer = a;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "kiln_gemm_host: bias_buffer is set; expected the bias in bias_host",
                    kiln_gemm_host(rt, &d, host, host, host));
  d.bias_buffer = NULL;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "but bias_host is NULL",
                    kiln_gemm_host(rt, &d, host, host, host));
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(c);
  kiln_buffer_destroy(i32);
  assert_kiln_ok(rt, kiln_finish(rt));
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  if (argc > 1) /* a pattern of test names: the GPU shape's alone, as meson runs them */
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gemm_errors),
    cmocka_unit_test(test_gemm_every_size_to_70),
    cmocka_unit_test(test_gemm_primes_and_odd_sizes),
    cmocka_unit_test(test_gemm_transposes_layouts_alpha_beta),
    cmocka_unit_test(test_gemm_leading_dimensions_offsets_batches),
    cmocka_unit_test(test_gemm_dtypes),
    cmocka_unit_test(test_gemm_epilogue),
    cmocka_unit_test(test_gemm_long_k),
    cmocka_unit_test(test_gemm_cpu_groups),
    cmocka_unit_test(test_gemm_gpu_shape),
    cmocka_unit_test(test_gemm_gpu_corners),
    cmocka_unit_test(test_gemm_host_panels),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
