/*
 * reduce_kiln.c — the `kiln` reduction backend: cl/reduce.cl in the shape
 * src/tuning/tuning.c picks for the device.
 *
 * One result (every element, or an axis whose view has few, contiguous
 * rows) runs the two-stage kernels so the whole device reads; many results
 * give each output a work-item that walks its axis.
 */
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "device/rank.h"
#include "ops/ops.h"
#include "tuning/tuning.h"

/* Rows up to this many, each contiguous, go through the two-stage path. */
#define FEW_ROWS 16

/* The caller's name in messages. */
static const char what[] = "kiln_reduce(kiln)";

static const char *type_tag(kiln_dtype t)
{
  return t == KILN_F16 ? "f16" : t == KILN_F32 ? "f32" : t == KILN_F64 ? "f64" : "i32";
}

/* The kernels' family (reduce_sum_*, reduce_ext_*, reduce_arg_*) and its
 * int flag (mode, or want_max). */
typedef enum family { SUM, EXT, ARG } family;

static family family_of(kiln_reduce_op op, int *flag)
{
  switch (op) {
  case KILN_REDUCE_SUM: *flag = 0; return SUM;
  case KILN_REDUCE_MEAN: *flag = 1; return SUM;
  case KILN_REDUCE_NORM2: *flag = 2; return SUM;
  case KILN_REDUCE_MIN: *flag = 0; return EXT;
  case KILN_REDUCE_MAX: *flag = 1; return EXT;
  case KILN_REDUCE_ARGMIN: *flag = 0; return ARG;
  default: *flag = 1; return ARG;
  }
}

/* Whether each result gets a work-item that walks its axis (along_axis()),
 * rather than the two stages. */
static int walks_axis(const kiln__reduce *r)
{
  return r->inner != 1 || r->outer > FEW_ROWS;
}

/* Every op, type and view (plan() refused what needs fp64), except where the
 * driver ends loops early (kiln__loop_limit()): stage 2 and an axis walk
 * each run one loop over their whole length. */
static const char *cannot(kiln_runtime *rt, const kiln__reduce *r)
{
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  if (limit && walks_axis(r) && r->len > limit)
    return "this device's driver (Mesa's llvmpipe) ends a work-item's loops after 65535 "
           "iterations, and this reduction walks an axis of more than 32767 elements "
           "with one work-item per result; reduce whole contiguous rows, or use "
           "another device";
  if (limit && r->len / limit >= limit)
    return "this device's driver (Mesa's llvmpipe) ends a work-item's loops after 65535 "
           "iterations, too few to combine the partials of more than 2^30 elements";
  return NULL;
}

/* The type of stage 1's partial values. */
static kiln_dtype partial_type(kiln_runtime *rt, const kiln__reduce *r, family fam)
{
  if (fam == SUM)
    return r->in_type == KILN_I32              ? KILN_I64
           : kiln_runtime_device(rt)->has_fp64 ? KILN_F64
                                               : KILN_F32;
  return r->in_type == KILN_F16 ? KILN_F32 : r->in_type;
}

/* Stage 1's partials for len elements, each `bytes` on the device (value
 * and index): the rules' count (chunks on a CPU; on a GPU, `groups` groups
 * of wg work-items, one partial a group where `per_group`, else one a
 * work-item), but no more than one a group or a work-item has elements
 * for, nor than half of what is left of the memory budget holds (the other
 * half covers the pool's rounding up and the result): the GPU rules' 8
 * groups of 256 a compute unit are a megabyte of partials on a large GPU,
 * whatever the input or the budget. At least one, and at least what keeps
 * every loop within the driver's limit (kiln__loop_limit(); cannot() bounds
 * len): a budget too small for those fails in kiln__workspace(), which
 * names the partials and the bytes they need. */
static size_t partial_count(kiln_runtime *rt, const kiln__reduce *r,
                            const kiln__reduce_tuning *t, int per_group, size_t bytes)
{
  size_t wg = per_group ? t->wg : 1, len = r->len ? r->len : 1;
  size_t np = !t->gpu_shape ? t->chunks
              : per_group   ? t->groups
                            : (size_t)t->groups * t->wg;
  size_t most = (len + wg - 1) / wg;
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  kiln_memory_stats(rt, &mu);
  uint64_t left =
    mu.limit_bytes > mu.current_bytes ? mu.limit_bytes - mu.current_bytes : 0;
  if (left / 2 / bytes < most)
    most = (size_t)(left / 2 / bytes);
  if (np > most)
    np = most;
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  size_t per = wg * limit, least = limit ? (len + per - 1) / per : 1;
  return np > least ? np : least;
}

