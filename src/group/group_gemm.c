/*
 * group_gemm.c — GEMM over a device group (group_ops.c): rows of C of one
 * product, or whole products of a batch, through a pipeline that puts B
 * and the bias on each device once.
 */
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/pool.h"
#include "group/group_ops.h"
#include "ops/transfer.h"

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

/* GEMM's state on one device of a pipeline: over rows of one product, B
 * (packed, ldb apart) there for the whole call; over whole products, each
 * piece's A's, then its B's, one after another in the input set. Every
 * product's bias is there for the whole call. With beta != 0 a piece's C
 * goes in too, after per units of A (and B), and the rows of C the pieces
 * held are kept on the host (kept: KILN__GROUP_RING pieces of per units). */
typedef struct gemm_dev {
  const gemm_job *t;
  int rows;
  kiln_buffer *b, *bias;
  size_t ldb;
  unsigned char *kept;
  size_t per;
} gemm_dev;

static const gemm_dev *gemm_dev_of(const kiln__host_job *hj)
{
  return ((const kiln__group_pipe *)hj->op)->dev;
}

/* Elements of a unit (a row, or a product) in the input set before its C,
 * and of its C. */
static void gemm_unit(const gemm_dev *dv, size_t *ab, size_t *c)
{
  const kiln__gemm *g = &dv->t->g;
  *ab = dv->rows ? g->k : g->m * g->k + g->k * g->n;
  *c = dv->rows ? g->n : g->m * g->n;
}

static int gemm_fits(const kiln__host_job *hj, size_t per, int sets)
{
  const kiln__group_pipe *p = hj->op;
  const gemm_dev *dv = gemm_dev_of(hj);
  const kiln__gemm *g = &dv->t->g;
  size_t ab, c;
  gemm_unit(dv, &ab, &c);
  uint64_t es = kiln_dtype_size(g->dtype), out = per * c * es,
           in = per * (ab + (g->beta != 0.0 ? c : 0)) * es;
  uint64_t set =
    (uint64_t)kiln__pool_block_bytes(p->rt, in) + kiln__pool_block_bytes(p->rt, out);
  uint64_t packs = dv->rows ? kiln__gemm_pack_bytes(g->dtype, per, g->n, g->k)
                            : per * kiln__gemm_pack_bytes(g->dtype, g->m, g->n, g->k);
  return sets * set + packs <= p->room && in <= p->max_alloc && out <= p->max_alloc;
}

static kiln_status gemm_create(kiln_runtime *rt, const kiln__host_job *hj,
                               kiln_buffer *io[2])
{
  const kiln__group_pipe *p = hj->op;
  const gemm_dev *dv = gemm_dev_of(hj);
  const kiln__gemm *g = &dv->t->g;
  size_t ab, c;
  gemm_unit(dv, &ab, &c);
  kiln_status st =
    kiln__workspace(rt, p->j->fn, "device chunk of A and B (and C)", g->dtype,
                    hj->per * (ab + (g->beta != 0.0 ? c : 0)), &io[0]);
  if (st == KILN_OK)
    st =
      kiln__workspace(rt, p->j->fn, "device chunk of C", g->dtype, hj->per * c, &io[1]);
  return st;
}

/* Piece i's C between the caller's array and buf from element `to`. */
static kiln_status gemm_move_c(const kiln__host_job *hj, size_t i, kiln_buffer *buf,
                               size_t to, int write)
{
  const gemm_dev *dv = gemm_dev_of(hj);
  const gemm_job *t = dv->t;
  const kiln__gemm *g = &t->g;
  size_t at, count;
  kiln__group_pipe_chunk(hj, i, &at, &count);
  if (dv->rows)
    return kiln__host_move(hj, buf, to, write, t->c, g->offset_c + at * g->ldc, g->ldc,
                           count, g->n);
  kiln_status st = KILN_OK;
  for (size_t q = 0; q < count && st == KILN_OK; q++)
    st = kiln__host_move(hj, buf, to + q * g->m * g->n, write, t->c,
                         g->offset_c + (at + q) * g->stride_c, g->ldc, g->m, g->n);
  return st;
}

