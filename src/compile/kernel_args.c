/*
 * kernel_args.c — the rows of cl/kernels.def as data, for kiln__launch() and
 * tests/test-kernel-args.c, and the typed calls that hand their arguments to
 * kiln__launch() (kernel_args.h says what they are).
 */
#include <string.h>

#include "compile/kernel_args.h"

/* "{kind, type, name}," for each argument */
#define KILN__DESC_A(kind, type, name) {KILN__ARG_##kind, #type, #name}, KILN__DESC_B
#define KILN__DESC_B(kind, type, name) {KILN__ARG_##kind, #type, #name}, KILN__DESC_A
#define KILN__DESC_A_END
#define KILN__DESC_B_END

/* "&name," for each argument */
#define KILN__VALUE_A(kind, type, name) &name, KILN__VALUE_B
#define KILN__VALUE_B(kind, type, name) &name, KILN__VALUE_A
#define KILN__VALUE_A_END
#define KILN__VALUE_B_END

#define KILN_KERNEL(program, family, variants, args)                                     \
  static const kiln__kernel_variant family##_variants[] = {variants};                    \
  static const kiln__kernel_arg family##_args[] = {KILN__EACH(KILN__DESC, args)};
#include "cl/kernels.def"
#undef KILN_KERNEL

const kiln__kernel_decl kiln__kernel_decls[KILN__ROW_COUNT] = {
#define KILN_KERNEL(program, family, variants, args)                                     \
  [KILN__ROW_##family] = {#program,          #family,                                    \
                          family##_variants, KILN__COUNT(family##_variants),             \
                          family##_args,     KILN__COUNT(family##_args)},
#include "cl/kernels.def"
#undef KILN_KERNEL
};

#define KILN_KERNEL(program, family, variants, args)                                     \
  kiln_status kiln__launch_##family(KILN__LAUNCH_PARAMS KILN__EACH(KILN__PARAM, args))   \
  {                                                                                      \
    const void *values[] = {KILN__EACH(KILN__VALUE, args)};                              \
    return kiln__launch(&kiln__kernel_decls[KILN__ROW_##family], rt, what, variant,      \
                        dims, global, local, values);                                    \
  }
#include "cl/kernels.def"
#undef KILN_KERNEL

const kiln__kernel_variant *kiln__kernel_variant_find(const kiln__kernel_decl *d,
                                                      const char *suffix)
{
  for (size_t i = 0; i < d->nvariants; i++)
    if (!strcmp(d->variants[i].suffix, suffix))
      return &d->variants[i];
  return NULL;
}

const char *kiln__kernel_arg_type(const kiln__kernel_variant *v,
                                  const kiln__kernel_arg *a, int has_fp64)
{
  const char *t = a->type;
  if (!strcmp(t, "T0") || !strcmp(t, "T1"))
    t = v->types[t[1] - '0'];
  if (t && !strcmp(t, "acc")) /* cl/reduce.cl's ACC */
    t = has_fp64 ? "double" : "float";
  return t;
}
