/*
 * conv_host.c — kiln_conv2d_host(): a convolution of the caller's host
 * arrays, in pieces that fit the device.
 *
 * The weights and the bias stay on the device for the whole call. The
 * batch is cut into the largest runs of whole images whose input, output
 * and the backend's workspace (its `workspace`) fit what is left of
 * the memory budget and the largest allocation; when not even one image
 * does, each image's output rows are cut instead. A piece of output rows
 * p0 .. p0 + m reads the input rows from p0 * stride - pad_top on, through
 * the filter's reach, (m - 1) * stride + (r - 1) * dilation + 1 rows: the
 * piece is a convolution of those rows alone, whose top and bottom padding
 * stand for what lies outside the input (and for nothing else), so that it
 * has exactly m output rows. Pieces that read padding only get one row of
 * zeros in its place. Every piece runs on the backend chosen for the
 * whole request.
 */
#include "base/abi.h"
#include "base/error.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/pool.h"
#include "ops/ops.h"

static const char fn[] = "kiln_conv2d_host";

typedef struct conv_job {
  kiln_runtime *rt;
  kiln__conv cv; /* the whole request; w and bias on the device */
  kiln_buffer *w, *bias;
  const kiln__conv_backend *be; /* for every piece */
  kiln_backend backend;         /* be's id */
  const unsigned char *x;
  unsigned char *y;
  int rows;                 /* pieces are output rows of one image, else images */
  uint64_t room, max_alloc; /* after the weights and bias */
} conv_job;

/* Piece i of pieces of `per` units: images n0 .. n0 + count, or output rows
 * p0 .. p0 + d.h's output of image n0 from input rows lo .. lo + d.h; d
 * is the piece's request. zero: it reads padding only. */
typedef struct piece {
  size_t n0, p0, lo;
  int zero;
  kiln_conv2d_desc d;
  size_t p; /* its output rows */
} piece;

/* Input rows that `m` output rows reach, at most h. */
static size_t reach(const kiln_conv2d_desc *d, size_t m)
{
  size_t rows = (m - 1) * d->stride_h + (d->r - 1) * d->dilation_h + 1;
  return rows < d->h ? rows : d->h;
}

static piece piece_of(const conv_job *c, size_t per, size_t i)
{
  const kiln_conv2d_desc *d = &c->cv.d;
  size_t p = c->cv.p;
  piece pc = {.d = *d, .p = p};
  pc.d.backend = c->backend;
  if (!c->rows) {
    pc.n0 = i * per;
    pc.d.n = d->n - pc.n0 < per ? d->n - pc.n0 : per;
    return pc;
  }
  size_t chunks = (p + per - 1) / per;
  pc.n0 = i / chunks, pc.p0 = i % chunks * per;
  pc.p = p - pc.p0 < per ? p - pc.p0 : per;
  pc.d.n = 1;
  /* padded rows first .. first + span, the input's rows lie at pad_top .. */
  size_t first = pc.p0 * d->stride_h,
         span = (pc.p - 1) * d->stride_h + (d->r - 1) * d->dilation_h + 1;
  size_t lo = first > d->pad_top ? first - d->pad_top : 0;
  size_t end = first + span > d->pad_top ? first + span - d->pad_top : 0;
  if (end > d->h)
    end = d->h;
  if (end > lo) {
    pc.lo = lo, pc.d.h = end - lo;
    pc.d.pad_top = lo + d->pad_top - first; /* lo >= first - pad_top */
  } else {                                  /* padding only */
    pc.zero = 1, pc.d.h = 1, pc.d.pad_top = 0;
  }
  assert(span >= pc.d.h + pc.d.pad_top);
  pc.d.pad_bottom = span - pc.d.h - pc.d.pad_top; /* so that it has pc.p rows */
  return pc;
}

/* Elements of one set's input and output for pieces of per units. */
static void set_sizes(const conv_job *c, size_t per, size_t *in, size_t *out)
{
  const kiln_conv2d_desc *d = &c->cv.d;
  size_t img = c->rows ? reach(d, per) : d->h, n = c->rows ? 1 : per;
  *in = n * d->c * img * d->w;
  *out = n * d->k * (c->rows ? per : c->cv.p) * c->cv.q;
}

