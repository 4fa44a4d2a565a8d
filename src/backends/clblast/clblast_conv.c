/*
 * clblast_conv.c — the CLBlast convolution backend: a checked kiln__conv
 * becomes CLBlast{S,D}convgemm calls on the runtime's queue, one per chunk
 * of images. Built only when meson finds CLBlast.
 *
 * What convgemm computes (CLBlast 1.5.3; its kernels as the library embeds
 * them, and the reference in its test/routines/levelx/xconvgemm.hpp):
 *  - x is NCHW, im[((n * c + ci) * h + hi) * w + wi]; the kernel is
 *    [k][c][r][s]; the result is NCHW, y[((n * k + co) * p + pi) * q + qi].
 *    These are kiln's NCHW layouts exactly.
 *  - CLBlastKernelModeCrossCorrelation reads the filter unflipped, as kiln's
 *    (and every deep-learning framework's) convolution does; the other mode
 *    flips it.
 *  - One pad_h and one pad_w, added on both sides; stride and dilation per
 *    axis; no groups, bias or activation. Its output size is kiln's formula
 *    (and 1 where kiln's would be empty, which kiln refuses earlier).
 *  - It works by im2col into a temporary col matrix of c*r*s x p*q per
 *    image for every image of the call, then a GEMM (its XgemmDirect). Each
 *    image's im2col is waited for inside the call, so the call blocks until
 *    its im2col is done; the GEMM is left enqueued, and its event is the one
 *    returned.
 *  - Every size, offset and index reaches its kernels as 32-bit int: the
 *    image offset of the last image, the col offset of the last image of a
 *    call, the result offset.
 *
 * Why the checks in cannot() exist (kiln_conv2d()'s spec, or nothing):
 *  - groups, asymmetric padding, bias and ReLU: convgemm has none of them,
 *    and adding kiln's own epilogue would make this backend kiln's.
 *  - NHWC: convgemm reads and writes NCHW only. The two orders coincide when
 *    no axis they swap has more than one element, so such requests run.
 *  - float16: Hconvgemm needs cl_khr_fp16 and accumulates in half (unit
 *    roundoff 2^-11 per step of a c*r*s-long sum); kiln's float16
 *    convolution accumulates in float32.
 *  - The int indices above, with a margin for the GEMM's tile rounding.
 *
 * Memory: the col matrix is CLBlast's own allocation, outside kiln's
 * accounting, so run() cuts the batch into chunks whose col matrix fits the
 * device's largest allocation and what is left of kiln's memory budget
 * (issue 7's "chunked over the batch"); a request whose one image does not
 * fit is refused. As elsewhere, CLBlast's first call of a routine and
 * precision on a context compiles its kernels (seconds on a CPU device), and
 * on an OpenCL error it prints a line to stderr itself.
 */
#include <limits.h>

/* base/util.h first: it sets CL_TARGET_OPENCL_VERSION for the OpenCL headers
 * that clblast_c.h includes. */
#include "backends/clblast/clblast.h"
#include "base/error.h"
#include "base/util.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "profile/profile.h"

#include <clblast_c.h>

/* The largest element index kiln lets CLBlast's int arithmetic reach: the
 * GEMM rounds the patches and kernels up to its tiles (WGD, at most 128 in
 * its database) and steps past the end before its bounds checks. */
#define INT_LIMIT ((size_t)INT_MAX - ((size_t)1 << 16))

/* a * b * c, or SIZE_MAX when it overflows. */
static size_t product(size_t a, size_t b, size_t c)
{
  size_t ab, abc;
  if (kiln__mul_overflow(a, b, &ab) || kiln__mul_overflow(ab, c, &abc))
    return SIZE_MAX;
  return abc;
}

/* Elements of one image's col matrix: (c * r * s) x (p * q). */
static size_t col_elements(const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t patch = product(d->c, d->r, d->s), spots = product(cv->p, cv->q, 1);
  return product(patch, spots, 1);
}

/* Images per convgemm call: as many as the col matrix of the call lets fit
 * in int indices, one allocation and the memory budget left; 0 when not
 * even one image does. */
static size_t images_per_call(kiln_runtime *rt, const kiln__conv *cv)
{
  size_t esize = kiln_dtype_size(cv->d.dtype), col = col_elements(cv);
  kiln_memory_usage mem;
  kiln_memory_usage_init(&mem);
  if (col > INT_LIMIT || kiln_memory_stats(rt, &mem) != KILN_OK)
    return 0;
  uint64_t room = mem.max_alloc_bytes;
  uint64_t left =
    mem.limit_bytes > mem.current_bytes ? mem.limit_bytes - mem.current_bytes : 0;
  if (left < room)
    room = left;
  uint64_t fit = room / ((uint64_t)col * esize);
  if (fit > INT_LIMIT / col)
    fit = INT_LIMIT / col;
  return fit < cv->d.n ? (size_t)fit : cv->d.n;
}

/* Whether NHWC storage of x, weights and y is their NCHW storage: each
 * swapped pair of axes has one side of extent 1 (groups is 1 here). */
static int nhwc_is_nchw(const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  return (d->c == 1 || d->h * d->w == 1) && (d->k == 1 || cv->p * cv->q == 1) &&
         (d->c == 1 || d->r * d->s == 1);
}

/* Whether every size, index and offset convgemm computes stays within int
 * (kiln_conv2d() has checked n, c, h, w, k, r, s, p and q below 2^31, not
 * the strides, pads and dilations). */
