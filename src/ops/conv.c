/*
 * conv.c — kiln_conv2d(): checks the request against the buffers and the
 * device, resolves its defaults, chooses a backend and dispatches.
 */
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

/* Fills the defaults (1 for strides, dilations, groups; relu as the
 * activation). */
static kiln_conv2d_desc resolved(const kiln_conv2d_desc *d)
{
  kiln_conv2d_desc r = *d;
  if (r.relu && r.activation == KILN_ACTIVATION_NONE)
    r.activation = KILN_ACTIVATION_RELU;
  r.stride_h = r.stride_h ? r.stride_h : 1;
  r.stride_w = r.stride_w ? r.stride_w : 1;
  r.dilation_h = r.dilation_h ? r.dilation_h : 1;
  r.dilation_w = r.dilation_w ? r.dilation_w : 1;
  r.groups = r.groups ? r.groups : 1;
  return r;
}

/* One output side: (padded - dilation * (f - 1) - 1) / stride + 1; -1 when
 * the dilated filter does not fit, a product too large for size_t included
 * (wrapped, it would look small and fit). */
static int side(size_t padded, size_t f, size_t dil, size_t stride, size_t *out)
{
  size_t reach; /* from the filter's first tap to its last */
  if (f == 0 || kiln__mul_overflow(dil, f - 1, &reach) || reach >= padded)
    return -1;
  *out = (padded - reach - 1) / stride + 1;
  return 0;
}

/* in + pad_a + pad_b, or -1 when it is 2^31 or more: the kernels compute an
 * input row or column as (int)(pi * stride + ri * dilation) - (int)pad in
 * 32 bits, which is exact only below that. */
static int padded_side(size_t in, size_t pad_a, size_t pad_b, size_t *padded)
{
  if (kiln__add_overflow(in, pad_a, padded) || kiln__add_overflow(*padded, pad_b, padded))
    return -1;
  return *padded < (size_t)1 << 31 ? 0 : -1;
}

static kiln_status check_sizes(kiln_runtime *rt, const kiln_conv2d_desc *d, size_t *p,
                               size_t *q)
{
  const size_t limit = (size_t)1 << 31; /* kernels index with 32-bit sizes */
  if (!d->n || !d->c || !d->h || !d->w || !d->k || !d->r || !d->s)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_conv2d: n, c, h, w, k, r, s are %zu, %zu, %zu, %zu, %zu, "
                      "%zu, %zu; expected all above 0",
                      d->n, d->c, d->h, d->w, d->k, d->r, d->s);
  if (d->c % d->groups || d->k % d->groups)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_conv2d: %zu groups do not divide %s = %zu; expected c "
                      "(%zu) and k (%zu) to be multiples of groups",
                      d->groups, d->c % d->groups ? "c" : "k",
                      d->c % d->groups ? d->c : d->k, d->c, d->k);
  size_t ph, pw;
  if (padded_side(d->h, d->pad_top, d->pad_bottom, &ph) ||
      padded_side(d->w, d->pad_left, d->pad_right, &pw))
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                      "kiln_conv2d: the input padded is %zu + %zu + %zu rows and %zu + "
                      "%zu + %zu columns; expected each below 2^31",
                      d->h, d->pad_top, d->pad_bottom, d->w, d->pad_left, d->pad_right);
  if (side(ph, d->r, d->dilation_h, d->stride_h, p) ||
      side(pw, d->s, d->dilation_w, d->stride_w, q))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_conv2d: a %zu x %zu filter (dilation %zu x %zu) does not "
                      "fit the %zu x %zu input padded by %zu, %zu, %zu, %zu: the output "
                      "would have no rows or columns",
                      d->r, d->s, d->dilation_h, d->dilation_w, d->h, d->w, d->pad_top,
                      d->pad_bottom, d->pad_left, d->pad_right);
  size_t dims[] = {d->n, d->c, d->h, d->w, d->k, d->r, d->s, *p, *q};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    if (dims[i] >= limit)
      return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                        "kiln_conv2d: a size of %zu; expected each below 2^31", dims[i]);
  return KILN_OK;
}

