/*
 * convert.cl — element type conversions, one kernel per pair of types:
 *
 *   kernel void kiln_convert_<from>_<to>(global const FROM *src,
 *                                        global TO *dst, ulong n)
 *
 * converts src[0 .. n) into dst[0 .. n); work-item i converts element i, and
 * work-items past n do nothing, so any global size >= n works.
 *
 * The rules, the same for every pair:
 *  - to a floating type: round to nearest even (vstore_half_rte for half,
 *    whose storage needs no extension: vload_half and vstore_half are core);
 *  - to an integer type: round toward zero and saturate; NaN becomes 0;
 *  - between integers: saturate.
 * Kernels from or to f64 exist only where the device has fp64
 * (KILN_HAS_FP64, set by kiln).
 */
#ifndef KILN_PRELUDE
#error "cl/convert.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif

/* FT and TT are the storage types; CVT turns the loaded value into what the
 * store takes. */
#define CONVERT(FROM, TO, FT, TT, CVT)                                        \
  kernel void kiln_convert_##FROM##_##TO(global const FT *src,               \
                                         global TT *dst, ulong n)            \
  {                                                                           \
    size_t i = get_global_id(0);                                              \
    if (i < n)                                                                \
      STORE_##TO(CVT(LOAD_##FROM(src, i)), dst, i);                           \
  }

#define AS_FLOAT(v) ((float)(v)) /* C's conversion rounds to nearest even */
#define AS_SAME(v) (v)
/* OpenCL C says a saturating conversion takes NaN to 0, but not every
 * implementation does (Oclgrind 21.10 gives INT_MIN), so say it here. */
#define TO_INT(v) (isnan(v) ? 0 : convert_int_sat_rtz(v))
#define TO_LONG(v) (isnan(v) ? 0 : convert_long_sat_rtz(v))

CONVERT(f16, f32, half, float, AS_SAME)
CONVERT(f16, i32, half, int, TO_INT)
CONVERT(f16, i64, half, long, TO_LONG)
CONVERT(f32, f16, float, half, AS_SAME)
CONVERT(f32, i32, float, int, TO_INT)
CONVERT(f32, i64, float, long, TO_LONG)
CONVERT(i32, f16, int, half, AS_FLOAT)
CONVERT(i32, f32, int, float, AS_FLOAT)
CONVERT(i32, i64, int, long, convert_long)
CONVERT(i64, f16, long, half, AS_FLOAT)
CONVERT(i64, f32, long, float, AS_FLOAT)
CONVERT(i64, i32, long, int, convert_int_sat)

#ifdef KILN_HAS_FP64
#define AS_DOUBLE(v) ((double)(v))
CONVERT(f16, f64, half, double, AS_DOUBLE)
CONVERT(f32, f64, float, double, AS_DOUBLE)
CONVERT(f64, f16, double, half, AS_SAME)
CONVERT(f64, f32, double, float, convert_float_rte)
CONVERT(f64, i32, double, int, TO_INT)
CONVERT(f64, i64, double, long, TO_LONG)
CONVERT(i32, f64, int, double, AS_DOUBLE)
CONVERT(i64, f64, long, double, convert_double_rte)
#endif
