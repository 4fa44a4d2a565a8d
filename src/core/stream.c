/*
 * stream.c — streams (more queues of a runtime) and events, on the model of
 * CUDA's: a thread binds a stream to a runtime with kiln_stream_use(), and
 * from then on every call it makes on that runtime (operations, transfers,
 * fills, kernel launches, maps) goes on the stream's in-order queue instead
 * of the runtime's; kiln_event_record() marks the point a stream has
 * reached, kiln_stream_wait_event() makes the bound stream wait for an
 * event of any stream, and kiln_event_wait() makes the host wait for one.
 * Work on two streams may run at once: a transfer on one beside a kernel on
 * the other.
 *
 * The binding is the thread's (a small thread-local table keyed by the
 * runtime's serial, which no other runtime of the process ever has), so
 * threads sharing a runtime pick their streams independently, and a call
 * finds its queue with one lookup (kiln__queue).
 *
 * What kiln keeps across calls is ordered across streams too:
 *  - the caching pool: a buffer destroyed while the runtime has streams
 *    leaves a marker on every queue with its block (kiln__fence), and the
 *    block serves a new buffer only once all have completed (pool.c);
 *  - FFT plans, whose scratch is shared by their runs: a run on another
 *    queue than the last first waits for the last (kiln__serial_*, fft.c).
 */
#include <stdlib.h>

#include "base/error.h"
#include "core/runtime.h"
#include "core/stream.h"

struct kiln_stream {
  kiln_runtime *rt;
  cl_command_queue queue;
  unsigned id; /* 1, 2, ... in the order the runtime made them */
};

struct kiln_event {
  kiln_runtime *rt;
  cl_event ev;
};

/* This thread's bindings: runtime serial -> stream. */
#define BINDINGS 8
static _Thread_local struct binding {
  uint64_t serial;
  kiln_stream *stream;
} bindings[BINDINGS];

static struct binding *binding_of(const kiln_runtime *rt)
{
  for (int i = 0; i < BINDINGS; i++)
    if (bindings[i].stream && bindings[i].serial == rt->serial)
      return &bindings[i];
  return NULL;
}

/* Whether rt has streams, read without its lock: a call racing with
 * kiln_stream_create() on another thread may see either answer, and
 * either is right for a call the new stream has not been bound for. */
static int has_streams(const kiln_runtime *rt)
{
  return __atomic_load_n(&rt->nstreams, __ATOMIC_ACQUIRE) != 0;
}

cl_command_queue kiln__queue(kiln_runtime *rt)
{
  const struct binding *b = has_streams(rt) ? binding_of(rt) : NULL;
  return b ? b->stream->queue : rt->queue;
}

int kiln__queue_lane(kiln_runtime *rt, cl_command_queue q)
{
  if (q == rt->copy_queue)
    return -1;
  if (q == rt->queue || !has_streams(rt))
    return 0;
  int lane = 0;
  pthread_mutex_lock(&rt->lock);
  for (size_t i = 0; i < rt->nstreams && !lane; i++)
    if (rt->streams[i]->queue == q)
      lane = (int)rt->streams[i]->id;
  pthread_mutex_unlock(&rt->lock);
  return lane;
}

