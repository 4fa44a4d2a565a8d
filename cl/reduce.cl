/*
 * reduce.cl — sum, mean, norm, min, max, argmin and argmax.
 *
 * A whole-buffer reduction runs in two stages: stage 1 reduces the input to
 * one partial per chunk (CPU shape: each work-item owns a contiguous chunk
 * and reads it with vector loads, since PoCL runs a group's work-items one
 * after another) or per work-group (GPU shape: coalesced grid-stride reads
 * and a local-memory tree); stage 2, one work-item, combines the partials in
 * order and writes the result. An axis reduction gives each output its own
 * work-item, which walks the axis.
 *
 * Sums accumulate in double where the device has fp64, else in float with
 * Kahan compensation; int32 sums in long, exactly. NaN propagates through
 * sums, min and max; argmin/argmax take the first NaN, then the first
 * extreme (ties go to the smaller index).
 *
 * Kernels are named kiln_reduce_<family>_<stage>_<type>, family sum (sum,
 * mean, norm: `mode` 0, 1, 2), ext (min, max: `want_max`) or arg (argmin,
 * argmax: `want_max`); stage chunks (CPU), groups (GPU), final, axis.
 *
 * Read once per variant after cl/prelude.cl (which says how): f32, f16,
 * i32 (whose sums are written out below, in long) and f64 where the device
 * has fp64.
 */
#ifndef KILN_PRELUDE
#error "cl/reduce.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
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
 * device's widest registers (src/tuning.c), 16 or 8. Nothing wider may
 * cross a builtin's call: a target without 512-bit registers (AVX2) passes
 * a float16 or double8 in memory, and clang warns that the ABI changes. */
#ifndef KILN_REDUCE_LANES
#error "cl/reduce.cl needs kiln's -DKILN_REDUCE_LANES option (src/tuning.c)"
#endif

/* The GPU shape's group size is kiln's -D option (src/tuning.c). */
#ifndef KILN_REDUCE_WG
#error "cl/reduce.cl needs kiln's -DKILN_REDUCE_WG option (src/tuning.c)"
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

/* Stage 1's share of the work-item for min, max, argmin and argmax, read as
 * lo, lo + step, ... below hi: a contiguous chunk (chunk > 0) or a
 * grid-stride share (chunk == 0). */
typedef struct {
  ulong lo, step, hi;
} share;

inline share share_of(ulong n, ulong chunk)
{
  size_t g = get_global_id(0);
  share s;
  s.lo = chunk ? g * chunk : g;
  s.step = chunk ? 1 : get_global_size(0);
  s.hi = chunk ? min(n, s.lo + chunk) : n;
  return s;
}

#endif /* KILN_PASS == 1 */

/* The pass's variant: V names the input's type ST; VT is the type min, max,
 * argmin and argmax compare in, OT the type a sum is written in; SUMS says
 * whether the sums below are this variant's (i32's are written out apart),
 * VEC16 and VEC8 whether stage 1 reads 16 or 8 lanes at a time. */
#if KILN_PASS == 1
#define V f32
#define ST float
#define VT float
#define OT float
#define IS_NAN(v) isnan(v)
#define SUMS 1
#define VEC16 (KILN_REDUCE_LANES >= 16)
#define VEC8 (KILN_REDUCE_LANES < 16)
#elif KILN_PASS == 2
#define V f16
#define ST half
#define VT float
#define OT float
#define IS_NAN(v) isnan(v)
#define SUMS 1
#define VEC16 0
#define VEC8 0
#elif KILN_PASS == 3
#define V i32
#define ST int
#define VT int
#define IS_NAN(v) 0
#define SUMS 0
#elif KILN_PASS == 4 && defined(KILN_HAS_FP64)
#define V f64
#define ST double
#define VT double
#define OT double
#define IS_NAN(v) isnan(v)
#define SUMS 1
#define VEC16 0
#define VEC8 0
#endif

#ifdef V

/* ---- sums ------------------------------------------------------------------ */
#if SUMS

