/*
 * host.c — what the operations on the caller's host arrays share
 * (gemm_host.c, conv_host.c, fft_host.c): the room left of the memory
 * budget, the largest piece that fits it, and the loop that moves pieces
 * through device buffers.
 *
 * The loop enqueues everything without waiting, so the host never waits
 * for the device between pieces. With room for one set of piece buffers,
 * every command goes on the runtime's in-order queue: piece i's input is
 * written, computed on and read back, then piece i + 1's. With room for
 * two, the transfers go on the runtime's copy queue (also in order) and
 * overlap the compute, which stays on the runtime's queue:
 *
 *   queue:      ... | compute i     | compute i + 1 | ...
 *   copy queue: put i + 1, get i - 1 | put i + 2, get i | ...
 *
 * Events tie the two: compute i waits for a marker on the copy queue
 * enqueued after put i (so also after get i - 2, which read the output
 * buffer compute i writes), and get i waits for a marker on the queue after
 * compute i. Put i + 1 comes after get i - 1 on the copy queue, and so
 * after compute i - 1, the last reader of the input buffer it fills. The
 * first put waits for a marker of everything enqueued before the loop: the
 * sets may be blocks of the pool whose last owners' commands are still on
 * the queue (pool.c). Commands waited for on the other queue are flushed
 * first, as OpenCL asks for events of another queue.
 *
 * A stream of pieces (j->next) is claimed one piece ahead: piece i + 1 is
 * claimed, and put, while piece i computes. With j->done, the host waits
 * for get i - 1 once compute i is enqueued (the device is busy with it
 * meanwhile), and reports piece i - 1 done.
 */
#include "base/error.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "ops/transfer.h"

void kiln__host_room(kiln_runtime *rt, uint64_t *room, uint64_t *max_alloc)
{
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  kiln_memory_stats(rt, &mu);
  uint64_t left =
    mu.limit_bytes > mu.current_bytes ? mu.limit_bytes - mu.current_bytes : 0;
  *room = left - left / 10; /* slack for the driver's own allocations */
  *max_alloc = mu.max_alloc_bytes;
}

/* The largest per in [1, most] for which j->fits(j, per, sets) holds, by
 * bisection (fits is monotone in per); 0 when not even 1 does. */
static size_t largest(const kiln__host_job *j, size_t most, int sets)
{
  if (!j->fits(j, 1, sets))
    return 0;
  size_t lo = 1, hi = most; /* fits(lo); the answer lies in [lo, hi] */
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (j->fits(j, mid, sets))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int kiln__host_choose(kiln__host_job *j, size_t units)
{
  assert(units >= 1);
  size_t one = largest(j, units, 1);
  if (one == 0)
    return 0;
  j->per = one, j->sets = 1;
  if (one < units || j->next) { /* split: two sets, if two pieces fit */
    size_t two = largest(j, one, 2);
    if (two)
      j->per = two, j->sets = 2;
  }
  return 1;
}

kiln_status kiln__host_move(const kiln__host_job *j, kiln_buffer *buf, size_t to,
                            int write, const void *host, size_t at, size_t ld,
                            size_t rows, size_t cols)
{
  return kiln__buffer_move_async(buf, to, write, host, at, ld, rows, cols, j->lane);
}

/* A marker on q into *ev, q flushed for the other queue's waits. */
static kiln_status mark(kiln_runtime *rt, cl_command_queue q, cl_event *ev)
{
  cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, ev);
  if (err == CL_SUCCESS)
    err = clFlush(q);
  return err == CL_SUCCESS ? KILN_OK
                           : kiln__fail_cl(rt, err, "clEnqueueMarkerWithWaitList",
                                           "a host loop: ordering its transfers");
}

/* Whether piece i is there: of pieces() pieces, or claimed from a stream. */
static int has(kiln__host_job *j, size_t i)
{
  return j->next ? j->next(j, i) : i < j->pieces(j);
}

/* For a stream with done(): waits for *out (a marker after piece i's get,
 * released here) and reports piece i unless a command failed. */
static kiln_status settle(kiln_runtime *rt, kiln__host_job *j, size_t i, cl_event *out)
{
  cl_int err = clWaitForEvents(1, out), status = CL_COMPLETE;
  if (err == CL_SUCCESS)
    err = clGetEventInfo(*out, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                         NULL);
  clReleaseEvent(*out);
  *out = NULL;
  if (err == CL_SUCCESS && status < 0)
    err = status;
  if (err != CL_SUCCESS)
    return kiln__fail_cl(rt, err, "clWaitForEvents", "a host loop: piece %zu's output",
                         i);
  if (kiln__runtime_failed(rt)) { /* as kiln_finish() reports it */
    kiln_status st = kiln_finish(rt);
    return st != KILN_OK ? st
                         : kiln__fail(rt, KILN_ERR_OPENCL,
                                      "a host loop: a command failed before piece %zu "
                                      "was back (reported to another caller)",
                                      i);
  }
  j->done(j, i);
  return KILN_OK;
}

