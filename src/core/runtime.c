/*
 * runtime.c — the core of a runtime's creation and destruction: choosing
 * the device, the context and queues, the memory budget; and waiting for
 * enqueued work. runtime/create.c assembles the modules above core around
 * these (kiln_runtime_create, kiln_runtime_destroy).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "core/pool.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "device/device.h"
#include "device/drivers.h"
#include "device/rank.h"
#include "device/select.h"

/* Numbers the runtimes of the process, for error.c's sink. */
static atomic_uint_fast64_t runtimes_made;

/* How many unchecked commands to keep before looking for finished ones. */
#define PENDING_REAP_AT 1024

/* ---- the sink of error.c: a runtime's failures, of any thread ------------ */

static uint64_t error_serial(const kiln_runtime *rt)
{
  return rt->serial;
}

static void error_store(kiln_runtime *rt, char *msg)
{
  pthread_mutex_lock(&rt->lock);
  free(rt->error);
  rt->error = msg;
  pthread_mutex_unlock(&rt->lock);
}

static char *error_copy(const kiln_runtime *rt)
{
  kiln_runtime *mrt = (kiln_runtime *)rt; /* the lock is not part of the value */
  pthread_mutex_lock(&mrt->lock);
  char *copy = rt->error ? strdup(rt->error) : NULL;
  pthread_mutex_unlock(&mrt->lock);
  return copy;
}

const kiln__error_sink kiln__runtime_errors = {error_serial, error_store, error_copy};

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

void kiln__runtime_close(kiln_runtime *rt)
{
  kiln__pool_trim(rt);
  /* before the queue and context; the profile's events last of them */
  for (size_t i = 0; i < KILN__SLOT_COUNT; i++)
    if (rt->slots[i].hooks && rt->slots[i].hooks->release)
      rt->slots[i].hooks->release(rt);
  for (size_t i = 0; i < rt->npending; i++)
    clReleaseEvent(rt->pending[i].ev);
  free(rt->pending);
  rt->pending = NULL;
  rt->npending = rt->cap_pending = 0;
  free(rt->streams);
  rt->streams = NULL;
  if (rt->copy_queue)
    clReleaseCommandQueue(rt->copy_queue);
  if (rt->alloc_queue)
    clReleaseCommandQueue(rt->alloc_queue);
  if (rt->queue)
    clReleaseCommandQueue(rt->queue);
  if (rt->context)
    clReleaseContext(rt->context);
  rt->copy_queue = rt->alloc_queue = rt->queue = NULL;
  rt->context = NULL;
}

void kiln__runtime_free(kiln_runtime *rt)
{
  free(rt->cl_dir);
  kiln__devices_free(&rt->devices);
  kiln__str_free(&rt->selection);
  free(rt->error);
  pthread_mutex_destroy(&rt->build_lock);
  pthread_mutex_destroy(&rt->lock);
  free(rt);
}

kiln_runtime *kiln__runtime_new(const kiln__config *cfg)
{
  kiln_runtime *rt = calloc(1, sizeof *rt);
  if (!rt || pthread_mutex_init(&rt->lock, NULL) != 0) {
    free(rt);
    return NULL;
  }
  if (pthread_mutex_init(&rt->build_lock, NULL) != 0) {
    pthread_mutex_destroy(&rt->lock);
    free(rt);
    return NULL;
  }
  kiln__error_sink_set(&kiln__runtime_errors); /* before rt can fail */
  rt->serial = atomic_fetch_add(&runtimes_made, 1) + 1;
  rt->pool.on = !cfg->no_memory_pool;
  rt->oom_wait_ms = cfg->oom_wait_ms;
  return rt;
}

kiln_status kiln__runtime_open_device(kiln_runtime *rt, const kiln__config *cfg)
{
  kiln_status st = kiln__devices_discover(&rt->devices);
  if (st != KILN_OK)
    return kiln__fail(NULL, st,
                      "kiln_runtime_create: out of host memory "
                      "while listing OpenCL devices");
  st = choose_device(rt, cfg);
  if (st == KILN_OK)
    st = open_device(rt);
  if (st != KILN_OK)
    return st;
  set_memory_limit(rt, cfg);
  kiln__drivers_note(&rt->devices.notes, cfg, &rt->devices,
                     &kiln__runtime_device(rt)->info);
  rt->gemm_backend = cfg->gemm_backend;
  rt->keep_sub_buffers =
    cfg->keep_sub_buffers || kiln__keeps_sub_buffers(&kiln__runtime_device(rt)->info);
  return KILN_OK;
}

kiln_status kiln__runtime_quiesce(kiln_runtime *rt)
{
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
  return KILN_OK;
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
  if (rt->profile) /* its slot is hooked at creation, never after */
    rt->slots[KILN__SLOT_PROFILE].hooks->command(rt, ev, label);
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
    rt->slots[KILN__SLOT_PROFILE].hooks->finished(rt);
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

kiln_status kiln__no_fp64(kiln_runtime *rt, const char *func, const char *what)
{
  const kiln_device_info *here = kiln_runtime_device(rt), *best = NULL;
  for (size_t i = 0; i < rt->devices.count; i++) {
    const kiln_device_info *d = &rt->devices.items[i].info;
    if (d != here && d->has_fp64 && d->available && d->compiler_available &&
        (!best || kiln_device_compare(d, best) < 0))
      best = d;
  }
  if (!best)
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                      "%s: %s needs fp64 (cl_khr_fp64), which '%s' has not, nor has any "
                      "other device here; use float32",
                      func, what, here->name);
  return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                    "%s: %s needs fp64 (cl_khr_fp64), which '%s' has not; '%s' (%u:%u) "
                    "has it: KILN_DEVICE=%u:%u picks it. Or use float32",
                    func, what, here->name, best->name, best->platform_index,
                    best->device_index, best->platform_index, best->device_index);
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
