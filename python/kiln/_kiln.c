/* The kiln module's C part: types, errors and the module's functions. The
 * package's __init__.py re-exports it as `kiln`. */
#define KILNPY_MAIN
#include "kilnpy.h"

static PyMethodDef module_methods[] = {
  {"devices", kilnpy_devices, METH_NOARGS,
   "devices() -> list of dict: every OpenCL device found, as `kiln info --json` "
   "describes it, with kiln's rank reasons."},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
  PyModuleDef_HEAD_INIT,
  "kiln._kiln",
  "kiln's runtime from Python: numpy in, numpy out.",
  -1,
  module_methods,
  NULL,
  NULL,
  NULL,
  NULL,
};

static int add_type(PyObject *m, const char *name, PyTypeObject *type)
{
  if (PyType_Ready(type) < 0)
    return -1;
  Py_INCREF(type);
  if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}

PyMODINIT_FUNC PyInit__kiln(void);
PyMODINIT_FUNC PyInit__kiln(void)
{
  import_array();
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  if (add_type(m, "Runtime", &kilnpy_runtime_type) < 0 ||
      add_type(m, "DeviceArray", &kilnpy_array_type) < 0 ||
      kilnpy_stream_types_add(m) < 0 || kilnpy_kernel_types_add(m) < 0 ||
      kilnpy_errors_add(m) < 0 ||
      PyModule_AddStringConstant(m, "kiln_version", kiln_version()) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
