/*
 * conv.cl — 2-D convolution: a direct kernel, im2col into kiln's packed GEMM
 * layout, and the bias and ReLU epilogue.
 *
 * Layouts (the host passes `nhwc`): NCHW x[n][c][h][w], weights
 * [k][c/g][r][s], y[n][k][p][q]; NHWC x[n][h][w][c], weights [k][r][s][c/g],
 * y[n][p][q][k]. Input row hi = pi * sh - pt + ri * dh, column wi likewise;
 * outside the input it reads zero (the padding).
 *
 * Read once per variant after cl/prelude.cl (which says how): f32, f16
 * (half storage, float accumulation) and f64 where the device has fp64.
 */
#ifndef KILN_PRELUDE
#error "cl/conv.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 3

#if KILN_PASS == 1
#define XAT(ni, ci, hi, wi)                                                    \
  (nhwc ? (((ulong)(ni) * h + (hi)) * w + (wi)) * c + (ci)                     \
        : (((ulong)(ni) * c + (ci)) * h + (hi)) * w + (wi))
#define WAT(ki, cj, ri, si)                                                    \
  (nhwc ? (((ulong)(ki) * r + (ri)) * s + (si)) * cg + (cj)                    \
        : (((ulong)(ki) * cg + (cj)) * r + (ri)) * s + (si))
#define YAT(ni, ki, pi, qi)                                                    \
  (nhwc ? (((ulong)(ni) * p + (pi)) * q + (qi)) * k + (ki)                     \
        : (((ulong)(ni) * k + (ki)) * p + (pi)) * q + (qi))
#endif

/* The pass's variant: V names the storage type ST; ACC is the accumulator
 * (float for half and float, double for double), also the compute type of
 * the packed GEMM that im2col feeds. */
#if KILN_PASS == 1
#define V f32
#define ST float
#define ACC float
#elif KILN_PASS == 2
#define V f16
#define ST half
#define ACC float
#elif KILN_PASS == 3 && defined(KILN_HAS_FP64)
#define V f64
#define ST double
#define ACC double
#endif

#ifdef V

/* One output element a work-item, global (q, p, n * k): for few channels a
 * group and depthwise layers, where im2col's matrix would be thin. */
kernel void NAME(kiln_conv_direct)(global const ST *x, global const ST *wt,
                                   global const ST *bias, int has_bias, int relu,
                                   int nhwc, uint n, uint c, uint h, uint w, uint k,
                                   uint r, uint s, uint sh, uint sw, uint pt, uint pl,
                                   uint dh, uint dw, uint groups, uint p, uint q,
                                   global ST *y)
{
  uint qi = get_global_id(0), pi = get_global_id(1), nk = get_global_id(2);
  if (qi >= q || pi >= p)
    return;
  uint ni = nk / k, ki = nk % k, cg = c / groups, kg = k / groups;
  uint c0 = ki / kg * cg;
  ACC acc = 0;
  for (uint ri = 0; ri < r; ri++) {
    int hi = (int)(pi * sh + ri * dh) - (int)pt;
    if (hi < 0 || hi >= (int)h)
      continue;
    for (uint si = 0; si < s; si++) {
      int wi = (int)(qi * sw + si * dw) - (int)pl;
      if (wi < 0 || wi >= (int)w)
        continue;
      for (uint cj = 0; cj < cg; cj++)
        acc += (ACC)LOAD(V, x, XAT(ni, c0 + cj, hi, wi)) *
               (ACC)LOAD(V, wt, WAT(ki, cj, ri, si));
    }
  }
  if (has_bias)
    acc += (ACC)LOAD(V, bias, ki);
  if (relu && acc < 0)
    acc = 0;
  STORE(V, acc, y, YAT(ni, ki, pi, qi));
}

/*
 * im2col straight into kiln's packed GEMM layout: the matrix X (p*q rows,
 * depth = r*s*c/g columns: NCHW orders a row's columns (cj, ri, si), NHWC
 * (ri, si, cj), as the weights are laid out) in panels of PH rows, each Kp
 * deep, zero beyond p*q rows and depth columns; image b's panels db
 * elements after image b-1's. As op(B)' for NCHW (y = W_g x X') and as A for
 * NHWC (y = X x W_g'). Global (Kp, images); columns past depth are zeros.
 */
kernel void NAME(kiln_conv_im2col_packed)(global const ST *x, int nhwc, uint n0,
                                          uint gi, uint c, uint h, uint w, uint r,
                                          uint s, uint sh, uint sw, uint pt, uint pl,
                                          uint dh, uint dw, uint groups, uint p,
                                          uint q, uint Kp, uint PH, uint rows,
                                          global ACC *dst, ulong db)
{
  /* One column of X a work-item, walked row by row with running indices:
   * no division in the loop, which on a CPU costs more than the copy. */
  uint rsc = get_global_id(0), bi = get_global_id(1);
  uint cg = c / groups, depth = r * s * cg;
  uint cj = nhwc ? rsc % cg : rsc / (r * s);
  uint rs = nhwc ? rsc / cg : rsc % (r * s), ri = rs / s, si = rs % s;
  global ACC *out = dst + bi * db + rsc * PH;
  uint lane = 0, pq = 0;
  for (uint pi = 0; pi < p; pi++) {
    int hi = (int)(pi * sh + ri * dh) - (int)pt;
    int row_in = rsc < depth && hi >= 0 && hi < (int)h;
    for (uint qi = 0; qi < q; qi++, pq++) {
      int wi = (int)(qi * sw + si * dw) - (int)pl;
      ACC v = 0;
      if (row_in && wi >= 0 && wi < (int)w)
        v = LOAD(V, x, XAT(n0 + bi, gi * cg + cj, hi, wi));
      out[lane] = v;
      if (++lane == PH) { /* the next panel, Kp * PH elements on */
        lane = 0;
        out += (ulong)Kp * PH;
      }
    }
  }
  for (; pq < rows; pq++) { /* padding rows up to the panels' height */
    out[lane] = 0;
    if (++lane == PH) {
      lane = 0;
      out += (ulong)Kp * PH;
    }
  }
}

/* y = (set ? 0 : y) + bias[ki], then max(y, 0) when relu; global n * k *
 * p * q. With set, it fills y with the bias before the GEMMs add to it, so
 * half storage rounds once, after the bias. */
kernel void NAME(kiln_conv_epilogue)(global ST *y, global const ST *bias, int has_bias,
                                     int relu, int nhwc, uint k, uint pq, int set)
{
  size_t i = get_global_id(0);
  uint ki = nhwc ? i % k : i / pq % k;
  ACC v = set ? 0 : LOAD(V, y, i);
  if (has_bias)
    v += (ACC)LOAD(V, bias, ki);
  if (relu && v < 0)
    v = 0;
  STORE(V, v, y, i);
}

#undef V
#undef ST
#undef ACC
#endif /* V */
