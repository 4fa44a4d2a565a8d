/*
 * fft_kiln.c — kiln's own backend of kiln_fft(): complex transforms of
 * power-of-two lengths in 1, 2 and 3 dimensions, batched, as passes of
 * cl/fft.cl's Stockham kernels.
 *
 * Each axis is a batch of 1-D transforms of its length n = 2^m. With the
 * scalar kernels (GPUs; f64; columns) it is split into radix-32 passes plus
 * at most one pass of radix 2, 4 or 8, or two of radix 4 for the leftover
 * 16 (see cl/fft.cl for why there is no scalar radix 16). The first pass
 * (stride 1) is where a work-item's R points are written side by side, R
 * apart from its neighbour's: the small passes come first, where the
 * smaller R, the less scattered. Where the tuning says so (CPUs) rows of
 * float32 of 2^7 points or more run the vector kernels instead: a radix-16
 * first pass, kiln_fft_r16v1 (which transposes its lanes' points in
 * registers and writes whole vectors), or a radix-256 one, kiln_fft_r256v1,
 * where the batch gives it enough work-items (plan_axis()), radix-256
 * passes (two radix-16 ones in one trip through memory) while they fit, a
 * radix-16 one, and the pass of radix 2, 4 or 8 for what is left last,
 * where its writes are contiguous; rows of up to the tuning's row_max
 * points (CPUs: 2048) run those passes all in one launch, kiln_fft_rowv, a
 * row a work-item in its private memory (radix 16 while more than 16
 * points are left, then the rest). The last axis (rows) runs the row
 * kernels; the others run the column kernels in place of a transpose: an
 * axis of n points whose neighbours along it are `cols` elements apart (the
 * product of the later lengths) is `batch` arrays of (n, cols), and a
 * column pass reads and writes whole rows of them (cl/fft.cl). Axes run
 * last first. Where the tuning's local_max is non-zero (GPUs), an axis of
 * up to local_max points (half for f64) runs whole in local memory in one
 * launch of cl/fft_local.cl, and one of up to local_max^2 in two (the
 * four-step split, plan_local() and run_local()); docs/fft.md, "On GPUs".
 *
 * The plan owns one twiddle table per distinct length (computed in double
 * on the host, so each entry is correctly rounded to the transform's type;
 * a table is indexed by each pass's stride, so two lengths cannot share one)
 * and, for two passes or more in all, a scratch buffer of the batch's size:
 * passes alternate between it and `out`, starting so that the last one
 * lands in `out`; `in` is only read. Both come from kiln__plan_mem_create(),
 * so they count against the memory budget as the plan's bytes, and live as
 * long as the plan (until kiln_memory_trim() or a want of room releases it
 * between calls).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compile/kernel_args.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "tuning/tuning.h"

/* 2^30, the longest length, takes 6 radix-32 passes. */
#define MAX_PASSES 8
/* The most points one transform may have (the column kernels index an
 * array's floats with a uint). */
#define MAX_POINTS ((size_t)1 << 30)

/* One axis's batch of 1-D transforms. */
typedef struct fft_axis {
  size_t n, cols, batch; /* n points, neighbours cols apart, batch arrays */
  unsigned npass;
  unsigned radix[MAX_PASSES];
  int vec;              /* float32 rows on the vector kernels (r16v1, r<R>v) */
  int row;              /* and each row in one launch (rowv) */
  int local;            /* in local memory (cl/fft_local.cl): radix[] = N1 (, N2) */
  cl_mem twiddles;      /* NULL when no pass needs one */
  size_t twiddle_bytes; /* of the table, when owned */
  int owns;             /* whether twiddles is this axis's own, else an earlier one's */
} fft_axis;

