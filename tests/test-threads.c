/*
 * test-threads.c — 8 threads of mixed operations, every result checked
 * against a CPU reference computed here in double: on one shared runtime
 * (profiling off, then on, where the table must count every call of every
 * thread), on one runtime per thread, and with runtimes created and
 * destroyed on all threads at once. kiln_last_error() must give each thread
 * its own message while the others go on, and building VkFFT plans must not
 * change the locale of the other threads; blocking reads and maps must
 * return their thread's data while the queue is flushed, and kiln_finish()
 * leave no call running. ci/tsan.sh runs this under ThreadSanitizer.
 *
 * Each thread draws its operations and sizes from its own generator, seeded
 * from KILN_TEST_SEED (default 1) and its number, so a failing sequence can
 * be replayed; the interleaving is the scheduler's. KILN_TEST_ROUNDS sets
 * the operations per thread (default 24). An argument, e.g. "*shared*",
 * runs only the tests whose names match it.
 *
 * Inputs are multiples of 2^-8 in [-1, 1). Every GEMM, convolution and sum
 * here adds fewer than 2^13 products of such values, whose partial sums
 * need at most 24 significant bits: float32 holds them exactly in any order,
 * so those results must equal the reference exactly, and a result computed
 * from another thread's data cannot pass. Means and norms are within two
 * float32 roundings; FFTs within a bound far below what mixing two
 * transforms' data gives.
 */
#include "common.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "kiln_config.h"
#include "values.h"

#define THREADS 8
#define PI 3.14159265358979323846

enum { MODE_SHARED, MODE_OWN, MODE_COME_AND_GO, MODE_ERRORS };

enum {
  OP_GEMM,
  OP_REDUCE,
  OP_CONV,
  OP_FFT_KILN,
  OP_FFT_VKFFT,
  OP_FFT_CLFFT,
  OP_CONVERT,
  OP_BUFFERS,
  OP_ASYNC,
  OP_PROGRAM,
  OP_SHARED_KERNEL,
  OP_STATS,
  OP_ERRORS,
  OP_COUNT
};

/* The calls the profiler records, by its row names. */
enum {
  REC_GEMM,
  REC_REDUCE,
  REC_CONV,
  REC_FFT,
  REC_CONVERT,
  REC_WRITE,
  REC_READ,
  REC_COPY,
  REC_FILL,
  REC_USER,
  REC_COUNT
};
static const char *const rec_names[REC_COUNT] = {
  "gemm", "reduce.", "conv2d", "fft", "convert", "write", "read", "copy", "fill", ""};

typedef struct worker {
  unsigned id;
  uint64_t rng;
  unsigned rounds;
  kiln_runtime *rt;             /* shared, or the worker's own */
  kiln_kernel *shared;          /* NULL: none to share */
  pthread_mutex_t *shared_lock; /* held from set_args to launch */
  pthread_barrier_t *start;
  int mode; /* see worker_main() */
  unsigned long calls[REC_COUNT];
  char failure[2048]; /* the first check that failed; "" when none */
} worker;

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start_barrier;
static uint64_t base_seed = 1;
static unsigned rounds = 24;

/* ---- helpers -------------------------------------------------------------- */

static uint64_t next(worker *w)
{
  return kiln_test_random(&w->rng);
}

static size_t pick(worker *w, size_t lo, size_t hi) /* in [lo, hi] */
{
  return lo + (size_t)(next(w) % (hi - lo + 1));
}

static float grid(worker *w) /* a multiple of 2^-8 in [-1, 1) */
{
  return (float)((int)(next(w) % 512) - 256) / 256.0f;
}

static float *grid_values(worker *w, size_t n)
{
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = grid(w);
  return v;
}

/* Keeps the first failure; returns 1 so ops can `return flunk(...)`. */
static int flunk(worker *w, const char *fmt, ...)
{
  if (!w->failure[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof w->failure, fmt, ap);
    va_end(ap);
  }
  return 1;
}

/* Runs a kiln call; on failure records it with this thread's message. */
#define CALL(w, rt, expr)                                                                \
  do {                                                                                   \
    kiln_status st_ = (expr);                                                            \
    if (st_ != KILN_OK)                                                                  \
      return flunk((w), "thread %u: %s returned %s: %s", (w)->id, #expr,                 \
                   kiln_status_name(st_), kiln_last_error(rt));                          \
  } while (0)

static kiln_buffer *upload(worker *w, kiln_runtime *rt, kiln_dtype t, size_t n,
                           const void *host)
{
  kiln_buffer *b = NULL;
  if (kiln_buffer_create(rt, t, n, 0, &b) != KILN_OK ||
      kiln_buffer_write(b, 0, n, host) != KILN_OK) {
    flunk(w, "thread %u: uploading %zu %s: %s", w->id, n, kiln_dtype_name(t),
          kiln_last_error(rt));
    kiln_buffer_destroy(b);
    return NULL;
  }
  w->calls[REC_WRITE]++;
  return b;
}

/* Reads n elements of b into a new array, or NULL after flunk(). */
static void *download(worker *w, kiln_runtime *rt, const kiln_buffer *b, size_t n)
{
  void *host = malloc(n * kiln_dtype_size(kiln_buffer_dtype(b)));
  if (kiln_buffer_read(b, 0, n, host) != KILN_OK) {
    flunk(w, "thread %u: reading back %zu elements: %s", w->id, n, kiln_last_error(rt));
    free(host);
    return NULL;
  }
  w->calls[REC_READ]++;
  return host;
}

