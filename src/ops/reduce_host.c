/*
 * reduce_host.c — kiln_reduce_host(): a reduction of the caller's host
 * array, moved to the device in pieces that fit.
 *
 * Every element: contiguous chunks, each reduced on the device, the chunk
 * results combined here exactly as the kernels combine their partials (sums
 * in double, norms as the root of summed squares, NaN first, ties to the
 * first index). Along an axis: blocks of whole outer rows, each reduced
 * completely on the device into its slice of the output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "ops/ops.h"
#include "ops/transfer.h"

/* A chunk's result, widened for combining. */
typedef struct part {
  double v;  /* sum, mean's sum, norm, min or max as a double */
  int64_t i; /* integer sums exactly; indices */
} part;

static part load_part(kiln_dtype t, const void *p)
{
  switch (t) {
  case KILN_F16: return (part){kiln__half_to_double(*(const uint16_t *)p), 0};
  case KILN_F32: return (part){*(const float *)p, 0};
  case KILN_F64: return (part){*(const double *)p, 0};
  case KILN_I32: return (part){*(const int32_t *)p, *(const int32_t *)p};
  default: return (part){(double)*(const int64_t *)p, *(const int64_t *)p};
  }
}

/* Whether the candidate beats the best so far: reduce.cl's rule. */
static int beats(double v, int64_t i, double e, int64_t b, int want_max)
{
  if (isnan(e))
    return isnan(v) && i < b;
  if (isnan(v))
    return 1;
  return v == e ? i < b : want_max ? v > e : v < e;
}

/* Folds the result p of the chunk starting at element `first` into acc;
 * returns whether p replaced it (min, max, argmin, argmax). */
static int fold(const kiln__reduce *r, const unsigned char *in, size_t es, part *acc,
                part p, size_t first, int is_first)
{
  kiln_reduce_op op = r->op;
  int take = is_first;
  if (op == KILN_REDUCE_ARGMIN || op == KILN_REDUCE_ARGMAX) {
    p.i += (int64_t)first;
    p.v = load_part(r->in_type, in + (size_t)p.i * es).v;
    take = take || beats(p.v, p.i, acc->v, acc->i, op == KILN_REDUCE_ARGMAX);
  } else if (op == KILN_REDUCE_MIN || op == KILN_REDUCE_MAX) {
    take =
      take || (!isnan(acc->v) &&
               (isnan(p.v) || (op == KILN_REDUCE_MAX ? p.v > acc->v : p.v < acc->v)));
  } else {
    acc->v += op == KILN_REDUCE_NORM2 ? p.v * p.v : p.v;
    acc->i += p.i;
    return 0;
  }
  if (take)
    *acc = p;
  return take;
}

static void store(kiln_dtype t, void *out, part acc, const kiln__reduce *r, size_t n)
{
  double v = acc.v;
  if (r->op == KILN_REDUCE_MEAN)
    v = (r->in_type == KILN_I32 ? (double)acc.i : v) / (double)n;
  else if (r->op == KILN_REDUCE_NORM2)
    v = sqrt(v);
  switch (t) {
  case KILN_F32: *(float *)out = (float)v; break;
  case KILN_F64: *(double *)out = v; break;
  case KILN_I32: *(int32_t *)out = (int32_t)acc.i; break;
  case KILN_I64: *(int64_t *)out = acc.i; break;
  default: break; /* KILN_F16 min/max: copied as is by the caller */
  }
}

/* How many input elements one piece may hold. */
static size_t piece_elements(kiln_runtime *rt, size_t es)
{
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  kiln_memory_stats(rt, &mu);
  uint64_t left = mu.limit_bytes - mu.current_bytes;
  left -= left / 4; /* room for partials and the result */
  if (left > mu.max_alloc_bytes)
    left = mu.max_alloc_bytes;
  return (size_t)(left / es);
}

void kiln__reduce_combine(const kiln__reduce *r, const void *in, kiln_dtype pt,
                          const void *parts, size_t count, size_t per, void *out)
{
  size_t es = kiln_dtype_size(r->in_type), ps = kiln_dtype_size(pt);
  const unsigned char *p = parts, *best = p;
  part acc = {0, 0};
  for (size_t i = 0; i < count; i++)
    if (fold(r, in, es, &acc, load_part(pt, p + i * ps), i * per, i == 0))
      best = p + i * ps;
  if (r->op == KILN_REDUCE_MIN || r->op == KILN_REDUCE_MAX)
    memcpy(out, best, kiln_dtype_size(r->out_type)); /* its bits: half too */
  else
    store(r->out_type, out, acc, r, r->len);
}