/* Reduces len contiguous elements from offset into out[out_offset]. */
static kiln_status two_stage(kiln_runtime *rt, const kiln__reduce *r, size_t offset,
                             size_t out_offset)
{
  kiln__reduce_tuning t = rt->tuning->t.reduce;
  int flag;
  family fam = family_of(r->op, &flag);
  const char *tag = type_tag(r->in_type);
  /* CPU: `chunks` work-items on contiguous chunks. GPU: groups of wg
   * work-items; float sums leave one partial a group (a local tree), min,
   * max and arg one a work-item from a grid-stride loop (chunk 0), and int32
   * sums, exact and rare, contiguous chunks. */
  int sum = fam == SUM, ints = r->in_type == KILN_I32;
  int groups = t.gpu_shape && sum && !ints, stride = t.gpu_shape && !sum;
  kiln_dtype pt = partial_type(rt, r, fam), it = fam == EXT ? KILN_I32 : KILN_I64;
  size_t np = partial_count(rt, r, &t, groups,
                            kiln_dtype_size(pt) + (sum ? 0 : kiln_dtype_size(it)));
  size_t global = groups ? np * t.wg : np, local = t.wg;
  size_t chunk = stride || groups ? 0 : ((r->len + np - 1) / np + 15) / 16 * 16;
  kiln_buffer *pv = NULL, *pi = NULL;
  kiln_status st = kiln__workspace(rt, "kiln_reduce", "partials", pt, np, &pv);
  if (st == KILN_OK && !sum) /* min/max: which chunks had any; arg: indices */
    st = kiln__workspace(rt, "kiln_reduce", "partial indices", it, np, &pi);
  cl_mem in = r->in, a = kiln__buffer_mem(pv), b = kiln__buffer_mem(pi);
  /* Chunks run one work-item a group: a driver free to choose might put
   * them all in one group, which PoCL runs on a single core. */
  size_t one_item = 1, one = 1;
  if (st == KILN_OK && sum)
    st = (groups ? kiln__launch_reduce_sum_groups
                 : kiln__launch_reduce_sum_chunks)(rt, what, tag, 1, &global,
                                                   groups   ? &local
                                                   : stride ? NULL
                                                            : &one_item,
                                                   in, offset, r->len, chunk, flag, a);
  else if (st == KILN_OK)
    st = (fam == EXT ? kiln__launch_reduce_ext_chunks : kiln__launch_reduce_arg_chunks)(
      rt, what, tag, 1, &global, stride ? NULL : &one_item, in, offset, r->len, chunk,
      flag, a, b);
  if (st == KILN_OK && sum)
    st = kiln__launch_reduce_sum_final(rt, what, tag, 1, &one, NULL, a, np, r->len, flag,
                                       r->out, out_offset);
  else if (st == KILN_OK)
    st = (fam == EXT ? kiln__launch_reduce_ext_final : kiln__launch_reduce_arg_final)(
      rt, what, tag, 1, &one, NULL, a, b, np, flag, r->out, out_offset);
  kiln_buffer_destroy(pv);
  kiln_buffer_destroy(pi);
  return st;
}

/* One work-item per output (o, i), walking its axis. */
static kiln_status along_axis(kiln_runtime *rt, const kiln__reduce *r)
{
  int flag;
  family fam = family_of(r->op, &flag);
  size_t global[2] = {r->inner, r->outer};
  return (fam == SUM   ? kiln__launch_reduce_sum_axis
          : fam == EXT ? kiln__launch_reduce_ext_axis
                       : kiln__launch_reduce_arg_axis)(
    rt, what, type_tag(r->in_type), 2, global, NULL, r->in, r->offset, r->len, r->inner,
    flag, r->out, r->out_offset);
}

static kiln_status run(kiln_runtime *rt, const kiln__reduce *r)
{
  if (walks_axis(r))
    return along_axis(rt, r);
  kiln_status st = KILN_OK;
  for (size_t o = 0; o < r->outer && st == KILN_OK; o++)
    st = two_stage(rt, r, r->offset + o * r->len, r->out_offset + o);
  return st;
}

const kiln__reduce_backend kiln__reduce_kiln = {KILN_BACKEND_KILN, cannot, run};