static int compare(worker *w, const char *what, const float *got, const double *want,
                   size_t n, double rel, double abs_tol)
{
  for (size_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= rel * fabs(want[i]) + abs_tol))
      return flunk(w, "thread %u: %s: element %zu of %zu is %.9g, expected %.9g", w->id,
                   what, i, n, got[i], want[i]);
  return 0;
}

static void destroy_all(kiln_buffer **b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    kiln_buffer_destroy(b[i]);
}

/* ---- the operations ------------------------------------------------------- */

static int op_gemm(worker *w, kiln_runtime *rt)
{
  static const double alphas[] = {1, 0.5, -2}, betas[] = {0, 1, 0.5};
  size_t m = pick(w, 1, 40), n = pick(w, 1, 40), k = pick(w, 1, 40);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, m, n, k);
  d.trans_a = pick(w, 0, 1) ? KILN_TRANS : KILN_NO_TRANS;
  d.trans_b = pick(w, 0, 1) ? KILN_TRANS : KILN_NO_TRANS;
  d.alpha = alphas[pick(w, 0, 2)];
  d.beta = betas[pick(w, 0, 2)];
  /* CLBlast too, on the shared runtimes only: it compiles its kernels for
   * each new runtime, seconds on a CPU device */
  if (HAVE_CLBLAST && w->mode == MODE_SHARED && pick(w, 0, 3) == 0)
    d.backend = KILN_BACKEND_CLBLAST;
  float *a = grid_values(w, m * k), *b = grid_values(w, k * n);
  float *c = grid_values(w, m * n);
  double *want = malloc(m * n * sizeof *want);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < k; p++)
        s += (double)(d.trans_a ? a[p * m + i] : a[i * k + p]) *
             (d.trans_b ? b[j * k + p] : b[p * n + j]);
      want[i * n + j] = d.alpha * s + (d.beta != 0 ? d.beta * c[i * n + j] : 0);
    }
  kiln_buffer *bufs[3] = {upload(w, rt, KILN_F32, m * k, a),
                          upload(w, rt, KILN_F32, k * n, b),
                          upload(w, rt, KILN_F32, m * n, c)};
  int bad = !bufs[0] || !bufs[1] || !bufs[2];
  if (!bad && kiln_gemm(rt, &d, bufs[0], bufs[1], bufs[2]) != KILN_OK)
    bad = flunk(w, "thread %u: kiln_gemm (%s) %zux%zux%zu: %s", w->id,
                kiln_backend_name(d.backend), m, n, k, kiln_last_error(rt));
  w->calls[REC_GEMM] += !bad;
  float *got = bad ? NULL : download(w, rt, bufs[2], m * n);
  if (got)
    bad = compare(w, "gemm", got, want, m * n, 0, 0);
  destroy_all(bufs, 3);
  free(a), free(b), free(c), free(want), free(got);
  return bad || !got;
}

/* A reduction of a rows x cols view: every element, or along one axis. */
static int op_reduce(worker *w, kiln_runtime *rt)
{
  static const kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_MAX,
                                       KILN_REDUCE_ARGMAX, KILN_REDUCE_MEAN,
                                       KILN_REDUCE_NORM2};
  size_t rows = pick(w, 1, 6), cols = pick(w, 1, 900), count = rows * cols;
  kiln_reduce_op op = ops[pick(w, 0, 4)];
  int axis = (int)pick(w, 0, 2) - 1; /* -1: every element */
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, op, KILN_F32, count);
  d.ndim = 2;
  d.shape[0] = rows;
  d.shape[1] = cols;
  d.axis = axis < 0 ? KILN_AXIS_ALL : axis;
  size_t outer = axis == 1 ? rows : 1, inner = axis == 0 ? cols : 1;
  size_t len = axis < 0 ? count : axis == 0 ? rows : cols, outs = outer * inner;
  float *x = grid_values(w, count);
  double *want = malloc(outs * sizeof *want);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      double s = 0, best = -INFINITY;
      size_t at = 0;
      for (size_t l = 0; l < len; l++) {
        double v = x[(o * len + l) * inner + i];
        s += op == KILN_REDUCE_NORM2 ? v * v : v;
        if (v > best)
          best = v, at = l;
      }
      want[o * inner + i] = op == KILN_REDUCE_SUM      ? s
                            : op == KILN_REDUCE_MAX    ? best
                            : op == KILN_REDUCE_ARGMAX ? (double)at
                            : op == KILN_REDUCE_MEAN   ? s / (double)len
                                                       : sqrt(s);
    }
  kiln_dtype ot = kiln_reduce_out_dtype(op, KILN_F32);
  kiln_buffer *in = upload(w, rt, KILN_F32, count, x), *out = NULL;
  int bad = !in;
  if (!bad && (kiln_buffer_create(rt, ot, outs, 0, &out) != KILN_OK ||
               kiln_reduce(rt, &d, in, out) != KILN_OK))
    bad = flunk(w, "thread %u: kiln_reduce %s of %zux%zu along %d: %s", w->id,
                kiln_reduce_op_name(op), rows, cols, axis, kiln_last_error(rt));
  w->calls[REC_REDUCE] += !bad;
  void *got = bad ? NULL : download(w, rt, out, outs);
  if (got && ot == KILN_I64) {
    for (size_t i = 0; i < outs && !bad; i++)
      if (((int64_t *)got)[i] != (int64_t)want[i])
        bad = flunk(w, "thread %u: argmax %zu is %lld, expected %.0f", w->id, i,
                    (long long)((int64_t *)got)[i], want[i]);
  } else if (got) {
    /* sums and maxima exactly; means and norms within two roundings */
    int exact = op == KILN_REDUCE_SUM || op == KILN_REDUCE_MAX;
    bad = compare(w, kiln_reduce_op_name(op), got, want, outs, exact ? 0 : 0x1p-22, 0);
  }
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(x), free(want), free(got);
  return bad || !got;
}

