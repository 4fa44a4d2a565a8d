/*
 * test-views.c — views are their buffer's memory plus an offset
 * (src/core/buffer_view.c): every operation and transfer of kiln's on views at
 * odd element offsets, against CPU references, with the elements around
 * each view checked untouched; kiln's own calls make no OpenCL sub-buffer
 * (clfault counts them); kiln_buffer_cl_mem() and user kernels do, once,
 * and only at an aligned offset; views die in any order; and with
 * KILN_KEEP_SUB_BUFFERS=1 (what kiln does on NVIDIA's driver, which
 * crashes releasing a sub-buffer of a live parent) no sub-buffer is
 * released while its parent is.
 *
 * Static, for kiln__fft_real_via_complex() and kiln_config.h; clfault.c's
 * entry points stand in for libOpenCL's.
 */
#include "core/buffer.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "profile/profile.h"

#include "clfault.h"
#include "common.h"
#include "kiln_config.h"
#include "values.h"

#include <complex.h>
#include <math.h>

#include "kiln/kiln_cl.h"

#if !defined(HAVE_CLBLAST)
#  define HAVE_CLBLAST 0
#endif
#if !defined(HAVE_CLFFT)
#  define HAVE_CLFFT 0
#endif
#if !defined(HAVE_VKFFT)
#  define HAVE_VKFFT 0
#endif

/* ---- a view inside guards ------------------------------------------------ */

/* count elements at element `at` of a root of at + count + 3 elements; the
 * root's other elements hold the guard bytes. */
typedef struct placed {
  kiln_buffer *root, *view;
  kiln_dtype t;
  size_t at, count, total;
} placed;

#define GUARD 0x5A

static placed place(kiln_runtime *rt, kiln_dtype t, size_t at, size_t count,
                    const void *data)
{
  placed p = {NULL, NULL, t, at, count, at + count + 3};
  size_t es = kiln_dtype_size(t);
  unsigned char *all = malloc(p.total * es);
  assert_non_null(all);
  memset(all, GUARD, p.total * es);
  if (data)
    memcpy(all + at * es, data, count * es);
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, p.total, 0, &p.root));
  assert_kiln_ok(rt, kiln_buffer_write(p.root, 0, p.total, all));
  assert_kiln_ok(rt, kiln_buffer_view(p.root, at, count, &p.view));
  free(all);
  return p;
}

/* The view's elements as doubles (complex: re, im), read through the root,
 * after checking the guards around it. */
static double *take(placed *p)
{
  size_t es = kiln_dtype_size(p->t), parts = p->t == KILN_C32 || p->t == KILN_C64 ? 2 : 1;
  unsigned char *all = malloc(p->total * es);
  assert_non_null(all);
  assert_kiln_ok(NULL, kiln_buffer_read(p->root, 0, p->total, all));
  for (size_t i = 0; i < p->total * es; i++)
    if ((i < p->at * es || i >= (p->at + p->count) * es) && all[i] != GUARD)
      fail_msg("byte %zu of a buffer of %zu %s, outside its view [%zu, %zu), was written",
               i, p->total, kiln_dtype_name(p->t), p->at, p->at + p->count);
  kiln_dtype real = p->t == KILN_C32 ? KILN_F32 : p->t == KILN_C64 ? KILN_F64 : p->t;
  double *v = malloc(p->count * parts * sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < p->count * parts; i++)
    v[i] = kiln_test_get(real, all + p->at * es, i);
  free(all);
  return v;
}

static void drop(placed *p)
{
  assert_kiln_ok(NULL, kiln_buffer_destroy(p->view));
  assert_kiln_ok(NULL, kiln_buffer_destroy(p->root));
}

