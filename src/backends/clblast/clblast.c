/*
 * clblast.c — the CLBlast GEMM backend: a checked kiln__gemm becomes one
 * CLBlast{S,D,H}gemm call (batch 1) or CLBlast{S,D,H}gemmStridedBatched call
 * on the runtime's queue. Built only when meson finds CLBlast.
 *
 * Why the checks in cannot() exist:
 *  - CLBlast takes size_t everywhere in its C API, but passes m, n, k,
 *    offsets, leading dimensions and strides to its kernels as 32-bit int and
 *    indexes its buffers (and its padded temporary copies) with int. Beyond
 *    INT_MAX elements the indices wrap silently, so kiln refuses up front.
 *  - Hgemm computes in half and needs cl_khr_fp16; CLBlast would refuse it
 *    only at the call, and kiln's own backend can do the product instead.
 *  - Hgemm takes alpha and beta as half: a value outside half's range (or a
 *    non-zero one that rounds to zero) would give a silently wrong product.
 *
 * What CLBlast does that kiln does not see: its first call of each routine
 * and precision on a context compiles its kernels (seconds on a CPU device);
 * it allocates padded temporaries outside kiln's memory accounting; and on an
 * OpenCL error it prints a line to stderr itself.
 *
 * So the profiler cannot set CLBlast's compile apart from the call, as it
 * does kiln's own builds and FFT plans (profile.h): the compile happens
 * inside the routine, after kiln__profile_mark()'s marker and before its
 * first kernel, and CLBlast's C API has no call that builds one routine's
 * kernels alone (CLBlastFillCache() builds every routine's) nor says
 * whether a call compiled. A first call's host and device times hold it.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* base/util.h first: it sets CL_TARGET_OPENCL_VERSION for the OpenCL headers
 * that clblast_c.h includes. */
#include "backends/clblast/clblast.h"
#include "base/error.h"
#include "base/util.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "profile/profile.h"

#include <clblast_c.h>

/* ---- status codes ------------------------------------------------------- */

typedef struct clblast_status {
  int code;
  const char *name;
  int from_cl;        /* shared with OpenCL: status and text as OpenCL's */
  kiln_status status; /* when !from_cl */
  const char *text;   /* when !from_cl: what it means */
} clblast_status;

/* Every code of CLBlastStatusCode in clblast_c.h (1.5.3), in its order. The
 * enum constants (not numbers) are used so a header that drops one fails to
 * compile here. */
#define CL_ROW(name)                                                                     \
  {                                                                                      \
    name, #name, 1, KILN_OK, NULL                                                        \
  }
#define OWN_ROW(name, status, text)                                                      \
  {                                                                                      \
    name, #name, 0, status, text                                                         \
  }
