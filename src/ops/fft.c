/*
 * fft.c — kiln_fft(): checks the request against the buffers and the device,
 * chooses a backend (kiln's own kernels, VkFFT, clFFT), finds or builds its
 * plan in the runtime's plan cache, runs it and applies the normalisation.
 *
 * Backends compute unscaled transforms in both directions; the scaling of
 * desc->norm (1/n or 1/sqrt(n), n the product of the real-space lengths) is
 * one pass of cl/scale.cl over the output, only when the factor is not 1.
 *
 * The plan cache is a list in the runtime's FFT slot (rt->slots,
 * plans_of()), guarded by rt->lock.
 * Plans are built without holding the lock (clFFT's bake takes seconds on
 * PoCL): two threads that ask for the same new plan at once may both build
 * it; the first to insert wins and the other releases its copy. A plan
 * holds device memory (a scratch buffer, VkFFT's and clFFT's temporary
 * buffers: kiln__plan_mem_create(), counted in the budget), so the cache
 * gives back the plans no call is using when kiln_memory_trim() asks, or
 * when a buffer or another plan finds no room (trim_plans, the slot's
 * reclaimer), like cuFFT's plan cache in PyTorch; the next call of the shape builds the plan
 * again. A call holds its plan from finding it to the end of its run:
 * `users`, under rt->lock, counts such calls, and a plan is only taken out
 * of the list and released while it is 0, so no plan is released under a
 * running call. What the device still has to run of a released plan's
 * commands is safe: OpenCL frees its buffers and kernels after them.
 *
 * A plan is state, not only a recipe: kiln's own keeps a scratch buffer its
 * passes go through, VkFFT's sets the arguments of its own kernels at each
 * VkFFTAppend, and some of VkFFT's and clFFT's keep temporary buffers. Two
 * threads running one plan at once would interleave their commands on the
 * in-order queue (A's first pass, B's first pass into the same scratch, then
 * A's second pass reading B's data). So each plan has a lock held while its
 * commands are enqueued: each run's commands are then consecutive on the
 * queue, which runs them in order, and the next run's first command starts
 * after the last one's has finished. A run on another queue (a stream of
 * the caller's, stream.c) first waits for the last run's marker.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

/* One cached plan: the key (everything a backend's plan depends on) and the
 * backend's plan. */
struct kiln__fft_plan {
  kiln_fft_kind kind;
  kiln_dtype dtype;
  unsigned ndim;
  size_t shape[3];
  size_t batch;
  int inverse; /* 0 or 1; C2R is 1, R2C 0 */
  const kiln__fft_backend *backend;
  void *plan;
  pthread_mutex_t run_lock; /* held while a call enqueues this plan's work */
  kiln__serial serial;      /* its last run's queue, for runs on streams */
  unsigned users;           /* calls holding the plan, under rt->lock */
  struct kiln__fft_plan *next;
};

static const char *kind_name(kiln_fft_kind kind)
{
  return kind == KILN_FFT_C2C ? "C2C" : kind == KILN_FFT_R2C ? "R2C" : "C2R";
}

/* The direction a request computes: R2C is forward, C2R inverse. */
static int is_inverse(const kiln_fft_desc *d)
{
  return d->kind == KILN_FFT_C2R || (d->kind == KILN_FFT_C2C && d->inverse);
}

