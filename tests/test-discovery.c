/*
 * test-discovery.c — finding platforms and devices when some of them fail.
 *
 * Run with PoCL, Oclgrind and rusticl registered (OCL_ICD_VENDORS, set by
 * meson when they are installed; common.h's kiln_test_platforms() and
 * kiln_test_devices() count them) and POCL_DEVICES="pthread pthread", so
 * there are up to three platforms and four devices. clfault makes chosen
 * OpenCL queries fail. On a machine's own devices (one GPU) what counts
 * devices is skipped, saying what it needs (common.h).
 */
#include "common.h"

#include "clfault.h"
#include "kiln/kiln_cl.h"

/* Creates a runtime with the armed fault, then disarms. */
static kiln_status create_with_fault(const char *fn, int nth, cl_int err,
                                     kiln_runtime **rt)
{
  clfault_arm(fn, nth, 1, err);
  kiln_status st = kiln_runtime_create(NULL, rt);
  int hits = clfault_hits();
  clfault_disarm();
  if (hits != 1)
    fail_msg("the fault in %s was hit %d times, expected once", fn, hits);
  return st;
}

static size_t baseline_devices(void)
{
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  size_t n = kiln_runtime_device_count(rt);
  kiln_test_assert_no_failures(kiln_runtime_diagnostics(rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  return n;
}

static void test_discovery_finds_every_device(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  size_t n = kiln_runtime_device_count(rt);
  int meson = kiln_test_meson_devices();
  /* Two PoCL devices, plus Oclgrind's and llvmpipe when registered. */
  if (meson)
    assert_int_equal(n, kiln_test_devices());
  assert_true(n >= 1);
  unsigned platforms_seen = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    platforms_seen |= 1u << d->platform_index;
    /* Oclgrind calls itself a GPU, but a simulator is never picked while a
     * real device is there. */
    if (strcmp(d->platform_name, "Oclgrind") == 0)
      assert_ptr_not_equal(d, kiln_runtime_device(rt));
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_test_require(meson, KILN_TEST_MESON_DEVICES);
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  /* PoCL, a real CPU device some 30 times faster than llvmpipe, is picked. */
  assert_non_null(strstr(kiln_runtime_device(rt)->platform_name, "Portable"));
  assert_int_equal(platforms_seen, (1u << kiln_test_platforms()) - 1);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_discovery_skips_failing_platform(void **state)
{
  (void)state;
  size_t all = baseline_devices();
  kiln_runtime *rt = NULL;
  kiln_status st = create_with_fault("clGetPlatformInfo", 1, CL_OUT_OF_RESOURCES, &rt);
  if (kiln_test_platforms() == 1) {
    /* The only platform is gone: no device, and the note says why. */
    assert_int_equal(st, KILN_ERR_NO_DEVICE);
    assert_non_null(strstr(kiln_last_error(NULL), "platform 0 skipped"));
    assert_null(rt);
    return;
  }
  assert_kiln_ok(NULL, st);
  const char *notes = kiln_runtime_diagnostics(rt);
  assert_non_null(strstr(notes, "platform 0 skipped: clGetPlatformInfo(CL_PLATFORM_NAME) "
                                "failed with CL_OUT_OF_RESOURCES (-5)"));
  assert_true(kiln_runtime_device_count(rt) >= 1);
  assert_true(kiln_runtime_device_count(rt) < all);
  for (size_t i = 0; i < kiln_runtime_device_count(rt); i++)
    assert_true(kiln_runtime_device_at(rt, i)->platform_index >= 1);
  /* The runtime works on what is left. */
  kiln_buffer *b = NULL;
  float x = 1.5f, y = 0;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, 1, &x));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, 1, &y));
  assert_true(y == 1.5f);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_discovery_skips_platform_without_device_list(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  kiln_status st = create_with_fault("clGetDeviceIDs", 1, CL_INVALID_PLATFORM, &rt);
  const char *where =
    st == KILN_OK ? kiln_runtime_diagnostics(rt) : kiln_last_error(NULL);
  assert_non_null(strstr(where, "skipped: clGetDeviceIDs failed with "
                                "CL_INVALID_PLATFORM (-32)"));
  assert_int_equal(st, kiln_test_platforms() > 1 ? KILN_OK : KILN_ERR_NO_DEVICE);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_discovery_skips_failing_device(void **state)
{
  (void)state;
  size_t all = baseline_devices();
  kiln_runtime *rt = NULL;
  /* The first query of the first device is its name, which kiln requires. */
  kiln_status st = create_with_fault("clGetDeviceInfo", 1, CL_INVALID_DEVICE, &rt);
  const char *why = "platform 0 device 0 skipped: clGetDeviceInfo(CL_DEVICE_NAME) "
                    "failed with CL_INVALID_DEVICE (-33)";
  if (all == 1) { /* the only device is gone: no device, and the note says why */
    assert_int_equal(st, KILN_ERR_NO_DEVICE);
    assert_non_null(strstr(kiln_last_error(NULL), why));
    assert_null(rt);
    return;
  }
  assert_kiln_ok(NULL, st);
  assert_int_equal(kiln_runtime_device_count(rt), all - 1);
  assert_non_null(strstr(kiln_runtime_diagnostics(rt), why));
  const kiln_device_info *first = kiln_runtime_device_at(rt, 0);
  assert_false(first->platform_index == 0 && first->device_index == 0);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_discovery_optional_property_reads_empty(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  /* Calls 1 to 4 read the name and the extensions (size, then text); call 5
   * asks the size of CL_DEVICE_VENDOR, which kiln does not require. */
  assert_kiln_ok(NULL, create_with_fault("clGetDeviceInfo", 5, CL_INVALID_VALUE, &rt));
  size_t n = kiln_runtime_device_count(rt);
  assert_int_equal(n, baseline_devices());
  assert_string_equal(kiln_runtime_device_at(rt, 0)->vendor, "");
  assert_true(strlen(kiln_runtime_device_at(rt, 0)->name) > 0);
  /* the other devices' queries did not fail */
  for (size_t i = 1; i < n; i++)
    assert_true(strlen(kiln_runtime_device_at(rt, i)->vendor) > 0);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_discovery_platform_list_fails(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_int_equal(create_with_fault("clGetPlatformIDs", 1, CL_OUT_OF_HOST_MEMORY, &rt),
                   KILN_ERR_NO_DEVICE);
  assert_null(rt);
  assert_non_null(
    strstr(kiln_last_error(NULL), "clGetPlatformIDs failed with CL_OUT_OF_HOST_MEMORY"));
}

static void test_discovery_context_fails(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_int_equal(create_with_fault("clCreateContext", 1, CL_OUT_OF_HOST_MEMORY, &rt),
                   KILN_ERR_OUT_OF_HOST_MEMORY);
  assert_null(rt);
  assert_non_null(strstr(kiln_last_error(NULL),
                         "clCreateContext failed with CL_OUT_OF_HOST_MEMORY (-6)"));
  /* Nothing is left behind: the next runtime is created normally. */
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_discovery_finds_every_device),
    cmocka_unit_test(test_discovery_skips_failing_platform),
    cmocka_unit_test(test_discovery_skips_platform_without_device_list),
    cmocka_unit_test(test_discovery_skips_failing_device),
    cmocka_unit_test(test_discovery_optional_property_reads_empty),
    cmocka_unit_test(test_discovery_platform_list_fails),
    cmocka_unit_test(test_discovery_context_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
