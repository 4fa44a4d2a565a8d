/* Runtime.gemm() and Runtime.reduce(): numpy arrays in, numpy arrays out
 * through kiln's *_host calls (which split what does not fit the device);
 * a device array anywhere among the inputs keeps the work and the result on
 * the device. */
#include "kilnpy.h"

#include <string.h>

/* One input of an operation: its numpy form (host path) or device form. */
typedef struct operand {
  PyArrayObject *np;
  kilnpy_array *dev;
  int ndim;
  const npy_intp *shape;
  int typenum;
} operand;

static int operand_load(kilnpy_runtime *rt, PyObject *obj, int on_device,
                        const char *what, operand *op)
{
  memset(op, 0, sizeof *op);
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

static void operand_clear(operand *op)
{
  Py_CLEAR(op->np);
  Py_CLEAR(op->dev);
}

static int type_of(kiln_dtype d)
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

/* ---- gemm ----------------------------------------------------------- */

typedef struct gemm_args {
  double alpha, beta;
  int trans_a, trans_b;
  npy_intp m, n, k;
} gemm_args;

static int gemm_check(const operand *a, const operand *b, const operand *c, gemm_args *g)
{
  if (a->ndim != 2 || b->ndim != 2) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "gemm: a and b must be 2-D; a has %d dimensions, b %d", a->ndim,
                     b->ndim);
    return -1;
  }
  kiln_dtype d = kilnpy_kiln_dtype(a->typenum);
  if (a->typenum != b->typenum || (d != KILN_F16 && d != KILN_F32 && d != KILN_F64)) {
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                     "gemm: a and b must be both float16, float32 or float64; got %s and "
                     "%s",
                     kiln_dtype_name(d), kiln_dtype_name(kilnpy_kiln_dtype(b->typenum)));
    return -1;
  }
  g->m = a->shape[g->trans_a ? 1 : 0];
  g->k = a->shape[g->trans_a ? 0 : 1];
  npy_intp kb = b->shape[g->trans_b ? 1 : 0];
  g->n = b->shape[g->trans_b ? 0 : 1];
  if (kb != g->k) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "gemm: op(a) is %zd x %zd and op(b) %zd x %zd: op(a)'s columns must "
                     "equal op(b)'s rows",
                     (Py_ssize_t)g->m, (Py_ssize_t)g->k, (Py_ssize_t)kb,
                     (Py_ssize_t)g->n);
    return -1;
  }
  if (c->ndim && (c->ndim != 2 || c->shape[0] != g->m || c->shape[1] != g->n ||
                  c->typenum != a->typenum)) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "gemm: c must be %zd x %zd of a's dtype (%s); got %d-D of %s",
                     (Py_ssize_t)g->m, (Py_ssize_t)g->n, kiln_dtype_name(d), c->ndim,
                     kiln_dtype_name(kilnpy_kiln_dtype(c->typenum)));
    return -1;
  }
  return 0;
}

/* k == 0: no product to run; the result is beta * c, or zeros. */
static PyObject *gemm_empty_k(const operand *c, const gemm_args *g, int typenum)
{
  npy_intp dims[2] = {g->m, g->n};
  if (!c->ndim || g->beta == 0)
    return PyArray_ZEROS(2, dims, typenum, 0);
  PyObject *host = c->np ? Py_NewRef(c->np) : kilnpy_array_numpy(c->dev);
  PyObject *beta = PyFloat_FromDouble(g->beta);
  PyObject *prod = host && beta ? PyNumber_Multiply(beta, host) : NULL;
  Py_XDECREF(host);
  Py_XDECREF(beta);
  if (!prod)
    return NULL;
  PyObject *out = PyArray_Cast((PyArrayObject *)prod, typenum);
  Py_DECREF(prod);
  return out;
}

