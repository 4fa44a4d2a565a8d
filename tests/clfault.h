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

/* Forwards every call again. */
void clfault_disarm(void);

/* How many calls of the armed function failed so far. */
int clfault_hits(void);

#endif /* KILN_TESTS_CLFAULT_H */
