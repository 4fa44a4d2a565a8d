/*
 * test-elementwise.c — kiln_elementwise_*: the short form and the indexed
 * form against host loops, for float, double, int and complex buffers and
 * each scalar type; the generated kernel through the binary cache; every
 * refused declaration, run and build.
 */
#include "common.h"

#include <math.h>

enum { N = 1001 }; /* odd: no multiple of any local size */

static void test_elementwise_relu_short_form(void **state)
{
  kiln_runtime *rt = *state;
  float x[N], y[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)(i % 9 - 4);
  kiln_buffer *bx = NULL, *by = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, N, x));
  kiln_elementwise *ew = NULL;
  assert_kiln_ok(rt,
                 kiln_elementwise_create(rt, "float *y, const float *x, float a, float b",
                                         "y = max(a * x + b, 0)", &ew));
  assert_kiln_ok(rt, kiln_elementwise_run(ew, N, by, bx, 2.0, 1.0));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, N, y));
  for (int i = 0; i < N; i++) /* small integers: exact */
    if (y[i] != fmax(2.0 * x[i] + 1.0, 0))
      fail_msg("y[%d] = %g; expected %g", i, y[i], fmax(2.0 * x[i] + 1.0, 0));
  /* a shorter run leaves the rest alone */
  assert_kiln_ok(rt, kiln_elementwise_run(ew, 10, by, bx, 0.0, -5.0));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, N, y));
  for (int i = 0; i < N; i++)
    assert_true(y[i] == (i < 10 ? 0.0f : (float)fmax(2.0 * x[i] + 1.0, 0)));
  /* the array form (for bindings): the same run from values */
  const kiln_elementwise_value v[] = {
    {.buffer = by}, {.buffer = bx}, {.real = 2.0}, {.real = 1.0}};
  assert_kiln_ok(rt, kiln_elementwise_run_values(ew, N, v));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, N, y));
  for (int i = 0; i < N; i++)
    assert_true(y[i] == (float)fmax(2.0 * x[i] + 1.0, 0));
  assert_int_equal(kiln_elementwise_run_values(ew, N, NULL), KILN_ERR_INVALID_ARGUMENT);
  assert_kiln_ok(rt, kiln_elementwise_run(ew, 0, NULL, NULL, 0.0, 0.0)); /* nothing */
  kiln_elementwise_destroy(ew);
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by);
}

/* The indexed form (a neighbour, the length n), integers and every integer
 * scalar type. */
static void test_elementwise_indexed_integers(void **state)
{
  kiln_runtime *rt = *state;
  int32_t x[N], z[N];
  int64_t w[N];
  for (int i = 0; i < N; i++)
    x[i] = i * 3 - 700;
  kiln_buffer *bx = NULL, *bz = NULL, *bw = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, N, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, N, 0, &bz));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I64, N, 0, &bw));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, N, x));
  kiln_elementwise *ew = NULL;
  assert_kiln_ok(
    rt,
    kiln_elementwise_create(
      rt, "int *z, long *w, const int *x, int k, uint m, long big, ulong ubig",
      "z[i] = x[(i + 1) % n] * k + (int)m; w[i] = (long)x[i] * big + (long)ubig", &ew));
  assert_kiln_ok(rt, kiln_elementwise_run(ew, N, bz, bw, bx, (int32_t)-3, (uint32_t)7,
                                          (int64_t)5000000000LL, (uint64_t)11));
  assert_kiln_ok(rt, kiln_buffer_read(bz, 0, N, z));
  assert_kiln_ok(rt, kiln_buffer_read(bw, 0, N, w));
  for (int i = 0; i < N; i++) {
    assert_int_equal(z[i], x[(i + 1) % N] * -3 + 7);
    assert_true(w[i] == (int64_t)x[i] * 5000000000LL + 11);
  }
  kiln_elementwise_destroy(ew);
  kiln_buffer_destroy(bx), kiln_buffer_destroy(bz), kiln_buffer_destroy(bw);
}

/* double with a built-in, and complex64 scaled: within rounding. */
static void test_elementwise_double_and_complex(void **state)
{
  kiln_runtime *rt = *state;
  if (!kiln_runtime_device(rt)->has_fp64) {
    kiln_elementwise *e = NULL;
    kiln_test_refuses_fp64(
      rt, kiln_elementwise_create(rt, "double *y, const double *x", "y = exp(x) - 1", &e),
      "kiln_elementwise_create with double");
    assert_null(e);
    return;
  }
  double x[N], y[N];
  float c[2 * N], d[2 * N];
  for (int i = 0; i < N; i++)
    x[i] = (i % 17) * 0.25 - 2;
  for (int i = 0; i < 2 * N; i++)
    c[i] = (float)(i % 5) - 2;
  kiln_buffer *bx = NULL, *by = NULL, *bc = NULL, *bd = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F64, N, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F64, N, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, N, 0, &bc));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, N, 0, &bd));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, N, x));
  assert_kiln_ok(rt, kiln_buffer_write(bc, 0, N, c));
  kiln_elementwise *e1 = NULL, *e2 = NULL;
  assert_kiln_ok(
    rt, kiln_elementwise_create(rt, "double *y, const double *x", "y = exp(x) - 1", &e1));
  assert_kiln_ok(rt, kiln_elementwise_create(rt, "float2 *d, const float2 *c, float s",
                                             "d = c * s", &e2));
  assert_kiln_ok(rt, kiln_elementwise_run(e1, N, by, bx));
  assert_kiln_ok(rt, kiln_elementwise_run(e2, N, bd, bc, -1.5));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, N, y));
  assert_kiln_ok(rt, kiln_buffer_read(bd, 0, N, d));
  for (int i = 0; i < N; i++) /* OpenCL's exp in double: within 3 ulp */
    if (fabs(y[i] - (exp(x[i]) - 1)) > 1e-15 * (1 + exp(x[i])))
      fail_msg("y[%d] = %.17g; expected %.17g", i, y[i], exp(x[i]) - 1);
  for (int i = 0; i < 2 * N; i++) /* halves of small integers: exact */
    assert_true(d[i] == c[i] * -1.5f);
  kiln_elementwise_destroy(e1), kiln_elementwise_destroy(e2);
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by), kiln_buffer_destroy(bc),
    kiln_buffer_destroy(bd);
}

