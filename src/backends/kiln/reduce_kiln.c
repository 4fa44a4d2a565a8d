/*
 * reduce_kiln.c — the `kiln` reduction backend: cl/reduce.cl (the CPU
 * shape, the axis kernels) or cl/reduce_gpu.cl (the GPU shape), the shape
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

/* Rows a GPU launch runs side by side at most (its dimension 1): within
 * 65535, the smallest limit on a grid's second dimension among the GPU
 * APIs drivers build on (CUDA's y), so that no driver need split it. */
#define ROWS_MAX 65535

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
 * rather than the two stages: columns (inner > 1), whose neighbouring
 * work-items read neighbouring elements, and many rows; but on a GPU, rows
 * of at least a vector per work-item of a group run the two stages side by
 * side however many they are (a walk along a row reads uncoalesced there),
 * shorter ones would leave most of each group idle. */
static int walks_axis(kiln_runtime *rt, const kiln__reduce *r)
{
  const kiln__reduce_tuning *t = &rt->tuning->t.reduce;
  if (r->inner != 1 || r->outer <= FEW_ROWS)
    return r->inner != 1;
  return !t->gpu_shape || r->len < (size_t)4 * t->wg;
}

/* Every op, type and view (plan() refused what needs fp64), except where the
 * driver ends loops early (kiln__loop_limit()): stage 2 and an axis walk
 * each run one loop over their whole length. */
static const char *cannot(kiln_runtime *rt, const kiln__reduce *r)
{
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  if (limit && walks_axis(rt, r) && r->len > limit)
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
 * and index): the rules' count (chunks on a CPU; groups of wg work-items
 * on a GPU, one partial a group), but no more than one a chunk or a group
 * has elements for (a GPU group's work-items read 16-byte vectors, 4
 * floats), nor than half of what is left of the memory budget holds (the
 * other half covers the pool's rounding up and the result): a row's share,
 * for `rows` rows side by side (GPU). At least one a row,
 * and at least what keeps every loop within the driver's limit
 * (kiln__loop_limit(); cannot() bounds len): a budget too small for those
 * fails in kiln__workspace(), which names the partials and the bytes they
 * need. */
static size_t partial_count(kiln_runtime *rt, const kiln__reduce *r,
                            const kiln__reduce_tuning *t, size_t bytes, size_t rows)
{
  size_t wg = t->gpu_shape ? t->wg : 1, len = r->len ? r->len : 1;
  size_t np = (t->gpu_shape ? t->groups : t->chunks) / rows;
  size_t reads = t->gpu_shape ? wg * 4 : 1, most = (len + reads - 1) / reads;
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  kiln_memory_stats(rt, &mu);
  uint64_t left =
    mu.limit_bytes > mu.current_bytes ? mu.limit_bytes - mu.current_bytes : 0;
  if (left / 2 / bytes / rows < most)
    most = (size_t)(left / 2 / bytes / rows);
  if (np > most)
    np = most;
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt));
  size_t per = wg * limit, least = limit ? (len + per - 1) / per : 1;
  return np > least ? np : least;
}

/* The kernels of each family: stage 1 and stage 2 in the CPU shape
 * (chunks, final) and in the GPU shape (groups, merge). The launchers of a
 * family take the same arguments. */
typedef kiln_status (*stage1_fn)(KILN__LAUNCH_PARAMS, cl_mem, cl_ulong, cl_ulong,
                                 cl_ulong, cl_int, cl_mem);
typedef kiln_status (*stage1_pair_fn)(KILN__LAUNCH_PARAMS, cl_mem, cl_ulong, cl_ulong,
                                      cl_ulong, cl_int, cl_mem, cl_mem);
typedef kiln_status (*stage2_fn)(KILN__LAUNCH_PARAMS, cl_mem, cl_ulong, cl_ulong, cl_int,
                                 cl_mem, cl_ulong);
typedef kiln_status (*stage2_pair_fn)(KILN__LAUNCH_PARAMS, cl_mem, cl_mem, cl_ulong,
                                      cl_int, cl_mem, cl_ulong);

/* Reduces `rows` rows of len contiguous elements from offset into
 * out[out_offset], ...: one row at a time on a CPU, all at once (dimension
 * 1) on a GPU. */
