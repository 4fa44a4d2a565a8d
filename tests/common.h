/*
 * common.h — what kiln's cmocka tests share.
 */
#ifndef KILN_TESTS_COMMON_H
#define KILN_TESTS_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kiln/kiln.h"

/* meson counts exit code 77 as a skipped test. */
#define KILN_TEST_SKIP 77

/* The number of elements of an array. */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* kiln's element types, with sizes and names written out here rather than
 * asked of kiln (test-status.c checks kiln against them). */
typedef struct kiln_test_dtype {
  kiln_dtype dtype;
  size_t size;
  const char *name;
} kiln_test_dtype;
static const kiln_test_dtype kiln_test_dtypes[] = {
  {KILN_F16, 2, "float16"},   {KILN_F32, 4, "float32"},     {KILN_F64, 8, "float64"},
  {KILN_C32, 8, "complex64"}, {KILN_C64, 16, "complex128"}, {KILN_I32, 4, "int32"},
  {KILN_I64, 8, "int64"},
};

/* The tests' one random-number generator (Knuth's MMIX LCG): the same
 * numbers on every run and machine, unlike rand(). Returns 53 random bits,
 * the state's high ones (an LCG's low bits are poor). */
static inline uint64_t kiln_test_random(uint64_t *state)
{
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 11;
}

/* Fails the test with kiln's message unless expr returns KILN_OK. */
#define assert_kiln_ok(rt, expr)                                                         \
  do {                                                                                   \
    kiln_status st_ = (expr);                                                            \
    if (st_ != KILN_OK)                                                                  \
      fail_msg("%s returned %s: %s", #expr, kiln_status_name(st_), kiln_last_error(rt)); \
  } while (0)

/* Fails unless expr returns want, and the message names `needle`. */
#define assert_kiln_fails(rt, want, needle, expr)                                        \
  do {                                                                                   \
    kiln_status st_ = (expr);                                                            \
    if (st_ != (want))                                                                   \
      fail_msg("%s returned %s, expected %s: %s", #expr, kiln_status_name(st_),          \
               kiln_status_name(want), kiln_last_error(rt));                             \
    const char *msg_ = kiln_last_error(rt);                                              \
    if (!strstr(msg_, (needle)))                                                         \
      fail_msg("%s: the message does not mention '%s': %s", #expr, (needle), msg_);      \
  } while (0)

/* What a test needs of the machine beyond one device (PoCL's two devices, a
 * second platform...): where `holds` is 0, says so on stderr ("skipped:
 * needs ...") and skips, the cmocka test it is called in or, from main()
 * (in_main), the whole program (exit 77). Under CI, on PoCL with the
 * platforms meson registers, every need is met, so there a missing one is a
 * failure, not a skip. Returns only where the need holds. */
static inline void kiln_test_require_at(int holds, int in_main, const char *need)
{
  if (holds)
    return;
  const char *ci = getenv("CI");
  if (ci && *ci && strcmp(ci, "0") != 0 && strcmp(ci, "false") != 0) {
    if (in_main) {
      fprintf(stderr, "failed: needs %s (under CI every need is met)\n", need);
      exit(1);
    }
    fail_msg("needs %s (under CI every need is met)", need);
  }
  fprintf(stderr, "skipped: needs %s\n", need);
  if (in_main)
    exit(KILN_TEST_SKIP);
  skip();
}

/* kiln_test_require_at() inside a cmocka test, and from main(). */
#define kiln_test_require(holds, need) kiln_test_require_at((holds), 0, (need))
#define kiln_test_require_main(holds, need) kiln_test_require_at((holds), 1, (need))

/* Called from main() of a device test before the tests run: with no OpenCL
 * device, exit 77 (skipped), except under CI, where PoCL is always installed
 * and a missing device is a failure. */
static inline void kiln_test_require_device(void)
{
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st == KILN_OK) {
    kiln_runtime_destroy(rt);
    return;
  }
  fprintf(stderr, "no OpenCL device: %s\n", kiln_last_error(NULL));
  kiln_test_require_main(0, "an OpenCL device");
}

/* How many of the usable devices PoCL gives (KILN_DEVICE and
 * KILN_VISIBLE_DEVICES ignored): meson's environments ask it for two or
 * three (POCL_DEVICES); a machine's own PoCL gives one. */
static inline size_t kiln_test__usable_devices(size_t *pocl)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.ignore_env = 1;
  kiln_runtime *rt = NULL;
  *pocl = 0;
  if (kiln_runtime_create(&opts, &rt) != KILN_OK)
    return 0;
  size_t n = kiln_runtime_device_count(rt);
  for (size_t i = 0; i < n; i++)
    *pocl += kiln_runtime_device_at(rt, i)->vendor_family == KILN_VENDOR_POCL;
  kiln_runtime_destroy(rt);
  return n;
}

