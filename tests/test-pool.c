/*
 * test-pool.c — the runtime's caching pool of device memory (src/core/pool.c):
 * reuse within a size class, the classes themselves, reuse that waits for
 * the last owner's commands, zeroing on reuse, trimming, the budget that
 * counts the pool, retry after a trim (the budget's and the driver's),
 * waiting out a refusal (KILN_OOM_WAIT), the pool turned off, steady operations that stop allocating, and 8 threads.
 */
#include <pthread.h>
#include <time.h>

#include "clfault.h"
#include "common.h"

#include "kiln/kiln_cl.h"

/* A runtime with the pool on (whatever the environment says), a budget of
 * limit bytes (0: the device's memory) and KILN_OOM_WAIT's wait_ms. */
static kiln_runtime *runtime_with(uint64_t limit, unsigned wait_ms)
{
  kiln_options o;
  kiln_options_init(&o);
  o.ignore_env = 1;
  o.memory_limit = limit;
  o.oom_wait_ms = wait_ms;
  return kiln_test_runtime_with(&o);
}

static kiln_runtime *pool_runtime(uint64_t limit)
{
  return runtime_with(limit, 0);
}

/* The bytes the driver holds for b. */
static size_t block_of(const kiln_buffer *b)
{
  size_t size = 0;
  assert_int_equal(
    clGetMemObjectInfo(kiln_buffer_cl_mem(b), CL_MEM_SIZE, sizeof size, &size, NULL),
    CL_SUCCESS);
  return size;
}

static kiln_buffer *make(kiln_runtime *rt, kiln_dtype dtype, size_t count, unsigned flags)
{
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, dtype, count, flags, &b));
  return b;
}

static void test_pool_reuses_a_block_of_the_class(void **state)
{
  (void)state;
  kiln_runtime *rt = pool_runtime(0);
  kiln_buffer *a = make(rt, KILN_F32, 1000, 0); /* 4000 bytes: the 4 KiB class */
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.pool_misses, 1);
  assert_int_equal(u.pool_hits, 0);
  assert_int_equal(u.current_bytes, 4096);
  assert_int_equal(kiln_buffer_bytes(a), 4000);
  cl_mem mem = kiln_buffer_cl_mem(a);
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  u = kiln_test_memory(rt);
  assert_int_equal(u.current_bytes, 0);
  assert_int_equal(u.live_buffers, 0);
  assert_int_equal(u.cached_bytes, 4096);
  assert_int_equal(u.largest_free_block, 4096);
  /* Another type, the same class: the same memory. */
  kiln_buffer *b = make(rt, KILN_I64, 512, 0);
  assert_ptr_equal(kiln_buffer_cl_mem(b), mem);
  assert_int_equal(kiln_buffer_count(b), 512);
  assert_int_equal(kiln_buffer_dtype(b), KILN_I64);
  u = kiln_test_memory(rt);
  assert_int_equal(u.pool_hits, 1);
  assert_int_equal(u.cached_bytes, 0);
  assert_int_equal(u.current_bytes, 4096);
  assert_int_equal(u.peak_cached_bytes, 4096);
  /* Another class: new memory. */
  kiln_buffer *c = make(rt, KILN_F32, 3000, 0);
  assert_int_equal(kiln_test_memory(rt).pool_misses, 2);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_buffer_destroy(c));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt)); /* gives the pool back */
}

