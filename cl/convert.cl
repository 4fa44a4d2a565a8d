/*
 * convert.cl — element type conversions, one kernel per pair of types:
 *
 *   kernel void kiln_convert_<from>_<to>(global const FROM *src, ulong src_off,
 *                                        global TO *dst, ulong dst_off, ulong n)
 *
 * converts src[src_off .. src_off + n) into dst[dst_off .. dst_off + n) (the
 * offsets: views' first elements); work-item i converts element i, and
 * work-items past n do nothing, so any global size >= n works.
 *
 * The rules, the same for every pair:
 *  - to a floating type: round to nearest even (vstore_half_rte for half,
 *    whose storage needs no extension: vload_half and vstore_half are core);
 *  - to an integer type: round toward zero and saturate; NaN becomes 0;
 *  - between integers: saturate.
 * Kernels from or to f64 exist only where the device has fp64
 * (KILN_HAS_FP64, set by kiln). Read once per pair after cl/prelude.cl,
 * which says how.
 */
#ifndef KILN_PRELUDE
#error "cl/convert.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 20

#if KILN_PASS == 1
#define AS_FLOAT(v) ((float)(v)) /* C's conversion rounds to nearest even */
#define AS_DOUBLE(v) ((double)(v))
#define AS_SAME(v) (v)
/* OpenCL C says a saturating conversion takes NaN to 0, but not every
 * implementation does (Oclgrind 21.10 gives INT_MIN), so say it here. */
#define TO_INT(v) (isnan(v) ? 0 : convert_int_sat_rtz(v))
#define TO_LONG(v) (isnan(v) ? 0 : convert_long_sat_rtz(v))

/* The parts of a pass's PAIR (FROM, TO, CVT). */
#define FROM_OF(from, to, cvt) from
#define TO_OF(from, to, cvt) to
#define CVT_OF(from, to, cvt) cvt
#define APPLY(m, args) m args
#endif

/* The pass's pair: from FROM to TO (suffixes), CVT turning the loaded value
 * into what the store takes. */
#if KILN_PASS == 1
#define PAIR (f16, f32, AS_SAME)
#elif KILN_PASS == 2
#define PAIR (f16, i32, TO_INT)
#elif KILN_PASS == 3
#define PAIR (f16, i64, TO_LONG)
#elif KILN_PASS == 4
#define PAIR (f32, f16, AS_SAME)
#elif KILN_PASS == 5
#define PAIR (f32, i32, TO_INT)
#elif KILN_PASS == 6
#define PAIR (f32, i64, TO_LONG)
#elif KILN_PASS == 7
#define PAIR (i32, f16, AS_FLOAT)
#elif KILN_PASS == 8
#define PAIR (i32, f32, AS_FLOAT)
#elif KILN_PASS == 9
#define PAIR (i32, i64, convert_long)
#elif KILN_PASS == 10
#define PAIR (i64, f16, AS_FLOAT)
#elif KILN_PASS == 11
#define PAIR (i64, f32, AS_FLOAT)
#elif KILN_PASS == 12
#define PAIR (i64, i32, convert_int_sat)
#elif KILN_PASS == 13 && defined(KILN_HAS_FP64)
#define PAIR (f16, f64, AS_DOUBLE)
#elif KILN_PASS == 14 && defined(KILN_HAS_FP64)
#define PAIR (f32, f64, AS_DOUBLE)
#elif KILN_PASS == 15 && defined(KILN_HAS_FP64)
#define PAIR (f64, f16, AS_SAME)
#elif KILN_PASS == 16 && defined(KILN_HAS_FP64)
#define PAIR (f64, f32, convert_float_rte)
#elif KILN_PASS == 17 && defined(KILN_HAS_FP64)
#define PAIR (f64, i32, TO_INT)
#elif KILN_PASS == 18 && defined(KILN_HAS_FP64)
#define PAIR (f64, i64, TO_LONG)
#elif KILN_PASS == 19 && defined(KILN_HAS_FP64)
#define PAIR (i32, f64, AS_DOUBLE)
#elif KILN_PASS == 20 && defined(KILN_HAS_FP64)
#define PAIR (i64, f64, convert_double_rte)
#endif

#ifdef PAIR
#define FROM APPLY(FROM_OF, PAIR)
#define TO APPLY(TO_OF, PAIR)
#define CVT APPLY(CVT_OF, PAIR)
#define V CAT(CAT(FROM, _), TO)

#if KILN_BUILDS(kiln_convert)
kernel void NAME(kiln_convert)(global const TYPE(FROM) *src, ulong src_off,
                               global TYPE(TO) *dst, ulong dst_off, ulong n)
{
  size_t i = get_global_id(0);
  if (i < n) /* indices, not pointer steps: half pointers may not step */
    STORE(TO, CVT(LOAD(FROM, src, src_off + i)), dst, dst_off + i);
}
#endif

#undef PAIR
#undef FROM
#undef TO
#undef CVT
#undef V
#endif /* PAIR */
