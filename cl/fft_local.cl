/*
 * fft_local.cl — kiln's own FFT on GPUs: whole sequences of up to
 * KILN_FFT_LPOINTS complex points (float32; half that many of float64)
 * transformed in a work-group's local memory, one trip through global
 * memory for every pass of the sequence (src/backends/kiln/fft_kiln.c).
 *
 *   kernel void kiln_fft_local_<type>(global const T *in, ulong in_off,
 *       global T *out, ulong out_off, uint n, uint la, uint lc, uint g,
 *       ulong seqs, ulong sb, uint sa, uint sc, uint st, uint oa, uint oc,
 *       uint ot, int fuse, T sign, global const T *tw, uint tw_n, uint tw_a,
 *       uint tw_f)
 *
 * A launch transforms `seqs` sequences of n = 2^ln points (n <= the local
 * room). Sequence q is (b, a, c) with c = q mod 2^lc, a = (q >> lc) mod
 * 2^la and b the rest; its point t is complex element b sb + a sa + c sc +
 * t st of in (offsets in complex elements from in_off, which is in reals),
 * and output point k goes to b sb + a oa + c oc + k ot of out. That one
 * form covers every launch of the plan: a whole row (A = C = 1, st = 1), a
 * whole column of an (n, C) array (st = C), and the two steps of a longer
 * sequence N = N1 N2 (the four-step split, no transpose: step 1 the N2
 * strided DFTs of length N1, a = j2; step 2 the N1 contiguous DFTs of length
 * N2, written N1 apart). With `fuse`, output k of sequence (b, a, c) is
 * multiplied by exp(sign 2 pi i a k / (n 2^la)) — step 1's twiddle — as
 * the product of tw_a's entry (a k) >> ln (the table of length 2^la) and
 * tw_f's entry (a k) mod n (exp(2 pi i j / (n 2^la)), j < n): two table
 * entries, each correctly rounded, for any length.
 *
 * A work-group of g n / R work-items (R = KILN_FFT_LRADIX: 4, 8 or 16)
 * takes g neighbouring sequences: it reads them into local memory, along
 * the sequences where their neighbours are adjacent in memory (columns,
 * step 1) and else along the points (rows), so that the loads of a warp are
 * contiguous either way, and writes them back the same way. In between run
 * the Stockham passes of radix R (the last of radix n / p where fewer than R
 * points are left to combine, p the product of the radices before): each
 * work-item reads R points of local memory into registers (R / Rs
 * butterflies of the pass's radix Rs), multiplies point r of butterfly k by
 * w^(r k), reads from tw_n's table of exp(2 pi i j / n) at j = r k n / (p Rs)
 * (never a product: each twiddle correctly rounded), runs the length-Rs DFT
 * in registers, and after a barrier writes point r to (i - k) Rs + k + r p.
 * Real and imaginary parts live in two local arrays of S, so that a warp's
 * 32-bit accesses fall on distinct banks wherever their indices do, and
 * each sequence's points are rotated by its index (KILN_FFTL_AT), so that
 * reads across sequences do not all meet one bank.
 *
 * tw holds (cos, sin) pairs of 2 pi j / N for the tables above, tw_n, tw_a
 * and tw_f their first reals; sign -1 forward, +1 inverse (unscaled).
 * Read twice after cl/prelude.cl (which says how): f32, and f64 where the
 * device has it.
 */
#ifndef KILN_PRELUDE
#error "cl/fft_local.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 2
#if !defined(KILN_FFT_LPOINTS) || !defined(KILN_FFT_LRADIX)
#error "KILN_FFT_LPOINTS and KILN_FFT_LRADIX come from kiln (src/tuning/tuning.c)"
#endif

#if KILN_PASS == 1
/* Index r of a length-len bit reversal; constant once unrolled. */
inline uint kiln_fftl_bitrev(uint r, uint len)
{
  uint b = 0;
  for (uint t = 1; t < len; t <<= 1, r >>= 1)
    b = (b << 1) | (r & 1);
  return b;
}
#endif

#if KILN_PASS == 1
#define V f32
#define S float
#define LIT(x) x##f
#define LPOINTS KILN_FFT_LPOINTS
#elif KILN_PASS == 2 && defined(KILN_HAS_FP64)
#define V f64
#define S double
#define LIT(x) x
#define LPOINTS (KILN_FFT_LPOINTS / 2)
#endif

