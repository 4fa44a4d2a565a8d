/*
 * reduce_kiln.c — the `kiln` reduction backend: cl/reduce.cl in the shape
 * src/tuning.c picks for the device.
 *
 * One result (every element, or an axis whose view has few, contiguous
 * rows) runs the two-stage kernels so the whole device reads; many results
 * give each output a work-item that walks its axis.
 */
#include <stdio.h>

#include "internal.h"
#include "ops.h"
#include "tuning.h"

/* Rows up to this many, each contiguous, go through the two-stage path. */
#define FEW_ROWS 16

static const char *type_tag(kiln_dtype t)
{
  return t == KILN_F16 ? "f16" : t == KILN_F32 ? "f32" : t == KILN_F64 ? "f64" : "i32";
}

/* The kernels' family and its int flag (mode, or want_max). */
static const char *family(kiln_reduce_op op, int *flag)
{
  switch (op) {
  case KILN_REDUCE_SUM: *flag = 0; return "sum";
  case KILN_REDUCE_MEAN: *flag = 1; return "sum";
  case KILN_REDUCE_NORM2: *flag = 2; return "sum";
  case KILN_REDUCE_MIN: *flag = 0; return "ext";
  case KILN_REDUCE_MAX: *flag = 1; return "ext";
  case KILN_REDUCE_ARGMIN: *flag = 0; return "arg";
  default: *flag = 1; return "arg";
  }
}

static const char *cannot(kiln_runtime *rt, const kiln__reduce *r)
{
  (void)rt;
  (void)r; /* every op, type and view; plan() refused what needs fp64 */
  return NULL;
}

/* The type of stage 1's partial values. */
static kiln_dtype partial_type(kiln_runtime *rt, const kiln__reduce *r, const char *fam)
{
  if (fam[0] == 's')
    return r->in_type == KILN_I32 ? KILN_I64
           : kiln_runtime_device(rt)->has_fp64 ? KILN_F64
                                               : KILN_F32;
  return r->in_type == KILN_F16 ? KILN_F32 : r->in_type;
}

/* Reduces len contiguous elements from offset into out[out_offset]. */
static kiln_status two_stage(kiln_runtime *rt, const kiln__reduce *r, size_t offset,
                             size_t out_offset)
{
  kiln__reduce_tuning t;
  kiln__reduce_tuning_for(&kiln__runtime_device(rt)->info, &t);
  int flag;
  const char *fam = family(r->op, &flag), *tag = type_tag(r->in_type);
  /* CPU: `chunks` work-items on contiguous chunks. GPU: groups of wg
   * work-items; float sums leave one partial a group (a local tree), min,
   * max and arg one a work-item from a grid-stride loop (chunk 0), and int32
   * sums, exact and rare, contiguous chunks. */
  int sum = fam[0] == 's', ints = r->in_type == KILN_I32;
  int groups = t.gpu_shape && sum && !ints, stride = t.gpu_shape && !sum;
  size_t np = t.gpu_shape ? (size_t)t.groups * t.wg : t.chunks;
  size_t global = np, local = t.wg;
  size_t chunk = stride || groups ? 0 : ((r->len + np - 1) / np + 15) / 16 * 16;
  if (groups)
    np = t.groups;
  kiln_buffer *pv = NULL, *pi = NULL;
  kiln_status st = kiln_buffer_create(rt, partial_type(rt, r, fam), np, 0, &pv);
  if (st == KILN_OK && fam[0] != 's') /* min/max: which chunks had any; arg: indices */
    st = kiln_buffer_create(rt, fam[0] == 'e' ? KILN_I32 : KILN_I64, np, 0, &pi);
  char name[48];
  snprintf(name, sizeof name, "kiln_reduce_%s_%s_%s", fam,
           groups ? "groups" : "chunks", tag);
  cl_mem in = r->in, a = kiln_buffer_cl_mem(pv), b = kiln_buffer_cl_mem(pi);
  /* Chunks run one work-item a group: a driver free to choose might put
   * them all in one group, which PoCL runs on a single core. */
  size_t one_item = 1;
  if (st == KILN_OK && fam[0] == 's')
    st = kiln__launch(rt, "kiln_reduce(kiln)", "reduce", name, 1, &global,
                      groups ? &local : stride ? NULL : &one_item, "mLLLim", in, (cl_ulong)offset,
                      (cl_ulong)r->len, (cl_ulong)chunk, flag, a);
  else if (st == KILN_OK)
    st = kiln__launch(rt, "kiln_reduce(kiln)", "reduce", name, 1, &global,
                      stride ? NULL : &one_item, "mLLLimm",
                      in, (cl_ulong)offset, (cl_ulong)r->len, (cl_ulong)chunk, flag, a, b);
  snprintf(name, sizeof name, "kiln_reduce_%s_final_%s", fam, tag);
  size_t one = 1;
  if (st == KILN_OK && fam[0] == 's')
    st = kiln__launch(rt, "kiln_reduce(kiln)", "reduce", name, 1, &one, NULL, "mLLimL", a,
                      (cl_ulong)np, (cl_ulong)r->len, flag, r->out, (cl_ulong)out_offset);
  else if (st == KILN_OK)
    st = kiln__launch(rt, "kiln_reduce(kiln)", "reduce", name, 1, &one, NULL, "mmLimL", a, b,
                      (cl_ulong)np, flag, r->out, (cl_ulong)out_offset);
  kiln_buffer_destroy(pv);
  kiln_buffer_destroy(pi);
  return st;
}

/* One work-item per output (o, i), walking its axis. */
static kiln_status along_axis(kiln_runtime *rt, const kiln__reduce *r)
{
  int flag;
  const char *fam = family(r->op, &flag);
  char name[48];
  snprintf(name, sizeof name, "kiln_reduce_%s_axis_%s", fam, type_tag(r->in_type));
  size_t global[2] = {r->inner, r->outer};
  return kiln__launch(rt, "kiln_reduce(kiln)", "reduce", name, 2, global, NULL, "mLLLimL",
                      r->in, (cl_ulong)r->offset, (cl_ulong)r->len, (cl_ulong)r->inner,
                      flag, r->out, (cl_ulong)r->out_offset);
}

static kiln_status run(kiln_runtime *rt, const kiln__reduce *r)
{
  if (r->inner != 1 || r->outer > FEW_ROWS)
    return along_axis(rt, r);
  kiln_status st = KILN_OK;
  for (size_t o = 0; o < r->outer && st == KILN_OK; o++)
    st = two_stage(rt, r, r->offset + o * r->len, r->out_offset + o);
  return st;
}

const kiln__reduce_backend kiln__reduce_kiln = {KILN_BACKEND_KILN, cannot, run};
