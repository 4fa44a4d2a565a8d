/*
 * group_ops.c — the operations over a device group, from host arrays: each
 * cuts its request into units whose results do not depend on how they are
 * grouped into chunks, and runs a chunk as the device runtime's own host
 * operation on the units' part of the caller's arrays (group.c schedules).
 *
 *   GEMM       rows of C of one product, or whole products of a batch
 *   conv2d     images of the batch; when the batch is small for the
 *              group, bands of each image's output rows
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

#include "base/abi.h"
#include "base/error.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/pool.h"
#include "group/group.h"
#include "ops/ops.h"

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

/* ---- pipelines ----------------------------------------------------------- */

/* Pieces a pipeline holds at once (i - 1 .. i + 1), and one to spare. */
#define RING 4

/* One device's chunks of a call as a stream of pieces through two sets of
 * device buffers (host.c): chunk i + 1 goes in while chunk i computes, and
 * chunk i's results come back while chunk i + 1 computes. What stays on
 * the device for the whole call (a convolution's weights, GEMM's B) is
 * put there once. The operation's callbacks find piece i's chunk here. */
typedef struct pipeline {
  kiln__group_feed *feed;
  const kiln__group_job *j;
  kiln_runtime *rt;
  size_t at[RING], count[RING];
  size_t claimed, done;     /* pieces the current kiln__host_run() claimed,
                               and of them those done */
  uint64_t room, max_alloc; /* after what stays on the device */
  const void *dev;          /* the operation's state on this device */
  /* Optional, for chunks that read what they write (C with beta != 0):
   * prepare() makes room for RING pieces of per units, keep() saves piece
   * i's part of the caller's array when it is claimed (back 0) and puts it
   * back when the piece goes back undone (back 1), for the next device. */
  kiln_status (*prepare)(struct pipeline *p, size_t per);
  void (*keep)(struct pipeline *p, size_t i, int back);
} pipeline;

static int pipe_next(kiln__host_job *hj, size_t i)
{
  pipeline *p = hj->op;
  size_t at, count;
  /* A run's first piece waits for a chunk; later ones are taken only when
   * there is one now, else the run ends (its last piece comes back) */
  if (!kiln__group_take(p->feed, i == 0, &at, &count))
    return 0;
  p->at[i % RING] = at, p->count[i % RING] = count;
  p->claimed++;
  if (p->keep)
    p->keep(p, i, 0);
  return 1;
}

static void pipe_done(kiln__host_job *hj, size_t i)
{
  pipeline *p = hj->op;
  p->done++;
  kiln__group_done(p->feed, p->at[i % RING], p->count[i % RING]);
}

/* Piece i's chunk. */
static void pipe_chunk(const kiln__host_job *hj, size_t i, size_t *at, size_t *count)
{
  const pipeline *p = hj->op;
  *at = p->at[i % RING], *count = p->count[i % RING];
}

/* Serves f's chunks through hj (its fits, create, put, run and get; p is
 * set up here as hj->op) until none is left. One chunk at a time
 * (kiln__group_serve) when not even a chunk of one unit fits, or when the
 * device runs out of memory on the way (a workspace fits() did not
 * foresee): the chunks the pipeline holds then go back first. */
