/* The profiler from Python: Runtime._profile_reset(), _profile_table() (the
 * table of kiln_profile_report() as a str) and _profile_rows() (the rows as
 * dicts). kiln/__init__.py's Runtime.profile() is the context manager. */
#include "kilnpy.h"

#include <stdio.h>
#include <stdlib.h>

static int profiling(kilnpy_runtime *self)
{
  if (kilnpy_runtime_check(self) < 0)
    return -1;
  if (!kiln_profile_enabled(self->rt)) {
    kilnpy_raise_msg(KILN_ERR_UNSUPPORTED,
                     "profile: this runtime does not record its calls; create it with "
                     "kiln.Runtime(profile=True) (or KILN_PROFILE=1 in the environment)");
    return -1;
  }
  return 0;
}

PyObject *kilnpy_profile_reset(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (profiling(self) < 0)
    return NULL;
  kiln_status s = kiln_profile_reset(self->rt);
  return s == KILN_OK ? Py_NewRef(Py_None) : kilnpy_raise(s, self->rt);
}

/* kiln_profile_report() writes to a FILE: a temporary file, read back. */
PyObject *kilnpy_profile_table(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (profiling(self) < 0)
    return NULL;
  FILE *f = tmpfile();
  if (!f)
    return PyErr_SetFromErrno(PyExc_OSError);
  kiln_status s;
  kilnpy_call_begin(self);
  Py_BEGIN_ALLOW_THREADS;
  s = kiln_finish(self->rt);
  if (s == KILN_OK)
    s = kiln_profile_report(self->rt, f);
  Py_END_ALLOW_THREADS;
  PyObject *out = NULL;
  if (s != KILN_OK) {
    kilnpy_raise(s, self->rt);
  } else {
    long n = ftell(f);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    rewind(f);
    if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
      out = PyUnicode_DecodeUTF8(text, n, "replace");
    else
      PyErr_SetString(PyExc_OSError, "profile: the table could not be read back");
    free(text);
  }
  fclose(f);
  kilnpy_call_end(self);
  return out;
}

static const char *kind_name(kiln_profile_kind k)
{
  switch (k) {
  case KILN_PROFILE_CALL: return "call";
  case KILN_PROFILE_BUILD: return "build";
  case KILN_PROFILE_LOAD: return "load";
  case KILN_PROFILE_BENCHMARK: return "benchmark";
  }
  return "other";
}

PyObject *kilnpy_profile_rows(kilnpy_runtime *self, PyObject *unused)
{
  (void)unused;
  if (profiling(self) < 0)
    return NULL;
  size_t n = 0;
  kiln_status s = kiln_finish(self->rt);
  if (s == KILN_OK)
    s = kiln_profile_rows(self->rt, NULL, 0, &n);
  kiln_profile_row *rows = s == KILN_OK ? calloc(n ? n : 1, sizeof *rows) : NULL;
  if (s == KILN_OK && !rows)
    return PyErr_NoMemory();
  if (rows) {
    kiln_profile_row_init(&rows[0]);
    size_t cap = n;
    s = kiln_profile_rows(self->rt, rows, cap, &n);
    n = n < cap ? n : cap;
  }
  PyObject *list = s == KILN_OK ? PyList_New((Py_ssize_t)n) : NULL;
  if (s != KILN_OK)
    kilnpy_raise(s, self->rt);
  for (size_t i = 0; list && i < n; i++) {
    const kiln_profile_row *r = &rows[i];
    PyObject *d = Py_BuildValue(
      "{sssssssKsKsKsKsKsKsKsdsdsd}", "op", r->op, "backend", r->backend, "kind",
      kind_name(r->kind), "calls", (unsigned long long)r->calls, "total_ns",
      (unsigned long long)r->total_ns, "min_ns", (unsigned long long)r->min_ns, "max_ns",
      (unsigned long long)r->max_ns, "host_ns", (unsigned long long)r->host_ns, "flops",
      (unsigned long long)r->flops, "bytes", (unsigned long long)r->bytes, "gflops",
      r->gflops, "gbps", r->gbps, "percent", r->percent);
    if (!d)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, d);
  }
  free(rows);
  return list;
}
