/*
 * tuning.c — the device-dependent parameters of kiln's own kernels, in one
 * place: kernels read them as -D defines and the host dispatch reads the same
 * struct, so no kernel or op tests "is this a CPU" itself.
 */
#include <stdio.h>

#include "internal.h"
#include "tuning.h"

/*
 * GEMM. On a CPU device (PoCL) a work-item owns TM rows x 2 vectors of VW
 * lanes of C in registers: with VW the device's native float width (16 on
 * AVX-512) that is 16 accumulators, half the vector registers, which leaves
 * room for the B vectors and keeps both FMA pipes busy. On GPUs and
 * accelerators, 64 x 64 tiles with 16-deep local-memory slices and 4 x 4
 * outputs per work-item (256 work-items a group), or 32 x 32 tiles where a
 * group cannot hold 256.
 */
kiln__gemm_tuning *kiln__gemm_tuning_override;

void kiln__gemm_tuning_for(const kiln_device_info *dev, kiln__gemm_tuning *t)
{
  if (kiln__gemm_tuning_override) {
    *t = *kiln__gemm_tuning_override;
    return;
  }
  unsigned w = dev->native_vector_width_float;
  *t = (kiln__gemm_tuning){
    .gpu_shape = (dev->type & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) != 0,
    .tm = 8,
    .vw = w >= 16  ? 16
          : w >= 8 ? 8
                   : 4,
    .tsm = dev->max_work_group_size >= 256 ? 64 : 32,
    .tsk = 16,
    .wpt = 4,
  };
  t->vwd = t->vw / 2;
}

/*
 * Reductions are memory-bound. On a CPU device each of 4 chunks per compute
 * unit is one work-item reading a contiguous run with 16-wide vector loads
 * (a grid-stride loop there reads 0.4 GB/s, a chunk 20 GB/s: PoCL runs a
 * group's work-items in turn). On GPUs, groups of up to 256 work-items
 * stride over the input, 8 groups per compute unit.
 */
kiln__reduce_tuning *kiln__reduce_tuning_override;

void kiln__reduce_tuning_for(const kiln_device_info *dev, kiln__reduce_tuning *t)
{
  if (kiln__reduce_tuning_override) {
    *t = *kiln__reduce_tuning_override;
    return;
  }
  unsigned cu = dev->compute_units ? dev->compute_units : 1, wg = 1;
  while (wg * 2 <= 256 && wg * 2 <= dev->max_work_group_size)
    wg *= 2;
  *t = (kiln__reduce_tuning){
    .gpu_shape = (dev->type & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) != 0,
    .chunks = 4 * cu,
    .wg = wg,
    .groups = 8 * cu,
  };
}

/*
 * FFT passes (cl/fft.cl). A pass of stride p >= 16 runs the kernel indexed
 * by (k, block), which tells the compiler that neighbouring work-items read
 * and write neighbouring points and twiddles (with k = i mod p it sees a
 * scatter and a gather); below 16 a vector of work-items would span several
 * blocks. Groups of 64 along k: on PoCL (AVX-512, one thread) the three
 * wide passes of 2^20 took 1.8, 1.2 and 1.3 ms against 3.7, 2.3 and 2.4 with
 * the 1-D kernel and PoCL's own group size; 16 and 1024 were 20-30% slower.
 * 64 is also a whole number of warps or wavefronts on GPUs.
 */
void kiln__fft_tuning_for(const kiln_device_info *dev, kiln__fft_tuning *t)
{
  size_t group = 64;
  while (group > 1 && group > dev->max_work_group_size)
    group /= 2;
  *t = (kiln__fft_tuning){.wide_from = 16, .group = (unsigned)group};
}

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
  kiln__gemm_tuning g;
  kiln__gemm_tuning_for(dev, &g);
  kiln__str_appendf(out,
                    " -DKILN_GEMM_TM=%u -DKILN_GEMM_VW=%u -DKILN_GEMM_VWD=%u"
                    " -DKILN_GEMM_TSM=%u -DKILN_GEMM_TSK=%u -DKILN_GEMM_WPT=%u",
                    g.tm, g.vw, g.vwd, g.tsm, g.tsk, g.wpt);
  kiln__reduce_tuning r;
  kiln__reduce_tuning_for(dev, &r);
  kiln__str_appendf(out, " -DKILN_REDUCE_WG=%u", r.wg);
}
