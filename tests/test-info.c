/*
 * test-info.c — the device list without a runtime, and the property API:
 * every device has the required properties, the record's fields say what
 * the property text says, queries a device does not support read "n/a", and
 * bad arguments fail cleanly.
 *
 * Run with PoCL, Oclgrind and rusticl registered (OCL_ICD_VENDORS; common.h
 * counts them) and POCL_DEVICES="pthread pthread". With
 * --no-platform it runs with OCL_ICD_VENDORS at an empty folder. On a
 * machine's own devices (one GPU) the counts are skipped, saying so.
 */
#include "common.h"

#include <unistd.h>

#include "clfault.h"

/* The property named `name` of a device, or fails the test. */
static kiln_property device_prop(const kiln_device_info *d, const char *name)
{
  kiln_property p;
  for (size_t i = 0; i < kiln_device_property_count(); i++) {
    assert_kiln_ok(NULL, kiln_device_property(d, i, &p));
    if (strcmp(p.name, name) == 0)
      return p;
  }
  fail_msg("device '%s' has no property %s", d->name, name);
  return p;
}

static kiln_property platform_prop(const kiln_platform_info *plat, const char *name)
{
  kiln_property p;
  for (size_t i = 0; i < kiln_platform_property_count(); i++) {
    assert_kiln_ok(NULL, kiln_platform_property(plat, i, &p));
    if (strcmp(p.name, name) == 0)
      return p;
  }
  fail_msg("platform '%s' has no property %s", plat->name, name);
  return p;
}

static int list_setup(void **state)
{
  kiln_device_list *list = NULL;
  if (kiln_device_list_create(NULL, &list) != KILN_OK) {
    fprintf(stderr, "kiln_device_list_create: %s\n", kiln_last_error(NULL));
    return -1;
  }
  *state = list;
  return 0;
}

static int list_teardown(void **state)
{
  return kiln_device_list_destroy(*state) == KILN_OK ? 0 : -1;
}

static void test_info_list_without_runtime(void **state)
{
  const kiln_device_list *list = *state;
  size_t n = kiln_device_list_count(list), total = 0;
  int meson = kiln_test_meson_devices();
  /* Two PoCL devices, plus Oclgrind's and llvmpipe when registered. */
  if (meson) {
    assert_int_equal(n, kiln_test_devices());
    assert_int_equal(kiln_device_list_platform_count(list), kiln_test_platforms());
    kiln_test_assert_no_failures(kiln_device_list_diagnostics(list));
  }
  assert_true(n >= 1);
  for (size_t p = 0; p < kiln_device_list_platform_count(list); p++) {
    const kiln_platform_info *plat = kiln_device_list_platform(list, p);
    assert_non_null(plat);
    assert_true(strlen(plat->name) > 0);
    assert_string_equal(platform_prop(plat, "CL_PLATFORM_NAME").raw, plat->name);
    assert_string_equal(platform_prop(plat, "CL_PLATFORM_VERSION").raw, plat->version);
    total += plat->device_count;
  }
  assert_int_equal(total, n);
  for (size_t i = 0; i < n; i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    const kiln_platform_info *plat = kiln_device_platform(d);
    assert_non_null(plat);
    assert_int_equal(plat->index, d->platform_index);
    assert_ptr_equal(plat->name, d->platform_name);
  }
  kiln_test_require(meson, KILN_TEST_MESON_DEVICES);
}

static void test_info_required_properties(void **state)
{
  static const char *const required[] = {
    "CL_DEVICE_NAME",      "CL_DEVICE_VERSION",         "CL_DEVICE_TYPE",
    "CL_DEVICE_AVAILABLE", "CL_DEVICE_GLOBAL_MEM_SIZE", "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
  };
  const kiln_device_list *list = *state;
  /* OpenCL 1.2 alone defines more than 60 device queries. */
  assert_true(kiln_device_property_count() >= 60);
  assert_true(kiln_platform_property_count() >= 5);
  for (size_t i = 0; i < kiln_device_list_count(list); i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
      kiln_property p = device_prop(d, required[r]);
      assert_true(p.available);
      assert_string_equal(p.why, "");
      assert_true(strlen(p.label) > 0);
    }
    /* Names are unique, so a name finds one row. */
    for (size_t a = 0; a < kiln_device_property_count(); a++) {
      kiln_property pa, pb;
      assert_kiln_ok(NULL, kiln_device_property(d, a, &pa));
      for (size_t b = a + 1; b < kiln_device_property_count(); b++) {
        assert_kiln_ok(NULL, kiln_device_property(d, b, &pb));
        assert_string_not_equal(pa.name, pb.name);
      }
    }
  }
}