static void expect_close(const char *what, const double *got, const double *want,
                         size_t n, double tol)
{
  for (size_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
      fail_msg("%s: element %zu is %.9g; expected %.9g", what, i, got[i], want[i]);
}

static float *floats(size_t n, unsigned seed)
{
  float *x = malloc(n * sizeof *x);
  assert_non_null(x);
  uint64_t s = seed * 0x9E3779B97F4A7C15u + 1;
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(kiln_test_random(&s) % 2001) / 1000.0f - 1.0f;
  return x;
}

static long subs_before;
static int on_oclgrind; /* --oclgrind: the cases on Oclgrind, which sees
                           every read and write out of its buffer; kiln's
                           kernels only (the libraries' warn as Oclgrind
                           builds them, on stderr) */

static int group_setup(void **state)
{
  subs_before = clfault_sub_buffers();
  if (!on_oclgrind)
    return kiln_test_runtime_setup(state);
  kiln_runtime *rt = kiln_test_runtime_on("oclgrind", NULL, 0);
  *state = rt;
  return kiln_runtime_device(rt)->vendor_family == KILN_VENDOR_OCLGRIND ? 0 : -1;
}

/* On Oclgrind, which reports on stderr and lets the call succeed: stderr in
 * a file around each case, and any text there fails it (and is shown). */
static int saved_stderr = -1;
static char capture_path[64];

static int capture_begin(void **state)
{
  (void)state;
  if (!on_oclgrind)
    return 0;
  strcpy(capture_path, "/tmp/kiln-views-XXXXXX");
  int fd = mkstemp(capture_path);
  if (fd < 0)
    return -1;
  fflush(stderr);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
  return 0;
}

static int capture_end(void **state)
{
  (void)state;
  if (!on_oclgrind)
    return 0;
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  FILE *f = fopen(capture_path, "r");
  unlink(capture_path);
  char line[1024];
  int lines = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (!lines++)
      fputs("Oclgrind (or the case) reported:\n", stderr);
    fputs(line, stderr);
  }
  if (f)
    fclose(f);
  return f && !lines ? 0 : -1;
}

/* kiln's own calls made no sub-buffer. */
static void no_sub_buffer_made(const char *what)
{
  if (clfault_sub_buffers() != subs_before)
    fail_msg("%s made %ld OpenCL sub-buffers; expected none (views are a buffer and "
             "an offset)",
             what, clfault_sub_buffers() - subs_before);
}

/* ---- transfers, fills, maps ---------------------------------------------- */

static void test_views_transfers(void **state)
{
  kiln_runtime *rt = *state;
  float *x = floats(40, 1), got[40];
  placed p = place(rt, KILN_F32, 3, 29, x);
  kiln_buffer *inner = NULL, *other = NULL;
  /* a view of the view: element 5 of the view, at 8 of the root */
  assert_kiln_ok(rt, kiln_buffer_view(p.view, 5, 11, &inner));
  assert_kiln_ok(rt, kiln_buffer_read(inner, 1, 10, got));
  assert_memory_equal(got, x + 6, 10 * sizeof(float));
  const float w[3] = {7, 8, 9}, nine = -9;
  assert_kiln_ok(rt, kiln_buffer_write(inner, 2, 3, w)); /* at 7 .. 10 of p.view */
  assert_kiln_ok(rt, kiln_buffer_fill(p.view, 20, 4, &nine));
  /* copies between views of one buffer, disjoint; overlapping refused */
  assert_kiln_ok(rt, kiln_buffer_view(p.root, 3 + 24, 4, &other)); /* the view's 24..28 */
  assert_kiln_ok(rt, kiln_buffer_copy(other, 0, inner, 0, 4));     /* view's 5..9 */
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "overlap in one buffer (views",
                    kiln_buffer_copy(inner, 0, p.view, 4, 3));
  float want[29];
  memcpy(want, x, sizeof want);
  memcpy(want + 7, w, sizeof w);
  for (int i = 20; i < 24; i++)
    want[i] = nine;
  memcpy(want + 24, want + 5, 4 * sizeof(float));
  /* a map of a view at an odd offset gives its elements, and writes land */
  float *m = NULL;
  assert_kiln_ok(rt, kiln_buffer_map(inner, KILN_MAP_READ | KILN_MAP_WRITE, (void **)&m));
  assert_memory_equal(m, want + 5, 11 * sizeof(float));
  m[10] = 100;
  want[15] = 100;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "mapped into host memory",
                    kiln_buffer_read(inner, 0, 1, got));
  assert_kiln_ok(rt, kiln_buffer_unmap(inner, m));
  assert_kiln_ok(rt, kiln_buffer_destroy(other));
  assert_kiln_ok(rt, kiln_buffer_destroy(inner));
  double *v = take(&p), wd[29];
  for (int i = 0; i < 29; i++)
    wd[i] = want[i];
  expect_close("transfers through views", v, wd, 29, 0);
  free(v), free(x);
  drop(&p);
  no_sub_buffer_made("transfers, fills, copies and maps of views");
}

