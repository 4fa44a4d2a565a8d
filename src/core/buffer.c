/*
 * buffer.c — device buffers, the memory they and cached plans hold, and
 * kiln's memory accounting (the transfers are ops/transfer.c).
 *
 * OpenCL drivers allocate lazily: clCreateBuffer succeeds and the first
 * command that touches the buffer fails with CL_MEM_OBJECT_ALLOCATION_FAILURE
 * or CL_OUT_OF_RESOURCES, possibly inside some later kernel launch. So each
 * new buffer is made resident at once (migrated to the device, or filled
 * with zeros when asked), on a queue of its own so that creating a buffer
 * waits for that and not for the user's work. Running out of memory is then
 * reported by the call that asked for the memory.
 *
 * Accounting: a creation reserves its bytes from the budget first
 * (mem_reserving), so two threads cannot both take the last bytes, and the
 * buffer counts as held (current, live, peak, all in one step under the
 * lock) only once it exists. Counting it as held from the reservation on
 * showed other threads more bytes held than the peak, and a creation that
 * then failed must not raise the peak. A buffer holds its block, its bytes
 * rounded up to a size class, and a destroyed one's block stays with the
 * runtime's pool (pool.c) for the next creation of that class; the budget
 * counts the pool's blocks too, and a creation that does not fit trims the
 * pool and tries again before it fails (PyTorch's order).
 *
 * Cached plans hold device memory outside any kiln_buffer: kiln's FFT
 * scratch and twiddles, the buffers VkFFT makes while it plans, clFFT's
 * temporary buffer. kiln__plan_mem_create() makes each of them, resident at
 * once like a buffer, against the same budget (counted in mem_plans, which
 * kiln_memory_stats() reports as plan_bytes). A creation of either kind
 * that does not fit, or that the driver refuses, trims the pool, then
 * runs the reclaimers modules registered (kiln__runtime_reclaim: the FFT's
 * cached plans no call is using, ops/fft.c), trying again
 * after each; the plans come last because building one again costs a
 * compile.
 */
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/pool.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "device/device.h"
#include "device/select.h"

#define DTYPE_LIST                                                                       \
  "KILN_F16, KILN_F32, KILN_F64, KILN_C32, KILN_C64, KILN_I32 or KILN_I64"

/* What the budget holds when a reservation does not fit it. */
typedef struct budget_view {
  uint64_t left, current, live, plans, limit;
} budget_view;

/* Takes bytes from the budget, which counts live buffers, creations in
 * progress, the pool's blocks and cached plans' memory: 1, or 0 when they
 * do not fit, with what is held in *v. */
static int budget_take(kiln_runtime *rt, uint64_t bytes, budget_view *v)
{
  pthread_mutex_lock(&rt->lock);
  uint64_t used = rt->mem_current + rt->mem_reserving + rt->pool.cached + rt->mem_plans;
  uint64_t left = used < rt->mem_limit ? rt->mem_limit - used : 0;
  int fits = bytes <= left;
  if (fits)
    rt->mem_reserving += bytes;
  *v =
    (budget_view){left, rt->mem_current, rt->live_buffers, rt->mem_plans, rt->mem_limit};
  pthread_mutex_unlock(&rt->lock);
  return fits;
}

/* "kiln holds 1.0 MiB in 2 buffers" and, when plans hold memory, "and
 * 512 KiB in FFT plans" (cached ones, and one being built). */
static const char *held_text(const budget_view *v, char *out, size_t size)
{
  char held[32], plans[32];
  int n = snprintf(out, size, "kiln holds %s in %llu buffer%s",
                   kiln__format_bytes(v->current, held, sizeof held),
                   (unsigned long long)v->live, v->live == 1 ? "" : "s");
  if (v->plans && n > 0 && (size_t)n < size)
    snprintf(out + n, size - (size_t)n, " and %s in FFT plans",
             kiln__format_bytes(v->plans, plans, sizeof plans));
  return out;
}

