/*
 * test-warnings.c — kiln's own kernel files build without a compiler
 * warning on every implementation the tests have: PoCL, Oclgrind and Mesa's
 * rusticl (three compiler stacks; tests/icd/all). Each file is built from
 * source, kiln's cache and the drivers' own caches off (PoCL's and Mesa's
 * hand back a cached binary without its messages), on the first device of
 * each; a build log that says "warning" fails the test with the whole log.
 * Mesa 22.3's rusticl keeps no build log at all and prints its warnings on
 * stderr, some only when it compiles a kernel for its first launch:
 * tests/check-rusticl.py runs `kiln check` there and fails on any.
 *
 * With --pocl-only, PoCL's test alone: the suite runs it again with PoCL
 * compiling for an AVX2 CPU (tests/meson.build, warnings-avx2), where a
 * float16 that crosses a call changes the ABI and clang warns, whatever CPU
 * the suite runs on.
 */
#define KILN_EXPERIMENTAL
#include "common.h"

static void build_every_file(const char *device)
{
  kiln_runtime *rt = kiln_test_runtime_on(device, NULL, 1);
  const char *where = kiln_runtime_device(rt)->name;
  for (size_t i = 0; i < kiln_builtin_count(); i++) {
    const char *name = kiln_builtin_name(i);
    kiln_program *p = NULL;
    assert_kiln_ok(rt, kiln_program_create_builtin(rt, name, &p));
    const char *log = kiln_program_build_log(p);
    if (strstr(log, "warning") || strstr(log, "Warning"))
      fail_msg("cl/%s.cl on %s: the compiler warned:\n%s", name, where, log);
    kiln_program_destroy(p);
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_warnings_pocl(void **state)
{
  (void)state;
  build_every_file("pocl");
}

static void test_warnings_oclgrind(void **state)
{
  (void)state;
  if (!kiln_test_has_oclgrind())
    skip();
  build_every_file("oclgrind");
}

static void test_warnings_rusticl(void **state)
{
  (void)state;
  if (!kiln_test_has_rusticl())
    skip();
  build_every_file("mesa");
}

int main(int argc, char **argv)
{
  int pocl_only = argc > 1 && strcmp(argv[1], "--pocl-only") == 0;
  /* before any OpenCL call: the drivers read these when they load */
  setenv("POCL_KERNEL_CACHE", "0", 1);
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_warnings_pocl),
    cmocka_unit_test(test_warnings_oclgrind),
    cmocka_unit_test(test_warnings_rusticl),
  };
  if (pocl_only)
    cmocka_set_test_filter("test_warnings_pocl");
  return cmocka_run_group_tests(tests, NULL, NULL);
}
