/*
 * test-fft.c — kiln_fft() against a naive DFT computed here in double
 * precision (twiddles exp(+-2 pi i m / n) from m = j k mod n, so every one is
 * within an ulp of double), separable over the axes of 1-D, 2-D and 3-D
 * shapes: C2C forward and inverse of every length 1 to 64 and of powers of
 * two to 2^13 (float32 and float64), the primes 17,
 * 97, 257 and 1009, R2C and C2R of even and odd lengths (odd ones to 100001
 * from sparse inputs, whose exact spectra are cheap), 2-D and 3-D shapes
 * with batches, numpy's three norms, float64 on devices with fp64, kiln's
 * own kernels on power-of-two 2-D and 3-D shapes; for
 * 2^20 and 1024 x 1024, the round trip, Parseval's identity and a few bins
 * computed directly; the kiln backend's local-memory kernels when named
 * (test_fft_gpu_local, run under the GPU shape by meson's fft-gpu-shape); each through AUTO and every FFT backend (a backend that
 * is not built in or cannot do a length returns KILN_ERR_UNSUPPORTED with a
 * message: skipped; AUTO must do every case); two calls of one shape; and
 * the errors.
 *
 * Tolerance (Higham, Accuracy and Stability of Numerical Algorithms, 2nd
 * ed., Theorem 24.2): a radix-2 Cooley-Tukey FFT of length N = 2^t in
 * precision u with twiddles accurate to mu computes y = F x with
 * ||y^ - y||_2 <= t eta / (1 - t eta) ||y||_2, eta = mu + gamma_4 (sqrt 2 +
 * mu) ~ (4 sqrt 2 + 1) u < 7 u; mixed radices give the same form. As
 * ||F x||_2 = sqrt(N) ||x||_2, the root-mean-square error of one element is
 * at most 7 log2(N) u ||x||_2. Bluestein's algorithm (VkFFT's for large
 * prime factors) is three FFTs of a padded length M < 4N and chirp products:
 * about 3 times that, with log2 M < log2 N + 2. kiln's own kernels take
 * their twiddles w^r, r < 32, as products of w: mu < 32 u over log32 N
 * passes, which adds less than 7 log2(N) u. So each element is held to
 *   20 (log2 N + 2) u ||x||_2 s + 2 u |y_k|
 * with s the norm's scale (1, 1/sqrt N or 1/N) and 2 u |y_k| for rounding the
 * result and scaling it. This is a root-mean-square bound used per element:
 * the worst-case bound of the theorem is far above the errors FFTs make
 * (which grow as sqrt(log N)), and every case prints the largest error
 * found as a fraction of its bound. For C2R, ||x||_2 is the norm of the full
 * Hermitian spectrum the half stands for. Inputs are stored in the test's
 * type first, and the reference sees the stored values.
 */
#include "common.h"

#include <math.h>

#include "kiln_config.h"

/* Without VkFFT, AUTO has only clFFT, which refuses lengths with a prime
 * factor above 13: those must then fail with a message naming VkFFT's
 * package. With VkFFT, AUTO must run every length. */
#if !defined(HAVE_VKFFT)
#  define HAVE_VKFFT 0
#endif

#define SLACK 2          /* output elements after the result, never written */
#define SENTINEL 12345.0 /* their value */
#define NBACKENDS 4
#define PI 3.14159265358979323846

static const kiln_backend backends[NBACKENDS] = {KILN_BACKEND_AUTO, KILN_BACKEND_KILN,
                                                 KILN_BACKEND_CLFFT, KILN_BACKEND_VKFFT};
/* Per backend: cases run, and cases it refused as unsupported. */
static size_t ran[NBACKENDS], skipped[NBACKENDS];
static int no_library; /* AUTO refused an R2C of 8: no FFT library built in */
static double worst;   /* the largest error / bound of the test so far */

/* ---- the reference ---------------------------------------------------- */

/* Uniform in [-1, 1), rounded to dtype as the device will see it. */
static double random_value(kiln_dtype t, uint64_t *s)
{
  double v = (double)kiln_test_random(s) * 0x1p-52 - 1;
  return t == KILN_F32 ? (double)(float)v : v;
}

/* The same DFT of one sequence y of n = 2^m complex doubles, in place, as a
 * radix-2 FFT (bit reversal, then butterflies) with twiddles from tw, each
 * within an ulp: lengths the naive sum would take seconds for. */
static void fft_pow2(double *y, size_t n, const double *tw)
{
  for (size_t i = 1, j = 0; i < n; i++) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1)
      j ^= bit;
    j |= bit;
    if (i < j)
      for (int p = 0; p < 2; p++) {
        double t = y[2 * i + (size_t)p];
        y[2 * i + (size_t)p] = y[2 * j + (size_t)p], y[2 * j + (size_t)p] = t;
      }
  }
  for (size_t len = 2; len <= n; len *= 2)
    for (size_t b = 0; b < n; b += len)
      for (size_t j = 0; j < len / 2; j++) {
        const double *w = tw + 2 * (j * (n / len));
        double *u = y + 2 * (b + j), *v = y + 2 * (b + j + len / 2);
        double vr = v[0] * w[0] - v[1] * w[1], vi = v[0] * w[1] + v[1] * w[0];
        v[0] = u[0] - vr, v[1] = u[1] - vi;
        u[0] += vr, u[1] += vi;
      }
}

/* The DFT along the middle axis of (outer, n, inner) complex doubles
 * (interleaved), in place: y_k = sum_j x_j exp(sign 2 pi i j k / n); powers
 * of two above 1024 by fft_pow2(). */
static void dft_axis(double *x, size_t outer, size_t n, size_t inner, int sign)
{
  double *tw = malloc(2 * n * sizeof *tw), *y = malloc(2 * n * sizeof *y);
  assert_true(tw && y);
  for (size_t m = 0; m < n; m++) {
    tw[2 * m] = cos(2 * PI * (double)m / (double)n);
    tw[2 * m + 1] = sign * sin(2 * PI * (double)m / (double)n);
  }
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      double *base = x + 2 * (o * n * inner + i);
      if (n > 1024 && !(n & (n - 1))) {
        for (size_t j = 0; j < n; j++)
          y[2 * j] = base[2 * j * inner], y[2 * j + 1] = base[2 * j * inner + 1];
        fft_pow2(y, n, tw);
      } else
        for (size_t k = 0; k < n; k++) {
          double re = 0, im = 0;
          for (size_t j = 0; j < n; j++) {
            size_t m = j * k % n;
            double a = base[2 * j * inner], b = base[2 * j * inner + 1];
            re += a * tw[2 * m] - b * tw[2 * m + 1];
            im += a * tw[2 * m + 1] + b * tw[2 * m];
          }
          y[2 * k] = re, y[2 * k + 1] = im;
        }
      for (size_t k = 0; k < n; k++)
        base[2 * k * inner] = y[2 * k], base[2 * k * inner + 1] = y[2 * k + 1];
    }
  free(tw);
  free(y);
}

