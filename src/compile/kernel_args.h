/*
 * kernel_args.h — kiln's own kernels as typed calls, made from the rows of
 * cl/kernels.def. Not installed.
 *
 * For each row KILN_KERNEL(program, family, variants, args) this declares
 *
 *   kiln_status kiln__launch_<family>(kiln_runtime *rt, const char *what,
 *                                     const char *variant, cl_uint dims,
 *                                     const size_t *global, const size_t *local,
 *                                     ...the row's arguments, each with its
 *                                     C type and the kernel's name for it);
 *
 * which runs kernel kiln_<family>_<variant> of cl/<program>.cl over `dims`
 * global sizes (and local ones, or NULL for the driver's choice) on rt's
 * queue; `what` is static text naming the caller, for messages. A call
 * with an argument too many, too few or of another kind does not compile,
 * and the prototype converts each value to its argument's type, so none is
 * read at another width.
 */
#ifndef KILN_KERNEL_ARGS_H
#define KILN_KERNEL_ARGS_H

#include "base/util.h"

/* ---- the table (kernel_args.c) ------------------------------------------ */

typedef enum kiln__arg_kind {
  KILN__ARG_GLOBAL,       /* global T *: a cl_mem */
  KILN__ARG_GLOBAL_CONST, /* global const T *: a cl_mem */
  KILN__ARG_UINT,         /* cl_uint */
  KILN__ARG_INT,          /* cl_int */
  KILN__ARG_ULONG,        /* cl_ulong */
  KILN__ARG_REAL          /* float or double by the variant; the host's double */
} kiln__arg_kind;

typedef struct kiln__kernel_arg {
  kiln__arg_kind kind;
  const char *type; /* OpenCL's name of the type (of what a pointer points
                       to), or "T0" or "T1" for the variant's */
  const char *name; /* the kernel's name for the argument */
} kiln__kernel_arg;

typedef struct kiln__kernel_variant {
  const char *suffix;   /* the kernel is kiln_<family>_<suffix> */
  const char *types[2]; /* what T0 and T1 stand for; NULL when unused */
} kiln__kernel_variant;

/* One row of cl/kernels.def. */
typedef struct kiln__kernel_decl {
  const char *program; /* the cl/ file, without .cl */
  const char *family;
  const kiln__kernel_variant *variants;
  size_t nvariants;
  const kiln__kernel_arg *args;
  size_t nargs;
} kiln__kernel_decl;

/* The rows, in the order of cl/kernels.def: kiln__kernel_decls[KILN__ROW_x]
 * is family x's. */
enum kiln__kernel_row {
#define KILN_KERNEL(program, family, variants, args) KILN__ROW_##family,
#include "cl/kernels.def"
#undef KILN_KERNEL
  KILN__ROW_COUNT
};

extern const kiln__kernel_decl kiln__kernel_decls[KILN__ROW_COUNT];

/* The variant of d with that suffix, or NULL. */
const kiln__kernel_variant *kiln__kernel_variant_find(const kiln__kernel_decl *d,
                                                      const char *suffix);

/* OpenCL's name of the type of argument a in variant v (for a pointer, of
 * what it points to): T0 and T1 are the variant's, and `acc` is double on a
 * device with fp64, else float. NULL when the variant leaves a slot unset. */
const char *kiln__kernel_arg_type(const kiln__kernel_variant *v,
                                  const kiln__kernel_arg *a, int has_fp64);

/* Sets the arguments of kiln_<d->family>_<variant> from values, the
 * addresses of d->nargs values of the C types their kinds name, and enqueues
 * it (kernel.c). The typed calls below are the only callers. */
kiln_status kiln__launch(const kiln__kernel_decl *d, kiln_runtime *rt, const char *what,
                         const char *variant, cl_uint dims, const size_t *global,
                         const size_t *local, const void *const *values);

/* ---- the typed calls ------------------------------------------------------
 * A row's args are turned into a sequence of (kind, type, name) tuples, and
 * KILN__EACH(M, seq) applies the pair of macros M_A and M_B to them in turn:
 * each expands one tuple and names the other, which takes the next tuple
 * (a macro cannot call itself); the name left after the last tuple is pasted
 * with _END into an empty macro. */
#define KILN_GLOBAL(type, name) (GLOBAL, type, name)
#define KILN_GLOBAL_CONST(type, name) (GLOBAL_CONST, type, name)
#define KILN_UINT(name) (UINT, uint, name)
#define KILN_INT(name) (INT, int, name)
#define KILN_ULONG(name) (ULONG, ulong, name)
#define KILN_REAL(type, name) (REAL, type, name)
#define KILN_V(suffix, t0) {#suffix, {#t0, NULL}},
#define KILN_V2(suffix, t0, t1) {#suffix, {#t0, #t1}},

#define KILN__EACH(m, seq) KILN__EACH_END(m##_A seq)
#define KILN__EACH_END(...) KILN__EACH_PASTE(__VA_ARGS__)
#define KILN__EACH_PASTE(...) __VA_ARGS__##_END

#define KILN__CTYPE_GLOBAL cl_mem
#define KILN__CTYPE_GLOBAL_CONST cl_mem
#define KILN__CTYPE_UINT cl_uint
#define KILN__CTYPE_INT cl_int
#define KILN__CTYPE_ULONG cl_ulong
#define KILN__CTYPE_REAL double

/* ", <C type> <name>" for each argument */
#define KILN__PARAM_A(kind, type, name) , KILN__CTYPE_##kind name KILN__PARAM_B
#define KILN__PARAM_B(kind, type, name) , KILN__CTYPE_##kind name KILN__PARAM_A
#define KILN__PARAM_A_END
#define KILN__PARAM_B_END

#define KILN__LAUNCH_PARAMS                                                              \
  kiln_runtime *rt, const char *what, const char *variant, cl_uint dims,                 \
    const size_t *global, const size_t *local

#define KILN_KERNEL(program, family, variants, args)                                     \
  kiln_status kiln__launch_##family(KILN__LAUNCH_PARAMS KILN__EACH(KILN__PARAM, args));
#include "cl/kernels.def"
#undef KILN_KERNEL

#endif /* KILN_KERNEL_ARGS_H */
