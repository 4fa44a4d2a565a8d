/*
 * error.h — recording failures for kiln_last_error() (error.c), and the kiln_status
 * of an OpenCL error (status.c).
 */
#ifndef KILN_BASE_ERROR_H
#define KILN_BASE_ERROR_H

#include "base/util.h"

/* ---- errors (error.c) --------------------------------------------------- */

/* Records a failure's message for kiln_last_error(rt), or for the calling
 * thread when rt is NULL, and returns status so callers can
 * `return kiln__fail(...)`: the call kiln.h offers libraries built on kiln. */
#define kiln__fail kiln_last_error_set

/* The same for a failed OpenCL call: the status comes from the CL error, and
 * the message ends with "<call> failed with <CL_NAME> (<code>)". fmt says
 * what kiln was doing. */
kiln_status kiln__fail_cl(kiln_runtime *rt, cl_int err, const char *call, const char *fmt,
                          ...) KILN__PRINTF(4, 5);

/* KILN_ERR_UNSUPPORTED: `what` (e.g. "float64", "mean of int32, whose result
 * is float64,") needs fp64, which rt's device has not. The message names
 * the best device of the machine that has it and the KILN_DEVICE that picks
 * it, or says that none has. */
kiln_status kiln__no_fp64(kiln_runtime *rt, const char *func, const char *what);

/* The kiln_status an OpenCL error maps to (status.c). */
kiln_status kiln__status_from_cl(cl_int err);

#endif /* KILN_BASE_ERROR_H */