/* The unscaled DFT of `batch` C-order arrays of shape[0..ndim). */
static void dft(double *x, size_t batch, unsigned ndim, const size_t *shape, int sign)
{
  for (unsigned a = 0; a < ndim; a++) {
    size_t outer = batch, inner = 1;
    for (unsigned k = 0; k < ndim; k++)
      *(k < a ? &outer : &inner) *= k == a ? 1 : shape[k];
    dft_axis(x, outer, shape[a], inner, sign);
  }
}

/* ---- one case ----------------------------------------------------------- */

typedef struct fcase {
  kiln_fft_desc d;
  size_t n, rows;      /* elements of one transform; batch * prod(shape[<last]) */
  size_t last, half;   /* the last axis; its half-spectrum n/2 + 1 */
  size_t nin, nout;    /* elements (real or complex) of in and out */
  double *x, *want;    /* input, expected output (interleaved when complex) */
  double xnorm, scale; /* ||x||_2 (full spectrum for C2R), the norm's scale */
} fcase;

static int complex_in(const kiln_fft_desc *d)
{
  return d->kind != KILN_FFT_R2C;
}
static int complex_out(const kiln_fft_desc *d)
{
  return d->kind != KILN_FFT_C2R;
}

static double norm_scale(const kiln_fft_desc *d, double n)
{
  int inv = d->kind == KILN_FFT_C2R || (d->kind == KILN_FFT_C2C && d->inverse);
  switch (d->norm) {
  case KILN_FFT_NORM_ORTHO: return 1 / sqrt(n);
  case KILN_FFT_NORM_FORWARD: return inv ? 1 : 1 / n;
  default: return inv ? 1 / n : 1;
  }
}

/* The half-spectrum (rows, half) of real r (rows, last), rounded to t. */
static void half_spectrum(fcase *c, const double *r, double *out, kiln_dtype t)
{
  size_t b = c->d.batch ? c->d.batch : 1, tot = b * c->n;
  double *z = calloc(2 * tot, sizeof *z);
  assert_non_null(z);
  for (size_t i = 0; i < tot; i++)
    z[2 * i] = r[i];
  dft(z, b, c->d.ndim, c->d.shape, -1);
  for (size_t row = 0; row < c->rows; row++)
    for (size_t k = 0; k < c->half; k++)
      for (int p = 0; p < 2; p++) {
        double v = z[2 * (row * c->last + k) + (size_t)p];
        out[2 * (row * c->half + k) + (size_t)p] = t == KILN_F32 ? (double)(float)v : v;
      }
  free(z);
}

/* Builds the input and the expected output of the case d. */
static fcase make(const kiln_fft_desc *d, uint64_t seed)
{
  fcase c = {.d = *d, .n = 1};
  unsigned nd = d->ndim;
  for (unsigned k = 0; k < nd; k++)
    c.n *= d->shape[k];
  size_t b = d->batch ? d->batch : 1, tot = b * c.n;
  c.last = d->shape[nd - 1], c.half = c.last / 2 + 1, c.rows = tot / c.last;
  c.nin = d->kind == KILN_FFT_C2R ? c.rows * c.half : tot;
  c.nout = d->kind == KILN_FFT_R2C ? c.rows * c.half : tot;
  c.x = malloc(2 * c.nin * sizeof *c.x);
  double *z = calloc(2 * tot, sizeof *z); /* the full complex input */
  assert_true(c.x && z);
  if (d->kind == KILN_FFT_C2R) {
    double *r = malloc(tot * sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < tot; i++)
      r[i] = random_value(d->dtype, &seed);
    half_spectrum(&c, r, c.x, d->dtype);
    free(r);
    /* The Hermitian extension: X[-k] = conj(X[k]) over every axis. */
    size_t lead = c.n / c.last;
    for (size_t bb = 0; bb < b; bb++)
      for (size_t q = 0; q < lead; q++)
        for (size_t k = 0; k < c.last; k++) {
          size_t qq = q, kk = k, neg = 0, stride = 1;
          int mirror = k >= c.half;
          if (mirror) { /* the index of -(q, k) */
            kk = c.last - k;
            for (unsigned a = nd - 1; a-- > 0;) {
              size_t ia = (q / stride) % d->shape[a];
              neg += ((d->shape[a] - ia) % d->shape[a]) * stride;
              stride *= d->shape[a];
            }
            qq = neg;
          }
          const double *src = c.x + 2 * ((bb * lead + qq) * c.half + kk);
          double *dst = z + 2 * ((bb * lead + q) * c.last + k);
          dst[0] = src[0], dst[1] = mirror ? -src[1] : src[1];
        }
  } else {
    for (size_t i = 0; i < c.nin; i++)
      for (int p = 0; p < (complex_in(d) ? 2 : 1); p++)
        c.x[2 * i + (size_t)p] = z[2 * i + (size_t)p] = random_value(d->dtype, &seed);
  }
  double s2 = 0;
  for (size_t i = 0; i < 2 * tot; i++)
    s2 += z[i] * z[i];
  c.xnorm = sqrt(s2 / (double)b); /* one transform's, on average */
  c.scale = norm_scale(d, (double)c.n);
  int inv = d->kind == KILN_FFT_C2R || (d->kind == KILN_FFT_C2C && d->inverse);
  dft(z, b, nd, d->shape, inv ? 1 : -1);
  c.want = malloc(2 * c.nout * sizeof *c.want);
  assert_non_null(c.want);
  for (size_t i = 0; i < c.nout; i++) {
    size_t src = d->kind == KILN_FFT_R2C ? (i / c.half) * c.last + i % c.half : i;
    c.want[2 * i] = z[2 * src] * c.scale;
    c.want[2 * i + 1] = z[2 * src + 1] * c.scale;
  }
  free(z);
  return c;
}

static void unmake(fcase *c)
{
  free(c->x);
  free(c->want);
}

static kiln_dtype complex_of(kiln_dtype t)
{
  return t == KILN_F64 ? KILN_C64 : KILN_C32;
}

/* Host values (doubles, interleaved when complex) as stored in type t. */
static void *pack(const double *v, size_t count, int cplx, kiln_dtype t)
{
  size_t m = count * (cplx ? 2 : 1);
  void *p = malloc(m * (t == KILN_F64 ? 8 : 4) + 1);
  assert_non_null(p);
  for (size_t i = 0; i < m; i++) {
    double x = v[cplx ? i : 2 * i];
    if (t == KILN_F64)
      ((double *)p)[i] = x;
    else
      ((float *)p)[i] = (float)x;
  }
  return p;
}

