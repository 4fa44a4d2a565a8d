/*
 * conv_kiln.c — kiln's two convolution backends: the direct kernel, and
 * im2col followed by kiln_gemm() (src/ops/gemm.c), in steps of whole images
 * or of chunks of one image's rows, so that the im2col matrix, the only
 * workspace, stays near the size the tuning asks (kiln__conv_tuning). A
 * 1 x 1 convolution with stride 1 and no padding skips im2col: it is a
 * matrix product already, run as one (NHWC: as tall as the whole batch).
 * The GEMMs add the bias and apply the activation as they store y.
 */
#include "base/util.h"
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/pool.h"
#include "core/runtime.h"
#include "device/rank.h"
#include "ops/ops.h"
#include "tuning/tuning.h"

static const char *tag(kiln_dtype t)
{
  return t == KILN_F16 ? "f16" : t == KILN_F64 ? "f64" : "f32";
}

/* Every layout, stride, padding, dilation and group count, except where
 * the driver ends a work-item's loops early (kiln__loop_limit()): a direct
 * output loops over its c/groups x r x s inputs, and the GEMM of im2col
 * over as deep a k (kiln's tile counts about ten iterations a k; its steps
 * keep im2col's loop over rows within the limit, first_step()). */
static const char *can_direct(kiln_runtime *rt, const kiln__conv *c)
{
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  if (limit && c->d.c / c->d.groups * c->d.r * c->d.s > limit)
    return "this device's driver (Mesa's llvmpipe) ends a work-item's loops after 65535 "
           "iterations, fewer than a direct output's c/groups x r x s inputs";
  return NULL;
}

static const char *can_im2col(kiln_runtime *rt, const kiln__conv *c)
{
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  if (limit && c->d.c / c->d.groups * c->d.r * c->d.s > limit / 16)
    return "this device's driver (Mesa's llvmpipe) ends a work-item's loops after 65535 "
           "iterations, fewer than the GEMM over c/groups x r x s (above 2047) needs";
  return NULL;
}

/* n rounded up to a multiple of m (m > 0). */
static size_t round_up(size_t n, size_t m)
{
  return (n + m - 1) / m * m;
}

/* A group's side for n outputs: the tuned side `most`, or the smallest
 * power of two that holds n where that is less. */
static size_t group_side(size_t n, size_t most)
{
  size_t v = 1;
  while (v < n)
    v *= 2;
  return v < most ? v : most;
}

/* The depthwise kernel: a group a tile of LY output rows by LX x QW
 * columns of one image and input channel. */
static kiln_status depthwise(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t cols = KILN__CONV_DW_LX * KILN__CONV_DW_QW;
  size_t global[3] = {(cv->q + cols - 1) / cols * KILN__CONV_DW_LX,
                      round_up(cv->p, KILN__CONV_DW_LY), d->n * d->c};
  size_t local[3] = {KILN__CONV_DW_LX, KILN__CONV_DW_LY, 1};
  cl_mem bias = cv->bias ? cv->bias : cv->y; /* never read without one */
  return kiln__launch_conv_dw(
    rt, "kiln_conv2d(direct)", tag(d->dtype), 3, global, local, cv->x, cv->off_x, cv->w,
    cv->off_w, bias, cv->bias ? cv->off_bias : 0, cv->bias != NULL, d->activation,
    d->layout == KILN_NHWC, d->c, d->h, d->w, d->k, d->r, d->s, d->stride_h, d->stride_w,
    d->pad_top, d->pad_left, d->dilation_h, d->dilation_w, cv->p, cv->q, cv->y,
    cv->off_y);
}

/* The implicit GEMM: a group a 64 x 64 tile of one image's and group's
 * output channels by output pixels. */
