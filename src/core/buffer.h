/*
 * buffer.h — device buffers and views (buffer.c, buffer_view.c); the
 * transfers are ops/transfer.h.
 */
#ifndef KILN_CORE_BUFFER_H
#define KILN_CORE_BUFFER_H

#include "core/runtime.h"

struct kiln_buffer {
  kiln_runtime *rt;
  cl_mem mem;
  kiln_dtype dtype;
  size_t count, bytes;
  size_t block;                  /* the bytes mem holds: bytes rounded up to
                                    its size class when pooled (pool.c) */
  int wrapped;                   /* mem is the caller's host memory, or a view's
                                    sub-buffer: never pooled */
  struct kiln_buffer *next_free; /* in the pool's list of its class */
  cl_event *fence;               /* in the pool: kiln__fence() of its release */
  cl_uint nfence;
  struct kiln_buffer *parent; /* a view's buffer (buffer_view.c), else NULL */
  size_t views;               /* views of this buffer alive; under rt->lock */
  size_t view_offset;         /* a view's first element in parent */
  cl_mem *kept;               /* dead views' sub-buffers (buffer_view.c) */
  size_t nkept;               /* under rt->lock */
  void *mapped;               /* the host pointer while mapped, else NULL */
};

/* KILN_OK when [offset, offset + count) lies in buf, else the failure of
 * fn, naming the buffer as `name` (buffer.c). */
kiln_status kiln__check_range(const kiln_buffer *buf, const char *fn, const char *name,
                              size_t offset, size_t count);

/* Counts a view as a live buffer of no bytes of its own, or one gone
 * (delta -1); takes the runtime's lock (buffer.c). */
void kiln__buffer_count_view(kiln_runtime *rt, int delta);

/* The memory that holds buf's elements, and the first of them in it: for a
 * view its buffer's memory and its offset, else buf's own and 0. kiln's own
 * calls (operations, transfers, fills, maps) take these, never a view's
 * sub-buffer, which some drivers cannot release (buffer_view.c). */
static inline cl_mem kiln__buffer_mem(const kiln_buffer *b)
{
  return !b ? NULL : b->parent ? b->parent->mem : b->mem;
}
static inline size_t kiln__buffer_first(const kiln_buffer *b)
{
  return b && b->parent ? b->view_offset : 0;
}

/* A view's own sub-buffer, made on first use (buffer_view.c): for
 * kiln_buffer_cl_mem() and user kernels. A buffer's own memory for a buffer.
 * Fails, naming fn, when the view's offset is not a multiple of the device's
 * base-address alignment or the driver refuses. */
kiln_status kiln__buffer_cl_mem(const kiln_buffer *buf, const char *fn, cl_mem *out);

/* Releases buf's memory and the sub-buffers kept for it (buffer_view.c):
 * the parent first, then the sub-buffers, newest first. */
void kiln__buffer_release_mem(kiln_buffer *buf);

/* Releases a view (buffer_view.c): its sub-buffer, its count. */
void kiln__view_destroy(kiln_buffer *v);

/* Checks an operation's operand before anything is enqueued: not NULL,
 * rt's, of dtype `want`, and holding at least `need` elements. fn names the
 * call and `name` the operand ("x", "buffer A"); `detail` (or NULL) says
 * where `need` comes from. The one place these messages are worded
 * (buffer.c). */
kiln_status kiln__check_operand(kiln_runtime *rt, const char *fn, const char *name,
                                const kiln_buffer *b, kiln_dtype want, size_t need,
                                const char *detail);

#endif /* KILN_CORE_BUFFER_H */