/* Reserves bytes of the runtime's budget, or says why they are not there;
 * head names the request ("kiln_buffer_create: 4 float32 elements need 16
 * bytes (16 bytes)"), and each message begins with it. */
static kiln_status take_room(kiln_runtime *rt, const char *head, size_t bytes)
{
  const kiln__device *dev = kiln__runtime_device(rt);
  char have[32], held[128];
  if (bytes > dev->info.max_alloc_bytes)
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                      "%s, more than the largest single allocation of '%s', %llu bytes "
                      "(%s, CL_DEVICE_MAX_MEM_ALLOC_SIZE); split the data over smaller "
                      "buffers",
                      head, dev->info.name, (unsigned long long)dev->info.max_alloc_bytes,
                      kiln__format_bytes(dev->info.max_alloc_bytes, have, sizeof have));
  int64_t device_free = kiln__device_free_memory(dev);
  if (device_free >= 0 && bytes > (uint64_t)device_free)
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                      "%s, but '%s' reports only %lld bytes (%s) free "
                      "(CL_DEVICE_GLOBAL_FREE_MEMORY_AMD)",
                      head, dev->info.name, (long long)device_free,
                      kiln__format_bytes((uint64_t)device_free, have, sizeof have));
  budget_view v;
  if (budget_take(rt, bytes, &v))
    return KILN_OK;
  return kiln__fail(
    rt, KILN_ERR_OUT_OF_MEMORY,
    "%s, but only %llu bytes (%s) are available: %s of a %llu-byte budget set by %s; "
    "destroy buffers or raise the limit",
    head, (unsigned long long)v.left, kiln__format_bytes(v.left, have, sizeof have),
    held_text(&v, held, sizeof held), (unsigned long long)v.limit, rt->mem_limit_source);
}

/* take_room() for a buffer of count elements of dtype, bytes in all. */
static kiln_status reserve(kiln_runtime *rt, const char *fn, kiln_dtype dtype,
                           size_t count, size_t bytes)
{
  char head[160], need[32];
  snprintf(head, sizeof head, "%s: %zu %s elements need %zu bytes (%s)", fn, count,
           kiln_dtype_name(dtype), bytes, kiln__format_bytes(bytes, need, sizeof need));
  return take_room(rt, head, bytes);
}

/* Ends a creation's reservation: the buffer exists and is held, or it was
 * not made and the bytes go back to the budget. */
static void settle(kiln_runtime *rt, size_t bytes, int held)
{
  pthread_mutex_lock(&rt->lock);
  rt->mem_reserving -= bytes;
  if (held) {
    rt->mem_current += bytes;
    rt->live_buffers++;
    if (rt->mem_current > rt->mem_peak)
      rt->mem_peak = rt->mem_current;
  }
  pthread_mutex_unlock(&rt->lock);
}

/* A held buffer is gone. */
static void unreserve(kiln_runtime *rt, size_t bytes)
{
  pthread_mutex_lock(&rt->lock);
  rt->mem_current -= bytes;
  rt->live_buffers--;
  pthread_mutex_unlock(&rt->lock);
}

/* Waits for ev and returns the command's own status, which is what tells an
 * allocation failure at first use from a failure to wait. *call is left
 * alone when the command failed, and names the call that failed otherwise. */
static cl_int wait_status(cl_event ev, const char **call)
{
  cl_int err = clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  cl_int qerr =
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  if (qerr == CL_SUCCESS && status < 0)
    return status;
  if (err != CL_SUCCESS)
    *call = "clWaitForEvents";
  else if (qerr != CL_SUCCESS)
    *call = "clGetEventInfo";
  return err != CL_SUCCESS ? err : qerr;
}

/* Makes a new block of `bytes` resident on the device: filled with zeros
 * (elements of `pattern` bytes) with KILN_BUFFER_ZERO in flags, else
 * migrated, its contents kept only when `keep` (host memory, a copy of
 * it). fn begins the message. */
