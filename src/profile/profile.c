/*
 * profile.c — recording calls: the scope each operation opens, the events
 * attached to it, and resolving records once their commands have finished.
 *
 * The scope in progress is per thread (several threads may share a runtime,
 * each with a call in flight): kiln__runtime_track() hands every event it
 * sees to the calling thread's scope, so backends need not know about
 * profiling. A call made inside another recorded call (conv2d's im2col
 * calls kiln_gemm()) opens no scope of its own: the outer one takes its
 * commands.
 *
 * Work a call does that is not the call's (building a program, planning an
 * FFT, benchmark mode's timing) is a scope of its own set aside from the
 * call's, even inside a call that would take another call's commands: its
 * host time is taken out of the call's, and, when the records resolve, so
 * is the idle stretch it left between the call's commands. Which commands
 * came before the work is all that takes: the device cannot start what is
 * not enqueued yet, so the gap between the last end before it and the
 * first start after it is the work's, up to the work's own length (any
 * more is the enqueueing's). No clock alignment is needed for that.
 *
 * Closing a scope moves it into the runtime's record list; nothing waits for
 * the device. Records are resolved (clGetEventProfilingInfo) when their
 * commands have finished: a cheap pass at each close, which stops at the
 * first unfinished record, and a full one at kiln_finish(), before reports
 * and before the trace. Events are released as records resolve, so the
 * events held are those of calls still running.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "profile/profile.h"

/* The calling thread's scope in progress, and its number for the trace. */
static _Thread_local kiln__profile_scope *current;
static _Thread_local unsigned thread_number;
static atomic_uint threads_seen;

static void release_cmds(kiln__prof_cmd *cmds, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (cmds[i].ev)
      clReleaseEvent(cmds[i].ev);
  free(cmds);
}

/* Begins recording ps on the calling thread. */
static void start(kiln_runtime *rt, kiln__profile_scope *ps, int kind, const char *name)
{
  if (!thread_number)
    thread_number = atomic_fetch_add(&threads_seen, 1) + 1;
  *ps = (kiln__profile_scope){.rt = rt,
                              .name = name,
                              .backend = "",
                              .kind = kind,
                              .outer = current,
                              .host_start = kiln__now_ns()};
  current = ps;
}

void kiln__profile_open(kiln_runtime *rt, kiln__profile_scope *ps, const char *name)
{
  if (current) { /* inside another recorded call: it takes our commands */
    ps->rt = NULL;
    return;
  }
  start(rt, ps, KILN_PROFILE_CALL, name);
}

void kiln__profile_aside_open(kiln_runtime *rt, kiln__profile_scope *ps, int kind,
                              const char *name)
{
  assert(kind != KILN_PROFILE_CALL);
  start(rt, ps, kind, name);
}

void kiln__profile_set(kiln__profile_scope *ps, const char *backend, uint64_t bytes,
                       uint64_t flops, const char *shape, ...)
{
  ps->backend = backend;
  ps->bytes = bytes;
  ps->flops = flops;
  va_list ap;
  va_start(ap, shape);
  vsnprintf(ps->shape, sizeof ps->shape, shape, ap);
  va_end(ap);
}

void kiln__profile_attach(kiln_runtime *rt, cl_event ev, const char *label)
{
  kiln__profile_scope *ps = current;
  if (!ps || ps->rt != rt || ps->lost)
    return;
  if (ps->ncmds == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 4;
    kiln__prof_cmd *grown = realloc(ps->cmds, cap * sizeof *grown);
    if (!grown) {
      ps->lost = 1;
      return;
    }
    ps->cmds = grown;
    ps->cap = cap;
  }
  if (clRetainEvent(ev) != CL_SUCCESS) {
    ps->lost = 1;
    return;
  }
  kiln__prof_cmd *c = &ps->cmds[ps->ncmds++];
  memset(c, 0, sizeof *c);
  c->ev = ev;
  snprintf(c->label, sizeof c->label, "%s", label);
  cl_command_queue q = NULL;
  if (clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL) == CL_SUCCESS)
    c->lane = kiln__queue_lane(rt, q);
}

void kiln__profile_marker(kiln_runtime *rt)
{
  kiln__profile_scope *ps = current;
  if (!ps || ps->rt != rt || ps->ncmds)
    return;
  cl_event ev = NULL;
  if (clEnqueueMarkerWithWaitList(kiln__queue(rt), 0, NULL, &ev) != CL_SUCCESS) {
    ps->lost = 1; /* the call's start would be wrong */
    return;
  }
  kiln__profile_attach(rt, ev, "marker");
  clReleaseEvent(ev);
}

