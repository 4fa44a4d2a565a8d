/*
 * test-group.c — device groups (kiln_group_*): forming the group, and every
 * operation over 2 and 3 devices (POCL_DEVICES="pthread pthread pthread")
 * against naive double-precision references, with odd sizes that do not
 * divide among the devices, batches of 1, a device failing at several
 * points (clfault), every device failing, and 4 threads sharing a group.
 *
 * Tolerances are the single-device ones: a sum of k float32 terms is within
 * gamma_k = k u / (1 - k u) of the exact value relative to the sum of the
 * terms' magnitudes (Higham, 3.1), plus the result's rounding. The FFT's
 * error is O(u log n) of the input's norm; reductions of every element are
 * chunked and combined in double, within gamma_n of the magnitudes.
 */
#include "common.h"

#include <math.h>
#include <pthread.h>

#include "clfault.h"
#include "conv-case.h"
#include "values.h"

static kiln_group *groups[2]; /* 3 devices, then 2 of them */

static _Thread_local uint64_t seed = 12345; /* each thread its own numbers */

/* Values on a 2^-8 grid in [-2, 2): exact in float32. */
static void fill(float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(((double)(kiln_test_random(&seed) % 1024) - 512.0) / 256.0);
}

static double gamma_u(size_t k)
{
  double u = ldexp(1, -24);
  return (double)(k + 2) * u / (1 - (double)(k + 2) * u);
}

static int setup(void **state)
{
  (void)state;
  if (kiln_group_create(NULL, &groups[0]) != KILN_OK) {
    fprintf(stderr, "kiln_group_create: %s\n", kiln_last_error(NULL));
    return -1;
  }
  if (kiln_group_size(groups[0]) < 3) {
    fprintf(stderr, "expected 3 PoCL devices (POCL_DEVICES), got %zu\n",
            kiln_group_size(groups[0]));
    return -1;
  }
  char sel[64];
  const kiln_device_info *d0 = kiln_runtime_device(kiln_group_runtime(groups[0], 0));
  const kiln_device_info *d1 = kiln_runtime_device(kiln_group_runtime(groups[0], 1));
  snprintf(sel, sizeof sel, "%u:%u,%u:%u", d0->platform_index, d0->device_index,
           d1->platform_index, d1->device_index);
  kiln_options o;
  kiln_options_init(&o);
  o.devices = sel;
  return kiln_group_create(&o, &groups[1]) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < COUNT(groups); i++)
    bad |= kiln_group_destroy(groups[i]) != KILN_OK;
  return bad ? -1 : 0;
}

/* ---- the group ----------------------------------------------------------- */

static void test_group_devices(void **state)
{
  (void)state;
  assert_int_equal(kiln_group_size(groups[1]), 2);
  assert_null(kiln_group_runtime(groups[1], 2));
  assert_int_equal(kiln_group_size(NULL), 0);
  for (size_t i = 0; i < kiln_group_size(groups[0]); i++)
    assert_true(kiln_runtime_device(kiln_group_runtime(groups[0], i))->type &
                KILN_DEVICE_CPU);
  char buf[4096];
  kiln_group_diagnostics(groups[1], buf, sizeof buf);
  assert_non_null(strstr(buf, "left out: the selector does not match it"));
  kiln_options o;
  kiln_options_init(&o);
  o.devices = "all";
  kiln_group *g = NULL;
  assert_kiln_ok(NULL, kiln_group_create(&o, &g));
  assert_int_equal(kiln_group_size(g), kiln_group_size(groups[0]));
  assert_kiln_ok(NULL, kiln_group_destroy(g));
  o.devices = "cpu,bogus";
  assert_kiln_fails(NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "'bogus' is not a device",
                    kiln_group_create(&o, &g));
  assert_null(g);
  o.devices = "nvidia";
  assert_kiln_fails(NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "matches no usable device",
                    kiln_group_create(&o, &g));
  if (getenv("KILN_TEST_OCLGRIND")) { /* a simulator: only when named */
    kiln_group_diagnostics(groups[0], buf, sizeof buf);
    assert_non_null(strstr(buf, "Oclgrind"));
    o.devices = "pocl,oclgrind";
    assert_kiln_ok(NULL, kiln_group_create(&o, &g));
    assert_int_equal(kiln_group_size(g), kiln_group_size(groups[0]) + 1);
    assert_kiln_ok(NULL, kiln_group_destroy(g));
  }
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_group_create(NULL, NULL));
  assert_kiln_ok(NULL, kiln_group_destroy(NULL));
}

