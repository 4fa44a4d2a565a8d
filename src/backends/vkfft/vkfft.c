/*
 * vkfft.c — the VkFFT backend of kiln_fft(): a checked kiln__fft becomes a
 * VkFFTApplication (VkFFT's OpenCL backend, VKFFT_BACKEND=3, unscaled in both
 * directions) and one VkFFTAppend on the runtime's queue. Built only when
 * meson finds vkFFT.h (Debian's libvkfft-dev, a header-only library).
 *
 * Data flow. VkFFT works in one main buffer (`buffer`), and with
 * isInputFormatted also reads a separate `inputBuffer`:
 *   forward (C2C, R2C): inputBuffer = in  ->  buffer = out. VkFFT's passes
 *     after the first work in `out`, so `in` is left as it was.
 *   inverse (C2C, C2R), with inverseReturnToInputBuffer: buffer -> inputBuffer.
 *     Its passes before the last work in place in `buffer`, so kiln copies
 *     `in` into a scratch buffer the plan owns and runs from there:
 *     scratch -> out, and `in` is left as it was.
 * Each kiln plan is one direction (the cache's key holds it), so VkFFT
 * generates kernels for that direction only.
 *
 * Memory. VkFFT makes buffers of its own while it plans: the temporary
 * buffer of its four-step and multi-upload Bluestein passes, Bluestein's
 * chirp and its transforms, lookup tables of twiddles. Its OpenCL calls go
 * through kiln's wrappers (below), and while a plan of kiln's is built or
 * deleted on a thread (vk_owner), VkFFT's clCreateBuffer is
 * kiln__plan_mem_create(): each buffer it makes counts against the memory
 * budget as the plan's bytes, is made resident, and, when it does not fit
 * even after the pool and the unused plans are given back, fails the plan
 * with kiln's message naming it; its clReleaseMemObject gives the bytes
 * back. kiln does not hand VkFFT a temporary buffer of its own
 * (userTempBuffer, tempBuffer, tempBufferSize): VkFFT 1.2 decides whether
 * it needs one, and its size, only while it plans each axis, so kiln would
 * have to make one for every plan, needed or not; through the wrapper the
 * one VkFFT makes is counted the same. The scratch copy of an inverse's
 * input is kiln's, from the same path. VkFFT also generates and compiles
 * OpenCL kernels when it plans. It enqueues kernels without events, so
 * run() enqueues a marker after them and tracks the marker.
 *
 * Locale. VkFFT's code generator calls setlocale(LC_ALL, "C"), so that
 * printf writes "0.5" and not "0,5", and puts the old name back when it is
 * done. setlocale changes every thread's locale: threads of the program
 * that format or parse numbers meanwhile would do it in "C", and two
 * generators on two threads would restore each other's names (glibc may
 * even free the old name VkFFT keeps). So kiln, which compiles VkFFT's
 * header, replaces those calls with vkfft_setlocale(), which changes
 * nothing, and gives the building thread alone the C locale (uselocale)
 * while VkFFT generates code. VkFFT has no other state outside its
 * application object, so plans are built on several threads at once.
 */
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* base/util.h first: it sets CL_TARGET_OPENCL_VERSION for the OpenCL headers
 * that vkFFT.h includes. */
#include "base/error.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "device/device.h"
#include "ops/ops.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

/* VkFFT turns each failed OpenCL call into a code of its own
 * (VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL, ...) and drops the OpenCL error,
 * which is what tells a device out of memory from a failed build. VkFFT's
 * OpenCL calls go through these wrappers, which keep the thread's last
 * failure for fail_vkfft(). And VkFFT prints a failed build's log and its
 * whole generated source to stdout: kiln never prints, so inside vkFFT.h
 * printf does nothing (the message still names the build's error). */
static _Thread_local struct {
  cl_int err;
  const char *call;
} vk_last;

static cl_int vk_note(cl_int err, const char *call)
{
  if (err != CL_SUCCESS)
    vk_last.err = err, vk_last.call = call;
  return err;
}

/* The buffers VkFFT made for one plan, through kiln (see "Memory" above). */
typedef struct vk_mem {
  kiln_runtime *rt;
  struct vk_block {
    cl_mem mem;
    size_t bytes;
  } * blocks;
  size_t n, cap;
} vk_mem;