static int op_conv(worker *w, kiln_runtime *rt)
{
  static const kiln_backend backends[] = {KILN_BACKEND_AUTO, KILN_BACKEND_IM2COL,
                                          KILN_BACKEND_DIRECT};
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, pick(w, 1, 2), pick(w, 1, 3), pick(w, 3, 9),
                        pick(w, 3, 9), pick(w, 1, 4), 0, 0);
  d.r = d.s = pick(w, 0, 1) ? 3 : 1;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pick(w, 0, 1);
  d.stride_h = d.stride_w = pick(w, 1, 2);
  d.relu = (int)pick(w, 0, 1);
  d.backend = backends[pick(w, 0, 2)];
  int with_bias = (int)pick(w, 0, 1);
  size_t p, q;
  CALL(w, NULL, kiln_conv2d_output(&d, &p, &q));
  size_t nx = d.n * d.c * d.h * d.w, nw = d.k * d.c * d.r * d.s, ny = d.n * d.k * p * q;
  float *x = grid_values(w, nx), *wt = grid_values(w, nw), *bias = grid_values(w, d.k);
  double *want = malloc(ny * sizeof *want);
  for (size_t i = 0; i < d.n; i++)
    for (size_t o = 0; o < d.k; o++)
      for (size_t y = 0; y < p; y++)
        for (size_t z = 0; z < q; z++) {
          double s = with_bias ? bias[o] : 0;
          for (size_t c = 0; c < d.c; c++)
            for (size_t u = 0; u < d.r; u++)
              for (size_t v = 0; v < d.s; v++) {
                long hy = (long)(y * d.stride_h + u) - (long)d.pad_top;
                long wx = (long)(z * d.stride_w + v) - (long)d.pad_left;
                if (hy >= 0 && wx >= 0 && hy < (long)d.h && wx < (long)d.w)
                  s += (double)x[((i * d.c + c) * d.h + (size_t)hy) * d.w + (size_t)wx] *
                       wt[((o * d.c + c) * d.r + u) * d.s + v];
              }
          want[((i * d.k + o) * p + y) * q + z] = d.relu && s < 0 ? 0 : s;
        }
  kiln_buffer *bufs[4] = {upload(w, rt, KILN_F32, nx, x), upload(w, rt, KILN_F32, nw, wt),
                          with_bias ? upload(w, rt, KILN_F32, d.k, bias) : NULL, NULL};
  int bad = !bufs[0] || !bufs[1] || (with_bias && !bufs[2]);
  if (!bad && (kiln_buffer_create(rt, KILN_F32, ny, 0, &bufs[3]) != KILN_OK ||
               kiln_conv2d(rt, &d, bufs[0], bufs[1], bufs[2], bufs[3]) != KILN_OK))
    bad = flunk(w, "thread %u: kiln_conv2d (%s): %s", w->id, kiln_backend_name(d.backend),
                kiln_last_error(rt));
  w->calls[REC_CONV] += !bad;
  float *got = bad ? NULL : download(w, rt, bufs[3], ny);
  if (got)
    bad = compare(w, "conv2d", got, want, ny, 0, 0);
  destroy_all(bufs, 4);
  free(x), free(wt), free(bias), free(want), free(got);
  return bad || !got;
}

/* A C2C transform of a few lengths and batches only, so that threads share
 * (and race to build) the runtime's plans: kiln's own kernels for powers of
 * two (64 and 1024 take two passes through the plan's scratch buffer),
 * VkFFT and clFFT for the others. */
static int op_fft(worker *w, kiln_runtime *rt, kiln_backend backend)
{
  size_t n = backend == KILN_BACKEND_KILN ? (pick(w, 0, 1) ? 1024 : 64)
                                          : (pick(w, 0, 1) ? 120 : 60);
  size_t batch = pick(w, 1, 2), total = n * batch;
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, n);
  d.batch = batch;
  d.inverse = (int)pick(w, 0, 1);
  d.backend = backend;
  float *x = grid_values(w, 2 * total);
  double *want = malloc(2 * total * sizeof *want), peak = 0;
  for (size_t b = 0; b < batch; b++)
    for (size_t k = 0; k < n; k++) {
      double re = 0, im = 0;
      for (size_t j = 0; j < n; j++) {
        double t = (d.inverse ? 2 : -2) * PI * (double)((j * k) % n) / (double)n;
        const float *v = x + 2 * (b * n + j);
        re += v[0] * cos(t) - v[1] * sin(t);
        im += v[0] * sin(t) + v[1] * cos(t);
      }
      double scale = d.inverse ? 1.0 / (double)n : 1;
      want[2 * (b * n + k)] = re * scale;
      want[2 * (b * n + k) + 1] = im * scale;
      peak = fmax(peak, fmax(fabs(re), fabs(im)) * scale);
    }
  kiln_buffer *in = upload(w, rt, KILN_C32, total, x), *out = NULL;
  int bad = !in;
  if (!bad && kiln_buffer_create(rt, KILN_C32, total, 0, &out) != KILN_OK)
    bad = flunk(w, "thread %u: kiln_buffer_create: %s", w->id, kiln_last_error(rt));
  /* three times over: more enqueueing at once on the threads that share a
   * plan, without more reference to compute */
  for (int i = 0; i < 3 && !bad; i++) {
    if (kiln_fft(rt, &d, in, out) != KILN_OK)
      bad = flunk(w, "thread %u: kiln_fft (%s) of %zu x %zu: %s", w->id,
                  kiln_backend_name(backend), batch, n, kiln_last_error(rt));
    w->calls[REC_FFT] += !bad;
  }
  float *got = bad ? NULL : download(w, rt, out, total);
  /* float32 FFTs err by a few ulps of the peak per pass; data mixed with
   * another transform's errs by the order of the peak */
  if (got)
    bad = compare(w, d.inverse ? "inverse fft" : "fft", got, want, 2 * total, 0,
                  1e-5 * log2((double)n) * peak + 1e-6);
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(x), free(want), free(got);
  return bad || !got;
}