static kiln_status two_stage(kiln_runtime *rt, const kiln__reduce *r, size_t offset,
                             size_t out_offset, size_t rows)
{
  kiln__reduce_tuning t = rt->tuning->t.reduce;
  int flag;
  family fam = family_of(r->op, &flag);
  const char *tag = type_tag(r->in_type);
  /* CPU: `chunks` work-items on contiguous chunks, one a group (a driver
   * free to choose might put them all in one group, which PoCL runs on a
   * single core), then one work-item combines them in order. GPU: groups
   * of wg work-items read grid-stride 16-byte vectors and leave one
   * partial a group from a local tree; one group of wg merges them; a row
   * of groups and a merging group per row. */
  int gpu = t.gpu_shape, sum = fam == SUM;
  kiln_dtype pt = partial_type(rt, r, fam), it = fam == EXT ? KILN_I32 : KILN_I64;
  size_t np =
    partial_count(rt, r, &t, kiln_dtype_size(pt) + (sum ? 0 : kiln_dtype_size(it)), rows);
  cl_uint dims = gpu ? 2 : 1;
  size_t global[2] = {gpu ? np * t.wg : np, rows}, local[2] = {gpu ? t.wg : 1, 1};
  size_t chunk = gpu ? 0 : ((r->len + np - 1) / np + 15) / 16 * 16;
  size_t global2[2] = {gpu ? t.wg : 1, rows}, *local2 = gpu ? local : NULL;
  kiln_buffer *pv = NULL, *pi = NULL;
  kiln_status st = kiln__workspace(rt, "kiln_reduce", "partials", pt, np * rows, &pv);
  if (st == KILN_OK && !sum) /* min/max: which chunks had any; arg: indices */
    st = kiln__workspace(rt, "kiln_reduce", "partial indices", it, np * rows, &pi);
  cl_mem in = r->in, a = kiln__buffer_mem(pv), b = kiln__buffer_mem(pi);
  if (st == KILN_OK && sum) {
    stage1_fn s1 = gpu ? kiln__launch_reduce_sum_groups : kiln__launch_reduce_sum_chunks;
    stage2_fn s2 = gpu ? kiln__launch_reduce_sum_merge : kiln__launch_reduce_sum_final;
    st = s1(rt, what, tag, dims, global, local, in, offset, r->len, chunk, flag, a);
    if (st == KILN_OK)
      st =
        s2(rt, what, tag, dims, global2, local2, a, np, r->len, flag, r->out, out_offset);
  } else if (st == KILN_OK) {
    int ext = fam == EXT;
    stage1_pair_fn s1 =
      gpu ? (ext ? kiln__launch_reduce_ext_groups : kiln__launch_reduce_arg_groups)
          : (ext ? kiln__launch_reduce_ext_chunks : kiln__launch_reduce_arg_chunks);
    stage2_pair_fn s2 =
      gpu ? (ext ? kiln__launch_reduce_ext_merge : kiln__launch_reduce_arg_merge)
          : (ext ? kiln__launch_reduce_ext_final : kiln__launch_reduce_arg_final);
    st = s1(rt, what, tag, dims, global, local, in, offset, r->len, chunk, flag, a, b);
    if (st == KILN_OK)
      st = s2(rt, what, tag, dims, global2, local2, a, b, np, flag, r->out, out_offset);
  }
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
  if (walks_axis(rt, r))
    return along_axis(rt, r);
  kiln_status st = KILN_OK;
  if (rt->tuning->t.reduce.gpu_shape) {
    for (size_t o = 0; o < r->outer && st == KILN_OK; o += ROWS_MAX) {
      size_t rows = r->outer - o < ROWS_MAX ? r->outer - o : ROWS_MAX;
      st = two_stage(rt, r, r->offset + o * r->len, r->out_offset + o, rows);
    }
    return st;
  }
  for (size_t o = 0; o < r->outer && st == KILN_OK; o++)
    st = two_stage(rt, r, r->offset + o * r->len, r->out_offset + o, 1);
  return st;
}

const kiln__reduce_backend kiln__reduce_kiln = {KILN_BACKEND_KILN, cannot, run};