/* Rows at .. at + count of op(A) (rows of A, or columns of A stored k x m),
 * or the A's and B's of products at .. at + count; then C's with beta. */
static kiln_status gemm_put(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                            kiln_buffer *in)
{
  (void)rt;
  const gemm_dev *dv = gemm_dev_of(hj);
  const gemm_job *t = dv->t;
  const kiln__gemm *g = &t->g;
  int ta = g->trans_a == KILN_TRANS, tb = g->trans_b == KILN_TRANS;
  size_t at, count, ab, c, a = g->m * g->k, b = g->k * g->n;
  kiln__group_pipe_chunk(hj, i, &at, &count);
  gemm_unit(dv, &ab, &c);
  kiln_status st = KILN_OK;
  if (dv->rows)
    st = ta ? kiln__host_move(hj, in, 0, 1, t->a, g->offset_a + at, g->lda, g->k, count)
            : kiln__host_move(hj, in, 0, 1, t->a, g->offset_a + at * g->lda, g->lda,
                              count, g->k);
  for (size_t q = 0; !dv->rows && q < count && st == KILN_OK; q++) {
    st = kiln__host_move(hj, in, q * a, 1, t->a, g->offset_a + (at + q) * g->stride_a,
                         g->lda, ta ? g->k : g->m, ta ? g->m : g->k);
    if (st == KILN_OK)
      st = kiln__host_move(hj, in, count * a + q * b, 1, t->b,
                           g->offset_b + (at + q) * g->stride_b, g->ldb, tb ? g->n : g->k,
                           tb ? g->k : g->n);
  }
  if (st == KILN_OK && g->beta != 0.0)
    st = gemm_move_c(hj, i, in, hj->per * ab, 1);
  return st;
}

static kiln_status gemm_piece(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                              kiln_buffer *in, kiln_buffer *out)
{
  const gemm_dev *dv = gemm_dev_of(hj);
  const kiln__gemm *g = &dv->t->g;
  size_t at, count, ab, c;
  kiln__group_pipe_chunk(hj, i, &at, &count);
  gemm_unit(dv, &ab, &c);
  kiln_status st = KILN_OK;
  if (g->beta != 0.0) /* C where the product accumulates */
    st = kiln_buffer_copy(out, 0, in, hj->per * ab, count * c);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, g->dtype, dv->rows ? count : g->m, g->n, g->k);
  d.trans_a = g->trans_a, d.trans_b = g->trans_b;
  d.alpha = g->alpha, d.beta = g->beta;
  d.lda = g->trans_a == KILN_TRANS ? d.m : g->k;
  d.ldb = g->trans_b == KILN_TRANS ? g->k : g->n;
  d.ldc = g->n;
  d.backend = dv->t->backend;
  d.bias = g->bias_kind;
  d.activation = g->activation;
  d.bias_buffer = dv->bias;
  if (dv->rows) {
    d.offset_bias = g->bias_kind == KILN_BIAS_ROW ? at : 0;
    return st == KILN_OK ? kiln_gemm(rt, &d, in, dv->b, out) : st;
  }
  d.batch = count;
  d.offset_b = count * g->m * g->k;
  d.stride_a = g->m * g->k, d.stride_b = g->k * g->n, d.stride_c = c;
  d.offset_bias = at * g->stride_bias, d.stride_bias = g->stride_bias;
  return st == KILN_OK ? kiln_gemm(rt, &d, in, in, out) : st;
}

static kiln_status gemm_get(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                            kiln_buffer *out)
{
  (void)rt;
  return gemm_move_c(hj, i, out, 0, 0);
}

