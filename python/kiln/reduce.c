/* Runtime.reduce(): kiln_reduce (a device array in) or kiln_reduce_host (a
 * numpy array in) with numpy's axis, keepdims and out. kiln reduces along
 * one axis of a C-order view, or every element: adjacent axes of a tuple
 * are merged into one (the view's shape says so, nothing moves), and runs
 * of them that are not adjacent are reduced one after another, the last
 * first, which gives numpy's result for every op but argmin and argmax
 * (which take one axis, as numpy's). */
#include "kilnpy.h"

#include <string.h>

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

static int numpy_axis_error(long axis, int ndim)
{
  PyObject *np = PyImport_ImportModule("numpy");
  PyObject *cls = np ? PyObject_GetAttrString(np, "AxisError") : NULL;
  if (cls) {
    PyObject *e = PyObject_CallFunction(cls, "li", axis, ndim);
    if (e) {
      PyErr_SetObject(cls, e);
      Py_DECREF(e);
    }
  }
  Py_XDECREF(cls);
  Py_XDECREF(np);
  return -1;
}

/* The axes asked, as a mask; all of them for None. */
static int axes_of(PyObject *axis, int ndim, kiln_reduce_op op, int mask[])
{
  memset(mask, 0, sizeof(int) * KILN_ARRAY_MAX_DIMS);
  if (axis == Py_None) {
    for (int i = 0; i < ndim; i++)
      mask[i] = 1;
    return 0;
  }
  int seq = PyTuple_Check(axis) || PyList_Check(axis);
  if (seq && (op == KILN_REDUCE_ARGMIN || op == KILN_REDUCE_ARGMAX)) {
    PyErr_SetString(PyExc_TypeError,
                    "reduce: argmin and argmax take one axis or None, as numpy's");
    return -1;
  }
  Py_ssize_t n = seq ? PySequence_Size(axis) : 1;
  if (seq && n == 0) {
    kilnpy_raise_msg(KILN_ERR_UNSUPPORTED, "reduce: axis=() (no reduction) is not "
                                           "supported; use the array itself");
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = seq ? PySequence_GetItem(axis, i) : Py_NewRef(axis);
    long a = it && PyIndex_Check(it) ? PyLong_AsLong(it) : -1;
    int bad = !it || !PyIndex_Check(it) || (a == -1 && PyErr_Occurred());
    Py_XDECREF(it);
    if (bad) {
      PyErr_Clear();
      PyErr_SetString(PyExc_TypeError, "reduce: axis must be None, an int or a tuple "
                                       "of ints");
      return -1;
    }
    if (a < -ndim || a >= ndim)
      return numpy_axis_error(a, ndim);
    a = a < 0 ? a + ndim : a;
    if (mask[a]++) {
      PyErr_SetString(PyExc_ValueError, "reduce: duplicate value in 'axis'");
      return -1;
    }
  }
  return 0;
}

/* The result's shape: without the axes, or with 1 for each (keepdims). */
static int result_shape(int ndim, const npy_intp *shape, const int mask[], int keepdims,
                        npy_intp *out)
{
  int n = 0;
  for (int i = 0; i < ndim; i++)
    if (!mask[i] || keepdims)
      out[n++] = mask[i] ? 1 : shape[i];
  return n;
}

/* The result, where the caller gave out=: checked, a new reference. */
static PyObject *out_check(kilnpy_runtime *self, PyObject *out, int dev, int ndim,
                           const npy_intp *shape, int typenum)
{
  const npy_intp *oshape;
  int ondim, otype, ok;
  if (dev) {
    kilnpy_array *o = (kilnpy_array *)out;
    ok = kilnpy_is_array(out) && o->owner == self;
    ondim = ok ? o->ndim : 0, otype = ok ? o->typenum : 0, oshape = ok ? o->shape : NULL;
  } else {
    PyArrayObject *o = (PyArrayObject *)out;
    ok = PyArray_Check(out) && PyArray_ISCARRAY(o) && PyArray_ISNOTSWAPPED(o);
    ondim = ok ? PyArray_NDIM(o) : 0, otype = ok ? PyArray_TYPE(o) : 0;
    oshape = ok ? PyArray_DIMS(o) : NULL;
  }
  if (!ok)
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT, "reduce: out must be %s",
                            dev ? "a device array of this runtime, as x is one"
                                : "a writeable C-contiguous numpy array, as x is one");
  if (otype != typenum || ondim != ndim ||
      memcmp(oshape, shape, sizeof(npy_intp) * (size_t)ndim))
    return kilnpy_raise_msg(
      KILN_ERR_INVALID_ARGUMENT,
      "reduce: out must be %d-D of the result's shape and dtype (%s); "
      "got %d-D of %s",
      ndim, kiln_dtype_name(kilnpy_kiln_dtype(typenum)), ondim,
      kiln_dtype_name(kilnpy_kiln_dtype(otype)));
  return Py_NewRef(out);
}

