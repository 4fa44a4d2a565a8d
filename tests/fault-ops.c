/*
 * fault-ops.c — see fault-ops.h. Sizes are tiny, odd where kiln pads, so a
 * fault point costs a few milliseconds.
 */
#include "clfault.h"
#include "common.h"

#include <complex.h>
#include <math.h>

#include "fault-ops.h"
#include "values.h"

#define TAU 6.283185307179586476925286766559005768 /* 2 pi */

/* ---- inputs ----------------------------------------------------------------- */

/* A value of element i exact in every type used here: multiples of 1/8 in
 * [-4, 4), and for integers the same times 8. */
static double pattern(size_t i, unsigned salt)
{
  return (double)(((i * 37 + salt * 11 + 5) % 64)) / 8.0 - 4.0;
}

static void fill_pattern(kiln_dtype t, void *p, size_t count, unsigned salt)
{
  size_t n = t == KILN_C32 ? 2 * count : count;
  kiln_dtype e = t == KILN_C32 ? KILN_F32 : t;
  for (size_t i = 0; i < n; i++)
    kiln_test_put(
      e, p, i, e == KILN_I32 || e == KILN_I64 ? 8 * pattern(i, salt) : pattern(i, salt));
}

static void *xmalloc(size_t bytes)
{
  void *p = malloc(bytes);
  if (!p)
    fail_msg("out of host memory");
  return p;
}

/* A buffer of the fixture: IN and INOUT hold the pattern, OUT 0x5a bytes. */
static kiln_buffer *fx_buf(fx *f, role r, kiln_dtype t, size_t count)
{
  size_t bytes = count * kiln_dtype_size(t);
  void *v = xmalloc(bytes);
  if (r == OUT)
    memset(v, 0x5a, bytes);
  else
    fill_pattern(t, v, count, (unsigned)f->nbuf);
  kiln_buffer *b = NULL;
  if (kiln_buffer_create(f->rt, t, count, 0, &b) != KILN_OK ||
      kiln_buffer_write(b, 0, count, v) != KILN_OK)
    f->setup_failed = 1;
  f->buf[f->nbuf] = b;
  f->roles[f->nbuf] = r;
  f->want[f->nbuf++] = v;
  return b;
}

/* A host array of the fixture, with a copy to compare against. */
static void *fx_host(fx *f, role r, kiln_dtype t, size_t count)
{
  size_t bytes = count * kiln_dtype_size(t);
  void *v = xmalloc(bytes), *copy = xmalloc(bytes);
  if (r == OUT)
    memset(v, 0x5a, bytes);
  else
    fill_pattern(t, v, count, 7 + (unsigned)f->nhost);
  memcpy(copy, v, bytes);
  f->host[f->nhost] = v;
  f->host_copy[f->nhost] = copy;
  f->host_bytes[f->nhost] = bytes;
  f->host_roles[f->nhost++] = r;
  return v;
}

void fx_free(fx *f)
{
  for (size_t i = 0; i < f->nbuf; i++) {
    kiln_buffer_destroy(f->buf[i]);
    free(f->want[i]);
  }
  /* before the host memory one of them may wrap */
  for (size_t i = 0; i < COUNT(f->made); i++)
    kiln_buffer_destroy(f->made[i]);
  for (size_t i = 0; i < f->nhost; i++) {
    free(f->host[i]);
    free(f->host_copy[i]);
  }
  kiln_program_destroy(f->prog);
  kiln_runtime *rt = f->rt;
  memset(f, 0, sizeof *f);
  f->rt = rt;
}

void *fx_read(fx *f, size_t i)
{
  kiln_buffer *b = f->buf[i];
  void *v = xmalloc(kiln_buffer_bytes(b));
  if (kiln_buffer_read(b, 0, kiln_buffer_count(b), v) != KILN_OK) {
    free(v);
    return NULL;
  }
  return v;
}

/* Whether got is within float rounding of the double reference. */
static int near(double got, double want)
{
  return fabs(got - want) <= 1e-4 * fabs(want) + 1e-4;
}

/* Compares n elements of buffer bi, from element `first`, with want:
 * NULL when each is near, else why not. */