static inline size_t kiln_test_pocl_devices(void)
{
  size_t pocl;
  kiln_test__usable_devices(&pocl);
  return pocl;
}

/* Runs a group of tests with OCL_ICD_VENDORS at a new empty folder, set
 * before any OpenCL call of the process, so the ICD loader finds no driver. */
#define kiln_test_run_without_platforms(tests)                                           \
  kiln_test__without_platforms(#tests, tests, sizeof(tests) / sizeof((tests)[0]))

static inline int kiln_test__without_platforms(const char *name,
                                               const struct CMUnitTest *tests,
                                               size_t count)
{
  char dir[] = "/tmp/kiln-no-icd-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("OCL_ICD_VENDORS", dir, 1);
  int failed = _cmocka_run_group_tests(name, tests, count, NULL, NULL);
  rmdir(dir);
  return failed;
}

/* What kiln holds on rt's device now, or fails the test. */
static inline kiln_memory_usage kiln_test_memory(kiln_runtime *rt)
{
  kiln_memory_usage u;
  kiln_memory_usage_init(&u);
  assert_kiln_ok(rt, kiln_memory_stats(rt, &u));
  return u;
}

/* A runtime with the options opts, or fails the test. */
static inline kiln_runtime *kiln_test_runtime_with(const kiln_options *opts)
{
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(opts, &rt));
  return rt;
}

/* A runtime on the first device the selector picks (NULL: kiln's choice),
 * with its cache in dir (NULL: the default), or none with no_cache. */
static inline kiln_runtime *kiln_test_runtime_on(const char *device, const char *dir,
                                                 int no_cache)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.device = device;
  opts.cache_dir = dir;
  opts.no_cache = no_cache;
  /* On Oclgrind, buffers of exactly the bytes asked for, so that it sees
   * every overrun (a pooled block is rounded up to its size class). */
  opts.no_memory_pool = device && strstr(device, "oclgrind") != NULL;
  return kiln_test_runtime_with(&opts);
}

/* The platforms meson registered for the `device` tests (tests/icd): PoCL
 * alone, or with Oclgrind (KILN_TEST_OCLGRIND=1) and Mesa's rusticl on
 * llvmpipe (KILN_TEST_RUSTICL=1); KILN_TEST_PLATFORMS counts them. */
static inline size_t kiln_test_platforms(void)
{
  const char *p = getenv("KILN_TEST_PLATFORMS");
  return p ? (size_t)atoi(p) : 1;
}

static inline int kiln_test_has_oclgrind(void)
{
  const char *v = getenv("KILN_TEST_OCLGRIND");
  return v && atoi(v) == 1;
}

static inline int kiln_test_has_rusticl(void)
{
  const char *v = getenv("KILN_TEST_RUSTICL");
  return v && atoi(v) == 1;
}

/* The devices of those platforms: PoCL's two (POCL_DEVICES="pthread
 * pthread"), Oclgrind's one, llvmpipe. */
static inline size_t kiln_test_devices(void)
{
  return 2 + (size_t)kiln_test_has_oclgrind() + (size_t)kiln_test_has_rusticl();
}

/* Whether the machine's devices are those meson registers for the tests
 * (tests/icd, POCL_DEVICES="pthread pthread"): kiln_test_devices() of them,
 * PoCL's two among them. A GPU machine runs the tests with its own drivers
 * instead; the cases that count devices need this. */
static inline int kiln_test_meson_devices(void)
{
  size_t pocl, n = kiln_test__usable_devices(&pocl);
  return n && n == kiln_test_devices() && pocl == 2;
}

/* The need kiln_test_meson_devices() checks, in words. */
#define KILN_TEST_MESON_DEVICES                                                          \
  "PoCL's two devices (POCL_DEVICES='pthread pthread') and the platforms meson "         \
  "registers (tests/icd), as KILN_TEST_PLATFORMS counts them"

