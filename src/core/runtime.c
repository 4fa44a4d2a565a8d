/*
 * runtime.c — creating and destroying a runtime: choosing the device, the
 * context and queues, the memory budget, and waiting for enqueued work.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_config.h"
#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "compile/cache.h"
#include "compile/program.h"
#include "core/pool.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "device/device.h"
#include "device/drivers.h"
#include "device/rank.h"
#include "device/select.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

/* Numbers the runtimes of the process, for error.c. */
static atomic_uint_fast64_t runtimes_made;

/* How many unchecked commands to keep before looking for finished ones. */
#define PENDING_REAP_AT 1024

static kiln_status fail_no_device(const kiln__device_list *list, const kiln__config *cfg)
{
  kiln__str msg = {0};
  const char *notes = kiln__str_get(&list->notes);
  if (list->platforms == 0)
    kiln__note_no_platform(&msg, cfg);
  else if (list->count == 0)
    kiln__str_appendf(&msg, "%zu OpenCL platform%s found, but no usable device\n",
                      list->platforms, list->platforms == 1 ? "" : "s");
  else
    kiln__str_appendf(&msg,
                      "%zu device%s found, but none is usable; expected a "
                      "device that reports CL_DEVICE_AVAILABLE and "
                      "CL_DEVICE_COMPILER_AVAILABLE\n",
                      list->count, list->count == 1 ? "" : "s");
  kiln__drivers_note(&msg, cfg, list, NULL);
  kiln_status st = kiln__fail(NULL, KILN_ERR_NO_DEVICE, "kiln_runtime_create: %s%s%s",
                              kiln__str_get(&msg), *notes ? "notes:\n" : "", notes);
  kiln__str_free(&msg);
  return st;
}

/* The budget: the device's global memory, capped by the configured limits. */
static void set_memory_limit(kiln_runtime *rt, const kiln__config *cfg)
{
  uint64_t global = kiln__runtime_device(rt)->info.global_mem_bytes;
  rt->mem_limit = global;
  rt->mem_limit_source = "the device's global memory";
  if (cfg->memory_limit && cfg->memory_limit < rt->mem_limit) {
    rt->mem_limit = cfg->memory_limit;
    rt->mem_limit_source = cfg->memory_source;
  }
  uint64_t share = (uint64_t)((double)global * cfg->memory_fraction);
  if (cfg->memory_fraction > 0 && share < rt->mem_limit) {
    rt->mem_limit = share;
    rt->mem_limit_source = cfg->memory_source;
  }
}

/* Applies the visibility mask, then the selector, the local rank or the
 * ranking. What they did goes into rt->selection for `kiln devices`. */
static kiln_status choose_device(kiln_runtime *rt, const kiln__config *cfg)
{
  kiln_status st = KILN_OK;
  if (rt->devices.count && cfg->visible)
    st =
      kiln__devices_mask(&rt->devices, cfg->visible, cfg->visible_source, &rt->selection);
  if (st != KILN_OK)
    return st;
  size_t best = kiln__devices_best(&rt->devices);
  if (best == SIZE_MAX)
    return fail_no_device(&rt->devices, cfg);
  rt->chosen = best;
  const kiln__local_rank lr = {cfg->local_rank, cfg->local_rank_source};
  if (cfg->device)
    st = kiln__devices_select_ranked(&rt->devices, cfg->device, cfg->device_source, &lr,
                                     &rt->chosen, &rt->selection);
  else if (lr.source) /* a launcher's rank: each rank its own device */
    st = kiln__devices_local_rank(&rt->devices, &lr, &rt->chosen, &rt->selection);
  if (st == KILN_OK && rt->chosen != best)
    kiln__str_appendf(&rt->selection, "the ranking alone would pick %u:%u %s\n",
                      rt->devices.items[best].info.platform_index,
                      rt->devices.items[best].info.device_index,
                      rt->devices.items[best].info.name);
  return st;
}

