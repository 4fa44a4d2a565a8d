/*
 * check.c — `kiln check`: one of each operation on the device kiln picks,
 * on seeded random data, each checked against a reference computed here on
 * the CPU in double precision, with its time. It answers "does kiln compute
 * right on this machine, and how fast", and is the demo's middle part.
 *
 * Bounds (u the unit roundoff of float32, 2^-24): a dot product of length k
 * is within gamma_k sum |a_i b_i| ~ k u sum |a_i b_i| (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed., eq. 3.5), which bounds GEMM's
 * and the convolution's elements (k = the reduction length) and the sum;
 * the FFT's elements are held to 20 (log2 N + 2) u ||x||_2, the bound of
 * tests/test-fft.c; a conversion to int32 and the user kernel's a*x + y
 * (one rounding) must be exact and within u |result|.
 *
 * The first call of each operation builds its kernels (or hits the cache);
 * the time printed is of a second call, enqueue to kiln_finish().
 */
/* kiln_gemm_backend_for() is experimental API. */
#define KILN_EXPERIMENTAL
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define U32 0x1p-24
#define PI 3.14159265358979323846

typedef struct check_ctx {
  kiln_runtime *rt;
  uint64_t seed;
  int failed;
} check_ctx;

/* Uniform in [-1, 1), as a float. */
static float rnd(check_ctx *c)
{
  c->seed = c->seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(c->seed >> 11) * 0x1p-52 - 1);
}

static float *rnd_array(check_ctx *c, size_t n)
{
  float *v = malloc(n * sizeof *v);
  if (v)
    for (size_t i = 0; i < n; i++)
      v[i] = rnd(c);
  return v;
}

static kiln_buffer *upload(check_ctx *c, kiln_dtype t, size_t n, const void *host)
{
  kiln_buffer *b = NULL;
  if (kiln_buffer_create(c->rt, t, n, host ? 0 : KILN_BUFFER_ZERO, &b) != KILN_OK)
    return NULL;
  if (host && kiln_buffer_write(b, 0, n, host) != KILN_OK) {
    kiln_buffer_destroy(b);
    return NULL;
  }
  return b;
}

/* One line of the report; worst is the largest error / bound. */
static void report(check_ctx *c, const char *op, const char *what, const char *backend,
                   kiln_status st, double ms, double worst)
{
  if (st != KILN_OK) {
    printf("%-8s %-40s %-7s FAILED: %s\n", op, what, backend, kiln_last_error(c->rt));
    c->failed = 1;
    return;
  }
  int ok = worst <= 1;
  printf("%-8s %-40s %-7s %8.3f ms   error/bound %.2e  %s\n", op, what, backend, ms,
         worst, ok ? "ok" : "WRONG");
  c->failed |= !ok;
}

/* Times a second call of an operation: run(c, arg) enqueues it. */
typedef kiln_status (*op_fn)(check_ctx *c, void *arg);

static kiln_status twice(check_ctx *c, op_fn run, void *arg, double *ms)
{
  kiln_status st = run(c, arg);
  if (st == KILN_OK)
    st = kiln_finish(c->rt);
  double t0 = bench_now_ms();
  if (st == KILN_OK)
    st = run(c, arg);
  if (st == KILN_OK)
    st = kiln_finish(c->rt);
  *ms = bench_now_ms() - t0;
  return st;
}

/* ---- GEMM: C = 1.5 A B^T + 0.5 C, odd sizes ------------------------------ */

typedef struct gemm_arg {
  kiln_gemm_desc d;
  kiln_buffer *a, *b, *c;
} gemm_arg;

static kiln_status gemm_run(check_ctx *c, void *p)
{
  gemm_arg *g = p;
  return kiln_gemm(c->rt, &g->d, g->a, g->b, g->c);
}

