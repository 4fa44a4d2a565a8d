/*
 * clfft.c — the clFFT backend of kiln_fft(): a checked kiln__fft becomes a
 * baked clFFT plan (out of place, interleaved, unscaled in both directions)
 * and one clfftEnqueueTransform on the runtime's queue. Built only when meson
 * finds clFFT.
 *
 * clFFT's setup is process-wide: clfftSetup() and clfftTeardown() act on one
 * global state shared by every runtime and thread. kiln counts the clFFT
 * plans alive in the process under a mutex, sets clFFT up when the count
 * goes from 0 to 1 and tears it down when it goes back to 0, so runtimes
 * created and destroyed on several threads never tear down under another's
 * plans.
 *
 * clFFT is not safe to call from several threads at once, whatever its
 * per-plan locks suggest: plans of one signature share one cl_program and
 * cl_kernel in its repository, so two threads baking the same length at
 * once both insert the program (an assertion in FFTRepo::setclProgram
 * aborts the process; kiln's stress test hit it), and two plans enqueued at
 * once set the arguments of one cl_kernel (clFFT's own TODO in
 * FFTAction::enqueue). So kiln makes one clFFT call at a time in the
 * process (call_lock). A bake holds it for as long as clFFT compiles;
 * enqueueing holds it only while clFFT sets arguments and enqueues.
 *
 * Memory. The temporary buffer some plans need (clfftGetTmpBufSize) is
 * kiln's: made here once per plan by kiln__plan_mem_create(), so it counts
 * against the memory budget as the plan's bytes and is passed to every
 * clfftEnqueueTransform. What clFFT allocates inside itself is not counted,
 * because kiln can neither see nor size it: the small constant buffer of
 * each of its plans' kernels (FFTPlan's const_buffer), and the
 * intermediate buffers it makes on its own for some real transforms
 * (intBufferRC, intBufferC2R). Its bake also generates and compiles OpenCL
 * kernels (seconds on a CPU device).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* base/util.h first: it sets CL_TARGET_OPENCL_VERSION for the OpenCL headers
 * that clFFT.h includes. */
#include "base/error.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "profile/profile.h"

#include <clFFT.h>

/* ---- status codes ------------------------------------------------------- */

/* clFFT's own codes (the others are OpenCL's, with OpenCL's numbers). */
typedef struct clfft_status {
  int code;
  const char *name;
  kiln_status status;
  const char *text;
} clfft_status;

#define OWN_ROW(name, status, text)                                                      \
  {                                                                                      \
    name, #name, status, text                                                            \
  }
static const clfft_status statuses[] = {
  OWN_ROW(CLFFT_BUGCHECK, KILN_ERR_OPENCL, "clFFT found an internal inconsistency"),
  OWN_ROW(CLFFT_NOTIMPLEMENTED, KILN_ERR_UNSUPPORTED,
          "clFFT does not implement this transform"),
  OWN_ROW(CLFFT_TRANSPOSED_NOTIMPLEMENTED, KILN_ERR_UNSUPPORTED,
          "clFFT does not implement a transposed result for this transform"),
  OWN_ROW(CLFFT_FILE_NOT_FOUND, KILN_ERR_OPENCL, "clFFT could not open a file"),
  OWN_ROW(CLFFT_FILE_CREATE_FAILURE, KILN_ERR_OPENCL, "clFFT could not create a file"),
  OWN_ROW(CLFFT_VERSION_MISMATCH, KILN_ERR_UNSUPPORTED,
          "the clFFT library differs from the clFFT.h kiln was built with"),
  OWN_ROW(CLFFT_INVALID_PLAN, KILN_ERR_INVALID_ARGUMENT, "clFFT has no such plan"),
  OWN_ROW(CLFFT_DEVICE_NO_DOUBLE, KILN_ERR_UNSUPPORTED,
          "the device has no double precision (cl_khr_fp64)"),
  OWN_ROW(CLFFT_DEVICE_MISMATCH, KILN_ERR_INVALID_ARGUMENT,
          "the plan was baked for another device"),
};
#undef OWN_ROW

/* Records a failed clFFT call: "<what>: <call> failed with <name> (<code>)
 * ..." with OpenCL's name for the codes clFFT shares with OpenCL. */
