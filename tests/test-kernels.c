/*
 * test-kernels.c — programs and kernels: kiln's embedded cl/ files build on
 * every device (PoCL, and Oclgrind when registered), the caller's programs
 * from source and file, build errors with their log, the kernel API's
 * errors, and the on-disk cache seen from a runtime: a second runtime loads
 * instead of compiling, a corrupt entry is rebuilt, concurrent processes
 * share entries, and KILN_CL_DIR's files joined as the embedded ones are.
 *
 * usage: test-kernels FILE.cl...   (kiln's cl/ files, passed by meson)
 *        test-kernels --build-child DIR   (one process of the concurrency test)
 */
/* kiln_program_create_builtin() is experimental API. */
#define KILN_EXPERIMENTAL
#include "common.h"
#include "saxpy.h"

#include "base/env.h"
#include "compile/cache.h"
#include "core/runtime.h"
#include "device/rank.h"

#include <dirent.h>
#include <math.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int builtin_count;
static char **builtin_names;
static char cl_dir[4096]; /* the folder of the cl/ files meson passed */
static char cache_dir[64];

static void build_every_builtin_on(const char *device)
{
  kiln_runtime *rt = kiln_test_runtime_on(device, NULL, 1);
  for (int i = 0; i < builtin_count; i++) {
    kiln_program *p = NULL;
    kiln_status st = kiln_program_create_builtin(rt, builtin_names[i], &p);
    if (st != KILN_OK)
      fail_msg("cl/%s.cl on %s: %s", builtin_names[i], kiln_runtime_device(rt)->name,
               kiln_last_error(rt));
    assert_kiln_ok(rt, kiln_program_destroy(p));
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_kernels_every_builtin_builds(void **state)
{
  (void)state;
  assert_true(builtin_count >= 1);
  kiln_test_each_platform(build_every_builtin_on);
}

static void test_kernels_builtin_unknown_name(void **state)
{
  kiln_runtime *rt = *state;
  kiln_program *p = (kiln_program *)&p;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "no kernel file named 'nope'",
                    kiln_program_create_builtin(rt, "nope", &p));
  assert_null(p);
  assert_non_null(strstr(kiln_last_error(rt), builtin_names[0]));
}

static void test_kernels_program_from_source_and_file(void **state)
{
  kiln_runtime *rt = *state;
  kiln_program *p = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, "-cl-mad-enable", &p));
  assert_non_null(kiln_program_build_log(p));
  run_saxpy(rt, p, 1);
  run_saxpy(rt, p, 1001);
  assert_kiln_ok(rt, kiln_program_destroy(p));

  char path[] = "/tmp/kiln-saxpy-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, saxpy, sizeof saxpy - 1), (ssize_t)(sizeof saxpy - 1));
  close(fd);
  assert_kiln_ok(rt, kiln_program_create_file(rt, path, NULL, &p));
  run_saxpy(rt, p, 77);
  assert_kiln_ok(rt, kiln_program_destroy(p));
  unlink(path);
  assert_kiln_fails(rt, KILN_ERR_IO, "cannot open '/nonexistent/k.cl'",
                    kiln_program_create_file(rt, "/nonexistent/k.cl", NULL, &p));
  assert_null(p);
}

static void test_kernels_build_error_has_log(void **state)
{
  kiln_runtime *rt = *state;
  kiln_program *p = (kiln_program *)&p;
  assert_kiln_fails(rt, KILN_ERR_BUILD, "options: -cl-kernel-arg-info -DWIDTH=7",
                    kiln_program_create(rt,
                                        "kernel void broken(global float *x)\n"
                                        "{ x[0] = undeclared_thing; }\n",
                                        "-DWIDTH=7", &p));
  assert_null(p);
  const char *msg = kiln_last_error(rt);
  assert_non_null(strstr(msg, "CL_BUILD_PROGRAM_FAILURE"));
  assert_non_null(strstr(msg, "build log:"));
  assert_non_null(strstr(msg, "undeclared_thing")); /* the compiler's words */
  /* Options the compiler refuses are a build error too. */
  kiln_status st = kiln_program_create(rt, saxpy, "-no-such-option", &p);
  assert_int_equal(st, KILN_ERR_BUILD);
  assert_non_null(strstr(kiln_last_error(rt), "-no-such-option"));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "source is empty",
                    kiln_program_create(rt, "", NULL, &p));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_program_create(NULL, saxpy, NULL, &p));
}