static void check_gemm(check_ctx *c)
{
  const size_t m = 193, n = 161, k = 301;
  gemm_arg g = {.a = NULL};
  kiln_gemm_desc_init(&g.d, KILN_F32, m, n, k);
  g.d.trans_b = KILN_TRANS;
  g.d.alpha = 1.5, g.d.beta = 0.5;
  float *a = rnd_array(c, m * k), *b = rnd_array(c, n * k), *c0 = rnd_array(c, m * n);
  float *got = malloc(m * n * sizeof *got);
  kiln_status st = KILN_ERR_OUT_OF_HOST_MEMORY;
  double ms = 0, worst = 0;
  if (a && b && c0 && got && (g.a = upload(c, KILN_F32, m * k, a)) &&
      (g.b = upload(c, KILN_F32, n * k, b)) && (g.c = upload(c, KILN_F32, m * n, c0))) {
    /* Two calls: C ends as 1.5 A B^T (1 + 0.5) + 0.25 C0. */
    st = twice(c, gemm_run, &g, &ms);
    if (st == KILN_OK)
      st = kiln_buffer_read(g.c, 0, m * n, got);
    for (size_t i = 0; i < m && st == KILN_OK; i++)
      for (size_t j = 0; j < n; j++) {
        double dot = 0, mag = 0;
        for (size_t l = 0; l < k; l++) {
          dot += (double)a[i * k + l] * b[j * k + l];
          mag += fabs((double)a[i * k + l] * b[j * k + l]);
        }
        double want = 1.5 * dot * 1.5 + 0.25 * c0[i * n + j];
        double bound = 2 * (k + 4) * U32 * (2.25 * mag + 0.25 * fabs(c0[i * n + j]));
        worst = fmax(worst, fabs(got[i * n + j] - want) / bound);
      }
  }
  report(c, "gemm", "f32 193x161x301, B^T, a 1.5, b 0.5",
         kiln_backend_name(kiln_gemm_backend_for(c->rt, &g.d)), st, ms, worst);
  kiln_buffer_destroy(g.a), kiln_buffer_destroy(g.b), kiln_buffer_destroy(g.c);
  free(a), free(b), free(c0), free(got);
}

/* ---- conv2d: 3x3, pad 1, stride 2, bias and ReLU, NCHW ------------------- */

typedef struct conv_arg {
  kiln_conv2d_desc d;
  kiln_buffer *x, *w, *bias, *y;
} conv_arg;

static kiln_status conv_run(check_ctx *c, void *p)
{
  conv_arg *v = p;
  return kiln_conv2d(c->rt, &v->d, v->x, v->w, v->bias, v->y);
}

static void check_conv(check_ctx *c)
{
  conv_arg v = {.x = NULL};
  const size_t N = 2, C = 16, H = 33, W = 31, K = 24, R = 3, S = 3;
  kiln_conv2d_desc_init(&v.d, KILN_F32, N, C, H, W, K, R, S);
  v.d.pad_top = v.d.pad_bottom = v.d.pad_left = v.d.pad_right = 1;
  v.d.stride_h = v.d.stride_w = 2;
  v.d.relu = 1;
  size_t P = 0, Q = 0;
  kiln_status st = kiln_conv2d_output(&v.d, &P, &Q);
  float *x = rnd_array(c, N * C * H * W), *w = rnd_array(c, K * C * R * S);
  float *bias = rnd_array(c, K), *got = malloc(N * K * P * Q * sizeof *got);
  double ms = 0, worst = 0;
  if (st == KILN_OK && !(x && w && bias && got))
    st = KILN_ERR_OUT_OF_HOST_MEMORY;
  if (st == KILN_OK && (!(v.x = upload(c, KILN_F32, N * C * H * W, x)) ||
                        !(v.w = upload(c, KILN_F32, K * C * R * S, w)) ||
                        !(v.bias = upload(c, KILN_F32, K, bias)) ||
                        !(v.y = upload(c, KILN_F32, N * K * P * Q, NULL))))
    st = KILN_ERR_OUT_OF_MEMORY;
  if (st == KILN_OK)
    st = twice(c, conv_run, &v, &ms);
  if (st == KILN_OK)
    st = kiln_buffer_read(v.y, 0, N * K * P * Q, got);
  for (size_t n = 0; n < N && st == KILN_OK; n++)
    for (size_t k = 0; k < K; k++)
      for (size_t p = 0; p < P; p++)
        for (size_t q = 0; q < Q; q++) {
          double sum = bias[k], mag = fabs(bias[k]);
          for (size_t ch = 0; ch < C; ch++)
            for (size_t r = 0; r < R; r++)
              for (size_t s = 0; s < S; s++) {
                long ih = (long)(p * 2 + r) - 1, iw = (long)(q * 2 + s) - 1;
                if (ih < 0 || iw < 0 || ih >= (long)H || iw >= (long)W)
                  continue;
                double t = (double)x[((n * C + ch) * H + (size_t)ih) * W + (size_t)iw] *
                           w[((k * C + ch) * R + r) * S + s];
                sum += t, mag += fabs(t);
              }
          double want = sum > 0 ? sum : 0;
          double bound = 2 * (C * R * S + 2) * U32 * mag + 0x1p-149;
          worst = fmax(worst, fabs(got[((n * K + k) * P + p) * Q + q] - want) / bound);
        }
  report(c, "conv2d", "f32 2x16x33x31 * 24x16x3x3, s2 p1 ReLU", "auto", st, ms, worst);
  kiln_buffer_destroy(v.x), kiln_buffer_destroy(v.w), kiln_buffer_destroy(v.bias);
  kiln_buffer_destroy(v.y);
  free(x), free(w), free(bias), free(got);
}

/* ---- reduce: the sum of 10^6 + 3 floats ---------------------------------- */