/* The backend's workspace for a piece of per units: of the first piece,
 * and, for rows, of one inside the image, whose padding may differ. */
static uint64_t workspace(const conv_job *c, size_t per)
{
  piece pc = piece_of(c, per, 0);
  kiln__conv cv = c->cv;
  cv.d = pc.d, cv.p = pc.p;
  if (!c->be->workspace)
    return 0;
  uint64_t ws = c->be->workspace(c->rt, &cv);
  if (c->rows) {
    cv.d.h = reach(&c->cv.d, per);
    cv.d.pad_top = cv.d.pad_bottom = 0;
    uint64_t inner = c->be->workspace(c->rt, &cv);
    ws = inner > ws ? inner : ws;
  }
  return ws;
}

/* Bytes on the device for pieces of per units in `sets` sets, each buffer
 * as the pool rounds it; the larger of a piece's two buffers into
 * *largest. */
static uint64_t need(const conv_job *c, size_t per, int sets, uint64_t *largest)
{
  size_t in, out, es = kiln_dtype_size(c->cv.d.dtype);
  set_sizes(c, per, &in, &out);
  *largest = (uint64_t)(in > out ? in : out) * es;
  uint64_t set = (uint64_t)kiln__pool_block_bytes(c->rt, in * es) +
                 kiln__pool_block_bytes(c->rt, out * es);
  return sets * set + workspace(c, per);
}

static int fits(const kiln__host_job *j, size_t per, int sets)
{
  const conv_job *c = j->op;
  uint64_t largest, bytes = need(c, per, sets, &largest);
  return bytes <= c->room && largest <= c->max_alloc;
}

static size_t pieces(const kiln__host_job *j)
{
  const conv_job *c = j->op;
  size_t n = c->cv.d.n, p = c->cv.p;
  return c->rows ? n * ((p + j->per - 1) / j->per) : (n + j->per - 1) / j->per;
}

static kiln_status create(kiln_runtime *rt, const kiln__host_job *j, kiln_buffer *io[2])
{
  const conv_job *c = j->op;
  size_t in, out;
  set_sizes(c, j->per, &in, &out);
  kiln_status st =
    kiln__workspace(rt, fn, "device piece of x", c->cv.d.dtype, in, &io[0]);
  if (st == KILN_OK)
    st = kiln__workspace(rt, fn, "device piece of y", c->cv.d.dtype, out, &io[1]);
  return st;
}

static kiln_status put(kiln_runtime *rt, const kiln__host_job *j, size_t i,
                       kiln_buffer *in)
{
  (void)rt;
  const conv_job *c = j->op;
  const kiln_conv2d_desc *d = &c->cv.d;
  piece pc = piece_of(c, j->per, i);
  size_t image = d->c * d->h * d->w, row = d->w * (d->layout == KILN_NCHW ? 1 : d->c);
  if (pc.zero) {
    static const unsigned char zero[8] = {0};
    return kiln_buffer_fill(in, 0, d->c * d->w, zero);
  }
  if (d->layout == KILN_NHWC || !c->rows) /* contiguous */
    return kiln__host_move(j, in, 0, 1, c->x, pc.n0 * image + pc.lo * row, 1, 1,
                           pc.d.n * d->c * pc.d.h * d->w);
  /* NCHW: the rows of each channel */
  return kiln__host_move(j, in, 0, 1, c->x, pc.n0 * image + pc.lo * d->w, d->h * d->w,
                         d->c, pc.d.h * d->w);
}

static kiln_status run(kiln_runtime *rt, const kiln__host_job *j, size_t i,
                       kiln_buffer *in, kiln_buffer *out)
{
  const conv_job *c = j->op;
  piece pc = piece_of(c, j->per, i);
  return kiln_conv2d(rt, &pc.d, in, c->w, c->bias, out);
}

