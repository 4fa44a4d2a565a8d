/*
 * test-clblast-status.c — the CLBlast backend's table of CLBlastStatusCode:
 * every code clblast_c.h defines has its name and a sensible kiln_status,
 * unknown codes get a generic message, and the half conversion of alpha and
 * beta rounds to nearest even. No device needed. Built only with CLBlast.
 *
 * Optional argument: the path of clblast_c.h; every code its
 * CLBlastStatusCode enum lists must then be known by name too, so a newer
 * CLBlast with new codes fails here until the table learns them.
 */
#include "backends/clblast/clblast.h"
#include "base/error.h"

#include <clblast_c.h>
#include <math.h>

#include "common.h"

static const char *header_path;

/* What each code of clblast_c.h 1.5.3 should become, written down here
 * independently of clblast.c. OpenCL's codes map as kiln maps OpenCL's. */
#define FROM_CL ((kiln_status)1)
static const struct {
  int code;
  const char *name;
  kiln_status status;
} expected[] = {
#define ROW(name, status)                                                                \
  {                                                                                      \
    name, #name, status                                                                  \
  }
  ROW(CLBlastSuccess, KILN_OK),
  ROW(CLBlastOpenCLCompilerNotAvailable, KILN_ERR_BUILD),
  ROW(CLBlastTempBufferAllocFailure, KILN_ERR_OUT_OF_MEMORY),
  ROW(CLBlastOpenCLOutOfResources, KILN_ERR_OUT_OF_MEMORY),
  ROW(CLBlastOpenCLOutOfHostMemory, KILN_ERR_OUT_OF_HOST_MEMORY),
  ROW(CLBlastOpenCLBuildProgramFailure, KILN_ERR_BUILD),
  ROW(CLBlastInvalidValue, FROM_CL),
  ROW(CLBlastInvalidCommandQueue, FROM_CL),
  ROW(CLBlastInvalidMemObject, FROM_CL),
  ROW(CLBlastInvalidBinary, FROM_CL),
  ROW(CLBlastInvalidBuildOptions, KILN_ERR_BUILD),
  ROW(CLBlastInvalidProgram, FROM_CL),
  ROW(CLBlastInvalidProgramExecutable, FROM_CL),
  ROW(CLBlastInvalidKernelName, FROM_CL),
  ROW(CLBlastInvalidKernelDefinition, FROM_CL),
  ROW(CLBlastInvalidKernel, FROM_CL),
  ROW(CLBlastInvalidArgIndex, FROM_CL),
  ROW(CLBlastInvalidArgValue, FROM_CL),
  ROW(CLBlastInvalidArgSize, FROM_CL),
  ROW(CLBlastInvalidKernelArgs, FROM_CL),
  ROW(CLBlastInvalidLocalNumDimensions, FROM_CL),
  ROW(CLBlastInvalidLocalThreadsTotal, FROM_CL),
  ROW(CLBlastInvalidLocalThreadsDim, FROM_CL),
  ROW(CLBlastInvalidGlobalOffset, FROM_CL),
  ROW(CLBlastInvalidEventWaitList, FROM_CL),
  ROW(CLBlastInvalidEvent, FROM_CL),
  ROW(CLBlastInvalidOperation, FROM_CL),
  ROW(CLBlastInvalidBufferSize, KILN_ERR_OUT_OF_MEMORY),
  ROW(CLBlastInvalidGlobalWorkSize, FROM_CL),
  ROW(CLBlastNotImplemented, KILN_ERR_UNSUPPORTED),
  ROW(CLBlastInvalidMatrixA, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidMatrixB, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidMatrixC, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidVectorX, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidVectorY, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidDimension, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidLeadDimA, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidLeadDimB, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidLeadDimC, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidIncrementX, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidIncrementY, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInsufficientMemoryA, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastInsufficientMemoryB, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastInsufficientMemoryC, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastInsufficientMemoryX, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastInsufficientMemoryY, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastInsufficientMemoryTemp, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastInvalidBatchCount, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidOverrideKernel, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastMissingOverrideParameter, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInvalidLocalMemUsage, KILN_ERR_UNSUPPORTED),
  ROW(CLBlastNoHalfPrecision, KILN_ERR_UNSUPPORTED),
  ROW(CLBlastNoDoublePrecision, KILN_ERR_UNSUPPORTED),
  ROW(CLBlastInvalidVectorScalar, KILN_ERR_INVALID_ARGUMENT),
  ROW(CLBlastInsufficientMemoryScalar, KILN_ERR_OUT_OF_BOUNDS),
  ROW(CLBlastDatabaseError, KILN_ERR_UNSUPPORTED),
  ROW(CLBlastUnknownError, KILN_ERR_OPENCL),
  ROW(CLBlastUnexpectedError, KILN_ERR_OPENCL),
#undef ROW
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

static void test_clblast_status_every_code(void **state)
{
  (void)state;
  for (size_t i = 0; i < NEXPECTED; i++) {
    int code = expected[i].code;
    kiln_status want =
      expected[i].status == FROM_CL ? kiln__status_from_cl(code) : expected[i].status;
    assert_string_equal(kiln__clblast_status_name(code), expected[i].name);
    if (kiln__status_from_clblast(code) != want)
      fail_msg("%s (%d) maps to %s, expected %s", expected[i].name, code,
               kiln_status_name(kiln__status_from_clblast(code)), kiln_status_name(want));
    /* Only success is KILN_OK, and the codes shared with OpenCL map the way
     * the rest of kiln maps OpenCL's errors. */
    assert_true((code == 0) == (want == KILN_OK));
    if (code > -1000 && code < 0)
      assert_int_equal(kiln__status_from_clblast(code), kiln__status_from_cl(code));
  }
}

static void test_clblast_status_message_names_call_and_code(void **state)
{
  (void)state;
  kiln_status st = kiln__fail_clblast(NULL, CLBlastInsufficientMemoryC, "CLBlastSgemm",
                                      "kiln_gemm: a %dx%dx%d float32 product", 8, 8, 8);
  assert_int_equal(st, KILN_ERR_OUT_OF_BOUNDS);
  assert_string_equal(kiln_last_error(NULL),
                      "kiln_gemm: a 8x8x8 float32 product: CLBlastSgemm failed with "
                      "CLBlastInsufficientMemoryC (-1009): matrix C's buffer is too "
                      "small for its offset, leading dimension and size");
  /* A code shared with OpenCL also gives OpenCL's name. */
  st = kiln__fail_clblast(NULL, CLBlastOpenCLOutOfResources, "CLBlastDgemm", "kiln_gemm");
  assert_int_equal(st, KILN_ERR_OUT_OF_MEMORY);
  assert_non_null(strstr(kiln_last_error(NULL),
                         "CLBlastDgemm failed with CLBlastOpenCLOutOfResources "
                         "(-5, CL_OUT_OF_RESOURCES): "));
  /* Every known code gives a message naming it and its number. */
  for (size_t i = 1; i < NEXPECTED; i++) {
    char want[128];
    snprintf(want, sizeof want, "X failed with %s (%d", expected[i].name,
             expected[i].code);
    kiln__fail_clblast(NULL, expected[i].code, "X", "kiln_gemm");
    if (!strstr(kiln_last_error(NULL), want))
      fail_msg("message for %s: %s", expected[i].name, kiln_last_error(NULL));
  }
}

static void test_clblast_status_unknown_codes(void **state)
{
  (void)state;
  /* Not a CLBlast code, nor an OpenCL one. */
  assert_string_equal(kiln__clblast_status_name(-4242), "unknown CLBlast status");
  assert_int_equal(kiln__status_from_clblast(-4242), KILN_ERR_OPENCL);
  assert_int_equal(kiln__status_from_clblast(12345), KILN_ERR_OPENCL);
  kiln__fail_clblast(NULL, -4242, "CLBlastHgemm", "kiln_gemm");
  assert_string_equal(kiln_last_error(NULL),
                      "kiln_gemm: CLBlastHgemm failed with unknown CLBlast status "
                      "(-4242): an OpenCL call failed");
  /* OpenCL codes CLBlast passes through without naming them. */
  assert_string_equal(kiln__clblast_status_name(CL_INVALID_CONTEXT),
                      "CL_INVALID_CONTEXT");
  assert_int_equal(kiln__status_from_clblast(CL_INVALID_CONTEXT), KILN_ERR_OPENCL);
  assert_string_equal(kiln__clblast_status_name(CL_DEVICE_NOT_AVAILABLE),
                      "CL_DEVICE_NOT_AVAILABLE");
  assert_int_equal(kiln__status_from_clblast(CL_DEVICE_NOT_AVAILABLE),
                   KILN_ERR_DEVICE_UNAVAILABLE);
}

/* Every "CLBlastXxx = -n," line of the CLBlastStatusCode enum in the header
 * must be a code the table knows by that name. */
static void test_clblast_status_header_codes_all_named(void **state)
{
  (void)state;
  if (!header_path)
    skip();
  FILE *f = fopen(header_path, "r");
  if (!f)
    fail_msg("cannot open %s", header_path);
  char line[512];
  int in_enum = 0, seen = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "typedef enum CLBlastStatusCode_"))
      in_enum = 1;
    else if (in_enum && strstr(line, "} CLBlastStatusCode;"))
      break;
    char name[128];
    int code;
    if (in_enum && sscanf(line, " %127[A-Za-z0-9_] = %d", name, &code) == 2) {
      seen++;
      if (strcmp(kiln__clblast_status_name(code), name) != 0)
        fail_msg("%s: %s = %d is named '%s' by kiln", header_path, name, code,
                 kiln__clblast_status_name(code));
    }
  }
  fclose(f);
  assert_int_equal(in_enum, 1);
  assert_true(seen >= (int)NEXPECTED);
}