/* ---- GEMM ---------------------------------------------------------------- */

typedef struct gemm_case {
  size_t m, n, k, batch;
  int ta, tb, col;
  double beta;
  kiln_bias bias;
} gemm_case;

/* Element (i, j) of a packed rows x cols matrix of the case's layout. */
static size_t el(const gemm_case *g, size_t i, size_t j, size_t rows, size_t cols)
{
  return g->col ? j * rows + i : i * cols + j;
}

/* C, of the case's layout, against the double reference. */
static void check_gemm(const gemm_case *g, const float *a, const float *b,
                       const float *c0, const float *bias, const float *c)
{
  size_t sa = g->m * g->k, sb = g->k * g->n, sc = g->m * g->n;
  size_t nbias = g->bias == KILN_BIAS_ROW ? g->m : g->n;
  for (size_t p = 0; p < g->batch; p++)
    for (size_t i = 0; i < g->m; i++)
      for (size_t j = 0; j < g->n; j++) {
        double s = 0, mag = 0;
        for (size_t q = 0; q < g->k; q++) {
          double x =
            a[p * sa + (g->ta ? el(g, q, i, g->k, g->m) : el(g, i, q, g->m, g->k))];
          double y =
            b[p * sb + (g->tb ? el(g, j, q, g->n, g->k) : el(g, q, j, g->k, g->n))];
          s += x * y, mag += fabs(x * y);
        }
        size_t ci = p * sc + el(g, i, j, g->m, g->n);
        double want = s + g->beta * c0[ci];
        mag += fabs(g->beta * c0[ci]);
        if (g->bias)
          want += bias[p * nbias + (g->bias == KILN_BIAS_ROW ? i : j)];
        double bound = gamma_u(g->k) * mag + ldexp(1, -23) * fabs(want) + 1e-30;
        if (!(fabs(c[ci] - want) <= bound))
          fail_msg("gemm m=%zu n=%zu k=%zu batch=%zu: C[%zu] = %.9g, expected %.9g", g->m,
                   g->n, g->k, g->batch, ci, c[ci], want);
      }
}

static void run_gemm(kiln_group *grp, const gemm_case *g)
{
  size_t na = g->batch * g->m * g->k, nb = g->batch * g->k * g->n,
         nc = g->batch * g->m * g->n,
         nbias = g->batch * (g->bias == KILN_BIAS_ROW ? g->m : g->n);
  float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4),
        *c0 = malloc(nc * 4), *bias = malloc(nbias * 4);
  fill(a, na), fill(b, nb), fill(c0, nc), fill(bias, nbias);
  memcpy(c, c0, nc * 4);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, g->m, g->n, g->k);
  d.layout = g->col ? KILN_COL_MAJOR : KILN_ROW_MAJOR;
  d.trans_a = g->ta ? KILN_TRANS : KILN_NO_TRANS;
  d.trans_b = g->tb ? KILN_TRANS : KILN_NO_TRANS;
  d.beta = g->beta;
  d.batch = g->batch;
  d.bias = g->bias;
  d.bias_host = g->bias ? bias : NULL;
  d.stride_bias = g->bias == KILN_BIAS_ROW ? g->m : g->n;
  assert_kiln_ok(NULL, kiln_group_gemm_host(grp, &d, a, b, c));
  check_gemm(g, a, b, c0, bias, c);
  free(a), free(b), free(c), free(c0), free(bias);
}

static const gemm_case gemm_cases[] = {
  {37, 29, 41, 1, 0, 0, 0, 0, KILN_BIAS_NONE},
  {53, 17, 23, 1, 1, 0, 1, 0.5, KILN_BIAS_ROW},
  {1, 31, 7, 1, 0, 1, 0, 1, KILN_BIAS_COL},
  {101, 3, 5, 2, 1, 1, 0, 0, KILN_BIAS_ROW},
  {13, 11, 9, 13, 0, 1, 1, 1, KILN_BIAS_COL}, /* products to each device */
  /* beta 0, one product: through pipelines, B on each device (group_gemm.c) */
  {59, 21, 33, 1, 1, 1, 1, 0, KILN_BIAS_ROW},
  {45, 17, 70, 1, 1, 0, 0, 0, KILN_BIAS_COL},
  {77, 1, 13, 1, 0, 1, 0, 0, KILN_BIAS_ROW},
  /* beta 0, products: pipelines of whole products, every bias on the device */
  {7, 5, 9, 14, 1, 0, 1, 0, KILN_BIAS_ROW},
  {9, 6, 4, 13, 0, 1, 0, 0, KILN_BIAS_COL},
};

