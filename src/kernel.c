/*
 * kernel.c — the caller's kernels: arguments and launches, and the one path
 * by which every kiln kernel reaches the queue (kiln__enqueue).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "profile.h"
#include "kernel_args.h"

struct kiln_kernel {
  kiln_runtime *rt;
  cl_kernel kernel;
  char *name;
};

/* The kernels a program has, for the message when a name is not one. */
static void kernel_names(cl_program p, kiln__str *out)
{
  size_t size = 0;
  char *names = NULL;
  if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &size) == CL_SUCCESS &&
      (names = malloc(size + 1)) != NULL &&
      clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, size, names, NULL) == CL_SUCCESS) {
    names[size] = '\0';
    kiln__str_appendf(out, "%s", names);
  }
  free(names);
}

KILN_API kiln_status kiln_kernel_create(kiln_program *program, const char *name,
                                        kiln_kernel **out)
{
  static const char fn[] = "kiln_kernel_create";
  if (!program || !name || !out)
    return kiln__fail(program ? kiln__program_runtime(program) : NULL,
                      KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a program, a kernel name and the "
                      "address of a kiln_kernel pointer",
                      fn,
                      !program ? "program"
                      : !name  ? "name"
                               : "out");
  *out = NULL;
  kiln_runtime *rt = kiln__program_runtime(program);
  cl_program p = kiln__program_cl(program);
  cl_int err;
  cl_kernel k = clCreateKernel(p, name, &err);
  if (!k) {
    if (err != CL_INVALID_KERNEL_NAME)
      return kiln__fail_cl(rt, err, "clCreateKernel", "%s: creating kernel '%s'", fn,
                           name);
    kiln__str names = {0};
    kernel_names(p, &names);
    kiln_status st = kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                                "%s: the program has no kernel named '%s'; it has: %s",
                                fn, name, kiln__str_get(&names));
    kiln__str_free(&names);
    return st;
  }
  kiln_kernel *kk = calloc(1, sizeof *kk);
  char *copy = strdup(name);
  if (!kk || !copy) {
    free(kk);
    free(copy);
    clReleaseKernel(k);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  }
  *kk = (kiln_kernel){.rt = rt, .kernel = k, .name = copy};
  pthread_mutex_lock(&rt->lock);
  rt->live_kernels++;
  pthread_mutex_unlock(&rt->lock);
  *out = kk;
  return KILN_OK;
}

KILN_API kiln_status kiln_kernel_destroy(kiln_kernel *kernel)
{
  if (!kernel)
    return KILN_OK;
  clReleaseKernel(kernel->kernel);
  pthread_mutex_lock(&kernel->rt->lock);
  kernel->rt->live_kernels--;
  pthread_mutex_unlock(&kernel->rt->lock);
  free(kernel->name);
  free(kernel);
  return KILN_OK;
}

KILN_API kiln_status kiln_kernel_set_arg(kiln_kernel *kernel, unsigned index, size_t size,
                                         const void *value)
{
  if (!kernel)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_kernel_set_arg: kernel is NULL; expected a kernel from "
                      "kiln_kernel_create()");
  cl_int err = clSetKernelArg(kernel->kernel, index, size, value);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(kernel->rt, err, "clSetKernelArg",
                         "kiln_kernel_set_arg: argument %u of %s (%zu bytes%s); "
                         "expected an index below the kernel's argument count and "
                         "the size of its type",
                         index, kernel->name, size, value ? "" : ", local memory");
  return KILN_OK;
}

KILN_API kiln_status kiln_kernel_set_buffer(kiln_kernel *kernel, unsigned index,
                                            const kiln_buffer *buffer)
{
  if (kernel && buffer && kiln_buffer_runtime(buffer) != kernel->rt)
    return kiln__fail(kernel->rt, KILN_ERR_WRONG_RUNTIME,
                      "kiln_kernel_set_buffer: argument %u of %s is a buffer of "
                      "another runtime; expected one of the kernel's runtime",
                      index, kernel->name);
  if (kernel && !buffer)
    return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_kernel_set_buffer: argument %u of %s: buffer is NULL", index,
                      kernel->name);
  cl_mem mem = kiln_buffer_cl_mem(buffer);
  return kiln_kernel_set_arg(kernel, index, sizeof mem, &mem);
}

/* Sets one argument from the va_list by its format letter. */
static kiln_status set_one(kiln_kernel *k, unsigned i, char c, va_list *ap)
{
  union {
    float f;
    double d;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
  } v;
  size_t size;
  switch (c) {
  case 'b': return kiln_kernel_set_buffer(k, i, va_arg(*ap, const kiln_buffer *));
  case 'f': v.f = (float)va_arg(*ap, double), size = sizeof v.f; break;
  case 'd': v.d = va_arg(*ap, double), size = sizeof v.d; break;
  case 'i': v.i32 = va_arg(*ap, int32_t), size = sizeof v.i32; break;
  case 'u': v.u32 = va_arg(*ap, uint32_t), size = sizeof v.u32; break;
  case 'l': v.i64 = va_arg(*ap, int64_t), size = sizeof v.i64; break;
  case 'L': v.u64 = va_arg(*ap, uint64_t), size = sizeof v.u64; break;
  case 'z': v.u64 = va_arg(*ap, size_t), size = sizeof v.u64; break;
  default:
    return kiln__fail(k->rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_kernel_set_args: argument %u of %s has format letter "
                      "'%c'; expected one of b f d i u l L z",
                      i, k->name, c);
  }
  /* Every member of v starts at its first byte. */
  return kiln_kernel_set_arg(k, i, size, &v);
}

