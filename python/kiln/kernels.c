/* The user's own kernels (kiln_program, kiln_kernel: CuPy's RawModule and
 * RawKernel) and kernels from an expression (kiln_elementwise, which
 * kiln/_elementwise.py turns into CuPy's ElementwiseKernel). Each object
 * holds its runtime alive, as a device array does (kiln destroys programs
 * and kernels before their runtime). */
#include "kilnpy.h"

#include <string.h>

#include <structmember.h>

typedef struct kilnpy_program {
  PyObject_HEAD kilnpy_runtime *owner;
  kiln_program *p;
} kilnpy_program;

typedef struct kilnpy_kernel {
  PyObject_HEAD kilnpy_program *program;
  kiln_kernel *k;
  PyObject *name;
} kilnpy_kernel;

typedef struct kilnpy_elementwise {
  PyObject_HEAD kilnpy_runtime *owner;
  kiln_elementwise *ew;
  Py_ssize_t nargs;
} kilnpy_elementwise;

typedef struct kilnpy_local {
  PyObject_HEAD Py_ssize_t nbytes;
} kilnpy_local;

static PyTypeObject program_type, kernel_type, elementwise_type, local_type;

/* ---- programs ---------------------------------------------------------- */

PyObject *kilnpy_program_new(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"source", "options", NULL};
  const char *source, *options = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|z:program", kwlist, &source,
                                   &options))
    return NULL;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kilnpy_program *o = PyObject_New(kilnpy_program, &program_type);
  if (!o)
    return NULL;
  o->owner = (kilnpy_runtime *)Py_NewRef(self);
  o->p = NULL;
  self->arrays++;
  kiln_status s;
  kilnpy_call_begin(self);
  Py_BEGIN_ALLOW_THREADS; /* the compiler may take seconds */
  s = kiln_program_create(self->rt, source, options, &o->p);
  Py_END_ALLOW_THREADS;
  if (s != KILN_OK) {
    kilnpy_raise(s, self->rt); /* KILN_ERR_BUILD: the options and the log */
    Py_CLEAR(o);
  }
  kilnpy_call_end(self);
  return (PyObject *)o;
}

static void program_dealloc(kilnpy_program *self)
{
  kilnpy_runtime *owner = self->owner;
  kiln_program_destroy(self->p);
  owner->arrays--;
  kilnpy_runtime_release(owner);
  Py_DECREF(owner);
  PyObject_Free(self);
}

static PyObject *program_kernel(kilnpy_program *self, PyObject *name)
{
  const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  if (!n) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_TypeError, "kernel(name): name must be a str");
    return NULL;
  }
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  kilnpy_kernel *o = PyObject_New(kilnpy_kernel, &kernel_type);
  if (!o)
    return NULL;
  o->program = (kilnpy_program *)Py_NewRef(self);
  o->name = Py_NewRef(name);
  o->k = NULL;
  kiln_status s = kiln_kernel_create(self->p, n, &o->k);
  if (s != KILN_OK) {
    kilnpy_raise(s, self->owner->rt); /* lists the kernels the program has */
    Py_DECREF(o);
    return NULL;
  }
  return (PyObject *)o;
}

static PyObject *program_build_log(kilnpy_program *self, void *closure)
{
  (void)closure;
  return PyUnicode_FromString(kiln_program_build_log(self->p));
}

/* ---- kernels ----------------------------------------------------------- */

static void kernel_dealloc(kilnpy_kernel *self)
{
  kiln_kernel_destroy(self->k);
  Py_DECREF(self->name);
  Py_DECREF(self->program);
  PyObject_Free(self);
}

/* A size as 1 to 3 counts (an int or a sequence); 0 dims for None when
 * none_ok. */
