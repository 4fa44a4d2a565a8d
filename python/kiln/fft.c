/* Runtime._fft(): kiln_fft over the last 1 to 3 axes of a C-order array,
 * the leading axes its batch. kiln/fft.py gives it numpy.fft's names, axes,
 * lengths and norms. A numpy array in runs kiln_fft_host() and gives a
 * numpy array; a device array runs kiln_fft() and gives a device array. */
#include "kilnpy.h"

#include <string.h>

typedef struct fft_shape {
  int ndim;
  npy_intp in[KILN_ARRAY_MAX_DIMS], out[KILN_ARRAY_MAX_DIMS];
  int in_type, out_type;
} fft_shape;

static int want_type(int got, int complex_in, const char *kind)
{
  int ok = complex_in ? got == NPY_COMPLEX64 || got == NPY_COMPLEX128
                      : got == NPY_FLOAT32 || got == NPY_FLOAT64;
  if (!ok)
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE, "fft: a %s transform takes %s; got %s", kind,
                     complex_in ? "complex64 or complex128" : "float32 or float64",
                     kiln_dtype_name(kilnpy_kiln_dtype(got)));
  return ok ? 0 : -1;
}

/* The descriptor and the output's shape and type for the input's. */
static int fft_plan(int ndim, const npy_intp *shape, int typenum, int kind, int axes,
                    int inverse, int norm, Py_ssize_t n_last, kiln_fft_desc *d,
                    fft_shape *fs)
{
  static const char *const names[] = {"complex", "real-to-complex", "complex-to-real"};
  if (kind < 0 || kind > 2 || norm < 0 || norm > 2 || axes < 1 || axes > 3 ||
      axes > ndim) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "fft: kind %d, norm %d, %d axes of a %d-D array: expected kind 0-2, "
                     "norm 0-2, 1 to 3 axes and at least as many dimensions",
                     kind, norm, axes, ndim);
    return -1;
  }
  if (want_type(typenum, kind != KILN_FFT_R2C, names[kind]) < 0)
    return -1;
  int single = typenum == NPY_FLOAT32 || typenum == NPY_COMPLEX64;
  kiln_fft_desc_init(d, single ? KILN_F32 : KILN_F64, 1);
  d->kind = (kiln_fft_kind)kind;
  d->inverse = inverse;
  d->norm = (kiln_fft_norm)norm;
  d->ndim = (unsigned)axes;
  fs->ndim = ndim;
  memcpy(fs->in, shape, sizeof(npy_intp) * (size_t)ndim);
  memcpy(fs->out, shape, sizeof(npy_intp) * (size_t)ndim);
  fs->in_type = typenum;
  fs->out_type = kind == KILN_FFT_C2R ? (single ? NPY_FLOAT32 : NPY_FLOAT64)
                                      : (single ? NPY_COMPLEX64 : NPY_COMPLEX128);
  size_t batch = 1;
  for (int i = 0; i < ndim - axes; i++)
    batch *= (size_t)shape[i];
  d->batch = batch;
  for (int i = 0; i < axes; i++)
    d->shape[i] = (size_t)shape[ndim - axes + i];
  npy_intp last = shape[ndim - 1];
  if (kind == KILN_FFT_R2C) {
    fs->out[ndim - 1] = last / 2 + 1;
  } else if (kind == KILN_FFT_C2R) {
    if (n_last < 1 || n_last / 2 + 1 != last) {
      kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                       "fft: a complex-to-real transform to %zd points takes %zd on its "
                       "last axis; got %zd",
                       n_last, n_last / 2 + 1, (Py_ssize_t)last);
      return -1;
    }
    fs->out[ndim - 1] = n_last;
    d->shape[axes - 1] = (size_t)n_last;
  }
  for (int i = 0; i < axes; i++) {
    if (!d->shape[i]) {
      kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                       "fft: invalid number of data points (0) on axis %d",
                       ndim - axes + i);
      return -1;
    }
  }
  return 0;
}

PyObject *kilnpy_fft(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"x", "kind", "axes", "inverse", "norm", "n_last", NULL};
  PyObject *xo;
  int kind = 0, axes = 1, inverse = 0, norm = 0;
  Py_ssize_t n_last = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|iipin:_fft", kwlist, &xo, &kind,
                                   &axes, &inverse, &norm, &n_last))
    return NULL;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  kiln_fft_desc d;
  fft_shape fs;
  kiln_status s = KILN_OK;
  PyObject *out = NULL;
  kilnpy_call_begin(self);
  if (kilnpy_is_array(xo)) {
    kilnpy_array *x = (kilnpy_array *)xo;
    if (x->owner != self) {
      kilnpy_raise_msg(KILN_ERR_WRONG_RUNTIME, "fft: a device array of another runtime");
      goto done;
    }
    if (fft_plan(x->ndim, x->shape, x->typenum, kind, axes, inverse, norm, n_last, &d,
                 &fs) < 0)
      goto done;
    kilnpy_array *o = kilnpy_array_new(self, fs.ndim, fs.out, fs.out_type, 0);
    if ((out = (PyObject *)o) && o->count) {
      Py_BEGIN_ALLOW_THREADS;
      s = kiln_fft(self->rt, &d, x->buf, o->buf);
      Py_END_ALLOW_THREADS;
    }
  } else {
    PyArrayObject *x = kilnpy_numpy_in(xo, "fft: x");
    if (!x)
      goto done;
    if (fft_plan(PyArray_NDIM(x), PyArray_DIMS(x), PyArray_TYPE(x), kind, axes, inverse,
                 norm, n_last, &d, &fs) == 0) {
      PyArrayObject *o = (PyArrayObject *)PyArray_SimpleNew(fs.ndim, fs.out, fs.out_type);
      if ((out = (PyObject *)o) && PyArray_SIZE(o)) {
        void *in = PyArray_DATA(x), *od = PyArray_DATA(o);
        Py_BEGIN_ALLOW_THREADS;
        s = kiln_fft_host(self->rt, &d, in, od);
        Py_END_ALLOW_THREADS;
      }
    }
    Py_DECREF(x);
  }
  if (s != KILN_OK) {
    Py_CLEAR(out);
    kilnpy_raise(s, self->rt);
  }
done:
  kilnpy_call_end(self);
  return out;
}