static kiln_status implicit_gemm(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t global[3] = {(cv->p * cv->q + 63) / 64 * 16, (d->k / d->groups + 63) / 64 * 16,
                      d->n * d->groups};
  size_t local[3] = {16, 16, 1};
  cl_mem bias = cv->bias ? cv->bias : cv->y; /* never read without one */
  return kiln__launch_conv_igemm(
    rt, "kiln_conv2d(direct)", tag(d->dtype), 3, global, local, cv->x, cv->off_x, cv->w,
    cv->off_w, bias, cv->bias ? cv->off_bias : 0, cv->bias != NULL, d->activation,
    d->layout == KILN_NHWC, d->c, d->h, d->w, d->k, d->r, d->s, d->stride_h, d->stride_w,
    d->pad_top, d->pad_left, d->dilation_h, d->dilation_w, d->groups, cv->p, cv->q, cv->y,
    cv->off_y);
}

/* The direct kernel with rt's blocking (kiln__conv_tuning): qw columns and
 * kb channels a work-item, in lq x lp groups (or the driver's), the global
 * size padded to whole groups; the kernel skips what lies outside. Where
 * the output is narrower or shorter than a group, the group shrinks to it
 * (a power of two) and takes what it gave up along the third dimension
 * (images and channel blocks), so that a 1 x 1 output does not run 63 idle
 * work-items of 64 (on PoCL it brings the 1x1 NHWC layer back to what the
 * driver's groups gave: docs/performance.md, "Convolution", `kiln bench
 * conv --sizes 6 --backend direct`). */
static kiln_status direct(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  const kiln_device_info *dev = kiln_runtime_device(rt);
  size_t acc = d->dtype == KILN_F64 ? 8 : 4; /* the staged tile's element */
  if (kiln__conv_depthwise_kernel(d, kiln__gpu_shape(rt)) &&
      dev->max_work_group_size >= KILN__CONV_DW_LX * KILN__CONV_DW_LY &&
      dev->local_mem_bytes >= (uint64_t)KILN__CONV_DW_TILE * acc)
    return depthwise(rt, cv);
  if (kiln__conv_implicit_gemm(d, kiln__gpu_shape(rt)) &&
      dev->max_work_group_size >= 256 && dev->local_mem_bytes >= 2 * 16 * 64 * acc)
    return implicit_gemm(rt, cv);
  const kiln__conv_tuning *t = &rt->tuning->t.conv;
  size_t global[3] = {(cv->q + t->qw - 1) / t->qw, cv->p,
                      d->n * ((d->k + t->kb - 1) / t->kb)};
  size_t local[3] = {group_side(global[0], t->lq), group_side(global[1], t->lp), 1};
  if (t->lq) {
    local[2] =
      kiln__pow2_divisor(global[2], (size_t)t->lq * t->lp / (local[0] * local[1]));
    global[0] = round_up(global[0], local[0]);
    global[1] = round_up(global[1], local[1]);
  }
  /* With no bias the kernel never reads it; OpenCL wants a valid object. */
  cl_mem bias = cv->bias ? cv->bias : cv->y;
  return kiln__launch_conv_direct(
    rt, "kiln_conv2d(direct)", tag(d->dtype), 3, global, t->lq ? local : NULL, cv->x,
    cv->off_x, cv->w, cv->off_w, bias, cv->bias ? cv->off_bias : 0, cv->bias != NULL,
    d->activation, d->layout == KILN_NHWC, d->n, d->c, d->h, d->w, d->k, d->r, d->s,
    d->stride_h, d->stride_w, d->pad_top, d->pad_left, d->dilation_h, d->dilation_w,
    d->groups, cv->p, cv->q, cv->y, cv->off_y);
}

/* One im2col + GEMM step: images n0 .. n0 + count, rows pq0 .. pq0 + rows
 * of each one's im2col matrix (all p * q, or a chunk of one image). */
typedef struct step {
  size_t n0, count, pq0, rows;
} step;

/* The GEMM of group gi, its epilogue aside: the bias of the group's kg
 * output channels, which are C's rows (NCHW) or columns (NHWC), and the
 * activation. */
