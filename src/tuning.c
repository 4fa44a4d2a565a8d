/*
 * tuning.c — the device-dependent build options of kiln's own kernels, in
 * one place: kernels read them as -D defines, so no kernel or op tests
 * "is this a CPU" itself.
 */
#include <stdio.h>

#include "internal.h"

void kiln__builtin_options(const kiln_device_info *dev, kiln__str *out)
{
  /* kiln's kernels are OpenCL C 1.2; a 1.1 device gets 1.1 and a 1.0 device
   * (which has no -cl-std) nothing. Every OpenCL 3.0 device accepts 1.2. */
  unsigned major = 0, minor = 0;
  sscanf(dev->opencl_c_version, "OpenCL C %u.%u", &major, &minor);
  unsigned c = major * 10 + minor;
  if (c >= 12)
    kiln__str_appendf(out, "-cl-std=CL1.2");
  else if (c == 11)
    kiln__str_appendf(out, "-cl-std=CL1.1");
  if (dev->has_fp64)
    kiln__str_appendf(out, " -DKILN_HAS_FP64=1");
  if (dev->has_fp16)
    kiln__str_appendf(out, " -DKILN_HAS_FP16=1");
  kiln__str_appendf(out, " -DKILN_VECTOR_WIDTH=%u",
                    dev->native_vector_width_float ? dev->native_vector_width_float : 1);
}
