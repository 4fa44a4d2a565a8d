/* Runtime.conv2d() (kiln_conv2d, NCHW or NHWC) and Runtime.convert() /
 * DeviceArray.astype() (kiln_convert). Numpy arrays in give numpy arrays
 * out; a device array among the inputs keeps the work on the device. */
#include "kilnpy.h"

#include <string.h>

/* An int or a sequence of `n` ints (n = 2, or 4 for padding's four sides,
 * which also takes 2: both sides alike), into out[0..3] as h, h, w, w. */
static int ints_of(PyObject *o, const char *name, int four, size_t out[4])
{
  long v[4];
  Py_ssize_t n = 0;
  if (PyIndex_Check(o)) {
    v[0] = v[1] = v[2] = v[3] = PyLong_AsLong(o);
    n = 1;
  } else if (PyTuple_Check(o) || PyList_Check(o)) {
    n = PySequence_Size(o);
    for (Py_ssize_t i = 0; i < n && i < 4; i++) {
      PyObject *it = PySequence_GetItem(o, i);
      v[i] = it ? PyLong_AsLong(it) : -1;
      Py_XDECREF(it);
    }
  }
  if (PyErr_Occurred())
    PyErr_Clear();
  else if (n == 1 || n == 2 || (four && n == 4)) {
    int neg = 0;
    for (Py_ssize_t i = 0; i < n; i++)
      neg |= v[i] < 0;
    if (!neg) {
      if (n == 1)
        out[0] = out[1] = out[2] = out[3] = (size_t)v[0];
      else if (n == 2)
        out[0] = out[1] = (size_t)v[0], out[2] = out[3] = (size_t)v[1];
      else
        out[0] = (size_t)v[0], out[1] = (size_t)v[1], out[2] = (size_t)v[2],
        out[3] = (size_t)v[3];
      return 0;
    }
  }
  kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                   "conv2d: %s must be a non-negative int or a pair (h, w)%s", name,
                   four ? ", or (top, bottom, left, right)" : "");
  return -1;
}

static int activation_of(const char *name, kiln_activation *act)
{
  for (int i = KILN_ACTIVATION_NONE; i <= KILN_ACTIVATION_TANH; i++) {
    if (strcmp(name, kiln_activation_name((kiln_activation)i)) == 0) {
      *act = (kiln_activation)i;
      return 0;
    }
  }
  kilnpy_raise_msg(
    KILN_ERR_INVALID_ARGUMENT,
    "activation '%s' is not one of None, 'relu', 'gelu', 'sigmoid', 'tanh'", name);
  return -1;
}

int kilnpy_activation(PyObject *o, kiln_activation *act)
{
  *act = KILN_ACTIVATION_NONE;
  if (o == Py_None)
    return 0;
  const char *name = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  if (!name) {
    PyErr_Clear();
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT, "activation must be None or a name");
    return -1;
  }
  return activation_of(name, act);
}

/* Sizes from the arrays' shapes (x NCHW or NHWC, weights KCRS or KRSC). */
static int conv_shapes(const kilnpy_operand *x, const kilnpy_operand *w,
                       const kilnpy_operand *b, int nhwc, size_t groups,
                       kiln_conv2d_desc *d)
{
  if (x->ndim != 4 || w->ndim != 4) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "conv2d: x and weights must be 4-D (%s); got %d-D and %d-D",
                     nhwc ? "x NHWC, weights K R S C/groups"
                          : "x NCHW, weights K C/groups R S",
                     x->ndim, w->ndim);
    return -1;
  }
  kiln_dtype dt = kilnpy_kiln_dtype(x->typenum);
  if (w->typenum != x->typenum || (b->ndim && b->typenum != x->typenum) ||
      (dt != KILN_F16 && dt != KILN_F32 && dt != KILN_F64)) {
    kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                     "conv2d: x, weights and bias must be of one dtype, float16, float32 "
                     "or float64; got %s and %s",
                     kiln_dtype_name(dt), kiln_dtype_name(kilnpy_kiln_dtype(w->typenum)));
    return -1;
  }
  const npy_intp *xs = x->shape, *ws = w->shape;
  kiln_conv2d_desc_init(d, dt, (size_t)xs[0], (size_t)xs[nhwc ? 3 : 1],
                        (size_t)xs[nhwc ? 1 : 2], (size_t)xs[nhwc ? 2 : 3], (size_t)ws[0],
                        (size_t)ws[nhwc ? 1 : 2], (size_t)ws[nhwc ? 2 : 3]);
  d->layout = nhwc ? KILN_NHWC : KILN_NCHW;
  size_t wc = (size_t)ws[nhwc ? 3 : 1];
  if (wc * groups != d->c) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "conv2d: weights hold %zu input channels per group; x has %zu "
                     "channels in %zu groups (%zu a group)",
                     wc, d->c, groups, d->c / groups);
    return -1;
  }
  if (b->ndim && (b->ndim != 1 || (size_t)b->shape[0] != d->k)) {
    kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                     "conv2d: bias must be 1-D of the %zu output channels", d->k);
    return -1;
  }
  return 0;
}

