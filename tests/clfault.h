/*
 * clfault.h — makes a chosen OpenCL call fail, to test kiln's error paths.
 *
 * Link clfault.c into a test executable: its definitions of the OpenCL entry
 * points below take precedence over libOpenCL's for libkiln (the executable
 * comes first in symbol lookup), and forward to the real ones unless armed.
 */
#ifndef KILN_TESTS_CLFAULT_H
#define KILN_TESTS_CLFAULT_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

/* From now on, the nth call (1 for the next one) of the OpenCL function
 * named fn fails with err, and so do the `times - 1` calls after it. Calls of
 * other functions are unaffected. One function is armed at a time. */
void clfault_arm(const char *fn, int nth, int times, cl_int err);

/* From now on, the nth query of an event's CL_EVENT_COMMAND_EXECUTION_STATUS
 * answers `status` (a negative error code), as a command that failed on the
 * device would. Arms clGetEventInfo, replacing any other armed function. */
void clfault_arm_event_status(int nth, cl_int status);

/* Forwards every call again. */
void clfault_disarm(void);

/* How many calls of the armed function failed so far. */
int clfault_hits(void);

#endif /* KILN_TESTS_CLFAULT_H */