static kiln__gemm group_request(const kiln__conv *cv, size_t gi, size_t depth)
{
  const kiln_conv2d_desc *d = &cv->d;
  int nchw = d->layout == KILN_NCHW;
  return (kiln__gemm){
    .dtype = d->dtype,
    .layout = KILN_ROW_MAJOR,
    .k = depth,
    .batch = 1,
    .alpha = 1,
    .c = cv->y,
    .bias_kind = !cv->bias ? KILN_BIAS_NONE
                 : nchw    ? KILN_BIAS_ROW
                           : KILN_BIAS_COL,
    .activation = d->activation,
    .bias = cv->bias,
    .offset_bias = cv->off_bias + gi * (d->k / d->groups),
  };
}

/* Step st's group gi as one batched GEMM whose weights are the same for
 * every image: W_g x X' (NCHW) or X x W_g' (NHWC), with X the im2col
 * matrix's rows of the step. Built as a checked request directly, since the
 * public descriptor cannot say "the same A for each product" (stride 0
 * here). */
static kiln__gemm request(const kiln__conv *cv, const step *st, size_t gi)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t kg = d->k / d->groups, depth = d->c / d->groups * d->r * d->s,
         pq = cv->p * cv->q;
  kiln__gemm g = group_request(cv, gi, depth);
  g.batch = st->count;
  g.stride_c = d->k * pq;
  if (d->layout == KILN_NCHW) { /* m = kg rows of W_g, n = rows of X */
    g.m = kg, g.n = st->rows, g.a = cv->w, g.lda = depth;
    g.offset_a = cv->off_w + gi * kg * depth;
    g.ldc = pq, g.offset_c = cv->off_y + (st->n0 * d->k + gi * kg) * pq + st->pq0;
  } else { /* m = rows of X, n = kg rows of W_g */
    g.m = st->rows, g.n = kg, g.b = cv->w, g.ldb = depth;
    g.offset_b = cv->off_w + gi * kg * depth;
    g.trans_b = KILN_TRANS, g.ldc = d->k;
    g.offset_c = cv->off_y + (st->n0 * pq + st->pq0) * d->k + gi * kg;
  }
  return g;
}

/* The packed im2col matrix of a step: rows (padded to panels), its panels'
 * height, and its elements per image. */
static void packed_size(kiln_runtime *rt, const kiln__conv *cv, const step *st,
                        kiln__gemm_packing *pk, size_t *rows, size_t *ph)
{
  kiln__gemm g = request(cv, st, 0);
  kiln__gemm_kiln_packing(rt, &g, pk);
  int nchw = cv->d.layout == KILN_NCHW;
  *rows = nchw ? pk->np : pk->mp;
  *ph = nchw ? pk->phb : pk->pha;
}

/* im2col of the step straight into the packed form the GEMM reads (the
 * op(B)' side for NCHW, the A side for NHWC), then the GEMM: one pass over
 * the im2col matrix instead of a write, a read and a pack. col holds at
 * least the step's matrix. */
static kiln_status im2col_product(kiln_runtime *rt, const kiln__conv *cv, const step *sp,
                                  size_t gi, kiln_buffer *col)
{
  const kiln_conv2d_desc *d = &cv->d;
  kiln__gemm g = request(cv, sp, gi);
  kiln__gemm_packing pk;
  size_t rows, ph;
  packed_size(rt, cv, sp, &pk, &rows, &ph);
  int nchw = d->layout == KILN_NCHW;
  /* A panel's lanes a work-item on a CPU, one on a GPU (cl/conv.cl) */
  size_t lanes = rt->tuning->t.gemm[kiln__gemm_variant_of(d->dtype)].gpu_shape ? 1 : ph;
  size_t global[3] = {ph / lanes, rows / ph, sp->count};
  kiln_status st = kiln__launch_conv_im2col_packed(
    rt, "kiln_conv2d(im2col)", tag(d->dtype), 3, global, NULL, cv->x, cv->off_x, !nchw,
    sp->n0, gi, d->c, d->h, d->w, d->r, d->s, d->stride_h, d->stride_w, d->pad_top,
    d->pad_left, d->dilation_h, d->dilation_w, d->groups, cv->p, cv->q, sp->pq0, pk.kp,
    ph, lanes, rows, kiln__buffer_mem(col), rows * pk.kp);
  if (st == KILN_OK)
    st = kiln__gemm_kiln_run_packed(rt, &g, nchw ? NULL : col, nchw ? col : NULL);
  return st;
}