/* Stage 1, CPU: work-item g sums x[g*chunk .. min(n, (g+1)*chunk)). The
 * float32 body reads 16 (or 8) lanes at a time into as many accumulators. */
#if KILN_BUILDS(kiln_reduce_sum_chunks)
kernel void NAME(kiln_reduce_sum_chunks)(global const ST *x, ulong off, ulong n,
                                         ulong chunk, int mode, global ACC *partial)
{
  size_t g = get_global_id(0);
  ulong lo = g * chunk, hi = min(n, lo + chunk), i = lo;
  x += off;
  ksum k = {0, 0};
#if VEC16 /* lanes sum separately, then fold */
  {
    ACC16 s = 0, c = 0;
    for (; i + 16 <= hi; i += 16) {
      ACC16 v = CONVERT_ACC16(vload16(0, x + i));
      if (mode == 2)
        v *= v;
#ifdef KILN_HAS_FP64
      s += v;
#else
      ACC16 y_ = v - c, t_ = s + y_;
      c = select((ACC16)0, (t_ - s) - y_, isfinite(t_));
      s = t_;
#endif
    }
    (void)c;
    ACC lane[16];
    vstore16(s, 0, lane);
    for (int l = 0; l < 16; l++)
      k = kadd(k, lane[l]);
  }
#elif VEC8 /* the same in 8 lanes; doubles as two double4s */
  {
#ifdef KILN_HAS_FP64
    double4 s0 = 0, s1 = 0;
    for (; i + 8 <= hi; i += 8) {
      float8 f = vload8(0, x + i);
      double4 a = convert_double4(f.lo), b = convert_double4(f.hi);
      if (mode == 2) {
        a *= a;
        b *= b;
      }
      s0 += a;
      s1 += b;
    }
    ACC lane[8];
    vstore4(s0, 0, lane);
    vstore4(s1, 1, lane);
#else
    float8 s = 0, c = 0;
    for (; i + 8 <= hi; i += 8) {
      float8 v = vload8(0, x + i);
      if (mode == 2)
        v *= v;
      float8 y_ = v - c, t_ = s + y_;
      c = select((float8)0, (t_ - s) - y_, isfinite(t_));
      s = t_;
    }
    ACC lane[8];
    vstore8(s, 0, lane);
#endif
    for (int l = 0; l < 8; l++)
      k = kadd(k, lane[l]);
  }
#endif
  for (; i < hi; i++)
    k = kadd(k, TERM(LOAD(V, x, i), mode));
  partial[g] = lo < hi ? k.s : 0;
}
#endif

/* Stage 1, GPU: group g sums a grid-stride share, then a local tree. */
#if KILN_BUILDS(kiln_reduce_sum_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_sum_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int mode, global ACC *partial)
{
  local ACC part[WG];
  size_t l = get_local_id(0);
  ksum k = {0, 0};
  (void)chunk;
  x += off;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
    k = kadd(k, TERM(LOAD(V, x, i), mode));
  part[l] = k.s;
  for (size_t w = WG / 2; w > 0; w /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < w)
      part[l] += part[l + w];
  }
  if (l == 0)
    partial[get_group_id(0)] = part[0];
}
#endif

/* Stage 2: partials in order, then mean or norm. */
#if KILN_BUILDS(kiln_reduce_sum_final)
kernel void NAME(kiln_reduce_sum_final)(global const ACC *partial, ulong np, ulong n,
                                        int mode, global OT *out, ulong out_off)
{
  ksum k = {0, 0};
  for (ulong i = 0; i < np; i++)
    k = kadd(k, partial[i]);
  out[out_off] = (OT)FINISH(k.s, n, mode);
}
#endif

