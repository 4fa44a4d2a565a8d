/*
 * test-oclgrind.c — every kernel of kiln's cl/ files runs on Oclgrind, the
 * OpenCL simulator, with its checks on: out-of-bounds accesses (always on),
 * data races (OCLGRIND_DATA_RACES) and misuse of the OpenCL API
 * (OCLGRIND_CHECK_API); with --uninit, reads of uninitialised values too
 * (OCLGRIND_UNINITIALIZED), a separate run because it is slower (main()
 * says why).
 * Oclgrind reports what it finds on stderr and lets the call succeed, so
 * each test runs with the process's stderr in a file, and any text there
 * fails the test (and is shown).
 *
 * Each kernel runs through the public op that uses it, on small odd sizes,
 * and the results are checked against a double-precision reference on the
 * host. Oclgrind calls itself a GPU, so the GPU shapes of GEMM and the
 * reductions run on it as they are; a second runtime takes the CPU shapes
 * through the tuning seams. The last test fails when a kernel of kiln's
 * programs was never launched, or a kernel definition in a cl/ file matches
 * no launched kernel: a new kernel cannot go unchecked. Launches are counted
 * by this executable's clEnqueueNDRangeKernel, which libkiln (linked
 * statically) calls instead of the ICD loader's, and which forwards to it.
 *
 * usage: test-oclgrind [--uninit] FILE.cl...   (kiln's cl/ files, from meson)
 * Needs Oclgrind registered with the ICD loader (OCL_ICD_VENDORS, set by
 * meson): exits 77 (skipped) without it, except under CI.
 */
/* kiln's own kernels (kiln_builtin_name() ...) are experimental API. */
#define KILN_EXPERIMENTAL
#include "common.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>

#include "activation.h"
#include "conv-case.h"
#include "base/util.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "profile/profile.h"
#include "tuning/tuning.h"
#include "values.h"

/* ---- kernels launched: this executable's clEnqueueNDRangeKernel ---------- */

#define MAX_KERNELS 512
static char *launched[MAX_KERNELS];
static size_t nlaunched;
static pthread_mutex_t launched_lock = PTHREAD_MUTEX_INITIALIZER;

static int was_launched(const char *name)
{
  for (size_t i = 0; i < nlaunched; i++)
    if (!strcmp(launched[i], name))
      return 1;
  return 0;
}

static void note_launch(cl_kernel k)
{
  char name[128] = "";
  if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL) !=
      CL_SUCCESS)
    return;
  pthread_mutex_lock(&launched_lock);
  if (!was_launched(name) && nlaunched < MAX_KERNELS)
    launched[nlaunched++] = strdup(name);
  pthread_mutex_unlock(&launched_lock);
}

typedef cl_int (*enqueue_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                             const size_t *, const size_t *, cl_uint, const cl_event *,
                             cl_event *);

CL_API_ENTRY cl_int CL_API_CALL
clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint dims,
                       const size_t *offset, const size_t *global, const size_t *local,
                       cl_uint nwait, const cl_event *wait, cl_event *event)
{
  static enqueue_fn real;
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "clEnqueueNDRangeKernel");
  if (!real)
    return CL_INVALID_OPERATION;
  cl_int err = real(queue, kernel, dims, offset, global, local, nwait, wait, event);
  if (err == CL_SUCCESS)
    note_launch(kernel);
  return err;
}

/* ---- --uninit: this executable's clReleaseMemObject ---------------------- */

/*
 * Oclgrind 21.10's uninitialised-value check keeps a shadow copy of each
 * buffer, found by the buffer's number, and does not drop it when the buffer
 * is released. Oclgrind hands a released buffer's number to the next buffer
 * created, which then inherits the old buffer's shadow: its size, and which
 * bytes were written. A larger new buffer reads as uninitialised past the old
 * size even where a kernel has just written it (its stores there are lost),
 * and a new buffer that reuses a written one hides real reads of unwritten
 * memory. Kiln releases its GEMM workspace and the caller's buffers between
 * operations, so reports came and went with the order of the tests. With
 * --uninit, releases wait until both runtimes are gone: no number is reused
 * and every buffer starts with a shadow of its own. (The plain run releases
 * at once, and ASan checks the use of released buffers.)
 */
static int uninit; /* --uninit: the uninitialised-value run */
static cl_mem *deferred;
static size_t ndeferred, deferred_cap;
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;

typedef cl_int (*release_fn)(cl_mem);

static release_fn real_release(void)
{
  static release_fn real;
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "clReleaseMemObject");
  return real;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseMemObject(cl_mem mem)
{
  release_fn real = real_release();
  if (!real)
    return CL_INVALID_OPERATION;
  if (!uninit || !mem)
    return real(mem);
  pthread_mutex_lock(&deferred_lock);
  if (ndeferred == deferred_cap) {
    size_t cap = deferred_cap ? 2 * deferred_cap : 256;
    cl_mem *grown = realloc(deferred, cap * sizeof *grown);
    if (!grown) { /* cannot defer: release now, at the cost of a reuse */
      pthread_mutex_unlock(&deferred_lock);
      return real(mem);
    }
    deferred = grown;
    deferred_cap = cap;
  }
  deferred[ndeferred++] = mem;
  pthread_mutex_unlock(&deferred_lock);
  return CL_SUCCESS;
}

/* Makes the releases that waited; 0 when each succeeded. */
static int release_deferred(void)
{
  int bad = 0;
  for (size_t i = 0; i < ndeferred; i++)
    bad |= real_release()(deferred[i]) != CL_SUCCESS;
  free(deferred);
  deferred = NULL;
  ndeferred = deferred_cap = 0;
  return bad ? -1 : 0;
}

/* ---- Oclgrind's reports: stderr in a file around each test --------------- */

static int saved_stderr = -1;
static char capture_path[64];

static int capture_begin(void)
{
  strcpy(capture_path, "/tmp/kiln-oclgrind-XXXXXX");
  int fd = mkstemp(capture_path);
  if (fd < 0)
    return -1;
  fflush(stderr);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
  return 0;
}

/* Puts stderr back; what was written to it is in the file returned (NULL
 * when it cannot be read). */
static FILE *capture_stop(void)
{
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  FILE *f = fopen(capture_path, "r");
  unlink(capture_path);
  return f;
}

/* Puts stderr back; fails (-1) when anything was written to it, which is
 * then shown on the real stderr. */
static int capture_end(const char *when)
{
  FILE *f = capture_stop();
  if (!f)
    return -1;
  char line[1024];
  int lines = 0;
  while (fgets(line, sizeof line, f)) {
    if (!lines++)
      fprintf(stderr, "Oclgrind reported during %s:\n", when);
    fputs(line, stderr);
  }
  fclose(f);
  return lines ? -1 : 0;
}

/* Ends the capture running, puts what was written in text (at most cap - 1
 * bytes, NUL-terminated) and starts another, for a test that expects a
 * report. */
static void capture_swap(char *text, size_t cap)
{
  FILE *f = capture_stop();
  size_t n = f ? fread(text, 1, cap - 1, f) : 0;
  text[n] = 0;
  if (f)
    fclose(f);
  assert_int_equal(capture_begin(), 0);
}

/* ---- the two runtimes on Oclgrind ---------------------------------------- */

static kiln_runtime *gpu_rt; /* Oclgrind's own shapes: it calls itself a GPU */
static kiln_runtime *cpu_rt; /* with the CPU shapes: cpu_shapes() */

/* The CPU shapes as src/tuning/tuning.c gives them to PoCL with 16-wide vectors,
 * but with 3 reduction chunks, so chunks end inside the input, and A in
 * blocks of 5 KiB: the 66-row case's 9 panels of A go in blocks of 8
 * (float, 608 bytes a panel) or 4 (double), the last block short. */
static void cpu_shapes(kiln_runtime *rt)
{
  kiln__tuning t = rt->tuning->t;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
    kiln__gemm_tuning *g = &t.gemm[v]; /* the GPU fields as the rules' */
    g->gpu_shape = 0, g->tm = 8, g->vw = v == KILN__GEMM_F64 ? 8 : 16;
    g->cg = 0, g->small = 0, g->akib = 5;
    g->direct = 0; /* the cases are tiny: kept off kiln_gemm_direct but in its test */
  }
  t.reduce = (kiln__reduce_tuning){.gpu_shape = 0, .chunks = 3, .wg = 64, .groups = 1};
  t.fft.vec_first = 1;
  t.fft.row_max = 0; /* the passes one a launch; test_oclgrind_fft_c2c runs rowv */
  t.fft.local_max = 0;
  kiln__runtime_set_tuning(rt, &t);
}

static kiln_runtime *oclgrind_runtime(void)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.device = "oclgrind";
  /* --uninit builds without optimisation (main() says why), which kiln's
   * cache key cannot see: build every program anew. */
  opts.no_cache = uninit;
  opts.no_memory_pool = 1; /* exact-size buffers: Oclgrind sees every overrun */
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(&opts, &rt) != KILN_OK)
    return NULL;
  return rt;
}

/* The GPU shape's GEMM with the rules' settings (vectors of 4, strided,
 * two buffers, bands of 8 tile rows) on 32 x 32 tiles of 4 x 4 outputs, 64
 * work-items: the rules' 128 x 128 tiles of 8 x 8 would take Oclgrind 16
 * times the work for the same cases and test no other path. */