static void test_kernels_kernel_api_errors(void **state)
{
  kiln_runtime *rt = *state;
  kiln_program *p = NULL;
  kiln_kernel *k = (kiln_kernel *)&k;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, NULL, &p));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "no kernel named 'sxpy'; it has: saxpy",
                    kiln_kernel_create(p, "sxpy", &k));
  assert_null(k);
  assert_kiln_ok(rt, kiln_kernel_create(p, "saxpy", &k));
  kiln_buffer *buf = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 8, 0, &buf));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 9 of saxpy, which takes 4 arguments (a, x, y, n)",
                    kiln_kernel_set_arg(k, 9, sizeof(float), &(float){1}));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 0 (a: float) of saxpy: given raw bytes of 2 bytes; "
                    "expected the 4 bytes of a float",
                    kiln_kernel_set_arg(k, 0, 2, &(float){1}));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 0 (a: float) of saxpy: given local memory",
                    kiln_kernel_set_arg(k, 0, 4, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "format letter 'q'",
                    kiln_kernel_set_args(k, "fq", 1.0, 2));
  /* a letter of another type than the kernel's, though of the same size */
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 0 (a: float) of saxpy: format letter 'i' gives a int; "
                    "expected 'f'",
                    kiln_kernel_set_args(k, "i", 2));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 3 (n: int) of saxpy: format letter 'f' gives a float; "
                    "expected 'i'",
                    kiln_kernel_set_args(k, "fbbf", 1.0, buf, buf, 2.0));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 0 (a: float) of saxpy: given a buffer (8 float32); "
                    "expected a value of its type",
                    kiln_kernel_set_buffer(k, 0, buf));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 1 (x: __global float*) of saxpy: given float; expected "
                    "a buffer",
                    kiln_kernel_set_args(k, "ff", 1.0, 2.0));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "expected 1, 2 or 3",
                    kiln_kernel_launch(k, 4, (size_t[]){1, 1, 1, 1}, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "global size 0",
                    kiln_kernel_launch(k, 1, (size_t[]){0}, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "not a multiple of local size 4",
                    kiln_kernel_launch(k, 1, (size_t[]){10}, (size_t[]){4}));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "buffer is NULL",
                    kiln_kernel_set_buffer(k, 1, NULL));
  /* Launching with arguments unset names the first. */
  kiln_kernel *fresh = NULL;
  assert_kiln_ok(rt, kiln_kernel_create(p, "saxpy", &fresh));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 0 (a: float) of saxpy is not set",
                    kiln_kernel_launch(fresh, 1, (size_t[]){8}, NULL));
  assert_kiln_ok(rt, kiln_kernel_set_args(fresh, "fbb", 1.0, buf, buf));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT,
                    "argument 3 (n: int) of saxpy is not set",
                    kiln_kernel_launch(fresh, 1, (size_t[]){8}, NULL));
  assert_kiln_ok(rt, kiln_kernel_destroy(fresh));
  /* Buffers, programs and kernels keep their runtime busy. */
  assert_kiln_fails(rt, KILN_ERR_BUSY,
                    "1 buffer (holding 4.0 KiB), 1 program and 1 kernel alive",
                    kiln_runtime_destroy(rt));
  assert_kiln_ok(rt, kiln_buffer_destroy(buf));
  assert_kiln_ok(rt, kiln_kernel_destroy(k));
  assert_kiln_ok(rt, kiln_program_destroy(p));
  assert_kiln_ok(rt, kiln_kernel_destroy(NULL));
  assert_kiln_ok(rt, kiln_program_destroy(NULL));
  assert_kiln_ok(rt, kiln_finish(rt));
}

/* Views wherever a buffer goes: saxpy on views of one buffer, and a GEMM
 * whose A, B and C are views of another, each against loops over small
 * integers (exact in float). */
