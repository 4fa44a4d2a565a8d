/*
 * elementwise.c — kernels written as an expression over named buffers and
 * scalars, in the spirit of PyOpenCL's ElementwiseKernel and ArrayFire's
 * JIT: kiln_elementwise_create(rt, "float *y, const float *x, float a",
 * "y = max(a * x, 0)") generates
 *
 *   kernel void kiln_elementwise(global float *y, global const float *x,
 *                                float a, ulong n, ulong kiln_view0,
 *                                ulong kiln_view1)
 *   { y += kiln_view0; x += kiln_view1;
 *     size_t i = get_global_id(0); if (i < n) { y[i] = max(a * x[i], 0.0f); } }
 *
 * builds it through kiln_program_create() (so through the binary cache: a
 * second process loads it) and runs it over any length with the arguments'
 * values. The expression is OpenCL C: one or more statements over index i.
 * In it a buffer's name alone stands for its element i (the short form);
 * written with an index (x[i + 1]) it is left as it is. In the short form,
 * which has no element type of its own, integer literals become literals of
 * the first buffer's element type, so that max(v, 0) compiles for floats.
 * Each buffer comes as its memory and its first element (kiln_view<k>, for
 * the kth buffer): a view is its buffer's memory and an offset, with no
 * OpenCL sub-buffer (buffer_view.c says why).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "compile/kernel.h"
#include "core/buffer.h"
#include "core/runtime.h"

#define EW_MAX_ARGS 16

/* One declared argument. */
typedef struct ew_arg {
  char name[64];
  char type[16];    /* "float", ... */
  int pointer;      /* a buffer of `type` */
  int is_const;     /* const-qualified pointer */
  int bare;         /* a buffer named alone in the expression: element i */
  kiln_dtype dtype; /* a buffer's element type */
} ew_arg;

struct kiln_elementwise {
  kiln_runtime *rt;
  kiln_program *program;
  kiln_kernel *kernel;
  ew_arg args[EW_MAX_ARGS];
  unsigned nargs;
  pthread_mutex_t lock; /* one run's arguments and launch at a time */
};

/* The types an argument may have: scalars, and buffers of the dtypes. */
static const struct {
  const char *name;
  kiln_dtype dtype;
  char letter; /* kiln_kernel_set_args's, for a scalar */
} types[] = {
  {"float", KILN_F32, 'f'}, {"double", KILN_F64, 'd'}, {"int", KILN_I32, 'i'},
  {"uint", 0, 'u'},         {"long", KILN_I64, 'l'},   {"ulong", 0, 'L'},
  {"float2", KILN_C32, 0},  {"double2", KILN_C64, 0},  {"half", KILN_F16, 0},
};
#define NTYPES (sizeof types / sizeof types[0])

static int type_index(const char *name)
{
  for (size_t i = 0; i < NTYPES; i++)
    if (!strcmp(types[i].name, name))
      return (int)i;
  return -1;
}