/* The record's fields, and the property each comes from. */
typedef enum { TEXT, U32, U64, HEX32, FLAG } field_type;
static const struct {
  const char *name;
  size_t offset;
  field_type type;
} fields[] = {
#define F(name, member, type)                                                            \
  {                                                                                      \
    name, offsetof(kiln_device_info, member), type                                       \
  }
  F("CL_DEVICE_NAME", name, TEXT),
  F("CL_DEVICE_VENDOR", vendor, TEXT),
  F("CL_DEVICE_VERSION", version, TEXT),
  F("CL_DRIVER_VERSION", driver_version, TEXT),
  F("CL_DEVICE_OPENCL_C_VERSION", opencl_c_version, TEXT),
  F("CL_DEVICE_EXTENSIONS", extensions, TEXT),
  F("CL_DEVICE_VENDOR_ID", vendor_id, HEX32),
  F("CL_DEVICE_MAX_COMPUTE_UNITS", compute_units, U32),
  F("CL_DEVICE_MAX_CLOCK_FREQUENCY", clock_mhz, U32),
  F("CL_DEVICE_GLOBAL_MEM_SIZE", global_mem_bytes, U64),
  F("CL_DEVICE_MAX_MEM_ALLOC_SIZE", max_alloc_bytes, U64),
  F("CL_DEVICE_LOCAL_MEM_SIZE", local_mem_bytes, U64),
  F("CL_DEVICE_GLOBAL_MEM_CACHE_SIZE", global_mem_cache_bytes, U64),
  F("CL_DEVICE_MAX_WORK_GROUP_SIZE", max_work_group_size, U64),
  F("CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT", native_vector_width_float, U32),
  F("CL_DEVICE_AVAILABLE", available, FLAG),
  F("CL_DEVICE_COMPILER_AVAILABLE", compiler_available, FLAG),
  F("CL_DEVICE_HOST_UNIFIED_MEMORY", host_unified_memory, FLAG),
#undef F
};

static void check_field(const kiln_device_info *d, size_t f)
{
  kiln_property p = device_prop(d, fields[f].name);
  const char *field = (const char *)d + fields[f].offset;
  assert_true(p.available);
  switch (fields[f].type) {
  case TEXT: assert_string_equal(*(const char *const *)field, p.raw); break;
  case U32:
  case HEX32:
    assert_int_equal(*(const uint32_t *)field,
                     strtoull(p.raw, NULL, fields[f].type == HEX32 ? 16 : 10));
    break;
  case U64: assert_int_equal(*(const uint64_t *)field, strtoull(p.raw, NULL, 10)); break;
  case FLAG:
    assert_string_equal(p.raw, *(const int *)field ? "CL_TRUE" : "CL_FALSE");
    assert_string_equal(p.human, *(const int *)field ? "Yes" : "No");
    break;
  }
}

static void test_info_fields_match_properties(void **state)
{
  const kiln_device_list *list = *state;
  for (size_t i = 0; i < kiln_device_list_count(list); i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
      check_field(d, f);
    assert_string_equal(platform_prop(kiln_device_platform(d), "CL_PLATFORM_VENDOR").raw,
                        d->platform_vendor);
  }
}