kiln_reduce_op kiln__reduce_part_op(kiln_reduce_op op)
{
  return op == KILN_REDUCE_MEAN ? KILN_REDUCE_SUM : op;
}

/* Every element, in chunks; mean chunks are sums, so the division is once. */
static kiln_status whole(kiln_runtime *rt, const kiln_reduce_desc *d,
                         const kiln__reduce *r, const unsigned char *in, void *out,
                         size_t per)
{
  size_t es = kiln_dtype_size(d->dtype), n = r->len;
  kiln_reduce_desc cd = *d;
  cd.op = kiln__reduce_part_op(d->op);
  cd.ndim = 1;
  cd.axis = KILN_AXIS_ALL;
  cd.offset = 0;
  kiln_dtype pt = kiln_reduce_out_dtype(cd.op, d->dtype);
  size_t size = n < per ? n : per, ps = kiln_dtype_size(pt);
  unsigned char *parts = malloc((n + size - 1) / size * ps);
  if (!parts)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_reduce_host: out of host memory for the chunks' results");
  kiln_buffer *bin = NULL, *bout = NULL;
  kiln_status st =
    kiln__workspace(rt, "kiln_reduce_host", "device piece", d->dtype, size, &bin);
  if (st == KILN_OK)
    st = kiln__workspace(rt, "kiln_reduce_host", "device result", pt, 1, &bout);
  for (size_t at = 0; at < n && st == KILN_OK; at += size) {
    cd.shape[0] = n - at < size ? n - at : size;
    st = kiln_buffer_write(bin, 0, cd.shape[0], in + at * es);
    if (st == KILN_OK)
      st = kiln_reduce(rt, &cd, bin, bout);
    if (st == KILN_OK)
      st = kiln_buffer_read(bout, 0, 1, parts + at / size * ps);
  }
  if (st == KILN_OK)
    kiln__reduce_combine(r, in, pt, parts, (n + size - 1) / size, size, out);
  free(parts);
  kiln_buffer_destroy(bin);
  kiln_buffer_destroy(bout);
  return st;
}

/* What columns() and rows() set up alike: *cd, d's request on a piece, a
 * 3-D view reduced along its middle axis of r->len, and the device buffers
 * for the piece's n_in elements and its n_out results. */
static kiln_status axis_piece(kiln_runtime *rt, const kiln_reduce_desc *d,
                              const kiln__reduce *r, size_t n_in, size_t n_out,
                              kiln_reduce_desc *cd, kiln_buffer **bin, kiln_buffer **bout)
{
  *cd = *d;
  cd->ndim = 3;
  cd->axis = 1;
  cd->offset = 0;
  cd->shape[1] = r->len;
  *bin = *bout = NULL;
  kiln_status st =
    kiln__workspace(rt, "kiln_reduce_host", "device piece", d->dtype, n_in, bin);
  if (st == KILN_OK)
    st =
      kiln__workspace(rt, "kiln_reduce_host", "device results", r->out_type, n_out, bout);
  return st;
}

/* Along an axis whose rows do not fit: blocks of columns of one row at a
 * time, each len x w, moved with rectangular copies. */
static kiln_status columns(kiln_runtime *rt, const kiln_reduce_desc *d,
                           const kiln__reduce *r, const unsigned char *in,
                           unsigned char *out, size_t per)
{
  size_t es = kiln_dtype_size(d->dtype), os = kiln_dtype_size(r->out_type);
  size_t w = per / r->len;
  if (w == 0)
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                      "kiln_reduce_host: one column of the view (%zu elements, %zu "
                      "bytes) does not fit the device's memory budget (%zu elements)",
                      r->len, r->len * es, per);
  if (w > r->inner)
    w = r->inner;
  kiln_reduce_desc cd;
  kiln_buffer *bin, *bout;
  kiln_status st = axis_piece(rt, d, r, r->len * w, w, &cd, &bin, &bout);
  cd.shape[0] = 1;
  for (size_t o = 0; o < r->outer && st == KILN_OK; o++)
    for (size_t i0 = 0; i0 < r->inner && st == KILN_OK; i0 += w) {
      cd.shape[2] = r->inner - i0 < w ? r->inner - i0 : w;
      st = kiln__buffer_write_rect(bin, in + o * r->len * r->inner * es, i0, r->inner,
                                   r->len, cd.shape[2]);
      if (st == KILN_OK)
        st = kiln_reduce(rt, &cd, bin, bout);
      if (st == KILN_OK)
        st = kiln_buffer_read(bout, 0, cd.shape[2], out + (o * r->inner + i0) * os);
    }
  kiln_buffer_destroy(bin);
  kiln_buffer_destroy(bout);
  return st;
}

