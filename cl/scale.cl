/*
 * scale.cl — x[i] *= factor over n real elements, in place: kiln_fft()'s
 * normalisation (1/n, 1/sqrt(n)); complex data is passed as 2n reals.
 *
 *   kernel void kiln_scale_<type>(global T *x, ulong off, ulong n, T factor)
 *
 * over x[off .. off + n) (off: the output view's first real).
 *
 * The float64 kernel exists only on devices with fp64 (KILN_HAS_FP64, set by
 * kiln). Read once per pass after cl/prelude.cl, which says how.
 */
#ifndef KILN_PRELUDE
#error "cl/scale.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 2

#if KILN_PASS == 1
#define V f32
#define T float
#elif KILN_PASS == 2 && defined(KILN_HAS_FP64)
#define V f64
#define T double
#endif

#ifdef V
#if KILN_BUILDS(kiln_scale)
kernel void NAME(kiln_scale)(global T *x, ulong off, ulong n, T factor)
{
  x += off;
  size_t i = get_global_id(0);
  if (i < n)
    x[i] *= factor;
}
#endif
#undef V
#undef T
#endif
