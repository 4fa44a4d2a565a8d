/*
 * test-runtime.c — creating and destroying runtimes, the chosen device and
 * its OpenCL objects, waiting, and the error text. With --no-platform it runs
 * with OCL_ICD_VENDORS at an empty folder, where no driver exists.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include "common.h"

#include <unistd.h>

#include "kiln/kiln_cl.h"

/* Checks one device record for what every OpenCL device must report. */
static void check_device(const kiln_device_info *d)
{
  assert_non_null(d);
  assert_true(strlen(d->name) > 0);
  assert_true(strlen(d->platform_name) > 0);
  assert_non_null(strstr(d->version, "OpenCL "));
  assert_true(d->type & (KILN_DEVICE_CPU | KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR |
                         KILN_DEVICE_CUSTOM));
  assert_true(d->global_mem_bytes > 0);
  /* OpenCL requires the largest allocation to be at least a quarter of the
   * global memory, and it cannot exceed it. */
  assert_true(d->max_alloc_bytes >= d->global_mem_bytes / 4 ||
              d->max_alloc_bytes >= 128u << 20);
  assert_true(d->max_alloc_bytes <= d->global_mem_bytes);
  assert_true(d->compute_units >= 1);
  assert_true(d->max_work_group_size >= 1);
  assert_non_null(d->extensions);
}

static void test_runtime_create_destroy_repeatedly(void **state)
{
  (void)state;
  for (int i = 0; i < 25; i++) {
    kiln_runtime *rt = NULL;
    assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
    assert_non_null(rt);
    check_device(kiln_runtime_device(rt));
    assert_kiln_ok(rt, kiln_finish(rt));
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  }
}

static void test_runtime_devices_listed(void **state)
{
  kiln_runtime *rt = *state;
  size_t n = kiln_runtime_device_count(rt);
  assert_true(n >= 1);
  const kiln_device_info *chosen = kiln_runtime_device(rt);
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    check_device(d);
    found += d == chosen;
  }
  assert_int_equal(found, 1);
  assert_null(kiln_runtime_device_at(rt, n));
  assert_null(kiln_runtime_device_at(rt, SIZE_MAX));
  assert_true(chosen->available);
  assert_true(chosen->type & (KILN_DEVICE_GPU | KILN_DEVICE_CPU));
  assert_non_null(kiln_runtime_diagnostics(rt));
}

/* The OpenCL objects are real and match the record, as OpenCL itself says. */
static void test_runtime_cl_objects(void **state)
{
  kiln_runtime *rt = *state;
  cl_device_id dev = kiln_runtime_cl_device(rt);
  cl_context ctx = kiln_runtime_cl_context(rt);
  cl_command_queue q = kiln_runtime_cl_queue(rt);
  assert_non_null(kiln_runtime_cl_platform(rt));
  char name[1024];
  assert_int_equal(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL),
                   CL_SUCCESS);
  assert_string_equal(name, kiln_runtime_device(rt)->name);
  cl_ulong mem = 0;
  assert_int_equal(
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL), CL_SUCCESS);
  assert_int_equal(mem, kiln_runtime_device(rt)->global_mem_bytes);
  cl_platform_id plat = NULL;
  assert_int_equal(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL),
                   CL_SUCCESS);
  assert_ptr_equal(plat, kiln_runtime_cl_platform(rt));

  cl_command_queue_properties props = 0;
  assert_int_equal(
    clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL),
    CL_SUCCESS);
  assert_true(props & CL_QUEUE_PROFILING_ENABLE);
  assert_false(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cl_context qctx = NULL;
  assert_int_equal(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL),
                   CL_SUCCESS);
  assert_ptr_equal(qctx, ctx);
}

static void test_runtime_null_arguments(void **state)
{
  (void)state;
  assert_kiln_ok(NULL, kiln_runtime_destroy(NULL));
  assert_null(kiln_runtime_device(NULL));
  assert_int_equal(kiln_runtime_device_count(NULL), 0);
  assert_null(kiln_runtime_device_at(NULL, 0));
  assert_null(kiln_runtime_diagnostics(NULL));
  assert_null(kiln_runtime_cl_context(NULL));
  assert_null(kiln_runtime_cl_queue(NULL));
  assert_null(kiln_runtime_cl_device(NULL));
  assert_null(kiln_runtime_cl_platform(NULL));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_finish: rt is NULL",
                    kiln_finish(NULL));
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_memory_stats",
                    kiln_memory_stats(NULL, &mu));
}

/* Each runtime keeps its own last error; one's failure is not another's. */
static void test_runtime_errors_are_per_runtime(void **state)
{
  (void)state;
  kiln_runtime *a = NULL, *b = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &a));
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &b));
  assert_string_equal(kiln_last_error(a), "");
  kiln_buffer *buf = NULL;
  assert_kiln_fails(a, KILN_ERR_INVALID_ARGUMENT, "count is 0",
                    kiln_buffer_create(a, KILN_F32, 0, 0, &buf));
  assert_string_equal(kiln_last_error(b), "");
  /* A success does not clear the last failure. */
  assert_kiln_ok(a, kiln_finish(a));
  assert_non_null(strstr(kiln_last_error(a), "count is 0"));
  assert_kiln_ok(NULL, kiln_runtime_destroy(a));
  assert_kiln_ok(NULL, kiln_runtime_destroy(b));
}

static void test_runtime_memory_limit_options(void **state)
{
  (void)state;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = 3u << 20;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
  assert_int_equal(mu.limit_bytes, 3u << 20);
  uint64_t global = kiln_runtime_device(rt)->global_mem_bytes;
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));

  /* The smaller of the two caps holds; a limit above the device's memory
   * leaves the device's memory as the budget. */
  opts.memory_limit = UINT64_MAX;
  opts.memory_fraction = 0.25;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
  assert_int_equal(mu.limit_bytes, (uint64_t)((double)global * 0.25));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  opts.memory_fraction = 0;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  assert_kiln_ok(rt, kiln_memory_stats(rt, &mu));
  assert_int_equal(mu.limit_bytes, global);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_runtime_no_platform(void **state)
{
  (void)state;
  for (int i = 0; i < 3; i++) {
    kiln_runtime *rt = (kiln_runtime *)&rt;
    assert_kiln_fails(NULL, KILN_ERR_NO_DEVICE, "no OpenCL platform found",
                      kiln_runtime_create(NULL, &rt));
    assert_null(rt);
    const char *msg = kiln_last_error(NULL);
    assert_non_null(strstr(msg, "pocl-opencl-icd"));
    assert_non_null(strstr(msg, getenv("OCL_ICD_VENDORS")));
  }
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--no-platform") == 0) {
    const struct CMUnitTest without[] = {cmocka_unit_test(test_runtime_no_platform)};
    return kiln_test_run_without_platforms(without);
  }
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_runtime_create_destroy_repeatedly),
    cmocka_unit_test(test_runtime_devices_listed),
    cmocka_unit_test(test_runtime_cl_objects),
    cmocka_unit_test(test_runtime_null_arguments),
    cmocka_unit_test(test_runtime_errors_are_per_runtime),
    cmocka_unit_test(test_runtime_memory_limit_options),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