static double unpacked(const void *p, kiln_dtype t, size_t i)
{
  return t == KILN_F64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* Runs the case on buffers made for it and checks the result, the slack
 * after it and that the input is unchanged. Returns the status of
 * kiln_fft(): an UNSUPPORTED from a named backend must carry a message. */
static kiln_status run_on(kiln_runtime *rt, fcase *c)
{
  const kiln_fft_desc *d = &c->d;
  kiln_dtype t = d->dtype, ti = complex_in(d) ? complex_of(t) : t,
             to = complex_out(d) ? complex_of(t) : t;
  int ci = complex_in(d), co = complex_out(d);
  kiln_buffer *in = NULL, *out = NULL;
  void *hin = pack(c->x, c->nin, ci, t);
  assert_kiln_ok(rt, kiln_buffer_create(rt, ti, c->nin, 0, &in));
  assert_kiln_ok(rt, kiln_buffer_write(in, 0, c->nin, hin));
  assert_kiln_ok(rt, kiln_buffer_create(rt, to, c->nout + SLACK, 0, &out));
  double sent[2] = {SENTINEL, SENTINEL};
  float sentf[2] = {(float)SENTINEL, (float)SENTINEL};
  assert_kiln_ok(rt, kiln_buffer_fill(out, c->nout, SLACK,
                                      t == KILN_F64 ? (void *)sent : (void *)sentf));
  kiln_status st = kiln_fft(rt, d, in, out);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  if (st == KILN_OK) {
    size_t es = t == KILN_F64 ? 8 : 4, m = (c->nout + SLACK) * (co ? 2 : 1);
    void *got = malloc(m * es), *back = malloc(c->nin * (ci ? 2 : 1) * es + 1);
    assert_true(got && back);
    assert_kiln_ok(rt, kiln_buffer_read(out, 0, c->nout + SLACK, got));
    assert_kiln_ok(rt, kiln_buffer_read(in, 0, c->nin, back));
    if (memcmp(back, hin, c->nin * (ci ? 2 : 1) * es) != 0)
      fail_msg("kiln_fft changed its input");
    double u = t == KILN_F64 ? 0x1p-53 : 0x1p-24;
    double base = 20 * (log2((double)c->n) + 2) * u * c->xnorm * c->scale;
    for (size_t i = 0; i < c->nout; i++)
      for (int p = 0; p < (co ? 2 : 1); p++) {
        double w = c->want[2 * i + (size_t)p];
        double g = unpacked(got, t, co ? 2 * i + (size_t)p : i);
        double tol = base + 2 * u * fabs(w), err = fabs(g - w);
        if (!(err <= tol))
          fail_msg("%s %s %s of shape %zu x %zu x %zu (ndim %u), batch %zu, norm %d: "
                   "element %zu%s is %.9g, expected %.9g (error %.3g, bound %.3g)",
                   kiln_backend_name(d->backend), kiln_dtype_name(t),
                   d->kind == KILN_FFT_R2C   ? "R2C"
                   : d->kind == KILN_FFT_C2R ? "C2R"
                   : d->inverse              ? "inverse C2C"
                                             : "C2C",
                   d->shape[0], d->ndim > 1 ? d->shape[1] : 1,
                   d->ndim > 2 ? d->shape[2] : 1, d->ndim, d->batch, (int)d->norm, i,
                   co ? (p ? " (imag)" : " (real)") : "", g, w, err, tol);
        if (tol > 0 && err / tol > worst)
          worst = err / tol;
      }
    for (size_t i = c->nout * (co ? 2 : 1); i < m; i++)
      if (unpacked(got, t, i) != SENTINEL)
        fail_msg("kiln_fft wrote past its %zu output elements", c->nout);
    free(got);
    free(back);
  }
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(hin);
  return st;
}

/* A real-transform case whose input has nnz non-zero points per transform,
 * at random places: the reference sums over those points only, so lengths
 * far beyond the naive DFT's reach are checked at every output. R2C: X[k] =
 * sum x_j exp(-2 pi i j.k / n) over the points; C2R (numpy's irfftn, which
 * gives each half-spectrum point w X and its mirror w conj X): y_j = sum
 * w Re(X_k exp(2 pi i j.k / n)), w = 1 where k on the last axis is 0 or n/2,
 * else 2. Phases are summed from j.k mod n, exact in integers. */
static fcase make_sparse(const kiln_fft_desc *d, uint64_t seed, size_t nnz)
{
  fcase c = {.d = *d, .n = 1};
  unsigned nd = d->ndim;
  size_t dims[3] = {1, 1, 1}; /* right-aligned shape */
  for (unsigned k = 0; k < nd; k++) {
    c.n *= d->shape[k];
    dims[3 - nd + k] = d->shape[k];
  }
  size_t b = d->batch, tot = b * c.n;
  c.last = dims[2], c.half = c.last / 2 + 1, c.rows = tot / c.last;
  int r2c = d->kind == KILN_FFT_R2C;
  c.nin = r2c ? tot : c.rows * c.half;
  c.nout = r2c ? c.rows * c.half : tot;
  size_t per_in = c.nin / b, per_out = c.nout / b;
  size_t in_last = r2c ? c.last : c.half, out_last = r2c ? c.half : c.last;
  c.x = calloc(2 * c.nin, sizeof *c.x);
  c.want = calloc(2 * c.nout, sizeof *c.want);
  size_t *at = malloc(nnz * sizeof *at);
  assert_true(c.x && c.want && at);
  double s2 = 0;
  c.scale = norm_scale(d, (double)c.n);
  for (size_t bb = 0; bb < b; bb++) {
    for (size_t m = 0; m < nnz; m++) {
      at[m] = kiln_test_random(&seed) % per_in;
      double *v = c.x + 2 * (bb * per_in + at[m]);
      v[0] = random_value(d->dtype, &seed);
      v[1] = r2c ? 0 : random_value(d->dtype, &seed);
    }
    for (size_t m = 0; m < nnz; m++) { /* the norm, once per distinct point */
      int seen = 0;
      for (size_t q = 0; q < m; q++)
        seen |= at[q] == at[m];
      const double *v = c.x + 2 * (bb * per_in + at[m]);
      size_t k = at[m] % in_last;
      double w = r2c || k == 0 || 2 * k == c.last ? 1 : 2;
      s2 += seen ? 0 : w * (v[0] * v[0] + v[1] * v[1]);
    }
    for (size_t o = 0; o < per_out; o++) {
      size_t oi[3] = {o / out_last / dims[1], o / out_last % dims[1], o % out_last};
      double re = 0, im = 0;
      for (size_t m = 0; m < nnz; m++) {
        int seen = 0;
        for (size_t q = 0; q < m; q++)
          seen |= at[q] == at[m];
        if (seen)
          continue;
        size_t ii[3] = {at[m] / in_last / dims[1], at[m] / in_last % dims[1],
                        at[m] % in_last};
        double ph = 0;
        for (int a = 0; a < 3; a++)
          ph += (double)(ii[a] * oi[a] % dims[a]) / (double)dims[a];
        ph *= 2 * PI * (r2c ? -1 : 1);
        const double *v = c.x + 2 * (bb * per_in + at[m]);
        double pr = v[0] * cos(ph) - v[1] * sin(ph), pi = v[0] * sin(ph) + v[1] * cos(ph);
        double w = r2c || ii[2] == 0 || 2 * ii[2] == c.last ? 1 : 2;
        re += w * pr;
        im += r2c ? pi : 0;
      }
      c.want[2 * (bb * per_out + o)] = re * c.scale;
      c.want[2 * (bb * per_out + o) + 1] = im * c.scale;
    }
  }
  c.xnorm = sqrt(s2 / (double)b);
  free(at);
  return c;
}

/* Whether every prime factor of every length is at most 13. */
static int smooth(const kiln_fft_desc *d)
{
  for (unsigned k = 0; k < d->ndim; k++) {
    size_t n = d->shape[k];
    for (size_t p = 2; p <= 13; p++)
      while (n % p == 0)
        n /= p;
    if (n != 1)
      return 0;
  }
  return 1;
}

/* The case on backend index b: AUTO must succeed; a named backend may
 * refuse with UNSUPPORTED and a message (counted as a skip). */
static void check(kiln_runtime *rt, const kiln_fft_desc *d0, size_t b, uint64_t seed)
{
  kiln_fft_desc d = *d0;
  d.backend = backends[b];
  fcase c = make(&d, seed);
  kiln_status st = run_on(rt, &c);
  unmake(&c);
  if (st == KILN_ERR_UNSUPPORTED && b != 0 && *kiln_last_error(rt)) {
    skipped[b]++;
    return;
  }
  if (st == KILN_ERR_UNSUPPORTED && b == 0 && !HAVE_VKFFT && !smooth(&d) &&
      strstr(kiln_last_error(rt), "libvkfft-dev")) {
    skipped[b]++;
    return;
  }
  if (st != KILN_OK)
    fail_msg("kiln_fft (%s, n %zu x %zu x %zu, ndim %u, batch %zu) returned %s: %s",
             kiln_backend_name(d.backend), d.shape[0], d.shape[1], d.shape[2], d.ndim,
             d.batch, kiln_status_name(st), kiln_last_error(rt));
  ran[b]++;
}

/* The case on AUTO and every backend. */
static void check_all(kiln_runtime *rt, const kiln_fft_desc *d, uint64_t seed)
{
  for (size_t b = 0; b < NBACKENDS; b++)
    check(rt, d, b, seed);
}

static kiln_fft_desc desc(kiln_fft_kind kind, kiln_dtype t, unsigned ndim,
                          const size_t *shape, size_t batch)
{
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, t, shape[0]);
  d.kind = kind, d.ndim = ndim, d.batch = batch;
  memcpy(d.shape, shape, ndim * sizeof *shape);
  return d;
}

