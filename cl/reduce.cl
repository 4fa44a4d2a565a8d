/*
 * reduce.cl — sum, mean, norm, min, max, argmin and argmax.
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

/* The GPU shape's view of n elements from offset off: `head` elements up to
 * the first 16-byte boundary (a buffer starts on one), `nv` whole 16-byte
 * vectors of gv elements, and the scalar tail from `tail` to n. Work-item g
 * of gs reads vectors g, g + gs, ...: neighbours read neighbouring vectors,
 * each a single 16-byte load. */
typedef struct {
  ulong head, nv, tail;
} span;

inline span span_of(ulong off, ulong n, ulong gv)
{
  span s;
  s.head = min(n, (gv - off % gv) % gv);
  s.nv = (n - s.head) / gv;
  s.tail = s.head + s.nv * gv;
  return s;
}

/* Combines a group's WG values in local memory, pairs at distance w for w
 * = WG/2 ... 1: `step` merges entry l + w into entry l. Entry 0 holds the
 * result for work-item 0 (which did the last step) alone. No sub-groups:
 * NVIDIA's OpenCL has no cl_khr_subgroups, and the tree runs once a group
 * after thousands of loads. */
#define TREE(l, step)                                                          \
  for (uint w = WG / 2; w > 0; w /= 2) {                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                              \
    if ((l) < w)                                                               \
      step;                                                                    \
  }

/* The GPU shape runs rows of a view side by side (dimension 1, a row of
 * groups each): group (g, row)'s partial, and the row a stage 2 group
 * merges. */
inline size_t slot(void)
{
  return get_group_id(1) * get_num_groups(0) + get_group_id(0);
}

/* The loads of the GPU shape's stage 1 in flight at once, a work-item. */
#define GU 4

#endif /* KILN_PASS == 1 */

/* The pass's variant: V names the input's type ST; VT is the type min, max,
 * argmin and argmax compare in, OT the type a sum is written in; SUMS says
 * whether the sums below are this variant's (i32's are written out apart),
 * VEC16 and VEC8 whether stage 1 reads 16 or 8 lanes at a time (CPU). The
 * GPU shape's: GV elements a 16-byte vector, read by GLOAD(p, i) from an
 * aligned p as a GVT of the compare type; EXT_ID the identity of min
 * (want_max 0) or max; VEC_NAN whether the type has NaNs. */
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

/* Stage 1, GPU: group g's work-items sum their grid-stride share of 16-byte
 * vectors, GU loads in flight, each lane its own accumulator (Kahan lanes
 * without fp64), then the scalar head and tail, then the group's tree. */
#define ACCV CAT(ACC, GA)
#define TO_ACCV CAT(convert_, ACCV)
#define VTERM(v, mode) ((mode) == 2 ? (v) * (v) : (v))
/* GA accumulator lanes: a half8 adds as two halves, as a double8 would
 * cross builtins' calls (above). */
#if GV > 4
#define GA 4
#define ADDV(s, c, v, mode)                                                    \
  do {                                                                         \
    ACCV lo_ = TO_ACCV((v).lo), hi_ = TO_ACCV((v).hi);                         \
    VKADD(s, c, VTERM(lo_, mode));                                             \
    VKADD(s, c, VTERM(hi_, mode));                                             \
  } while (0)
#else
#define GA GV
#define ADDV(s, c, v, mode)                                                    \
  do {                                                                         \
    ACCV a_ = TO_ACCV(v);                                                      \
    VKADD(s, c, VTERM(a_, mode));                                              \
  } while (0)
#endif
#ifdef KILN_HAS_FP64
#define VKADD(s, c, v) ((s) += (v))
#else
#define VKADD(s, c, v)                                                         \
  do {                                                                         \
    ACCV y_ = (v) - (c), t_ = (s) + y_;                                        \
    (c) = select((ACCV)0, (t_ - (s)) - y_, isfinite(t_));                      \
    (s) = t_;                                                                  \
  } while (0)