/* Makes room for one more record; 0 on success. Lock held. */
static int grow_records(kiln__profiler *p)
{
  if (p->nops < p->cap)
    return 0;
  size_t cap = p->cap ? p->cap * 2 : 64;
  kiln__prof_op *grown = realloc(p->ops, cap * sizeof *grown);
  if (!grown)
    return -1;
  p->ops = grown;
  p->cap = cap;
  return 0;
}

/* Moves ps into the runtime's records when `keep` (else drops it), ending
 * at host_end. */
static void record(kiln__profile_scope *ps, int keep, uint64_t host_end)
{
  kiln_runtime *rt = ps->rt;
  if (!keep || ps->lost) {
    release_cmds(ps->cmds, ps->ncmds);
    if (keep) {
      pthread_mutex_lock(&rt->lock);
      rt->prof->dropped++;
      pthread_mutex_unlock(&rt->lock);
    }
    return;
  }
  pthread_mutex_lock(&rt->lock);
  kiln__profiler *p = rt->prof;
  if (grow_records(p) != 0) {
    p->dropped++;
    pthread_mutex_unlock(&rt->lock);
    release_cmds(ps->cmds, ps->ncmds);
    return;
  }
  kiln__prof_op *op = &p->ops[p->nops++];
  memset(op, 0, sizeof *op);
  snprintf(op->name, sizeof op->name, "%s", ps->name);
  snprintf(op->backend, sizeof op->backend, "%s", ps->backend);
  memcpy(op->shape, ps->shape, sizeof op->shape);
  op->kind = ps->kind;
  op->bytes = ps->bytes;
  op->flops = ps->flops;
  op->host_start = ps->host_start;
  op->host_end = host_end;
  op->aside_ns = ps->aside_ns;
  op->thread = thread_number;
  op->state = KILN__PROF_PENDING;
  op->cmds = ps->cmds;
  op->ncmds = ps->ncmds;
  memcpy(op->asides, ps->asides, sizeof op->asides);
  op->nasides = ps->nasides;
  kiln__profile_resolve(rt, 0);
  pthread_mutex_unlock(&rt->lock);
}

kiln_status kiln__profile_close(kiln__profile_scope *ps, kiln_status st)
{
  assert(ps->kind == KILN_PROFILE_CALL && !ps->outer);
  uint64_t host_end = kiln__now_ns();
  current = NULL;
  record(ps, st == KILN_OK && ps->ncmds > 0, host_end);
  return st;
}

/* Charges the call ps with ns of work set aside after its commands so far. */
static void charge(kiln__profile_scope *ps, uint64_t ns)
{
  ps->aside_ns += ns;
  size_t n = ps->nasides;
  if (n && (ps->asides[n - 1].cmds == ps->ncmds || n == KILN__PROF_ASIDES)) {
    ps->asides[n - 1].ns += ns; /* the same point, or no room for another */
    return;
  }
  ps->asides[n] = (kiln__prof_aside){.cmds = ps->ncmds, .ns = ns};
  ps->nasides++;
}

void kiln__profile_aside_close(kiln__profile_scope *ps)
{
  assert(current == ps && ps->kind != KILN_PROFILE_CALL);
  uint64_t host_end = kiln__now_ns();
  kiln__profile_scope *outer = ps->outer;
  current = outer;
  record(ps, ps->kind != KILN_PROFILE_BENCHMARK || ps->ncmds > 0, host_end);
  if (outer && outer->rt == ps->rt) /* not another runtime's call */
    charge(outer, host_end - ps->host_start);
}

/* 1 when every command of op has finished (or failed), 0 otherwise. */
static int finished(const kiln__prof_op *op)
{
  for (size_t i = 0; i < op->ncmds; i++) {
    cl_int status = CL_COMPLETE;
    if (clGetEventInfo(op->cmds[i].ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                       &status, NULL) == CL_SUCCESS &&
        status > CL_COMPLETE)
      return 0;
  }
  return 1;
}

/* The stretches of a resolved op's device span where the device waited for
 * work set aside (see the top): for each point, from the last end of the
 * commands before it to the first start of those after it, at most the
 * work's host time, taken from the end of the gap (the work ends just
 * before the next enqueue). Points before the first command or after the
 * last are outside the span. */