/* float32 to int32 (toward zero, saturating), float16 (nearest even) and
 * float64, and int32 to float32, against the host's conversions. */
static int op_convert(worker *w, kiln_runtime *rt)
{
  static const kiln_dtype to[] = {KILN_I32, KILN_F16, KILN_F64, KILN_F32};
  size_t n = pick(w, 1, 3000);
  kiln_dtype dst_t = to[pick(w, 0, 3)], src_t = dst_t == KILN_F32 ? KILN_I32 : KILN_F32;
  if (dst_t == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
    dst_t = KILN_I32;
  void *src = malloc(n * 4);
  double *want = malloc(n * sizeof *want);
  for (size_t i = 0; i < n; i++) {
    if (src_t == KILN_I32) {
      int32_t v = (int32_t)(next(w) % (1u << 25)) - (1 << 24); /* exact in float */
      ((int32_t *)src)[i] = v;
      want[i] = v;
    } else {
      float v = grid(w) * ldexpf(1.0f, (int)pick(w, 0, 40)); /* past int32 too */
      ((float *)src)[i] = v;
      want[i] = dst_t == KILN_I32   ? fmax(fmin(trunc(v), 2147483647.0), -2147483648.0)
                : dst_t == KILN_F16 ? kiln_test_half_value(kiln_test_half_of(v))
                                    : v;
    }
  }
  kiln_buffer *in = upload(w, rt, src_t, n, src), *out = NULL;
  int bad = !in;
  if (!bad && (kiln_buffer_create(rt, dst_t, n, 0, &out) != KILN_OK ||
               kiln_convert(in, out) != KILN_OK))
    bad = flunk(w, "thread %u: kiln_convert %s to %s: %s", w->id, kiln_dtype_name(src_t),
                kiln_dtype_name(dst_t), kiln_last_error(rt));
  w->calls[REC_CONVERT] += !bad;
  unsigned char *got = bad ? NULL : download(w, rt, out, n);
  for (size_t i = 0; got && i < n && !bad; i++) {
    double v = dst_t == KILN_I32   ? ((int32_t *)got)[i]
               : dst_t == KILN_F16 ? kiln_test_half_value(((uint16_t *)got)[i])
               : dst_t == KILN_F64 ? ((double *)got)[i]
                                   : ((float *)got)[i];
    if (v != want[i])
      bad = flunk(w, "thread %u: kiln_convert to %s: element %zu is %.9g, expected %.9g",
                  w->id, kiln_dtype_name(dst_t), i, v, want[i]);
  }
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(src), free(want), free(got);
  return bad || !got;
}

/* Write, copy a range, fill a range, read: against a host model. */
static int op_buffers(worker *w, kiln_runtime *rt)
{
  size_t n = pick(w, 1, 4096);
  size_t len = pick(w, 0, n), from = pick(w, 0, n - len), to = pick(w, 0, n - len);
  size_t flen = pick(w, 0, n), at = pick(w, 0, n - flen);
  float value = grid(w), *x = grid_values(w, n), *model = calloc(n, sizeof *model);
  kiln_buffer *a = upload(w, rt, KILN_F32, n, x), *b = NULL;
  if (!a)
    return free(x), free(model), 1;
  int bad = 0;
  if (kiln_buffer_create(rt, KILN_F32, n, KILN_BUFFER_ZERO, &b) != KILN_OK ||
      kiln_buffer_copy(b, to, a, from, len) != KILN_OK ||
      kiln_buffer_fill(b, at, flen, &value) != KILN_OK)
    bad = flunk(w, "thread %u: creating, copying %zu or filling %zu of %zu: %s", w->id,
                len, flen, n, kiln_last_error(rt));
  w->calls[REC_COPY] += !bad && len;
  w->calls[REC_FILL] += !bad && flen;
  memcpy(model + to, x + from, len * sizeof *x);
  for (size_t i = at; i < at + flen; i++)
    model[i] = value;
  float *got = bad ? NULL : download(w, rt, b, n);
  for (size_t i = 0; got && i < n && !bad; i++)
    if (got[i] != model[i])
      bad = flunk(w, "thread %u: buffer element %zu of %zu is %g, expected %g", w->id, i,
                  n, got[i], model[i]);
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  free(x), free(model), free(got);
  return bad || !got;
}

/* Asynchronous transfers and kiln_finish(), which waits for every thread's
 * work on the runtime and must find no failure. */
static int op_async(worker *w, kiln_runtime *rt)
{
  size_t n = pick(w, 1, 8192);
  float *x = grid_values(w, n), *y = malloc(n * sizeof *y);
  kiln_buffer *b = NULL;
  int bad = 0;
  if (kiln_buffer_create(rt, KILN_F32, n, 0, &b) != KILN_OK ||
      kiln_buffer_write_async(b, 0, n, x) != KILN_OK || kiln_finish(rt) != KILN_OK ||
      kiln_buffer_read_async(b, 0, n, y) != KILN_OK || kiln_finish(rt) != KILN_OK)
    bad =
      flunk(w, "thread %u: async transfers of %zu: %s", w->id, n, kiln_last_error(rt));
  w->calls[REC_WRITE] += !bad;
  w->calls[REC_READ] += !bad;
  if (!bad && memcmp(x, y, n * sizeof *x) != 0)
    bad = flunk(w, "thread %u: async read differs from the async write", w->id);
  kiln_buffer_destroy(b);
  free(x), free(y);
  return bad;
}

static const char user_source[] =
  "__kernel void axpb(__global float *y, __global const float *x, float a, int n)\n"
  "{\n"
  "  int i = get_global_id(0);\n"
  "  if (i < n)\n"
  "    y[i] = a * x[i] + B;\n"
  "}\n"
  "__kernel void twice_plus_one(__global float *y, int n)\n"
  "{\n"
  "  int i = get_global_id(0);\n"
  "  if (i < n)\n"
  "    y[i] = 2 * y[i] + B;\n"
  "}\n";

/* The caller's own program, built (or found in the cache) with one of a few
 * options, on this thread; or the kernel all threads share, used under the
 * lock the header asks for. Exact: small multiples of 2^-8. */
static int op_user(worker *w, kiln_runtime *rt, int shared)
{
  size_t n = pick(w, 1, 5000);
  int bias = shared ? 1 : (int)pick(w, 1, 3);
  double a = pick(w, 0, 1) ? 0.5 : 2;
  float *x = grid_values(w, n);
  double *want = malloc(n * sizeof *want);
  for (size_t i = 0; i < n; i++)
    want[i] = shared ? 2.0 * x[i] + 1 : a * x[i] + bias;
  kiln_buffer *in = upload(w, rt, KILN_F32, n, x), *out = NULL;
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  int bad = !in;
  char options[32];
  snprintf(options, sizeof options, "-DB=%d.0f", bias);
  if (!bad && shared) {
    pthread_mutex_lock(w->shared_lock);
    bad = kiln_kernel_set_args(w->shared, "bi", in, (int32_t)n) != KILN_OK ||
          kiln_kernel_launch(w->shared, 1, (size_t[]){n}, NULL) != KILN_OK;
    pthread_mutex_unlock(w->shared_lock);
  } else if (!bad) {
    bad = kiln_program_create(rt, user_source, options, &p) != KILN_OK ||
          kiln_kernel_create(p, "axpb", &k) != KILN_OK ||
          kiln_buffer_create(rt, KILN_F32, n, 0, &out) != KILN_OK ||
          kiln_kernel_set_args(k, "bbfi", out, in, a, (int32_t)n) != KILN_OK ||
          kiln_kernel_launch(k, 1, (size_t[]){n}, NULL) != KILN_OK;
  }
  if (bad && in)
    flunk(w, "thread %u: %s kernel: %s", w->id, shared ? "the shared" : "its own",
          kiln_last_error(rt));
  w->calls[REC_USER] += !bad;
  float *got = bad ? NULL : download(w, rt, shared ? in : out, n);
  if (got)
    bad = compare(w, shared ? "twice_plus_one" : "axpb", got, want, n, 0, 0);
  kiln_kernel_destroy(k);
  kiln_program_destroy(p);
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(x), free(want), free(got);
  return bad || !got;
}

/* The read-only calls, concurrent with everything else. */
static int op_stats(worker *w, kiln_runtime *rt)
{
  kiln_memory_usage mem;
  kiln_memory_usage_init(&mem);
  kiln_cache_usage cache;
  kiln_cache_usage_init(&cache);
  size_t rows = 0;
  uint64_t entries, bytes;
  CALL(w, rt, kiln_memory_stats(rt, &mem));
  CALL(w, rt, kiln_cache_stats(rt, &cache));
  CALL(w, rt, kiln_cache_contents(rt, &entries, &bytes));
  CALL(w, rt, kiln_profile_rows(rt, NULL, 0, &rows));
  if (mem.current_bytes > mem.limit_bytes || mem.peak_bytes < mem.current_bytes)
    return flunk(w,
                 "thread %u: memory stats inconsistent: %llu current, %llu peak, "
                 "%llu limit",
                 w->id, (unsigned long long)mem.current_bytes,
                 (unsigned long long)mem.peak_bytes, (unsigned long long)mem.limit_bytes);
  if (!kiln_profile_enabled(rt) && rows)
    return flunk(w, "thread %u: %zu profile rows with profiling off", w->id, rows);
  return 0;
}

/* Failures whose messages name this thread and round: each thread must read
 * its own, whatever the others fail or do meanwhile. */
static int op_errors(worker *w, kiln_runtime *rt, unsigned round)
{
  kiln_buffer *b = NULL;
  CALL(w, rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &b));
  for (unsigned j = 0; j < 4; j++) {
    size_t offset = 1000000 + w->id * 100000 + round * 10 + j;
    char token[96], path[96];
    snprintf(token, sizeof token, "offset %zu + count", offset);
    float dst;
    kiln_status st = kiln_buffer_read(b, offset, 1, &dst);
    const char *msg = kiln_last_error(rt);
    if (st != KILN_ERR_OUT_OF_BOUNDS || !strstr(msg, token)) {
      kiln_buffer_destroy(b);
      return flunk(w,
                   "thread %u: reading at %zu returned %s, and kiln_last_error(rt) "
                   "does not say '%s' but: %s",
                   w->id, offset, kiln_status_name(st), token, msg);
    }
    snprintf(path, sizeof path, "/nonexistent/kiln-thread-%zu.npy", offset);
    kiln_array arr;
    st = kiln_npy_load(path, &arr);
    msg = kiln_last_error(NULL);
    if (st != KILN_ERR_IO || !strstr(msg, path)) {
      kiln_buffer_destroy(b);
      return flunk(w,
                   "thread %u: loading %s returned %s, and kiln_last_error(NULL) "
                   "does not name it but says: %s",
                   w->id, path, kiln_status_name(st), msg);
    }
  }
  kiln_buffer_destroy(b);
  return 0;
}