/* ---- GEMM ----------------------------------------------------------------- */

static void gemm_on_views(kiln_runtime *rt, kiln_backend be, kiln_layout layout)
{
  enum { M = 5, N = 4, K = 3 };
  float *a = floats(M * K, 2), *b = floats(K * N, 3), *c = floats(M * N, 4);
  float *bias = floats(M, 5);
  placed pa = place(rt, KILN_F32, 3, M * K, a), pb = place(rt, KILN_F32, 5, K * N, b);
  placed pc = place(rt, KILN_F32, 7, M * N, c), pz = place(rt, KILN_F32, 1, M, bias);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, M, N, K);
  d.layout = layout;
  d.beta = 0.5;
  d.backend = be;
  d.bias = KILN_BIAS_ROW;
  d.bias_buffer = pz.view;
  kiln_status st = kiln_gemm(rt, &d, pa.view, pb.view, pc.view);
  if (st != KILN_OK)
    fail_msg("kiln_gemm on %s: %s", kiln_backend_name(be), kiln_last_error(rt));
  int rm = layout == KILN_ROW_MAJOR;
  double want[M * N];
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double s = 0;
      for (size_t l = 0; l < K; l++)
        s += (double)a[rm ? i * K + l : i + l * M] * b[rm ? l * N + j : l + j * K];
      size_t at = rm ? i * N + j : i + j * M;
      want[at] = s + 0.5 * c[at] + bias[i];
    }
  double *got = take(&pc);
  char what[64];
  snprintf(what, sizeof what, "gemm on views, %s, %s", kiln_backend_name(be),
           rm ? "row-major" : "column-major");
  expect_close(what, got, want, M * N, 1e-5);
  free(got), free(a), free(b), free(c), free(bias);
  drop(&pa), drop(&pb), drop(&pc), drop(&pz);
}

static void test_views_gemm(void **state)
{
  kiln_runtime *rt = *state;
  for (int l = 0; l < 2; l++) {
    gemm_on_views(rt, KILN_BACKEND_KILN, (kiln_layout)l);
    if (HAVE_CLBLAST && !on_oclgrind)
      gemm_on_views(rt, KILN_BACKEND_CLBLAST, (kiln_layout)l);
  }
  no_sub_buffer_made("kiln_gemm on views");
}

/* ---- reductions ------------------------------------------------------------ */

