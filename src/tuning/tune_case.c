/*
 * tune_case.c — kiln_tune()'s cases (tune.c): for each kernel a case whose
 * answer is known exactly, to check a candidate, and a larger one to time
 * it; and the work of each timed case, for the speeds tuning measured.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "tuning/tune.h"
#include "tuning/tuning.h"

/* ---- the cases ------------------------------------------------------------- */

/* A small whole number at (i, j): exact in half, float and double, and so
 * are the products' sums at the check's sizes. */
static int small(size_t i, size_t j)
{
  return (int)((i * 7 + j * 3) % 5) - 2;
}

static uint16_t half_of(int v)
{
  static const uint16_t bits[5] = {0xC000, 0xBC00, 0x0000, 0x3C00, 0x4000};
  return bits[v + 2];
}

static kiln_dtype gemm_dtype(int variant)
{
  return variant == KILN__GEMM_F64   ? KILN_F64
         : variant == KILN__GEMM_F16 ? KILN_F16
                                     : KILN_F32;
}

/* Fills buffer b (rows x cols, row-major) with small(). */
static kiln_status fill_small(kiln_buffer *b, kiln_dtype t, size_t rows, size_t cols)
{
  size_t n = rows * cols, es = kiln_dtype_size(t);
  unsigned char *host = malloc(n * es);
  if (!host)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) {
      int v = small(i, j);
      size_t at = (i * cols + j) * es;
      if (t == KILN_F16) {
        uint16_t h = half_of(v);
        memcpy(host + at, &h, es);
      } else if (t == KILN_F64) {
        double d = v;
        memcpy(host + at, &d, es);
      } else {
        float f = (float)v;
        memcpy(host + at, &f, es);
      }
    }
  kiln_status st = kiln_buffer_write(b, 0, n, host);
  free(host);
  return st;
}

/* GEMM: checked at 67 x 45 x 71 (odd, so every tile is padded), timed at
 * 1024 (f32) or 512 (f16 storage, f64); A's blocks (akib, f32) at 2048,
 * where A (16 MiB) outgrows a CPU's last-level cache. On a GPU (the
 * device's type: a test's GPU shape on a CPU keeps the CPU's sizes) tiles
 * that win at 512 lose at 8192, so the time is that of two sizes, each
 * with the same work: the size above run (large / size)^3 times, then
 * `large` once, 4 times the size on a device of 32 compute units or more
 * (a discrete GPU; 4096 for f32), twice it below. */
enum { CM = 67, CN = 45, CK = 71 };

typedef struct gemm_sizes {
  size_t small, large, reps; /* large 0: none */
} gemm_sizes;

static gemm_sizes gemm_sizes_of(const kiln_device_info *dev, const kiln__tune_case *b)
{
  size_t s = b->blocks ? 2048 : b->variant == KILN__GEMM_F32 ? 1024 : 512;
  if (b->blocks || !(dev->type & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)))
    return (gemm_sizes){s, 0, 1};
  size_t r = dev->compute_units >= 32 ? 4 : 2;
  return (gemm_sizes){s, r * s, r * r * r};
}

static kiln_status gemm_one(kiln__tune_case *b, size_t s)
{
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, gemm_dtype(b->variant), s, s, s);
  d.backend = KILN_BACKEND_KILN;
  return kiln_gemm(b->rt, &d, b->buf[3], b->buf[4], b->buf[5]);
}

static kiln_status gemm_run(kiln__tune_case *b)
{
  gemm_sizes z = gemm_sizes_of(&kiln__runtime_device(b->rt)->info, b);
  kiln_status st = KILN_OK;
  for (size_t i = 0; st == KILN_OK && i < z.reps; i++)
    st = gemm_one(b, z.small);
  return st == KILN_OK && z.large ? gemm_one(b, z.large) : st;
}