static void test_group_gemm(void **state)
{
  (void)state;
  for (size_t g = 0; g < COUNT(groups); g++)
    for (size_t i = 0; i < COUNT(gemm_cases); i++)
      run_gemm(groups[g], &gemm_cases[i]);
}

/* The units (units 1) or failures (0) of g's devices since its stats were
 * reset. */
static uint64_t summed(kiln_group *g, int units)
{
  uint64_t n = 0;
  for (size_t i = 0; i < kiln_group_size(g); i++) {
    kiln_group_usage u;
    kiln_group_usage_init(&u);
    assert_kiln_ok(NULL, kiln_group_stats(g, i, &u));
    n += units ? u.units : u.failures;
  }
  return n;
}

/* ---- convolution --------------------------------------------------------- */

static void run_conv(kiln_group *grp, const conv_case *cc, kiln_tensor_layout l)
{
  kiln_conv2d_desc d = conv_case_desc(cc, KILN_F32, l);
  size_t p, q, cg = cc->c / conv_or1(cc->groups);
  conv_case_output(&d, &p, &q);
  size_t nx = cc->n * cc->c * cc->h * cc->w, nw = cc->k * cg * cc->r * cc->s,
         ny = cc->n * cc->k * p * q;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *bias = malloc(cc->k * 4),
        *y = malloc(ny * 4);
  double *xd = malloc(nx * 8), *wd = malloc(nw * 8), *bd = malloc(cc->k * 8),
         *sum = malloc(ny * 8), *mag = malloc(ny * 8);
  fill(x, nx), fill(w, nw), fill(bias, cc->k);
  for (size_t i = 0; i < nx; i++)
    xd[i] = x[i];
  for (size_t i = 0; i < nw; i++)
    wd[i] = w[i];
  for (size_t i = 0; i < cc->k; i++)
    bd[i] = bias[i];
  assert_kiln_ok(NULL, kiln_group_conv2d_host(grp, &d, x, w, cc->bias ? bias : NULL, y));
  conv_case_reference(&d, xd, wd, cc->bias ? bd : NULL, sum, mag);
  for (size_t i = 0; i < ny; i++) {
    double want = cc->act == KILN_ACTIVATION_RELU && sum[i] < 0 ? 0 : sum[i];
    double bound = gamma_u(cg * cc->r * cc->s + 1) * mag[i] + ldexp(1, -23) * fabs(want);
    if (!(fabs(y[i] - want) <= bound + 1e-30))
      fail_msg("conv n=%zu c=%zu h=%zu w=%zu k=%zu: y[%zu] = %.9g, expected %.9g", cc->n,
               cc->c, cc->h, cc->w, cc->k, i, y[i], want);
  }
  free(x), free(w), free(bias), free(y), free(xd), free(wd), free(bd), free(sum),
    free(mag);
}

static const conv_case conv_cases[] = {
  {.n = 5,
   .c = 3,
   .h = 11,
   .w = 9,
   .k = 4,
   .r = 3,
   .s = 3,
   .sh = 2,
   .sw = 2,
   .pt = 1,
   .pb = 1,
   .pl = 1,
   .pr = 1,
   .bias = 1,
   .act = KILN_ACTIVATION_RELU},
  {.n = 1, .c = 2, .h = 7, .w = 6, .k = 3, .r = 2, .s = 3, .bias = 1},
  {.n = 7, .c = 4, .h = 5, .w = 5, .k = 6, .r = 3, .s = 1, .pt = 1, .pb = 1, .groups = 2},
};

static void test_group_conv(void **state)
{
  (void)state;
  for (size_t g = 0; g < COUNT(groups); g++)
    for (size_t i = 0; i < COUNT(conv_cases); i++)
      run_conv(groups[g], &conv_cases[i], i == 1 ? KILN_NHWC : KILN_NCHW);
}

