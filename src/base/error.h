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

/* Where a runtime keeps the failures recorded on it. error.c formats the
 * messages and keeps each thread's; it knows nothing of a runtime's insides:
 * core registers its sink (kiln__error_sink_set) when it creates a runtime,
 * before any kiln_runtime exists to fail on. */
typedef struct kiln__error_sink {
  /* rt's serial: unique in the process, never reused */
  uint64_t (*serial)(const kiln_runtime *rt);
  /* stores msg (taking ownership) as rt's last failure of any thread */
  void (*store)(kiln_runtime *rt, char *msg);
  /* a copy of rt's last failure of any thread (the caller frees it), or
   * NULL: none, or no host memory */
  char *(*copy)(const kiln_runtime *rt);
} kiln__error_sink;

/* Registers the sink (idempotent, thread-safe; sink outlives the process's
 * use of kiln: a static const). */
void kiln__error_sink_set(const kiln__error_sink *sink);

/* The kiln_status an OpenCL error maps to (status.c). */
kiln_status kiln__status_from_cl(cl_int err);

#endif /* KILN_BASE_ERROR_H */
