/*
 * error.c — the last failure's message, per runtime or per thread.
 *
 * Threads that share a runtime fail at the same time: a runtime-wide "last
 * message" would give one thread another's. So each thread keeps, like
 * errno, the message of its own last failure on each of the last
 * OWN_RUNTIMES runtimes it failed on (keyed by the runtime's serial, never
 * reused, so a new runtime at a freed one's address is not mistaken for
 * it), and kiln_last_error(rt) returns that. A thread that has made no
 * failing call on rt gets the runtime's last message of any thread, which
 * the runtime keeps under its lock: so a thread that only collects statuses
 * from workers can still read why. Failures with no runtime
 * (kiln_runtime_create(), NULL arguments) are kept per thread.
 *
 * Each kiln_last_error() returns a copy owned by the calling thread, valid
 * until the same thread asks again: another thread's failure never frees
 * the text a thread is reading.
 */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "core/runtime.h"

#define OWN_RUNTIMES 8

typedef struct thread_slot {
  char *own;  /* this thread's last failure without a runtime */
  char *copy; /* the copy last returned by kiln_last_error(rt) */
  struct {
    uint64_t serial; /* 0: unused */
    char *msg;
  } on[OWN_RUNTIMES]; /* its last failure on each runtime, latest first */
} thread_slot;

static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static int slot_key_ok;

static void slot_free(void *p)
{
  thread_slot *t = p;
  free(t->own);
  free(t->copy);
  for (size_t i = 0; i < OWN_RUNTIMES; i++)
    free(t->on[i].msg);
  free(t);
}

static void slot_key_create(void)
{
  slot_key_ok = pthread_key_create(&slot_key, slot_free) == 0;
}

/* NULL only when the host is out of memory. */
static thread_slot *slot_get(void)
{
  pthread_once(&slot_once, slot_key_create);
  if (!slot_key_ok)
    return NULL;
  thread_slot *t = pthread_getspecific(slot_key);
  if (!t) {
    t = calloc(1, sizeof *t);
    if (t && pthread_setspecific(slot_key, t) != 0) {
      free(t);
      t = NULL;
    }
  }
  return t;
}

/* Keeps a copy of msg as this thread's last failure on rt, first in t->on;
 * the runtime the thread failed on longest ago makes room. */
static void record_own(thread_slot *t, const kiln_runtime *rt, const char *msg)
{
  size_t i = 0;
  while (i + 1 < OWN_RUNTIMES && t->on[i].serial != rt->serial)
    i++;
  free(t->on[i].msg);
  memmove(&t->on[1], &t->on[0], i * sizeof t->on[0]);
  t->on[0].serial = rt->serial;
  t->on[0].msg = msg ? strdup(msg) : NULL;
}

static void record(kiln_runtime *rt, char *msg)
{
  thread_slot *t = slot_get();
  if (rt) {
    if (t)
      record_own(t, rt, msg);
    kiln__runtime_set_error(rt, msg);
    return;
  }
  if (!t) {
    free(msg);
    return;
  }
  free(t->own);
  t->own = msg;
}

KILN_API kiln_status kiln_last_error_set(kiln_runtime *rt, kiln_status status,
                                         const char *fmt, ...)
{
  kiln__str s = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&s, fmt, ap);
  va_end(ap);
  record(rt, s.data);
  return status;
}

kiln_status kiln__fail_cl(kiln_runtime *rt, cl_int err, const char *call, const char *fmt,
                          ...)
{
  kiln_status status = kiln__status_from_cl(err);
  kiln__str s = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&s, fmt, ap);
  va_end(ap);
  kiln__str_appendf(&s, ": %s failed with %s (%d): %s", call, kiln_cl_error_name(err),
                    (int)err, kiln_status_string(status));
  record(rt, s.data);
  return status;
}

KILN_API const char *kiln_last_error(const kiln_runtime *rt)
{
  thread_slot *t = slot_get();
  if (!t)
    return "out of host memory while reading the last error";
  if (!rt)
    return t->own ? t->own : "";
  char *copy = NULL;
  size_t i = 0;
  while (i < OWN_RUNTIMES && t->on[i].serial != rt->serial)
    i++;
  if (i < OWN_RUNTIMES && t->on[i].msg) {
    copy = strdup(t->on[i].msg);
  } else { /* no failure of this thread on rt: the runtime's last */
    kiln_runtime *mrt = (kiln_runtime *)rt; /* the lock is not part of the value */
    pthread_mutex_lock(&mrt->lock);
    copy = rt->error ? strdup(rt->error) : NULL;
    pthread_mutex_unlock(&mrt->lock);
  }
  free(t->copy);
  t->copy = copy;
  return copy ? copy : "";
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
