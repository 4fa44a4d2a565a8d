/* DeviceArray.__getitem__ and __setitem__: the indexing whose result is one
 * contiguous range of the array's elements, which kiln_buffer_view() gives
 * without a copy: integers on leading axes, then at most one slice of step 1,
 * then whole axes (`:` or `...`). x[3], x[2:5], x[1, 4:9], x[2, ...].
 * Anything else (a step, a slice before an integer, fancy indexing) would
 * need a copy, and is refused with the numpy spelling that makes one. */
#include "kilnpy.h"

#include <string.h>

/* Where the indexed range starts, and its shape. */
typedef struct range {
  size_t offset;
  int ndim;
  npy_intp shape[KILN_ARRAY_MAX_DIMS];
} range;

static int refuse(const char *why)
{
  kilnpy_raise_msg(
    KILN_ERR_INVALID_ARGUMENT,
    "DeviceArray index: %s; a view of a device array is one contiguous "
    "range (integers on leading axes, then one slice of step 1, then whole "
    "axes): for anything else index a host copy, x.numpy()[...]",
    why);
  return -1;
}

static int is_full(PyObject *k)
{
  if (!PySlice_Check(k))
    return 0;
  PySliceObject *sl = (PySliceObject *)k;
  return sl->start == Py_None && sl->stop == Py_None && sl->step == Py_None;
}

/* One key at position axis, in the phase so far: 0 integers, 1 after the
 * slice (only whole axes follow). */
static int index_one(const kilnpy_array *a, PyObject *k, int *axis, int *phase,
                     size_t stride[], range *r)
{
  if (*axis >= a->ndim) {
    PyErr_Format(PyExc_IndexError, "too many indices for a device array of %d dimensions",
                 a->ndim);
    return -1;
  }
  npy_intp len = a->shape[*axis];
  if (*phase == 0 && PyIndex_Check(k)) {
    Py_ssize_t i = PyNumber_AsSsize_t(k, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
      return -1;
    if (i < -len || i >= len) {
      PyErr_Format(PyExc_IndexError,
                   "index %zd is out of bounds for axis %d with size %zd", i, *axis,
                   (Py_ssize_t)len);
      return -1;
    }
    r->offset += (size_t)(i < 0 ? i + len : i) * stride[*axis];
    (*axis)++;
    return 0;
  }
  if (PySlice_Check(k)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(k, &start, &stop, &step) < 0)
      return -1;
    if (*phase == 1 && !is_full(k))
      return refuse("a slice after a slice");
    if (step != 1)
      return refuse("a step other than 1");
    Py_ssize_t n = PySlice_AdjustIndices(len, &start, &stop, step);
    r->offset += (size_t)start * stride[*axis];
    r->shape[r->ndim++] = n;
    *phase = 1;
    (*axis)++;
    return 0;
  }
  if (PyIndex_Check(k))
    return refuse("an integer after a slice");
  return refuse("a key that is not an integer, a slice or ...");
}

/* The range the key selects; -1 with an exception set. */
static int index_range(const kilnpy_array *a, PyObject *key, range *r)
{
  size_t stride[KILN_ARRAY_MAX_DIMS];
  size_t st = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    stride[i] = st;
    st *= (size_t)a->shape[i];
  }
  memset(r, 0, sizeof *r);
  PyObject *t = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
  if (!t)
    return -1;
  Py_ssize_t nk = PyTuple_GET_SIZE(t);
  int axis = 0, phase = 0, ellipsis = 0, rc = 0;
  for (Py_ssize_t j = 0; j < nk && rc == 0; j++) {
    PyObject *k = PyTuple_GET_ITEM(t, j);
    if (k == Py_Ellipsis) {
      if (ellipsis++) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis");
        rc = -1;
        break;
      }
      /* whole axes up to those the keys after it index */
      int rest = a->ndim - axis - (int)(nk - j - 1);
      for (; rest > 0; rest--, axis++) {
        r->shape[r->ndim++] = a->shape[axis];
        phase = 1;
      }
      continue;
    }
    if (k == Py_None) {
      rc = refuse("None (a new axis)");
      break;
    }
    rc = index_one(a, k, &axis, &phase, stride, r);
  }
  Py_DECREF(t);
  for (; rc == 0 && axis < a->ndim; axis++)
    r->shape[r->ndim++] = a->shape[axis];
  return rc;
}

static PyObject *array_subscript(kilnpy_array *self, PyObject *key)
{
  if (kilnpy_runtime_check(self->owner) < 0)
    return NULL;
  range r;
  if (index_range(self, key, &r) < 0)
    return NULL;
  return (PyObject *)kilnpy_array_view(self, r.offset, r.ndim, r.shape);
}

/* x[key] = value: value (a device array of the range's shape and dtype, or
 * anything numpy broadcasts to it, cast as numpy assigns) written into the
 * range. */
static int array_ass_subscript(kilnpy_array *self, PyObject *key, PyObject *value)
{
  if (!value) {
    PyErr_SetString(PyExc_TypeError, "a device array's elements cannot be deleted");
    return -1;
  }
  if (kilnpy_runtime_check(self->owner) < 0)
    return -1;
  range r;
  if (index_range(self, key, &r) < 0)
    return -1;
  size_t count = 1;
  for (int i = 0; i < r.ndim; i++)
    count *= (size_t)r.shape[i];
  kiln_status s = KILN_OK;
  if (kilnpy_is_array(value)) {
    kilnpy_array *v = (kilnpy_array *)value;
    int same = v->owner == self->owner && v->typenum == self->typenum &&
               v->ndim == r.ndim && !memcmp(v->shape, r.shape, sizeof(npy_intp) * r.ndim);
    if (!same) {
      kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                       "DeviceArray assignment: a device array must be of the same "
                       "runtime, dtype and shape as the range it is written to");
      return -1;
    }
    if (count)
      s = kiln_buffer_copy(self->buf, r.offset, v->buf, 0, count);
  } else {
    PyArrayObject *host =
      (PyArrayObject *)PyArray_SimpleNew(r.ndim, r.shape, self->typenum);
    if (!host)
      return -1;
    if (PyArray_CopyObject(host, value) < 0) {
      Py_DECREF(host);
      return -1;
    }
    if (count) {
      kilnpy_call_begin(self->owner);
      void *data = PyArray_DATA(host);
      Py_BEGIN_ALLOW_THREADS;
      s = kiln_buffer_write(self->buf, r.offset, count, data);
      Py_END_ALLOW_THREADS;
      kilnpy_call_end(self->owner);
    }
    Py_DECREF(host);
  }
  if (s != KILN_OK) {
    kilnpy_raise(s, self->owner ? self->owner->rt : NULL);
    return -1;
  }
  return 0;
}

PyMappingMethods kilnpy_array_mapping = {
  .mp_subscript = (binaryfunc)array_subscript,
  .mp_ass_subscript = (objobjargproc)array_ass_subscript,
};