static kiln_status check_desc(kiln_runtime *rt, const kiln_fft_desc *desc,
                              kiln_fft_desc *d)
{
  *d = *desc;
  d->batch = d->batch ? d->batch : 1;
  d->inverse = is_inverse(d);
  if ((unsigned)d->kind > KILN_FFT_C2R)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_fft: kind %d; expected "
                      "KILN_FFT_C2C, KILN_FFT_R2C or KILN_FFT_C2R",
                      (int)d->kind);
  if ((unsigned)d->norm > KILN_FFT_NORM_FORWARD)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_fft: norm %d; expected "
                      "KILN_FFT_NORM_BACKWARD, KILN_FFT_NORM_ORTHO or "
                      "KILN_FFT_NORM_FORWARD",
                      (int)d->norm);
  if (d->dtype != KILN_F32 && d->dtype != KILN_F64)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "kiln_fft: dtype %s; expected the real "
                      "type float32 or float64 (complex data is then complex64 or "
                      "complex128)",
                      kiln_dtype_name(d->dtype));
  if (d->dtype == KILN_F64 && !kiln_runtime_device(rt)->has_fp64)
    return kiln__no_fp64(rt, "kiln_fft", "float64");
  if (d->ndim < 1 || d->ndim > 3)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_fft: ndim is %u; expected 1 to 3", d->ndim);
  for (unsigned i = 0; i < d->ndim; i++)
    if (!d->shape[i])
      return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                        "kiln_fft: shape[%u] is 0; "
                        "expected every length of the %u-D shape above 0",
                        i, d->ndim);
  for (unsigned i = d->ndim; i < 3; i++)
    d->shape[i] = 0; /* unused: kept out of the plan key */
  if (d->backend != KILN_BACKEND_AUTO && d->backend != KILN_BACKEND_KILN &&
      d->backend != KILN_BACKEND_CLFFT && d->backend != KILN_BACKEND_VKFFT)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_fft: backend %s (%d) is not "
                      "one kiln_fft() runs; expected AUTO, KILN, VKFFT or CLFFT",
                      kiln_backend_name(d->backend), (int)d->backend);
  return KILN_OK;
}

kiln_status kiln__fft_plan(kiln_runtime *rt, const kiln_fft_desc *desc, kiln__fft *f)
{
  kiln_fft_desc d;
  kiln_status st = check_desc(rt, desc, &d);
  if (st != KILN_OK)
    return st;
  /* real-space and half-spectrum elements of the whole batch */
  size_t full = d.batch, half = d.batch;
  for (unsigned i = 0; i < d.ndim; i++) {
    size_t h = i + 1 == d.ndim ? d.shape[i] / 2 + 1 : d.shape[i];
    if (kiln__mul_overflow(full, d.shape[i], &full) || kiln__mul_overflow(half, h, &half))
      return kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_fft: batch * shape overflows");
  }
  *f = (kiln__fft){.d = d,
                   .in_count = d.kind == KILN_FFT_C2R ? half : full,
                   .out_count = d.kind == KILN_FFT_R2C ? half : full};
  return KILN_OK;
}

kiln_dtype kiln__fft_type(const kiln__fft *f, int out)
{
  kiln_dtype real = f->d.dtype, cplx = real == KILN_F32 ? KILN_C32 : KILN_C64;
  return f->d.kind == (out ? KILN_FFT_C2R : KILN_FFT_R2C) ? real : cplx;
}

/* Checks desc, in and out, and fills f. */
static kiln_status check(kiln_runtime *rt, const kiln_fft_desc *desc,
                         const kiln_buffer *in, const kiln_buffer *out, kiln__fft *f)
{
  kiln_status st = kiln__fft_plan(rt, desc, f);
  if (st == KILN_OK)
    st = kiln__check_operand(rt, "kiln_fft", "in", in, kiln__fft_type(f, 0), f->in_count,
                             NULL);
  if (st == KILN_OK)
    st = kiln__check_operand(rt, "kiln_fft", "out", out, kiln__fft_type(f, 1),
                             f->out_count, NULL);
  if (st != KILN_OK)
    return st;
  f->in = kiln__buffer_mem(in);
  f->out = kiln__buffer_mem(out);
  f->in_off = kiln__buffer_first(in);
  f->out_off = kiln__buffer_first(out);
  size_t ib = kiln_dtype_size(kiln__fft_type(f, 0)),
         ob = kiln_dtype_size(kiln__fft_type(f, 1));
  if (in == out ||
      (f->in == f->out && f->in_off * ib < (f->out_off + f->out_count) * ob &&
       f->out_off * ob < (f->in_off + f->in_count) * ib))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_fft: in and out are the same "
                      "buffer%s; expected two (kiln_fft() runs out of place)",
                      in == out ? "" : " (overlapping views of one buffer)");
  return KILN_OK;
}

