/*
 * rank.h — what kiln derives from a device record, how it ranks devices, and the
 * table of driver facts kiln works around (rank.c).
 */
#ifndef KILN_DEVICE_RANK_H
#define KILN_DEVICE_RANK_H

#include "base/util.h"

/* ---- ranking (rank.c) ---------------------------------------------------- */

/* Fills the derived fields of a record (vendor_family, integrated,
 * is_simulator, opencl_version, peak_gflops) from the fields the driver
 * reported. Pure: tests call it on records of devices we do not have. */
void kiln__device_derive(kiln_device_info *info);

/* How many iterations of its main loop one work-item may run, on a driver
 * that silently ends a work-item's loops after a fixed count in all; 0 where
 * there is no such limit. Mesa's llvmpipe (rusticl's CPU device) stops at
 * 65535; this is half that, leaving room for the loops kiln does not count.
 * kiln's operations keep within it, or refuse the problem, saying why. */
size_t kiln__loop_limit(const kiln_device_info *info);

/* Why kiln keeps no binaries of its own on this driver, which keeps a build
 * cache of its own where reading binaries back costs more than it saves
 * (static text), or NULL where kiln's cache pays (rank.c). */
const char *kiln__driver_cache(const kiln_device_info *info);

/* The float lanes of the device's widest vector registers, which the CPU
 * rules shape kernels by (tuning.c): CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT,
 * save where a driver is known to report more than its target has (PoCL
 * names its target CPU and reports 16 for all of them). Pure. */
unsigned kiln__vector_lanes_float(const kiln_device_info *info);

/* Whether the driver crashes releasing an OpenCL sub-buffer while its
 * parent lives: kiln then keeps a view's sub-buffer (made only for
 * kiln_buffer_cl_mem() and user kernels) until its buffer's memory is
 * released, and releases the parent first (buffer_view.c). */
int kiln__keeps_sub_buffers(const kiln_device_info *info);

/* Whether the driver's waits on a queue may return before the commands
 * finished: clFinish(), and the blocking reads, writes and maps, when
 * another thread or an earlier clFlush handed the commands to the driver's
 * worker first. kiln then waits for an event of the command (or a marker)
 * instead (kiln__finish_queue, kiln__wait_command in stream.c). */
int kiln__blocking_returns_early(const kiln_device_info *info);

#endif /* KILN_DEVICE_RANK_H */