#endif
#if KILN_BUILDS(kiln_reduce_sum_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_sum_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int mode, global ACC *partial)
{
  local ACC part[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const ST *p = x + off, *a = p + sp.head;
  ACCV s = 0, c = 0;
  (void)chunk;
  for (; i + (GU - 1) * gs < sp.nv; i += GU * gs) {
    GVT v0 = GLOAD(a, i), v1 = GLOAD(a, i + gs), v2 = GLOAD(a, i + 2 * gs),
        v3 = GLOAD(a, i + 3 * gs);
    ADDV(s, c, v0, mode);
    ADDV(s, c, v1, mode);
    ADDV(s, c, v2, mode);
    ADDV(s, c, v3, mode);
  }
  for (; i < sp.nv; i += gs) {
    GVT v = GLOAD(a, i);
    ADDV(s, c, v, mode);
  }
  (void)c;
  ACC lane[GA];
  CAT(vstore, GA)(s, 0, lane);
  ksum k = {0, 0};
  for (int j = 0; j < GA; j++)
    k = kadd(k, lane[j]);
  for (ulong j = g; j < sp.head; j += gs)
    k = kadd(k, TERM(LOAD(V, p, j), mode));
  for (ulong j = sp.tail + g; j < n; j += gs)
    k = kadd(k, TERM(LOAD(V, p, j), mode));
  part[l] = k.s;
  TREE(l, part[l] += part[l + w])
  if (l == 0)
    partial[slot()] = part[0];
}
#endif

/* Stage 2, GPU: one group adds the partials, each work-item every WG-th,
 * then the tree; mean or norm. */
#if KILN_BUILDS(kiln_reduce_sum_merge)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_sum_merge)(global const ACC *partial, ulong np, ulong n, int mode,
                            global OT *out, ulong out_off)
{
  local ACC part[WG];
  uint l = get_local_id(0);
  ksum k = {0, 0};
  partial += get_group_id(1) * np; /* the row */
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    k = kadd(k, partial[i]);
  part[l] = k.s;
  TREE(l, part[l] += part[l + w])
  if (l == 0)
    out[out_off] = (OT)FINISH(part[0], n, mode);
}
#endif
#undef ACCV
#undef TO_ACCV
#undef VTERM
#undef VKADD
#undef GA
#undef ADDV

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