static kiln_status pipe_serve(kiln_runtime *rt, const kiln__group_job *j,
                              kiln__group_feed *f, pipeline *p, kiln__host_job *hj)
{
  p->feed = f, p->j = j, p->rt = rt;
  hj->op = p, hj->next = pipe_next, hj->done = pipe_done;
  kiln__host_room(rt, &p->room, &p->max_alloc);
  if (!kiln__host_choose(hj, j->per_part ? j->per_part : j->units) ||
      (p->prepare && p->prepare(p, hj->per)))
    return kiln__group_serve(rt, j, f);
  kiln__group_cap(f, hj->per);
  kiln_status st;
  do {
    p->claimed = p->done = 0;
    st = kiln__host_run(rt, hj); /* which waits for every transfer */
  } while (st == KILN_OK && p->claimed);
  for (size_t i = p->done; p->keep && i < p->claimed && st != KILN_OK; i++)
    p->keep(p, i, 1);
  if (st != KILN_ERR_OUT_OF_MEMORY)
    return st;
  kiln__group_release(f);
  kiln__group_cap(f, 0);
  return kiln__group_serve(rt, j, f);
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

/* GEMM's state on one device of a pipeline: over rows of one product, B
 * (packed, ldb apart) there for the whole call; over whole products, each
 * piece's A's, then its B's, one after another in the input set. Every
 * product's bias is there for the whole call. With beta != 0 a piece's C
 * goes in too, after per units of A (and B), and the rows of C the pieces
 * held are kept on the host (kept: RING pieces of per units). */
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
  return ((const pipeline *)hj->op)->dev;
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
  const pipeline *p = hj->op;
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
  const pipeline *p = hj->op;
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
  pipe_chunk(hj, i, &at, &count);
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
  pipe_chunk(hj, i, &at, &count);
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
  pipe_chunk(hj, i, &at, &count);
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

static kiln_status gemm_prepare(pipeline *p, size_t per)
{
  gemm_dev *dv = (gemm_dev *)p->dev;
  const kiln__gemm *g = &dv->t->g;
  size_t ab, c;
  gemm_unit(dv, &ab, &c);
  dv->per = per;
  dv->kept = malloc(RING * per * c * kiln_dtype_size(g->dtype));
  return dv->kept ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
}

static void gemm_keep(pipeline *p, size_t i, int back)
{
  const gemm_dev *dv = p->dev;
  const kiln__gemm *g = &dv->t->g;
  size_t at = p->at[i % RING], count = p->count[i % RING], ab, c;
  gemm_unit(dv, &ab, &c);
  unsigned char *kept = dv->kept + i % RING * dv->per * c * kiln_dtype_size(g->dtype);
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
    pipeline p = {.dev = &dv};
    if (g->beta != 0.0)
      p.prepare = gemm_prepare, p.keep = gemm_keep;
    kiln__host_job hj = {.fits = gemm_fits,
                         .create = gemm_create,
                         .put = gemm_put,
                         .run = gemm_piece,
                         .get = gemm_get};
    st = pipe_serve(rt, j, f, &p, &hj);
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
    .pipe = gemm_pipe,
    .op_data = &t,
  };
  return kiln__group_run(group, &j);
}

/* ---- convolution and FFT: units of the batch ------------------------------ */

/* A request whose units are its batch's: each reads in_el elements of
 * in_type from `in` and writes out_el of out_type to `out`, one after
 * another (in_one and out_one bytes). */
typedef struct batch_job {
  kiln_conv2d_desc conv; /* the caller's, for a convolution */
  kiln__conv cv;         /* its geometry, defaults resolved */
  size_t bands;          /* a convolution's units an image (1: whole images) */
  size_t band_rows;      /* the output rows of a band (the last may be short) */
  kiln_fft_desc fft;     /* the caller's, for an FFT */
  const void *w, *bias;  /* a convolution's weights and bias */
  const unsigned char *in;
  unsigned char *out;
  kiln_dtype in_type, out_type;
  size_t in_el, out_el, in_one, out_one;
  size_t in_total; /* elements of `in` in all, when its last unit is short
                      (a reduction's last grain); else 0 */
  /* The request on `count` units at in, into out, a chunk at a time. */
  kiln_status (*call)(kiln_runtime *rt, const struct batch_job *t, size_t count,
                      const void *in, void *out);
} batch_job;

/* Bands [at, at + count) of a convolution, all of one image: output rows
 * [r0, r1) of the image, from its input rows [h0, h0 + d.h); d is the
 * request on those rows alone (one image, the padding they keep). */
typedef struct band_chunk {
  size_t image, r0, r1, h0;
  kiln_conv2d_desc d;
} band_chunk;

static band_chunk band_of(const batch_job *t, size_t at, size_t count)
{
  const kiln_conv2d_desc *d = &t->cv.d;
  band_chunk b = {.image = at / t->bands, .r0 = at % t->bands * t->band_rows, .d = *d};
  b.r1 = b.r0 + count * t->band_rows;
  b.r1 = b.r1 < t->cv.p ? b.r1 : t->cv.p;
  /* The first and last rows they read, counting the top padding; the
   * last is in x or below it (bands are only cut where the padding is at
   * most the filter's reach, conv_bands()). */
  size_t top = b.r0 * d->stride_h;
  size_t last = (b.r1 - 1) * d->stride_h + (d->r - 1) * d->dilation_h;
  size_t end = last - d->pad_top + 1; /* input rows [h0, end) */
  b.h0 = top > d->pad_top ? top - d->pad_top : 0;
  end = end < d->h ? end : d->h;
  b.d.n = 1;
  b.d.h = end - b.h0;
  b.d.pad_top = top < d->pad_top ? d->pad_top - top : 0;
  b.d.pad_bottom = last - d->pad_top + 1 - end; /* rows below x it reads */
  return b;
}