static void reduce_on_views(kiln_runtime *rt, kiln_reduce_op op, int axis,
                            kiln_backend be)
{
  enum { R = 5, C = 7 };
  float *x = floats(R * C, 6);
  kiln_dtype ot = kiln_reduce_out_dtype(op, KILN_F32);
  size_t outs = axis == KILN_AXIS_ALL ? 1 : axis == 0 ? C : R;
  placed px = place(rt, KILN_F32, 3, R * C + 2, NULL), py = place(rt, ot, 1, outs, NULL);
  assert_kiln_ok(rt, kiln_buffer_write(px.view, 2, R * C, x));
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, op, KILN_F32, R * C);
  d.ndim = 2, d.shape[0] = R, d.shape[1] = C, d.axis = axis;
  d.offset = 2; /* the desc's offset, on top of the view's */
  d.backend = be;
  kiln_status st = kiln_reduce(rt, &d, px.view, py.view);
  if (st != KILN_OK)
    fail_msg("kiln_reduce on %s: %s", kiln_backend_name(be), kiln_last_error(rt));
  double want[C];
  for (size_t o = 0; o < outs; o++) {
    double s = 0, best = -INFINITY;
    size_t n = axis == KILN_AXIS_ALL ? R * C : axis == 0 ? R : C, arg = 0;
    for (size_t i = 0; i < n; i++) {
      double v = x[axis == KILN_AXIS_ALL ? i : axis == 0 ? i * C + o : o * C + i];
      s += v;
      if (v > best)
        best = v, arg = i;
    }
    want[o] = op == KILN_REDUCE_ARGMAX ? (double)arg : op == KILN_REDUCE_MEAN ? s / n : s;
  }
  double *got = take(&py);
  expect_close("reduce on views", got, want, outs, 1e-5);
  free(got), free(x);
  drop(&px), drop(&py);
}

static void test_views_reduce(void **state)
{
  kiln_runtime *rt = *state;
  reduce_on_views(rt, KILN_REDUCE_SUM, KILN_AXIS_ALL, KILN_BACKEND_KILN);
  if (HAVE_CLBLAST && !on_oclgrind)
    reduce_on_views(rt, KILN_REDUCE_SUM, KILN_AXIS_ALL, KILN_BACKEND_CLBLAST);
  reduce_on_views(rt, KILN_REDUCE_MEAN, 0, KILN_BACKEND_AUTO);
  reduce_on_views(rt, KILN_REDUCE_ARGMAX, 1, KILN_BACKEND_AUTO);
  no_sub_buffer_made("kiln_reduce on views");
}

/* ---- convolution ----------------------------------------------------------- */

static void conv_on_views(kiln_runtime *rt, kiln_backend be, int with_bias)
{
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, 2, 2, 5, 6, 3, 3, 2);
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.backend = be;
  size_t p, q;
  assert_kiln_ok(NULL, kiln_conv2d_output(&d, &p, &q));
  size_t nx = d.n * d.c * d.h * d.w, nw = d.k * d.c * d.r * d.s, ny = d.n * d.k * p * q;
  float *x = floats(nx, 7), *w = floats(nw, 8), *bias = floats(d.k, 9);
  placed px = place(rt, KILN_F32, 3, nx, x), pw = place(rt, KILN_F32, 5, nw, w);
  placed pb = place(rt, KILN_F32, 1, d.k, bias), py = place(rt, KILN_F32, 7, ny, NULL);
  kiln_status st =
    kiln_conv2d(rt, &d, px.view, pw.view, with_bias ? pb.view : NULL, py.view);
  if (st != KILN_OK)
    fail_msg("kiln_conv2d on %s: %s", kiln_backend_name(be), kiln_last_error(rt));
  double *want = malloc(ny * sizeof *want);
  assert_non_null(want);
  for (size_t n = 0; n < d.n; n++)
    for (size_t k = 0; k < d.k; k++)
      for (size_t i = 0; i < p; i++)
        for (size_t j = 0; j < q; j++) {
          double s = with_bias ? bias[k] : 0;
          for (size_t c = 0; c < d.c; c++)
            for (size_t r = 0; r < d.r; r++)
              for (size_t t = 0; t < d.s; t++) {
                long hi = (long)(i + r) - 1, wj = (long)(j + t) - 1;
                if (hi >= 0 && hi < (long)d.h && wj >= 0 && wj < (long)d.w)
                  s += (double)x[((n * d.c + c) * d.h + (size_t)hi) * d.w + (size_t)wj] *
                       w[((k * d.c + c) * d.r + r) * d.s + t];
              }
          want[((n * d.k + k) * p + i) * q + j] = s;
        }
  double *got = take(&py);
  char what[64];
  snprintf(what, sizeof what, "conv2d on views, %s", kiln_backend_name(be));
  expect_close(what, got, want, ny, 1e-5);
  free(got), free(want), free(x), free(w), free(bias);
  drop(&px), drop(&pw), drop(&pb), drop(&py);
}

