/*
 * fft_kiln.c — kiln's own backend of kiln_fft(): 1-D complex transforms of
 * power-of-two lengths, batched, as passes of cl/fft.cl's Stockham kernels.
 *
 * A plan splits n = 2^m into radix-32 passes plus at most one pass of radix
 * 2, 4 or 8, or two of radix 4 for the leftover 16 (see cl/fft.cl for why
 * there is no radix 16). The small passes come first, where the writes of
 * consecutive work-items are R apart: the smaller R, the less scattered.
 * The plan owns the twiddle table (computed in double on the host, so each
 * entry is correctly rounded to the transform's type) and, for two passes or
 * more, a scratch buffer of the batch's size: passes alternate between it and
 * `out`, starting so that the last one lands in `out`; `in` is only read.
 * Like the other FFT backends' working memory, these two buffers sit outside
 * kiln's memory accounting and live as long as the plan (the runtime).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "ops.h"
#include "tuning.h"
#include "kernel_args.h"

/* 2^30, the longest length, takes 6 radix-32 passes. */
#define MAX_PASSES 8

typedef struct fft_kiln_plan {
  unsigned npass;
  unsigned radix[MAX_PASSES];
  size_t row_bytes; /* one complex row */
  cl_mem twiddles;  /* NULL when no pass needs one */
  cl_mem scratch;   /* NULL for fewer than two passes */
} fft_kiln_plan;

static int is_pow2(size_t n)
{
  return n && !(n & (n - 1));
}

static const char *kiln_cannot(kiln_runtime *rt, const kiln__fft *f)
{
  (void)rt;
  if (f->d.kind != KILN_FFT_C2C)
    return "kiln's own FFT runs complex-to-complex transforms only";
  if (f->d.ndim != 1)
    return "kiln's own FFT runs 1-D transforms only";
  if (!is_pow2(f->d.shape[0]))
    return "kiln's own FFT runs power-of-two lengths only";
  if (f->d.shape[0] > (size_t)1 << 30)
    return "kiln's own FFT runs lengths up to 2^30";
  return NULL;
}

static void kiln_release(void *p)
{
  fft_kiln_plan *plan = p;
  if (!plan)
    return;
  if (plan->twiddles)
    clReleaseMemObject(plan->twiddles);
  if (plan->scratch)
    clReleaseMemObject(plan->scratch);
  free(plan);
}

/* The passes of n = 2^m, smallest radix first. */
static void split(fft_kiln_plan *plan, unsigned m)
{
  unsigned rest = m % 5;
  if (rest == 4) {
    plan->radix[plan->npass++] = 4;
    plan->radix[plan->npass++] = 4;
  } else if (rest) {
    plan->radix[plan->npass++] = 1u << rest;
  }
  for (unsigned i = 0; i < m / 5; i++)
    plan->radix[plan->npass++] = 32;
}

/* The table of cl/fft.cl: at 4 (p + k), for k < p, w = exp(-2 pi i k / (p R))
 * and w^(R/2), for each pass's p and R. */
static kiln_status upload_twiddles(kiln_runtime *rt, fft_kiln_plan *plan, int f64,
                                   const char *what)
{
  size_t p_last = 1;
  for (unsigned s = 0; s + 1 < plan->npass; s++)
    p_last *= plan->radix[s];
  size_t values = 4 * 2 * p_last, elem = f64 ? 8 : 4;
  double *tw = calloc(values, sizeof *tw); /* [0, 4): unused, p starts at 1 */
  if (!tw)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "%s: no host memory for a "
                      "%zu-entry twiddle table",
                      what, 2 * p_last);
  size_t p = 1;
  for (unsigned s = 0; s < plan->npass; s++) {
    unsigned r = plan->radix[s];
    double step = -2 * CL_M_PI / ((double)p * r);
    for (size_t k = 0; k < p; k++) {
      double *e = tw + 4 * (p + k);
      e[0] = cos(step * (double)k), e[1] = sin(step * (double)k);
      e[2] = cos(step * (double)(k * r / 2)), e[3] = sin(step * (double)(k * r / 2));
    }
    p *= r;
  }
  if (!f64) { /* narrowed in place: the floats fit in the doubles' room */
    float *tf = (float *)tw;
    for (size_t i = 0; i < values; i++)
      tf[i] = (float)tw[i];
  }
  cl_int err;
  plan->twiddles = clCreateBuffer(rt->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  values * elem, tw, &err);
  free(tw);
  if (err != CL_SUCCESS) {
    plan->twiddles = NULL;
    return kiln__fail_cl(rt, err, "clCreateBuffer", "%s: its %zu-entry twiddle table",
                         what, 2 * p_last);
  }
  return KILN_OK;
}