/* How values are written, raw as clinfo --raw and human as clinfo. */
static void test_info_value_formats(void **state)
{
  const kiln_device_list *list = *state;
  for (size_t i = 0; i < kiln_device_list_count(list); i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    kiln_property mem = device_prop(d, "CL_DEVICE_GLOBAL_MEM_SIZE");
    assert_int_equal(strncmp(mem.human, mem.raw, strlen(mem.raw)), 0);
    assert_non_null(strstr(mem.human, "iB)")); /* "4802110464 (4.472GiB)" */
    assert_non_null(strstr(device_prop(d, "CL_DEVICE_MAX_CLOCK_FREQUENCY").human, "MHz"));
    /* hex, as clinfo; a vendor id of 0 (rusticl's) is "0", as clinfo */
    const char *vid = device_prop(d, "CL_DEVICE_VENDOR_ID").raw;
    assert_true(strncmp(vid, "0x", 2) == 0 || strcmp(vid, "0") == 0);
    kiln_property sizes = device_prop(d, "CL_DEVICE_MAX_WORK_ITEM_SIZES");
    assert_non_null(strchr(sizes.raw, ' '));
    assert_non_null(strchr(sizes.human, 'x'));
    assert_non_null(
      strstr(device_prop(d, "CL_DEVICE_SINGLE_FP_CONFIG").raw, "CL_FP_ROUND_TO_NEAREST"));
    if (d->vendor_family == KILN_VENDOR_POCL) {
      assert_string_equal(device_prop(d, "CL_DEVICE_TYPE").raw, "CL_DEVICE_TYPE_CPU");
      assert_string_equal(device_prop(d, "CL_DEVICE_TYPE").human, "CPU");
      assert_string_equal(device_prop(d, "CL_DEVICE_GLOBAL_MEM_CACHE_TYPE").raw,
                          "CL_READ_WRITE_CACHE");
    }
  }
}

/* Whether d's extensions include ext (a whole word of the list). */
static int has_extension(const kiln_device_info *d, const char *ext)
{
  size_t n = strlen(ext);
  for (const char *p = d->extensions; p && (p = strstr(p, ext)) != NULL; p += n)
    if ((p == d->extensions || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

/* A 3.0 query on a device below 3.0, and a vendor extension's query on a
 * device without it, read "n/a" and say why; the fields read 0. */
static void test_info_unsupported_reads_na(void **state)
{
  const kiln_device_list *list = *state;
  int old_seen = 0;
  for (size_t i = 0; i < kiln_device_list_count(list); i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    kiln_property v = device_prop(d, "CL_DEVICE_NUMERIC_VERSION");
    if (d->opencl_version >= 300) {
      assert_true(v.available);
      assert_int_equal(strncmp(v.raw, "0x", 2), 0);
    } else {
      old_seen = 1;
      assert_false(v.available);
      assert_string_equal(v.raw, "n/a");
      assert_string_equal(v.human, "n/a");
      assert_non_null(strstr(v.why, "needs OpenCL 3.0"));
    }
    /* NVIDIA's extension: read where the device has it (the field is the
     * value), "n/a" and why where not (the field is 0) */
    kiln_property nv = device_prop(d, "CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV");
    if (has_extension(d, "cl_nv_device_attribute_query")) {
      assert_true(nv.available);
      assert_true(d->arch_major > 0);
      assert_int_equal(strtoul(nv.raw, NULL, 10), d->arch_major);
      continue;
    }
    assert_false(nv.available);
    assert_non_null(strstr(nv.why, "cl_nv_device_attribute_query"));
    if (d->vendor_family != KILN_VENDOR_AMD) /* arch_major is also AMD's GFX IP */
      assert_int_equal(d->arch_major, 0);
  }
  /* Oclgrind is OpenCL 1.2: registered, it must have been seen. */
  if (kiln_test_has_oclgrind())
    assert_true(old_seen);
}

/* The runtime finds its devices the same way: its records have properties. */
static void test_info_runtime_records(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  for (size_t i = 0; i < kiln_runtime_device_count(rt); i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    assert_string_equal(device_prop(d, "CL_DEVICE_NAME").raw, d->name);
    assert_string_equal(kiln_device_platform(d)->name, d->platform_name);
  }
  assert_string_equal(device_prop(kiln_runtime_device(rt), "CL_DEVICE_VERSION").raw,
                      kiln_runtime_device(rt)->version);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* A query that fails reads "n/a" with the call and the error in its row;
 * the rest of the record is read. */
static void test_info_failed_query_reads_na(void **state)
{
  (void)state;
  kiln_device_list *list = NULL;
  /* Calls 1 to 4 read the name and the extensions (size, then text); call 5
   * asks the size of CL_DEVICE_VENDOR, which kiln does not require. */
  clfault_arm("clGetDeviceInfo", 5, 1, CL_INVALID_VALUE);
  kiln_status st = kiln_device_list_create(NULL, &list);
  int hits = clfault_hits();
  clfault_disarm();
  assert_kiln_ok(NULL, st);
  assert_int_equal(hits, 1);
  const kiln_device_info *d = kiln_device_list_at(list, 0);
  kiln_property vendor = device_prop(d, "CL_DEVICE_VENDOR");
  assert_false(vendor.available);
  assert_string_equal(vendor.raw, "n/a");
  assert_string_equal(vendor.why, "clGetDeviceInfo(CL_DEVICE_VENDOR) failed with "
                                  "CL_INVALID_VALUE (-30)");
  assert_string_equal(d->vendor, "");
  assert_true(device_prop(d, "CL_DEVICE_VENDOR_ID").available);
  assert_true(device_prop(d, "CL_DEVICE_MAX_COMPUTE_UNITS").available);
  /* the other devices' queries did not fail */
  for (size_t i = 1; i < kiln_device_list_count(list); i++)
    assert_true(device_prop(kiln_device_list_at(list, i), "CL_DEVICE_VENDOR").available);
  assert_kiln_ok(NULL, kiln_device_list_destroy(list));
}

static void test_info_null_and_range(void **state)
{
  const kiln_device_list *list = *state;
  const kiln_device_info *d = kiln_device_list_at(list, 0);
  const kiln_platform_info *plat = kiln_device_list_platform(list, 0);
  size_t nd = kiln_device_property_count(), np = kiln_platform_property_count();
  kiln_property p;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_device_list_create(NULL, NULL));
  assert_kiln_ok(NULL, kiln_device_list_destroy(NULL));
  assert_int_equal(kiln_device_list_count(NULL), 0);
  assert_null(kiln_device_list_at(NULL, 0));
  assert_null(kiln_device_list_at(list, kiln_device_list_count(list)));
  assert_null(kiln_device_list_diagnostics(NULL));
  assert_int_equal(kiln_device_list_platform_count(NULL), 0);
  assert_null(kiln_device_list_platform(NULL, 0));
  assert_null(kiln_device_list_platform(list, kiln_device_list_platform_count(list)));
  assert_null(kiln_device_platform(NULL));
  memset(&p, 0xff, sizeof p);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "info is NULL",
                    kiln_device_property(NULL, 0, &p));
  assert_null(p.name);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_device_property(d, 0, NULL));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out of range",
                    kiln_device_property(d, nd, &p));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out of range",
                    kiln_device_property(d, (size_t)-1, &p));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "platform is NULL",
                    kiln_platform_property(NULL, 0, &p));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out of range",
                    kiln_platform_property(plat, np, &p));
  assert_kiln_ok(NULL, kiln_platform_property(plat, np - 1, &p));
}

