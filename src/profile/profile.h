/*
 * profile.h — recording calls (profile.c), the table (profile_report.c)
 * and the trace (trace.c), and the hooks every operation calls. Not
 * installed.
 */
#ifndef KILN_PROFILE_H
#define KILN_PROFILE_H

#include "base/env.h"

/* ---- profiling (profile.c, profile_report.c, trace.c) ------------------- */

/* One command a recorded call enqueued: its event until the record is
 * resolved, then its OpenCL profiling times (the device's clock, ns). */
typedef struct kiln__prof_cmd {
  cl_event ev;
  char label[48]; /* the kernel's name, or the call that enqueued it */
  cl_ulong queued, submit, start, end;
  int lane; /* its queue: 0 the runtime's, -1 the copy queue (ops/host.c),
               k > 0 the caller's stream numbered k (kiln__queue_lane) */
} kiln__prof_cmd;

enum { KILN__PROF_PENDING, KILN__PROF_DONE, KILN__PROF_FAILED };

/* The points in one call where work was set aside (kiln__profile_aside):
 * after how many of its commands, and for how long on the host. Work set
 * aside at more points than this is counted at the last one. */
#define KILN__PROF_ASIDES 4
typedef struct kiln__prof_aside {
  size_t cmds; /* the call's commands enqueued before the work */
  uint64_t ns; /* host time of the work there */
} kiln__prof_aside;

/* One recorded call, or one piece of work set aside (kind). */
typedef struct kiln__prof_op {
  char name[64], backend[16], shape[64];
  int kind; /* kiln_profile_kind */
  uint64_t bytes, flops;
  uint64_t host_start, host_end; /* the host's monotonic clock, ns */
  uint64_t aside_ns;             /* of host_end - host_start, the work set aside */
  unsigned thread;               /* the host thread, numbered from 1 */
  int state;                     /* KILN__PROF_* */
  kiln__prof_cmd *cmds;
  size_t ncmds;
  kiln__prof_aside asides[KILN__PROF_ASIDES];
  size_t nasides;
  /* once DONE, over its commands: the first queued, submit and start, and
   * the last end (the device's clock) */
  cl_ulong queued, submit, start, end;
  /* once DONE: the stretches of [start, end] where the device waited for
   * work set aside (ascending, apart), and their sum, which is not the
   * call's device time */
  cl_ulong cuts[KILN__PROF_ASIDES][2];
  size_t ncuts;
  cl_ulong cut_ns;
} kiln__prof_op;

/* A runtime's records; guarded by the runtime's lock. */
typedef struct kiln__profiler {
  char *trace;     /* the trace file for kiln_runtime_destroy(), or NULL */
  uint64_t origin; /* host time of the runtime's creation: the trace's 0 */
  int64_t offset;  /* host clock = device clock + offset, ns */
  kiln__prof_op *ops;
  size_t nops, cap;
  size_t first_pending; /* ops before it are all resolved */
  uint64_t dropped;     /* calls not recorded: no host memory, or the
                           driver refused to retain or enqueue an event */
  int untimed;          /* the driver's timestamps are no clock (Mesa 22's
                           rusticl counts 0, 1, 2, 3): no device times */
} kiln__profiler;

/* A call being recorded, on the caller's stack, from kiln__profile_begin()
 * to kiln__profile_end(). The commands kiln__runtime_track() sees on this
 * thread in between are the call's. */
typedef struct kiln__profile_scope {
  kiln_runtime *rt;           /* NULL: not recording (profiling off, or this call
                       runs inside another recorded call, which takes its
                       commands) */
  const char *name, *backend; /* name lives through the call (read when it
                                 ends); backend static */
  char shape[64];
  int kind; /* kiln_profile_kind; may change until the scope ends */
  uint64_t bytes, flops, host_start;
  kiln__prof_cmd *cmds;
  size_t ncmds, cap;
  int lost; /* out of host memory, or an event refused: the call goes
               unrecorded */
  struct kiln__profile_scope *outer; /* set aside by this one, or NULL */
  uint64_t aside_ns;                 /* host time of the work set aside inside */
  kiln__prof_aside asides[KILN__PROF_ASIDES];
  size_t nasides;
} kiln__profile_scope;

void kiln__profile_open(kiln_runtime *rt, kiln__profile_scope *ps, const char *name);
void kiln__profile_set(kiln__profile_scope *ps, const char *backend, uint64_t bytes,
                       uint64_t flops, const char *shape, ...) KILN__PRINTF(5, 6);
