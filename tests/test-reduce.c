/*
 * test-reduce.c — kiln_reduce() and kiln_reduce_host() against references
 * computed here in double precision (Neumaier-compensated sums; int32 sums in
 * int64, exactly), for every op and input type, whole or along every axis of
 * 1-D to 4-D views, through every backend built in, on the device's buffers
 * and on host arrays (also cut into chunks by a small memory budget), and on
 * Oclgrind when it is registered.
 *
 * Tolerances (Higham, Accuracy and Stability of Numerical Algorithms, 2nd
 * ed.): n terms added in precision u, in any order, are within
 * gamma_n = n u / (1 - n u) of the exact sum, relative to sum |x_i| (4.2);
 * compensated summation within (2u + O(n u^2)) sum |x_i| (4.3). The result
 * is then rounded to the output type (u_out |s|). mean = sum / n adds the
 * division's rounding and the output's. The norm's terms x^2 are >= 0, so
 * the sum of squares is within u (the square) + gamma_n relative; the square
 * root halves that; then the sqrt's and the output's roundings. min, max,
 * argmin, argmax and the int32 sum are exact.
 * u is what kiln.h documents for the sum: float16 and float32 inputs
 * accumulate in float64 on a device with fp64, else in compensated float32;
 * the header documents that for the sum only, and mean (the sum over n) and
 * norm are held to the same accumulator. float64 accumulates in float64, and
 * int32 means and norms in float64. CLBlast accumulates in the input's
 * precision (u = 2^-24 for float32, 2^-11 for half), so gamma_n bounds it,
 * and says nothing once n u >= 1.
 */
#include "common.h"
#include "values.h"

#include <math.h>

#include "kiln_config.h"

#define NOPS 7
#define ALL_OPS 0xfeu /* bits 1 << op for the seven ops */
#define SLACK 3       /* sentinels after the view, read by no correct kernel */

static const kiln_dtype in_types[] = {KILN_F32, KILN_F16, KILN_F64, KILN_I32};
#define NTYPES (sizeof in_types / sizeof in_types[0])

/* The backends to test: kiln's, and CLBlast's when built in. */
static const kiln_backend backends[] = {KILN_BACKEND_KILN, KILN_BACKEND_CLBLAST};
static const size_t nbackends = HAVE_CLBLAST ? 2 : 1;
/* Which (op, input type) CLBlast ran on a non-empty view. */
static unsigned clblast_ran[NOPS + 1][8];

/* ---- values on the host ----------------------------------------------- */

/* A random value of type t, exactly representable in it. float16: 3500
 * values of a 2^-10 grid in (-2, 2), all exact in half, so long inputs have
 * many tied minima and maxima; float32, float64 in [-0.8, 1.2), biased so
 * that sums do not cancel to nothing; int32: the whole range, so sums leave
 * int32 at once. */
static double random_value(kiln_dtype t, uint64_t *s)
{
  uint64_t r = kiln_test_random(s);
  switch (t) {
  case KILN_F16: return ((double)(r % 3500) - 1500) / 1024;
  case KILN_F32: return (float)((double)r * 0x1p-52 - 0.8);
  case KILN_F64: return (double)r * 0x1p-52 - 0.8;
  default: return (int32_t)(uint32_t)(r >> 21);
  }
}

/* ---- problems ------------------------------------------------------------- */

typedef struct problem {
  kiln_dtype t;
  unsigned ndim;
  size_t shape[KILN_ARRAY_MAX_DIMS];
  int32_t axis;
  size_t offset, count; /* count: elements held: offset + view + SLACK */
  double *x;            /* every element's value */
  void *bytes;          /* the same, stored as t */
} problem;

static size_t view_count(const problem *p)
{
  size_t n = 1;
  for (unsigned k = 0; k < p->ndim; k++)
    n *= p->shape[k];
  return n;
}

/* The view as (outer, len, inner), reduced along len. */
static void geometry(const problem *p, size_t *outer, size_t *len, size_t *inner)
{
  *outer = *inner = 1;
  if (p->axis == KILN_AXIS_ALL) {
    *len = view_count(p);
    return;
  }
  unsigned a = (unsigned)(p->axis < 0 ? p->axis + (int32_t)p->ndim : p->axis);
  for (unsigned k = 0; k < p->ndim; k++)
    *(k < a ? outer : inner) *= k == a ? 1 : p->shape[k];
  *len = p->shape[a];
}

/* The view's values are vals (when not NULL) or random; before the view and
 * after it are sentinels that change every result if read: NaN, or the int32
 * extremes. */
static problem make(kiln_dtype t, unsigned ndim, const size_t *shape, int32_t axis,
                    size_t offset, const double *vals, uint64_t seed)
{
  problem p = {.t = t, .ndim = ndim, .axis = axis, .offset = offset};
  memcpy(p.shape, shape, ndim * sizeof *shape);
  size_t n = view_count(&p);
  p.count = offset + n + SLACK;
  p.x = malloc(p.count * sizeof *p.x);
  p.bytes = malloc(p.count * kiln_dtype_size(t));
  assert_non_null(p.x);
  assert_non_null(p.bytes);
  for (size_t i = 0; i < p.count; i++) {
    int in_view = i >= offset && i < offset + n;
    p.x[i] = in_view         ? (vals ? vals[i - offset] : random_value(t, &seed))
             : t != KILN_I32 ? NAN
             : i < offset    ? (double)INT32_MIN
                             : (double)INT32_MAX;
    kiln_test_put(t, p.bytes, i, p.x[i]);
    double back = kiln_test_get(t, p.bytes, i); /* the reference sees what is stored */
    if (t != KILN_F32 && !(back == p.x[i] || isnan(back)))
      fail_msg("the test stored %.17g as %s %.17g", p.x[i], kiln_dtype_name(t), back);
    p.x[i] = back;
  }
  return p;
}

