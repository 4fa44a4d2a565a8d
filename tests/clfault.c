/*
 * clfault.c — see clfault.h.
 *
 * Every entry point below forwards to the real one (the next definition in
 * symbol lookup: libOpenCL's) unless it is armed to fail, and keeps count of
 * the references to OpenCL objects it sees made and dropped.
 */
#define _GNU_SOURCE /* RTLD_NEXT, dladdr */
/* The 2.x entry points (clCreateCommandQueueWithProperties, clSVMAlloc,
 * clCreateProgramWithIL) are interposed too, in case a library uses them. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfault.h"

#define NO_CLASS (-1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* What is armed: one function (fn) or one class (klass); guarded by lock. */
static struct {
  const char *fn;
  int klass;
  int countdown, times, hits;
  cl_int err;
  const char *failed, *caller;
} armed = {.klass = NO_CLASS};

static long calls[CLFAULT_CLASSES]; /* guarded by lock */
static char *only_from;             /* guarded by lock */
static atomic_long live[CLFAULT_OBJECTS];

void clfault_arm(const char *fn, int nth, int times, cl_int err)
{
  pthread_mutex_lock(&lock);
  armed.fn = fn;
  armed.klass = NO_CLASS;
  armed.countdown = nth;
  armed.times = times;
  armed.hits = 0;
  armed.err = err;
  pthread_mutex_unlock(&lock);
}

void clfault_arm_class(clfault_class k, int nth, cl_int err)
{
  pthread_mutex_lock(&lock);
  armed.fn = NULL;
  armed.klass = (int)k;
  armed.countdown = nth;
  armed.times = 1;
  armed.hits = 0;
  armed.err = err;
  pthread_mutex_unlock(&lock);
}

void clfault_disarm(void)
{
  pthread_mutex_lock(&lock);
  armed.fn = NULL;
  armed.klass = NO_CLASS;
  pthread_mutex_unlock(&lock);
}

int clfault_hits(void)
{
  pthread_mutex_lock(&lock);
  int hits = armed.hits;
  pthread_mutex_unlock(&lock);
  return hits;
}

const char *clfault_failed_function(void)
{
  return armed.failed;
}

const char *clfault_failed_caller(void)
{
  return armed.caller;
}

void clfault_reset_calls(void)
{
  pthread_mutex_lock(&lock);
  memset(calls, 0, sizeof calls);
  pthread_mutex_unlock(&lock);
}

long clfault_calls(clfault_class k)
{
  pthread_mutex_lock(&lock);
  long n = calls[k];
  pthread_mutex_unlock(&lock);
  return n;
}

void clfault_only_from(const char *lib)
{
  pthread_mutex_lock(&lock);
  free(only_from);
  only_from = lib ? strdup(lib) : NULL;
  pthread_mutex_unlock(&lock);
}

long clfault_live(clfault_object o)
{
  return atomic_load(&live[o]);
}

const char *clfault_class_name(clfault_class k)
{
  static const char *const names[] = {"alloc", "enqueue", "build", "map"};
  return (unsigned)k < CLFAULT_CLASSES ? names[k] : "invalid";
}

const char *clfault_object_name(clfault_object o)
{
  static const char *const names[] = {"mem",   "kernel", "program",
                                      "event", "queue",  "context"};
  return (unsigned)o < CLFAULT_OBJECTS ? names[o] : "invalid";
}

/* The file of the shared object holding code address pc ("" if none). */
static const char *object_of(const void *pc)
{
  Dl_info info;
  return pc && dladdr(pc, &info) && info.dli_fname ? info.dli_fname : "";
}

/* Whether this call of fn, of class klass, from code at caller, must fail.
 * Counts the call for its class. */