/* Where rows [r, r + rows) of an image are in a batch of NCHW or NHWC
 * arrays (x when input, else y): `planes` blocks of `cols` elements,
 * `ld` apart, from element *at. */
static void band_rect(const batch_job *t, int input, size_t image, size_t r, size_t rows,
                      size_t *at, size_t *ld, size_t *planes, size_t *cols)
{
  const kiln_conv2d_desc *d = &t->cv.d;
  size_t ch = input ? d->c : d->k, width = input ? d->w : t->cv.q;
  size_t height = input ? d->h : t->cv.p;
  int nhwc = d->layout == KILN_NHWC;
  size_t row = nhwc ? width * ch : width; /* elements of a row in a plane */
  *planes = nhwc ? 1 : ch;
  *ld = height * row;
  *at = image * ch * height * width + r * row;
  *cols = rows * row;
}

/* A chunk of bands a call at a time, when no pipeline runs it: the rows
 * it reads packed into host memory, and its output rows back from there. */
static kiln_status band_chunk_run(kiln_runtime *rt, const batch_job *t, size_t at,
                                  size_t count)
{
  band_chunk b = band_of(t, at, count);
  size_t es = kiln_dtype_size(b.d.dtype), pos[2], ld[2], planes[2], cols[2];
  band_rect(t, 1, b.image, b.h0, b.d.h, &pos[0], &ld[0], &planes[0], &cols[0]);
  band_rect(t, 0, b.image, b.r0, b.r1 - b.r0, &pos[1], &ld[1], &planes[1], &cols[1]);
  unsigned char *x = malloc(planes[0] * cols[0] * es),
                *y = malloc(planes[1] * cols[1] * es);
  kiln_status st = KILN_OK;
  if (!x || !y)
    st = kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                    "kiln_group_conv2d_host: out of host memory for a band of rows");
  for (size_t i = 0; st == KILN_OK && i < planes[0]; i++)
    memcpy(x + i * cols[0] * es, t->in + (pos[0] + i * ld[0]) * es, cols[0] * es);
  if (st == KILN_OK)
    st = kiln_conv2d_host(rt, &b.d, x, t->w, t->bias, y);
  for (size_t i = 0; st == KILN_OK && i < planes[1]; i++)
    memcpy(t->out + (pos[1] + i * ld[1]) * es, y + i * cols[1] * es, cols[1] * es);
  free(x);
  free(y);
  return st;
}

static kiln_status batch_chunk(kiln_runtime *rt, const kiln__group_job *j, size_t at,
                               size_t count)
{
  const batch_job *t = j->op_data;
  if (t->bands > 1)
    return band_chunk_run(rt, t, at, count);
  return t->call(rt, t, count, t->in + at * t->in_one, t->out + at * t->out_one);
}

/* A batch request's state on one device of a pipeline: for a convolution,
 * its plan with the weights and bias on the device and the backend for
 * the whole call. */
typedef struct batch_dev {
  const batch_job *t;
  kiln__conv cv;
  kiln_buffer *w, *bias;
  kiln_buffer *scratch; /* a reduction's grain result, before its slot */
} batch_dev;

static const batch_dev *batch_dev_of(const kiln__host_job *hj)
{
  return ((const pipeline *)hj->op)->dev;
}

static int batch_fits(const kiln__host_job *hj, size_t per, int sets)
{
  const pipeline *p = hj->op;
  const batch_dev *dv = batch_dev_of(hj);
  const batch_job *t = dv->t;
  uint64_t in = (uint64_t)per * t->in_one, out = (uint64_t)per * t->out_one, ws = 0;
  if (dv->w) { /* the convolution backend's workspace (of an image at most,
                  for bands: a chunk of them is part of one) */
    kiln__conv cv = dv->cv;
    cv.d.n = t->bands > 1 ? 1 : per;
    ws = kiln__conv_workspace(p->rt, &cv, cv.d.backend);
  }
  uint64_t set =
    (uint64_t)kiln__pool_block_bytes(p->rt, in) + kiln__pool_block_bytes(p->rt, out);
  return sets * set + ws <= p->room && in <= p->max_alloc && out <= p->max_alloc;
}

static kiln_status batch_create(kiln_runtime *rt, const kiln__host_job *hj,
                                kiln_buffer *io[2])
{
  const pipeline *p = hj->op;
  const batch_job *t = batch_dev_of(hj)->t;
  kiln_status st = kiln__workspace(rt, p->j->fn, "device chunk of the input", t->in_type,
                                   hj->per * t->in_el, &io[0]);
  if (st == KILN_OK)
    st = kiln__workspace(rt, p->j->fn, "device chunk of the output", t->out_type,
                         hj->per * t->out_el, &io[1]);
  return st;
}