/* One kiln call: `in` reduced along its axes [start, end) merged into one
 * (all = every element) into dst, or a new array of the result's shape. */
static PyObject *reduce_run(kilnpy_runtime *self, kiln_reduce_op op,
                            const kilnpy_operand *in, int start, int end, int all,
                            PyObject *dst)
{
  kiln_dtype d = kilnpy_kiln_dtype(in->typenum);
  kiln_dtype od = kiln_reduce_out_dtype(op, d);
  if (!od)
    return kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                            "reduce: kiln's %s takes float16, float32, float64 or int32; "
                            "got %s",
                            kiln_reduce_op_name(op), kiln_dtype_name(d));
  kiln_reduce_desc desc;
  kiln_reduce_desc_init(&desc, op, d, 1);
  npy_intp oshape[KILN_ARRAY_MAX_DIMS];
  int ondim = 0;
  desc.ndim = 0;
  for (int i = 0; i < in->ndim; i++) {
    if (i > start && i < end) {
      desc.shape[desc.ndim - 1] *= (size_t)in->shape[i];
      continue;
    }
    desc.shape[desc.ndim++] = (size_t)in->shape[i];
    if (i != start && !all)
      oshape[ondim++] = in->shape[i];
  }
  if (!desc.ndim)
    desc.ndim = 1, desc.shape[0] = 1; /* a 0-d input */
  if (!all)
    desc.axis = start; /* the axes before it are not merged */
  int typenum = kilnpy_numpy_type(od);
  PyObject *out;
  kiln_status s = KILN_OK;
  if (in->dev) {
    kilnpy_array *o = dst ? (kilnpy_array *)Py_NewRef(dst)
                          : kilnpy_array_new(self, ondim, oshape, typenum, 0);
    if ((out = (PyObject *)o) && o->count) {
      Py_BEGIN_ALLOW_THREADS;
      s = kiln_reduce(self->rt, &desc, in->dev->buf, o->buf);
      Py_END_ALLOW_THREADS;
    }
  } else {
    PyArrayObject *o = dst ? (PyArrayObject *)Py_NewRef(dst)
                           : (PyArrayObject *)PyArray_SimpleNew(ondim, oshape, typenum);
    if ((out = (PyObject *)o) && PyArray_SIZE(o)) {
      void *id = PyArray_DATA(in->np), *od_ = PyArray_DATA(o);
      Py_BEGIN_ALLOW_THREADS;
      s = kiln_reduce_host(self->rt, &desc, id, od_);
      Py_END_ALLOW_THREADS;
    }
  }
  if (s != KILN_OK) {
    Py_CLEAR(out);
    kilnpy_raise(s, self->rt);
  }
  return out;
}

