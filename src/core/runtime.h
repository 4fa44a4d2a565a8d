/*
 * runtime.h — the runtime: what it holds, its core's creation and release,
 * and the commands it tracks until kiln_finish() (runtime.c). The public
 * kiln_runtime_create() and kiln_runtime_destroy(), which assemble the
 * modules above core around these, are runtime/create.c.
 */
#ifndef KILN_CORE_RUNTIME_H
#define KILN_CORE_RUNTIME_H

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "core/pool.h"
#include "device/device.h"

/* ---- what the layers above core keep in a runtime ------------------------ */

/* A module above core keeps its state in a slot of the runtime and registers
 * hooks there (kiln__runtime_hook): core calls them, never the module by
 * name. The ids' order is the order of release at destruction: all of them
 * before the queues and the context, which FFT plans hold and CLBlast's
 * cache keeps alive; the profile's events after the plans and CLBlast's. */
typedef enum kiln__slot_id {
  KILN__SLOT_FFT,     /* ops/fft.c: the cached plans, a list */
  KILN__SLOT_CLBLAST, /* backends/clblast/clblast.c: non-NULL once used */
  KILN__SLOT_PROFILE, /* profile/profile.c: hooked at creation when profiling
                         (rt->profile), never after, so read without the lock */
  KILN__SLOT_COUNT
} kiln__slot_id;

typedef struct kiln__slot_hooks {
  /* kiln_runtime_destroy(): releases the slot's state (no call in flight) */
  void (*release)(kiln_runtime *rt);
  /* memory pressure: frees what no call is using; returns how many things
   * it freed (0: nothing, retrying will not help). NULL: none */
  size_t (*reclaim)(kiln_runtime *rt);
  /* the kernels' parameters changed (kiln__runtime_set_tuning). NULL: none */
  void (*tuning_changed)(kiln_runtime *rt);
  /* The profiler's (KILN__SLOT_PROFILE), called only when rt->profile:
   * a command kiln__runtime_track_as() takes, with its label, before it is
   * listed; and kiln_finish() once every command has finished, rt->lock
   * held. */
  void (*command)(kiln_runtime *rt, cl_event ev, const char *label);
  void (*finished)(kiln_runtime *rt);
} kiln__slot_hooks;

typedef struct kiln__slot {
  void *state; /* the module's, guarded as the module says */
  const kiln__slot_hooks *hooks;
} kiln__slot;

/* ---- the runtime -------------------------------------------------------- */

struct kiln_runtime {
  pthread_mutex_t lock;      /* guards everything below that changes after create */
  kiln__device_list devices; /* the visible devices */
  size_t chosen;
  kiln__str selection; /* what KILN_VISIBLE_DEVICES and KILN_DEVICE did */
  cl_context context;
  cl_command_queue queue;       /* in order, profiling: all user-visible work */
  cl_command_queue alloc_queue; /* makes new buffers resident without waiting
                                   for the work on `queue` */
  cl_command_queue copy_queue;  /* in order, profiling: the host loops' transfers,
                                   beside the compute on `queue` (ops/host.c) */
  int finish_by_marker;         /* clFinish and blocking calls alone may not wait
                                   (kiln__blocking_returns_early()) */
  struct kiln_stream **streams; /* the caller's streams (stream.c); under lock */
  size_t nstreams, cap_streams;
  unsigned stream_ids; /* streams made so far: the next one's number - 1 */
  /* kernels: the builtin programs, built on first use (program.c) */
  pthread_mutex_t build_lock; /* one build at a time; not held with `lock` */
  cl_program *builtins;       /* kiln__builtin_count entries, NULL until built */
  struct kiln__kernel_programs *kernel_programs; /* one kernel's each (program.c) */
  /* kiln_runtime_warm_async()'s (ops/warm.c), made under lock */
  struct kiln__warm *warm;
  char *cl_dir;                         /* KILN_CL_DIR: builtin sources from disk */
  struct kiln__cache *cache;            /* the binary cache (compile/cache.h) */
  struct kiln__tuning_state *tuning;    /* kernel parameters (tuning.h) */
  kiln_device_type shape;               /* the kind rules shape for (tuning.c) */
  uint64_t compiles;                    /* programs built from source: for tests */
  uint64_t kernels_compiled;            /* the kernels in them: for tests */
  uint64_t live_programs, live_kernels; /* the caller's, for KILN_ERR_BUSY */
  kiln_backend gemm_backend;            /* forced for AUTO requests, or AUTO */
  kiln__slot slots[KILN__SLOT_COUNT];   /* hooks under lock (kiln__runtime_hook) */
  /* memory accounting */
  uint64_t mem_current, mem_peak, mem_limit, live_buffers;
  uint64_t mem_reserving; /* taken by creations in progress (buffer.c) */
  uint64_t mem_plans;     /* held by cached plans (kiln__plan_mem_create) */
  const char *mem_limit_source;
  kiln__pool pool;      /* blocks kept by destroyed buffers (pool.c) */
  unsigned oom_wait_ms; /* a refused allocation retries for this long */
  int keep_sub_buffers; /* views' sub-buffers live as long as their buffer's
                           memory (kiln__keeps_sub_buffers()) */
  /* commands enqueued without waiting, checked by kiln_finish() */
  struct kiln__pending {
    cl_event ev;
    const char *what; /* the call that enqueued it; static text */
  } * pending;
  size_t npending, cap_pending;
  cl_int deferred_err; /* first failure found while reaping early */
  const char *deferred_what;
  char *error;                 /* the last failure's message, of any thread */
  uint64_t serial;             /* unique in the process, never reused: names the
                            runtime in each thread's messages (error.c's sink) */
  int profile;                 /* recording calls; set at creation, never changed */
  struct kiln__profiler *prof; /* the records (profile.h); NULL when off */
};