static kiln_status make_resident(kiln_runtime *rt, cl_mem mem, size_t bytes,
                                 size_t pattern, unsigned flags, int keep, const char *fn)
{
  static const unsigned char zero[16] = {0};
  cl_event ev = NULL;
  const char *call;
  cl_int err;
  if (flags & KILN_BUFFER_ZERO) {
    call = "clEnqueueFillBuffer";
    err =
      clEnqueueFillBuffer(rt->alloc_queue, mem, zero, pattern, 0, bytes, 0, NULL, &ev);
  } else {
    /* Host memory's contents matter; a new buffer's do not. */
    call = "clEnqueueMigrateMemObjects";
    err = clEnqueueMigrateMemObjects(rt->alloc_queue, 1, &mem,
                                     keep ? 0 : CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED,
                                     0, NULL, &ev);
  }
  if (err == CL_SUCCESS) {
    err = wait_status(ev, &call);
    clReleaseEvent(ev);
  }
  if (err == CL_SUCCESS)
    return KILN_OK;
  char need[32];
  return kiln__fail_cl(
    rt, err, call, "%s: making %zu bytes (%s) resident on '%s' at creation", fn, bytes,
    kiln__format_bytes(bytes, need, sizeof need), kiln__runtime_device(rt)->info.name);
}

/* Checks a creation request; on success *bytes is count * element size. */
static kiln_status check_create(kiln_runtime *rt, const char *fn, kiln_dtype dtype,
                                size_t count, kiln_buffer **out, size_t *bytes)
{
  if (!out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: out is NULL; expected the address of a kiln_buffer "
                      "pointer to receive the buffer",
                      fn);
  *out = NULL;
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()",
                      fn);
  size_t esize = kiln_dtype_size(dtype);
  if (!esize)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "%s: dtype %d is not a kiln_dtype; expected " DTYPE_LIST, fn,
                      (int)dtype);
  if (count == 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: count is 0; expected at least one element", fn);
  if (kiln__mul_overflow(count, esize, bytes))
    return kiln__fail(rt, KILN_ERR_OVERFLOW,
                      "%s: %zu %s elements of %zu bytes overflow size_t", fn, count,
                      kiln_dtype_name(dtype), esize);
  return KILN_OK;
}

/* Reserves the budget for a block of *block bytes for a request of bytes:
 * its class, then, when that does not fit, the class again after trimming
 * the pool, then bytes alone (*block becomes bytes), then that again after
 * releasing the cached FFT plans no call is using (dearer: they are built
 * again on their next use). */
static kiln_status reserve_block(kiln_runtime *rt, const char *fn, kiln_dtype dtype,
                                 size_t count, size_t bytes, size_t *block)
{
  kiln_status st = reserve(rt, fn, dtype, count, *block);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__pool_trim(rt))
    st = reserve(rt, fn, dtype, count, *block);
  if (st == KILN_ERR_OUT_OF_MEMORY && *block != bytes) {
    *block = bytes;
    st = reserve(rt, fn, dtype, count, bytes);
  }
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__runtime_reclaim(rt))
    st = reserve(rt, fn, dtype, count, *block);
  return st;
}

/* Asks the driver for b's block and makes it resident. */
static kiln_status allocate(kiln_buffer *b, const char *fn, unsigned flags, void *host)
{
  kiln_runtime *rt = b->rt;
  cl_int err;
  b->mem =
    clCreateBuffer(rt->context, CL_MEM_READ_WRITE | (host ? CL_MEM_USE_HOST_PTR : 0),
                   b->block, host, &err);
  if (!b->mem) {
    char need[32];
    return kiln__fail_cl(rt, err, "clCreateBuffer", "%s: allocating %zu %s elements (%s)",
                         fn, b->count, kiln_dtype_name(b->dtype),
                         kiln__format_bytes(b->block, need, sizeof need));
  }
  kiln_status st = make_resident(rt, b->mem, b->bytes, kiln_dtype_size(b->dtype), flags,
                                 host != NULL, fn);
  if (st != KILN_OK) {
    clReleaseMemObject(b->mem);
    b->mem = NULL;
  }
  return st;
}

