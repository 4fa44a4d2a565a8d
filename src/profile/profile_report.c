/*
 * profile_report.c — the recorded calls summed per operation and backend:
 * kiln_profile_rows() and the table kiln_profile_report() prints.
 *
 * Two sections: the calls (and benchmark mode's timing), measured on the
 * device, then the builds, loads and FFT plans, measured on the host (the
 * compiler runs there, and the device is idle). Each row's times leave out
 * the work set aside inside it (profile.c), which has rows of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "core/runtime.h"
#include "profile/profile.h"

/* What the rows leave out. */
typedef struct left_out {
  size_t pending, failed;
  uint64_t dropped;
} left_out;

/* Whether rows of this kind hold host time: builds and loads. */
static int on_host(int kind)
{
  return kind == KILN_PROFILE_BUILD || kind == KILN_PROFILE_LOAD;
}

/* Adds one finished record to its row, making the row when it is new. */
static void add(kiln_profile_row *rows, size_t *n, const kiln__prof_op *op, int untimed)
{
  size_t i = 0;
  while (i < *n && ((int)rows[i].kind != op->kind || strcmp(rows[i].op, op->name) ||
                    strcmp(rows[i].backend, op->backend)))
    i++;
  kiln_profile_row *r = &rows[i];
  uint64_t host = op->host_end - op->host_start - op->aside_ns;
  uint64_t t = on_host(op->kind) ? host : untimed ? 0 : op->end - op->start - op->cut_ns;
  if (i == *n) {
    kiln_profile_row_init(r);
    memcpy(r->op, op->name, sizeof r->op);
    memcpy(r->backend, op->backend, sizeof r->backend);
    r->kind = (kiln_profile_kind)op->kind;
    r->min_ns = t;
    (*n)++;
  }
  r->calls++;
  r->total_ns += t;
  r->min_ns = t < r->min_ns ? t : r->min_ns;
  r->max_ns = t > r->max_ns ? t : r->max_ns;
  r->host_ns += host;
  r->flops += op->flops;
  r->bytes += op->bytes;
}

/* The calls' section first, then the builds'; each by total time. */
static int by_total(const void *a, const void *b)
{
  const kiln_profile_row *x = a, *y = b;
  if (on_host(x->kind) != on_host(y->kind))
    return on_host(x->kind) ? 1 : -1;
  if (x->total_ns != y->total_ns)
    return x->total_ns > y->total_ns ? -1 : 1;
  int c = strcmp(x->op, y->op);
  return c ? c : strcmp(x->backend, y->backend);
}

/* The rows, sorted, into a malloc'd array (NULL when there are none). */
static kiln_status gather(kiln_runtime *rt, const char *fn, kiln_profile_row **out,
                          size_t *n, left_out *lo)
{
  *out = NULL;
  *n = 0;
  *lo = (left_out){0};
  if (!rt->profile)
    return KILN_OK;
  pthread_mutex_lock(&rt->lock);
  kiln__profile_resolve(rt, 1);
  const kiln__profiler *p = rt->prof;
  kiln_profile_row *rows = p->nops ? malloc(p->nops * sizeof *rows) : NULL;
  if (p->nops && !rows) {
    pthread_mutex_unlock(&rt->lock);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  }
  for (size_t i = 0; i < p->nops; i++) {
    const kiln__prof_op *op = &p->ops[i];
    if (op->state == KILN__PROF_DONE)
      add(rows, n, op, p->untimed);
    lo->pending += op->state == KILN__PROF_PENDING;
    lo->failed += op->state == KILN__PROF_FAILED;
  }
  lo->dropped = p->dropped;
  pthread_mutex_unlock(&rt->lock);
  uint64_t all = 0; /* the device time of every call and benchmark */
  for (size_t i = 0; i < *n; i++)
    all += on_host(rows[i].kind) ? 0 : rows[i].total_ns;
  for (size_t i = 0; i < *n; i++) {
    kiln_profile_row *r = &rows[i];
    double t = (double)r->total_ns;
    r->gflops = t > 0 ? (double)r->flops / t : 0;
    r->gbps = t > 0 ? (double)r->bytes / t : 0;
    r->percent = all && !on_host(r->kind) ? 100.0 * t / (double)all : 0;
  }
  if (*n)
    qsort(rows, *n, sizeof *rows, by_total);
  *out = rows;
  return KILN_OK;
}