static problem make_1d(kiln_dtype t, size_t n, const double *vals, uint64_t seed)
{
  return make(t, 1, (size_t[]){n}, KILN_AXIS_ALL, 0, vals, seed);
}

/* Sets view element i to v. */
static void plant(problem *p, size_t i, double v)
{
  kiln_test_put(p->t, p->bytes, p->offset + i, v);
  p->x[p->offset + i] = kiln_test_get(p->t, p->bytes, p->offset + i);
}

static void unmake(problem *p)
{
  free(p->x);
  free(p->bytes);
}

/* ---- the reference ------------------------------------------------------- */

typedef struct stats {
  size_t n, first_nan, imin, imax;
  int nan, pinf, ninf, seen;
  double sum, sum_c, mag, sq, sq_c, min, max;
  int64_t isum;
} stats;

static void neumaier(double *s, double *c, double v)
{
  double t = *s + v;
  *c += fabs(*s) >= fabs(v) ? (*s - t) + v : (v - t) + *s;
  *s = t;
}

static stats line_stats(const problem *p, size_t start, size_t stride, size_t n)
{
  stats s = {.n = n};
  for (size_t k = 0; k < n; k++) {
    double v = p->x[start + k * stride];
    if (isnan(v)) {
      if (!s.nan)
        s.first_nan = k;
      s.nan = 1;
      continue;
    }
    if (isinf(v))
      *(v > 0 ? &s.pinf : &s.ninf) = 1;
    else {
      neumaier(&s.sum, &s.sum_c, v);
      neumaier(&s.sq, &s.sq_c, v * v);
      s.mag += fabs(v);
    }
    if (p->t == KILN_I32)
      s.isum += (int64_t)v;
    if (!s.seen || v < s.min)
      s.min = v, s.imin = k;
    if (!s.seen || v > s.max)
      s.max = v, s.imax = k;
    s.seen = 1;
  }
  return s;
}

typedef enum acc { ACC_F64, ACC_COMP32, ACC_F32, ACC_F16 } acc;

static double unit(acc a)
{
  return a == ACC_F64 ? 0x1p-53 : a == ACC_F16 ? 0x1p-11 : 0x1p-24;
}

/* The error of accumulating n terms whose magnitudes add to mag. */
static double acc_error(acc a, size_t n, double mag)
{
  double u = unit(a), nu = (double)n * u;
  if (a == ACC_COMP32)
    return (2 * u + 2 * nu * u) * mag;
  return nu < 1 ? nu / (1 - nu) * mag : INFINITY;
}

static acc accumulator(kiln_runtime *rt, kiln_backend be, kiln_dtype t)
{
  if (t == KILN_F64 || t == KILN_I32)
    return ACC_F64;
  if (be == KILN_BACKEND_CLBLAST)
    return t == KILN_F16 ? ACC_F16 : ACC_F32;
  return kiln_runtime_device(rt)->has_fp64 ? ACC_F64 : ACC_COMP32;
}

typedef struct want {
  double v, bound;
  int64_t i;
  int exact_int; /* compare i with the int64 result */
} want;

static want expect(kiln_reduce_op op, kiln_dtype t, const stats *s, acc a)
{
  kiln_dtype ot = kiln_reduce_out_dtype(op, t);
  double uo = ot == KILN_F32 ? 0x1p-24 : 0x1p-53;
  double sum = s->nan || (s->pinf && s->ninf) ? NAN
               : s->pinf                      ? INFINITY
               : s->ninf                      ? -INFINITY
                                              : s->sum + s->sum_c;
  double sq = s->sq + s->sq_c, n = (double)s->n;
  want w = {0};
  switch (op) {
  case KILN_REDUCE_SUM:
    w.v = sum;
    w.bound = uo * fabs(sum) + acc_error(a, s->n, s->mag);
    w.exact_int = t == KILN_I32;
    w.i = s->isum;
    break;
  case KILN_REDUCE_MEAN:
    w.v = s->n ? sum / n : NAN;
    w.bound = 2 * uo * fabs(w.v) + acc_error(a, s->n, s->mag) / n;
    break;
  case KILN_REDUCE_NORM2:
    w.v = s->nan ? NAN : s->pinf || s->ninf ? INFINITY : sqrt(sq);
    w.bound =
      w.v * (0.5 * (unit(a) + (sq > 0 ? acc_error(a, s->n, sq) / sq : 0)) + unit(a) + uo);
    break;
  case KILN_REDUCE_MIN: w.v = s->nan ? NAN : s->min; break;
  case KILN_REDUCE_MAX: w.v = s->nan ? NAN : s->max; break;
  case KILN_REDUCE_ARGMIN:
  case KILN_REDUCE_ARGMAX:
    w.exact_int = 1;
    w.i = (int64_t)(s->nan ? s->first_nan : op == KILN_REDUCE_ARGMIN ? s->imin : s->imax);
    break;
  }
  return w;
}