static void gpu_shapes(kiln_runtime *rt)
{
  kiln__tuning t = rt->tuning->t;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
    kiln__gemm_tuning *g = &t.gemm[v];
    g->tsm = g->tsn = 32, g->tsk = 8, g->wptm = g->wptn = 4;
    g->vwm = g->vwn = 4, g->strm = g->strn = 1, g->pad = 0, g->db = 1, g->gm = 8;
  }
  kiln__runtime_set_tuning(rt, &t);
}

static int group_setup(void **state)
{
  (void)state;
  if (capture_begin())
    return -1;
  gpu_rt = oclgrind_runtime();
  cpu_rt = oclgrind_runtime();
  if (gpu_rt)
    gpu_shapes(gpu_rt);
  if (cpu_rt)
    cpu_shapes(cpu_rt);
  if (gpu_rt) { /* the GEMM cases are tiny: kept off kiln_gemm_direct but in its test */
    kiln__tuning t = gpu_rt->tuning->t;
    for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
      t.gemm[v].direct = 0;
    t.fft.local_max = 0; /* the passes of fft.cl; test_oclgrind_fft_local: fft_local.cl */
    kiln__runtime_set_tuning(gpu_rt, &t);
  }
  int bad = capture_end("runtime creation");
  return gpu_rt && cpu_rt && !bad ? 0 : -1;
}

static int group_teardown(void **state)
{
  (void)state;
  if (capture_begin())
    return -1;
  kiln_status a = kiln_runtime_destroy(gpu_rt), b = kiln_runtime_destroy(cpu_rt);
  int released = release_deferred();
  int bad = capture_end("runtime destruction");
  return a == KILN_OK && b == KILN_OK && !released && !bad ? 0 : -1;
}

static int test_setup(void **state)
{
  (void)state;
  return capture_begin();
}

/* Waits for every command, so whatever Oclgrind says lands in the file. */
static int test_teardown(void **state)
{
  (void)state;
  kiln_status a = kiln_finish(gpu_rt), b = kiln_finish(cpu_rt);
  int bad = capture_end("the test");
  if (a != KILN_OK || b != KILN_OK)
    fprintf(stderr, "kiln_finish: %s\n", kiln_last_error(a != KILN_OK ? gpu_rt : cpu_rt));
  return a == KILN_OK && b == KILN_OK && !bad ? 0 : -1;
}

/* ---- host data ------------------------------------------------------------ */

static uint64_t seed = 0x9e3779b97f4a7c15u;

/* A value in [-1, 1) in steps of 1/64: exact in every float type, with ties. */
static double rnd(void)
{
  seed = seed * 6364136223846793005u + 1442695040888963407u;
  return (double)((int)(seed >> 57) - 64) / 64;
}

/* A buffer of t holding v, rounded to t; v gets the rounded values back, so
 * the reference sees what the device does. */
static kiln_buffer *upload(kiln_runtime *rt, kiln_dtype t, double *v, size_t n)
{
  unsigned char *host = calloc(n ? n : 1, kiln_dtype_size(t));
  assert_non_null(host);
  for (size_t i = 0; i < n; i++) {
    kiln_test_put(t, host, i, v[i]);
    v[i] = kiln_test_get(t, host, i);
  }
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, n, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, host));
  free(host);
  return b;
}

static double *download(kiln_buffer *b)
{
  size_t n = kiln_buffer_count(b);
  kiln_dtype t = kiln_buffer_dtype(b);
  unsigned char *host = malloc(n * kiln_dtype_size(t));
  double *v = malloc(n * sizeof *v);
  assert_true(host && v);
  assert_kiln_ok(kiln_buffer_runtime(b), kiln_buffer_read(b, 0, n, host));
  for (size_t i = 0; i < n; i++)
    v[i] = kiln_test_get(t, host, i);
  free(host);
  return v;
}

/* The rounding unit of a type's storage (float16 results come from float32
 * arithmetic: its unit bounds the rest). */
static double unit(kiln_dtype t)
{
  return t == KILN_F16 ? 0x1p-11 : t == KILN_F64 ? 0x1p-52 : 0x1p-24;
}

/* got[i] within bound[i] of want[i]; NaN only where want is NaN. */
static void expect_near(const char *what, const double *got, const double *want,
                        const double *bound, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    int ok = isnan(want[i]) ? isnan(got[i])
                            : !isnan(got[i]) && fabs(got[i] - want[i]) <= bound[i];
    if (!ok)
      fail_msg("%s: element %zu is %.17g, expected %.17g (bound %.3g)", what, i, got[i],
               want[i], bound[i]);
  }
}

/* ---- convert.cl ----------------------------------------------------------- */

static const kiln_dtype all_types[] = {KILN_F16, KILN_F32, KILN_F64, KILN_I32, KILN_I64};

/* Exactly what kiln_convert() must give for the source value v, as raw bytes
 * of type `to` (see its comment in kiln.h). */
static void convert_reference(double v, kiln_dtype to, void *out)
{
  if (to == KILN_I32 || to == KILN_I64) {
    double lo = to == KILN_I32 ? -0x1p31 : -0x1p63, hi = -lo;
    int64_t r = isnan(v)  ? 0
                : v >= hi ? (to == KILN_I32 ? INT32_MAX : INT64_MAX)
                : v <= lo ? (to == KILN_I32 ? INT32_MIN : INT64_MIN)
                          : (int64_t)trunc(v);
    if (to == KILN_I32)
      *(int32_t *)out = (int32_t)r;
    else
      *(int64_t *)out = r;
    return;
  }
  kiln_test_put(to, out, 0, v); /* rounds to nearest even */
}

static void convert_pair(kiln_runtime *rt, kiln_dtype from, kiln_dtype to)
{
  static const double floats[] = {0,     1,     -2.5,     3.5,       1000.25,
                                  65519, 70000, 16777217, 3e9,       -3e9,
                                  1e19,  NAN,   INFINITY, -INFINITY, 0.1};
  static const double ints[] = {0,     1,        -2,         1000,          65519,
                                70000, 16777217, 2147483647, -2147483648.0, 33554435,
                                3e9,   -3e12,    0x1p62,     -0x1p63};
  int int_from = from == KILN_I32 || from == KILN_I64;
  const double *src = int_from ? ints : floats;
  size_t n = int_from ? sizeof ints / sizeof *ints : sizeof floats / sizeof *floats;
  double v[16];
  size_t used = 0;
  for (size_t i = 0; i < n; i++) /* int32 sources: the values int32 holds */
    if (from != KILN_I32 || (src[i] >= -0x1p31 && src[i] < 0x1p31))
      v[used++] = src[i];
  kiln_buffer *a = upload(rt, from, v, used), *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, to, used, 0, &b));
  assert_kiln_ok(rt, kiln_convert(a, b));
  size_t size = kiln_dtype_size(to);
  unsigned char got[16 * 8], want[8];
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, used, got));
  for (size_t i = 0; i < used; i++) {
    convert_reference(v[i], to, want);
    int same = !memcmp(got + i * size, want, size);
    if (!same && to != KILN_I32 && to != KILN_I64) /* any NaN is NaN */
      same = isnan(kiln_test_get(to, got, i)) && isnan(kiln_test_get(to, want, 0));
    if (!same)
      fail_msg("convert %s -> %s of %.17g: got %.17g, expected %.17g",
               kiln_dtype_name(from), kiln_dtype_name(to), v[i],
               kiln_test_get(to, got, i), kiln_test_get(to, want, 0));
  }
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
}

/* --uninit only, first: a kernel that reads a buffer nobody wrote is
 * reported, so the check is on, and a run of kiln's kernels that reports
 * nothing means something. */
static void test_oclgrind_uninit_check_is_on(void **state)
{
  (void)state;
  static const char *source =
    "kernel void reads_unwritten(global const float *x, global float *y)\n"
    "{ y[get_global_id(0)] = x[get_global_id(0)] + 1; }\n";
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  kiln_buffer *x = NULL, *y = NULL;
  assert_kiln_ok(gpu_rt, kiln_program_create(gpu_rt, source, NULL, &p));
  assert_kiln_ok(gpu_rt, kiln_kernel_create(p, "reads_unwritten", &k));
  assert_kiln_ok(gpu_rt, kiln_buffer_create(gpu_rt, KILN_F32, 4, 0, &x));
  assert_kiln_ok(gpu_rt, kiln_buffer_create(gpu_rt, KILN_F32, 4, 0, &y));
  assert_kiln_ok(gpu_rt, kiln_kernel_set_args(k, "bb", x, y));
  assert_kiln_ok(gpu_rt, kiln_kernel_launch(k, 1, (size_t[]){4}, NULL));
  assert_kiln_ok(gpu_rt, kiln_finish(gpu_rt));
  char report[4096];
  capture_swap(report, sizeof report);
  if (!strstr(report, "Uninitialized value written to global memory"))
    fail_msg("Oclgrind did not report a read of an unwritten buffer; it said:\n%s",
             report);
  kiln_buffer_destroy(x);
  kiln_buffer_destroy(y);
  kiln_kernel_destroy(k);
  kiln_program_destroy(p);
}