static void test_kernels_views_in_kernels_and_ops(void **state)
{
  kiln_runtime *rt = *state;
  cl_uint bits = 0;
  assert_int_equal(clGetDeviceInfo(kiln_runtime_cl_device(rt),
                                   CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits,
                                   NULL),
                   CL_SUCCESS);
  size_t at = bits / 8 / sizeof(float); /* elements between views */
  enum { M = 7, N = 5, K = 9 };
  size_t stride = at * ((M * K + at - 1) / at); /* each matrix on a boundary */
  float *host = calloc(3 * stride, sizeof *host), c[M * N];
  for (size_t i = 0; i < M * K; i++)
    host[i] = (float)((int)(i % 7) - 3);
  for (size_t i = 0; i < K * N; i++)
    host[stride + i] = (float)((int)(i % 5) - 2);
  kiln_buffer *all = NULL, *a = NULL, *b = NULL, *cv = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 3 * stride, 0, &all));
  assert_kiln_ok(rt, kiln_buffer_write(all, 0, 3 * stride, host));
  assert_kiln_ok(rt, kiln_buffer_view(all, 0, M * K, &a));
  assert_kiln_ok(rt, kiln_buffer_view(all, stride, K * N, &b));
  assert_kiln_ok(rt, kiln_buffer_view(all, 2 * stride, M * N, &cv));
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, M, N, K);
  assert_kiln_ok(rt, kiln_gemm(rt, &d, a, b, cv));
  /* y = 2 x + y with x the view of A and y the view of C's first M */
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, NULL, &p));
  assert_kiln_ok(rt, kiln_kernel_create(p, "saxpy", &k));
  assert_kiln_ok(rt, kiln_kernel_set_args(k, "fbbi", 2.0, a, cv, (int32_t)M));
  assert_kiln_ok(rt, kiln_kernel_launch(k, 1, (size_t[]){M}, NULL));
  assert_kiln_ok(rt, kiln_buffer_read(cv, 0, M * N, c));
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double want = 0;
      for (int q = 0; q < K; q++)
        want += (double)host[i * K + q] * host[stride + (size_t)(q * N + j)];
      int e = i * N + j;
      if (e < M)
        want += 2.0 * host[e];
      if (c[e] != want)
        fail_msg("C[%d][%d] = %g through views; expected %g", i, j, c[e], want);
    }
  kiln_kernel_destroy(k);
  kiln_program_destroy(p);
  kiln_buffer_destroy(a), kiln_buffer_destroy(b), kiln_buffer_destroy(cv);
  assert_kiln_ok(rt, kiln_buffer_destroy(all));
  free(host);
}

/* The counters of a runtime that built saxpy; dir is copied into `where`,
 * since the runtime that owned it is gone. */
static char where[256];

static kiln_cache_usage cache_after_saxpy(const char *dir, int no_cache)
{
  kiln_runtime *rt = kiln_test_runtime_on(NULL, dir, no_cache);
  kiln_program *p = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, "-DCACHE_TEST", &p));
  run_saxpy(rt, p, 33); /* a binary from the cache must run, too */
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  assert_kiln_ok(rt, kiln_cache_stats(rt, &u));
  snprintf(where, sizeof where, "%s", u.dir ? u.dir : "");
  u.dir = u.dir ? where : NULL;
  assert_kiln_ok(rt, kiln_program_destroy(p));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  return u;
}

/* Overwrites every entry of the cache folder with `bytes`. */
static int spoil_entries(const char *dir, const char *bytes)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".bin") != 0)
      continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(bytes, f);
    fclose(f);
    n++;
  }
  if (d)
    closedir(d);
  return n;
}

