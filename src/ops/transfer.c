/*
 * transfer.c — moving data between host and device buffers: reads, writes,
 * copies and fills (blocking or not), and the host loops' rectangles on a
 * lane's queue. Each call is recorded by the profiler, which is why this
 * is ops/ and not core/: a transfer is an operation the caller enqueues,
 * shown in the profile like the others.
 */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/transfer.h"
#include "profile/profile.h"

/* A blocking command's event, asked for only when profiling or where the
 * driver's blocking may return early (kiln__blocking()): waited for there,
 * and given to the calling thread's recorded call when profiling. */
static cl_int finish_blocking(kiln_runtime *rt, cl_event ev, const char *fn)
{
  if (!ev)
    return CL_SUCCESS;
  cl_int err = kiln__blocking(rt, 1) ? CL_SUCCESS : kiln__wait_command(ev);
  if (rt->profile)
    kiln__profile_attach(rt, ev, fn);
  clReleaseEvent(ev);
  return err;
}

/* The event a command is enqueued with: none for a blocking one the driver
 * waits for itself and the profiler does not want. */
static cl_event *event_for(const kiln_runtime *rt, int blocking, cl_event *ev)
{
  return blocking && !rt->profile && kiln__blocking(rt, 1) ? NULL : ev;
}

/* The queue an internal command goes on and its wait list: lane's, or the
 * thread's queue of the runtime with nothing to wait for. */
static cl_command_queue lane_queue(kiln_runtime *rt, const kiln__lane *lane,
                                   cl_uint *nwait, const cl_event **wait)
{
  *nwait = lane ? lane->nwait : 0;
  *wait = lane && lane->nwait ? lane->wait : NULL;
  return lane ? lane->queue : kiln__queue(rt);
}

static kiln_status transfer(const kiln_buffer *buf, const char *fn, size_t offset,
                            size_t count, void *host, int write, int blocking,
                            const kiln__lane *lane)
{
  kiln_status st = kiln__check_range(buf, fn, "buf", offset, count);
  if (st != KILN_OK || count == 0)
    return st;
  kiln_runtime *rt = buf->rt;
  if (!host)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: the host pointer is NULL; expected room for %zu %s "
                      "elements",
                      fn, count, kiln_dtype_name(buf->dtype));
  size_t esize = kiln_dtype_size(buf->dtype);
  cl_bool wait = kiln__blocking(rt, blocking);
  kiln__profile_scope ps;
  kiln__profile_begin(rt, &ps, write ? "write" : "read");
  kiln__profile_describe(&ps, "opencl", (uint64_t)count * esize, 0, "%zu %s", count,
                         kiln_dtype_name(buf->dtype));
  cl_event ev = NULL, *evp = event_for(rt, blocking, &ev);
  cl_uint nwait;
  const cl_event *waits;
  cl_command_queue q = lane_queue(rt, lane, &nwait, &waits);
  cl_mem mem = kiln__buffer_mem(buf);
  size_t at = (kiln__buffer_first(buf) + offset) * esize;
  cl_int err =
    write ? clEnqueueWriteBuffer(q, mem, wait, at, count * esize, host, nwait, waits, evp)
          : clEnqueueReadBuffer(q, mem, wait, at, count * esize, host, nwait, waits, evp);
  if (err != CL_SUCCESS)
    st = kiln__fail_cl(rt, err, write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer",
                       "%s: %s %zu %s elements at offset %zu", fn,
                       write ? "writing" : "reading", count, kiln_dtype_name(buf->dtype),
                       offset);
  else if (blocking && (err = finish_blocking(rt, ev, fn)) != CL_SUCCESS)
    st = kiln__fail_cl(rt, err, "clWaitForEvents", "%s: %s %zu %s elements at offset %zu",
                       fn, write ? "writing" : "reading", count,
                       kiln_dtype_name(buf->dtype), offset);
  else if (!blocking)
    st = kiln__runtime_track(rt, ev, fn);
  return kiln__profile_end(&ps, st);
}

KILN_API kiln_status kiln_buffer_write(kiln_buffer *buf, size_t offset, size_t count,
                                       const void *src)
{
  return transfer(buf, "kiln_buffer_write", offset, count, (void *)src, 1, 1, NULL);
}