/* KILN_OOM_WAIT: tries again(arg), an allocation the driver refused,
 * waiting 1, 2, 4, ... ms between tries (the last wait cut to the time
 * left) until one succeeds or rt->oom_wait_ms have passed; then the last
 * refusal, with the wait added to its message (fn when it has none). */
static kiln_status allocate_waiting(kiln_runtime *rt, const char *fn,
                                    kiln_status (*again)(void *arg), void *arg)
{
  uint64_t waited = 0, wait = 1, limit = rt->oom_wait_ms;
  kiln_status st = KILN_ERR_OUT_OF_MEMORY;
  for (unsigned tries = 0; st == KILN_ERR_OUT_OF_MEMORY && waited < limit; tries++) {
    uint64_t ms = wait < limit - waited ? wait : limit - waited;
    kiln__sleep_ms(ms);
    waited += ms;
    wait *= 2;
    st = again(arg);
  }
  if (st == KILN_ERR_OUT_OF_MEMORY) {
    char *why = strdup(kiln_last_error(rt));
    st = kiln__fail(rt, st, "%s (still refused after waiting %llu ms: KILN_OOM_WAIT)",
                    why ? why : fn, (unsigned long long)waited);
    free(why);
  }
  return st;
}

/* allocate()'s arguments, for allocate_waiting(). */
typedef struct buffer_try {
  kiln_buffer *b;
  const char *fn;
  unsigned flags;
  void *host;
} buffer_try;

static kiln_status buffer_again(void *arg)
{
  const buffer_try *t = arg;
  return allocate(t->b, t->fn, t->flags, t->host);
}

/* A block from the pool for a new buffer: zeroed on the runtime's queue
 * when asked, after every command of its last owner. */
static kiln_status reuse(kiln_buffer *b, const char *fn, kiln_dtype dtype, size_t count,
                         size_t bytes, unsigned flags, kiln_buffer **out)
{
  kiln_runtime *rt = b->rt;
  b->dtype = dtype;
  b->count = count;
  b->bytes = bytes;
  if (flags & KILN_BUFFER_ZERO) {
    static const unsigned char zero[16] = {0};
    cl_event ev = NULL;
    cl_int err = clEnqueueFillBuffer(kiln__queue(rt), b->mem, zero,
                                     kiln_dtype_size(dtype), 0, bytes, 0, NULL, &ev);
    kiln_status st = err != CL_SUCCESS ? kiln__fail_cl(rt, err, "clEnqueueFillBuffer",
                                                       "%s: zeroing %zu %s elements", fn,
                                                       count, kiln_dtype_name(dtype))
                                       : kiln__runtime_track(rt, ev, fn);
    if (st != KILN_OK) {
      kiln__pool_give(b);
      return st;
    }
  }
  *out = b;
  return KILN_OK;
}

/* Creates a checked request: bytes is count * element size. Pooled memory
 * when the pool has a block of the request's class; else a new block, after
 * the pool is trimmed, and then the unused FFT plans released, if the
 * budget or the driver has no room. */
