/*
 * group_reduce.c — reductions over a device group (group_ops.c): along an
 * axis, outer rows of the view, each reduced whole; of every element,
 * grains of a fixed size, each reduced alone and combined in index order.
 */
#include <stdlib.h>

#include "base/abi.h"
#include "base/error.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "group/group_ops.h"

/* Grains of every element: at least this many elements each, and about
 * this many grains a device, so that a slow device's chunk is small. */
#define REDUCE_GRAIN_MIN 16384
#define REDUCE_GRAINS_PER_DEVICE 32

typedef struct reduce_job {
  kiln__group_batch b; /* its units as a pipeline sees them (below) */
  kiln_reduce_desc d;  /* the caller's */
  kiln__reduce r;
  const unsigned char *in; /* the view's first element */
  unsigned char *out;
  size_t es, os;
  size_t grain;         /* every element: elements of a grain; else 0 */
  kiln_dtype pt;        /* every element: a grain's result type */
  unsigned char *parts; /* every element: a result per grain */
} reduce_job;

/* Grains [at, at + count) of every element, each alone: a call's own
 * split of its work (its kernel's chunks, its pieces) may depend on the
 * length it is given, so one grain in a call of several could come out
 * otherwise than alone, and the answer would depend on the schedule. */
static kiln_status reduce_grains(kiln_runtime *rt, const reduce_job *t, size_t at,
                                 size_t count)
{
  size_t ps = kiln_dtype_size(t->pt);
  kiln_reduce_desc d = t->d;
  d.op = kiln__reduce_part_op(t->d.op);
  d.ndim = 1, d.axis = KILN_AXIS_ALL, d.offset = 0;
  kiln_status st = KILN_OK;
  for (size_t i = at; i < at + count && st == KILN_OK; i++) {
    size_t first = i * t->grain, left = t->r.len - first;
    d.shape[0] = left < t->grain ? left : t->grain;
    st = kiln_reduce_host(rt, &d, t->in + first * t->es, t->parts + i * ps);
  }
  return st;
}

static kiln_status reduce_chunk(kiln_runtime *rt, const kiln__group_job *j, size_t at,
                                size_t count)
{
  const reduce_job *t = j->op_data;
  if (t->grain)
    return reduce_grains(rt, t, at, count);
  if (t->r.len == 0 || t->r.outer == 0) /* the identity or the error: one call */
    return kiln_reduce_host(rt, &t->d, t->in - t->d.offset * t->es, t->out);
  /* outer rows [at, at + count) of the view outer x len x inner */
  kiln_reduce_desc d = t->d;
  d.ndim = 3, d.axis = 1, d.offset = 0;
  d.shape[0] = count, d.shape[1] = t->r.len, d.shape[2] = t->r.inner;
  return kiln_reduce_host(rt, &d, t->in + at * t->r.len * t->r.inner * t->es,
                          t->out + at * t->r.inner * t->os);
}

/* A pipeline's piece of a reduction: outer rows along the axis at once,
 * or each grain of every element alone (as reduce_grains() does, from its
 * own offset: the kernels cut a length the same way wherever it starts)
 * into scratch, then into its slot of the piece's results. */
static kiln_status reduce_piece(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                                kiln_buffer *in, kiln_buffer *out)
{
  const reduce_job *t = ((const kiln__group_pipe *)hj->op)->j->op_data;
  kiln_buffer *scratch = kiln__group_batch_dev_of(hj)->scratch;
  size_t at, count;
  kiln__group_pipe_chunk(hj, i, &at, &count);
  kiln_reduce_desc d = t->d;
  d.offset = 0;
  if (!t->grain) {
    d.ndim = 3, d.axis = 1;
    d.shape[0] = count, d.shape[1] = t->r.len, d.shape[2] = t->r.inner;
    return kiln_reduce(rt, &d, in, out);
  }
  d.op = kiln__reduce_part_op(t->d.op);
  d.ndim = 1, d.axis = KILN_AXIS_ALL;
  kiln_status st = KILN_OK;
  for (size_t q = 0; q < count && st == KILN_OK; q++) {
    size_t left = t->r.len - (at + q) * t->grain;
    d.shape[0] = left < t->grain ? left : t->grain;
    d.offset = q * t->grain;
    st = kiln_reduce(rt, &d, in, scratch);
    if (st == KILN_OK)
      st = kiln_buffer_copy(out, q, scratch, 0, 1);
  }
  return st;
}