/* Batches too small for the group, cut into bands of output rows
 * (group_batch.c): bands of 10, 10, 10 and 7 rows with the padding at both
 * ends; an odd stride with uneven padding (2 bands, NHWC); dilation and
 * groups (4 bands of 8); a 7x7 filter of stride 2 whose last band reads
 * below x; and a 1x1 filter with padding, which is not cut (a band could
 * read only zeros). */
/* clang-format off */
static const conv_case band_cases[] = {
  {.n = 1, .c = 3, .h = 37, .w = 9, .k = 4, .r = 3, .s = 3, .pt = 1, .pb = 1, .pl = 1,
   .pr = 1, .bias = 1, .act = KILN_ACTIVATION_RELU},
  {.n = 2, .c = 2, .h = 40, .w = 7, .k = 3, .r = 5, .s = 3, .sh = 2, .pt = 2, .pb = 1},
  {.n = 3, .c = 4, .h = 34, .w = 6, .k = 6, .r = 3, .s = 2, .dh = 2, .pt = 2, .groups = 2,
   .bias = 1},
  {.n = 1, .c = 2, .h = 45, .w = 13, .k = 5, .r = 7, .s = 7, .sh = 2, .sw = 2, .pt = 3,
   .pb = 3, .pl = 3, .pr = 3},
  {.n = 1, .c = 3, .h = 20, .w = 5, .k = 2, .r = 1, .s = 1, .pt = 1, .pb = 1},
};
/* clang-format on */

static void test_group_conv_bands(void **state)
{
  (void)state;
  for (size_t g = 0; g < COUNT(groups); g++)
    for (size_t i = 0; i < COUNT(band_cases); i++) {
      assert_kiln_ok(NULL, kiln_group_stats_reset(groups[g]));
      run_conv(groups[g], &band_cases[i], i == 1 ? KILN_NHWC : KILN_NCHW);
      uint64_t units = summed(groups[g], 1), n = band_cases[i].n;
      if (i + 1 < COUNT(band_cases) ? units <= n : units != n)
        fail_msg("band case %zu over %zu devices: %llu units for %llu images", i,
                 kiln_group_size(groups[g]), (unsigned long long)units,
                 (unsigned long long)n);
    }
}

/* ---- FFT ----------------------------------------------------------------- */

/* Transforms of n complex points each, checked against the DFT in double:
 * within 1e-5 of the input's norm (float32's O(u log n)). */
static void run_fft(kiln_group *grp, size_t n, size_t batch, int inverse)
{
  float *in = malloc(batch * n * 8), *out = malloc(batch * n * 8);
  fill(in, 2 * batch * n);
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, n);
  d.batch = batch;
  d.inverse = inverse;
  assert_kiln_ok(NULL, kiln_group_fft_host(grp, &d, in, out));
  double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / (double)n : 1;
  for (size_t b = 0; b < batch; b++) {
    const float *x = in + 2 * b * n;
    double norm = 0;
    for (size_t t = 0; t < n; t++)
      norm += (double)x[2 * t] * x[2 * t] + (double)x[2 * t + 1] * x[2 * t + 1];
    for (size_t f = 0; f < n; f++) {
      double re = 0, im = 0;
      for (size_t t = 0; t < n; t++) {
        double ang =
          sign * 2 * 3.14159265358979323846 * (double)((f * t) % n) / (double)n;
        re += x[2 * t] * cos(ang) - x[2 * t + 1] * sin(ang);
        im += x[2 * t] * sin(ang) + x[2 * t + 1] * cos(ang);
      }
      const float *y = out + 2 * (b * n + f);
      double err = hypot(y[0] - re * scale, y[1] - im * scale);
      if (!(err <= 1e-5 * sqrt(norm) * (double)n * scale + 1e-30))
        fail_msg("fft n=%zu batch=%zu: transform %zu bin %zu off by %g", n, batch, b, f,
                 err);
    }
  }
  free(in), free(out);
}

static void test_group_fft(void **state)
{
  (void)state;
  for (size_t g = 0; g < COUNT(groups); g++) {
    run_fft(groups[g], 32, 7, 0);
    run_fft(groups[g], 64, 1, 1);
    run_fft(groups[g], 16, 11, 1);
  }
}

/* ---- reductions ---------------------------------------------------------- */

/* Every op over every element of an odd length (several grains a device),
 * with NaN-free values of full float32 precision, so that sums round, and a
 * repeated extreme (ties go to the first). */
