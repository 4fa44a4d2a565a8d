/* kiln.devices() and kiln.Runtime: device records as dicts, the runtime's
 * life (close(), the context manager), memory statistics. */
#include "kilnpy.h"

#include <string.h>

static const char *type_name(uint64_t type)
{
  if (type & KILN_DEVICE_GPU)
    return "gpu";
  if (type & KILN_DEVICE_CPU)
    return "cpu";
  if (type & KILN_DEVICE_ACCELERATOR)
    return "accelerator";
  return "other";
}

/* dict[key] = v, taking v's reference; -1 on failure (v NULL included). */
static int put(PyObject *dict, const char *key, PyObject *v)
{
  int rc = v ? PyDict_SetItemString(dict, key, v) : -1;
  Py_XDECREF(v);
  return rc;
}

/* Every property as `kiln info --json` has it: its raw value, None when the
 * device does not report it. */
static PyObject *properties_dict(const kiln_device_info *info)
{
  PyObject *props = PyDict_New();
  size_t n = kiln_device_property_count();
  for (size_t i = 0; props && i < n; i++) {
    kiln_property p;
    if (kiln_device_property(info, i, &p) != KILN_OK)
      continue;
    if (put(props, p.name,
            p.available ? PyUnicode_FromString(p.raw) : Py_NewRef(Py_None)))
      Py_CLEAR(props);
  }
  return props;
}

PyObject *kilnpy_device_dict(const kiln_device_info *d)
{
  char reasons[256];
  PyObject *o = PyDict_New();
  if (!o)
    return NULL;
  const kiln_platform_info *p = kiln_device_platform(d);
  int rc =
    put(o, "name", PyUnicode_FromString(d->name)) |
    put(o, "vendor", PyUnicode_FromString(d->vendor)) |
    put(o, "vendor_family", PyUnicode_FromString(kiln_vendor_name(d->vendor_family))) |
    put(o, "type", PyUnicode_FromString(type_name(d->type))) |
    put(o, "platform", PyUnicode_FromString(p ? p->name : d->platform_name)) |
    put(o, "platform_index", PyLong_FromUnsignedLong(d->platform_index)) |
    put(o, "device_index", PyLong_FromUnsignedLong(d->device_index)) |
    put(o, "version", PyUnicode_FromString(d->version)) |
    put(o, "driver_version", PyUnicode_FromString(d->driver_version)) |
    put(o, "opencl_version", PyLong_FromUnsignedLong(d->opencl_version)) |
    put(o, "compute_units", PyLong_FromUnsignedLong(d->compute_units)) |
    put(o, "clock_mhz", PyLong_FromUnsignedLong(d->clock_mhz)) |
    put(o, "global_mem_bytes", PyLong_FromUnsignedLongLong(d->global_mem_bytes)) |
    put(o, "max_alloc_bytes", PyLong_FromUnsignedLongLong(d->max_alloc_bytes)) |
    put(o, "local_mem_bytes", PyLong_FromUnsignedLongLong(d->local_mem_bytes)) |
    put(o, "available", PyBool_FromLong(d->available)) |
    put(o, "compiler_available", PyBool_FromLong(d->compiler_available)) |
    put(o, "has_fp64", PyBool_FromLong(d->has_fp64)) |
    put(o, "has_fp16", PyBool_FromLong(d->has_fp16)) |
    put(o, "integrated", PyBool_FromLong(d->integrated)) |
    put(o, "simulator", PyBool_FromLong(d->is_simulator)) |
    put(o, "peak_gflops", PyFloat_FromDouble(d->peak_gflops)) |
    put(o, "rank_reasons",
        PyUnicode_FromString(kiln_device_rank_reasons(d, reasons, sizeof reasons))) |
    put(o, "properties", properties_dict(d));
  if (rc) {
    Py_DECREF(o);
    return NULL;
  }
  return o;
}

PyObject *kilnpy_devices(PyObject *module, PyObject *unused)
{
  (void)module;
  (void)unused;
  kiln_device_list *list = NULL;
  kiln_status s;
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_device_list_create(NULL, &list);
  Py_END_ALLOW_THREADS;
  if (s != KILN_OK)
    return kilnpy_raise(s, NULL);
  size_t n = kiln_device_list_count(list);
  PyObject *out = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; out && i < n; i++) {
    PyObject *d = kilnpy_device_dict(kiln_device_list_at(list, i));
    if (d && put(d, "index", PyLong_FromSize_t(i)) < 0)
      Py_CLEAR(d);
    if (!d)
      Py_CLEAR(out);
    else
      PyList_SET_ITEM(out, (Py_ssize_t)i, d);
  }
  kiln_device_list_destroy(list);
  return out;
}

