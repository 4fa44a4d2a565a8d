/*
 * test-fft-memory.c — the device memory of cached FFT plans in kiln's
 * accounting (kiln issue 17): plan_bytes in kiln_memory_stats() after a
 * multi-pass plan of kiln's own kernels, a VkFFT plan (its lookup tables,
 * Bluestein's buffers, an inverse's scratch) and a clFFT plan with a
 * temporary buffer, where built in; kiln_memory_trim() taking it back to 0,
 * and the next transform still right; a budget that holds the buffers but
 * not the plan's scratch, where kiln_fft() fails with
 * KILN_ERR_OUT_OF_MEMORY naming the scratch, leaks nothing and leaves the
 * runtime usable; a plan that fits only after the pool is trimmed, or only
 * after an unused plan is released; and threads running one plan while
 * another trims (ci/tsan.sh runs that case under ThreadSanitizer).
 *
 * Every result is checked against a naive DFT computed here in double, to
 * test-fft.c's bound: each element within 20 (log2 N + 2) u ||x||_2 s +
 * 2 u |y_k| (u float32's unit roundoff, s the norm's scale); test-fft.c
 * says where it comes from. An argument, e.g. "*threads*", runs only the
 * tests whose names match it.
 */
#include "common.h"

#include <math.h>
#include <pthread.h>

#include "kiln_config.h"

#if !defined(HAVE_VKFFT)
#  define HAVE_VKFFT 0
#endif
#if !defined(HAVE_CLFFT)
#  define HAVE_CLFFT 0
#endif

#define PI 3.14159265358979323846

/* A runtime with a budget of limit bytes (0: the device's memory), the pool
 * off when no_pool (buffers of exactly their bytes, for budgets to the
 * byte), whatever the environment says; kernels cached where meson says. */
static kiln_runtime *runtime_with(uint64_t limit, int no_pool)
{
  kiln_options o;
  kiln_options_init(&o);
  o.ignore_env = 1;
  o.cache_dir = getenv("KILN_CACHE_DIR");
  o.memory_limit = limit;
  o.no_memory_pool = no_pool;
  return kiln_test_runtime_with(&o);
}

/* ---- one transform and its reference ------------------------------------ */

/* A batch of complex float32 transforms of n points, in and out. */
typedef struct fft_io {
  kiln_runtime *rt;
  size_t n, batch;
  float *x; /* the input, interleaved */
  kiln_buffer *in, *out;
} fft_io;

static fft_io make_io(kiln_runtime *rt, size_t n, size_t batch, uint64_t seed)
{
  fft_io io = {.rt = rt, .n = n, .batch = batch};
  size_t m = 2 * n * batch;
  io.x = malloc(m * sizeof *io.x);
  assert_non_null(io.x);
  for (size_t i = 0; i < m; i++) /* uniform in [-1, 1) */
    io.x[i] = (float)((double)kiln_test_random(&seed) * 0x1p-52 - 1);
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n * batch, 0, &io.in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n * batch, 0, &io.out));
  assert_kiln_ok(rt, kiln_buffer_write(io.in, 0, n * batch, io.x));
  return io;
}

static void free_io(fft_io *io)
{
  kiln_buffer_destroy(io->in);
  kiln_buffer_destroy(io->out);
  free(io->x);
  io->in = io->out = NULL;
  io->x = NULL;
}

/* kiln_fft() on backend be, C2C forward or inverse (numpy's scaling), and
 * kiln_finish() when it was enqueued. */
static kiln_status run(fft_io *io, kiln_backend be, int inverse)
{
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, io->n);
  d.batch = io->batch;
  d.inverse = inverse;
  d.backend = be;
  kiln_status st = kiln_fft(io->rt, &d, io->in, io->out);
  return st == KILN_OK ? kiln_finish(io->rt) : st;
}

/* Whether out holds the transform of x: 0, or 1 with *why set (static
 * text for the first bad element), so that threads can report it too. */