static const char *compare(fx *f, size_t bi, const double *want, size_t n, size_t first)
{
  void *got = fx_read(f, bi);
  if (!got)
    return "the output could not be read back";
  kiln_dtype t = kiln_buffer_dtype(f->buf[bi]);
  kiln_dtype e = t == KILN_C32 ? KILN_F32 : t;
  const char *why = NULL;
  for (size_t i = 0; i < n && !why; i++)
    if (!near(kiln_test_get(e, got, first + i), want[i]))
      why = "the result differs from the double-precision reference";
  free(got);
  return why;
}

/* Element i of input buffer bi as written, as a double. */
static double in_at(const fx *f, size_t bi, size_t i)
{
  kiln_dtype t = kiln_buffer_dtype(f->buf[bi]);
  return kiln_test_get(t == KILN_C32 ? KILN_F32 : t, f->want[bi], i);
}

/* ---- buffers ----------------------------------------------------------------- */

enum { NB = 29 };

static void setup_to_buffer(fx *f)
{
  fx_buf(f, OUT, KILN_F32, NB);
  fx_host(f, IN, KILN_F32, NB);
}

static void setup_from_buffer(fx *f)
{
  fx_buf(f, IN, KILN_F32, NB);
  fx_host(f, OUT, KILN_F32, NB);
}

static kiln_status run_write(fx *f)
{
  return kiln_buffer_write(f->buf[0], 0, NB, f->host[0]);
}

static kiln_status run_write_async(fx *f)
{
  return kiln_buffer_write_async(f->buf[0], 0, NB, f->host[0]);
}

static kiln_status run_read(fx *f)
{
  return kiln_buffer_read(f->buf[0], 0, NB, f->host[0]);
}

static kiln_status run_read_async(fx *f)
{
  return kiln_buffer_read_async(f->buf[0], 0, NB, f->host[0]);
}

static const char *verify_to_buffer(fx *f)
{
  void *got = fx_read(f, 0);
  int same = got && !memcmp(got, f->host_copy[0], f->host_bytes[0]);
  free(got);
  return same ? NULL : "the buffer does not hold what was written";
}

static const char *verify_from_buffer(fx *f)
{
  return memcmp(f->host[0], f->want[0], f->host_bytes[0]) ? "the host array does not "
                                                            "hold the buffer's contents"
                                                          : NULL;
}

static void setup_copy(fx *f)
{
  fx_buf(f, IN, KILN_F32, NB);
  fx_buf(f, OUT, KILN_F32, NB);
}

static kiln_status run_copy(fx *f)
{
  return kiln_buffer_copy(f->buf[1], 3, f->buf[0], 1, 20);
}

static const char *verify_copy(fx *f)
{
  double want[20];
  for (size_t i = 0; i < 20; i++)
    want[i] = in_at(f, 0, i + 1);
  return compare(f, 1, want, 20, 3);
}

static void setup_fill(fx *f)
{
  fx_buf(f, OUT, KILN_F32, NB);
  fx_host(f, IN, KILN_F32, 1);
}

static kiln_status run_fill(fx *f)
{
  return kiln_buffer_fill(f->buf[0], 2, 10, f->host[0]);
}

static const char *verify_fill(fx *f)
{
  double want[10];
  for (size_t i = 0; i < 10; i++)
    want[i] = *(const float *)f->host_copy[0];
  return compare(f, 0, want, 10, 2);
}

static void setup_create(fx *f)
{
  fx_host(f, IN, KILN_F32, 16);
}

/* A plain buffer, a zeroed one and one over host memory. */
static kiln_status run_create(fx *f)
{
  kiln_status st = kiln_buffer_create(f->rt, KILN_F32, 33, 0, &f->made[0]);
  if (st == KILN_OK)
    st = kiln_buffer_create(f->rt, KILN_I32, 17, KILN_BUFFER_ZERO, &f->made[1]);
  if (st == KILN_OK)
    st = kiln_buffer_wrap(f->rt, KILN_F32, 16, f->host[0], &f->made[2]);
  return st;
}

static const char *verify_create(fx *f)
{
  int32_t zeros[17], z[17] = {0};
  float wrapped[16];
  if (kiln_buffer_read(f->made[1], 0, 17, zeros) != KILN_OK ||
      kiln_buffer_read(f->made[2], 0, 16, wrapped) != KILN_OK)
    return "the new buffers could not be read";
  if (memcmp(zeros, z, sizeof z))
    return "the KILN_BUFFER_ZERO buffer is not zero";
  return memcmp(wrapped, f->host_copy[0], sizeof wrapped) ? "the wrapped buffer does "
                                                            "not show the host memory"
                                                          : NULL;
}