/* Along an axis: output (o, i) sums x[(o*len + j)*inner + i] over j. */
#if KILN_BUILDS(kiln_reduce_sum_axis)
kernel void NAME(kiln_reduce_sum_axis)(global const ST *x, ulong off, ulong len,
                                       ulong inner, int mode, global OT *out,
                                       ulong out_off)
{
  size_t o = get_global_id(1), i = get_global_id(0);
  if (i >= inner)
    return;
  global const ST *p = x + off + o * len * inner + i;
  ksum k = {0, 0};
  for (ulong j = 0; j < len; j++)
    k = kadd(k, TERM(LOAD(V, p, j * inner), mode));
  out[out_off + o * inner + i] = (OT)FINISH(k.s, len, mode);
}
#endif

#else /* the int32 sums */

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

/* Partials are longs, or doubles for a norm: 8 bytes either way. */
#if KILN_WANTS(kiln_reduce_sum_chunks_i32)
kernel void kiln_reduce_sum_chunks_i32(global const int *x, ulong off, ulong n,
                                       ulong chunk, int mode, global isum *partial)
{
  size_t g = get_global_id(0);
  ulong lo = g * chunk, hi = min(n, lo + chunk);
  isum s = {0};
  x += off;
  for (ulong i = lo; i < hi; i++)
    s = iadd(s, x[i], mode);
  partial[g] = s;
}
#endif

#if KILN_WANTS(kiln_reduce_sum_final_i32)
kernel void kiln_reduce_sum_final_i32(global const isum *partial, ulong np, ulong n,
                                      int mode, global void *out, ulong out_off)
{
  isum s = {0};
  for (ulong i = 0; i < np; i++) {
#ifdef KILN_HAS_FP64
    if (mode == 2) {
      s.d += partial[i].d;
      continue;
    }
#endif
    s.l += partial[i].l;
  }
  put_i32(out, out_off, s, n, mode);
}
#endif

#if KILN_WANTS(kiln_reduce_sum_axis_i32)
kernel void kiln_reduce_sum_axis_i32(global const int *x, ulong off, ulong len,
                                     ulong inner, int mode, global void *out,
                                     ulong out_off)
{
  size_t o = get_global_id(1), i = get_global_id(0);
  if (i >= inner)
    return;
  global const int *p = x + off + o * len * inner + i;
  isum s = {0};
  for (ulong j = 0; j < len; j++)
    s = iadd(s, p[j * inner], mode);
  put_i32(out, out_off + o * inner + i, s, len, mode);
}
#endif

#endif /* SUMS */

/* The scans that stage 1 and the axis kernels share: they read
 * x[j * stride] for j = lo, lo + step, ... below hi, which must not be
 * empty. Stage 1 walks its share with stride 1; an axis output walks its
 * column with stride inner. */

/* The minimum or the maximum. */
inline VT NAME(ext_scan)(global const ST *x, ulong stride, ulong lo, ulong step,
                         ulong hi, int want_max)
{
  VT e = LOAD(V, x, lo * stride);
  for (ulong j = lo + step; j < hi; j += step)
    e = PICK(e, (VT)LOAD(V, x, j * stride), want_max);
  return e;
}

/* The index j of the minimum or the maximum; its value goes to *best. */
inline long NAME(arg_scan)(global const ST *x, ulong stride, ulong lo, ulong step,
                           ulong hi, int want_max, VT *best)
{
  VT e = LOAD(V, x, lo * stride);
  long b = (long)lo;
  for (ulong j = lo + step; j < hi; j += step) {
    VT v = LOAD(V, x, j * stride);
    if (BEATS(v, (long)j, e, b, want_max)) {
      e = v;
      b = (long)j;
    }
  }
  *best = e;
  return b;
}

/* ---- min and max ----------------------------------------------------------- */

/* Stage 1 for both shapes: work-item g takes its share (share_of()). */
#if KILN_BUILDS(kiln_reduce_ext_chunks)
kernel void NAME(kiln_reduce_ext_chunks)(global const ST *x, ulong off, ulong n,
                                         ulong chunk, int want_max, global VT *partial,
                                         global int *some)
{
  size_t g = get_global_id(0);
  share s = share_of(n, chunk);
  some[g] = s.lo < s.hi;
  if (s.lo >= s.hi)
    return;
  partial[g] = NAME(ext_scan)(x + off, 1, s.lo, s.step, s.hi, want_max);
}
#endif