static void test_views_conv(void **state)
{
  kiln_runtime *rt = *state;
  conv_on_views(rt, KILN_BACKEND_DIRECT, 1);
  conv_on_views(rt, KILN_BACKEND_IM2COL, 1);
  if (HAVE_CLBLAST && !on_oclgrind) /* its convgemm adds no bias */
    conv_on_views(rt, KILN_BACKEND_CLBLAST, 0);
  no_sub_buffer_made("kiln_conv2d on views");
}

/* ---- FFT ------------------------------------------------------------------- */

/* The DFT of rows of n complex points (re, im pairs), in double. */
static void dft(const double *z, size_t rows, size_t n, int inverse, double scale,
                double *out)
{
  for (size_t b = 0; b < rows; b++)
    for (size_t k = 0; k < n; k++) {
      double complex s = 0;
      for (size_t t = 0; t < n; t++)
        s += (z[2 * (b * n + t)] + I * z[2 * (b * n + t) + 1]) *
             cexp((inverse ? 2 : -2) * 3.14159265358979323846 * I * (double)(k * t % n) /
                  (double)n);
      out[2 * (b * n + k)] = creal(s) * scale;
      out[2 * (b * n + k) + 1] = cimag(s) * scale;
    }
}

/* C2C of a batch of 2 of n0 x n1 (1-D when n0 is 1): one launch of kiln's
 * at 16, several at 1024 (the offsets travel through the scratch), a
 * column pass at 8 x 16. */
static void c2c_on_views(kiln_runtime *rt, kiln_backend be, int inverse, size_t n0,
                         size_t n1)
{
  size_t b = 2, n = n0 * n1, all = 2 * n * b;
  float *x = floats(all, 10);
  placed pi = place(rt, KILN_C32, 3, n * b, x), po = place(rt, KILN_C32, 5, n * b, NULL);
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, n1);
  if (n0 > 1)
    d.ndim = 2, d.shape[0] = n0, d.shape[1] = n1;
  d.batch = b;
  d.inverse = inverse;
  d.norm = KILN_FFT_NORM_ORTHO; /* the scaling kernel writes the view too */
  d.backend = be;
  kiln_status st = kiln_fft(rt, &d, pi.view, po.view);
  if (st != KILN_OK)
    fail_msg("kiln_fft on %s: %s", kiln_backend_name(be), kiln_last_error(rt));
  double *z = malloc(all * sizeof *z), *want = malloc(all * sizeof *want);
  double col[2 * 16], colt[2 * 16];
  assert_true(z && want && n0 <= 16);
  for (size_t i = 0; i < all; i++)
    z[i] = x[i];
  dft(z, b * n0, n1, inverse, 1 / sqrt((double)n), want); /* the rows */
  for (size_t j = 0; n0 > 1 && j < b * n1; j++) {         /* the columns */
    size_t at = j / n1 * n + j % n1;
    for (size_t i = 0; i < n0; i++)
      col[2 * i] = want[2 * (at + i * n1)], col[2 * i + 1] = want[2 * (at + i * n1) + 1];
    dft(col, 1, n0, inverse, 1, colt);
    for (size_t i = 0; i < n0; i++)
      want[2 * (at + i * n1)] = colt[2 * i],
                         want[2 * (at + i * n1) + 1] = colt[2 * i + 1];
  }
  double *got = take(&po), *in = take(&pi);
  char what[96];
  snprintf(what, sizeof what, "C2C FFT on views, %s, %zu x %zu", kiln_backend_name(be),
           n0, n1);
  expect_close(what, got, want, all, 1e-4);
  expect_close("the FFT's input view", in, z, all, 0);
  free(got), free(in), free(x), free(z), free(want);
  drop(&pi), drop(&po);
}

/* R2C then C2R of n points, through kiln_fft() (AUTO) and through the real
 * transforms as complex ones (fft_real.c's kernels). */