static void test_kernels_cache_hit_after_miss(void **state)
{
  (void)state;
  kiln_cache_usage first = cache_after_saxpy(cache_dir, 0);
  assert_string_equal(first.dir, cache_dir);
  assert_int_equal(first.compiles, 1);
  assert_int_equal(first.hits, 0);
  assert_int_equal(first.stores, 1);
  /* A second runtime does not call the compiler. */
  kiln_cache_usage second = cache_after_saxpy(cache_dir, 0);
  assert_int_equal(second.compiles, 0);
  assert_int_equal(second.hits, 1);
  /* A corrupt entry is thrown away and the program compiled again. */
  assert_true(spoil_entries(cache_dir, "not a kiln cache entry") >= 1);
  kiln_cache_usage third = cache_after_saxpy(cache_dir, 0);
  assert_int_equal(third.compiles, 1);
  assert_int_equal(third.rejected, 1);
  assert_int_equal(third.stores, 1);
  /* The folder's contents, then cleared: the next runtime compiles. */
  kiln_runtime *rt = kiln_test_runtime_on(NULL, cache_dir, 0);
  uint64_t entries = 0, bytes = 0, removed = 0;
  assert_kiln_ok(rt, kiln_cache_contents(rt, &entries, &bytes));
  assert_true(entries >= 1 && bytes > entries * 48);
  assert_kiln_ok(rt, kiln_cache_clear(rt, &removed));
  assert_int_equal(removed, entries);
  assert_kiln_ok(rt, kiln_cache_contents(rt, &entries, &bytes));
  assert_int_equal(entries, 0);
  assert_int_equal(bytes, 0);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  assert_int_equal(cache_after_saxpy(cache_dir, 0).compiles, 1);
  /* Off: no folder, and every runtime compiles. */
  kiln_cache_usage off = cache_after_saxpy(cache_dir, 1);
  assert_null(off.dir);
  assert_int_equal(off.compiles, 1);
  assert_int_equal(off.hits, 0);
}

/* Builds every builtin on a runtime over the cache folder; its stats. */
static kiln_cache_usage build_builtins_cached(void)
{
  kiln_runtime *rt = kiln_test_runtime_on(NULL, cache_dir, 0);
  for (int i = 0; i < builtin_count; i++) {
    kiln_program *p = NULL;
    if (kiln_program_create_builtin(rt, builtin_names[i], &p) != KILN_OK)
      fail_msg("cl/%s.cl: %s", builtin_names[i], kiln_last_error(rt));
    kiln_program_destroy(p);
  }
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  assert_kiln_ok(rt, kiln_cache_stats(rt, &u));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  return u;
}

/* KILN_CL_DIR joins cl/prelude.cl and each file as tools/embed-cl.py does:
 * the same text, so the same cache keys, and nothing is compiled again. A
 * folder without the prelude is an error that names it. */
static void test_kernels_cl_dir_joins_as_embedded(void **state)
{
  (void)state;
  build_builtins_cached();
  assert_int_equal(setenv("KILN_CL_DIR", cl_dir, 1), 0);
  kiln_cache_usage u = build_builtins_cached();
  assert_int_equal(u.compiles, 0);
  assert_int_equal(u.hits, (uint64_t)builtin_count);
  char empty[] = "/tmp/kiln-cl-dir-XXXXXX";
  assert_non_null(mkdtemp(empty));
  assert_int_equal(setenv("KILN_CL_DIR", empty, 1), 0);
  kiln_runtime *rt = kiln_test_runtime_on(NULL, cache_dir, 0);
  kiln_program *p = NULL;
  assert_kiln_fails(rt, KILN_ERR_IO, "prelude.cl",
                    kiln_program_create_builtin(rt, builtin_names[0], &p));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  unsetenv("KILN_CL_DIR");
  rmdir(empty);
}

/* An entry that is whole and has the right key, but holds no binary the
 * driver can use (another driver's format, say): deleted and compiled again. */
static void test_kernels_cache_entry_refused_by_driver(void **state)
{
  (void)state;
  /* (rusticl would abort on this binary, a Rust panic: kiln refuses it
   * before the driver sees it, src/compile/program.c's binary_readable().) */
  kiln_runtime *rt = kiln_test_runtime_on(NULL, cache_dir, 0);
  kiln__config cfg = {.cache_dir = cache_dir};
  kiln__cache plant;
  kiln__cache_open(&plant, &cfg, NULL);
  kiln__cache_key key = kiln__cache_key_of(
    saxpy, sizeof saxpy - 1, "-cl-kernel-arg-info -DCACHE_TEST", kiln_runtime_device(rt));
  static const unsigned char junk[] = "this is not a program binary";
  assert_int_equal(kiln__cache_store(&plant, &key, junk, sizeof junk), 0);
  kiln__cache_close(&plant);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_cache_usage u = cache_after_saxpy(cache_dir, 0);
  assert_int_equal(u.rejected, 1);
  assert_int_equal(u.hits, 0);
  assert_int_equal(u.compiles, 1);
  assert_int_equal(u.stores, 1);
  /* The good binary replaced it. */
  assert_int_equal(cache_after_saxpy(cache_dir, 0).hits, 1);
}

