/* Runtime.gemm(): act(alpha * op(a) @ op(b) + beta * c + bias), 2-D or a
 * batch of them (3-D), with kiln's fused epilogue. Numpy arrays in, numpy
 * arrays out through kiln_gemm_host() (which splits what does not fit the
 * device); a device array anywhere among the inputs keeps the work and the
 * result on the device. */
#include "kilnpy.h"

#include <string.h>

typedef struct gemm_args {
  double alpha, beta;
  int trans_a, trans_b;
  npy_intp m, n, k;
  npy_intp batch;       /* products; 0 with an empty batch */
  int batched;          /* the result is 3-D */
  int bcast_a, bcast_b; /* 2-D beside a 3-D other: one matrix for every product */
  kiln_bias bias;
  int bias_batched; /* one bias vector per product */
  kiln_activation act;
} gemm_args;

#define present(op) ((op)->np || (op)->dev)

/* kiln.InvalidArgumentError with the message; -1. Sizes are Py_ssize_t. */
#define gemm_fail(...) (kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT, __VA_ARGS__), -1)

/* a, b: 2-D or 3-D, one dtype; m, n, k and the batch. */
static int gemm_sizes(const kilnpy_operand *a, const kilnpy_operand *b, gemm_args *g)
{
  if (a->ndim < 2 || a->ndim > 3 || b->ndim < 2 || b->ndim > 3)
    return gemm_fail("gemm: a and b must be 2-D (a matrix) or 3-D (a batch); a has %zd "
                     "dimensions, b %zd",
                     (Py_ssize_t)a->ndim, (Py_ssize_t)b->ndim);
  kiln_dtype d = kilnpy_kiln_dtype(a->typenum);
  if (a->typenum != b->typenum || (d != KILN_F16 && d != KILN_F32 && d != KILN_F64)) {
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                     "gemm: a and b must be both float16, float32 or float64; got %s and "
                     "%s",
                     kiln_dtype_name(d), kiln_dtype_name(kilnpy_kiln_dtype(b->typenum)));
    return -1;
  }
  const npy_intp *as = a->shape + (a->ndim - 2), *bs = b->shape + (b->ndim - 2);
  g->m = as[g->trans_a ? 1 : 0];
  g->k = as[g->trans_a ? 0 : 1];
  npy_intp kb = bs[g->trans_b ? 1 : 0];
  g->n = bs[g->trans_b ? 0 : 1];
  if (kb != g->k)
    return gemm_fail("gemm: op(a) is %zd x %zd and op(b) %zd x %zd: op(a)'s columns must "
                     "equal op(b)'s rows",
                     (Py_ssize_t)g->m, (Py_ssize_t)g->k, (Py_ssize_t)kb,
                     (Py_ssize_t)g->n);
  g->batched = a->ndim == 3 || b->ndim == 3;
  g->bcast_a = g->batched && a->ndim == 2;
  g->bcast_b = g->batched && b->ndim == 2;
  g->batch = a->ndim == 3 ? a->shape[0] : b->ndim == 3 ? b->shape[0] : 1;
  if (a->ndim == 3 && b->ndim == 3 && a->shape[0] != b->shape[0])
    return gemm_fail("gemm: a batch of %zd products of a and %zd of b: they must be "
                     "equal (or one of them 2-D)",
                     (Py_ssize_t)a->shape[0], (Py_ssize_t)b->shape[0]);
  return 0;
}