/* ---- core's part of creation and destruction ---------------------------- */

/* kiln_runtime_create() (runtime/create.c) calls these around the modules
 * above core: kiln__runtime_new(), then room for their state, then
 * kiln__runtime_open_device(); a failure returns its status with the
 * message given. */

/* A zeroed runtime with its locks, serial, pool and memory settings; NULL
 * when out of host memory (no message). */
kiln_runtime *kiln__runtime_new(const kiln__config *cfg);

/* Lists the devices, chooses one, opens its context and queues, sets the
 * memory budget and the notes. */
kiln_status kiln__runtime_open_device(kiln_runtime *rt, const kiln__config *cfg);

/* kiln_runtime_destroy()'s first step: KILN_ERR_BUSY (and its message) while
 * rt has streams, buffers, programs or kernels alive; else waits for the
 * queues and returns KILN_OK. */
kiln_status kiln__runtime_quiesce(kiln_runtime *rt);

/* Releases, safely on a partly created runtime: the pool, the slots in
 * their order, the pending events, the queues and the context. Then
 * kiln__runtime_free() releases the rest and rt itself, after the modules
 * above core released theirs. */
void kiln__runtime_close(kiln_runtime *rt);
void kiln__runtime_free(kiln_runtime *rt);

const kiln__device *kiln__runtime_device(const kiln_runtime *rt);

/* Whether a command tracked by rt (kiln__runtime_track) has failed so far:
 * the failure stays for kiln_finish() to report. */
int kiln__runtime_failed(kiln_runtime *rt);

/* Takes ownership of an event of a command enqueued without waiting; its
 * status is checked by kiln_finish(). Returns a failure status only when the
 * list cannot grow, after waiting for the event itself. */
kiln_status kiln__runtime_track(kiln_runtime *rt, cl_event ev, const char *what);

/* The same, with the label the profiler gives the command (a kernel's
 * name, which need not outlive the call) when it is not `what`. */
kiln_status kiln__runtime_track_as(kiln_runtime *rt, cl_event ev, const char *what,
                                   const char *label);

/* Registers the hooks of slot id (idempotent; takes rt->lock). */
void kiln__runtime_hook(kiln_runtime *rt, kiln__slot_id id,
                        const kiln__slot_hooks *hooks);

/* Memory pressure: runs every registered reclaimer; returns how many things
 * they freed (0: nothing did, a retry would fail the same). */
size_t kiln__runtime_reclaim(kiln_runtime *rt);

/* Tells the modules that hooked tuning_changed (the FFT's plans, whose
 * passes follow the parameters they were made with). */
void kiln__runtime_tuning_changed(kiln_runtime *rt);

/* error.c's sink (base/error.h): the runtime's serial, and its last failure
 * of any thread under rt->lock. kiln__runtime_new() registers it; a test
 * that makes a runtime by hand registers it itself. */
extern const kiln__error_sink kiln__runtime_errors;

/* KILN_ERR_UNSUPPORTED: `what` (e.g. "float64", "mean of int32, whose result
 * is float64,") needs fp64, which rt's device has not. The message names
 * the best device of the machine that has it and the KILN_DEVICE that picks
 * it, or says that none has. */
kiln_status kiln__no_fp64(kiln_runtime *rt, const char *func, const char *what);

#endif /* KILN_CORE_RUNTIME_H */