#ifdef V
/* cos(2 pi j / 16) for j <= 4, folded once the loops unroll. */
#define KILN_FFTL_C16(j) \
  ((j) == 0 ? LIT(1.0) : (j) == 1 ? LIT(0.92387953251128676) : \
   (j) == 2 ? LIT(0.70710678118654752) : (j) == 3 ? LIT(0.38268343236508977) : LIT(0.0))

/* The length-len DFT (len <= 16) of xr[o..o+len), xi[..], in place:
 * radix-2 decimation-in-frequency butterflies, output in bit-reversed
 * order; their twiddles exp(sign 2 pi i m / 16) are constants. */
#define KILN_FFTL_DFT(len, o, xr, xi) \
  _Pragma("unroll") for (uint h_ = (len) / 2; h_ >= 1; h_ >>= 1) \
  _Pragma("unroll") for (uint b_ = 0; b_ < (len); b_ += 2 * h_) \
  _Pragma("unroll") for (uint j_ = 0; j_ < h_; j_++) { \
    uint u_ = (o) + b_ + j_, v_ = u_ + h_, m_ = j_ * (8 / h_); \
    S ur = xr[u_], ui = xi[u_], vr = xr[v_], vi = xi[v_]; \
    S dr = ur - vr, di = ui - vi; \
    xr[u_] = ur + vr; \
    xi[u_] = ui + vi; \
    if (m_ == 0) { \
      xr[v_] = dr; \
      xi[v_] = di; \
    } else { \
      S c_ = m_ <= 4 ? KILN_FFTL_C16(m_) : -KILN_FFTL_C16(8 - m_); \
      S s_ = sign * (m_ <= 4 ? KILN_FFTL_C16(4 - m_) : KILN_FFTL_C16(m_ - 4)); \
      xr[v_] = dr * c_ - di * s_; \
      xi[v_] = dr * s_ + di * c_; \
    } \
  }

/* One Stockham pass of radix RS over the group's sequences in lr, li, R /
 * RS butterflies a work-item (see the header), in two halves with a barrier
 * between them, outside any branch (PoCL needs barriers in the loop, not in
 * its branches): KILN_FFTL_READ takes the points into xr, xi (twiddled and
 * transformed), KILN_FFTL_WRITE puts them back where they go. */
#define KILN_FFTL_READ(RS) \
  { \
    uint lq = ln - kiln_fftl_log2(RS), q = 1u << lq, step = n / (p * (RS)); \
    _Pragma("unroll") for (uint j = 0; j < KILN_FFT_LRADIX / (RS); j++) { \
      uint b = lid + j * wg, s = b >> lq, i = b & (q - 1), k = i & (p - 1); \
      _Pragma("unroll") for (uint r = 0; r < (RS); r++) { \
        uint at = KILN_FFTL_AT(s, i + r * q), o = j * (RS) + r; \
        S pr = lr[at], pi = li[at]; \
        if (r && k) { \
          global const S *w = tw + tw_n + 2 * (r * k * step); \
          S wr = w[0], wi = sign * w[1]; \
          S tr = pr * wr - pi * wi; \
          pi = pr * wi + pi * wr; \
          pr = tr; \
        } \
        xr[o] = pr; \
        xi[o] = pi; \
      } \
      KILN_FFTL_DFT(RS, j * (RS), xr, xi) \
    } \
  }
#define KILN_FFTL_WRITE(RS) \
  { \
    uint lq = ln - kiln_fftl_log2(RS), q = 1u << lq; \
    _Pragma("unroll") for (uint j = 0; j < KILN_FFT_LRADIX / (RS); j++) { \
      uint b = lid + j * wg, s = b >> lq, i = b & (q - 1), k = i & (p - 1); \
      _Pragma("unroll") for (uint r = 0; r < (RS); r++) { \
        uint at = KILN_FFTL_AT(s, (i - k) * (RS) + k + r * p); \
        uint o = j * (RS) + kiln_fftl_bitrev(r, RS); \
        lr[at] = xr[o]; \
        li[at] = xi[o]; \
      } \
    } \
  }
/* Where point t of the group's sequence s lives in lr and li: each
 * sequence's points rotated by s, so that the same point of neighbouring
 * sequences (a warp's accesses when it reads across them: columns) falls
 * on distinct banks instead of all n apart on one. */
#define KILN_FFTL_AT(s, t) (((s) << ln) + (((t) + (s)) & (n - 1)))