static void test_info_no_platform(void **state)
{
  (void)state;
  kiln_device_list *list = NULL;
  assert_kiln_ok(NULL, kiln_device_list_create(NULL, &list));
  assert_int_equal(kiln_device_list_count(list), 0);
  assert_int_equal(kiln_device_list_platform_count(list), 0);
  const char *notes = kiln_device_list_diagnostics(list);
  assert_non_null(strstr(notes, "no OpenCL platform found"));
  assert_non_null(strstr(notes, "pocl-opencl-icd"));
  assert_non_null(strstr(notes, getenv("OCL_ICD_VENDORS")));
  assert_kiln_ok(NULL, kiln_device_list_destroy(list));
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--no-platform") == 0) {
    const struct CMUnitTest without[] = {cmocka_unit_test(test_info_no_platform)};
    return kiln_test_run_without_platforms(without);
  }
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_info_list_without_runtime),
    cmocka_unit_test(test_info_required_properties),
    cmocka_unit_test(test_info_fields_match_properties),
    cmocka_unit_test(test_info_value_formats),
    cmocka_unit_test(test_info_unsupported_reads_na),
    cmocka_unit_test(test_info_runtime_records),
    cmocka_unit_test(test_info_failed_query_reads_na),
    cmocka_unit_test(test_info_null_and_range),
  };
  return cmocka_run_group_tests(tests, list_setup, list_teardown);
}
