/*
 * clfault.c — see clfault.h.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfault.h"

static struct {
  const char *fn;
  int countdown, times, hits;
  cl_int err;
} armed;

void clfault_arm(const char *fn, int nth, int times, cl_int err)
{
  armed.fn = fn;
  armed.countdown = nth;
  armed.times = times;
  armed.hits = 0;
  armed.err = err;
}

void clfault_disarm(void)
{
  armed.fn = NULL;
}

int clfault_hits(void)
{
  return armed.hits;
}

/* Whether this call of fn must fail. */
static int hit(const char *fn)
{
  if (!armed.fn || strcmp(armed.fn, fn) != 0)
    return 0;
  if (--armed.countdown > 0)
    return 0;
  if (armed.times-- <= 0) {
    armed.fn = NULL;
    return 0;
  }
  armed.hits++;
  return 1;
}

static void *real(const char *fn)
{
  void *p = dlsym(RTLD_NEXT, fn);
  if (!p) {
    fprintf(stderr, "clfault: no real %s\n", fn);
    abort();
  }
  return p;
}

/* Defines an entry point that returns cl_int. */
#define CLFAULT_INT(name, params, args)                                        \
  CL_API_ENTRY cl_int CL_API_CALL name params                                  \
  {                                                                            \
    static cl_int(CL_API_CALL * next) params;                                  \
    if (hit(#name))                                                            \
      return armed.err;                                                        \
    if (!next)                                                                 \
      *(void **)&next = real(#name);                                           \
    return next args;                                                          \
  }

/* Defines an entry point that returns an object and reports through errp. */
#define CLFAULT_OBJ(type, name, params, args, errp)                            \
  CL_API_ENTRY type CL_API_CALL name params                                    \
  {                                                                            \
    static type(CL_API_CALL * next) params;                                    \
    if (hit(#name)) {                                                          \
      if (errp)                                                                \
        *(errp) = armed.err;                                                   \
      return NULL;                                                             \
    }                                                                          \
    if (!next)                                                                 \
      *(void **)&next = real(#name);                                           \
    return next args;                                                          \
  }

CLFAULT_INT(clGetPlatformIDs,
            (cl_uint n, cl_platform_id *ids, cl_uint *nret), (n, ids, nret))
CLFAULT_INT(clGetPlatformInfo,
            (cl_platform_id p, cl_platform_info q, size_t s, void *v, size_t *r),
            (p, q, s, v, r))
CLFAULT_INT(clGetDeviceIDs,
            (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *ids,
             cl_uint *nret),
            (p, t, n, ids, nret))
CLFAULT_INT(clGetDeviceInfo,
            (cl_device_id d, cl_device_info q, size_t s, void *v, size_t *r),
            (d, q, s, v, r))
CLFAULT_OBJ(cl_context, clCreateContext,
            (const cl_context_properties *p, cl_uint n, const cl_device_id *d,
             void(CL_CALLBACK *f)(const char *, const void *, size_t, void *),
             void *u, cl_int *e),
            (p, n, d, f, u, e), e)
CLFAULT_OBJ(cl_mem, clCreateBuffer,
            (cl_context c, cl_mem_flags f, size_t s, void *h, cl_int *e),
            (c, f, s, h, e), e)
CLFAULT_INT(clEnqueueMigrateMemObjects,
            (cl_command_queue q, cl_uint n, const cl_mem *m,
             cl_mem_migration_flags f, cl_uint nw, const cl_event *w, cl_event *ev),
            (q, n, m, f, nw, w, ev))
CLFAULT_INT(clEnqueueFillBuffer,
            (cl_command_queue q, cl_mem m, const void *p, size_t ps, size_t o,
             size_t s, cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, p, ps, o, s, nw, w, ev))
CLFAULT_INT(clEnqueueWriteBuffer,
            (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t s,
             const void *p, cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, b, o, s, p, nw, w, ev))
CLFAULT_INT(clEnqueueReadBuffer,
            (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t s, void *p,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, b, o, s, p, nw, w, ev))
/* clGetEventInfo does not fail when armed: it reports a failed command. */
void clfault_arm_event_status(int nth, cl_int status)
{
  clfault_arm("clGetEventInfo", nth, 1, status);
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventInfo(cl_event ev, cl_event_info q,
                                               size_t s, void *v, size_t *r)
{
  static cl_int(CL_API_CALL * next)(cl_event, cl_event_info, size_t, void *,
                                    size_t *);
  if (q == CL_EVENT_COMMAND_EXECUTION_STATUS && s >= sizeof(cl_int) && v &&
      hit("clGetEventInfo")) {
    *(cl_int *)v = armed.err;
    return CL_SUCCESS;
  }
  if (!next)
    *(void **)&next = real("clGetEventInfo");
  return next(ev, q, s, v, r);
}

CLFAULT_INT(clWaitForEvents, (cl_uint n, const cl_event *ev), (n, ev))
CLFAULT_INT(clFinish, (cl_command_queue q), (q))
