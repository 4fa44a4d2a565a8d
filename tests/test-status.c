/*
 * test-status.c — status names and texts, OpenCL error names, element types
 * and the version. No device needed.
 */
#include "common.h"

/* The list the header publishes, expanded here independently of status.c. */
static const struct {
  kiln_status status;
  const char *name;
  int code;
} statuses[] = {
#define XX(name, code, text) {KILN_##name, #name, code},
  KILN_STATUS_MAP(XX)
#undef XX
};
#define NSTATUS (sizeof statuses / sizeof statuses[0])

static void test_status_names_match_enum(void **state)
{
  (void)state;
  for (size_t i = 0; i < NSTATUS; i++) {
    assert_int_equal(statuses[i].status, statuses[i].code);
    assert_string_equal(kiln_status_name(statuses[i].status), statuses[i].name);
  }
  assert_int_equal(KILN_OK, 0);
  assert_string_equal(kiln_status_name(KILN_ERR_OUT_OF_MEMORY), "ERR_OUT_OF_MEMORY");
}

static void test_status_codes_are_unique_and_grouped(void **state)
{
  (void)state;
  for (size_t i = 0; i < NSTATUS; i++) {
    if (i > 0)
      assert_true(statuses[i].code < 0);
    for (size_t j = i + 1; j < NSTATUS; j++) {
      assert_int_not_equal(statuses[i].code, statuses[j].code);
      assert_string_not_equal(kiln_status_string(statuses[i].status),
                              kiln_status_string(statuses[j].status));
    }
  }
  /* Published codes are never renumbered. */
  assert_int_equal(KILN_ERR_INVALID_ARGUMENT, -1);
  assert_int_equal(KILN_ERR_NO_DEVICE, -100);
  assert_int_equal(KILN_ERR_OUT_OF_MEMORY, -101);
}

static void test_status_strings_are_sentences(void **state)
{
  (void)state;
  for (size_t i = 0; i < NSTATUS; i++) {
    const char *s = kiln_status_string(statuses[i].status);
    assert_non_null(s);
    assert_true(strlen(s) > 5);
  }
  assert_string_equal(kiln_status_string(KILN_OK), "success");
}

static void test_status_unknown_values(void **state)
{
  (void)state;
  assert_string_equal(kiln_status_name((kiln_status)12345), "UNKNOWN");
  assert_string_equal(kiln_status_name((kiln_status)-99999), "UNKNOWN");
  assert_string_equal(kiln_status_string((kiln_status)12345), "unknown status");
}

static void test_status_cl_error_names(void **state)
{
  (void)state;
  /* Spot checks from the Khronos headers' numbers; check-cl-errors.py covers
   * every code the installed headers define. */
  static const struct {
    int code;
    const char *name;
  } known[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-30, "CL_INVALID_VALUE"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1010, "CL_INVALID_DX9_MEDIA_ADAPTER_KHR"},
    {-1142, "CL_INVALID_SEMAPHORE_KHR"},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    assert_string_equal(kiln_cl_error_name(known[i].code), known[i].name);
  assert_string_equal(kiln_cl_error_name(-20), "CL_UNKNOWN_ERROR");
  assert_string_equal(kiln_cl_error_name(1), "CL_UNKNOWN_ERROR");
  assert_string_equal(kiln_cl_error_name(-100000), "CL_UNKNOWN_ERROR");
}

static void test_status_dtypes(void **state)
{
  (void)state;
  const kiln_test_dtype *types = kiln_test_dtypes;
  for (size_t i = 0; i < COUNT(kiln_test_dtypes); i++) {
    assert_int_equal(kiln_dtype_size(types[i].dtype), types[i].size);
    assert_string_equal(kiln_dtype_name(types[i].dtype), types[i].name);
  }
  assert_int_equal(kiln_dtype_size((kiln_dtype)0), 0);
  assert_int_equal(kiln_dtype_size((kiln_dtype)8), 0);
  assert_int_equal(kiln_dtype_size((kiln_dtype)-1), 0);
  assert_string_equal(kiln_dtype_name((kiln_dtype)0), "invalid");
}

static void test_status_version(void **state)
{
  (void)state;
  char expect[64];
  snprintf(expect, sizeof expect, "%d.%d.%d", KILN_VERSION_MAJOR, KILN_VERSION_MINOR,
           KILN_VERSION_PATCH);
  assert_string_equal(kiln_version(), expect);
  assert_string_equal(kiln_version(), KILN_VERSION_STRING);
  assert_int_equal(kiln_version_number(), KILN_VERSION_NUMBER);
  assert_int_equal(kiln_version_number(), KILN_VERSION_MAJOR * 10000 +
                                            KILN_VERSION_MINOR * 100 +
                                            KILN_VERSION_PATCH);
}

static void test_status_last_error_starts_empty(void **state)
{
  (void)state;
  /* A thread that never failed has an empty message, never NULL. */
  assert_string_equal(kiln_last_error(NULL), "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_status_last_error_starts_empty),
    cmocka_unit_test(test_status_names_match_enum),
    cmocka_unit_test(test_status_codes_are_unique_and_grouped),
    cmocka_unit_test(test_status_strings_are_sentences),
    cmocka_unit_test(test_status_unknown_values),
    cmocka_unit_test(test_status_cl_error_names),
    cmocka_unit_test(test_status_dtypes),
    cmocka_unit_test(test_status_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