/* Every piece through one set, on the runtime's queue. */
static kiln_status pass_one(kiln_runtime *rt, kiln__host_job *j, kiln_buffer *io[2])
{
  kiln_status st = KILN_OK;
  for (size_t i = 0; st == KILN_OK && has(j, i); i++) {
    st = j->put(rt, j, i, io[0]);
    if (st == KILN_OK)
      st = j->run(rt, j, i, io[0], io[1]);
    if (st == KILN_OK)
      st = j->get(rt, j, i, io[1]);
    cl_event out = NULL;
    if (st == KILN_OK && j->done)
      st = mark(rt, kiln__queue(rt), &out);
    if (st == KILN_OK && j->done)
      st = settle(rt, j, i, &out);
  }
  return st;
}

/* Every piece through two sets, the transfers on the copy queue (above). */
static kiln_status pass_two(kiln_runtime *rt, kiln__host_job *j, kiln_buffer *io[2][2])
{
  cl_event before = NULL, in = NULL, computed = NULL, out = NULL;
  kiln__lane lane = {.queue = rt->copy_queue, .nwait = 1, .wait = &before};
  j->lane = &lane;
  int more = has(j, 0);
  kiln_status st = mark(rt, kiln__queue(rt), &before);
  if (st == KILN_OK && more)
    st = j->put(rt, j, 0, io[0][0]);
  lane.nwait = 0;
  if (st == KILN_OK && more)
    st = mark(rt, rt->copy_queue, &in);
  for (size_t i = 0; more && st == KILN_OK; i++) {
    kiln_buffer **cur = io[i % 2], **next = io[(i + 1) % 2];
    cl_int err = clEnqueueBarrierWithWaitList(kiln__queue(rt), 1, &in, NULL);
    clReleaseEvent(in);
    in = NULL;
    if (err != CL_SUCCESS)
      st = kiln__fail_cl(rt, err, "clEnqueueBarrierWithWaitList",
                         "a host loop: waiting for piece %zu's input", i);
    if (st == KILN_OK)
      st = j->run(rt, j, i, cur[0], cur[1]);
    if (st == KILN_OK)
      st = mark(rt, kiln__queue(rt), &computed);
    if (st == KILN_OK && out) /* piece i - 1 is back while piece i computes */
      st = settle(rt, j, i - 1, &out);
    more = st == KILN_OK && has(j, i + 1);
    if (more)
      st = j->put(rt, j, i + 1, next[0]); /* goes in while piece i computes */
    if (st == KILN_OK && more)
      st = mark(rt, rt->copy_queue, &in); /* before get i: piece i + 1 needs not wait */
    lane.nwait = 1, lane.wait = &computed;
    if (st == KILN_OK)
      st = j->get(rt, j, i, cur[1]);
    lane.nwait = 0;
    if (st == KILN_OK && j->done)
      st = mark(rt, rt->copy_queue, &out);
    if (st == KILN_OK && out && !more) /* the last piece */
      st = settle(rt, j, i, &out);
    if (computed)
      clReleaseEvent(computed);
    computed = NULL;
  }
  if (out)
    clReleaseEvent(out);
  if (in)
    clReleaseEvent(in);
  if (before)
    clReleaseEvent(before);
  j->lane = NULL;
  return st;
}

kiln_status kiln__host_run(kiln_runtime *rt, kiln__host_job *j)
{
  for (;;) {
    kiln_buffer *io[2][2] = {{NULL, NULL}, {NULL, NULL}};
    kiln_status st = KILN_OK;
    for (int s = 0; s < j->sets && st == KILN_OK; s++)
      st = j->create(rt, j, io[s]);
    if (st == KILN_OK)
      st = j->sets == 2 ? pass_two(rt, j, io) : pass_one(rt, j, io[0]);
    /* Transfers still in flight read and write the caller's arrays: wait
     * for them whatever happened. */
    kiln_status done = kiln_finish(rt);
    if (st == KILN_OK)
      st = done;
    for (int s = 0; s < 2; s++)
      kiln_buffer_destroy(io[s][0]), kiln_buffer_destroy(io[s][1]);
    /* A workspace the model did not foresee (a library's, the complex
     * detour of a real FFT): one set, then smaller pieces, until the
     * smallest fails with the workspace's own message. */
    if (st != KILN_ERR_OUT_OF_MEMORY || (j->per == 1 && j->sets == 1) || j->next)
      return st;
    if (j->sets == 2)
      j->sets = 1;
    else
      j->per = (j->per + 1) / 2;
  }
}