static void test_oclgrind_convert(void **state)
{
  (void)state;
  for (size_t f = 0; f < 5; f++)
    for (size_t t = 0; t < 5; t++)
      if (f != t)
        convert_pair(gpu_rt, all_types[f], all_types[t]);
}

/* ---- kiln_elementwise ---------------------------------------------------- */

/* A generated kernel, short form and indexed (a neighbour, wrapping at n),
 * over an odd length: Oclgrind sees every access. */
static void test_oclgrind_elementwise(void **state)
{
  (void)state;
  enum { L = 37 };
  float x[L], y[L];
  for (int i = 0; i < L; i++)
    x[i] = (float)(i % 5 - 2);
  kiln_buffer *bx = NULL, *by = NULL;
  assert_kiln_ok(gpu_rt, kiln_buffer_create(gpu_rt, KILN_F32, L, 0, &bx));
  assert_kiln_ok(gpu_rt, kiln_buffer_create(gpu_rt, KILN_F32, L, 0, &by));
  assert_kiln_ok(gpu_rt, kiln_buffer_write(bx, 0, L, x));
  kiln_elementwise *e1 = NULL, *e2 = NULL;
  assert_kiln_ok(gpu_rt,
                 kiln_elementwise_create(gpu_rt, "float *y, const float *x, float a",
                                         "y = max(a * x, 0)", &e1));
  assert_kiln_ok(gpu_rt, kiln_elementwise_create(gpu_rt, "float *y, const float *x",
                                                 "y[i] = x[i] + x[(i + 1) % n]", &e2));
  assert_kiln_ok(gpu_rt, kiln_elementwise_run(e1, L, by, bx, 3.0));
  assert_kiln_ok(gpu_rt, kiln_buffer_read(by, 0, L, y));
  for (int i = 0; i < L; i++)
    assert_true(y[i] == fmaxf(3 * x[i], 0));
  assert_kiln_ok(gpu_rt, kiln_elementwise_run(e2, L, by, bx));
  assert_kiln_ok(gpu_rt, kiln_buffer_read(by, 0, L, y));
  for (int i = 0; i < L; i++)
    assert_true(y[i] == x[i] + x[(i + 1) % L]);
  kiln_elementwise_destroy(e1), kiln_elementwise_destroy(e2);
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by);
}

/* ---- gemm.cl -------------------------------------------------------------- */

typedef struct gemm_case {
  kiln_layout layout;
  int ta, tb;
  size_t m, n, k, batch;
  double alpha, beta;
  kiln_bias bias; /* the batch's products have bias vectors of their own */
  kiln_activation act;
} gemm_case;

/* Element (r, c) of an r x c-indexed matrix stored in layout with leading
 * dimension ld, transposed or not. */
static size_t at(kiln_layout layout, int trans, size_t r, size_t c, size_t ld)
{
  int row_major = (layout == KILN_ROW_MAJOR) != (trans != 0);
  return row_major ? r * ld + c : c * ld + r;
}

static void gemm_one(kiln_runtime *rt, kiln_dtype t, const gemm_case *g)
{
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, t, g->m, g->n, g->k);
  d.layout = g->layout;
  d.trans_a = g->ta ? KILN_TRANS : KILN_NO_TRANS;
  d.trans_b = g->tb ? KILN_TRANS : KILN_NO_TRANS;
  d.batch = g->batch;
  d.alpha = g->alpha;
  d.beta = g->beta;
  d.bias = g->bias;
  d.activation = g->act;
  d.backend = KILN_BACKEND_KILN;
  int row = g->layout == KILN_ROW_MAJOR;
  /* packed leading dimensions: the stored row length (row-major) or column
   * length (column-major) of A (m x k, or k x m transposed), B and C */
  size_t lda = (row != (g->ta != 0)) ? g->k : g->m;
  size_t ldb = (row != (g->tb != 0)) ? g->n : g->k;
  size_t ldc = row ? g->n : g->m;
  size_t sa = g->m * g->k, sb = g->k * g->n, sc = g->m * g->n, nb = g->batch;
  double *a = malloc(sa * nb * sizeof *a), *b = malloc(sb * nb * sizeof *b);
  double *c = malloc(sc * nb * sizeof *c), *want = malloc(sc * nb * sizeof *want);
  double *bound = malloc(sc * nb * sizeof *bound);
  assert_true(a && b && c && want && bound);
  for (size_t i = 0; i < sa * nb; i++)
    a[i] = rnd();
  for (size_t i = 0; i < sb * nb; i++)
    b[i] = rnd();
  for (size_t i = 0; i < sc * nb; i++)
    c[i] = rnd();
  kiln_buffer *ab = upload(rt, t, a, sa * nb), *bb = upload(rt, t, b, sb * nb);
  kiln_buffer *cb = upload(rt, t, c, sc * nb), *biasb = NULL;
  size_t nbias = g->bias == KILN_BIAS_ROW ? g->m : g->n;
  double *bias = malloc(nbias * nb * sizeof *bias);
  for (size_t i = 0; i < nbias * nb; i++)
    bias[i] = rnd();
  if (g->bias) {
    biasb = upload(rt, t, bias, nbias * nb);
    d.bias_buffer = biasb;
    d.stride_bias = nbias;
  }
  for (size_t q = 0; q < nb; q++)
    for (size_t i = 0; i < g->m; i++)
      for (size_t j = 0; j < g->n; j++) {
        double s = 0, mag = 0;
        for (size_t p = 0; p < g->k; p++) {
          double x = a[q * sa + at(g->layout, g->ta, i, p, lda)] *
                     b[q * sb + at(g->layout, g->tb, p, j, ldb)];
          s += x;
          mag += fabs(x);
        }
        size_t ci = q * sc + at(g->layout, 0, i, j, ldc);
        double cv = g->beta ? g->beta * c[ci] : 0;
        double bv = g->bias ? bias[q * nbias + (g->bias == KILN_BIAS_ROW ? i : j)] : 0;
        double pre = g->alpha * s + cv + bv;
        want[ci] = kiln_test_activate(g->act, pre);
        /* float32 (or float64) arithmetic, the epilogue, then the storage's
         * rounding */
        double arith = t == KILN_F64 ? 0x1p-52 : 0x1p-24;
        double err =
          arith * (double)(g->k + 3) * (fabs(g->alpha) * mag + fabs(cv) + fabs(bv));
        bound[ci] =
          kiln_test_activation_bound(g->act, pre, err, arith) + unit(t) * fabs(want[ci]);
      }
  assert_kiln_ok(rt, kiln_gemm(rt, &d, ab, bb, cb));
  double *got = download(cb);
  char what[160];
  snprintf(what, sizeof what, "gemm %s %zux%zux%zu ta=%d tb=%d batch %zu %s bias %d %s",
           kiln_dtype_name(t), g->m, g->n, g->k, g->ta, g->tb, g->batch,
           row ? "row-major" : "col-major", (int)g->bias, kiln_activation_name(g->act));
  expect_near(what, got, want, bound, sc * nb);
  free(got);
  free(a), free(b), free(c), free(want), free(bound), free(bias);
  kiln_buffer_destroy(ab), kiln_buffer_destroy(bb), kiln_buffer_destroy(cb);
  kiln_buffer_destroy(biasb);
}

static void gemm_cases_of(kiln_runtime *rt, kiln_dtype type)
{
  static const gemm_case cases[] = {
    {KILN_ROW_MAJOR, 0, 0, 5, 7, 3, 1, 1, 0, KILN_BIAS_NONE, KILN_ACTIVATION_NONE},
    {KILN_ROW_MAJOR, 1, 0, 3, 9, 17, 2, 0.5, -1, KILN_BIAS_COL, KILN_ACTIVATION_GELU},
    {KILN_COL_MAJOR, 0, 1, 7, 5, 6, 1, 2, 0.25, KILN_BIAS_NONE, KILN_ACTIVATION_TANH},
    /* past one 64 x 64 tile */
    {KILN_COL_MAJOR, 1, 1, 66, 35, 19, 1, 1, 1, KILN_BIAS_ROW, KILN_ACTIVATION_SIGMOID},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    gemm_one(rt, type, &cases[i]);
}

static void gemm_cases(kiln_runtime *rt)
{
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64};
  for (size_t t = 0; t < 3; t++)
    gemm_cases_of(rt, types[t]);
}

static void test_oclgrind_gemm_gpu_shape(void **state)
{
  (void)state;
  gemm_cases(gpu_rt);
}

/* Corners of the GPU shape's space that kiln_tune() may pick, for float,
 * small enough for Oclgrind: two buffers of local slices, whose loads
 * race with the multiply if a barrier is missing, with vectors of 4 and
 * 2, padding, a slice whose vectors do not divide among the group and
 * bands of 2 tile rows; then one buffer, contiguous register tiles,
 * scalar loads, slices 1 deep. */