static int fits_int(const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  const size_t each[] = {d->stride_h, d->stride_w,   d->pad_top,
                         d->pad_left, d->dilation_h, d->dilation_w};
  for (size_t i = 0; i < sizeof each / sizeof each[0]; i++)
    if (each[i] > INT_LIMIT / 4)
      return 0;
  return product(d->n, d->c, product(d->h, d->w, 1)) <= INT_LIMIT &&
         product(d->k, d->c, product(d->r, d->s, 1)) <= INT_LIMIT &&
         product(d->n, d->k, product(cv->p, cv->q, 1)) <= INT_LIMIT &&
         product(d->r, d->dilation_h, 1) <= INT_LIMIT / 4 &&
         product(d->s, d->dilation_w, 1) <= INT_LIMIT / 4 &&
         d->h + 2 * d->pad_top <= INT_LIMIT && d->w + 2 * d->pad_left <= INT_LIMIT;
}

static const char *cannot_type(kiln_runtime *rt, kiln_dtype dtype)
{
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  switch (dtype) {
  case KILN_F32: return NULL;
  case KILN_F64:
    return dev->has_fp64 ? NULL
                         : "the device has no fp64 (cl_khr_fp64), which CLBlast's "
                           "Dconvgemm needs";
  case KILN_F16:
    return dev->has_fp16 ? "CLBlast's Hconvgemm accumulates in half precision; "
                           "kiln's float16 convolution accumulates in float32"
                         : "the device has no cl_khr_fp16, which CLBlast's "
                           "Hconvgemm needs (and Hconvgemm accumulates in half, "
                           "where kiln's float16 convolution accumulates in float32)";
  default: return "kiln runs CLBlast's convgemm on float32 and float64 only";
  }
}

static const char *cannot(kiln_runtime *rt, const kiln__conv *cv)
{
  const kiln_conv2d_desc *d = &cv->d;
  const char *why = cannot_type(rt, d->dtype);
  if (why)
    return why;
  if (d->groups > 1)
    return "CLBlast's convgemm has no groups; the direct and im2col backends do";
  if (d->pad_top != d->pad_bottom || d->pad_left != d->pad_right)
    return "CLBlast's convgemm pads each axis by the same amount on both sides";
  if (cv->bias)
    return "CLBlast's convgemm adds no bias; the direct and im2col backends do";
  if (d->activation)
    return "CLBlast's convgemm has no activation; the direct and im2col backends do";
  if (d->layout == KILN_NHWC && !nhwc_is_nchw(cv))
    return "CLBlast's convgemm reads and writes NCHW only";
  if (!fits_int(cv))
    return "CLBlast's convgemm takes every size as a 32-bit int and indexes x, "
           "the weights and y with it, and this convolution reaches beyond "
           "2^31 - 2^16";
  if (!images_per_call(rt, cv))
    return "CLBlast's im2col matrix for one image does not fit in one "
           "allocation, kiln's memory budget left, or 32-bit int indices";
  return NULL;
}

/* One call over `count` images from image `first`; X is S or D. */
#define CLBLAST_CONVGEMM(X)                                                              \
  CLBlast##X##convgemm(CLBlastKernelModeCrossCorrelation, d->c, d->h, d->w, d->r, d->s,  \
                       d->pad_top, d->pad_left, d->stride_h, d->stride_w, d->dilation_h, \
                       d->dilation_w, d->k, count, cv->x,                                \
                       cv->off_x + first * d->c * d->h * d->w, cv->w, cv->off_w, cv->y,  \
                       cv->off_y + first * d->k * cv->p * cv->q, &queue, &ev)

static kiln_status run(kiln_runtime *rt, const kiln__conv *cv)
{
  const char *why = cannot(rt, cv);
  if (why) /* the dispatcher asks cannot() first; this is a safety net */
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED, "kiln_conv2d(clblast): %s", why);
  const kiln_conv2d_desc *d = &cv->d;
  size_t chunk = images_per_call(rt, cv);
  kiln__clblast_use(rt);
  kiln__profile_mark(rt); /* CLBlast's event is its last kernel's */
  for (size_t first = 0; first < d->n; first += chunk) {
    size_t count = d->n - first < chunk ? d->n - first : chunk;
    cl_command_queue queue = kiln__queue(rt);
    cl_event ev = NULL;
    int dbl = d->dtype == KILN_F64;
    kiln__clblast_lock();
    CLBlastStatusCode st = dbl ? CLBLAST_CONVGEMM(D) : CLBLAST_CONVGEMM(S);
    kiln__clblast_unlock();
    if (st != CLBlastSuccess) {
      if (ev)
        clReleaseEvent(ev);
      return kiln__fail_clblast(rt, st, dbl ? "CLBlastDconvgemm" : "CLBlastSconvgemm",
                                "kiln_conv2d: images %zu to %zu of %zu, %zu x %zu x "
                                "%zu into %zu channels by %zu x %zu, %s",
                                first, first + count - 1, d->n, d->c, d->h, d->w, d->k,
                                d->r, d->s, kiln_dtype_name(d->dtype));
    }
    if (ev) {
      kiln_status ts = kiln__runtime_track(rt, ev, "kiln_conv2d(clblast)");
      if (ts != KILN_OK)
        return ts;
    }
  }
  return KILN_OK;
}

#undef CLBLAST_CONVGEMM

/* CLBlast allocates its col matrix itself, outside kiln's pool; the room
 * kiln's im2col would take stands in for it when kiln_conv2d_host() cuts
 * the batch, as it always has. */
static uint64_t workspace(kiln_runtime *rt, const kiln__conv *cv)
{
  return kiln__conv_workspace(rt, cv, KILN_BACKEND_CLBLAST);
}

const kiln__conv_backend kiln__conv_clblast = {KILN_BACKEND_CLBLAST, cannot, run,
                                               workspace};