/* ---- gemm ---------------------------------------------------------------------- */

enum { GM = 5, GN = 7, GK = 3 };

/* With the epilogue, a bias per column and tanh: CLBlast's second pass and
 * kiln_gemm_host()'s copy of the bias fail in turn too. */
static void gemm_desc(kiln_gemm_desc *d, kiln_backend be)
{
  kiln_gemm_desc_init(d, KILN_F32, GM, GN, GK);
  d->alpha = 1.5;
  d->beta = 0.5;
  d->backend = be;
  d->bias = KILN_BIAS_COL;
  d->activation = KILN_ACTIVATION_TANH;
}

/* tanh(alpha A B + beta C + bias), row-major, from A, B, C's and the bias's
 * values. */
static void gemm_reference(const float *a, const float *b, const float *c,
                           const float *bias, double *want)
{
  for (size_t i = 0; i < GM; i++)
    for (size_t j = 0; j < GN; j++) {
      double s = 0;
      for (size_t p = 0; p < GK; p++)
        s += (double)a[i * GK + p] * b[p * GN + j];
      want[i * GN + j] = tanh(1.5 * s + 0.5 * c[i * GN + j] + bias[j]);
    }
}

static void setup_gemm(fx *f)
{
  fx_buf(f, IN, KILN_F32, GM * GK);
  fx_buf(f, IN, KILN_F32, GK * GN);
  fx_buf(f, INOUT, KILN_F32, GM * GN);
  fx_buf(f, IN, KILN_F32, GN);
}

static kiln_status run_gemm_on(fx *f, kiln_backend be)
{
  kiln_gemm_desc d;
  gemm_desc(&d, be);
  d.bias_buffer = f->buf[3];
  return kiln_gemm(f->rt, &d, f->buf[0], f->buf[1], f->buf[2]);
}

static kiln_status run_gemm_kiln(fx *f)
{
  return run_gemm_on(f, KILN_BACKEND_KILN);
}

static kiln_status run_gemm_clblast(fx *f)
{
  return run_gemm_on(f, KILN_BACKEND_CLBLAST);
}

static const char *verify_gemm(fx *f)
{
  double want[GM * GN];
  gemm_reference(f->want[0], f->want[1], f->want[2], f->want[3], want);
  return compare(f, 2, want, GM * GN, 0);
}

static void setup_gemm_host(fx *f)
{
  fx_host(f, IN, KILN_F32, GM * GK);
  fx_host(f, IN, KILN_F32, GK * GN);
  fx_host(f, INOUT, KILN_F32, GM * GN);
  fx_host(f, IN, KILN_F32, GN);
}

static kiln_status run_gemm_host(fx *f)
{
  kiln_gemm_desc d;
  gemm_desc(&d, KILN_BACKEND_KILN);
  d.bias_host = f->host[3];
  return kiln_gemm_host(f->rt, &d, f->host[0], f->host[1], f->host[2]);
}

static const char *verify_gemm_host(fx *f)
{
  double want[GM * GN];
  gemm_reference(f->host_copy[0], f->host_copy[1], f->host_copy[2], f->host_copy[3],
                 want);
  for (size_t i = 0; i < GM * GN; i++)
    if (!near(((const float *)f->host[2])[i], want[i]))
      return "C differs from the double-precision reference";
  return NULL;
}

/* ---- reductions ------------------------------------------------------------------ */

enum { NR = 100 };

static void setup_reduce(fx *f)
{
  fx_buf(f, IN, KILN_F32, NR);
  fx_buf(f, OUT, KILN_F32, 1);
  fx_buf(f, OUT, KILN_I64, 1);
}

static kiln_status run_reduce_on(fx *f, kiln_reduce_op rop, kiln_buffer *out)
{
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, rop, KILN_F32, NR);
  d.backend = KILN_BACKEND_KILN;
  return kiln_reduce(f->rt, &d, f->buf[0], out);
}

/* A sum (one partial buffer) and an argmax (two) of every element. */
static kiln_status run_reduce(fx *f)
{
  kiln_status st = run_reduce_on(f, KILN_REDUCE_SUM, f->buf[1]);
  return st == KILN_OK ? run_reduce_on(f, KILN_REDUCE_ARGMAX, f->buf[2]) : st;
}