/* ---- backend choice ------------------------------------------------------ */

/* The backend of id, or NULL for none (or one not built in). */
static const kiln__fft_backend *backend_of(kiln_backend id)
{
  for (const kiln__fft_backend *const *be = kiln__fft_backends; *be; be++)
    if ((*be)->id == id)
      return *be;
  return NULL;
}

/* What a kiln without backend id lacks. */
static const char *package_of(kiln_backend id)
{
  return id == KILN_BACKEND_CLFFT ? "clFFT (Debian package libclfft-dev)"
                                  : "VkFFT (Debian package libvkfft-dev)";
}

/* AUTO's order of preference. On a CPU kiln's own kernels first, where
 * they apply (power-of-two C2C, 1-D to 3-D): on PoCL they ran ahead of
 * VkFFT at every such shape measured, and of clFFT where both were
 * timed. Then VkFFT, ahead of clFFT on 2-D, real and most 1-D lengths;
 * clFFT led at a few, among them the powers of two from 2^13 to 2^17,
 * where VkFFT runs a sequence that fits PoCL's 1 MiB of local memory as
 * one work-group, on one core: those are kiln's. On a GPU VkFFT first:
 * kiln's kernels make one trip through global memory per radix-32 pass
 * where VkFFT's keep whole sequences in local memory; clFFT's do too for
 * all but the longest sequences, so clFFT comes next but for 1-D lengths
 * of 2^20 and more, where kiln's passes led. The figures are in
 * docs/performance.md, "The order of the backends" under FFT (`kiln bench
 * fft --backend kiln,vkfft,clfft --repeat 9`; other shapes with
 * `KILN_PROFILE=1 kiln run fft X.npy -o Y.npy --backend B`). */
void kiln__fft_rule(const kiln_fft_desc *d, int gpu, kiln_backend order[3])
{
  int long_1d = d->ndim == 1 && d->shape[0] >= ((size_t)1 << 20);
  order[0] = gpu ? KILN_BACKEND_VKFFT : KILN_BACKEND_KILN;
  order[1] = !gpu ? KILN_BACKEND_VKFFT : long_1d ? KILN_BACKEND_KILN : KILN_BACKEND_CLFFT;
  order[2] = gpu && !long_1d ? KILN_BACKEND_KILN : KILN_BACKEND_CLFFT;
}

static void preference(kiln_runtime *rt, const kiln__fft *f,
                       const kiln__fft_backend *order[3])
{
  kiln_backend ids[3];
  kiln__fft_rule(&f->d, kiln__gpu_shape(rt), ids);
  for (int i = 0; i < 3; i++)
    order[i] = backend_of(ids[i]);
}

/* The key of f's per-shape choice: all that can change which backend is
 * fastest (the scaling is one pass after any backend, so not norm). */
static void fft_key(const kiln__fft *f, char *key, size_t size)
{
  const size_t *n = f->d.shape;
  snprintf(key, size, "fft %s %s %s %zux%zux%zu batch %zu", kind_name(f->d.kind),
           f->d.inverse ? "inverse" : "forward", kiln_dtype_name(f->d.dtype), n[0],
           n[1] ? n[1] : 1, n[2] ? n[2] : 1, f->d.batch);
}

/* Moves backend id, when it is among out[0..n), to the front. */
static void put_first(const kiln__fft_backend *out[3], unsigned n, kiln_backend id)
{
  for (unsigned i = 1; i < n; i++)
    if (out[i]->id == id) {
      const kiln__fft_backend *be = out[i];
      memmove(&out[1], &out[0], i * sizeof out[0]);
      out[0] = be;
      return;
    }
}