KILN_API kiln_status kiln_stream_create(kiln_runtime *rt, kiln_stream **out)
{
  static const char fn[] = "kiln_stream_create";
  if (!rt || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime and the address of a "
                      "kiln_stream pointer",
                      fn, !rt ? "rt" : "out");
  *out = NULL;
  kiln_stream *s = calloc(1, sizeof *s);
  if (!s)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  cl_int err;
  s->rt = rt;
  s->queue = clCreateCommandQueue(rt->context, kiln__runtime_device(rt)->id,
                                  CL_QUEUE_PROFILING_ENABLE, &err);
  if (!s->queue) {
    free(s);
    return kiln__fail_cl(rt, err, "clCreateCommandQueue", "%s: a queue for the stream",
                         fn);
  }
  pthread_mutex_lock(&rt->lock);
  if (rt->nstreams == rt->cap_streams) {
    size_t cap = rt->cap_streams * 2 + 4;
    kiln_stream **grown = realloc(rt->streams, cap * sizeof *grown);
    if (grown)
      rt->streams = grown, rt->cap_streams = cap;
  }
  int added = rt->nstreams < rt->cap_streams;
  if (added) {
    s->id = ++rt->stream_ids;
    rt->streams[rt->nstreams] = s;
    __atomic_store_n(&rt->nstreams, rt->nstreams + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&rt->lock);
  if (!added) {
    clReleaseCommandQueue(s->queue);
    free(s);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  }
  *out = s;
  return KILN_OK;
}

KILN_API kiln_status kiln_stream_finish(kiln_stream *s)
{
  if (!s)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_stream_finish: s is NULL");
  cl_int err = kiln__finish_queue(s->rt, s->queue);
  return err == CL_SUCCESS ? KILN_OK
                           : kiln__fail_cl(s->rt, err, "clFinish",
                                           "kiln_stream_finish: waiting for the stream");
}

KILN_API kiln_status kiln_stream_destroy(kiln_stream *s)
{
  if (!s)
    return KILN_OK;
  kiln_runtime *rt = s->rt;
  struct binding *b = binding_of(rt);
  if (b && b->stream == s)
    b->stream = NULL;
  /* its failures go to kiln_finish(), through the events */
  kiln__finish_queue(rt, s->queue);
  pthread_mutex_lock(&rt->lock);
  for (size_t i = 0; i < rt->nstreams; i++)
    if (rt->streams[i] == s) {
      rt->streams[i] = rt->streams[rt->nstreams - 1];
      __atomic_store_n(&rt->nstreams, rt->nstreams - 1, __ATOMIC_RELEASE);
      break;
    }
  pthread_mutex_unlock(&rt->lock);
  clReleaseCommandQueue(s->queue);
  free(s);
  return KILN_OK;
}

KILN_API kiln_status kiln_stream_use(kiln_runtime *rt, kiln_stream *s)
{
  static const char fn[] = "kiln_stream_use";
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: rt is NULL", fn);
  if (s && s->rt != rt)
    return kiln__fail(rt, KILN_ERR_WRONG_RUNTIME,
                      "%s: the stream belongs to another runtime; expected one made by "
                      "kiln_stream_create() on this runtime",
                      fn);
  struct binding *b = binding_of(rt);
  if (!s) {
    if (b)
      b->stream = NULL;
    return KILN_OK;
  }
  for (int i = 0; i < BINDINGS && !b; i++)
    if (!bindings[i].stream)
      b = &bindings[i];
  if (!b)
    return kiln__fail(
      rt, KILN_ERR_UNSUPPORTED,
      "%s: this thread has streams bound on %d runtimes already; expected "
      "at most %d (bind NULL on one to free its place)",
      fn, BINDINGS, BINDINGS);
  b->serial = rt->serial;
  b->stream = s;
  return KILN_OK;
}

/* A marker on q, flushed so that other queues may wait for it. */
static cl_int marker(cl_command_queue q, cl_event *ev)
{
  cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, ev);
  return err == CL_SUCCESS ? clFlush(q) : err;
}

KILN_API kiln_status kiln_event_record(kiln_runtime *rt, kiln_event **out)
{
  static const char fn[] = "kiln_event_record";
  if (!rt || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                      !rt ? "rt" : "out");
  *out = NULL;
  kiln_event *e = calloc(1, sizeof *e);
  if (!e)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  cl_int err = marker(kiln__queue(rt), &e->ev);
  if (err != CL_SUCCESS) {
    if (e->ev)
      clReleaseEvent(e->ev);
    free(e);
    return kiln__fail_cl(rt, err, "clEnqueueMarkerWithWaitList", "%s", fn);
  }
  e->rt = rt;
  *out = e;
  return KILN_OK;
}

KILN_API kiln_status kiln_stream_wait_event(kiln_runtime *rt, const kiln_event *ev)
{
  static const char fn[] = "kiln_stream_wait_event";
  if (!rt || !ev)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                      !rt ? "rt" : "ev");
  if (ev->rt != rt)
    return kiln__fail(rt, KILN_ERR_WRONG_RUNTIME,
                      "%s: the event belongs to another runtime", fn);
  cl_int err = clEnqueueBarrierWithWaitList(kiln__queue(rt), 1, &ev->ev, NULL);
  return err == CL_SUCCESS
           ? KILN_OK
           : kiln__fail_cl(rt, err, "clEnqueueBarrierWithWaitList", "%s", fn);
}

KILN_API kiln_status kiln_event_wait(const kiln_event *ev)
{
  static const char fn[] = "kiln_event_wait";
  if (!ev)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: ev is NULL", fn);
  cl_int err = clWaitForEvents(1, &ev->ev);
  cl_int status = CL_COMPLETE;
  if (err == CL_SUCCESS)
    clGetEventInfo(ev->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                   NULL);
  if (err == CL_SUCCESS && status >= 0)
    return KILN_OK;
  return kiln__fail_cl(ev->rt, err != CL_SUCCESS ? err : status, "clWaitForEvents",
                       "%s: the work before the event failed", fn);
}

KILN_API kiln_status kiln_event_query(const kiln_event *ev, int *done)
{
  static const char fn[] = "kiln_event_query";
  if (!ev || !done)
    return kiln__fail(ev ? ev->rt : NULL, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                      !ev ? "ev" : "done");
  cl_int status = CL_QUEUED;
  cl_int err = clGetEventInfo(ev->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                              &status, NULL);
  if (err != CL_SUCCESS || status < 0)
    return kiln__fail_cl(ev->rt, err != CL_SUCCESS ? err : status, "clGetEventInfo",
                         "%s: the work before the event failed", fn);
  *done = status == CL_COMPLETE;
  return KILN_OK;
}