static kiln_status buffer_new(kiln_runtime *rt, const char *fn, kiln_dtype dtype,
                              size_t count, size_t bytes, unsigned flags, void *host,
                              kiln_buffer **out)
{
  kiln_buffer *b = host ? NULL : kiln__pool_take(rt, bytes);
  if (b)
    return reuse(b, fn, dtype, count, bytes, flags, out);
  size_t block = host ? bytes : kiln__pool_block_bytes(rt, bytes);
  kiln_status st = reserve_block(rt, fn, dtype, count, bytes, &block);
  if (st != KILN_OK)
    return st;
  b = calloc(1, sizeof *b);
  if (!b) {
    settle(rt, block, 0);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "%s: allocating the buffer's record failed", fn);
  }
  *b = (kiln_buffer){.rt = rt,
                     .dtype = dtype,
                     .count = count,
                     .bytes = bytes,
                     .block = block,
                     .wrapped = host != NULL};
  buffer_try t = {b, fn, flags, host};
  st = allocate(b, fn, flags, host);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__pool_trim(rt)) /* the driver's refusal */
    st = allocate(b, fn, flags, host);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__runtime_reclaim(rt))
    st = allocate(b, fn, flags, host);
  if (st == KILN_ERR_OUT_OF_MEMORY && rt->oom_wait_ms)
    st = allocate_waiting(rt, fn, buffer_again, &t);
  if (st != KILN_OK) {
    free(b);
    settle(rt, block, 0);
    return st;
  }
  settle(rt, block, 1);
  *out = b;
  return KILN_OK;
}

KILN_API kiln_status kiln_buffer_create(kiln_runtime *rt, kiln_dtype dtype, size_t count,
                                        unsigned flags, kiln_buffer **out)
{
  static const char fn[] = "kiln_buffer_create";
  size_t bytes;
  kiln_status st = check_create(rt, fn, dtype, count, out, &bytes);
  if (st != KILN_OK)
    return st;
  if (flags & ~KILN_BUFFER_ZERO)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: flags 0x%x include unknown bits; expected 0 or "
                      "KILN_BUFFER_ZERO",
                      fn, flags);
  return buffer_new(rt, fn, dtype, count, bytes, flags, NULL, out);
}

kiln_status kiln__workspace(kiln_runtime *rt, const char *op, const char *what,
                            kiln_dtype dtype, size_t count, kiln_buffer **out)
{
  kiln_status st = kiln_buffer_create(rt, dtype, count, 0, out);
  if (st == KILN_OK)
    return st;
  /* The creation's message, less its own name: the operation's is first. */
  const char *why = kiln_last_error(rt), *prefix = "kiln_buffer_create: ";
  char *copy = strdup(strncmp(why, prefix, strlen(prefix)) ? why : why + strlen(prefix));
  char need[32];
  size_t bytes = count * kiln_dtype_size(dtype); /* checked by the creation */
  st = kiln__fail(rt, st, "%s: its %s of %zu bytes (%s) could not be made: %s", op, what,
                  bytes, kiln__format_bytes(bytes, need, sizeof need),
                  copy ? copy : kiln_status_name(st));
  free(copy);
  return st;
}

/* ---- memory that cached plans hold ------------------------------------- */

/* A plan buffer's creation: its arguments, for allocate_waiting(). */
typedef struct plan_try {
  kiln_runtime *rt;
  const char *head;
  cl_mem_flags flags;
  size_t bytes;
  void *host;
  cl_mem *out;
} plan_try;

/* Asks the driver for a plan buffer and makes it resident. */
static kiln_status plan_allocate(void *arg)
{
  const plan_try *t = arg;
  cl_int err;
  cl_mem mem = clCreateBuffer(t->rt->context, t->flags, t->bytes, t->host, &err);
  if (!mem)
    return kiln__fail_cl(t->rt, err, "clCreateBuffer", "%s could not be made", t->head);
  kiln_status st = make_resident(t->rt, mem, t->bytes, 1, 0,
                                 (t->flags & CL_MEM_COPY_HOST_PTR) != 0, t->head);
  if (st != KILN_OK) {
    clReleaseMemObject(mem);
    return st;
  }
  *t->out = mem;
  return KILN_OK;
}