/* ---- the runtime's life ------------------------------------------------ */

int kilnpy_runtime_check(kilnpy_runtime *self)
{
  if (self->closed || !self->rt) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "the runtime is closed: create a new kiln.Runtime()");
    return -1;
  }
  return 0;
}

void kilnpy_call_begin(kilnpy_runtime *self)
{
  self->calls++;
}

void kilnpy_call_end(kilnpy_runtime *self)
{
  self->calls--;
  kilnpy_runtime_release(self);
}

void kilnpy_runtime_release(kilnpy_runtime *self)
{
  if (!self->closed || !self->rt || self->arrays > 0 || self->calls > 0)
    return;
  kiln_runtime *rt = self->rt;
  self->rt = NULL;
  Py_BEGIN_ALLOW_THREADS;
  kiln_runtime_destroy(rt);
  Py_END_ALLOW_THREADS;
}

static int runtime_init(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"device", "memory_limit", "profile", NULL};
  PyObject *device = Py_None, *limit = Py_None;
  int profile = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO$p:Runtime", kwlist, &device, &limit,
                                   &profile))
    return -1;
  if (self->rt) {
    PyErr_SetString(PyExc_RuntimeError, "kiln.Runtime is initialised already");
    return -1;
  }
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = profile; /* 0 leaves KILN_PROFILE to decide */
  PyObject *dev_str = NULL;
  if (PyLong_Check(device))
    dev_str = PyObject_Str(device); /* the N-th visible device */
  else if (PyUnicode_Check(device))
    dev_str = Py_NewRef(device);
  else if (device != Py_None) {
    PyErr_Format(PyExc_TypeError,
                 "device: expected None, an index or a selector such as 'gpu', "
                 "'nvidia,cpu', '1:0' or 'name=A770'; got %.80s",
                 Py_TYPE(device)->tp_name);
    return -1;
  }
  if (dev_str && !(opts.device = PyUnicode_AsUTF8(dev_str))) {
    Py_DECREF(dev_str);
    return -1;
  }
  if (PyFloat_Check(limit)) {
    double f = PyFloat_AsDouble(limit);
    if (!(f > 0 && f <= 1)) {
      Py_XDECREF(dev_str);
      PyErr_Format(PyExc_ValueError,
                   "memory_limit: a float is a fraction of the device's memory, in "
                   "(0, 1]; got %g",
                   f);
      return -1;
    }
    opts.memory_fraction = f;
  } else if (limit != Py_None) {
    unsigned long long bytes = PyLong_AsUnsignedLongLong(limit);
    if (PyErr_Occurred() || bytes == 0) {
      Py_XDECREF(dev_str);
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError,
                      "memory_limit: expected None, bytes as a positive "
                      "int, or a fraction of the device's memory as a "
                      "float in (0, 1]");
      return -1;
    }
    opts.memory_limit = bytes;
  }
  kiln_runtime *rt = NULL;
  kiln_status s;
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_runtime_create(&opts, &rt);
  Py_END_ALLOW_THREADS;
  Py_XDECREF(dev_str);
  if (s != KILN_OK) {
    kilnpy_raise(s, NULL);
    return -1;
  }
  self->rt = rt;
  self->closed = 0;
  return 0;
}