static int run_op(worker *w, kiln_runtime *rt, unsigned op, unsigned round)
{
  switch (op) {
  case OP_GEMM: return op_gemm(w, rt);
  case OP_REDUCE: return op_reduce(w, rt);
  case OP_CONV: return op_conv(w, rt);
  case OP_FFT_KILN: return op_fft(w, rt, KILN_BACKEND_KILN);
  case OP_FFT_VKFFT: return HAVE_VKFFT ? op_fft(w, rt, KILN_BACKEND_VKFFT) : 0;
  case OP_FFT_CLFFT: return HAVE_CLFFT ? op_fft(w, rt, KILN_BACKEND_CLFFT) : 0;
  case OP_CONVERT: return op_convert(w, rt);
  case OP_BUFFERS: return op_buffers(w, rt);
  case OP_ASYNC: return op_async(w, rt);
  case OP_PROGRAM: return op_user(w, rt, 0);
  case OP_SHARED_KERNEL: return w->shared ? op_user(w, rt, 1) : 0;
  case OP_STATS: return op_stats(w, rt);
  default: return op_errors(w, rt, round);
  }
}

/* count operations on rt. The first (up to six, half of them at most) are
 * FFTs, kiln's, VkFFT and clFFT in turn, of shapes every thread asks for at
 * once: they race to build and cache one plan each, then run it together. */