static void test_oclgrind_gemm_gpu_corners(void **state)
{
  (void)state;
  static const kiln__gemm_tuning corners[] = {
    {.tsm = 16,
     .tsn = 32,
     .tsk = 3,
     .wptm = 4,
     .wptn = 4,
     .vwm = 4,
     .vwn = 2,
     .strm = 1,
     .strn = 1,
     .pad = 1,
     .db = 1,
     .gm = 2},
    {.tsm = 8, .tsn = 16, .tsk = 1, .wptm = 2, .wptn = 4, .vwm = 1, .vwn = 1, .gm = 1}};
  const kiln__tuning saved = gpu_rt->tuning->t;
  for (size_t i = 0; i < sizeof corners / sizeof *corners; i++) {
    kiln__tuning t = saved;
    kiln__gemm_tuning *g = &t.gemm[KILN__GEMM_F32];
    unsigned tm = g->tm, vw = g->vw;
    *g = corners[i];
    g->gpu_shape = 1, g->tm = tm, g->vw = vw;
    kiln__str why = {0};
    if (kiln__tuning_check(kiln_runtime_device(gpu_rt), &t, &why) != 0) {
      fprintf(stderr, "# corner %zu cannot run on Oclgrind: %s\n", i,
              kiln__str_get(&why));
      kiln__str_free(&why);
      continue;
    }
    kiln__runtime_set_tuning(gpu_rt, &t);
    gemm_cases_of(gpu_rt, KILN_F32);
  }
  kiln__runtime_set_tuning(gpu_rt, &saved);
}

static void test_oclgrind_gemm_cpu_shape(void **state)
{
  (void)state;
  gemm_cases(cpu_rt);
}

/* The epilogue's own pass (what follows a CLBlast product): C 5 x 6 in a
 * 7-wide row-major matrix from element 2, two of them 40 apart, each with
 * a row bias, through GELU, in every dtype. */
static void test_oclgrind_gemm_epilogue_pass(void **state)
{
  (void)state;
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64};
  for (size_t ti = 0; ti < 3; ti++) {
    kiln_dtype t = types[ti];
    if (t == KILN_F64 && !kiln_runtime_device(cpu_rt)->has_fp64)
      continue;
    double c[82], bias[12], want[82], bound[82];
    for (size_t i = 0; i < 82; i++)
      c[i] = rnd();
    for (size_t i = 0; i < 12; i++)
      bias[i] = rnd();
    kiln_buffer *cb = upload(cpu_rt, t, c, 82), *bb = upload(cpu_rt, t, bias, 12);
    kiln__gemm g = {.dtype = t,
                    .m = 5,
                    .n = 6,
                    .batch = 2,
                    .ldc = 7,
                    .offset_c = 2,
                    .stride_c = 40,
                    .c = kiln_buffer_cl_mem(cb),
                    .bias_kind = KILN_BIAS_ROW,
                    .activation = KILN_ACTIVATION_GELU,
                    .bias = kiln_buffer_cl_mem(bb),
                    .offset_bias = 1,
                    .stride_bias = 5};
    for (size_t i = 0; i < 82; i++)
      want[i] = c[i], bound[i] = 0;
    for (size_t b = 0; b < 2; b++)
      for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 6; j++) {
          size_t at = 2 + b * 40 + i * 7 + j;
          double pre = c[at] + bias[1 + b * 5 + i];
          want[at] = kiln_test_activate(KILN_ACTIVATION_GELU, pre);
          bound[at] = kiln_test_activation_bound(KILN_ACTIVATION_GELU, pre,
                                                 unit(t) * fabs(pre), unit(t)) +
                      unit(t) * fabs(want[at]);
        }
    assert_kiln_ok(cpu_rt, kiln__gemm_epilogue(cpu_rt, &g));
    double *got = download(cb);
    expect_near("the gemm epilogue pass", got, want, bound, 82);
    free(got);
    kiln_buffer_destroy(cb), kiln_buffer_destroy(bb);
  }
}

/* The CPU shape unpacked (kiln_gemm_small): the cases whose op(B) is not
 * transposed, in float and double; the rest pack as before. Tiles past M's
 * and N's ends are where it could read out of bounds. */
static void test_oclgrind_gemm_small(void **state)
{
  (void)state;
  const kiln__tuning saved = cpu_rt->tuning->t;
  kiln__tuning t = saved;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
    t.gemm[v].small = 4096;
  kiln__runtime_set_tuning(cpu_rt, &t);
  gemm_cases_of(cpu_rt, KILN_F32);
  if (kiln_runtime_device(cpu_rt)->has_fp64)
    gemm_cases_of(cpu_rt, KILN_F64);
  kiln__runtime_set_tuning(cpu_rt, &saved);
}

/* Tiny products (kiln_gemm_direct): every case, transposes, layouts and
 * epilogues alike, in every type; an element of C a work-item, where a
 * stride read past A's or B's end would show. */
static void test_oclgrind_gemm_direct(void **state)
{
  (void)state;
  const kiln__tuning saved = cpu_rt->tuning->t;
  kiln__tuning t = saved;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
    t.gemm[v].direct = 4096;
  kiln__runtime_set_tuning(cpu_rt, &t);
  gemm_cases(cpu_rt);
  kiln__runtime_set_tuning(cpu_rt, &saved);
}

/* ---- reduce.cl ------------------------------------------------------------ */

static const kiln_reduce_op all_ops[] = {
  KILN_REDUCE_SUM, KILN_REDUCE_MEAN,   KILN_REDUCE_NORM2, KILN_REDUCE_MIN,
  KILN_REDUCE_MAX, KILN_REDUCE_ARGMIN, KILN_REDUCE_ARGMAX};

/* The reduction of x[(o * len + j) * inner + i] over j: the result and its
 * bound. Arg ops give the first index of the extreme, or of the first NaN. */
static void reduce_reference(kiln_reduce_op op, kiln_dtype out, const double *x,
                             size_t len, size_t inner, double *want, double *bound)
{
  double s = 0, mag = 0, e = x[0];
  size_t best = 0;
  for (size_t j = 0; j < len; j++) {
    double v = x[j * inner];
    s += op == KILN_REDUCE_NORM2 ? v * v : v;
    mag += op == KILN_REDUCE_NORM2 ? v * v : fabs(v);
    int nan_e = isnan(e), nan_v = isnan(v);
    int better = op == KILN_REDUCE_MIN || op == KILN_REDUCE_ARGMIN ? v < e : v > e;
    if (!nan_e && (nan_v || better)) {
      e = v;
      best = j;
    }
  }
  /* sums accumulate in double on Oclgrind (fp64), then round to out */
  double acc = (double)len * 0x1p-52 * mag;
  switch (op) {
  case KILN_REDUCE_SUM: *want = s, *bound = acc + unit(out) * fabs(s); break;
  case KILN_REDUCE_MEAN:
    *want = s / (double)len;
    *bound = (acc / (double)len) + unit(out) * fabs(*want) * 2;
    break;
  case KILN_REDUCE_NORM2:
    *want = sqrt(s), *bound = unit(out) * 2 * sqrt(s) + sqrt(acc);
    break;
  case KILN_REDUCE_MIN:
  case KILN_REDUCE_MAX: *want = e, *bound = 0; break;
  default: *want = (double)best, *bound = 0; break;
  }
}

/* One reduction of a view of `shape` along `axis` (or KILN_AXIS_ALL) at an
 * offset of 3 elements, every op, against the reference. */
static void reduce_view(kiln_runtime *rt, kiln_dtype t, unsigned ndim,
                        const size_t *shape, int32_t axis, int with_nan)
{
  size_t count = 1;
  for (unsigned i = 0; i < ndim; i++)
    count *= shape[i];
  size_t off = 3, outer = 1, len = count, inner = 1;
  if (axis != KILN_AXIS_ALL) {
    unsigned a = axis < 0 ? (unsigned)(axis + (int32_t)ndim) : (unsigned)axis;
    len = shape[a];
    for (unsigned i = 0; i < a; i++)
      outer *= shape[i];
    for (unsigned i = a + 1; i < ndim; i++)
      inner *= shape[i];
  }
  double *x = malloc((off + count) * sizeof *x);
  assert_non_null(x);
  for (size_t i = 0; i < off + count; i++)
    x[i] = t == KILN_I32 ? floor(rnd() * 2000) : rnd();
  if (with_nan) /* a NaN in the middle and at the end of the view */
    x[off + count / 2] = x[off + count - 1] = NAN;
  kiln_buffer *in = upload(rt, t, x, off + count);
  for (size_t o = 0; o < sizeof all_ops / sizeof *all_ops; o++) {
    kiln_reduce_op op = all_ops[o];
    kiln_dtype ot = kiln_reduce_out_dtype(op, t);
    size_t outputs = outer * inner;
    double *want = malloc(outputs * sizeof *want),
           *bound = malloc(outputs * sizeof *bound);
    assert_true(want && bound);
    for (size_t a = 0; a < outer; a++)
      for (size_t i = 0; i < inner; i++)
        reduce_reference(op, ot, x + off + a * len * inner + i, len, inner,
                         &want[a * inner + i], &bound[a * inner + i]);
    kiln_reduce_desc d;
    kiln_reduce_desc_init(&d, op, t, count);
    d.ndim = ndim;
    memcpy(d.shape, shape, ndim * sizeof *shape);
    d.axis = axis;
    d.offset = off;
    d.backend = KILN_BACKEND_KILN;
    kiln_buffer *out = NULL;
    assert_kiln_ok(rt, kiln_buffer_create(rt, ot, outputs, 0, &out));
    assert_kiln_ok(rt, kiln_reduce(rt, &d, in, out));
    double *got = download(out);
    char what[96];
    snprintf(what, sizeof what, "reduce %s of %s, %zu x %zu x %zu along %s",
             kiln_reduce_op_name(op), kiln_dtype_name(t), outer, len, inner,
             axis == KILN_AXIS_ALL ? "all" : "an axis");
    expect_near(what, got, want, bound, outputs);
    free(got), free(want), free(bound);
    kiln_buffer_destroy(out);
  }
  kiln_buffer_destroy(in);
  free(x);
}