static PyObject *gemm_run(kilnpy_runtime *self, const operand *a, const operand *b,
                          const operand *c, const gemm_args *g)
{
  kiln_gemm_desc desc;
  kiln_gemm_desc_init(&desc, kilnpy_kiln_dtype(a->typenum), (size_t)g->m, (size_t)g->n,
                      (size_t)g->k);
  desc.trans_a = g->trans_a ? KILN_TRANS : KILN_NO_TRANS;
  desc.trans_b = g->trans_b ? KILN_TRANS : KILN_NO_TRANS;
  desc.alpha = g->alpha;
  desc.beta = c->ndim ? g->beta : 0.0;
  npy_intp dims[2] = {g->m, g->n};
  PyObject *out;
  kiln_status s = KILN_OK;
  if (a->dev) {
    kilnpy_array *o = kilnpy_array_new(self, 2, dims, a->typenum, 0);
    if (!(out = (PyObject *)o) || !o->count)
      return out;
    if (c->ndim)
      s = kiln_buffer_copy(o->buf, 0, c->dev->buf, 0, o->count);
    Py_BEGIN_ALLOW_THREADS;
    if (s == KILN_OK)
      s = kiln_gemm(self->rt, &desc, a->dev->buf, b->dev->buf, o->buf);
    Py_END_ALLOW_THREADS;
  } else {
    PyArrayObject *o = (PyArrayObject *)PyArray_SimpleNew(2, dims, a->typenum);
    if (!(out = (PyObject *)o) || !PyArray_SIZE(o))
      return out;
    if (c->ndim)
      memcpy(PyArray_DATA(o), PyArray_DATA(c->np), (size_t)PyArray_NBYTES(o));
    void *ad = PyArray_DATA(a->np), *bd = PyArray_DATA(b->np), *od = PyArray_DATA(o);
    Py_BEGIN_ALLOW_THREADS;
    s = kiln_gemm_host(self->rt, &desc, ad, bd, od);
    Py_END_ALLOW_THREADS;
  }
  if (s != KILN_OK) {
    Py_DECREF(out);
    return kilnpy_raise(s, self->rt);
  }
  return out;
}

PyObject *kilnpy_gemm(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"a", "b", "alpha", "beta", "c", "trans_a", "trans_b", NULL};
  PyObject *ao, *bo, *co = Py_None;
  gemm_args g = {1.0, 0.0, 0, 0, 0, 0, 0};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$ddOpp:gemm", kwlist, &ao, &bo,
                                   &g.alpha, &g.beta, &co, &g.trans_a, &g.trans_b))
    return NULL;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  int dev = kilnpy_is_array(ao) || kilnpy_is_array(bo) || kilnpy_is_array(co);
  operand a, b, c;
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  PyObject *out = NULL;
  kilnpy_call_begin(self);
  if (operand_load(self, ao, dev, "gemm: a", &a) < 0 ||
      operand_load(self, bo, dev, "gemm: b", &b) < 0 ||
      (co != Py_None && operand_load(self, co, dev, "gemm: c", &c) < 0) ||
      gemm_check(&a, &b, &c, &g) < 0)
    goto done;
  if (g.k == 0 && g.m && g.n) {
    out = gemm_empty_k(&c, &g, a.typenum);
    if (out && dev) {
      PyObject *host = out;
      out = kilnpy_runtime_array(self, host);
      Py_DECREF(host);
    }
  } else {
    out = gemm_run(self, &a, &b, &c, &g);
  }
done:
  operand_clear(&a);
  operand_clear(&b);
  operand_clear(&c);
  kilnpy_call_end(self);
  return out;
}

/* ---- reduce ---------------------------------------------------------- */

static int reduce_op(const char *name, kiln_reduce_op *op)
{
  for (int i = KILN_REDUCE_SUM; i <= KILN_REDUCE_NORM2; i++) {
    if (strcmp(name, kiln_reduce_op_name((kiln_reduce_op)i)) == 0) {
      *op = (kiln_reduce_op)i;
      return 0;
    }
  }
  kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                   "reduce: op '%s' is not one of sum, mean, min, max, argmin, argmax, "
                   "norm",
                   name);
  return -1;
}