static void real_on_views(kiln_runtime *rt, int as_complex)
{
  enum { N = 16, H = N / 2 + 1 };
  float *x = floats(N, 11);
  placed pr = place(rt, KILN_F32, 3, N, x), ps = place(rt, KILN_C32, 5, H, NULL);
  placed pb = place(rt, KILN_F32, 7, N, NULL);
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, N);
  d.kind = KILN_FFT_R2C;
  kiln__profile_scope prof = {.rt = NULL}; /* not recording */
  assert_kiln_ok(rt, as_complex
                       ? kiln__fft_real_via_complex(rt, &d, pr.view, ps.view, &prof)
                       : kiln_fft(rt, &d, pr.view, ps.view));
  d.kind = KILN_FFT_C2R;
  d.inverse = 1;
  assert_kiln_ok(rt, as_complex
                       ? kiln__fft_real_via_complex(rt, &d, ps.view, pb.view, &prof)
                       : kiln_fft(rt, &d, ps.view, pb.view));
  double z[2 * N], full[2 * N], back[N];
  for (size_t i = 0; i < N; i++)
    z[2 * i] = x[i], z[2 * i + 1] = 0, back[i] = x[i];
  dft(z, 1, N, 0, 1, full);
  double *spec = take(&ps), *got = take(&pb);
  expect_close("R2C on views", spec, full, 2 * H, 1e-5);
  expect_close("C2R on views", got, back, N, 1e-5);
  free(spec), free(got), free(x);
  drop(&pr), drop(&ps), drop(&pb);
}

static void test_views_fft(void **state)
{
  kiln_runtime *rt = *state;
  static const size_t shapes[][2] = {{1, 16}, {1, 1024}, {8, 16}};
  for (size_t k = 0; k < COUNT(shapes); k++)
    for (int inv = 0; inv < 2; inv++) {
      c2c_on_views(rt, KILN_BACKEND_KILN, inv, shapes[k][0], shapes[k][1]);
      if (HAVE_CLFFT && !on_oclgrind)
        c2c_on_views(rt, KILN_BACKEND_CLFFT, inv, shapes[k][0], shapes[k][1]);
      if (HAVE_VKFFT && !on_oclgrind)
        c2c_on_views(rt, KILN_BACKEND_VKFFT, inv, shapes[k][0], shapes[k][1]);
    }
  if (!on_oclgrind) /* AUTO: VkFFT's or clFFT's */
    real_on_views(rt, 0);
  real_on_views(rt, 1);
  no_sub_buffer_made("kiln_fft on views");
}

/* ---- conversions and elementwise kernels ---------------------------------- */

static void test_views_convert_elementwise(void **state)
{
  kiln_runtime *rt = *state;
  enum { N = 21 };
  float *x = floats(N, 12);
  for (size_t i = 0; i < N; i++)
    x[i] *= 100;
  placed px = place(rt, KILN_F32, 3, N, x), pi = place(rt, KILN_I32, 5, N, NULL);
  placed ph = place(rt, KILN_F16, 1, N, NULL), py = place(rt, KILN_F32, 7, N, NULL);
  assert_kiln_ok(rt, kiln_convert(px.view, pi.view));
  assert_kiln_ok(rt, kiln_convert(px.view, ph.view));
  double want[N], *got = take(&pi);
  for (size_t i = 0; i < N; i++)
    want[i] = trunc(x[i]); /* toward zero */
  expect_close("convert float32 -> int32 on views", got, want, N, 0);
  free(got);
  got = take(&ph);
  for (size_t i = 0; i < N; i++)
    want[i] = x[i];
  expect_close("convert float32 -> float16 on views", got, want, N, 1e-3);
  free(got);
  kiln_elementwise *ew = NULL;
  assert_kiln_ok(rt, kiln_elementwise_create(rt, "float *y, const float *x, float a",
                                             "y = a * x + 1", &ew));
  assert_kiln_ok(rt, kiln_elementwise_run(ew, N, py.view, px.view, 0.5));
  assert_kiln_ok(rt, kiln_elementwise_destroy(ew));
  got = take(&py);
  for (size_t i = 0; i < N; i++)
    want[i] = 0.5 * x[i] + 1;
  expect_close("elementwise on views", got, want, N, 1e-6);
  free(got), free(x);
  drop(&px), drop(&pi), drop(&ph), drop(&py);
  no_sub_buffer_made("kiln_convert and kiln_elementwise_run on views");
}

