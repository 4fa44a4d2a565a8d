/*
 * pool.c — the runtime's caching pool of device memory, on the model of
 * PyTorch's caching allocator: a destroyed buffer's memory is kept, not
 * given back to the driver, and serves the next creation of its size class.
 * A steady loop of calls that make and drop workspaces of the same sizes
 * (GEMM's packed panels, im2col's columns, reduction partials) then
 * allocates nothing new, and pays no clCreateBuffer, no first-touch page
 * faults and no driver zeroing per call.
 *
 * Size classes: 4 KiB (a page, the least any driver hands out), then four
 * classes per power of two, 2^e * {1, 1.25, 1.5, 1.75}. A request takes the
 * smallest class that holds it, so at most 25% of a block is slack, 12% on
 * average, while sizes that differ a little (a GEMM of 1000 and one of
 * 1010) share blocks. Finer classes waste less but hit less; powers of two
 * alone waste up to half. A class larger than the device's largest single
 * allocation, or than the budget lets in, gives way to the exact size.
 *
 * When memory may be reused: every command kiln enqueues for the caller
 * (kernels, transfers, fills, CLBlast, clFFT, VkFFT) goes on the runtime's
 * in-order queue, and kiln_buffer_destroy() comes after the last
 * command on that buffer was enqueued (kiln.h says so). A block handed out
 * again is therefore only ever touched by commands enqueued later on the
 * same queue, which start after every command of its previous owner has
 * finished: PyTorch's rule for a block reused on its own stream. With the
 * caller's streams (stream.c) a buffer may have been used on any queue, so
 * a block released then carries a fence, a marker on every queue, and
 * serves a new buffer only once all have passed (a block still fenced is
 * skipped, never waited for). The other internal queues: the one that makes new buffers resident only ever sees fresh
 * blocks; the copy queue of the host loops (ops/host.c) starts with a wait
 * for everything on the runtime's queue, and is finished before the loop
 * destroys its buffers. Memory the caller hands to its own queues through
 * kiln_buffer_cl_mem() must be done with before the buffer is destroyed.
 * A buffer that keeps its dead views' sub-buffers (buffer_view.c) is never
 * pooled: they go with its memory.
 *
 * Accounting (under rt->lock, with buffer.c's): live buffers hold their
 * blocks' bytes (mem_current), the pool holds `cached`, cached FFT plans
 * hold mem_plans (their scratch and temporary buffers, which are not
 * pooled: kiln__plan_mem_create()); the budget counts all three. A
 * creation that does not fit first trims the pool and tries again, then
 * releases the plans no call is using and tries once more.
 */
#include <stdlib.h>

#include "core/buffer.h"
#include "core/pool.h"
#include "core/runtime.h"
#include "core/stream.h"

/* The smallest block: one page. */
#define POOL_MIN_CLASS 4096u

/* A class's index and size: the smallest class that holds bytes. */
static size_t class_of(size_t bytes, size_t *size)
{
  if (bytes <= POOL_MIN_CLASS) {
    *size = POOL_MIN_CLASS;
    return 0;
  }
  unsigned e = 63 - (unsigned)__builtin_clzll((unsigned long long)bytes);
  size_t step = ((size_t)1 << e) / 4;
  size_t v = (bytes + step - 1) / step * step; /* at most 2^(e+1) */
  if (v >> e > 1)                              /* 2^(e+1): the next power's first class */
    e++, step *= 2;
  *size = v;
  return 4 * (size_t)(e - 12) + (v - ((size_t)1 << e)) / step;
}

size_t kiln__pool_block_bytes(const kiln_runtime *rt, size_t bytes)
{
  size_t size;
  if (!rt->pool.on)
    return bytes;
  class_of(bytes, &size);
  return size <= kiln__runtime_device(rt)->info.max_alloc_bytes ? size : bytes;
}

/* Drops a block's fence (its events). */
static void unfence(kiln_buffer *b)
{
  for (cl_uint i = 0; i < b->nfence; i++)
    clReleaseEvent(b->fence[i]);
  free(b->fence);
  b->fence = NULL;
  b->nfence = 0;
}

