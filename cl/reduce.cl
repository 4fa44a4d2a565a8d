/*
 * reduce.cl — the reductions' kernels for every device but the GPU shape's
 * stage 1 and 2: the CPU shape's chunks and final stage, and the axis
 * kernels (a work-item an output, which walks the axis), which every
 * device runs. cl/reduce_common.cl, read before this file in each pass,
 * holds what it shares with cl/reduce_gpu.cl, and says how the stages go.
 */
#ifndef KILN_PRELUDE
#error "cl/reduce.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif

#if KILN_PASS == 1
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

#endif /* V */
