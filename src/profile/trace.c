/*
 * trace.c — the recorded calls as a Chrome trace-event JSON file
 * (KILN_TRACE, kiln_profile_write_trace()), which Perfetto and
 * chrome://tracing open.
 *
 * Written with stdio: json-c is optional in kiln's build and never linked
 * into the library. The format is the "JSON Object Format" of Google's
 * Trace Event Format document: {"traceEvents": [...]} of complete events
 * ("ph": "X", ts and dur in microseconds), metadata events ("ph": "M")
 * naming the process and its tracks, and flow events ("ph": "s"/"f")
 * drawing an arrow from each call's enqueue to its execution.
 *
 * Tracks (tid): DEVICE_TID holds one event per call, from its first
 * command's start to its last command's end; COMMANDS_TID one per command
 * (kernels by name); COPY_TID the transfers of the copy queue, which the
 * host loops (ops/host.c) run beside the compute, and STREAM_TID + k the
 * calls on the caller's stream k (stream.c), so that work on other queues
 * shows beside the runtime's (their commands are not repeated on
 * COMMANDS_TID, which is the runtime queue's); HOST_TID + n the calls of
 * host thread n, from entry to return. Device times are moved onto the host's clock with the offset
 * measured at creation (profile.c), and every time counts from the
 * runtime's creation.
 *
 * Work set aside (profile.c) is drawn where it happened. A build, cache
 * load or FFT plan is an event of category "build" on its host thread's
 * track, inside the span of the call that needed it, which Perfetto shows
 * as the call's child; the call's host event says in "aside_us" how much of
 * it was such work, and its device event is cut into parts ("part" k of
 * "parts", "waited_us" the time cut out) around the stretches where the
 * device waited for it, so no part covers a build. Benchmark mode's timing is a call of its own ("benchmark
 * gemm", args "kind": "benchmark").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "core/runtime.h"
#include "profile/profile.h"

#define DEVICE_TID 1
#define COMMANDS_TID 2
#define COPY_TID 3
#define HOST_TID 10
#define STREAM_TID 10000 /* after any host thread's */

/* The track of a call whose first command went on queue `lane`. */
static int lane_tid(int lane)
{
  return lane == 0 ? DEVICE_TID : lane < 0 ? COPY_TID : STREAM_TID + lane;
}

/* Writes s as a JSON string: quotes, backslashes and control characters
 * escaped; other bytes (UTF-8) as they are. */
static void put_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

/* Microseconds since the trace's origin of a host time. */
static double host_us(const kiln__profiler *p, uint64_t t)
{
  return (double)((int64_t)t - (int64_t)p->origin) / 1e3;
}

/* The same for a device time. */
static double device_us(const kiln__profiler *p, cl_ulong t)
{
  return (double)((int64_t)t + p->offset - (int64_t)p->origin) / 1e3;
}

static void put_meta(FILE *f, int pid, int tid, const char *what, const char *name,
                     int sort)
{
  fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":",
          pid, tid, what);
  put_string(f, name);
  fprintf(f,
          "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
          "\"args\":{\"sort_index\":%d}}",
          pid, tid, sort);
}

/* The args every event of a call carries. */
static void put_call_args(FILE *f, const kiln__prof_op *op)
{
  static const char *const kinds[] = {[KILN_PROFILE_CALL] = "call",
                                      [KILN_PROFILE_BUILD] = "build",
                                      [KILN_PROFILE_LOAD] = "load",
                                      [KILN_PROFILE_BENCHMARK] = "benchmark"};
  fputs("\"args\":{\"backend\":", f);
  put_string(f, op->backend);
  fputs(",\"shape\":", f);
  put_string(f, op->shape);
  fprintf(f, ",\"bytes\":%llu,\"flops\":%llu", (unsigned long long)op->bytes,
          (unsigned long long)op->flops);
  if (op->kind != KILN_PROFILE_CALL)
    fprintf(f, ",\"kind\":\"%s\"", kinds[op->kind]);
}

/* An "X" event's head: name, category, track and times. */
static void put_complete(FILE *f, const char *name, const char *cat, int pid, int tid,
                         double ts, double dur)
{
  fputs(",\n{\"name\":", f);
  put_string(f, name);
  fprintf(f,
          ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
          "\"dur\":%.3f,",
          cat, pid, tid, ts, dur);
}

/* The device event of a resolved call: one, or one per part when the
 * device waited for work set aside inside it. */
static void put_device(FILE *f, const kiln__profiler *p, const kiln__prof_op *op, int pid,
                       int tid, double host_us)
{
  cl_ulong from = op->start;
  for (size_t k = 0; k <= op->ncuts; k++) {
    cl_ulong to = k < op->ncuts ? op->cuts[k][0] : op->end;
    double d0 = device_us(p, from), d1 = device_us(p, to);
    put_complete(f, op->name, "device", pid, tid, d0, d1 - d0);
    put_call_args(f, op);
    fprintf(f,
            ",\"commands\":%zu,\"queued_us\":%.3f,\"submit_us\":%.3f,"
            "\"host_us\":%.3f",
            op->ncmds, device_us(p, op->queued), device_us(p, op->submit), host_us);
    if (op->ncuts)
      fprintf(f, ",\"part\":%zu,\"parts\":%zu,\"waited_us\":%.3f", k + 1, op->ncuts + 1,
              (double)op->cut_ns / 1e3);
    fputs("}}", f);
    if (k < op->ncuts)
      from = op->cuts[k][1];
  }
}

/* One call: its host event, and when it finished on the device its device
 * event, its commands and the flow between them. */