static void test_pool_size_classes(void **state)
{
  (void)state;
  /* bytes asked -> the block: a page at least, then 2^e x 1, 1.25, 1.5,
   * 1.75, the smallest that holds the bytes. */
  static const size_t cases[][2] = {
    {4, 4096},
    {4096, 4096},
    {4100, 5120},
    {7168, 7168},
    {7172, 8192},
    {12000, 12288},
    {600 << 10, 640 << 10},
    {(3 << 20) + 4, (7 << 20) / 2},
    {(7 << 20) + 4, 8 << 20},
  };
  kiln_runtime *rt = pool_runtime(0);
  for (size_t i = 0; i < COUNT(cases); i++) {
    kiln_buffer *b = make(rt, KILN_I32, cases[i][0] / 4, 0);
    if (block_of(b) != cases[i][1] || kiln_test_memory(rt).current_bytes != cases[i][1])
      fail_msg("%zu bytes: a block of %zu, %llu held; expected %zu", cases[i][0],
               block_of(b), (unsigned long long)kiln_test_memory(rt).current_bytes,
               cases[i][1]);
    assert_kiln_ok(rt, kiln_buffer_destroy(b));
    assert_kiln_ok(rt, kiln_memory_trim(rt));
  }
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Each work-item reads x reps times, slowly enough that the kernel is still
 * running when its input is destroyed and its memory handed out again. */
static const char slow_sum[] =
  "kernel void slow_sum(global const float *x, global float *out, int n, int reps)\n"
  "{ int i = get_global_id(0); float s = 0;\n"
  "  for (int r = 0; r < reps; r++) s += x[(i + r) % n];\n"
  "  out[i] = s; }\n";

static void test_pool_reuse_comes_after_the_last_owner(void **state)
{
  (void)state;
  enum { N = 4096, REPS = 4000 };
  kiln_runtime *rt = pool_runtime(0);
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, slow_sum, NULL, &p));
  assert_kiln_ok(rt, kiln_kernel_create(p, "slow_sum", &k));
  static float ones[N], twos[N], got[N];
  for (int i = 0; i < N; i++)
    ones[i] = 1, twos[i] = 2;
  kiln_buffer *x = make(rt, KILN_F32, N, 0), *out = make(rt, KILN_F32, N, 0);
  assert_kiln_ok(rt, kiln_buffer_write(x, 0, N, ones));
  assert_kiln_ok(rt, kiln_kernel_set_args(k, "bbii", x, out, (int32_t)N, (int32_t)REPS));
  assert_kiln_ok(rt, kiln_kernel_launch(k, 1, (size_t[]){N}, NULL));
  /* x goes while the kernel may still read it; y takes its memory and is
   * written at once: the write must land after the kernel's reads. */
  cl_mem mem = kiln_buffer_cl_mem(x);
  assert_kiln_ok(rt, kiln_buffer_destroy(x));
  kiln_buffer *y = make(rt, KILN_F32, N, 0);
  assert_ptr_equal(kiln_buffer_cl_mem(y), mem);
  assert_kiln_ok(rt, kiln_buffer_write_async(y, 0, N, twos));
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, N, got));
  for (int i = 0; i < N; i++)
    if (got[i] != (float)REPS)
      fail_msg("out[%d] = %g; expected %d, the sum of the ones its kernel read", i,
               (double)got[i], REPS);
  assert_kiln_ok(rt, kiln_buffer_read(y, 0, N, got));
  assert_memory_equal(got, twos, sizeof twos);
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_buffer_destroy(y);
  kiln_buffer_destroy(out);
  assert_kiln_ok(rt, kiln_kernel_destroy(k));
  assert_kiln_ok(rt, kiln_program_destroy(p));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_pool_zeroes_a_reused_block_when_asked(void **state)
{
  (void)state;
  enum { N = 3000 };
  kiln_runtime *rt = pool_runtime(0);
  static float sevens[N], got[N], zeros[N];
  for (int i = 0; i < N; i++)
    sevens[i] = 7;
  kiln_buffer *a = make(rt, KILN_F32, N, 0);
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, N, sevens));
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  kiln_buffer *b = make(rt, KILN_F32, N, KILN_BUFFER_ZERO);
  assert_int_equal(kiln_test_memory(rt).pool_hits, 1);
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, N, got));
  assert_memory_equal(got, zeros, sizeof zeros);
  kiln_buffer_destroy(b);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_pool_trim_gives_memory_back(void **state)
{
  (void)state;
  kiln_runtime *rt = pool_runtime(0);
  kiln_buffer *a = make(rt, KILN_F32, 98304, 0), *b = make(rt, KILN_F32, 1000, 0);
  kiln_buffer *live = make(rt, KILN_F32, 1000, 0);
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.cached_bytes, 393216 + 4096);
  assert_int_equal(u.largest_free_block, 393216);
  assert_kiln_ok(rt, kiln_memory_trim(rt));
  u = kiln_test_memory(rt);
  assert_int_equal(u.cached_bytes, 0);
  assert_int_equal(u.largest_free_block, 0);
  assert_int_equal(u.trims, 1);
  assert_int_equal(u.peak_cached_bytes, 393216 + 4096);
  assert_int_equal(u.current_bytes, 4096);  /* live buffers are not touched */
  assert_kiln_ok(rt, kiln_memory_trim(rt)); /* nothing to give: not a trim */
  assert_int_equal(kiln_test_memory(rt).trims, 1);
  /* The next creation of the class asks the driver again. */
  kiln_buffer *c = make(rt, KILN_F32, 98304, 0);
  assert_int_equal(kiln_test_memory(rt).pool_misses, 4);
  kiln_buffer_destroy(c);
  kiln_buffer_destroy(live);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_memory_trim(NULL));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_pool_budget_counts_the_pool_and_trims(void **state)
{
  (void)state;
  kiln_runtime *rt = pool_runtime(1 << 20);
  /* 600 KiB takes a 640 KiB block, kept when destroyed. */
  kiln_buffer *a = make(rt, KILN_F32, 600 * 256, 0);
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  assert_int_equal(kiln_test_memory(rt).cached_bytes, 640 << 10);
  /* 700 KiB (a 768 KiB block) fits the budget only without the pool's
   * 640 KiB: the creation trims and succeeds. */
  kiln_buffer *b = make(rt, KILN_F32, 700 * 256, 0);
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.trims, 1);
  assert_int_equal(u.cached_bytes, 0);
  assert_int_equal(u.current_bytes, 768 << 10);
  /* What cannot fit even then fails, saying what is held. */
  kiln_buffer *c = (kiln_buffer *)&u;
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "kiln holds",
                    kiln_buffer_create(rt, KILN_F32, 300 * 256, 0, &c));
  assert_null(c);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  /* A class larger than the budget gives way to the exact size. */
  rt = pool_runtime(1000 << 10);
  kiln_buffer *d = make(rt, KILN_F32, 960 * 256, 0);
  assert_int_equal(block_of(d), 960 << 10);
  assert_int_equal(kiln_test_memory(rt).current_bytes, 960 << 10);
  assert_kiln_ok(rt, kiln_buffer_destroy(d));
  /* Kept, and served again to the same request. */
  d = make(rt, KILN_F32, 960 * 256, 0);
  assert_int_equal(kiln_test_memory(rt).pool_hits, 1);
  assert_kiln_ok(rt, kiln_buffer_destroy(d));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_pool_driver_refusal_trims_and_retries(void **state)
{
  (void)state;
  kiln_runtime *rt = pool_runtime(0);
  kiln_buffer *a = make(rt, KILN_F32, 100000, 0);
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  /* The driver refuses once; the pool had memory to give back. */
  clfault_arm("clCreateBuffer", 1, 1, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  kiln_buffer *b = make(rt, KILN_F32, 1000, 0);
  assert_int_equal(clfault_hits(), 1);
  clfault_disarm();
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.trims, 1);
  assert_int_equal(u.cached_bytes, 0);
  assert_int_equal(u.live_buffers, 1);
  /* With nothing to give back, the refusal is the caller's. */
  clfault_arm("clCreateBuffer", 1, 1, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  kiln_buffer *c = NULL;
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "CL_MEM_OBJECT_ALLOCATION_FAILURE",
                    kiln_buffer_create(rt, KILN_F32, 1000, 0, &c));
  clfault_disarm();
  u = kiln_test_memory(rt);
  assert_int_equal(u.live_buffers, 1);
  assert_int_equal(u.current_bytes, 4096);
  kiln_buffer_destroy(b);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static kiln_runtime *waiting_runtime(unsigned wait_ms)
{
  return runtime_with(0, wait_ms);
}

/* KILN_OOM_WAIT: a refusal that clears after three tries is survived by
 * waiting 1 + 2 + 4 ms; one that does not clear fails once the wait is
 * spent, saying how long it waited. */
static void test_pool_oom_wait_backs_off(void **state)
{
  (void)state;
  kiln_runtime *rt = waiting_runtime(1000);
  clfault_arm("clCreateBuffer", 1, 3, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kiln_buffer *b = make(rt, KILN_F32, 1000, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(clfault_hits(), 3);
  clfault_disarm();
  double ms =
    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  if (ms < 7)
    fail_msg("three refusals were retried after %.2f ms; expected waits of 1 + 2 + 4 ms",
             ms);
  kiln_buffer_destroy(b);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = waiting_runtime(5);
  clfault_arm("clCreateBuffer", 1, 100, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  kiln_buffer *c = NULL;
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "after waiting 5 ms",
                    kiln_buffer_create(rt, KILN_F32, 1000, 0, &c));
  assert_int_equal(clfault_hits(), 4); /* waits of 1, 2 and the 2 left */
  clfault_disarm();
  assert_null(c);
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.live_buffers, 0);
  assert_int_equal(u.current_bytes, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  /* Without the option, the first refusal is final. */
  rt = waiting_runtime(0);
  clfault_arm("clCreateBuffer", 1, 1, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY, "CL_MEM_OBJECT_ALLOCATION_FAILURE",
                    kiln_buffer_create(rt, KILN_F32, 1000, 0, &c));
  clfault_disarm();
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_pool_oom_wait_settings(void **state)
{
  (void)state;
  static const struct {
    const char *value;
    kiln_status want;
  } cases[] = {{"250", KILN_OK},
               {"250ms", KILN_OK},
               {"1.5s", KILN_OK},
               {"0", KILN_OK},
               {"soon", KILN_ERR_INVALID_ENV},
               {"-1", KILN_ERR_INVALID_ENV},
               {"2h", KILN_ERR_INVALID_ENV},
               {"7200s", KILN_ERR_INVALID_ENV}};
  for (size_t i = 0; i < COUNT(cases); i++) {
    kiln_runtime *rt = NULL;
    setenv("KILN_OOM_WAIT", cases[i].value, 1);
    kiln_status st = kiln_runtime_create(NULL, &rt);
    if (st != cases[i].want)
      fail_msg("KILN_OOM_WAIT=%s: %s (%s); expected %s", cases[i].value,
               kiln_status_name(st), kiln_last_error(NULL),
               kiln_status_name(cases[i].want));
    if (st != KILN_OK)
      assert_non_null(strstr(kiln_last_error(NULL), "KILN_OOM_WAIT"));
    kiln_runtime_destroy(rt);
  }
  unsetenv("KILN_OOM_WAIT");
  kiln_options o;
  kiln_options_init(&o);
  o.oom_wait_ms = 3600001;
  kiln_runtime *rt = NULL;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "oom_wait_ms",
                    kiln_runtime_create(&o, &rt));
}

static void check_pool_off(kiln_runtime *rt)
{
  kiln_buffer *a = make(rt, KILN_F32, 1000, 0);
  assert_int_equal(block_of(a), 4000);
  assert_int_equal(kiln_test_memory(rt).current_bytes, 4000);
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  kiln_buffer *b = make(rt, KILN_F32, 1000, 0);
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.cached_bytes, 0);
  assert_int_equal(u.pool_hits + u.pool_misses, 0);
  kiln_buffer_destroy(b);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_pool_off(void **state)
{
  (void)state;
  kiln_options o;
  kiln_options_init(&o);
  o.ignore_env = 1;
  o.no_memory_pool = 1;
  check_pool_off(kiln_test_runtime_with(&o));
  setenv("KILN_MEMORY_POOL", "0", 1);
  check_pool_off(kiln_test_runtime_with(NULL));
  setenv("KILN_MEMORY_POOL", "maybe", 1);
  kiln_runtime *rt = NULL;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV, "KILN_MEMORY_POOL='maybe'",
                    kiln_runtime_create(NULL, &rt));
  unsetenv("KILN_MEMORY_POOL");
}

/* Steady calls of an operation reuse their workspaces: after the first
 * call, no creation asks the driver. */
static void test_pool_steady_gemm_allocates_nothing(void **state)
{
  (void)state;
  enum { N = 64 };
  kiln_runtime *rt = pool_runtime(0);
  static float a[N * N], b[N * N], c[N * N];
  for (int i = 0; i < N * N; i++)
    a[i] = (float)(i % 5 - 2), b[i] = (float)(i % 3 - 1);
  kiln_buffer *ba = make(rt, KILN_F32, N * N, 0), *bb = make(rt, KILN_F32, N * N, 0);
  kiln_buffer *bc = make(rt, KILN_F32, N * N, 0);
  assert_kiln_ok(rt, kiln_buffer_write(ba, 0, N * N, a));
  assert_kiln_ok(rt, kiln_buffer_write(bb, 0, N * N, b));
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, N, N, N);
  d.backend = KILN_BACKEND_KILN;
  d.trans_b = KILN_TRANS; /* packed: small products run unpacked, with no workspace */
  assert_kiln_ok(rt, kiln_gemm(rt, &d, ba, bb, bc));
  assert_kiln_ok(rt, kiln_finish(rt));
  uint64_t misses = kiln_test_memory(rt).pool_misses;
  for (int r = 0; r < 5; r++)
    assert_kiln_ok(rt, kiln_gemm(rt, &d, ba, bb, bc));
  assert_kiln_ok(rt, kiln_buffer_read(bc, 0, N * N, c));
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.pool_misses, misses);
  assert_true(u.pool_hits >= 5);
  /* Still the product, against a plain loop in double. */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int p = 0; p < N; p++)
        s += (double)a[i * N + p] * b[j * N + p]; /* B transposed */
      assert_true(c[i * N + j] == (float)s);      /* small integers: exact */
    }
  kiln_buffer_destroy(ba);
  kiln_buffer_destroy(bb);
  kiln_buffer_destroy(bc);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* An operation whose workspace does not fit says which workspace, and
 * leaves the runtime as it was. */