static kiln_status open_device(kiln_runtime *rt)
{
  const kiln__device *dev = kiln__runtime_device(rt);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   (cl_context_properties)dev->platform, 0};
  cl_int err;
  rt->context = clCreateContext(props, 1, &dev->id, NULL, NULL, &err);
  if (!rt->context)
    return kiln__fail_cl(NULL, err, "clCreateContext",
                         "kiln_runtime_create: creating a context on '%s'",
                         dev->info.name);
  rt->queue = clCreateCommandQueue(rt->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (rt->queue)
    rt->alloc_queue = clCreateCommandQueue(rt->context, dev->id, 0, &err);
  if (rt->alloc_queue)
    rt->copy_queue =
      clCreateCommandQueue(rt->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (!rt->queue || !rt->alloc_queue || !rt->copy_queue)
    return kiln__fail_cl(NULL, err, "clCreateCommandQueue",
                         "kiln_runtime_create: creating a command queue on '%s'",
                         dev->info.name);
  rt->finish_by_marker = kiln__blocking_returns_early(&dev->info);
  return KILN_OK;
}

/* Releases what a runtime holds; safe on a partly created one. */
static void runtime_free(kiln_runtime *rt)
{
  kiln__pool_trim(rt);
  for (size_t i = 0; i < KILN__SLOT_COUNT; i++) /* before the queue and context */
    if (rt->slots[i].hooks && rt->slots[i].hooks->release)
      rt->slots[i].hooks->release(rt);
  kiln__profile_free(rt); /* the events of calls still recorded */
  for (size_t i = 0; i < rt->npending; i++)
    clReleaseEvent(rt->pending[i].ev);
  free(rt->pending);
  free(rt->streams);
  if (rt->copy_queue)
    clReleaseCommandQueue(rt->copy_queue);
  if (rt->alloc_queue)
    clReleaseCommandQueue(rt->alloc_queue);
  if (rt->queue)
    clReleaseCommandQueue(rt->queue);
  if (rt->context)
    clReleaseContext(rt->context);
  kiln__programs_release(rt);
  kiln__tuning_free(rt);
  kiln__cache_close(&rt->cache);
  free(rt->cl_dir);
  kiln__devices_free(&rt->devices);
  kiln__str_free(&rt->selection);
  free(rt->error);
  pthread_mutex_destroy(&rt->build_lock);
  pthread_mutex_destroy(&rt->lock);
  free(rt);
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
  kiln_runtime *rt = calloc(1, sizeof *rt);
  if (!rt || pthread_mutex_init(&rt->lock, NULL) != 0) {
    free(rt);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: allocating the runtime failed");
  }
  if (pthread_mutex_init(&rt->build_lock, NULL) != 0) {
    pthread_mutex_destroy(&rt->lock);
    free(rt);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: allocating the runtime failed");
  }
  rt->serial = atomic_fetch_add(&runtimes_made, 1) + 1;
  rt->pool.on = !cfg.no_memory_pool;
  rt->oom_wait_ms = cfg.oom_wait_ms;
  rt->builtins =
    calloc(kiln__builtin_count ? kiln__builtin_count : 1, sizeof *rt->builtins);
  rt->cl_dir = cfg.cl_dir ? strdup(cfg.cl_dir) : NULL;
  rt->tuning = calloc(1, sizeof *rt->tuning);
  if (!rt->builtins || !rt->tuning || (cfg.cl_dir && !rt->cl_dir)) {
    runtime_free(rt);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_runtime_create: allocating the runtime failed");
  }
  st = kiln__devices_discover(&rt->devices);
  if (st != KILN_OK) {
    runtime_free(rt);
    return kiln__fail(NULL, st,
                      "kiln_runtime_create: out of host memory "
                      "while listing OpenCL devices");
  }
  st = choose_device(rt, &cfg);
  if (st == KILN_OK)
    st = open_device(rt);
  if (st != KILN_OK) {
    runtime_free(rt);
    return st;
  }
  set_memory_limit(rt, &cfg);
  kiln__drivers_note(&rt->devices.notes, &cfg, &rt->devices,
                     &kiln__runtime_device(rt)->info);
  rt->gemm_backend = cfg.gemm_backend;
  rt->keep_sub_buffers =
    cfg.keep_sub_buffers || kiln__keeps_sub_buffers(&kiln__runtime_device(rt)->info);
  kiln__cache_open(&rt->cache, &cfg, &rt->devices.notes);
  if (rt->cache.dir && !cfg.cache_binaries)
    rt->cache.binaries_off = kiln__driver_cache(&kiln__runtime_device(rt)->info);
  kiln__tuning_shape(rt, cfg.shape);
  rt->tuning->benchmark = cfg.benchmark;
  if (!cfg.no_tuning && !cfg.shape) /* a record is measured in the device's shape */
    kiln__record_load(rt);
  st = kiln__profile_init(rt, &cfg);
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
  pthread_mutex_lock(&rt->lock);
  uint64_t live = rt->live_buffers, held = rt->mem_current;
  uint64_t programs = rt->live_programs, kernels = rt->live_kernels;
  size_t streams = rt->nstreams;
  pthread_mutex_unlock(&rt->lock);
  if (streams)
    return kiln__fail(rt, KILN_ERR_BUSY,
                      "kiln_runtime_destroy: this runtime still has %zu stream%s alive; "
                      "destroy %s first with kiln_stream_destroy()",
                      streams, streams == 1 ? "" : "s", streams == 1 ? "it" : "them");
  if (programs || kernels || live) {
    char b[32];
    return kiln__fail(rt, KILN_ERR_BUSY,
                      "kiln_runtime_destroy: this runtime still has %llu buffer%s "
                      "(holding %s), %llu program%s and %llu kernel%s alive; destroy "
                      "them first with kiln_buffer_destroy(), kiln_program_destroy() "
                      "and kiln_kernel_destroy()",
                      (unsigned long long)live, live == 1 ? "" : "s",
                      kiln__format_bytes(held, b, sizeof b), (unsigned long long)programs,
                      programs == 1 ? "" : "s", (unsigned long long)kernels,
                      kernels == 1 ? "" : "s");
  }
  kiln__finish_queue(rt, rt->copy_queue); /* errors no longer have anyone to go to */
  kiln__finish_queue(rt, rt->queue);
  /* The trace's failure is the thread's to read: the runtime is gone. */
  kiln_status st =
    rt->prof && rt->prof->trace
      ? kiln__trace_write(rt, NULL, rt->prof->trace, "kiln_runtime_destroy")
      : KILN_OK;
  runtime_free(rt);
  return st;
}

void kiln__runtime_hook(kiln_runtime *rt, kiln__slot_id id, const kiln__slot_hooks *hooks)
{
  pthread_mutex_lock(&rt->lock);
  rt->slots[id].hooks = hooks;
  pthread_mutex_unlock(&rt->lock);
}

/* The hooks registered now; called outside rt->lock, as reclaimers take it. */
static void hooks_now(kiln_runtime *rt, const kiln__slot_hooks *out[KILN__SLOT_COUNT])
{
  pthread_mutex_lock(&rt->lock);
  for (size_t i = 0; i < KILN__SLOT_COUNT; i++)
    out[i] = rt->slots[i].hooks;
  pthread_mutex_unlock(&rt->lock);
}

size_t kiln__runtime_reclaim(kiln_runtime *rt)
{
  const kiln__slot_hooks *h[KILN__SLOT_COUNT];
  hooks_now(rt, h);
  size_t freed = 0;
  for (size_t i = 0; i < KILN__SLOT_COUNT; i++)
    if (h[i] && h[i]->reclaim)
      freed += h[i]->reclaim(rt);
  return freed;
}

void kiln__runtime_tuning_changed(kiln_runtime *rt)
{
  const kiln__slot_hooks *h[KILN__SLOT_COUNT];
  hooks_now(rt, h);
  for (size_t i = 0; i < KILN__SLOT_COUNT; i++)
    if (h[i] && h[i]->tuning_changed)
      h[i]->tuning_changed(rt);
}

void kiln__runtime_set_error(kiln_runtime *rt, char *msg)
{
  pthread_mutex_lock(&rt->lock);
  free(rt->error);
  rt->error = msg;
  pthread_mutex_unlock(&rt->lock);
}

/* Drops the finished commands from the pending list, keeping the first
 * failure for kiln_finish(). Called with the lock held. */
static void reap_finished(kiln_runtime *rt)
{
  KILN__ASSERT_HELD(&rt->lock);
  size_t kept = 0;
  for (size_t i = 0; i < rt->npending; i++) {
    cl_int status = CL_QUEUED;
    cl_int err = clGetEventInfo(rt->pending[i].ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                sizeof status, &status, NULL);
    if (err == CL_SUCCESS && status > CL_COMPLETE) {
      rt->pending[kept++] = rt->pending[i];
      continue;
    }
    if (err != CL_SUCCESS)
      status = err;
    if (status < 0 && rt->deferred_err == CL_SUCCESS) {
      rt->deferred_err = status;
      rt->deferred_what = rt->pending[i].what;
    }
    clReleaseEvent(rt->pending[i].ev);
  }
  rt->npending = kept;
}

int kiln__runtime_failed(kiln_runtime *rt)
{
  pthread_mutex_lock(&rt->lock);
  reap_finished(rt);
  int failed = rt->deferred_err != CL_SUCCESS;
  pthread_mutex_unlock(&rt->lock);
  return failed;
}

kiln_status kiln__runtime_track(kiln_runtime *rt, cl_event ev, const char *what)
{
  return kiln__runtime_track_as(rt, ev, what, what);
}

kiln_status kiln__runtime_track_as(kiln_runtime *rt, cl_event ev, const char *what,
                                   const char *label)
{
  if (rt->profile)
    kiln__profile_attach(rt, ev, label);
  pthread_mutex_lock(&rt->lock);
  if (rt->npending >= PENDING_REAP_AT && rt->npending == rt->cap_pending)
    reap_finished(rt);
  if (rt->npending == rt->cap_pending) {
    size_t cap = rt->cap_pending ? rt->cap_pending * 2 : 64;
    struct kiln__pending *grown = realloc(rt->pending, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&rt->lock);
      cl_int err = clWaitForEvents(1, &ev);
      clReleaseEvent(ev);
      return err == CL_SUCCESS ? KILN_OK
                               : kiln__fail_cl(rt, err, "clWaitForEvents",
                                               "%s: waiting for the command", what);
    }
    rt->pending = grown;
    rt->cap_pending = cap;
  }
  rt->pending[rt->npending++] = (struct kiln__pending){ev, what};
  pthread_mutex_unlock(&rt->lock);
  return KILN_OK;
}

