/*
 * memory.h — device memory that cached plans hold outside any kiln_buffer
 * (buffer.c).
 */
#ifndef KILN_CORE_MEMORY_H
#define KILN_CORE_MEMORY_H

#include "base/util.h"

/* ---- memory that cached plans hold (buffer.c) --------------------------- */

/* A device buffer of `bytes` (> 0) that a cached plan holds outside any
 * kiln_buffer (kiln's FFT scratch and twiddles, VkFFT's and clFFT's
 * temporary buffers): clCreateBuffer(flags, bytes, host), made resident at
 * once (host's contents kept with CL_MEM_COPY_HOST_PTR), counted in
 * rt->mem_plans against the budget buffers count against. When the budget
 * or the driver has no room, it trims the pool, then releases the cached
 * FFT plans no call is using, trying again after each (and waits as
 * KILN_OOM_WAIT says); then it fails, KILN_ERR_OUT_OF_MEMORY for want of
 * memory, with "<op>: its <what> of N bytes (X) ..." and why. *out is the
 * buffer, or NULL. Never called with rt->lock held. */
kiln_status kiln__plan_mem_create(kiln_runtime *rt, const char *op, const char *what,
                                  cl_mem_flags flags, size_t bytes, void *host,
                                  cl_mem *out);

/* Releases a buffer of kiln__plan_mem_create() and its bytes of
 * rt->mem_plans. NULL is ignored. */
void kiln__plan_mem_release(kiln_runtime *rt, cl_mem mem, size_t bytes);

/* An operation's workspace: kiln_buffer_create(), whose failure names the
 * operation (op, "kiln_gemm") and the workspace (what, "packing
 * workspace") before the creation's own message. */
kiln_status kiln__workspace(kiln_runtime *rt, const char *op, const char *what,
                            kiln_dtype dtype, size_t count, struct kiln_buffer **out);

#endif /* KILN_CORE_MEMORY_H */