/* Stage 1, GPU: as the float sums' (above), in long4 (a norm: double4). */
#if KILN_WANTS(kiln_reduce_sum_groups_i32)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
kiln_reduce_sum_groups_i32(global const int *x, ulong off, ulong n, ulong chunk, int mode,
                           global isum *partial)
{
  local isum part[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const int *p = x + off, *a = p + sp.head;
  long4 s = 0;
#ifdef KILN_HAS_FP64
  double4 q = 0;
#endif
  (void)chunk;
  for (; i < sp.nv; i += gs) {
    int4 v = GLOAD(a, i);
#ifdef KILN_HAS_FP64
    if (mode == 2) {
      double4 d = convert_double4(v);
      q += d * d;
      continue;
    }
#endif
    s += convert_long4(v);
  }
  isum k;
#ifdef KILN_HAS_FP64
  if (mode == 2)
    k.d = q.s0 + q.s1 + q.s2 + q.s3;
  else
#endif
    k.l = s.s0 + s.s1 + s.s2 + s.s3;
  for (ulong j = g; j < sp.head; j += gs)
    k = iadd(k, p[j], mode);
  for (ulong j = sp.tail + g; j < n; j += gs)
    k = iadd(k, p[j], mode);
  part[l] = k;
  TREE(l, part[l] = iplus(part[l], part[l + w], mode))
  if (l == 0)
    partial[slot()] = part[0];
}
#endif

/* Stage 2, GPU: one group, as the float sums'. */
#if KILN_WANTS(kiln_reduce_sum_merge_i32)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
kiln_reduce_sum_merge_i32(global const isum *partial, ulong np, ulong n, int mode,
                          global void *out, ulong out_off)
{
  local isum part[WG];
  uint l = get_local_id(0);
  isum k = {0};
  partial += get_group_id(1) * np; /* the row */
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    k = iplus(k, partial[i], mode);
  part[l] = k;
  TREE(l, part[l] = iplus(part[l], part[l + w], mode))
  if (l == 0)
    put_i32(out, out_off, part[0], n, mode);
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

/* Stage 1, GPU: group g's work-items pick from their grid-stride share of
 * vectors lane by lane (PICKV), from the identity EXT_ID, which any value
 * or NaN displaces; then the head and tail, then the group's tree. some[g]
 * says whether the group read any element. */
#if VEC_NAN
#define PICKV(e, v, want_max)                                                  \
  select(select((want_max) ? max(e, v) : min(e, v), v, isnan(v)), e, isnan(e))
#else
#define PICKV(e, v, want_max) ((want_max) ? max(e, v) : min(e, v))
#endif
#if KILN_BUILDS(kiln_reduce_ext_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_ext_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int want_max, global VT *partial, global int *some)
{
  local VT part[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const ST *p = x + off, *a = p + sp.head;
  GVT e = (GVT)(EXT_ID(want_max));
  (void)chunk;
  for (; i + (GU - 1) * gs < sp.nv; i += GU * gs) {
    GVT v0 = GLOAD(a, i), v1 = GLOAD(a, i + gs), v2 = GLOAD(a, i + 2 * gs),
        v3 = GLOAD(a, i + 3 * gs);
    e = PICKV(e, v0, want_max);
    e = PICKV(e, v1, want_max);
    e = PICKV(e, v2, want_max);
    e = PICKV(e, v3, want_max);
  }
  for (; i < sp.nv; i += gs) {
    GVT v = GLOAD(a, i);
    e = PICKV(e, v, want_max);
  }
  VT lane[GV], r = EXT_ID(want_max);
  CAT(vstore, GV)(e, 0, lane);
  for (int j = 0; j < GV; j++)
    r = PICK(r, lane[j], want_max);
  for (ulong j = g; j < sp.head; j += gs)
    r = PICK(r, (VT)LOAD(V, p, j), want_max);
  for (ulong j = sp.tail + g; j < n; j += gs)
    r = PICK(r, (VT)LOAD(V, p, j), want_max);
  part[l] = r;
  TREE(l, part[l] = PICK(part[l], part[l + w], want_max))
  if (l == 0) {
    ulong first = (ulong)get_group_id(0) * WG; /* the group's first work-item */
    partial[slot()] = part[0];
    some[slot()] = first < sp.nv || first < sp.head || sp.tail + first < n;
  }
}
#endif

/* Stage 2, GPU: one group picks from the partials of the groups that read
 * any element. */
#if KILN_BUILDS(kiln_reduce_ext_merge)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_ext_merge)(global const VT *partial, global const int *some, ulong np,
                            int want_max, global ST *out, ulong out_off)
{
  local VT part[WG];
  uint l = get_local_id(0);
  VT r = EXT_ID(want_max);
  partial += get_group_id(1) * np; /* the row */
  some += get_group_id(1) * np;
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    if (some[i])
      r = PICK(r, partial[i], want_max);
  part[l] = r;
  TREE(l, part[l] = PICK(part[l], part[l + w], want_max))
  if (l == 0)
    STORE(V, part[0], out, out_off);
}
#endif
#undef PICKV

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

/* (v, j) into the best (*e, *b) so far; *b < 0: none yet. Ties and NaNs
 * go to the smaller index, so the order of the calls does not matter. */
inline void NAME(arg_take)(VT v, long j, VT *e, long *b, int want_max)
{
  if (*b < 0 || BEATS(v, j, *e, *b, want_max)) {
    *e = v;
    *b = j;
  }
}

/* A vector's GV lanes, elements j0, j0 + 1, ... */
inline void NAME(arg_lanes)(GVT v, long j0, VT *e, long *b, int want_max)
{
  VT lane[GV];
  CAT(vstore, GV)(v, 0, lane);
  for (int k = 0; k < GV; k++)
    NAME(arg_take)(lane[k], j0 + k, e, b, want_max);
}

/* Stage 1, GPU: as min and max's, with indices; pi[g] is -1 where group g
 * read no element. */
#if KILN_BUILDS(kiln_reduce_arg_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_arg_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int want_max, global VT *pv, global long *pi)
{
  local VT lv[WG];
  local long li[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const ST *p = x + off, *a = p + sp.head;
  VT e = 0;
  long b = -1;
  (void)chunk;
  for (; i + gs < sp.nv; i += 2 * gs) {
    GVT v0 = GLOAD(a, i), v1 = GLOAD(a, i + gs);
    NAME(arg_lanes)(v0, (long)(sp.head + i * GV), &e, &b, want_max);
    NAME(arg_lanes)(v1, (long)(sp.head + (i + gs) * GV), &e, &b, want_max);
  }
  for (; i < sp.nv; i += gs)
    NAME(arg_lanes)(GLOAD(a, i), (long)(sp.head + i * GV), &e, &b, want_max);
  for (ulong j = g; j < sp.head; j += gs)
    NAME(arg_take)(LOAD(V, p, j), (long)j, &e, &b, want_max);
  for (ulong j = sp.tail + g; j < n; j += gs)
    NAME(arg_take)(LOAD(V, p, j), (long)j, &e, &b, want_max);
  lv[l] = e;
  li[l] = b;
  TREE(l, if (li[l + w] >= 0) {
    VT e2 = lv[l];
    long b2 = li[l];
    NAME(arg_take)(lv[l + w], li[l + w], &e2, &b2, want_max);
    lv[l] = e2;
    li[l] = b2;
  })
  if (l == 0) {
    pv[slot()] = lv[0];
    pi[slot()] = li[0];
  }
}
#endif

/* Stage 2, GPU: one group takes the groups' winners. */
#if KILN_BUILDS(kiln_reduce_arg_merge)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_arg_merge)(global const VT *pv, global const long *pi, ulong np,
                            int want_max, global long *out, ulong out_off)
{
  local VT lv[WG];
  local long li[WG];
  uint l = get_local_id(0);
  VT e = 0;
  long b = -1;
  pv += get_group_id(1) * np; /* the row */
  pi += get_group_id(1) * np;
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    if (pi[i] >= 0)
      NAME(arg_take)(pv[i], pi[i], &e, &b, want_max);
  lv[l] = e;
  li[l] = b;
  TREE(l, if (li[l + w] >= 0) {
    VT e2 = lv[l];
    long b2 = li[l];
    NAME(arg_take)(lv[l + w], li[l + w], &e2, &b2, want_max);
    lv[l] = e2;
    li[l] = b2;
  })
  if (l == 0)
    out[out_off] = li[0];
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
#undef GV
#undef GVT
#undef GLOAD
#undef EXT_ID
#undef VEC_NAN
#endif /* V */
