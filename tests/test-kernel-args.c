/*
 * test-kernel-args.c — cl/kernels.def against kiln's kernels as the driver
 * sees them. Every program of cl/ is built as kiln builds it, plus
 * -cl-kernel-arg-info, on each device (PoCL, and Oclgrind when meson
 * registered it): each kernel must have a row, the count of its arguments
 * must be the row's, and each argument must match the row's in address
 * space, type, const and name; each of the row's kernels that the device
 * can build (f64 ones need fp64) must exist. Then copies of the scale row,
 * each wrong in one way, must fail that check, and a launch of a variant
 * that no row declares must fail with a message.
 *
 * usage: test-kernel-args
 */
#define KILN_EXPERIMENTAL /* kiln_builtin_count(), kiln_builtin_name() */
#include "common.h"

#include "compile/kernel_args.h" /* the table; program.h's builtin sources */
#include "tuning/tuning.h"       /* kiln__builtin_options() */
#include "base/util.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/runtime.h"

/* ---- the check ------------------------------------------------------------ */

static const char *space_name(cl_kernel_arg_address_qualifier q)
{
  switch (q) {
  case CL_KERNEL_ARG_ADDRESS_GLOBAL: return "global";
  case CL_KERNEL_ARG_ADDRESS_LOCAL: return "local";
  case CL_KERNEL_ARG_ADDRESS_CONSTANT: return "constant";
  case CL_KERNEL_ARG_ADDRESS_PRIVATE: return "private";
  default: return "unknown";
  }
}

/* Adds "<kernel> argument i (name): <what> <table's> in cl/kernels.def,
 * <kernel's> in the kernel" to why when the two differ; returns 1 then. */
static int differs(kiln__str *why, const char *kernel, cl_uint i, const char *arg,
                   const char *what, const char *table, const char *driver)
{
  if (!strcmp(table, driver))
    return 0;
  kiln__str_appendf(why,
                    "%s argument %u (%s): %s %s in cl/kernels.def, %s in the "
                    "kernel\n",
                    kernel, i, arg, what, table, driver);
  return 1;
}

/* How many ways argument i of k differs from a, of variant v; each is
 * described in why. */
static int check_arg(cl_kernel k, const char *kernel, cl_uint i,
                     const kiln__kernel_variant *v, const kiln__kernel_arg *a, int fp64,
                     kiln__str *why)
{
  char type[64], name[64], want[64];
  cl_kernel_arg_address_qualifier space;
  cl_kernel_arg_type_qualifier qual;
  const struct {
    cl_kernel_arg_info param;
    size_t size;
    void *out;
  } query[] = {
    {CL_KERNEL_ARG_TYPE_NAME, sizeof type, type},
    {CL_KERNEL_ARG_NAME, sizeof name, name},
    {CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof space, &space},
    {CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof qual, &qual},
  };
  cl_int err = CL_SUCCESS;
  for (size_t q = 0; q < KILN__COUNT(query) && err == CL_SUCCESS; q++)
    err = clGetKernelArgInfo(k, i, query[q].param, query[q].size, query[q].out, NULL);
  if (err != CL_SUCCESS) {
    kiln__str_appendf(why, "%s argument %u: clGetKernelArgInfo failed with %s\n", kernel,
                      i, kiln_cl_error_name(err));
    return 1;
  }
  int global = a->kind == KILN__ARG_GLOBAL || a->kind == KILN__ARG_GLOBAL_CONST;
  const char *t = kiln__kernel_arg_type(v, a, fp64);
  snprintf(want, sizeof want, "%s%s", t ? t : "(no type)", global ? "*" : "");
  const char *is_const = qual & CL_KERNEL_ARG_TYPE_CONST ? "const" : "not const";
  /* PoCL renames a parameter that has a builtin's name (sign) with _cl_. */
  const char *driver_name = strncmp(name, "_cl_", 4) ? name : name + 4;
  return differs(why, kernel, i, a->name, "address space", global ? "global" : "private",
                 space_name(space)) +
         differs(why, kernel, i, a->name, "type", want, type) +
         differs(why, kernel, i, a->name, "qualifier",
                 a->kind == KILN__ARG_GLOBAL_CONST ? "const" : "not const", is_const) +
         differs(why, kernel, i, a->name, "name", a->name, driver_name);
}