/* Parses "const float *y, float a" into ew->args; 0, or a failure. */
static kiln_status parse_args(kiln_runtime *rt, const char *decl, kiln_elementwise *ew)
{
  static const char fn[] = "kiln_elementwise_create";
  const char *p = decl;
  while (*p) {
    if (ew->nargs == EW_MAX_ARGS)
      return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                        "%s: more than %d arguments in '%s'", fn, EW_MAX_ARGS, decl);
    ew_arg *a = &ew->args[ew->nargs];
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char one[160], word[3][64];
    if (len >= sizeof one)
      return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "%s: argument %u is too long", fn,
                        ew->nargs);
    memcpy(one, p, len);
    one[len] = '\0';
    for (char *s = one; *s; s++)
      if (*s == '*') {
        a->pointer++;
        *s = ' ';
      }
    int nw = 0;
    for (char *s = strtok(one, " \t\n"); s; s = strtok(NULL, " \t\n"))
      if (nw < 3 && strlen(s) < sizeof word[0])
        strcpy(word[nw++], s);
      else
        nw = 4;
    a->is_const = nw >= 1 && !strcmp(word[0], "const");
    int t = nw == 2 + a->is_const ? type_index(word[a->is_const]) : -1;
    const char *name = nw == 2 + a->is_const ? word[1 + a->is_const] : "";
    int ok = t >= 0 && a->pointer <= 1 && (!a->is_const || a->pointer) &&
             (isalpha((unsigned char)name[0]) || name[0] == '_');
    for (const char *c = name; ok && *c; c++)
      ok = isalnum((unsigned char)*c) || *c == '_';
    ok = ok && (a->pointer ? types[t].dtype != 0 : types[t].letter != 0);
    if (!ok || !strcmp(name, "i") || !strcmp(name, "n"))
      return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                        "%s: argument %u, '%.*s', is not a declaration kiln takes; "
                        "expected [const] TYPE *NAME (a buffer of float, double, int, "
                        "long, float2, double2 or half) or TYPE NAME (a float, double, "
                        "int, uint, long or ulong), named other than i and n",
                        fn, ew->nargs, (int)len, p);
    for (unsigned j = 0; j < ew->nargs; j++)
      if (!strcmp(ew->args[j].name, name))
        return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                          "%s: two arguments are named '%s'", fn, name);
    strcpy(a->name, name);
    strcpy(a->type, types[t].name);
    a->dtype = types[t].dtype;
    ew->nargs++;
    p = end ? end + 1 : p + len;
  }
  int buffers = 0;
  for (unsigned j = 0; j < ew->nargs; j++)
    buffers += ew->args[j].pointer;
  if (buffers == 0)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: no buffer among the arguments '%s'; expected at least one, as "
                      "in \"float *y, const float *x\"",
                      fn, decl);
  return KILN_OK;
}

/* The argument named by the identifier at s (len bytes), or NULL. */
static ew_arg *arg_named(kiln_elementwise *ew, const char *s, size_t len)
{
  for (unsigned j = 0; j < ew->nargs; j++)
    if (strlen(ew->args[j].name) == len && !strncmp(ew->args[j].name, s, len))
      return &ew->args[j];
  return NULL;
}

