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
 *
 * The runtime's serial and its message of any thread come through the sink
 * core registers (kiln__error_sink, error.h): base sits below core.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"

#define OWN_RUNTIMES 8

typedef struct thread_slot {
  char *own;  /* this thread's last failure without a runtime */
  char *copy; /* the copy last returned by kiln_last_error(rt) */
  struct {
    uint64_t serial; /* 0: unused */
    char *msg;
  } on[OWN_RUNTIMES]; /* its last failure on each runtime, latest first */
} thread_slot;

/* core's, set before the first runtime exists (kiln__error_sink_set) */
static const kiln__error_sink *_Atomic sink;

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

void kiln__error_sink_set(const kiln__error_sink *s)
{
  atomic_store(&sink, s);
}

/* Keeps a copy of msg as this thread's last failure on the runtime of
 * `serial`, first in t->on; the runtime the thread failed on longest ago
 * makes room. */
static void record_own(thread_slot *t, uint64_t serial, const char *msg)
{
  size_t i = 0;
  while (i + 1 < OWN_RUNTIMES && t->on[i].serial != serial)
    i++;
  free(t->on[i].msg);
  memmove(&t->on[1], &t->on[0], i * sizeof t->on[0]);
  t->on[0].serial = serial;
  t->on[0].msg = msg ? strdup(msg) : NULL;
}

static void record(kiln_runtime *rt, char *msg)
{
  thread_slot *t = slot_get();
  const kiln__error_sink *s = atomic_load(&sink);
  if (rt && s) { /* s is set: rt was made by kiln_runtime_create() */
    if (t)
      record_own(t, s->serial(rt), msg);
    s->store(rt, msg);
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
  const kiln__error_sink *s = atomic_load(&sink);
  if (!s) /* no runtime made yet: rt has no failure */
    return "";
  char *copy = NULL;
  uint64_t serial = s->serial(rt);
  size_t i = 0;
  while (i < OWN_RUNTIMES && t->on[i].serial != serial)
    i++;
  if (i < OWN_RUNTIMES && t->on[i].msg)
    copy = strdup(t->on[i].msg);
  else /* no failure of this thread on rt: the runtime's last */
    copy = s->copy(rt);
  free(t->copy);
  t->copy = copy;
  return copy ? copy : "";
}