static void begin(void)
{
  if (no_library)
    skip();
  worst = 0;
  memset(ran, 0, sizeof ran);
  memset(skipped, 0, sizeof skipped);
}

static void report(const char *what)
{
  print_message("# %s: largest error %.3g of its bound; ", what, worst);
  for (size_t b = 0; b < NBACKENDS; b++)
    print_message("%s %zu run, %zu unsupported%s", kiln_backend_name(backends[b]), ran[b],
                  skipped[b], b + 1 < NBACKENDS ? "; " : "\n");
}

/* ---- tests ----------------------------------------------------------- */

static void test_fft_desc_init(void **state)
{
  (void)state;
  kiln_fft_desc d;
  memset(&d, 0xff, sizeof d);
  kiln_fft_desc_init(&d, KILN_F32, 12);
  assert_int_equal(d.kind, KILN_FFT_C2C);
  assert_int_equal(d.dtype, KILN_F32);
  assert_int_equal(d.ndim, 1);
  assert_int_equal(d.shape[0], 12);
  assert_true(d.batch <= 1);
  assert_int_equal(d.inverse, 0);
  assert_int_equal(d.norm, KILN_FFT_NORM_BACKWARD);
  assert_int_equal(d.backend, KILN_BACKEND_AUTO);
  kiln_fft_desc_init(NULL, KILN_F32, 12);
}

static void test_fft_c2c_every_length(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  for (size_t n = 1; n <= 64; n++)
    for (int inv = 0; inv < 2; inv++) {
      kiln_fft_desc d =
        desc(KILN_FFT_C2C, KILN_F32, 1, (size_t[]){n}, n % 3 == 0 ? 3 : 1);
      d.inverse = inv;
      check_all(rt, &d, n * 2 + (size_t)inv);
    }
  report("C2C lengths 1-64");
}

/* Powers of two 1 to 2^13, so kiln's own kernels meet every split into
 * passes (2^m: m mod 5 of 0 to 4 before the radix-32 passes). */
static void test_fft_c2c_powers_of_two(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  int f64 = kiln_runtime_device(rt)->has_fp64;
  for (unsigned m = 0; m <= 13; m++)
    for (int t = 0; t < 1 + f64; t++)
      for (int inv = 0; inv < 2; inv++) {
        /* 8 rows of 2^12: on up to 4 compute units, 16 work-items for
         * the vector first pass of radix 256 (kiln_fft_r256v1), which
         * 2^13's 4 leave to radix 16 (src/backends/kiln/fft_kiln.c) */
        kiln_fft_desc d =
          desc(KILN_FFT_C2C, t ? KILN_F64 : KILN_F32, 1, (size_t[]){(size_t)1 << m},
               m <= 10   ? 3
               : m == 12 ? 8
                         : 1);
        d.inverse = inv;
        check_all(rt, &d, 800 + m * 4 + (size_t)(t * 2 + inv));
      }
  report("C2C powers of two");
}

static void test_fft_c2c_primes(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  static const size_t primes[] = {17, 97, 257, 1009};
  for (size_t k = 0; k < 4; k++)
    for (int inv = 0; inv < 2; inv++) {
      kiln_fft_desc d = desc(KILN_FFT_C2C, KILN_F32, 1, (size_t[]){primes[k]}, 2);
      d.inverse = inv;
      check_all(rt, &d, 100 + k);
    }
  report("C2C primes");
}