KILN_API kiln_status kiln_conv2d_output(const kiln_conv2d_desc *desc, size_t *p,
                                        size_t *q)
{
  if (!desc || !p || !q)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d_output: %s is NULL",
                      !desc ? "desc"
                      : !p  ? "p"
                            : "q");
  kiln_conv2d_desc d;
  kiln_status st =
    KILN__STRUCT_IN(NULL, "kiln_conv2d_output", kiln_conv2d_desc, desc, &d);
  if (st != KILN_OK)
    return st;
  d = resolved(&d);
  return check_sizes(NULL, &d, p, q);
}

/* Checks a buffer holds `count` elements of dtype (the count overflow-safe). */
static kiln_status holds(kiln_runtime *rt, const kiln_buffer *b, const char *name,
                         kiln_dtype dtype, const size_t *dims, size_t ndims)
{
  size_t need = 1;
  for (size_t i = 0; i < ndims; i++)
    if (kiln__mul_overflow(need, dims[i], &need))
      return kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_conv2d: %s's size overflows", name);
  return kiln__check_operand(rt, "kiln_conv2d", name, b, dtype, need, NULL);
}

kiln_status kiln__conv_plan(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                            kiln__conv *cv)
{
  kiln_conv2d_desc d = resolved(desc);
  if (d.dtype != KILN_F32 && d.dtype != KILN_F64 && d.dtype != KILN_F16)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "kiln_conv2d: dtype %s; expected float16, float32 or float64",
                      kiln_dtype_name(d.dtype));
  if (d.dtype == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
    return kiln__no_fp64(rt, "kiln_conv2d", "float64");
  if ((unsigned)d.layout > KILN_NHWC)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_conv2d: layout %d; expected KILN_NCHW or KILN_NHWC",
                      (int)d.layout);
  if ((unsigned)d.activation > KILN_ACTIVATION_TANH)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_conv2d: activation %d; expected KILN_ACTIVATION_NONE, _RELU, "
                      "_GELU, _SIGMOID or _TANH",
                      (int)d.activation);
  if (d.relu && d.activation != KILN_ACTIVATION_RELU)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_conv2d: relu is set and activation is %s; expected one "
                      "activation (relu is activation KILN_ACTIVATION_RELU)",
                      kiln_activation_name(d.activation));
  size_t p, q;
  kiln_status st = check_sizes(rt, &d, &p, &q);
  if (st == KILN_OK)
    *cv = (kiln__conv){.d = d, .p = p, .q = q};
  return st;
}

static kiln_status check(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                         const kiln_buffer *x, const kiln_buffer *wt,
                         const kiln_buffer *bias, kiln_buffer *y, kiln__conv *cv)
{
  kiln_status st = kiln__conv_plan(rt, desc, cv);
  if (st != KILN_OK)
    return st;
  const kiln_conv2d_desc *d = &cv->d;
  size_t xd[] = {d->n, d->c, d->h, d->w}, wd[] = {d->k, d->c / d->groups, d->r, d->s},
         bd[] = {d->k}, yd[] = {d->n, d->k, cv->p, cv->q};
  st = holds(rt, x, "x", d->dtype, xd, 4);
  if (st == KILN_OK)
    st = holds(rt, wt, "weights", d->dtype, wd, 4);
  if (st == KILN_OK && bias)
    st = holds(rt, bias, "bias", d->dtype, bd, 1);
  if (st == KILN_OK)
    st = holds(rt, y, "y", d->dtype, yd, 4);
  if (st != KILN_OK)
    return st;
  cv->x = kiln__buffer_mem(x);
  cv->w = kiln__buffer_mem(wt);
  cv->y = kiln__buffer_mem(y);
  cv->bias = bias ? kiln__buffer_mem(bias) : NULL;
  cv->off_x = kiln__buffer_first(x);
  cv->off_w = kiln__buffer_first(wt);
  cv->off_y = kiln__buffer_first(y);
  cv->off_bias = kiln__buffer_first(bias);
  cv->wbuf = wt;
  cv->ybuf = y;
  return KILN_OK;
}

int kiln__conv_depthwise_kernel(const kiln_conv2d_desc *d, int gpu)
{
  if (!gpu || !d->c || d->groups != d->c || d->k % d->c != 0)
    return 0;
  /* The tile's input rows and columns (cl/conv.cl, kiln_conv_dw) */
  uint64_t th = (uint64_t)(KILN__CONV_DW_LY - 1) * d->stride_h +
                (uint64_t)(d->r - 1) * d->dilation_h + 1,
           tw = (uint64_t)(KILN__CONV_DW_LX * KILN__CONV_DW_QW - 1) * d->stride_w +
                (uint64_t)(d->s - 1) * d->dilation_w + 1;
  return th * tw <= KILN__CONV_DW_TILE;
}