KILN_API kiln_status kiln_finish(kiln_runtime *rt)
{
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_finish: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()");
  cl_int err = kiln__finish_queue(rt, rt->queue),
         copy_err = kiln__finish_queue(rt, rt->copy_queue);
  if (err == CL_SUCCESS)
    err = copy_err;
  kiln__streams_finish(rt, &err);
  pthread_mutex_lock(&rt->lock);
  if (rt->finish_by_marker) /* the events may lag the queues' waits (stream.h) */
    kiln__wait_tracked(rt);
  reap_finished(rt); /* everything has finished: this empties the list */
  if (rt->profile)
    kiln__profile_resolve(rt, 2);
  cl_int failed = rt->deferred_err;
  const char *what = rt->deferred_what;
  rt->deferred_err = CL_SUCCESS;
  rt->deferred_what = NULL;
  pthread_mutex_unlock(&rt->lock);
  if (failed != CL_SUCCESS)
    return kiln__fail_cl(rt, failed, what, "kiln_finish: a command failed on the device");
  if (err != CL_SUCCESS)
    return kiln__fail_cl(rt, err, "clFinish", "kiln_finish: waiting for the queue");
  return KILN_OK;
}

const kiln__device *kiln__runtime_device(const kiln_runtime *rt)
{
  return &rt->devices.items[rt->chosen];
}

