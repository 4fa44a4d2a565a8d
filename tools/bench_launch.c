/*
 * bench_launch.c — `kiln bench launch`: what launching a kernel costs, in
 * microseconds per launch (medians):
 *   kiln          one kiln_kernel_launch() waited for by kiln_finish(); each
 *                 of N such launches is one sample
 *   kiln-batch    N launches, then one kiln_finish(): the time over N, the
 *                 cost of enqueueing
 *   opencl,       the same by clEnqueueNDRangeKernel() and clFinish() on
 *   opencl-batch  kiln's queue, with the kernel built by OpenCL itself: the
 *                 peers, so the ratios show what kiln adds
 * The rows are N (--sizes). The kernel is one work-item that adds 1 to a
 * counter, next to empty, and countable: each peer's warm-up is checked by
 * reading the counter back before it is timed.
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"
#include "kiln/kiln.h"
#include "kiln/kiln_cl.h"

static const char count_source[] = "kernel void count(global int *n) { n[0] += 1; }\n";

static const char *const launch_peers[] = {"kiln", "kiln-batch", "opencl",
                                           "opencl-batch"};
static const int launch_built[] = {1, 1, 1, 1};
static const char *const launch_not_built[] = {NULL, NULL, NULL, NULL};
static const size_t launch_defaults[] = {1000};
static const size_t launch_quick[] = {20};
static const char *const launch_ratios[][2] = {{"kiln", "opencl"},
                                               {"kiln-batch", "opencl-batch"}};
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec launch_spec = {
  .op = "launch",
  .summary = "us per kernel launch, each waited for or N in a batch, against OpenCL "
             "called directly",
  .sizes_value = "N,...",
  BENCH_TABLES(launch),
  .selectable = 4,
  .untouched = 1,
  .min_size = 1, .max_size = 100000, .size_multiple = 1,
  .sizes_help = "launch counts such as 100,1000 (at most 16, each 1 to 100000)",
  .repeats = 5,
  .figure = BENCH_US,
  .note = "launch: us per launch of a one-work-item kernel; kiln and opencl wait for "
          "each launch, the -batch peers launch N (the case) and wait once",
};
/* clang-format on */

/* The kernel, through kiln and through OpenCL, and its counter. */
typedef struct launch_run {
  kiln_runtime *rt;
  int k;    /* the peer: even waits for each launch, odd for a batch */
  size_t n; /* launches in a batch, or samples of one launch */
  kiln_program *program;
  kiln_kernel *kernel;
  kiln_buffer *counter;
  cl_command_queue queue;
  cl_kernel cl_kernel;
  const char *call; /* the OpenCL call that failed, and its error */
  cl_int err;
} launch_run;

/* One launch by the peer's path; 0, or -1 after keeping what failed. */
static int launch_one(launch_run *g)
{
  static const size_t one = 1;
  if (g->k < 2)
    return kiln_kernel_launch(g->kernel, 1, &one, NULL) == KILN_OK ? 0 : -1;
  g->call = "clEnqueueNDRangeKernel";
  g->err =
    clEnqueueNDRangeKernel(g->queue, g->cl_kernel, 1, NULL, &one, NULL, 0, NULL, NULL);
  return g->err == CL_SUCCESS ? 0 : -1;
}

static int wait_all(launch_run *g)
{
  if (g->k < 2)
    return kiln_finish(g->rt) == KILN_OK ? 0 : -1;
  g->call = "clFinish";
  g->err = clFinish(g->queue);
  return g->err == CL_SUCCESS ? 0 : -1;
}

/* One timed run: a launch and its wait, or a batch and one wait;
 * milliseconds per launch, or -1 on failure. */
static double launch_once(void *ctx)
{
  launch_run *g = ctx;
  size_t count = g->k % 2 ? g->n : 1;
  double t0 = bench_now_ms();
  for (size_t i = 0; i < count; i++)
    if (launch_one(g) != 0)
      return -1;
  if (wait_all(g) != 0)
    return -1;
  return (bench_now_ms() - t0) / (double)count;
}

/* Why the peer's last run failed. */
static const char *why(const launch_run *g, char *buf, size_t size)
{
  if (g->k < 2)
    return kiln_last_error(g->rt);
  snprintf(buf, size, "%s: %s", g->call, kiln_cl_error_name(g->err));
  return buf;
}