static kiln_status fail_clfft(kiln_runtime *rt, clfftStatus code, const char *call,
                              const char *what)
{
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    if (statuses[i].code == (int)code)
      return kiln__fail(rt, statuses[i].status, "%s: %s failed with %s (%d): %s", what,
                        call, statuses[i].name, (int)code, statuses[i].text);
  if (strcmp(kiln_cl_error_name((int)code), "CL_UNKNOWN_ERROR") != 0)
    return kiln__fail_cl(rt, (cl_int)code, call, "%s", what);
  return kiln__fail(rt, KILN_ERR_OPENCL,
                    "%s: %s failed with an unknown clFFT status "
                    "(%d)",
                    what, call, (int)code);
}

/* ---- process-wide setup -------------------------------------------------- */

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t setup_lock;
static unsigned long live_plans; /* guarded by setup_lock */
/* Held around every clFFT call but setup and teardown (see the top); never
 * together with setup_lock. */
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;

static void setup_lock_init(void)
{
  pthread_mutex_init(&setup_lock, NULL);
}

/* Counts one more plan, setting clFFT up for the first. */
static kiln_status plans_acquire(kiln_runtime *rt)
{
  pthread_once(&setup_once, setup_lock_init);
  pthread_mutex_lock(&setup_lock);
  clfftStatus err = CLFFT_SUCCESS;
  if (live_plans == 0) {
    /* clfftInitSetupData() is an inline function without an external
     * definition in C: fill the same fields here. */
    clfftSetupData setup = {.major = clfftVersionMajor,
                            .minor = clfftVersionMinor,
                            .patch = clfftVersionPatch,
                            .debugFlags = 0};
    err = clfftSetup(&setup);
  }
  if (err == CLFFT_SUCCESS)
    live_plans++;
  pthread_mutex_unlock(&setup_lock);
  return err == CLFFT_SUCCESS ? KILN_OK
                              : fail_clfft(rt, err, "clfftSetup", "kiln_fft(clfft)");
}

/* Counts one plan less, tearing clFFT down after the last. */
static void plans_release(void)
{
  pthread_once(&setup_once, setup_lock_init);
  pthread_mutex_lock(&setup_lock);
  if (live_plans && --live_plans == 0)
    clfftTeardown();
  pthread_mutex_unlock(&setup_lock);
}

/* ---- the backend --------------------------------------------------------- */

typedef struct clfft_plan {
  clfftPlanHandle handle;
  cl_mem tmp;       /* clFFT's temporary buffer, or NULL */
  size_t tmp_bytes; /* its size */
} clfft_plan;

static int small_primes_only(size_t n)
{
  static const size_t primes[] = {2, 3, 5, 7, 11, 13};
  for (size_t i = 0; i < sizeof primes / sizeof primes[0]; i++)
    while (n % primes[i] == 0)
      n /= primes[i];
  return n == 1;
}

static const char *clfft_cannot(kiln_runtime *rt, const kiln__fft *f)
{
  (void)rt;
  for (unsigned i = 0; i < f->d.ndim; i++)
    if (!small_primes_only(f->d.shape[i]))
      return "clFFT runs only lengths whose prime factors are 2, 3, 5, 7, 11 and 13";
  return NULL;
}

static void clfft_release(kiln_runtime *rt, void *p)
{
  clfft_plan *plan = p;
  if (!plan)
    return;
  pthread_mutex_lock(&call_lock);
  clfftDestroyPlan(&plan->handle);
  pthread_mutex_unlock(&call_lock);
  kiln__plan_mem_release(rt, plan->tmp, plan->tmp_bytes);
  free(plan);
  plans_release();
}