/* Whether every queue has passed b's release (always, without streams). */
static int fence_passed(const kiln_buffer *b)
{
  for (cl_uint i = 0; i < b->nfence; i++) {
    cl_int status = CL_QUEUED;
    if (clGetEventInfo(b->fence[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                       &status, NULL) != CL_SUCCESS ||
        status > CL_COMPLETE)
      return 0;
  }
  return 1;
}

/* The link that holds the first block of list *at of at least `bytes`
 * whose fence has passed, or NULL. */
static kiln_buffer **first_ready(kiln_buffer **at, size_t bytes)
{
  for (; *at; at = &(*at)->next_free)
    if ((*at)->block >= bytes && fence_passed(*at))
      return at;
  return NULL;
}

kiln_buffer *kiln__pool_take(kiln_runtime *rt, size_t bytes)
{
  kiln__pool *p = &rt->pool;
  size_t size, c = class_of(bytes, &size);
  if (!p->on || c >= KILN__POOL_CLASSES)
    return NULL;
  pthread_mutex_lock(&rt->lock);
  /* Every block of class c holds the request; an exact-size block that
   * holds it may be one class below (kiln__pool_give). */
  kiln_buffer **at = first_ready(&p->free[c], bytes);
  if (!at && c > 0)
    at = first_ready(&p->free[c - 1], bytes);
  kiln_buffer *b = at ? *at : NULL;
  if (b) {
    *at = b->next_free;
    b->next_free = NULL;
    unfence(b);
    p->cached -= b->block;
    p->hits++;
    rt->mem_current += b->block;
    rt->live_buffers++;
    if (rt->mem_current > rt->mem_peak)
      rt->mem_peak = rt->mem_current;
  } else {
    p->misses++;
  }
  pthread_mutex_unlock(&rt->lock);
  return b;
}

int kiln__pool_give(kiln_buffer *b)
{
  kiln_runtime *rt = b->rt;
  kiln__pool *p = &rt->pool;
  size_t size, c = class_of(b->block, &size);
  if (!p->on || b->wrapped || c >= KILN__POOL_CLASSES)
    return 0;
  /* An exact-size block (whose class was larger than the device allows)
   * files under the class below, each of whose requests it holds. */
  if (size > b->block && c > 0)
    c--;
  if (kiln__fence(rt, &b->fence, &b->nfence) != CL_SUCCESS)
    return 0; /* released instead: OpenCL frees it after its commands */
  pthread_mutex_lock(&rt->lock);
  rt->mem_current -= b->block;
  rt->live_buffers--;
  p->cached += b->block;
  if (p->cached > p->peak_cached)
    p->peak_cached = p->cached;
  b->next_free = p->free[c];
  p->free[c] = b;
  pthread_mutex_unlock(&rt->lock);
  return 1;
}

uint64_t kiln__pool_trim(kiln_runtime *rt)
{
  kiln__pool *p = &rt->pool;
  kiln_buffer *all = NULL;
  pthread_mutex_lock(&rt->lock);
  uint64_t freed = p->cached;
  for (size_t c = 0; c < KILN__POOL_CLASSES; c++)
    while (p->free[c]) {
      kiln_buffer *b = p->free[c];
      p->free[c] = b->next_free;
      b->next_free = all;
      all = b;
    }
  p->cached = 0;
  if (freed)
    p->trims++;
  pthread_mutex_unlock(&rt->lock);
  while (all) { /* outside the lock: the driver may take its time */
    kiln_buffer *b = all;
    all = b->next_free;
    unfence(b);
    clReleaseMemObject(b->mem);
    free(b);
  }
  return freed;
}

uint64_t kiln__pool_largest_free(const kiln_runtime *rt)
{
  uint64_t largest = 0;
  for (size_t c = KILN__POOL_CLASSES; c-- > 0 && !largest;)
    for (const kiln_buffer *b = rt->pool.free[c]; b; b = b->next_free)
      if (b->block > largest)
        largest = b->block;
  return largest;
}