/* Either half for the pass's radix rs, a literal in each branch. */
#if KILN_FFT_LRADIX >= 16
#define KILN_FFTL_R16(H) if (rs == 16) H(16) else
#else
#define KILN_FFTL_R16(H)
#endif
#if KILN_FFT_LRADIX >= 8
#define KILN_FFTL_R8(H) if (rs == 8) H(8) else
#else
#define KILN_FFTL_R8(H)
#endif
#define KILN_FFTL_HALF(H) KILN_FFTL_R16(H) KILN_FFTL_R8(H) if (rs == 4) H(4) else H(2)

#if KILN_PASS == 1
#define kiln_fftl_log2(x) ((x) == 16 ? 4u : (x) == 8 ? 3u : (x) == 4 ? 2u : 1u)
#endif

#if KILN_BUILDS(kiln_fft_local)
kernel void NAME(kiln_fft_local)(global const S *in, ulong in_off, global S *out,
                                 ulong out_off, uint n, uint la, uint lc, uint g,
                                 ulong seqs, ulong sb, uint sa, uint sc, uint st,
                                 uint oa, uint oc, uint ot, int fuse, S sign,
                                 global const S *tw, uint tw_n, uint tw_a, uint tw_f)
{
  local S lr[LPOINTS], li[LPOINTS];
  in += in_off;
  out += out_off;
  uint lid = get_local_id(0), wg = get_local_size(0), all = g * n;
  uint ln = 31 - clz(n), lg = 31 - clz(g); /* n and g are powers of two */
  ulong q0 = (ulong)get_group_id(0) * g;
  uint cmask = (1u << lc) - 1, amask = (1u << la) - 1;
  /* Sequences side by side in memory: read and write along them. */
  int in_across = (lc ? sc : sa) == 1, out_across = (lc ? oc : oa) == 1;
  for (uint f = lid; f < all; f += wg) {
    uint s = in_across ? f & (g - 1) : f >> ln, t = in_across ? f >> lg : f & (n - 1);
    ulong qq = q0 + s;
    if (qq < seqs) {
      ulong at = (qq >> (lc + la)) * sb + ((uint)(qq >> lc) & amask) * (ulong)sa +
                 ((uint)qq & cmask) * (ulong)sc + t * (ulong)st;
      lr[KILN_FFTL_AT(s, t)] = in[2 * at];
      li[KILN_FFTL_AT(s, t)] = in[2 * at + 1];
    } else { /* past the last sequence: transformed like the rest, never stored */
      lr[KILN_FFTL_AT(s, t)] = 0;
      li[KILN_FFTL_AT(s, t)] = 0;
    }
  }
  for (uint p = 1; p < n;) {
    uint rs = n / p < KILN_FFT_LRADIX ? n / p : KILN_FFT_LRADIX;
    S xr[KILN_FFT_LRADIX], xi[KILN_FFT_LRADIX];
    barrier(CLK_LOCAL_MEM_FENCE);
    KILN_FFTL_HALF(KILN_FFTL_READ)
    barrier(CLK_LOCAL_MEM_FENCE);
    KILN_FFTL_HALF(KILN_FFTL_WRITE)
    p *= rs;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint f = lid; f < all; f += wg) {
    uint s = out_across ? f & (g - 1) : f >> ln, k = out_across ? f >> lg : f & (n - 1);
    ulong qq = q0 + s;
    if (qq < seqs) {
      uint a = (uint)(qq >> lc) & amask;
      ulong at = (qq >> (lc + la)) * sb + a * (ulong)oa + ((uint)qq & cmask) * (ulong)oc +
                 k * (ulong)ot;
      S vr = lr[KILN_FFTL_AT(s, k)], vi = li[KILN_FFTL_AT(s, k)];
      if (fuse) { /* exp(sign 2 pi i a k / (n 2^la)) as two table entries */
        uint u = a * k;
        global const S *h = tw + tw_a + 2 * (u >> ln), *l = tw + tw_f + 2 * (u & (n - 1));
        S hr = h[0], hi = sign * h[1], wr = l[0], wi = sign * l[1];
        S cr = hr * wr - hi * wi, ci = hr * wi + hi * wr;
        S tr = vr * cr - vi * ci;
        vi = vr * ci + vi * cr;
        vr = tr;
      }
      out[2 * at] = vr;
      out[2 * at + 1] = vi;
    }
  }
}
#endif
#undef V
#undef S
#undef LIT
#undef LPOINTS
#endif /* V */