/* Outer rows, or grains, through a pipeline; the identity (nothing to
 * reduce) in one call. */
static kiln_status reduce_pipe(kiln_runtime *rt, const kiln__group_job *j,
                               kiln__group_feed *f)
{
  const reduce_job *t = j->op_data;
  if (t->r.len == 0 || t->r.outer == 0)
    return kiln__group_serve(rt, j, f);
  kiln__group_batch_dev dv = {.t = &t->b};
  kiln_status st = KILN_OK;
  if (t->grain)
    st = kiln__workspace(rt, j->fn, "a grain's result", t->pt, 1, &dv.scratch);
  if (st == KILN_OK) {
    st = kiln__group_batch_serve(rt, j, f, &dv, reduce_piece);
  }
  kiln_buffer_destroy(dv.scratch);
  return st;
}

KILN_API kiln_status kiln_group_reduce_host(kiln_group *group,
                                            const kiln_reduce_desc *desc, const void *in,
                                            void *out)
{
  static const char fn[] = "kiln_group_reduce_host";
  reduce_job t = {.out = out};
  kiln_status st = kiln__group_in(group, fn, desc, in, out);
  if (st == KILN_OK)
    st = KILN__STRUCT_IN(NULL, fn, kiln_reduce_desc, desc, &t.d);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = kiln_group_runtime(group, 0);
  size_t count, outputs;
  const kiln__reduce_backend *be;
  st = kiln__reduce_plan(rt, &t.d, &t.r, &count, &outputs);
  /* A backend asked for refuses here what it refuses on one device, though
   * the grains below are parts (a mean's are sums) it might run. */
  if (st == KILN_OK && t.d.backend != KILN_BACKEND_AUTO)
    st = kiln__reduce_choose(rt, t.d.backend, &t.r, &be);
  if (st != KILN_OK)
    return kiln__group_fail_from(rt, st);
  t.es = kiln_dtype_size(t.d.dtype), t.os = kiln_dtype_size(t.r.out_type);
  t.in = (const unsigned char *)in + t.d.offset * t.es;
  size_t units = t.r.len == 0 || t.r.outer == 0 ? 1 : t.r.outer;
  if (t.r.len && t.r.outer == 1 && t.r.inner == 1) {
    size_t grains = kiln_group_size(group) * REDUCE_GRAINS_PER_DEVICE;
    t.grain = (t.r.len + grains - 1) / grains;
    t.grain = t.grain < REDUCE_GRAIN_MIN ? REDUCE_GRAIN_MIN : t.grain;
    units = (t.r.len + t.grain - 1) / t.grain;
    t.pt = kiln_reduce_out_dtype(kiln__reduce_part_op(t.d.op), t.d.dtype);
    t.parts = malloc(units * kiln_dtype_size(t.pt));
    if (!t.parts)
      return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                        "%s: out of host memory for the grains' results", fn);
  }
  t.b = (kiln__group_batch){
    .in = t.in,
    .out = t.grain ? t.parts : out,
    .in_type = t.d.dtype,
    .out_type = t.grain ? t.pt : t.r.out_type,
    .in_el = t.grain ? t.grain : t.r.len * t.r.inner,
    .out_el = t.grain ? 1 : t.r.inner,
    .in_total = t.grain ? t.r.len : 0,
  };
  t.b.in_one = t.b.in_el * t.es, t.b.out_one = t.b.out_el * kiln_dtype_size(t.b.out_type);
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_REDUCE,
    .units = units,
    .min = 1,
    .unit_work = (double)(t.grain ? t.grain : t.r.len * t.r.inner + 1) * (double)t.es,
    .run = reduce_chunk,
    .pipe = reduce_pipe,
    .op_data = &t,
  };
  st = kiln__group_run(group, &j);
  if (st == KILN_OK && t.grain)
    kiln__reduce_combine(&t.r, t.in, t.pt, t.parts, units, t.grain, out);
  free(t.parts);
  return st;
}