/* The backends that may run f, best first: the one asked for, or AUTO's
 * order without those that say they cannot, the choice recorded for f's
 * shape first. Returns how many (0: failed). */
static unsigned choose(kiln_runtime *rt, const kiln__fft *f,
                       const kiln__fft_backend *out[3], kiln_status *st)
{
  const char *size = kind_name(f->d.kind);
  *st = KILN_OK;
  if (f->d.backend != KILN_BACKEND_AUTO) {
    out[0] = backend_of(f->d.backend);
    if (!out[0]) {
      *st = kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                       "kiln_fft: backend %s was asked for, "
                       "but this kiln was built without %s",
                       kiln_backend_name(f->d.backend), package_of(f->d.backend));
      return 0;
    }
    const char *why = out[0]->cannot(rt, f);
    if (why) {
      *st = kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                       "kiln_fft: backend %s cannot run this "
                       "%s transform: %s",
                       kiln_backend_name(f->d.backend), size, why);
      return 0;
    }
    return 1;
  }
  const kiln__fft_backend *order[3];
  preference(rt, f, order);
  unsigned n = 0;
  for (unsigned i = 0; i < 3; i++)
    if (order[i] && !order[i]->cannot(rt, f))
      out[n++] = order[i];
  if (n) {
    char key[128];
    fft_key(f, key, sizeof key);
    put_first(out, n, kiln__choice_find(rt, key));
    return n;
  }
  static const kiln_backend ids[3] = {KILN_BACKEND_KILN, KILN_BACKEND_VKFFT,
                                      KILN_BACKEND_CLFFT};
  const char *reason[3];
  for (unsigned i = 0; i < 3; i++) {
    const kiln__fft_backend *be = backend_of(ids[i]);
    reason[i] = be ? be->cannot(rt, f) : package_of(ids[i]);
  }
  *st = kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                   "kiln_fft: no backend can run this %s "
                   "transform: kiln: %s; vkfft: %s; clfft: %s",
                   size, reason[0], reason[1], reason[2]);
  return 0;
}

kiln_status kiln__fft_check(kiln_runtime *rt, const kiln_fft_desc *desc,
                            const kiln_buffer *in, const kiln_buffer *out, kiln__fft *f,
                            const kiln__fft_backend *be[3], unsigned *n)
{
  kiln_status st = check(rt, desc, in, out, f);
  *n = st == KILN_OK ? choose(rt, f, be, &st) : 0;
  return st;
}

/* ---- the plan cache ------------------------------------------------------ */

static int plan_matches(const struct kiln__fft_plan *p, const kiln__fft *f,
                        const kiln__fft_backend *be)
{
  return p->backend == be && p->kind == f->d.kind && p->dtype == f->d.dtype &&
         p->ndim == f->d.ndim && p->batch == f->d.batch && p->inverse == f->d.inverse &&
         !memcmp(p->shape, f->d.shape, sizeof p->shape);
}

/* The runtime's list of cached plans: its FFT slot, under rt->lock. */
static struct kiln__fft_plan **plans_of(kiln_runtime *rt)
{
  return (struct kiln__fft_plan **)&rt->slots[KILN__SLOT_FFT].state;
}

static size_t trim_plans(kiln_runtime *rt);
static void release_plans(kiln_runtime *rt);

/* What the runtime does with the plans: releases them at its destruction
 * before its queue and context, gives back the unused ones under memory
 * pressure, and drops them when the kernels' parameters change (their
 * passes follow the parameters they were made with). */
static void tuning_changed(kiln_runtime *rt)
{
  trim_plans(rt);
}

static const kiln__slot_hooks plan_hooks = {
  .release = release_plans,
  .reclaim = trim_plans,
  .tuning_changed = tuning_changed,
};