KILN_API kiln_status kiln_profile_rows(kiln_runtime *rt, kiln_profile_row *rows,
                                       size_t capacity, size_t *count)
{
  static const char fn[] = "kiln_profile_rows";
  if (!rt || !count || (!rows && capacity))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime, an array of capacity "
                      "rows (NULL only with capacity 0) and a count to fill",
                      fn,
                      !rt      ? "rt"
                      : !count ? "count"
                               : "rows");
  kiln_status st =
    capacity ? KILN__STRUCT_OUT(rt, fn, kiln_profile_row, kiln_profile_row_init(), rows)
             : KILN_OK;
  kiln_profile_row *all;
  left_out lo;
  if (st == KILN_OK)
    st = gather(rt, fn, &all, count, &lo);
  if (st != KILN_OK)
    return st;
  /* The caller's rows are rows[0].struct_size apart: its sizeof, which
   * differs from kiln's when it was built against another kiln.h. */
  size_t stride = capacity ? rows[0].struct_size : 0;
  for (size_t i = 0; i < capacity && i < *count; i++)
    kiln__struct_put((char *)rows + i * stride, stride, &all[i], sizeof all[i]);
  free(all);
  return KILN_OK;
}

/* "1.234 ms": a time in the unit that suits it, as torch's table does. */
static const char *format_time(uint64_t ns, char *buf, size_t size)
{
  if (ns >= 1000000000u)
    snprintf(buf, size, "%.3f s", (double)ns / 1e9);
  else if (ns >= 1000000u)
    snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
  else
    snprintf(buf, size, "%.3f us", (double)ns / 1e3);
  return buf;
}

/* A rate, or "-" when the calls have no flops (or bytes). */
static const char *format_rate(uint64_t amount, double rate, char *buf, size_t size)
{
  if (amount)
    snprintf(buf, size, "%.2f", rate);
  else
    snprintf(buf, size, "-");
  return buf;
}

static void rule(FILE *f, int width)
{
  for (int i = 0; i < width; i++)
    fputc('-', f);
  fputc('\n', f);
}

/* A device time, or "-" where the driver gives none. */
static const char *device_time(int untimed, uint64_t ns, char *buf, size_t size)
{
  if (!untimed)
    return format_time(ns, buf, size);
  snprintf(buf, size, "-");
  return buf;
}

/* The calls' section: device times, rates and shares ("-" where the driver
 * gives no device times). */
static void print_calls(FILE *f, const kiln_profile_row *rows, size_t n, int wop, int wbe,
                        int untimed)
{
  /* the widths below: calls 7, five times 12, host 12, rates 9 and 8, % 7 */
  int width = wop + 2 + wbe + 2 + 7 + 5 * 14 + 2 + 9 + 2 + 8 + 2 + 7;
  rule(f, width);
  fprintf(f, "%-*s  %-*s  %7s  %12s  %12s  %12s  %12s  %12s  %9s  %8s  %7s\n", wop, "Op",
          wbe, "Backend", "Calls", "Device total", "Mean", "Min", "Max", "Host total",
          "GFLOP/s", "GB/s", "% time");
  rule(f, width);
  uint64_t calls = 0, total = 0, host = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln_profile_row *r = &rows[i];
    char t[5][32], rate[2][32], pc[16];
    snprintf(pc, sizeof pc, untimed ? "-" : "%.1f%%", r->percent);
    fprintf(f, "%-*s  %-*s  %7llu  %12s  %12s  %12s  %12s  %12s  %9s  %8s  %7s\n", wop,
            r->op, wbe, r->backend, (unsigned long long)r->calls,
            device_time(untimed, r->total_ns, t[0], sizeof t[0]),
            device_time(untimed, r->total_ns / r->calls, t[1], sizeof t[1]),
            device_time(untimed, r->min_ns, t[2], sizeof t[2]),
            device_time(untimed, r->max_ns, t[3], sizeof t[3]),
            format_time(r->host_ns, t[4], sizeof t[4]),
            format_rate(untimed ? 0 : r->flops, r->gflops, rate[0], sizeof rate[0]),
            format_rate(untimed ? 0 : r->bytes, r->gbps, rate[1], sizeof rate[1]), pc);
    calls += r->calls;
    total += r->total_ns;
    host += r->host_ns;
  }
  rule(f, width);
  char t[2][32], pc[16];
  snprintf(pc, sizeof pc, untimed ? "-" : "%.1f%%", n ? 100.0 : 0.0);
  fprintf(f, "%-*s  %-*s  %7llu  %12s  %12s  %12s  %12s  %12s  %9s  %8s  %7s\n", wop,
          "Total", wbe, "", (unsigned long long)calls,
          device_time(untimed, total, t[0], sizeof t[0]), "", "", "",
          format_time(host, t[1], sizeof t[1]), "", "", pc);
}