/* The kernel's source for expr, into out; marks the buffers named alone. */
static void generate(kiln_elementwise *ew, const char *expr, kiln__str *out)
{
  const ew_arg *first = NULL;
  for (unsigned j = 0; j < ew->nargs && !first; j++)
    first = ew->args[j].pointer ? &ew->args[j] : NULL;
  const char *suffix = first && !strcmp(first->type, "float")    ? ".0f"
                       : first && !strcmp(first->type, "double") ? ".0"
                                                                 : NULL;
  int uses_half = 0;
  for (unsigned j = 0; j < ew->nargs; j++)
    uses_half |= !strcmp(ew->args[j].type, "half");
  if (uses_half)
    kiln__str_appendf(out, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
  kiln__str_appendf(out, "kernel void kiln_elementwise(");
  for (unsigned j = 0; j < ew->nargs; j++) {
    const ew_arg *a = &ew->args[j];
    kiln__str_appendf(out, "%s%s%s%s%s", j ? ", " : "", a->pointer ? "global " : "",
                      a->is_const ? "const " : "", a->type, a->pointer ? " *" : " ");
    kiln__str_appendf(out, "%s", a->name);
  }
  kiln__str_appendf(out, ", ulong n");
  unsigned views = 0;
  for (unsigned j = 0; j < ew->nargs; j++)
    if (ew->args[j].pointer)
      kiln__str_appendf(out, ", ulong kiln_view%u", views++);
  kiln__str_appendf(out, ")\n{\n");
  views = 0;
  for (unsigned j = 0; j < ew->nargs; j++)
    if (ew->args[j].pointer)
      kiln__str_appendf(out, "  %s += kiln_view%u;\n", ew->args[j].name, views++);
  kiln__str_appendf(out, "  size_t i = get_global_id(0);\n  if (i < n) {\n    ");
  /* the short form: buffer names alone become name[i], and integer
   * literals the first buffer's type */
  int indexed = strstr(expr, "[") != NULL;
  for (const char *s = expr; *s;) {
    if (isalpha((unsigned char)*s) || *s == '_') {
      const char *e = s;
      while (isalnum((unsigned char)*e) || *e == '_')
        e++;
      ew_arg *a = arg_named(ew, s, (size_t)(e - s));
      const char *after = e;
      while (*after == ' ')
        after++;
      int bare = a && a->pointer && *after != '[';
      if (bare)
        a->bare = 1;
      kiln__str_appendf(out, "%.*s%s", (int)(e - s), s, bare ? "[i]" : "");
      s = e;
    } else if (isdigit((unsigned char)*s) ||
               (*s == '.' && isdigit((unsigned char)s[1]))) {
      const char *e = s;
      while (isalnum((unsigned char)*e) || *e == '.')
        e++;
      int integer = 1;
      for (const char *c = s; c < e; c++)
        integer &= isdigit((unsigned char)*c) != 0;
      kiln__str_appendf(out, "%.*s%s", (int)(e - s), s,
                        integer && !indexed && suffix ? suffix : "");
      s = e;
    } else {
      kiln__str_appendf(out, "%c", *s++);
    }
  }
  kiln__str_appendf(out, ";\n  }\n}\n");
}

KILN_API kiln_status kiln_elementwise_create(kiln_runtime *rt, const char *args,
                                             const char *expr, kiln_elementwise **out)
{
  static const char fn[] = "kiln_elementwise_create";
  if (!rt || !args || !expr || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime, the arguments' declarations, "
                      "an expression and the address of a kiln_elementwise pointer",
                      fn,
                      !rt     ? "rt"
                      : !args ? "args"
                      : !expr ? "expr"
                              : "out");
  *out = NULL;
  kiln_elementwise *ew = calloc(1, sizeof *ew);
  if (!ew)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  ew->rt = rt;
  kiln_status st = parse_args(rt, args, ew);
  for (unsigned j = 0; st == KILN_OK && j < ew->nargs; j++)
    if (!kiln_runtime_device(rt)->has_fp64 && !strncmp(ew->args[j].type, "double", 6))
      st = kiln__no_fp64(rt, "kiln_elementwise_create", "an argument of type double");
  kiln__str src = {0};
  if (st == KILN_OK) {
    generate(ew, expr, &src);
    st = src.failed
           ? kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn)
           : kiln_program_create(rt, kiln__str_get(&src), NULL, &ew->program);
  }
  if (st == KILN_ERR_BUILD) { /* the generated source helps read the log */
    char *why = strdup(kiln_last_error(rt));
    st = kiln__fail(rt, st, "%s: the expression did not compile; the kernel was:\n%s\n%s",
                    fn, kiln__str_get(&src), why ? why : "");
    free(why);
  }
  kiln__str_free(&src);
  if (st == KILN_OK)
    st = kiln_kernel_create(ew->program, "kiln_elementwise", &ew->kernel);
  if (st == KILN_OK && pthread_mutex_init(&ew->lock, NULL) != 0)
    st = kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: creating a lock", fn);
  if (st != KILN_OK) {
    kiln_kernel_destroy(ew->kernel);
    kiln_program_destroy(ew->program);
    free(ew);
    return st;
  }
  *out = ew;
  return KILN_OK;
}

/* Sets argument j from its value: a buffer of its declared type, holding
 * n elements when the expression names it alone (element i), else at least
 * one (its indices are the expression's to keep in range); a scalar in its
 * declared type. */