static struct kiln__fft_plan *plan_find(kiln_runtime *rt, const kiln__fft *f,
                                        const kiln__fft_backend *be)
{
  struct kiln__fft_plan *found = NULL;
  pthread_mutex_lock(&rt->lock);
  for (struct kiln__fft_plan *p = *plans_of(rt); p && !found; p = p->next)
    if (plan_matches(p, f, be))
      found = p;
  if (found)
    found->users++;
  pthread_mutex_unlock(&rt->lock);
  return found;
}

/* Frees plans taken out of the cache, a list through next. */
static void plans_free(kiln_runtime *rt, struct kiln__fft_plan *p)
{
  while (p) {
    struct kiln__fft_plan *next = p->next;
    p->backend->release(rt, p->plan);
    kiln__serial_free(&p->serial);
    pthread_mutex_destroy(&p->run_lock);
    free(p);
    p = next;
  }
}

/* Enqueues a run of plan on the calling thread's queue: after the plan's
 * last run, which may have gone on another stream (see the top). */
/* clFFT takes no offsets (clfftEnqueueTransform takes cl_mems alone), and
 * VkFFT only those fixed in its plan or a plan made to take them at launch
 * (specifyOffsetsAtLaunch); a view's offset is not part of a plan's key.
 * So a view that starts inside its buffer goes to them through a
 * temporary from the pool: a device copy of in before, of out after, on
 * the queue. Not a sub-buffer: those crash NVIDIA's driver when released
 * (buffer_view.c) and need an aligned offset. kiln's own kernels take the
 * offsets and need none of this. */
static kiln_status run_staged(kiln_runtime *rt, struct kiln__fft_plan *plan,
                              const kiln__fft *f)
{
  kiln__fft g = *f;
  kiln_dtype it = kiln__fft_type(f, 0), ot = kiln__fft_type(f, 1);
  size_t ib = kiln_dtype_size(it), ob = kiln_dtype_size(ot);
  kiln_buffer *tin = NULL, *tout = NULL;
  kiln_status st = KILN_OK;
  cl_int err = CL_SUCCESS;
  if (f->in_off) {
    st = kiln__workspace(rt, "kiln_fft", "copy of the in view", it, f->in_count, &tin);
    if (st == KILN_OK)
      err = clEnqueueCopyBuffer(kiln__queue(rt), f->in, tin->mem, f->in_off * ib, 0,
                                f->in_count * ib, 0, NULL, NULL);
    g.in = tin ? tin->mem : NULL, g.in_off = 0;
  }
  if (st == KILN_OK && err == CL_SUCCESS && f->out_off) {
    st = kiln__workspace(rt, "kiln_fft", "copy of the out view", ot, f->out_count, &tout);
    g.out = tout ? tout->mem : NULL, g.out_off = 0;
  }
  if (st == KILN_OK && err == CL_SUCCESS)
    st = plan->backend->run(rt, plan->plan, &g);
  if (st == KILN_OK && err == CL_SUCCESS && tout)
    err = clEnqueueCopyBuffer(kiln__queue(rt), tout->mem, f->out, 0, f->out_off * ob,
                              f->out_count * ob, 0, NULL, NULL);
  if (st == KILN_OK && err != CL_SUCCESS)
    st = kiln__fail_cl(rt, err, "clEnqueueCopyBuffer", "kiln_fft(%s): staging a view",
                       kiln_backend_name(plan->backend->id));
  kiln_buffer_destroy(tin); /* OpenCL keeps the memory until the copies ran */
  kiln_buffer_destroy(tout);
  return st;
}

static kiln_status plan_run(kiln_runtime *rt, struct kiln__fft_plan *plan,
                            const kiln__fft *f)
{
  pthread_mutex_lock(&plan->run_lock);
  kiln_status st = kiln__serial_begin(rt, &plan->serial, "kiln_fft");
  if (st == KILN_OK)
    st = plan->backend->id == KILN_BACKEND_KILN || (!f->in_off && !f->out_off)
           ? plan->backend->run(rt, plan->plan, f)
           : run_staged(rt, plan, f);
  kiln__serial_end(rt, &plan->serial);
  pthread_mutex_unlock(&plan->run_lock);
  return st;
}