static int sizes_of(PyObject *o, const char *what, int none_ok, size_t out[3])
{
  if (o == Py_None && none_ok)
    return 0;
  int seq = PyTuple_Check(o) || PyList_Check(o);
  Py_ssize_t n = seq ? PySequence_Size(o) : 1;
  if (n < 1 || n > 3) {
    PyErr_Format(PyExc_ValueError, "%s: 1 to 3 sizes; got %zd", what, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = seq ? PySequence_GetItem(o, i) : Py_NewRef(o);
    long long v = it && PyIndex_Check(it) ? PyLong_AsLongLong(it) : -1;
    Py_XDECREF(it);
    if (v < 1) {
      PyErr_Clear();
      PyErr_Format(PyExc_ValueError,
                   "%s: expected %sa positive int or a tuple of 1 to 3 of them", what,
                   none_ok ? "None, " : "");
      return -1;
    }
    out[i] = (size_t)v;
  }
  return (int)n;
}

/* Argument i from a device array, LocalMemory or a numpy scalar (its own
 * type and size, which kiln checks against the declaration). */
static kiln_status kernel_arg(kilnpy_kernel *self, unsigned i, PyObject *a)
{
  kilnpy_runtime *owner = self->program->owner;
  if (kilnpy_is_array(a)) {
    kilnpy_array *d = (kilnpy_array *)a;
    if (d->owner != owner) {
      kilnpy_raise_msg(KILN_ERR_WRONG_RUNTIME,
                       "kernel %s: argument %u is a device array of another kiln.Runtime",
                       PyUnicode_AsUTF8(self->name), i);
      return KILN_ERR_WRONG_RUNTIME;
    }
    return kiln_kernel_set_buffer(self->k, i, d->buf);
  }
  if (PyObject_TypeCheck(a, &local_type))
    return kiln_kernel_set_arg(self->k, i, (size_t)((kilnpy_local *)a)->nbytes, NULL);
  if (PyArray_IsScalar(a, Generic) ||
      (PyArray_Check(a) && !PyArray_NDIM((PyArrayObject *)a))) {
    PyArrayObject *v =
      (PyArrayObject *)PyArray_FromAny(a, NULL, 0, 0, NPY_ARRAY_CARRAY_RO, NULL);
    if (!v)
      return KILN_ERR_INVALID_ARGUMENT;
    kiln_status s =
      kiln_kernel_set_arg(self->k, i, (size_t)PyArray_ITEMSIZE(v), PyArray_DATA(v));
    Py_DECREF(v);
    return s;
  }
  const char *hint = PyArray_Check(a)
                       ? "a numpy array: copy it to the device with rt.array() first"
                     : PyFloat_Check(a) || PyLong_Check(a)
                       ? "an untyped Python number: give its type, as np.float32(1) "
                         "or np.int32(3)"
                       : "a value kiln cannot pass";
  kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                   "kernel %s: argument %u is %s; expected a DeviceArray, a numpy "
                   "scalar or kiln.LocalMemory(nbytes)",
                   PyUnicode_AsUTF8(self->name), i, hint);
  return KILN_ERR_INVALID_ARGUMENT;
}

/* k(global_size, local_size, *args): sets the arguments and launches, all
 * with the GIL held, as a kernel holds its arguments between the two. */
static PyObject *kernel_call(kilnpy_kernel *self, PyObject *args, PyObject *kwargs)
{
  if (kwargs && PyDict_Size(kwargs)) {
    PyErr_SetString(PyExc_TypeError, "kernel(global_size, local_size, *args) takes no "
                                     "keyword arguments");
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 2) {
    PyErr_SetString(PyExc_TypeError, "kernel(global_size, local_size, *args): "
                                     "global_size and local_size (or None) are needed");
    return NULL;
  }
  kilnpy_runtime *owner = self->program->owner;
  if (kilnpy_runtime_check(owner) < 0)
    return NULL;
  size_t global[3], local[3];
  int dims = sizes_of(PyTuple_GET_ITEM(args, 0), "global_size", 0, global);
  int ldims = dims < 0 ? -1 : sizes_of(PyTuple_GET_ITEM(args, 1), "local_size", 1, local);
  if (dims < 0 || ldims < 0)
    return NULL;
  if (ldims && ldims != dims) {
    PyErr_Format(PyExc_ValueError,
                 "local_size: %d sizes for a global_size of %d; expected as many", ldims,
                 dims);
    return NULL;
  }
  kiln_status s = KILN_OK;
  for (Py_ssize_t i = 2; i < n && s == KILN_OK; i++)
    s = kernel_arg(self, (unsigned)(i - 2), PyTuple_GET_ITEM(args, i));
  if (s == KILN_OK)
    s = kiln_kernel_launch(self->k, (unsigned)dims, global, ldims ? local : NULL);
  if (s != KILN_OK)
    return PyErr_Occurred() ? NULL : kilnpy_raise(s, owner->rt);
  Py_RETURN_NONE;
}

