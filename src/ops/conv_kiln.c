/*
 * conv_kiln.c — kiln's two convolution backends: the direct kernel, and
 * im2col followed by kiln_gemm() (src/ops/gemm.c), one image at a time so
 * the im2col matrix is the only workspace and the batch is the chunking. A
 * 1 x 1 convolution with stride 1 and no padding skips im2col: it is a
 * matrix product already, run as one (NHWC: as tall as the whole batch).
 */
#include "internal.h"
#include "ops.h"
#include "kernel_args.h"

static const char *tag(kiln_dtype t)
{
  return t == KILN_F16 ? "f16" : t == KILN_F64 ? "f64" : "f32";
}

static const char *can_always(kiln_runtime *rt, const kiln__conv *c)
{
  (void)rt;
  (void)c; /* every layout, stride, padding, dilation and group count */
  return NULL;
}

static kiln_status direct(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t global[3] = {cv->q, cv->p, d->n * d->k};
  /* With no bias the kernel never reads it; OpenCL wants a valid object. */
  cl_mem bias = cv->bias ? cv->bias : cv->y;
  return kiln__launch_conv_direct(
    rt, "kiln_conv2d(direct)", tag(d->dtype), 3, global, NULL, cv->x, cv->w, bias,
    cv->bias != NULL, d->relu != 0, d->layout == KILN_NHWC, d->n, d->c, d->h, d->w, d->k,
    d->r, d->s, d->stride_h, d->stride_w, d->pad_top, d->pad_left, d->dilation_h,
    d->dilation_w, d->groups, cv->p, cv->q, cv->y);
}

/* Images n0 .. n0 + count, group gi, as one batched GEMM whose weights are
 * the same for every image: W_g x X' (NCHW) or X x W_g' (NHWC), with X the
 * im2col matrix. Built as a checked request directly, since the public
 * descriptor cannot say "the same A for each product" (stride 0 here). */
static kiln__gemm request(const kiln__conv *cv, size_t n0, size_t count, size_t gi)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t kg = d->k / d->groups, depth = d->c / d->groups * d->r * d->s,
         pq = cv->p * cv->q;
  kiln__gemm g = {
    .dtype = d->dtype,
    .layout = KILN_ROW_MAJOR,
    .k = depth,
    .batch = count,
    .alpha = 1,
    .beta = cv->bias ? 1.0 : 0.0, /* y already holds the bias */
    .c = cv->y,
    .stride_c = d->k * pq,
  };
  if (d->layout == KILN_NCHW) { /* m = kg rows of W_g, n = pq rows of X */
    g.m = kg, g.n = pq, g.a = cv->w, g.lda = depth, g.offset_a = gi * kg * depth;
    g.ldc = pq, g.offset_c = (n0 * d->k + gi * kg) * pq;
  } else { /* m = pq rows of X, n = kg rows of W_g */
    g.m = pq, g.n = kg, g.b = cv->w, g.ldb = depth, g.offset_b = gi * kg * depth;
    g.trans_b = KILN_TRANS, g.ldc = d->k, g.offset_c = n0 * pq * d->k + gi * kg;
  }
  return g;
}

/* im2col of those images straight into the packed form the GEMM reads (the
 * op(B)' side for NCHW, the A side for NHWC), then the GEMM: one pass over
 * the im2col matrix instead of a write, a read and a pack. */
static kiln_status im2col_product(kiln_runtime *rt, const kiln__conv *cv, size_t n0,
                                  size_t count, size_t gi, kiln_buffer **col)
{
  const kiln_conv2d_desc *d = &cv->d;
  kiln__gemm g = request(cv, n0, count, gi);
  kiln__gemm_packing pk;
  kiln__gemm_kiln_packing(rt, &g, &pk);
  int nchw = d->layout == KILN_NCHW;
  size_t rows = nchw ? pk.np : pk.mp, ph = nchw ? pk.phb : pk.pha;
  kiln_status st = KILN_OK;
  if (!*col)
    st = kiln_buffer_create(rt, pk.compute, rows * pk.kp * count, 0, col);
  size_t global[2] = {pk.kp, count};
  if (st == KILN_OK)
    st = kiln__launch_conv_im2col_packed(
      rt, "kiln_conv2d(im2col)", tag(d->dtype), 2, global, NULL, cv->x, !nchw, n0, gi,
      d->c, d->h, d->w, d->r, d->s, d->stride_h, d->stride_w, d->pad_top, d->pad_left,
      d->dilation_h, d->dilation_w, d->groups, cv->p, cv->q, pk.kp, ph, rows,
      kiln_buffer_cl_mem(*col), rows * pk.kp);
  if (st == KILN_OK)
    st = kiln__gemm_kiln_run_packed(rt, &g, nchw ? NULL : *col, nchw ? *col : NULL);
  return st;
}