/* The plan whose VkFFT application this thread is building or deleting,
 * or NULL; and what kiln__plan_mem_create() returned when it refused one of
 * its buffers (the thread's kiln_last_error() says why), else KILN_OK. */
static _Thread_local vk_mem *vk_owner;
static _Thread_local kiln_status vk_refused;

/* Room in m's list for one more buffer: 0, or -1 (out of host memory). */
static int vk_mem_room(vk_mem *m)
{
  if (m->n < m->cap)
    return 0;
  size_t cap = 2 * m->cap + 4;
  struct vk_block *grown = realloc(m->blocks, cap * sizeof *grown);
  if (!grown)
    return -1;
  m->blocks = grown, m->cap = cap;
  return 0;
}

static cl_mem vk_clCreateBuffer(cl_context c, cl_mem_flags f, size_t s, void *h,
                                cl_int *e)
{
  vk_mem *m = vk_owner;
  cl_int err = CL_SUCCESS;
  cl_mem mem = NULL;
  if (!m) {
    mem = clCreateBuffer(c, f, s, h, &err);
    if (!mem)
      vk_note(err, "clCreateBuffer");
  } else {
    assert(c == m->rt->context);
    const char *what = f & CL_MEM_COPY_HOST_PTR ? "VkFFT plan's lookup table"
                                                : "VkFFT plan's working buffer";
    kiln_status st = vk_mem_room(m)
                       ? kiln__fail(m->rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                                    "kiln_fft(vkfft): building a plan: no host memory "
                                    "to count its buffers")
                       : kiln__plan_mem_create(m->rt, "kiln_fft", what, f, s, h, &mem);
    if (st == KILN_OK) {
      m->blocks[m->n++] = (struct vk_block){mem, s};
    } else {
      vk_refused = st;
      err = st == KILN_ERR_OUT_OF_HOST_MEMORY ? CL_OUT_OF_HOST_MEMORY
                                              : CL_MEM_OBJECT_ALLOCATION_FAILURE;
    }
  }
  if (e)
    *e = err;
  return mem;
}

static cl_int vk_clReleaseMemObject(cl_mem mem)
{
  vk_mem *m = vk_owner;
  for (size_t i = 0; m && i < m->n; i++)
    if (m->blocks[i].mem == mem) {
      kiln__plan_mem_release(m->rt, mem, m->blocks[i].bytes);
      m->blocks[i] = m->blocks[--m->n];
      return CL_SUCCESS;
    }
  return vk_note(clReleaseMemObject(mem), "clReleaseMemObject");
}

/* Releases what VkFFT made for a plan and never released itself (none, as
 * far as kiln's tests see), and the list. */
static void vk_mem_free(vk_mem *m)
{
  for (size_t i = 0; i < m->n; i++)
    kiln__plan_mem_release(m->rt, m->blocks[i].mem, m->blocks[i].bytes);
  free(m->blocks);
  m->blocks = NULL;
  m->n = m->cap = 0;
}

/* VkFFT picks its defaults by the device's vendor id (vkFFT.h's
 * setConfigurationVkFFT: NVIDIA's and AMD's twiddles computed on the fly
 * in float, Intel's and PoCL's from a lookup table, warp sizes, register
 * use). Under KILN_TEST_SHAPE=gpu on a device that is not a GPU, VkFFT is
 * told NVIDIA's id, so that the path it takes on the GPU kiln was checked
 * on runs in the tests on PoCL. */