KILN_API const kiln_device_info *kiln_runtime_device(const kiln_runtime *rt)
{
  return rt ? &kiln__runtime_device(rt)->info : NULL;
}

KILN_API size_t kiln_runtime_device_count(const kiln_runtime *rt)
{
  return rt ? rt->devices.count : 0;
}

KILN_API const kiln_device_info *kiln_runtime_device_at(const kiln_runtime *rt, size_t i)
{
  return rt && i < rt->devices.count ? &rt->devices.items[i].info : NULL;
}

KILN_API const char *kiln_runtime_diagnostics(const kiln_runtime *rt)
{
  return rt ? kiln__str_get(&rt->devices.notes) : NULL;
}

KILN_API const char *kiln_runtime_selection(const kiln_runtime *rt)
{
  return rt ? kiln__str_get(&rt->selection) : NULL;
}

KILN_API cl_platform_id kiln_runtime_cl_platform(const kiln_runtime *rt)
{
  return rt ? kiln__runtime_device(rt)->platform : NULL;
}

KILN_API cl_device_id kiln_runtime_cl_device(const kiln_runtime *rt)
{
  return rt ? kiln__runtime_device(rt)->id : NULL;
}

KILN_API cl_context kiln_runtime_cl_context(const kiln_runtime *rt)
{
  return rt ? rt->context : NULL;
}

KILN_API cl_command_queue kiln_runtime_cl_queue(const kiln_runtime *rt)
{
  return rt ? rt->queue : NULL;
}
