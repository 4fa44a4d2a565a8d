/* kiln.DeviceArray: a numpy array's copy in a kiln buffer, and back. */
#include "kilnpy.h"

#include <string.h>

kiln_dtype kilnpy_kiln_dtype(int typenum)
{
  switch (typenum) {
  case NPY_FLOAT16: return KILN_F16;
  case NPY_FLOAT32: return KILN_F32;
  case NPY_FLOAT64: return KILN_F64;
  case NPY_COMPLEX64: return KILN_C32;
  case NPY_COMPLEX128: return KILN_C64;
  case NPY_INT32: return KILN_I32;
  case NPY_INT64: return KILN_I64;
  default: return (kiln_dtype)0;
  }
}

PyArrayObject *kilnpy_numpy_in(PyObject *obj, const char *what)
{
  PyArrayObject *any = (PyArrayObject *)PyArray_FROM_O(obj);
  if (!any)
    return NULL;
  PyArray_Descr *descr = PyArray_DESCR(any);
  int typenum = descr->type_num;
  if (!kilnpy_kiln_dtype(typenum) || PyDataType_HASFIELDS(descr)) {
    PyObject *name = PyObject_Str((PyObject *)descr);
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                     "%s: kiln has no dtype for numpy's %s; kiln's are float16, float32, "
                     "float64, complex64, complex128, int32 and int64 (convert with "
                     "astype first)",
                     what, name ? PyUnicode_AsUTF8(name) : "?");
    Py_XDECREF(name);
    Py_DECREF(any);
    return NULL;
  }
  if (PyArray_NDIM(any) > KILN_ARRAY_MAX_DIMS) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "%s: %d dimensions; kiln takes at most %d", what, PyArray_NDIM(any),
                     KILN_ARRAY_MAX_DIMS);
    Py_DECREF(any);
    return NULL;
  }
  /* A copy only where the array is not C-contiguous, aligned and native. */
  PyArrayObject *c = (PyArrayObject *)PyArray_FromAny(
    (PyObject *)any, PyArray_DescrFromType(typenum), 0, 0, NPY_ARRAY_CARRAY_RO, NULL);
  Py_DECREF(any);
  return c;
}

/* The object without its buffer. */
static kilnpy_array *array_alloc(kilnpy_runtime *owner, int ndim, const npy_intp *shape,
                                 int typenum)
{
  size_t count = 1;
  for (int i = 0; i < ndim; i++)
    count *= (size_t)shape[i];
  kilnpy_array *self = PyObject_New(kilnpy_array, &kilnpy_array_type);
  if (!self)
    return NULL;
  self->owner = (kilnpy_runtime *)Py_NewRef(owner);
  self->buf = NULL;
  self->base = NULL;
  self->ndim = ndim;
  memcpy(self->shape, shape, sizeof(npy_intp) * (size_t)ndim);
  self->typenum = typenum;
  self->kdt = kilnpy_kiln_dtype(typenum);
  self->count = count;
  owner->arrays++;
  return self;
}

kilnpy_array *kilnpy_array_view(kilnpy_array *base, size_t offset, int ndim,
                                const npy_intp *shape)
{
  kilnpy_array *self = array_alloc(base->owner, ndim, shape, base->typenum);
  if (!self)
    return NULL;
  if (!self->count) { /* kiln has no empty views: an empty array of its own */
    Py_DECREF(self);
    return kilnpy_array_new(base->owner, ndim, shape, base->typenum, 0);
  }
  kiln_status s = kiln_buffer_view(base->buf, offset, self->count, &self->buf);
  if (s != KILN_OK) {
    kilnpy_raise(s, base->owner->rt);
    Py_DECREF(self);
    return NULL;
  }
  self->base = Py_NewRef(base->base ? base->base : (PyObject *)base);
  return self;
}

kilnpy_array *kilnpy_array_new(kilnpy_runtime *owner, int ndim, const npy_intp *shape,
                               int typenum, unsigned flags)
{
  kilnpy_array *self = array_alloc(owner, ndim, shape, typenum);
  if (!self)
    return NULL;
  size_t count = self->count;
  kiln_status s;
  kilnpy_call_begin(owner);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_buffer_create(owner->rt, self->kdt, count ? count : 1, flags, &self->buf);
  Py_END_ALLOW_THREADS;
  if (s != KILN_OK)
    kilnpy_raise(s, owner->rt);
  kilnpy_call_end(owner);
  if (s != KILN_OK) {
    Py_DECREF(self);
    return NULL;
  }
  return self;
}

