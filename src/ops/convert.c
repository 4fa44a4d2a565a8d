/*
 * convert.c — kiln_convert(): element type conversion with cl/convert.cl.
 */
#include <stdio.h>

#include "base/error.h"
#include "compile/kernel_args.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "profile/profile.h"

/* The kernel name's part for each convertible type; NULL for the others. */
static const char *type_tag(kiln_dtype t)
{
  switch (t) {
  case KILN_F16: return "f16";
  case KILN_F32: return "f32";
  case KILN_F64: return "f64";
  case KILN_I32: return "i32";
  case KILN_I64: return "i64";
  default: return NULL;
  }
}

static kiln_status check(kiln_buffer *dst, const kiln_buffer *src)
{
  static const char fn[] = "kiln_convert";
  if (!dst || !src)
    return kiln__fail(dst ? kiln_buffer_runtime(dst) : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected two buffers", fn, !dst ? "dst" : "src");
  kiln_runtime *rt = kiln_buffer_runtime(dst);
  if (kiln_buffer_runtime(src) != rt)
    return kiln__fail(rt, KILN_ERR_WRONG_RUNTIME,
                      "%s: src and dst belong to different runtimes", fn);
  if (kiln_buffer_count(src) != kiln_buffer_count(dst))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: src has %zu elements and dst %zu; expected the same count", fn,
                      kiln_buffer_count(src), kiln_buffer_count(dst));
  kiln_dtype types[2] = {kiln_buffer_dtype(src), kiln_buffer_dtype(dst)};
  for (int i = 0; i < 2; i++) {
    if (!type_tag(types[i]))
      return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                        "%s: %s holds %s; expected float16, float32, float64, int32 "
                        "or int64",
                        fn, i ? "dst" : "src", kiln_dtype_name(types[i]));
    if (types[i] == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
      return kiln__no_fp64(rt, fn, i ? "a float64 dst" : "a float64 src");
  }
  return KILN_OK;
}

KILN_API kiln_status kiln_convert(const kiln_buffer *src, kiln_buffer *dst)
{
  kiln_status st = check(dst, src);
  if (st != KILN_OK)
    return st;
  kiln_dtype from = kiln_buffer_dtype(src), to = kiln_buffer_dtype(dst);
  size_t n = kiln_buffer_count(src);
  kiln_runtime *rt = kiln_buffer_runtime(dst);
  kiln__profile_scope ps;
  kiln__profile_begin(rt, &ps, "convert");
  kiln__profile_describe(&ps, "kiln",
                         (uint64_t)n * (kiln_dtype_size(from) + kiln_dtype_size(to)), 0,
                         "%zu %s -> %s", n, kiln_dtype_name(from), kiln_dtype_name(to));
  if (from == to) {
    st = kiln_buffer_copy(dst, 0, src, 0, n);
  } else {
    char variant[16];
    snprintf(variant, sizeof variant, "%s_%s", type_tag(from), type_tag(to));
    st = kiln__launch_convert(rt, "kiln_convert", variant, 1, &n, NULL,
                              kiln__buffer_mem(src), kiln__buffer_first(src),
                              kiln__buffer_mem(dst), kiln__buffer_first(dst), n);
  }
  return kiln__profile_end(&ps, st);
}
