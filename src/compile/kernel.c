/*
 * kernel.c — the caller's kernels: arguments and launches, and the one path
 * by which every kiln kernel reaches the queue (kiln__enqueue).
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "compile/kernel.h"
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "core/stream.h"
#include "profile/profile.h"

/* What a kernel declares of one argument, from clGetKernelArgInfo: the
 * caller's programs are built with -cl-kernel-arg-info (program.c). A
 * driver that kept no such information (a binary from some caches) leaves
 * name and type empty, and only the argument count is checked. */
typedef struct kernel_arg {
  char name[64], type[64]; /* "x", "float*" */
  cl_kernel_arg_address_qualifier addr;
  size_t size; /* a scalar's or vector's bytes; 0: not known */
  int set;     /* set since the kernel was made */
} kernel_arg;

struct kiln_kernel {
  kiln_runtime *rt;
  cl_kernel kernel;
  char *name;
  cl_uint nargs;
  int info; /* args[] hold names and types */
  kernel_arg *args;
};

/* The bytes of an OpenCL C scalar or vector type named type ("float4"), 0
 * for another (a struct, an image). */
static size_t type_size(const char *type)
{
  static const struct {
    const char *name;
    size_t size;
  } scalars[] = {{"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2},
                 {"half", 2}, {"int", 4},   {"uint", 4},  {"float", 4},
                 {"long", 8}, {"ulong", 8}, {"double", 8}};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    size_t n = strlen(scalars[i].name);
    if (strncmp(type, scalars[i].name, n))
      continue;
    const char *rest = type + n;
    if (!*rest)
      return scalars[i].size;
    char *end;
    long lanes = strtol(rest, &end, 10);
    if (*end || (lanes != 2 && lanes != 3 && lanes != 4 && lanes != 8 && lanes != 16))
      continue;
    return scalars[i].size * (size_t)(lanes == 3 ? 4 : lanes);
  }
  return 0;
}

/* Reads what k declares of its arguments into kk. 0 when out of memory. */
static int read_args(kiln_kernel *kk)
{
  if (clGetKernelInfo(kk->kernel, CL_KERNEL_NUM_ARGS, sizeof kk->nargs, &kk->nargs,
                      NULL) != CL_SUCCESS)
    kk->nargs = 0;
  kk->args = calloc(kk->nargs ? kk->nargs : 1, sizeof *kk->args);
  if (!kk->args)
    return 0;
  kk->info = kk->nargs > 0;
  for (cl_uint i = 0; i < kk->nargs && kk->info; i++) {
    kernel_arg *a = &kk->args[i];
    kk->info = clGetKernelArgInfo(kk->kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                                  sizeof a->addr, &a->addr, NULL) == CL_SUCCESS &&
               clGetKernelArgInfo(kk->kernel, i, CL_KERNEL_ARG_NAME, sizeof a->name,
                                  a->name, NULL) == CL_SUCCESS &&
               clGetKernelArgInfo(kk->kernel, i, CL_KERNEL_ARG_TYPE_NAME, sizeof a->type,
                                  a->type, NULL) == CL_SUCCESS;
    a->size = a->addr == CL_KERNEL_ARG_ADDRESS_PRIVATE ? type_size(a->type) : 0;
  }
  if (!kk->info)
    memset(kk->args, 0, kk->nargs * sizeof *kk->args);
  return 1;
}

/* "argument 2 (y: __global float*)", or "argument 2" without the kernel's
 * information. */
static const char *arg_text(const kiln_kernel *k, unsigned i, char *buf, size_t size)
{
  static const char *const space[] = {"__global ", "__local ", "__constant ", ""};
  if (!k->info || i >= k->nargs) {
    snprintf(buf, size, "argument %u", i);
    return buf;
  }
  const kernel_arg *a = &k->args[i];
  unsigned s = a->addr == CL_KERNEL_ARG_ADDRESS_GLOBAL     ? 0
               : a->addr == CL_KERNEL_ARG_ADDRESS_LOCAL    ? 1
               : a->addr == CL_KERNEL_ARG_ADDRESS_CONSTANT ? 2
                                                           : 3;
  snprintf(buf, size, "argument %u (%s: %s%s)", i, a->name, space[s], a->type);
  return buf;
}

/* The kernel's arguments, "a, x, y, n", for messages. */
static void arg_list(const kiln_kernel *k, kiln__str *out)
{
  for (cl_uint i = 0; i < k->nargs && k->info; i++)
    kiln__str_appendf(out, "%s%s", i ? ", " : "", k->args[i].name);
}