static PyObject *conv_run(kilnpy_runtime *self, const kiln_conv2d_desc *d,
                          const kilnpy_operand *x, const kilnpy_operand *w,
                          const kilnpy_operand *b)
{
  size_t p, q;
  kiln_status s = kiln_conv2d_output(d, &p, &q);
  if (s != KILN_OK)
    return kilnpy_raise(s, NULL);
  int nhwc = d->layout == KILN_NHWC;
  npy_intp dims[4] = {(npy_intp)d->n, (npy_intp)(nhwc ? p : d->k),
                      (npy_intp)(nhwc ? q : p), (npy_intp)(nhwc ? d->k : q)};
  PyObject *out;
  if (x->dev) {
    kilnpy_array *o = kilnpy_array_new(self, 4, dims, x->typenum, 0);
    if (!(out = (PyObject *)o) || !o->count)
      return out;
    const kiln_buffer *bias = b->dev ? b->dev->buf : NULL;
    Py_BEGIN_ALLOW_THREADS;
    s = kiln_conv2d(self->rt, d, x->dev->buf, w->dev->buf, bias, o->buf);
    Py_END_ALLOW_THREADS;
  } else {
    PyArrayObject *o = (PyArrayObject *)PyArray_SimpleNew(4, dims, x->typenum);
    if (!(out = (PyObject *)o) || !PyArray_SIZE(o))
      return out;
    const void *xd = PyArray_DATA(x->np), *wd = PyArray_DATA(w->np);
    const void *bd = b->np ? PyArray_DATA(b->np) : NULL;
    void *od = PyArray_DATA(o);
    Py_BEGIN_ALLOW_THREADS;
    s = kiln_conv2d_host(self->rt, d, xd, wd, bd, od);
    Py_END_ALLOW_THREADS;
  }
  if (s != KILN_OK) {
    Py_DECREF(out);
    return kilnpy_raise(s, self->rt);
  }
  return out;
}

PyObject *kilnpy_conv2d(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"x",        "weights", "bias",       "stride", "padding",
                           "dilation", "groups",  "activation", "layout", NULL};
  PyObject *xo, *wo, *bo = Py_None, *stride = NULL, *pad = NULL, *dil = NULL;
  PyObject *act_o = Py_None;
  Py_ssize_t groups = 1;
  const char *layout = "NCHW";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$OOOnOs:conv2d", kwlist, &xo, &wo,
                                   &bo, &stride, &pad, &dil, &groups, &act_o, &layout))
    return NULL;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  size_t st[4] = {1, 1, 1, 1}, pd[4] = {0, 0, 0, 0}, dl[4] = {1, 1, 1, 1};
  kiln_activation act;
  int nhwc = strcmp(layout, "NHWC") == 0;
  if (!nhwc && strcmp(layout, "NCHW") != 0)
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                            "conv2d: layout '%s' is not 'NCHW' or 'NHWC'", layout);
  if ((stride && ints_of(stride, "stride", 0, st) < 0) ||
      (pad && ints_of(pad, "padding", 1, pd) < 0) ||
      (dil && ints_of(dil, "dilation", 0, dl) < 0) || kilnpy_activation(act_o, &act) < 0)
    return NULL;
  if (groups < 1 || !st[0] || !st[2] || !dl[0] || !dl[2])
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                            "conv2d: groups, stride and dilation must be at least 1");
  int dev = kilnpy_is_array(xo) || kilnpy_is_array(wo) || kilnpy_is_array(bo);
  kilnpy_operand x, w, b;
  memset(&w, 0, sizeof w);
  memset(&b, 0, sizeof b);
  PyObject *out = NULL;
  kiln_conv2d_desc d;
  kilnpy_call_begin(self);
  if (kilnpy_operand_load(self, xo, dev, "conv2d: x", &x) < 0 ||
      kilnpy_operand_load(self, wo, dev, "conv2d: weights", &w) < 0 ||
      kilnpy_operand_load(self, bo, dev, "conv2d: bias", &b) < 0)
    goto done;
  if (conv_shapes(&x, &w, &b, nhwc, (size_t)groups, &d) < 0)
    goto done;
  d.groups = (size_t)groups;
  d.stride_h = st[0], d.stride_w = st[2];
  d.pad_top = pd[0], d.pad_bottom = pd[1], d.pad_left = pd[2], d.pad_right = pd[3];
  d.dilation_h = dl[0], d.dilation_w = dl[2];
  d.activation = act;
  out = conv_run(self, &d, &x, &w, &b);
done:
  kilnpy_operand_clear(&x);
  kilnpy_operand_clear(&w);
  kilnpy_operand_clear(&b);
  kilnpy_call_end(self);
  return out;
}

/* ---- convert ----------------------------------------------------------- */

PyObject *kilnpy_convert_to(kilnpy_runtime *self, PyObject *xo, PyObject *dtype_o)
{
  PyArray_Descr *descr = NULL;
  if (!PyArray_DescrConverter(dtype_o, &descr))
    return NULL;
  int to = descr->type_num;
  Py_DECREF(descr);
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  if (!kilnpy_kiln_dtype(to))
    return kilnpy_raise_msg(KILN_ERR_INVALID_DTYPE,
                            "convert: kiln has no dtype for the target; kiln converts "
                            "between float16, float32, float64, int32 and int64");
  int host = !kilnpy_is_array(xo);
  kilnpy_call_begin(self);
  PyObject *out = NULL;
  kilnpy_array *x = kilnpy_array_of(self, xo, "convert: x");
  kilnpy_array *o = x ? kilnpy_array_new(self, x->ndim, x->shape, to, 0) : NULL;
  if (o && o->count) {
    kiln_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = kiln_convert(x->buf, o->buf);
    Py_END_ALLOW_THREADS;
    if (s != KILN_OK) {
      kilnpy_raise(s, self->rt);
      Py_CLEAR(o);
    }
  }
  if (o)
    out = host ? kilnpy_array_numpy(o) : Py_NewRef(o);
  Py_XDECREF(o);
  Py_XDECREF(x);
  kilnpy_call_end(self);
  return out;
}

PyObject *kilnpy_convert(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"x", "dtype", NULL};
  PyObject *xo, *dt;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:convert", kwlist, &xo, &dt))
    return NULL;
  return kilnpy_convert_to(self, xo, dt);
}