static const clblast_status statuses[] = {
  {CLBlastSuccess, "CLBlastSuccess", 0, KILN_OK, "success"},
  CL_ROW(CLBlastOpenCLCompilerNotAvailable),
  CL_ROW(CLBlastTempBufferAllocFailure),
  CL_ROW(CLBlastOpenCLOutOfResources),
  CL_ROW(CLBlastOpenCLOutOfHostMemory),
  CL_ROW(CLBlastOpenCLBuildProgramFailure),
  CL_ROW(CLBlastInvalidValue),
  CL_ROW(CLBlastInvalidCommandQueue),
  CL_ROW(CLBlastInvalidMemObject),
  CL_ROW(CLBlastInvalidBinary),
  CL_ROW(CLBlastInvalidBuildOptions),
  CL_ROW(CLBlastInvalidProgram),
  CL_ROW(CLBlastInvalidProgramExecutable),
  CL_ROW(CLBlastInvalidKernelName),
  CL_ROW(CLBlastInvalidKernelDefinition),
  CL_ROW(CLBlastInvalidKernel),
  CL_ROW(CLBlastInvalidArgIndex),
  CL_ROW(CLBlastInvalidArgValue),
  CL_ROW(CLBlastInvalidArgSize),
  CL_ROW(CLBlastInvalidKernelArgs),
  CL_ROW(CLBlastInvalidLocalNumDimensions),
  CL_ROW(CLBlastInvalidLocalThreadsTotal),
  CL_ROW(CLBlastInvalidLocalThreadsDim),
  CL_ROW(CLBlastInvalidGlobalOffset),
  CL_ROW(CLBlastInvalidEventWaitList),
  CL_ROW(CLBlastInvalidEvent),
  CL_ROW(CLBlastInvalidOperation),
  CL_ROW(CLBlastInvalidBufferSize),
  CL_ROW(CLBlastInvalidGlobalWorkSize),
  /* the codes CLBlast shares with clBLAS */
  OWN_ROW(CLBlastNotImplemented, KILN_ERR_UNSUPPORTED,
          "CLBlast does not implement this routine or option"),
  OWN_ROW(CLBlastInvalidMatrixA, KILN_ERR_INVALID_ARGUMENT,
          "matrix A is not a valid OpenCL buffer"),
  OWN_ROW(CLBlastInvalidMatrixB, KILN_ERR_INVALID_ARGUMENT,
          "matrix B is not a valid OpenCL buffer"),
  OWN_ROW(CLBlastInvalidMatrixC, KILN_ERR_INVALID_ARGUMENT,
          "matrix C is not a valid OpenCL buffer"),
  OWN_ROW(CLBlastInvalidVectorX, KILN_ERR_INVALID_ARGUMENT,
          "vector X is not a valid OpenCL buffer"),
  OWN_ROW(CLBlastInvalidVectorY, KILN_ERR_INVALID_ARGUMENT,
          "vector Y is not a valid OpenCL buffer"),
  OWN_ROW(CLBlastInvalidDimension, KILN_ERR_INVALID_ARGUMENT,
          "m, n and k must be larger than zero (and in a strided batch, the "
          "stride of C too)"),
  OWN_ROW(CLBlastInvalidLeadDimA, KILN_ERR_INVALID_ARGUMENT,
          "the leading dimension of A is smaller than the matrix's first dimension"),
  OWN_ROW(CLBlastInvalidLeadDimB, KILN_ERR_INVALID_ARGUMENT,
          "the leading dimension of B is smaller than the matrix's first dimension"),
  OWN_ROW(CLBlastInvalidLeadDimC, KILN_ERR_INVALID_ARGUMENT,
          "the leading dimension of C is smaller than the matrix's first dimension"),
  OWN_ROW(CLBlastInvalidIncrementX, KILN_ERR_INVALID_ARGUMENT,
          "the increment of vector X is zero"),
  OWN_ROW(CLBlastInvalidIncrementY, KILN_ERR_INVALID_ARGUMENT,
          "the increment of vector Y is zero"),
  OWN_ROW(CLBlastInsufficientMemoryA, KILN_ERR_OUT_OF_BOUNDS,
          "matrix A's buffer is too small for its offset, leading dimension and size"),
  OWN_ROW(CLBlastInsufficientMemoryB, KILN_ERR_OUT_OF_BOUNDS,
          "matrix B's buffer is too small for its offset, leading dimension and size"),
  OWN_ROW(CLBlastInsufficientMemoryC, KILN_ERR_OUT_OF_BOUNDS,
          "matrix C's buffer is too small for its offset, leading dimension and size"),
  OWN_ROW(CLBlastInsufficientMemoryX, KILN_ERR_OUT_OF_BOUNDS,
          "vector X's buffer is too small"),
  OWN_ROW(CLBlastInsufficientMemoryY, KILN_ERR_OUT_OF_BOUNDS,
          "vector Y's buffer is too small"),
  /* CLBlast's own codes */
  OWN_ROW(CLBlastInsufficientMemoryTemp, KILN_ERR_OUT_OF_BOUNDS,
          "the temporary buffer given to GEMM is too small"),
  OWN_ROW(CLBlastInvalidBatchCount, KILN_ERR_INVALID_ARGUMENT,
          "the batch count must be positive"),
  OWN_ROW(CLBlastInvalidOverrideKernel, KILN_ERR_INVALID_ARGUMENT,
          "parameters were overridden for a kernel that does not exist"),
  OWN_ROW(CLBlastMissingOverrideParameter, KILN_ERR_INVALID_ARGUMENT,
          "parameters overridden for a kernel are missing some it needs"),
  OWN_ROW(CLBlastInvalidLocalMemUsage, KILN_ERR_UNSUPPORTED,
          "the device has too little local memory for CLBlast's kernel parameters"),
  OWN_ROW(CLBlastNoHalfPrecision, KILN_ERR_UNSUPPORTED,
          "the device has no half precision (cl_khr_fp16)"),
  OWN_ROW(CLBlastNoDoublePrecision, KILN_ERR_UNSUPPORTED,
          "the device has no double precision (cl_khr_fp64)"),
  OWN_ROW(CLBlastInvalidVectorScalar, KILN_ERR_INVALID_ARGUMENT,
          "the unit-sized vector is not a valid OpenCL buffer"),
  OWN_ROW(CLBlastInsufficientMemoryScalar, KILN_ERR_OUT_OF_BOUNDS,
          "the unit-sized vector's buffer is too small"),
  OWN_ROW(CLBlastDatabaseError, KILN_ERR_UNSUPPORTED,
          "CLBlast's tuning database has no entry for this device"),
  /* CLBlast prints the details of these two on stderr; kiln cannot see them.
   * An unexpected error is a C++ exception, std::bad_alloc included. */
  OWN_ROW(CLBlastUnknownError, KILN_ERR_OPENCL,
          "CLBlast reports an unspecified error (it prints the details on stderr)"),
  OWN_ROW(CLBlastUnexpectedError, KILN_ERR_OPENCL,
          "CLBlast caught an unexpected exception, such as running out of host "
          "memory (it prints the details on stderr)"),
};
#undef CL_ROW
#undef OWN_ROW