static void reduce_cases(kiln_runtime *rt)
{
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64, KILN_I32};
  for (size_t t = 0; t < 4; t++) {
    int fl = types[t] != KILN_I32;
    reduce_view(rt, types[t], 1, (size_t[]){37}, KILN_AXIS_ALL,
                0); /* chunks end inside */
    reduce_view(rt, types[t], 1, (size_t[]){5}, KILN_AXIS_ALL,
                fl); /* fewer than chunks */
    reduce_view(rt, types[t], 2, (size_t[]){3, 29}, -1,
                fl); /* few rows: two stages each */
    reduce_view(rt, types[t], 3, (size_t[]){3, 5, 4}, 1, 0); /* a work-item an output */
    reduce_view(rt, types[t], 2, (size_t[]){19, 3}, 0, fl);
  }
}

static void test_oclgrind_reduce_gpu_shape(void **state)
{
  (void)state;
  reduce_cases(gpu_rt);
}

/* The GPU shape's corners: groups of 32, two of them, where 1100 elements
 * run the loop of 4 loads in flight, its remainder, the unaligned head (the
 * offset of 3) and the tail; and one group of 1024 (float32 and int32),
 * most of whose work-items read nothing, through the whole local tree. */
static void test_oclgrind_reduce_gpu_corners(void **state)
{
  (void)state;
  static const unsigned corners[][2] = {{32, 2}, {1024, 1}};
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64, KILN_I32};
  const kiln__tuning saved = gpu_rt->tuning->t;
  for (size_t i = 0; i < sizeof corners / sizeof *corners; i++) {
    kiln__tuning t = saved;
    t.reduce = (kiln__reduce_tuning){
      .gpu_shape = 1, .chunks = 1, .wg = corners[i][0], .groups = corners[i][1]};
    kiln__str why = {0};
    if (kiln__tuning_check(kiln_runtime_device(gpu_rt), &t, &why) != 0) {
      fprintf(stderr, "# corner %zu cannot run on Oclgrind: %s\n", i,
              kiln__str_get(&why));
      kiln__str_free(&why);
      continue;
    }
    kiln__runtime_set_tuning(gpu_rt, &t);
    for (size_t k = 0; k < 4; k++) {
      if (i && (types[k] == KILN_F16 || types[k] == KILN_F64))
        continue;
      int fl = types[k] != KILN_I32;
      reduce_view(gpu_rt, types[k], 1, (size_t[]){i ? 45 : 1100}, KILN_AXIS_ALL, fl);
      reduce_view(gpu_rt, types[k], 2, (size_t[]){2, 67}, -1, fl);
      if (!i) /* 20 rows side by side, each at least 4 x 32 long */
        reduce_view(gpu_rt, types[k], 2, (size_t[]){20, 131}, -1, fl);
    }
  }
  kiln__runtime_set_tuning(gpu_rt, &saved);
}

static void test_oclgrind_reduce_cpu_shape(void **state)
{
  (void)state;
  reduce_cases(cpu_rt);
}

/* ---- conv.cl -------------------------------------------------------------- */

/* want and bound for desc d, from conv-case.h's reference; y has p x q
 * images. */
static void conv_reference(const kiln_conv2d_desc *d, size_t p, size_t q, const double *x,
                           const double *wt, const double *bias, double *want,
                           double *bound)
{
  size_t ny = d->n * d->k * p * q, terms = d->c / d->groups * d->r * d->s;
  double arith = d->dtype == KILN_F64 ? 0x1p-52 : 0x1p-24;
  conv_case_reference(d, x, wt, bias, want, bound); /* sums, magnitudes */
  kiln_activation act = d->relu ? KILN_ACTIVATION_RELU : d->activation;
  for (size_t o = 0; o < ny; o++) {
    double pre = want[o];
    want[o] = kiln_test_activate(act, pre);
    bound[o] = kiln_test_activation_bound(act, pre,
                                          arith * (double)(terms + 2) * bound[o], arith) +
               unit(d->dtype) * fabs(want[o]);
  }
}

static void conv_one(kiln_runtime *rt, kiln_dtype t, kiln_tensor_layout layout,
                     kiln_backend backend, const conv_case *cc)
{
  kiln_conv2d_desc d = conv_case_desc(cc, t, layout);
  d.backend = backend;
  size_t p, q, kp, kq;
  conv_case_output(&d, &p, &q);
  assert_kiln_ok(NULL, kiln_conv2d_output(&d, &kp, &kq));
  assert_true(kp == p && kq == q);
  size_t nx = cc->n * cc->c * cc->h * cc->w,
         nw = cc->k * (cc->c / cc->groups) * cc->r * cc->s;
  size_t ny = cc->n * cc->k * p * q;
  double *x = malloc(nx * sizeof *x), *wt = malloc(nw * sizeof *wt), bias[16];
  double *want = malloc(ny * sizeof *want), *bound = malloc(ny * sizeof *bound);
  assert_true(x && wt && want && bound && cc->k <= 16);
  for (size_t i = 0; i < nx; i++)
    x[i] = rnd();
  for (size_t i = 0; i < nw; i++)
    wt[i] = rnd();
  for (size_t i = 0; i < cc->k; i++)
    bias[i] = rnd();
  kiln_buffer *xb = upload(rt, t, x, nx), *wb = upload(rt, t, wt, nw);
  kiln_buffer *bb = cc->bias ? upload(rt, t, bias, cc->k) : NULL, *yb = NULL;
  conv_reference(&d, p, q, x, wt, cc->bias ? bias : NULL, want, bound);
  /* y is written whole: no bias, no relu means no epilogue reads it */
  assert_kiln_ok(rt, kiln_buffer_create(rt, t, ny, 0, &yb));
  assert_kiln_ok(rt, kiln_conv2d(rt, &d, xb, wb, bb, yb));
  double *got = download(yb);
  char what[128];
  snprintf(what, sizeof what, "conv2d %s %s %s %zux%zux%zux%zu k%zu %zux%zu groups %zu",
           kiln_backend_name(backend), kiln_dtype_name(t),
           layout == KILN_NHWC ? "NHWC" : "NCHW", cc->n, cc->c, cc->h, cc->w, cc->k,
           cc->r, cc->s, cc->groups);
  expect_near(what, got, want, bound, ny);
  free(got), free(x), free(wt), free(want), free(bound);
  kiln_buffer_destroy(xb), kiln_buffer_destroy(wb), kiln_buffer_destroy(bb);
  kiln_buffer_destroy(yb);
}

static const conv_case conv_cases[] = {
  /* stride, asymmetric padding, dilation, bias and ReLU */
  {2, 3, 5, 6, 4, 3, 2, 2, 1, 1, 0, 1, 2, 1, 2, 1, 1, 1},
  /* two groups, no bias, GELU */
  {1, 4, 4, 5, 6, 2, 3, 1, 2, 0, 1, 1, 0, 1, 1, 2, 0, KILN_ACTIVATION_GELU},
  /* ReLU without bias */
  {3, 2, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1},
  /* depthwise, multiplier 2: the GPU shape's kiln_conv_dw, its staged
   * tile's halo past every edge (races, out-of-bounds reads) */
  {1, 2, 5, 7, 4, 3, 3, 2, 1, 1, 0, 2, 1, 1, 2, 2, 1, 1},
  /* 8 output channels, a depth of 18: the GPU shape's kiln_conv_igemm,
   * two slices of depth, the last ragged, tiles past the output */
  {1, 2, 4, 5, 8, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 2},
};

static void conv_cases_on(kiln_runtime *rt, const kiln_dtype *types, size_t ntypes)
{
  static const kiln_backend backends[] = {KILN_BACKEND_DIRECT, KILN_BACKEND_IM2COL};
  static const kiln_tensor_layout layouts[] = {KILN_NCHW, KILN_NHWC};
  for (size_t t = 0; t < ntypes; t++)
    for (size_t b = 0; b < 2; b++)
      for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++)
          conv_one(rt, types[t], layouts[l], backends[b], &conv_cases[i]);
}

static void test_oclgrind_conv_gpu_shape(void **state)
{
  (void)state;
  static const kiln_dtype types[] = {KILN_F32, KILN_F16, KILN_F64};
  conv_cases_on(gpu_rt, types, 3);
}

/* The convolution's parameters that kiln_tune() may pick, float only:
 * blocks with tails (3 columns, 5 channels a work-item) in 4 x 2 groups
 * (the global size padded past the output), and 16 columns by 4 channels
 * (64 accumulators) in the driver's groups; both with the smallest im2col
 * step, which cuts the last case's 93 KB image into chunks of rows. */
