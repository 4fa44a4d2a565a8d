/*
 * fft.cl — kiln's own FFT: one radix-R pass of a Stockham autosort FFT over
 * complex rows of a power-of-two length n, batched (src/ops/fft_kiln.c).
 *
 *   kernel void kiln_fft_r<R>_<type>(global const T *in, ulong in_off,
 *                                    global T *out, ulong out_off,
 *                                    uint p, uint n, T sign, global const T *tw)
 *   kernel void kiln_fft_r32w_<type>(...the same)
 *   kernel void kiln_fft_r<R>v_f32(...the same, p >= 8)
 *   kernel void kiln_fft_r256v_f32(...the same, p >= 8)
 *   kernel void kiln_fft_r16v1_f32(...the same, p = 1 only)
 *   kernel void kiln_fft_r256v1_f32(...the same, p = 1 only)
 *   kernel void kiln_fft_rowv_f32(...the same, every pass of a row, p unused)
 *   kernel void kiln_fft_col_r<R>_<type>(global const T *in, ulong in_off,
 *                                        global T *out, ulong out_off,
 *                                        uint p, uint n, uint cols, T sign,
 *                                        global const T *tw)
 *
 * in_off and out_off are where in and out start in their buffers, in reals:
 * a view's first element (kiln passes a view as its buffer and an offset,
 * never as an OpenCL sub-buffer), else 0.
 *
 * R is 2, 4, 8 or 32 (the wide r32w: 32; the vector r<R>v: 2, 4, 8, 16
 * and 256); T is float (f32) or double (f64); complex numbers are
 * (re, im) pairs of T. Work-item (i, b) for i < n/R takes the R points
 * in[i + r n/R] of row b, multiplies point r by w^r, w = exp(-2 pi i k /
 * (p R)), k = i mod p (conjugated by the kernel for sign +1), runs a
 * length-R DFT in registers and writes point r to
 * out[(i - k) R + k + r p]. p is the product of the radices of the passes
 * before; after the passes n = R1 R2 ... the row is the DFT of the input, in
 * natural order, without a bit-reversal pass. sign is -1 forward, +1 inverse
 * (unscaled).
 *
 * kiln_fft_col_r<R> is the same pass over the columns of (n, cols) arrays
 * (the axes of 2-D and 3-D transforms other than the last, src/ops/
 * fft_kiln.c): point t of column c is at t cols + c, and work-item (c, i, b)
 * is work-item (i, b) of column c. Neighbouring work-items are neighbouring
 * columns, so every read and write of a vector of them is contiguous at
 * every stride p, and the twiddle is the same for all of them; no
 * transpose, no extra trip through memory.
 *
 * Why it is written like this: reads of consecutive work-items are
 * consecutive for every r, and so are writes once p is at least the SIMD
 * width (the wide kernels are indexed so that the compiler can see it), which
 * lets PoCL vectorise across work-items; the code is scalar
 * (no float2) for the same reason (LLVM's loop vectoriser skips vector-typed
 * instructions); and the twiddle comes from a table, not sincos(), whose
 * out-of-line argument reduction also blocks vectorisation. Every loop has a
 * constant trip count and is unrolled, so the R points live in registers.
 * Radix 16 is left out: on PoCL 3.1 its pass did not vectorise and ran at a
 * third of radix 32's speed (a 16 is done as 4 x 4). Two radix-32 passes
 * fused through local memory (half the trips through global memory) ran
 * 1.5 to 1.8 times slower on PoCL, which splits a kernel at its barrier, so
 * every pass is its own launch; radix 128 (three passes for 2^20 instead of
 * four) spilled its registers and ran at half the speed.
 *
 * The table tw holds, for each pass of stride p, four arrays of p T at 4p:
 * the real and imaginary parts of w, then of h = w^(R/2), entry k of each
 * at 4p + k, p + 4p + k, ... (arrays, not (w, h) records, so that a vector
 * of work-items loads whole vectors of twiddles): the distinct p of the
 * passes are powers of two, so the ranges [4p, 8p) never overlap. Points r >= R/2 are multiplied by h, then points r
 * and r + R/2 by w^(r mod R/2), a product of w: the error grows as r eps
 * with r < R/2 (16). The first pass (p = 1) has no twiddles.
 *
 * The vector kernels, for float32 rows on CPUs (src/tuning.c), hold 8
 * work-items' points in float8s, one work-item of 8 lanes doing what 8
 * scalar ones would: the vector code is written out, not left to PoCL's
 * vectoriser, so 16 points of 8 lanes (32 registers of 8 floats) stay in
 * registers, where radix 32 vectorised across 16 work-items (64 registers
 * of 16) spilled. kiln_fft_r<R>v runs the passes of stride p >= 8 over (k /
 * 8, block, row): its loads, twiddles and stores are whole vectors of 8
 * neighbouring points. kiln_fft_r16v1 is the first pass (p = 1) over (i /
 * 8, row), whose outputs are each work-item's 16 points side by side: it
 * transposes its 8 lanes' points in registers before whole-vector stores.
 * kiln_fft_r256v does two radix-16 passes' work in one trip through memory
 * (its comment says how); kiln_fft_r256v1 is its first pass (p = 1), which
 * stores like r16v1 from its private array (2^16 takes two passes, 256 and
 * 256, instead of 16, 256 and 16). On PoCL a radix-16 vector pass took
 * about half the time of radix 32 vectorised by PoCL (docs/performance.md,
 * "FFT").
 *
 * Read 26 times after cl/prelude.cl (which says how), one kernel a pass,
 * each with its R a literal: for f32 r2, r4, r8, r32, r32w and the column
 * kernels col_r2, col_r4, col_r8 and col_r32; the same for f64, where the
 * device has it; then f32's vector kernels r2v, r4v, r8v, r16v, r16v1,
 * r256v, rowv (whole rows of up to KILN_FFT_ROW_MAX points, its comment
 * says how) and r256v1.
 * The first pass of a type also holds its butterflies' constant twiddles
 * (kiln_fft_cos8) and the real-transform kernels.
 */