static int hit(const char *fn, int klass, const void *caller)
{
  int fail = 0;
  pthread_mutex_lock(&lock);
  if (klass != NO_CLASS && (!only_from || strstr(object_of(caller), only_from))) {
    calls[klass]++;
    if (armed.klass == klass && armed.countdown > 0 && --armed.countdown == 0)
      fail = 1;
  }
  if (armed.fn && strcmp(armed.fn, fn) == 0 && --armed.countdown <= 0) {
    if (armed.times-- <= 0)
      armed.fn = NULL;
    else
      fail = 1;
  }
  if (fail) {
    armed.hits++;
    armed.failed = fn;
    armed.caller = object_of(caller);
  }
  pthread_mutex_unlock(&lock);
  return fail;
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

#define CALLER __builtin_return_address(0)

/* The real entry point, looked up once: threads may race to the first
 * call of one, so the cache is atomic (dlsym gives each the same). */
static void *resolve(_Atomic(void *) *slot, const char *fn)
{
  void *p = atomic_load(slot);
  if (!p) {
    p = real(fn);
    atomic_store(slot, p);
  }
  return p;
}

/* Declares `next`, the real entry point `name` returning `ret`. */
#define LOOKUP(ret, name, params)                                                        \
  static _Atomic(void *) next_slot_;                                                     \
  ret(CL_API_CALL *next) params;                                                         \
  *(void **)&next = resolve(&next_slot_, #name)

#define NEXT(name, params) LOOKUP(cl_int, name, params)

/* An entry point that returns cl_int, of class klass (NO_CLASS: a query);
 * evp: its cl_event *out parameter, or NULL when it has none. */
#define CLFAULT_CALL(klass, name, params, args, evp)                                     \
  CL_API_ENTRY cl_int CL_API_CALL name params                                            \
  {                                                                                      \
    if (hit(#name, klass, CALLER))                                                       \
      return armed.err;                                                                  \
    NEXT(name, params);                                                                  \
    cl_int err_ = next args;                                                             \
    cl_event *evp_ = (evp);                                                              \
    if (err_ == CL_SUCCESS && evp_ && *evp_)                                             \
      atomic_fetch_add(&live[CLFAULT_EVENT], 1);                                         \
    return err_;                                                                         \
  }

#define CLFAULT_INT(name, params, args) CLFAULT_CALL(NO_CLASS, name, params, args, NULL)
#define CLFAULT_ENQ(name, params, args, evp)                                             \
  CLFAULT_CALL(CLFAULT_ENQUEUE, name, params, args, evp)

/* An entry point that returns a new object of kind `object`, reporting
 * through errp, of class klass. */
#define CLFAULT_NEW(klass, object, type, name, params, args, errp)                       \
  CL_API_ENTRY type CL_API_CALL name params                                              \
  {                                                                                      \
    if (hit(#name, klass, CALLER)) {                                                     \
      if (errp)                                                                          \
        *(errp) = armed.err;                                                             \
      return NULL;                                                                       \
    }                                                                                    \
    LOOKUP(type, name, params);                                                          \
    type obj_ = next args;                                                               \
    if (obj_)                                                                            \
      atomic_fetch_add(&live[object], 1);                                                \
    return obj_;                                                                         \
  }

/* ---- sub-buffers and their parents -----------------------------------------
 * Each sub-buffer made, with its parent; each parent's references, counted
 * from the first sub-buffer made of it (its creator's one, plus retains,
 * minus releases seen since). A sub-buffer released while its parent has
 * references left is what NVIDIA's driver crashes on (kiln's
 * kiln__keeps_sub_buffers()). Guarded by lock. */
#define MAX_SUBS 4096
static struct {
  const void *sub, *parent;
} subs[MAX_SUBS];
static struct {
  const void *parent;
  long refs;
} parents[MAX_SUBS];
static size_t nsubs, nparents;
static long subs_made, subs_early;

static void sub_made(const void *sub, const void *parent)
{
  pthread_mutex_lock(&lock);
  subs_made++;
  size_t p = 0;
  while (p < nparents && parents[p].parent != parent)
    p++;
  if (p == nparents && nparents < MAX_SUBS) {
    parents[nparents].parent = parent;
    parents[nparents++].refs = 1;
  } else if (p < nparents && parents[p].refs <= 0)
    parents[p].refs = 1; /* the address of a released one, made again */
  if (nsubs < MAX_SUBS) {
    subs[nsubs].sub = sub;
    subs[nsubs++].parent = parent;
  }
  pthread_mutex_unlock(&lock);
}

/* A successful retain (+1) or release (-1) of any object o. */
static void ref_seen(const void *o, int delta)
{
  pthread_mutex_lock(&lock);
  for (size_t p = 0; p < nparents; p++)
    if (parents[p].parent == o)
      parents[p].refs += delta;
  for (size_t i = 0; delta < 0 && i < nsubs; i++)
    if (subs[i].sub == o) {
      for (size_t p = 0; p < nparents; p++)
        if (parents[p].parent == subs[i].parent && parents[p].refs > 0)
          subs_early++;
      subs[i] = subs[--nsubs];
      break;
    }
  pthread_mutex_unlock(&lock);
}

long clfault_sub_buffers(void)
{
  pthread_mutex_lock(&lock);
  long n = subs_made;
  pthread_mutex_unlock(&lock);
  return n;
}

long clfault_sub_buffers_released_early(void)
{
  pthread_mutex_lock(&lock);
  long n = subs_early;
  pthread_mutex_unlock(&lock);
  return n;
}

/* clRetain<what> and clRelease<what>. */
#define CLFAULT_REF(what, type, object)                                                  \
  CL_API_ENTRY cl_int CL_API_CALL clRetain##what(type o)                                 \
  {                                                                                      \
    NEXT(clRetain##what, (type));                                                        \
    cl_int err = next(o);                                                                \
    if (err == CL_SUCCESS) {                                                             \
      atomic_fetch_add(&live[object], 1);                                                \
      ref_seen(o, 1);                                                                    \
    }                                                                                    \
    return err;                                                                          \
  }                                                                                      \
  CL_API_ENTRY cl_int CL_API_CALL clRelease##what(type o)                                \
  {                                                                                      \
    NEXT(clRelease##what, (type));                                                       \
    cl_int err = next(o);                                                                \
    if (err == CL_SUCCESS) {                                                             \
      atomic_fetch_sub(&live[object], 1);                                                \
      ref_seen(o, -1);                                                                   \
    }                                                                                    \
    return err;                                                                          \
  }

/* ---- queries -------------------------------------------------------------- */

CLFAULT_INT(clGetPlatformIDs, (cl_uint n, cl_platform_id *ids, cl_uint *nret),
            (n, ids, nret))
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

/* clGetEventInfo does not fail when armed: it reports a failed command. */
void clfault_arm_event_status(int nth, cl_int status)
{
  clfault_arm("clGetEventInfo", nth, 1, status);
}

CL_API_ENTRY cl_int CL_API_CALL clGetEventInfo(cl_event ev, cl_event_info q, size_t s,
                                               void *v, size_t *r)
{
  if (q == CL_EVENT_COMMAND_EXECUTION_STATUS && s >= sizeof(cl_int) && v &&
      hit("clGetEventInfo", NO_CLASS, CALLER)) {
    *(cl_int *)v = armed.err;
    return CL_SUCCESS;
  }
  LOOKUP(cl_int, clGetEventInfo, (cl_event, cl_event_info, size_t, void *, size_t *));
  return next(ev, q, s, v, r);
}

CLFAULT_INT(clWaitForEvents, (cl_uint n, const cl_event *ev), (n, ev))
CLFAULT_INT(clFinish, (cl_command_queue q), (q))

/* ---- allocations ---------------------------------------------------------- */

CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_CONTEXT, cl_context, clCreateContext,
            (const cl_context_properties *p, cl_uint n, const cl_device_id *d,
             void(CL_CALLBACK *f)(const char *, const void *, size_t, void *), void *u,
             cl_int *e),
            (p, n, d, f, u, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_CONTEXT, cl_context, clCreateContextFromType,
            (const cl_context_properties *p, cl_device_type t,
             void(CL_CALLBACK *f)(const char *, const void *, size_t, void *), void *u,
             cl_int *e),
            (p, t, f, u, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_QUEUE, cl_command_queue, clCreateCommandQueue,
            (cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int *e),
            (c, d, p, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_QUEUE, cl_command_queue,
            clCreateCommandQueueWithProperties,
            (cl_context c, cl_device_id d, const cl_queue_properties *p, cl_int *e),
            (c, d, p, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_MEM, cl_mem, clCreateBuffer,
            (cl_context c, cl_mem_flags f, size_t s, void *h, cl_int *e), (c, f, s, h, e),
            e)
CL_API_ENTRY cl_mem CL_API_CALL clCreateSubBuffer(cl_mem m, cl_mem_flags f,
                                                  cl_buffer_create_type t, const void *i,
                                                  cl_int *e)
{
  if (hit("clCreateSubBuffer", CLFAULT_ALLOC, CALLER)) {
    if (e)
      *e = armed.err;
    return NULL;
  }
  LOOKUP(cl_mem, clCreateSubBuffer,
         (cl_mem, cl_mem_flags, cl_buffer_create_type, const void *, cl_int *));
  cl_mem sub = next(m, f, t, i, e);
  if (sub) {
    atomic_fetch_add(&live[CLFAULT_MEM], 1);
    sub_made(sub, m);
  }
  return sub;
}
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_MEM, cl_mem, clCreateImage,
            (cl_context c, cl_mem_flags f, const cl_image_format *fmt,
             const cl_image_desc *d, void *h, cl_int *e),
            (c, f, fmt, d, h, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_KERNEL, cl_kernel, clCreateKernel,
            (cl_program p, const char *name, cl_int *e), (p, name, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_PROGRAM, cl_program, clCreateProgramWithSource,
            (cl_context c, cl_uint n, const char **s, const size_t *l, cl_int *e),
            (c, n, s, l, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_PROGRAM, cl_program, clCreateProgramWithBinary,
            (cl_context c, cl_uint n, const cl_device_id *d, const size_t *l,
             const unsigned char **b, cl_int *status, cl_int *e),
            (c, n, d, l, b, status, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_PROGRAM, cl_program, clCreateProgramWithBuiltInKernels,
            (cl_context c, cl_uint n, const cl_device_id *d, const char *names,
             cl_int *e),
            (c, n, d, names, e), e)
CLFAULT_NEW(CLFAULT_ALLOC, CLFAULT_PROGRAM, cl_program, clCreateProgramWithIL,
            (cl_context c, const void *il, size_t l, cl_int *e), (c, il, l, e), e)

CL_API_ENTRY cl_int CL_API_CALL clCreateKernelsInProgram(cl_program p, cl_uint n,
                                                         cl_kernel *k, cl_uint *nret)
{
  if (hit("clCreateKernelsInProgram", CLFAULT_ALLOC, CALLER))
    return armed.err;
  NEXT(clCreateKernelsInProgram, (cl_program, cl_uint, cl_kernel *, cl_uint *));
  cl_uint made = 0;
  cl_int err = next(p, n, k, &made);
  if (nret)
    *nret = made;
  if (err == CL_SUCCESS && k)
    atomic_fetch_add(&live[CLFAULT_KERNEL], (long)made);
  return err;
}

/* ---- builds --------------------------------------------------------------- */

CLFAULT_CALL(CLFAULT_BUILD, clBuildProgram,
             (cl_program p, cl_uint n, const cl_device_id *d, const char *o,
              void(CL_CALLBACK *f)(cl_program, void *), void *u),
             (p, n, d, o, f, u), NULL)
CLFAULT_CALL(CLFAULT_BUILD, clCompileProgram,
             (cl_program p, cl_uint n, const cl_device_id *d, const char *o, cl_uint nh,
              const cl_program *h, const char **hn,
              void(CL_CALLBACK *f)(cl_program, void *), void *u),
             (p, n, d, o, nh, h, hn, f, u), NULL)
CLFAULT_NEW(CLFAULT_BUILD, CLFAULT_PROGRAM, cl_program, clLinkProgram,
            (cl_context c, cl_uint n, const cl_device_id *d, const char *o, cl_uint np,
             const cl_program *ps, void(CL_CALLBACK *f)(cl_program, void *), void *u,
             cl_int *e),
            (c, n, d, o, np, ps, f, u, e), e)

/* ---- enqueues ------------------------------------------------------------- */

CLFAULT_ENQ(clEnqueueMigrateMemObjects,
            (cl_command_queue q, cl_uint n, const cl_mem *m, cl_mem_migration_flags f,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, n, m, f, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueFillBuffer,
            (cl_command_queue q, cl_mem m, const void *p, size_t ps, size_t o, size_t s,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, p, ps, o, s, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueWriteBuffer,
            (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t s, const void *p,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, b, o, s, p, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueReadBuffer,
            (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t s, void *p,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, b, o, s, p, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueWriteBufferRect,
            (cl_command_queue q, cl_mem m, cl_bool b, const size_t *bo, const size_t *ho,
             const size_t *r, size_t brp, size_t bsp, size_t hrp, size_t hsp,
             const void *p, cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, b, bo, ho, r, brp, bsp, hrp, hsp, p, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueReadBufferRect,
            (cl_command_queue q, cl_mem m, cl_bool b, const size_t *bo, const size_t *ho,
             const size_t *r, size_t brp, size_t bsp, size_t hrp, size_t hsp, void *p,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, m, b, bo, ho, r, brp, bsp, hrp, hsp, p, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueCopyBuffer,
            (cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t n,
             cl_uint nw, const cl_event *w, cl_event *ev),
            (q, s, d, so, dof, n, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueCopyBufferRect,
            (cl_command_queue q, cl_mem s, cl_mem d, const size_t *so, const size_t *dof,
             const size_t *r, size_t srp, size_t ssp, size_t drp, size_t dsp, cl_uint nw,
             const cl_event *w, cl_event *ev),
            (q, s, d, so, dof, r, srp, ssp, drp, dsp, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueNDRangeKernel,
            (cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *off,
             const size_t *g, const size_t *l, cl_uint nw, const cl_event *w,
             cl_event *ev),
            (q, k, dims, off, g, l, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueTask,
            (cl_command_queue q, cl_kernel k, cl_uint nw, const cl_event *w,
             cl_event *ev),
            (q, k, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueMarkerWithWaitList,
            (cl_command_queue q, cl_uint nw, const cl_event *w, cl_event *ev),
            (q, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueBarrierWithWaitList,
            (cl_command_queue q, cl_uint nw, const cl_event *w, cl_event *ev),
            (q, nw, w, ev), ev)
CLFAULT_ENQ(clEnqueueMarker, (cl_command_queue q, cl_event *ev), (q, ev), ev)
CLFAULT_ENQ(clEnqueueBarrier, (cl_command_queue q), (q), NULL)
CLFAULT_ENQ(clEnqueueWaitForEvents, (cl_command_queue q, cl_uint n, const cl_event *w),
            (q, n, w), NULL)

/* ---- maps ----------------------------------------------------------------- */

CL_API_ENTRY void *CL_API_CALL clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool b,
                                                  cl_map_flags f, size_t o, size_t s,
                                                  cl_uint nw, const cl_event *w,
                                                  cl_event *ev, cl_int *e)
{
  if (hit("clEnqueueMapBuffer", CLFAULT_MAP, CALLER)) {
    if (e)
      *e = armed.err;
    return NULL;
  }
  LOOKUP(void *, clEnqueueMapBuffer,
         (cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint,
          const cl_event *, cl_event *, cl_int *));
  void *p = next(q, m, b, f, o, s, nw, w, ev, e);
  if (p && ev && *ev)
    atomic_fetch_add(&live[CLFAULT_EVENT], 1);
  return p;
}

CL_API_ENTRY void *CL_API_CALL clEnqueueMapImage(cl_command_queue q, cl_mem m, cl_bool b,
                                                 cl_map_flags f, const size_t *o,
                                                 const size_t *r, size_t *rp, size_t *sp,
                                                 cl_uint nw, const cl_event *w,
                                                 cl_event *ev, cl_int *e)
{
  if (hit("clEnqueueMapImage", CLFAULT_MAP, CALLER)) {
    if (e)
      *e = armed.err;
    return NULL;
  }
  LOOKUP(void *, clEnqueueMapImage,
         (cl_command_queue, cl_mem, cl_bool, cl_map_flags, const size_t *, const size_t *,
          size_t *, size_t *, cl_uint, const cl_event *, cl_event *, cl_int *));
  void *p = next(q, m, b, f, o, r, rp, sp, nw, w, ev, e);
  if (p && ev && *ev)
    atomic_fetch_add(&live[CLFAULT_EVENT], 1);
  return p;
}

CLFAULT_CALL(CLFAULT_MAP, clEnqueueUnmapMemObject,
             (cl_command_queue q, cl_mem m, void *p, cl_uint nw, const cl_event *w,
              cl_event *ev),
             (q, m, p, nw, w, ev), ev)

CL_API_ENTRY void *CL_API_CALL clSVMAlloc(cl_context c, cl_svm_mem_flags f, size_t s,
                                          cl_uint a)
{
  if (hit("clSVMAlloc", CLFAULT_MAP, CALLER))
    return NULL; /* clSVMAlloc reports no error code */
  LOOKUP(void *, clSVMAlloc, (cl_context, cl_svm_mem_flags, size_t, cl_uint));
  return next(c, f, s, a);
}

/* ---- references ----------------------------------------------------------- */

CLFAULT_REF(Context, cl_context, CLFAULT_CONTEXT)
CLFAULT_REF(CommandQueue, cl_command_queue, CLFAULT_QUEUE)
CLFAULT_REF(MemObject, cl_mem, CLFAULT_MEM)
CLFAULT_REF(Kernel, cl_kernel, CLFAULT_KERNEL)
CLFAULT_REF(Program, cl_program, CLFAULT_PROGRAM)
CLFAULT_REF(Event, cl_event, CLFAULT_EVENT)