static const clblast_status *status_find(int code)
{
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    if (statuses[i].code == code)
      return &statuses[i];
  return NULL;
}

/* An OpenCL code CLBlast passes through without a name of its own. */
static int is_cl_code(int code)
{
  return strcmp(kiln_cl_error_name(code), "CL_UNKNOWN_ERROR") != 0;
}

const char *kiln__clblast_status_name(int code)
{
  const clblast_status *s = status_find(code);
  if (s)
    return s->name;
  return is_cl_code(code) ? kiln_cl_error_name(code) : "unknown CLBlast status";
}

kiln_status kiln__status_from_clblast(int code)
{
  const clblast_status *s = status_find(code);
  if (s)
    return s->from_cl ? kiln__status_from_cl(code) : s->status;
  return is_cl_code(code) ? kiln__status_from_cl(code) : KILN_ERR_OPENCL;
}

void kiln__clblast_describe(kiln__str *out, int code, const char *call)
{
  const clblast_status *s = status_find(code);
  kiln__str_appendf(out, "%s failed with %s (%d", call, kiln__clblast_status_name(code),
                    code);
  if (s && s->from_cl)
    kiln__str_appendf(out, ", %s", kiln_cl_error_name(code));
  kiln__str_appendf(
    out, "): %s",
    s && !s->from_cl ? s->text : kiln_status_string(kiln__status_from_clblast(code)));
}

kiln_status kiln__fail_clblast(kiln_runtime *rt, int code, const char *call,
                               const char *fmt, ...)
{
  kiln_status status = kiln__status_from_clblast(code);
  kiln__str msg = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&msg, fmt, ap);
  va_end(ap);
  kiln__str_appendf(&msg, ": ");
  kiln__clblast_describe(&msg, code, call);
  kiln_status st = kiln__fail(rt, status, "%s", kiln__str_get(&msg));
  kiln__str_free(&msg);
  return st;
}

/* ---- half precision scalars -------------------------------------------- */

/* Keeps the top bits of `bits` above `shift`, rounded to nearest even. */
static uint64_t round_shift(uint64_t bits, unsigned shift)
{
  uint64_t kept = bits >> shift;
  uint64_t rest = bits & ((UINT64_C(1) << shift) - 1);
  uint64_t half = UINT64_C(1) << (shift - 1);
  if (rest > half || (rest == half && (kept & 1)))
    kept++; /* a carry out of the mantissa correctly bumps the exponent */
  return kept;
}

uint16_t kiln__half_from_double(double d)
{
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  uint16_t sign = (uint16_t)((bits >> 48) & 0x8000);
  int exp = (int)((bits >> 52) & 0x7ff);
  uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
  if (exp == 0x7ff) /* infinity, or NaN kept quiet with its top payload bits */
    return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 42) : 0));
  int e = exp - 1023 + 15; /* half's biased exponent */
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    /* a half subnormal counts units of 2^-24; below 2^-25 is zero (and
     * 2^-25 itself ties to the even zero) */
    if (e < -10)
      return sign;
    return (uint16_t)(sign | round_shift(mant | (UINT64_C(1) << 52), (unsigned)(43 - e)));
  }
  return (uint16_t)(sign | (round_shift(((uint64_t)e << 52) | mant, 42)));
}

/* ---- the runtimes that use CLBlast ---------------------------------------- */

/* CLBlast keeps every program it builds in a process-wide cache keyed by
 * context, which keeps that context alive: without this, each runtime that
 * ran CLBlast left its programs and its context behind when destroyed.
 * CLBlast can only empty the whole cache, so kiln does it when the last
 * runtime that used CLBlast goes, not under the feet of one still using it. */
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long users; /* runtimes whose CLBlast slot is set */