static void test_fft_real(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  static const size_t lengths[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,
                                   15, 16, 17, 30, 31, 64, 97, 100};
  for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++)
    for (int kind = KILN_FFT_R2C; kind <= KILN_FFT_C2R; kind++) {
      kiln_fft_desc d = desc((kiln_fft_kind)kind, KILN_F32, 1, (size_t[]){lengths[k]}, 2);
      check_all(rt, &d, 200 + k);
    }
  static const size_t shapes[][3] = {{6, 10}, {5, 7}, {8, 9}, {4, 6, 8}, {3, 5, 7}};
  for (size_t k = 0; k < 5; k++)
    for (int kind = KILN_FFT_R2C; kind <= KILN_FFT_C2R; kind++) {
      kiln_fft_desc d =
        desc((kiln_fft_kind)kind, KILN_F32, shapes[k][2] ? 3 : 2, shapes[k], 3);
      check_all(rt, &d, 300 + k);
    }
  report("R2C and C2R");
}

/* Real transforms of odd lengths that VkFFT must split over several passes
 * (it refuses them: 65537 on PoCL) and clFFT refuses (prime factors above
 * 13): AUTO runs them as complex transforms. */
static void test_fft_real_long_odd(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  static const size_t shapes[][2] = {{65537, 0}, {3, 65537}, {100001, 0}};
  int f64 = kiln_runtime_device(rt)->has_fp64;
  for (size_t k = 0; k < 3; k++)
    for (int kind = KILN_FFT_R2C; kind <= KILN_FFT_C2R; kind++)
      for (int t = 0; t < 1 + f64; t++) {
        kiln_fft_desc d = desc((kiln_fft_kind)kind, t ? KILN_F64 : KILN_F32,
                               shapes[k][1] ? 2 : 1, shapes[k], 2);
        fcase c = make_sparse(&d, 900 + k, 7);
        kiln_status st = run_on(rt, &c);
        unmake(&c);
        if (st != KILN_OK)
          fail_msg("kiln_fft %s %s of %zu x %zu returned %s: %s",
                   kind == KILN_FFT_R2C ? "R2C" : "C2R", t ? "float64" : "float32",
                   shapes[k][0], shapes[k][1], kiln_status_name(st), kiln_last_error(rt));
        ran[0]++;
      }
  report("long odd R2C and C2R");
}

static void test_fft_multi_dim(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  static const size_t shapes[][3] = {{4, 8},    {7, 12},   {16, 16},   {1, 17},  {13, 1},
                                     {3, 5, 7}, {8, 4, 6}, {2, 16, 9}, {1, 1, 5}};
  static const size_t batches[] = {1, 3, 2, 4, 1, 2, 1, 3, 2};
  for (size_t k = 0; k < 9; k++)
    for (int inv = 0; inv < 2; inv++) {
      kiln_fft_desc d =
        desc(KILN_FFT_C2C, KILN_F32, shapes[k][2] ? 3 : 2, shapes[k], batches[k]);
      d.inverse = inv;
      check_all(rt, &d, 400 + k);
    }
  report("2-D and 3-D C2C");
}

/* kiln's own kernels on 2-D and 3-D power-of-two shapes (rows, then the
 * column passes of the other axes), square and not, batched, both
 * directions, float32 and float64 where the device has fp64: through the
 * kiln backend, which must run every one, and AUTO (float32). */
static void test_fft_kiln_multi_dim(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  static const size_t shapes[][3] = {{8, 16},    {16, 8},    {64, 32},  {2, 1024},
                                     {256, 256}, {4, 8, 16}, {32, 2, 4}};
  static const size_t batches[] = {3, 2, 2, 1, 1, 2, 1};
  int f64 = kiln_runtime_device(rt)->has_fp64;
  for (size_t k = 0; k < sizeof batches / sizeof *batches; k++)
    for (int t = 0; t < 1 + f64; t++)
      for (int inv = 0; inv < 2; inv++) {
        kiln_fft_desc d = desc(KILN_FFT_C2C, t ? KILN_F64 : KILN_F32,
                               shapes[k][2] ? 3 : 2, shapes[k], batches[k]);
        d.inverse = inv;
        d.norm = inv ? KILN_FFT_NORM_BACKWARD : KILN_FFT_NORM_ORTHO;
        if (t && shapes[k][0] == 256)
          continue;                    /* the reference's 2 x 256^3 points: f32 only */
        for (size_t b = t; b < 2; b++) /* AUTO (f32 only), kiln */
          check(rt, &d, b, 1000 + k * 4 + (size_t)(t * 2 + inv));
      }
  assert_int_equal(skipped[1], 0);
  report("kiln's 2-D and 3-D C2C");
}

static void test_fft_norms(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  static const size_t shapes[][3] = {{12}, {6, 10}};
  for (size_t s = 0; s < 2; s++)
    for (int norm = 0; norm < 3; norm++)
      for (int kind = 0; kind < 4; kind++) { /* C2C, inverse C2C, R2C, C2R */
        kiln_fft_desc d = desc(kind < 2 ? KILN_FFT_C2C : (kiln_fft_kind)(kind - 1),
                               KILN_F32, s + 1, shapes[s], 2);
        d.inverse = kind == 1;
        d.norm = (kiln_fft_norm)norm;
        check_all(rt, &d, 500 + (size_t)(norm * 4 + kind));
      }
  report("norms");
}

static void test_fft_float64(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  if (!kiln_runtime_device(rt)->has_fp64) {
    kiln_fft_desc d = desc(KILN_FFT_C2C, KILN_F64, 1, (size_t[]){8}, 1);
    fcase c = make(&d, 1);
    kiln_status st = run_on(rt, &c);
    unmake(&c);
    kiln_test_refuses_fp64(rt, st, "kiln_fft of float64");
    return;
  }
  static const size_t lengths[] = {1, 2, 5, 8, 12, 17, 31, 64, 97, 1009};
  for (size_t k = 0; k < 10; k++)
    for (int kind = 0; kind < 4; kind++) {
      kiln_fft_desc d = desc(kind < 2 ? KILN_FFT_C2C : (kiln_fft_kind)(kind - 1),
                             KILN_F64, 1, (size_t[]){lengths[k]}, 2);
      d.inverse = kind == 1;
      check_all(rt, &d, 600 + k);
    }
  static const size_t shapes[][3] = {{6, 10}, {3, 5, 7}};
  for (size_t s = 0; s < 2; s++)
    for (int kind = 0; kind < 4; kind++) {
      kiln_fft_desc d = desc(kind < 2 ? KILN_FFT_C2C : (kiln_fft_kind)(kind - 1),
                             KILN_F64, s + 2, shapes[s], 2);
      d.inverse = kind == 1;
      check_all(rt, &d, 700 + s);
    }
  report("float64");
}

