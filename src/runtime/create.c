/*
 * create.c — kiln_runtime_create() and kiln_runtime_destroy(): the one
 * place that assembles a runtime's modules, calling down into each. core
 * opens the device and releases the queues and context; above it come the
 * binary cache and the programs (compile/), the kernels' parameters and
 * the tuning record (tuning/), the profiler (profile/). It is a layer of
 * its own above them (and backends/, below group/, which makes a runtime
 * per device) so that none of them, nor core, names another above it.
 */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error.h"
#include "compile/cache.h"
#include "compile/program.h"
#include "core/runtime.h"
#include "device/rank.h"
#include "ops/warm.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

/* Releases what a runtime holds; safe on a partly created one. The order
 * is the release's: core's slots (FFT plans, CLBlast's cache, the profile's
 * events) before the queues and the context, then the programs, the
 * tuning state and the cache, then the rest of core's. */
static void runtime_free(kiln_runtime *rt)
{
  kiln__warm_stop(rt);
  kiln__runtime_close(rt);
  kiln__programs_release(rt);
  kiln__tuning_free(rt);
  if (rt->cache)
    kiln__cache_close(rt->cache);
  free(rt->cache);
  kiln__runtime_free(rt);
}

/* The modules' state, once core has its device: the cache, the tuning
 * state and record, the profiler. */
static kiln_status open_modules(kiln_runtime *rt, const kiln__config *cfg)
{
  const kiln_device_info *info = &kiln__runtime_device(rt)->info;
  kiln__cache_open(rt->cache, cfg, &rt->devices.notes);
  if (rt->cache->dir && !cfg->cache_binaries)
    rt->cache->binaries_off = kiln__driver_cache(info);
  kiln__tuning_shape(rt, cfg->shape);
  rt->tuning->benchmark = cfg->benchmark;
  if (!cfg->no_tuning && !cfg->shape) /* a record is measured in the device's shape */
    kiln__record_load(rt);
  return kiln__profile_init(rt, cfg);
}

KILN_API kiln_status kiln_runtime_create(const kiln_options *opts, kiln_runtime **out)
{
  if (!out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_create: out is NULL; expected the address "
                      "of a kiln_runtime pointer to receive the runtime");
  *out = NULL;
  kiln__config cfg;
  kiln_status st = kiln__config_resolve(opts, &cfg);
  if (st != KILN_OK)
    return st;
  kiln_runtime *rt = kiln__runtime_new(&cfg);
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: allocating the runtime failed");
  rt->builtins =
    calloc(kiln__builtin_count ? kiln__builtin_count : 1, sizeof *rt->builtins);
  rt->cl_dir = cfg.cl_dir ? strdup(cfg.cl_dir) : NULL;
  rt->tuning = calloc(1, sizeof *rt->tuning);
  rt->cache = calloc(1, sizeof *rt->cache);
  if (!rt->builtins || !rt->tuning || !rt->cache || (cfg.cl_dir && !rt->cl_dir)) {
    runtime_free(rt);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: allocating the runtime failed");
  }
  st = kiln__runtime_open_device(rt, &cfg);
  if (st == KILN_OK)
    st = open_modules(rt, &cfg);
  if (st != KILN_OK) {
    runtime_free(rt);
    return st;
  }
  *out = rt;
  return KILN_OK;
}

KILN_API kiln_status kiln_runtime_destroy(kiln_runtime *rt)
{
  if (!rt)
    return KILN_OK;
  kiln_status st = kiln__runtime_quiesce(rt);
  if (st != KILN_OK)
    return st;
  kiln__warm_stop(rt); /* its builds record into the profile the trace reads */
  /* The trace's failure is the thread's to read: the runtime is gone. */
  st = rt->prof && rt->prof->trace
         ? kiln__trace_write(rt, NULL, rt->prof->trace, "kiln_runtime_destroy")
         : KILN_OK;
  runtime_free(rt);
  return st;
}
