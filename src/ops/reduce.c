/*
 * reduce.c — kiln_reduce() and kiln_reduce_host(): checks the request,
 * resolves the axis into an (outer, len, inner) view, handles empty
 * reductions, chooses a backend and dispatches.
 */
#include <math.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

static const char *const op_names[] = {
  [KILN_REDUCE_SUM] = "sum",       [KILN_REDUCE_MEAN] = "mean",
  [KILN_REDUCE_MIN] = "min",       [KILN_REDUCE_MAX] = "max",
  [KILN_REDUCE_ARGMIN] = "argmin", [KILN_REDUCE_ARGMAX] = "argmax",
  [KILN_REDUCE_NORM2] = "norm",
};

/* The profiler's name of a request: "reduce.sum", ...; its view in words:
 * "1024x512 float32 axis 1". */
static const char *profile_name(kiln_reduce_op op)
{
  static const char *const names[] = {
    [KILN_REDUCE_SUM] = "reduce.sum",       [KILN_REDUCE_MEAN] = "reduce.mean",
    [KILN_REDUCE_MIN] = "reduce.min",       [KILN_REDUCE_MAX] = "reduce.max",
    [KILN_REDUCE_ARGMIN] = "reduce.argmin", [KILN_REDUCE_ARGMAX] = "reduce.argmax",
    [KILN_REDUCE_NORM2] = "reduce.norm",
  };
  return (unsigned)op < sizeof names / sizeof names[0] && names[op] ? names[op]
                                                                    : "reduce";
}

static const char *view_text(const kiln_reduce_desc *d, char *buf, size_t size)
{
  size_t at = 0;
  for (unsigned i = 0; i < d->ndim && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%zu", i ? "x" : "", d->shape[i]);
  if (at < size)
    at += (size_t)snprintf(buf + at, size - at, " %s", kiln_dtype_name(d->dtype));
  if (at < size && d->axis != KILN_AXIS_ALL)
    snprintf(buf + at, size - at, " axis %d", (int)d->axis);
  return buf;
}

KILN_API const char *kiln_reduce_op_name(kiln_reduce_op op)
{
  return (unsigned)op < sizeof op_names / sizeof op_names[0] && op_names[op]
           ? op_names[op]
           : "invalid";
}

KILN_API kiln_dtype kiln_reduce_out_dtype(kiln_reduce_op op, kiln_dtype in)
{
  int real = in == KILN_F16 || in == KILN_F32;
  if (!real && in != KILN_F64 && in != KILN_I32)
    return (kiln_dtype)0;
  switch (op) {
  case KILN_REDUCE_SUM: return real ? KILN_F32 : in == KILN_I32 ? KILN_I64 : KILN_F64;
  case KILN_REDUCE_MEAN:
  case KILN_REDUCE_NORM2: return real ? KILN_F32 : KILN_F64;
  case KILN_REDUCE_MIN:
  case KILN_REDUCE_MAX: return in;
  case KILN_REDUCE_ARGMIN:
  case KILN_REDUCE_ARGMAX: return KILN_I64;
  }
  return (kiln_dtype)0;
}

kiln_status kiln__reduce_plan(kiln_runtime *rt, const kiln_reduce_desc *d,
                              kiln__reduce *r, size_t *count, size_t *outputs)
{
  const char *op = kiln_reduce_op_name(d->op);
  kiln_dtype out = kiln_reduce_out_dtype(d->op, d->dtype);
  if (!strcmp(op, "invalid"))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_reduce: op %d is not a "
                      "kiln_reduce_op; expected KILN_REDUCE_SUM ... KILN_REDUCE_NORM2",
                      (int)d->op);
  if (!out)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "kiln_reduce: %s of %s; expected "
                      "float16, float32, float64 or int32 input",
                      op, kiln_dtype_name(d->dtype));
  if (!kiln_runtime_device(rt)->has_fp64 && (d->dtype == KILN_F64 || out == KILN_F64)) {
    char what[80];
    snprintf(what, sizeof what, "%s of %s, whose result is %s,", op,
             kiln_dtype_name(d->dtype), kiln_dtype_name(out));
    return kiln__no_fp64(rt, "kiln_reduce", what);
  }
  if (d->ndim < 1 || d->ndim > KILN_ARRAY_MAX_DIMS)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_reduce: ndim is %u; expected 1 to %d", d->ndim,
                      KILN_ARRAY_MAX_DIMS);
  int32_t axis = d->axis;
  int all = axis == KILN_AXIS_ALL;
  if (!all && axis < 0)
    axis += (int32_t)d->ndim;
  if (!all && (axis < 0 || axis >= (int32_t)d->ndim))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_reduce: axis %d of a "
                      "%u-dimensional view; expected %d to %u, or KILN_AXIS_ALL",
                      (int)d->axis, d->ndim, -(int)d->ndim, d->ndim - 1);
  size_t dims[3] = {1, 1, 1}; /* outer, len, inner */
  for (unsigned i = 0; i < d->ndim; i++) {
    size_t *into = all ? &dims[1]
                       : &dims[(int32_t)i < axis    ? 0
                               : (int32_t)i == axis ? 1
                                                    : 2];
    if (kiln__mul_overflow(*into, d->shape[i], into))
      return kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_reduce: the view's size overflows");
  }
  /* Each part fits, but their products may not: a view of 2^62 x 4 along
   * axis 0 would count 2^64 elements, 0 once wrapped, and pass any buffer. */
  if (kiln__mul_overflow(dims[0], dims[2], outputs) ||
      kiln__mul_overflow(*outputs, dims[1], count))
    return kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_reduce: the view's size overflows");
  *r = (kiln__reduce){.op = d->op,
                      .in_type = d->dtype,
                      .out_type = out,
                      .outer = dims[0],
                      .len = dims[1],
                      .inner = dims[2],
                      .offset = d->offset};
  return KILN_OK;
}