static kiln_status kiln_plan(kiln_runtime *rt, const kiln__fft *f, void **out)
{
  static const char what[] = "kiln_fft(kiln): building a plan";
  fft_kiln_plan *plan = calloc(1, sizeof *plan);
  if (!plan)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory", what);
  size_t n = f->d.shape[0];
  int f64 = f->d.dtype == KILN_F64;
  unsigned m = 0;
  while (((size_t)1 << m) < n)
    m++;
  split(plan, m);
  plan->row_bytes = n * 2 * (f64 ? 8 : 4);
  kiln_status st = KILN_OK;
  if (plan->npass)
    st = upload_twiddles(rt, plan, f64, what);
  if (st == KILN_OK && plan->npass >= 2) {
    cl_int err;
    size_t bytes = plan->row_bytes * f->d.batch;
    plan->scratch = clCreateBuffer(rt->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
      plan->scratch = NULL;
      st = kiln__fail_cl(rt, err, "clCreateBuffer", "%s: its %zu-byte scratch buffer",
                         what, bytes);
    }
  }
  if (st != KILN_OK) {
    kiln_release(plan);
    return st;
  }
  *out = plan;
  return KILN_OK;
}

static kiln_status kiln_run(kiln_runtime *rt, void *p, const kiln__fft *f)
{
  static const char what[] = "kiln_fft(kiln)";
  fft_kiln_plan *plan = p;
  int f64 = f->d.dtype == KILN_F64;
  if (!plan->npass) { /* length 1: the transform is a copy */
    cl_event ev = NULL;
    cl_int err = clEnqueueCopyBuffer(rt->queue, f->in, f->out, 0, 0,
                                     plan->row_bytes * f->d.batch, 0, NULL, &ev);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(rt, err, "clEnqueueCopyBuffer", "%s: a transform of length 1",
                           what);
    return kiln__runtime_track(rt, ev, what);
  }
  cl_uint n = (cl_uint)f->d.shape[0];
  double sign = f->d.inverse ? 1 : -1;
  /* With an odd number of passes the first writes `out`, else the scratch. */
  cl_mem src = f->in, dst = plan->npass % 2 ? f->out : plan->scratch;
  kiln__fft_tuning t = rt->tuning->t.fft;
  cl_uint stride = 1;
  for (unsigned s = 0; s < plan->npass; s++) {
    /* Wide radix-32 passes: (k, block, row) in groups of t.group along k;
     * the others: (i, row), groups as the driver likes. */
    int wide = plan->radix[s] == 32 && stride >= t.wide_from;
    size_t blocks = n / plan->radix[s] / stride;
    size_t global[3] = {wide ? stride : n / plan->radix[s], wide ? blocks : f->d.batch,
                        f->d.batch};
    size_t local[3] = {stride < t.group ? stride : t.group, 1, 1};
    char variant[16];
    snprintf(variant, sizeof variant, "r%u%s_%s", plan->radix[s], wide ? "w" : "",
             f64 ? "f64" : "f32");
    kiln_status st =
      kiln__launch_fft(rt, what, variant, wide ? 3 : 2, global, wide ? local : NULL, src,
                       dst, stride, n, sign, plan->twiddles);
    if (st != KILN_OK)
      return st;
    stride *= plan->radix[s];
    src = dst;
    dst = dst == f->out ? plan->scratch : f->out;
  }
  return KILN_OK;
}

const kiln__fft_backend kiln__fft_kiln = {
  .id = KILN_BACKEND_KILN,
  .cannot = kiln_cannot,
  .plan = kiln_plan,
  .run = kiln_run,
  .release = kiln_release,
};