typedef struct fft_kiln_plan {
  unsigned naxis, nlaunch; /* nlaunch: all axes' launches */
  fft_axis axis[3];        /* in the order they run: the last axis first */
  size_t bytes;            /* the whole batch */
  cl_mem scratch;          /* NULL for fewer than two launches */
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
  size_t points = 1;
  for (unsigned a = 0; a < f->d.ndim; a++) {
    if (!is_pow2(f->d.shape[a]))
      return "kiln's own FFT runs power-of-two lengths only";
    if (f->d.shape[a] > MAX_POINTS / points)
      return "kiln's own FFT runs transforms of up to 2^30 points";
    points *= f->d.shape[a];
  }
  return NULL;
}

static void kiln_release(kiln_runtime *rt, void *p)
{
  fft_kiln_plan *plan = p;
  if (!plan)
    return;
  for (unsigned a = 0; a < plan->naxis; a++)
    if (plan->axis[a].owns)
      kiln__plan_mem_release(rt, plan->axis[a].twiddles, plan->axis[a].twiddle_bytes);
  kiln__plan_mem_release(rt, plan->scratch, plan->bytes);
  free(plan);
}

/* The passes of n = 2^m: on the vector kernels radix 16 or, with
 * `first256`, radix 256 first, then 256 while 8 bits are left, 16 while 4
 * are, and the rest; else the smallest radix first, then radix 32. */
static void split(fft_axis *ax, unsigned m, int first256)
{
  /* Rows whole in one launch (m <= 11: no radix 256) get the passes
   * kiln_fft_rowv runs: radix 16 while more than 16 points are left, then
   * the rest. */
  assert(!ax->row || m <= 11);
  if (ax->vec) { /* m >= 7 */
    unsigned first = first256 ? 8 : 4, left = m - first;
    ax->radix[ax->npass++] = 1u << first;
    for (; left >= 8; left -= 8)
      ax->radix[ax->npass++] = 256;
    if (left >= 4) {
      ax->radix[ax->npass++] = 16;
      left -= 4;
    }
    if (left)
      ax->radix[ax->npass++] = 1u << left;
    return;
  }
  unsigned rest = m % 5;
  if (rest == 4) {
    ax->radix[ax->npass++] = 4;
    ax->radix[ax->npass++] = 4;
  } else if (rest) {
    ax->radix[ax->npass++] = 1u << rest;
  }
  for (unsigned i = 0; i < m / 5; i++)
    ax->radix[ax->npass++] = 32;
}

/* The table of cl/fft.cl: at 4 (p + k), for k < p, w = exp(-2 pi i k / (p R))
 * and h = w^(R/2) (w^16 for radix 256), for each pass's p and R; with a
 * radix-256 pass, exp(2 pi i u / 256) for u < 256 at 4 n, past them all. */
static kiln_status upload_twiddles(kiln_runtime *rt, fft_axis *ax, int f64)
{
  size_t p_last = ax->n / ax->radix[ax->npass - 1]; /* the last pass's stride */
  int r256 = 0;
  for (unsigned s = 0; s < ax->npass; s++)
    r256 |= ax->radix[s] == 256;
  size_t values = r256 ? 4 * ax->n + 2 * 256 : 4 * 2 * p_last, elem = f64 ? 8 : 4;
  double *tw = calloc(values, sizeof *tw); /* [0, 4): unused, p starts at 1 */
  if (!tw)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_fft(kiln): building a plan: no host memory for a "
                      "%zu-entry twiddle table",
                      2 * p_last);
  size_t p = 1;
  for (unsigned s = 0; s < ax->npass; s++) {
    unsigned r = ax->radix[s], hpow = r == 256 ? 16 : r / 2;
    double step = -2 * CL_M_PI / ((double)p * r);
    for (size_t k = 0; k < p; k++) {
      double *e = tw + 4 * p + k;
      e[0] = cos(step * (double)k), e[p] = sin(step * (double)k);
      e[2 * p] = cos(step * (double)(k * hpow)),
            e[3 * p] = sin(step * (double)(k * hpow));
    }
    p *= r;
  }
  for (size_t u = 0; r256 && u < 256; u++) {
    tw[4 * ax->n + 2 * u] = cos(2 * CL_M_PI * (double)u / 256);
    tw[4 * ax->n + 2 * u + 1] = sin(2 * CL_M_PI * (double)u / 256);
  }
  if (!f64) { /* narrowed in place: the floats fit in the doubles' room */
    float *tf = (float *)tw;
    for (size_t i = 0; i < values; i++)
      tf[i] = (float)tw[i];
  }
  kiln_status st = kiln__plan_mem_create(rt, "kiln_fft", "plan's twiddle table",
                                         CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                         values * elem, tw, &ax->twiddles);
  free(tw); /* copied, and resident on the device */
  if (st == KILN_OK) {
    ax->owns = 1;
    ax->twiddle_bytes = values * elem;
  }
  return st;
}