static const char *verify_reduce(fx *f)
{
  double sum = 0, best = -INFINITY, at = 0;
  for (size_t i = 0; i < NR; i++) {
    double v = in_at(f, 0, i);
    sum += v;
    if (v > best)
      best = v, at = (double)i;
  }
  const char *why = compare(f, 1, &sum, 1, 0);
  return why ? why : compare(f, 2, &at, 1, 0);
}

static void setup_reduce_host(fx *f)
{
  fx_host(f, IN, KILN_F32, NR);
  fx_host(f, OUT, KILN_F32, 1);
}

static kiln_status run_reduce_host(fx *f)
{
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_NORM2, KILN_F32, NR);
  return kiln_reduce_host(f->rt, &d, f->host[0], f->host[1]);
}

static const char *verify_reduce_host(fx *f)
{
  double s = 0;
  for (size_t i = 0; i < NR; i++)
    s += pow(((const float *)f->host_copy[0])[i], 2);
  return near(*(const float *)f->host[1], sqrt(s)) ? NULL
                                                   : "the norm differs from "
                                                     "the double-precision reference";
}

/* ---- convolution ----------------------------------------------------------------- */

enum { CN = 2, CC = 2, CH = 5, CW = 5, CK = 3, CR = 3 };

static void conv_desc(kiln_conv2d_desc *d, kiln_backend be)
{
  kiln_conv2d_desc_init(d, KILN_F32, CN, CC, CH, CW, CK, CR, CR);
  d->pad_top = d->pad_bottom = d->pad_left = d->pad_right = 1;
  d->relu = 1;
  d->backend = be;
}

static void setup_conv(fx *f)
{
  fx_buf(f, IN, KILN_F32, CN * CC * CH * CW);
  fx_buf(f, IN, KILN_F32, CK * CC * CR * CR);
  fx_buf(f, IN, KILN_F32, CK);
  fx_buf(f, OUT, KILN_F32, CN * CK * CH * CW);
}

static kiln_status run_conv_on(fx *f, kiln_backend be)
{
  kiln_conv2d_desc d;
  conv_desc(&d, be);
  return kiln_conv2d(f->rt, &d, f->buf[0], f->buf[1], f->buf[2], f->buf[3]);
}

static kiln_status run_conv_im2col(fx *f)
{
  return run_conv_on(f, KILN_BACKEND_IM2COL);
}

static kiln_status run_conv_direct(fx *f)
{
  return run_conv_on(f, KILN_BACKEND_DIRECT);
}

/* A 3 x 3 filter over n images of c x h x w, NCHW, stride 1, padding 1
 * (the output is as large as the input), bias and ReLU, in double. */
static void conv_reference(const float *x, const float *wt, const float *bias, size_t n,
                           size_t c, size_t h, size_t w, size_t k, double *want)
{
  for (size_t i = 0; i < n; i++)
    for (size_t o = 0; o < k; o++)
      for (size_t y = 0; y < h; y++)
        for (size_t xx = 0; xx < w; xx++) {
          double s = bias[o];
          for (size_t ci = 0; ci < c; ci++)
            for (size_t r = 0; r < 3; r++)
              for (size_t q = 0; q < 3; q++) {
                long iy = (long)(y + r) - 1, ix = (long)(xx + q) - 1;
                if (iy >= 0 && iy < (long)h && ix >= 0 && ix < (long)w)
                  s += (double)x[((i * c + ci) * h + (size_t)iy) * w + (size_t)ix] *
                       wt[((o * c + ci) * 3 + r) * 3 + q];
              }
          want[((i * k + o) * h + y) * w + xx] = s > 0 ? s : 0;
        }
}

static const char *verify_conv(fx *f)
{
  static double want[CN * CK * CH * CW];
  conv_reference(f->want[0], f->want[1], f->want[2], CN, CC, CH, CW, CK, want);
  return compare(f, 3, want, COUNT(want), 0);
}

/* kiln_conv2d_host() under a budget (the op's memory_limit) that fits one
 * set of 3 images of 4 KiB in and out, or two sets of one: 4 pieces whose
 * transfers go on the copy queue, tied to the compute by markers and
 * barriers (ops/host.c), each of which fails in turn. */
enum { HN = 4, HC = 4, HH = 16, HW = 16, HK = 4 };

static void setup_conv_host(fx *f)
{
  fx_host(f, IN, KILN_F32, HN * HC * HH * HW);
  fx_host(f, IN, KILN_F32, HK * HC * 9);
  fx_host(f, IN, KILN_F32, HK);
  fx_host(f, OUT, KILN_F32, HN * HK * HH * HW);
}