/* ---- elementwise ------------------------------------------------------- */

PyObject *kilnpy_elementwise_new(kilnpy_runtime *self, PyObject *args)
{
  const char *decl, *expr;
  if (!PyArg_ParseTuple(args, "ss:_elementwise", &decl, &expr))
    return NULL;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kilnpy_elementwise *o = PyObject_New(kilnpy_elementwise, &elementwise_type);
  if (!o)
    return NULL;
  o->owner = (kilnpy_runtime *)Py_NewRef(self);
  o->ew = NULL;
  o->nargs = 1;
  for (const char *c = decl; *c; c++)
    o->nargs += *c == ',';
  self->arrays++;
  kiln_status s;
  kilnpy_call_begin(self);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_elementwise_create(self->rt, decl, expr, &o->ew);
  Py_END_ALLOW_THREADS;
  if (s != KILN_OK) {
    kilnpy_raise(s, self->rt);
    Py_CLEAR(o);
  }
  kilnpy_call_end(self);
  return (PyObject *)o;
}

static void elementwise_dealloc(kilnpy_elementwise *self)
{
  kilnpy_runtime *owner = self->owner;
  kiln_elementwise_destroy(self->ew);
  owner->arrays--;
  kilnpy_runtime_release(owner);
  Py_DECREF(owner);
  PyObject_Free(self);
}

/* run(n, values): values in the declared order, device arrays of this
 * runtime for the buffers, a float or an int for each scalar (the
 * declaration gives its type). */
static PyObject *elementwise_run(kilnpy_elementwise *self, PyObject *args)
{
  Py_ssize_t n;
  PyObject *values;
  if (!PyArg_ParseTuple(args, "nO!:run", &n, &PyTuple_Type, &values))
    return NULL;
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  Py_ssize_t m = PyTuple_GET_SIZE(values);
  if (m != self->nargs || n < 0 || m > 16)
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                            "elementwise: %zd values for %zd arguments", m, self->nargs);
  kiln_elementwise_value v[16];
  memset(v, 0, sizeof v);
  for (Py_ssize_t j = 0; j < m; j++) {
    PyObject *a = PyTuple_GET_ITEM(values, j);
    if (kilnpy_is_array(a)) {
      if (((kilnpy_array *)a)->owner != self->owner)
        return kilnpy_raise_msg(KILN_ERR_WRONG_RUNTIME,
                                "elementwise: argument %zd is a device array of another "
                                "kiln.Runtime",
                                j);
      v[j].buffer = ((kilnpy_array *)a)->buf;
    } else if (PyFloat_Check(a)) {
      v[j].real = PyFloat_AS_DOUBLE(a);
    } else if (PyLong_Check(a)) {
      int over = 0;
      long long i = PyLong_AsLongLongAndOverflow(a, &over);
      if (over > 0) /* a ulong's upper half */
        i = (long long)PyLong_AsUnsignedLongLong(a);
      if (PyErr_Occurred())
        return NULL;
      v[j].integer = i;
    } else {
      PyErr_Format(PyExc_TypeError, "elementwise: argument %zd is a %.80s", j,
                   Py_TYPE(a)->tp_name);
      return NULL;
    }
  }
  kiln_status s;
  kilnpy_call_begin(self->owner);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_elementwise_run_values(self->ew, (size_t)n, v);
  Py_END_ALLOW_THREADS;
  PyObject *ret = s == KILN_OK ? Py_NewRef(Py_None) : kilnpy_raise(s, self->owner->rt);
  kilnpy_call_end(self->owner);
  return ret;
}

/* _empty(shape, dtype): a device array without a host copy of its data
 * (an elementwise output that is not given). */
PyObject *kilnpy_runtime_empty(kilnpy_runtime *self, PyObject *args)
{
  PyArray_Dims shape = {NULL, 0};
  PyArray_Descr *descr = NULL;
  if (!PyArg_ParseTuple(args, "O&O&:_empty", PyArray_IntpConverter, &shape,
                        PyArray_DescrConverter, &descr))
    return NULL;
  PyObject *ret = NULL;
  if (kilnpy_runtime_check(self) < 0)
    goto done;
  if (!kilnpy_kiln_dtype(descr->type_num) || shape.len > KILN_ARRAY_MAX_DIMS) {
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE, "_empty: no kiln array of that dtype and "
                                             "rank");
    goto done;
  }
  ret = (PyObject *)kilnpy_array_new(self, shape.len, shape.ptr, descr->type_num, 0);