static void put_call(FILE *f, const kiln__profiler *p, const kiln__prof_op *op, size_t id,
                     int pid)
{
  int host = HOST_TID + (int)op->thread;
  int build = op->kind == KILN_PROFILE_BUILD || op->kind == KILN_PROFILE_LOAD;
  double h0 = host_us(p, op->host_start), h1 = host_us(p, op->host_end);
  double aside = (double)op->aside_ns / 1e3;
  put_complete(f, op->name, build ? "build" : "host", pid, host, h0, h1 - h0);
  put_call_args(f, op);
  if (op->aside_ns)
    fprintf(f, ",\"aside_us\":%.3f", aside);
  fputs("}}", f);
  /* A build's time is the host's; an untimed driver's device times are none. */
  if (op->state != KILN__PROF_DONE || build || p->untimed)
    return;
  double d0 = device_us(p, op->start);
  int lane = op->ncmds ? op->cmds[0].lane : 0, device = lane_tid(lane);
  put_device(f, p, op, pid, device, h1 - h0 - aside);
  for (size_t i = 0; i < op->ncmds && lane == 0; i++) {
    const kiln__prof_cmd *c = &op->cmds[i];
    double c0 = device_us(p, c->start), c1 = device_us(p, c->end);
    put_complete(f, c->label, "command", pid, COMMANDS_TID, c0, c1 - c0);
    fputs("\"args\":{\"call\":", f);
    put_string(f, op->name);
    fprintf(f, ",\"queued_us\":%.3f,\"submit_us\":%.3f}}", device_us(p, c->queued),
            device_us(p, c->submit));
  }
  fprintf(f,
          ",\n{\"name\":\"enqueue\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%zu,"
          "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
          id, pid, host, h0);
  fprintf(f,
          ",\n{\"name\":\"enqueue\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\","
          "\"id\":%zu,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
          id, pid, device, d0);
}

/* Names the tracks: the process, the device's (one per queue), one per host
 * thread. */
static void put_tracks(FILE *f, kiln_runtime *rt, int pid)
{
  const kiln__profiler *p = rt->prof;
  char name[300];
  snprintf(name, sizeof name, "kiln on %s", kiln_runtime_device(rt)->name);
  fprintf(f,
          "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\","
          "\"args\":{\"name\":",
          pid);
  put_string(f, name);
  fputs("}}", f);
  put_meta(f, pid, DEVICE_TID, "thread_name", "device: calls", 1);
  put_meta(f, pid, COMMANDS_TID, "thread_name", "device: commands", 2);
  put_meta(f, pid, COPY_TID, "thread_name", "device: copy queue", 3);
  int *seen = NULL; /* the streams' tracks, each named once */
  size_t nseen = 0;
  for (size_t i = 0; i < p->nops; i++) {
    int lane = p->ops[i].ncmds ? p->ops[i].cmds[0].lane : 0;
    size_t j = 0;
    while (j < nseen && seen[j] != lane)
      j++;
    if (lane <= 0 || j < nseen)
      continue;
    int *grown = realloc(seen, (nseen + 1) * sizeof *seen);
    if (!grown)
      break; /* the track goes unnamed */
    seen = grown;
    seen[nseen++] = lane;
    snprintf(name, sizeof name, "device: stream %d", lane);
    put_meta(f, pid, lane_tid(lane), "thread_name", name, 3 + lane);
  }
  free(seen);
  unsigned named = 0; /* host threads are numbered 1, 2, ...: name up to the last seen */
  for (size_t i = 0; i < p->nops; i++)
    named = p->ops[i].thread > named ? p->ops[i].thread : named;
  for (unsigned t = 1; t <= named; t++) {
    snprintf(name, sizeof name, "host thread %u: enqueue", t);
    put_meta(f, pid, HOST_TID + (int)t, "thread_name", name, HOST_TID + (int)t);
  }
}

static void put_trace(FILE *f, kiln_runtime *rt)
{
  const kiln__profiler *p = rt->prof;
  int pid = (int)getpid();
  fprintf(f,
          "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"kiln_version\":\"%s\","
          "\"device\":",
          KILN_VERSION_STRING);
  put_string(f, kiln_runtime_device(rt)->name);
  fputs("},\n\"traceEvents\":[\n", f);
  if (rt->profile)
    put_tracks(f, rt, pid);
  for (size_t i = 0; p && i < p->nops; i++) /* p: NULL with profiling off */
    if (p->ops[i].state != KILN__PROF_FAILED)
      put_call(f, p, &p->ops[i], i + 1, pid);
  fputs("\n]}\n", f);
}

kiln_status kiln__trace_write(kiln_runtime *rt, kiln_runtime *report_to, const char *path,
                              const char *fn)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return kiln__fail(report_to, KILN_ERR_IO,
                      "%s: cannot create the trace file '%s': "
                      "%s; expected a path where a file can be created",
                      fn, path, strerror(errno));
  pthread_mutex_lock(&rt->lock);
  kiln__profile_resolve(rt, 1);
  put_trace(f, rt);
  pthread_mutex_unlock(&rt->lock);
  int failed = ferror(f);
  if (fclose(f) != 0 || failed)
    return kiln__fail(report_to, KILN_ERR_IO,
                      "%s: writing the trace file '%s' "
                      "failed: %s",
                      fn, path, strerror(errno));
  return KILN_OK;
}

KILN_API kiln_status kiln_profile_write_trace(kiln_runtime *rt, const char *path)
{
  static const char fn[] = "kiln_profile_write_trace";
  if (!rt || !path)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime and a file path", fn,
                      !rt ? "rt" : "path");
  return kiln__trace_write(rt, rt, path, fn);
}