static void test_oclgrind_conv_blocks(void **state)
{
  (void)state;
  static const kiln__conv_tuning sets[] = {{3, 5, 4, 2, 64}, {16, 4, 0, 0, 64}};
  static const conv_case chunked = {1, 8, 19, 17, 4, 3, 3, 1, 1,
                                    1, 1, 1,  1,  1, 1, 1, 1, 0};
  static const kiln_backend backends[] = {KILN_BACKEND_DIRECT, KILN_BACKEND_IM2COL};
  static const kiln_tensor_layout layouts[] = {KILN_NCHW, KILN_NHWC};
  const kiln__tuning saved = gpu_rt->tuning->t;
  for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
    kiln__tuning t = saved;
    t.conv = sets[i];
    kiln__str why = {0};
    if (kiln__tuning_check(kiln_runtime_device(gpu_rt), &t, &why) != 0) {
      fprintf(stderr, "# conv set %zu cannot run on Oclgrind: %s\n", i,
              kiln__str_get(&why));
      kiln__str_free(&why);
      continue;
    }
    kiln__runtime_set_tuning(gpu_rt, &t);
    for (size_t b = 0; b < 2; b++)
      for (size_t l = 0; l < 2; l++) {
        for (size_t c = 0; c < sizeof conv_cases / sizeof *conv_cases; c++)
          conv_one(gpu_rt, KILN_F32, layouts[l], backends[b], &conv_cases[c]);
        conv_one(gpu_rt, KILN_F32, layouts[l], backends[b], &chunked);
      }
  }
  kiln__runtime_set_tuning(gpu_rt, &saved);
}

/* im2col writes the GEMM's packed panels, whose shape follows the GEMM's. */
static void test_oclgrind_conv_cpu_shape(void **state)
{
  (void)state;
  static const kiln_dtype types[] = {KILN_F32, KILN_F64};
  conv_cases_on(cpu_rt, types, 2);
}

/* ---- fft.cl and scale.cl --------------------------------------------------- */

/* The DFT of `batch` complex arrays of shape[0..ndim) (C order, re, im
 * pairs), summed directly, with numpy's scaling for norm, and its bound. */
static void dft_nd(const double *x, size_t batch, unsigned ndim, const size_t *shape,
                   int inverse, kiln_fft_norm norm, double *want, double *bound,
                   kiln_dtype t)
{
  size_t n = 1;
  for (unsigned a = 0; a < ndim; a++)
    n *= shape[a];
  double scale = norm == KILN_FFT_NORM_ORTHO ? 1 / sqrt((double)n)
                 : (norm == KILN_FFT_NORM_BACKWARD) == (inverse != 0) ? 1 / (double)n
                                                                      : 1;
  double sign = inverse ? 1 : -1, log2n = log2((double)n) + 1;
  for (size_t b = 0; b < batch; b++) {
    const double *in = x + 2 * b * n;
    double mag = 0;
    for (size_t j = 0; j < n; j++)
      mag += hypot(in[2 * j], in[2 * j + 1]);
    for (size_t k = 0; k < n; k++) {
      double re = 0, im = 0;
      for (size_t j = 0; j < n; j++) {
        double turns = 0; /* sum over the axes of j_a k_a / n_a, mod 1 */
        for (size_t a = ndim, jr = j, kr = k; a-- > 0; jr /= shape[a], kr /= shape[a])
          turns +=
            (double)(jr % shape[a] * (kr % shape[a]) % shape[a]) / (double)shape[a];
        double ang = sign * 2 * CL_M_PI * turns;
        re += in[2 * j] * cos(ang) - in[2 * j + 1] * sin(ang);
        im += in[2 * j] * sin(ang) + in[2 * j + 1] * cos(ang);
      }
      want[2 * (b * n + k)] = re * scale;
      want[2 * (b * n + k) + 1] = im * scale;
      bound[2 * (b * n + k)] = bound[2 * (b * n + k) + 1] =
        8 * unit(t) * log2n * mag * scale + 1e-13 * mag;
    }
  }
}

/* The DFT of `rows` complex rows of length n: dft_nd() in one dimension. */
static void dft(const double *x, size_t rows, size_t n, int inverse, kiln_fft_norm norm,
                double *want, double *bound, kiln_dtype t)
{
  dft_nd(x, rows, 1, &n, inverse, norm, want, bound, t);
}

/* A C2C of `batch` arrays of shape[0..ndim) on kiln's own kernels. */
static void fft_c2c_nd(kiln_runtime *rt, kiln_dtype t, unsigned ndim, const size_t *shape,
                       size_t batch, int inverse, kiln_fft_norm norm)
{
  kiln_dtype ct = t == KILN_F64 ? KILN_C64 : KILN_C32;
  size_t n = 1;
  for (unsigned a = 0; a < ndim; a++)
    n *= shape[a];
  size_t reals = 2 * n * batch;
  double *x = malloc(reals * sizeof *x), *want = malloc(reals * sizeof *want);
  double *bound = malloc(reals * sizeof *bound);
  assert_true(x && want && bound);
  for (size_t i = 0; i < reals; i++)
    x[i] = rnd();
  /* complex buffers hold (re, im) pairs of the real type: upload as reals */
  kiln_buffer *real_in = upload(rt, t, x, reals), *in = NULL, *out = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, ct, n * batch, 0, &in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, ct, n * batch, 0, &out));
  void *host = malloc(reals * kiln_dtype_size(t));
  assert_non_null(host);
  assert_kiln_ok(rt, kiln_buffer_read(real_in, 0, reals, host));
  assert_kiln_ok(rt, kiln_buffer_write(in, 0, n * batch, host));
  dft_nd(x, batch, ndim, shape, inverse, norm, want, bound, t);
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, t, shape[0]);
  d.ndim = ndim;
  for (unsigned a = 0; a < ndim; a++)
    d.shape[a] = shape[a];
  d.batch = batch;
  d.inverse = inverse;
  d.norm = norm;
  d.backend = KILN_BACKEND_KILN;
  assert_kiln_ok(rt, kiln_fft(rt, &d, in, out));
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, n * batch, host));
  double *got = malloc(reals * sizeof *got);
  assert_non_null(got);
  for (size_t i = 0; i < reals; i++)
    got[i] = kiln_test_get(t, host, i);
  char what[96];
  snprintf(what, sizeof what, "fft c2c %s %zux%zux%zu batch %zu%s norm %d",
           kiln_dtype_name(t), shape[0], ndim > 1 ? shape[1] : 1, ndim > 2 ? shape[2] : 1,
           batch, inverse ? " inverse" : "", (int)norm);
  expect_near(what, got, want, bound, reals);
  free(x), free(want), free(bound), free(host), free(got);
  kiln_buffer_destroy(real_in), kiln_buffer_destroy(in), kiln_buffer_destroy(out);
}

static void fft_c2c(kiln_runtime *rt, kiln_dtype t, size_t n, size_t batch, int inverse,
                    kiln_fft_norm norm)
{
  fft_c2c_nd(rt, t, 1, &n, batch, inverse, norm);
}

/* Every radix (2, 4, 8, 4 x 4, 32, 8 then 32, and 4 x 4 then a radix-32
 * pass of stride 16, kiln_fft_r32w), both directions and the scalings that
 * launch scale.cl; float64 too; the CPU shapes' vector kernels. */