/* The end of a call's hold on a plan of plan_get(). */
static void plan_put(kiln_runtime *rt, struct kiln__fft_plan *plan)
{
  pthread_mutex_lock(&rt->lock);
  assert(plan->users > 0);
  plan->users--;
  pthread_mutex_unlock(&rt->lock);
}

static const char *profile_shape(const kiln__fft *f, char *buf, size_t size);

/* be's plan for f, recorded apart when profiling ("fft plan 1024 c2c
 * float32"): VkFFT and clFFT compile their kernels here, which is not the
 * call's time (profile.h). */
static kiln_status plan_make(kiln_runtime *rt, const kiln__fft *f,
                             const kiln__fft_backend *be, void **plan)
{
  char name[64] = "", shape[64];
  kiln__profile_scope ps;
  kiln__profile_aside(rt, &ps, KILN_PROFILE_BUILD, name);
  if (ps.rt) {
    snprintf(name, sizeof name, "fft plan %s", profile_shape(f, shape, sizeof shape));
    kiln__profile_describe(&ps, kiln_backend_name(be->id), 0, 0, "%s", shape);
  }
  kiln_status st = be->plan(rt, f, plan);
  kiln__profile_back(&ps);
  return st;
}

/* The cached plan for f on be, built (without holding rt->lock) when the
 * cache has none, and held by the caller until plan_put(). */
static kiln_status plan_get(kiln_runtime *rt, const kiln__fft *f,
                            const kiln__fft_backend *be, struct kiln__fft_plan **out)
{
  *out = plan_find(rt, f, be);
  if (*out)
    return KILN_OK;
  struct kiln__fft_plan *node = calloc(1, sizeof *node);
  if (!node || pthread_mutex_init(&node->run_lock, NULL) != 0) {
    free(node);
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY, "kiln_fft: no host memory for a plan");
  }
  void *plan = NULL;
  assert(f->d.batch >= 1);
  kiln_status st = plan_make(rt, f, be, &plan);
  if (st != KILN_OK) {
    pthread_mutex_destroy(&node->run_lock);
    free(node);
    return st;
  }
  node->kind = f->d.kind;
  node->dtype = f->d.dtype;
  node->ndim = f->d.ndim;
  node->batch = f->d.batch;
  node->inverse = f->d.inverse;
  node->backend = be;
  node->plan = plan;
  memcpy(node->shape, f->d.shape, sizeof node->shape);
  struct kiln__fft_plan *raced = NULL;
  kiln__runtime_hook(rt, KILN__SLOT_FFT, &plan_hooks); /* before the list holds one */
  pthread_mutex_lock(&rt->lock);
  for (struct kiln__fft_plan *p = *plans_of(rt); p && !raced; p = p->next)
    if (plan_matches(p, f, be))
      raced = p;
  if (raced) {
    raced->users++;
  } else {
    node->users = 1;
    node->next = *plans_of(rt);
    *plans_of(rt) = node;
  }
  pthread_mutex_unlock(&rt->lock);
  if (raced) { /* another thread built the same plan first */
    be->release(rt, plan);
    pthread_mutex_destroy(&node->run_lock);
    free(node);
    node = raced;
  }
  *out = node;
  return KILN_OK;
}

static size_t trim_plans(kiln_runtime *rt)
{
  struct kiln__fft_plan *gone = NULL;
  size_t n = 0;
  pthread_mutex_lock(&rt->lock);
  for (struct kiln__fft_plan **at = &*plans_of(rt); *at;) {
    struct kiln__fft_plan *p = *at;
    if (p->users) {
      at = &p->next;
      continue;
    }
    *at = p->next;
    p->next = gone;
    gone = p;
    n++;
  }
  pthread_mutex_unlock(&rt->lock);
  plans_free(rt, gone); /* outside the lock: clFFT's lock, VkFFT's frees */
  return n;
}