static void array_dealloc(kilnpy_array *self)
{
  kilnpy_runtime *owner = self->owner;
  if (self->buf)
    kiln_buffer_destroy(self->buf); /* a view's before its base's */
  Py_XDECREF(self->base);
  owner->arrays--;
  kilnpy_runtime_release(owner);
  Py_DECREF(owner);
  PyObject_Free(self);
}

static kilnpy_array *upload(kilnpy_runtime *owner, PyArrayObject *np)
{
  kilnpy_array *self =
    kilnpy_array_new(owner, PyArray_NDIM(np), PyArray_DIMS(np), PyArray_TYPE(np), 0);
  if (!self || !self->count)
    return self;
  kiln_status s;
  kilnpy_call_begin(owner);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_buffer_write(self->buf, 0, self->count, PyArray_DATA(np));
  Py_END_ALLOW_THREADS;
  if (s != KILN_OK) {
    kilnpy_raise(s, owner->rt);
    Py_CLEAR(self);
  }
  kilnpy_call_end(owner);
  return self;
}

static kilnpy_array *device_copy(kilnpy_runtime *owner, kilnpy_array *src)
{
  kilnpy_array *self = kilnpy_array_new(owner, src->ndim, src->shape, src->typenum, 0);
  if (!self || !self->count)
    return self;
  kiln_status s = kiln_buffer_copy(self->buf, 0, src->buf, 0, src->count);
  if (s != KILN_OK) {
    kilnpy_raise(s, owner->rt);
    Py_CLEAR(self);
  }
  return self;
}

kilnpy_array *kilnpy_array_of(kilnpy_runtime *owner, PyObject *obj, const char *what)
{
  if (kilnpy_is_array(obj)) {
    kilnpy_array *a = (kilnpy_array *)obj;
    if (a->owner != owner) {
      kilnpy_raise_msg(KILN_ERR_WRONG_RUNTIME,
                       "%s: a device array of another kiln.Runtime; copy it with "
                       "rt.array(x.numpy())",
                       what);
      return NULL;
    }
    return (kilnpy_array *)Py_NewRef(obj);
  }
  PyArrayObject *np = kilnpy_numpy_in(obj, what);
  if (!np)
    return NULL;
  kilnpy_array *a = upload(owner, np);
  Py_DECREF(np);
  return a;
}

PyObject *kilnpy_runtime_array(kilnpy_runtime *self, PyObject *obj)
{
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  if (kilnpy_is_array(obj) && ((kilnpy_array *)obj)->owner == self)
    return (PyObject *)device_copy(self, (kilnpy_array *)obj);
  return (PyObject *)kilnpy_array_of(self, obj, "array");
}

PyObject *kilnpy_array_numpy(kilnpy_array *self)
{
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  PyArrayObject *out =
    (PyArrayObject *)PyArray_SimpleNew(self->ndim, self->shape, self->typenum);
  if (!out || !self->count)
    return (PyObject *)out;
  kiln_status s;
  kilnpy_call_begin(self->owner);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_buffer_read(self->buf, 0, self->count, PyArray_DATA(out));
  Py_END_ALLOW_THREADS;
  if (s != KILN_OK) {
    kilnpy_raise(s, self->owner->rt);
    Py_CLEAR(out);
  }
  kilnpy_call_end(self->owner);
  return (PyObject *)out;
}

static PyObject *array_numpy(kilnpy_array *self, PyObject *unused)
{
  (void)unused;
  return kilnpy_array_numpy(self);
}

/* numpy.asarray(x) and the like: the host copy, cast when asked. */
static PyObject *array_array(kilnpy_array *self, PyObject *args)
{
  PyObject *dtype = Py_None;
  if (!PyArg_ParseTuple(args, "|O:__array__", &dtype))
    return NULL;
  PyObject *host = kilnpy_array_numpy(self);
  if (!host || dtype == Py_None)
    return host;
  PyObject *cast = PyObject_CallMethod(host, "astype", "O", dtype);
  Py_DECREF(host);
  return cast;
}

static PyObject *get_shape(kilnpy_array *self, void *closure)
{
  (void)closure;
  PyObject *t = PyTuple_New(self->ndim);
  for (int i = 0; t && i < self->ndim; i++)
    PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(self->shape[i]));
  return t;
}

static PyObject *get_dtype(kilnpy_array *self, void *closure)
{
  (void)closure;
  return (PyObject *)PyArray_DescrFromType(self->typenum);
}

static PyObject *get_nbytes(kilnpy_array *self, void *closure)
{
  (void)closure;
  return PyLong_FromSize_t(self->count * kiln_dtype_size(self->kdt));
}