/* The builds' section: host times, apart from the calls' (which leave them
 * out), so that a first call's compile does not pass for the call's. */
static void print_builds(FILE *f, const kiln_profile_row *rows, size_t n, int wop,
                         int wbe)
{
  int width = wop + 2 + wbe + 2 + 7 + 4 * 14;
  fprintf(f, "\nBuilds, cache loads and FFT plans (host time, not counted in the "
             "calls above)\n");
  rule(f, width);
  fprintf(f, "%-*s  %-*s  %7s  %12s  %12s  %12s  %12s\n", wop, "Built", wbe, "Backend",
          "Count", "Total", "Mean", "Min", "Max");
  rule(f, width);
  uint64_t count = 0, total = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln_profile_row *r = &rows[i];
    char t[4][32];
    fprintf(f, "%-*s  %-*s  %7llu  %12s  %12s  %12s  %12s\n", wop, r->op, wbe, r->backend,
            (unsigned long long)r->calls, format_time(r->total_ns, t[0], sizeof t[0]),
            format_time(r->total_ns / r->calls, t[1], sizeof t[1]),
            format_time(r->min_ns, t[2], sizeof t[2]),
            format_time(r->max_ns, t[3], sizeof t[3]));
    count += r->calls;
    total += r->total_ns;
  }
  rule(f, width);
  char t[32];
  fprintf(f, "%-*s  %-*s  %7llu  %12s\n", wop, "Total", wbe, "",
          (unsigned long long)count, format_time(total, t, sizeof t));
}

/* The rows as gather() sorts them: the calls', then the builds' (if any),
 * with the same column widths. */
static void print_table(FILE *f, const kiln_profile_row *rows, size_t n, int untimed)
{
  int wop = 5, wbe = 7; /* "Total", "Backend" */
  size_t ncalls = 0;
  while (ncalls < n && !on_host(rows[ncalls].kind))
    ncalls++;
  for (size_t i = 0; i < n; i++) {
    int lop = (int)strlen(rows[i].op), lbe = (int)strlen(rows[i].backend);
    wop = lop > wop ? lop : wop;
    wbe = lbe > wbe ? lbe : wbe;
  }
  print_calls(f, rows, ncalls, wop, wbe, untimed);
  if (ncalls < n)
    print_builds(f, rows + ncalls, n - ncalls, wop, wbe);
}

static void print_left_out(FILE *f, const left_out *lo)
{
  if (lo->pending)
    fprintf(f,
            "%zu call%s still running on the device %s not counted; call "
            "kiln_finish() first\n",
            lo->pending, lo->pending == 1 ? "" : "s", lo->pending == 1 ? "is" : "are");
  if (lo->failed)
    fprintf(f,
            "%zu call%s left out: a command failed, or the driver gave no "
            "profiling times\n",
            lo->failed, lo->failed == 1 ? "" : "s");
  if (lo->dropped)
    fprintf(f,
            "%llu call%s not recorded: out of host memory, or the driver "
            "refused an event\n",
            (unsigned long long)lo->dropped, lo->dropped == 1 ? "" : "s");
}

KILN_API kiln_status kiln_profile_report(kiln_runtime *rt, FILE *f)
{
  static const char fn[] = "kiln_profile_report";
  if (!rt || !f)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime and a FILE to print into", fn,
                      !rt ? "rt" : "f");
  kiln_profile_row *rows;
  size_t n;
  left_out lo;
  kiln_status st = gather(rt, fn, &rows, &n, &lo);
  if (st != KILN_OK)
    return st;
  if (!rt->profile) {
    fprintf(f, "kiln profile: profiling is off; set KILN_PROFILE=1 or "
               "kiln_options.profile to record calls\n");
  } else {
    fprintf(f, "kiln profile on %s\n", kiln_runtime_device(rt)->name);
    if (rt->prof->untimed)
      fprintf(f, "(no device times: this driver's profiling timestamps do not advance "
                 "with time; host times only)\n");
    print_table(f, rows, n, rt->prof->untimed);
    print_left_out(f, &lo);
  }
  free(rows);
  if (fflush(f) != 0 || ferror(f))
    return kiln__fail(rt, KILN_ERR_IO, "%s: writing the table failed: %s", fn,
                      strerror(errno));
  return KILN_OK;
}