/* x (n complex floats) through forward then inverse on backend b: the round
 * trip within 2 * 20 (log2 N + 2) u ||x||_2 (two transforms, the inverse's
 * 1/N scale turning the forward's error norm into the same bound), and
 * Parseval's sum |X|^2 = N sum |x|^2 within 2 * 20 (log2 N + 2) u relative
 * (the forward error, twice, through the square). Four bins of X are held to
 * the per-element bound of the header. */
static void large_case(kiln_runtime *rt, unsigned ndim, const size_t *shape, size_t b)
{
  size_t n = 1;
  for (unsigned k = 0; k < ndim; k++)
    n *= shape[k];
  float *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y);
  assert_true(x && y);
  uint64_t seed = 77 + ndim;
  double sx = 0, sy = 0, sr = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    x[i] = (float)random_value(KILN_F32, &seed);
    sx += (double)x[i] * x[i];
  }
  kiln_buffer *bx = NULL, *by = NULL, *bz = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, 0, &bz));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, n, x));
  kiln_fft_desc d = desc(KILN_FFT_C2C, KILN_F32, ndim, shape, 1);
  d.backend = backends[b];
  kiln_status st = kiln_fft(rt, &d, bx, by);
  if (st == KILN_ERR_UNSUPPORTED && b != 0 && *kiln_last_error(rt)) {
    skipped[b]++;
    goto done;
  }
  assert_kiln_ok(rt, st);
  d.inverse = 1;
  assert_kiln_ok(rt, kiln_fft(rt, &d, by, bz));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, n, y));
  double u = 0x1p-24, l = 20 * (log2((double)n) + 2) * u;
  for (size_t i = 0; i < 2 * n; i++)
    sy += (double)y[i] * y[i];
  double parseval = fabs(sy / ((double)n * sx) - 1);
  if (!(parseval <= 2 * l))
    fail_msg("%s: Parseval: sum |X|^2 / (N sum |x|^2) - 1 = %.3g, bound %.3g",
             kiln_backend_name(d.backend), parseval, 2 * l);
  /* four bins, each O(N): (row bin, column bin) in 2-D, one bin in 1-D */
  size_t last = shape[ndim - 1], rows = n / last;
  const size_t bins[4][2] = {{0, 0},
                             {1, 3},
                             {rows / 2, last / 2},
                             {rows - 5, 12345 % last}},
               bins1[4] = {0, 3, n / 2, 12345};
  for (size_t k = 0; k < 4; k++) {
    size_t k0 = ndim == 1 ? 0 : bins[k][0], k1 = ndim == 1 ? bins1[k] : bins[k][1];
    double re = 0, im = 0;
    for (size_t r = 0; r < rows; r++)
      for (size_t j = 0; j < last; j++) {
        size_t m0 = r * k0 % rows, m1 = j * k1 % last;
        double ph = -2 * PI * ((double)m0 / (double)rows + (double)m1 / (double)last);
        double a = x[2 * (r * last + j)], bb = x[2 * (r * last + j) + 1];
        re += a * cos(ph) - bb * sin(ph);
        im += a * sin(ph) + bb * cos(ph);
      }
    size_t at = k0 * last + k1;
    double err = hypot(y[2 * at] - re, y[2 * at + 1] - im);
    double tol = l * sqrt(sx) + 2 * u * hypot(re, im);
    if (err / tol > worst)
      worst = err / tol;
    if (!(err <= tol))
      fail_msg(
        "%s: bin %zu is (%.9g, %.9g), expected (%.9g, %.9g): error %.3g, bound %.3g",
        kiln_backend_name(d.backend), at, (double)y[2 * at], (double)y[2 * at + 1], re,
        im, err, tol);
  }
  assert_kiln_ok(rt, kiln_buffer_read(bz, 0, n, y));
  for (size_t i = 0; i < 2 * n; i++)
    sr += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
  if (!(sqrt(sr) <= 2 * l * sqrt(sx)))
    fail_msg("%s: round trip: ||x' - x|| / ||x|| = %.3g, bound %.3g",
             kiln_backend_name(d.backend), sqrt(sr / sx), 2 * l);
  print_message("# %s %zu-D %zu: round trip %.3g, Parseval %.3g (bound %.3g)\n",
                kiln_backend_name(d.backend), (size_t)ndim, n, sqrt(sr / sx), parseval,
                2 * l);
  ran[b]++;
done:
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by), kiln_buffer_destroy(bz);
  free(x);
  free(y);
}

static void test_fft_large(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  for (size_t b = 0; b < NBACKENDS; b++) {
    large_case(rt, 1, (size_t[]){(size_t)1 << 20}, b);
    large_case(rt, 2, (size_t[]){1024, 1024}, b);
  }
  report("large");
}

/* The kiln backend's local-memory kernels (cl/fft_local.cl), which the GPU
 * shape runs (meson test fft-gpu-shape, KILN_TEST_SHAPE=gpu): every power
 * of two from 2 to 2^16 (whole sequences up to the tuning's local_max, two
 * launches above), both directions, odd batches where the reference is
 * cheap; float64 (half the local room a point: both forms again) to 2^13;
 * 2-D and 3-D shapes whose column axes are whole or split; and 2^20 once.
 * Elsewhere the same cases run kiln's other kernels, and must hold too. */
static void test_fft_gpu_local(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  int f64 = kiln_runtime_device(rt)->has_fp64;
  for (unsigned m = 1; m <= 16; m++)
    for (int t = 0; t < 1 + (f64 && m <= 13); t++)
      for (int inv = 0; inv < 2; inv++) {
        kiln_fft_desc d =
          desc(KILN_FFT_C2C, t ? KILN_F64 : KILN_F32, 1, (size_t[]){(size_t)1 << m},
               m <= 10   ? 5
               : m <= 13 ? 3
                         : 1);
        d.inverse = inv;
        check(rt, &d, 1, 1100 + m * 4 + (size_t)(t * 2 + inv));
      }
  static const size_t shapes[][3] = {{64, 32}, {8192, 4}, {4, 8192}, {2, 4, 16}};
  static const size_t batches[] = {3, 1, 1, 3};
  for (size_t k = 0; k < sizeof batches / sizeof *batches; k++)
    for (int t = 0; t < 1 + f64; t++) {
      kiln_fft_desc d = desc(KILN_FFT_C2C, t ? KILN_F64 : KILN_F32, shapes[k][2] ? 3 : 2,
                             shapes[k], batches[k]);
      d.inverse = t;
      check(rt, &d, 1, 1200 + k * 2 + (size_t)t);
    }
  large_case(rt, 1, (size_t[]){(size_t)1 << 20}, 1);
  assert_int_equal(skipped[1], 0);
  report("kiln's local-memory kernels");
}