#define VK_NVIDIA 0x10DE
static cl_int vk_clGetDeviceInfo(cl_device_id d, cl_device_info p, size_t size,
                                 void *value, size_t *ret)
{
  kiln_runtime *rt = vk_owner ? vk_owner->rt : NULL;
  cl_int err = vk_note(clGetDeviceInfo(d, p, size, value, ret), "clGetDeviceInfo");
  if (err == CL_SUCCESS && rt && p == CL_DEVICE_VENDOR_ID && kiln__gpu_shape(rt) &&
      !(kiln__runtime_device(rt)->info.type &
        (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) &&
      value && size >= sizeof(cl_uint))
    *(cl_uint *)value = VK_NVIDIA;
  return err;
}

/* A call that returns its error; one that returns an object and reports
 * through its parameter e. */
#define VK_INT(name, params, args)                                                       \
  static cl_int vk_##name params                                                         \
  {                                                                                      \
    return vk_note(name args, #name);                                                    \
  }
#define VK_OBJ(type, name, params, args)                                                 \
  static type vk_##name params                                                           \
  {                                                                                      \
    type o_ = name args;                                                                 \
    if (!o_ && e)                                                                        \
      vk_note(*e, #name);                                                                \
    return o_;                                                                           \
  }
VK_INT(clBuildProgram,
       (cl_program p, cl_uint n, const cl_device_id *d, const char *o,
        void(CL_CALLBACK *f)(cl_program, void *), void *u),
       (p, n, d, o, f, u))
VK_INT(clEnqueueNDRangeKernel,
       (cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *off, const size_t *g,
        const size_t *l, cl_uint nw, const cl_event *w, cl_event *ev),
       (q, k, dims, off, g, l, nw, w, ev))
VK_INT(clSetKernelArg, (cl_kernel k, cl_uint i, size_t s, const void *v), (k, i, s, v))
VK_OBJ(cl_program, clCreateProgramWithSource,
       (cl_context c, cl_uint n, const char **s, const size_t *l, cl_int *e),
       (c, n, s, l, e))
VK_OBJ(cl_program, clCreateProgramWithBinary,
       (cl_context c, cl_uint n, const cl_device_id *d, const size_t *l,
        const unsigned char **b, cl_int *st, cl_int *e),
       (c, n, d, l, b, st, e))
VK_OBJ(cl_kernel, clCreateKernel, (cl_program p, const char *name, cl_int *e),
       (p, name, e))
VK_OBJ(cl_command_queue, clCreateCommandQueue,
       (cl_context c, cl_device_id d, cl_command_queue_properties pr, cl_int *e),
       (c, d, pr, e))
#undef VK_INT
#undef VK_OBJ

/* VkFFT's blocking writes (its tables, freed right after) and its clFinish,
 * made to wait where the driver's alone may not (kiln__blocking()). */
static cl_int vk_clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool b, size_t o,
                                      size_t s, const void *p, cl_uint nw,
                                      const cl_event *w, cl_event *ev)
{
  kiln_runtime *rt = vk_owner ? vk_owner->rt : NULL;
  if (!b || !rt || kiln__blocking(rt, 1))
    return vk_note(clEnqueueWriteBuffer(q, m, b, o, s, p, nw, w, ev),
                   "clEnqueueWriteBuffer");
  cl_event mine = NULL;
  cl_int err = vk_note(clEnqueueWriteBuffer(q, m, CL_FALSE, o, s, p, nw, w, &mine),
                       "clEnqueueWriteBuffer");
  if (err == CL_SUCCESS)
    err = vk_note(kiln__wait_command(mine), "clWaitForEvents");
  if (mine && ev)
    *ev = mine;
  else if (mine)
    clReleaseEvent(mine);
  return err;
}

static cl_int vk_clFinish(cl_command_queue q)
{
  kiln_runtime *rt = vk_owner ? vk_owner->rt : NULL;
  return vk_note(rt ? kiln__finish_queue(rt, q) : clFinish(q), "clFinish");
}
#define clBuildProgram vk_clBuildProgram
#define clEnqueueNDRangeKernel vk_clEnqueueNDRangeKernel
#define clEnqueueWriteBuffer vk_clEnqueueWriteBuffer
#define clSetKernelArg vk_clSetKernelArg
#define clFinish vk_clFinish
#define clGetDeviceInfo vk_clGetDeviceInfo
#define clCreateBuffer vk_clCreateBuffer
#define clReleaseMemObject vk_clReleaseMemObject
#define clCreateProgramWithSource vk_clCreateProgramWithSource
#define clCreateProgramWithBinary vk_clCreateProgramWithBinary
#define clCreateKernel vk_clCreateKernel
#define clCreateCommandQueue vk_clCreateCommandQueue
#undef printf /* a macro with _FORTIFY_SOURCE on some compilers */
#define printf(...) ((void)0)

#define VKFFT_BACKEND 3 /* OpenCL */
/* With -fsanitize=address GCC 12 inlines VkFFT's code generator deeper and
 * then warns of a NULL sprintf destination on a path VkFFT guards at run
 * time (sc->output is set before any line is appended). Not kiln's code.
 * Clang has no such warning, and would warn of the unknown option. */
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wformat-overflow"
#endif
/* See "Locale" above. <locale.h> is already in: the macro renames only
 * VkFFT's calls. */
static char *vkfft_setlocale(int category, const char *name)
{
  (void)category;
  (void)name;
  return (char *)"C";
}
#define setlocale vkfft_setlocale
#include <vkFFT.h>
#undef clBuildProgram
#undef clEnqueueNDRangeKernel
#undef clEnqueueWriteBuffer
#undef clSetKernelArg
#undef clFinish
#undef clGetDeviceInfo
#undef clCreateBuffer
#undef clReleaseMemObject
#undef clCreateProgramWithSource
#undef clCreateProgramWithBinary
#undef clCreateKernel
#undef clCreateCommandQueue
#undef printf
#undef setlocale
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic pop
#endif

/* ---- status codes ------------------------------------------------------- */

/* VkFFT 1.2 has no function that names its codes: the ones kiln can meet
 * with the OpenCL backend, and what they mean for a kiln caller. */
typedef struct vkfft_status {
  int code;
  const char *name;
  kiln_status status;
} vkfft_status;

#define ROW(name, status)                                                                \
  {                                                                                      \
    name, #name, status                                                                  \
  }
static const vkfft_status statuses[] = {
  ROW(VKFFT_ERROR_MALLOC_FAILED, KILN_ERR_OUT_OF_MEMORY),
  ROW(VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER, KILN_ERR_UNSUPPORTED),
  ROW(VKFFT_ERROR_INSUFFICIENT_TEMP_BUFFER, KILN_ERR_UNSUPPORTED),
  ROW(VKFFT_ERROR_PLAN_NOT_INITIALIZED, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_NULL_TEMP_PASSED, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_INVALID_PLATFORM, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_INVALID_DEVICE, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_INVALID_CONTEXT, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_INVALID_QUEUE, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_ONLY_FORWARD_FFT_INITIALIZED, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_ONLY_INVERSE_FFT_INITIALIZED, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_FFTdim, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_size, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_buffer, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_inputBuffer, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_bufferSize, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_inputBufferSize, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_EMPTY_tempBuffer, KILN_ERR_INVALID_ARGUMENT),
  ROW(VKFFT_ERROR_UNSUPPORTED_RADIX, KILN_ERR_UNSUPPORTED),
  ROW(VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH, KILN_ERR_UNSUPPORTED),
  ROW(VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C, KILN_ERR_UNSUPPORTED),
  ROW(VKFFT_ERROR_FAILED_TO_ALLOCATE, KILN_ERR_OUT_OF_MEMORY),
  ROW(VKFFT_ERROR_FAILED_TO_COPY, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_SYNCHRONIZE, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM, KILN_ERR_BUILD),
  ROW(VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM, KILN_ERR_BUILD),
  ROW(VKFFT_ERROR_FAILED_TO_GET_CODE_SIZE, KILN_ERR_BUILD),
  ROW(VKFFT_ERROR_FAILED_TO_GET_CODE, KILN_ERR_BUILD),
  ROW(VKFFT_ERROR_FAILED_TO_DESTROY_PROGRAM, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_CREATE_PIPELINE, KILN_ERR_BUILD),
  ROW(VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_GET_ATTRIBUTE, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_CREATE_COMMAND_QUEUE, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_RELEASE_COMMAND_QUEUE, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_CREATE_EVENT, KILN_ERR_OPENCL),
  ROW(VKFFT_ERROR_FAILED_TO_SUBMIT_BARRIER, KILN_ERR_OPENCL),
};
#undef ROW

/* Records a failed VkFFT call: "<what>: <call> failed with <NAME> (<code>)",
 * then the OpenCL call that failed inside it, if one did: its error gives
 * the status. */
static kiln_status fail_vkfft(kiln_runtime *rt, VkFFTResult code, const char *call,
                              const char *what)
{
  kiln_status refused = vk_refused;
  vk_refused = KILN_OK;
  if (refused != KILN_OK) /* kiln refused one of VkFFT's buffers, and said why */
    return refused;
  const vkfft_status *row = NULL;
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0] && !row; i++)
    if (statuses[i].code == (int)code)
      row = &statuses[i];
  if (vk_last.err != CL_SUCCESS)
    return kiln__fail_cl(rt, vk_last.err, vk_last.call, "%s: %s failed with %s (%d)",
                         what, call, row ? row->name : "a VkFFT result", (int)code);
  if (row)
    return kiln__fail(rt, row->status, "%s: %s failed with %s (%d)", what, call,
                      row->name, (int)code);
  return kiln__fail(rt, KILN_ERR_OPENCL,
                    "%s: %s failed with VkFFT result %d (see "
                    "VkFFTResult in vkFFT.h)",
                    what, call, (int)code);
}