/* How many ways kernel kiln_<d->family>_<v->suffix> of p differs from its
 * row; each is described in why. */
static int check_kernel(cl_program p, const kiln__kernel_decl *d,
                        const kiln__kernel_variant *v, int fp64, kiln__str *why)
{
  char kernel[64];
  snprintf(kernel, sizeof kernel, "kiln_%s_%s", d->family, v->suffix);
  cl_int err;
  cl_kernel k = clCreateKernel(p, kernel, &err);
  cl_uint count = 0;
  if (k)
    err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof count, &count, NULL);
  if (err == CL_INVALID_KERNEL_NAME) {
    kiln__str_appendf(why,
                      "%s: cl/kernels.def declares it, cl/%s.cl has no such "
                      "kernel\n",
                      kernel, d->program);
    return 1;
  }
  if (err != CL_SUCCESS) {
    kiln__str_appendf(why, "%s: %s\n", kernel, kiln_cl_error_name(err));
    if (k)
      clReleaseKernel(k);
    return 1;
  }
  int bad = 0;
  if (count != d->nargs) {
    kiln__str_appendf(why,
                      "%s: the kernel has %u arguments, cl/kernels.def declares "
                      "%zu\n",
                      kernel, count, d->nargs);
    bad++;
  }
  for (cl_uint i = 0; i < count && i < d->nargs; i++)
    bad += check_arg(k, kernel, i, v, &d->args[i], fp64, why);
  clReleaseKernel(k);
  return bad;
}

/* Whether a row of table declares kernel `name` of cl/<program>.cl. */
static int declared(const kiln__kernel_decl *table, const char *program, const char *name)
{
  char kernel[64];
  for (size_t r = 0; r < KILN__ROW_COUNT; r++) {
    if (strcmp(table[r].program, program))
      continue;
    for (size_t i = 0; i < table[r].nvariants; i++) {
      snprintf(kernel, sizeof kernel, "kiln_%s_%s", table[r].family,
               table[r].variants[i].suffix);
      if (!strcmp(kernel, name))
        return 1;
    }
  }
  return 0;
}

/* How many ways program p, cl/<program>.cl built with -cl-kernel-arg-info,
 * and the rows of table (KILN__ROW_COUNT of them) disagree; each is
 * described in why. *checked counts the kernels compared. */
static int check_program(const kiln__kernel_decl *table, const char *program,
                         cl_program p, int fp64, kiln__str *why, size_t *checked)
{
  char names[8192];
  cl_int err = clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, sizeof names, names, NULL);
  if (err != CL_SUCCESS)
    fail_msg("cl/%s.cl: CL_PROGRAM_KERNEL_NAMES: %s", program, kiln_cl_error_name(err));
  int bad = 0;
  for (const char *at = names; *at;) {
    size_t len = strcspn(at, ";");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, at);
    if (!declared(table, program, name)) {
      kiln__str_appendf(why, "%s of cl/%s.cl: no row of cl/kernels.def declares it\n",
                        name, program);
      bad++;
    }
    at += len + (at[len] == ';');
  }
  for (size_t r = 0; r < KILN__ROW_COUNT; r++) {
    if (strcmp(table[r].program, program))
      continue;
    for (size_t i = 0; i < table[r].nvariants; i++) {
      const kiln__kernel_variant *v = &table[r].variants[i];
      if (!fp64 && strstr(v->suffix, "f64"))
        continue; /* built only where the device has fp64 */
      bad += check_kernel(p, &table[r], v, fp64, why);
      ++*checked;
    }
  }
  return bad;
}

/* ---- building ------------------------------------------------------------- */