static void test_oclgrind_fft_c2c(void **state)
{
  (void)state;
  static const size_t lengths[] = {2, 4, 8, 16, 32, 256, 512};
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++)
    fft_c2c(gpu_rt, KILN_F32, lengths[i], 3, (int)(i & 1), KILN_FFT_NORM_BACKWARD);
  fft_c2c(gpu_rt, KILN_F32, 16, 1, 0, KILN_FFT_NORM_ORTHO);
  fft_c2c(gpu_rt, KILN_F64, 8, 2, 1, KILN_FFT_NORM_BACKWARD);
  fft_c2c(gpu_rt, KILN_F64, 64, 1, 0, KILN_FFT_NORM_FORWARD);
  fft_c2c(gpu_rt, KILN_F64, 512, 1, 1, KILN_FFT_NORM_BACKWARD);
  /* the CPU's vector kernels: the first pass kiln_fft_r16v1, then r8v
   * (128), r16v (256), r16v and r2v (512), r16v and r4v (1024), r256v
   * (4096); on Oclgrind's one compute unit 8192's 4 work-items of radix
   * 256 take the first pass, kiln_fft_r256v1, then r16v and r2v */
  fft_c2c(cpu_rt, KILN_F32, 128, 2, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c(cpu_rt, KILN_F32, 256, 1, 1, KILN_FFT_NORM_ORTHO);
  fft_c2c(cpu_rt, KILN_F32, 512, 1, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c(cpu_rt, KILN_F32, 1024, 2, 1, KILN_FFT_NORM_BACKWARD);
  fft_c2c(cpu_rt, KILN_F32, 4096, 1, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c(cpu_rt, KILN_F32, 8192, 1, 1, KILN_FFT_NORM_FORWARD);
  /* whole rows in one launch (kiln_fft_rowv): its last pass of radix 8
   * (128), 16 (256), and 2 or 4 after a radix-16 pass between the private
   * arrays (512, 1024) */
  kiln__tuning t = cpu_rt->tuning->t;
  t.fft.row_max = 1024;
  kiln__runtime_set_tuning(cpu_rt, &t);
  fft_c2c(cpu_rt, KILN_F32, 128, 3, 1, KILN_FFT_NORM_BACKWARD);
  fft_c2c(cpu_rt, KILN_F32, 256, 1, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c(cpu_rt, KILN_F32, 512, 1, 1, KILN_FFT_NORM_ORTHO);
  fft_c2c(cpu_rt, KILN_F32, 1024, 2, 0, KILN_FFT_NORM_BACKWARD);
  t.fft.row_max = 0;
  kiln__runtime_set_tuning(cpu_rt, &t);
}

/* 2-D and 3-D: the column passes (kiln_fft_col_r<R>) of every radix in
 * both types: 2 (8 x 2 x 4, 2 x 4), 4 x 4 (16 x 8), 4 and 8 (8 x 4 x 2), 8
 * (8 x 2 x 4) and 32 (32 x 2). */
static void test_oclgrind_fft_c2c_nd(void **state)
{
  (void)state;
  fft_c2c_nd(gpu_rt, KILN_F32, 2, (size_t[]){16, 8}, 2, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c_nd(gpu_rt, KILN_F32, 2, (size_t[]){32, 2}, 1, 1, KILN_FFT_NORM_BACKWARD);
  fft_c2c_nd(gpu_rt, KILN_F32, 3, (size_t[]){8, 2, 4}, 1, 0, KILN_FFT_NORM_ORTHO);
  fft_c2c_nd(gpu_rt, KILN_F64, 2, (size_t[]){32, 2}, 1, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c_nd(gpu_rt, KILN_F64, 3, (size_t[]){8, 4, 2}, 1, 1, KILN_FFT_NORM_FORWARD);
  fft_c2c_nd(gpu_rt, KILN_F64, 2, (size_t[]){2, 4}, 2, 1, KILN_FFT_NORM_BACKWARD);
}

/* The local-memory kernels (cl/fft_local.cl) with a local room of 64
 * points: whole sequences (2 to 64, radix 8 then the rest; radix 16 and 4
 * too), groups of several sequences (local_cols 4), two launches with the
 * twiddles between (256 = 16 x 16, 2048 = 32 x 64; float64's room of 32:
 * 128 = 8 x 16), and columns whole and split (8 x 4, 128 x 2). */
static void test_oclgrind_fft_local(void **state)
{
  (void)state;
  kiln__tuning t = gpu_rt->tuning->t, keep = t;
  t.fft.local_max = 64, t.fft.local_radix = 8, t.fft.local_cols = 4;
  kiln__runtime_set_tuning(gpu_rt, &t);
  static const size_t lengths[] = {2, 8, 32, 64, 256, 2048};
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++)
    fft_c2c(gpu_rt, KILN_F32, lengths[i], 3, (int)(i & 1), KILN_FFT_NORM_BACKWARD);
  fft_c2c(gpu_rt, KILN_F64, 128, 1, 1, KILN_FFT_NORM_BACKWARD);
  fft_c2c_nd(gpu_rt, KILN_F32, 2, (size_t[]){8, 4}, 3, 0, KILN_FFT_NORM_BACKWARD);
  fft_c2c_nd(gpu_rt, KILN_F32, 2, (size_t[]){128, 2}, 1, 1, KILN_FFT_NORM_ORTHO);
  t.fft.local_radix = 16;
  kiln__runtime_set_tuning(gpu_rt, &t);
  fft_c2c(gpu_rt, KILN_F32, 64, 1, 0, KILN_FFT_NORM_BACKWARD);
  t.fft.local_radix = 4, t.fft.local_cols = 1;
  kiln__runtime_set_tuning(gpu_rt, &t);
  fft_c2c(gpu_rt, KILN_F32, 32, 2, 1, KILN_FFT_NORM_BACKWARD);
  kiln__runtime_set_tuning(gpu_rt, &keep);
}

/* R2C and C2R as complex transforms (src/ops/fft_real.c), the path kiln_fft()
 * takes for shapes no backend runs, called directly on a power-of-two length
 * so that its C2C runs on kiln's own kernels. */
static void fft_real(kiln_runtime *rt, kiln_dtype t, kiln_fft_kind kind, size_t n,
                     size_t batch)
{
  kiln_dtype ct = t == KILN_F64 ? KILN_C64 : KILN_C32;
  size_t h = n / 2 + 1, full = 2 * n * batch;
  double *z = malloc(full * sizeof *z), *want = malloc(full * sizeof *want);
  double *bound = malloc(full * sizeof *bound);
  assert_true(z && want && bound);
  kiln_buffer *in = NULL, *out = NULL;
  if (kind == KILN_FFT_R2C) { /* x real: z = (x, 0) */
    double *x = malloc(n * batch * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n * batch; i++)
      x[i] = rnd();
    in = upload(rt, t, x, n * batch);
    for (size_t i = 0; i < n * batch; i++)
      z[2 * i] = x[i], z[2 * i + 1] = 0;
    free(x);
    assert_kiln_ok(rt, kiln_buffer_create(rt, ct, h * batch, 0, &out));
  } else { /* a Hermitian half spectrum: the DFT of real data */
    double *x = malloc(full * sizeof *x), *xb = malloc(full * sizeof *xb);
    double *half = malloc(2 * h * batch * sizeof *half);
    assert_true(x && xb && half);
    for (size_t i = 0; i < n * batch; i++)
      x[2 * i] = rnd(), x[2 * i + 1] = 0;
    dft(x, batch, n, 0, KILN_FFT_NORM_BACKWARD, z, xb, t);
    for (size_t b = 0; b < batch; b++)
      for (size_t k = 0; k < 2 * h; k++)
        half[2 * h * b + k] = z[2 * n * b + k];
    kiln_buffer *real_half = upload(rt, t, half, 2 * h * batch);
    void *host = malloc(2 * h * batch * kiln_dtype_size(t));
    assert_non_null(host);
    assert_kiln_ok(rt, kiln_buffer_read(real_half, 0, 2 * h * batch, host));
    assert_kiln_ok(rt, kiln_buffer_create(rt, ct, h * batch, 0, &in));
    assert_kiln_ok(rt, kiln_buffer_write(in, 0, h * batch, host));
    /* the input the device holds, rounded, extended to the full spectrum */
    for (size_t b = 0; b < batch; b++)
      for (size_t k = 0; k < n; k++) {
        size_t src = k < h ? k : n - k;
        z[2 * (n * b + k)] = half[2 * (h * b + src)];
        z[2 * (n * b + k) + 1] = (k < h ? 1 : -1) * half[2 * (h * b + src) + 1];
      }
    free(host), free(x), free(xb), free(half);
    kiln_buffer_destroy(real_half);
    assert_kiln_ok(rt, kiln_buffer_create(rt, t, n * batch, 0, &out));
  }
  dft(z, batch, n, kind == KILN_FFT_C2R, KILN_FFT_NORM_BACKWARD, want, bound, t);
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, t, n);
  d.kind = kind;
  d.batch = batch;
  d.inverse = kind == KILN_FFT_C2R;
  kiln__profile_scope ps = {.rt = NULL}; /* not recording */
  assert_kiln_ok(rt, kiln__fft_real_via_complex(rt, &d, in, out, &ps));
  double *got = kind == KILN_FFT_C2R ? download(out) : NULL;
  size_t cnt = kiln_buffer_count(out), stride = kind == KILN_FFT_R2C ? h : n;
  unsigned char *raw = malloc(cnt * kiln_dtype_size(ct));
  assert_non_null(raw);
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, cnt, raw));
  for (size_t b = 0; b < batch; b++)
    for (size_t k = 0; k < stride; k++) {
      char what[80];
      snprintf(what, sizeof what, "fft %s %s n=%zu row %zu point %zu",
               kind == KILN_FFT_R2C ? "r2c" : "c2r", kiln_dtype_name(t), n, b, k);
      size_t w = 2 * (b * n + k);
      if (kind == KILN_FFT_R2C) {
        double g[2] = {kiln_test_get(t, raw, 2 * (b * h + k)),
                       kiln_test_get(t, raw, 2 * (b * h + k) + 1)};
        expect_near(what, g, want + w, bound + w, 2);
      } else {
        expect_near(what, got + b * n + k, want + w, bound + w, 1);
      }
    }
  free(got), free(raw), free(z), free(want), free(bound);
  kiln_buffer_destroy(in), kiln_buffer_destroy(out);
}

static void test_oclgrind_fft_real(void **state)
{
  (void)state;
  fft_real(gpu_rt, KILN_F32, KILN_FFT_R2C, 16, 3);
  fft_real(gpu_rt, KILN_F32, KILN_FFT_C2R, 8, 2);
  fft_real(gpu_rt, KILN_F64, KILN_FFT_R2C, 8, 1);
  fft_real(gpu_rt, KILN_F64, KILN_FFT_C2R, 16, 2);
}

/* ---- every kernel ran ----------------------------------------------------- */

static int ncl_files;
static char **cl_files;

/* The text of a file with its comments blanked, so that a kernel named in a
 * comment is not taken for one. */
static char *read_code(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *s = calloc((size_t)size + 1, 1);
  if (s && fread(s, 1, (size_t)size, f) != (size_t)size) {
    free(s);
    s = NULL;
  }
  fclose(f);
  for (char *p = s; p && *p;) {
    char *end = p + 1;
    if (p[0] == '/' && p[1] == '*')
      end = strstr(p + 2, "*/") ? strstr(p + 2, "*/") + 2 : p + strlen(p);
    else if (p[0] == '/' && p[1] == '/')
      end = strchr(p, '\n') ? strchr(p, '\n') : p + strlen(p);
    else {
      p++;
      continue;
    }
    memset(p, ' ', (size_t)(end - p));
    p = end;
  }
  return s;
}

static int ident(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_';
}

static const char *skip_space(const char *p)
{
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\\')
    p++;
  return p;
}

/* Whether a kernel whose name is `name` (or, where `prefix`, starts with
 * it) was launched. */
static void check_launched(const char *path, const char *name, int prefix)
{
  int ok = 0;
  for (size_t i = 0; i < nlaunched && !ok; i++)
    ok = prefix ? !strncmp(launched[i], name, strlen(name)) : !strcmp(launched[i], name);
  if (!ok)
    fail_msg("%s defines kernel %s%s, which never ran on Oclgrind", path, name,
             prefix ? "... (made by a macro)" : "");
}

/* Each kernel definition of a cl/ file (`kernel` or `__kernel`, attributes,
 * `void`, a name): a literal name must have been launched; a name made by a
 * macro (kiln_convert_##FROM##_##TO, or NAME(kiln_scale) for the variant of
 * a pass, cl/prelude.cl) must start a launched one. A definition named
 * NAME(FNAME) stands for every `#define FNAME kiln_x` before it (cl/fft.cl
 * names its pass kernels so, under one header). Returns how many
 * definitions there are. */
static int check_definitions(const char *path)
{
  char *code = read_code(path);
  if (!code)
    fail_msg("cannot read %s", path);
  int found = 0;
  for (const char *p = code; (p = strstr(p, "#define FNAME")); p += 13) {
    const char *q = skip_space(p + 13);
    char name[128];
    size_t n = 0;
    while (ident(q[n]) && n + 3 < sizeof name)
      n++;
    memcpy(name, q, n);
    memcpy(name + n, "_", 2);
    check_launched(path, name, 1);
    found++;
  }
  for (const char *p = code; (p = strstr(p, "kernel")); p += 6) {
    const char *start = p >= code + 2 && !strncmp(p - 2, "__", 2) ? p - 2 : p;
    if ((start > code && ident(start[-1])) || ident(p[6]))
      continue;
    const char *q = skip_space(p + 6);
    if (!strncmp(q, "__attribute__", 13)) { /* skip its balanced parentheses */
      q += 13;
      int depth = 0;
      do {
        depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
      } while (*q && *q++ && depth > 0);
      q = skip_space(q);
    }
    if (strncmp(q, "void", 4) || ident(q[4]))
      continue;
    q = skip_space(q + 4);
    if (!strncmp(q, "NAME(FNAME)", 11))
      continue; /* counted by its #defines above */
    char name[128];
    size_t n = 0;
    while ((ident(q[n]) || q[n] == '#') && n + 1 < sizeof name)
      n++;
    if (n == 4 && !strncmp(q, "NAME(", 5)) { /* NAME(kiln_x): kiln_x_<variant> */
      q += 5;
      for (n = 0; ident(q[n]) && n + 3 < sizeof name; n++)
        ;
      memcpy(name, q, n);
      memcpy(name + n, "_##", 4);
    } else {
      memcpy(name, q, n);
      name[n] = 0;
    }
    char *paste = strstr(name, "##");
    if (paste)
      *paste = 0;
    check_launched(path, name, paste != NULL);
    found++;
  }
  free(code);
  return found;
}

/* The kernels kiln's program `name` holds on Oclgrind, each launched. */
static size_t check_program(kiln_runtime *rt, const char *name)
{
  kiln_program *p = NULL;
  assert_kiln_ok(rt, kiln_program_create_builtin(rt, name, &p));
  size_t size = 0;
  cl_program prog = kiln__program_cl(p);
  assert_int_equal(clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &size),
                   CL_SUCCESS);
  char *names = calloc(size + 1, 1);
  assert_non_null(names);
  assert_int_equal(clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, size, names, NULL),
                   CL_SUCCESS);
  size_t count = 0;
  for (char *save = NULL, *k = strtok_r(names, ";", &save); k;
       k = strtok_r(NULL, ";", &save), count++)
    if (!was_launched(k))
      fail_msg("kernel %s of cl/%s.cl never ran on Oclgrind", k, name);
  free(names);
  kiln_program_destroy(p);
  return count;
}

