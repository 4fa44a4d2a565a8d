/*
 * conv.cl — 2-D convolution: a direct kernel, im2col into kiln's packed GEMM
 * layout (whose GEMM adds the bias and the activation).
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

/* The direct kernel's blocking (kiln__conv_tuning, src/tuning.c): each
 * work-item computes QW neighbouring outputs of a row (columns q0 ..
 * q0 + QW - 1) for KB output channels (ki0 .. ki0 + KB - 1). */
#ifndef KILN_CONV_QW
#define KILN_CONV_QW 1
#endif
#ifndef KILN_CONV_KB
#define KILN_CONV_KB 1
#endif
#define QW KILN_CONV_QW
#define KB KILN_CONV_KB

/* FN(...) adds to acc[b][j] (b < kn, j < QC) the terms of output channels
 * ki0 .. ki0 + kn - 1, all of one group whose input channels start at c0,
 * at output row pi, columns q0 + j. kn is a constant where this is
 * inlined, so its tests fold away. Input columns outside the image read a
 * clamped address and count zero: no branch in the channel loop. Made for
 * QC = QW, a whole block, and QC = 1, a column of the short block at a
 * row's end. */
#define KILN_CONV_DIRECT_SUM(FN, QC)                                                     \
  static void FN(global const ST *x, global const ST *wt, int nhwc, uint ni, uint c0,     \
                 uint ki0, uint kn, uint c, uint h, uint w, uint r, uint s, uint cg,      \
                 uint sh, uint sw, uint pt, uint pl, uint dh, uint dw, uint pi, uint q0,  \
                 ACC acc[KB][QC])                                                         \
  {                                                                                       \
    ulong xstep = nhwc ? 1 : (ulong)h * w, wstep = nhwc ? 1 : r * s,                      \
          kstep = (ulong)cg * r * s;                                                      \
    for (uint ri = 0; ri < r; ri++) {                                                     \
      int hi = (int)(pi * sh + ri * dh) - (int)pt;                                        \
      if (hi < 0 || hi >= (int)h)                                                         \
        continue;                                                                         \
      for (uint si = 0; si < s; si++) {                                                   \
        ulong xo[QC];                                                                     \
        ACC in[QC];                                                                       \
        for (uint j = 0; j < QC; j++) {                                                   \
          int wi = (int)((q0 + j) * sw + si * dw) - (int)pl;                              \
          in[j] = wi >= 0 && wi < (int)w ? 1 : 0;                                         \
          xo[j] = XAT(ni, c0, hi, in[j] != 0 ? wi : 0);                                   \
        }                                                                                 \
        ulong wo = WAT(ki0, 0, ri, si);                                                   \
        for (uint cj = 0; cj < cg; cj++) {                                                \
          ACC xv[QC];                                                                     \
          for (uint j = 0; j < QC; j++)                                                   \
            xv[j] = in[j] * (ACC)LOAD(V, x, xo[j] + cj * xstep);                          \
          for (uint b = 0; b < KB; b++)                                                   \
            if (b < kn) {                                                                 \
              ACC wv = (ACC)LOAD(V, wt, wo + b * kstep + cj * wstep);                     \
              for (uint j = 0; j < QC; j++)                                               \
                acc[b][j] += xv[j] * wv;                                                  \
            }                                                                             \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }
KILN_CONV_DIRECT_SUM(NAME(conv_direct_sum), QW)
KILN_CONV_DIRECT_SUM(NAME(conv_direct_sum1), 1)
#undef KILN_CONV_DIRECT_SUM

/* Global (ceil(q / QW), p, n * ceil(k / KB)), padded to whole groups. For
 * few channels a group and depthwise layers, where im2col's matrix would
 * be thin; and on GPUs, where its blocks keep inputs in registers. KB
 * channels share their inputs when they are of one group (kg a multiple
 * of KB); else (depthwise) each channel reads its own. */
#if KILN_BUILDS(kiln_conv_direct)
kernel void NAME(kiln_conv_direct)(global const ST *x, ulong x_off, global const ST *wt,
                                   ulong wt_off, global const ST *bias, ulong bias_off,
                                   int has_bias, int act, int nhwc, uint n, uint c,
                                   uint h, uint w, uint k, uint r, uint s, uint sh,
                                   uint sw, uint pt, uint pl, uint dh, uint dw,
                                   uint groups, uint p, uint q, global ST *y, ulong y_off)
{
  /* the offsets: views' first elements (kiln makes no sub-buffer) */
  x += x_off;
  wt += wt_off;
  bias += bias_off;
  y += y_off;
  uint q0 = get_global_id(0) * QW, pi = get_global_id(1), nk = get_global_id(2);
  uint kblocks = (k + KB - 1) / KB, ni = nk / kblocks, ki0 = nk % kblocks * KB;
  if (q0 >= q || pi >= p || ni >= n)
    return;
  uint cg = c / groups, kg = k / groups;
  ACC acc[KB][QW];
  for (uint b = 0; b < KB; b++)
    for (uint j = 0; j < QW; j++)
      acc[b][j] = 0;
  /* A block at least half inside the row computes all its columns */
  int block = 2 * (q - q0) >= QW;
  if (block && kg % KB == 0) {
    NAME(conv_direct_sum)(x, wt, nhwc, ni, ki0 / kg * cg, ki0, KB, c, h, w, r, s, cg,
                          sh, sw, pt, pl, dh, dw, pi, q0, acc);
  } else if (block) {
    for (uint b = 0; b < KB && ki0 + b < k; b++)
      NAME(conv_direct_sum)(x, wt, nhwc, ni, (ki0 + b) / kg * cg, ki0 + b, 1, c, h, w,
                            r, s, cg, sh, sw, pt, pl, dh, dw, pi, q0,
                            &acc[b]);
  } else {
    /* A row's last block, less than half inside the row (all of a row
     * narrower than QW / 2): a column at a time, so that the missing
     * columns cost nothing: computed and dropped, they made the 1x1 layer
     * of 1 x 1 images many times slower at QW = 16 than at QW = 1. */
#pragma unroll
    for (uint j = 0; j < QW; j++)
      if (q0 + j < q) {
        ACC one[KB][1];
        for (uint b = 0; b < KB; b++)
          one[b][0] = 0;
        for (uint b = 0; b < KB && ki0 + b < k; b += kg % KB == 0 ? KB : 1)
          NAME(conv_direct_sum1)(x, wt, nhwc, ni, (ki0 + b) / kg * cg, ki0 + b,
                                 kg % KB == 0 ? KB : 1, c, h, w, r, s, cg, sh, sw, pt,
                                 pl, dh, dw, pi, q0 + j, kg % KB == 0 ? one : &one[b]);
        for (uint b = 0; b < KB; b++)
          acc[b][j] = one[b][0];
      }
  }
  for (uint b = 0; b < KB && ki0 + b < k; b++)
    for (uint j = 0; j < QW && q0 + j < q; j++) {
      ACC v = acc[b][j];
      if (has_bias)
        v += (ACC)LOAD(V, bias, ki0 + b);
      ACTIVATE(ACC, v, act);
      STORE(V, v, y, YAT(ni, ki0 + b, pi, q0 + j));
    }
}
#endif

#undef QW
#undef KB

/*
 * The depthwise kernel of the GPU shape (groups == c, k = m c: output
 * channel ki reads input channel ki / m). A work-group of DLX x DLY
 * work-items owns a tile of DLY output rows by DLX * DQW columns of one
 * image and input channel: it stages the input rows and columns the tile
 * reads (its halo included, zero outside the image: the padding) in local
 * memory once, coalesced along a row, then computes the tile for each of
 * the channel's m outputs. Work-item (lx, ly) keeps DQW outputs in
 * registers, columns lx, lx + DLX, ...: neighbouring work-items read
 * neighbouring (sw apart) local words and store neighbouring outputs. The
 * direct kernel instead read every input r x s times from global memory,
 * one work-item an output. The host (conv_kiln.c) runs it only where the
 * staged tile fits DTILE elements.
 *
 * Global (ceil(q / (DLX DQW)) DLX, ceil(p / DLY) DLY, n c).
 */
#ifndef KILN_CONV_DW_LX /* kiln passes tuning.h's KILN__CONV_DW_* */
#define KILN_CONV_DW_LX 16
#define KILN_CONV_DW_LY 8
#define KILN_CONV_DW_QW 4
#define KILN_CONV_DW_TILE 4096
#endif
#if KILN_BUILDS(kiln_conv_dw)
#define DLX KILN_CONV_DW_LX
#define DLY KILN_CONV_DW_LY
#define DQW KILN_CONV_DW_QW
#define DTILE KILN_CONV_DW_TILE
kernel __attribute__((reqd_work_group_size(DLX, DLY, 1))) void
NAME(kiln_conv_dw)(global const ST *x, ulong x_off, global const ST *wt, ulong wt_off,
                   global const ST *bias, ulong bias_off, int has_bias, int act, int nhwc,
                   uint c, uint h, uint w, uint k, uint r, uint s, uint sh, uint sw,
                   uint pt, uint pl, uint dh, uint dw, uint p, uint q, global ST *y,
                   ulong y_off)
{
  local ACC tile[DTILE];
  x += x_off;
  wt += wt_off;
  bias += bias_off;
  y += y_off;
  uint lx = get_local_id(0), ly = get_local_id(1), nc = get_global_id(2);
  uint ni = nc / c, ci = nc % c, m = k / c, cg = 1;
  uint p0 = get_group_id(1) * DLY, q0 = get_group_id(0) * (DLX * DQW);
  /* the tile's input rows and columns, from (hb, wb) */
  uint th = (DLY - 1) * sh + (r - 1) * dh + 1, tw = (DLX * DQW - 1) * sw + (s - 1) * dw + 1;
  int hb = (int)(p0 * sh) - (int)pt, wb = (int)(q0 * sw) - (int)pl;
  for (uint tr = ly; tr < th; tr += DLY) {
    int hi = hb + (int)tr;
    int row = hi >= 0 && hi < (int)h;
    for (uint tc = lx; tc < tw; tc += DLX) {
      int wi = wb + (int)tc;
      tile[tr * tw + tc] =
        row && wi >= 0 && wi < (int)w ? (ACC)LOAD(V, x, XAT(ni, ci, hi, wi)) : 0;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  uint pi = p0 + ly;
  if (pi >= p)
    return; /* after the barrier: every work-item staged its share */
  for (uint mi = 0; mi < m; mi++) {
    uint ki = ci * m + mi;
    ACC acc[DQW];
    for (uint j = 0; j < DQW; j++)
      acc[j] = 0;
    for (uint ri = 0; ri < r; ri++) {
      local const ACC *trow = tile + (ly * sh + ri * dh) * tw + lx * sw;
      for (uint si = 0; si < s; si++) {
        ACC wv = (ACC)LOAD(V, wt, WAT(ki, 0, ri, si));
#pragma unroll
        for (uint j = 0; j < DQW; j++)
          acc[j] += trow[j * DLX * sw + si * dw] * wv;
      }
    }
    ACC b = has_bias ? (ACC)LOAD(V, bias, ki) : 0;
#pragma unroll
    for (uint j = 0; j < DQW; j++) {
      uint qi = q0 + j * DLX + lx;
      if (qi < q) {
        ACC v = acc[j] + b;
        ACTIVATE(ACC, v, act);
        STORE(V, v, y, YAT(ni, ki, pi, qi));
      }
    }
  }
}
#undef DLX
#undef DLY
#undef DQW
#undef DTILE
#endif

/*
 * The GPU shape's implicit GEMM: group gi of image ni is the product Y_g
 * (kg x pq) = W_g (kg x depth) X_g, depth = c/groups x r x s, where X_g's
 * element (d, pq) is gathered from the image as its tile is loaded (d ->
 * input channel, filter row and column; pq -> output row and column ->
 * input row and column, zero in the padding): no im2col buffer. A
 * work-group of 16 x 16 work-items computes a 64 x 64 tile of Y_g (output
 * channels by output pixels) in slices of 16 depths staged in local
 * memory; each work-item keeps 4 x 4 outputs in registers, channels ly +
 * 16 i by pixels lx + 16 j (neighbouring work-items read neighbouring
 * local words and store neighbouring pixels). A work-item's pixel column
 * of the X tile is fixed, so its output row and column are divided out
 * once. Weights are [k][depth] in both layouts: NCHW orders a row
 * (cj, ri, si), NHWC (ri, si, cj).
 *
 * Global (ceil(pq / 64) 16, ceil(kg / 64) 16, n groups).
 */
#define IT 64 /* the tile's side */
#define IK 16 /* depths a slice */
#if KILN_BUILDS(kiln_conv_igemm)
kernel __attribute__((reqd_work_group_size(16, 16, 1))) void
NAME(kiln_conv_igemm)(global const ST *x, ulong x_off, global const ST *wt, ulong wt_off,
                      global const ST *bias, ulong bias_off, int has_bias, int act,
                      int nhwc, uint c, uint h, uint w, uint k, uint r, uint s, uint sh,
                      uint sw, uint pt, uint pl, uint dh, uint dw, uint groups, uint p,
                      uint q, global ST *y, ulong y_off)
{
  local ACC as[IK][IT], bs[IK][IT];
  x += x_off;
  wt += wt_off;
  bias += bias_off;
  y += y_off;
  uint lx = get_local_id(0), ly = get_local_id(1), tid = ly * 16 + lx;
  uint pq0 = get_group_id(0) * IT, k0 = get_group_id(1) * IT, z = get_group_id(2);
  uint ni = z / groups, gi = z % groups, cg = c / groups, kg = k / groups;
  uint depth = cg * r * s, pq = p * q;
  /* this work-item's pixel of the X tile, rows tid / IT + 4 e */
  uint bn = tid % IT, bk = tid / IT, bpq = pq0 + bn;
  int bin = bpq < pq;
  int bh = (int)(bin ? bpq / q : 0) * (int)sh - (int)pt;
  int bw = (int)(bin ? bpq % q : 0) * (int)sw - (int)pl;
  ACC acc[4][4];
  for (uint i = 0; i < 4; i++)
    for (uint j = 0; j < 4; j++)
      acc[i][j] = 0;
  for (uint d0 = 0; d0 < depth; d0 += IK) {
    for (uint e = 0; e < 4; e++) { /* W's tile: 16 depths of a row in a run */
      uint idx = tid + 256 * e, mm = idx / IK, kk = idx % IK;
      uint ki = k0 + mm, d = d0 + kk;
      as[kk][mm] = ki < kg && d < depth
                     ? (ACC)LOAD(V, wt, ((ulong)gi * kg + ki) * depth + d)
                     : 0;
    }
    for (uint e = 0; e < 4; e++) { /* X's tile, gathered from the image */
      uint kk = bk + 4 * e, d = d0 + kk, cj, ri, si;
      if (nhwc)
        cj = d % cg, si = d / cg % s, ri = d / cg / s;
      else
        si = d % s, ri = d / s % r, cj = d / s / r;
      int hi = bh + (int)(ri * dh), wi = bw + (int)(si * dw);
      bs[kk][bn] = bin && d < depth && hi >= 0 && hi < (int)h && wi >= 0 && wi < (int)w
                     ? (ACC)LOAD(V, x, XAT(ni, gi * cg + cj, hi, wi))
                     : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint kk = 0; kk < IK; kk++) {
      ACC a[4], b[4];
      for (uint i = 0; i < 4; i++)
        a[i] = as[kk][ly + 16 * i], b[i] = bs[kk][lx + 16 * i];
      for (uint i = 0; i < 4; i++)
        for (uint j = 0; j < 4; j++)
          acc[i][j] += a[i] * b[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (uint i = 0; i < 4; i++) {
    uint ki = k0 + ly + 16 * i;
    if (ki >= kg)
      break;
    ACC bv = has_bias ? (ACC)LOAD(V, bias, gi * kg + ki) : 0;
    for (uint j = 0; j < 4; j++) {
      uint o = pq0 + lx + 16 * j;
      if (o < pq) {
        ACC v = acc[i][j] + bv;
        ACTIVATE(ACC, v, act);
        STORE(V, v, y, YAT(ni, gi * kg + ki, o / q, o % q));
      }
    }
  }
}
#endif
#undef IT
#undef IK

/*
 * im2col straight into kiln's packed GEMM layout: rows pq0 .. pq0 + rows - 1
 * of the matrix X (p*q rows, depth = r*s*c/g columns: NCHW orders a row's
 * columns (cj, ri, si), NHWC (ri, si, cj), as the weights are laid out) in
 * panels of PH rows, each Kp deep, zero beyond p*q rows and depth columns;
 * image b's panels db elements after image b-1's. As op(B)' for NCHW (y =
 * W_g x X') and as A for NHWC (y = X x W_g'). A step is whole images (pq0 =
 * 0) or a chunk of one (src/ops/conv_kiln.c); rows is a whole number of
 * panels.
 *
 * Work-item (t, panel, image) writes lanes [t L, t L + L) of its panel
 * (rows of X) at every depth, walking the depths with running indices and,
 * at each, the lanes' stretches of an output row (no division in the
 * loops): the innermost loop writes neighbouring elements and reads inputs
 * sw apart, which a compiler vectorises within the work-item. L = PH on a
 * CPU, where PoCL runs the work-items one after another; L = 1 on a GPU,
 * where neighbouring work-items write neighbouring elements. Before, a
 * work-item walked one column down every row, scalar and scattered: on
 * PoCL ResNet's 7x7/2 layer's im2col took longer than its product
 * (docs/performance.md, "Convolution"), and a GPU had only Kp x images
 * work-items.
 */
#if KILN_BUILDS(kiln_conv_im2col_packed)
kernel void NAME(kiln_conv_im2col_packed)(global const ST *x, ulong x_off, int nhwc,
                                          uint n0, uint gi, uint c, uint h, uint w, uint r,
                                          uint s, uint sh, uint sw, uint pt, uint pl,
                                          uint dh, uint dw, uint groups, uint p,
                                          uint q, uint pq0, uint Kp, uint PH, uint L,
                                          uint rows, global ACC *dst, ulong db)
{
  x += x_off; /* a view's first element (kiln makes no sub-buffer) */
  uint l0 = get_global_id(0) * L, panel = get_global_id(1), bi = get_global_id(2);
  uint first = pq0 + panel * PH + l0, end = min(pq0 + rows, p * q);
  uint live = first < end ? min(end - first, L) : 0, cg = c / groups, rsc = 0;
  uint pi0 = first / q, qi0 = first % q;
  ulong step = nhwc ? c : 1; /* between neighbours along a row of x */
  global ACC *out = dst + bi * db + (size_t)panel * Kp * PH + l0;
  /* NCHW: cj, then ri, then si; NHWC: ri, si, cj */
  for (uint a = 0; a < (nhwc ? r : cg); a++)
    for (uint e = 0; e < (nhwc ? s : r); e++)
      for (uint f = 0; f < (nhwc ? cg : s); f++, rsc++) {
        uint cj = nhwc ? f : a, ri = nhwc ? a : e, si = nhwc ? e : f;
        global ACC *o = out + (size_t)rsc * PH;
        uint l = 0;
        for (uint pi = pi0, qi = qi0; l < live; pi++, qi = 0) { /* a stretch a row */
          uint n = min(live - l, q - qi);
          int hi = (int)(pi * sh + ri * dh) - (int)pt;
          int w0 = (int)(qi * sw + si * dw) - (int)pl;
          if (hi >= 0 && hi < (int)h) {
            ulong row = XAT(n0 + bi, gi * cg + cj, hi, 0);
            for (uint j = 0; j < n; j++) {
              int wi = w0 + (int)(j * sw);
              o[l + j] = wi >= 0 && wi < (int)w ? (ACC)LOAD(V, x, row + wi * step) : 0;
            }
          } else {
            for (uint j = 0; j < n; j++)
              o[l + j] = 0;
          }
          l += n;
        }
        for (; l < L; l++) /* rows past p*q */
          o[l] = 0;
      }
  for (; rsc < Kp; rsc++) /* columns past depth */
    for (uint l = 0; l < L; l++)
      out[(size_t)rsc * PH + l] = 0;
}
#endif

#undef V
#undef ST
#undef ACC
#endif /* V */