#ifndef KILN_PRELUDE
#error "cl/fft.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 26
#ifndef KILN_FFT_ROW_MAX /* the longest row kiln_fft_rowv takes, src/tuning.h's */
#error "KILN_FFT_ROW_MAX comes from kiln (src/tuning.c)"
#endif

#if KILN_PASS == 1
/* Index r of a length-len bit reversal; constant once unrolled. */
inline uint kiln_fft_bitrev(uint r, uint len)
{
  uint b = 0;
  for (uint t = 1; t < len; t <<= 1, r >>= 1)
    b = (b << 1) | (r & 1);
  return b;
}

/* The length-len DFT (len <= 32) of xr and xi, arrays of TT, in place:
 * len/2 log2 len radix-2 decimation-in-frequency butterflies, whose output
 * is in bit-reversed order. Their twiddles exp(sign 2 pi i m / 32) come from
 * kiln_fft_cos8 of the pass's type S. A macro, so that the arrays stay in
 * registers. */
#define KILN_FFT_DFT(len, TT, xr, xi) \
  _Pragma("unroll") for (uint h = (len) / 2; h >= 1; h >>= 1) \
  _Pragma("unroll") for (uint b = 0; b < (len); b += 2 * h) \
  _Pragma("unroll") for (uint j = 0; j < h; j++) { \
    TT ur = xr[b + j], ui = xi[b + j], vr = xr[b + j + h], vi = xi[b + j + h]; \
    TT dr = ur - vr, di = ui - vi; \
    uint m = j * (16 / h); \
    xr[b + j] = ur + vr; \
    xi[b + j] = ui + vi; \
    if (m == 0) { /* 1 */ \
      xr[b + j + h] = dr; \
      xi[b + j + h] = di; \
    } else if (m == 8) { /* sign i */ \
      xr[b + j + h] = -sign * di; \
      xi[b + j + h] = sign * dr; \
    } else { \
      S c = m <= 8 ? NAME(kiln_fft_cos8)(m) : -NAME(kiln_fft_cos8)(16 - m); \
      S sn = m <= 8 ? NAME(kiln_fft_cos8)(8 - m) : NAME(kiln_fft_cos8)(m - 8); \
      TT tr = (TT)c, ti = (TT)(sign * sn); \
      xr[b + j + h] = dr * tr - di * ti; \
      xi[b + j + h] = dr * ti + di * tr; \
    } \
  }
/* 8 points from the 16 floats (re, im, re, ...) at `at` into xr and xi, and
 * back to o, as two float8s split component by component. Nothing wider
 * than a float8 crosses a call: a float16 argument or result of vload16,
 * vstore16 or shuffle2 is passed in memory where the target has no 512-bit
 * registers (an AVX2 CPU; clang warns that the ABI changes), and float8 is
 * what such a CPU holds in one register. (Not .even and .odd: unoptimised,
 * Oclgrind 21.10 reads their result as uninitialised; not shuffle2 of two
 * vload8s: PoCL's LLVM folded it into 8-byte loads.) */
