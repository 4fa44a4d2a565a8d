/*
 * test-convert.c — kiln_convert() for every pair of types against a host
 * reference written here from the rules in kiln.h: round to nearest even
 * into floating types (float16 found by searching all 65536 halves, not by
 * bit tricks), round toward zero with saturation into integers, NaN to 0.
 * Special values, ties, overflow and random values; sizes 1 to 10^6; and a
 * small run on Oclgrind when it is registered.
 */
#include "common.h"

#include <math.h>

#include "values.h"

static const kiln_dtype types[] = {KILN_F16, KILN_F32, KILN_F64, KILN_I32, KILN_I64};
#define NTYPES (sizeof types / sizeof types[0])

/* ---- the reference ----------------------------------------------------- */

/* Every value as a double, exactly: the sources here fit (int64 values are
 * kept below 2^53 or handled as integers). */
typedef struct value {
  double d;
  int64_t i; /* for integer sources */
  int is_int;
} value;

static int64_t saturate(double v, double lo, double hi, int64_t ilo, int64_t ihi)
{
  if (isnan(v))
    return 0;
  if (v <= lo)
    return ilo;
  if (v >= hi)
    return ihi;
  return (int64_t)trunc(v);
}

/* Writes the reference conversion of x to type `to` at out. */
static void reference(value x, kiln_dtype to, void *out)
{
  switch (to) {
  case KILN_F16:
    *(uint16_t *)out = kiln_test_half_of(x.is_int ? (double)(float)x.i : x.d);
    break;
  case KILN_F32: *(float *)out = x.is_int ? (float)x.i : (float)x.d; break;
  case KILN_F64: *(double *)out = x.is_int ? (double)x.i : x.d; break;
  case KILN_I32:
    *(int32_t *)out = x.is_int ? (int32_t)(x.i > INT32_MAX   ? INT32_MAX
                                           : x.i < INT32_MIN ? INT32_MIN
                                                             : x.i)
                               : (int32_t)saturate(x.d, -2147483648.0, 2147483647.0,
                                                   INT32_MIN, INT32_MAX);
    break;
  case KILN_I64:
    *(int64_t *)out = x.is_int ? x.i
                               : saturate(x.d, -9223372036854775808.0,
                                          9223372036854775808.0, INT64_MIN, INT64_MAX);
    break;
  default: fail_msg("no reference for %s", kiln_dtype_name(to));
  }
}

/* Stores x as type `from` (it must be representable there). */
static void store(value x, kiln_dtype from, void *out)
{
  switch (from) {
  case KILN_F16: *(uint16_t *)out = kiln_test_half_of(x.d); break;
  case KILN_F32: *(float *)out = (float)x.d; break;
  case KILN_F64: *(double *)out = x.d; break;
  case KILN_I32: *(int32_t *)out = (int32_t)x.i; break;
  case KILN_I64: *(int64_t *)out = x.i; break;
  default: break;
  }
}

/* The value a stored element holds, read back as the reference sees it. */
static value load(kiln_dtype t, const void *p)
{
  switch (t) {
  case KILN_F16: return (value){.d = kiln_test_half_value(*(const uint16_t *)p)};
  case KILN_F32: return (value){.d = *(const float *)p};
  case KILN_F64: return (value){.d = *(const double *)p};
  case KILN_I32: return (value){.i = *(const int32_t *)p, .is_int = 1};
  default: return (value){.i = *(const int64_t *)p, .is_int = 1};
  }
}

static const double float_specials[] = {
  0.0,
  -0.0,
  1.0,
  -1.0,
  0.5,
  1.5,
  2.5,
  -2.5,
  0.1,
  65504.0,
  65519.0,
  65520.0,
  65536.0,
  1e-8,
  5.960464477539063e-8 /* smallest half */,
  2.98023223876953125e-8,
  8.940696716308594e-8,
  6.103515625e-5,
  2049.0,
  2051.0,
  16777217.0,
  1e10,
  -1e10,
  2147483520.0,
  2147483648.0,
  -2147483904.0,
  3e38,
  -3e38,
  1e300,
  INFINITY,
  -INFINITY,
  NAN,
  9.2233720368547758e18,
  -9.2233720368547758e18,
  1e19,
};
static const int64_t int_specials[] = {
  0,
  1,
  -1,
  2,
  2047,
  2049,
  2051,
  65504,
  65519,
  65520,
  70000,
  -70000,
  16777216,
  16777217,
  INT32_MAX,
  INT32_MIN,
  (int64_t)INT32_MAX + 1,
  (int64_t)INT32_MIN - 1,
  9007199254740993LL,
  -9007199254740993LL,
  INT64_MAX,
  INT64_MIN,
};