/* The bytes of the weights' pack each image of a step adds: the GEMM's
 * other operand, packed once for every product of the step's batch. */
static uint64_t weights_pack(const kiln__conv *cv, const kiln__gemm_packing *pk)
{
  size_t rows = cv->d.layout == KILN_NCHW ? pk->mp : pk->np;
  return (uint64_t)rows * pk->kp * kiln_dtype_size(pk->compute);
}

/* The first (largest) step: about col_kib KiB of packed im2col matrix
 * (kiln__conv_tuning; it stays in cache between its write and the GEMM's
 * read) and the weights' packs, within half of what is left of the memory
 * budget: whole images while one fits, else a chunk of one image's rows,
 * whole panels of them. At least one panel: what does not fit then fails
 * in kiln__workspace() with the sizes. */
static step first_step(kiln_runtime *rt, const kiln__conv *cv, kiln_dtype *compute,
                       size_t *elements)
{
  size_t pq = cv->p * cv->q, rows, ph, unit;
  step sp = {.count = 1, .rows = 1};
  kiln__gemm_packing pk;
  /* Chunks are whole panels of a one-row step: the CPU shape's panel (tn
   * rows) or the GPU shape's tile (tsm or tsn rows). The GPU shape packs a step as
   * one panel as tall as the step, so a whole image's panel would leave no
   * chunk smaller than the image. */
  packed_size(rt, cv, &sp, &pk, &rows, &unit);
  sp.rows = pq;
  packed_size(rt, cv, &sp, &pk, &rows, &ph);
  uint64_t es = kiln_dtype_size(pk.compute), wp = weights_pack(cv, &pk),
           per = (uint64_t)rows * pk.kp * es + wp;
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  kiln_memory_stats(rt, &mu);
  uint64_t left = (mu.limit_bytes - mu.current_bytes) / 2,
           want = (uint64_t)rt->tuning->t.conv.col_kib << 10;
  if (left < want) /* the driver and the GEMM's own use take the rest */
    want = left;
  if (want >= per) {
    sp.count = want / per < cv->d.n ? (size_t)(want / per) : cv->d.n;
  } else {
    uint64_t panels = want > wp ? (want - wp) / ((uint64_t)unit * pk.kp * es) : 0;
    sp.rows = panels < 1 ? unit : (size_t)panels * unit;
    if (sp.rows > pq)
      sp.rows = pq;
    packed_size(rt, cv, &sp, &pk, &rows, &ph);
  }
  /* im2col's work-items each loop over the step's rows of an image. */
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  if (limit && rows > limit) { /* a chunk of one image */
    sp.count = 1;
    sp.rows = limit / unit * unit;
    packed_size(rt, cv, &sp, &pk, &rows, &ph);
  }
  *compute = pk.compute;
  *elements = rows * pk.kp * sp.count;
  return sp;
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
static kiln__gemm product_request(const kiln__conv *cv, size_t gi)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t cg = d->c / d->groups, kg = d->k / d->groups, hw = d->h * d->w;
  kiln__gemm g = group_request(cv, gi, cg);
  if (d->layout == KILN_NCHW) {
    g.m = kg, g.n = hw, g.batch = d->n;
    g.a = cv->w, g.lda = cg, g.offset_a = cv->off_w + gi * kg * cg;
    g.b = cv->x, g.ldb = hw, g.offset_b = cv->off_x + gi * cg * hw;
    g.stride_b = d->c * hw;
    g.ldc = hw, g.offset_c = cv->off_y + gi * kg * hw, g.stride_c = d->k * hw;
  } else {
    g.m = d->n * hw, g.n = kg;
    g.a = cv->x, g.lda = d->c, g.offset_a = cv->off_x + gi * cg;
    g.b = cv->w, g.trans_b = KILN_TRANS, g.ldb = cg;
    g.offset_b = cv->off_w + gi * kg * cg;
    g.ldc = d->k, g.offset_c = cv->off_y + gi * kg;
  }
  return g;
}