static PyObject *get_size(kilnpy_array *self, void *closure)
{
  (void)closure;
  return PyLong_FromSize_t(self->count);
}

static PyObject *get_ndim(kilnpy_array *self, void *closure)
{
  (void)closure;
  return PyLong_FromLong(self->ndim);
}

static PyObject *get_runtime(kilnpy_array *self, void *closure)
{
  (void)closure;
  return Py_NewRef(self->owner);
}

static PyObject *get_base(kilnpy_array *self, void *closure)
{
  (void)closure;
  return Py_NewRef(self->base ? self->base : Py_None);
}

static Py_ssize_t array_length(kilnpy_array *self)
{
  if (!self->ndim) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
    return -1;
  }
  return (Py_ssize_t)self->shape[0];
}

static PySequenceMethods array_sequence = {
  .sq_length = (lenfunc)array_length,
};

static PyObject *array_repr(kilnpy_array *self)
{
  PyObject *shape = get_shape(self, NULL);
  if (!shape)
    return NULL;
  PyObject *r = PyUnicode_FromFormat("kiln.DeviceArray(shape=%R, dtype=%s)", shape,
                                     kiln_dtype_name(self->kdt));
  Py_DECREF(shape);
  return r;
}

static PyObject *array_astype(kilnpy_array *self, PyObject *dtype)
{
  return kilnpy_convert_to(self->owner, (PyObject *)self, dtype);
}

static PyMethodDef array_methods[] = {
  {"astype", (PyCFunction)array_astype, METH_O,
   "astype(dtype) -> DeviceArray: converted on the device (Runtime.convert)."},
  {"numpy", (PyCFunction)array_numpy, METH_NOARGS,
   "numpy() -> numpy.ndarray: a host copy of the array."},
  {"__array__", (PyCFunction)array_array, METH_VARARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef array_getset[] = {
  {"shape", (getter)get_shape, NULL, "The shape, a tuple.", NULL},
  {"dtype", (getter)get_dtype, NULL, "The numpy dtype.", NULL},
  {"nbytes", (getter)get_nbytes, NULL, "The bytes of its elements.", NULL},
  {"size", (getter)get_size, NULL, "The number of elements.", NULL},
  {"ndim", (getter)get_ndim, NULL, "The number of dimensions.", NULL},
  {"runtime", (getter)get_runtime, NULL, "The kiln.Runtime it lives on.", NULL},
  {"base", (getter)get_base, NULL,
   "The device array whose memory this view is (x[...]), None for an array of its own.",
   NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject kilnpy_array_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.DeviceArray",
  .tp_basicsize = sizeof(kilnpy_array),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "An array in device memory, made by Runtime.array() or returned by an "
            "operation given one; freed when collected.",
  .tp_dealloc = (destructor)array_dealloc,
  .tp_repr = (reprfunc)array_repr,
  .tp_as_mapping = &kilnpy_array_mapping,
  .tp_as_sequence = &array_sequence,
  .tp_methods = array_methods,
  .tp_getset = array_getset,
};

int kilnpy_numpy_type(kiln_dtype d)
{
  switch (d) {
  case KILN_F16: return NPY_FLOAT16;
  case KILN_F32: return NPY_FLOAT32;
  case KILN_F64: return NPY_FLOAT64;
  case KILN_C32: return NPY_COMPLEX64;
  case KILN_C64: return NPY_COMPLEX128;
  case KILN_I32: return NPY_INT32;
  case KILN_I64: return NPY_INT64;
  }
  return NPY_NOTYPE;
}

int kilnpy_operand_load(kilnpy_runtime *rt, PyObject *obj, int on_device,
                        const char *what, kilnpy_operand *op)
{
  memset(op, 0, sizeof *op);
  if (obj == Py_None)
    return 0;
  if (on_device) {
    if (!(op->dev = kilnpy_array_of(rt, obj, what)))
      return -1;
    op->ndim = op->dev->ndim;
    op->shape = op->dev->shape;
    op->typenum = op->dev->typenum;
  } else {
    if (!(op->np = kilnpy_numpy_in(obj, what)))
      return -1;
    op->ndim = PyArray_NDIM(op->np);
    op->shape = PyArray_DIMS(op->np);
    op->typenum = PyArray_TYPE(op->np);
  }
  return 0;
}

void kilnpy_operand_clear(kilnpy_operand *op)
{
  Py_CLEAR(op->np);
  Py_CLEAR(op->dev);
}
