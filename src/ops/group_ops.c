/*
 * group_ops.c — the operations over a device group, from host arrays: each
 * cuts its request into units whose results do not depend on how they are
 * grouped into chunks, and runs a chunk as the device runtime's own host
 * operation on the units' part of the caller's arrays (group.c schedules).
 *
 *   GEMM       rows of C of one product, or whole products of a batch
 *   conv2d     images of the batch
 *   FFT        transforms of the batch
 *   reductions along an axis: outer rows of the view, each reduced whole;
 *              of every element: grains of a fixed size (set by the length
 *              and the group's size, not by the devices' speeds), each
 *              reduced to one result kept by its index and combined here in
 *              index order (kiln__reduce_combine), so the answer does not
 *              depend on which device did what
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../group.h"
#include "ops.h"

/* Checks the group and the request's pointers; the descriptor is copied
 * into *copy by the caller's KILN__STRUCT_IN. */
static kiln_status group_in(const kiln_group *g, const char *fn, const void *p1,
                            const void *p2, const void *p3)
{
  if (!g || !p1 || !p2 || !p3)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a group, a descriptor and the caller's "
                      "arrays",
                      fn, !g ? "group" : "an array or the descriptor");
  return KILN_OK;
}

/* ---- GEMM ---------------------------------------------------------------- */

typedef struct gemm_job {
  kiln__gemm g; /* the whole request, row-major */
  const unsigned char *a, *b;
  unsigned char *c;
  const void *bias;
  kiln_backend backend;
  int rows; /* units are rows of one product, else products */
} gemm_job;

/* Copies rows r0 .. r0 + rows of products bi .. bi + nb of C into keep, or
 * back from it: with beta != 0 the chunk reads C, so a chunk that fails
 * after writing some blocks must leave C as it was for the device that
 * takes it over. */
static void keep_c(const gemm_job *t, size_t bi, size_t nb, size_t r0, size_t rows,
                   unsigned char *keep, int back)
{
  const kiln__gemm *g = &t->g;
  size_t es = kiln_dtype_size(g->dtype), row = g->n * es;
  for (size_t b = bi; b < bi + nb; b++)
    for (size_t i = r0; i < r0 + rows; i++, keep += row) {
      unsigned char *c = t->c + (g->offset_c + b * g->stride_c + i * g->ldc) * es;
      memcpy(back ? c : keep, back ? keep : c, row);
    }
}

static kiln_status gemm_chunk(kiln_runtime *rt, const kiln__group_job *j, size_t at,
                              size_t count)
{
  const gemm_job *t = j->op_data;
  const kiln__gemm *g = &t->g;
  size_t bi = t->rows ? at / g->m : at, r0 = t->rows ? at % g->m : 0;
  size_t nb = t->rows ? 1 : count, rows = t->rows ? count : g->m;
  unsigned char *keep = NULL;
  if (g->beta != 0.0) {
    keep = malloc(nb * rows * g->n * kiln_dtype_size(g->dtype));
    if (!keep)
      return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                        "%s: out of host memory for a copy of a chunk of C", j->fn);
    keep_c(t, bi, nb, r0, rows, keep, 0);
  }
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, g->dtype, rows, g->n, g->k);
  d.trans_a = g->trans_a, d.trans_b = g->trans_b;
  d.alpha = g->alpha, d.beta = g->beta;
  d.lda = g->lda, d.ldb = g->ldb, d.ldc = g->ldc;
  d.batch = nb;
  d.stride_a = g->stride_a, d.stride_b = g->stride_b, d.stride_c = g->stride_c;
  /* row r0 of op(A): row r0 of A, or its column r0 when transposed */
  d.offset_a =
    g->offset_a + bi * g->stride_a + r0 * (g->trans_a == KILN_TRANS ? 1 : g->lda);
  d.offset_b = g->offset_b + bi * g->stride_b;
  d.offset_c = g->offset_c + bi * g->stride_c + r0 * g->ldc;
  d.backend = t->backend;
  d.bias = g->bias_kind;
  d.activation = g->activation;
  d.bias_host = t->bias;
  d.stride_bias = g->stride_bias;
  d.offset_bias =
    g->offset_bias + bi * g->stride_bias + (g->bias_kind == KILN_BIAS_ROW ? r0 : 0);
  kiln_status st = kiln_gemm_host(rt, &d, t->a, t->b, t->c);
  if (keep && st != KILN_OK)
    keep_c(t, bi, nb, r0, rows, keep, 1);
  free(keep);
  return st;
}

