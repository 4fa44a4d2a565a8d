/*
 * error.c — the last failure's message, per runtime or per thread.
 *
 * A runtime keeps the message of its last failure under its lock. Returning
 * that pointer to a caller would race with another thread's failure, so
 * kiln_last_error() hands each thread its own copy, valid until the same
 * thread asks again. Failures with no runtime (kiln_runtime_create(), NULL
 * arguments) are kept per thread, like errno.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct thread_slot {
  char *own;  /* this thread's last failure without a runtime */
  char *copy; /* the copy last returned by kiln_last_error(rt) */
} thread_slot;

static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static int slot_key_ok;

static void slot_free(void *p)
{
  thread_slot *t = p;
  free(t->own);
  free(t->copy);
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

static void record(kiln_runtime *rt, char *msg)
{
  if (rt) {
    kiln__runtime_set_error(rt, msg);
    return;
  }
  thread_slot *t = slot_get();
  if (!t) {
    free(msg);
    return;
  }
  free(t->own);
  t->own = msg;
}

kiln_status kiln__fail(kiln_runtime *rt, kiln_status status, const char *fmt, ...)
{
  kiln__str s = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&s, fmt, ap);
  va_end(ap);
  record(rt, s.data);
  return status;
}

kiln_status kiln__fail_cl(kiln_runtime *rt, cl_int err, const char *call,
                          const char *fmt, ...)
{
  kiln_status status = kiln__status_from_cl(err);
  kiln__str s = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&s, fmt, ap);
  va_end(ap);
  kiln__str_appendf(&s, ": %s failed with %s (%d): %s", call,
                    kiln_cl_error_name(err), (int)err,
                    kiln_status_string(status));
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
  kiln_runtime *mrt = (kiln_runtime *)rt; /* the lock is not part of the value */
  pthread_mutex_lock(&mrt->lock);
  char *copy = rt->error ? strdup(rt->error) : NULL;
  pthread_mutex_unlock(&mrt->lock);
  free(t->copy);
  t->copy = copy;
  return copy ? copy : "";
}