/* Declarations, runs and builds refused, each with its message; the
 * runtime stays usable. */
static void test_elementwise_refused(void **state)
{
  kiln_runtime *rt = *state;
  kiln_elementwise *ew = (kiln_elementwise *)&ew;
  static const char *const bad[] = {"",
                                    "float y",
                                    "float **y",
                                    "short *y",
                                    "float *i",
                                    "float *y, float *y",
                                    "const float a",
                                    "float *9y"};
  for (size_t k = 0; k < COUNT(bad); k++) {
    kiln_status st = kiln_elementwise_create(rt, bad[k], "y = 1", &ew);
    if (st != KILN_ERR_INVALID_ARGUMENT)
      fail_msg("'%s' gave %s; expected ERR_INVALID_ARGUMENT", bad[k],
               kiln_status_name(st));
    assert_null(ew);
  }
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "'short *y', is not a declaration",
                    kiln_elementwise_create(rt, "short *y", "y = 1", &ew));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "two arguments are named 'y'",
                    kiln_elementwise_create(rt, "float *y, float *y", "y = 1", &ew));
  assert_kiln_fails(rt, KILN_ERR_BUILD, "kernel void kiln_elementwise(global float *y",
                    kiln_elementwise_create(rt, "float *y", "y = undefined_name", &ew));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "expr is NULL",
                    kiln_elementwise_create(rt, "float *y", NULL, &ew));
  kiln_buffer *f = NULL, *g = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 8, 0, &f));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F64, 8, 0, &g));
  assert_kiln_ok(rt, kiln_elementwise_create(rt, "float *y, float a", "y = a", &ew));
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "argument 0 (y) holds float64",
                    kiln_elementwise_run(ew, 8, g, 1.0));
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "argument 0 (y) needs 9 elements",
                    kiln_elementwise_run(ew, 9, f, 1.0));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "argument 0 (y) is NULL",
                    kiln_elementwise_run(ew, 8, NULL, 1.0));
  assert_kiln_ok(rt, kiln_elementwise_run(ew, 8, f, 4.0)); /* still usable */
  /* an indexed buffer may be shorter than n: a broadcast */
  kiln_elementwise *bc = NULL;
  kiln_buffer *one = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &one));
  assert_kiln_ok(rt, kiln_buffer_fill(one, 0, 1, &(float){3}));
  assert_kiln_ok(
    rt, kiln_elementwise_create(rt, "float *y, const float *b", "y = y + b[0]", &bc));
  assert_kiln_ok(rt, kiln_elementwise_run(bc, 8, f, one));
  kiln_elementwise_destroy(bc);
  kiln_buffer_destroy(one);
  assert_kiln_ok(rt, kiln_elementwise_run(ew, 8, f, 1.0)); /* back to 4 below */
  assert_kiln_ok(rt, kiln_elementwise_run(ew, 8, f, 4.0));
  float v[8];
  assert_kiln_ok(rt, kiln_buffer_read(f, 0, 8, v));
  for (int i = 0; i < 8; i++)
    assert_true(v[i] == 4.0f);
  kiln_elementwise_destroy(ew);
  kiln_buffer_destroy(f), kiln_buffer_destroy(g);
  assert_kiln_ok(rt, kiln_elementwise_destroy(NULL));
}

/* The generated kernel goes through the binary cache: a second runtime on
 * the same folder loads it. */
static void test_elementwise_cached(void **state)
{
  (void)state;
  char dir[] = "/tmp/kiln-ew-cache-XXXXXX";
  assert_non_null(mkdtemp(dir));
  uint64_t compiles[2], hits[2];
  for (int r = 0; r < 2; r++) {
    kiln_runtime *rt = kiln_test_runtime_on(NULL, dir, 0);
    kiln_elementwise *ew = NULL;
    assert_kiln_ok(rt, kiln_elementwise_create(rt, "float *y, const float *x",
                                               "y = x * x + 0.5f", &ew));
    kiln_cache_usage u;
    kiln_cache_usage_init(&u);
    assert_kiln_ok(rt, kiln_cache_stats(rt, &u));
    compiles[r] = u.compiles, hits[r] = u.hits;
    kiln_elementwise_destroy(ew);
    assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  }
  assert_int_equal(compiles[0], 1);
  assert_int_equal(hits[1], 1);
  assert_int_equal(compiles[1], 0);
  kiln_test_remove_tree(dir);
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_elementwise_relu_short_form),
    cmocka_unit_test(test_elementwise_indexed_integers),
    cmocka_unit_test(test_elementwise_double_and_complex),
    cmocka_unit_test(test_elementwise_refused),
    cmocka_unit_test(test_elementwise_cached),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