#define KILN_FFT_LOAD8(at, xr, xi) \
  { \
    float8 a_ = vload8(0, at), b_ = vload8(1, at); \
    xr = (float8)(a_.s0, a_.s2, a_.s4, a_.s6, b_.s0, b_.s2, b_.s4, b_.s6); \
    xi = (float8)(a_.s1, a_.s3, a_.s5, a_.s7, b_.s1, b_.s3, b_.s5, b_.s7); \
  }
#define KILN_FFT_STORE8(xr, xi, o) \
  { \
    vstore8((float8)(xr.s0, xi.s0, xr.s1, xi.s1, xr.s2, xi.s2, xr.s3, xi.s3), 0, o); \
    vstore8((float8)(xr.s4, xi.s4, xr.s5, xi.s5, xr.s6, xi.s6, xr.s7, xi.s7), 1, o); \
  }
/* Multiplies points r of the length-len xr and xi (arrays of TT) by w^r,
 * in place, from w = (cr, ci) and h = w^(len/2) = (hr, hi): points r >=
 * len/2 by h, then points r and r + len/2 by w^(r mod len/2), a product of
 * w. */
#define KILN_FFT_TWIDDLE(len, TT, xr, xi, cr, ci, hr, hi) \
  { \
    _Pragma("unroll") for (uint r = (len) / 2; r < (len); r++) { \
      TT tr = xr[r] * hr - xi[r] * hi, ti = xr[r] * hi + xi[r] * hr; \
      xr[r] = tr; \
      xi[r] = ti; \
    } \
    TT wr = cr, wi = ci; \
    _Pragma("unroll") for (uint r = 1; r < (len) / 2; r++) { \
      TT ar = xr[r] * wr - xi[r] * wi, ai = xr[r] * wi + xi[r] * wr; \
      TT br = xr[r + (len) / 2] * wr - xi[r + (len) / 2] * wi; \
      TT bi = xr[r + (len) / 2] * wi + xi[r + (len) / 2] * wr; \
      xr[r] = ar; \
      xi[r] = ai; \
      xr[r + (len) / 2] = br; \
      xi[r + (len) / 2] = bi; \
      TT nr = wr * cr - wi * ci, ni = wr * ci + wi * cr; \
      wr = nr; \
      wi = ni; \
    } \
  }
/* Transposes the 8 x 8 floats of the float8 v[8], lane u of v[j] to lane j
 * of v[u]: stage d swaps the lanes with bit d set of row j with the lanes
 * with bit d clear of row j + d, for the rows j with bit d clear. */
#define KILN_FFT_STAGE(v, d, m1, m2) \
  _Pragma("unroll") for (uint j = 0; j < 8; j++) if (!(j & d)) { \
    float8 lo = v[j], hi = v[j + d]; \
    v[j] = shuffle2(lo, hi, m1); \
    v[j + d] = shuffle2(lo, hi, m2); \
  }
#define KILN_FFT_TRANSPOSE8(v) \
  KILN_FFT_STAGE(v, 4, (uint8)(0, 1, 2, 3, 8, 9, 10, 11), (uint8)(4, 5, 6, 7, 12, 13, 14, 15)) \
  KILN_FFT_STAGE(v, 2, (uint8)(0, 1, 8, 9, 4, 5, 12, 13), (uint8)(2, 3, 10, 11, 6, 7, 14, 15)) \
  KILN_FFT_STAGE(v, 1, (uint8)(0, 8, 2, 10, 4, 12, 6, 14), (uint8)(1, 9, 3, 11, 5, 13, 7, 15))
#endif

/* The pass's variant: passes 1 to 9 are f32's scalar kernels, 10 to 18
 * f64's, at KILN_FFT_AT 1 to 9 of their type (1 to 4 rows, 5 the wide r32w,
 * 6 to 9 columns, radix 2, 4, 8, 32 each); 19 to 22 the vector kernels r2v
 * to r16v, 23 r16v1, 24 r256v, 25 rowv, 26 r256v1. V names the real type S,
 * LIT makes a literal of type S (float constants need the f suffix where
 * the device has no fp64), T is the type of the points' parts (S, or float8
 * in the vector kernels); R is the radix, WIDE says whether this is r32w,
 * COL whether it is a column kernel, VECTOR whether a vector kernel, VFIRST
 * whether r16v1, R256 whether r256v or r256v1, R256FIRST whether r256v1,
 * ROWV whether rowv, and FIRST whether the pass is its type's first. */