static int wrong(const fft_io *io, int inverse, char *why, size_t size)
{
  size_t n = io->n, m = 2 * n * io->batch;
  float *got = malloc(m * sizeof *got);
  double *tw = malloc(2 * n * sizeof *tw);
  if (!got || !tw || kiln_buffer_read(io->out, 0, n * io->batch, got) != KILN_OK) {
    snprintf(why, size, "reading the output failed: %s", kiln_last_error(io->rt));
    free(got), free(tw);
    return 1;
  }
  double sign = inverse ? 1 : -1, scale = inverse ? 1 / (double)n : 1;
  for (size_t k = 0; k < n; k++) /* exp(sign 2 pi i k / n), from k mod n */
    tw[2 * k] = cos(2 * PI * (double)k / (double)n),
           tw[2 * k + 1] = sign * sin(2 * PI * (double)k / (double)n);
  double u = 0x1p-24;
  int bad = 0;
  for (size_t b = 0; b < io->batch && !bad; b++) {
    const float *x = io->x + 2 * n * b;
    double norm = 0;
    for (size_t j = 0; j < 2 * n; j++)
      norm += (double)x[j] * x[j];
    double base = 20 * (log2((double)n) + 2) * u * sqrt(norm) * scale;
    for (size_t k = 0; k < n && !bad; k++) {
      double re = 0, im = 0;
      for (size_t j = 0; j < n; j++) {
        size_t t = j * k % n;
        re += x[2 * j] * tw[2 * t] - x[2 * j + 1] * tw[2 * t + 1];
        im += x[2 * j] * tw[2 * t + 1] + x[2 * j + 1] * tw[2 * t];
      }
      re *= scale, im *= scale;
      const float *y = got + 2 * (n * b + k);
      double err = fmax(fabs(y[0] - re), fabs(y[1] - im));
      double tol = base + 2 * u * fmax(fabs(re), fabs(im));
      if (!(err <= tol)) {
        snprintf(why, size,
                 "transform %zu of %zu points, bin %zu: (%.9g, %.9g), expected "
                 "(%.9g, %.9g) (error %.3g, bound %.3g)",
                 b, n, k, (double)y[0], (double)y[1], re, im, err, tol);
        bad = 1;
      }
    }
  }
  free(got), free(tw);
  return bad;
}

static void assert_right(const fft_io *io, int inverse, const char *when)
{
  char why[256];
  if (wrong(io, inverse, why, sizeof why))
    fail_msg("%s: %s", when, why);
}

/* Runs the transform on be and checks it; 0, or -1 when this kiln was
 * built without be. */
static int run_checked(fft_io *io, kiln_backend be, int inverse, const char *when)
{
  kiln_status st = run(io, be, inverse);
  if (st == KILN_ERR_UNSUPPORTED && strstr(kiln_last_error(io->rt), "built without"))
    return -1;
  if (st != KILN_OK)
    fail_msg("%s: %s %s: %s", when, kiln_backend_name(be), kiln_status_name(st),
             kiln_last_error(io->rt));
  assert_right(io, inverse, when);
  return 0;
}

/* The plan bytes of the transform of n points, batch transforms, on backend
 * be alone, measured on a runtime of its own; 0 when be is not built in. */
static uint64_t plan_bytes_of(kiln_backend be, size_t n, size_t batch, int inverse)
{
  kiln_runtime *rt = runtime_with(0, 1);
  fft_io io = make_io(rt, n, batch, 7);
  uint64_t bytes = 0;
  if (run_checked(&io, be, inverse, "measuring a plan") == 0)
    bytes = kiln_test_memory(rt).plan_bytes;
  free_io(&io);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  return bytes;
}

/* ---- the tests ----------------------------------------------------------- */

/* Each backend's plan shows in plan_bytes, apart from the buffers, and
 * kiln_memory_trim() gives it all back; the next transforms still agree
 * with the DFT, and count their plans again. */