/* ---- kiln_buffer_cl_mem() and user kernels --------------------------------- */

static size_t align_elements(kiln_runtime *rt, size_t es)
{
  cl_uint bits = 0;
  assert_int_equal(clGetDeviceInfo(kiln_runtime_cl_device(rt),
                                   CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits,
                                   NULL),
                   CL_SUCCESS);
  return bits / 8 / es;
}

/* A view's own cl_mem is a sub-buffer, made once when asked, at an aligned
 * offset only; a user kernel sees the view's element 0 at index 0. */
static void test_views_cl_mem_and_user_kernels(void **state)
{
  kiln_runtime *rt = *state;
  size_t at = align_elements(rt, sizeof(float)), n = 2 * at + 8;
  float *x = floats(n, 13), got[8];
  kiln_buffer *b = NULL, *v = NULL, *odd = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, x));
  assert_kiln_ok(rt, kiln_buffer_view(b, at, 8, &v));
  assert_kiln_ok(rt, kiln_buffer_view(b, at + 1, 7, &odd));
  long made = clfault_sub_buffers();
  assert_ptr_equal(kiln_buffer_cl_mem(b), kiln_buffer_cl_mem(b)); /* the buffer's own */
  assert_int_equal(clfault_sub_buffers(), made);
  cl_mem m = kiln_buffer_cl_mem(v);
  assert_non_null(m);
  assert_ptr_equal(kiln_buffer_cl_mem(v), m); /* once */
  assert_int_equal(clfault_sub_buffers(), made + 1);
  size_t size = 0;
  assert_int_equal(clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL),
                   CL_SUCCESS);
  assert_int_equal(size, 8 * sizeof(float));
  assert_null(kiln_buffer_cl_mem(odd));
  assert_non_null(strstr(kiln_last_error(rt), "not a multiple of the device's "
                                              "base-address alignment"));
  kiln_program *prog = NULL;
  kiln_kernel *k = NULL;
  assert_kiln_ok(rt,
                 kiln_program_create(
                   rt, "kernel void twice(global float *x) { x[get_global_id(0)] *= 2; }",
                   NULL, &prog));
  assert_kiln_ok(rt, kiln_kernel_create(prog, "twice", &k));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "base-address alignment",
                    kiln_kernel_set_buffer(k, 0, odd));
  assert_kiln_ok(rt, kiln_kernel_set_buffer(k, 0, v));
  size_t g = 8;
  assert_kiln_ok(rt, kiln_kernel_launch(k, 1, &g, NULL));
  assert_kiln_ok(rt, kiln_buffer_read(b, at - 1, 8, got));
  assert_true(got[0] == x[at - 1]);
  for (size_t i = 1; i < 8; i++)
    assert_true(got[i] == 2 * x[at + i - 1]);
  assert_int_equal(clfault_sub_buffers(), made + 1);
  kiln_kernel_destroy(k);
  kiln_program_destroy(prog);
  assert_kiln_ok(rt, kiln_buffer_destroy(odd));
  assert_kiln_ok(rt, kiln_buffer_destroy(v));
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  free(x);
  subs_before = clfault_sub_buffers(); /* the one asked for */
}

/* ---- destroy orders, and the quirk of keeping sub-buffers ------------------ */

/* Views with and without sub-buffers, of a buffer and of a view, overlapping,
 * destroyed in the order given (indices into the three views), then the
 * buffer; returns how many sub-buffers were released while their parent
 * was still held. */