static int run_ops(worker *w, kiln_runtime *rt, unsigned count)
{
  unsigned same = count / 2 < 6 ? count / 2 : 6;
  for (unsigned r = 0; r < count; r++) {
    if (r < same) { /* the same draws on every thread: one shape each */
      uint64_t own = w->rng;
      w->rng = base_seed + r % 3;
      int bad = run_op(w, rt, OP_FFT_KILN + r % 3, r);
      w->rng = own;
      if (bad)
        return 1;
      continue;
    }
    if (run_op(w, rt, (unsigned)pick(w, 0, OP_COUNT - 1), r))
      return 1;
  }
  return 0;
}

/* ---- the modes ------------------------------------------------------------ */

static kiln_runtime *new_runtime(worker *w, int profile)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = profile;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(&opts, &rt) != KILN_OK)
    flunk(w, "thread %u: kiln_runtime_create: %s", w->id, kiln_last_error(NULL));
  return rt;
}

/* A runtime of its own per thread, or several one after another, each
 * destroyed with KILN_OK (every buffer, program and kernel released). A
 * selector that matches nothing fails with this thread's message. */
static void own_runtimes(worker *w, unsigned lives)
{
  for (unsigned life = 0; life < lives && !w->failure[0]; life++) {
    kiln_runtime *rt = new_runtime(w, w->id % 2);
    if (!rt)
      return;
    run_ops(w, rt, w->rounds / lives);
    if (kiln_runtime_destroy(rt) != KILN_OK)
      flunk(w, "thread %u: kiln_runtime_destroy: %s", w->id, kiln_last_error(rt));
    char selector[64];
    snprintf(selector, sizeof selector, "name=no-such-device-%u-%u", w->id, life);
    kiln_options opts;
    kiln_options_init(&opts);
    opts.device = selector;
    kiln_status st = kiln_runtime_create(&opts, &rt);
    if (st != KILN_ERR_INVALID_DEVICE_SELECTOR ||
        !strstr(kiln_last_error(NULL), selector))
      flunk(w, "thread %u: the selector %s gave %s and: %s", w->id, selector,
            kiln_status_name(st), kiln_last_error(NULL));
  }
}

static void *worker_main(void *arg)
{
  worker *w = arg;
  pthread_barrier_wait(w->start);
  switch (w->mode) {
  case MODE_SHARED: run_ops(w, w->rt, w->rounds); break;
  case MODE_OWN: own_runtimes(w, 1); break;
  case MODE_COME_AND_GO: own_runtimes(w, 3); break;
  default: /* half the threads fail over and over, the others succeed */
    for (unsigned r = 0; r < w->rounds && !w->failure[0]; r++)
      run_op(w, w->rt, w->id % 2 ? OP_ERRORS : OP_BUFFERS, r);
  }
  return NULL;
}

/* Runs THREADS workers of a mode on rt (NULL: their own) and fails the test
 * with every thread's first failure. */