/* Checks, then times peer g->k; adds its record. */
static int measure_peer(const bench_args *args, launch_run *g, bench_records *out)
{
  const int zero = 0;
  int got = -1, want = g->k % 2 ? (int)g->n : 1;
  char buf[128];
  const char *failure = NULL;
  fprintf(stderr, "  launch %-6zu %-12s warm-up and check...", g->n, launch_peers[g->k]);
  if (kiln_buffer_fill(g->counter, 0, 1, &zero) != KILN_OK)
    failure = kiln_last_error(g->rt);
  else if (launch_once(g) < 0)
    failure = why(g, buf, sizeof buf);
  else if (kiln_buffer_read(g->counter, 0, 1, &got) != KILN_OK)
    failure = kiln_last_error(g->rt);
  else if (got != want) {
    snprintf(buf, sizeof buf, "the counter is %d after %d launches", got, want);
    failure = buf;
  }
  if (failure) {
    fprintf(stderr, " FAILED (%s)\n", failure);
    return -1;
  }
  double med = 0;
  int samples = g->k % 2 ? args->repeats : (int)g->n;
  if (bench_time(launch_once, g, samples, &med) != 0) {
    fprintf(stderr, " FAILED (%s)\n", why(g, buf, sizeof buf));
    return -1;
  }
  bench_record r = {.op = "launch",
                    .backend = launch_peers[g->k],
                    .size = g->n,
                    .shape = "1",
                    .median_ms = med,
                    .gflops = NAN,
                    .gbps = NAN,
                    .repeats = samples};
  bench_add(out, &r);
  fprintf(stderr, " %.1f us per launch\n", med * 1e3);
  return 0;
}

/* Builds the kernel through kiln and through OpenCL, on one counter. */
static int launch_setup(launch_run *g)
{
  kiln_runtime *rt = g->rt;
  if (kiln_program_create(rt, count_source, NULL, &g->program) != KILN_OK ||
      kiln_kernel_create(g->program, "count", &g->kernel) != KILN_OK ||
      kiln_buffer_create(rt, KILN_I32, 1, KILN_BUFFER_ZERO, &g->counter) != KILN_OK ||
      kiln_kernel_set_args(g->kernel, "b", g->counter) != KILN_OK)
    return fprintf(stderr, "kiln bench launch: %s\n", kiln_last_error(rt)), -1;
  cl_device_id device = kiln_runtime_cl_device(rt);
  cl_mem mem = kiln_buffer_cl_mem(g->counter);
  const char *source = count_source;
  g->queue = kiln_runtime_cl_queue(rt);
  g->call = "clCreateProgramWithSource";
  cl_program p =
    clCreateProgramWithSource(kiln_runtime_cl_context(rt), 1, &source, NULL, &g->err);
  if (g->err == CL_SUCCESS) {
    g->call = "clBuildProgram";
    g->err = clBuildProgram(p, 1, &device, "", NULL, NULL);
  }
  if (g->err == CL_SUCCESS) {
    g->call = "clCreateKernel";
    g->cl_kernel = clCreateKernel(p, "count", &g->err);
  }
  if (g->err == CL_SUCCESS) {
    g->call = "clSetKernelArg";
    g->err = clSetKernelArg(g->cl_kernel, 0, sizeof mem, &mem);
  }
  if (p)
    clReleaseProgram(p); /* the kernel keeps it */
  if (g->err != CL_SUCCESS)
    return fprintf(stderr, "kiln bench launch: %s: %s\n", g->call,
                   kiln_cl_error_name(g->err)),
           -1;
  return 0;
}

static int run_launch(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench launch on %s (us per launch of a one-work-item kernel; "
          "kiln's path against OpenCL's own)\n",
          kiln_runtime_device(rt)->name);
  launch_run g = {.rt = rt};
  int rc = launch_setup(&g);
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    for (g.k = 0, g.n = a->sizes[s]; g.k < 4 && rc == 0; g.k++)
      if (a->use[g.k])
        rc = measure_peer(a, &g, out);
  if (g.cl_kernel)
    clReleaseKernel(g.cl_kernel);
  kiln_kernel_destroy(g.kernel);
  kiln_program_destroy(g.program);
  kiln_buffer_destroy(g.counter);
  return rc;
}

const bench_group bench_launch_group = {&launch_spec, run_launch};