static void runtime_dealloc(kilnpy_runtime *self)
{
  self->closed = 1;
  kilnpy_runtime_release(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *runtime_close(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  self->closed = 1;
  kilnpy_runtime_release(self);
  Py_RETURN_NONE;
}

static PyObject *runtime_enter(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  return Py_NewRef(self);
}

static PyObject *runtime_exit(kilnpy_runtime *self, PyObject *args)
{
  (void)args;
  return runtime_close(self, NULL);
}

static PyObject *runtime_memory_stats(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kiln_memory_usage u;
  kiln_memory_usage_init(&u);
  kiln_status s = kiln_memory_stats(self->rt, &u);
  if (s != KILN_OK)
    return kilnpy_raise(s, self->rt);
  return Py_BuildValue(
    "{sKsKsKsKsKsLsKsKsKsKsKsKsK}", "current_bytes", (unsigned long long)u.current_bytes,
    "peak_bytes", (unsigned long long)u.peak_bytes, "live_buffers",
    (unsigned long long)u.live_buffers, "limit_bytes", (unsigned long long)u.limit_bytes,
    "max_alloc_bytes", (unsigned long long)u.max_alloc_bytes, "device_free_bytes",
    (long long)u.device_free_bytes, "cached_bytes", (unsigned long long)u.cached_bytes,
    "peak_cached_bytes", (unsigned long long)u.peak_cached_bytes, "pool_hits",
    (unsigned long long)u.pool_hits, "pool_misses", (unsigned long long)u.pool_misses,
    "trims", (unsigned long long)u.trims, "largest_free_block",
    (unsigned long long)u.largest_free_block, "plan_bytes",
    (unsigned long long)u.plan_bytes);
}

/* fn(rt) without the GIL; None, or its status raised. */
static PyObject *runtime_call(kilnpy_runtime *self, kiln_status (*fn)(kiln_runtime *))
{
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kiln_status s;
  kilnpy_call_begin(self);
  Py_BEGIN_ALLOW_THREADS;
  s = fn(self->rt);
  Py_END_ALLOW_THREADS;
  PyObject *ret = s == KILN_OK ? Py_NewRef(Py_None) : kilnpy_raise(s, self->rt);
  kilnpy_call_end(self);
  return ret;
}

static PyObject *runtime_empty_cache(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  return runtime_call(self, kiln_memory_trim);
}

static PyObject *runtime_synchronize(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  return runtime_call(self, kiln_finish);
}

static PyObject *runtime_array_method(kilnpy_runtime *self, PyObject *obj)
{
  return kilnpy_runtime_array(self, obj);
}

static PyObject *get_device(kilnpy_runtime *self, void *closure)
{
  (void)closure;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  return kilnpy_device_dict(kiln_runtime_device(self->rt));
}

/* Why this device: what the selector and the visibility mask did, when
 * set; else the ranking, with the device's rank reasons. */
static PyObject *get_why(kilnpy_runtime *self, void *closure)
{
  (void)closure;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  char reasons[256];
  const char *sel = kiln_runtime_selection(self->rt);
  kiln_device_rank_reasons(kiln_runtime_device(self->rt), reasons, sizeof reasons);
  size_t n = kiln_runtime_device_count(self->rt);
  if (sel && sel[0])
    return PyUnicode_FromFormat("%s\npicked: %s", sel, reasons);
  return PyUnicode_FromFormat("the best ranked of %zu usable device%s: %s", n,
                              n == 1 ? "" : "s", reasons);
}

static PyObject *get_diagnostics(kilnpy_runtime *self, void *closure)
{
  (void)closure;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  return PyUnicode_FromString(kiln_runtime_diagnostics(self->rt));
}

static PyObject *get_closed(kilnpy_runtime *self, void *closure)
{
  (void)closure;
  return PyBool_FromLong(self->closed);
}

static PyObject *get_profiling(kilnpy_runtime *self, void *closure)
{
  (void)closure;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  return PyBool_FromLong(kiln_profile_enabled(self->rt));
}

static PyMethodDef runtime_methods[] = {
  {"close", (PyCFunction)runtime_close, METH_NOARGS,
   "Destroys the runtime once no device array of it is alive; later calls raise "
   "kiln.Error."},
  {"__enter__", (PyCFunction)runtime_enter, METH_NOARGS, NULL},
  {"__exit__", (PyCFunction)runtime_exit, METH_VARARGS, NULL},
  {"array", (PyCFunction)runtime_array_method, METH_O,
   "array(obj) -> DeviceArray: a copy of obj (a numpy array, anything numpy.asarray "
   "takes, or a DeviceArray of this runtime) on the device."},
  {"gemm", (PyCFunction)(void (*)(void))kilnpy_gemm, METH_VARARGS | METH_KEYWORDS,
   "gemm(a, b, *, alpha=1, beta=0, c=None, trans_a=False, trans_b=False): alpha * "
   "op(a) @ op(b) + beta * c, 2-D float16, float32 or float64."},
  {"reduce", (PyCFunction)(void (*)(void))kilnpy_reduce, METH_VARARGS | METH_KEYWORDS,
   "reduce(x, op='sum', axis=None): sum, mean, min, max, argmin, argmax or norm, as "
   "numpy along one axis or all."},
  {"conv2d", (PyCFunction)(void (*)(void))kilnpy_conv2d, METH_VARARGS | METH_KEYWORDS,
   "conv2d(x, weights, bias=None, *, stride=1, padding=0, dilation=1, groups=1, "
   "activation=None, layout='NCHW'): the 2-D convolution (cross-correlation) of "
   "kiln_conv2d."},
  {"convert", (PyCFunction)(void (*)(void))kilnpy_convert, METH_VARARGS | METH_KEYWORDS,
   "convert(x, dtype): x converted to dtype on the device (kiln_convert)."},
  {"program", (PyCFunction)(void (*)(void))kilnpy_program_new,
   METH_VARARGS | METH_KEYWORDS,
   "program(source, options=None) -> Program: OpenCL C built for the device "
   "(kiln_program_create); kiln.BuildError holds the build log."},
  {"_elementwise", (PyCFunction)kilnpy_elementwise_new, METH_VARARGS,
   "_elementwise(args, expr): kiln_elementwise_create (see Runtime.elementwise)."},
  {"_empty", (PyCFunction)kilnpy_runtime_empty, METH_VARARGS,
   "_empty(shape, dtype): a device array, its contents undefined."},
  {"_profile_reset", (PyCFunction)kilnpy_profile_reset, METH_NOARGS,
   "Forgets the recorded calls (kiln_profile_reset)."},
  {"_profile_table", (PyCFunction)kilnpy_profile_table, METH_NOARGS,
   "kiln's profile table (kiln_profile_report), a str, after kiln_finish."},
  {"profile_rows", (PyCFunction)kilnpy_profile_rows, METH_NOARGS,
   "profile_rows() -> list of dict: kiln's profile rows (kiln_profile_rows)."},
  {"stream", (PyCFunction)kilnpy_stream_new, METH_NOARGS,
   "stream() -> Stream: a new queue of the runtime (kiln_stream_create); `with s:` "
   "sends this thread's calls to it."},
  {"record_event", (PyCFunction)kilnpy_event_record, METH_NOARGS,
   "record_event() -> Event: completes when the work this thread's queue holds now "
   "is done (kiln_event_record)."},
  {"wait_event", (PyCFunction)kilnpy_wait_event, METH_O,
   "wait_event(event): later work on this thread's queue waits for event, the host "
   "does not (kiln_stream_wait_event)."},
  {"tune", (PyCFunction)(void (*)(void))kilnpy_tune, METH_VARARGS | METH_KEYWORDS,
   "tune(what=None, *, budget=0, progress=None): kiln_tune on this device; what: None "
   "(all) or names among 'gemm', 'reduce', 'fft', 'conv'; budget: seconds (0: 240); "
   "progress(step: dict) -> True stops."},
  {"_fft", (PyCFunction)(void (*)(void))kilnpy_fft, METH_VARARGS | METH_KEYWORDS,
   "_fft(x, kind=0, axes=1, inverse=False, norm=0, n_last=0): kiln_fft over the last "
   "axes (kiln/_fft.py gives it numpy.fft's names)."},
  {"memory_stats", (PyCFunction)runtime_memory_stats, METH_NOARGS,
   "What kiln holds on the device, as a dict (kiln_memory_stats)."},
  {"empty_cache", (PyCFunction)runtime_empty_cache, METH_NOARGS,
   "Gives the memory pool's blocks and unused FFT plans back to the driver."},
  {"synchronize", (PyCFunction)runtime_synchronize, METH_NOARGS,
   "Waits for everything enqueued on the runtime (kiln_finish)."},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef runtime_getset[] = {
  {"device", (getter)get_device, NULL, "The device, as a dict like kiln.devices()'s.",
   NULL},
  {"why", (getter)get_why, NULL, "Why this device was picked.", NULL},
  {"diagnostics", (getter)get_diagnostics, NULL,
   "Notes from finding the devices: those skipped and why.", NULL},
  {"closed", (getter)get_closed, NULL, "Whether close() was called.", NULL},
  {"profiling", (getter)get_profiling, NULL,
   "Whether the runtime records its calls (Runtime(profile=True) or KILN_PROFILE=1).",
   NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject kilnpy_runtime_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.Runtime",
  .tp_basicsize = sizeof(kilnpy_runtime),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* kiln/__init__.py's */
  .tp_doc = "Runtime(device=None, memory_limit=None, *, profile=False): kiln on one "
            "device; a context "
            "manager. device: None (the best ranked), an index, or a selector as "
            "KILN_DEVICE takes; memory_limit: bytes (int) or a fraction of the device's "
            "memory (float).",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)runtime_init,
  .tp_dealloc = (destructor)runtime_dealloc,
  .tp_methods = runtime_methods,
  .tp_getset = runtime_getset,
};