static void reduce_all(kiln_group *grp, size_t n)
{
  float *x = malloc(n * 4);
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(ldexp((double)kiln_test_random(&seed), -53) * 4 - 2);
  x[n / 3] = x[n - 2] = 9; /* the maximum, twice */
  x[n / 2] = -9;
  double sum = 0, mag = 0;
  for (size_t i = 0; i < n; i++)
    sum += x[i], mag += fabs(x[i]);
  static const kiln_reduce_op ops[] = {
    KILN_REDUCE_SUM,    KILN_REDUCE_MEAN,   KILN_REDUCE_MIN,  KILN_REDUCE_MAX,
    KILN_REDUCE_ARGMIN, KILN_REDUCE_ARGMAX, KILN_REDUCE_NORM2};
  for (size_t o = 0; o < COUNT(ops); o++) {
    kiln_reduce_desc d;
    kiln_reduce_desc_init(&d, ops[o], KILN_F32, n);
    unsigned char out[8] = {0}, again[8] = {0};
    assert_kiln_ok(NULL, kiln_group_reduce_host(grp, &d, x, out));
    assert_kiln_ok(NULL, kiln_group_reduce_host(grp, &d, x, again));
    if (memcmp(out, again, sizeof out) != 0) /* whoever did which grain */
      fail_msg("%s of %zu: two calls differ", kiln_reduce_op_name(ops[o]), n);
    double got = kiln_test_get(kiln_reduce_out_dtype(ops[o], KILN_F32), out, 0), want;
    double bound = gamma_u(n) * mag + ldexp(1, -23) * mag;
    switch (ops[o]) {
    case KILN_REDUCE_SUM: want = sum; break;
    case KILN_REDUCE_MEAN: want = sum / (double)n, bound /= (double)n; break;
    case KILN_REDUCE_MIN: want = -9, bound = 0; break;
    case KILN_REDUCE_MAX: want = 9, bound = 0; break;
    case KILN_REDUCE_ARGMIN: want = (double)(n / 2), bound = 0; break;
    case KILN_REDUCE_ARGMAX: want = (double)(n / 3), bound = 0; break;
    default:
      want = 0;
      for (size_t i = 0; i < n; i++)
        want += (double)x[i] * x[i];
      bound = (gamma_u(n) + ldexp(1, -22)) * sqrt(want);
      want = sqrt(want);
    }
    if (!(fabs(got - want) <= bound))
      fail_msg("%s of %zu elements: %.9g, expected %.9g (bound %.3g)",
               kiln_reduce_op_name(ops[o]), n, got, want, bound);
  }
  free(x);
}

/* Sums along each axis of an outer x len x inner view, and int32. */
static void reduce_axes(kiln_group *grp)
{
  enum { A = 7, B = 13, C = 5 };
  size_t shape[3] = {A, B, C};
  float x[A * B * C];
  fill(x, A * B * C);
  for (int axis = 0; axis < 3; axis++) {
    kiln_reduce_desc d;
    kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, 0);
    d.ndim = 3, d.axis = axis;
    memcpy(d.shape, shape, sizeof shape);
    float out[A * B * C];
    assert_kiln_ok(NULL, kiln_group_reduce_host(grp, &d, x, out));
    size_t o = 0;
    for (size_t i = 0; i < (axis == 0 ? B : A); i++)
      for (size_t j = 0; j < (axis == 2 ? B : C); j++, o++) {
        double want = 0, mag = 0;
        for (size_t t = 0; t < shape[axis]; t++) {
          size_t idx = axis == 0   ? (t * B + i) * C + j
                       : axis == 1 ? (i * B + t) * C + j
                                   : (i * B + j) * C + t;
          want += x[idx], mag += fabs(x[idx]);
        }
        if (!(fabs(out[o] - want) <= gamma_u(shape[axis]) * mag + 1e-30))
          fail_msg("sum along axis %d: out[%zu] = %.9g, expected %.9g", axis, o, out[o],
                   want);
      }
  }
  int32_t ints[A * B * C];
  int64_t want = 0, got = 0;
  for (size_t i = 0; i < A * B * C; i++)
    ints[i] = (int32_t)(kiln_test_random(&seed) % 2000001) - 1000000, want += ints[i];
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_I32, A * B * C);
  assert_kiln_ok(NULL, kiln_group_reduce_host(grp, &d, ints, &got));
  assert_int_equal(got, want);
}

