/*
 * kiln_cl.h — OpenCL interoperability for kiln.
 *
 * The handles kiln holds, for programs that mix kiln with their own OpenCL
 * calls. They stay owned by kiln: retain them (clRetainContext, ...) to keep
 * them past the runtime or buffer they came from, and never release what you
 * did not retain. Work you enqueue on kiln's queue is ordered with kiln's own.
 *
 * CL_TARGET_OPENCL_VERSION defaults to 120 here, kiln's baseline; define it
 * before including this header to use a later API.
 */
#ifndef KILN_CL_H
#define KILN_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#  define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! kiln_runtime_cl_platform(), _device(), _context(), _queue() :
 * @return : the runtime's OpenCL objects, owned by the runtime; NULL for
 *           rt == NULL. The queue is in order, with profiling enabled. */
KILN_API cl_platform_id kiln_runtime_cl_platform(const kiln_runtime *rt);
KILN_API cl_device_id kiln_runtime_cl_device(const kiln_runtime *rt);
KILN_API cl_context kiln_runtime_cl_context(const kiln_runtime *rt);
KILN_API cl_command_queue kiln_runtime_cl_queue(const kiln_runtime *rt);

/*! kiln_buffer_cl_mem() :
 * @return : the buffer's memory object, owned by the buffer; NULL for NULL.
 *           For a view (kiln_buffer_view()), an OpenCL sub-buffer of its
 *           elements, made on the first call and kept while the view lives
 *           (on NVIDIA's driver, until its buffer's memory is released);
 *           NULL when the view's offset is not a multiple of the device's
 *           base-address alignment (CL_DEVICE_MEM_BASE_ADDR_ALIGN) or the
 *           driver refuses, with kiln_last_error() of the buffer's runtime
 *           saying why. kiln's own calls never need it. */
KILN_API cl_mem kiln_buffer_cl_mem(const kiln_buffer *buf);

#ifdef __cplusplus
}
#endif

#endif /* KILN_CL_H */
