/*
 * buffer_view.c — views of part of a buffer, and mapping a buffer into host
 * memory.
 *
 * A view is its buffer's memory plus an element offset, and every call of
 * kiln's own takes it so: the operations (on every backend), transfers,
 * fills and maps pass the buffer's cl_mem and the offset
 * (kiln__buffer_mem(), kiln__buffer_first()), so a view may start at any
 * element. An OpenCL sub-buffer (clCreateSubBuffer) is made only where a
 * cl_mem of the view itself is needed: kiln_buffer_cl_mem() and user
 * kernels (kiln_kernel_set_buffer()); it is made then, once, and needs the
 * offset to be a multiple of the device's base-address alignment
 * (CL_DEVICE_MEM_BASE_ADDR_ALIGN). NVIDIA's driver crashes releasing a
 * sub-buffer (kiln__keeps_sub_buffers() in rank.c has the evidence), which
 * is why kiln's own calls make none, and why on such a device a dead view's
 * sub-buffer is kept until its buffer's memory is released (buffer
 * destroyed, or its pooled block trimmed): then the parent goes first, so
 * that releasing a sub-buffer is never the release of a part of a live
 * parent. A buffer that keeps sub-buffers is not pooled, so its kept ones
 * go as soon as it does.
 *
 * A view holds no memory of its own: it counts as a live buffer of 0
 * bytes, and keeps its buffer from being destroyed (or pooled) until the
 * view is. A view of a view is a view of the first buffer.
 *
 * Mapping is clEnqueueMapBuffer on the runtime's queue, blocking: it waits
 * for the work enqueued before it, and on a device that shares host memory
 * (a CPU device, an integrated GPU) gives the buffer's own memory, with no
 * copy. A view maps its range of its buffer's memory. While a buffer is
 * mapped, kiln refuses it to every command (transfers, operations,
 * kernels), as OpenCL leaves such use undefined; kiln_buffer_unmap()
 * enqueues the unmap, and commands enqueued after it see what the host
 * wrote.
 */
#include <stdlib.h>

#include "base/error.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "core/stream.h"