static void test_group_reduce(void **state)
{
  (void)state;
  for (size_t g = 0; g < COUNT(groups); g++) {
    reduce_all(groups[g], 300007);
    reduce_all(groups[g], 5);
    reduce_axes(groups[g]);
  }
  /* A backend asked for refuses over the group what it refuses on one of
   * its devices (a mean from CLBlast; a backend not built in), though the
   * group would cut a mean of every element into sums. */
  float x[100000], m;
  fill(x, COUNT(x));
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_MEAN, KILN_F32, COUNT(x));
  d.backend = KILN_BACKEND_CLBLAST;
  kiln_runtime *one = kiln_group_runtime(groups[0], 0);
  kiln_status want = kiln_reduce_host(one, &d, x, &m);
  assert_int_not_equal(want, KILN_OK);
  assert_kiln_fails(NULL, want, "kiln_reduce",
                    kiln_group_reduce_host(groups[0], &d, x, &m));
}

/* ---- failures ------------------------------------------------------------ */

/* One enqueue of the call fails, at several points: the device whose it
 * was gives the chunks it holds back, the others finish; C with beta != 0
 * shows that the chunks' rows were put back before another device took
 * them. The failure is a lost queue; running out of device memory instead
 * makes a pipeline go on a chunk at a time (group_ops.c), which must give
 * the same answer. */
static void test_group_one_device_fails(void **state)
{
  (void)state;
  /* through pipelines (group_gemm.c): rows, with C kept on the host, and
   * products; a chunk at a time: rows of a batch of 2 */
  static const gemm_case cases[] = {{67, 23, 19, 1, 0, 0, 0, 1, KILN_BIAS_NONE},
                                    {5, 7, 3, 25, 1, 0, 0, 0.5, KILN_BIAS_ROW},
                                    {31, 9, 8, 2, 0, 0, 1, 1, KILN_BIAS_NONE}},
                         piped = {67, 23, 19, 1, 0, 1, 0, 0, KILN_BIAS_ROW};
  static const conv_case cc = {.n = 6, .c = 2, .h = 9, .w = 8, .k = 3, .r = 3, .s = 3};
  static const int nth[] = {1, 2, 4, 7, 12, 20};
  int hits = 0;
  for (size_t i = 0; i < COUNT(nth) * COUNT(cases); i++) {
    assert_kiln_ok(NULL, kiln_group_stats_reset(groups[0]));
    clfault_arm_class(CLFAULT_ENQUEUE, nth[i % COUNT(nth)], CL_INVALID_COMMAND_QUEUE);
    run_gemm(groups[0], &cases[i / COUNT(nth)]);
    int hit = clfault_hits();
    hits += hit;
    clfault_disarm();
    assert_int_equal(summed(groups[0], 0), hit);
    char buf[8192];
    kiln_group_diagnostics(groups[0], buf, sizeof buf);
    if (hit && (!strstr(buf, "kiln_group_gemm_host:") ||
                !strstr(buf, "CL_INVALID_COMMAND_QUEUE")))
      fail_msg("the failure is not in the diagnostics: %s", buf);
    clfault_arm_class(CLFAULT_ENQUEUE, nth[i % COUNT(nth)], CL_OUT_OF_RESOURCES);
    run_gemm(groups[0], &piped);
    clfault_disarm();
    clfault_arm_class(CLFAULT_ENQUEUE, nth[i % COUNT(nth)], CL_OUT_OF_RESOURCES);
    run_conv(groups[0], &cc, KILN_NCHW);
    run_fft(groups[0], 16, 9, 0);
    clfault_disarm();
    clfault_arm_class(CLFAULT_ENQUEUE, nth[i % COUNT(nth)], CL_OUT_OF_RESOURCES);
    run_conv(groups[0], &band_cases[0], KILN_NCHW); /* bands of one image */
    clfault_disarm();
  }
  assert_int_equal(hits, COUNT(nth) * COUNT(cases)); /* each point was reached */
  assert_kiln_ok(NULL, kiln_group_stats_reset(groups[0]));
}