/* Stage 2 of min, max, argmin and argmax: the partials of the chunks that had
 * any elements, in order, in one loop. (Mesa 22's rusticl miscompiled the
 * obvious form, a while loop to the first such chunk and a for loop on from
 * there: it dropped later chunks.) The loop keeps both extremes and
 * want_max picks one after it: Mesa warns when a kernel argument is read
 * under a condition that depends on data. */
#if KILN_BUILDS(kiln_reduce_ext_final)
kernel void NAME(kiln_reduce_ext_final)(global const VT *partial, global const int *some,
                                        ulong np, int want_max, global ST *out,
                                        ulong out_off)
{
  VT lo = 0, hi = 0;
  int have = 0;
  for (ulong i = 0; i < np; i++)
    if (some[i]) {
      VT v = partial[i];
      lo = have ? PICK(lo, v, 0) : v;
      hi = have ? PICK(hi, v, 1) : v;
      have = 1;
    }
  STORE(V, want_max ? hi : lo, out, out_off);
}
#endif

#if KILN_BUILDS(kiln_reduce_ext_axis)
kernel void NAME(kiln_reduce_ext_axis)(global const ST *x, ulong off, ulong len,
                                       ulong inner, int want_max, global ST *out,
                                       ulong out_off)
{
  size_t o = get_global_id(1), i = get_global_id(0);
  if (i >= inner)
    return;
  global const ST *p = x + off + o * len * inner + i;
  VT e = NAME(ext_scan)(p, inner, 0, 1, len, want_max);
  STORE(V, e, out, out_off + o * inner + i);
}
#endif

/* ---- argmin and argmax ----------------------------------------------------- */

#if KILN_BUILDS(kiln_reduce_arg_chunks)
kernel void NAME(kiln_reduce_arg_chunks)(global const ST *x, ulong off, ulong n,
                                         ulong chunk, int want_max, global VT *pv,
                                         global long *pi)
{
  size_t g = get_global_id(0);
  share s = share_of(n, chunk);
  pi[g] = -1; /* no element */
  if (s.lo >= s.hi)
    return;
  VT e;
  long b = NAME(arg_scan)(x + off, 1, s.lo, s.step, s.hi, want_max, &e);
  pv[g] = e;
  pi[g] = b;
}
#endif

#if KILN_BUILDS(kiln_reduce_arg_final)
kernel void NAME(kiln_reduce_arg_final)(global const VT *pv, global const long *pi,
                                        ulong np, int want_max, global long *out,
                                        ulong out_off)
{
  VT elo = 0, ehi = 0;
  long blo = -1, bhi = -1;
  for (ulong i = 0; i < np; i++) {
    long j = pi[i];
    if (j < 0)
      continue;
    VT v = pv[i];
    if (blo < 0 || BEATS(v, j, elo, blo, 0)) {
      elo = v;
      blo = j;
    }
    if (bhi < 0 || BEATS(v, j, ehi, bhi, 1)) {
      ehi = v;
      bhi = j;
    }
  }
  out[out_off] = want_max ? bhi : blo;
}
#endif

#if KILN_BUILDS(kiln_reduce_arg_axis)
kernel void NAME(kiln_reduce_arg_axis)(global const ST *x, ulong off, ulong len,
                                       ulong inner, int want_max, global long *out,
                                       ulong out_off)
{
  size_t o = get_global_id(1), i = get_global_id(0);
  if (i >= inner)
    return;
  global const ST *p = x + off + o * len * inner + i;
  VT e;
  out[out_off + o * inner + i] = NAME(arg_scan)(p, inner, 0, 1, len, want_max, &e);
}
#endif

#undef V
#undef ST
#undef VT
#undef OT
#undef IS_NAN
#undef SUMS
#undef VEC16
#undef VEC8
#endif /* V */
