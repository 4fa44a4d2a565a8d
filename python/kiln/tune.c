/* Runtime.tune(): kiln_tune on the runtime's device, its progress as a
 * Python callable that may stop it (and Ctrl-C, as in `kiln tune`). */
/* kiln_tune() is experimental API. */
#define KILN_EXPERIMENTAL
#include "kilnpy.h"

#include <string.h>

typedef struct tune_ctx {
  PyObject *progress; /* or NULL */
  int failed;         /* the callable raised (or Ctrl-C): stop, re-raise */
  PyObject *exc[3];   /* that exception, kept until kiln_tune returns (in
                         exc[0] alone from Python 3.12, where PyErr_Fetch is
                         deprecated) */
} tune_ctx;

static PyObject *step_dict(const kiln_tune_step *st)
{
  return Py_BuildValue(
    "{szszsnsnsdszszsdsdsOsdsd}", "kernel", st->kernel, "candidate", st->candidate,
    "index", (Py_ssize_t)st->index, "count", (Py_ssize_t)st->count, "seconds",
    st->seconds, "skipped", st->skipped, "best", st->best, "best_seconds",
    st->best_seconds, "baseline_seconds", st->baseline_seconds, "kernel_done",
    st->kernel_done ? Py_True : Py_False, "elapsed", st->elapsed, "left", st->left);
}

/* Called by kiln_tune without the GIL. */
static int tune_progress(const kiln_tune_step *st, void *user)
{
  tune_ctx *ctx = user;
  if (ctx->failed) /* kiln reports its kept best after a stop */
    return 1;
  PyGILState_STATE g = PyGILState_Ensure();
  int stop = 0;
  if (PyErr_CheckSignals() < 0) {
    stop = ctx->failed = 1;
  } else if (ctx->progress) {
    PyObject *d = step_dict(st);
    PyObject *r = d ? PyObject_CallFunctionObjArgs(ctx->progress, d, NULL) : NULL;
    Py_XDECREF(d);
    if (!r)
      stop = ctx->failed = 1;
    else
      stop = PyObject_IsTrue(r) == 1;
    Py_XDECREF(r);
  }
  if (ctx->failed) {
#if PY_VERSION_HEX >= 0x030C0000
    ctx->exc[0] = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&ctx->exc[0], &ctx->exc[1], &ctx->exc[2]);
#endif
  }
  PyGILState_Release(g);
  return stop;
}

static void exc_restore(tune_ctx *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(ctx->exc[0]);
#else
  PyErr_Restore(ctx->exc[0], ctx->exc[1], ctx->exc[2]);
#endif
}

static int what_bits(PyObject *what, unsigned *bits)
{
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"gemm", KILN_TUNE_GEMM},
               {"reduce", KILN_TUNE_REDUCE},
               {"fft", KILN_TUNE_FFT},
               {"conv", KILN_TUNE_CONV}};
  *bits = 0;
  if (what == Py_None)
    return 0;
  PyObject *seq =
    PyUnicode_Check(what) ? PyTuple_Pack(1, what) : PySequence_Fast(what, "tune: what");
  if (!seq)
    return -1;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    const char *n = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
    unsigned bit = 0;
    for (size_t j = 0; n && j < sizeof names / sizeof names[0]; j++)
      if (strcmp(n, names[j].name) == 0)
        bit = names[j].bit;
    if (!bit) {
      PyErr_Clear();
      Py_DECREF(seq);
      kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                       "tune: what must be None (all) or names among 'gemm', 'reduce', "
                       "'fft', 'conv'");
      return -1;
    }
    *bits |= bit;
  }
  Py_DECREF(seq);
  return 0;
}

PyObject *kilnpy_tune(kilnpy_runtime *self, PyObject *args, PyObject *kwargs)
{
  static char *kwlist[] = {"what", "budget", "progress", NULL};
  PyObject *what = Py_None, *progress = Py_None;
  double budget = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$dO:tune", kwlist, &what, &budget,
                                   &progress))
    return NULL;
  if (kilnpy_runtime_check(self) < 0)
    return NULL;
  if (progress != Py_None && !PyCallable_Check(progress))
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                            "tune: progress must be None or a callable");
  if (budget < 0)
    return kilnpy_raise_msg(KILN_ERR_INVALID_ARGUMENT,
                            "tune: budget is seconds, 0 (kiln's 240) or more");
  kiln_tune_options o;
  kiln_tune_options_init(&o);
  if (what_bits(what, &o.what) < 0)
    return NULL;
  tune_ctx ctx = {progress == Py_None ? NULL : progress, 0, {NULL, NULL, NULL}};
  o.budget = budget;
  o.progress = tune_progress;
  o.user = &ctx;
  kiln_status s;
  kilnpy_call_begin(self);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_tune(self->rt, &o);
  Py_END_ALLOW_THREADS;
  PyObject *ret = NULL;
  if (ctx.failed) /* the callable's exception, or KeyboardInterrupt */
    exc_restore(&ctx);
  else if (s != KILN_OK)
    kilnpy_raise(s, self->rt);
  else
    ret = Py_NewRef(Py_None);
  kilnpy_call_end(self);
  return ret;
}
