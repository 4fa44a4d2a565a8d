/*
 * clblast_reduce.c — the CLBlast reduction backend: a checked kiln__reduce
 * of every element becomes one CLBlast{S,D}sum or CLBlast{S,D}nrm2 call on
 * the runtime's queue. Built only when meson finds CLBlast.
 *
 * CLBlast applies to few of kiln_reduce()'s requests, and cannot() refuses
 * the others rather than give a result that differs from kiln's spec:
 *  - One vector per call: an axis reduction would be one call per output
 *    (outer * inner of them), each a strided walk; kiln's kernel does it in
 *    one pass.
 *  - Xsum and Xnrm2 exist, mean does not; a mean through Xsum and a scaling
 *    kernel would be kiln's kernel in all but name.
 *  - min, max, argmin, argmax: CLBlast's iXmax and iXmin (non-BLAS, they
 *    exist) and iXamax/iXamin (of |x|) return indices, and they do not
 *    follow kiln's rules. Measured on PoCL with CLBlast 1.5.3:
 *      * NaN is never picked (its test is `x > best`): iSmax of a vector
 *        with NaN at 10 and 20 gives the last element's index, not 10;
 *      * ties go to the lower work-item of its tree, not the lower index:
 *        iSmax of zeros with 5 at 16 and 32 (n = 64) gives 32;
 *      * the running best starts at -1e37 (its SMALLEST) with index 0, so
 *        values below -1e37 are never seen: iSmax of [-3e38, -1e38] gives
 *        0, iSmin of [3e38, 1e38] gives 0.
 *    min and max through those indices plus a gather would inherit all
 *    three, so they are refused too.
 *  - float16: Hsum and Hnrm2 accumulate in half and return half (2048 + 1
 *    is 2048 there); kiln's float16 sum and norm are float32.
 *  - int32: CLBlast has no integer routines.
 *  - Its kernels take n and the offsets as 32-bit int and step a grid-
 *    stride index past n before testing it, so the view must end well
 *    below element 2^31.
 *
 * What the accepted requests give: Ssum and Snrm2 accumulate in float32, in
 * a grid-stride tree, where kiln's kernel accumulates a float32 input in
 * float64 (or compensated float32). The result is float32 either way, as
 * kiln_reduce_out_dtype() says, but CLBlast's can be off by a few ulps per
 * ~10^6 terms more; that is what a caller who names CLBlast asks for.
 * Snrm2 squares without scaling, as numpy's linalg.norm does in float32:
 * |x| above ~1.8e19 overflows to inf and below ~1e-19 vanishes, where
 * kiln's float64 accumulation does not. NaN and inf propagate through both,
 * as kiln's spec says. Dsum and Dnrm2 are float64 throughout.
 *
 * What kiln does not see: the first call of each routine and precision on a
 * context compiles CLBlast's kernels (seconds on a CPU device); each call
 * allocates a small temporary (2 x WGS2 elements) outside kiln's memory
 * accounting; and on an OpenCL error CLBlast prints a line to stderr.
 */
#include <limits.h>

/* base/util.h first: it sets CL_TARGET_OPENCL_VERSION for the OpenCL headers
 * that clblast_c.h includes. */
#include "backends/clblast/clblast.h"
#include "base/error.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "ops/ops.h"
#include "profile/profile.h"

#include <clblast_c.h>

/* Every routine kiln uses has this signature: n, result buffer and offset,
 * x buffer, offset and increment, queue, event. */
typedef CLBlastStatusCode (*clblast_reduce_fn)(const size_t, cl_mem, const size_t,
                                               const cl_mem, const size_t, const size_t,
                                               cl_command_queue *, cl_event *);

/* The requests CLBlast runs exactly as kiln_reduce() specifies them (within
 * the accuracy noted above). */
static const struct {
  kiln_reduce_op op;
  kiln_dtype dtype;
  clblast_reduce_fn fn;
  const char *name, *what;
} routines[] = {
  {KILN_REDUCE_SUM, KILN_F32, CLBlastSsum, "CLBlastSsum", "sum"},
  {KILN_REDUCE_SUM, KILN_F64, CLBlastDsum, "CLBlastDsum", "sum"},
  {KILN_REDUCE_NORM2, KILN_F32, CLBlastSnrm2, "CLBlastSnrm2", "norm"},
  {KILN_REDUCE_NORM2, KILN_F64, CLBlastDnrm2, "CLBlastDnrm2", "norm"},
};

