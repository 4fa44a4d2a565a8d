/*
 * clfault.h — makes chosen OpenCL calls fail, and counts the OpenCL objects
 * alive, to test kiln's error paths.
 *
 * Link clfault.c into a test executable (with export_dynamic): its
 * definitions of the OpenCL entry points take precedence over libOpenCL's for
 * libkiln and for the libraries kiln calls (CLBlast, clFFT), as the
 * executable comes first in symbol lookup, and forward to the real ones
 * unless armed.
 *
 * Two ways to arm, one at a time:
 *  - one function: clfault_arm("clCreateBuffer", n, times, err);
 *  - one class of calls: clfault_arm_class(CLFAULT_ALLOC, n, err) fails the
 *    nth call of any function of the class (see clfault_class).
 */
#ifndef KILN_TESTS_CLFAULT_H
#define KILN_TESTS_CLFAULT_H

#ifndef CL_TARGET_OPENCL_VERSION
#  define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

/* From now on, the nth call (1 for the next one) of the OpenCL function
 * named fn fails with err, and so do the `times - 1` calls after it. Calls of
 * other functions are unaffected. Replaces whatever was armed. */
void clfault_arm(const char *fn, int nth, int times, cl_int err);

/* From now on, the nth query of an event's CL_EVENT_COMMAND_EXECUTION_STATUS
 * answers `status` (a negative error code), as a command that failed on the
 * device would. Arms clGetEventInfo, replacing any other armed function. */
void clfault_arm_event_status(int nth, cl_int status);

/* The classes of calls a fault can be injected into. */
typedef enum clfault_class {
  CLFAULT_ALLOC,   /* clCreateContext*, clCreateCommandQueue*, clCreateBuffer,
                      clCreateSubBuffer, clCreateImage, clCreateKernel,
                      clCreateKernelsInProgram, clCreateProgramWith* */
  CLFAULT_ENQUEUE, /* every clEnqueue* that is not a map or unmap */
  CLFAULT_BUILD,   /* clBuildProgram, clCompileProgram, clLinkProgram */
  CLFAULT_MAP,     /* clEnqueueMapBuffer, clEnqueueMapImage,
                      clEnqueueUnmapMemObject, clSVMAlloc */
  CLFAULT_CLASSES
} clfault_class;

/* "alloc", "enqueue", "build", "map". */
const char *clfault_class_name(clfault_class k);

/* From now on, the nth call (1 for the next one) of any function of class k
 * fails with err, once; the calls after it are forwarded. Replaces whatever
 * was armed. */
void clfault_arm_class(clfault_class k, int nth, cl_int err);

/* Forwards every call again. */
void clfault_disarm(void);

/* How many calls of what is armed failed so far. */
int clfault_hits(void);

/* The function whose call failed last, and the file of the library that
 * made the call ("" when unknown); NULL before any failure. */
const char *clfault_failed_function(void);
const char *clfault_failed_caller(void);

/* Calls of each class made since clfault_reset_calls(), failed ones too. */
void clfault_reset_calls(void);
long clfault_calls(clfault_class k);

/* Only calls made from a shared object whose file name contains `lib`
 * (e.g. "libkiln.so") count for clfault_calls() and clfault_arm_class();
 * NULL: every caller. One-function arming is not filtered. */
void clfault_only_from(const char *lib);

/* Sub-buffers made (clCreateSubBuffer) over the whole process, and how many
 * of them were released while a reference to their parent was still held:
 * what NVIDIA's driver 580 crashes on. */
long clfault_sub_buffers(void);
long clfault_sub_buffers_released_early(void);

/* The kinds of OpenCL objects whose references clfault counts. */
typedef enum clfault_object {
  CLFAULT_MEM,
  CLFAULT_KERNEL,
  CLFAULT_PROGRAM,
  CLFAULT_EVENT,
  CLFAULT_QUEUE,
  CLFAULT_CONTEXT,
  CLFAULT_OBJECTS
} clfault_object;

/* "mem", "kernel", "program", "event", "queue", "context". */
const char *clfault_object_name(clfault_object o);

/* References held now: objects created (a successful clCreate*, an event
 * returned by an enqueue), plus successful retains, minus successful
 * releases, over the whole process, whoever made the calls. An object that
 * was created and never released keeps this above where it started. */
long clfault_live(clfault_object o);

#endif /* KILN_TESTS_CLFAULT_H */