/* c of the result's shape; the bias's shape says which way it goes. */
static int gemm_extras(const kilnpy_operand *c, const kilnpy_operand *bias, int typenum,
                       gemm_args *g)
{
  int nd = g->batched ? 3 : 2;
  if (present(c) && (c->ndim != nd || c->typenum != typenum || c->shape[nd - 2] != g->m ||
                     c->shape[nd - 1] != g->n || (g->batched && c->shape[0] != g->batch)))
    return gemm_fail("gemm: c must be of the result's shape (%zd products of %zd x %zd, "
                     "a batch when a or b is 3-D) and dtype; it has %zd dimensions",
                     (Py_ssize_t)(g->batched ? g->batch : 0), (Py_ssize_t)g->m,
                     (Py_ssize_t)g->n, (Py_ssize_t)c->ndim);
  g->bias = KILN_BIAS_NONE;
  if (!present(bias))
    return 0;
  /* numpy's broadcasting of `product + bias`: (n,) or (1, n) along the
   * columns, (m, 1) along the rows, with a leading batch axis for one
   * vector per product. */
  const npy_intp *s = bias->shape;
  int r = bias->ndim;
  int lead = g->batched && r == 3;
  if (bias->typenum != typenum) {
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                     "gemm: bias must be of a's dtype, %s; got %s",
                     kiln_dtype_name(kilnpy_kiln_dtype(typenum)),
                     kiln_dtype_name(kilnpy_kiln_dtype(bias->typenum)));
    return -1;
  }
  if (r == 1 && s[0] == g->n)
    g->bias = KILN_BIAS_COL;
  else if ((r == 2 || lead) && s[r - 2] == 1 && s[r - 1] == g->n)
    g->bias = KILN_BIAS_COL;
  else if ((r == 2 || lead) && s[r - 2] == g->m && s[r - 1] == 1)
    g->bias = KILN_BIAS_ROW;
  else if (g->batched && r == 2 && s[0] == g->batch && s[1] == g->n)
    g->bias = KILN_BIAS_COL, lead = 1;
  if (!g->bias || (lead && s[0] != g->batch))
    return gemm_fail("gemm: bias must be (n,) or (1, n) for the columns, (m, 1) for the "
                     "rows, or with a leading batch axis one per product (n = %zd, m = "
                     "%zd, batch %zd); it has %zd dimensions",
                     (Py_ssize_t)g->n, (Py_ssize_t)g->m, (Py_ssize_t)g->batch,
                     (Py_ssize_t)r);
  g->bias_batched = lead;
  return 0;
}

static void gemm_desc(const gemm_args *g, int typenum, int has_c, kiln_gemm_desc *desc)
{
  kiln_gemm_desc_init(desc, kilnpy_kiln_dtype(typenum), (size_t)g->m, (size_t)g->n,
                      (size_t)g->k);
  desc->trans_a = g->trans_a ? KILN_TRANS : KILN_NO_TRANS;
  desc->trans_b = g->trans_b ? KILN_TRANS : KILN_NO_TRANS;
  desc->alpha = g->alpha;
  desc->beta = has_c ? g->beta : 0.0;
  desc->bias = g->bias;
  desc->activation = g->act;
  if (g->bias_batched)
    desc->stride_bias = (size_t)(g->bias == KILN_BIAS_ROW ? g->m : g->n);
  /* A 2-D a or b beside a batch is one matrix for all: kiln's stride 0
   * means packed, so such a batch runs one product a call (gemm_calls),
   * but for a shared b under an untransposed a (torch.matmul(x, w)): the
   * batch is then one tall product of batch * m rows, where a bias of the
   * columns is the same for every product. */
  int fold =
    g->bcast_b && !g->trans_a &&
    (g->bias == KILN_BIAS_NONE || (g->bias == KILN_BIAS_COL && !g->bias_batched));
  if (fold) {
    desc->m = (size_t)(g->batch * g->m);
    desc->batch = 1;
  } else if (!g->bcast_a && !g->bcast_b) {
    desc->batch = (size_t)g->batch;
  }
}

/* The product(s): one call, or one per product where a or b is shared. */
static kiln_status gemm_calls(kilnpy_runtime *self, kiln_gemm_desc *desc,
                              const gemm_args *g, const kilnpy_operand *a,
                              const kilnpy_operand *b, const kilnpy_operand *bias,
                              void *out)
{
  size_t calls = desc->batch ? 1 : (size_t)g->batch;
  size_t sa = g->bcast_a ? 0 : (size_t)(g->m * g->k),
         sb = g->bcast_b ? 0 : (size_t)(g->k * g->n);
  size_t sc = (size_t)(g->m * g->n), sbias = desc->stride_bias;
  kiln_status s = KILN_OK;
  Py_BEGIN_ALLOW_THREADS;
  for (size_t i = 0; i < calls && s == KILN_OK; i++) {
    if (calls > 1) {
      desc->offset_a = i * sa, desc->offset_b = i * sb, desc->offset_c = i * sc;
      desc->offset_bias = i * sbias;
    }
    if (a->dev) {
      desc->bias_buffer = bias->dev ? bias->dev->buf : NULL;
      s = kiln_gemm(self->rt, desc, a->dev->buf, b->dev->buf, (kiln_buffer *)out);
    } else {
      desc->bias_host = bias->np ? PyArray_DATA(bias->np) : NULL;
      s = kiln_gemm_host(self->rt, desc, PyArray_DATA(a->np), PyArray_DATA(b->np), out);
    }
  }
  Py_END_ALLOW_THREADS;
  return s;
}