/* Runs this program as `--build-child DIR` in n processes at once. */
static void test_kernels_cache_shared_by_processes(void **state)
{
  (void)state;
  char dir[] = "/tmp/kiln-cache-procs-XXXXXX";
  assert_non_null(mkdtemp(dir));
  enum { N = 4 };
  pid_t pids[N];
  char *argv[] = {"test-kernels", "--build-child", dir, NULL};
  for (int i = 0; i < N; i++)
    assert_int_equal(posix_spawn(&pids[i], "/proc/self/exe", NULL, NULL, argv, environ),
                     0);
  for (int i = 0; i < N; i++) {
    int status = 0;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  kiln_cache_usage after = cache_after_saxpy(dir, 0);
  assert_int_equal(after.compiles, 0);
  assert_int_equal(after.hits, 1);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* One process of the concurrency test: build and run, through the cache. */
static int build_child(const char *dir)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.cache_dir = dir;
  kiln_runtime *rt = NULL;
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  if (kiln_runtime_create(&opts, &rt) != KILN_OK ||
      kiln_program_create(rt, saxpy, "-DCACHE_TEST", &p) != KILN_OK ||
      kiln_kernel_create(p, "saxpy", &k) != KILN_OK) {
    fprintf(stderr, "child: %s\n", kiln_last_error(rt));
    return 1;
  }
  kiln_kernel_destroy(k);
  kiln_program_destroy(p);
  return kiln_runtime_destroy(rt) == KILN_OK ? 0 : 1;
}

static int group_setup(void **state)
{
  snprintf(cache_dir, sizeof cache_dir, "/tmp/kiln-cache-XXXXXX");
  if (!mkdtemp(cache_dir))
    return -1;
  return kiln_test_runtime_setup(state);
}

static int group_teardown(void **state)
{
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  int rc = system(cmd);
  return kiln_test_runtime_teardown(state) || rc;
}

/* The compiles and the kernels in them, in rt so far. */
static void built(kiln_runtime *rt, uint64_t *programs, uint64_t *kernels)
{
  pthread_mutex_lock(&rt->lock);
  *programs = rt->compiles, *kernels = rt->kernels_compiled;
  pthread_mutex_unlock(&rt->lock);
}

/* A sum of n floats 1, 2, ... on rt; asserts it. */
static void sum_on(kiln_runtime *rt, size_t n)
{
  float *x = malloc(n * sizeof *x), got = 0;
  assert_non_null(x);
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(i % 7);
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, n);
  kiln_buffer *in = NULL, *out = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &out));
  assert_kiln_ok(rt, kiln_buffer_write(in, 0, n, x));
  assert_kiln_ok(rt, kiln_reduce(rt, &d, in, out));
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, 1, &got));
  double want = 0;
  for (size_t i = 0; i < n; i++)
    want += x[i];
  assert_true(fabs(got - want) <= 1e-5 * want);
  kiln_buffer_destroy(in), kiln_buffer_destroy(out);
  free(x);
}

/* An operation's first call compiles the kernels it launches, each alone:
 * a program a kernel, a handful for a sum, not the 40-odd of cl/reduce.cl
 * and cl/reduce_gpu.cl. */