/* The runs of adjacent axes, last first; each reduced in one call. */
static PyObject *reduce_runs(kilnpy_runtime *self, kiln_reduce_op op, kilnpy_operand *x,
                             const int mask[], PyObject *dst)
{
  int runs[KILN_ARRAY_MAX_DIMS][2], nruns = 0, nmask = 0;
  for (int i = x->ndim - 1; i >= 0; i--) {
    if (!mask[i])
      continue;
    nmask++;
    if (nruns && runs[nruns - 1][0] == i + 1)
      runs[nruns - 1][0] = i;
    else
      runs[nruns][0] = i, runs[nruns][1] = i + 1, nruns++;
  }
  if (nmask == x->ndim) /* every element */
    return reduce_run(self, op, x, 0, x->ndim, 1, dst);
  if (nruns > 1 && op == KILN_REDUCE_SUM && kilnpy_kiln_dtype(x->typenum) == KILN_I32)
    return kilnpy_raise_msg(
      KILN_ERR_UNSUPPORTED,
      "reduce: an int32 sum over axes that are not adjacent takes "
      "two passes, the second over int64, which kiln's reduce does "
      "not take; reduce adjacent axes, or convert to float64 first");
  kilnpy_operand cur = *x;
  PyObject *res = NULL;
  for (int r = 0; r < nruns; r++) {
    res =
      reduce_run(self, op, &cur, runs[r][0], runs[r][1], 0, r == nruns - 1 ? dst : NULL);
    if (r)
      kilnpy_operand_clear(&cur); /* an intermediate result of ours */
    if (!res)
      return NULL;
    if (r < nruns - 1) {
      memset(&cur, 0, sizeof cur);
      if (x->dev) {
        cur.dev = (kilnpy_array *)res;
        cur.ndim = cur.dev->ndim, cur.shape = cur.dev->shape,
        cur.typenum = cur.dev->typenum;
      } else {
        cur.np = (PyArrayObject *)res;
        cur.ndim = PyArray_NDIM(cur.np), cur.shape = PyArray_DIMS(cur.np);
        cur.typenum = PyArray_TYPE(cur.np);
      }
    }
  }
  return res;
}

/* The result in the shape asked (keepdims), a numpy scalar for a 0-d
 * numpy result as numpy gives. */
static PyObject *reshaped(PyObject *res, int dev, int ndim, const npy_intp *shape)
{
  if (dev) {
    kilnpy_array *o = (kilnpy_array *)res;
    o->ndim = ndim;
    memcpy(o->shape, shape, sizeof(npy_intp) * (size_t)ndim);
    return res;
  }
  PyArray_Dims dims = {(npy_intp *)shape, ndim};
  PyObject *r = PyArray_Newshape((PyArrayObject *)res, &dims, NPY_CORDER);
  Py_DECREF(res);
  return r && !ndim ? PyArray_Return((PyArrayObject *)r) : r;
}

PyObject *kilnpy_reduce(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"x", "op", "axis", "keepdims", "out", NULL};
  PyObject *xo, *axis = Py_None, *out_o = Py_None;
  const char *op_name = "sum";
  int keepdims = 0;
  kiln_reduce_op op;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|sO$pO:reduce", kwlist, &xo, &op_name,
                                   &axis, &keepdims, &out_o))
    return NULL;
  if (kilnpy_runtime_check(self) < 0 || reduce_op(op_name, &op) < 0)
    return NULL;
  int dev = kilnpy_is_array(xo);
  kilnpy_operand x;
  int mask[KILN_ARRAY_MAX_DIMS];
  npy_intp shape[KILN_ARRAY_MAX_DIMS], flat[KILN_ARRAY_MAX_DIMS];
  PyObject *res = NULL, *dst = NULL;
  kilnpy_call_begin(self);
  if (kilnpy_operand_load(self, xo, dev, "reduce: x", &x) < 0 ||
      axes_of(axis, x.ndim, op, mask) < 0)
    goto done;
  kiln_dtype od = kiln_reduce_out_dtype(op, kilnpy_kiln_dtype(x.typenum));
  int ndim = result_shape(x.ndim, x.shape, mask, keepdims, shape);
  int fdim = result_shape(x.ndim, x.shape, mask, 0, flat);
  if (out_o != Py_None && od) {
    if (!(dst = out_check(self, out_o, dev, ndim, shape, kilnpy_numpy_type(od))))
      goto done;
    if (!dev) { /* kiln writes the flat result into out's memory: a view */
      PyArray_Dims dims = {flat, fdim};
      PyObject *v = PyArray_Newshape((PyArrayObject *)dst, &dims, NPY_CORDER);
      Py_SETREF(dst, v);
      if (!dst)
        goto done;
    }
  }
  res = reduce_runs(self, op, &x, mask, dst);
  if (res && dst)
    Py_SETREF(res, Py_NewRef(out_o)); /* out itself, as numpy returns it */
  else if (res)
    res = reshaped(res, dev, ndim, shape);
done:
  Py_XDECREF(dst);
  kilnpy_operand_clear(&x);
  kilnpy_call_end(self);
  return res;
}
