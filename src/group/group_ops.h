/*
 * group_ops.h — what the operations over a device group (group_ops.c: the
 * checks and the pipeline; group_gemm.c, group_batch.c, group_reduce.c)
 * share. Not installed.
 */
#ifndef KILN_GROUP_OPS_H
#define KILN_GROUP_OPS_H

#include "base/util.h"
#include "group/group.h"
#include "ops/ops.h"

/* Pieces a pipeline holds at once (i - 1 .. i + 1), and one to spare. */
#define KILN__GROUP_RING 4

/* One device's chunks of a call as a stream of pieces through two sets of
 * device buffers (host.c): chunk i + 1 goes in while chunk i computes, and
 * chunk i's results come back while chunk i + 1 computes. What stays on
 * the device for the whole call (a convolution's weights, GEMM's B) is
 * put there once. The operation's callbacks find piece i's chunk here. */
typedef struct kiln__group_pipe {
  kiln__group_feed *feed;
  const kiln__group_job *j;
  kiln_runtime *rt;
  size_t at[KILN__GROUP_RING], count[KILN__GROUP_RING];
  size_t claimed, done;     /* pieces the current kiln__host_run() claimed,
                               and of them those done */
  uint64_t room, max_alloc; /* after what stays on the device */
  const void *dev;          /* the operation's state on this device */
  /* Optional, for chunks that read what they write (C with beta != 0):
   * prepare() makes room for KILN__GROUP_RING pieces of per units, keep()
   * saves piece i's part of the caller's array when it is claimed (back 0)
   * and puts it back when the piece goes back undone (back 1), for the next
   * device. */
  kiln_status (*prepare)(struct kiln__group_pipe *p, size_t per);
  void (*keep)(struct kiln__group_pipe *p, size_t i, int back);
} kiln__group_pipe;

/* Checks the group and the request's pointers; the descriptor is copied
 * into *copy by the caller's KILN__STRUCT_IN. */
kiln_status kiln__group_in(const kiln_group *g, const char *fn, const void *p1,
                           const void *p2, const void *p3);

/* Piece i's chunk. */
void kiln__group_pipe_chunk(const kiln__host_job *hj, size_t i, size_t *at,
                            size_t *count);

/* Serves f's chunks through hj (its fits, create, put, run and get; p is
 * set up here as hj->op) until none is left. One chunk at a time
 * (kiln__group_serve) when not even a chunk of one unit fits, or when the
 * device runs out of memory on the way (a workspace fits() did not
 * foresee): the chunks the pipeline holds then go back first. */
kiln_status kiln__group_pipe_serve(kiln_runtime *rt, const kiln__group_job *j,
                                   kiln__group_feed *f, kiln__group_pipe *p,
                                   kiln__host_job *hj);

/* ---- batches (group_batch.c): convolution, FFT, and reductions' units ---- */

/* A request whose units are its batch's: each reads in_el elements of
 * in_type from `in` and writes out_el of out_type to `out`, one after
 * another (in_one and out_one bytes). */
typedef struct kiln__group_batch {
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
  kiln_status (*call)(kiln_runtime *rt, const struct kiln__group_batch *t, size_t count,
                      const void *in, void *out);
} kiln__group_batch;

/* A batch request's state on one device of a pipeline: for a convolution,
 * its plan with the weights and bias on the device and the backend for
 * the whole call. */
typedef struct kiln__group_batch_dev {
  const kiln__group_batch *t;
  kiln__conv cv;
  kiln_buffer *w, *bias;
  kiln_buffer *scratch; /* a reduction's grain result, before its slot */
} kiln__group_batch_dev;

/* The state of the pipeline hj serves. */
const kiln__group_batch_dev *kiln__group_batch_dev_of(const kiln__host_job *hj);

/* Serves a batch request's chunks through a pipeline that runs each piece
 * with run(). */
kiln_status
kiln__group_batch_serve(kiln_runtime *rt, const kiln__group_job *j, kiln__group_feed *f,
                        const kiln__group_batch_dev *dv,
                        kiln_status (*run)(kiln_runtime *rt, const kiln__host_job *hj,
                                           size_t i, kiln_buffer *in, kiln_buffer *out));

#endif