#define VECTOR (KILN_PASS >= 19)
#define VFIRST (KILN_PASS == 23)
#define R256 (KILN_PASS == 24 || KILN_PASS == 26)
#define ROWV (KILN_PASS == 25)
#define R256FIRST (KILN_PASS == 26)
#define KILN_FFT_AT (VECTOR ? 0 : KILN_PASS <= 9 ? KILN_PASS : KILN_PASS - 9)
#if KILN_PASS <= 9 || VECTOR
#define V f32
#define S float
#define LIT(x) x##f
#elif defined(KILN_HAS_FP64)
#define V f64
#define S double
#define LIT(x) x
#endif
#if VECTOR
#define T float8
#else
#define T S
#endif

#if VFIRST || ROWV
#define R 16
#elif R256
#define R 256
#elif VECTOR
#define R (2 << (KILN_PASS - 19))
#elif KILN_FFT_AT == 5
#define R 32
#elif (KILN_FFT_AT - 1) % 5 == 0
#define R 2
#elif (KILN_FFT_AT - 1) % 5 == 1
#define R 4
#elif (KILN_FFT_AT - 1) % 5 == 2
#define R 8
#else
#define R 32
#endif
#define WIDE (KILN_FFT_AT == 5)
#define COL (KILN_FFT_AT >= 6)
#define FIRST (KILN_FFT_AT == 1)

#ifdef V

#if FIRST
/* cos(2 pi j / 32) for j <= 8, in type S: the butterflies' constant
 * twiddles, exp(-2 pi i m / 32) = c(m) - i s(m) with c(m) = cos8(m) and
 * s(m) = cos8(8 - m) for m <= 8, c(m) = -cos8(16 - m) and s(m) = cos8(m - 8)
 * above. A chain of selects rather than a table in constant memory: j is a
 * constant once the loops are unrolled, so it folds away, and Mesa's
 * compiler reaches a program's constant data through a kernel argument,
 * which it warns of reading in control flow ("treating load_kernel_arg in
 * control flow as uniform"). */
inline S NAME(kiln_fft_cos8)(uint j)
{
  return j == 0   ? LIT(1.0)
         : j == 1 ? LIT(0.98078528040323045)
         : j == 2 ? LIT(0.92387953251128676)
         : j == 3 ? LIT(0.83146961230254524)
         : j == 4 ? LIT(0.70710678118654752)
         : j == 5 ? LIT(0.55557023301960222)
         : j == 6 ? LIT(0.38268343236508977)
         : j == 7 ? LIT(0.19509032201612827)
                  : LIT(0.0);
}
#endif

/* The kernel of radix R, T the real type, over the global range (n/R,
 * batch), for work-item i of the row, k = i mod p. R is a literal in the
 * body, so that every loop is unrolled before PoCL vectorises across
 * work-items (R as a parameter of an inline function, even a constant one,
 * left them rolled, several times slower).
 *
 * kiln_fft_r32w is the kernel of radix 32 again over (p, n/(R p), batch),
 * for the passes of stride p >= 16 (src/tuning.c): work-item (k, block) is
 * i = block p + k, the same points, but indexed so that the compiler sees
 * that neighbouring work-items touch neighbouring points and twiddles. The
 * smaller radices run first, at p = 1 or 4, where they need no such help.
 * The vector kernels: the header comment. */
#if COL
#if R == 2
#define FNAME kiln_fft_col_r2
#elif R == 4
#define FNAME kiln_fft_col_r4
#elif R == 8
#define FNAME kiln_fft_col_r8
#else
#define FNAME kiln_fft_col_r32
#endif
#else /* the kernels of rows */
#if ROWV
#define FNAME kiln_fft_rowv
#elif R256FIRST
#define FNAME kiln_fft_r256v1
#elif R256
#define FNAME kiln_fft_r256v
#elif VFIRST
#define FNAME kiln_fft_r16v1
#elif VECTOR && R == 2
#define FNAME kiln_fft_r2v
#elif VECTOR && R == 4
#define FNAME kiln_fft_r4v
#elif VECTOR && R == 8
#define FNAME kiln_fft_r8v
#elif VECTOR
#define FNAME kiln_fft_r16v
#elif WIDE
#define FNAME kiln_fft_r32w
#elif R == 2
#define FNAME kiln_fft_r2
#elif R == 4
#define FNAME kiln_fft_r4
#elif R == 8
#define FNAME kiln_fft_r8
#else
#define FNAME kiln_fft_r32
#endif
#endif /* COL */
#if KILN_BUILDS(FNAME)
#if COL
kernel void NAME(FNAME)(global const S *in, ulong in_off, global S *out, ulong out_off,
                        uint p, uint n, uint cols, S sign, global const S *tw)
