/* kiln.Error and one subclass per kiln status, made from KILN_STATUS_MAP so
 * that a status added to kiln.h gets its class without an edit here. */
#include "kilnpy.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KILNPY_XX(name, code, text) KILN_##name,
static const kiln_status statuses[] = {KILN_STATUS_MAP(KILNPY_XX)};
#undef KILNPY_XX
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

static PyObject *error_base;
static PyObject *classes[N_STATUSES];

/* Python's own exception each status also is, so that `except ValueError`
 * catches a bad argument as it would from numpy. */
static PyObject *builtin_base(kiln_status s)
{
  switch (s) {
  case KILN_ERR_INVALID_ARGUMENT:
  case KILN_ERR_OUT_OF_BOUNDS:
  case KILN_ERR_INVALID_DEVICE_SELECTOR: return PyExc_ValueError;
  case KILN_ERR_INVALID_DTYPE: return PyExc_TypeError;
  case KILN_ERR_OUT_OF_MEMORY: return PyExc_MemoryError;
  case KILN_ERR_OVERFLOW: return PyExc_OverflowError;
  default: return NULL;
  }
}

/* Classes whose name from the status would shadow a builtin of Python's
 * (`from kiln import *` would hide it): their own name. */
static const struct {
  kiln_status status;
  const char *name;
} renamed[] = {
  {KILN_ERR_OVERFLOW, "SizeOverflowError"}, /* not builtins.OverflowError */
};

/* "ERR_OUT_OF_MEMORY" -> "OutOfMemoryError". */
static void class_name(kiln_status s, char *buf, size_t size)
{
  for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++) {
    if (renamed[i].status == s) {
      snprintf(buf, size, "%s", renamed[i].name);
      return;
    }
  }
  const char *name = kiln_status_name(s);
  size_t n = 0;
  int upper = 1;
  if (strncmp(name, "ERR_", 4) == 0)
    name += 4;
  for (; *name && n + 6 < size; name++) {
    if (*name == '_') {
      upper = 1;
      continue;
    }
    buf[n++] =
      (char)(upper ? toupper((unsigned char)*name) : tolower((unsigned char)*name));
    upper = 0;
  }
  memcpy(buf + n, "Error", 6);
}

static PyObject *class_bases(kiln_status s)
{
  PyObject *first = error_base, *extra = builtin_base(s);
  if (s == KILN_ERR_OUT_OF_HOST_MEMORY) { /* an OutOfMemoryError too */
    for (size_t i = 0; i < N_STATUSES; i++)
      if (statuses[i] == KILN_ERR_OUT_OF_MEMORY)
        first = classes[i];
  }
  return extra ? PyTuple_Pack(2, first, extra) : PyTuple_Pack(1, first);
}

static int add_class(PyObject *module, size_t i)
{
  char name[80], qualified[96];
  kiln_status s = statuses[i];
  class_name(s, name, sizeof name);
  snprintf(qualified, sizeof qualified, "kiln.%s", name);
  PyObject *bases = class_bases(s);
  PyObject *dict =
    Py_BuildValue("{siss}", "status", (int)s, "status_name", kiln_status_name(s));
  PyObject *cls =
    bases && dict
      ? PyErr_NewExceptionWithDoc(qualified, kiln_status_string(s), bases, dict)
      : NULL;
  Py_XDECREF(bases);
  Py_XDECREF(dict);
  if (!cls)
    return -1;
  classes[i] = cls;
  Py_INCREF(cls);
  return PyModule_AddObject(module, name, cls) < 0 ? (Py_DECREF(cls), -1) : 0;
}

int kilnpy_errors_add(PyObject *module)
{
  error_base = PyErr_NewExceptionWithDoc(
    "kiln.Error",
    "Every failure kiln reports; its subclasses, one per kiln status, carry "
    "kiln's message and the status (the class attributes status and status_name).",
    PyExc_RuntimeError, NULL);
  if (!error_base)
    return -1;
  Py_INCREF(error_base);
  if (PyModule_AddObject(module, "Error", error_base) < 0)
    return -1;
  /* OUT_OF_MEMORY before OUT_OF_HOST_MEMORY, which derives from it. */
  for (size_t i = 0; i < N_STATUSES; i++)
    if (statuses[i] != KILN_OK && add_class(module, i) < 0)
      return -1;
  return 0;
}

static PyObject *class_of(kiln_status s)
{
  for (size_t i = 0; i < N_STATUSES; i++)
    if (statuses[i] == s && classes[i])
      return classes[i];
  return error_base;
}

PyObject *kilnpy_raise(kiln_status status, const kiln_runtime *rt)
{
  const char *msg = kiln_last_error(rt);
  PyErr_SetString(class_of(status), msg[0] ? msg : kiln_status_string(status));
  return NULL;
}

PyObject *kilnpy_raise_msg(kiln_status status, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  PyErr_SetString(class_of(status), msg);
  return NULL;
}