static PyObject *gemm_run(kilnpy_runtime *self, const kilnpy_operand *a,
                          const kilnpy_operand *b, const kilnpy_operand *c,
                          const kilnpy_operand *bias, const gemm_args *g)
{
  kiln_gemm_desc desc;
  gemm_desc(g, a->typenum, present(c), &desc);
  npy_intp dims[3] = {g->batch, g->m, g->n};
  int nd = g->batched ? 3 : 2;
  const npy_intp *shape = g->batched ? dims : dims + 1;
  PyObject *out;
  kiln_status s = KILN_OK;
  if (a->dev) {
    kilnpy_array *o = kilnpy_array_new(self, nd, shape, a->typenum, 0);
    if (!(out = (PyObject *)o) || !o->count)
      return out;
    if (present(c))
      s = kiln_buffer_copy(o->buf, 0, c->dev->buf, 0, o->count);
    if (s == KILN_OK)
      s = gemm_calls(self, &desc, g, a, b, bias, o->buf);
  } else {
    PyArrayObject *o = (PyArrayObject *)PyArray_SimpleNew(nd, shape, a->typenum);
    if (!(out = (PyObject *)o) || !PyArray_SIZE(o))
      return out;
    if (present(c))
      memcpy(PyArray_DATA(o), PyArray_DATA(c->np), (size_t)PyArray_NBYTES(o));
    s = gemm_calls(self, &desc, g, a, b, bias, PyArray_DATA(o));
  }
  if (s != KILN_OK) {
    Py_DECREF(out);
    return kilnpy_raise(s, self->rt);
  }
  return out;
}

/* k == 0: no product to run; the result is beta * c, or zeros. */
static PyObject *gemm_empty_k(kilnpy_runtime *self, const kilnpy_operand *c,
                              const gemm_args *g, int typenum, int dev)
{
  if (g->bias || g->act)
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                            "gemm: k = 0 (an empty product) with a bias or an activation "
                            "is not supported");
  npy_intp dims[3] = {g->batch, g->m, g->n};
  int nd = g->batched ? 3 : 2;
  PyObject *out;
  if (!present(c) || g->beta == 0) {
    out = PyArray_ZEROS(nd, g->batched ? dims : dims + 1, typenum, 0);
  } else {
    PyObject *host = c->np ? Py_NewRef(c->np) : kilnpy_array_numpy(c->dev);
    PyObject *beta = PyFloat_FromDouble(g->beta);
    PyObject *prod = host && beta ? PyNumber_Multiply(beta, host) : NULL;
    Py_XDECREF(host);
    Py_XDECREF(beta);
    out = prod ? PyArray_Cast((PyArrayObject *)prod, typenum) : NULL;
    Py_XDECREF(prod);
  }
  if (out && dev)
    Py_SETREF(out, kilnpy_runtime_array(self, out));
  return out;
}

PyObject *kilnpy_gemm(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"a",       "b",       "alpha", "beta",       "c",
                           "trans_a", "trans_b", "bias",  "activation", NULL};
  PyObject *ao, *bo, *co = Py_None, *biaso = Py_None, *acto = Py_None;
  gemm_args g;
  memset(&g, 0, sizeof g);
  g.alpha = 1.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$ddOppOO:gemm", kwlist, &ao, &bo,
                                   &g.alpha, &g.beta, &co, &g.trans_a, &g.trans_b, &biaso,
                                   &acto))
    return NULL;
  if (kilnpy_runtime_check(self) < 0 || kilnpy_activation(acto, &g.act) < 0)
    return NULL;
  int dev = kilnpy_is_array(ao) || kilnpy_is_array(bo) || kilnpy_is_array(co) ||
            kilnpy_is_array(biaso);
  kilnpy_operand a, b, c, bias;
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  memset(&bias, 0, sizeof bias);
  PyObject *out = NULL;
  kilnpy_call_begin(self);
  if (kilnpy_operand_load(self, ao, dev, "gemm: a", &a) < 0 ||
      kilnpy_operand_load(self, bo, dev, "gemm: b", &b) < 0 ||
      kilnpy_operand_load(self, co, dev, "gemm: c", &c) < 0 ||
      kilnpy_operand_load(self, biaso, dev, "gemm: bias", &bias) < 0 ||
      gemm_sizes(&a, &b, &g) < 0 || gemm_extras(&c, &bias, a.typenum, &g) < 0)
    goto done;
  if (g.k == 0 && g.m && g.n && g.batch)
    out = gemm_empty_k(self, &c, &g, a.typenum, dev);
  else
    out = gemm_run(self, &a, &b, &c, &bias, &g);
done:
  kilnpy_operand_clear(&a);
  kilnpy_operand_clear(&b);
  kilnpy_operand_clear(&c);
  kilnpy_operand_clear(&bias);
  kilnpy_call_end(self);
  return out;
}