#else
kernel void NAME(FNAME)(global const S *in, ulong in_off, global S *out, ulong out_off,
                        uint p, uint n, S sign, global const S *tw)
#endif
/* each body below starts so: in and out from the views' first reals */
#define KILN_FFT_VIEWS                                                                    \
  in += in_off;                                                                          \
  out += out_off;
#if R256
{
  KILN_FFT_VIEWS
  /* Radix 256 as two radix-16 steps, r = r1 + 16 r2 and output s2 + 16 s1:
   * for each r1, the DFT over r2 of the points times w^r, whose output s2
   * times exp(sign 2 pi i r1 s2 / 256) goes to z (private, in the core's
   * cache: a 16th of it would fill the registers); then for each s2 the DFT
   * over r1 of z, whose output s1 is point s2 + 16 s1. One trip through
   * memory for two radix-16 passes. The table's h is w^16 for this radix,
   * and exp(2 pi i u / 256) for u < 256 follow the passes' entries, at 4 n. */
#if R256FIRST /* p = 1: no twiddles, k = 0 */
  uint i = get_global_id(0) * 8, q = n / R;
  size_t row = get_global_id(1) * (size_t)n * 2;
#else
  uint k = get_global_id(0) * 8, i = get_global_id(1) * p + k, q = n / R;
  size_t row = get_global_id(2) * (size_t)n * 2;
  global const S *e = tw + 4 * p + k;
  T cr = vload8(0, e), ci = -sign * vload8(0, e + p), hr = vload8(0, e + 2 * p),
    hi = -sign * vload8(0, e + 3 * p);
  T ar = 1, ai = 0; /* w^r1 */
#endif
  in += row;
  out += row;
  global const S *unit = tw + 4 * n;
  T zr[256], zi[256];
  for (uint r1 = 0; r1 < 16; r1++) {
    T xr[16], xi[16];
#if !R256FIRST
    T br = ar, bi = ai; /* w^(r1 + 16 r2) */
#endif
#pragma unroll
    for (uint r2 = 0; r2 < 16; r2++) {
      global const S *at = in + 2 * (i + (r1 + 16 * r2) * q);
#if R256FIRST
      KILN_FFT_LOAD8(at, xr[r2], xi[r2])
#else
      T pr, pi;
      KILN_FFT_LOAD8(at, pr, pi)
      xr[r2] = pr * br - pi * bi;
      xi[r2] = pr * bi + pi * br;
      T nr = br * hr - bi * hi, ni = br * hi + bi * hr;
      br = nr;
      bi = ni;
#endif
    }
    KILN_FFT_DFT(16, T, xr, xi)
#pragma unroll
    for (uint s2 = 0; s2 < 16; s2++) {
      uint s = kiln_fft_bitrev(s2, 16), u = (r1 * s2) & 255;
      S ur = unit[2 * u], ui = sign * unit[2 * u + 1];
      zr[16 * r1 + s2] = xr[s] * ur - xi[s] * ui;
      zi[16 * r1 + s2] = xr[s] * ui + xi[s] * ur;
    }
#if !R256FIRST
    T nr = ar * cr - ai * ci, ni = ar * ci + ai * cr;
    ar = nr;
    ai = ni;
#endif
  }
#if !R256FIRST
  uint j = (i - k) * R + k;
#endif
  for (uint s2 = 0; s2 < 16; s2++) {
    T xr[16], xi[16];
#pragma unroll
    for (uint r1 = 0; r1 < 16; r1++) {
      xr[r1] = zr[16 * r1 + s2];
      xi[r1] = zi[16 * r1 + s2];
    }
    KILN_FFT_DFT(16, T, xr, xi)
#pragma unroll
    for (uint s1 = 0; s1 < 16; s1++) {
      uint s = kiln_fft_bitrev(s1, 16);
#if R256FIRST /* back into z, point s2 + 16 s1 where 16 s1 + s2 was read */
      zr[s2 + 16 * s1] = xr[s];
      zi[s2 + 16 * s1] = xi[s];
#else
      global S *o = out + 2 * (j + (s2 + 16 * s1) * p);
      KILN_FFT_STORE8(xr[s], xi[s], o);
#endif
    }
  }
#if R256FIRST
  /* Lane u's 256 points go to 256 (i + u): as r16v1's stores, 8 x 8
   * transposes of 4 points' parts at a time, each a vector store. */
  for (uint b = 0; b < R / 4; b++) {
    float8 v[8];
#pragma unroll
    for (uint t = 0; t < 8; t++)
      v[t] = t & 1 ? zi[4 * b + t / 2] : zr[4 * b + t / 2];
    KILN_FFT_TRANSPOSE8(v)
#pragma unroll
    for (uint u = 0; u < 8; u++)
      vstore8(v[u], 0, out + 2 * R * (i + u) + 8 * b);
  }
#endif
}
#elif ROWV
{
  KILN_FFT_VIEWS
  /* Whole rows of n <= KILN_FFT_ROW_MAX points, one a work-item, every pass
   * of the row in one launch: the passes run in the work-item's private
   * arrays (in the core's cache), so the row crosses memory once each way
   * where the other kernels cross it once a pass. The passes
   * are those of the vector kernels: radix 16 at p = 1 (r16v1's, its 8 x 8
   * transposes now putting each lane's points side by side in the private
   * array), radix 16 while more than 16 points are left to combine, then
   * the last radix (2, 4, 8 or 16) into `out`. z[t / 8] holds points t to t
   * + 7 of a stage, real parts in zr and imaginary in zi. */
  size_t row = get_global_id(0) * (size_t)n * 2;
  in += row;
  out += row;
  T zar[KILN_FFT_ROW_MAX / 8], zai[KILN_FFT_ROW_MAX / 8], zbr[KILN_FFT_ROW_MAX / 8],
    zbi[KILN_FFT_ROW_MAX / 8];
  T *zr = zar, *zi = zai, *dr = zbr, *di = zbi;
  uint q = n / 16;
  for (uint i = 0; i < q; i += 8) {
    T xr[16], xi[16];
#pragma unroll
    for (uint r = 0; r < 16; r++) {
      KILN_FFT_LOAD8(in + 2 * (i + r * q), xr[r], xi[r])
    }
    KILN_FFT_DFT(16, T, xr, xi)
    /* point r of item i + u goes to 16 (i + u) + r: lane r % 8 of z[2 (i +
     * u) + r / 8] */
#pragma unroll
    for (uint h = 0; h < 2; h++) {
      T v[8], w[8];
#pragma unroll
      for (uint t = 0; t < 8; t++) {
        v[t] = xr[kiln_fft_bitrev(8 * h + t, 16)];
        w[t] = xi[kiln_fft_bitrev(8 * h + t, 16)];
      }
      KILN_FFT_TRANSPOSE8(v)
      KILN_FFT_TRANSPOSE8(w)
#pragma unroll
      for (uint u = 0; u < 8; u++) {
        zr[2 * (i + u) + h] = v[u];
        zi[2 * (i + u) + h] = w[u];
      }
    }
  }
  uint left = n / 16; /* the points still to combine, at stride p (unused as passed) */
  for (p = 16; left > 16; p *= 16, left /= 16) { /* radix 16, z to d */
    for (uint i = 0; i < q; i += 8) {
      uint k = i & (p - 1), j = (i - k) * 16 + k;
      T xr[16], xi[16];
#pragma unroll
      for (uint r = 0; r < 16; r++) {
        xr[r] = zr[(i + r * q) / 8];
        xi[r] = zi[(i + r * q) / 8];
      }
      global const S *e = tw + 4 * p + k;
      T cr = vload8(0, e), ci = -sign * vload8(0, e + p), hr = vload8(0, e + 2 * p),
        hi = -sign * vload8(0, e + 3 * p);
      KILN_FFT_TWIDDLE(16, T, xr, xi, cr, ci, hr, hi)
      KILN_FFT_DFT(16, T, xr, xi)
#pragma unroll
      for (uint r = 0; r < 16; r++) {
        uint s = kiln_fft_bitrev(r, 16);
        dr[(j + r * p) / 8] = xr[s];
        di[(j + r * p) / 8] = xi[s];
      }
    }
    T *tr = zr, *ti = zi;
    zr = dr;
    zi = di;
    dr = tr;
    di = ti;
  }
  /* The last pass, of radix L = left, z to out: a literal L in each branch,
   * so that its loops unroll. */
#define KILN_FFT_ROW_LAST(L) \
  for (uint i = 0; i < n / (L); i += 8) { \
    uint k = i & (p - 1), j = (i - k) * (L) + k; \
    T xr[L], xi[L]; \
    _Pragma("unroll") for (uint r = 0; r < (L); r++) { \
      xr[r] = zr[(i + r * (n / (L))) / 8]; \
      xi[r] = zi[(i + r * (n / (L))) / 8]; \
    } \
    global const S *e = tw + 4 * p + k; \
    T cr = vload8(0, e), ci = -sign * vload8(0, e + p), hr = vload8(0, e + 2 * p), \
      hi = -sign * vload8(0, e + 3 * p); \
    KILN_FFT_TWIDDLE(L, T, xr, xi, cr, ci, hr, hi) \
    KILN_FFT_DFT(L, T, xr, xi) \
    _Pragma("unroll") for (uint r = 0; r < (L); r++) { \
      uint s = kiln_fft_bitrev(r, L); \
      KILN_FFT_STORE8(xr[s], xi[s], out + 2 * (j + r * p)); \
    } \
  }
  if (left == 16)
    KILN_FFT_ROW_LAST(16)
  else if (left == 8)
    KILN_FFT_ROW_LAST(8)
  else if (left == 4)
    KILN_FFT_ROW_LAST(4)
  else
    KILN_FFT_ROW_LAST(2)
#undef KILN_FFT_ROW_LAST
}
#else /* every other radix */
{
  KILN_FFT_VIEWS
  /* AT(t): where point t of the row or column starts, from `row`. */
#if COL
  uint i = get_global_id(1), k = i & (p - 1);
  size_t row = get_global_id(2) * (size_t)n * cols * 2 + 2 * get_global_id(0);
#define AT(t) (2 * (t) * cols)
#elif VFIRST
  uint i = get_global_id(0) * 8;
  size_t row = get_global_id(1) * (size_t)n * 2;
#elif VECTOR
  uint k = get_global_id(0) * 8, i = get_global_id(1) * p + k;
  size_t row = get_global_id(2) * (size_t)n * 2;
#elif WIDE
  uint i = get_global_id(1) * p + get_global_id(0), k = get_global_id(0);
  size_t row = get_global_id(2) * (size_t)n * 2;
#define AT(t) (2 * (t))
#else
  uint i = get_global_id(0), k = get_global_id(0) & (p - 1);
  size_t row = get_global_id(1) * (size_t)n * 2;
#define AT(t) (2 * (t))
#endif
  in += row;
  out += row;
  uint q = n / R;
  T xr[R], xi[R];
#if VECTOR /* points i to i + 7 of each r, split into their parts */
#pragma unroll
  for (uint r = 0; r < R; r++) {
    KILN_FFT_LOAD8(in + 2 * (i + r * q), xr[r], xi[r])
  }
#else
#pragma unroll
  for (uint r = 0; r < R; r++) {
    xr[r] = in[AT(i + r * q)];
    xi[r] = in[AT(i + r * q) + 1];
  }
#endif
  /* Multiplies points r of x by w^r for the pass of stride p at k (see the
   * table above), in place. */
#if !VFIRST /* the first pass's twiddles are all 1 */
  if (p > 1) {
    global const S *e = tw + 4 * p + k;
#if VECTOR /* k's 8 neighbouring twiddles of each array */
    T cr = vload8(0, e), ci = -sign * vload8(0, e + p), hr = vload8(0, e + 2 * p),
      hi = -sign * vload8(0, e + 3 * p);
#else
    T cr = e[0], ci = -sign * e[p], hr = e[2 * p], hi = -sign * e[3 * p];
#endif
    KILN_FFT_TWIDDLE(R, T, xr, xi, cr, ci, hr, hi)
  }
#endif
  KILN_FFT_DFT(R, T, xr, xi)
#if VFIRST
  /* Point r of item i + u goes to R (i + u) + r: lane u of xr and xi at r
   * is part c = 2 r (real) or 2 r + 1 (imaginary) of that row of 2 R
   * floats. 8 x 8 transposes of (c, u), c in [8 b, 8 b + 8), give each u its
   * floats 8 b to 8 b + 7 as one vector: a vector store, where scalar
   * work-items would scatter every point R apart. */
#pragma unroll
  for (uint b = 0; b < R / 4; b++) {
    float8 v[8];
#pragma unroll
    for (uint t = 0; t < 8; t++) {
      uint s = kiln_fft_bitrev(4 * b + t / 2, R);
      v[t] = t & 1 ? xi[s] : xr[s];
    }
    KILN_FFT_TRANSPOSE8(v)
#pragma unroll
    for (uint u = 0; u < 8; u++)
      vstore8(v[u], 0, out + 2 * R * (i + u) + 8 * b);
  }
#elif VECTOR /* point r of the 8 lanes: 8 neighbouring points, parts interleaved */
  uint j = (i - k) * R + k;
#pragma unroll
  for (uint r = 0; r < R; r++) {
    uint s = kiln_fft_bitrev(r, R);
    KILN_FFT_STORE8(xr[s], xi[s], out + 2 * (j + r * p));
  }
#else
  uint j = (i - k) * R + k;
#pragma unroll
  for (uint r = 0; r < R; r++) {
    uint s = kiln_fft_bitrev(r, R);
    out[AT(j + r * p)] = xr[s];
    out[AT(j + r * p) + 1] = xi[s];
  }
#endif
#undef AT
}
#endif /* R256 */
#undef KILN_FFT_VIEWS
#endif /* KILN_BUILDS(FNAME) */
#undef FNAME

