/*
 * gemm.c — kiln_gemm(): checks the request against the buffers and the
 * device, resolves its defaults, normalises it to row-major, chooses a
 * backend and dispatches.
 */
#include <stdio.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "device/rank.h"
#include "ops/ops.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

KILN_API const char *kiln_activation_name(kiln_activation act)
{
  switch (act) {
  case KILN_ACTIVATION_NONE: return "none";
  case KILN_ACTIVATION_RELU: return "relu";
  case KILN_ACTIVATION_GELU: return "gelu";
  case KILN_ACTIVATION_SIGMOID: return "sigmoid";
  case KILN_ACTIVATION_TANH: return "tanh";
  }
  return "invalid";
}

KILN_API const char *kiln_backend_name(kiln_backend backend)
{
  switch (backend) {
  case KILN_BACKEND_AUTO: return "auto";
  case KILN_BACKEND_KILN: return "kiln";
  case KILN_BACKEND_CLBLAST: return "clblast";
  case KILN_BACKEND_IM2COL: return "im2col";
  case KILN_BACKEND_DIRECT: return "direct";
  case KILN_BACKEND_CLFFT: return "clfft";
  case KILN_BACKEND_VKFFT: return "vkfft";
  }
  return "invalid";
}

/* The backend of id, or NULL for none (or one not built in). */
static const kiln__gemm_backend *backend_table(kiln_backend id)
{
  for (const kiln__gemm_backend *const *be = kiln__gemm_backends; *be; be++)
    if ((*be)->id == id)
      return *be;
  return NULL;
}

/* One stored operand: its rows and columns as stored, and what it spans. */
typedef struct operand {
  const char *name;
  size_t rows, cols, ld, offset, stride, extent;
} operand;

/* Fills the operand's leading dimension, extent and stride, checking them.
 * op(X) is r x c; trans says X is stored as its transpose. */
static kiln_status shape(kiln_runtime *rt, const kiln_gemm_desc *d, operand *o, size_t r,
                         size_t c, int trans, size_t ld, size_t offset, size_t stride)
{
  int row_major = d->layout == KILN_ROW_MAJOR;
  o->rows = trans ? c : r;
  o->cols = trans ? r : c;
  size_t need = row_major ? o->cols : o->rows, lines = row_major ? o->rows : o->cols;
  o->ld = ld ? ld : need;
  o->offset = offset;
  if (o->ld < need)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_gemm: ld%s is %zu, smaller than the %zu %s of %s as stored "
                      "(%zu x %zu, %s%s); expected ld%s >= %zu or 0 for packed",
                      o->name, o->ld, need, row_major ? "columns" : "rows", o->name,
                      o->rows, o->cols, row_major ? "row-major" : "column-major",
                      trans ? ", transposed" : "", o->name, need);
  size_t span;
  if (kiln__mul_overflow(lines - 1, o->ld, &span) ||
      kiln__add_overflow(span, need, &o->extent) ||
      kiln__mul_overflow(lines, o->ld, &span))
    return kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_gemm: %s's extent overflows size_t",
                      o->name);
  o->stride = stride ? stride : span;
  return KILN_OK;
}

/* Checks that the buffer holds the operand's batch of matrices. */
static kiln_status fits(kiln_runtime *rt, const kiln_gemm_desc *d, const operand *o,
                        const kiln_buffer *buf, size_t batch)
{
  size_t last, need = 0;
  int overflow = kiln__mul_overflow(batch - 1, o->stride, &last) ||
                 kiln__add_overflow(last, o->offset, &last) ||
                 kiln__add_overflow(last, o->extent, &need);
  char name[16], detail[160];
  snprintf(name, sizeof name, "buffer %s", o->name);
  snprintf(detail, sizeof detail,
           "(offset %zu, %zu matrices of %zu x %zu with ld %zu, "
           "stride %zu)",
           o->offset, batch, o->rows, o->cols, o->ld, o->stride);
  kiln_status st = kiln__check_operand(rt, "kiln_gemm", name, buf, d->dtype,
                                       overflow ? 0 : need, detail);
  if (st == KILN_OK && overflow)
    return kiln__fail(rt, KILN_ERR_OVERFLOW,
                      "kiln_gemm: %s's batch extent overflows size_t", o->name);
  return st;
}