static void compare(const char *what, kiln_dtype ot, const void *out, size_t j, want w)
{
  if (w.exact_int) {
    int64_t g = ((const int64_t *)out)[j];
    if (g != w.i)
      fail_msg("%s, result %zu: %lld, expected %lld", what, j, (long long)g,
               (long long)w.i);
    return;
  }
  double g = kiln_test_get(ot, out, j);
  double wo = ot == KILN_F32 ? (double)(float)w.v : w.v; /* overflow to inf */
  int ok = isnan(w.v) ? isnan(g) : isinf(wo) ? g == wo : fabs(g - w.v) <= w.bound;
  if (!ok)
    fail_msg("%s, result %zu: %.17g, expected %.17g (error %.3g, bound %.3g)", what, j, g,
             w.v, fabs(g - w.v), w.bound);
}

/* ---- running ------------------------------------------------------------ */

enum { API_DEVICE, API_HOST };

static void describe(char *buf, size_t size, const problem *p, kiln_reduce_op op,
                     kiln_backend be, int api)
{
  char shape[120] = "", axis[16] = "all";
  for (unsigned d = 0; d < p->ndim; d++)
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), d ? ",%zu" : "%zu",
             p->shape[d]);
  if (p->axis != KILN_AXIS_ALL)
    snprintf(axis, sizeof axis, "%d", (int)p->axis);
  snprintf(buf, size, "%s %s of %s {%s} axis %s offset %zu, backend %s",
           api == API_HOST ? "kiln_reduce_host" : "kiln_reduce", kiln_reduce_op_name(op),
           kiln_dtype_name(p->t), shape, axis, p->offset, kiln_backend_name(be));
}

/* Runs the ops in `ops` on p and checks every result. KILN must run each;
 * CLBlast may refuse with KILN_ERR_UNSUPPORTED, saying why. An empty
 * reduction of min, max, argmin or argmax must be refused. */
static void run(kiln_runtime *rt, const problem *p, kiln_backend be, int api,
                unsigned ops)
{
  size_t outer, len, inner;
  geometry(p, &outer, &len, &inner);
  size_t outn = outer * inner, nout = outn ? outn : 1;
  stats *st = malloc(nout * sizeof *st);
  for (size_t j = 0; j < outn; j++)
    st[j] = line_stats(p, p->offset + j / inner * len * inner + j % inner, inner, len);
  kiln_buffer *in = NULL;
  if (api == API_DEVICE) {
    assert_kiln_ok(rt, kiln_buffer_create(rt, p->t, p->count, 0, &in));
    assert_kiln_ok(rt, kiln_buffer_write(in, 0, p->count, p->bytes));
  }
  for (int op = 1; op <= NOPS; op++) {
    if (!(ops & 1u << op))
      continue;
    kiln_dtype ot = kiln_reduce_out_dtype((kiln_reduce_op)op, p->t);
    kiln_reduce_desc d;
    kiln_reduce_desc_init(&d, (kiln_reduce_op)op, p->t, 0);
    d.ndim = p->ndim;
    memcpy(d.shape, p->shape, sizeof d.shape);
    d.axis = p->axis;
    d.offset = p->offset;
    d.backend = be;
    void *out = calloc(nout, kiln_dtype_size(ot));
    kiln_status s;
    if (api == API_HOST) {
      s = kiln_reduce_host(rt, &d, p->bytes, out);
    } else {
      kiln_buffer *ob = NULL;
      assert_kiln_ok(rt, kiln_buffer_create(rt, ot, nout, 0, &ob));
      s = kiln_reduce(rt, &d, in, ob);
      if (s == KILN_OK)
        assert_kiln_ok(rt, kiln_buffer_read(ob, 0, nout, out));
      kiln_buffer_destroy(ob);
    }
    char what[200];
    describe(what, sizeof what, p, (kiln_reduce_op)op, be, api);
    int refusable = op >= KILN_REDUCE_MIN && op <= KILN_REDUCE_ARGMAX;
    if (!kiln_runtime_device(rt)->has_fp64 && (p->t == KILN_F64 || ot == KILN_F64)) {
      kiln_test_refuses_fp64(rt, s, what);
    } else if (be == KILN_BACKEND_KILN && s == KILN_ERR_UNSUPPORTED && len > 32767 &&
               (inner != 1 || outer > 16) && kiln_test_on_llvmpipe(rt)) {
      /* llvmpipe ends a work-item's loops after 65535 iterations: an axis
       * walked by one work-item per result must be refused, saying so. */
      if (!strstr(kiln_last_error(rt), "65535"))
        fail_msg("%s: refused without saying why: '%s'", what, kiln_last_error(rt));
    } else if (be == KILN_BACKEND_CLBLAST && s == KILN_ERR_UNSUPPORTED) {
      const char *m = kiln_last_error(rt);
      if (!strstr(m, "CLBlast") || strlen(m) < 40)
        fail_msg("%s: refused without saying why: '%s'", what, m);
    } else if (len == 0 && outn > 0 && refusable) {
      if (s != KILN_ERR_INVALID_ARGUMENT)
        fail_msg("%s: of nothing returned %s, expected ERR_INVALID_ARGUMENT", what,
                 kiln_status_name(s));
    } else if (s != KILN_OK) {
      fail_msg("%s returned %s: %s", what, kiln_status_name(s), kiln_last_error(rt));
    } else {
      if (be == KILN_BACKEND_CLBLAST && len && outn)
        clblast_ran[op][p->t]++;
      acc a = accumulator(rt, be, p->t);
      for (size_t j = 0; j < outn; j++)
        compare(what, ot, out, j, expect((kiln_reduce_op)op, p->t, &st[j], a));
    }
    free(out);
  }
  kiln_buffer_destroy(in);
  assert_kiln_ok(rt, kiln_finish(rt));
  free(st);
}