/* Fails unless every line of a runtime's or a device list's diagnostics is
 * a note about an installed driver that no .icd file names: the tests
 * choose their own .icd folders, so a machine's GPU driver (registered in
 * /etc/OpenCL/vendors or not) may be named there. Any other line is a
 * device or platform that failed. */
static inline void kiln_test_assert_no_failures(const char *diagnostics)
{
  assert_non_null(diagnostics);
  for (const char *line = diagnostics; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    if (len && !strstr(buf, "no .icd file names it"))
      fail_msg("diagnostics name a failure: %s", buf);
    line += len + (end != NULL);
  }
}

/* Whether rt runs on Mesa's llvmpipe, whose work-items stop looping after
 * 65535 iterations in all: kiln refuses what it cannot fit there, saying so
 * (src/device/rank.c's kiln__loop_limit()), and the tests expect that. */
static inline int kiln_test_on_llvmpipe(kiln_runtime *rt)
{
  return strncmp(kiln_runtime_device(rt)->name, "llvmpipe", 8) == 0;
}

/* Where rt's device has no fp64 (rusticl's llvmpipe), a float64 operation
 * must fail with KILN_ERR_UNSUPPORTED, st, saying that it needs fp64 and,
 * where the tests' platforms include PoCL's device (which has fp64), how to
 * pick that one. `what` names the call in the failure. */
static inline void kiln_test_refuses_fp64(kiln_runtime *rt, kiln_status st,
                                          const char *what)
{
  const char *m = kiln_last_error(rt);
  if (st != KILN_ERR_UNSUPPORTED)
    fail_msg("%s on a device without fp64 returned %s, expected ERR_UNSUPPORTED: %s",
             what, kiln_status_name(st), m);
  if (!strstr(m, "needs fp64") || !strstr(m, kiln_runtime_device(rt)->name))
    fail_msg("%s: the refusal does not say that it needs fp64, and where: '%s'", what, m);
  if (kiln_test_has_rusticl() && !strstr(m, "KILN_DEVICE="))
    fail_msg("%s: the refusal does not name a device that has fp64: '%s'", what, m);
}

/* A runtime on Oclgrind, for a test that runs only there: skips the test
 * where Oclgrind is not registered. */
static inline kiln_runtime *kiln_test_oclgrind_runtime(void)
{
  kiln_test_require(kiln_test_has_oclgrind(),
                    "Oclgrind as a second platform (KILN_TEST_OCLGRIND=1, tests/icd)");
  return kiln_test_runtime_on("oclgrind", NULL, 0);
}

/* Runs fn on kiln's choice of device (PoCL), then on Oclgrind where meson
 * registered it. */
static inline void kiln_test_each_platform(void (*fn)(const char *device))
{
  fn(NULL);
  if (kiln_test_has_oclgrind())
    fn("oclgrind");
  else
    fprintf(stderr, "# Oclgrind is not registered: PoCL only\n");
}

/* A cache test's folders: a new one, /tmp/kiln-test-<what>-XXXXXX, in root,
 * and the path of its subfolder "cache" (not created) in dir. 0, or -1 when
 * the folder could not be made. */
static inline int kiln_test_cache_folders(const char *what, char *root, size_t root_size,
                                          char *dir, size_t dir_size)
{
  snprintf(root, root_size, "/tmp/kiln-test-%s-XXXXXX", what);
  if (!mkdtemp(root))
    return -1;
  snprintf(dir, dir_size, "%s/cache", root);
  return 0;
}

/* rm -rf, after giving back the permissions a test took away. */
static inline void kiln_test_remove_tree(const char *path)
{
  struct stat st;
  if (lstat(path, &st) != 0)
    return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  chmod(path, 0700);
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char child[4096];
      if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child)
        kiln_test_remove_tree(child);
    }
    closedir(d);
  }
  rmdir(path);
}

/* cmocka group setup and teardown that keep one runtime in *state. */
static inline int kiln_test_runtime_setup(void **state)
{
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(NULL, &rt) != KILN_OK) {
    fprintf(stderr, "kiln_runtime_create: %s\n", kiln_last_error(NULL));
    return -1;
  }
  *state = rt;
  return 0;
}

static inline int kiln_test_runtime_teardown(void **state)
{
  return kiln_runtime_destroy(*state) == KILN_OK ? 0 : -1;
}

#endif /* KILN_TESTS_COMMON_H */