static void test_pool_workspace_out_of_memory_names_it(void **state)
{
  (void)state;
  enum { N = 64 };
  kiln_options o;
  kiln_options_init(&o);
  o.ignore_env = 1;
  o.no_memory_pool = 1; /* a budget to the byte: A, B and C, 16 KiB each */
  o.memory_limit = 3 * N * N * 4 + 1024;
  kiln_runtime *rt = kiln_test_runtime_with(&o);
  kiln_buffer *a = make(rt, KILN_F32, N * N, KILN_BUFFER_ZERO);
  kiln_buffer *b = make(rt, KILN_F32, N * N, KILN_BUFFER_ZERO);
  kiln_buffer *c = make(rt, KILN_F32, N * N, KILN_BUFFER_ZERO);
  kiln_memory_usage before = kiln_test_memory(rt);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, N, N, N);
  d.backend = KILN_BACKEND_KILN;
  d.trans_b = KILN_TRANS; /* packed: small products run unpacked, with no workspace */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_MEMORY,
                    "kiln_gemm: its packing workspace for A of 16384 bytes",
                    kiln_gemm(rt, &d, a, b, c));
  kiln_memory_usage after = kiln_test_memory(rt);
  assert_int_equal(after.current_bytes, before.current_bytes);
  assert_int_equal(after.live_buffers, before.live_buffers);
  /* Usable as before: with B and C gone, a smaller product fits. */
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(c);
  static float ones[16 * 16], got[16 * 16];
  for (int i = 0; i < 16 * 16; i++)
    ones[i] = 1;
  b = make(rt, KILN_F32, 16 * 16, 0);
  c = make(rt, KILN_F32, 16 * 16, 0);
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, 16 * 16, ones));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, 16 * 16, ones));
  kiln_gemm_desc_init(&d, KILN_F32, 16, 16, 16);
  d.backend = KILN_BACKEND_KILN;
  assert_kiln_ok(rt, kiln_gemm(rt, &d, a, b, c));
  assert_kiln_ok(rt, kiln_buffer_read(c, 0, 16 * 16, got));
  for (int i = 0; i < 16 * 16; i++)
    assert_true(got[i] == 16);
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(c);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* 8 threads create, write, read back and destroy buffers of a few classes
 * on one runtime; each sees its own data, and the count adds up. */