typedef struct reduce_arg {
  kiln_reduce_desc d;
  kiln_buffer *in, *out;
} reduce_arg;

static kiln_status reduce_run(check_ctx *c, void *p)
{
  reduce_arg *r = p;
  return kiln_reduce(c->rt, &r->d, r->in, r->out);
}

static void check_reduce(check_ctx *c)
{
  const size_t n = 1000003;
  reduce_arg r = {.in = NULL};
  kiln_reduce_desc_init(&r.d, KILN_REDUCE_SUM, KILN_F32, n);
  float *x = rnd_array(c, n), got = 0;
  kiln_status st = x ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
  double ms = 0, worst = 0;
  if (st == KILN_OK &&
      (!(r.in = upload(c, KILN_F32, n, x)) ||
       !(r.out = upload(c, kiln_reduce_out_dtype(KILN_REDUCE_SUM, KILN_F32), 1, NULL))))
    st = KILN_ERR_OUT_OF_MEMORY;
  if (st == KILN_OK)
    st = twice(c, reduce_run, &r, &ms);
  if (st == KILN_OK)
    st = kiln_buffer_read(r.out, 0, 1, &got);
  if (st == KILN_OK) {
    double want = 0, mag = 0;
    for (size_t i = 0; i < n; i++)
      want += x[i], mag += fabs(x[i]);
    worst = fabs(got - want) / (2 * (double)n * U32 * mag);
  }
  report(c, "reduce", "sum of 1000003 f32", "kiln", st, ms, worst);
  kiln_buffer_destroy(r.in), kiln_buffer_destroy(r.out);
  free(x);
}

/* ---- FFT: complex64 forward of 4096 points ------------------------------- */

typedef struct fft_arg {
  kiln_fft_desc d;
  kiln_buffer *in, *out;
} fft_arg;

static kiln_status fft_run(check_ctx *c, void *p)
{
  fft_arg *f = p;
  return kiln_fft(c->rt, &f->d, f->in, f->out);
}

static void check_fft(check_ctx *c)
{
  const size_t n = 4096;
  fft_arg f = {.in = NULL};
  kiln_fft_desc_init(&f.d, KILN_F32, n);
  float *x = rnd_array(c, 2 * n), *got = malloc(2 * n * sizeof *got);
  double *tw = malloc(2 * n * sizeof *tw);
  kiln_status st = x && got && tw ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
  double ms = 0, worst = 0;
  if (st == KILN_OK &&
      (!(f.in = upload(c, KILN_C32, n, x)) || !(f.out = upload(c, KILN_C32, n, NULL))))
    st = KILN_ERR_OUT_OF_MEMORY;
  if (st == KILN_OK)
    st = twice(c, fft_run, &f, &ms);
  if (st == KILN_OK)
    st = kiln_buffer_read(f.out, 0, n, got);
  if (st == KILN_OK) {
    double norm = 0;
    for (size_t i = 0; i < 2 * n; i++)
      norm += (double)x[i] * x[i];
    double bound = 20 * (log2((double)n) + 2) * U32 * sqrt(norm);
    for (size_t m = 0; m < n; m++)
      tw[2 * m] = cos(-2 * PI * (double)m / n),
             tw[2 * m + 1] = sin(-2 * PI * (double)m / n);
    for (size_t k = 0; k < n; k++) {
      double re = 0, im = 0;
      for (size_t j = 0; j < n; j++) {
        size_t m = j * k % n;
        re += x[2 * j] * tw[2 * m] - x[2 * j + 1] * tw[2 * m + 1];
        im += x[2 * j] * tw[2 * m + 1] + x[2 * j + 1] * tw[2 * m];
      }
      worst = fmax(worst, hypot(got[2 * k] - re, got[2 * k + 1] - im) / bound);
    }
  }
  report(c, "fft", "c64 forward, 4096 points", "auto", st, ms, worst);
  kiln_buffer_destroy(f.in), kiln_buffer_destroy(f.out);
  free(x), free(got), free(tw);
}

/* ---- convert: float32 to int32, round toward zero ------------------------ */

typedef struct convert_arg {
  kiln_buffer *src, *dst;
} convert_arg;

static kiln_status convert_run(check_ctx *c, void *p)
{
  (void)c;
  convert_arg *v = p;
  return kiln_convert(v->src, v->dst);
}