kiln_status kiln__profile_close(kiln__profile_scope *ps, kiln_status st);
void kiln__profile_marker(kiln_runtime *rt);

/* The profiling hooks of an operation, each one test of a flag when
 * profiling is off (the macros evaluate nothing else then):
 *
 *   kiln__profile_scope ps;
 *   kiln__profile_begin(rt, &ps, "gemm");       at entry, once rt is known
 *   ...                                         checks, choice, plans
 *   kiln__profile_describe(&ps, "kiln", bytes, flops, "%zux%zu", m, n);
 *   st = enqueue...;
 *   return kiln__profile_end(&ps, st);          on every path after begin
 *
 * end() keeps the record when st is KILN_OK and something was enqueued. */
#define kiln__profile_begin(rt_, ps_, name_)                                             \
  ((rt_)->profile ? kiln__profile_open((rt_), (ps_), (name_)) : (void)((ps_)->rt = NULL))
#define kiln__profile_describe(ps_, ...)                                                 \
  ((ps_)->rt ? kiln__profile_set((ps_), __VA_ARGS__) : (void)0)
#define kiln__profile_end(ps_, st_)                                                      \
  ((ps_)->rt ? kiln__profile_close((ps_), (st_)) : (st_))

/* For backends that hand the queue to a library that enqueues commands
 * without giving back their events (CLBlast returns the last one, clFFT
 * likewise, VkFFT none): when the calling thread's recorded call has no
 * command yet, enqueues a marker so its device time starts where the
 * library's work does. */
#define kiln__profile_mark(rt_) ((rt_)->profile ? kiln__profile_marker(rt_) : (void)0)

/* Work done for a call that is not the call's, recorded apart: building or
 * loading a program (program.c), planning an FFT (ops/fft.c), benchmark
 * mode's timing of every candidate (choice.c). The work may happen in the
 * middle of a call (a program built at its second kernel's launch); it may
 * happen outside any call (kiln_program_create()).
 *
 *   kiln__profile_scope ps;
 *   kiln__profile_aside(rt, &ps, KILN_PROFILE_BUILD, name);
 *   kiln__profile_describe(&ps, "opencl", 0, 0, "%s", options);
 *   ...                                          the work
 *   kiln__profile_back(&ps);
 *
 * aside() sets the calling thread's recorded call (if any) aside and
 * begins ps, a record of the given kind named `name` (read at back(), so
 * it may be filled in meanwhile, and ps.kind changed). The commands
 * enqueued meanwhile are ps's. back() keeps the record, whatever became of
 * the work: builds and loads with no command (their time is the host's),
 * benchmarks with at least one. It then restores the call set aside and
 * charges it with the work: its host time leaves the work's out, and its
 * device time the idle gap the work left between its commands (at most the
 * work's host time). Evaluates nothing but a flag with profiling off. */
#define kiln__profile_aside(rt_, ps_, kind_, name_)                                      \
  ((rt_)->profile ? kiln__profile_aside_open((rt_), (ps_), (kind_), (name_))             \
                  : (void)((ps_)->rt = NULL))
#define kiln__profile_back(ps_) ((ps_)->rt ? kiln__profile_aside_close(ps_) : (void)0)
void kiln__profile_aside_open(kiln_runtime *rt, kiln__profile_scope *ps, int kind,
                              const char *name);
void kiln__profile_aside_close(kiln__profile_scope *ps);

/* Adds ev (retained) to the calling thread's recorded call on rt, if any;
 * kiln__runtime_track() calls it. */
void kiln__profile_attach(kiln_runtime *rt, cl_event ev, const char *label);

/* At creation: aligns the device's clock with the host's and checks that
 * the trace file can be written (a note in the diagnostics when not).
 * Fails only for want of host memory. */
kiln_status kiln__profile_init(kiln_runtime *rt, const kiln__config *cfg);
void kiln__profile_free(kiln_runtime *rt);

/* Resolves the records whose commands have finished; with `all` 0 it
 * stops at the first that has not (cheap enough for every call's end).
 * With 2 (kiln_finish()), where the driver's queue waits may return before
 * the commands' events read complete (rt->finish_by_marker), it first
 * waits for each command's own event. Called with the runtime's lock held. */
void kiln__profile_resolve(kiln_runtime *rt, int all);

/* Writes the resolved records as a trace to path. Failures go to
 * kiln_last_error(report_to), report_to NULL for the thread's; fn names the
 * caller. Takes the runtime's lock. */
kiln_status kiln__trace_write(kiln_runtime *rt, kiln_runtime *report_to, const char *path,
                              const char *fn);

#endif /* KILN_PROFILE_H */
