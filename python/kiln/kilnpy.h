/* The Python module's shared declarations: kiln's runtime, device arrays and
 * errors as Python objects. Every file of the module includes this first
 * (Python.h must precede the system headers). */
#ifndef KILNPY_H
#define KILNPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
/* One numpy API table for the module's files: _kiln.c imports it, the
 * others use it (NO_IMPORT_ARRAY). */
#define PY_ARRAY_UNIQUE_SYMBOL kilnpy_ARRAY_API
#ifndef KILNPY_MAIN
#  define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <kiln/kiln.h>

/* kiln.Runtime. The runtime is destroyed when it is closed and nothing
 * still needs it: no device array alive (each holds a buffer of it) and no
 * call running on another thread with the GIL released. */
typedef struct kilnpy_runtime {
  PyObject_HEAD kiln_runtime *rt;
  int closed;
  Py_ssize_t arrays; /* device arrays, streams and events alive */
  Py_ssize_t calls;  /* calls running without the GIL */
} kilnpy_runtime;

/* kiln.DeviceArray: a C-order array in one kiln buffer, or a view of part
 * of another's (kiln_buffer_view: a contiguous range). An empty array holds
 * a buffer of one element, as kiln has no empty buffers. */
typedef struct kilnpy_array {
  PyObject_HEAD kilnpy_runtime *owner;
  kiln_buffer *buf;
  PyObject *base; /* a view: the array whose buffer buf views (kept alive, as
                     kiln destroys a view before its buffer); else NULL */
  int ndim;
  npy_intp shape[KILN_ARRAY_MAX_DIMS];
  int typenum;    /* numpy's type number */
  kiln_dtype kdt; /* kiln's */
  size_t count;   /* elements, 0 for an empty array */
} kilnpy_array;

extern PyTypeObject kilnpy_runtime_type;
extern PyTypeObject kilnpy_array_type;
#define kilnpy_is_array(o) PyObject_TypeCheck((o), &kilnpy_array_type)

/* errors.c */
int kilnpy_errors_add(PyObject *module);
/* Raises the class of status with kiln_last_error(rt) as the message; NULL. */
PyObject *kilnpy_raise(kiln_status status, const kiln_runtime *rt);
/* Raises the class of status with a message of the module's own; NULL. */
PyObject *kilnpy_raise_msg(kiln_status status, const char *fmt, ...);

/* runtime.c */
/* 0 when the runtime can take a call; -1 with kiln.Error set when closed. */
int kilnpy_runtime_check(kilnpy_runtime *self);
/* Around each call made without the GIL: the runtime stays alive. */
void kilnpy_call_begin(kilnpy_runtime *self);
void kilnpy_call_end(kilnpy_runtime *self);
/* Destroys the runtime once closed and unused. */
void kilnpy_runtime_release(kilnpy_runtime *self);
PyObject *kilnpy_device_dict(const kiln_device_info *info);
PyObject *kilnpy_devices(PyObject *module, PyObject *unused);

/* array.c */
/* kiln's dtype for a numpy type number, 0 when kiln has none. */
kiln_dtype kilnpy_kiln_dtype(int typenum);
/* A C-contiguous, aligned, native-order numpy array of obj (a new
 * reference), refusing with TypeError a type kiln has no dtype for. */
PyArrayObject *kilnpy_numpy_in(PyObject *obj, const char *what);
/* A new device array of the shape and type, its buffer uninitialised (or
 * zeroed with KILN_BUFFER_ZERO). */
kilnpy_array *kilnpy_array_new(kilnpy_runtime *owner, int ndim, const npy_intp *shape,
                               int typenum, unsigned flags);
/* obj as a device array of owner: itself (a new reference) when it is one,
 * else a copy of its numpy form. */
kilnpy_array *kilnpy_array_of(kilnpy_runtime *owner, PyObject *obj, const char *what);
PyObject *kilnpy_array_numpy(kilnpy_array *self);
/* A view of count(shape) elements of base from offset (no copy); an empty
 * shape gets an array of its own. */
kilnpy_array *kilnpy_array_view(kilnpy_array *base, size_t offset, int ndim,
                                const npy_intp *shape);

/* views.c */
extern PyMappingMethods kilnpy_array_mapping;
PyObject *kilnpy_runtime_array(kilnpy_runtime *self, PyObject *obj);
/* numpy's type number for a kiln dtype. */
int kilnpy_numpy_type(kiln_dtype d);

/* One input of an operation: its numpy form (host path) or device form;
 * all zero for None. */
typedef struct kilnpy_operand {
  PyArrayObject *np;
  kilnpy_array *dev;
  int ndim;
  const npy_intp *shape;
  int typenum;
} kilnpy_operand;
/* obj as a device array of rt (on_device) or a C-order numpy array; None
 * leaves op zeroed. */
int kilnpy_operand_load(kilnpy_runtime *rt, PyObject *obj, int on_device,
                        const char *what, kilnpy_operand *op);
void kilnpy_operand_clear(kilnpy_operand *op);

/* gemm.c */
PyObject *kilnpy_gemm(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);

/* reduce.c */
PyObject *kilnpy_reduce(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);

/* conv.c */
PyObject *kilnpy_conv2d(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);
PyObject *kilnpy_convert(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);
/* x (numpy or a device array) converted on the device to dtype. */
PyObject *kilnpy_convert_to(kilnpy_runtime *self, PyObject *x, PyObject *dtype);
/* None or an activation's name; -1 with kiln.InvalidArgumentError set. */
int kilnpy_activation(PyObject *o, kiln_activation *act);

/* profile.c */
PyObject *kilnpy_profile_reset(kilnpy_runtime *self, PyObject *unused);
PyObject *kilnpy_profile_table(kilnpy_runtime *self, PyObject *unused);
PyObject *kilnpy_profile_rows(kilnpy_runtime *self, PyObject *unused);

/* stream.c */
int kilnpy_stream_types_add(PyObject *module);
PyObject *kilnpy_stream_new(kilnpy_runtime *self, PyObject *unused);
PyObject *kilnpy_event_record(kilnpy_runtime *self, PyObject *unused);
PyObject *kilnpy_wait_event(kilnpy_runtime *self, PyObject *event);

/* tune.c */
PyObject *kilnpy_tune(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);

/* fft.c */
PyObject *kilnpy_fft(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);

/* kernels.c */
int kilnpy_kernel_types_add(PyObject *module);
PyObject *kilnpy_program_new(kilnpy_runtime *self, PyObject *args, PyObject *kwargs);
PyObject *kilnpy_elementwise_new(kilnpy_runtime *self, PyObject *args);
PyObject *kilnpy_runtime_empty(kilnpy_runtime *self, PyObject *args);

#endif