#if FIRST
/* ---- real transforms as complex ones (src/ops/fft_real.c) ----------------
 * For R2C and C2R shapes no backend runs: x real -> (x, 0); the first
 * h = n/2 + 1 points of each complex row of length n; the full Hermitian
 * spectrum from its half (X[-k] = conj X[k] over every axis); real parts.
 * Shapes are (batch, n0, n1, n2) with n2 the last axis, lower ones 1. */
#if KILN_BUILDS(kiln_fft_promote)
kernel void NAME(kiln_fft_promote)(global const T *x, ulong x_off, global T *z,
                                   ulong z_off, ulong count)
{
  x += x_off;
  z += z_off;
  size_t i = get_global_id(0);
  if (i < count) {
    z[2 * i] = x[i];
    z[2 * i + 1] = 0;
  }
}
#endif

#if KILN_BUILDS(kiln_fft_crop)
kernel void NAME(kiln_fft_crop)(global const T *full, ulong full_off, global T *part,
                                ulong part_off, ulong rows, ulong n, ulong h)
{
  full += full_off;
  part += part_off;
  size_t i = get_global_id(0);
  if (i < rows * h) {
    size_t r = i / h, k = i - r * h;
    part[2 * i] = full[2 * (r * n + k)];
    part[2 * i + 1] = full[2 * (r * n + k) + 1];
  }
}
#endif