static int numpy_axis_error(int axis, int ndim)
{
  PyObject *np = PyImport_ImportModule("numpy");
  PyObject *cls = np ? PyObject_GetAttrString(np, "AxisError") : NULL;
  if (cls) {
    PyObject *e = PyObject_CallFunction(cls, "ii", axis, ndim);
    if (e) {
      PyErr_SetObject(cls, e);
      Py_DECREF(e);
    }
  }
  Py_XDECREF(cls);
  Py_XDECREF(np);
  return -1;
}

/* The descriptor and the result's shape, as numpy reduces x along axis. */
static int reduce_desc(const operand *x, PyObject *axis_obj, kiln_reduce_op op,
                       kiln_reduce_desc *desc, int *out_ndim, npy_intp *out_shape)
{
  kiln_dtype d = kilnpy_kiln_dtype(x->typenum);
  if (!kiln_reduce_out_dtype(op, d)) {
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                     "reduce: kiln's %s takes float16, float32, float64 or int32; got %s",
                     kiln_reduce_op_name(op), kiln_dtype_name(d));
    return -1;
  }
  kiln_reduce_desc_init(desc, op, d, 1);
  desc->ndim = x->ndim ? (unsigned)x->ndim : 1;
  for (int i = 0; i < x->ndim; i++)
    desc->shape[i] = (size_t)x->shape[i];
  *out_ndim = 0;
  if (axis_obj == Py_None)
    return 0;
  long axis = PyLong_AsLong(axis_obj);
  if (axis == -1 && PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "reduce: axis must be None or an int (a tuple of "
                                     "axes is not supported yet)");
    return -1;
  }
  if (axis < -x->ndim || axis >= x->ndim)
    return numpy_axis_error((int)axis, x->ndim);
  if (axis < 0)
    axis += x->ndim;
  desc->axis = (int32_t)axis;
  for (int i = 0; i < x->ndim; i++)
    if (i != axis)
      out_shape[(*out_ndim)++] = x->shape[i];
  return 0;
}

PyObject *kilnpy_reduce(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"x", "op", "axis", NULL};
  PyObject *xo, *axis = Py_None;
  const char *op_name = "sum";
  kiln_reduce_op op;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|sO:reduce", kwlist, &xo, &op_name,
                                   &axis))
    return NULL;
  if (kilnpy_runtime_check(self) < 0 || reduce_op(op_name, &op) < 0)
    return NULL;
  int dev = kilnpy_is_array(xo);
  operand x;
  kiln_reduce_desc desc;
  npy_intp shape[KILN_ARRAY_MAX_DIMS];
  int ndim;
  PyObject *out = NULL;
  kiln_status s = KILN_OK;
  kilnpy_call_begin(self);
  if (operand_load(self, xo, dev, "reduce: x", &x) < 0 ||
      reduce_desc(&x, axis, op, &desc, &ndim, shape) < 0)
    goto done;
  int typenum = type_of(kiln_reduce_out_dtype(op, desc.dtype));
  if (dev) {
    kilnpy_array *o = kilnpy_array_new(self, ndim, shape, typenum, 0);
    if ((out = (PyObject *)o) && o->count) {
      Py_BEGIN_ALLOW_THREADS;
      s = kiln_reduce(self->rt, &desc, x.dev->buf, o->buf);
      Py_END_ALLOW_THREADS;
    }
  } else {
    PyArrayObject *o = (PyArrayObject *)PyArray_SimpleNew(ndim, shape, typenum);
    if ((out = (PyObject *)o) && PyArray_SIZE(o)) {
      void *in = PyArray_DATA(x.np), *od = PyArray_DATA(o);
      Py_BEGIN_ALLOW_THREADS;
      s = kiln_reduce_host(self->rt, &desc, in, od);
      Py_END_ALLOW_THREADS;
    }
    if (out && s == KILN_OK)
      out = PyArray_Return(o); /* a numpy scalar for a 0-d result, as numpy */
  }
  if (s != KILN_OK) {
    Py_CLEAR(out);
    kilnpy_raise(s, self->rt);
  }
done:
  operand_clear(&x);
  kilnpy_call_end(self);
  return out;
}
