/*
 * reduce_common.cl — what cl/reduce.cl and cl/reduce_gpu.cl share: no
 * program of its own, but read before each of them in every pass
 * (tools/embed-cl.py, kiln__builtin_join()), as the prelude is before
 * every file. Both files are built with the family's options
 * (-DKILN_REDUCE_LANES, -DKILN_REDUCE_WG: src/tuning/tuning.c).
 *
 * A whole-buffer reduction runs in two stages: stage 1 reduces the input to
 * one partial per chunk (CPU shape: each work-item owns a contiguous chunk
 * and reads it with vector loads, since PoCL runs a group's work-items one
 * after another) or per work-group (GPU shape: coalesced grid-stride reads
 * of 16-byte vectors and a local-memory tree, docs/reduce.md); stage 2
 * combines the partials and writes the result (CPU: one work-item, in
 * order; GPU: one group and its tree). The GPU shape runs contiguous rows
 * the same way, side by side in dimension 1. An axis reduction otherwise
 * gives each output its own work-item, which walks the axis.
 *
 * Sums accumulate in double where the device has fp64, else in float with
 * Kahan compensation; int32 sums in long, exactly. NaN propagates through
 * sums, min and max; argmin/argmax take the first NaN, then the first
 * extreme (ties go to the smaller index).
 *
 * Kernels are named kiln_reduce_<family>_<stage>_<type>, family sum (sum,
 * mean, norm: `mode` 0, 1, 2), ext (min, max: `want_max`) or arg (argmin,
 * argmax: `want_max`); stage chunks and final (CPU), groups and merge
 * (GPU), axis.
 *
 * Read once per variant after cl/prelude.cl (which says how): f32, f16,
 * i32 (whose sums are written out apart, in long) and f64 where the device
 * has fp64. Here: the accumulators, the rules of NaN and of ties, each
 * pass's variant and the int32 sums' helpers.
 */
#ifndef KILN_PRELUDE
#error "cl/reduce_common.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 4

#if KILN_PASS == 1 /* ---- what every variant shares ------------------------ */

#ifdef KILN_HAS_FP64
#define ACC double
#define ACC16 double16
#define CONVERT_ACC16 convert_double16
#else
#define ACC float
#define ACC16 float16
#define CONVERT_ACC16(v) (v)
#endif

/* The CPU shape's vectors: KILN_REDUCE_LANES, the float lanes of the
 * device's widest registers (src/tuning/tuning.c), 16 or 8. Nothing wider may
 * cross a builtin's call: a target without 512-bit registers (AVX2) passes
 * a float16 or double8 in memory, and clang warns that the ABI changes. */
#ifndef KILN_REDUCE_LANES
#error "cl/reduce*.cl need kiln's -DKILN_REDUCE_LANES option (src/tuning/tuning.c)"
#endif

/* The GPU shape's group size is kiln's -D option (src/tuning/tuning.c). */
#ifndef KILN_REDUCE_WG
#error "cl/reduce*.cl need kiln's -DKILN_REDUCE_WG option (src/tuning/tuning.c)"
#endif
#define WG KILN_REDUCE_WG

/* Sums: Kahan where the accumulator is float. */
typedef struct {
  ACC s, c;
} ksum;

inline ksum kadd(ksum a, ACC v)
{
#ifdef KILN_HAS_FP64
  a.s += v;
#else
  ACC y = v - a.c, t = a.s + y;
  a.c = isfinite(t) ? (t - a.s) - y : 0; /* inf - inf would poison the sum */
  a.s = t;
#endif
  return a;
}

/* mode: 0 sum, 1 mean, 2 norm (sqrt of the sum of squares). */
#define TERM(v, mode) ((mode) == 2 ? (ACC)(v) * (ACC)(v) : (ACC)(v))
#define FINISH(s, n, mode) ((mode) == 1 ? (s) / (ACC)(n) : (mode) == 2 ? sqrt(s) : (s))

/* Min and max: the better of the current extreme e and v, the first value,
 * then NaN sticks (IS_NAN is the pass's). */
#define PICK(e, v, want_max)                                                   \
  (IS_NAN(e) ? (e) : IS_NAN(v) ? (v) : (want_max) ? max(e, v) : min(e, v))

/* Argmin and argmax: whether (v, i) beats the best (e, b): NaN first, then
 * the extreme, ties and NaN against NaN to the smaller index. */
