/*
 * scale.cl — x[i] *= factor over n real elements, in place: kiln_fft()'s
 * normalisation (1/n, 1/sqrt(n)); complex data is passed as 2n reals.
 *
 *   kernel void kiln_scale_<type>(global T *x, ulong n, T factor)
 *
 * The float64 kernel exists only on devices with fp64 (KILN_HAS_FP64, set by
 * kiln).
 */
#ifdef KILN_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

kernel void kiln_scale_f32(global float *x, ulong n, float factor)
{
  size_t i = get_global_id(0);
  if (i < n)
    x[i] *= factor;
}

#ifdef KILN_HAS_FP64
kernel void kiln_scale_f64(global double *x, ulong n, double factor)
{
  size_t i = get_global_id(0);
  if (i < n)
    x[i] *= factor;
}
#endif