static kiln_status product(kiln_runtime *rt, const kiln__conv *cv, size_t gi)
{
  kiln__gemm g = product_request(cv, gi);
  return kiln__gemm_kiln_run_packed(rt, &g, NULL, NULL);
}

static uint64_t im2col_workspace(kiln_runtime *rt, const kiln__conv *cv)
{
  kiln__gemm_packing pk;
  if (is_product(cv)) { /* both operands packed, the whole batch */
    kiln__gemm g = product_request(cv, 0);
    kiln__gemm_kiln_packing(rt, &g, &pk);
    size_t es = kiln_dtype_size(pk.compute);
    return (uint64_t)kiln__pool_block_bytes(rt, pk.mp * pk.kp * g.batch * es) +
           kiln__pool_block_bytes(rt, pk.np * pk.kp * g.batch * es);
  }
  /* The least first_step() takes: one panel of a one-row step and the
   * weights' pack, as the pool rounds them. With that much left it takes
   * either this or at most half of what is left (a quarter more where the
   * pool rounds up), so the caller need keep no more; keeping twice this
   * refused budgets that run, most of all in the GPU shape, whose 64-row
   * tiles make the least several times the CPU shape's. */
  step one = {.count = 1, .rows = 1};
  size_t rows, ph;
  packed_size(rt, cv, &one, &pk, &rows, &ph);
  size_t col = rows * pk.kp * kiln_dtype_size(pk.compute);
  return (uint64_t)kiln__pool_block_bytes(rt, col) +
         kiln__pool_block_bytes(rt, (size_t)weights_pack(cv, &pk));
}

static kiln_status im2col_gemm(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  kiln_status st = KILN_OK;
  if (is_product(cv)) {
    for (size_t gi = 0; gi < d->groups && st == KILN_OK; gi++)
      st = product(rt, cv, gi);
    return st;
  }
  size_t elements, pq = cv->p * cv->q;
  kiln_dtype compute;
  step first = first_step(rt, cv, &compute, &elements);
  kiln_buffer *col = NULL; /* sized for the first step, the largest */
  if (st == KILN_OK)
    st = kiln__workspace(rt, "kiln_conv2d", "im2col workspace", compute, elements, &col);
  for (size_t n0 = 0; n0 < d->n && st == KILN_OK; n0 += first.count)
    for (size_t pq0 = 0; pq0 < pq && st == KILN_OK; pq0 += first.rows) {
      step sp = {n0, d->n - n0 < first.count ? d->n - n0 : first.count, pq0,
                 pq - pq0 < first.rows ? pq - pq0 : first.rows};
      for (size_t gi = 0; gi < d->groups && st == KILN_OK; gi++)
        st = im2col_product(rt, cv, &sp, gi, col);
    }
  kiln_buffer_destroy(col);
  return st;
}

uint64_t kiln__conv_workspace(kiln_runtime *rt, const kiln__conv *cv, kiln_backend id)
{
  return id == KILN_BACKEND_DIRECT ? 0 : im2col_workspace(rt, cv);
}

const kiln__conv_backend kiln__conv_direct = {KILN_BACKEND_DIRECT, can_direct, direct,
                                              NULL};
const kiln__conv_backend kiln__conv_im2col = {KILN_BACKEND_IM2COL, can_im2col,
                                              im2col_gemm, im2col_workspace};