/* One shape twice, with other data, then another batch (another plan) and
 * the first shape again: every result right. */
static void test_fft_plan_reuse(void **state)
{
  kiln_runtime *rt = *state;
  begin();
  for (size_t b = 0; b < NBACKENDS; b++) {
    kiln_fft_desc d = desc(KILN_FFT_C2C, KILN_F32, 2, (size_t[]){16, 24}, 2);
    check(rt, &d, b, 1);
    check(rt, &d, b, 2);
    d.batch = 5;
    check(rt, &d, b, 3);
    d.batch = 2;
    check(rt, &d, b, 4);
  }
  report("plan reuse");
}

static void test_fft_errors(void **state)
{
  kiln_runtime *rt = *state;
  if (no_library)
    skip();
  kiln_buffer *c16 = NULL, *c15 = NULL, *r16 = NULL, *z16 = NULL, *other = NULL;
  kiln_runtime *rt2 = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, 16, 0, &c16));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, 15, 0, &c15));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 16, 0, &r16));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, 16, 0, &z16));
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt2));
  assert_kiln_ok(rt2, kiln_buffer_create(rt2, KILN_C32, 16, 0, &other));
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, 16);
  assert_kiln_ok(rt, kiln_fft(rt, &d, c16, z16));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "", kiln_fft(rt, NULL, c16, z16));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "", kiln_fft(rt, &d, NULL, z16));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "", kiln_fft(rt, &d, c16, c16));
  for (unsigned nd = 0; nd <= 4; nd += 4) { /* ndim 0 and 4 */
    kiln_fft_desc e = d;
    e.ndim = nd;
    assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, nd ? "4" : "0",
                      kiln_fft(rt, &e, c16, z16));
  }
  kiln_fft_desc e = d;
  e.shape[0] = 0;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "0", kiln_fft(rt, &e, c16, z16));
  e = d, e.ndim = 2, e.shape[0] = 4, e.shape[1] = 0;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "0", kiln_fft(rt, &e, c16, z16));
  e = d, e.kind = (kiln_fft_kind)7;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "", kiln_fft(rt, &e, c16, z16));
  /* dtypes: the desc's must be real; buffers complex where complex */
  static const kiln_dtype bad[] = {KILN_C32, KILN_C64, KILN_F16, KILN_I32};
  for (size_t k = 0; k < 4; k++) {
    e = d, e.dtype = bad[k];
    if (bad[k] == KILN_F16) { /* float16: unsupported or a bad dtype */
      kiln_status st = kiln_fft(rt, &e, c16, z16);
      assert_true(st == KILN_ERR_INVALID_DTYPE || st == KILN_ERR_UNSUPPORTED);
      continue;
    }
    assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "", kiln_fft(rt, &e, c16, z16));
  }
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "", kiln_fft(rt, &d, r16, z16));
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "", kiln_fft(rt, &d, c16, r16));
  e = d, e.kind = KILN_FFT_R2C; /* in real 16, out complex 9 */
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "", kiln_fft(rt, &e, c16, z16));
  assert_kiln_ok(rt, kiln_fft(rt, &e, r16, z16));
  e.kind = KILN_FFT_C2R;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "", kiln_fft(rt, &e, c16, c15));
  assert_kiln_ok(rt, kiln_fft(rt, &e, c16, r16));
  e = d, e.dtype = KILN_F64; /* float64 descriptor, float32 buffers */
  {
    kiln_status st = kiln_fft(rt, &e, c16, z16);
    assert_true(st == KILN_ERR_INVALID_DTYPE || st == KILN_ERR_UNSUPPORTED);
  }
  /* buffers too small: the message gives the elements needed and held */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "15", kiln_fft(rt, &d, c15, z16));
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "15", kiln_fft(rt, &d, c16, c15));
  e = d, e.batch = 2;
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "32", kiln_fft(rt, &e, c16, z16));
  e = d, e.kind = KILN_FFT_R2C, e.shape[0] = 30; /* out needs 16 complex: fits */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "30", kiln_fft(rt, &e, r16, z16));
  e.shape[0] = 16, e.batch = 2; /* 32 real in, 18 complex out */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "32", kiln_fft(rt, &e, r16, z16));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "", kiln_fft(rt, &d, other, z16));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "", kiln_fft(rt, &d, c16, other));
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_buffer_destroy(c16), kiln_buffer_destroy(c15), kiln_buffer_destroy(r16);
  kiln_buffer_destroy(z16), kiln_buffer_destroy(other);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt2));
}

/* ---- kiln_fft_host ------------------------------------------------------- */

/* The case through kiln_fft_host() on rt: its status, and the result into
 * got (as the type stores it). */
static kiln_status run_host(kiln_runtime *rt, const fcase *c, void *got)
{
  kiln_dtype t = c->d.dtype;
  void *in = pack(c->x, c->nin, complex_in(&c->d), t);
  kiln_status st = kiln_fft_host(rt, &c->d, in, got);
  free(in);
  return st;
}

/* The case through kiln_fft() on the whole batch on rt, into got. */
static void run_whole(kiln_runtime *rt, const fcase *c, void *got)
{
  kiln_dtype t = c->d.dtype;
  kiln_dtype ti = complex_in(&c->d) ? complex_of(t) : t,
             to = complex_out(&c->d) ? complex_of(t) : t;
  void *in = pack(c->x, c->nin, complex_in(&c->d), t);
  kiln_buffer *bi = NULL, *bo = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, ti, c->nin, 0, &bi));
  assert_kiln_ok(rt, kiln_buffer_create(rt, to, c->nout, 0, &bo));
  assert_kiln_ok(rt, kiln_buffer_write(bi, 0, c->nin, in));
  assert_kiln_ok(rt, kiln_fft(rt, &c->d, bi, bo));
  assert_kiln_ok(rt, kiln_buffer_read(bo, 0, c->nout, got));
  kiln_buffer_destroy(bi), kiln_buffer_destroy(bo);
  free(in);
}

/* kiln_fft_host() under budgets (to the byte: no pool) below the batch's
 * bytes: pieces of a fixed number of transforms and a last shorter one,
 * each computed as kiln_fft() computes the whole batch (the same bits on
 * kiln's own kernels, whose transforms do not depend on the batch; within
 * the reference's bound on every backend), at most the budget used. */