static kiln_status gemm_check(kiln__tune_case *b, int *ok)
{
  kiln_dtype t = gemm_dtype(b->variant);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, t, CM, CN, CK);
  d.backend = KILN_BACKEND_KILN;
  kiln_status st = kiln_gemm(b->rt, &d, b->buf[0], b->buf[1], b->buf[2]);
  size_t es = kiln_dtype_size(t);
  unsigned char *c = malloc(CM * CN * es);
  if (!c)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  if (st == KILN_OK)
    st = kiln_buffer_read(b->buf[2], 0, CM * CN, c);
  *ok = st == KILN_OK;
  for (size_t i = 0; *ok && i < CM; i++)
    for (size_t j = 0; *ok && j < CN; j++) {
      double want = 0, got;
      for (size_t p = 0; p < CK; p++)
        want += (double)small(i, p) * small(p, j);
      if (t == KILN_F16) {
        uint16_t h;
        memcpy(&h, c + (i * CN + j) * es, es);
        got = kiln__half_to_double(h);
      } else if (t == KILN_F64) {
        memcpy(&got, c + (i * CN + j) * es, es);
      } else {
        float f;
        memcpy(&f, c + (i * CN + j) * es, es);
        got = f;
      }
      *ok = got == want;
    }
  free(c);
  return st;
}

/* Reductions: a sum and a max of 2^24 floats (timed), 1000003 (checked). */
enum { RN = 1 << 24, RC = 1000003 };

static kiln_status reduce_one(kiln__tune_case *b, kiln_reduce_op op, size_t n,
                              kiln_buffer *out)
{
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, op, KILN_F32, n);
  d.backend = KILN_BACKEND_KILN;
  return kiln_reduce(b->rt, &d, b->buf[0], out);
}

static kiln_status reduce_run(kiln__tune_case *b)
{
  kiln_status st = reduce_one(b, KILN_REDUCE_SUM, RN, b->buf[1]);
  return st == KILN_OK ? reduce_one(b, KILN_REDUCE_MAX, RN, b->buf[2]) : st;
}

static kiln_status reduce_check(kiln__tune_case *b, int *ok)
{
  float sum = 0, max = 0;
  kiln_status st = reduce_one(b, KILN_REDUCE_SUM, RC, b->buf[1]);
  if (st == KILN_OK)
    st = reduce_one(b, KILN_REDUCE_MAX, RC, b->buf[2]);
  if (st == KILN_OK)
    st = kiln_buffer_read(b->buf[1], 0, 1, &sum);
  if (st == KILN_OK)
    st = kiln_buffer_read(b->buf[2], 0, 1, &max);
  double want = 0;
  for (size_t i = 0; i < RC; i++)
    want += small(i, 0);
  *ok = st == KILN_OK && sum == want && max == 2;
  return st;
}

/* FFT: FCS transforms of 2^16 points one after another, which stay in
 * cache, then one of 2^20 and one of 1024^2 (rows short enough for
 * kiln_fft_rowv, then columns), which stream through memory, timed
 * together: each takes about as long as another, so all count (timed at
 * 2^20 alone, where the vector and scalar kernels ran alike on PoCL, noise
 * picked either; docs/performance.md, "The kernels' parameters" under
 * FFT). 2^16 and 256^2 are
 * checked: pure tones at bin 5 (5, 5 in 2-D), whose transform is the
 * number of points there and 0 elsewhere. */
enum { FN = 1 << 20, FC = 1 << 16, FCS = 16, BIN = 5 };

/* The transform of n points, or a square of side n when ndim is 2. */
static kiln_status fft_one(kiln__tune_case *b, unsigned ndim, size_t n, kiln_buffer *in,
                           kiln_buffer *out)
{
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, n);
  d.ndim = ndim;
  if (ndim == 2)
    d.shape[1] = n;
  d.backend = KILN_BACKEND_KILN;
  return kiln_fft(b->rt, &d, in, out);
}

