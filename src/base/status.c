/*
 * status.c — names and texts of kiln_status values, OpenCL error names, the
 * mapping from OpenCL errors to kiln_status, element types and the version.
 */
#include <stddef.h>

#include "base/error.h"

KILN_API const char *kiln_status_name(kiln_status status)
{
  switch (status) {
#define KILN_XX_(name, code, text)                                                       \
  case KILN_##name: return #name;
    KILN_STATUS_MAP(KILN_XX_)
#undef KILN_XX_
  }
  return "UNKNOWN";
}

KILN_API const char *kiln_status_string(kiln_status status)
{
  switch (status) {
#define KILN_XX_(name, code, text)                                                       \
  case KILN_##name: return text;
    KILN_STATUS_MAP(KILN_XX_)
#undef KILN_XX_
  }
  return "unknown status";
}

static const struct {
  int code;
  const char *name;
} cl_errors[] = {
#define KILN_CL_ERROR(code, name) {code, #name},
#include "base/cl_errors.def"
#undef KILN_CL_ERROR
};

KILN_API const char *kiln_cl_error_name(int cl_error)
{
  /* The first entry of a code wins, so aliases never shadow the KHR name. */
  for (size_t i = 0; i < sizeof cl_errors / sizeof cl_errors[0]; i++)
    if (cl_errors[i].code == cl_error)
      return cl_errors[i].name;
  return "CL_UNKNOWN_ERROR";
}

kiln_status kiln__status_from_cl(cl_int err)
{
  switch (err) {
  case CL_SUCCESS: return KILN_OK;
  /* Drivers allocate lazily and report a failed allocation at first use with
   * either code; CL_INVALID_BUFFER_SIZE is a request above the device's
   * largest allocation. */
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_RESOURCES:
  case CL_INVALID_BUFFER_SIZE: return KILN_ERR_OUT_OF_MEMORY;
  case CL_OUT_OF_HOST_MEMORY: return KILN_ERR_OUT_OF_HOST_MEMORY;
  case CL_DEVICE_NOT_AVAILABLE: return KILN_ERR_DEVICE_UNAVAILABLE;
  case CL_DEVICE_NOT_FOUND:
  case -1001: /* CL_PLATFORM_NOT_FOUND_KHR */ return KILN_ERR_NO_DEVICE;
  case CL_BUILD_PROGRAM_FAILURE:
  case CL_COMPILE_PROGRAM_FAILURE:
  case CL_LINK_PROGRAM_FAILURE:
  case CL_INVALID_BUILD_OPTIONS:
  case CL_COMPILER_NOT_AVAILABLE: return KILN_ERR_BUILD;
  default: return KILN_ERR_OPENCL;
  }
}

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
  [KILN_F16] = {"float16", 2},     [KILN_F32] = {"float32", 4},
  [KILN_F64] = {"float64", 8},     [KILN_C32] = {"complex64", 8},
  [KILN_C64] = {"complex128", 16}, [KILN_I32] = {"int32", 4},
  [KILN_I64] = {"int64", 8},
};

static int dtype_valid(kiln_dtype dtype)
{
  return (unsigned)dtype < sizeof dtypes / sizeof dtypes[0] && dtypes[dtype].name;
}

KILN_API size_t kiln_dtype_size(kiln_dtype dtype)
{
  return dtype_valid(dtype) ? dtypes[dtype].size : 0;
}

KILN_API const char *kiln_dtype_name(kiln_dtype dtype)
{
  return dtype_valid(dtype) ? dtypes[dtype].name : "invalid";
}

KILN_API const char *kiln_version(void)
{
  return KILN_VERSION_STRING;
}

KILN_API unsigned kiln_version_number(void)
{
  return KILN_VERSION_NUMBER;
}