/* The runtime's CLBlast slot: non-NULL once it used CLBlast; under users_lock. */
#define USED(rt) ((rt)->slots[KILN__SLOT_CLBLAST].state)

/* kiln_runtime_destroy() runs it before releasing the context. */
static void clblast_release(kiln_runtime *rt)
{
  pthread_mutex_lock(&users_lock);
  if (USED(rt) && --users == 0) {
    kiln__clblast_lock();
    CLBlastClearCache();
    kiln__clblast_unlock();
  }
  USED(rt) = NULL;
  pthread_mutex_unlock(&users_lock);
}

static const kiln__slot_hooks clblast_hooks = {.release = clblast_release};

void kiln__clblast_use(kiln_runtime *rt)
{
  pthread_mutex_lock(&users_lock);
  if (!USED(rt)) {
    kiln__runtime_hook(rt, KILN__SLOT_CLBLAST, &clblast_hooks);
    USED(rt) = rt;
    users++;
  }
  pthread_mutex_unlock(&users_lock);
}

/* ---- one call at a time -------------------------------------------------- */

/* CLBlast 1.5.3 (Debian 12's) is not safe to call from two threads at once:
 * two threads whose first call of a routine both miss its process-wide
 * caches both build and store, and one reads a database the other is still
 * filling (ThreadSanitizer, in kiln's thread test; CLBlast's pull request
 * 495 fixed a race of this kind in its caches in 2023). So kiln makes one
 * CLBlast call at a time in the process. A first call holds the lock while
 * CLBlast compiles its kernels; later calls only while CLBlast enqueues. */
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;

void kiln__clblast_lock(void)
{
  pthread_mutex_lock(&call_lock);
}

void kiln__clblast_unlock(void)
{
  pthread_mutex_unlock(&call_lock);
}

/* ---- the backend --------------------------------------------------------- */

/* Margin for CLBlast's padding of each dimension to its tile sizes (at most
 * 128 in its database) and vector widths. */
#define PAD 256

/* Whether one matrix of the batch stays within CLBlast's int indices:
 * rows x cols stored with `ld` from `offset`, `batch` of them `stride` apart;
 * *padded grows by the size of CLBlast's padded temporary copy of it. */
static int fits_int(int row_major, size_t rows, size_t cols, size_t ld, size_t offset,
                    size_t stride, size_t batch, size_t *padded)
{
  size_t outer = row_major ? rows : cols, inner = row_major ? cols : rows;
  size_t span, last, end, copy;
  if (kiln__mul_overflow(outer - 1, ld, &span) ||
      kiln__mul_overflow(batch - 1, stride, &last) ||
      kiln__add_overflow(span, last, &end) || kiln__add_overflow(end, offset, &end) ||
      kiln__add_overflow(end, inner, &end) || end > INT_MAX)
    return 0;
  if (kiln__mul_overflow(rows + PAD, cols + PAD, &copy) ||
      kiln__mul_overflow(copy, batch, &copy) || kiln__add_overflow(*padded, copy, padded))
    return 0;
  return 1;
}

/* Non-zero when a finite, non-zero scalar is lost in half: it overflows to
 * infinity or rounds to zero. */
static int lost_in_half(double x)
{
  if (x == 0 || !isfinite(x))
    return 0;
  uint16_t h = kiln__half_from_double(x);
  return (h & 0x7fff) == 0x7c00 || (h & 0x7fff) == 0;
}