static void test_fft_host_split(void **state)
{
  kiln_runtime *whole = *state;
  begin();
  static const struct {
    kiln_fft_kind kind;
    unsigned ndim;
    size_t shape[3], batch;
    uint64_t limits[2]; /* the batch's in + out: 13 KB, 6.1 KB, 2.6 KB */
  } cases[] = {
    {KILN_FFT_C2C, 1, {64}, 13, {8 * 1024, 4 * 1024}},
    {KILN_FFT_R2C, 2, {8, 12}, 7, {4 * 1024, 2 * 1024}},
    {KILN_FFT_C2R, 1, {30}, 11, {2 * 1024, 1024}},
  };
  for (size_t k = 0; k < COUNT(cases); k++)
    for (size_t li = 0; li < 2; li++) {
      kiln_fft_desc d =
        desc(cases[k].kind, KILN_F32, cases[k].ndim, cases[k].shape, cases[k].batch);
      d.inverse = cases[k].kind == KILN_FFT_C2C && li == 1;
      d.backend = cases[k].kind == KILN_FFT_C2C ? KILN_BACKEND_KILN : KILN_BACKEND_AUTO;
      fcase c = make(&d, 40 + k);
      size_t bytes = 8 * (complex_out(&d) ? 2 : 1) * c.nout;
      void *got = malloc(bytes), *one = malloc(bytes);
      run_whole(whole, &c, one);
      kiln_options opts;
      kiln_options_init(&opts);
      opts.memory_limit = cases[k].limits[li];
      opts.no_memory_pool = 1;
      kiln_runtime *rt = NULL;
      assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
      kiln_status st = run_host(rt, &c, got);
      if (st != KILN_OK)
        fail_msg("case %zu under %llu bytes: %s: %s", k,
                 (unsigned long long)cases[k].limits[li], kiln_status_name(st),
                 kiln_last_error(rt));
      double u = 0x1p-24, base = 20 * (log2((double)c.n) + 2) * u * c.xnorm * c.scale;
      size_t m = c.nout * (complex_out(&d) ? 2 : 1);
      for (size_t i = 0; i < m; i++) {
        double g = ((float *)got)[i], w = c.want[complex_out(&d) ? i : 2 * i];
        if (!(fabs(g - w) <= base + 2 * u * fabs(w)))
          fail_msg("case %zu under %llu bytes: element %zu is %.9g, expected %.9g", k,
                   (unsigned long long)cases[k].limits[li], i, g, w);
        if (d.backend == KILN_BACKEND_KILN && g != ((float *)one)[i])
          fail_msg("case %zu under %llu bytes: element %zu is %.9g split, %.9g whole", k,
                   (unsigned long long)cases[k].limits[li], i, g, ((float *)one)[i]);
      }
      kiln_memory_usage mu;
      kiln_memory_usage_init(&mu);
      assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
      assert_true(mu.peak_bytes <= cases[k].limits[li]);
      assert_true(mu.peak_bytes < bytes + 8 * c.nin); /* it was split */
      assert_int_equal(mu.live_buffers, 0);
      assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
      free(got), free(one);
      unmake(&c);
    }
}

/* Too small a budget for one transform: OUT_OF_MEMORY naming it; NULL or
 * shared arrays and bad descriptors: their statuses. */
static void test_fft_host_errors(void **state)
{
  kiln_runtime *rt = *state;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = 900; /* one transform of 64: 1 KB */
  opts.no_memory_pool = 1;
  kiln_runtime *tiny = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &tiny));
  float in[128] = {0}, out[128];
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, 64);
  assert_kiln_fails(tiny, KILN_ERR_OUT_OF_MEMORY, "kiln_fft_host: one transform",
                    kiln_fft_host(tiny, &d, in, out));
  assert_kiln_ok(NULL, kiln_runtime_destroy(tiny));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "in is NULL",
                    kiln_fft_host(rt, &d, NULL, out));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_fft_host(rt, &d, in, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "the same array",
                    kiln_fft_host(rt, &d, in, in));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "desc",
                    kiln_fft_host(rt, NULL, in, out));
  kiln_fft_desc e = d;
  e.kind = (kiln_fft_kind)7;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kind 7",
                    kiln_fft_host(rt, &e, in, out));
  e = d, e.ndim = 4;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "ndim",
                    kiln_fft_host(rt, &e, in, out));
  e = d, e.dtype = KILN_I32;
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "int32", kiln_fft_host(rt, &e, in, out));
  e = d, e.struct_size = 0;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_fft_desc_init",
                    kiln_fft_host(rt, &e, in, out));
}

static int setup(void **state)
{
  if (kiln_test_runtime_setup(state) != 0)
    return -1;
  kiln_runtime *rt = *state;
  kiln_buffer *a = NULL, *b = NULL;
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, 8);
  d.kind = KILN_FFT_R2C; /* kiln's own kernels run C2C only */
  if (kiln_buffer_create(rt, KILN_F32, 8, 0, &a) != KILN_OK ||
      kiln_buffer_create(rt, KILN_C32, 5, 0, &b) != KILN_OK)
    return -1;
  kiln_status st = kiln_fft(rt, &d, a, b);
  if (st == KILN_ERR_UNSUPPORTED) { /* no FFT library: the message names them */
    const char *m = kiln_last_error(rt);
    fprintf(stderr, "# kiln_fft: %s\n", m);
    no_library = 1;
    if (!strstr(m, "libclfft-dev") && !strstr(m, "libvkfft-dev"))
      return -1;
  }
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  return 0;
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fft_desc_init),
    cmocka_unit_test(test_fft_errors),
    cmocka_unit_test(test_fft_c2c_every_length),
    cmocka_unit_test(test_fft_c2c_powers_of_two),
    cmocka_unit_test(test_fft_c2c_primes),
    cmocka_unit_test(test_fft_real),
    cmocka_unit_test(test_fft_real_long_odd),
    cmocka_unit_test(test_fft_multi_dim),
    cmocka_unit_test(test_fft_kiln_multi_dim),
    cmocka_unit_test(test_fft_norms),
    cmocka_unit_test(test_fft_float64),
    cmocka_unit_test(test_fft_plan_reuse),
    cmocka_unit_test(test_fft_host_split),
    cmocka_unit_test(test_fft_host_errors),
    cmocka_unit_test(test_fft_large),
    cmocka_unit_test(test_fft_gpu_local), /* last: only when named (argv) */
  };
  size_t count = sizeof tests / sizeof *tests - (argc > 1 ? 0 : 1);
  return _cmocka_run_group_tests("tests", tests, count, setup,
                                 kiln_test_runtime_teardown);
}