/* On the device's buffers and from host arrays, through every backend. */
static void run_all(kiln_runtime *rt, const problem *p, unsigned ops)
{
  for (int api = API_DEVICE; api <= API_HOST; api++)
    for (size_t b = 0; b < nbackends; b++)
      run(rt, p, backends[b], api, ops);
}

static int has_type(kiln_runtime *rt, kiln_dtype t)
{
  return t != KILN_F64 || kiln_runtime_device(rt)->has_fp64;
}

/* ---- tests ----------------------------------------------------------- */

static void test_reduce_out_dtype_names_desc(void **state)
{
  (void)state;
  enum { H = KILN_F16, F = KILN_F32, D = KILN_F64, I = KILN_I32, L = KILN_I64 };
  /* [op][input dtype], as kiln.h's table; 0 where kiln_reduce() refuses. */
  static const int table[NOPS + 1][8] = {
    [KILN_REDUCE_SUM] = {[H] = F, [F] = F, [D] = D, [I] = L},
    [KILN_REDUCE_MEAN] = {[H] = F, [F] = F, [D] = D, [I] = D},
    [KILN_REDUCE_MIN] = {[H] = H, [F] = F, [D] = D, [I] = I},
    [KILN_REDUCE_MAX] = {[H] = H, [F] = F, [D] = D, [I] = I},
    [KILN_REDUCE_ARGMIN] = {[H] = L, [F] = L, [D] = L, [I] = L},
    [KILN_REDUCE_ARGMAX] = {[H] = L, [F] = L, [D] = L, [I] = L},
    [KILN_REDUCE_NORM2] = {[H] = F, [F] = F, [D] = D, [I] = D},
  };
  static const char *names[] = {"invalid", "sum",    "mean", "min",     "max",
                                "argmin",  "argmax", "norm", "invalid", "invalid"};
  for (int op = 0; op <= NOPS + 2; op++) {
    assert_string_equal(kiln_reduce_op_name((kiln_reduce_op)op), names[op]);
    for (int t = -1; t <= 9; t++) {
      int expected = op <= NOPS && t >= 0 && t < 8 ? table[op][t] : 0;
      if ((int)kiln_reduce_out_dtype((kiln_reduce_op)op, (kiln_dtype)t) != expected)
        fail_msg("kiln_reduce_out_dtype(%d, %d) = %d, expected %d", op, t,
                 (int)kiln_reduce_out_dtype((kiln_reduce_op)op, (kiln_dtype)t), expected);
    }
  }
  kiln_reduce_desc d;
  memset(&d, 0x5a, sizeof d);
  kiln_reduce_desc_init(&d, KILN_REDUCE_MAX, KILN_I32, 12345);
  assert_int_equal(d.op, KILN_REDUCE_MAX);
  assert_int_equal(d.dtype, KILN_I32);
  assert_int_equal(d.ndim, 1);
  assert_int_equal(d.shape[0], 12345);
  assert_int_equal(d.axis, KILN_AXIS_ALL);
  assert_int_equal(d.offset, 0);
  assert_int_equal(d.backend, KILN_BACKEND_AUTO);
  kiln_reduce_desc_init(NULL, KILN_REDUCE_SUM, KILN_F32, 1);
}

/* A descriptor of {4, 37} float32 (148 elements) with one field changed. */
typedef struct bad_desc {
  int field; /* 0 op, 1 ndim, 2 axis, 3 backend, 4 dtype */
  long value;
  kiln_status want;
  const char *needle; /* the value given, or the type's name */
} bad_desc;

