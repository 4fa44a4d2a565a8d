/*
 * warm.c — kiln_runtime_warm(): building ahead the kernels of operations,
 * so that their first calls wait for no compiler (container images, CI
 * caches, services that must answer their first request at once).
 *
 * An operation's kernels are the rows of cl/kernels.def in its files, in
 * their float32 variants (those that name f32, such as f16_f32), which is
 * what most callers run: other types still build on their first call. Each
 * kernel is a program of its own (program.c), through the binary cache.
 *
 * kiln_runtime_warm_async() does the same on a thread of its own, one
 * warm-up a runtime at a time: the caller goes on, calls operations (a
 * kernel the warm-up is building is waited for, not built twice: the
 * program table's rule), polls kiln_runtime_warm_progress() or waits with
 * kiln_runtime_warm_wait(). kiln_runtime_destroy() stops it after the
 * kernel in hand and joins it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/runtime.h"
#include "ops/warm.h"

/* Each operation and the cl/ files its kernels come from. */
static const struct {
  const char *op;
  const char *files[2];
} warm_ops[] = {
  {"gemm", {"gemm", NULL}},
  {"conv2d", {"conv", "gemm"}},
  {"reduce", {"reduce", "reduce_gpu"}},
  {"fft", {"fft", "fft_local"}},
  {"convert", {"convert", NULL}},
  {"scale", {"scale", NULL}},
};

#define NOPS (sizeof warm_ops / sizeof warm_ops[0])

/* Whether the comma-separated list names op ("" and "all": every one). */
static int listed(const char *list, const char *op)
{
  if (!*list || !strcmp(list, "all"))
    return 1;
  size_t n = strlen(op);
  for (const char *at = list; at; at = strchr(at, ',')) {
    at += *at == ',';
    if (!strncmp(at, op, n) && (at[n] == ',' || at[n] == '\0'))
      return 1;
  }
  return 0;
}

/* The failure for a name in the list that is no operation, or KILN_OK. */
static kiln_status check_list(kiln_runtime *rt, const char *list)
{
  if (!*list || !strcmp(list, "all"))
    return KILN_OK;
  for (const char *at = list; at; at = strchr(at, ',')) {
    at += *at == ',';
    size_t len = strcspn(at, ","), i = 0;
    while (i < NOPS &&
           (strlen(warm_ops[i].op) != len || strncmp(at, warm_ops[i].op, len)))
      i++;
    if (i == NOPS)
      return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                        "kiln_runtime_warm: '%.*s' is no operation; expected a "
                        "comma-separated list of gemm, conv2d, reduce, fft, convert, "
                        "scale, or \"all\"",
                        (int)len, at);
  }
  return KILN_OK;
}

/* The background warm-up's state (rt->warm), made at its first start. */
struct kiln__warm {
  pthread_mutex_t lock; /* guards what follows */
  pthread_cond_t done;
  pthread_t thread;
  int started;  /* thread was created and is not yet joined */
  int finished; /* thread has done its list (or stopped) */
  int stop;     /* kiln_runtime_destroy(): stop after the kernel in hand */
  char *ops;
  size_t built, total;
  kiln_status status;
  char *error; /* the failure's message, for kiln_runtime_warm_wait() */
};

/* Whether rt's warm-up was told to stop; NULL: a call's own, never. */
static int stopping(struct kiln__warm *w)
{
  if (!w)
    return 0;
  pthread_mutex_lock(&w->lock);
  int stop = w->stop;
  pthread_mutex_unlock(&w->lock);
  return stop;
}

/* Builds (or, with count_only, counts) the float32 kernels of row d into
 * *count; w, when not NULL, is the background warm-up to report to. */
static kiln_status warm_row(kiln_runtime *rt, const kiln__kernel_decl *d, int has_fp64,
                            int count_only, struct kiln__warm *w, size_t *count)
{
  for (size_t v = 0; v < d->nvariants && !stopping(w); v++) {
    const char *suffix = d->variants[v].suffix;
    if (!strstr(suffix, "f32") || (!has_fp64 && strstr(suffix, "f64")))
      continue;
    if (!count_only) {
      char name[64];
      snprintf(name, sizeof name, "kiln_%s_%s", d->family, suffix);
      cl_kernel k;
      kiln_status st = kiln__builtin_kernel(rt, d->program, name, &k);
      if (st != KILN_OK)
        return st;
      clReleaseKernel(k);
    }
    (*count)++;
    if (w && !count_only) {
      pthread_mutex_lock(&w->lock);
      w->built = *count;
      pthread_mutex_unlock(&w->lock);
    }
  }
  return KILN_OK;
}

/* The kernels of the operations a checked list names: built, or counted. */
static kiln_status warm_list(kiln_runtime *rt, const char *list, int count_only,
                             struct kiln__warm *w, size_t *count)
{
  int has_fp64 = kiln__runtime_device(rt)->info.has_fp64;
  kiln_status st = KILN_OK;
  *count = 0;
  for (size_t r = 0; st == KILN_OK && r < KILN__ROW_COUNT; r++) {
    const kiln__kernel_decl *d = &kiln__kernel_decls[r];
    int wanted = 0;
    for (size_t i = 0; i < NOPS && !wanted; i++)
      wanted = listed(list, warm_ops[i].op) &&
               ((warm_ops[i].files[0] && !strcmp(warm_ops[i].files[0], d->program)) ||
                (warm_ops[i].files[1] && !strcmp(warm_ops[i].files[1], d->program)));
    if (wanted)
      st = warm_row(rt, d, has_fp64, count_only, w, count);
  }
  return st;
}