static void run_workers(worker *w, int mode, kiln_runtime *rt, kiln_kernel *shared,
                        unsigned n_rounds)
{
  pthread_t th[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    w[i] = (worker){.id = i,
                    .rng = base_seed * 0x100000001b3ULL + i,
                    .rounds = n_rounds,
                    .rt = rt,
                    .shared = shared,
                    .shared_lock = &shared_lock,
                    .start = &start_barrier,
                    .mode = mode};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  int failed = 0;
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    if (w[i].failure[0]) {
      print_error("%s (KILN_TEST_SEED=%llu)\n", w[i].failure,
                  (unsigned long long)base_seed);
      failed = 1;
    }
  }
  if (failed)
    fail_msg("threads failed: see above");
}

/* A runtime shared by all threads, with the kernel they share; afterwards
 * every buffer is gone from its accounting. */
static void shared_runtime(int profile)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = profile;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, user_source, "-DB=1.0f", &p));
  assert_kiln_ok(rt, kiln_kernel_create(p, "twice_plus_one", &k));
  worker w[THREADS];
  run_workers(w, MODE_SHARED, rt, k, rounds);
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_memory_usage mem;
  kiln_memory_usage_init(&mem);
  assert_kiln_ok(rt, kiln_memory_stats(rt, &mem));
  assert_int_equal(mem.live_buffers, 0);
  assert_int_equal(mem.current_bytes, 0);
  if (profile) { /* one row per call name and backend; calls summed by name */
    size_t n = 0;
    assert_kiln_ok(rt, kiln_profile_rows(rt, NULL, 0, &n));
    kiln_profile_row *rows = calloc(n + 1, sizeof *rows);
    kiln_profile_row_init(&rows[0]); /* rows[0].struct_size: the element size */
    assert_kiln_ok(rt, kiln_profile_rows(rt, rows, n, &n));
    for (unsigned r = 0; r < REC_COUNT; r++) {
      unsigned long made = 0, seen = 0;
      for (unsigned i = 0; i < THREADS; i++)
        made += w[i].calls[r];
      for (size_t i = 0; i < n; i++)
        if (r == REC_USER ? !strcmp(rows[i].backend, "user")
                          : !strncmp(rows[i].op, rec_names[r], strlen(rec_names[r])) &&
                              (r == REC_REDUCE || !rows[i].op[strlen(rec_names[r])]))
          seen += rows[i].calls;
      if (made != seen)
        fail_msg("the profile counts %lu calls of %s, the threads made %lu", seen,
                 r == REC_USER ? "user kernels" : rec_names[r], made);
    }
    free(rows);
  }
  assert_kiln_ok(rt, kiln_kernel_destroy(k));
  assert_kiln_ok(rt, kiln_program_destroy(p));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* ---- the tests ------------------------------------------------------------ */

static void test_threads_shared_runtime(void **state)
{
  (void)state;
  shared_runtime(0);
}

static void test_threads_shared_runtime_profiled(void **state)
{
  (void)state;
  shared_runtime(1);
}

static void test_threads_runtime_each(void **state)
{
  (void)state;
  worker w[THREADS];
  run_workers(w, MODE_OWN, NULL, NULL, rounds);
}

static void test_threads_runtimes_come_and_go(void **state)
{
  (void)state;
  worker w[THREADS];
  run_workers(w, MODE_COME_AND_GO, NULL, NULL, rounds);
}