KILN_API kiln_status kiln_buffer_write_async(kiln_buffer *buf, size_t offset,
                                             size_t count, const void *src)
{
  return transfer(buf, "kiln_buffer_write_async", offset, count, (void *)src, 1, 0, NULL);
}

KILN_API kiln_status kiln_buffer_read(const kiln_buffer *buf, size_t offset, size_t count,
                                      void *dst)
{
  return transfer(buf, "kiln_buffer_read", offset, count, dst, 0, 1, NULL);
}

KILN_API kiln_status kiln_buffer_read_async(const kiln_buffer *buf, size_t offset,
                                            size_t count, void *dst)
{
  return transfer(buf, "kiln_buffer_read_async", offset, count, dst, 0, 0, NULL);
}

KILN_API kiln_status kiln_buffer_copy(kiln_buffer *dst, size_t dst_offset,
                                      const kiln_buffer *src, size_t src_offset,
                                      size_t count)
{
  static const char fn[] = "kiln_buffer_copy";
  kiln_status st = kiln__check_range(dst, fn, "dst", dst_offset, count);
  if (st == KILN_OK)
    st = kiln__check_range(src, fn, "src", src_offset, count);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = dst->rt;
  if (src->rt != rt)
    return kiln__fail(rt, KILN_ERR_WRONG_RUNTIME,
                      "%s: src and dst belong to different runtimes; expected "
                      "buffers of one runtime (copy through the host between "
                      "runtimes)",
                      fn);
  if (src->dtype != dst->dtype)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "%s: src holds %s and dst %s; expected the same element "
                      "type",
                      fn, kiln_dtype_name(src->dtype), kiln_dtype_name(dst->dtype));
  /* views of one buffer are ranges of one memory */
  size_t from = kiln__buffer_first(src) + src_offset;
  size_t to = kiln__buffer_first(dst) + dst_offset;
  if (kiln__buffer_mem(src) == kiln__buffer_mem(dst) && from < to + count &&
      to < from + count)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: the ranges at %zu and %zu of %zu elements overlap in "
                      "one buffer%s; expected disjoint ranges",
                      fn, src_offset, dst_offset, count,
                      src == dst ? "" : " (views of one buffer)");
  if (count == 0)
    return KILN_OK;
  size_t esize = kiln_dtype_size(src->dtype);
  kiln__profile_scope ps;
  kiln__profile_begin(rt, &ps, "copy");
  kiln__profile_describe(&ps, "opencl", 2 * (uint64_t)count * esize, 0, "%zu %s", count,
                         kiln_dtype_name(src->dtype));
  cl_event ev = NULL;
  cl_int err = clEnqueueCopyBuffer(
    kiln__queue(rt), kiln__buffer_mem(src), kiln__buffer_mem(dst),
    (kiln__buffer_first(src) + src_offset) * esize,
    (kiln__buffer_first(dst) + dst_offset) * esize, count * esize, 0, NULL, &ev);
  st = err != CL_SUCCESS
         ? kiln__fail_cl(rt, err, "clEnqueueCopyBuffer", "%s: copying %zu %s elements",
                         fn, count, kiln_dtype_name(src->dtype))
         : kiln__runtime_track(rt, ev, fn);
  return kiln__profile_end(&ps, st);
}

KILN_API kiln_status kiln_buffer_fill(kiln_buffer *buf, size_t offset, size_t count,
                                      const void *value)
{
  static const char fn[] = "kiln_buffer_fill";
  kiln_status st = kiln__check_range(buf, fn, "buf", offset, count);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = buf->rt;
  if (count == 0)
    return KILN_OK;
  if (!value)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: value is NULL; expected a pointer to one %s element", fn,
                      kiln_dtype_name(buf->dtype));
  size_t esize = kiln_dtype_size(buf->dtype);
  kiln__profile_scope ps;
  kiln__profile_begin(rt, &ps, "fill");
  kiln__profile_describe(&ps, "opencl", (uint64_t)count * esize, 0, "%zu %s", count,
                         kiln_dtype_name(buf->dtype));
  cl_event ev = NULL;
  cl_int err = clEnqueueFillBuffer(kiln__queue(rt), kiln__buffer_mem(buf), value, esize,
                                   (kiln__buffer_first(buf) + offset) * esize,
                                   count * esize, 0, NULL, &ev);
  st = err != CL_SUCCESS ? kiln__fail_cl(rt, err, "clEnqueueFillBuffer",
                                         "%s: filling %zu %s elements at offset %zu", fn,
                                         count, kiln_dtype_name(buf->dtype), offset)
                         : kiln__runtime_track(rt, ev, fn);
  return kiln__profile_end(&ps, st);
}