static kiln_status clfft_plan_build(kiln_runtime *rt, const kiln__fft *f, void **out)
{
  static const char what[] = "kiln_fft(clfft): building a plan";
  const kiln_fft_desc *d = &f->d;
  /* clFFT wants the fastest-varying axis first: the C-order shape reversed.
   * On the complex side of R2C and C2R that axis holds n/2 + 1 elements. */
  size_t len[3], in_len[3], out_len[3], in_stride[3], out_stride[3];
  for (unsigned i = 0; i < d->ndim; i++) {
    len[i] = in_len[i] = out_len[i] = d->shape[d->ndim - 1 - i];
    if (i == 0 && d->kind == KILN_FFT_C2R)
      in_len[0] = len[0] / 2 + 1;
    if (i == 0 && d->kind == KILN_FFT_R2C)
      out_len[0] = len[0] / 2 + 1;
    in_stride[i] = i == 0 ? 1 : in_stride[i - 1] * in_len[i - 1];
    out_stride[i] = i == 0 ? 1 : out_stride[i - 1] * out_len[i - 1];
  }
  size_t in_dist = in_stride[d->ndim - 1] * in_len[d->ndim - 1];
  size_t out_dist = out_stride[d->ndim - 1] * out_len[d->ndim - 1];
  clfftLayout in_layout = d->kind == KILN_FFT_R2C   ? CLFFT_REAL
                          : d->kind == KILN_FFT_C2R ? CLFFT_HERMITIAN_INTERLEAVED
                                                    : CLFFT_COMPLEX_INTERLEAVED;
  clfftLayout out_layout = d->kind == KILN_FFT_R2C   ? CLFFT_HERMITIAN_INTERLEAVED
                           : d->kind == KILN_FFT_C2R ? CLFFT_REAL
                                                     : CLFFT_COMPLEX_INTERLEAVED;
  kiln_status st = plans_acquire(rt);
  if (st != KILN_OK)
    return st;
  clfft_plan *plan = calloc(1, sizeof *plan);
  if (!plan) {
    plans_release();
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY, "%s: no host memory", what);
  }
  const char *call = "clfftCreateDefaultPlan";
  pthread_mutex_lock(&call_lock);
  clfftStatus err =
    clfftCreateDefaultPlan(&plan->handle, rt->context, (clfftDim)d->ndim, len);
  if (err != CLFFT_SUCCESS) {
    pthread_mutex_unlock(&call_lock);
    free(plan);
    plans_release();
    return fail_clfft(rt, err, call, what);
  }
  /* The calls below stop at the first failure; `call` names it. */
#define STEP(name, ...)                                                                  \
  if (err == CLFFT_SUCCESS) {                                                            \
    call = #name;                                                                        \
    err = name(plan->handle, __VA_ARGS__);                                               \
  }
  STEP(clfftSetPlanPrecision, d->dtype == KILN_F64 ? CLFFT_DOUBLE : CLFFT_SINGLE)
  STEP(clfftSetLayout, in_layout, out_layout)
  STEP(clfftSetResultLocation, CLFFT_OUTOFPLACE)
  STEP(clfftSetPlanInStride, (clfftDim)d->ndim, in_stride)
  STEP(clfftSetPlanOutStride, (clfftDim)d->ndim, out_stride)
  STEP(clfftSetPlanBatchSize, d->batch)
  STEP(clfftSetPlanDistance, in_dist, out_dist)
  STEP(clfftSetPlanScale, CLFFT_FORWARD, 1.0f)
  STEP(clfftSetPlanScale, CLFFT_BACKWARD, 1.0f)
  cl_command_queue queue = kiln__queue(rt);
  STEP(clfftBakePlan, 1, &queue, NULL, NULL)
#undef STEP
  size_t tmp_bytes = 0;
  if (err == CLFFT_SUCCESS) {
    call = "clfftGetTmpBufSize";
    err = clfftGetTmpBufSize(plan->handle, &tmp_bytes);
  }
  pthread_mutex_unlock(&call_lock);
  if (err != CLFFT_SUCCESS) {
    st = fail_clfft(rt, err, call, what);
    clfft_release(rt, plan);
    return st;
  }
  if (tmp_bytes) {
    plan->tmp_bytes = tmp_bytes;
    st = kiln__plan_mem_create(rt, "kiln_fft", "clFFT plan's temporary buffer",
                               CL_MEM_READ_WRITE, tmp_bytes, NULL, &plan->tmp);
    if (st != KILN_OK) {
      clfft_release(rt, plan);
      return st;
    }
  }
  *out = plan;
  return KILN_OK;
}

static kiln_status clfft_run(kiln_runtime *rt, void *p, const kiln__fft *f)
{
  clfft_plan *plan = p;
  cl_mem in = f->in, out = f->out;
  cl_event ev = NULL;
  cl_command_queue queue = kiln__queue(rt);
  kiln__profile_mark(rt); /* clFFT's event is its last kernel's */
  pthread_mutex_lock(&call_lock);
  clfftStatus err =
    clfftEnqueueTransform(plan->handle, f->d.inverse ? CLFFT_BACKWARD : CLFFT_FORWARD, 1,
                          &queue, 0, NULL, &ev, &in, &out, plan->tmp);
  pthread_mutex_unlock(&call_lock);
  if (err != CLFFT_SUCCESS)
    return fail_clfft(rt, err, "clfftEnqueueTransform", "kiln_fft(clfft): enqueueing");
  return kiln__runtime_track(rt, ev, "kiln_fft(clfft)");
}

const kiln__fft_backend kiln__fft_clfft = {
  .id = KILN_BACKEND_CLFFT,
  .cannot = clfft_cannot,
  .plan = clfft_plan_build,
  .run = clfft_run,
  .release = clfft_release,
};