kiln_status kiln__reduce_empty(kiln_runtime *rt, const kiln__reduce *r, kiln_buffer *out,
                               size_t outputs)
{
  if (r->op != KILN_REDUCE_SUM && r->op != KILN_REDUCE_MEAN && r->op != KILN_REDUCE_NORM2)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_reduce: %s of an empty "
                      "view has no value; expected at least one element along the "
                      "reduced axis",
                      kiln_reduce_op_name(r->op));
  union {
    float f;
    double d;
    int64_t i;
  } v = {0};
  int mean = r->op == KILN_REDUCE_MEAN;
  if (r->out_type == KILN_F32)
    v.f = mean ? NAN : 0.0f;
  else if (r->out_type == KILN_F64)
    v.d = mean ? NAN : 0.0;
  return kiln_buffer_fill(out, r->out_offset - r->out_first, outputs, &v);
}

/* The backend of id, or NULL for none (or one not built in). */
static const kiln__reduce_backend *backend_table(kiln_backend id)
{
  for (const kiln__reduce_backend *const *be = kiln__reduce_backends; *be; be++)
    if ((*be)->id == id)
      return *be;
  return NULL;
}

/* The key of r's per-shape choice: all that can change which backend is
 * fastest, the start's alignment (in elements, to 64 bytes) among them. */
static void reduce_key(const kiln__reduce *r, char *key, size_t size)
{
  snprintf(key, size, "reduce %s %s %zux%zux%zu align %zu", kiln_reduce_op_name(r->op),
           kiln_dtype_name(r->in_type), r->outer, r->len, r->inner,
           r->offset % (64 / kiln_dtype_size(r->in_type)));
}

/* kiln's kernels are the rule: on a CPU their contiguous chunks read many
 * times faster than CLBlast's GPU-shaped Xsum, and they honour numpy's NaN
 * and accumulation rules on every device, which CLBlast's float32
 * accumulation does not (docs/performance.md, "Reductions": `kiln bench
 * reduce`). A choice benchmark mode recorded for the shape comes first;
 * CLBlast runs when asked for. */
kiln_status kiln__reduce_choose(kiln_runtime *rt, kiln_backend asked,
                                const kiln__reduce *r, const kiln__reduce_backend **out)
{
  kiln_backend id = asked;
  if (id == KILN_BACKEND_AUTO) {
    char key[128];
    reduce_key(r, key, sizeof key);
    const kiln__reduce_backend *chosen = backend_table(kiln__choice_find(rt, key));
    id = chosen && !chosen->cannot(rt, r) ? chosen->id : KILN_BACKEND_KILN;
  }
  *out = backend_table(id);
  if (!*out)
    return kiln__backend_unknown(rt, "kiln_reduce", id,
                                 "KILN_BACKEND_AUTO, _KILN or _CLBLAST");
  return kiln__backend_refuses(rt, "kiln_reduce", id, kiln_reduce_op_name(r->op),
                               (*out)->cannot(rt, r));
}

static kiln_status trial(kiln_runtime *rt, const void *req, kiln_backend id,
                         kiln_buffer *out)
{
  kiln__reduce r = *(const kiln__reduce *)req;
  r.out = kiln__buffer_mem(out); /* scratch: a fresh copy of the out view */
  r.out_offset -= r.out_first;
  r.out_first = 0;
  return backend_table(id)->run(rt, &r);
}