static void test_reduce_errors(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *f = NULL, *o = NULL, *i32 = NULL, *i64 = NULL, *o36 = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 148, KILN_BUFFER_ZERO, &f));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &o));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 36, 0, &o36));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, 148, KILN_BUFFER_ZERO, &i32));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I64, 1, 0, &i64));
  float hin[148] = {0}, hout[40];
  kiln_reduce_desc d, good;
  kiln_reduce_desc_init(&good, KILN_REDUCE_SUM, KILN_F32, 148);
  assert_kiln_ok(rt, kiln_reduce(rt, &good, f, o));
  assert_kiln_ok(rt, kiln_reduce_host(rt, &good, hin, hout));
  const kiln_status inval = KILN_ERR_INVALID_ARGUMENT;
  assert_kiln_fails(NULL, inval, "NULL", kiln_reduce(NULL, &good, f, o));
  assert_kiln_fails(rt, inval, "NULL", kiln_reduce(rt, NULL, f, o));
  assert_kiln_fails(rt, inval, "NULL", kiln_reduce(rt, &good, NULL, o));
  assert_kiln_fails(rt, inval, "NULL", kiln_reduce(rt, &good, f, NULL));
  assert_kiln_fails(NULL, inval, "NULL", kiln_reduce_host(NULL, &good, hin, hout));
  assert_kiln_fails(rt, inval, "NULL", kiln_reduce_host(rt, NULL, hin, hout));
  assert_kiln_fails(rt, inval, "NULL", kiln_reduce_host(rt, &good, NULL, hout));
  assert_kiln_fails(rt, inval, "NULL", kiln_reduce_host(rt, &good, hin, NULL));
  const kiln_status dt = KILN_ERR_INVALID_DTYPE;
  static const bad_desc bad[] = {
    {0, 0, KILN_ERR_INVALID_ARGUMENT, "op"},
    {0, 8, KILN_ERR_INVALID_ARGUMENT, "8"},
    {0, 42, KILN_ERR_INVALID_ARGUMENT, "42"},
    {1, 0, KILN_ERR_INVALID_ARGUMENT, "ndim"},
    {1, 9, KILN_ERR_INVALID_ARGUMENT, "9"},
    {2, 2, KILN_ERR_INVALID_ARGUMENT, "2"},
    {2, 7, KILN_ERR_INVALID_ARGUMENT, "7"},
    {2, -3, KILN_ERR_INVALID_ARGUMENT, "-3"},
    {2, INT32_MIN + 1, KILN_ERR_INVALID_ARGUMENT, "-2147483647"},
    {3, 42, KILN_ERR_INVALID_ARGUMENT, "42"},
    {4, KILN_C32, KILN_ERR_INVALID_DTYPE, "complex64"},
    {4, KILN_C64, KILN_ERR_INVALID_DTYPE, "complex128"},
    {4, KILN_I64, KILN_ERR_INVALID_DTYPE, "int64"},
    {4, 0, KILN_ERR_INVALID_DTYPE, ""},
    {4, 99, KILN_ERR_INVALID_DTYPE, ""},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, 4);
    d.ndim = 2;
    d.shape[1] = 37; /* axes -2 .. 1 */
    int32_t v = (int32_t)bad[k].value;
    switch (bad[k].field) {
    case 0: d.op = (kiln_reduce_op)v; break;
    case 1: d.ndim = (unsigned)v; break;
    case 2: d.axis = v; break;
    case 3: d.backend = (kiln_backend)v; break;
    default: d.dtype = (kiln_dtype)v;
    }
    assert_kiln_fails(rt, bad[k].want, bad[k].needle, kiln_reduce(rt, &d, f, o36));
    assert_kiln_fails(rt, bad[k].want, bad[k].needle,
                      kiln_reduce_host(rt, &d, hin, hout));
  }
  /* buffers of other types than the descriptor's and kiln_reduce_out_dtype()'s */
  d = good;
  assert_kiln_fails(rt, dt, "int32", kiln_reduce(rt, &d, i32, o));
  assert_kiln_fails(rt, dt, "int64", kiln_reduce(rt, &d, f, i64));
  d.op = KILN_REDUCE_ARGMAX; /* int64 out */
  assert_kiln_fails(rt, dt, "float32", kiln_reduce(rt, &d, f, o));
  d.op = KILN_REDUCE_MAX;
  d.dtype = KILN_I32; /* int32 out */
  assert_kiln_fails(rt, dt, "float32", kiln_reduce(rt, &d, i32, o));
  /* sizes: the elements needed and held */
  kiln_reduce_desc_init(&d, KILN_REDUCE_MEAN, KILN_F32, 4);
  d.ndim = 2;
  d.shape[1] = 37;
  d.axis = 0; /* 37 results into 36 */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "37", kiln_reduce(rt, &d, f, o36));
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "36", kiln_reduce(rt, &d, f, o36));
  d.axis = KILN_AXIS_ALL;
  d.offset = 1; /* 1 + 148 elements from 148 */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "149", kiln_reduce(rt, &d, f, o));
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "148", kiln_reduce(rt, &d, f, o));
  kiln_runtime *other = NULL;
  kiln_buffer *far = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &other));
  assert_kiln_ok(other, kiln_buffer_create(other, KILN_F32, 148, KILN_BUFFER_ZERO, &far));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "runtime",
                    kiln_reduce(rt, &good, far, o));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "runtime",
                    kiln_reduce(rt, &good, f, far));
  kiln_buffer_destroy(far);
  assert_kiln_ok(NULL, kiln_runtime_destroy(other));
#if !HAVE_CLBLAST
  d = good;
  d.backend = KILN_BACKEND_CLBLAST;
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "CLBlast", kiln_reduce(rt, &d, f, o));
#endif
  if (!kiln_runtime_device(rt)->has_fp64) {
    kiln_buffer *f64 = NULL;
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F64, 148, 0, &f64));
    kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F64, 148);
    kiln_test_refuses_fp64(rt, kiln_reduce(rt, &d, f64, f64), "kiln_reduce of float64");
    kiln_buffer_destroy(f64);
  }
  kiln_buffer *bufs[] = {f, o, o36, i32, i64};
  for (size_t k = 0; k < 5; k++)
    kiln_buffer_destroy(bufs[k]);
  assert_kiln_ok(rt, kiln_finish(rt));
}

/* Every op of every type over whole buffers of many lengths. The empty view
 * (shape {0}) sums to 0 and has norm 0 and mean NaN; min ... argmax of it
 * are refused (run() checks both). */