static void release_plans(kiln_runtime *rt)
{
  struct kiln__fft_plan *p = *plans_of(rt);
  *plans_of(rt) = NULL;
  for (const struct kiln__fft_plan *q = p; q; q = q->next)
    assert(q->users == 0); /* kiln_runtime_destroy(): no call in flight */
  plans_free(rt, p);
}

/* ---- normalisation ------------------------------------------------------- */

static double norm_factor(const kiln_fft_desc *d)
{
  double n = 1;
  for (unsigned i = 0; i < d->ndim; i++)
    n *= (double)d->shape[i];
  switch (d->norm) {
  case KILN_FFT_NORM_BACKWARD: return d->inverse ? 1 / n : 1;
  case KILN_FFT_NORM_ORTHO: return 1 / sqrt(n);
  case KILN_FFT_NORM_FORWARD: return d->inverse ? 1 : 1 / n;
  }
  return 1;
}

static kiln_status scale(kiln_runtime *rt, const kiln__fft *f)
{
  double factor = norm_factor(&f->d);
  if (factor == 1)
    return KILN_OK;
  size_t n = f->d.kind == KILN_FFT_C2R ? f->out_count : 2 * f->out_count;
  int f64 = f->d.dtype == KILN_F64;
  cl_ulong off = f->d.kind == KILN_FFT_C2R ? f->out_off : 2 * f->out_off; /* reals */
  return kiln__launch_scale(rt, "kiln_fft(scale)", f64 ? "f64" : "f32", 1, &n, NULL,
                            f->out, off, n, factor);
}

/* ---- what the profiler records ------------------------------------------ */

/* The input read and the output written. */
static uint64_t profile_bytes(const kiln__fft *f)
{
  size_t real = kiln_dtype_size(f->d.dtype), cplx = 2 * real;
  return (uint64_t)f->in_count * (f->d.kind == KILN_FFT_R2C ? real : cplx) +
         (uint64_t)f->out_count * (f->d.kind == KILN_FFT_C2R ? real : cplx);
}

/* The customary count: 5 n log2 n per complex transform of n points, half
 * that for a real one, as FFTW's benchmarks count. */
static uint64_t profile_flops(const kiln__fft *f)
{
  double n = 1;
  for (unsigned i = 0; i < f->d.ndim; i++)
    n *= (double)f->d.shape[i];
  double flops = 5 * n * log2(n) * (double)f->d.batch;
  return (uint64_t)(f->d.kind == KILN_FFT_C2C ? flops : flops / 2);
}

