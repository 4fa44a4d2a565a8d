/*
 * host.c — what the operations on the caller's host arrays share
 * (gemm_host.c, conv_host.c, fft_host.c): the room left of the memory
 * budget, the largest piece that fits it, and the loop that moves pieces
 * through device buffers.
 *
 * The loop enqueues everything without waiting: piece i's input is written,
 * computed on and read back, and the next piece's input is written as soon
 * as piece i's computation is enqueued, so the host never waits for the
 * device between pieces. With room for two sets of piece buffers, the next
 * piece goes into the other set while the current one computes; with one
 * set, after the current one's output is read (the queue runs in order, so
 * either is safe, and the second set is what lets a driver overlap them).
 */
#include "internal.h"
#include "ops.h"

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
  if (one < units) { /* split: two sets, if two pieces fit */
    size_t two = largest(j, one, 2);
    if (two)
      j->per = two, j->sets = 2;
  }
  return 1;
}

kiln_status kiln__host_move(kiln_buffer *buf, int write, const void *host, size_t at,
                            size_t ld, size_t rows, size_t cols)
{
  size_t es = kiln_dtype_size(kiln_buffer_dtype(buf));
  void *h = (void *)(uintptr_t)host; /* read back only when !write */
  if (rows == 1 || cols == ld)       /* one contiguous run */
    return write
             ? kiln_buffer_write_async(buf, 0, rows * cols, (const char *)host + at * es)
             : kiln_buffer_read_async(buf, 0, rows * cols, (char *)h + at * es);
  return kiln__buffer_rect_async(buf, write, h, at, ld, rows, cols);
}

/* Every piece through the sets io[0 .. j->sets), enqueued. */
static kiln_status pass(kiln_runtime *rt, const kiln__host_job *j, kiln_buffer *io[2][2])
{
  size_t n = j->pieces(j);
  kiln_status st = j->put(rt, j, 0, io[0][0]);
  for (size_t i = 0; i < n && st == KILN_OK; i++) {
    kiln_buffer **cur = io[i % j->sets], **next = io[(i + 1) % j->sets];
    st = j->run(rt, j, i, cur[0], cur[1]);
    if (st == KILN_OK && i + 1 < n && j->sets == 2)
      st = j->put(rt, j, i + 1, next[0]); /* goes in while piece i computes */
    if (st == KILN_OK)
      st = j->get(rt, j, i, cur[1]);
    if (st == KILN_OK && i + 1 < n && j->sets == 1)
      st = j->put(rt, j, i + 1, next[0]);
  }
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
      st = pass(rt, j, io);
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
    if (st != KILN_ERR_OUT_OF_MEMORY || (j->per == 1 && j->sets == 1))
      return st;
    if (j->sets == 2)
      j->sets = 1;
    else
      j->per = (j->per + 1) / 2;
  }
}