static kiln_status gemm_prepare(kiln__group_pipe *p, size_t per)
{
  gemm_dev *dv = (gemm_dev *)p->dev;
  const kiln__gemm *g = &dv->t->g;
  size_t ab, c;
  gemm_unit(dv, &ab, &c);
  dv->per = per;
  dv->kept = malloc(KILN__GROUP_RING * per * c * kiln_dtype_size(g->dtype));
  return dv->kept ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
}

static void gemm_keep(kiln__group_pipe *p, size_t i, int back)
{
  const gemm_dev *dv = p->dev;
  const kiln__gemm *g = &dv->t->g;
  size_t at = p->at[i % KILN__GROUP_RING], count = p->count[i % KILN__GROUP_RING], ab, c;
  gemm_unit(dv, &ab, &c);
  unsigned char *kept =
    dv->kept + i % KILN__GROUP_RING * dv->per * c * kiln_dtype_size(g->dtype);
  if (dv->rows)
    keep_c(dv->t, 0, 1, at, count, kept, back);
  else
    keep_c(dv->t, at, count, 0, g->m, kept, back);
}

/* GEMMs through a pipeline: rows of one product, B put on the device once,
 * or whole products; the bias (every product's) put on the device once.
 * Rows of a small batch of products a chunk at a time. */
static kiln_status gemm_pipe(kiln_runtime *rt, const kiln__group_job *j,
                             kiln__group_feed *f)
{
  const gemm_job *t = j->op_data;
  const kiln__gemm *g = &t->g;
  if (t->rows && g->batch != 1)
    return kiln__group_serve(rt, j, f);
  gemm_dev dv = {.t = t, .rows = t->rows, .ldb = g->trans_b == KILN_TRANS ? g->k : g->n};
  size_t brows = g->trans_b == KILN_TRANS ? g->n : g->k,
         nbias = (g->batch - 1) * g->stride_bias +
                 (g->bias_kind == KILN_BIAS_ROW ? g->m : g->n);
  kiln_status st = KILN_OK;
  if (dv.rows)
    st = kiln__workspace(rt, j->fn, "B on the device", g->dtype, brows * dv.ldb, &dv.b);
  if (st == KILN_OK && dv.rows) /* on the queue the pieces compute on: before them */
    st = kiln__buffer_write_rect(dv.b, t->b, g->offset_b, g->ldb, brows, dv.ldb);
  if (st == KILN_OK && t->bias)
    st = kiln__workspace(rt, j->fn, "bias on the device", g->dtype, nbias, &dv.bias);
  if (st == KILN_OK && t->bias)
    st = kiln__buffer_write_rect(dv.bias, t->bias, g->offset_bias, nbias, 1, nbias);
  if (st == KILN_OK) {
    kiln__group_pipe p = {.dev = &dv};
    if (g->beta != 0.0)
      p.prepare = gemm_prepare, p.keep = gemm_keep;
    kiln__host_job hj = {.fits = gemm_fits,
                         .create = gemm_create,
                         .put = gemm_put,
                         .run = gemm_piece,
                         .get = gemm_get};
    st = kiln__group_pipe_serve(rt, j, f, &p, &hj);
  } else {
    kiln_finish(rt); /* the writes read the caller's arrays */
  }
  kiln_buffer_destroy(dv.b);
  kiln_buffer_destroy(dv.bias);
  free(dv.kept);
  return st;
}

KILN_API kiln_status kiln_group_gemm_host(kiln_group *group, const kiln_gemm_desc *desc,
                                          const void *a, const void *b, void *c)
{
  static const char fn[] = "kiln_group_gemm_host";
  kiln_gemm_desc d;
  kiln_status st = kiln__group_in(group, fn, desc, a, b);
  if (st == KILN_OK)
    st = kiln__group_in(group, fn, c, c, c);
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
    .pipe = gemm_pipe,
    .op_data = &t,
  };
  return kiln__group_run(group, &j);
}
