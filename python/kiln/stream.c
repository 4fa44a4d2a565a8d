/* kiln.Stream and kiln.Event (kiln_stream, kiln_event), on the model of
 * CuPy's and torch.cuda's: `with rt.stream() as s:` sends the calling
 * thread's calls on rt to s; events order streams and time the device.
 * Each holds its runtime alive, as a device array does (kiln destroys
 * streams before their runtime). */
#include "kilnpy.h"

typedef struct kilnpy_stream {
  PyObject_HEAD kilnpy_runtime *owner;
  kiln_stream *s;
} kilnpy_stream;

typedef struct kilnpy_event {
  PyObject_HEAD kilnpy_runtime *owner;
  kiln_event *ev;
} kilnpy_event;

static PyTypeObject stream_type, event_type;

/* A status as None or the exception, the GIL released around fn's wait. */
static PyObject *status_result(kiln_status s, kilnpy_runtime *owner)
{
  return s == KILN_OK ? Py_NewRef(Py_None) : kilnpy_raise(s, owner->rt);
}

PyObject *kilnpy_stream_new(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kilnpy_stream *o = PyObject_New(kilnpy_stream, &stream_type);
  if (!o)
    return NULL;
  o->owner = (kilnpy_runtime *)Py_NewRef(self);
  o->s = NULL;
  self->arrays++;
  kiln_status s = kiln_stream_create(self->rt, &o->s);
  if (s != KILN_OK) {
    kilnpy_raise(s, self->rt);
    Py_DECREF(o);
    return NULL;
  }
  return (PyObject *)o;
}

static void stream_dealloc(kilnpy_stream *self)
{
  kilnpy_runtime *owner = self->owner;
  if (self->s) {
    Py_BEGIN_ALLOW_THREADS;
    kiln_stream_destroy(self->s); /* waits for its work */
    Py_END_ALLOW_THREADS;
  }
  owner->arrays--;
  kilnpy_runtime_release(owner);
  Py_DECREF(owner);
  PyObject_Free(self);
}

static PyObject *stream_enter(kilnpy_stream *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  kiln_status s = kiln_stream_use(self->owner->rt, self->s);
  return s == KILN_OK ? Py_NewRef(self) : kilnpy_raise(s, self->owner->rt);
}

static PyObject *stream_exit(kilnpy_stream *self, PyObject *args)
{
  (void)args;
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  return status_result(kiln_stream_use(self->owner->rt, NULL), self->owner);
}

static PyObject *stream_synchronize(kilnpy_stream *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  kiln_status s;
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_stream_finish(self->s);
  Py_END_ALLOW_THREADS;
  return status_result(s, self->owner);
}

PyObject *kilnpy_event_record(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kilnpy_event *o = PyObject_New(kilnpy_event, &event_type);
  if (!o)
    return NULL;
  o->owner = (kilnpy_runtime *)Py_NewRef(self);
  o->ev = NULL;
  self->arrays++;
  kiln_status s = kiln_event_record(self->rt, &o->ev);
  if (s != KILN_OK) {
    kilnpy_raise(s, self->rt);
    Py_DECREF(o);
    return NULL;
  }
  return (PyObject *)o;
}

static void event_dealloc(kilnpy_event *self)
{
  kilnpy_runtime *owner = self->owner;
  kiln_event_destroy(self->ev);
  owner->arrays--;
  kilnpy_runtime_release(owner);
  Py_DECREF(owner);
  PyObject_Free(self);
}

static kilnpy_event *event_of(kilnpy_runtime *rt, PyObject *o)
{
  if (!PyObject_TypeCheck(o, &event_type) || ((kilnpy_event *)o)->owner != rt) {
    kilnpy_raise_msg(KILN_ERR_WRONG_RUNTIME, "expected a kiln.Event of this runtime");
    return NULL;
  }
  return (kilnpy_event *)o;
}

PyObject *kilnpy_wait_event(kilnpy_runtime *self, PyObject *ev)
{
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kilnpy_event *e = event_of(self, ev);
  return e ? status_result(kiln_stream_wait_event(self->rt, e->ev), self) : NULL;
}

static PyObject *event_synchronize(kilnpy_event *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  kiln_status s;
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_event_wait(self->ev);
  Py_END_ALLOW_THREADS;
  return status_result(s, self->owner);
}

static PyObject *event_query(kilnpy_event *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  int done = 0;
  kiln_status s = kiln_event_query(self->ev, &done);
  return s == KILN_OK ? PyBool_FromLong(done) : kilnpy_raise(s, self->owner->rt);
}

static PyObject *event_elapsed(kilnpy_event *self, PyObject *end)
{
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  kilnpy_event *e = event_of(self->owner, end);
  if (!e)
    return NULL;
  double ms = 0;
  kiln_status s = kiln_event_elapsed(self->ev, e->ev, &ms);
  return s == KILN_OK ? PyFloat_FromDouble(ms) : kilnpy_raise(s, self->owner->rt);
}

static PyMethodDef stream_methods[] = {
  {"__enter__", (PyCFunction)stream_enter, METH_NOARGS, NULL},
  {"__exit__", (PyCFunction)stream_exit, METH_VARARGS, NULL},
  {"synchronize", (PyCFunction)stream_synchronize, METH_NOARGS,
   "Waits for the work enqueued on the stream so far."},
  {NULL, NULL, 0, NULL},
};

static PyMethodDef event_methods[] = {
  {"synchronize", (PyCFunction)event_synchronize, METH_NOARGS,
   "Waits on the host for the event."},
  {"query", (PyCFunction)event_query, METH_NOARGS,
   "query() -> bool: whether the event has completed; does not wait."},
  {"elapsed_time", (PyCFunction)event_elapsed, METH_O,
   "elapsed_time(end) -> float: milliseconds of device time from this event to end, "
   "both completed (kiln.BusyError otherwise)."},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject stream_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.Stream",
  .tp_basicsize = sizeof(kilnpy_stream),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A queue of the runtime beside its own (Runtime.stream()); `with s:` sends "
            "this thread's calls on the runtime to it.",
  .tp_dealloc = (destructor)stream_dealloc,
  .tp_methods = stream_methods,
};

static PyTypeObject event_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.Event",
  .tp_basicsize = sizeof(kilnpy_event),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A point of this thread's queue (Runtime.record_event()).",
  .tp_dealloc = (destructor)event_dealloc,
  .tp_methods = event_methods,
};

int kilnpy_stream_types_add(PyObject *m)
{
  PyTypeObject *types[] = {&stream_type, &event_type};
  const char *names[] = {"Stream", "Event"};
  for (int i = 0; i < 2; i++) {
    if (PyType_Ready(types[i]) < 0)
      return -1;
    Py_INCREF(types[i]);
    if (PyModule_AddObject(m, names[i], (PyObject *)types[i]) < 0) {
      Py_DECREF(types[i]);
      return -1;
    }
  }
  return 0;
}