static kiln_status run_conv_host(fx *f)
{
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, HN, HC, HH, HW, HK, 3, 3);
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.relu = 1;
  d.backend = KILN_BACKEND_DIRECT;
  return kiln_conv2d_host(f->rt, &d, f->host[0], f->host[1], f->host[2], f->host[3]);
}

static const char *verify_conv_host(fx *f)
{
  static double want[HN * HK * HH * HW];
  conv_reference(f->host_copy[0], f->host_copy[1], f->host_copy[2], HN, HC, HH, HW, HK,
                 want);
  const float *y = f->host[3];
  for (size_t i = 0; i < COUNT(want); i++)
    if (!near(y[i], want[i]))
      return "y differs from the double-precision reference";
  return NULL;
}

/* ---- FFT ------------------------------------------------------------------------- */

/* C2C of NF points, inverse (so the 1/n scaling runs too), kiln's own
 * kernels at 64 (two passes: twiddles and a scratch buffer), VkFFT and
 * clFFT at 12; R2C and C2R of 16. */
enum { NF_KILN = 64, NF = 12, NRF = 16 };

static size_t fft_len(const fx *f)
{
  return kiln_buffer_count(f->buf[0]) == NF_KILN ? NF_KILN : NF;
}

static void setup_fft_kiln(fx *f)
{
  fx_buf(f, IN, KILN_C32, NF_KILN);
  fx_buf(f, OUT, KILN_C32, NF_KILN);
}

static void setup_fft_c2c(fx *f)
{
  fx_buf(f, IN, KILN_C32, NF);
  fx_buf(f, OUT, KILN_C32, NF);
}

static kiln_status run_fft_c2c(fx *f, kiln_backend be)
{
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, fft_len(f));
  d.inverse = 1;
  d.backend = be;
  return kiln_fft(f->rt, &d, f->buf[0], f->buf[1]);
}

static kiln_status run_fft_c2c_kiln(fx *f)
{
  return run_fft_c2c(f, KILN_BACKEND_KILN);
}

static kiln_status run_fft_c2c_vkfft(fx *f)
{
  return run_fft_c2c(f, KILN_BACKEND_VKFFT);
}

static kiln_status run_fft_c2c_clfft(fx *f)
{
  return run_fft_c2c(f, KILN_BACKEND_CLFFT);
}

static const char *verify_fft_c2c(fx *f)
{
  size_t n = fft_len(f);
  double want[2 * NF_KILN];
  for (size_t k = 0; k < n; k++) {
    double complex s = 0;
    for (size_t j = 0; j < n; j++)
      s += (in_at(f, 0, 2 * j) + I * in_at(f, 0, 2 * j + 1)) *
           cexp(I * TAU * (double)(j * k % n) / (double)n);
    want[2 * k] = creal(s) / (double)n;
    want[2 * k + 1] = cimag(s) / (double)n;
  }
  return compare(f, 1, want, 2 * n, 0);
}

static void setup_fft_r2c(fx *f)
{
  fx_buf(f, IN, KILN_F32, NRF);
  fx_buf(f, OUT, KILN_C32, NRF / 2 + 1);
}

static kiln_status run_fft_real(fx *f, kiln_fft_kind kind, kiln_backend be)
{
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, NRF);
  d.kind = kind;
  d.backend = be;
  return kiln_fft(f->rt, &d, f->buf[0], f->buf[1]);
}

static kiln_status run_fft_r2c_vkfft(fx *f)
{
  return run_fft_real(f, KILN_FFT_R2C, KILN_BACKEND_VKFFT);
}

static kiln_status run_fft_r2c_clfft(fx *f)
{
  return run_fft_real(f, KILN_FFT_R2C, KILN_BACKEND_CLFFT);
}

static const char *verify_fft_r2c(fx *f)
{
  double want[NRF + 2];
  for (size_t k = 0; k <= NRF / 2; k++) {
    double complex s = 0;
    for (size_t j = 0; j < NRF; j++)
      s += in_at(f, 0, j) * cexp(-I * TAU * (double)(j * k % NRF) / NRF);
    want[2 * k] = creal(s);
    want[2 * k + 1] = cimag(s);
  }
  return compare(f, 1, want, NRF + 2, 0);
}

/* A half-spectrum whose first and last points are real, so every library
 * agrees on what it means. */