static void test_threads_last_error_is_the_threads_own(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  worker w[THREADS];
  run_workers(w, MODE_ERRORS, rt, NULL, 4 * rounds);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* Blocking reads and maps on one runtime from 8 threads, while a ninth
 * flushes its queue (as kiln's markers do): each must return the data of
 * the fill its thread enqueued just before, never before the device wrote
 * it (kiln__blocking_returns_early() in rank.c has the driver that did).
 * Profiled: once kiln_finish() returned, no call is still running. */
#define BLOCKING_COUNT (1 << 16)

typedef struct blocking_worker {
  kiln_runtime *rt;
  unsigned id;
  char failure[512];
} blocking_worker;

static atomic_int blocking_left;

static void *blocking_main(void *arg)
{
  blocking_worker *w = arg;
  kiln_buffer *b = NULL;
  float *host = malloc(BLOCKING_COUNT * sizeof *host);
  if (kiln_buffer_create(w->rt, KILN_F32, BLOCKING_COUNT, 0, &b) != KILN_OK)
    snprintf(w->failure, sizeof w->failure, "thread %u: %s", w->id,
             kiln_last_error(w->rt));
  for (unsigned r = 0; b && r < 4 * rounds && !w->failure[0]; r++) {
    float v = (float)(w->id * 1000 + r), *seen = host;
    void *mapped = NULL;
    kiln_status st = kiln_buffer_fill(b, 0, BLOCKING_COUNT, &v);
    memset(host, 0xff, BLOCKING_COUNT * sizeof *host); /* a NaN */
    if (st == KILN_OK && r % 2)
      st = kiln_buffer_read(b, 0, BLOCKING_COUNT, host);
    else if (st == KILN_OK &&
             (st = kiln_buffer_map(b, KILN_MAP_READ, &mapped)) == KILN_OK)
      seen = mapped;
    if (st != KILN_OK) {
      snprintf(w->failure, sizeof w->failure, "thread %u: %s", w->id,
               kiln_last_error(w->rt));
      break;
    }
    size_t wrong = 0;
    for (size_t i = 0; i < BLOCKING_COUNT; i++)
      wrong += seen[i] != v;
    if (wrong)
      snprintf(w->failure, sizeof w->failure,
               "thread %u, round %u: %zu of %d elements %s are not %g (the first is "
               "%g): the call returned before the device wrote them",
               w->id, r, wrong, BLOCKING_COUNT, mapped ? "mapped" : "read", (double)v,
               (double)seen[0]);
    if (mapped)
      kiln_buffer_unmap(b, mapped);
  }
  kiln_buffer_destroy(b);
  free(host);
  atomic_fetch_sub(&blocking_left, 1);
  return NULL;
}

static void *blocking_flusher(void *arg)
{
  kiln_runtime *rt = arg;
  kiln_event *ring[16] = {NULL}; /* markers in flight: the queue stays short */
  for (unsigned i = 0; atomic_load(&blocking_left) > 0; i = (i + 1) % 16) {
    if (ring[i])
      kiln_event_wait(ring[i]);
    kiln_event_destroy(ring[i]);
    ring[i] = NULL;
    if (kiln_event_record(rt, &ring[i]) != KILN_OK)
      break;
  }
  for (unsigned i = 0; i < 16; i++)
    kiln_event_destroy(ring[i]);
  return NULL;
}

static void test_threads_blocking_reads(void **state)
{
  (void)state;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = 1;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  blocking_worker w[THREADS];
  pthread_t th[THREADS + 1];
  atomic_store(&blocking_left, THREADS);
  for (unsigned i = 0; i < THREADS; i++) {
    w[i] = (blocking_worker){.rt = rt, .id = i};
    assert_int_equal(pthread_create(&th[i], NULL, blocking_main, &w[i]), 0);
  }
  assert_int_equal(pthread_create(&th[THREADS], NULL, blocking_flusher, rt), 0);
  int failed = 0;
  for (unsigned i = 0; i <= THREADS; i++)
    pthread_join(th[i], NULL);
  for (unsigned i = 0; i < THREADS; i++)
    if (w[i].failure[0])
      print_error("%s\n", w[i].failure), failed = 1;
  assert_kiln_ok(rt, kiln_finish(rt));
  char table[8192] = "";
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_kiln_ok(rt, kiln_profile_report(rt, f));
  rewind(f);
  table[fread(table, 1, sizeof table - 1, f)] = '\0';
  fclose(f);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  if (failed)
    fail_msg("blocking calls returned before their data: see above");
  if (strstr(table, "still running"))
    fail_msg("kiln_finish() returned with calls still running:\n%s", table);
}

/* VkFFT's code generator switches the process to the C locale while it
 * runs, unless kiln keeps that to the building thread (src/backends/vkfft.c):
 * a thread that watches the locale's name while another builds VkFFT plans
 * must never see it change. */
static atomic_int building;

static void *watch_locale(void *arg)
{
  const char *want = arg;
  unsigned long changes = 0;
  while (atomic_load(&building))
    changes += strcmp(setlocale(LC_ALL, NULL), want) != 0;
  return (void *)changes;
}

static void test_threads_vkfft_keeps_the_locale(void **state)
{
  (void)state;
  if (!HAVE_VKFFT)
    skip();
  const char *set = setlocale(LC_ALL, "C.UTF-8"); /* any name but "C" */
  if (!set)
    skip();
  char *want = strdup(set);
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  atomic_store(&building, 1);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, watch_locale, want), 0);
  for (size_t n = 12; n <= 84; n += 8) { /* a new plan each: code generated */
    kiln_fft_desc d;
    kiln_fft_desc_init(&d, KILN_F32, n);
    d.backend = KILN_BACKEND_VKFFT;
    kiln_buffer *in = NULL, *out = NULL;
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, KILN_BUFFER_ZERO, &in));
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, 0, &out));
    assert_kiln_ok(rt, kiln_fft(rt, &d, in, out));
    kiln_buffer_destroy(in);
    kiln_buffer_destroy(out);
  }
  atomic_store(&building, 0);
  void *changes;
  pthread_join(th, &changes);
  int same = !strcmp(setlocale(LC_ALL, NULL), want);
  setlocale(LC_ALL, "C");
  free(want);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  if (changes || !same)
    fail_msg("the locale changed under another thread %lu times while VkFFT plans "
             "were built%s",
             (unsigned long)changes, same ? "" : ", and stayed changed");
}

int main(int argc, char **argv)
{
  const char *seed = getenv("KILN_TEST_SEED"), *n = getenv("KILN_TEST_ROUNDS");
  if (seed && *seed)
    base_seed = strtoull(seed, NULL, 0);
  if (n && *n)
    rounds = (unsigned)strtoul(n, NULL, 0);
  kiln_test_require_device();
  if (pthread_barrier_init(&start_barrier, NULL, THREADS) != 0)
    return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_threads_shared_runtime),
    cmocka_unit_test(test_threads_shared_runtime_profiled),
    cmocka_unit_test(test_threads_runtime_each),
    cmocka_unit_test(test_threads_runtimes_come_and_go),
    cmocka_unit_test(test_threads_last_error_is_the_threads_own),
    cmocka_unit_test(test_threads_vkfft_keeps_the_locale),
    cmocka_unit_test(test_threads_blocking_reads),
  };
  if (argc > 1) /* a pattern: run only the tests whose names match it */
    cmocka_set_test_filter(argv[1]);
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  pthread_barrier_destroy(&start_barrier);
  return failed;
}