/* set: y = bias, before the GEMMs; else y = relu(y), after them. */
static kiln_status epilogue(kiln_runtime *rt, const kiln__conv *cv, int set)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t global = d->n * d->k * cv->p * cv->q;
  return kiln__launch_conv_epilogue(rt, "kiln_conv2d(im2col)", tag(d->dtype), 1, &global,
                                    NULL, cv->y, cv->bias ? cv->bias : cv->y, set,
                                    !set && d->relu, d->layout == KILN_NHWC, d->k,
                                    cv->p * cv->q, set);
}

/* Images a pass: about 8 MiB of packed im2col matrix (it stays in cache
 * between its write and the GEMM's read), within what is left of the
 * memory budget, and at least one image: what does not fit for one image
 * fails in kiln_buffer_create() with the sizes. */
static size_t images_per_pass(kiln_runtime *rt, const kiln__conv *cv)
{
  kiln__gemm g = request(cv, 0, 1, 0);
  kiln__gemm_packing pk;
  kiln__gemm_kiln_packing(rt, &g, &pk);
  int nchw = cv->d.layout == KILN_NCHW;
  uint64_t per = (uint64_t)(nchw ? pk.np : pk.mp) * pk.kp * kiln_dtype_size(pk.compute);
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  kiln_memory_stats(rt, &mu);
  uint64_t left = mu.limit_bytes - mu.current_bytes, fit = ((uint64_t)8 << 20) / per;
  /* the other operand's pack and the driver's own needs take the rest */
  if (left / 2 / per < fit)
    fit = left / 2 / per;
  return fit < 1 ? 1 : fit > cv->d.n ? cv->d.n : (size_t)fit;
}

/* Whether the convolution is a matrix product as it stands: a 1 x 1
 * filter, stride 1, no padding (dilation then changes nothing). */
static int is_product(const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  return d->r == 1 && d->s == 1 && d->stride_h == 1 && d->stride_w == 1 &&
         d->pad_top == 0 && d->pad_bottom == 0 && d->pad_left == 0 && d->pad_right == 0;
}

/* Group gi of such a convolution, with no im2col matrix: NHWC y (nhw x k)
 * = x (nhw x c) W' over every image at once, one GEMM as tall as the batch;
 * NCHW y_n (k x hw) = W x_n (c x hw), a batch of products sharing W
 * (stride 0). Weights are [k][c/groups] in both layouts. */
static kiln_status product(kiln_runtime *rt, const kiln__conv *cv, size_t gi)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t cg = d->c / d->groups, kg = d->k / d->groups, hw = d->h * d->w;
  kiln__gemm g = {.dtype = d->dtype,
                  .layout = KILN_ROW_MAJOR,
                  .k = cg,
                  .batch = 1,
                  .alpha = 1,
                  .beta = cv->bias ? 1.0 : 0.0, /* y already holds the bias */
                  .c = cv->y};
  if (d->layout == KILN_NCHW) {
    g.m = kg, g.n = hw, g.batch = d->n;
    g.a = cv->w, g.lda = cg, g.offset_a = gi * kg * cg;
    g.b = cv->x, g.ldb = hw, g.offset_b = gi * cg * hw, g.stride_b = d->c * hw;
    g.ldc = hw, g.offset_c = gi * kg * hw, g.stride_c = d->k * hw;
  } else {
    g.m = d->n * hw, g.n = kg;
    g.a = cv->x, g.lda = d->c, g.offset_a = gi * cg;
    g.b = cv->w, g.trans_b = KILN_TRANS, g.ldb = cg, g.offset_b = gi * kg * cg;
    g.ldc = d->k, g.offset_c = gi * kg;
  }
  return kiln__gemm_kiln_run_packed(rt, &g, NULL, NULL);
}

static kiln_status im2col_gemm(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  kiln_status st = cv->bias ? epilogue(rt, cv, 1) : KILN_OK;
  if (is_product(cv)) {
    for (size_t gi = 0; gi < d->groups && st == KILN_OK; gi++)
      st = product(rt, cv, gi);
    return st == KILN_OK && d->relu ? epilogue(rt, cv, 0) : st;
  }
  size_t pass = images_per_pass(rt, cv);
  kiln_buffer *col = NULL, *last = NULL; /* the last pass may be shorter */
  for (size_t n0 = 0; n0 < d->n && st == KILN_OK; n0 += pass) {
    size_t count = d->n - n0 < pass ? d->n - n0 : pass;
    kiln_buffer **use = count == pass ? &col : &last;
    for (size_t gi = 0; gi < d->groups && st == KILN_OK; gi++)
      st = im2col_product(rt, cv, n0, count, gi, use);
  }
  if (st == KILN_OK && d->relu)
    st = epilogue(rt, cv, 0);
  kiln_buffer_destroy(col);
  kiln_buffer_destroy(last);
  return st;
}

const kiln__conv_backend kiln__conv_direct = {KILN_BACKEND_DIRECT, can_always, direct};
const kiln__conv_backend kiln__conv_im2col = {KILN_BACKEND_IM2COL, can_always,
                                              im2col_gemm};