/* ---- the backend --------------------------------------------------------- */

typedef struct vkfft_plan {
  VkFFTApplication app;
  vk_mem mem; /* the buffers VkFFT made for app */
  /* VkFFT keeps pointers to these, so they live in the plan. */
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  uint64_t buffer_bytes, input_bytes;
  int inverse;     /* C2C inverse or C2R */
  int copy_only;   /* every axis has length 1: the transform is a copy */
  cl_mem scratch;  /* inverse: a copy of `in`, which VkFFT overwrites */
  size_t in_bytes; /* what run() copies into scratch, or copies to out */
} vkfft_plan;

/* VkFFT has no length-1 axis (VKFFT_ERROR_UNSUPPORTED_RADIX), but such an
 * axis transforms nothing: drop it. R2C/C2R keep their last axis. Returns
 * the axes left, fastest-varying first (VkFFT's order); 0 when none. */
static unsigned vkfft_axes(const kiln__fft *f, uint64_t size[3])
{
  const kiln_fft_desc *d = &f->d;
  unsigned n = 0;
  for (unsigned i = 0; i < d->ndim; i++) {
    size_t len = d->shape[d->ndim - 1 - i];
    if (len > 1 || (i == 0 && d->kind != KILN_FFT_C2C))
      size[n++] = len;
  }
  for (unsigned i = n; i < 3; i++)
    size[i] = 1;
  return n;
}