static void check_convert(check_ctx *c)
{
  const size_t n = 100003;
  convert_arg v = {NULL, NULL};
  float *x = rnd_array(c, n);
  int32_t *got = malloc(n * sizeof *got);
  kiln_status st = x && got ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
  double ms = 0, worst = 0;
  for (size_t i = 0; x && i < n; i++)
    x[i] *= 1000;
  if (st == KILN_OK &&
      (!(v.src = upload(c, KILN_F32, n, x)) || !(v.dst = upload(c, KILN_I32, n, NULL))))
    st = KILN_ERR_OUT_OF_MEMORY;
  if (st == KILN_OK)
    st = twice(c, convert_run, &v, &ms);
  if (st == KILN_OK)
    st = kiln_buffer_read(v.dst, 0, n, got);
  for (size_t i = 0; i < n && st == KILN_OK; i++)
    if (got[i] != (int32_t)x[i]) /* |x| < 1000: in range, truncation is exact */
      worst = 2;
  report(c, "convert", "100003 f32 -> i32 (toward zero)", "kiln", st, ms, worst);
  kiln_buffer_destroy(v.src), kiln_buffer_destroy(v.dst);
  free(x), free(got);
}

/* ---- a user kernel: y = a x + y ------------------------------------------ */

static const char saxpy_source[] =
  "kernel void saxpy(float a, global const float *x, global float *y, uint n)\n"
  "{\n"
  "  size_t i = get_global_id(0);\n"
  "  if (i < n)\n"
  "    y[i] = a * x[i] + y[i];\n"
  "}\n";

typedef struct kernel_arg {
  kiln_kernel *k;
  size_t n;
} kernel_arg;

static kiln_status kernel_run(check_ctx *c, void *p)
{
  (void)c;
  kernel_arg *v = p;
  return kiln_kernel_launch(v->k, 1, (size_t[]){v->n}, NULL);
}

static void check_kernel(check_ctx *c)
{
  const size_t n = 1 << 20;
  kernel_arg v = {NULL, n};
  kiln_program *prog = NULL;
  kiln_buffer *bx = NULL, *by = NULL;
  float *x = rnd_array(c, n), *y = rnd_array(c, n), *got = malloc(n * sizeof *got);
  double ms = 0, worst = 0;
  kiln_status st = x && y && got ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
  if (st == KILN_OK &&
      (!(bx = upload(c, KILN_F32, n, x)) || !(by = upload(c, KILN_F32, n, y))))
    st = KILN_ERR_OUT_OF_MEMORY;
  if (st == KILN_OK)
    st = kiln_program_create(c->rt, saxpy_source, NULL, &prog);
  if (st == KILN_OK)
    st = kiln_kernel_create(prog, "saxpy", &v.k);
  if (st == KILN_OK)
    st = kiln_kernel_set_args(v.k, "fbbu", 2.0, bx, by, (uint32_t)n);
  if (st == KILN_OK) /* twice: y + 2x + 2x */
    st = twice(c, kernel_run, &v, &ms);
  if (st == KILN_OK)
    st = kiln_buffer_read(by, 0, n, got);
  for (size_t i = 0; i < n && st == KILN_OK; i++) {
    float once = 2.0f * x[i] + y[i],
          want = 2.0f * x[i] + once; /* float, as on the device */
    double bound = 2 * U32 * (fabs(want) + fabs(once)) + 0x1p-149;
    worst = fmax(worst, fabs((double)got[i] - want) / bound);
  }
  report(c, "kernel", "saxpy of 2^20 floats (user source)", "user", st, ms, worst);
  kiln_kernel_destroy(v.k);
  kiln_program_destroy(prog);
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by);
  free(x), free(y), free(got);
}

static int run_check(int argc, char **argv);

const cli_command kiln_check_command = {
  .name = "kiln check",
  .summary = "one of each operation on the picked device, checked against a CPU "
             "reference, with its time",
  .about = "GEMM, a convolution, a sum, an FFT, a conversion and a kernel of your\n"
           "own, each on random data against a reference in double, within an error\n"
           "bound derived from its arithmetic. Exits 1 when any is outside it. The\n"
           "device is chosen as always (KILN_DEVICE); KILN_PROFILE=1 adds the profile.",
  .example = "KILN_DEVICE=gpu kiln check",
  .run = run_check,
};

static int run_check(int argc, char **argv)
{
  int rc = kiln_cli_parse(&kiln_check_command, &(int){0}, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  check_ctx c = {.seed = 2026};
  if (kiln_runtime_create(NULL, &c.rt) != KILN_OK) {
    kiln_cli_say("kiln check", kiln_last_error(NULL));
    return 1;
  }
  printf("kiln check on %s: each operation on random data against a CPU reference in "
         "double; the time of a second call\n",
         kiln_runtime_device(c.rt)->name);
  kiln_cli_print_driver_notes(stdout, kiln_runtime_diagnostics(c.rt));
  check_gemm(&c);
  check_conv(&c);
  check_reduce(&c);
  check_fft(&c);
  check_convert(&c);
  check_kernel(&c);
  printf("%s\n", c.failed ? "kiln check: FAILED"
                          : "kiln check: every result within its "
                            "bound");
  kiln_cli_runtime_destroy(c.rt);
  return c.failed;
}