int kiln__conv_implicit_gemm(const kiln_conv2d_desc *d, int gpu)
{
  if (!gpu || !d->groups || d->groups == d->c)
    return 0;
  /* a slice of the kernel's 16 depths and a tile's 64 channels mostly full */
  return d->c / d->groups * d->r * d->s >= 16 && d->k / d->groups >= 8;
}

/*
 * AUTO's rules; docs/performance.md ("Convolution: AUTO's rules") has the
 * figures behind each. On a CPU, im2col + kiln's GEMM wherever a group's
 * reduction (c/g * r * s) is long enough to feed the GEMM's tiles, else the
 * direct kernel. On a GPU: a depthwise layer never goes through im2col (its
 * matrix is one row per group: a GEMM per group that a GPU cannot fill);
 * a 1x1 layer is one GEMM, im2col's; a wider filter goes to CLBlast's
 * convgemm where built in and able, else to the direct backend, whose GPU
 * shape runs the implicit GEMM where it takes the layer; else the direct
 * kernel at stride 1 and im2col above it.
 */
kiln_backend kiln__conv_rule(const kiln_conv2d_desc *d, int gpu, int clblast)
{
  size_t per_group = d->c / d->groups, taps = d->r * d->s;
  if (!gpu)
    return per_group * taps < 64 ? KILN_BACKEND_DIRECT : KILN_BACKEND_IM2COL;
  if (per_group == 1)
    return KILN_BACKEND_DIRECT;
  if (taps == 1)
    return KILN_BACKEND_IM2COL;
  if (clblast)
    return KILN_BACKEND_CLBLAST;
  if (kiln__conv_implicit_gemm(d, gpu)) /* the direct backend's, no buffer */
    return KILN_BACKEND_DIRECT;
  return d->stride_h == 1 && d->stride_w == 1 ? KILN_BACKEND_DIRECT : KILN_BACKEND_IM2COL;
}

static const kiln__conv_backend *backend_table(kiln_backend id);

static kiln_backend auto_choice(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln__conv_backend *clblast = backend_table(KILN_BACKEND_CLBLAST);
  return kiln__conv_rule(&cv->d, kiln__gpu_shape(rt),
                         clblast && !clblast->cannot(rt, cv));
}

/* The backend of id, or NULL for none (or one not built in). */
static const kiln__conv_backend *backend_table(kiln_backend id)
{
  for (const kiln__conv_backend *const *be = kiln__conv_backends; *be; be++)
    if ((*be)->id == id)
      return *be;
  return NULL;
}

/* The key of cv's per-shape choice: all that can change which backend is
 * fastest. */
static void conv_key(const kiln__conv *cv, char *key, size_t size)
{
  const kiln_conv2d_desc *d = &cv->d;
  snprintf(key, size,
           "conv2d %s %s %zux%zux%zux%zu k%zu %zux%zu stride %zu,%zu pad %zu,%zu,%zu,%zu "
           "dilation %zu,%zu groups %zu%s%s%s",
           kiln_dtype_name(d->dtype), d->layout == KILN_NHWC ? "nhwc" : "nchw", d->n,
           d->c, d->h, d->w, d->k, d->r, d->s, d->stride_h, d->stride_w, d->pad_top,
           d->pad_bottom, d->pad_left, d->pad_right, d->dilation_h, d->dilation_w,
           d->groups, cv->bias ? " bias" : "", d->activation ? " " : "",
           d->activation ? kiln_activation_name(d->activation) : "");
}