kiln_status kiln__plan_mem_create(kiln_runtime *rt, const char *op, const char *what,
                                  cl_mem_flags flags, size_t bytes, void *host,
                                  cl_mem *out)
{
  assert(bytes > 0 && out);
  *out = NULL;
  char head[192], need[32];
  snprintf(head, sizeof head, "%s: its %s of %zu bytes (%s)", op, what, bytes,
           kiln__format_bytes(bytes, need, sizeof need));
  /* The order of buffer_new(): the pool's blocks first, then the plans. */
  kiln_status st = take_room(rt, head, bytes);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__pool_trim(rt))
    st = take_room(rt, head, bytes);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__runtime_reclaim(rt))
    st = take_room(rt, head, bytes);
  if (st != KILN_OK)
    return st;
  plan_try t = {rt, head, flags, bytes, host, out};
  st = plan_allocate(&t);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__pool_trim(rt)) /* the driver's refusal */
    st = plan_allocate(&t);
  if (st == KILN_ERR_OUT_OF_MEMORY && kiln__runtime_reclaim(rt))
    st = plan_allocate(&t);
  if (st == KILN_ERR_OUT_OF_MEMORY && rt->oom_wait_ms)
    st = allocate_waiting(rt, head, plan_allocate, &t);
  pthread_mutex_lock(&rt->lock);
  rt->mem_reserving -= bytes;
  if (st == KILN_OK)
    rt->mem_plans += bytes;
  pthread_mutex_unlock(&rt->lock);
  return st;
}

void kiln__plan_mem_release(kiln_runtime *rt, cl_mem mem, size_t bytes)
{
  if (!mem)
    return;
  clReleaseMemObject(mem); /* freed once enqueued commands are done */
  pthread_mutex_lock(&rt->lock);
  assert(rt->mem_plans >= bytes);
  rt->mem_plans -= bytes;
  pthread_mutex_unlock(&rt->lock);
}

KILN_API kiln_status kiln_buffer_wrap(kiln_runtime *rt, kiln_dtype dtype, size_t count,
                                      void *host, kiln_buffer **out)
{
  static const char fn[] = "kiln_buffer_wrap";
  size_t bytes;
  kiln_status st = check_create(rt, fn, dtype, count, out, &bytes);
  if (st != KILN_OK)
    return st;
  size_t esize = kiln_dtype_size(dtype);
  /* C32 and C64 need only their component's alignment. */
  size_t align = dtype == KILN_C32 || dtype == KILN_C64 ? esize / 2 : esize;
  if (!host || (uintptr_t)host % align != 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: host is %p; expected host memory aligned to %zu "
                      "bytes for %s elements",
                      fn, host, align, kiln_dtype_name(dtype));
  return buffer_new(rt, fn, dtype, count, bytes, 0, host, out);
}

void kiln__buffer_count_view(kiln_runtime *rt, int delta)
{
  pthread_mutex_lock(&rt->lock);
  if (delta > 0)
    rt->live_buffers++;
  else
    rt->live_buffers--;
  pthread_mutex_unlock(&rt->lock);
}

KILN_API kiln_status kiln_buffer_destroy(kiln_buffer *buf)
{
  if (!buf)
    return KILN_OK;
  pthread_mutex_lock(&buf->rt->lock);
  size_t views = buf->views;
  pthread_mutex_unlock(&buf->rt->lock);
  if (views)
    return kiln__fail(buf->rt, KILN_ERR_BUSY,
                      "kiln_buffer_destroy: %zu view%s of this buffer %s alive; destroy "
                      "%s first (kiln_buffer_destroy() on each view)",
                      views, views == 1 ? "" : "s", views == 1 ? "is" : "are",
                      views == 1 ? "it" : "them");
  if (buf->mapped)
    kiln_buffer_unmap(buf, buf->mapped); /* enqueued before the memory is reused */
  if (buf->parent) {
    kiln__view_destroy(buf);
    return KILN_OK;
  }
  if (kiln__pool_give(buf))
    return KILN_OK;
  kiln__buffer_release_mem(buf);
  unreserve(buf->rt, buf->block);
  free(buf);
  return KILN_OK;
}

KILN_API kiln_dtype kiln_buffer_dtype(const kiln_buffer *buf)
{
  return buf ? buf->dtype : (kiln_dtype)0;
}