static size_t real_bytes(const kiln__fft *f)
{
  return f->d.dtype == KILN_F64 ? 8 : 4;
}

static int is_inverse(const kiln__fft *f)
{
  return f->d.kind == KILN_FFT_C2R || (f->d.kind == KILN_FFT_C2C && f->d.inverse);
}

static const char *vkfft_cannot(kiln_runtime *rt, const kiln__fft *f)
{
  if (f->d.dtype == KILN_F64 && !kiln__runtime_device(rt)->info.has_fp64)
    return "the device has no double precision (cl_khr_fp64)";
  if (f->d.kind != KILN_FFT_C2C && f->d.shape[f->d.ndim - 1] == 1)
    return "VkFFT has no real transform of a last axis of length 1";
  /* VkFFT's multi-pass R2C needs an even last axis; lengths that fit one
   * pass are fine odd. Which lengths need several passes depends on the
   * device's local memory, so an odd one that does is refused by plan()
   * with VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C (65537 on PoCL), and AUTO
   * goes on to clFFT or to a complex transform (fft_real.c). */
  return NULL;
}

/* VkFFT 1.2's deleteVkFFT() releases axes[i][j] but not the program and
 * kernel it builds for each later upload of a multi-upload Bluestein axis,
 * inverseBluesteinAxes[i][1..] (their LUT is axes[i][j]'s, released with
 * it). Each such plan left those programs, ~2 MiB of PoCL memory apiece,
 * and so the runtime's context alive (LeakSanitizer, test_fft_real_long_odd).
 * VkFFT 1.3 releases them itself; the handles are zeroed here, and its
 * deleteAxis() skips zero handles. */
static void release_bluestein_uploads(VkFFTApplication *app, VkFFTPlan *fft)
{
  if (!fft)
    return;
  for (uint64_t i = 0; i < app->configuration.FFTdim && i < 3; i++) {
    if (!app->useBluesteinFFT[i])
      continue;
    for (uint64_t j = 1; j < fft->numAxisUploads[i] && j < 4; j++) {
      VkFFTAxis *axis = &fft->inverseBluesteinAxes[i][j];
      if (axis->kernel)
        clReleaseKernel(axis->kernel);
      if (axis->program)
        clReleaseProgram(axis->program);
      axis->kernel = 0;
      axis->program = 0;
    }
  }
}