/* binary16 bits to double, written independently of the code under test. */
static double half_value(uint16_t h)
{
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}

static void test_clblast_status_half_rounds_to_nearest_even(void **state)
{
  (void)state;
  static const struct {
    double d;
    uint16_t h;
  } cases[] = {
    {1.0, 0x3c00},
    {-2.0, 0xc000},
    {0.1, 0x2e66},
    {0.0, 0x0000},
    {-0.0, 0x8000},
    {65504.0, 0x7bff},
    {65519.99, 0x7bff},
    {65520.0, 0x7c00},
    {1e300, 0x7c00},
    {-INFINITY, 0xfc00},
    {0x1p-14, 0x0400},
    {0x1p-24, 0x0001},
    {0x1p-25, 0x0000},
    {0x1.0000001p-25, 0x0001},
    {0x1.8p-24, 0x0002},
    {0x1.ffcp-15, 0x0400},
    {1.0 + 0x1p-11, 0x3c00},
    {1.0 + 0x3p-11, 0x3c02},
    {1.0 + 0x1.0000001p-11, 0x3c01},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (kiln__half_from_double(cases[i].d) != cases[i].h)
      fail_msg("%a -> %04x, expected %04x", cases[i].d,
               kiln__half_from_double(cases[i].d), cases[i].h);
  uint16_t nan = kiln__half_from_double(NAN);
  assert_true((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
  /* Every finite half round-trips, and the midpoint between neighbours goes
   * to the even one. */
  for (uint32_t h = 0; h < 0x7c00; h++) {
    assert_int_equal(kiln__half_from_double(half_value((uint16_t)h)), h);
    assert_int_equal(kiln__half_from_double(-half_value((uint16_t)h)), h | 0x8000);
    if (h + 1 < 0x7c00) {
      double mid = (half_value((uint16_t)h) + half_value((uint16_t)(h + 1))) / 2;
      assert_int_equal(kiln__half_from_double(mid), (h & 1) ? h + 1 : h);
    }
  }
}

int main(int argc, char **argv)
{
  if (argc > 1)
    header_path = argv[1];
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_clblast_status_every_code),
    cmocka_unit_test(test_clblast_status_message_names_call_and_code),
    cmocka_unit_test(test_clblast_status_unknown_codes),
    cmocka_unit_test(test_clblast_status_header_codes_all_named),
    cmocka_unit_test(test_clblast_status_half_rounds_to_nearest_even),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