kiln_status kiln__check_operand(kiln_runtime *rt, const char *fn, const char *name,
                                const kiln_buffer *b, kiln_dtype want, size_t need,
                                const char *detail)
{
  if (!b)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name);
  if (b->rt != rt)
    return kiln__fail(rt, KILN_ERR_WRONG_RUNTIME, "%s: %s belongs to another runtime", fn,
                      name);
  if (b->dtype != want)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE, "%s: %s holds %s; expected %s", fn,
                      name, kiln_dtype_name(b->dtype), kiln_dtype_name(want));
  if (b->mapped)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is mapped into host memory (kiln_buffer_map()); expected "
                      "kiln_buffer_unmap() before the device uses it",
                      fn, name);
  if (b->count < need)
    return kiln__fail(rt, KILN_ERR_OUT_OF_BOUNDS,
                      "%s: %s needs %zu elements%s%s but "
                      "holds %zu",
                      fn, name, need, detail ? " " : "", detail ? detail : "", b->count);
  return KILN_OK;
}

KILN_API size_t kiln_buffer_count(const kiln_buffer *buf)
{
  return buf ? buf->count : 0;
}

KILN_API size_t kiln_buffer_bytes(const kiln_buffer *buf)
{
  return buf ? buf->bytes : 0;
}

KILN_API kiln_runtime *kiln_buffer_runtime(const kiln_buffer *buf)
{
  return buf ? buf->rt : NULL;
}

/* Checks that buf exists and [offset, offset + count) lies inside it. */
kiln_status kiln__check_range(const kiln_buffer *buf, const char *fn, const char *name,
                              size_t offset, size_t count)
{
  if (!buf)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a buffer from "
                      "kiln_buffer_create()",
                      fn, name);
  if (buf->mapped)
    return kiln__fail(buf->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is mapped into host memory (kiln_buffer_map()); expected "
                      "kiln_buffer_unmap() before the device uses it",
                      fn, name);
  if (offset > buf->count || count > buf->count - offset)
    return kiln__fail(buf->rt, KILN_ERR_OUT_OF_BOUNDS,
                      "%s: offset %zu + count %zu lies outside %s, a buffer of "
                      "%zu %s elements; expected offset + count <= %zu",
                      fn, offset, count, name, buf->count, kiln_dtype_name(buf->dtype),
                      buf->count);
  return KILN_OK;
}

KILN_API kiln_status kiln_memory_trim(kiln_runtime *rt)
{
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_memory_trim: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()");
  kiln__pool_trim(rt);
  kiln__runtime_reclaim(rt);
  return KILN_OK;
}

KILN_API kiln_status kiln_memory_stats(kiln_runtime *rt, kiln_memory_usage *out)
{
  kiln_status st = KILN__STATS_OUT(rt, "kiln_memory_stats", kiln_memory_usage, out);
  if (st != KILN_OK)
    return st;
  const kiln__device *dev = kiln__runtime_device(rt);
  kiln_memory_usage u;
  kiln_memory_usage_init(&u);
  pthread_mutex_lock(&rt->lock);
  u.current_bytes = rt->mem_current;
  u.peak_bytes = rt->mem_peak;
  u.live_buffers = rt->live_buffers;
  u.limit_bytes = rt->mem_limit;
  u.max_alloc_bytes = dev->info.max_alloc_bytes;
  u.cached_bytes = rt->pool.cached;
  u.peak_cached_bytes = rt->pool.peak_cached;
  u.pool_hits = rt->pool.hits;
  u.pool_misses = rt->pool.misses;
  u.trims = rt->pool.trims;
  u.largest_free_block = kiln__pool_largest_free(rt);
  u.plan_bytes = rt->mem_plans;
  pthread_mutex_unlock(&rt->lock);
  u.device_free_bytes = kiln__device_free_memory(dev);
  kiln__struct_put(out, out->struct_size, &u, sizeof u);
  return KILN_OK;
}