static void setup_fft_c2r(fx *f)
{
  fx_buf(f, IN, KILN_C32, NRF / 2 + 1);
  fx_buf(f, OUT, KILN_F32, NRF);
  float *w = f->want[0];
  w[1] = w[NRF + 1] = 0;
  if (kiln_buffer_write(f->buf[0], 0, NRF / 2 + 1, w) != KILN_OK)
    f->setup_failed = 1;
}

static kiln_status run_fft_c2r_vkfft(fx *f)
{
  return run_fft_real(f, KILN_FFT_C2R, KILN_BACKEND_VKFFT);
}

static kiln_status run_fft_c2r_clfft(fx *f)
{
  return run_fft_real(f, KILN_FFT_C2R, KILN_BACKEND_CLFFT);
}

static const char *verify_fft_c2r(fx *f)
{
  double want[NRF];
  for (size_t j = 0; j < NRF; j++) {
    double complex s = 0;
    for (size_t k = 0; k < NRF; k++) {
      size_t h = k <= NRF / 2 ? k : NRF - k;
      double complex x = in_at(f, 0, 2 * h) + I * in_at(f, 0, 2 * h + 1);
      s += (k <= NRF / 2 ? x : conj(x)) * cexp(I * TAU * (double)(j * k % NRF) / NRF);
    }
    want[j] = creal(s) / NRF;
  }
  return compare(f, 1, want, NRF, 0);
}

/* ---- conversion, programs, kernels ------------------------------------------------ */

static void setup_convert(fx *f)
{
  fx_buf(f, IN, KILN_F32, 33);
  fx_buf(f, OUT, KILN_I32, 33);
}

static kiln_status run_convert(fx *f)
{
  return kiln_convert(f->buf[0], f->buf[1]);
}

static const char *verify_convert(fx *f)
{
  double want[33];
  for (size_t i = 0; i < 33; i++)
    want[i] = trunc(in_at(f, 0, i));
  return compare(f, 1, want, 33, 0);
}

static const char axpy_source[] =
  "__kernel void fault_axpy(float a, __global const float *x, __global float *y)\n"
  "{\n"
  "  size_t i = get_global_id(0);\n"
  "  y[i] = a * x[i] + y[i];\n"
  "}\n";

static void setup_axpy(fx *f)
{
  fx_buf(f, IN, KILN_F32, NB);
  fx_buf(f, INOUT, KILN_F32, NB);
}

/* The caller's side of a launch: kernel, arguments, launch, release. */
static kiln_status launch_axpy(fx *f)
{
  kiln_kernel *k = NULL;
  size_t global = NB;
  kiln_status st = kiln_kernel_create(f->prog, "fault_axpy", &k);
  if (st == KILN_OK)
    st = kiln_kernel_set_args(k, "fbb", 2.0, f->buf[0], f->buf[1]);
  if (st == KILN_OK)
    st = kiln_kernel_launch(k, 1, &global, NULL);
  kiln_kernel_destroy(k);
  return st;
}

static kiln_status run_program(fx *f)
{
  return kiln_program_create(f->rt, axpy_source, "-DKILN_FAULTS=1", &f->prog);
}

static const char *verify_axpy(fx *f)
{
  double want[NB];
  for (size_t i = 0; i < NB; i++)
    want[i] = 2 * in_at(f, 0, i) + in_at(f, 1, i);
  return compare(f, 1, want, NB, 0);
}

static const char *verify_program(fx *f)
{
  if (launch_axpy(f) != KILN_OK || kiln_finish(f->rt) != KILN_OK)
    return "a kernel of the new program could not be launched";
  return verify_axpy(f);
}

static void setup_kernel(fx *f)
{
  setup_axpy(f);
  if (run_program(f) != KILN_OK)
    f->setup_failed = 1;
}

/* An op that builds nothing; one whose first run builds programs or plans
 * (swept cold too); one that needs a backend this kiln may lack. */
#define WARM(n, s, r, v)                                                                 \
  {                                                                                      \
    .name = n, .setup = s, .run = r, .verify = v                                         \
  }
#define COLD(n, s, r, v)                                                                 \
  {                                                                                      \
    .name = n, .setup = s, .run = r, .verify = v, .cold = 1                              \
  }
#define NEEDS(be, n, s, r, v)                                                            \
  {                                                                                      \
    .name = n, .setup = s, .run = r, .verify = v, .cold = 1, .needs = be                 \
  }