static void test_oclgrind_every_kernel_ran(void **state)
{
  (void)state;
  /* every cl/ file is one of kiln's programs, and the other way round */
  assert_int_equal((size_t)ncl_files, kiln_builtin_count());
  size_t kernels = 0;
  for (size_t i = 0; i < kiln_builtin_count(); i++) {
    size_t n = check_program(gpu_rt, kiln_builtin_name(i));
    if (!n)
      fail_msg("cl/%s.cl has no kernel on Oclgrind", kiln_builtin_name(i));
    kernels += n;
  }
  for (int i = 0; i < ncl_files; i++) {
    const char *base =
      strrchr(cl_files[i], '/') ? strrchr(cl_files[i], '/') + 1 : cl_files[i];
    int known = 0;
    for (size_t j = 0; j < kiln_builtin_count() && !known; j++) {
      const char *b = kiln_builtin_name(j);
      known = !strncmp(base, b, strlen(b)) && !strcmp(base + strlen(b), ".cl");
    }
    if (!known)
      fail_msg("%s is not one of kiln's embedded programs", cl_files[i]);
    if (!check_definitions(cl_files[i]))
      fail_msg("%s defines no kernel", cl_files[i]);
  }
  /* stdout: stderr is Oclgrind's, and any text there fails the test */
  printf("# %zu kernels in %zu programs, all launched on Oclgrind\n", kernels,
         kiln_builtin_count());
}

int main(int argc, char **argv)
{
  uninit = argc > 1 && !strcmp(argv[1], "--uninit");
  cl_files = argv + 1 + uninit;
  ncl_files = argc - 1 - uninit;
  /* Oclgrind reads these when the ICD loader loads it: set before any
   * OpenCL call. A log file or quick mode would hide what it finds.
   * Out-of-bounds accesses are always checked, races and the API here.
   * The uninitialised-value check is a run of its own (--uninit): Oclgrind
   * 21.10 (Debian 12) cannot follow LLVM's `freeze`, which optimised kernels
   * that divide contain ("OCLGRIND FATAL ERROR (Uninitialized.cpp:1805)
   * Unsupported instruction: freeze"), so kernels are built with
   * -cl-opt-disable there, and run about 10 times slower. */
  setenv("OCLGRIND_DATA_RACES", "1", 1);
  setenv("OCLGRIND_CHECK_API", "1", 1);
  if (uninit) {
    setenv("OCLGRIND_UNINITIALIZED", "1", 1);
    setenv("OCLGRIND_BUILD_OPTIONS", "-cl-opt-disable", 1);
  } else {
    unsetenv("OCLGRIND_UNINITIALIZED");
    unsetenv("OCLGRIND_BUILD_OPTIONS");
  }
  unsetenv("OCLGRIND_QUICK");
  unsetenv("OCLGRIND_LOG");
  unsetenv("OCLGRIND_MAX_ERRORS");
  if (ncl_files < 1) {
    fprintf(stderr, "usage: test-oclgrind [--uninit] FILE.cl...\n");
    return 1;
  }
  kiln_runtime *probe = oclgrind_runtime();
  if (!probe) {
    fprintf(stderr, "Oclgrind is not registered: %s\n", kiln_last_error(NULL));
    return getenv("CI") ? 1 : KILN_TEST_SKIP;
  }
  kiln_runtime_destroy(probe);
#define T(f) cmocka_unit_test_setup_teardown(f, test_setup, test_teardown)
  const struct CMUnitTest tests[] = {
    T(test_oclgrind_uninit_check_is_on), /* --uninit only */
    T(test_oclgrind_convert),
    T(test_oclgrind_elementwise),
    T(test_oclgrind_gemm_gpu_shape),
    T(test_oclgrind_gemm_gpu_corners),
    T(test_oclgrind_gemm_cpu_shape),
    T(test_oclgrind_gemm_small),
    T(test_oclgrind_gemm_direct),
    T(test_oclgrind_gemm_epilogue_pass),
    T(test_oclgrind_reduce_gpu_shape),
    T(test_oclgrind_reduce_gpu_corners),
    T(test_oclgrind_reduce_cpu_shape),
    T(test_oclgrind_conv_gpu_shape),
    T(test_oclgrind_conv_blocks),
    T(test_oclgrind_conv_cpu_shape),
    T(test_oclgrind_fft_c2c),
    T(test_oclgrind_fft_c2c_nd),
    T(test_oclgrind_fft_local),
    T(test_oclgrind_fft_real),
    T(test_oclgrind_every_kernel_ran), /* last: counts what the others ran */
  };
  size_t first = uninit ? 0 : 1, count = sizeof tests / sizeof tests[0] - first;
  return _cmocka_run_group_tests("tests", tests + first, count, group_setup,
                                 group_teardown);
}
