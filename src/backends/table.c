/*
 * table.c — the backends built into this kiln, one table per operation.
 *
 * The one place that turns what meson found (HAVE_CLBLAST, HAVE_CLFFT,
 * HAVE_VKFFT) into backends: the operations (src/ops/) walk these tables by
 * kiln_backend id and never name a backend, so ops/ sits below backends/
 * and a backend is added here, not in each front end. A table is data, in
 * kiln_backend order, and ends with NULL. Likewise the tuning record's
 * "clblast" section reaches CLBlast only through the hook filled here.
 */
#include "kiln_config.h"
#include "ops/ops.h"
#include "tuning/tuning.h"

#if HAVE_CLBLAST
#  include "backends/clblast/clblast.h"
#endif

const kiln__gemm_backend *const kiln__gemm_backends[] = {
  &kiln__gemm_kiln,
#if HAVE_CLBLAST
  &kiln__gemm_clblast,
#endif
  NULL,
};

const kiln__reduce_backend *const kiln__reduce_backends[] = {
  &kiln__reduce_kiln,
#if HAVE_CLBLAST
  &kiln__reduce_clblast,
#endif
  NULL,
};

const kiln__conv_backend *const kiln__conv_backends[] = {
#if HAVE_CLBLAST
  &kiln__conv_clblast,
#endif
  &kiln__conv_im2col,
  &kiln__conv_direct,
  NULL,
};

const kiln__fft_backend *const kiln__fft_backends[] = {
  &kiln__fft_kiln,
#if HAVE_CLFFT
  &kiln__fft_clfft,
#endif
#if HAVE_VKFFT
  &kiln__fft_vkfft,
#endif
  NULL,
};

const kiln__clblast_apply_fn kiln__clblast_section_apply =
#if HAVE_CLBLAST
  kiln__clblast_override;
#else
  NULL;
#endif