KILN_API kiln_status kiln_buffer_view(kiln_buffer *buf, size_t offset, size_t count,
                                      kiln_buffer **out)
{
  static const char fn[] = "kiln_buffer_view";
  if (!out)
    return kiln__fail(buf ? buf->rt : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: out is NULL; expected the address of a kiln_buffer pointer",
                      fn);
  *out = NULL;
  kiln_status st = kiln__check_range(buf, fn, "buf", offset, count);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = buf->rt;
  if (count == 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: count is 0; expected at least one element", fn);
  kiln_buffer *root = buf->parent ? buf->parent : buf;
  kiln_buffer *v = calloc(1, sizeof *v);
  if (!v)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  v->rt = rt;
  v->dtype = buf->dtype;
  v->count = count;
  v->bytes = count * kiln_dtype_size(buf->dtype);
  v->wrapped = 1; /* never pooled */
  v->parent = root;
  v->view_offset = kiln__buffer_first(buf) + offset;
  pthread_mutex_lock(&rt->lock);
  root->views++;
  pthread_mutex_unlock(&rt->lock);
  kiln__buffer_count_view(rt, 1);
  *out = v;
  return KILN_OK;
}

kiln_status kiln__buffer_cl_mem(const kiln_buffer *buf, const char *fn, cl_mem *out)
{
  if (!buf->parent) {
    *out = buf->mem;
    return KILN_OK;
  }
  kiln_buffer *v = (kiln_buffer *)buf; /* the sub-buffer is made once, lazily */
  kiln_runtime *rt = v->rt;
  pthread_mutex_lock(&rt->lock);
  *out = v->mem;
  pthread_mutex_unlock(&rt->lock);
  if (*out)
    return KILN_OK;
  size_t es = kiln_dtype_size(v->dtype), first = v->view_offset;
  cl_uint align_bits = 0;
  cl_int err =
    clGetDeviceInfo(kiln__runtime_device(rt)->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                    sizeof align_bits, &align_bits, NULL);
  size_t align = err == CL_SUCCESS && align_bits >= 8 ? align_bits / 8 : 1;
  if (first * es % align != 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: the view from element %zu starts %zu bytes into its buffer, "
                      "not a multiple of the device's base-address alignment of %zu "
                      "bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN), which an OpenCL "
                      "sub-buffer needs; expected a view whose offset is a multiple of "
                      "%zu %s elements (kiln's own calls take a view at any offset)",
                      fn, first, first * es, align, align % es ? align : align / es,
                      align % es ? "bytes of" : kiln_dtype_name(v->dtype));
  cl_buffer_region region = {first * es, v->bytes};
  err = CL_SUCCESS;
  pthread_mutex_lock(&rt->lock); /* one sub-buffer, whoever asks first */
  if (!v->mem)
    v->mem = clCreateSubBuffer(v->parent->mem, CL_MEM_READ_WRITE,
                               CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  *out = v->mem;
  pthread_mutex_unlock(&rt->lock);
  if (!*out)
    return kiln__fail_cl(rt, err, "clCreateSubBuffer",
                         "%s: %zu %s elements from element %zu of a buffer of %zu", fn,
                         v->count, kiln_dtype_name(v->dtype), first, v->parent->count);
  return KILN_OK;
}

KILN_API cl_mem kiln_buffer_cl_mem(const kiln_buffer *buf)
{
  cl_mem mem = NULL;
  if (buf)
    kiln__buffer_cl_mem(buf, "kiln_buffer_cl_mem", &mem);
  return mem;
}

void kiln__buffer_release_mem(kiln_buffer *buf)
{
  if (buf->mem)
    clReleaseMemObject(buf->mem); /* freed once enqueued commands are done */
  for (size_t i = buf->nkept; i-- > 0;)
    clReleaseMemObject(buf->kept[i]);
  free(buf->kept);
  buf->kept = NULL;
  buf->nkept = 0;
}

void kiln__view_destroy(kiln_buffer *v)
{
  kiln_runtime *rt = v->rt;
  kiln_buffer *root = v->parent;
  cl_mem release = v->mem;
  pthread_mutex_lock(&rt->lock);
  if (v->mem && rt->keep_sub_buffers) {
    cl_mem *kept = realloc(root->kept, (root->nkept + 1) * sizeof *kept);
    if (kept) { /* else released now: the one way left */
      root->kept = kept;
      root->kept[root->nkept++] = v->mem;
      root->wrapped = 1; /* not pooled: its sub-buffers go with it */
      release = NULL;
    }
  }
  root->views--;
  pthread_mutex_unlock(&rt->lock);
  if (release)
    clReleaseMemObject(release); /* freed once enqueued commands are done */
  kiln__buffer_count_view(rt, -1);
  free(v);
}

KILN_API kiln_status kiln_buffer_map(kiln_buffer *buf, unsigned flags, void **host)
{
  static const char fn[] = "kiln_buffer_map";
  if (!buf || !host)
    return kiln__fail(buf ? buf->rt : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a buffer and the address of a pointer",
                      fn, !buf ? "buf" : "host");
  *host = NULL;
  kiln_runtime *rt = buf->rt;
  if (!flags || (flags & ~(KILN_MAP_READ | KILN_MAP_WRITE)))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: flags 0x%x; expected KILN_MAP_READ, KILN_MAP_WRITE or both",
                      fn, flags);
  if (buf->mapped)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: the buffer is mapped already (at %p); expected "
                      "kiln_buffer_unmap() first",
                      fn, buf->mapped);
  cl_map_flags map = (flags & KILN_MAP_READ ? CL_MAP_READ : 0) |
                     (flags & KILN_MAP_WRITE ? CL_MAP_WRITE : 0);
  cl_int err;
  size_t at = kiln__buffer_first(buf) * kiln_dtype_size(buf->dtype);
  cl_event ev = NULL; /* waited for where blocking alone may not (stream.h) */
  cl_bool wait = kiln__blocking(rt, 1);
  const char *call = "clEnqueueMapBuffer";
  void *p = clEnqueueMapBuffer(kiln__queue(rt), kiln__buffer_mem(buf), wait, map, at,
                               buf->bytes, 0, NULL, wait ? NULL : &ev, &err);
  if (p && ev && (err = kiln__wait_command(ev)) != CL_SUCCESS) {
    clEnqueueUnmapMemObject(kiln__queue(rt), kiln__buffer_mem(buf), p, 0, NULL, NULL);
    p = NULL;
    call = "clWaitForEvents";
  }
  if (ev)
    clReleaseEvent(ev);
  if (!p)
    return kiln__fail_cl(rt, err, call, "%s: mapping %zu %s elements", fn, buf->count,
                         kiln_dtype_name(buf->dtype));
  buf->mapped = p;
  *host = p;
  return KILN_OK;
}

KILN_API kiln_status kiln_buffer_unmap(kiln_buffer *buf, void *host)
{
  static const char fn[] = "kiln_buffer_unmap";
  if (!buf)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: buf is NULL", fn);
  if (!buf->mapped || host != buf->mapped)
    return kiln__fail(buf->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %p is not where the buffer is mapped (%p); expected the "
                      "pointer kiln_buffer_map() gave",
                      fn, host, buf->mapped);
  cl_event ev = NULL;
  cl_int err = clEnqueueUnmapMemObject(kiln__queue(buf->rt), kiln__buffer_mem(buf), host,
                                       0, NULL, &ev);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(buf->rt, err, "clEnqueueUnmapMemObject", "%s", fn);
  buf->mapped = NULL;
  return kiln__runtime_track(buf->rt, ev, fn);
}