static kiln_status fft_run(kiln__tune_case *b)
{
  kiln_status st = KILN_OK;
  for (int i = 0; st == KILN_OK && i < FCS; i++)
    st = fft_one(b, 1, FC, b->buf[0], b->buf[1]);
  if (st == KILN_OK)
    st = fft_one(b, 1, FN, b->buf[2], b->buf[3]);
  return st == KILN_OK ? fft_one(b, 2, 1024, b->buf[2], b->buf[3]) : st;
}

/* Whether the FC points of out are FC at `at` and 0 elsewhere. */
static kiln_status fft_peak(kiln_buffer *out, size_t at, int *ok)
{
  float *x = malloc(2 * FC * sizeof *x);
  if (!x)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  kiln_status st = kiln_buffer_read(out, 0, FC, x);
  /* Rounding: log2(n) passes, each adding about eps * |x| to a sum of n
   * terms of size 1; 1e-2 of n's bin is far above that and far below 1. */
  *ok = st == KILN_OK;
  for (size_t k = 0; *ok && k < FC; k++) {
    double re = x[2 * k] - (k == at ? FC : 0), im = x[2 * k + 1];
    *ok = sqrt(re * re + im * im) < 1e-2 * sqrt((double)FC);
  }
  free(x);
  return st;
}

static kiln_status fft_check(kiln__tune_case *b, int *ok)
{
  kiln_status st = fft_one(b, 1, FC, b->buf[0], b->buf[1]);
  if (st == KILN_OK)
    st = fft_peak(b->buf[1], BIN, ok);
  if (st == KILN_OK && *ok)
    st = fft_one(b, 2, 256, b->buf[4], b->buf[5]);
  return st == KILN_OK && *ok ? fft_peak(b->buf[5], BIN * 256 + BIN, ok) : st;
}

/* A tone at bin 5 of n points, or at (5, 5) of n^2 when square. */
static kiln_status tone(kiln_buffer *b, size_t n, int square)
{
  size_t all = square ? n * n : n;
  float *x = malloc(2 * all * sizeof *x);
  if (!x)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  for (size_t j = 0; j < all; j++) {
    size_t phase = square ? BIN * (j / n + j % n) : BIN * j;
    double a = 2 * CL_M_PI * (double)(phase % n) / (double)n;
    x[2 * j] = (float)cos(a);
    x[2 * j + 1] = (float)sin(a);
  }
  kiln_status st = kiln_buffer_write(b, 0, all, x);
  free(x);
  return st;
}

/* Convolution, float32 NCHW with "same" padding: the direct kernel timed on
 * a depthwise 3 x 3 layer (4 images of 128 channels of 56 x 56, what AUTO
 * gives it), im2col on ResNet's 3 x 3 layer (2 images, 64 -> 64 channels of
 * 56 x 56: 7 MiB of im2col matrix an image); both checked on 2 x 6 x 31 x
 * 29 -> 10 channels (k not a multiple of most blocks, the image more than
 * the smallest im2col step), whose sums of at most 54 products of small()
 * are exact. */
typedef struct conv_shape {
  size_t n, c, hw, k, groups;
} conv_shape;

static const conv_shape conv_timed[2] = {{4, 128, 56, 128, 128}, {2, 64, 56, 64, 1}};
enum { XN = 2, XC = 6, XH = 31, XW = 29, XK = 10 };

static kiln_conv2d_desc conv_desc(int variant, size_t n, size_t c, size_t h, size_t w,
                                  size_t k, size_t groups)
{
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, n, c, h, w, k, 3, 3);
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.groups = groups;
  d.backend = variant ? KILN_BACKEND_IM2COL : KILN_BACKEND_DIRECT;
  return d;
}

static kiln_status conv_run(kiln__tune_case *b)
{
  const conv_shape *l = &conv_timed[b->variant];
  kiln_conv2d_desc d = conv_desc(b->variant, l->n, l->c, l->hw, l->hw, l->k, l->groups);
  return kiln_conv2d(b->rt, &d, b->buf[3], b->buf[4], NULL, b->buf[5]);
}