static kiln_status check_request(kiln_runtime *rt, const kiln_gemm_desc *d)
{
  if (d->dtype != KILN_F32 && d->dtype != KILN_F64 && d->dtype != KILN_F16)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "kiln_gemm: dtype %s; expected float16, float32 or float64",
                      kiln_dtype_name(d->dtype));
  if (d->dtype == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
    return kiln__no_fp64(rt, "kiln_gemm", "float64");
  if (d->m == 0 || d->n == 0 || d->k == 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_gemm: m, n, k are %zu, %zu, %zu; expected all above 0", d->m,
                      d->n, d->k);
  if ((unsigned)d->layout > KILN_COL_MAJOR || (unsigned)d->trans_a > KILN_TRANS ||
      (unsigned)d->trans_b > KILN_TRANS)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_gemm: layout %d, trans_a %d, trans_b %d; expected "
                      "KILN_ROW_MAJOR or KILN_COL_MAJOR and KILN_NO_TRANS or KILN_TRANS",
                      (int)d->layout, (int)d->trans_a, (int)d->trans_b);
  if ((unsigned)d->bias > KILN_BIAS_COL || (unsigned)d->activation > KILN_ACTIVATION_TANH)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_gemm: bias %d, activation %d; expected KILN_BIAS_NONE, "
                      "_ROW or _COL and KILN_ACTIVATION_NONE, _RELU, _GELU, _SIGMOID "
                      "or _TANH",
                      (int)d->bias, (int)d->activation);
  if (d->m > UINT32_MAX || d->n > UINT32_MAX || d->k > UINT32_MAX)
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                      "kiln_gemm: m, n, k are %zu, %zu, %zu; expected each below 2^32",
                      d->m, d->n, d->k);
  return KILN_OK;
}

/* Checks the request and fills g (buffers aside), normalised to row-major:
 * a column-major product is the row-major product of the transposes,
 * C' = op(B)' op(A)', so A and B trade places and m and n swap; the
 * transposes stay. ops[] gets A, B and C as the caller named them. */
static kiln_status plan(kiln_runtime *rt, const kiln_gemm_desc *d, kiln__gemm *g,
                        operand ops[3])
{
  kiln_status st = check_request(rt, d);
  size_t batch = d->batch ? d->batch : 1;
  operand *oa = &ops[0], *ob = &ops[1], *oc = &ops[2];
  *oa = (operand){.name = "A"};
  *ob = (operand){.name = "B"};
  *oc = (operand){.name = "C"};
  if (st == KILN_OK)
    st = shape(rt, d, oa, d->m, d->k, d->trans_a, d->lda, d->offset_a, d->stride_a);
  if (st == KILN_OK)
    st = shape(rt, d, ob, d->k, d->n, d->trans_b, d->ldb, d->offset_b, d->stride_b);
  if (st == KILN_OK)
    st = shape(rt, d, oc, d->m, d->n, 0, d->ldc, d->offset_c, d->stride_c);
  if (st == KILN_OK && batch > 1 && oc->stride < oc->extent)
    st = kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                    "kiln_gemm: stride_c %zu makes the batch's C matrices overlap; "
                    "expected at least %zu",
                    oc->stride, oc->extent);
  if (st != KILN_OK)
    return st;
  int swap = d->layout == KILN_COL_MAJOR;
  const operand *x = swap ? ob : oa, *y = swap ? oa : ob;
  *g = (kiln__gemm){
    .dtype = d->dtype,
    .layout = KILN_ROW_MAJOR,
    .trans_a = swap ? d->trans_b : d->trans_a,
    .trans_b = swap ? d->trans_a : d->trans_b,
    .m = swap ? d->n : d->m,
    .n = swap ? d->m : d->n,
    .k = d->k,
    .batch = batch,
    .alpha = d->alpha,
    .beta = d->beta,
    .lda = x->ld,
    .ldb = y->ld,
    .ldc = oc->ld,
    .offset_a = x->offset,
    .offset_b = y->offset,
    .offset_c = oc->offset,
    .stride_a = x->stride,
    .stride_b = y->stride,
    .stride_c = oc->stride,
    /* the transposed product's rows are C's columns */
    .bias_kind = swap && d->bias ? KILN_BIAS_ROW + KILN_BIAS_COL - d->bias : d->bias,
    .activation = d->activation,
    .offset_bias = d->offset_bias,
    .stride_bias = d->stride_bias,
  };
  return KILN_OK;
}

