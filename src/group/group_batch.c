/*
 * group_batch.c — convolution and FFT over a device group (group_ops.c):
 * units of the batch (images, or bands of each image's output rows when
 * the batch is small for the group; transforms), and the pipeline of a
 * batch's units that reductions use too (group_reduce.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/pool.h"
#include "group/group_ops.h"

/* Bands [at, at + count) of a convolution, all of one image: output rows
 * [r0, r1) of the image, from its input rows [h0, h0 + d.h); d is the
 * request on those rows alone (one image, the padding they keep). */
typedef struct band_chunk {
  size_t image, r0, r1, h0;
  kiln_conv2d_desc d;
} band_chunk;

static band_chunk band_of(const kiln__group_batch *t, size_t at, size_t count)
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
static void band_rect(const kiln__group_batch *t, int input, size_t image, size_t r,
                      size_t rows, size_t *at, size_t *ld, size_t *planes, size_t *cols)
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
static kiln_status band_chunk_run(kiln_runtime *rt, const kiln__group_batch *t, size_t at,
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
  const kiln__group_batch *t = j->op_data;
  if (t->bands > 1)
    return band_chunk_run(rt, t, at, count);
  return t->call(rt, t, count, t->in + at * t->in_one, t->out + at * t->out_one);
}

const kiln__group_batch_dev *kiln__group_batch_dev_of(const kiln__host_job *hj)
{
  return ((const kiln__group_pipe *)hj->op)->dev;
}

static int batch_fits(const kiln__host_job *hj, size_t per, int sets)
{
  const kiln__group_pipe *p = hj->op;
  const kiln__group_batch_dev *dv = kiln__group_batch_dev_of(hj);
  const kiln__group_batch *t = dv->t;
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
  const kiln__group_pipe *p = hj->op;
  const kiln__group_batch *t = kiln__group_batch_dev_of(hj)->t;
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
  const kiln__group_batch *t = kiln__group_batch_dev_of(hj)->t;
  size_t at, count, el = write ? t->in_el : t->out_el;
  kiln__group_pipe_chunk(hj, i, &at, &count);
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
  const kiln__group_batch_dev *dv = kiln__group_batch_dev_of(hj);
  size_t at, count;
  kiln__group_pipe_chunk(hj, i, &at, &count);
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
  const kiln__group_batch *t = kiln__group_batch_dev_of(hj)->t;
  size_t at, count;
  kiln__group_pipe_chunk(hj, i, &at, &count);
  kiln_fft_desc d = t->fft;
  d.batch = count;
  return kiln_fft(rt, &d, in, out);
}

kiln_status kiln__group_batch_serve(kiln_runtime *rt, const kiln__group_job *j,
                                    kiln__group_feed *f, const kiln__group_batch_dev *dv,
                                    kiln_status (*run)(kiln_runtime *rt,
                                                       const kiln__host_job *hj, size_t i,
                                                       kiln_buffer *in, kiln_buffer *out))
{
  kiln__group_pipe p = {.dev = dv};
  kiln__host_job hj = {.fits = batch_fits,
                       .create = batch_create,
                       .put = batch_put,
                       .run = run,
                       .get = batch_get};
  return kiln__group_pipe_serve(rt, j, f, &p, &hj);
}

/* The weights and bias on the device once, and the backend the device's
 * rules pick for the whole batch; then the images through a pipeline. */
static kiln_status conv_pipe(kiln_runtime *rt, const kiln__group_job *j,
                             kiln__group_feed *f)
{
  const kiln__group_batch *t = j->op_data;
  kiln__group_batch_dev dv = {.t = t};
  const kiln__conv_backend *be = NULL;
  kiln_status st = kiln__conv_plan(rt, &t->conv, &dv.cv);
  if (st == KILN_OK)
    st = kiln__conv_upload(rt, j->fn, &dv.cv, t->w, t->bias, &dv.w, &dv.bias);
  if (st == KILN_OK)
    st = kiln__conv_choose(rt, &dv.cv, &be);
  if (st == KILN_OK) {
    dv.cv.d.backend = be->id;
    st = kiln__group_batch_serve(rt, j, f, &dv, conv_piece);
  }
  kiln_buffer_destroy(dv.w);
  kiln_buffer_destroy(dv.bias);
  return st;
}

static kiln_status fft_pipe(kiln_runtime *rt, const kiln__group_job *j,
                            kiln__group_feed *f)
{
  kiln__group_batch_dev dv = {.t = j->op_data};
  return kiln__group_batch_serve(rt, j, f, &dv, fft_piece);
}

/* A batch with fewer images than this for each device that would keep
 * busy is cut into bands of output rows, this many units a device: a
 * device may end its last unit while another is one from the end, and a
 * band is a shorter wait than an image; a batch smaller than the group
 * runs on every device. Not more often: on one device, a band costs more
 * than its part of an image (docs/performance.md, "Device groups"), so a
 * simulator beside one real device, which takes
 * nothing, is not counted (kiln__group_peers()). */
#define CONV_UNITS_PER_DEVICE 4
/* The fewest output rows of a band: each reads the filter's reach of input
 * rows more than it writes (the 3x3 layer's 8-row band, 10), and is a call
 * of its own. */
#define BAND_MIN_ROWS 8

/* t's bands for `devices` devices that would keep busy. None where the
 * padding reaches past the filter, which could leave a band without a row
 * of x to read. */
static void conv_bands(kiln__group_batch *t, size_t devices)
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

static kiln_status conv_call(kiln_runtime *rt, const kiln__group_batch *t, size_t count,
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
  kiln__group_batch t = {
    .w = weights, .bias = bias, .in = x, .out = y, .call = conv_call};
  kiln_status st = kiln__group_in(group, fn, desc, x, weights);
  if (st == KILN_OK)
    st = kiln__group_in(group, fn, y, y, y);
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

static kiln_status fft_call(kiln_runtime *rt, const kiln__group_batch *t, size_t count,
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
  kiln__group_batch t = {.in = in, .out = out, .call = fft_call};
  kiln_status st = kiln__group_in(group, fn, desc, in, out);
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