/* The i-th test value for a source type: specials first, then an LCG. */
static value test_value(kiln_dtype from, size_t i, uint64_t *seed)
{
  size_t nf = sizeof float_specials / sizeof float_specials[0];
  size_t ni = sizeof int_specials / sizeof int_specials[0];
  *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
  uint32_t r = (uint32_t)(*seed >> 33);
  int is_int = from == KILN_I32 || from == KILN_I64;
  value v = {.is_int = is_int};
  if (is_int) {
    v.i = i < ni ? int_specials[i] : (int64_t)(*seed >> 1) >> (r % 63);
    if (from == KILN_I32)
      v.i = (int32_t)v.i;
  } else {
    /* Magnitudes from 2^-30 to 2^40, so every branch of every type is hit. */
    v.d = i < nf ? float_specials[i]
                 : ldexp((double)r / 4294967296.0 - 0.5, (int)(r % 71) - 30);
  }
  return v;
}

static void check_pair(kiln_runtime *rt, kiln_dtype from, kiln_dtype to, size_t n)
{
  size_t fs = kiln_dtype_size(from), ts = kiln_dtype_size(to);
  unsigned char *src = malloc(n * fs), *got = malloc(n * ts), *want = calloc(1, ts);
  uint64_t seed = 12345 + n;
  for (size_t i = 0; i < n; i++)
    store(test_value(from, i, &seed), from, src + i * fs);
  kiln_buffer *a = NULL, *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, from, n, 0, &a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, to, n, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, n, src));
  assert_kiln_ok(rt, kiln_convert(a, b));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, n, got));
  for (size_t i = 0; i < n; i++) {
    value x = load(from, src + i * fs);
    reference(x, to, want);
    int nan_ok =
      (to == KILN_F16 && isnan(kiln_test_half_value(*(uint16_t *)want)) &&
       isnan(kiln_test_half_value(*(uint16_t *)(got + i * ts)))) ||
      (to == KILN_F32 && isnan(*(float *)want) && isnan(*(float *)(got + i * ts))) ||
      (to == KILN_F64 && isnan(*(double *)want) && isnan(*(double *)(got + i * ts)));
    if (!nan_ok && memcmp(want, got + i * ts, ts) != 0) {
      value g = load(to, got + i * ts), w = load(to, want);
      fail_msg("%s -> %s, element %zu of %zu: from %.17g / %lld got %.17g / %lld, "
               "expected %.17g / %lld",
               kiln_dtype_name(from), kiln_dtype_name(to), i, n, x.d, (long long)x.i, g.d,
               (long long)g.i, w.d, (long long)w.i);
    }
  }
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  free(src);
  free(got);
  free(want);
}

static void check_all_pairs(kiln_runtime *rt, const size_t *sizes, size_t nsizes)
{
  int fp64 = kiln_runtime_device(rt)->has_fp64;
  for (size_t f = 0; f < NTYPES; f++)
    for (size_t t = 0; t < NTYPES; t++) {
      if (!fp64 && (types[f] == KILN_F64 || types[t] == KILN_F64))
        continue;
      for (size_t s = 0; s < nsizes; s++)
        check_pair(rt, types[f], types[t], sizes[s]);
    }
}

static void test_convert_every_pair(void **state)
{
  static const size_t sizes[] = {1, 3, 57, 1000, 65537};
  check_all_pairs(*state, sizes, sizeof sizes / sizeof sizes[0]);
}

static void test_convert_large(void **state)
{
  kiln_runtime *rt = *state;
  check_pair(rt, KILN_F32, KILN_F16, 1000003);
  check_pair(rt, KILN_F16, KILN_F32, 1000003);
}

static void test_convert_on_oclgrind(void **state)
{
  (void)state;
  kiln_runtime *rt = kiln_test_oclgrind_runtime();
  static const size_t sizes[] = {40}; /* covers every special value */
  check_all_pairs(rt, sizes, 1);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_convert_refuses(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *f = NULL, *g = NULL, *c = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 10, 0, &f));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, 11, 0, &g));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, 10, 0, &c));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "src has 10 elements and dst 11",
                    kiln_convert(f, g));
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "dst holds complex64",
                    kiln_convert(f, c));
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "src holds complex64",
                    kiln_convert(c, f));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "dst is NULL",
                    kiln_convert(f, NULL));
  kiln_runtime *other = NULL;
  kiln_buffer *far = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &other));
  assert_kiln_ok(other, kiln_buffer_create(other, KILN_F32, 10, 0, &far));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "different runtimes",
                    kiln_convert(far, f));
  kiln_buffer_destroy(far);
  kiln_runtime_destroy(other);
  kiln_buffer_destroy(f);
  kiln_buffer_destroy(g);
  kiln_buffer_destroy(c);
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_convert_refuses),
    cmocka_unit_test(test_convert_every_pair),
    cmocka_unit_test(test_convert_large),
    cmocka_unit_test(test_convert_on_oclgrind),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