kiln_status kiln__gemm_bias_check(kiln_runtime *rt, const char *fn,
                                  const kiln_gemm_desc *d, size_t batch, int host,
                                  size_t *need)
{
  const char *field = host ? "bias_host" : "bias_buffer";
  const void *given = host ? d->bias_host : (const void *)d->bias_buffer;
  if (host ? d->bias_buffer != NULL : d->bias_host != NULL)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is set; expected the bias in %s (%s is for %s)", fn,
                      host ? "bias_buffer" : "bias_host", field,
                      host ? "bias_buffer" : "bias_host",
                      host ? "kiln_gemm" : "kiln_gemm_host");
  if (d->bias == KILN_BIAS_NONE && given)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is set but bias is KILN_BIAS_NONE; expected "
                      "KILN_BIAS_ROW or KILN_BIAS_COL to add it",
                      fn, field);
  size_t len = d->bias == KILN_BIAS_ROW ? d->m : d->n, last;
  *need = 0;
  if (d->bias == KILN_BIAS_NONE)
    return KILN_OK;
  if (!given)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: bias is KILN_BIAS_%s but %s is NULL; expected %zu values "
                      "(one per %s of C)",
                      fn, d->bias == KILN_BIAS_ROW ? "ROW" : "COL", field, len,
                      d->bias == KILN_BIAS_ROW ? "row" : "column");
  if (kiln__mul_overflow(batch - 1, d->stride_bias, &last) ||
      kiln__add_overflow(last, d->offset_bias, &last) ||
      kiln__add_overflow(last, len, need))
    return kiln__fail(rt, KILN_ERR_OVERFLOW, "%s: the bias's extent overflows size_t",
                      fn);
  return KILN_OK;
}

kiln_status kiln__gemm_plan(kiln_runtime *rt, const kiln_gemm_desc *d, kiln__gemm *g)
{
  operand ops[3];
  return plan(rt, d, g, ops);
}

/* plan(), then the buffers: each must hold its operand's batch. */
static kiln_status resolve(kiln_runtime *rt, const kiln_gemm_desc *d,
                           const kiln_buffer *a, const kiln_buffer *b,
                           const kiln_buffer *c, kiln__gemm *g)
{
  operand ops[3];
  const kiln_buffer *bufs[3] = {a, b, c};
  kiln_status st = plan(rt, d, g, ops);
  for (int i = 0; i < 3 && st == KILN_OK; i++)
    st = fits(rt, d, &ops[i], bufs[i], g->batch);
  size_t need;
  if (st == KILN_OK)
    st = kiln__gemm_bias_check(rt, "kiln_gemm", d, g->batch, 0, &need);
  if (st == KILN_OK && d->bias_buffer) {
    char detail[96];
    snprintf(detail, sizeof detail, "(offset %zu, %zu vectors of %zu, stride %zu)",
             d->offset_bias, g->batch, d->bias == KILN_BIAS_ROW ? d->m : d->n,
             d->stride_bias);
    st = kiln__check_operand(rt, "kiln_gemm", "bias_buffer", d->bias_buffer, d->dtype,
                             need, detail);
    g->bias = kiln__buffer_mem(d->bias_buffer);
    g->offset_bias += kiln__buffer_first(d->bias_buffer);
  }
  if (st != KILN_OK)
    return st;
  int swap = d->layout == KILN_COL_MAJOR;
  g->a = kiln__buffer_mem(swap ? b : a);
  g->b = kiln__buffer_mem(swap ? a : b);
  g->c = kiln__buffer_mem(c);
  g->offset_a += kiln__buffer_first(swap ? b : a);
  g->offset_b += kiln__buffer_first(swap ? a : b);
  g->first_c = kiln__buffer_first(c);
  g->offset_c += g->first_c;
  return KILN_OK;
}

/*
 * AUTO's rules, from `kiln bench gemm` (figures in docs/performance.md,
 * "Matrix multiply" and "GEMM's rule on a GPU"):
 *  - on a CPU device kiln's register-blocked kernel wins: CLBlast's kernels
 *    are shaped for GPUs;
 *  - on a GPU, CLBlast when built in: it is tuned per GPU, kiln's GPU shape
 *    is a portable fallback; float16 through CLBlast only with cl_khr_fp16.
 */