enum { THREADS = 8, ROUNDS = 60 };

static void *churn(void *arg)
{
  kiln_runtime *rt = ((void **)arg)[0];
  intptr_t id = (intptr_t)((void **)arg)[1];
  static const size_t sizes[] = {100, 1000, 1100, 5000, 20000};
  int32_t *host = malloc(20000 * sizeof *host), *got = malloc(20000 * sizeof *got);
  for (int r = 0; r < ROUNDS && host && got; r++) {
    size_t n = sizes[(size_t)(r + id) % COUNT(sizes)];
    kiln_buffer *b = NULL;
    for (size_t i = 0; i < n; i++)
      host[i] = (int32_t)(id * 1000003 + r * 7919 + (int32_t)i);
    if (kiln_buffer_create(rt, KILN_I32, n, 0, &b) != KILN_OK ||
        kiln_buffer_write(b, 0, n, host) != KILN_OK ||
        kiln_buffer_read(b, 0, n, got) != KILN_OK || memcmp(host, got, n * 4) != 0) {
      kiln_buffer_destroy(b);
      free(host);
      free(got);
      return (void *)1;
    }
    kiln_buffer_destroy(b);
  }
  int bad = !host || !got;
  free(host);
  free(got);
  return (void *)(intptr_t)bad;
}