static long views_die(kiln_runtime *rt, const int order[3])
{
  size_t at = align_elements(rt, sizeof(int32_t));
  long early = clfault_sub_buffers_released_early();
  kiln_memory_usage before = kiln_test_memory(rt);
  kiln_buffer *b = NULL, *v[3] = {NULL};
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, 4 * at, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_view(b, at, 2 * at, &v[0]));
  assert_kiln_ok(rt, kiln_buffer_view(b, 2 * at, 2 * at, &v[1])); /* overlaps v[0] */
  assert_kiln_ok(rt, kiln_buffer_view(v[0], at, 3, &v[2]));       /* of a view */
  assert_non_null(kiln_buffer_cl_mem(v[0]));
  assert_non_null(kiln_buffer_cl_mem(v[2]));
  const int32_t one = 1;
  assert_kiln_ok(rt, kiln_buffer_fill(v[1], 0, 2 * at, &one)); /* v[1]: none */
  assert_int_equal(kiln_test_memory(rt).live_buffers, before.live_buffers + 4);
  for (int i = 0; i < 3; i++) {
    assert_kiln_fails(rt, KILN_ERR_BUSY, "of this buffer", kiln_buffer_destroy(b));
    assert_kiln_ok(rt, kiln_buffer_destroy(v[order[i]]));
  }
  int32_t got = 0;
  assert_kiln_ok(rt, kiln_buffer_read(b, 3 * at, 1, &got));
  assert_int_equal(got, 1);
  assert_int_equal(b->nkept, rt->keep_sub_buffers ? 2 : 0);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_int_equal(kiln_test_memory(rt).live_buffers, before.live_buffers);
  return clfault_sub_buffers_released_early() - early;
}

static void test_views_destroy_orders(void **state)
{
  static const int orders[][3] = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2}};
  kiln_runtime *rt = *state;
  assert_false(rt->keep_sub_buffers); /* PoCL and Oclgrind: no such quirk */
  long early = 0;
  for (size_t i = 0; i < COUNT(orders); i++)
    early += views_die(rt, orders[i]);
  assert_true(early > 0); /* released with their views, as the check sees */
  /* kept until the buffer goes, then released after it: what NVIDIA's
   * driver is spared */
  assert_int_equal(setenv("KILN_KEEP_SUB_BUFFERS", "1", 1), 0);
  kiln_runtime *keep = kiln_test_runtime_with(NULL);
  assert_int_equal(unsetenv("KILN_KEEP_SUB_BUFFERS"), 0);
  assert_true(keep->keep_sub_buffers);
  for (size_t i = 0; i < COUNT(orders); i++)
    assert_int_equal(views_die(keep, orders[i]), 0);
  assert_kiln_ok(keep, kiln_runtime_destroy(keep));
  subs_before = clfault_sub_buffers();
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  on_oclgrind = argc > 1 && !strcmp(argv[1], "--oclgrind");
  if (on_oclgrind) /* its API checks too, as tests/test-oclgrind.c runs it */
    setenv("OCLGRIND_CHECK_API", "1", 1);
  if (on_oclgrind && !kiln_test_has_oclgrind()) {
    puts("1..0 # SKIP needs Oclgrind's ICD (tests/icd)");
    return 0;
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_views_transfers, capture_begin, capture_end),
    cmocka_unit_test_setup_teardown(test_views_gemm, capture_begin, capture_end),
    cmocka_unit_test_setup_teardown(test_views_reduce, capture_begin, capture_end),
    cmocka_unit_test_setup_teardown(test_views_conv, capture_begin, capture_end),
    cmocka_unit_test_setup_teardown(test_views_fft, capture_begin, capture_end),
    cmocka_unit_test_setup_teardown(test_views_convert_elementwise, capture_begin,
                                    capture_end),
    cmocka_unit_test_setup_teardown(test_views_cl_mem_and_user_kernels, capture_begin,
                                    capture_end),
    cmocka_unit_test_setup_teardown(test_views_destroy_orders, capture_begin,
                                    capture_end),
  };
  return cmocka_run_group_tests(tests, group_setup, kiln_test_runtime_teardown);
}