static void test_reduce_whole_every_length(void **state)
{
  kiln_runtime *rt = *state;
  static const size_t big[] = {97,    1009,    65537,   1023,    1025,
                               65535, 1048575, 1048577, 10000000};
  size_t lengths[34 + sizeof big / sizeof big[0]], nl = 0;
  for (size_t n = 0; n <= 33; n++)
    lengths[nl++] = n;
  for (size_t k = 0; k < sizeof big / sizeof big[0]; k++)
    lengths[nl++] = big[k];
  for (size_t t = 0; t < NTYPES; t++) { /* float64 too: refused without fp64 */
    for (size_t k = 0; k < nl; k++) {
      problem p = make_1d(in_types[t], lengths[k], NULL, 1000 * t + k);
      run_all(rt, &p, ALL_OPS);
      unmake(&p);
    }
  }
  /* Offsets that misalign vector loads; sentinels lie before the view. */
  static const size_t ol[] = {1, 7, 33, 1009, 65537};
  for (size_t t = 0; t < NTYPES; t++)
    for (size_t k = 0; k < 5; k++) {
      problem p = make(in_types[t], 1, &ol[k], KILN_AXIS_ALL, 1 + 2 * k, NULL, k);
      run_all(rt, &p, ALL_OPS);
      unmake(&p);
    }
  /* kiln.h names sum and norm as what CLBlast does: it must have done them. */
  if (nbackends > 1)
    assert_true(clblast_ran[KILN_REDUCE_SUM][KILN_F32] &&
                clblast_ran[KILN_REDUCE_NORM2][KILN_F32]);
}

/* Along every axis, counted from the front and from the back, of 1-D to
 * 4-D views with odd sizes and of a few large ones; results in C order of
 * the other axes. Positive axes with no offset, negative ones with 5. */
static void test_reduce_every_axis(void **state)
{
  kiln_runtime *rt = *state;
  static const struct {
    unsigned ndim;
    size_t shape[4];
  } shapes[] = {
    {1, {7}},         {1, {1}},          {2, {5, 7}},        {2, {1, 9}},
    {2, {9, 1}},      {2, {3, 0}},       {2, {0, 3}},        {3, {5, 7, 3}},
    {3, {3, 1, 4}},   {4, {5, 7, 3, 4}}, {4, {3, 5, 1, 7}},  {4, {2, 1, 1, 2}},
    {2, {3, 100003}}, {2, {1001, 257}},  {3, {2, 65537, 3}},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t t = 0; t < NTYPES; t++) {
      int nd = (int)shapes[s].ndim;
      for (int a = -nd; a <= nd; a++) {
        int32_t axis = a == nd ? KILN_AXIS_ALL : a;
        problem p = make(in_types[t], shapes[s].ndim, shapes[s].shape, axis,
                         a < 0 ? 5 : 0, NULL, 31 * s + t);
        run_all(rt, &p, ALL_OPS);
        unmake(&p);
      }
    }
}

/* Many whole contiguous rows of a few thousand elements, which a GPU's
 * shape reduces side by side (a row of groups each), at offsets that
 * misalign each row's vectors differently; NaN and ties planted in some. */
static void test_reduce_whole_rows(void **state)
{
  kiln_runtime *rt = *state;
  static const size_t shapes[][2] = {{20, 1100}, {17, 4099}};
  for (size_t s = 0; s < 2; s++)
    for (size_t t = 0; t < NTYPES; t++) {
      problem p = make(in_types[t], 2, shapes[s], s ? 1 : -1, 2 * s + 3, NULL, 7 * s + t);
      if (in_types[t] != KILN_I32) {
        plant(&p, 3 * shapes[s][1] + 17, NAN);
        plant(&p, 5 * shapes[s][1] + 1, INFINITY);
        plant(&p, 5 * shapes[s][1] + shapes[s][1] - 1, INFINITY);
      }
      run_all(rt, &p, ALL_OPS);
      unmake(&p);
    }
}

/* NaN propagates through sum, mean, norm, min and max; argmin and argmax
 * give the first NaN's index; ties give the first extreme; infinities. */