static int can(kiln_runtime *rt, const void *req, kiln_backend id)
{
  return backend_table(id) && !backend_table(id)->cannot(rt, req);
}

/* Benchmark mode (choice.c): the first AUTO call of a shape with no
 * recorded choice times every backend that can run it and runs the
 * fastest; *be is the rules' pick on entry. The backends differ in their
 * order of summation: a float sum of len terms in any order is within
 * (len - 1) epsilon of the exact one, relative to the sum of magnitudes,
 * which is the result's own magnitude for a norm and for a sum without
 * cancellation. Beyond 1e-2 (float32, len above ~10^5) the bound stops:
 * larger, it would pass a kernel that skipped a block of terms; a sum that
 * cancels may then exceed it, which drops CLBlast and keeps the rules'
 * kiln: the safe side. */
static void benchmark(kiln_runtime *rt, const kiln__reduce *r, kiln_buffer *out,
                      const kiln__reduce_backend **be)
{
  static const kiln_backend all[] = {KILN_BACKEND_KILN, KILN_BACKEND_CLBLAST};
  char key[128];
  reduce_key(r, key, sizeof key);
  double tol = fmin((double)(r->len + 1) * kiln__choice_epsilon(r->in_type), 1e-2);
  kiln__bench b = {key, (*be)->id, all, KILN__COUNT(all), can, trial, r, out, {tol, 0}};
  kiln_backend w = kiln__choice_benchmark(rt, &b);
  if (w != KILN_BACKEND_AUTO)
    *be = backend_table(w);
}

kiln_status kiln__reduce_check(kiln_runtime *rt, const kiln_reduce_desc *desc,
                               const kiln_buffer *in, const kiln_buffer *out,
                               kiln__reduce *r, size_t *count, size_t *outputs)
{
  size_t need_in;
  kiln_status st = kiln__reduce_plan(rt, desc, r, count, outputs);
  if (st == KILN_OK && kiln__add_overflow(desc->offset, *count, &need_in))
    st = kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_reduce: offset + view overflows");
  if (st == KILN_OK)
    st = kiln__check_operand(rt, "kiln_reduce", "in", in, desc->dtype, need_in, NULL);
  if (st == KILN_OK)
    st = kiln__check_operand(rt, "kiln_reduce", "out", out, r->out_type, *outputs, NULL);
  if (st != KILN_OK)
    return st;
  r->in = kiln__buffer_mem(in);
  r->out = kiln__buffer_mem(out);
  r->offset += kiln__buffer_first(in);
  r->out_first = kiln__buffer_first(out);
  r->out_offset += r->out_first;
  return KILN_OK;
}

KILN_API kiln_status kiln_reduce(kiln_runtime *rt, const kiln_reduce_desc *desc,
                                 const kiln_buffer *in, kiln_buffer *out)
{
  kiln_reduce_desc given;
  kiln_status st = KILN__OP_DESC_IN(rt, "kiln_reduce", kiln_reduce_desc, desc, &given);
  if (st != KILN_OK)
    return st;
  desc = &given;
  kiln__profile_scope ps;
  kiln__profile_begin(rt, &ps, profile_name(desc->op));
  char view[64];
  kiln__reduce r;
  size_t count, outputs;
  const kiln__reduce_backend *be = NULL;
  st = kiln__reduce_check(rt, desc, in, out, &r, &count, &outputs);
  if (st != KILN_OK || outputs == 0)
    return kiln__profile_end(&ps, st);
  if (r.len == 0) {
    kiln__profile_describe(&ps, "kiln", outputs * kiln_dtype_size(r.out_type), 0, "%s",
                           view_text(desc, view, sizeof view));
    return kiln__profile_end(&ps, kiln__reduce_empty(rt, &r, out, outputs));
  }
  st = kiln__reduce_choose(rt, desc->backend, &r, &be);
  if (st == KILN_OK && rt->tuning->benchmark && desc->backend == KILN_BACKEND_AUTO)
    benchmark(rt, &r, out, &be);
  if (st == KILN_OK) {
    /* one operation per element read; norm's square and add count two */
    kiln__profile_describe(&ps, kiln_backend_name(be->id),
                           (uint64_t)count * kiln_dtype_size(r.in_type) +
                             (uint64_t)outputs * kiln_dtype_size(r.out_type),
                           (uint64_t)count * (r.op == KILN_REDUCE_NORM2 ? 2 : 1), "%s",
                           view_text(desc, view, sizeof view));
    assert(r.len >= 1);
    st = be->run(rt, &r);
  }
  return kiln__profile_end(&ps, st);
}