/* Whether axis ax of 2^m points runs in local memory (the tuning's
 * local_max, halved for float64): whole, or as N1 N2 with both within it
 * as radix[0] and radix[1]. N1, the strided first step's length, is the
 * smaller: a group then holds more of its sequences, which lie side by
 * side in memory, so its loads and stores run in longer contiguous pieces. */
static int plan_local(kiln_runtime *rt, fft_axis *ax, unsigned m, int f64)
{
  size_t cap = rt->tuning->t.fft.local_max >> f64;
  if (!cap || m == 0 || ax->n > cap * cap)
    return 0;
  ax->local = 1;
  if (ax->n <= cap) {
    ax->radix[ax->npass++] = (unsigned)ax->n;
    return 1;
  }
  ax->radix[ax->npass++] = 1u << (m / 2);
  ax->radix[ax->npass++] = 1u << (m - m / 2);
  return 1;
}

/* The local kernel's tables (cl/fft_local.cl): (cos, sin) of 2 pi j / N
 * for j < N1, then with two launches j < N2, then 2 pi j / n for j < N1. */
static kiln_status upload_local(kiln_runtime *rt, fft_axis *ax, int f64)
{
  size_t n1 = ax->radix[0], n2 = ax->npass > 1 ? ax->radix[1] : 0;
  size_t values = 2 * (n1 + n2 + (n2 ? n1 : 0)), elem = f64 ? 8 : 4;
  double *tw = malloc(values * sizeof *tw);
  if (!tw)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_fft(kiln): building a plan: no host memory for a "
                      "%zu-entry twiddle table",
                      values / 2);
  size_t lens[3] = {n1, n2, n2 ? ax->n : 0}, counts[3] = {n1, n2, n2 ? n1 : 0}, at = 0;
  for (unsigned t = 0; t < 3; t++)
    for (size_t j = 0; j < counts[t]; j++, at += 2) {
      tw[at] = cos(2 * CL_M_PI * (double)j / (double)lens[t]);
      tw[at + 1] = sin(2 * CL_M_PI * (double)j / (double)lens[t]);
    }
  if (!f64) { /* narrowed in place: the floats fit in the doubles' room */
    float *tf = (float *)tw;
    for (size_t i = 0; i < values; i++)
      tf[i] = (float)tw[i];
  }
  kiln_status st = kiln__plan_mem_create(rt, "kiln_fft", "plan's twiddle table",
                                         CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                         values * elem, tw, &ax->twiddles);
  free(tw);
  if (st == KILN_OK) {
    ax->owns = 1;
    ax->twiddle_bytes = values * elem;
  }
  return st;
}

/* Axis a's launches counted, and its twiddles: an earlier axis's table when
 * its passes are the same (the rows' vector passes and the columns' differ),
 * else its own. */
static kiln_status share_or_upload(kiln_runtime *rt, fft_kiln_plan *plan, unsigned a,
                                   int f64)
{
  fft_axis *ax = &plan->axis[a];
  plan->nlaunch += ax->row ? 1 : ax->npass;
  for (unsigned b = 0; b < a; b++)
    if (plan->axis[b].npass == ax->npass && plan->axis[b].local == ax->local &&
        memcmp(plan->axis[b].radix, ax->radix, ax->npass * sizeof *ax->radix) == 0) {
      ax->twiddles = plan->axis[b].twiddles;
      return KILN_OK;
    }
  if (!ax->npass)
    return KILN_OK;
  return ax->local ? upload_local(rt, ax, f64) : upload_twiddles(rt, ax, f64);
}