static void test_reduce_nan_inf_ties(void **state)
{
  kiln_runtime *rt = *state;
  static const double c0[] = {1, NAN, 3, NAN, -5}, c1[] = {NAN},
                      c2[] = {2, 5, 5, -1, -1, 2}, c3[] = {1, INFINITY, 3},
                      c4[] = {-INFINITY, 2, -INFINITY}, c5[] = {INFINITY, -INFINITY},
                      c6[] = {INFINITY, NAN, INFINITY},
                      c7[] = {-INFINITY, -INFINITY, -INFINITY}, c8[] = {4, 4, 4, 4, 4},
                      c9[] = {-2, 3, NAN}, c10[] = {INFINITY, 1, INFINITY, -3, -3};
  static const struct {
    const double *v;
    size_t n;
  } cases[] = {
    {c0, 5}, {c1, 1}, {c2, 6}, {c3, 3}, {c4, 3},  {c5, 2},
    {c6, 3}, {c7, 3}, {c8, 5}, {c9, 3}, {c10, 5},
  };
  for (size_t t = 0; t < 3; t++) { /* the floating types */
    kiln_dtype ty = in_types[t];
    if (!has_type(rt, ty))
      continue;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      problem p = make_1d(ty, cases[k].n, cases[k].v, 0);
      run_all(rt, &p, ALL_OPS);
      unmake(&p);
    }
    /* Long inputs: NaN first, last and in the middle; planted extremes. */
    static const size_t nan_at[][2] = {{0, 0}, {65536, 65536}, {40000, 50001}};
    for (size_t k = 0; k < 3; k++) {
      problem p = make_1d(ty, 65537, NULL, k);
      plant(&p, nan_at[k][1], NAN);
      plant(&p, nan_at[k][0], NAN);
      run_all(rt, &p, ALL_OPS);
      unmake(&p);
    }
    problem p = make_1d(ty, 1000003, NULL, 9);
    static const size_t at[] = {300001, 500000, 999999, 2};
    for (size_t k = 0; k < 4; k++)
      plant(&p, at[k], k == 3 ? -4 : 4); /* beyond the random values' range */
    plant(&p, 700000, -4);
    run_all(rt, &p, ALL_OPS);
    for (size_t i = 0; i < 1000003; i++)
      plant(&p, i, 4); /* all tied */
    run_all(rt, &p, ALL_OPS);
    unmake(&p);
    /* Along axes: NaN and ties in some lines only. */
    static const size_t sh[] = {64, 1001};
    for (int axis = -2; axis <= 1; axis++) {
      problem q = make(ty, 2, sh, axis, 3, NULL, 77);
      for (size_t i = 0; i < 64 * 1001; i += 997)
        plant(&q, i, i % 3 ? NAN : INFINITY);
      for (size_t i = 5; i < 64 * 1001; i += 2003)
        plant(&q, i, -INFINITY);
      run_all(rt, &q, ALL_OPS);
      unmake(&q);
    }
  }
  /* float32 overflow: the exact sum 1.2e39 rounds to inf in float32 and so
   * does the norm 6e38. (mean left out: 3e38 in float64 accumulation, inf in
   * float32, and the header fixes neither.) */
  static const double big[] = {3e38, 3e38, 3e38, 3e38};
  problem p = make_1d(KILN_F32, 4, big, 0);
  run_all(rt, &p, ALL_OPS & ~(1u << KILN_REDUCE_MEAN));
  unmake(&p);
}

/* int32: sums far beyond 2^31 in exact int64, extremes, first indices. */
static void test_reduce_int32(void **state)
{
  kiln_runtime *rt = *state;
  static const double c0[] = {INT32_MIN, 5, INT32_MAX, INT32_MAX, INT32_MIN, -1},
                      c1[] = {INT32_MAX, INT32_MAX, INT32_MAX, 1};
  problem p = make_1d(KILN_I32, 6, c0, 0);
  run_all(rt, &p, ALL_OPS);
  unmake(&p);
  p = make_1d(KILN_I32, 4, c1, 0); /* 3 (2^31 - 1) + 1 */
  run_all(rt, &p, ALL_OPS);
  unmake(&p);
  static const double fills[] = {INT32_MAX, INT32_MIN, -7};
  for (size_t k = 0; k < 3; k++) {
    problem q = make_1d(KILN_I32, 3000017, NULL, 0);
    for (size_t i = 0; i < 3000017; i++) /* sum 6.4e15: beyond 2^52 too */
      plant(&q, i, fills[k]);
    plant(&q, 2999999, k == 2 ? 8 : 0);
    run_all(rt, &q, ALL_OPS);
    unmake(&q);
  }
}

/* The float32 sum of 10^8 values, uniform on a 2^-24 grid in [0, 1): the
 * plain double sum is exact (partial sums below 2^26 on a 2^-24 grid need
 * 50 bits), and kiln's result must be within 1e-6 of it, and within its
 * documented bound: one rounding to float32 plus gamma_n(2^-53) (fp64) or
 * 2u + 2n u^2 (compensated float32). A serial float loop stops growing at
 * 2^24, where each term is below half an ulp, and misses by about 66%. */
static void test_reduce_float32_sum_1e8(void **state)
{
  kiln_runtime *rt = *state;
  const size_t n = 100000000;
  float *x = malloc(n * sizeof *x);
  assert_non_null(x);
  uint64_t seed = 2024;
  double sum = 0, sq = 0, sq_c = 0;
  float naive = 0;
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)((double)(kiln_test_random(&seed) >> 29) * 0x1p-24);
    sum += x[i];
    neumaier(&sq, &sq_c, (double)x[i] * x[i]);
    naive += x[i];
  }
  double naive_err = fabs(naive - sum) / sum;
  print_message(
    "# 10^8 floats: exact sum %.17g, serial float loop %.9g (relative error %.3g)\n", sum,
    (double)naive, naive_err);
  assert_true(naive_err > 1e-6);
  /* The bounds of expect(), from the exact sums. */
  stats st = {.n = n, .sum = sum, .mag = sum, .sq = sq, .sq_c = sq_c, .seen = 1};
  acc a = accumulator(rt, KILN_BACKEND_KILN, KILN_F32);
  int fits = kiln_runtime_device(rt)->max_alloc_bytes >= n * sizeof *x;
  kiln_buffer *in = NULL, *out = NULL;
  if (fits) {
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &in));
    assert_kiln_ok(rt, kiln_buffer_write(in, 0, n, x));
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &out));
  }
  static const kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_MEAN,
                                       KILN_REDUCE_NORM2};
  for (int api = fits ? API_DEVICE : API_HOST; api <= API_HOST; api++)
    for (size_t k = 0; k < 3; k++) {
      kiln_reduce_desc d;
      kiln_reduce_desc_init(&d, ops[k], KILN_F32, n);
      d.backend = KILN_BACKEND_KILN;
      float got;
      if (api == API_DEVICE) {
        assert_kiln_ok(rt, kiln_reduce(rt, &d, in, out));
        assert_kiln_ok(rt, kiln_buffer_read(out, 0, 1, &got));
      } else {
        assert_kiln_ok(rt, kiln_reduce_host(rt, &d, x, &got));
      }
      want w = expect(ops[k], KILN_F32, &st, a);
      double err = fabs(got - w.v);
      if (!(err <= 1e-6 * w.v && err <= w.bound))
        fail_msg("%s %s of 10^8 floats: %.9g, expected %.17g (relative error %.3g, "
                 "bound %.3g)",
                 api == API_HOST ? "kiln_reduce_host" : "kiln_reduce",
                 kiln_reduce_op_name(ops[k]), (double)got, w.v, err / w.v, w.bound / w.v);
    }
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(x);
}