static void vkfft_release(kiln_runtime *rt, void *p)
{
  vkfft_plan *plan = p;
  if (!plan)
    return;
  if (!plan->copy_only) {
    vk_mem *outer = vk_owner; /* a plan being built, whose buffer made room */
    vk_owner = &plan->mem;
    release_bluestein_uploads(&plan->app, plan->app.localFFTPlan);
    release_bluestein_uploads(&plan->app, plan->app.localFFTPlan_inverse);
    deleteVkFFT(&plan->app);
    vk_owner = outer;
  }
  vk_mem_free(&plan->mem);
  kiln__plan_mem_release(rt, plan->scratch, plan->in_bytes);
  free(plan);
}

static kiln_status vkfft_plan_build(kiln_runtime *rt, const kiln__fft *f, void **out)
{
  static const char what[] = "kiln_fft(vkfft): building a plan";
  const kiln_fft_desc *d = &f->d;
  const kiln__device *dev = kiln__runtime_device(rt);
  vkfft_plan *plan = calloc(1, sizeof *plan);
  if (!plan)
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY, "%s: no host memory", what);
  plan->platform = dev->platform;
  plan->device = dev->id;
  plan->context = rt->context;
  plan->queue = kiln__queue(rt);
  plan->inverse = is_inverse(f);
  uint64_t size[3];
  unsigned ndim = vkfft_axes(f, size);
  size_t elem = real_bytes(f);
  if (ndim == 0) {
    plan->copy_only = 1;
    plan->in_bytes = f->in_count * elem * 2;
    *out = plan;
    return KILN_OK;
  }

  int real = d->kind != KILN_FFT_C2C;
  VkFFTConfiguration c;
  memset(&c, 0, sizeof c);
  c.FFTdim = ndim;
  /* VkFFT's size[0] is the fastest-varying axis: the C-order shape reversed.
   * `buffer` holds the complex side (the last axis n/2 + 1 for R2C/C2R),
   * `inputBuffer` the other side (real, unpadded, for R2C/C2R). */
  uint64_t complex_len[3], other_len[3];
  for (unsigned i = 0; i < 3; i++) {
    c.size[i] = size[i];
    complex_len[i] = other_len[i] = c.size[i];
  }
  if (real)
    complex_len[0] = c.size[0] / 2 + 1;
  for (unsigned i = 0; i < 3; i++) {
    c.bufferStride[i] = i == 0 ? complex_len[0] : c.bufferStride[i - 1] * complex_len[i];
    c.inputBufferStride[i] =
      i == 0 ? other_len[0] : c.inputBufferStride[i - 1] * other_len[i];
  }
  c.numberBatches = d->batch;
  c.doublePrecision = d->dtype == KILN_F64;
  c.performR2C = real;
  c.normalize = 0;
  c.isInputFormatted = 1;
  c.inverseReturnToInputBuffer = 1;
  c.makeForwardPlanOnly = !plan->inverse;
  c.makeInversePlanOnly = plan->inverse;
  plan->buffer_bytes = c.bufferStride[2] * d->batch * 2 * elem;
  plan->input_bytes = c.inputBufferStride[2] * d->batch * (real ? 1 : 2) * elem;
  c.bufferSize = &plan->buffer_bytes;
  c.inputBufferSize = &plan->input_bytes;
  /* VkFFT indexes with 32 bits unless told otherwise. */
  if (plan->buffer_bytes / elem >= (uint64_t)1 << 31 ||
      plan->input_bytes / elem >= (uint64_t)1 << 31)
    c.useUint64 = 1;
  c.platform = &plan->platform;
  c.device = &plan->device;
  c.context = &plan->context;
  c.commandQueue = &plan->queue; /* Bluestein's and the LUT's uploads */

  /* On CPUs (PoCL), grouping strided accesses by 32 bytes instead of
   * VkFFT's 64 ran 1-D 2^20 faster (`kiln bench fft --sizes 1 --backend
   * vkfft`; docs/performance.md, "The order of the backends"). */
  if (!kiln__gpu_shape(rt))
    c.coalescedMemory = 32;
  /* Twiddles from VkFFT's lookup table (computed on the host in double) on
   * every device. Left to itself, VkFFT computes float twiddles on the fly
   * with native_sin and native_cos on NVIDIA, AMD and unknown vendors, whose
   * accuracy OpenCL leaves to the driver, and reads a table on Intel and
   * PoCL: the same call then differs in its error by vendor, and in its
   * plan's memory too (on the H200 a 64-point inverse held no table, so
   * plan_bytes showed kiln's input copy alone; KILN_TEST_SHAPE=gpu makes
   * PoCL take that path). One table, counted in plan_bytes, everywhere. */
  c.useLUT = 1;
  locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (c_locale == (locale_t)0) {
    free(plan);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "%s: no host memory for the C "
                      "locale VkFFT writes its code in",
                      what);
  }
  locale_t before = uselocale(c_locale); /* this thread's only */
  vk_mem *outer = vk_owner;
  vk_owner = &plan->mem;
  plan->mem.rt = rt;
  vk_last.err = CL_SUCCESS;
  vk_refused = KILN_OK;
  VkFFTResult res = initializeVkFFT(&plan->app, c);
  vk_owner = outer;
  uselocale(before);
  freelocale(c_locale);
  if (res != VKFFT_SUCCESS) {
    /* initializeVkFFT() cleans up after itself on failure. */
    vk_mem_free(&plan->mem);
    free(plan);
    return fail_vkfft(rt, res, "initializeVkFFT", what);
  }
  if (plan->inverse) {
    plan->in_bytes = f->in_count * elem * 2; /* the complex side */
    kiln_status st =
      kiln__plan_mem_create(rt, "kiln_fft", "plan's scratch buffer", CL_MEM_READ_WRITE,
                            plan->in_bytes, NULL, &plan->scratch);
    if (st != KILN_OK) {
      vkfft_release(rt, plan);
      return st;
    }
  }
  *out = plan;
  return KILN_OK;
}