/* Axis a of plan: shape[d] with d = ndim - 1 - a, its passes and its
 * twiddles (an earlier axis's, when its passes are the same). */
static kiln_status plan_axis(kiln_runtime *rt, fft_kiln_plan *plan, const kiln__fft *f,
                             unsigned a)
{
  fft_axis *ax = &plan->axis[a];
  unsigned d = f->d.ndim - 1 - a;
  ax->n = f->d.shape[d];
  ax->cols = 1;
  ax->batch = f->d.batch;
  for (unsigned k = 0; k < f->d.ndim; k++)
    *(k < d ? &ax->batch : &ax->cols) *= k == d ? 1 : f->d.shape[k];
  unsigned m = 0;
  while (((size_t)1 << m) < ax->n)
    m++;
  if (plan_local(rt, ax, m, f->d.dtype == KILN_F64))
    return share_or_upload(rt, plan, a, f->d.dtype == KILN_F64);
  /* The vector kernels: rows of float32, of 2^7 points or more (the first
   * pass's n/16 points of each radix 8 lanes at a time, the next passes'
   * strides 8 or more). */
  ax->vec =
    rt->tuning->t.fft.vec_first && ax->cols == 1 && f->d.dtype == KILN_F32 && m >= 7;
  ax->row = ax->vec && ax->n <= rt->tuning->t.fft.row_max;
  /* The vector first pass of radix 256 (r256v1) where it has at least 4
   * work-items (of 2048 points) a compute unit, else of radix 16: with
   * fewer, the larger pass leaves cores idle and was slower; with 4 or
   * more it saves a launch at some lengths and was faster or the same.
   * The figures are in docs/performance.md, "The first pass of radix
   * 256" (`kiln bench fft --backend kiln,fftw-measure --repeat 30`; other
   * lengths and batches with KILN_PROFILE=1 kiln run fft). */
  unsigned cu = kiln_runtime_device(rt)->compute_units;
  int first256 =
    ax->vec && !ax->row && ax->batch * (ax->n >> 11) >= 4 * (size_t)(cu ? cu : 1);
  split(ax, m, first256);
  return share_or_upload(rt, plan, a, f->d.dtype == KILN_F64);
}

static kiln_status kiln_plan(kiln_runtime *rt, const kiln__fft *f, void **out)
{
  static const char what[] = "kiln_fft(kiln): building a plan";
  fft_kiln_plan *plan = calloc(1, sizeof *plan);
  if (!plan)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory", what);
  assert(f->d.ndim >= 1 && f->d.ndim <= 3);
  plan->naxis = f->d.ndim;
  plan->bytes = f->d.batch * 2 * (f->d.dtype == KILN_F64 ? 8 : 4);
  for (unsigned a = 0; a < f->d.ndim; a++)
    plan->bytes *= f->d.shape[a];
  kiln_status st = KILN_OK;
  for (unsigned a = 0; a < plan->naxis && st == KILN_OK; a++)
    st = plan_axis(rt, plan, f, a);
  if (st == KILN_OK && plan->nlaunch >= 2)
    st = kiln__plan_mem_create(rt, "kiln_fft", "plan's scratch buffer", CL_MEM_READ_WRITE,
                               plan->bytes, NULL, &plan->scratch);
  if (st != KILN_OK) {
    kiln_release(rt, plan);
    return st;
  }
  *out = plan;
  return KILN_OK;
}

/* Pass s of axis ax, at stride p, from src to dst. Rows: the vector first
 * pass over (i / 8, row), r16v1 in groups as the driver likes, r256v1 in
 * groups of one; the other vector passes over (k / 8, block, row), r256v in
 * groups of one, the others in groups of t.group points along k and then
 * blocks; wide passes (p >= t.wide_from) over (k, block, row) in groups of
 * t.group along k; the others over (i, row), in groups as the driver likes;
 * columns: (column, i, array), in groups of t.group along the columns. */