/* Piece i's chunk between the caller's array and buf: in when write. */
static kiln_status batch_move(const kiln__host_job *hj, size_t i, kiln_buffer *buf,
                              int write)
{
  const batch_job *t = batch_dev_of(hj)->t;
  size_t at, count, el = write ? t->in_el : t->out_el;
  pipe_chunk(hj, i, &at, &count);
  if (t->bands > 1) { /* the rows the bands read, or those they write */
    band_chunk b = band_of(t, at, count);
    size_t pos, ld, planes, cols;
    band_rect(t, write, b.image, write ? b.h0 : b.r0, write ? b.d.h : b.r1 - b.r0, &pos,
              &ld, &planes, &cols);
    return kiln__host_move(hj, buf, 0, write, write ? (const void *)t->in : t->out, pos,
                           ld, planes, cols);
  }
  size_t n = count * el;
  if (write && t->in_total && n > t->in_total - at * el)
    n = t->in_total - at * el;
  return kiln__host_move(hj, buf, 0, write, write ? (const void *)t->in : t->out, at * el,
                         1, 1, n);
}

static kiln_status batch_put(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                             kiln_buffer *in)
{
  (void)rt;
  return batch_move(hj, i, in, 1);
}

static kiln_status batch_get(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                             kiln_buffer *out)
{
  (void)rt;
  return batch_move(hj, i, out, 0);
}

static kiln_status conv_piece(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                              kiln_buffer *in, kiln_buffer *out)
{
  const batch_dev *dv = batch_dev_of(hj);
  size_t at, count;
  pipe_chunk(hj, i, &at, &count);
  kiln_conv2d_desc d = dv->cv.d;
  if (dv->t->bands > 1)
    d = band_of(dv->t, at, count).d; /* one image's rows */
  else
    d.n = count;
  d.backend = dv->cv.d.backend; /* the one picked for the whole call */
  return kiln_conv2d(rt, &d, in, dv->w, dv->bias, out);
}

static kiln_status fft_piece(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                             kiln_buffer *in, kiln_buffer *out)
{
  const batch_job *t = batch_dev_of(hj)->t;
  size_t at, count;
  pipe_chunk(hj, i, &at, &count);
  kiln_fft_desc d = t->fft;
  d.batch = count;
  return kiln_fft(rt, &d, in, out);
}

/* Serves a batch request's chunks through a pipeline that runs each piece
 * with run(). */
static kiln_status batch_serve(kiln_runtime *rt, const kiln__group_job *j,
                               kiln__group_feed *f, const batch_dev *dv,
                               kiln_status (*run)(kiln_runtime *rt,
                                                  const kiln__host_job *hj, size_t i,
                                                  kiln_buffer *in, kiln_buffer *out))
{
  pipeline p = {.dev = dv};
  kiln__host_job hj = {.fits = batch_fits,
                       .create = batch_create,
                       .put = batch_put,
                       .run = run,
                       .get = batch_get};
  return pipe_serve(rt, j, f, &p, &hj);
}

/* The weights and bias on the device once, and the backend the device's
 * rules pick for the whole batch; then the images through a pipeline. */
static kiln_status conv_pipe(kiln_runtime *rt, const kiln__group_job *j,
                             kiln__group_feed *f)
{
  const batch_job *t = j->op_data;
  batch_dev dv = {.t = t};
  const kiln__conv_backend *be = NULL;
  kiln_status st = kiln__conv_plan(rt, &t->conv, &dv.cv);
  if (st == KILN_OK)
    st = kiln__conv_upload(rt, j->fn, &dv.cv, t->w, t->bias, &dv.w, &dv.bias);
  if (st == KILN_OK)
    st = kiln__conv_choose(rt, &dv.cv, &be);
  if (st == KILN_OK) {
    dv.cv.d.backend = be->id;
    st = batch_serve(rt, j, f, &dv, conv_piece);
  }
  kiln_buffer_destroy(dv.w);
  kiln_buffer_destroy(dv.bias);
  return st;
}

static kiln_status fft_pipe(kiln_runtime *rt, const kiln__group_job *j,
                            kiln__group_feed *f)
{
  batch_dev dv = {.t = j->op_data};
  return batch_serve(rt, j, f, &dv, fft_piece);
}