/* "1024x1024 c2c inverse float32" */
static const char *profile_shape(const kiln__fft *f, char *buf, size_t size)
{
  static const char *const kinds[] = {"c2c", "r2c", "c2r"};
  size_t at = 0;
  for (unsigned i = 0; i < f->d.ndim && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%zu", i ? "x" : "", f->d.shape[i]);
  if (at < size)
    snprintf(buf + at, size - at, " %s%s %s", kinds[f->d.kind],
             f->d.kind == KILN_FFT_C2C && f->d.inverse ? " inverse" : "",
             kiln_dtype_name(f->d.dtype));
  return buf;
}

/* ---- benchmark mode -------------------------------------------------------- */

static kiln_status trial(kiln_runtime *rt, const void *req, kiln_backend id,
                         kiln_buffer *out)
{
  kiln__fft f = *(const kiln__fft *)req;
  f.out = kiln__buffer_mem(out); /* scratch: a fresh copy of the out view */
  f.out_off = 0;
  const kiln__fft_backend *be = backend_of(id);
  struct kiln__fft_plan *plan = NULL;
  kiln_status st = plan_get(rt, &f, be, &plan);
  if (st == KILN_OK) {
    st = plan_run(rt, plan, &f);
    plan_put(rt, plan);
  }
  return st;
}

static int can(kiln_runtime *rt, const void *req, kiln_backend id)
{
  return backend_of(id) && !backend_of(id)->cannot(rt, req);
}

/* Benchmark mode (choice.c): the first AUTO call of a shape with no
 * recorded choice times every backend that can run it and puts the fastest
 * first in be[0..n). Backends differ in their roundings only: a transform
 * of n points through log2(n) passes of butterflies has an error of about
 * log2(n) epsilon in the 2-norm, relative to the output's; 8 (log2(n) + 1)
 * epsilon leaves room for twiddle factors and Bluestein's detour, and a
 * wrong kernel is off by order 1. */
static void benchmark(kiln_runtime *rt, const kiln__fft *f, kiln_buffer *out,
                      const kiln__fft_backend *be[3], unsigned n)
{
  kiln_backend all[3];
  double points = 1;
  for (unsigned i = 0; i < n; i++)
    all[i] = be[i]->id;
  for (unsigned i = 0; i < f->d.ndim; i++)
    points *= (double)f->d.shape[i];
  char key[128];
  fft_key(f, key, sizeof key);
  double tol = 8 * (ceil(log2(points)) + 1) * kiln__choice_epsilon(f->d.dtype);
  kiln__bench b = {key, all[0], all, n, can, trial, f, out, {tol, 1}};
  put_first(be, n, kiln__choice_benchmark(rt, &b));
}

/* kiln_fft() inside its profiling scope, which it describes. */
kiln_status kiln__fft_run(kiln_runtime *rt, const kiln_fft_desc *desc,
                          const kiln_buffer *in, kiln_buffer *out,
                          kiln__profile_scope *ps)
{
  kiln__fft f;
  const kiln__fft_backend *be[3];
  struct kiln__fft_plan *plan = NULL;
  unsigned n;
  kiln_status st = kiln__fft_check(rt, desc, in, out, &f, be, &n);
  if (st != KILN_OK)
    return st;
  if (rt->tuning->benchmark && f.d.backend == KILN_BACKEND_AUTO && n > 1)
    benchmark(rt, &f, out, be, n);
  /* A backend may refuse a shape only when it plans it (VkFFT's multi-pass
   * R2C of odd lengths): AUTO then goes on to the next, and runs a real
   * transform that none can do as a complex one (fft_real.c). AUTO goes on
   * as well when a plan's memory does not fit (after the pool and the
   * unused plans were given back): another backend's may, and the last
   * one's refusal is the call's. */
  unsigned i = 0;
  while (i < n &&
         ((st = plan_get(rt, &f, be[i], &plan)) == KILN_ERR_UNSUPPORTED ||
          (st == KILN_ERR_OUT_OF_MEMORY && f.d.backend == KILN_BACKEND_AUTO)) &&
         i + 1 < n)
    i++;
  if (st == KILN_ERR_UNSUPPORTED && f.d.kind != KILN_FFT_C2C &&
      f.d.backend == KILN_BACKEND_AUTO)
    return kiln__fft_real_via_complex(rt, &f.d, in, out, ps);
  if (st == KILN_OK) {
    char shape[64];
    kiln__profile_describe(ps, kiln_backend_name(be[i]->id), profile_bytes(&f),
                           profile_flops(&f), "%s",
                           profile_shape(&f, shape, sizeof shape));
    st = plan_run(rt, plan, &f);
    plan_put(rt, plan);
  }
  if (st == KILN_OK)
    st = scale(rt, &f);
  return st;
}

KILN_API kiln_status kiln_fft(kiln_runtime *rt, const kiln_fft_desc *desc,
                              const kiln_buffer *in, kiln_buffer *out)
{
  kiln_fft_desc given;
  kiln__profile_scope ps;
  kiln_status st =
    KILN__OP_BEGIN(rt, "kiln_fft", kiln_fft_desc, desc, &given, &ps, "fft");
  if (st != KILN_OK)
    return st;
  st = kiln__fft_run(rt, &given, in, out, &ps);
  return kiln__profile_end(&ps, st);
}