KILN_API kiln_status kiln_group_gemm_host(kiln_group *group, const kiln_gemm_desc *desc,
                                          const void *a, const void *b, void *c)
{
  static const char fn[] = "kiln_group_gemm_host";
  kiln_gemm_desc d;
  kiln_status st = group_in(group, fn, desc, a, b);
  if (st == KILN_OK)
    st = group_in(group, fn, c, c, c);
  if (st == KILN_OK)
    st = KILN__STRUCT_IN(NULL, fn, kiln_gemm_desc, desc, &d);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = kiln_group_runtime(group, 0);
  gemm_job t = {.bias = d.bias_host, .c = c, .backend = d.backend};
  size_t need;
  st = kiln__gemm_plan(rt, &d, &t.g);
  if (st == KILN_OK)
    st = kiln__gemm_bias_check(rt, fn, &d, t.g.batch, 1, &need);
  if (st != KILN_OK)
    return kiln__group_fail_from(rt, st);
  int swap = d.layout == KILN_COL_MAJOR; /* the plan swapped A and B */
  t.a = swap ? b : a;
  t.b = swap ? a : b;
  /* Products while there are several for each device, else rows. */
  t.rows = t.g.batch < 4 * kiln_group_size(group);
  /* Each chunk sends and packs all of B: at least a quarter of a
   * device's even share of the rows, so B goes a few times a device. */
  size_t min_rows = t.g.m / (4 * kiln_group_size(group));
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_GEMM,
    .units = t.rows ? t.g.batch * t.g.m : t.g.batch,
    .min = t.rows && min_rows ? min_rows : 1,
    .unit_work = 2.0 * (double)t.g.n * (double)t.g.k * (t.rows ? 1.0 : (double)t.g.m),
    .per_part = t.rows ? t.g.m : 0,
    .run = gemm_chunk,
    .op_data = &t,
  };
  return kiln__group_run(group, &j);
}

/* ---- convolution and FFT: units of the batch ------------------------------ */

/* A request whose units are its batch's: each reads in_one bytes of `in`
 * and writes out_one of `out`, one after another. */
typedef struct batch_job {
  kiln_conv2d_desc conv; /* the caller's, for a convolution */
  kiln_fft_desc fft;     /* the caller's, for an FFT */
  const void *w, *bias;  /* a convolution's weights and bias */
  const unsigned char *in;
  unsigned char *out;
  size_t in_one, out_one;
  /* The request on `count` units at in, into out. */
  kiln_status (*call)(kiln_runtime *rt, const struct batch_job *t, size_t count,
                      const void *in, void *out);
} batch_job;

static kiln_status batch_chunk(kiln_runtime *rt, const kiln__group_job *j, size_t at,
                               size_t count)
{
  const batch_job *t = j->op_data;
  return t->call(rt, t, count, t->in + at * t->in_one, t->out + at * t->out_one);
}

static kiln_status conv_call(kiln_runtime *rt, const batch_job *t, size_t count,
                             const void *x, void *y)
{
  kiln_conv2d_desc d = t->conv;
  d.n = count;
  return kiln_conv2d_host(rt, &d, x, t->w, t->bias, y);
}

