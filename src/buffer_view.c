/*
 * buffer_view.c — views of part of a buffer, and mapping a buffer into host
 * memory.
 *
 * A view is a kiln_buffer over an OpenCL sub-buffer of its buffer's memory
 * (clCreateSubBuffer), so every call that takes a buffer takes a view: the
 * operations, user kernels and transfers see its first element at index 0.
 * OpenCL asks the sub-buffer's origin to be a multiple of the device's
 * base-address alignment (CL_DEVICE_MEM_BASE_ADDR_ALIGN: 128 bytes on PoCL,
 * 256 to 4096 on GPUs), which the view's offset must then be. A view holds
 * no memory of its own: it counts as a live buffer of 0 bytes, and keeps its
 * buffer from being destroyed (or pooled) until the view is. A view of a
 * view is a view of the first buffer (OpenCL has no sub-buffer of a
 * sub-buffer).
 *
 * Mapping is clEnqueueMapBuffer on the runtime's queue, blocking: it waits
 * for the work enqueued before it, and on a device that shares host memory
 * (a CPU device, an integrated GPU) gives the buffer's own memory, with no
 * copy. While a buffer is mapped, kiln refuses it to every command
 * (transfers, operations, kernels), as OpenCL leaves such use undefined;
 * kiln_buffer_unmap() enqueues the unmap, and commands enqueued after it
 * see what the host wrote.
 */
#include "internal.h"

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
  size_t first = buf->view_offset + offset, es = kiln_dtype_size(buf->dtype);
  cl_uint align_bits = 0;
  cl_int err =
    clGetDeviceInfo(kiln__runtime_device(rt)->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                    sizeof align_bits, &align_bits, NULL);
  size_t align = err == CL_SUCCESS && align_bits >= 8 ? align_bits / 8 : 1;
  if (first * es % align != 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: a view from element %zu starts %zu bytes into its buffer, "
                      "not a multiple of the device's base-address alignment of %zu "
                      "bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN); expected an offset that "
                      "is a multiple of %zu %s elements",
                      fn, first, first * es, align, align % es ? align : align / es,
                      align % es ? "bytes of" : kiln_dtype_name(buf->dtype));
  kiln_buffer *v = calloc(1, sizeof *v);
  if (!v)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  cl_buffer_region region = {first * es, count * es};
  v->mem = clCreateSubBuffer(root->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                             &region, &err);
  if (!v->mem) {
    free(v);
    return kiln__fail_cl(rt, err, "clCreateSubBuffer",
                         "%s: %zu %s elements from element %zu of a buffer of %zu", fn,
                         count, kiln_dtype_name(buf->dtype), first, root->count);
  }
  v->rt = rt;
  v->dtype = buf->dtype;
  v->count = count;
  v->bytes = count * es;
  v->wrapped = 1; /* never pooled */
  v->parent = root;
  v->view_offset = first;
  pthread_mutex_lock(&rt->lock);
  root->views++;
  pthread_mutex_unlock(&rt->lock);
  kiln__buffer_count_view(rt, 1);
  *out = v;
  return KILN_OK;
}

void kiln__view_destroy(kiln_buffer *v)
{
  kiln_runtime *rt = v->rt;
  clReleaseMemObject(v->mem); /* freed once enqueued commands are done */
  pthread_mutex_lock(&rt->lock);
  v->parent->views--;
  pthread_mutex_unlock(&rt->lock);
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
  void *p = clEnqueueMapBuffer(kiln__queue(rt), buf->mem, CL_TRUE, map, 0, buf->bytes, 0,
                               NULL, NULL, &err);
  if (!p)
    return kiln__fail_cl(rt, err, "clEnqueueMapBuffer", "%s: mapping %zu %s elements", fn,
                         buf->count, kiln_dtype_name(buf->dtype));
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
  cl_int err =
    clEnqueueUnmapMemObject(kiln__queue(buf->rt), buf->mem, host, 0, NULL, &ev);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(buf->rt, err, "clEnqueueUnmapMemObject", "%s", fn);
  buf->mapped = NULL;
  return kiln__runtime_track(buf->rt, ev, fn);
}