/* Builtin i built for rt's device with kiln's options and -cl-kernel-arg-info. */
static kiln_program *build_with_arg_info(kiln_runtime *rt, size_t i)
{
  const kiln__builtin_source *b = &kiln__builtin_sources[i];
  char *text = malloc(b->size + 1);
  assert_non_null(text);
  memcpy(text, b->bytes, b->size);
  text[b->size] = '\0';
  kiln__str options = {0};
  char family[64];
  kiln__builtin_family(b, family, sizeof family);
  kiln__builtin_options(kiln_runtime_device(rt), &rt->tuning->t, family, &options);
  kiln__str_appendf(&options, " -cl-kernel-arg-info");
  assert_false(options.failed);
  kiln_program *p = NULL;
  kiln_status st = kiln_program_create(rt, text, kiln__str_get(&options), &p);
  kiln__str_free(&options);
  free(text);
  if (st != KILN_OK)
    fail_msg("cl/%s.cl: %s", b->name, kiln_last_error(rt));
  return p;
}

/* Every program on the device: no difference from the table. */
static void check_every_program_on(const char *device)
{
  kiln_runtime *rt = kiln_test_runtime_on(device, NULL, 1);
  int fp64 = kiln_runtime_device(rt)->has_fp64;
  size_t checked = 0;
  for (size_t i = 0; i < kiln__builtin_count; i++) {
    kiln_program *p = build_with_arg_info(rt, i);
    kiln__str why = {0};
    int bad = check_program(kiln__kernel_decls, kiln__builtin_sources[i].name,
                            kiln__program_cl(p), fp64, &why, &checked);
    if (bad)
      fail_msg("%d differences on %s:\n%s", bad, kiln_runtime_device(rt)->name,
               kiln__str_get(&why));
    kiln__str_free(&why);
    assert_kiln_ok(rt, kiln_program_destroy(p));
  }
  printf("# %zu kernels in %zu programs match cl/kernels.def on %s\n", checked,
         kiln__builtin_count, kiln_runtime_device(rt)->name);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_kernel_args_table_matches_kernels(void **state)
{
  (void)state;
  kiln_test_each_platform(check_every_program_on);
}

/* Each row names a program that kiln embeds. */
static void test_kernel_args_rows_name_builtins(void **state)
{
  (void)state;
  for (size_t r = 0; r < KILN__ROW_COUNT; r++) {
    const kiln__kernel_decl *d = &kiln__kernel_decls[r];
    size_t i = 0;
    while (i < kiln_builtin_count() && strcmp(kiln_builtin_name(i), d->program))
      i++;
    if (i == kiln_builtin_count())
      fail_msg("row %s: kiln embeds no cl/%s.cl", d->family, d->program);
  }
}

/* ---- copies of the scale row with one thing wrong ------------------------- */

typedef struct scale_state {
  kiln_runtime *rt;
  kiln_program *program; /* cl/scale.cl with -cl-kernel-arg-info */
} scale_state;

static int scale_setup(void **state)
{
  static scale_state s;
  s.rt = kiln_test_runtime_on(NULL, NULL, 1);
  size_t i = 0;
  while (strcmp(kiln__builtin_sources[i].name, "scale"))
    i++;
  s.program = build_with_arg_info(s.rt, i);
  *state = &s;
  return 0;
}

static int scale_teardown(void **state)
{
  scale_state *s = *state;
  kiln_program_destroy(s->program);
  return kiln_runtime_destroy(s->rt) == KILN_OK ? 0 : -1;
}

/* The check of cl/scale.cl against the table with its scale row replaced by
 * row: fails unless it finds a difference and says `expected`. */
static void assert_check_finds(void **state, const kiln__kernel_decl *row,
                               const char *expected)
{
  scale_state *s = *state;
  kiln__kernel_decl table[KILN__ROW_COUNT];
  memcpy(table, kiln__kernel_decls, sizeof table);
  table[KILN__ROW_scale] = *row;
  kiln__str why = {0};
  size_t checked = 0;
  int bad = check_program(table, "scale", kiln__program_cl(s->program),
                          kiln_runtime_device(s->rt)->has_fp64, &why, &checked);
  if (!bad || !strstr(kiln__str_get(&why), expected))
    fail_msg("%d differences; expected one saying '%s':\n%s", bad, expected,
             kiln__str_get(&why));
  kiln__str_free(&why);
}

static void test_kernel_args_check_finds_wrong_count(void **state)
{
  kiln__kernel_decl row = kiln__kernel_decls[KILN__ROW_scale];
  row.nargs--;
  assert_check_finds(state, &row,
                     "kiln_scale_f32: the kernel has 4 arguments, cl/kernels.def"
                     " declares 3");
}

/* Argument i of the scale row (x, off, n, factor) replaced by arg, and what the
 * check must say of it. */
static const struct wrong_arg {
  size_t i;
  kiln__kernel_arg arg;
  const char *expected;
} wrong_args[] = {
  {2,
   {KILN__ARG_UINT, "uint", "n"},
   "kiln_scale_f32 argument 2 (n): type uint in cl/kernels.def, ulong in the kernel"},
  {3,
   {KILN__ARG_GLOBAL, "T0", "factor"},
   "kiln_scale_f32 argument 3 (factor): address space global in cl/kernels.def, "
   "private in the kernel"},
  {0,
   {KILN__ARG_GLOBAL_CONST, "T0", "x"},
   "kiln_scale_f32 argument 0 (x): qualifier const in cl/kernels.def, not const in "
   "the kernel"},
  {2,
   {KILN__ARG_ULONG, "ulong", "count"},
   "kiln_scale_f32 argument 2 (count): name count in cl/kernels.def, n in the kernel"},
};

/* A wrong type, address space, const or name: the check says which. */
static void test_kernel_args_check_finds_wrong_argument(void **state)
{
  for (size_t w = 0; w < KILN__COUNT(wrong_args); w++) {
    kiln__kernel_decl row = kiln__kernel_decls[KILN__ROW_scale];
    kiln__kernel_arg args[4];
    assert_true(row.nargs == KILN__COUNT(args));
    memcpy(args, row.args, sizeof args);
    args[wrong_args[w].i] = wrong_args[w].arg;
    row.args = args;
    assert_check_finds(state, &row, wrong_args[w].expected);
  }
}

static void test_kernel_args_check_finds_missing_kernel_or_row(void **state)
{
  static const kiln__kernel_variant f16[] = {{"f16", {"half", NULL}}};
  kiln__kernel_decl row = kiln__kernel_decls[KILN__ROW_scale];
  row.variants = f16;
  row.nvariants = 1;
  assert_check_finds(
    state, &row,
    "kiln_scale_f16: cl/kernels.def declares it, cl/scale.cl has no such "
    "kernel");
  assert_check_finds(
    state, &row, "kiln_scale_f32 of cl/scale.cl: no row of cl/kernels.def declares it");
}

/* A variant that no row declares is an error with a message, not a launch. */
static void test_kernel_args_launch_unknown_variant(void **state)
{
  scale_state *s = *state;
  kiln_buffer *x = NULL;
  assert_kiln_ok(s->rt, kiln_buffer_create(s->rt, KILN_F32, 4, 0, &x));
  size_t n = 4;
  assert_kiln_fails(
    s->rt, KILN_ERR_INVALID_ARGUMENT,
    "test: cl/kernels.def declares no kernel kiln_scale_f16 in cl/scale.cl",
    kiln__launch_scale(s->rt, "test", "f16", 1, &n, NULL, kiln_buffer_cl_mem(x), 0, n,
                       2.0));
  assert_kiln_ok(s->rt, kiln_buffer_destroy(x));
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kernel_args_rows_name_builtins),
    cmocka_unit_test(test_kernel_args_table_matches_kernels),
    cmocka_unit_test(test_kernel_args_check_finds_wrong_count),
    cmocka_unit_test(test_kernel_args_check_finds_wrong_argument),
    cmocka_unit_test(test_kernel_args_check_finds_missing_kernel_or_row),
    cmocka_unit_test(test_kernel_args_launch_unknown_variant),
  };
  return cmocka_run_group_tests(tests, scale_setup, scale_teardown);
}