/* Index i past the kernel's arguments: the failure, or KILN_OK. */
static kiln_status check_index(const kiln_kernel *k, const char *fn, unsigned i)
{
  if (i < k->nargs)
    return KILN_OK;
  kiln__str names = {0};
  arg_list(k, &names);
  kiln_status st =
    kiln__fail(k->rt, KILN_ERR_INVALID_ARGUMENT,
               "%s: argument %u of %s, which takes %u argument%s%s%s%s", fn, i, k->name,
               k->nargs, k->nargs == 1 ? "" : "s", k->info ? " (" : "",
               kiln__str_get(&names), k->info ? ")" : "");
  kiln__str_free(&names);
  return st;
}

/* Whether argument i is a pointer to __global or __constant memory. */
static int is_buffer_arg(const kernel_arg *a)
{
  return a->addr == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
         a->addr == CL_KERNEL_ARG_ADDRESS_CONSTANT;
}

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
  if (!read_args(kk)) {
    free(kk);
    free(copy);
    clReleaseKernel(k);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  }
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
  free(kernel->args);
  free(kernel->name);
  free(kernel);
  return KILN_OK;
}

/* Checks a value of `size` bytes (NULL value: local memory) for argument
 * i against its declaration; fn names the caller, `given` what it gave. */
static kiln_status check_value(const kiln_kernel *k, const char *fn, unsigned i,
                               size_t size, const void *value, const char *given)
{
  kiln_status st = check_index(k, fn, i);
  if (st != KILN_OK || !k->info)
    return st;
  const kernel_arg *a = &k->args[i];
  char what[200];
  arg_text(k, i, what, sizeof what);
  const char *why = NULL, *expected = NULL;
  if (a->addr == CL_KERNEL_ARG_ADDRESS_LOCAL && value)
    why = "a value", expected = "NULL and the bytes of local memory to give it";
  else if (a->addr != CL_KERNEL_ARG_ADDRESS_LOCAL && !value)
    why = "local memory (a NULL value)", expected = "a value";
  else if (is_buffer_arg(a) && size != sizeof(cl_mem))
    why = given, expected = "a buffer (kiln_kernel_set_buffer(), or 'b')";
  else if (a->size && size != a->size) {
    return kiln__fail(k->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s of %s: given %s of %zu bytes; expected the %zu bytes of "
                      "a %s",
                      fn, what, k->name, given, size, a->size, a->type);
  }
  if (!why)
    return KILN_OK;
  return kiln__fail(k->rt, KILN_ERR_INVALID_ARGUMENT,
                    "%s: %s of %s: given %s; expected %s", fn, what, k->name, why,
                    expected);
}

/* clSetKernelArg for argument i, checked before; marks it set. */
static kiln_status set_checked(kiln_kernel *k, const char *fn, unsigned i, size_t size,
                               const void *value)
{
  cl_int err = clSetKernelArg(k->kernel, i, size, value);
  if (err != CL_SUCCESS) {
    char what[200];
    return kiln__fail_cl(k->rt, err, "clSetKernelArg",
                         "%s: %s of %s (%zu bytes%s); expected the size of its type", fn,
                         arg_text(k, i, what, sizeof what), k->name, size,
                         value ? "" : ", local memory");
  }
  k->args[i].set = 1;
  return KILN_OK;
}

KILN_API kiln_status kiln_kernel_set_arg(kiln_kernel *kernel, unsigned index, size_t size,
                                         const void *value)
{
  static const char fn[] = "kiln_kernel_set_arg";
  if (!kernel)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: kernel is NULL; expected a kernel from kiln_kernel_create()",
                      fn);
  kiln_status st = check_value(kernel, fn, index, size, value, "raw bytes");
  return st == KILN_OK ? set_checked(kernel, fn, index, size, value) : st;
}

/* kiln_kernel_set_buffer() for the caller fn; with `root`, a view's
 * buffer's memory (the kernel adds the view's offset itself). */
static kiln_status set_buffer(kiln_kernel *kernel, const char *fn, unsigned index,
                              const kiln_buffer *buffer, int root)
{
  kiln_status st = check_index(kernel, fn, index);
  if (st != KILN_OK)
    return st;
  char what[200];
  arg_text(kernel, index, what, sizeof what);
  if (!buffer)
    return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s of %s: buffer is NULL", fn, what, kernel->name);
  if (kiln_buffer_runtime(buffer) != kernel->rt)
    return kiln__fail(kernel->rt, KILN_ERR_WRONG_RUNTIME,
                      "%s: %s of %s is a buffer of another runtime; expected one of the "
                      "kernel's runtime",
                      fn, what, kernel->name);
  if (buffer->mapped)
    return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s of %s is mapped into host memory (kiln_buffer_map()); "
                      "expected kiln_buffer_unmap() before the device uses it",
                      fn, what, kernel->name);
  if (kernel->info && !is_buffer_arg(&kernel->args[index]))
    return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s of %s: given a buffer (%zu %s); expected %s", fn, what,
                      kernel->name, kiln_buffer_count(buffer),
                      kiln_dtype_name(kiln_buffer_dtype(buffer)),
                      kernel->args[index].addr == CL_KERNEL_ARG_ADDRESS_LOCAL
                        ? "local memory (kiln_kernel_set_arg() with a NULL value)"
                        : "a value of its type");
  cl_mem mem = kiln__buffer_mem(buffer);
  /* else a view's sub-buffer: the user's kernel sees its element 0 at 0 */
  st = root ? KILN_OK : kiln__buffer_cl_mem(buffer, fn, &mem);
  return st != KILN_OK ? st : set_checked(kernel, fn, index, sizeof mem, &mem);
}