static void cut_asides(kiln__prof_op *op)
{
  cl_ulong floor = op->start;
  for (size_t j = 0; j < op->nasides; j++) {
    size_t k = op->asides[j].cmds;
    if (k == 0 || k >= op->ncmds)
      continue;
    cl_ulong before = op->start, after = op->end;
    for (size_t i = 0; i < op->ncmds; i++) {
      const kiln__prof_cmd *c = &op->cmds[i];
      if (i < k && c->end > before)
        before = c->end;
      if (i >= k && c->start < after)
        after = c->start;
    }
    before = before > floor ? before : floor; /* commands on two queues */
    if (after <= before)
      continue;
    cl_ulong gap = after - before, ns = op->asides[j].ns;
    cl_ulong cut = gap < ns ? gap : ns;
    op->cuts[op->ncuts][0] = after - cut;
    op->cuts[op->ncuts][1] = after;
    op->ncuts++;
    op->cut_ns += cut;
    floor = after;
  }
}

/* Reads the times of a finished op's commands and releases their events.
 * A command that failed, or whose times the driver will not give, makes
 * the record FAILED: it is left out of the table and the trace. */
static void resolve_op(kiln__prof_op *op)
{
  static const cl_profiling_info which[4] = {
    CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT, CL_PROFILING_COMMAND_START,
    CL_PROFILING_COMMAND_END};
  int ok = 1;
  for (size_t i = 0; i < op->ncmds; i++) {
    kiln__prof_cmd *c = &op->cmds[i];
    cl_ulong *times[4] = {&c->queued, &c->submit, &c->start, &c->end};
    cl_int status = CL_COMPLETE;
    if (clGetEventInfo(c->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                       NULL) != CL_SUCCESS ||
        status != CL_COMPLETE)
      ok = 0;
    for (int t = 0; t < 4 && ok; t++)
      ok = clGetEventProfilingInfo(c->ev, which[t], sizeof(cl_ulong), times[t], NULL) ==
           CL_SUCCESS;
    clReleaseEvent(c->ev);
    c->ev = NULL;
    if (!ok)
      continue;
    if (i == 0 || c->queued < op->queued)
      op->queued = c->queued;
    if (i == 0 || c->submit < op->submit)
      op->submit = c->submit;
    if (i == 0 || c->start < op->start)
      op->start = c->start;
    if (i == 0 || c->end > op->end)
      op->end = c->end;
  }
  op->state = ok && op->end >= op->start ? KILN__PROF_DONE : KILN__PROF_FAILED;
  if (op->state == KILN__PROF_DONE)
    cut_asides(op);
}

/* Waits for each command of op on its own event (failures: resolve_op's). */
static void wait_op(const kiln__prof_op *op)
{
  for (size_t i = 0; i < op->ncmds; i++)
    if (op->cmds[i].ev)
      clWaitForEvents(1, &op->cmds[i].ev);
}

void kiln__profile_resolve(kiln_runtime *rt, int all)
{
  KILN__ASSERT_HELD(&rt->lock);
  kiln__profiler *p = rt->prof;
  for (size_t i = p->first_pending; i < p->nops; i++) {
    kiln__prof_op *op = &p->ops[i];
    if (op->state != KILN__PROF_PENDING)
      continue;
    if (all > 1 && rt->finish_by_marker)
      wait_op(op);
    if (!finished(op)) {
      if (!all)
        return;
      continue;
    }
    resolve_op(op);
  }
  while (p->first_pending < p->nops &&
         p->ops[p->first_pending].state != KILN__PROF_PENDING)
    p->first_pending++;
}

/* A marker's QUEUED time on the device's clock, and the host's time
 * halfway through clEnqueueMarkerWithWaitList(), which takes it. */
static cl_int marker_time(kiln_runtime *rt, cl_ulong *device, uint64_t *host)
{
  cl_event ev = NULL;
  uint64_t t0 = kiln__now_ns();
  cl_int err = clEnqueueMarkerWithWaitList(kiln__queue(rt), 0, NULL, &ev);
  uint64_t t1 = kiln__now_ns();
  if (err == CL_SUCCESS) {
    err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
      err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof *device,
                                    device, NULL);
    clReleaseEvent(ev);
  }
  *host = t0 / 2 + t1 / 2;
  return err;
}

/* The offset from the device's clock to the host's, from one marker; and
 * whether the device's timestamps are a clock at all: a second marker a
 * millisecond later must read at least a tenth of that later. */