kiln_status kiln__conv_choose(kiln_runtime *rt, const kiln__conv *cv,
                              const kiln__conv_backend **out)
{
  kiln_backend id = cv->d.backend;
  if (id == KILN_BACKEND_AUTO) {
    char key[256];
    conv_key(cv, key, sizeof key);
    const kiln__conv_backend *chosen = backend_table(kiln__choice_find(rt, key));
    id = chosen && !chosen->cannot(rt, cv) ? chosen->id : auto_choice(rt, cv);
    /* The rules' pick may be one this device cannot run; the other may. */
    kiln_backend other =
      id == KILN_BACKEND_DIRECT ? KILN_BACKEND_IM2COL : KILN_BACKEND_DIRECT;
    if (backend_table(id)->cannot(rt, cv) && !backend_table(other)->cannot(rt, cv))
      id = other;
  }
  *out = backend_table(id);
  if (!*out)
    return kiln__backend_unknown(rt, "kiln_conv2d", id,
                                 "AUTO, IM2COL, DIRECT or CLBLAST");
  return kiln__backend_refuses(rt, "kiln_conv2d", id, "convolution",
                               (*out)->cannot(rt, cv));
}

static kiln_status trial(kiln_runtime *rt, const void *req, kiln_backend id,
                         kiln_buffer *out)
{
  kiln__conv cv = *(const kiln__conv *)req;
  cv.y = kiln__buffer_mem(out); /* scratch: a fresh copy of the y view */
  cv.off_y = 0;
  cv.ybuf = out;
  return backend_table(id)->run(rt, &cv);
}

static int can(kiln_runtime *rt, const void *req, kiln_backend id)
{
  return backend_table(id) && !backend_table(id)->cannot(rt, req);
}

/* Benchmark mode (choice.c): the first AUTO call of a shape with no
 * recorded choice times every backend that can run it and runs the
 * fastest; *be is the rules' pick on entry. */
static void benchmark(kiln_runtime *rt, const kiln__conv *cv,
                      const kiln__conv_backend **be)
{
  static const kiln_backend all[] = {KILN_BACKEND_IM2COL, KILN_BACKEND_DIRECT,
                                     KILN_BACKEND_CLBLAST};
  char key[256];
  conv_key(cv, key, sizeof key);
  kiln__bench b = {key, (*be)->id, all,   KILN__COUNT(all), can, trial,
                   cv,  cv->ybuf,  {0, 0}};
  kiln_backend w = kiln__choice_benchmark(rt, &b);
  if (w != KILN_BACKEND_AUTO)
    *be = backend_table(w);
}

kiln_status kiln__conv_check(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                             const kiln_buffer *x, const kiln_buffer *weights,
                             const kiln_buffer *bias, kiln_buffer *y, kiln__conv *cv,
                             const kiln__conv_backend **be)
{
  kiln_status st = check(rt, desc, x, weights, bias, y, cv);
  return st == KILN_OK ? kiln__conv_choose(rt, cv, be) : st;
}

KILN_API kiln_status kiln_conv2d(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                                 const kiln_buffer *x, const kiln_buffer *weights,
                                 const kiln_buffer *bias, kiln_buffer *y)
{
  kiln_conv2d_desc given;
  kiln__profile_scope ps;
  kiln_status st =
    KILN__OP_BEGIN(rt, "kiln_conv2d", kiln_conv2d_desc, desc, &given, &ps, "conv2d");
  if (st != KILN_OK)
    return st;
  kiln__conv cv;
  const kiln__conv_backend *be = NULL;
  st = kiln__conv_check(rt, &given, x, weights, bias, y, &cv, &be);
  if (st == KILN_OK && rt->tuning->benchmark && given.backend == KILN_BACKEND_AUTO)
    benchmark(rt, &cv, &be);
  if (st == KILN_OK) {
    const kiln_conv2d_desc *d = &cv.d;
    uint64_t outputs = (uint64_t)d->n * d->k * cv.p * cv.q;
    uint64_t taps = (uint64_t)d->c / d->groups * d->r * d->s;
    uint64_t elements =
      (uint64_t)d->n * d->c * d->h * d->w + d->k * taps + outputs + (bias ? d->k : 0);
    kiln__profile_describe(&ps, kiln_backend_name(be->id),
                           elements * kiln_dtype_size(d->dtype), 2 * outputs * taps,
                           "%zux%zux%zux%zu k%zu %zux%zu %s", d->n, d->c, d->h, d->w,
                           d->k, d->r, d->s, kiln_dtype_name(d->dtype));
    assert(cv.d.stride_h >= 1 && cv.d.stride_w >= 1 && cv.d.groups >= 1);
    st = be->run(rt, &cv);
  }
  return kiln__profile_end(&ps, st);
}