static void test_pool_threads(void **state)
{
  (void)state;
  kiln_runtime *rt = pool_runtime(0);
  pthread_t t[THREADS];
  void *args[THREADS][2];
  for (intptr_t i = 0; i < THREADS; i++) {
    args[i][0] = rt;
    args[i][1] = (void *)i;
    assert_int_equal(pthread_create(&t[i], NULL, churn, args[i]), 0);
  }
  int bad = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad |= r != NULL;
  }
  assert_false(bad);
  kiln_memory_usage u = kiln_test_memory(rt);
  assert_int_equal(u.live_buffers, 0);
  assert_int_equal(u.current_bytes, 0);
  assert_int_equal(u.pool_hits + u.pool_misses, THREADS * ROUNDS);
  assert_true(u.pool_hits > 0);
  assert_true(u.cached_bytes > 0 && u.cached_bytes <= u.peak_cached_bytes);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* test-pool --core: the tests that compile no kernel, for valgrind (LLVM
 * under valgrind is very slow); without it, all of them. */
int main(int argc, char **argv)
{
  int core = argc > 1 && !strcmp(argv[1], "--core");
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    /* --core: these, which compile no kernel */
    cmocka_unit_test(test_pool_reuses_a_block_of_the_class),
    cmocka_unit_test(test_pool_size_classes),
    cmocka_unit_test(test_pool_zeroes_a_reused_block_when_asked),
    cmocka_unit_test(test_pool_trim_gives_memory_back),
    cmocka_unit_test(test_pool_budget_counts_the_pool_and_trims),
    cmocka_unit_test(test_pool_driver_refusal_trims_and_retries),
    cmocka_unit_test(test_pool_oom_wait_backs_off),
    cmocka_unit_test(test_pool_oom_wait_settings),
    cmocka_unit_test(test_pool_off),
    cmocka_unit_test(test_pool_threads),
    /* then those that run kernels */
    cmocka_unit_test(test_pool_reuse_comes_after_the_last_owner),
    cmocka_unit_test(test_pool_steady_gemm_allocates_nothing),
    cmocka_unit_test(test_pool_workspace_out_of_memory_names_it),
  };
  size_t count = sizeof tests / sizeof tests[0];
  return _cmocka_run_group_tests("pool", tests, core ? count - 3 : count, NULL, NULL);
}