static kiln_status get(kiln_runtime *rt, const kiln__host_job *j, size_t i,
                       kiln_buffer *out)
{
  (void)rt;
  const conv_job *c = j->op;
  const kiln_conv2d_desc *d = &c->cv.d;
  piece pc = piece_of(c, j->per, i);
  size_t pq = c->cv.p * c->cv.q, image = d->k * pq;
  if (d->layout == KILN_NHWC || !c->rows)
    return kiln__host_move(j, out, 0, 0, c->y, pc.n0 * image + pc.p0 * c->cv.q * d->k, 1,
                           1, pc.d.n * d->k * pc.p * c->cv.q);
  return kiln__host_move(j, out, 0, 0, c->y, pc.n0 * image + pc.p0 * c->cv.q, pq, d->k,
                         pc.p * c->cv.q);
}

kiln_status kiln__conv_upload(kiln_runtime *rt, const char *op, kiln__conv *cv,
                              const void *weights, const void *bias, kiln_buffer **w,
                              kiln_buffer **b)
{
  const kiln_conv2d_desc *d = &cv->d;
  size_t nw = d->k * (d->c / d->groups) * d->r * d->s;
  kiln_status st = kiln__workspace(rt, op, "weights on the device", d->dtype, nw, w);
  if (st == KILN_OK)
    st = kiln_buffer_write(*w, 0, nw, weights);
  if (st == KILN_OK && bias)
    st = kiln__workspace(rt, op, "bias on the device", d->dtype, d->k, b);
  if (st == KILN_OK && bias)
    st = kiln_buffer_write(*b, 0, d->k, bias);
  cv->w = kiln_buffer_cl_mem(*w);
  cv->bias = kiln_buffer_cl_mem(*b);
  cv->wbuf = *w;
  return st;
}

/* Not even one output row of one image fits. */
static kiln_status too_big(kiln_runtime *rt, conv_job *c)
{
  uint64_t largest, bytes = need(c, 1, 1, &largest);
  return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                    "%s: one output row of one image (%zu input rows of %zu x %zu "
                    "channels in, %zu outputs, and the backend's workspace) needs %llu "
                    "bytes on the device (its buffers as the memory pool rounds them), "
                    "the largest buffer %llu; but %llu are left of "
                    "the memory budget after the weights, and the largest allocation is "
                    "%llu",
                    fn, reach(&c->cv.d, 1), c->cv.d.w, c->cv.d.c, c->cv.q * c->cv.d.k,
                    (unsigned long long)bytes, (unsigned long long)largest,
                    (unsigned long long)c->room, (unsigned long long)c->max_alloc);
}

KILN_API kiln_status kiln_conv2d_host(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                                      const void *x, const void *weights,
                                      const void *bias, void *y)
{
  kiln_conv2d_desc given;
  kiln_status st = KILN__OP_DESC_IN(rt, fn, kiln_conv2d_desc, desc, &given);
  if (st != KILN_OK)
    return st;
  if (!x || !weights || !y)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected the caller's array (bias alone may be "
                      "NULL, for none)",
                      fn,
                      !x         ? "x"
                      : !weights ? "weights"
                                 : "y");
  conv_job c = {.rt = rt, .x = x, .y = y};
  const kiln__conv_backend *be = NULL;
  st = kiln__conv_plan(rt, &given, &c.cv);
  if (st == KILN_OK)
    st = kiln__conv_upload(rt, fn, &c.cv, weights, bias, &c.w, &c.bias);
  if (st == KILN_OK)
    st = kiln__conv_choose(rt, &c.cv, &be);
  if (st == KILN_OK) {
    c.be = be;
    c.backend = be->id;
    kiln__host_room(rt, &c.room, &c.max_alloc);
    kiln__host_job j = {&c, 0, 1, fits, pieces, create, put, run, get, NULL, NULL, NULL};
    if (!kiln__host_choose(&j, c.cv.d.n)) {
      c.rows = 1; /* not even one image: its output rows */
      if (!kiln__host_choose(&j, c.cv.p))
        st = too_big(rt, &c);
    }
    if (st == KILN_OK)
      st = kiln__host_run(rt, &j);
  }
  kiln_buffer_destroy(c.w);
  kiln_buffer_destroy(c.bias);
  return st;
}