static kiln_status vkfft_run(kiln_runtime *rt, void *p, const kiln__fft *f)
{
  static const char what[] = "kiln_fft(vkfft): enqueueing";
  vkfft_plan *plan = p;
  cl_mem buffer = f->out, input = f->in;
  kiln__profile_mark(rt); /* VkFFT gives back no event of its own */
  if (plan->copy_only) {
    cl_event ev = NULL;
    cl_int err = clEnqueueCopyBuffer(kiln__queue(rt), f->in, f->out, 0, 0, plan->in_bytes,
                                     0, NULL, &ev);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(rt, err, "clEnqueueCopyBuffer",
                           "%s: a transform of length "
                           "1",
                           what);
    return kiln__runtime_track(rt, ev, "kiln_fft(vkfft)");
  }
  if (plan->inverse) {
    cl_int err = clEnqueueCopyBuffer(kiln__queue(rt), f->in, plan->scratch, 0, 0,
                                     plan->in_bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
      return kiln__fail_cl(rt, err, "clEnqueueCopyBuffer", "%s: copying the input", what);
    buffer = plan->scratch;
    input = f->out;
  }
  cl_command_queue queue = kiln__queue(rt);
  VkFFTLaunchParams lp;
  memset(&lp, 0, sizeof lp);
  lp.commandQueue = &queue;
  lp.buffer = &buffer;
  lp.inputBuffer = &input;
  /* VkFFT: -1 forward, 1 inverse. */
  vk_last.err = CL_SUCCESS;
  vk_refused = KILN_OK;
  VkFFTResult res = VkFFTAppend(&plan->app, plan->inverse ? 1 : -1, &lp);
  if (res != VKFFT_SUCCESS)
    return fail_vkfft(rt, res, "VkFFTAppend", what);
  cl_event ev = NULL;
  cl_int err = clEnqueueMarkerWithWaitList(queue, 0, NULL, &ev);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(rt, err, "clEnqueueMarkerWithWaitList", "%s: its marker", what);
  return kiln__runtime_track(rt, ev, "kiln_fft(vkfft)");
}

const kiln__fft_backend kiln__fft_vkfft = {
  .id = KILN_BACKEND_VKFFT,
  .cannot = vkfft_cannot,
  .plan = vkfft_plan_build,
  .run = vkfft_run,
  .release = vkfft_release,
};