/* Every device fails: the call does, naming each device's reason. */
static void test_group_every_device_fails(void **state)
{
  (void)state;
  float a[6 * 4], b[4 * 5], c[6 * 5];
  fill(a, COUNT(a)), fill(b, COUNT(b));
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, 6, 5, 4);
  clfault_arm("clEnqueueNDRangeKernel", 1, 1 << 30, CL_OUT_OF_RESOURCES);
  kiln_status st = kiln_group_gemm_host(groups[1], &d, a, b, c);
  clfault_disarm();
  assert_int_not_equal(st, KILN_OK);
  const char *msg = kiln_last_error(NULL);
  assert_non_null(strstr(msg, "every device of the group failed"));
  for (size_t i = 0; i < kiln_group_size(groups[1]); i++) {
    const kiln_device_info *dev = kiln_runtime_device(kiln_group_runtime(groups[1], i));
    char pd[32];
    snprintf(pd, sizeof pd, "%u:%u %s", dev->platform_index, dev->device_index,
             dev->name);
    assert_non_null(strstr(msg, pd));
  }
  assert_non_null(strstr(msg, "CL_OUT_OF_RESOURCES"));
  assert_int_equal(summed(groups[1], 0), kiln_group_size(groups[1]));
  assert_kiln_ok(NULL, kiln_group_stats_reset(groups[1]));
  gemm_case g = {6, 5, 4, 1, 0, 0, 0, 0, KILN_BIAS_NONE}; /* usable again */
  run_gemm(groups[1], &g);
}

/* ---- stats and threads --------------------------------------------------- */

static void test_group_stats(void **state)
{
  (void)state;
  assert_kiln_ok(NULL, kiln_group_stats_reset(groups[0]));
  static const gemm_case g = {301, 64, 64, 1, 0, 0, 0, 0, KILN_BIAS_NONE};
  run_gemm(groups[0], &g);
  uint64_t units = 0;
  double share = 0;
  for (size_t i = 0; i < kiln_group_size(groups[0]); i++) {
    kiln_group_usage u;
    kiln_group_usage_init(&u);
    assert_kiln_ok(NULL, kiln_group_stats(groups[0], i, &u));
    units += u.units, share += u.share;
    assert_true(u.calls <= 1 && u.chunks <= u.units && u.seconds >= 0);
  }
  assert_int_equal(units, g.m);
  assert_true(fabs(share - 1) < 1e-9);
  kiln_group_usage u;
  kiln_group_usage_init(&u);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out of range",
                    kiln_group_stats(groups[0], 3, &u));
  u.struct_size = 0;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "struct_size",
                    kiln_group_stats(groups[0], 0, &u));
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, 0, 1, 1);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_gemm",
                    kiln_group_gemm_host(groups[0], &d, &u, &u, &u));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "group",
                    kiln_group_gemm_host(NULL, &d, &u, &u, &u));
}

static void *thread_main(void *arg)
{
  (void)arg;
  static const gemm_case g = {41, 19, 27, 1, 1, 0, 0, 0.5, KILN_BIAS_ROW};
  static const conv_case cc = {
    .n = 4, .c = 3, .h = 6, .w = 7, .k = 2, .r = 3, .s = 3, .bias = 1};
  for (int round = 0; round < 3; round++) {
    run_gemm(groups[0], &g);
    run_conv(groups[0], &cc, KILN_NCHW);
    reduce_all(groups[0], 40009);
  }
  return NULL;
}

static void test_group_four_threads(void **state)
{
  (void)state;
  pthread_t th[4];
  for (size_t i = 0; i < COUNT(th); i++)
    assert_int_equal(pthread_create(&th[i], NULL, thread_main, NULL), 0);
  for (size_t i = 0; i < COUNT(th); i++)
    pthread_join(th[i], NULL);
}

/* The size of the group kiln makes by default (0 where it makes none). */
static size_t default_group_size(void)
{
  kiln_group *g = NULL;
  if (kiln_group_create(NULL, &g) != KILN_OK)
    return 0;
  size_t n = kiln_group_size(g);
  kiln_group_destroy(g);
  return n;
}

int main(void)
{
  kiln_test_require_device();
  kiln_test_require_main(default_group_size() >= 3,
                         "three devices for a group (PoCL's three: "
                         "POCL_DEVICES='pthread pthread pthread')");
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_group_devices),
    cmocka_unit_test(test_group_gemm),
    cmocka_unit_test(test_group_conv),
    cmocka_unit_test(test_group_conv_bands),
    cmocka_unit_test(test_group_fft),
    cmocka_unit_test(test_group_reduce),
    cmocka_unit_test(test_group_stats),
    cmocka_unit_test(test_group_one_device_fails),
    cmocka_unit_test(test_group_every_device_fails),
    cmocka_unit_test(test_group_four_threads),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
