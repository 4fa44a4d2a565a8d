/*
 * values.h — host-side element values for kiln's tests: float16 found by
 * search over its 65536 patterns (an independent reference: no bit tricks
 * shared with the code under test), and reading and writing any real
 * kiln_dtype as double.
 */
#ifndef KILN_TESTS_VALUES_H
#define KILN_TESTS_VALUES_H

#include <math.h>
#include <stdint.h>

#include "kiln/kiln.h"

/* The value of a float16 pattern. */
static inline double kiln_test_half_value(uint16_t h)
{
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* The float16 nearest to v, ties to the even pattern; past the largest
 * finite half, the next step (65536) stands for infinity, as in IEEE
 * rounding. */
static inline uint16_t kiln_test_half_of(double v)
{
  if (isnan(v))
    return 0x7e00;
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  unsigned lo = 0, hi = 0x7c00; /* positive halves grow with their patterns */
  while (lo < hi) {             /* the largest pattern whose value is <= a */
    unsigned mid = (lo + hi + 1) / 2;
    double mv = mid == 0x7c00 ? 65536.0 : kiln_test_half_value((uint16_t)mid);
    if (mv <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 0x7c00)
    return sign | 0x7c00;
  double below = kiln_test_half_value((uint16_t)lo);
  double above = lo + 1 == 0x7c00 ? 65536.0 : kiln_test_half_value((uint16_t)(lo + 1));
  unsigned pick = a - below < above - a   ? lo
                  : a - below > above - a ? lo + 1
                  : (lo & 1)              ? lo + 1
                                          : lo;
  return (uint16_t)(sign | pick);
}

/* Element i of an array of type t, as a double (int64 beyond 2^53 rounds). */
static inline double kiln_test_get(kiln_dtype t, const void *p, size_t i)
{
  switch (t) {
  case KILN_F16: return kiln_test_half_value(((const uint16_t *)p)[i]);
  case KILN_F32: return ((const float *)p)[i];
  case KILN_F64: return ((const double *)p)[i];
  case KILN_I32: return ((const int32_t *)p)[i];
  case KILN_I64: return (double)((const int64_t *)p)[i];
  default: return NAN;
  }
}

/* Stores v as element i of type t (rounding to nearest for floats; integers
 * must be given exactly). */
static inline void kiln_test_put(kiln_dtype t, void *p, size_t i, double v)
{
  switch (t) {
  case KILN_F16: ((uint16_t *)p)[i] = kiln_test_half_of(v); break;
  case KILN_F32: ((float *)p)[i] = (float)v; break;
  case KILN_F64: ((double *)p)[i] = v; break;
  case KILN_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case KILN_I64: ((int64_t *)p)[i] = (int64_t)v; break;
  default: break;
  }
}

#endif /* KILN_TESTS_VALUES_H */