KILN_API kiln_status kiln_kernel_set_args(kiln_kernel *kernel, const char *format, ...)
{
  if (!kernel || !format)
    return kiln__fail(kernel ? kernel->rt : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_kernel_set_args: %s is NULL", !kernel ? "kernel" : "format");
  va_list ap;
  va_start(ap, format);
  kiln_status st = KILN_OK;
  for (unsigned i = 0; format[i] && st == KILN_OK; i++)
    st = set_one(kernel, i, format[i], &ap);
  va_end(ap);
  return st;
}

/* Enqueues an NDRange on the runtime's queue and tracks its event; `what`
 * (static text) names the caller for messages, `name` the kernel for the
 * profiler. local may be NULL. */
static kiln_status kiln__enqueue(kiln_runtime *rt, const char *what, const char *name,
                                 cl_kernel k, cl_uint dims, const size_t *global,
                                 const size_t *local)
{
  cl_event ev = NULL;
  cl_int err =
    clEnqueueNDRangeKernel(rt->queue, k, dims, NULL, global, local, 0, NULL, &ev);
  if (err != CL_SUCCESS)
    return kiln__fail_cl(rt, err, "clEnqueueNDRangeKernel", "%s: launching %s", what,
                         name);
  return kiln__runtime_track_as(rt, ev, what, name);
}

/* Sets argument i of k, whose value is at `value` in the C type of its
 * kind (kernel_args.h); a real comes as a double, and goes as the float or
 * double that variant v makes it. */
static cl_int set_declared(cl_kernel k, cl_uint i, const kiln__kernel_variant *v,
                           const kiln__kernel_arg *a, int has_fp64, const void *value)
{
  static const size_t size[] = {
    [KILN__ARG_GLOBAL] = sizeof(cl_mem),  [KILN__ARG_GLOBAL_CONST] = sizeof(cl_mem),
    [KILN__ARG_UINT] = sizeof(cl_uint),   [KILN__ARG_INT] = sizeof(cl_int),
    [KILN__ARG_ULONG] = sizeof(cl_ulong),
  };
  if (a->kind != KILN__ARG_REAL)
    return clSetKernelArg(k, i, size[a->kind], value);
  cl_double d = *(const double *)value;
  const char *type = kiln__kernel_arg_type(v, a, has_fp64);
  assert(type && (!strcmp(type, "float") || !strcmp(type, "double")));
  if (!strcmp(type, "double"))
    return clSetKernelArg(k, i, sizeof d, &d);
  cl_float f = (cl_float)d;
  return clSetKernelArg(k, i, sizeof f, &f);
}

kiln_status kiln__launch(const kiln__kernel_decl *d, kiln_runtime *rt, const char *what,
                         const char *variant, cl_uint dims, const size_t *global,
                         const size_t *local, const void *const *values)
{
  char name[64];
  snprintf(name, sizeof name, "kiln_%s_%s", d->family, variant);
  const kiln__kernel_variant *v = kiln__kernel_variant_find(d, variant);
  if (!v)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: cl/kernels.def declares no kernel %s in cl/%s.cl", what, name,
                      d->program);
  cl_kernel k;
  kiln_status st = kiln__builtin_kernel(rt, d->program, name, &k);
  if (st != KILN_OK)
    return st;
  int has_fp64 = kiln__runtime_device(rt)->info.has_fp64;
  cl_int err = CL_SUCCESS;
  cl_uint i = 0;
  for (; i < d->nargs && err == CL_SUCCESS; i++)
    err = set_declared(k, i, v, &d->args[i], has_fp64, values[i]);
  st = err == CL_SUCCESS
         ? kiln__enqueue(rt, what, name, k, dims, global, local)
         : kiln__fail_cl(rt, err, "clSetKernelArg", "%s: argument %u (%s) of %s", what,
                         i - 1, d->args[i - 1].name, name);
  clReleaseKernel(k);
  return st;
}

/* "1024x768 local 16x16": a launch's sizes, for the profiler. */
static const char *range_text(unsigned dims, const size_t *global, const size_t *local,
                              char *buf, size_t size)
{
  size_t at = 0;
  for (unsigned d = 0; d < dims && at < size; d++)
    at += (size_t)snprintf(buf + at, size - at, "%s%zu", d ? "x" : "", global[d]);
  for (unsigned d = 0; local && d < dims && at < size; d++)
    at += (size_t)snprintf(buf + at, size - at, "%s%zu", d ? "x" : " local ", local[d]);
  return buf;
}

KILN_API kiln_status kiln_kernel_launch(kiln_kernel *kernel, unsigned dims,
                                        const size_t *global, const size_t *local)
{
  static const char fn[] = "kiln_kernel_launch";
  if (!kernel || !global)
    return kiln__fail(kernel ? kernel->rt : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL", fn, !kernel ? "kernel" : "global");
  if (dims < 1 || dims > 3)
    return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s with %u dimensions; expected 1, 2 or 3", fn, kernel->name,
                      dims);
  for (unsigned d = 0; d < dims; d++) {
    if (global[d] == 0)
      return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                        "%s: %s: global size 0 in dimension %u; expected at least 1", fn,
                        kernel->name, d);
    if (local && (local[d] == 0 || global[d] % local[d] != 0))
      return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                        "%s: %s: global size %zu is not a multiple of local size "
                        "%zu in dimension %u; expected global sizes that local "
                        "sizes divide, or local = NULL for the driver's choice",
                        fn, kernel->name, global[d], local[d], d);
  }
  kiln__profile_scope ps;
  char shape[64];
  kiln__profile_begin(kernel->rt, &ps, kernel->name);
  kiln__profile_describe(&ps, "user", 0, 0, "%s",
                         range_text(dims, global, local, shape, sizeof shape));
  kiln_status st =
    kiln__enqueue(kernel->rt, fn, kernel->name, kernel->kernel, dims, global, local);
  return kiln__profile_end(&ps, st);
}