static void test_kernels_call_builds_its_kernels_alone(void **state)
{
  (void)state;
  kiln_runtime *rt = kiln_test_runtime_on(NULL, NULL, 1);
  sum_on(rt, 1000);
  uint64_t programs, kernels;
  built(rt, &programs, &kernels);
  assert_true(programs >= 1 && programs <= 3);
  assert_int_equal(kernels, programs);
  sum_on(rt, 1000); /* built once a runtime */
  uint64_t again, k2;
  built(rt, &again, &k2);
  assert_int_equal(again, programs);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* kiln_runtime_warm() builds what a call needs: the call then builds
 * nothing; a name that is no operation is refused, building nothing. */
static void test_kernels_warm_then_call_builds_nothing(void **state)
{
  (void)state;
  kiln_runtime *rt = kiln_test_runtime_on(NULL, NULL, 1);
  size_t n = 99;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "'sum' is no operation",
                    kiln_runtime_warm(rt, "reduce,sum", &n));
  assert_int_equal(n, 0);
  uint64_t programs, kernels;
  built(rt, &programs, &kernels);
  assert_int_equal(programs, 0);
  assert_kiln_ok(rt, kiln_runtime_warm(rt, "reduce", &n));
  built(rt, &programs, &kernels);
  assert_true(n >= 3);
  assert_int_equal(programs, n);
  assert_int_equal(kernels, n);
  sum_on(rt, 100000);
  uint64_t after, k2;
  built(rt, &after, &k2);
  assert_int_equal(after, programs);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void *warm_scale(void *arg)
{
  return kiln_runtime_warm(arg, "scale", NULL) == KILN_OK ? arg : NULL;
}

/* Threads that want the same kernel at once share one build. */
static void test_kernels_one_build_shared_by_threads(void **state)
{
  (void)state;
  kiln_runtime *rt = kiln_test_runtime_on(NULL, NULL, 1);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&t[i], NULL, warm_scale, rt), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    assert_int_equal(pthread_join(t[i], &r), 0);
    assert_ptr_equal(r, rt);
  }
  uint64_t programs, kernels;
  built(rt, &programs, &kernels);
  assert_int_equal(programs, 1); /* kiln_scale_f32 */
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* kiln_runtime_warm_async(): a bad list starts nothing; held at the build
 * lock, the warm-up runs, has built 0 of its kernels and refuses a second
 * start; a sum called while it runs shares its builds (each kernel built
 * once, whoever built it); the wait reports every kernel ready. */
static void test_kernels_warm_async(void **state)
{
  (void)state;
  kiln_runtime *rt = kiln_test_runtime_on(NULL, NULL, 1);
  size_t b = 9, t = 9;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "'sum' is no operation",
                    kiln_runtime_warm_async(rt, "reduce,sum"));
  assert_int_equal(kiln_runtime_warm_progress(rt, &b, &t), 0);
  assert_int_equal(b + t, 0);
  assert_kiln_ok(rt, kiln_runtime_warm_wait(rt, &b)); /* none started */
  assert_int_equal(b, 0);
  pthread_mutex_lock(&rt->build_lock);
  assert_kiln_ok(rt, kiln_runtime_warm_async(rt, "reduce"));
  assert_int_equal(kiln_runtime_warm_progress(rt, &b, &t), 1);
  assert_int_equal(b, 0);
  assert_true(t >= 3);
  assert_kiln_fails(rt, KILN_ERR_BUSY, "still running",
                    kiln_runtime_warm_async(rt, "scale"));
  pthread_mutex_unlock(&rt->build_lock);
  sum_on(rt, 100000);
  assert_kiln_ok(rt, kiln_runtime_warm_wait(rt, &b));
  assert_int_equal(b, t);
  assert_int_equal(kiln_runtime_warm_progress(rt, &b, NULL), 0);
  assert_int_equal(b, t);
  uint64_t programs, kernels;
  built(rt, &programs, &kernels);
  assert_int_equal(programs, t);
  /* a finished warm-up makes room for the next */
  assert_kiln_ok(rt, kiln_runtime_warm_async(rt, "scale"));
  assert_kiln_ok(rt, kiln_runtime_warm_wait(rt, &b));
  assert_int_equal(b, 1);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* Destroying the runtime while a warm-up of every operation runs stops it
 * after the kernel in hand (none, if it had not reached its first): the
 * cache holds at most two kernels' programs of the many, and the runtime
 * is gone with nothing left running. */
static void test_kernels_warm_async_destroy_while_running(void **state)
{
  (void)state;
  char dir[] = "/tmp/kiln-warm-XXXXXX";
  assert_non_null(mkdtemp(dir));
  kiln_runtime *rt = kiln_test_runtime_on(NULL, dir, 0);
  int keeps = !rt->cache->binaries_off;
  size_t total = 0;
  pthread_mutex_lock(&rt->build_lock);
  assert_kiln_ok(rt, kiln_runtime_warm_async(rt, "all"));
  assert_int_equal(kiln_runtime_warm_progress(rt, NULL, &total), 1);
  pthread_mutex_unlock(&rt->build_lock);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  size_t entries = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    entries += strstr(e->d_name, ".bin") != NULL;
  closedir(d);
  assert_true(total > 10);
  if (keeps)
    assert_in_range(entries, 0, 2);
  kiln_test_remove_tree(dir);
}