done:
  Py_XDECREF(descr);
  PyDimMem_FREE(shape.ptr);
  return ret;
}

/* ---- local memory ------------------------------------------------------ */

static int local_init(kilnpy_local *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"nbytes", NULL};
  Py_ssize_t nbytes;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n:LocalMemory", kwlist, &nbytes))
    return -1;
  if (nbytes < 1) {
    PyErr_Format(PyExc_ValueError, "LocalMemory: nbytes must be positive; got %zd",
                 nbytes);
    return -1;
  }
  self->nbytes = nbytes;
  return 0;
}

static PyObject *local_repr(kilnpy_local *self)
{
  return PyUnicode_FromFormat("kiln.LocalMemory(%zd)", self->nbytes);
}

static PyMemberDef local_members[] = {
  {"nbytes", T_PYSSIZET, offsetof(kilnpy_local, nbytes), READONLY,
   "Bytes of __local memory."},
  {NULL, 0, 0, 0, NULL},
};

/* ---- types ------------------------------------------------------------- */

static PyMethodDef program_methods[] = {
  {"kernel", (PyCFunction)program_kernel, METH_O,
   "kernel(name) -> Kernel: the program's kernel `name` (kiln_kernel_create)."},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef program_getset[] = {
  {"build_log", (getter)program_build_log, NULL,
   "The compiler's warnings of the build, '' when none or from the cache.", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef kernel_members[] = {
  {"name", T_OBJECT, offsetof(kilnpy_kernel, name), READONLY, "The kernel's name."},
  {NULL, 0, 0, 0, NULL},
};

static PyMethodDef elementwise_methods[] = {
  {"run", (PyCFunction)elementwise_run, METH_VARARGS,
   "run(n, values): kiln_elementwise_run over i < n, values in the declared order."},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject program_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.Program",
  .tp_basicsize = sizeof(kilnpy_program),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A program of OpenCL C kernels built for the runtime's device "
            "(Runtime.program).",
  .tp_dealloc = (destructor)program_dealloc,
  .tp_methods = program_methods,
  .tp_getset = program_getset,
};

static PyTypeObject kernel_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.Kernel",
  .tp_basicsize = sizeof(kilnpy_kernel),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "k(global_size, local_size, *args): launches the kernel (kiln_kernel_launch) "
            "with args DeviceArrays, numpy scalars (np.float32(1), np.int32(3)) or "
            "kiln.LocalMemory(nbytes); local_size None for the driver's choice.",
  .tp_dealloc = (destructor)kernel_dealloc,
  .tp_call = (ternaryfunc)kernel_call,
  .tp_members = kernel_members,
};

static PyTypeObject elementwise_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._Elementwise",
  .tp_basicsize = sizeof(kilnpy_elementwise),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "A kiln_elementwise (kiln/_elementwise.py's).",
  .tp_dealloc = (destructor)elementwise_dealloc,
  .tp_methods = elementwise_methods,
};

static PyTypeObject local_type = {
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln.LocalMemory",
  .tp_basicsize = sizeof(kilnpy_local),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "LocalMemory(nbytes): a kernel argument of nbytes of __local memory.",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)local_init,
  .tp_repr = (reprfunc)local_repr,
  .tp_members = local_members,
};

int kilnpy_kernel_types_add(PyObject *m)
{
  PyTypeObject *t[] = {&program_type, &kernel_type, &elementwise_type, &local_type};
  const char *names[] = {"Program", "Kernel", "_Elementwise", "LocalMemory"};
  for (int i = 0; i < 4; i++) {
    if (PyType_Ready(t[i]) < 0)
      return -1;
    Py_INCREF(t[i]);
    if (PyModule_AddObject(m, names[i], (PyObject *)t[i]) < 0) {
      Py_DECREF(t[i]);
      return -1;
    }
  }
  return 0;
}