static kiln_backend auto_choice(kiln_runtime *rt, const kiln__gemm *g)
{
  const kiln__gemm_backend *clblast = backend_table(KILN_BACKEND_CLBLAST);
  if (!kiln__gpu_shape(rt) || !clblast || clblast->cannot(rt, g))
    return KILN_BACKEND_KILN;
  return KILN_BACKEND_CLBLAST;
}

/* The key of g's per-shape choice: all that can change which backend is
 * fastest. */
static void gemm_key(const kiln__gemm *g, char *key, size_t size)
{
  snprintf(key, size, "gemm %s %c%c %zux%zux%zu batch %zu ld %zu,%zu,%zu%s%s",
           kiln_dtype_name(g->dtype), g->trans_a ? 't' : 'n', g->trans_b ? 't' : 'n',
           g->m, g->n, g->k, g->batch, g->lda, g->ldb, g->ldc,
           g->beta != 0 ? " beta" : "", kiln__gemm_has_epilogue(g) ? " epilogue" : "");
}

/* The backend for g: the one asked for, else the runtime's, else the
 * choice recorded for its shape, else AUTO's rules. */
static kiln_status choose(kiln_runtime *rt, kiln_backend asked, const kiln__gemm *g,
                          const kiln__gemm_backend **out)
{
  kiln_backend id = asked != KILN_BACKEND_AUTO ? asked : rt->gemm_backend;
  if (id == KILN_BACKEND_AUTO) {
    char key[160];
    gemm_key(g, key, sizeof key);
    const kiln__gemm_backend *chosen = backend_table(kiln__choice_find(rt, key));
    id = chosen && !chosen->cannot(rt, g) ? chosen->id : auto_choice(rt, g);
  }
  *out = backend_table(id);
  if (!*out && id == KILN_BACKEND_CLBLAST)
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                      "kiln_gemm: backend clblast was asked for, but this kiln was "
                      "built without CLBlast (meson option clblast; Debian "
                      "libclblast-dev)");
  if (!*out)
    return kiln__backend_unknown(
      rt, "kiln_gemm", id,
      "KILN_BACKEND_AUTO, KILN_BACKEND_KILN or KILN_BACKEND_CLBLAST");
  return kiln__backend_refuses(rt, "kiln_gemm", id, "GEMM", (*out)->cannot(rt, g));
}

/* Enqueues g on be. Where the driver ends a work-item's loops early
 * (kiln__loop_limit()), in k-slices short enough for every backend's loop
 * over k (kiln's tile counts about ten iterations a k, CLBlast's one per
 * 16): C = alpha A1 B1 + beta C, then C += alpha Ai Bi, the epilogue on the
 * last slice. */
static kiln_status run_on(kiln_runtime *rt, const kiln__gemm_backend *be,
                          const kiln__gemm *g)
{
  size_t limit = kiln__loop_limit(kiln_runtime_device(rt)), kb = limit / 16;
  if (!limit || g->k <= kb)
    return be->run(rt, g);
  kiln_status st = KILN_OK;
  for (size_t p0 = 0; p0 < g->k && st == KILN_OK; p0 += kb) {
    kiln__gemm s = *g;
    s.k = g->k - p0 < kb ? g->k - p0 : kb;
    /* Row-major op(A) is m x k and op(B) k x n: column p0 of op(A), row p0
     * of op(B). */
    s.offset_a += g->trans_a == KILN_NO_TRANS ? p0 : p0 * g->lda;
    s.offset_b += g->trans_b == KILN_NO_TRANS ? p0 * g->ldb : p0;
    if (p0)
      s.beta = 1;
    if (p0 + s.k < g->k) {
      s.bias_kind = KILN_BIAS_NONE;
      s.activation = KILN_ACTIVATION_NONE;
      s.bias = NULL;
    }
    st = be->run(rt, &s);
  }
  return st;
}

static kiln_status trial(kiln_runtime *rt, const void *req, kiln_backend id,
                         kiln_buffer *out)
{
  kiln__gemm g = *(const kiln__gemm *)req;
  g.c = kiln__buffer_mem(out); /* scratch: a fresh copy of the C view */
  g.offset_c -= g.first_c;
  g.first_c = 0;
  return run_on(rt, backend_table(id), &g);
}