static void test_fft_memory_plans_in_stats_and_trim(void **state)
{
  (void)state;
  static const struct {
    kiln_backend be;
    size_t n;
    int inverse;
    uint64_t least; /* plan bytes it must show at least */
    const char *why;
  } cases[] = {
    /* 2^13: several launches in either shape (the GPU's local kernels run
     * 2^12 in one, without a scratch): a scratch of 8192 complex64 and a
     * twiddle table */
    {KILN_BACKEND_KILN, 8192, 0, 65536 + 64, "kiln's scratch and twiddles"},
    /* a prime: Bluestein's buffers and tables, made inside VkFFT */
    {KILN_BACKEND_VKFFT, 1009, 0, 1009 * 8, "VkFFT's Bluestein buffers"},
    /* an inverse: kiln's copy of the input, and VkFFT's lookup table */
    {KILN_BACKEND_VKFFT, 64, 1, 64 * 8 + 1, "VkFFT's scratch and table"},
    /* 2^13 on clFFT is two passes through its temporary buffer */
    {KILN_BACKEND_CLFFT, 8192, 0, 8192 * 8, "clFFT's temporary buffer"},
  };
  kiln_runtime *rt = runtime_with(0, 0);
  assert_int_equal(kiln_test_memory(rt).plan_bytes, 0);
  uint64_t total = 0;
  int ran[COUNT(cases)] = {0};
  for (size_t i = 0; i < COUNT(cases); i++) {
    fft_io io = make_io(rt, cases[i].n, 1, 100 + i);
    uint64_t buffers = kiln_test_memory(rt).current_bytes;
    if (run_checked(&io, cases[i].be, cases[i].inverse, cases[i].why) == 0) {
      kiln_memory_usage u = kiln_test_memory(rt);
      if (u.plan_bytes < total + cases[i].least)
        fail_msg("%s: plan_bytes went from %llu to %llu; expected %llu more at least",
                 cases[i].why, (unsigned long long)total,
                 (unsigned long long)u.plan_bytes, (unsigned long long)cases[i].least);
      assert_int_equal(u.current_bytes, buffers); /* not counted as buffers */
      assert_true(u.current_bytes + u.cached_bytes + u.plan_bytes <= u.limit_bytes);
      total = u.plan_bytes;
      ran[i] = 1;
    } else {
      fprintf(stderr, "# %s: not built in, skipped\n", kiln_backend_name(cases[i].be));
    }
    free_io(&io);
  }
  assert_kiln_ok(rt, kiln_memory_trim(rt));
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.plan_bytes, 0);
  assert_int_equal(u.cached_bytes, 0);
  /* Built again on their next use, right, and counted again. */
  for (size_t i = 0; i < COUNT(cases); i++) {
    if (!ran[i])
      continue;
    fft_io io = make_io(rt, cases[i].n, 1, 200 + i);
    uint64_t before = kiln_test_memory(rt).plan_bytes;
    assert_int_equal(run_checked(&io, cases[i].be, cases[i].inverse, "after the trim"),
                     0);
    assert_true(kiln_test_memory(rt).plan_bytes >= before + cases[i].least);
    free_io(&io);
  }
  assert_int_equal(kiln_test_memory(rt).plan_bytes, total); /* the same plans as before */
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));             /* releases them */
}

/* A budget with room for the buffers and the twiddle table, but not for
 * the scratch buffer: KILN_ERR_OUT_OF_MEMORY naming the scratch and its
 * bytes; nothing held or counted after; and the runtime goes on. */