KILN_API kiln_status kiln_group_conv2d_host(kiln_group *group,
                                            const kiln_conv2d_desc *desc, const void *x,
                                            const void *weights, const void *bias,
                                            void *y)
{
  static const char fn[] = "kiln_group_conv2d_host";
  batch_job t = {.w = weights, .bias = bias, .in = x, .out = y, .call = conv_call};
  kiln_status st = group_in(group, fn, desc, x, weights);
  if (st == KILN_OK)
    st = group_in(group, fn, y, y, y);
  if (st == KILN_OK)
    st = KILN__STRUCT_IN(NULL, fn, kiln_conv2d_desc, desc, &t.conv);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = kiln_group_runtime(group, 0);
  kiln__conv cv;
  st = kiln__conv_plan(rt, &t.conv, &cv);
  if (st != KILN_OK)
    return kiln__group_fail_from(rt, st);
  const kiln_conv2d_desc *r = &cv.d; /* defaults resolved */
  size_t es = kiln_dtype_size(r->dtype), outputs = r->k * cv.p * cv.q;
  t.in_one = r->c * r->h * r->w * es;
  t.out_one = outputs * es;
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_CONV,
    .units = r->n,
    .min = 1,
    .unit_work = 2.0 * (double)outputs * (double)(r->c / r->groups * r->r * r->s),
    .run = batch_chunk,
    .op_data = &t,
  };
  return kiln__group_run(group, &j);
}

static kiln_status fft_call(kiln_runtime *rt, const batch_job *t, size_t count,
                            const void *in, void *out)
{
  kiln_fft_desc d = t->fft;
  d.batch = count;
  return kiln_fft_host(rt, &d, in, out);
}

KILN_API kiln_status kiln_group_fft_host(kiln_group *group, const kiln_fft_desc *desc,
                                         const void *in, void *out)
{
  static const char fn[] = "kiln_group_fft_host";
  batch_job t = {.in = in, .out = out, .call = fft_call};
  kiln_status st = group_in(group, fn, desc, in, out);
  if (st == KILN_OK)
    st = KILN__STRUCT_IN(NULL, fn, kiln_fft_desc, desc, &t.fft);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = kiln_group_runtime(group, 0);
  kiln__fft f;
  st = kiln__fft_plan(rt, &t.fft, &f);
  if (st != KILN_OK)
    return kiln__group_fail_from(rt, st);
  size_t batch = f.d.batch;
  size_t points = (f.in_count > f.out_count ? f.in_count : f.out_count) / batch;
  t.in_one = f.in_count / batch * kiln_dtype_size(kiln__fft_type(&f, 0));
  t.out_one = f.out_count / batch * kiln_dtype_size(kiln__fft_type(&f, 1));
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_FFT,
    .units = batch,
    .min = 1,
    .unit_work = 5.0 * (double)points * (points > 1 ? log2((double)points) : 1.0),
    .run = batch_chunk,
    .op_data = &t,
  };
  return kiln__group_run(group, &j);
}

/* ---- reductions ---------------------------------------------------------- */

/* Grains of every element: at least this many elements each, and about
 * this many grains a device, so that a slow device's chunk is small. */
#define REDUCE_GRAIN_MIN 16384
#define REDUCE_GRAINS_PER_DEVICE 32

typedef struct reduce_job {
  kiln_reduce_desc d; /* the caller's */
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

KILN_API kiln_status kiln_group_reduce_host(kiln_group *group,
                                            const kiln_reduce_desc *desc, const void *in,
                                            void *out)
{
  static const char fn[] = "kiln_group_reduce_host";
  reduce_job t = {.out = out};
  kiln_status st = group_in(group, fn, desc, in, out);
  if (st == KILN_OK)
    st = KILN__STRUCT_IN(NULL, fn, kiln_reduce_desc, desc, &t.d);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = kiln_group_runtime(group, 0);
  size_t count, outputs;
  st = kiln__reduce_plan(rt, &t.d, &t.r, &count, &outputs);
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
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_REDUCE,
    .units = units,
    .min = 1,
    .unit_work = (double)(t.grain ? t.grain : t.r.len * t.r.inner + 1) * (double)t.es,
    .run = reduce_chunk,
    .op_data = &t,
  };
  st = kiln__group_run(group, &j);
  if (st == KILN_OK && t.grain)
    kiln__reduce_combine(&t.r, t.in, t.pt, t.parts, units, t.grain, out);
  free(t.parts);
  return st;
}