static int can(kiln_runtime *rt, const void *req, kiln_backend id)
{
  return backend_table(id) && !backend_table(id)->cannot(rt, req);
}

/* Benchmark mode (choice.c): the first AUTO call of a shape with no
 * recorded choice times every backend that can run it and runs the
 * fastest; *be is the rules' pick on entry. */
static void benchmark(kiln_runtime *rt, const kiln__gemm *g, kiln_buffer *c,
                      const kiln__gemm_backend **be)
{
  static const kiln_backend all[] = {KILN_BACKEND_KILN, KILN_BACKEND_CLBLAST};
  char key[160];
  gemm_key(g, key, sizeof key);
  kiln__bench b = {key, (*be)->id, all, KILN__COUNT(all), can, trial, g, c, {0, 0}};
  kiln_backend w = kiln__choice_benchmark(rt, &b);
  if (w != KILN_BACKEND_AUTO)
    *be = backend_table(w);
}

kiln_status kiln__gemm_check(kiln_runtime *rt, const kiln_gemm_desc *desc,
                             const kiln_buffer *a, const kiln_buffer *b,
                             const kiln_buffer *c, kiln__gemm *g,
                             const kiln__gemm_backend **be)
{
  kiln_status st = resolve(rt, desc, a, b, c, g);
  return st == KILN_OK ? choose(rt, desc->backend, g, be) : st;
}

KILN_API kiln_status kiln_gemm(kiln_runtime *rt, const kiln_gemm_desc *desc,
                               const kiln_buffer *a, const kiln_buffer *b, kiln_buffer *c)
{
  kiln_gemm_desc given;
  kiln__profile_scope ps;
  kiln_status st =
    KILN__OP_BEGIN(rt, "kiln_gemm", kiln_gemm_desc, desc, &given, &ps, "gemm");
  if (st != KILN_OK)
    return st;
  desc = &given;
  kiln__gemm g;
  const kiln__gemm_backend *be = NULL;
  st = kiln__gemm_check(rt, desc, a, b, c, &g, &be);
  if (st == KILN_OK && rt->tuning->benchmark && desc->backend == KILN_BACKEND_AUTO &&
      rt->gemm_backend == KILN_BACKEND_AUTO)
    benchmark(rt, &g, c, &be);
  if (st == KILN_OK) {
    /* A and B read, C written (and read when beta is not 0); the batch
     * shown only above 1 (%.0zu prints nothing for 0). */
    uint64_t es = kiln_dtype_size(g.dtype), mn = (uint64_t)g.m * g.n;
    uint64_t bias = desc->bias == KILN_BIAS_ROW ? desc->m : desc->bias ? desc->n : 0;
    char epi[40] = ""; /* " + bias + gelu" */
    if (desc->bias)
      strcat(epi, " + bias");
    if (desc->activation) {
      strcat(epi, " + ");
      strcat(epi, kiln_activation_name(desc->activation));
    }
    kiln__profile_describe(
      &ps, kiln_backend_name(be->id),
      es * g.batch *
        ((uint64_t)g.m * g.k + (uint64_t)g.k * g.n + mn * (g.beta != 0 ? 2 : 1) + bias),
      2 * mn * g.k * g.batch, "%zux%zux%zu %s%s%.0zu%s", desc->m, desc->n, desc->k,
      kiln_dtype_name(g.dtype), g.batch > 1 ? " batch " : "", g.batch > 1 ? g.batch : 0,
      epi);
    assert(g.batch >= 1 && g.lda >= 1 && g.ldb >= 1 && g.ldc >= 1);
    st = run_on(rt, be, &g);
  }
  return kiln__profile_end(&ps, st);
}

KILN_API kiln_backend kiln_gemm_backend_for(kiln_runtime *rt, const kiln_gemm_desc *desc)
{
  kiln__gemm g;
  kiln_gemm_desc given;
  if (!rt || !desc ||
      KILN__STRUCT_IN(rt, "kiln_gemm_backend_for", kiln_gemm_desc, desc, &given) !=
        KILN_OK ||
      kiln__gemm_plan(rt, &given, &g) != KILN_OK)
    return KILN_BACKEND_AUTO;
  const kiln__gemm_backend *be = NULL;
  return choose(rt, given.backend, &g, &be) == KILN_OK ? be->id : KILN_BACKEND_AUTO;
}