typedef struct at {
  cl_mem mem;
  cl_ulong off; /* in reals: a view's first element, else 0 */
} at;

static unsigned log2u(size_t x)
{
  unsigned l = 0;
  while (((size_t)1 << l) < x)
    l++;
  return l;
}

/* Launch s of a local axis (cl/fft_local.cl's header says what each
 * argument is): whole sequences, else step 1 (the N2 strided DFTs of
 * length N1, twiddled) or step 2 (the N1 DFTs of length N2, written N1
 * apart). Groups of g sequences: as many as the local room and local_cols
 * allow, and enough for a work-item's local_radix points. */
static kiln_status run_local(kiln_runtime *rt, const fft_axis *ax, unsigned s,
                             double sign, int f64, at src, at dst)
{
  kiln__fft_tuning t = rt->tuning->t.fft;
  size_t n1 = ax->radix[0], n2 = ax->npass > 1 ? ax->radix[1] : 1, c = ax->cols;
  size_t len = ax->radix[s], a = s ? n1 : n2, room = t.local_max >> f64;
  cl_uint sa, st, oa, ot;
  if (ax->npass == 1)
    sa = oa = 0, st = ot = (cl_uint)c;
  else if (s == 0)
    sa = oa = (cl_uint)c, st = ot = (cl_uint)(n2 * c);
  else
    sa = (cl_uint)(n2 * c), st = (cl_uint)c, oa = (cl_uint)c, ot = (cl_uint)(n1 * c);
  size_t seqs = ax->batch * a * c, g = 1;
  while (g < t.local_cols && g * 2 * len <= room && g < seqs)
    g *= 2;
  while (g * len < t.local_radix)
    g *= 2; /* lengths below the radix: several sequences a work-item's points */
  size_t local[1] = {g * len / t.local_radix};
  size_t global[1] = {(seqs + g - 1) / g * local[0]};
  cl_uint tw_n = s ? (cl_uint)(2 * n1) : 0;
  return kiln__launch_fft_local(
    rt, "kiln_fft(kiln)", f64 ? "f64" : "f32", 1, global, local, src.mem, src.off,
    dst.mem, dst.off, (cl_uint)len, log2u(a), log2u(c), (cl_uint)g, seqs, ax->n * c, sa,
    1, st, oa, 1, ot, ax->npass > 1 && s == 0, sign, ax->twiddles, tw_n,
    (cl_uint)(2 * n1), (cl_uint)(2 * (n1 + n2)));
}

