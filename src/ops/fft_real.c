/*
 * fft_real.c — R2C and C2R transforms that no backend runs, done as C2C ones
 * (cl/fft.cl's helpers), so that every length works: VkFFT refuses odd
 * lengths its R2C must split over several passes, and clFFT lengths with a
 * prime factor above 13.
 *
 *   R2C: x real -> z = (x, 0) -> Z = C2C forward(z) -> the first n/2 + 1
 *        points of each last-axis row of Z.
 *   C2R: X half -> the full spectrum, X[-k] = conj X[k] over every axis ->
 *        z = C2C inverse -> its real parts. Like numpy's irfftn, this drops
 *        the imaginary parts that a Hermitian spectrum cannot have (those of
 *        the points that are their own mirror): they only feed z's imaginary
 *        parts.
 * The C2C transform has the same shape, batch, norm and direction, so its
 * scaling is the one asked for. It costs about twice the work of a real
 * transform and two temporary complex buffers of the full shape, created
 * for the call (they count against the memory budget) and destroyed after
 * it; OpenCL keeps their memory until the commands using them finish.
 */
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "ops/ops.h"
#include "profile/profile.h"

kiln_status kiln__fft_real_via_complex(kiln_runtime *rt, const kiln_fft_desc *d,
                                       const kiln_buffer *in, kiln_buffer *out,
                                       kiln__profile_scope *ps)
{
  assert(d->batch >= 1);
  static const char what[] = "kiln_fft(real as complex)";
  int f64 = d->dtype == KILN_F64;
  size_t dims[3] = {1, 1, 1}; /* (n0, n1, n2): the shape right-aligned */
  for (unsigned a = 0; a < d->ndim; a++)
    dims[3 - d->ndim + a] = d->shape[a];
  size_t last = dims[2], half = last / 2 + 1;
  size_t rows = d->batch * dims[0] * dims[1], full = rows * last; /* checked by fft.c */
  kiln_buffer *za = NULL, *zb = NULL;
  kiln_dtype cplx = f64 ? KILN_C64 : KILN_C32;
  kiln_status st = kiln__workspace(rt, "kiln_fft", "complex workspace", cplx, full, &za);
  if (st == KILN_OK)
    st = kiln__workspace(rt, "kiln_fft", "complex workspace", cplx, full, &zb);
  cl_mem a = kiln__buffer_mem(za), b = kiln__buffer_mem(zb);
  cl_mem x = kiln__buffer_mem(in), y = kiln__buffer_mem(out);
  /* the views' first elements, in reals (cl/fft.cl indexes reals) */
  cl_ulong xo = kiln__buffer_first(in) * (d->kind == KILN_FFT_R2C ? 1 : 2);
  cl_ulong yo = kiln__buffer_first(out) * (d->kind == KILN_FFT_R2C ? 2 : 1);
  kiln_fft_desc c = *d;
  c.kind = KILN_FFT_C2C;
  c.inverse = d->kind == KILN_FFT_C2R;
  c.backend = KILN_BACKEND_AUTO;
  const char *tag = f64 ? "f64" : "f32";
  if (st == KILN_OK && d->kind == KILN_FFT_R2C) {
    st = kiln__launch_fft_promote(rt, what, tag, 1, &full, NULL, x, xo, a, 0, full);
    if (st == KILN_OK)
      st = kiln__fft_run(rt, &c, za, zb, ps);
    size_t items = rows * half;
    if (st == KILN_OK)
      st = kiln__launch_fft_crop(rt, what, tag, 1, &items, NULL, b, 0, y, yo, rows, last,
                                 half);
  } else if (st == KILN_OK) {
    st = kiln__launch_fft_extend(rt, what, tag, 1, &full, NULL, x, xo, a, 0, full,
                                 dims[0], dims[1], last);
    if (st == KILN_OK)
      st = kiln__fft_run(rt, &c, za, zb, ps);
    if (st == KILN_OK)
      st = kiln__launch_fft_real_part(rt, what, tag, 1, &full, NULL, b, 0, y, yo, full);
  }
  kiln_buffer_destroy(za);
  kiln_buffer_destroy(zb);
  return st;
}
