/*
 * tune.c — kiln_tune(): the search for the parameters of kiln's own kernels
 * on one device, whose result becomes the device's tuning record.
 *
 * Each kernel (GEMM's three variants and the CPU shape's blocks of A, the
 * reductions, the FFT passes, the convolution's direct kernel and im2col
 * step) is a list of candidates: the
 * parameters in use first (the baseline), then the other kernel shape's
 * rules where there are two (CPU or GPU: which shape is a parameter too),
 * then the grid of the better shape in order of distance from the
 * baseline, so a short budget still tries the nearest neighbours. For each
 * candidate:
 *   1. kiln__tuning_check() against the device's limits (group size, local
 *      memory), before anything is compiled;
 *   2. the kernels are rebuilt with it (kiln__runtime_set_tuning()) and run
 *      on a small odd-sized case whose answer is known exactly (small whole
 *      numbers, so every variant, half included, must match to the bit);
 *      a build or launch failure, or a wrong answer, skips it with a note;
 *   3. one warm-up run, then the median of five runs of the timing case
 *      (wall time, host overhead included: what a caller sees). A candidate
 *      whose first run is three times the best is not run further.
 * The best is then measured against the baseline again, in turn, and
 * replaces it only when it is faster by more than 3% there, so tuning never
 * makes a kernel slower beyond noise. Each kernel gets the
 * budget left divided by the kernels left (the convolution's two count
 * half each); one reached with none left still measures its baseline, so
 * the budget may run over by that much. The record is written after
 * each kernel, so a stop (the budget, Ctrl-C through progress) keeps all
 * that was finished.
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
#include "tuning/tuning.h"

enum { TIMED_RUNS = 5, MAX_CANDIDATES = 160 };

/* A test case of one kernel: its buffers and how to run and check it. */
typedef struct bench bench;
struct bench {
  const char *kernel; /* "gemm f32" */
  kiln_runtime *rt;
  kiln_buffer *buf[6];
  int variant;                             /* GEMM's */
  kiln_status (*run)(bench *b);            /* the timing case, enqueued */
  kiln_status (*check)(bench *b, int *ok); /* the checked case, waited for */
  int blocks;                              /* GEMM: the case of A's blocks */
};

typedef struct search {
  kiln_runtime *rt;
  const kiln_tune_options *o;
  double t0, budget;
  size_t index, count;
  int stop;
  kiln__measured m[8];
  size_t nm;
} search;

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
 * where A (16 MiB) outgrows a CPU's last-level cache. */
enum { CM = 67, CN = 45, CK = 71 };

static size_t gemm_size(const bench *b)
{
  return b->blocks ? 2048 : b->variant == KILN__GEMM_F32 ? 1024 : 512;
}

static kiln_status gemm_run(bench *b)
{
  size_t s = gemm_size(b);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, gemm_dtype(b->variant), s, s, s);
  d.backend = KILN_BACKEND_KILN;
  return kiln_gemm(b->rt, &d, b->buf[3], b->buf[4], b->buf[5]);
}

static kiln_status gemm_check(bench *b, int *ok)
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

static kiln_status reduce_one(bench *b, kiln_reduce_op op, size_t n, kiln_buffer *out)
{
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, op, KILN_F32, n);
  d.backend = KILN_BACKEND_KILN;
  return kiln_reduce(b->rt, &d, b->buf[0], out);
}

static kiln_status reduce_run(bench *b)
{
  kiln_status st = reduce_one(b, KILN_REDUCE_SUM, RN, b->buf[1]);
  return st == KILN_OK ? reduce_one(b, KILN_REDUCE_MAX, RN, b->buf[2]) : st;
}

static kiln_status reduce_check(bench *b, int *ok)
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
 * together: each takes about as long as another, so all count (on PoCL the
 * vector kernels ran 2^16 1.5 times as fast as the scalar ones and 2^20 as
 * fast; timed at 2^20 alone, noise picked either). 2^16 and 256^2 are
 * checked: pure tones at bin 5 (5, 5 in 2-D), whose transform is the
 * number of points there and 0 elsewhere. */