/* Along an axis: blocks of whole outer rows, reduced on the device. */
static kiln_status rows(kiln_runtime *rt, const kiln_reduce_desc *d,
                        const kiln__reduce *r, const unsigned char *in,
                        unsigned char *out, size_t per)
{
  size_t es = kiln_dtype_size(d->dtype), os = kiln_dtype_size(r->out_type);
  size_t row = r->len * r->inner, block = row ? per / row : r->outer;
  if (block == 0)
    return columns(rt, d, r, in, out, per);
  if (block > r->outer)
    block = r->outer;
  kiln_reduce_desc cd;
  kiln_buffer *bin, *bout;
  kiln_status st =
    axis_piece(rt, d, r, row ? block * row : 1, block * r->inner, &cd, &bin, &bout);
  cd.shape[2] = r->inner;
  for (size_t o = 0; o < r->outer && st == KILN_OK; o += block) {
    cd.shape[0] = r->outer - o < block ? r->outer - o : block;
    if (row)
      st = kiln_buffer_write(bin, 0, cd.shape[0] * row, in + o * row * es);
    if (st == KILN_OK)
      st = kiln_reduce(rt, &cd, bin, bout);
    if (st == KILN_OK)
      st = kiln_buffer_read(bout, 0, cd.shape[0] * r->inner, out + o * r->inner * os);
  }
  kiln_buffer_destroy(bin);
  kiln_buffer_destroy(bout);
  return st;
}

KILN_API kiln_status kiln_reduce_host(kiln_runtime *rt, const kiln_reduce_desc *desc,
                                      const void *in, void *out)
{
  kiln_reduce_desc given;
  kiln_status st =
    KILN__OP_DESC_IN(rt, "kiln_reduce_host", kiln_reduce_desc, desc, &given);
  if (st != KILN_OK)
    return st;
  if (!in || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_reduce_host: %s is NULL",
                      !in ? "in" : "out");
  desc = &given;
  kiln__reduce r;
  size_t count, outputs;
  const kiln__reduce_backend *be;
  st = kiln__reduce_plan(rt, desc, &r, &count, &outputs);
  if (st == KILN_OK) /* refuse here what the backend would refuse whole */
    st = kiln__reduce_choose(rt, desc->backend, &r, &be);
  if (st != KILN_OK || outputs == 0)
    return st;
  const unsigned char *src =
    (const unsigned char *)in + desc->offset * kiln_dtype_size(desc->dtype);
  size_t per = piece_elements(rt, kiln_dtype_size(desc->dtype));
  if (per == 0) {
    kiln_memory_usage mu;
    kiln_memory_usage_init(&mu);
    kiln_memory_stats(rt, &mu);
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                      "kiln_reduce_host: a piece of one %s element needs %zu bytes "
                      "of the memory budget and a quarter of what is left for its "
                      "partials, but kiln holds %llu of the %llu-byte budget; destroy "
                      "buffers or raise the limit",
                      kiln_dtype_name(desc->dtype), kiln_dtype_size(desc->dtype),
                      (unsigned long long)mu.current_bytes,
                      (unsigned long long)mu.limit_bytes);
  }
  if (r.len == 0) { /* the identity, or the error, through a one-element buffer */
    kiln_buffer *b = NULL;
    st = kiln_buffer_create(rt, r.out_type, outputs, 0, &b);
    if (st == KILN_OK)
      st = kiln__reduce_empty(rt, &r, b, outputs);
    if (st == KILN_OK)
      st = kiln_buffer_read(b, 0, outputs, out);
    kiln_buffer_destroy(b);
    return st;
  }
  return r.outer == 1 && r.inner == 1 ? whole(rt, desc, &r, src, out, per)
                                      : rows(rt, desc, &r, src, out, per);
}