KILN_API kiln_status kiln_kernel_set_buffer(kiln_kernel *kernel, unsigned index,
                                            const kiln_buffer *buffer)
{
  if (!kernel)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_kernel_set_buffer: kernel is NULL; expected a kernel from "
                      "kiln_kernel_create()");
  return set_buffer(kernel, "kiln_kernel_set_buffer", index, buffer, 0);
}

kiln_status kiln__kernel_set_root(kiln_kernel *k, const char *fn, unsigned i,
                                  const kiln_buffer *buffer)
{
  return set_buffer(k, fn, i, buffer, 1);
}

kiln_status kiln__kernel_set_one(kiln_kernel *k, const char *fn, unsigned i, char c,
                                 va_list *ap, const kiln_buffer **buffer)
{
  static const char letters[] = "fdiulLz", *const types[] = {"float", "double", "int",
                                                             "uint",  "long",   "ulong",
                                                             "ulong"};
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
  case 'b':
    *buffer = va_arg(*ap, const kiln_buffer *);
    return set_buffer(k, fn, i, *buffer, 0);
  case 'f': v.f = (float)va_arg(*ap, double), size = sizeof v.f; break;
  case 'd': v.d = va_arg(*ap, double), size = sizeof v.d; break;
  case 'i': v.i32 = va_arg(*ap, int32_t), size = sizeof v.i32; break;
  case 'u': v.u32 = va_arg(*ap, uint32_t), size = sizeof v.u32; break;
  case 'l': v.i64 = va_arg(*ap, int64_t), size = sizeof v.i64; break;
  case 'L': v.u64 = va_arg(*ap, uint64_t), size = sizeof v.u64; break;
  case 'z': v.u64 = va_arg(*ap, size_t), size = sizeof v.u64; break;
  default:
    return kiln__fail(k->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: argument %u of %s has format letter '%c'; expected one of b f "
                      "d i u l L z",
                      fn, i, k->name, c);
  }
  const char *type = types[strchr(letters, c) - letters];
  kiln_status st = check_index(k, fn, i);
  if (st == KILN_OK && k->info && k->args[i].addr == CL_KERNEL_ARG_ADDRESS_PRIVATE &&
      k->args[i].size && strcmp(k->args[i].type, type)) {
    char what[200], hint[64] = "a value of its type (kiln_kernel_set_arg())";
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
      if (!strcmp(types[t], k->args[i].type)) {
        snprintf(hint, sizeof hint, "'%c'", letters[t]);
        break;
      }
    return kiln__fail(k->rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s of %s: format letter '%c' gives a %s; expected %s", fn,
                      arg_text(k, i, what, sizeof what), k->name, c, type, hint);
  }
  if (st == KILN_OK)
    st = check_value(k, fn, i, size, &v, type);
  /* Every member of v starts at its first byte. */
  return st == KILN_OK ? set_checked(k, fn, i, size, &v) : st;
}

KILN_API kiln_status kiln_kernel_set_args(kiln_kernel *kernel, const char *format, ...)
{
  if (!kernel || !format)
    return kiln__fail(kernel ? kernel->rt : NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_kernel_set_args: %s is NULL", !kernel ? "kernel" : "format");
  va_list ap;
  va_start(ap, format);
  kiln_status st = KILN_OK;
  const kiln_buffer *buffer;
  for (unsigned i = 0; format[i] && st == KILN_OK; i++)
    st = kiln__kernel_set_one(kernel, "kiln_kernel_set_args", i, format[i], &ap, &buffer);
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
    clEnqueueNDRangeKernel(kiln__queue(rt), k, dims, NULL, global, local, 0, NULL, &ev);
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
  for (cl_uint i = 0; i < kernel->nargs; i++)
    if (!kernel->args[i].set) {
      char what[200];
      return kiln__fail(kernel->rt, KILN_ERR_INVALID_ARGUMENT,
                        "%s: %s of %s is not set; expected every argument set "
                        "(kiln_kernel_set_arg*()) before the launch",
                        fn, arg_text(kernel, i, what, sizeof what), kernel->name);
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