static kiln_status conv_check(kiln__tune_case *b, int *ok)
{
  kiln_conv2d_desc d = conv_desc(b->variant, XN, XC, XH, XW, XK, 1);
  kiln_status st = kiln_conv2d(b->rt, &d, b->buf[0], b->buf[1], NULL, b->buf[2]);
  float *y = malloc(XN * XK * XH * XW * sizeof *y);
  if (!y)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  if (st == KILN_OK)
    st = kiln_buffer_read(b->buf[2], 0, XN * XK * XH * XW, y);
  *ok = st == KILN_OK;
  /* x (XN * XC rows of XH * XW) and w (XK * XC rows of 9) are small(). */
  for (size_t i = 0; *ok && i < (size_t)XN * XK * XH * XW; i++) {
    size_t qi = i % XW, pi = i / XW % XH, ki = i / (XW * XH) % XK,
           ni = i / (XW * XH * XK);
    double want = 0;
    for (size_t cj = 0; cj < XC; cj++)
      for (size_t rs = 0; rs < 9; rs++) {
        size_t hi = pi + rs / 3, wi = qi + rs % 3; /* + 1 of padding */
        if (hi >= 1 && hi <= XH && wi >= 1 && wi <= XW)
          want +=
            (double)small(ni * XC + cj, (hi - 1) * XW + wi - 1) * small(ki * XC + cj, rs);
      }
    *ok = y[i] == want;
  }
  free(y);
  return st;
}

static kiln_status conv_make(kiln_runtime *rt, int variant, kiln__tune_case *b)
{
  static const char *const names[] = {"conv direct", "conv im2col"};
  *b = (kiln__tune_case){names[variant], rt, {0}, variant, conv_run, conv_check, 0};
  const conv_shape *l = &conv_timed[variant];
  size_t n[6] = {XN * XC * XH * XW,           XK * XC * 9,
                 XN * XK * XH * XW,           l->n * l->c * l->hw * l->hw,
                 l->k * l->c / l->groups * 9, l->n * l->k * l->hw * l->hw};
  kiln_status st = KILN_OK;
  for (int i = 0; st == KILN_OK && i < 6; i++)
    st = kiln_buffer_create(rt, KILN_F32, n[i], 0, &b->buf[i]);
  if (st == KILN_OK)
    st = fill_small(b->buf[0], KILN_F32, XN * XC, XH * XW);
  if (st == KILN_OK)
    st = fill_small(b->buf[1], KILN_F32, XK * XC, 9);
  if (st == KILN_OK)
    st = fill_small(b->buf[3], KILN_F32, n[3] / (l->hw * l->hw), l->hw * l->hw);
  if (st == KILN_OK)
    st = fill_small(b->buf[4], KILN_F32, l->k, n[4] / l->k);
  return st;
}

/* The work of kernel's timed case above (flops; bytes read for the
 * reductions), to turn a measured time into a speed; 0 for another name. */
static double timed_work(const kiln_device_info *dev, const char *kernel)
{
  static const char *const gemm[] = {"gemm f32", "gemm f16", "gemm f64", "gemm blocks"};
  static const char *const conv[] = {"conv direct", "conv im2col"};
  for (int v = 0; v <= KILN__GEMM_VARIANTS; v++)
    if (strcmp(kernel, gemm[v]) == 0) {
      kiln__tune_case b = {.variant = v % KILN__GEMM_VARIANTS,
                           .blocks = v == KILN__GEMM_VARIANTS};
      gemm_sizes z = gemm_sizes_of(dev, &b);
      double s = (double)z.small, l = (double)z.large;
      return 2 * (s * s * s * (double)z.reps + l * l * l);
    }
  for (int v = 0; v < 2; v++)
    if (strcmp(kernel, conv[v]) == 0) {
      const conv_shape *l = &conv_timed[v];
      return 2.0 * 9 * (double)(l->n * l->k * l->hw * l->hw) * (double)(l->c / l->groups);
    }
  if (strcmp(kernel, "fft") == 0)
    return 5.0 * (2 * FN * 20.0 + FCS * FC * 16.0); /* 5 n log2 n a transform */
  if (strcmp(kernel, "reduce") == 0)
    return 2.0 * RN * sizeof(float); /* a sum and a max */
  return 0;
}