enum { FN = 1 << 20, FC = 1 << 16, FCS = 16, BIN = 5 };

/* The transform of n points, or a square of side n when ndim is 2. */
static kiln_status fft_one(bench *b, unsigned ndim, size_t n, kiln_buffer *in,
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

static kiln_status fft_run(bench *b)
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

static kiln_status fft_check(bench *b, int *ok)
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

static kiln_status conv_run(bench *b)
{
  const conv_shape *l = &conv_timed[b->variant];
  kiln_conv2d_desc d = conv_desc(b->variant, l->n, l->c, l->hw, l->hw, l->k, l->groups);
  return kiln_conv2d(b->rt, &d, b->buf[3], b->buf[4], NULL, b->buf[5]);
}

static kiln_status conv_check(bench *b, int *ok)
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

static kiln_status conv_make(kiln_runtime *rt, int variant, bench *b)
{
  static const char *const names[] = {"conv direct", "conv im2col"};
  *b = (bench){names[variant], rt, {0}, variant, conv_run, conv_check, 0};
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
static double timed_work(const char *kernel)
{
  static const char *const gemm[] = {"gemm f32", "gemm f16", "gemm f64", "gemm blocks"};
  static const char *const conv[] = {"conv direct", "conv im2col"};
  for (int v = 0; v <= KILN__GEMM_VARIANTS; v++)
    if (strcmp(kernel, gemm[v]) == 0) {
      bench b = {.variant = v % KILN__GEMM_VARIANTS, .blocks = v == KILN__GEMM_VARIANTS};
      double s = (double)gemm_size(&b);
      return 2 * s * s * s;
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
      return timed_work(kernel) / s->measured[i].to_s;
  return 0;
}

static void bench_free(bench *b)
{
  for (size_t i = 0; i < sizeof b->buf / sizeof b->buf[0]; i++)
    kiln_buffer_destroy(b->buf[i]);
}

/* Sets up the case of kernel `what` (0: gemm variant `variant`, 1:
 * reduce, 2: fft, 3: conv's direct (variant 0) or im2col (1) backend, 4:
 * the gemm variant's blocks of A). */
static kiln_status bench_make(kiln_runtime *rt, int what, int variant, bench *b)
{
  static const char *const gemm_names[] = {"gemm f32", "gemm f16", "gemm f64"};
  kiln_status st = KILN_OK;
  if (what == 0 || what == 4) {
    kiln_dtype t = gemm_dtype(variant);
    *b = (bench){what == 4 ? "gemm blocks" : gemm_names[variant],
                 rt,
                 {0},
                 variant,
                 gemm_run,
                 gemm_check,
                 what == 4};
    size_t s = gemm_size(b);
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
    *b = (bench){"reduce", rt, {0}, 0, reduce_run, reduce_check, 0};
    st = kiln_buffer_create(rt, KILN_F32, RN, 0, &b->buf[0]);
    for (int i = 1; st == KILN_OK && i < 3; i++)
      st = kiln_buffer_create(rt, KILN_F32, 1, 0, &b->buf[i]);
    if (st == KILN_OK)
      st = fill_small(b->buf[0], KILN_F32, RN, 1);
  } else if (what == 3) {
    st = conv_make(rt, variant, b);
  } else {
    *b = (bench){"fft", rt, {0}, 0, fft_run, fft_check, 0};
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
    bench_free(b);
  return st;
}

/* ---- candidates ------------------------------------------------------------ */

typedef struct cand {
  kiln__tuning t;
  char text[96];
  double dist; /* from the baseline, for the order */
} cand;

static void gemm_text(const kiln__gemm_tuning *g, char *out, size_t size)
{
  if (g->gpu_shape)
    snprintf(out, size, "gpu tsm=%u tsk=%u wpt=%u", g->tsm, g->tsk, g->wpt);
  else
    snprintf(out, size, "cpu tm=%u vw=%u cg=%u", g->tm, g->vw, g->cg);
}

static void reduce_text(const kiln__reduce_tuning *r, char *out, size_t size)
{
  if (r->gpu_shape)
    snprintf(out, size, "gpu wg=%u groups=%u", r->wg, r->groups);
  else
    snprintf(out, size, "cpu chunks=%u", r->chunks);
}

static void conv_text(int variant, const kiln__conv_tuning *t, char *out, size_t size)
{
  if (variant == 0)
    snprintf(out, size, "qw=%u kb=%u group=%ux%u", t->qw, t->kb, t->lq, t->lp);
  else
    snprintf(out, size, "col_kib=%u", t->col_kib);
}

static void cand_text(int what, int variant, cand *c)
{
  if (what == 4) {
    snprintf(c->text, sizeof c->text, "akib=%u", c->t.gemm[variant].akib);
    return;
  }
  if (what == 3)
    conv_text(variant, &c->t.conv, c->text, sizeof c->text);
  else if (what == 0)
    gemm_text(&c->t.gemm[variant], c->text, sizeof c->text);
  else if (what == 1)
    reduce_text(&c->t.reduce, c->text, sizeof c->text);
  else
    snprintf(c->text, sizeof c->text, "group=%u wide_from=%u vec_first=%u row_max=%u",
             c->t.fft.group, c->t.fft.wide_from, c->t.fft.vec_first, c->t.fft.row_max);
}

static double ldist(unsigned a, unsigned b)
{
  return fabs(log2((double)a) - log2((double)b));
}

static void add(cand *list, size_t *n, const kiln__tuning *t, double dist)
{
  if (*n < MAX_CANDIDATES)
    list[(*n)++] = (cand){.t = *t, .dist = dist};
}

/* Convolution's grid around base: the direct kernel's blocks (columns and
 * channels a work-item, at most 64 accumulators) in the driver's groups or
 * three shapes of 64 work-items; im2col's step from 256 KiB (within the L2
 * of most CPUs) to 64 MiB. A group shape differs from the driver's choice
 * by one step. */
static void conv_grid(int variant, const kiln__tuning *base, cand *list, size_t *n)
{
  kiln__tuning t = *base;
  const kiln__conv_tuning *b = &base->conv;
  kiln__conv_tuning *c = &t.conv;
  if (variant == 1) {
    for (unsigned kib = 256; kib <= 65536; kib *= 2) {
      c->col_kib = kib;
      add(list, n, &t, ldist(kib, b->col_kib));
    }
    return;
  }
  static const unsigned qws[] = {1, 2, 4, 8, 16}, kbs[] = {1, 2, 4, 8},
                        groups[][2] = {{0, 0}, {8, 8}, {16, 4}, {64, 1}};
  for (size_t i = 0; i < KILN__COUNT(qws); i++)
    for (size_t j = 0; j < KILN__COUNT(kbs); j++)
      for (size_t g = 0; g < KILN__COUNT(groups) && qws[i] * kbs[j] <= 64; g++) {
        c->qw = qws[i];
        c->kb = kbs[j];
        c->lq = groups[g][0];
        c->lp = groups[g][1];
        int same = c->lq == b->lq && c->lp == b->lp;
        add(list, n, &t, ldist(c->qw, b->qw) + ldist(c->kb, b->kb) + (same ? 0 : 1));
      }
}

/* The grid of one shape of kernel `what` around base (the baseline's
 * parameters in t), each with its distance from base. */
static void grid(int what, int variant, int gpu, const kiln__tuning *base,
                 const kiln_device_info *dev, cand *list, size_t *n)
{
  kiln__tuning t = *base;
  unsigned cu = dev->compute_units ? dev->compute_units : 1;
  if (what == 3) {
    conv_grid(variant, base, list, n);
  } else if (what == 4) {
    /* A's blocks from 512 KiB (a core's L2) to 16 MiB, and none (0),
     * counted as far as the largest; for every variant alike, as the block
     * that fits is the cache's (bytes of packed panels, whatever the type) */
    for (unsigned kib = 512; kib <= 32768; kib *= 2) {
      for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
        t.gemm[v].akib = kib > 16384 ? 0 : kib;
      unsigned b = base->gemm[variant].akib;
      add(list, n, &t, ldist(kib, b ? b : 32768));
    }
  } else if (what == 0) {
    const kiln__gemm_tuning *b = &base->gemm[variant];
    kiln__gemm_tuning *g = &t.gemm[variant];
    g->gpu_shape = gpu;
    if (!gpu) {
      /* cg: the driver's groups, or groups of 1 to 16 work-items (log
       * distance counted from 1 for the driver's). */
      static const unsigned tms[] = {2, 4, 6, 8, 12, 16}, vws[] = {2, 4, 8, 16},
                            cgs[] = {0, 1, 4, 16};
      for (size_t i = 0; i < KILN__COUNT(tms); i++)
        for (size_t j = 0; j < KILN__COUNT(vws); j++)
          for (size_t k = 0; k < KILN__COUNT(cgs); k++) {
            g->tm = tms[i];
            g->vw = vws[j];
            g->cg = cgs[k];
            add(list, n, &t,
                ldist(g->tm, b->tm) + ldist(g->vw, b->vw) +
                  ldist(g->cg ? g->cg : 1, b->cg ? b->cg : 1) + (g->cg != b->cg));
          }
    } else {
      static const unsigned tsms[] = {16, 32, 64, 128}, tsks[] = {8, 16, 32},
                            wpts[] = {1, 2, 4, 8};
      for (size_t i = 0; i < KILN__COUNT(tsms); i++)
        for (size_t j = 0; j < KILN__COUNT(tsks); j++)
          for (size_t k = 0; k < KILN__COUNT(wpts); k++) {
            g->tsm = tsms[i];
            g->tsk = tsks[j];
            g->wpt = wpts[k];
            add(list, n, &t,
                ldist(g->tsm, b->tsm) + ldist(g->tsk, b->tsk) + ldist(g->wpt, b->wpt));
          }
    }
  } else if (what == 1) {
    kiln__reduce_tuning *r = &t.reduce;
    r->gpu_shape = gpu;
    static const unsigned per_cu[] = {1, 2, 4, 8, 16, 32},
                          wgs[] = {32, 64, 128, 256, 512, 1024};
    for (size_t i = 0; i < KILN__COUNT(per_cu); i++) {
      if (!gpu) {
        r->chunks = per_cu[i] * cu;
        add(list, n, &t, ldist(r->chunks, base->reduce.chunks));
        continue;
      }
      for (size_t j = 0; j < KILN__COUNT(wgs); j++) {
        r->groups = per_cu[i] * cu;
        r->wg = wgs[j];
        add(list, n, &t,
            ldist(r->groups, base->reduce.groups) + ldist(r->wg, base->reduce.wg));
      }
    }
  } else {
    static const unsigned groups[] = {16, 32, 64, 128, 256}, wides[] = {16, 32, 64, 128};
    /* the vector candidates' whole rows: the rule's row_max, else the longest */
    unsigned rows = base->fft.row_max ? base->fft.row_max : KILN__FFT_ROW_MAX;
    for (size_t i = 0; i < KILN__COUNT(groups); i++)
      for (size_t j = 0; j < KILN__COUNT(wides); j++)
        for (unsigned v = 0; v < 3; v++) {
          if (v && j) /* wide_from changes nothing the vector kernels run */
            continue;
          /* v: the scalar kernels, the vector ones, the vector ones with
           * whole rows */
          t.fft.group = groups[i];
          t.fft.wide_from = v ? base->fft.wide_from : wides[j];
          t.fft.vec_first = v > 0;
          t.fft.row_max = v == 2 ? rows : 0;
          add(list, n, &t,
              ldist(t.fft.group, base->fft.group) +
                ldist(t.fft.wide_from, base->fft.wide_from) +
                (t.fft.vec_first != base->fft.vec_first) +
                (t.fft.row_max != base->fft.row_max));
        }
  }
}

static int by_dist(const void *a, const void *b)
{
  const cand *x = a, *y = b;
  return x->dist < y->dist ? -1 : x->dist > y->dist;
}

/* ---- measuring ------------------------------------------------------------- */

/* Reports a step; sets s->stop when progress asks to. */
static void report(search *s, kiln_tune_step *step)
{
  step->elapsed = (kiln__now_ns() * 1e-9) - s->t0;
  step->left = s->budget - step->elapsed;
  if (s->o->progress && s->o->progress(step, s->o->user))
    s->stop = 1;
}

/* A step of the search for progress, as it stands. */
static kiln_tune_step step_of(const search *s, const char *kernel, const char *candidate,
                              double secs, const char *best, double best_s, double base_s)
{
  return (kiln_tune_step){
    .struct_size = sizeof(kiln_tune_step),
    .kernel = kernel,
    .candidate = candidate,
    .index = s->index,
    .count = s->count,
    .seconds = secs,
    .best = best,
    .best_seconds = best_s,
    .baseline_seconds = base_s,
  };
}

/* Measures candidate c: its median in *secs, or a reason in why. `cutoff`
 * stops after the first run when that is slower. */
static void measure(search *s, bench *b, const cand *c, double cutoff, double *secs,
                    kiln__str *why)
{
  const kiln_device_info *dev = &kiln__runtime_device(s->rt)->info;
  *secs = 0;
  if (kiln__tuning_check(dev, &c->t, why) != 0)
    return;
  kiln__runtime_set_tuning(s->rt, &c->t);
  int ok = 0;
  kiln_status st = b->check(b, &ok);
  if (st == KILN_OK)
    st = kiln_finish(s->rt);
  if (st != KILN_OK) {
    kiln__str_appendf(why, "%s: %s", kiln_status_name(st), kiln_last_error(s->rt));
    return;
  }
  if (!ok) {
    kiln__str_appendf(why, "wrong result on the check case");
    return;
  }
  double t[TIMED_RUNS + 1];
  int runs = 0;
  for (int r = 0; r <= TIMED_RUNS && st == KILN_OK; r++) {
    double t0 = (kiln__now_ns() * 1e-9);
    st = b->run(b);
    if (st == KILN_OK)
      st = kiln_finish(s->rt);
    t[runs++] = (kiln__now_ns() * 1e-9) - t0;
    if (r == 1 && cutoff > 0 && t[1] > 3 * cutoff)
      break; /* r == 0 was the warm-up */
  }
  if (st != KILN_OK) {
    kiln__str_appendf(why, "%s: %s", kiln_status_name(st), kiln_last_error(s->rt));
    return;
  }
  *secs = kiln__median(t + 1, (size_t)runs - 1);
}

/* The best candidate against the baseline once more, three rounds of each
 * in turn, so that a slow spell of the machine (PoCL's come and go over
 * seconds) falls on both alike: *base_s and *best_s become the medians of
 * their rounds. The search compared candidates measured minutes apart. */
static void rematch(search *s, bench *b, const cand *base, const cand *best,
                    double *base_s, double *best_s)
{
  double t[2][3];
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 2; k++) {
      kiln__str why = {0};
      measure(s, b, k ? best : base, 0, &t[k][r], &why);
      kiln__str_free(&why);
      if (t[k][r] == 0)
        return; /* it failed this time: keep the search's figures */
    }
  *base_s = kiln__median(t[0], 3);
  *best_s = kiln__median(t[1], 3);
}

/* Searches kernel `what` within `budget` seconds; updates rt's parameters
 * with the best and records what changed. */
static void tune_kernel(search *s, int what, int variant, double budget)
{
  kiln_runtime *rt = s->rt;
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  const kiln__tuning base = rt->tuning->t;
  if (what == 4 && base.gemm[variant].gpu_shape) {
    s->count -= 2; /* GEMM took the GPU shape, which has no blocks of A */
    return;
  }
  bench b;
  kiln_status st = bench_make(rt, what, variant, &b);
  if (st != KILN_OK)
    return; /* nothing to measure on: the device lacks memory or a type */
  cand *list = malloc(MAX_CANDIDATES * sizeof *list);
  if (!list) {
    bench_free(&b);
    return;
  }
  /* The baseline, then the other shape's rules, then the better shape's
   * grid (filled in once the first two are measured). */
  size_t n = 0;
  add(list, &n, &base, 0);
  kiln__tuning other = base;
  int gpu = what == 0 ? base.gemm[variant].gpu_shape : base.reduce.gpu_shape;
  if (what < 2) {
    kiln_device_info flipped = *dev;
    flipped.type = gpu ? KILN_DEVICE_CPU : KILN_DEVICE_GPU;
    kiln__tuning rules;
    kiln__tuning_defaults(&flipped, &rules);
    if (what == 0)
      other.gemm[variant] = rules.gemm[variant];
    else
      other.reduce = rules.reduce;
    add(list, &n, &other, 0);
  }
  size_t first = n;
  double start = (kiln__now_ns() * 1e-9), best_s = 0, base_s = 0;
  size_t best = 0;
  for (size_t i = 0; !s->stop; i++) {
    if (i == first) { /* the shapes are measured: the grid of the better one */
      int shape =
        what == 0 ? list[best].t.gemm[variant].gpu_shape : list[best].t.reduce.gpu_shape;
      grid(what, variant, shape, &list[best].t, dev, list, &n);
      qsort(list + first, n - first, sizeof *list, by_dist);
      size_t kept = first; /* less what was measured already */
      for (size_t k = first; k < n; k++) {
        cand_text(what, variant, &list[k]);
        int seen = 0;
        for (size_t e = 0; e < first; e++)
          seen |= strcmp(list[k].text, list[e].text) == 0;
        if (!seen)
          list[kept++] = list[k];
      }
      n = kept;
      s->count += n - first;
    }
    if (i >= n)
      break;
    cand_text(what, variant, &list[i]);
    kiln__str why = {0};
    double secs;
    measure(s, &b, &list[i], best_s, &secs, &why);
    if (secs > 0 && (best_s == 0 || secs < best_s)) {
      best_s = secs;
      best = i;
    }
    if (i == 0)
      base_s = secs;
    s->index++;
    int last = (kiln__now_ns() * 1e-9) - start > budget;
    kiln_tune_step step =
      step_of(s, b.kernel, list[i].text, secs, list[best].text, best_s, base_s);
    step.skipped = secs > 0 ? NULL : kiln__str_get(&why);
    report(s, &step);
    kiln__str_free(&why);
    if (last)
      break;
  }
  /* Keep the baseline unless the best beats it beyond noise, measured
   * again side by side. */
  if (best != 0 && base_s > 0 && !s->stop)
    rematch(s, &b, &list[0], &list[best], &base_s, &best_s);
  size_t keep = base_s > 0 && best_s < base_s / 1.03 ? best : 0;
  if (base_s == 0 && best_s > 0)
    keep = best; /* the baseline itself failed here */
  kiln__runtime_set_tuning(rt, &list[keep].t);
  if (s->nm < KILN__COUNT(s->m)) {
    kiln__measured *m = &s->m[s->nm++];
    snprintf(m->kernel, sizeof m->kernel, "%s", b.kernel);
    snprintf(m->from, sizeof m->from, "%s", list[0].text);
    snprintf(m->to, sizeof m->to, "%s", list[keep].text);
    m->from_s = base_s;
    m->to_s = keep == 0 ? base_s : best_s;
    m->candidates = (unsigned)n;
  }
  double kept_s = keep == 0 ? base_s : best_s;
  kiln_tune_step done =
    step_of(s, b.kernel, list[keep].text, kept_s, list[keep].text, kept_s, base_s);
  done.kernel_done = 1;
  report(s, &done);
  free(list);
  bench_free(&b);
}

KILN_API kiln_status kiln_tune(kiln_runtime *rt, const kiln_tune_options *opts)
{
  static const char fn[] = "kiln_tune";
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: rt is NULL", fn);
  kiln_tune_options o;
  kiln_tune_options_init(&o);
  kiln_status st = KILN__OP_DESC_IN(rt, fn, kiln_tune_options, opts, &o);
  if (st != KILN_OK)
    return st;
  if (!(o.budget >= 0) || o.budget > 1e7 || (o.what & ~(unsigned)KILN_TUNE_ALL))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: budget %g or what 0x%x is out of range; expected 0 (240 s) or "
                      "seconds, and KILN_TUNE_* bits",
                      fn, o.budget, o.what);
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  unsigned what = o.what ? o.what : KILN_TUNE_ALL;
  /* The kernels in order: GEMM's variants, the reductions, the FFT, the
   * convolution's direct kernel and im2col step. Each gets its weight's
   * share of the budget left: the convolution's two, one kernel's together
   * (their grids are short, and most candidates rebuild nothing). */
  struct {
    int what, variant;
    double weight;
  } kernels[8] = {{0}};
  size_t nk = 0;
  for (int v = 0; (what & KILN_TUNE_GEMM) && v < KILN__GEMM_VARIANTS; v++)
    if (v != KILN__GEMM_F64 || dev->has_fp64)
      kernels[nk].what = 0, kernels[nk++].variant = v;
  /* A's blocks, measured on float once GEMM f32 has its shape: the CPU
   * shape's only, and one kernel's share for the three variants */
  if (what & KILN_TUNE_GEMM)
    kernels[nk].what = 4, kernels[nk].weight = 0.5,
    kernels[nk++].variant = KILN__GEMM_F32;
  if (what & KILN_TUNE_REDUCE)
    kernels[nk].what = 1, kernels[nk++].variant = 0;
  if (what & KILN_TUNE_FFT)
    kernels[nk].what = 2, kernels[nk++].variant = 0;
  for (int v = 0; (what & KILN_TUNE_CONV) && v < 2; v++)
    kernels[nk].what = 3, kernels[nk].weight = 0.5, kernels[nk++].variant = v;
  double weights = 0;
  for (size_t k = 0; k < nk; k++)
    weights += kernels[k].weight = kernels[k].weight > 0 ? kernels[k].weight : 1;
  search s = {.rt = rt,
              .o = &o,
              .t0 = (kiln__now_ns() * 1e-9),
              .budget = o.budget > 0 ? o.budget : 240,
              .count = 2 * nk};
  st = KILN_OK;
  for (size_t k = 0; k < nk && !s.stop; k++) {
    /* A kernel reached with nothing left still measures its baseline, so
     * every kernel asked for is in the record, on a slow machine too. */
    double left = s.budget - ((kiln__now_ns() * 1e-9) - s.t0);
    tune_kernel(&s, kernels[k].what, kernels[k].variant,
                left > 0 ? left * kernels[k].weight / weights : 0);
    weights -= kernels[k].weight;
    /* Kept after each kernel, so a stop loses nothing finished. */
    st = kiln__record_save(rt, fn, s.m, s.nm);
    if (st != KILN_OK)
      break;
  }
  return st;
}