#define BEATS(v, i, e, b, want_max)                                            \
  (IS_NAN(e) ? (IS_NAN(v) && (i) < (b))                                       \
   : IS_NAN(v) ? 1                                                             \
   : (v) == (e)   ? (i) < (b)                                                  \
   : (want_max)   ? (v) > (e)                                                  \
                  : (v) < (e))

#endif /* KILN_PASS == 1 */

/* The pass's variant: V names the input's type ST; VT is the type min, max,
 * argmin and argmax compare in, OT the type a sum is written in; SUMS says
 * whether the files' float sums are this variant's (i32's are written out apart),
 * VEC16 and VEC8 whether stage 1 reads 16 or 8 lanes at a time (CPU). The
 * GPU shape's: GV elements a 16-byte vector, read by GLOAD(p, i) from an
 * aligned p as a GVT of the compare type; EXT_ID the identity of min
 * (want_max 0) or max; VEC_NAN whether the type has NaNs. */
#undef V
#undef ST
#undef VT
#undef OT
#undef IS_NAN
#undef SUMS
#undef VEC16
#undef VEC8
#undef GV
#undef GVT
#undef GLOAD
#undef EXT_ID
#undef VEC_NAN
#if KILN_PASS == 1
#define V f32
#define ST float
#define VT float
#define OT float
#define IS_NAN(v) isnan(v)
#define SUMS 1
#define VEC16 (KILN_REDUCE_LANES >= 16)
#define VEC8 (KILN_REDUCE_LANES < 16)
#define GV 4
#define GVT float4
#define GLOAD(p, i) (((global const float4 *)(p))[i])
#define EXT_ID(want_max) ((want_max) ? -INFINITY : INFINITY)
#define VEC_NAN 1
#elif KILN_PASS == 2
#define V f16
#define ST half
#define VT float
#define OT float
#define IS_NAN(v) isnan(v)
#define SUMS 1
#define VEC16 0
#define VEC8 0
#define GV 8
#define GVT float8
#define GLOAD(p, i) vloada_half8((i), (p))
#define EXT_ID(want_max) ((want_max) ? -INFINITY : INFINITY)
#define VEC_NAN 1
#elif KILN_PASS == 3
#define V i32
#define ST int
#define VT int
#define IS_NAN(v) 0
#define SUMS 0
#define GV 4
#define GVT int4
#define GLOAD(p, i) (((global const int4 *)(p))[i])
#define EXT_ID(want_max) ((want_max) ? INT_MIN : INT_MAX)
#define VEC_NAN 0
#elif KILN_PASS == 4 && defined(KILN_HAS_FP64)
#define V f64
#define ST double
#define VT double
#define OT double
#define IS_NAN(v) isnan(v)
#define SUMS 1
#define VEC16 0
#define VEC8 0
#define GV 2
#define GVT double2
#define GLOAD(p, i) (((global const double2 *)(p))[i])
#define EXT_ID(want_max) ((want_max) ? -INFINITY : INFINITY)
#define VEC_NAN 1
#endif

#if defined(V) && !SUMS
/* int32: sums and means from an exact long sum; a norm from a double sum of
 * squares (each square reaches 2^62, so long would wrap). A norm needs fp64,
 * which the host checks: int32 norms come out as float64. */
typedef union {
  long l;
#ifdef KILN_HAS_FP64
  double d;
#endif
} isum;

inline isum iadd(isum a, int v, int mode)
{
#ifdef KILN_HAS_FP64
  if (mode == 2) {
    a.d += (double)v * (double)v;
    return a;
  }
#endif
  a.l += v;
  return a;
}

/* Two partial sums together. */
inline isum iplus(isum a, isum b, int mode)
{
#ifdef KILN_HAS_FP64
  if (mode == 2) {
    a.d += b.d;
    return a;
  }
#endif
  a.l += b.l;
  return a;
}

/* Writes one result: the sum as long, the mean and the norm as double. */
inline void put_i32(global void *out, ulong at, isum s, ulong n, int mode)
{
  if (mode == 0)
    ((global long *)out)[at] = s.l;
#ifdef KILN_HAS_FP64
  else
    ((global double *)out)[at] = mode == 1 ? (double)s.l / (double)n : sqrt(s.d);
#endif
}
#endif