double kiln__tuned_speed(const kiln_runtime *rt, const char *kernel)
{
  const kiln__tuning_state *s = rt->tuning;
  for (size_t i = 0; s && i < s->nmeasured; i++)
    if (strcmp(s->measured[i].kernel, kernel) == 0 && s->measured[i].to_s > 0)
      return timed_work(&kiln__runtime_device(rt)->info, kernel) / s->measured[i].to_s;
  return 0;
}

void kiln__tune_case_free(kiln__tune_case *b)
{
  for (size_t i = 0; i < sizeof b->buf / sizeof b->buf[0]; i++)
    kiln_buffer_destroy(b->buf[i]);
}

kiln_status kiln__tune_case_make(kiln_runtime *rt, int what, int variant,
                                 kiln__tune_case *b)
{
  static const char *const gemm_names[] = {"gemm f32", "gemm f16", "gemm f64"};
  kiln_status st = KILN_OK;
  if (what == 0 || what == 4) {
    kiln_dtype t = gemm_dtype(variant);
    *b = (kiln__tune_case){what == 4 ? "gemm blocks" : gemm_names[variant],
                           rt,
                           {0},
                           variant,
                           gemm_run,
                           gemm_check,
                           what == 4};
    gemm_sizes z = gemm_sizes_of(&kiln__runtime_device(rt)->info, b);
    size_t s = z.large > z.small ? z.large : z.small;
    size_t n[6] = {CM * CK, CK * CN, CM * CN, s * s, s * s, s * s};
    for (int i = 0; st == KILN_OK && i < 6; i++)
      st = kiln_buffer_create(rt, t, n[i], 0, &b->buf[i]);
    if (st == KILN_OK)
      st = fill_small(b->buf[0], t, CM, CK);
    if (st == KILN_OK)
      st = fill_small(b->buf[1], t, CK, CN);
    if (st == KILN_OK)
      st = fill_small(b->buf[3], t, s, s);
    if (st == KILN_OK)
      st = fill_small(b->buf[4], t, s, s);
  } else if (what == 1) {
    *b = (kiln__tune_case){"reduce", rt, {0}, 0, reduce_run, reduce_check, 0};
    st = kiln_buffer_create(rt, KILN_F32, RN, 0, &b->buf[0]);
    for (int i = 1; st == KILN_OK && i < 3; i++)
      st = kiln_buffer_create(rt, KILN_F32, 1, 0, &b->buf[i]);
    if (st == KILN_OK)
      st = fill_small(b->buf[0], KILN_F32, RN, 1);
  } else if (what == 3) {
    st = conv_make(rt, variant, b);
  } else {
    *b = (kiln__tune_case){"fft", rt, {0}, 0, fft_run, fft_check, 0};
    size_t n[6] = {FC, FC, FN, FN, FC, FC};
    for (int i = 0; st == KILN_OK && i < 6; i++)
      st = kiln_buffer_create(rt, KILN_C32, n[i], 0, &b->buf[i]);
    if (st == KILN_OK)
      st = tone(b->buf[0], FC, 0);
    if (st == KILN_OK)
      st = tone(b->buf[2], FN, 0);
    if (st == KILN_OK)
      st = tone(b->buf[4], 256, 1);
  }
  if (st == KILN_OK)
    st = kiln_finish(rt);
  if (st != KILN_OK)
    kiln__tune_case_free(b);
  return st;
}