static kiln_status set_arg(kiln_elementwise *ew, unsigned j, size_t n,
                           const kiln_elementwise_value *val, unsigned *views)
{
  static const char fn[] = "kiln_elementwise_run";
  const ew_arg *a = &ew->args[j];
  char what[96];
  if (!a->pointer) {
    union {
      float f;
      double d;
      int32_t i32;
      uint32_t u32;
      int64_t i64;
      uint64_t u64;
    } v;
    size_t size = 8;
    switch (types[type_index(a->type)].letter) {
    case 'f': v.f = (float)val->real, size = 4; break;
    case 'd': v.d = val->real; break;
    case 'i': v.i32 = (int32_t)val->integer, size = 4; break;
    case 'u': v.u32 = (uint32_t)val->integer, size = 4; break;
    case 'l': v.i64 = val->integer; break;
    default: v.u64 = (uint64_t)val->integer; break;
    }
    /* Every member of v starts at its first byte. */
    return kiln_kernel_set_arg(ew->kernel, j, size, &v);
  }
  const kiln_buffer *b = val->buffer;
  snprintf(what, sizeof what, "argument %u (%s)", j, a->name);
  kiln_status st =
    kiln__check_operand(ew->rt, fn, what, b, a->dtype, a->bare ? n : 1,
                        a->bare ? "(named alone: element i for each i < n)" : NULL);
  if (st == KILN_OK)
    st = kiln__kernel_set_root(ew->kernel, fn, j, b);
  cl_ulong first = kiln__buffer_first(b);
  if (st == KILN_OK)
    st =
      kiln_kernel_set_arg(ew->kernel, ew->nargs + 1 + (*views)++, sizeof first, &first);
  return st;
}

KILN_API kiln_status kiln_elementwise_run_values(kiln_elementwise *ew, size_t n,
                                                 const kiln_elementwise_value *values)
{
  static const char fn[] = "kiln_elementwise_run";
  if (!ew || (!values && n))
    return kiln__fail(ew ? ew->rt : NULL, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                      ew ? "values" : "ew");
  if (n == 0)
    return KILN_OK;
  pthread_mutex_lock(&ew->lock);
  kiln_status st = KILN_OK;
  unsigned views = 0;
  for (unsigned j = 0; j < ew->nargs && st == KILN_OK; j++)
    st = set_arg(ew, j, n, &values[j], &views);
  uint64_t count = n;
  if (st == KILN_OK)
    st = kiln_kernel_set_arg(ew->kernel, ew->nargs, sizeof count, &count);
  if (st == KILN_OK)
    st = kiln_kernel_launch(ew->kernel, 1, &n, NULL);
  pthread_mutex_unlock(&ew->lock);
  return st;
}

/* The variadic form reads the values in their C types (as
 * kiln_kernel_set_args does) and runs the array form. */
KILN_API kiln_status kiln_elementwise_run(kiln_elementwise *ew, size_t n, ...)
{
  if (!ew)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_elementwise_run: ew is NULL");
  kiln_elementwise_value v[EW_MAX_ARGS] = {{0}};
  va_list ap;
  va_start(ap, n);
  for (unsigned j = 0; j < ew->nargs; j++) {
    if (ew->args[j].pointer) {
      v[j].buffer = va_arg(ap, const kiln_buffer *);
      continue;
    }
    switch (types[type_index(ew->args[j].type)].letter) {
    case 'f':
    case 'd': v[j].real = va_arg(ap, double); break;
    case 'i': v[j].integer = va_arg(ap, int32_t); break;
    case 'u': v[j].integer = va_arg(ap, uint32_t); break;
    case 'l': v[j].integer = va_arg(ap, int64_t); break;
    default: v[j].integer = (int64_t)va_arg(ap, uint64_t); break;
    }
  }
  va_end(ap);
  return kiln_elementwise_run_values(ew, n, v);
}

KILN_API kiln_status kiln_elementwise_destroy(kiln_elementwise *ew)
{
  if (!ew)
    return KILN_OK;
  kiln_kernel_destroy(ew->kernel);
  kiln_program_destroy(ew->program);
  pthread_mutex_destroy(&ew->lock);
  free(ew);
  return KILN_OK;
}