/* A kernel's program goes through the binary cache where kiln keeps it:
 * a second runtime on the folder loads what the first compiled. */
static void test_kernels_kernel_programs_cached(void **state)
{
  (void)state;
  char dir[] = "/tmp/kiln-kprog-XXXXXX";
  assert_non_null(mkdtemp(dir));
  uint64_t programs[2], hits[2];
  for (int r = 0; r < 2; r++) {
    kiln_runtime *rt = kiln_test_runtime_on(NULL, dir, 0);
    int keeps = !rt->cache->binaries_off;
    sum_on(rt, 1000);
    kiln_cache_usage u;
    kiln_cache_usage_init(&u);
    assert_kiln_ok(rt, kiln_cache_stats(rt, &u));
    programs[r] = u.compiles, hits[r] = u.hits;
    assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
    if (!keeps) { /* the driver's own cache: kiln stores nothing */
      assert_int_equal(u.stores, 0);
      kiln_test_remove_tree(dir);
      return;
    }
  }
  assert_true(programs[0] >= 1);
  assert_int_equal(programs[1], 0);
  assert_int_equal(hits[1], programs[0]);
  kiln_test_remove_tree(dir);
}

/* Where kiln leaves binaries to the driver's own cache: NVIDIA's; PoCL,
 * where kiln's helps (src/device/rank.c says why). */
static void test_kernels_driver_cache_table(void **state)
{
  (void)state;
  kiln_device_info d = {0};
  d.vendor_family = KILN_VENDOR_NVIDIA;
  assert_non_null(kiln__driver_cache(&d));
  d.vendor_family = KILN_VENDOR_POCL;
  assert_null(kiln__driver_cache(&d));
  d.vendor_family = KILN_VENDOR_AMD;
  assert_null(kiln__driver_cache(&d));
}

int main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--build-child") == 0)
    return build_child(argv[2]);
  /* The names of kiln's kernel files, from their paths, and their folder. */
  builtin_names = calloc((size_t)argc, sizeof *builtin_names);
  if (argc > 1 && strrchr(argv[1], '/'))
    snprintf(cl_dir, sizeof cl_dir, "%.*s", (int)(strrchr(argv[1], '/') - argv[1]),
             argv[1]);
  else
    snprintf(cl_dir, sizeof cl_dir, ".");
  for (int i = 1; i < argc; i++) {
    const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
    builtin_names[builtin_count] = strdup(base);
    char *dot = strstr(builtin_names[builtin_count], ".cl");
    if (dot)
      *dot = '\0';
    builtin_count++;
  }
  /* The caller's programs in these tests go through a cache of their own. */
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kernels_every_builtin_builds),
    cmocka_unit_test(test_kernels_builtin_unknown_name),
    cmocka_unit_test(test_kernels_program_from_source_and_file),
    cmocka_unit_test(test_kernels_build_error_has_log),
    cmocka_unit_test(test_kernels_kernel_api_errors),
    cmocka_unit_test(test_kernels_views_in_kernels_and_ops),
    cmocka_unit_test(test_kernels_cache_hit_after_miss),
    cmocka_unit_test(test_kernels_cache_entry_refused_by_driver),
    cmocka_unit_test(test_kernels_cl_dir_joins_as_embedded),
    cmocka_unit_test(test_kernels_cache_shared_by_processes),
    cmocka_unit_test(test_kernels_call_builds_its_kernels_alone),
    cmocka_unit_test(test_kernels_warm_then_call_builds_nothing),
    cmocka_unit_test(test_kernels_one_build_shared_by_threads),
    cmocka_unit_test(test_kernels_warm_async),
    cmocka_unit_test(test_kernels_warm_async_destroy_while_running),
    cmocka_unit_test(test_kernels_kernel_programs_cached),
    cmocka_unit_test(test_kernels_driver_cache_table),
  };
  int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
  for (int i = 0; i < builtin_count; i++)
    free(builtin_names[i]);
  free(builtin_names);
  return failed;
}