const op fault_ops[] = {
  WARM("buffer_create", setup_create, run_create, verify_create),
  WARM("buffer_write", setup_to_buffer, run_write, verify_to_buffer),
  WARM("buffer_write_async", setup_to_buffer, run_write_async, verify_to_buffer),
  WARM("buffer_read", setup_from_buffer, run_read, verify_from_buffer),
  WARM("buffer_read_async", setup_from_buffer, run_read_async, verify_from_buffer),
  WARM("buffer_copy", setup_copy, run_copy, verify_copy),
  WARM("buffer_fill", setup_fill, run_fill, verify_fill),
  WARM("program_create", setup_axpy, run_program, verify_program),
  WARM("kernel_launch", setup_kernel, launch_axpy, verify_axpy),
  COLD("gemm_kiln", setup_gemm, run_gemm_kiln, verify_gemm),
  /* CLBlast 1.5.3 asks for the build log of a program whose build failed;
   * after an injected failure PoCL has none (CL_INVALID_PROGRAM), and
   * CLBlast reports that instead of the build's error. */
  {.name = "gemm_clblast",
   .setup = setup_gemm,
   .run = run_gemm_clblast,
   .verify = verify_gemm,
   .cold = 1,
   .needs = KILN_BACKEND_CLBLAST,
   .kiln_only = BIT(CLFAULT_BUILD)},
  COLD("gemm_host", setup_gemm_host, run_gemm_host, verify_gemm_host),
  COLD("reduce", setup_reduce, run_reduce, verify_reduce),
  COLD("reduce_host", setup_reduce_host, run_reduce_host, verify_reduce_host),
  COLD("conv2d_im2col", setup_conv, run_conv_im2col, verify_conv),
  COLD("conv2d_direct", setup_conv, run_conv_direct, verify_conv),
  /* room for one set of 3 images (24 KiB of blocks) or two of one (16 KiB),
   * after the weights' 4 KiB block: (36000 - 4096) * 0.9 = 28714 bytes */
  {.name = "conv2d_host",
   .setup = setup_conv_host,
   .run = run_conv_host,
   .verify = verify_conv_host,
   .memory_limit = 36000,
   .survives_oom = 1},
  COLD("convert", setup_convert, run_convert, verify_convert),
  COLD("fft_c2c_kiln", setup_fft_kiln, run_fft_c2c_kiln, verify_fft_c2c),
  NEEDS(KILN_BACKEND_VKFFT, "fft_c2c_vkfft", setup_fft_c2c, run_fft_c2c_vkfft,
        verify_fft_c2c),
  NEEDS(KILN_BACKEND_VKFFT, "fft_r2c_vkfft", setup_fft_r2c, run_fft_r2c_vkfft,
        verify_fft_r2c),
  NEEDS(KILN_BACKEND_VKFFT, "fft_c2r_vkfft", setup_fft_c2r, run_fft_c2r_vkfft,
        verify_fft_c2r),
  /* clFFT 2.12's bake ignores a failed clCreateProgramWithSource,
   * clCreateKernel or clBuildProgram and reports success: the plan it
   * leaves fails every transform after (CL_INVALID_PROGRAM,
   * CL_INVALID_KERNEL), and kiln caches it. After a failed enqueue it
   * releases the event it never got, and PoCL aborts the process. Nothing
   * kiln can catch: the cold sweep (the bake) fails only kiln's own calls.
   * The warm one fails clFFT's enqueues of a transform too, which it
   * reports. */
  {.name = "fft_c2c_clfft",
   .setup = setup_fft_c2c,
   .run = run_fft_c2c_clfft,
   .verify = verify_fft_c2c,
   .cold = 1,
   .needs = KILN_BACKEND_CLFFT,
   .kiln_only = ~0u},
  {.name = "fft_r2c_clfft",
   .setup = setup_fft_r2c,
   .run = run_fft_r2c_clfft,
   .verify = verify_fft_r2c,
   .cold = 1,
   .needs = KILN_BACKEND_CLFFT,
   .kiln_only = ~0u},
  {.name = "fft_c2r_clfft",
   .setup = setup_fft_c2r,
   .run = run_fft_c2r_clfft,
   .verify = verify_fft_c2r,
   .cold = 1,
   .needs = KILN_BACKEND_CLFFT,
   .kiln_only = ~0u},
};

const size_t fault_op_count = COUNT(fault_ops);