static kiln_status run_pass(kiln_runtime *rt, const fft_axis *ax, unsigned s, cl_uint p,
                            double sign, int f64, at src, at dst)
{
  static const char what[] = "kiln_fft(kiln)";
  kiln__fft_tuning t = rt->tuning->t.fft;
  if (ax->local)
    return run_local(rt, ax, s, sign, f64, src, dst);
  unsigned r = ax->radix[s];
  cl_uint n = (cl_uint)ax->n;
  char variant[24]; /* "r%u%s_%s": the compiler counts 10 digits for %u */
  if (ax->cols > 1) {
    size_t global[3] = {ax->cols, ax->n / r, ax->batch};
    size_t local[3] = {ax->cols < t.group ? ax->cols : t.group, 1, 1};
    snprintf(variant, sizeof variant, "r%u_%s", r, f64 ? "f64" : "f32");
    return kiln__launch_fft_col(rt, what, variant, 3, global, local, src.mem, src.off,
                                dst.mem, dst.off, p, n, (cl_uint)ax->cols, sign,
                                ax->twiddles);
  }
  if (ax->row) { /* a row a work-item */
    size_t global[1] = {ax->batch}, local[1] = {1};
    return kiln__launch_fft(rt, what, "rowv_f32", 1, global, local, src.mem, src.off,
                            dst.mem, dst.off, p, n, sign, ax->twiddles);
  }
  if (ax->vec) { /* 8 items a work-item */
    assert(!f64 && (s == 0 ? (r == 16 || r == 256) && ax->n / r >= 8 : p >= 8));
    /* A radix-256 work-item is 2048 points' work: groups of one, shared
     * out one by one, ran 2^16 faster than groups of 8 or 16 work-items
     * (docs/performance.md, "Two launches, kept" under FFT). */
    if (s == 0) {
      size_t global[2] = {ax->n / r / 8, ax->batch}, one[2] = {1, 1};
      return kiln__launch_fft(rt, what, r == 256 ? "r256v1_f32" : "r16v1_f32", 2, global,
                              r == 256 ? one : NULL, src.mem, src.off, dst.mem, dst.off,
                              p, n, sign, ax->twiddles);
    }
    size_t blocks = ax->n / r / p, items = r == 256 ? 1 : t.group > 8 ? t.group / 8 : 1;
    size_t global[3] = {p / 8, blocks, ax->batch};
    size_t local[3] = {p / 8 < items ? p / 8 : items, 1, 1};
    local[1] = items / local[0] < blocks ? items / local[0] : blocks;
    snprintf(variant, sizeof variant, "r%uv_f32", r);
    return kiln__launch_fft(rt, what, variant, 3, global, local, src.mem, src.off,
                            dst.mem, dst.off, p, n, sign, ax->twiddles);
  }
  int wide = p >= t.wide_from;
  /* The one wide kernel is of radix 32: the small passes run first (split()). */
  assert(!wide || r == 32);
  size_t blocks = ax->n / r / p;
  size_t global[3] = {wide ? p : ax->n / r, wide ? blocks : ax->batch, ax->batch};
  size_t local[3] = {p < t.group ? p : t.group, 1, 1};
  snprintf(variant, sizeof variant, "r%u%s_%s", r, wide ? "w" : "", f64 ? "f64" : "f32");
  return kiln__launch_fft(rt, what, variant, wide ? 3 : 2, global, wide ? local : NULL,
                          src.mem, src.off, dst.mem, dst.off, p, n, sign, ax->twiddles);
}

static kiln_status kiln_run(kiln_runtime *rt, void *p, const kiln__fft *f)
{
  static const char what[] = "kiln_fft(kiln)";
  fft_kiln_plan *plan = p;
  int f64 = f->d.dtype == KILN_F64;
  if (!plan->nlaunch) { /* every length 1: the transform is a copy */
    cl_event ev = NULL;
    size_t es = plan->bytes / f->in_count; /* a complex element's */
    cl_int err = clEnqueueCopyBuffer(kiln__queue(rt), f->in, f->out, f->in_off * es,
                                     f->out_off * es, plan->bytes, 0, NULL, &ev);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(rt, err, "clEnqueueCopyBuffer", "%s: a transform of length 1",
                           what);
    return kiln__runtime_track(rt, ev, what);
  }
  double sign = f->d.inverse ? 1 : -1;
  /* With an odd number of launches the first writes `out`, else the scratch;
   * in and out are complex, the kernels' offsets in reals. */
  at out = {f->out, 2 * f->out_off}, scratch = {plan->scratch, 0};
  at src = {f->in, 2 * f->in_off}, dst = plan->nlaunch % 2 ? out : scratch;
  for (unsigned a = 0; a < plan->naxis; a++) {
    const fft_axis *ax = &plan->axis[a];
    cl_uint stride = 1;
    for (unsigned s = 0; s < (ax->row ? 1 : ax->npass); s++) {
      kiln_status st = run_pass(rt, ax, s, stride, sign, f64, src, dst);
      if (st != KILN_OK)
        return st;
      stride *= ax->radix[s];
      int to_out = dst.mem != out.mem || dst.off != out.off; /* the next pass's */
      src = dst;
      dst = to_out ? out : scratch;
    }
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