#if KILN_BUILDS(kiln_fft_extend)
kernel void NAME(kiln_fft_extend)(global const T *part, ulong part_off, global T *full,
                                  ulong full_off, ulong count, ulong n0, ulong n1,
                                  ulong n2)
{
  part += part_off;
  full += full_off;
  size_t i = get_global_id(0);
  if (i >= count)
    return;
  size_t h = n2 / 2 + 1, k = i % n2, rest = i / n2;
  size_t i1 = rest % n1, i0 = rest / n1 % n0, b = rest / n1 / n0;
  T sign = 1;
  if (k >= h) { /* a mirrored point: conjugate of the point at minus the index */
    k = n2 - k;
    i1 = i1 ? n1 - i1 : 0;
    i0 = i0 ? n0 - i0 : 0;
    sign = -1;
  }
  size_t at = ((b * n0 + i0) * n1 + i1) * h + k;
  full[2 * i] = part[2 * at];
  full[2 * i + 1] = sign * part[2 * at + 1];
}
#endif

#if KILN_BUILDS(kiln_fft_real_part)
kernel void NAME(kiln_fft_real_part)(global const T *z, ulong z_off, global T *x,
                                     ulong x_off, ulong count)
{
  z += z_off;
  x += x_off;
  size_t i = get_global_id(0);
  if (i < count)
    x[i] = z[2 * i];
}
#endif
#endif /* FIRST */

#undef V
#undef S
#undef T
#undef LIT
#endif /* V */
#undef R
#undef WIDE
#undef COL
#undef FIRST
#undef KILN_FFT_AT
#undef VECTOR
#undef VFIRST
#undef R256
#undef R256FIRST
#undef ROWV