static void test_fft_memory_scratch_out_of_budget(void **state)
{
  (void)state;
  enum { N = 8192 }; /* a scratch in either shape (above) */
  const uint64_t scratch = N * 8, plan = plan_bytes_of(KILN_BACKEND_KILN, N, 1, 0);
  assert_true(plan > scratch); /* the scratch and a twiddle table */
  const uint64_t buffers = 2 * N * 8, limit = buffers + (plan - scratch) + scratch / 2;
  kiln_runtime *rt = runtime_with(limit, 1);
  fft_io io = make_io(rt, N, 1, 1);
  kiln_memory_usage before = kiln_test_memory(rt);
  char want[128];
  snprintf(want, sizeof want, "kiln_fft: its plan's scratch buffer of %llu bytes",
           (unsigned long long)scratch);
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, want, run(&io, KILN_BACKEND_KILN, 0));
  /* It says what is held and what the budget is. */
  char left[64];
  snprintf(left, sizeof left, "only %llu bytes",
           (unsigned long long)(limit - buffers - (plan - scratch)));
  assert_non_null(strstr(kiln_last_error(rt), left));
  assert_non_null(strstr(kiln_last_error(rt), "set by kiln_options"));
  kiln_memory_usage after = kiln_test_memory(rt);
  assert_int_equal(after.current_bytes, before.current_bytes);
  assert_int_equal(after.live_buffers, before.live_buffers);
  assert_int_equal(after.plan_bytes, 0); /* the twiddles made first went back */
  /* The same again: still refused, still nothing kept. */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, want, run(&io, KILN_BACKEND_KILN, 0));
  assert_int_equal(kiln_test_memory(rt).plan_bytes, 0);
  free_io(&io);
  /* Usable: a transform whose plan fits runs, and is right. */
  io = make_io(rt, N / 2, 1, 2);
  assert_int_equal(run_checked(&io, KILN_BACKEND_KILN, 0, "after the refusal"), 0);
  assert_true(kiln_test_memory(rt).plan_bytes > 0);
  free_io(&io);
  /* Nothing left behind. */
  assert_kiln_ok(rt, kiln_memory_trim(rt));
  kiln_memory_usage end = kiln_test_memory(rt);
  assert_int_equal(end.current_bytes, 0);
  assert_int_equal(end.live_buffers, 0);
  assert_int_equal(end.plan_bytes, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* KILN_MEMORY_LIMIT works the same way, and with AUTO (kiln's kernels on
 * a CPU, VkFFT first on a GPU) the failure names a plan's buffer too. */
static void test_fft_memory_env_limit(void **state)
{
  (void)state;
  enum { N = 8192 }; /* a scratch in either shape (above) */
  const uint64_t scratch = N * 8, plan = plan_bytes_of(KILN_BACKEND_KILN, N, 1, 0);
  char value[32];
  snprintf(value, sizeof value, "%llu",
           (unsigned long long)(2 * N * 8 + (plan - scratch) + scratch / 2));
  setenv("KILN_MEMORY_LIMIT", value, 1);
  setenv("KILN_MEMORY_POOL", "0", 1);
  kiln_runtime *rt = kiln_test_runtime_with(NULL);
  unsetenv("KILN_MEMORY_LIMIT");
  unsetenv("KILN_MEMORY_POOL");
  fft_io io = make_io(rt, N, 1, 3);
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "set by KILN_MEMORY_LIMIT",
                    run(&io, KILN_BACKEND_KILN, 0));
  assert_non_null(strstr(kiln_last_error(rt), "plan's scratch buffer"));
  kiln_status st = run(&io, KILN_BACKEND_AUTO, 0);
  if (st != KILN_OK) {
    if (st != KILN_ERR_OUT_OF_MEMORY || !strstr(kiln_last_error(rt), "kiln_fft: its "))
      fail_msg("AUTO: %s: %s", kiln_status_name(st), kiln_last_error(rt));
  } else {
    assert_right(&io, 0, "AUTO under the limit");
  }
  free_io(&io);
  assert_kiln_ok(rt, kiln_memory_trim(rt));
  assert_int_equal(kiln_test_memory(rt).plan_bytes, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* A plan that fits only once the pool gives its blocks back: the creation
 * trims the pool and succeeds. */
static void test_fft_memory_fits_after_pool_trim(void **state)
{
  (void)state;
  enum { N = 4096 };
  const uint64_t plan = plan_bytes_of(KILN_BACKEND_KILN, N, 1, 0);
  const uint64_t buffers = 2 * N * 8; /* two blocks of their own class, 32 KiB */
  kiln_runtime *rt = runtime_with(buffers + plan + 1024, 0);
  kiln_buffer *kept = NULL; /* 8 KiB for the pool to keep */
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 2048, 0, &kept));
  assert_kiln_ok(rt, kiln_buffer_destroy(kept));
  fft_io io = make_io(rt, N, 1, 4);
  kiln_memory_usage before = kiln_test_memory(rt);
  assert_int_equal(before.cached_bytes, 8192);
  assert_int_equal(before.current_bytes, buffers);
  assert_int_equal(run_checked(&io, KILN_BACKEND_KILN, 0, "after trimming the pool"), 0);
  kiln_memory_usage after = kiln_test_memory(rt);
  assert_int_equal(after.trims, before.trims + 1);
  assert_int_equal(after.cached_bytes, 0);
  assert_int_equal(after.plan_bytes, plan);
  free_io(&io);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* A plan that fits only once an unused cached plan is released: kiln
 * releases it, builds the new one, and builds the old one again when it
 * is asked for. */
static void test_fft_memory_fits_after_releasing_a_plan(void **state)
{
  (void)state;
  enum { N = 4096 };
  const uint64_t one = plan_bytes_of(KILN_BACKEND_KILN, N, 1, 0),
                 two = plan_bytes_of(KILN_BACKEND_KILN, N, 2, 0);
  const uint64_t buffers = 2 * 2 * N * 8; /* in and out of two transforms */
  kiln_runtime *rt = runtime_with(buffers + two + 1024, 1);
  fft_io io = make_io(rt, N, 2, 5);
  fft_io first = io;
  first.batch = 1; /* the first transform of the same buffers */
  assert_int_equal(run_checked(&first, KILN_BACKEND_KILN, 0, "one transform"), 0);
  assert_int_equal(kiln_test_memory(rt).plan_bytes, one);
  assert_true(buffers + one + two > buffers + two + 1024); /* both do not fit */
  assert_int_equal(run_checked(&io, KILN_BACKEND_KILN, 0, "two transforms"), 0);
  assert_int_equal(kiln_test_memory(rt).plan_bytes, two);
  /* And back: the batch-1 plan is built again in place of the other. */
  assert_int_equal(run_checked(&first, KILN_BACKEND_KILN, 0, "one transform again"), 0);
  assert_int_equal(kiln_test_memory(rt).plan_bytes, one);
  free_io(&io);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Threads run transforms of one shape, on one cached plan, while another
 * calls kiln_memory_trim() over and over: a plan is never released under a
 * call that runs it, and every result is right. */
enum { RUNNERS = 4, ROUNDS = 12, TN = 256 };

typedef struct runner {
  kiln_runtime *rt;
  unsigned id;
  kiln_backend be;
  int bad;
  char why[256];
} runner;

/* Whether the trimmer goes on: set before the threads start, cleared
 * after the runners end, read by the trimmer meanwhile. */
static _Atomic int trimming;

static void *run_rounds(void *arg)
{
  runner *r = arg;
  for (unsigned i = 0; i < ROUNDS && !r->bad; i++) {
    fft_io io = {.rt = r->rt, .n = TN, .batch = 2};
    uint64_t seed = 1000 * r->id + i;
    io.x = malloc(2 * TN * 2 * sizeof *io.x);
    if (!io.x) {
      r->bad = 1;
      snprintf(r->why, sizeof r->why, "no host memory");
      break;
    }
    for (size_t j = 0; j < 2 * TN * 2; j++)
      io.x[j] = (float)((double)kiln_test_random(&seed) * 0x1p-52 - 1);
    kiln_status st = kiln_buffer_create(r->rt, KILN_C32, 2 * TN, 0, &io.in);
    if (st == KILN_OK)
      st = kiln_buffer_create(r->rt, KILN_C32, 2 * TN, 0, &io.out);
    if (st == KILN_OK)
      st = kiln_buffer_write(io.in, 0, 2 * TN, io.x);
    if (st == KILN_OK)
      st = run(&io, r->be, (int)(i % 2));
    if (st != KILN_OK) {
      r->bad = 1;
      snprintf(r->why, sizeof r->why, "round %u: %s: %s", i, kiln_status_name(st),
               kiln_last_error(r->rt));
    } else {
      r->bad = wrong(&io, (int)(i % 2), r->why, sizeof r->why);
    }
    free_io(&io);
  }
  return NULL;
}

static void *trim_loop(void *arg)
{
  kiln_runtime *rt = arg;
  while (trimming)
    if (kiln_memory_trim(rt) != KILN_OK)
      return (void *)1;
  return NULL;
}

static void test_fft_memory_trim_under_threads(void **state)
{
  (void)state;
  static const kiln_backend bes[] = {KILN_BACKEND_KILN, KILN_BACKEND_VKFFT};
  for (size_t b = 0; b < COUNT(bes); b++) {
    if (bes[b] == KILN_BACKEND_VKFFT && !HAVE_VKFFT)
      continue;
    kiln_runtime *rt = runtime_with(0, 0);
    runner r[RUNNERS];
    pthread_t t[RUNNERS], trimmer;
    trimming = 1;
    assert_int_equal(pthread_create(&trimmer, NULL, trim_loop, rt), 0);
    for (unsigned i = 0; i < RUNNERS; i++) {
      r[i] = (runner){.rt = rt, .id = i, .be = bes[b]};
      assert_int_equal(pthread_create(&t[i], NULL, run_rounds, &r[i]), 0);
    }
    for (unsigned i = 0; i < RUNNERS; i++)
      pthread_join(t[i], NULL);
    trimming = 0;
    void *trim_failed;
    pthread_join(trimmer, &trim_failed);
    for (unsigned i = 0; i < RUNNERS; i++)
      if (r[i].bad)
        fail_msg("%s, thread %u: %s", kiln_backend_name(bes[b]), i, r[i].why);
    assert_null(trim_failed);
    assert_kiln_ok(rt, kiln_memory_trim(rt));
    kiln_memory_usage u = kiln_test_memory(rt);
    assert_int_equal(u.plan_bytes, 0);
    assert_int_equal(u.live_buffers, 0);
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  }
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fft_memory_plans_in_stats_and_trim),
    cmocka_unit_test(test_fft_memory_scratch_out_of_budget),
    cmocka_unit_test(test_fft_memory_env_limit),
    cmocka_unit_test(test_fft_memory_fits_after_pool_trim),
    cmocka_unit_test(test_fft_memory_fits_after_releasing_a_plan),
    cmocka_unit_test(test_fft_memory_trim_under_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
