/*
 * clblast_tune.c — hands tuned parameters to CLBlast
 * (CLBlastOverrideParameters()), for the tuning records' "clblast" section
 * (record_clblast.c). Built only when meson finds CLBlast.
 *
 * CLBlast keeps what it is given in a process-wide database cache keyed by
 * device, precision and kernel, so the parameters hold for every context on
 * the device from then on; a program it built before keeps its own, as
 * CLBlast's program and binary caches are keyed by the parameter values
 * too. CLBlast checks only that every parameter its database has for the
 * kernel is given (CLBlastMissingOverrideParameter) and that it knows the
 * kernel (1.5.3 says CLBlastDatabaseError where its header promises
 * CLBlastInvalidOverrideKernel); values it cannot build with fail at the
 * first call that uses them.
 */
#include "backends/clblast/clblast.h"
#include "base/util.h"
#include "core/runtime.h"
#include "device/device.h"
#include "tuning/tuning.h"

#include <clblast_c.h>

static CLBlastPrecision precision_of(kiln_dtype dtype)
{
  switch (dtype) {
  case KILN_F16: return CLBlastPrecisionHalf;
  case KILN_F64: return CLBlastPrecisionDouble;
  default: return CLBlastPrecisionSingle;
  }
}

kiln_status kiln__clblast_override(kiln_runtime *rt, const kiln__clblast_params *p,
                                   kiln__str *why)
{
  assert(p->n >= 1 && p->n <= KILN__CLBLAST_PARAMS);
  const kiln__device *dev = kiln__runtime_device(rt);
  if ((p->dtype == KILN_F64 && !dev->info.has_fp64) ||
      (p->dtype == KILN_F16 && !dev->info.has_fp16)) {
    kiln__str_appendf(why, "the device has no %s (%s), which CLBlast's %s needs",
                      kiln_dtype_name(p->dtype),
                      p->dtype == KILN_F64 ? "cl_khr_fp64" : "cl_khr_fp16", p->kernel);
    return KILN_ERR_UNSUPPORTED;
  }
  const char *names[KILN__CLBLAST_PARAMS];
  for (size_t i = 0; i < p->n; i++)
    names[i] = p->names[i];
  kiln__clblast_lock();
  CLBlastStatusCode st = CLBlastOverrideParameters(
    dev->id, p->kernel, precision_of(p->dtype), p->n, names, p->values);
  kiln__clblast_unlock();
  if (st == CLBlastSuccess)
    return KILN_OK;
  kiln__clblast_describe(why, st, "CLBlastOverrideParameters");
  if (st != CLBlastDatabaseError)
    return kiln__status_from_clblast(st);
  /* What 1.5.3 says for a kernel name it does not know: the caller's
   * mistake, not the device's. */
  kiln__str_appendf(why, " (here: it has no kernel named %s)", p->kernel);
  return KILN_ERR_INVALID_ARGUMENT;
}