/* A batch with fewer images than this for each device that would keep
 * busy is cut into bands of output rows, this many units a device: a
 * device may end its last unit while another is one from the end, and a
 * band is a shorter wait than an image; a batch smaller than the group
 * runs on every device. Not more often: on one device, a band costs more
 * than its part of an image (the 3x3 layer on PoCL: 6% more in bands of
 * half an image), so a simulator beside one real device, which takes
 * nothing, is not counted (kiln__group_peers()). */
#define CONV_UNITS_PER_DEVICE 4
/* The fewest output rows of a band: each reads the filter's reach of input
 * rows more than it writes (the 3x3 layer's 8-row band, 10), and is a call
 * of its own. */
#define BAND_MIN_ROWS 8

/* t's bands for `devices` devices that would keep busy. None where the
 * padding reaches past the filter, which could leave a band without a row
 * of x to read. */
static void conv_bands(batch_job *t, size_t devices)
{
  const kiln_conv2d_desc *d = &t->cv.d;
  size_t reach = (d->r - 1) * d->dilation_h, want = devices * CONV_UNITS_PER_DEVICE;
  size_t bands = (want + d->n - 1) / d->n, most = t->cv.p / BAND_MIN_ROWS;
  t->bands = 1, t->band_rows = t->cv.p;
  if (devices < 2 || d->n >= want || d->pad_top > reach || d->pad_bottom > reach ||
      most < 2)
    return;
  bands = bands < most ? bands : most;
  t->band_rows = (t->cv.p + bands - 1) / bands;
  t->bands = (t->cv.p + t->band_rows - 1) / t->band_rows;
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
  st = kiln__conv_plan(rt, &t.conv, &t.cv);
  if (st != KILN_OK)
    return kiln__group_fail_from(rt, st);
  const kiln_conv2d_desc *r = &t.cv.d; /* defaults resolved */
  conv_bands(&t, kiln__group_peers(group, KILN__GROUP_CONV));
  /* A unit's rows of x: a chunk of k bands reads at most k times as many */
  size_t rows = t.band_rows * r->stride_h + (r->r - 1) * r->dilation_h;
  rows = t.bands > 1 && rows < r->h ? rows : r->h;
  size_t es = kiln_dtype_size(r->dtype), outputs = r->k * t.band_rows * t.cv.q;
  t.in_type = t.out_type = r->dtype;
  t.in_el = r->c * rows * r->w, t.out_el = outputs;
  t.in_one = t.in_el * es, t.out_one = t.out_el * es;
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_CONV,
    .units = r->n * t.bands,
    .min = 1,
    .unit_work = 2.0 * (double)outputs * (double)(r->c / r->groups * r->r * r->s),
    .per_part = t.bands > 1 ? t.bands : 0,
    .run = batch_chunk,
    .pipe = conv_pipe,
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
  t.in_type = kiln__fft_type(&f, 0), t.out_type = kiln__fft_type(&f, 1);
  t.in_el = f.in_count / batch, t.out_el = f.out_count / batch;
  t.in_one = t.in_el * kiln_dtype_size(t.in_type);
  t.out_one = t.out_el * kiln_dtype_size(t.out_type);
  kiln__group_job j = {
    .fn = fn,
    .op = KILN__GROUP_FFT,
    .units = batch,
    .min = 1,
    .unit_work = 5.0 * (double)points * (points > 1 ? log2((double)points) : 1.0),
    .run = batch_chunk,
    .pipe = fft_pipe,
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
  batch_job b;        /* its units as a pipeline sees them (below) */
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

/* A pipeline's piece of a reduction: outer rows along the axis at once,
 * or each grain of every element alone (as reduce_grains() does, from its
 * own offset: the kernels cut a length the same way wherever it starts)
 * into scratch, then into its slot of the piece's results. */
static kiln_status reduce_piece(kiln_runtime *rt, const kiln__host_job *hj, size_t i,
                                kiln_buffer *in, kiln_buffer *out)
{
  const reduce_job *t = ((const pipeline *)hj->op)->j->op_data;
  kiln_buffer *scratch = batch_dev_of(hj)->scratch;
  size_t at, count;
  pipe_chunk(hj, i, &at, &count);
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
  batch_dev dv = {.t = &t->b};
  kiln_status st = KILN_OK;
  if (t->grain)
    st = kiln__workspace(rt, j->fn, "a grain's result", t->pt, 1, &dv.scratch);
  if (st == KILN_OK) {
    st = batch_serve(rt, j, f, &dv, reduce_piece);
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
  kiln_status st = group_in(group, fn, desc, in, out);
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
  t.b = (batch_job){
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