static cl_int align_clocks(kiln_runtime *rt, int64_t *offset, int *untimed)
{
  cl_ulong d0 = 0, d1 = 0;
  uint64_t h0 = 0, h1 = 0;
  cl_int err = marker_time(rt, &d0, &h0);
  if (err != CL_SUCCESS)
    return err;
  *offset = (int64_t)h0 - (int64_t)d0;
  kiln__sleep_ms(1);
  err = marker_time(rt, &d1, &h1);
  if (err == CL_SUCCESS)
    *untimed = d1 < d0 || (d1 - d0) * 10 < h1 - h0;
  return err;
}

/* Checks the trace file can be written by writing an empty trace, which
 * also leaves a valid file should the program never destroy the runtime.
 * A file that cannot be written is a note, not an error; the path is kept,
 * so kiln_runtime_destroy() tries again and says when it fails. */
static kiln_status open_trace(kiln_runtime *rt, const kiln__config *cfg)
{
  rt->prof->trace = strdup(cfg->trace);
  if (!rt->prof->trace)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: out of host memory");
  FILE *f = fopen(cfg->trace, "w");
  int ok = f && fputs("{\"traceEvents\":[]}\n", f) >= 0;
  if (f && fclose(f) != 0)
    ok = 0;
  if (!ok)
    kiln__str_appendf(&rt->devices.notes,
                      "%s='%s': the trace file cannot be written (%s); expected a "
                      "path where a file can be created. Profiling is on; "
                      "kiln_runtime_destroy() will fail to write the trace\n",
                      cfg->trace_source, cfg->trace, strerror(errno));
  return KILN_OK;
}

/* kiln_finish()'s: every record, each command's own event waited for
 * where the driver's queue waits may return first (2). */
static void resolve_all(kiln_runtime *rt)
{
  kiln__profile_resolve(rt, 2);
}

/* What core calls of the profiler (KILN__SLOT_PROFILE): the events of the
 * commands it tracks, and kiln_finish()'s; the records at destruction. */
static const kiln__slot_hooks profile_hooks = {
  .release = kiln__profile_free,
  .command = kiln__profile_attach,
  .finished = resolve_all,
};

kiln_status kiln__profile_init(kiln_runtime *rt, const kiln__config *cfg)
{
  rt->profile = cfg->profile || cfg->trace; /* a trace needs the records */
  if (!rt->profile)
    return KILN_OK;
  kiln__runtime_hook(rt, KILN__SLOT_PROFILE, &profile_hooks);
  rt->prof = calloc(1, sizeof *rt->prof);
  if (!rt->prof)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: out of host memory");
  rt->prof->origin = kiln__now_ns();
  cl_int err = align_clocks(rt, &rt->prof->offset, &rt->prof->untimed);
  if (err != CL_SUCCESS)
    kiln__str_appendf(&rt->devices.notes,
                      "profiling: the device's clock could not be read (%s); the "
                      "trace's host and device tracks may be offset\n",
                      kiln_cl_error_name(err));
  if (rt->prof->untimed)
    kiln__str_appendf(&rt->devices.notes,
                      "profiling: '%s' gives no device times (its profiling "
                      "timestamps do not advance with time); the profile has host "
                      "times only, and the trace no device tracks\n",
                      kiln_runtime_device(rt)->name);
  return cfg->trace ? open_trace(rt, cfg) : KILN_OK;
}

/* Drops every record; lock held or the runtime private. */
static void drop_records(kiln__profiler *p)
{
  for (size_t i = 0; i < p->nops; i++)
    release_cmds(p->ops[i].cmds, p->ops[i].ncmds);
  p->nops = 0;
  p->first_pending = 0;
  p->dropped = 0;
}

void kiln__profile_free(kiln_runtime *rt)
{
  if (!rt->prof)
    return;
  drop_records(rt->prof);
  free(rt->prof->ops);
  free(rt->prof->trace);
  free(rt->prof);
  rt->prof = NULL;
}

KILN_API int kiln_profile_enabled(const kiln_runtime *rt)
{
  return rt ? rt->profile : 0;
}

KILN_API kiln_status kiln_profile_reset(kiln_runtime *rt)
{
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_profile_reset: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()");
  pthread_mutex_lock(&rt->lock);
  if (rt->prof)
    drop_records(rt->prof);
  pthread_mutex_unlock(&rt->lock);
  return KILN_OK;
}