/* kiln_reduce_host() with a 256 KiB budget: 10^6 elements (4 MB as float32)
 * and 2-D axis reductions must go in chunks, combined as one pass would. */
static void test_reduce_host_chunked(void **state)
{
  (void)state;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = 256 * 1024;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  for (size_t t = 0; t < NTYPES; t++) {
    if (!has_type(rt, in_types[t]))
      continue;
    problem p = make(in_types[t], 1, (size_t[]){1000000}, KILN_AXIS_ALL, 11, NULL, t);
    plant(&p, 999998,
          in_types[t] == KILN_I32 ? INT32_MAX : 1e4); /* max in the last chunk */
    for (size_t b = 0; b < nbackends; b++)
      run(rt, &p, backends[b], API_HOST, ALL_OPS);
    unmake(&p);
    static const int32_t axes[] = {0, -1, 1, KILN_AXIS_ALL};
    for (size_t k = 0; k < 4; k++) {
      p = make(in_types[t], 2, (size_t[]){1000, 1001}, axes[k], 3, NULL, 7 + t);
      for (size_t b = 0; b < nbackends; b++)
        run(rt, &p, backends[b], API_HOST, ALL_OPS);
      unmake(&p);
    }
  }
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
  assert_int_equal(mu.live_buffers, 0);
  assert_true(mu.peak_bytes <= 256 * 1024);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* Budgets too small for anything: kiln_reduce_host() with 4 bytes left
 * for a piece, and kiln_reduce() with none left for one partial, each
 * OUT_OF_MEMORY saying what it needed; the runtime goes on. */
static void test_reduce_host_chunked_no_room(void **state)
{
  (void)state;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = 8192;
  opts.no_memory_pool = 1; /* the budget to the byte */
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  kiln_buffer *held = NULL, *out = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 2047, KILN_BUFFER_ZERO, &held));
  float x[4] = {1, 2, 3, 4}, y = 0;
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_MAX, KILN_F32, 4);
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY,
                    "a piece of one float32 element needs 4 bytes",
                    kiln_reduce_host(rt, &d, x, &y));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &out));
  d.shape[0] = 2047;
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "its partials of",
                    kiln_reduce(rt, &d, held, out));
  kiln_buffer_destroy(held);
  d.shape[0] = 4;
  assert_kiln_ok(rt, kiln_reduce_host(rt, &d, x, &y));
  assert_true(y == 4);
  kiln_buffer_destroy(out);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_reduce_on_oclgrind(void **state)
{
  (void)state;
  kiln_runtime *rt = kiln_test_oclgrind_runtime();
  static const double c0[] = {1, NAN, 3, NAN, -5, 5, 5};
  for (size_t t = 0; t < NTYPES; t++) {
    if (!has_type(rt, in_types[t]))
      continue;
    static const size_t lengths[] = {1, 7, 300};
    for (size_t k = 0; k < 3; k++) {
      problem p = make_1d(in_types[t], lengths[k], NULL, k);
      run(rt, &p, KILN_BACKEND_KILN, API_DEVICE, ALL_OPS);
      unmake(&p);
    }
    for (int32_t axis = -1; axis <= 0; axis++) {
      problem p = make(in_types[t], 2, (size_t[]){13, 21}, axis, 2, NULL, 5);
      run(rt, &p, KILN_BACKEND_KILN, API_DEVICE, ALL_OPS);
      unmake(&p);
    }
    if (in_types[t] != KILN_I32) {
      problem p = make_1d(in_types[t], 7, c0, 0);
      run(rt, &p, KILN_BACKEND_KILN, API_DEVICE, ALL_OPS);
      unmake(&p);
    }
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  if (argc > 1) /* a pattern of test names: the budget cases alone, as meson runs them */
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reduce_out_dtype_names_desc),
    cmocka_unit_test(test_reduce_errors),
    cmocka_unit_test(test_reduce_whole_every_length),
    cmocka_unit_test(test_reduce_every_axis),
    cmocka_unit_test(test_reduce_whole_rows),
    cmocka_unit_test(test_reduce_nan_inf_ties),
    cmocka_unit_test(test_reduce_int32),
    cmocka_unit_test(test_reduce_float32_sum_1e8),
    cmocka_unit_test(test_reduce_host_chunked),
    cmocka_unit_test(test_reduce_host_chunked_no_room),
    cmocka_unit_test(test_reduce_on_oclgrind),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