KILN_API kiln_status kiln_event_elapsed(const kiln_event *start, const kiln_event *end,
                                        double *ms)
{
  static const char fn[] = "kiln_event_elapsed";
  if (!start || !end || !ms)
    return kiln__fail(start ? start->rt : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL", fn,
                      !start ? "start"
                      : !end ? "end"
                             : "ms");
  cl_ulong t[2];
  const kiln_event *e[2] = {start, end};
  for (int i = 0; i < 2; i++) {
    int done = 0;
    kiln_status st = kiln_event_query(e[i], &done);
    if (st != KILN_OK)
      return st;
    if (!done)
      return kiln__fail(e[i]->rt, KILN_ERR_BUSY,
                        "%s: the %s event has not completed; expected kiln_event_wait() "
                        "on it first",
                        fn, i ? "end" : "start");
    cl_int err = clGetEventProfilingInfo(e[i]->ev, CL_PROFILING_COMMAND_END, sizeof t[i],
                                         &t[i], NULL);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(e[i]->rt, err, "clGetEventProfilingInfo", "%s", fn);
  }
  *ms = ((double)t[1] - (double)t[0]) / 1e6;
  return KILN_OK;
}

KILN_API kiln_status kiln_event_destroy(kiln_event *ev)
{
  if (ev) {
    clReleaseEvent(ev->ev);
    free(ev);
  }
  return KILN_OK;
}

cl_int kiln__fence(kiln_runtime *rt, cl_event **fence, cl_uint *n)
{
  *fence = NULL;
  *n = 0;
  pthread_mutex_lock(&rt->lock);
  size_t count = rt->nstreams ? rt->nstreams + 1 : 0;
  cl_event *evs = count ? calloc(count, sizeof *evs) : NULL;
  cl_int err = count && !evs ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
  for (size_t i = 0; i < count && err == CL_SUCCESS; i++)
    err = marker(i ? rt->streams[i - 1]->queue : rt->queue, &evs[i]);
  pthread_mutex_unlock(&rt->lock);
  if (err != CL_SUCCESS) {
    for (size_t i = 0; evs && i < count; i++)
      if (evs[i])
        clReleaseEvent(evs[i]);
    free(evs);
    return err;
  }
  *fence = evs;
  *n = (cl_uint)count;
  return CL_SUCCESS;
}

cl_int kiln__finish_queue(const kiln_runtime *rt, cl_command_queue q)
{
  if (rt->finish_by_marker) {
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    if (err == CL_SUCCESS)
      err = clWaitForEvents(1, &ev);
    if (ev)
      clReleaseEvent(ev);
    if (err != CL_SUCCESS)
      return err;
  }
  return clFinish(q);
}

cl_bool kiln__blocking(const kiln_runtime *rt, int blocking)
{
  return blocking && !rt->finish_by_marker ? CL_TRUE : CL_FALSE;
}

cl_int kiln__wait_command(cl_event ev)
{
  cl_int err = clWaitForEvents(1, &ev), status = CL_COMPLETE;
  if (err == CL_SUCCESS)
    err =
      clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
  return err != CL_SUCCESS ? err : status < 0 ? status : CL_SUCCESS;
}

void kiln__wait_tracked(kiln_runtime *rt)
{
  KILN__ASSERT_HELD(&rt->lock);
  for (size_t i = 0; i < rt->npending; i++)
    clWaitForEvents(1, &rt->pending[i].ev); /* its failure: kiln_finish()'s */
}

void kiln__streams_finish(kiln_runtime *rt, cl_int *first_err)
{
  pthread_mutex_lock(&rt->lock);
  for (size_t i = 0; i < rt->nstreams; i++) {
    cl_int err = kiln__finish_queue(rt, rt->streams[i]->queue);
    if (err != CL_SUCCESS && *first_err == CL_SUCCESS)
      *first_err = err;
  }
  pthread_mutex_unlock(&rt->lock);
}

kiln_status kiln__serial_begin(kiln_runtime *rt, kiln__serial *s, const char *fn)
{
  cl_command_queue q = kiln__queue(rt);
  if (!s->queue)
    s->queue = rt->queue;
  if (q == s->queue)
    return KILN_OK;
  cl_int err = CL_SUCCESS;
  if (!s->last) /* its last use went on s->queue without a marker: mark now */
    err = marker(s->queue, &s->last);
  if (err == CL_SUCCESS)
    err = clEnqueueBarrierWithWaitList(q, 1, &s->last, NULL);
  return err == CL_SUCCESS
           ? KILN_OK
           : kiln__fail_cl(rt, err, "clEnqueueBarrierWithWaitList",
                           "%s: waiting for the last run on another queue", fn);
}

void kiln__serial_end(kiln_runtime *rt, kiln__serial *s)
{
  cl_command_queue q = kiln__queue(rt);
  if (s->last)
    clReleaseEvent(s->last);
  s->last = NULL;
  s->queue = q;
  if (has_streams(rt) && marker(q, &s->last) != CL_SUCCESS)
    s->last = NULL; /* the next run elsewhere marks the queue itself */
}

void kiln__serial_free(kiln__serial *s)
{
  if (s->last)
    clReleaseEvent(s->last);
  s->last = NULL;
}