/* Why each other op is refused; see the top of the file. */
static const char *const refused_ops[] = {
  [KILN_REDUCE_MEAN] = "CLBlast has no mean; kiln's backend computes it",
  [KILN_REDUCE_MIN] = "CLBlast's iXmin returns an index that skips NaN, "
                      "breaks ties by work-item rather than first index and "
                      "never sees values above 1e37; kiln's min propagates NaN",
  [KILN_REDUCE_MAX] = "CLBlast's iXmax returns an index that skips NaN, "
                      "breaks ties by work-item rather than first index and "
                      "never sees values below -1e37; kiln's max propagates NaN",
  [KILN_REDUCE_ARGMIN] = "CLBlast's iXmin skips NaN and does not return the "
                         "first index on ties, as kiln's argmin does",
  [KILN_REDUCE_ARGMAX] = "CLBlast's iXmax skips NaN and does not return the "
                         "first index on ties, as kiln's argmax does",
};

/* CLBlast's grid steps by WGS1 * 2 * WGS2 work-items (at most 2^21 with
 * work-groups of 1024) past an int index below n; keep that from wrapping. */
#define INDEX_MARGIN ((size_t)1 << 24)

static int find_routine(const kiln__reduce *r)
{
  for (size_t i = 0; i < sizeof routines / sizeof routines[0]; i++)
    if (routines[i].op == r->op && routines[i].dtype == r->in_type)
      return (int)i;
  return -1;
}

static const char *cannot(kiln_runtime *rt, const kiln__reduce *r)
{
  if ((unsigned)r->op < sizeof refused_ops / sizeof refused_ops[0] && refused_ops[r->op])
    return refused_ops[r->op];
  if (r->op != KILN_REDUCE_SUM && r->op != KILN_REDUCE_NORM2)
    return "kiln runs only CLBlast's Xsum and Xnrm2";
  switch (r->in_type) {
  case KILN_F32: break;
  case KILN_F64:
    if (!kiln__runtime_device(rt)->info.has_fp64)
      return "the device has no fp64 (cl_khr_fp64), which CLBlast's Dsum and "
             "Dnrm2 need";
    break;
  case KILN_F16:
    return "CLBlast's Hsum and Hnrm2 accumulate in half and return half; "
           "kiln's float16 sum and norm are float32, accumulated in float32 "
           "or better";
  case KILN_I32: return "CLBlast has no integer reductions";
  default: return "kiln runs CLBlast's reductions on float32 and float64 only";
  }
  if (r->outer != 1 || r->inner != 1)
    return "CLBlast reduces one whole vector per call, not along an axis; "
           "kiln's backend reduces every axis in one pass";
  if (r->len == 0)
    return "CLBlast refuses an empty vector";
  if (r->len > INT_MAX - INDEX_MARGIN || r->offset > INT_MAX - INDEX_MARGIN - r->len ||
      r->out_offset > INT_MAX)
    return "CLBlast's reduction kernels index with 32-bit int, and this view "
           "reaches beyond element 2^31 - 2^24";
  /* each routine writes its input's type, which is kiln's result type for
   * these four requests */
  if (find_routine(r) < 0 || r->out_type != r->in_type)
    return "kiln has no CLBlast routine for this request";
  return NULL;
}

static kiln_status run(kiln_runtime *rt, const kiln__reduce *r)
{
  const char *why = cannot(rt, r);
  if (why) /* the dispatcher asks cannot() first; this is a safety net */
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED, "kiln_reduce(clblast): %s", why);
  int k = find_routine(r); /* found: cannot() checked */
  cl_command_queue queue = kiln__queue(rt);
  cl_event ev = NULL;
  kiln__clblast_use(rt);
  kiln__profile_mark(rt); /* CLBlast's event is its last kernel's */
  kiln__clblast_lock();
  CLBlastStatusCode st =
    routines[k].fn(r->len, r->out, r->out_offset, r->in, r->offset, 1, &queue, &ev);
  kiln__clblast_unlock();
  if (st != CLBlastSuccess) {
    if (ev)
      clReleaseEvent(ev);
    return kiln__fail_clblast(rt, st, routines[k].name,
                              "kiln_reduce: the %s of %zu %s elements", routines[k].what,
                              r->len, kiln_dtype_name(r->in_type));
  }
  if (!ev) /* CLBlast enqueued nothing */
    return KILN_OK;
  return kiln__runtime_track(rt, ev, "kiln_reduce(clblast)");
}

const kiln__reduce_backend kiln__reduce_clblast = {KILN_BACKEND_CLBLAST, cannot, run};