/* Copies a rows x cols block between host memory (row pitch ld elements,
 * the block starting at element `at`) and the packed start of buf; blocking
 * or not. For the ops that feed the device in pieces (gemm_host.c,
 * reduce_host.c, host.c). */
static kiln_status rect(kiln_buffer *buf, size_t to, int write, int blocking,
                        const void *host, size_t at, size_t ld, size_t rows, size_t cols,
                        const kiln__lane *lane)
{
  kiln_runtime *rt = buf->rt;
  size_t es = kiln_dtype_size(buf->dtype);
  size_t origin[3] = {(kiln__buffer_first(buf) + to) * es, 0, 0};
  size_t region[3] = {cols * es, rows, 1};
  size_t host_origin[3] = {at % ld * es, at / ld, 0};
  const char *fn = write ? "kiln__buffer_write_rect" : "kiln__buffer_read_rect";
  kiln__profile_scope ps;
  kiln__profile_begin(rt, &ps, write ? "write" : "read");
  kiln__profile_describe(&ps, "opencl", (uint64_t)rows * cols * es, 0, "%zux%zu %s", rows,
                         cols, kiln_dtype_name(buf->dtype));
  cl_bool wait = kiln__blocking(rt, blocking);
  cl_event ev = NULL, *evp = event_for(rt, blocking, &ev);
  cl_uint nwait;
  const cl_event *waits;
  cl_command_queue q = lane_queue(rt, lane, &nwait, &waits);
  cl_int err = write ? clEnqueueWriteBufferRect(q, kiln__buffer_mem(buf), wait, origin,
                                                host_origin, region, cols * es, 0,
                                                ld * es, 0, host, nwait, waits, evp)
                     : clEnqueueReadBufferRect(q, kiln__buffer_mem(buf), wait, origin,
                                               host_origin, region, cols * es, 0, ld * es,
                                               0, (void *)host, nwait, waits, evp);
  kiln_status st = KILN_OK;
  if (err != CL_SUCCESS)
    st = kiln__fail_cl(rt, err,
                       write ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect",
                       "moving a %zu x %zu block", rows, cols);
  else if (blocking && (err = finish_blocking(rt, ev, fn)) != CL_SUCCESS)
    st =
      kiln__fail_cl(rt, err, "clWaitForEvents", "moving a %zu x %zu block", rows, cols);
  else if (!blocking)
    st = kiln__runtime_track(rt, ev, fn);
  return kiln__profile_end(&ps, st);
}

kiln_status kiln__buffer_write_rect(kiln_buffer *buf, const void *host, size_t at,
                                    size_t ld, size_t rows, size_t cols)
{
  return rect(buf, 0, 1, 1, host, at, ld, rows, cols, NULL);
}

kiln_status kiln__buffer_read_rect(kiln_buffer *buf, void *host, size_t at, size_t ld,
                                   size_t rows, size_t cols)
{
  return rect(buf, 0, 0, 1, host, at, ld, rows, cols, NULL);
}

kiln_status kiln__buffer_move_async(kiln_buffer *buf, size_t to, int write,
                                    const void *host, size_t at, size_t ld, size_t rows,
                                    size_t cols, const kiln__lane *lane)
{
  size_t es = kiln_dtype_size(buf->dtype);
  void *h = (void *)(uintptr_t)host; /* read back only when !write */
  if (rows == 1 || cols == ld)       /* one contiguous run */
    return transfer(buf, write ? "kiln_buffer_write_async" : "kiln_buffer_read_async", to,
                    rows * cols, (char *)h + at * es, write, 0, lane);
  return rect(buf, to, write, 0, host, at, ld, rows, cols, lane);
}
