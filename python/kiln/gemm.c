/* Runtime.gemm(): numpy arrays in, numpy arrays out through
 * kiln_gemm_host() (which splits what does not fit the device); a device
 * array anywhere among the inputs keeps the work and the result on the
 * device. */
#include "kilnpy.h"

#include <string.h>

/* ---- gemm ----------------------------------------------------------- */

typedef struct gemm_args {
  double alpha, beta;
  int trans_a, trans_b;
  npy_intp m, n, k;
} gemm_args;

static int gemm_check(const kilnpy_operand *a, const kilnpy_operand *b, const kilnpy_operand *c, gemm_args *g)
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
static PyObject *gemm_empty_k(const kilnpy_operand *c, const gemm_args *g, int typenum)
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

static PyObject *gemm_run(kilnpy_runtime *self, const kilnpy_operand *a, const kilnpy_operand *b,
                          const kilnpy_operand *c, const gemm_args *g)
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
  kilnpy_operand a, b, c;
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  PyObject *out = NULL;
  kilnpy_call_begin(self);
  if (kilnpy_operand_load(self, ao, dev, "gemm: a", &a) < 0 ||
      kilnpy_operand_load(self, bo, dev, "gemm: b", &b) < 0 ||
      (co != Py_None && kilnpy_operand_load(self, co, dev, "gemm: c", &c) < 0) ||
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
  kilnpy_operand_clear(&a);
  kilnpy_operand_clear(&b);
  kilnpy_operand_clear(&c);
  kilnpy_call_end(self);
  return out;
}