KILN_API kiln_status kiln_runtime_warm(kiln_runtime *rt, const char *ops, size_t *built)
{
  if (built)
    *built = 0;
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_warm: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()");
  const char *list = ops ? ops : "";
  kiln_status st = check_list(rt, list);
  size_t count = 0;
  if (st == KILN_OK)
    st = warm_list(rt, list, 0, NULL, &count);
  if (built)
    *built = count;
  return st;
}

/* ---- in the background ---------------------------------------------------- */

static void *warm_thread(void *arg)
{
  kiln_runtime *rt = arg;
  struct kiln__warm *w = rt->warm;
  size_t count;
  kiln_status st = warm_list(rt, w->ops, 0, w, &count);
  char *error = st != KILN_OK ? strdup(kiln_last_error(rt)) : NULL;
  pthread_mutex_lock(&w->lock);
  w->status = st;
  w->error = error;
  w->finished = 1;
  pthread_cond_broadcast(&w->done);
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

/* rt's warm-up state, made on first use; NULL when out of memory. */
static struct kiln__warm *warm_state(kiln_runtime *rt)
{
  pthread_mutex_lock(&rt->lock);
  if (!rt->warm) {
    struct kiln__warm *w = calloc(1, sizeof *w);
    if (w && pthread_mutex_init(&w->lock, NULL) != 0) {
      free(w);
      w = NULL;
    } else if (w && pthread_cond_init(&w->done, NULL) != 0) {
      pthread_mutex_destroy(&w->lock);
      free(w);
      w = NULL;
    }
    rt->warm = w;
  }
  struct kiln__warm *w = rt->warm;
  pthread_mutex_unlock(&rt->lock);
  return w;
}

/* Joins a finished warm-up's thread and forgets its results. Called with
 * w->lock held: a finished thread has let go of the lock for good. */
static void warm_reset(struct kiln__warm *w)
{
  if (w->started)
    pthread_join(w->thread, NULL);
  free(w->ops);
  free(w->error);
  w->ops = w->error = NULL;
  w->started = w->finished = 0;
  w->built = w->total = 0;
  w->status = KILN_OK;
}

KILN_API kiln_status kiln_runtime_warm_async(kiln_runtime *rt, const char *ops)
{
  static const char fn[] = "kiln_runtime_warm_async";
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: rt is NULL; expected a runtime from kiln_runtime_create()",
                      fn);
  const char *list = ops ? ops : "";
  kiln_status st = check_list(rt, list);
  if (st != KILN_OK)
    return st;
  struct kiln__warm *w = warm_state(rt);
  if (!w)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  pthread_mutex_lock(&w->lock);
  if (w->started && !w->finished) {
    pthread_mutex_unlock(&w->lock);
    return kiln__fail(rt, KILN_ERR_BUSY,
                      "%s: a warm-up of this runtime is still running; wait for it "
                      "with kiln_runtime_warm_wait() before starting another",
                      fn);
  }
  warm_reset(w);
  size_t total = 0;
  warm_list(rt, list, 1, NULL, &total);
  w->total = total;
  w->ops = strdup(list);
  int err = w->ops ? pthread_create(&w->thread, NULL, warm_thread, rt) : -1;
  w->started = err == 0;
  pthread_mutex_unlock(&w->lock);
  if (err != 0)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "%s: could not start the warm-up's thread (%s)", fn,
                      err > 0 ? strerror(err) : "out of host memory");
  return KILN_OK;
}

KILN_API int kiln_runtime_warm_progress(kiln_runtime *rt, size_t *built, size_t *total)
{
  struct kiln__warm *w = NULL;
  if (rt) {
    pthread_mutex_lock(&rt->lock);
    w = rt->warm;
    pthread_mutex_unlock(&rt->lock);
  }
  int running = 0;
  size_t b = 0, t = 0;
  if (w) {
    pthread_mutex_lock(&w->lock);
    running = w->started && !w->finished;
    b = w->built, t = w->total;
    pthread_mutex_unlock(&w->lock);
  }
  if (built)
    *built = b;
  if (total)
    *total = t;
  return running;
}

KILN_API kiln_status kiln_runtime_warm_wait(kiln_runtime *rt, size_t *built)
{
  if (built)
    *built = 0;
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_warm_wait: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()");
  pthread_mutex_lock(&rt->lock);
  struct kiln__warm *w = rt->warm;
  pthread_mutex_unlock(&rt->lock);
  if (!w)
    return KILN_OK; /* none started */
  pthread_mutex_lock(&w->lock);
  while (w->started && !w->finished)
    pthread_cond_wait(&w->done, &w->lock);
  kiln_status st = w->status;
  char *error = st != KILN_OK && w->error ? strdup(w->error) : NULL;
  if (built)
    *built = w->built;
  pthread_mutex_unlock(&w->lock);
  if (st != KILN_OK) /* the warm-up's thread failed: its message, on this one */
    st = kiln__fail(rt, st, "%s", error ? error : "kiln_runtime_warm_async failed");
  free(error);
  return st;
}

void kiln__warm_stop(kiln_runtime *rt)
{
  struct kiln__warm *w = rt->warm;
  if (!w)
    return;
  pthread_mutex_lock(&w->lock);
  w->stop = 1;
  while (w->started && !w->finished)
    pthread_cond_wait(&w->done, &w->lock);
  warm_reset(w);
  pthread_mutex_unlock(&w->lock);
  pthread_cond_destroy(&w->done);
  pthread_mutex_destroy(&w->lock);
  free(w);
  rt->warm = NULL;
}