static const char *cannot(kiln_runtime *rt, const kiln__gemm *g)
{
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  switch (g->dtype) {
  case KILN_F16:
    if (!dev->has_fp16)
      return "the device has no cl_khr_fp16, which CLBlast's Hgemm needs; "
             "kiln's backend stores half and accumulates in float32";
    if (lost_in_half(g->alpha) || lost_in_half(g->beta))
      return "CLBlast's Hgemm takes alpha and beta in half precision, and one "
             "of them overflows it (above 65504) or rounds to zero in it";
    break;
  case KILN_F32: break;
  case KILN_F64:
    if (!dev->has_fp64)
      return "the device has no fp64 (cl_khr_fp64), which CLBlast's Dgemm needs";
    break;
  default: return "kiln runs CLBlast's GEMM on float16, float32 and float64 only";
  }
  if (!g->m || !g->n || !g->k || !g->batch)
    return "CLBlast refuses a zero m, n, k or batch";
  if (g->batch > 1 && !g->stride_c)
    return "CLBlast refuses a strided batch whose C stride is zero";
  int rm = g->layout == KILN_ROW_MAJOR;
  int ta = g->trans_a == KILN_TRANS, tb = g->trans_b == KILN_TRANS;
  size_t padded = 0;
  if (!fits_int(rm, ta ? g->k : g->m, ta ? g->m : g->k, g->lda, g->offset_a, g->stride_a,
                g->batch, &padded) ||
      !fits_int(rm, tb ? g->n : g->k, tb ? g->k : g->n, g->ldb, g->offset_b, g->stride_b,
                g->batch, &padded) ||
      !fits_int(rm, g->m, g->n, g->ldc, g->offset_c, g->stride_c, g->batch, &padded) ||
      padded > INT_MAX)
    return "CLBlast's kernels index matrices (and its padded copies of them) "
           "with 32-bit int, and this product reaches beyond element 2^31-1";
  return NULL;
}

/* One CLBlast call for either batch shape; X is S, D or H. */
#define CLBLAST_GEMM(X, alpha, beta)                                                     \
  (g->batch == 1 ? (call = "CLBlast" #X "gemm",                                          \
                    CLBlast##X##gemm(layout, ta, tb, g->m, g->n, g->k, alpha, g->a,      \
                                     g->offset_a, g->lda, g->b, g->offset_b, g->ldb,     \
                                     beta, g->c, g->offset_c, g->ldc, &queue, &ev))      \
                 : (call = "CLBlast" #X "gemmStridedBatched",                            \
                    CLBlast##X##gemmStridedBatched(                                      \
                      layout, ta, tb, g->m, g->n, g->k, alpha, g->a, g->offset_a,        \
                      g->lda, g->stride_a, g->b, g->offset_b, g->ldb, g->stride_b, beta, \
                      g->c, g->offset_c, g->ldc, g->stride_c, g->batch, &queue, &ev)))

static kiln_status run(kiln_runtime *rt, const kiln__gemm *g)
{
  CLBlastLayout layout =
    g->layout == KILN_COL_MAJOR ? CLBlastLayoutColMajor : CLBlastLayoutRowMajor;
  CLBlastTranspose ta =
    g->trans_a == KILN_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  CLBlastTranspose tb =
    g->trans_b == KILN_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  cl_command_queue queue = kiln__queue(rt);
  cl_event ev = NULL;
  const char *call = "CLBlast";
  kiln__clblast_use(rt);
  kiln__profile_mark(rt); /* CLBlast's event is its last kernel's */
  /* CLBlast skips reading C only when beta compares equal to zero, and for
   * half it compares the bits: a -0 would read C (and NaN in it). */
  double beta = g->beta == 0 ? 0.0 : g->beta;
  if (g->dtype != KILN_F32 && g->dtype != KILN_F64 && g->dtype != KILN_F16)
    return kiln__fail(rt, KILN_ERR_INVALID_DTYPE,
                      "kiln_gemm(clblast): %s; expected float16, float32 or float64",
                      kiln_dtype_name(g->dtype));
  CLBlastStatusCode st;
  kiln__clblast_lock();
  if (g->dtype == KILN_F32)
    st = CLBLAST_GEMM(S, (float)g->alpha, (float)beta);
  else if (g->dtype == KILN_F64)
    st = CLBLAST_GEMM(D, g->alpha, beta);
  else
    st = CLBLAST_GEMM(H, (cl_half)kiln__half_from_double(g->alpha),
                      (cl_half)kiln__half_from_double(beta));
  kiln__clblast_unlock();
  if (st != CLBlastSuccess) {
    if (ev)
      clReleaseEvent(ev);
    return kiln__fail_clblast(rt, st, call,
                              "kiln_gemm: a %zux%zux%zu %s product, batch %zu", g->m,
                              g->n, g->k, kiln_dtype_name(g->dtype), g->batch);
  }
  kiln_status ks = ev ? kiln__runtime_track(rt, ev, "kiln_gemm(clblast)")
                      : KILN_OK; /* NULL: CLBlast enqueued nothing */
  /* CLBlast cannot fuse the epilogue: a second pass over C. */
  return ks == KILN_OK && kiln__gemm_has_epilogue(g) ? kiln__gemm_epilogue(rt, g) : ks;
}

#undef CLBLAST_GEMM

const kiln__gemm_backend kiln__gemm_clblast = {KILN_BACKEND_CLBLAST, cannot, run};
