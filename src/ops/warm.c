/*
 * warm.c — kiln_runtime_warm(): building ahead the kernels of operations,
 * so that their first calls wait for no compiler (container images, CI
 * caches, services that must answer their first request at once).
 *
 * An operation's kernels are the rows of cl/kernels.def in its files, in
 * their float32 variants (those that name f32, such as f16_f32), which is
 * what most callers run: other types still build on their first call. Each
 * kernel is a program of its own (program.c), through the binary cache.
 */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "compile/kernel_args.h"
#include "compile/program.h"
#include "core/runtime.h"

/* Each operation and the cl/ files its kernels come from. */
static const struct {
  const char *op;
  const char *files[2];
} warm_ops[] = {
  {"gemm", {"gemm", NULL}}, {"conv2d", {"conv", "gemm"}},   {"reduce", {"reduce", NULL}},
  {"fft", {"fft", NULL}},   {"convert", {"convert", NULL}}, {"scale", {"scale", NULL}},
};

#define NOPS (sizeof warm_ops / sizeof warm_ops[0])

/* Whether the comma-separated list names op ("" and "all": every one). */
static int listed(const char *list, const char *op)
{
  if (!*list || !strcmp(list, "all"))
    return 1;
  size_t n = strlen(op);
  for (const char *at = list; at; at = strchr(at, ',')) {
    at += *at == ',';
    if (!strncmp(at, op, n) && (at[n] == ',' || at[n] == '\0'))
      return 1;
  }
  return 0;
}

/* The failure for a name in the list that is no operation, or KILN_OK. */
static kiln_status check_list(kiln_runtime *rt, const char *list)
{
  if (!*list || !strcmp(list, "all"))
    return KILN_OK;
  for (const char *at = list; at; at = strchr(at, ',')) {
    at += *at == ',';
    size_t len = strcspn(at, ","), i = 0;
    while (i < NOPS &&
           (strlen(warm_ops[i].op) != len || strncmp(at, warm_ops[i].op, len)))
      i++;
    if (i == NOPS)
      return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                        "kiln_runtime_warm: '%.*s' is no operation; expected a "
                        "comma-separated list of gemm, conv2d, reduce, fft, convert, "
                        "scale, or \"all\"",
                        (int)len, at);
  }
  return KILN_OK;
}

/* Builds the float32 kernels of row d (of file `file`); counts them. */
static kiln_status warm_row(kiln_runtime *rt, const kiln__kernel_decl *d, int has_fp64,
                            size_t *count)
{
  for (size_t v = 0; v < d->nvariants; v++) {
    const char *suffix = d->variants[v].suffix;
    if (!strstr(suffix, "f32") || (!has_fp64 && strstr(suffix, "f64")))
      continue;
    char name[64];
    snprintf(name, sizeof name, "kiln_%s_%s", d->family, suffix);
    cl_kernel k;
    kiln_status st = kiln__builtin_kernel(rt, d->program, name, &k);
    if (st != KILN_OK)
      return st;
    clReleaseKernel(k);
    (*count)++;
  }
  return KILN_OK;
}

KILN_API kiln_status kiln_runtime_warm(kiln_runtime *rt, const char *ops, size_t *built)
{
  if (built)
    *built = 0;
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_warm: rt is NULL; expected a runtime from "
                      "kiln_runtime_create()");
  const char *list = ops ? ops : "";
  kiln_status st = check_list(rt, list);
  int has_fp64 = kiln__runtime_device(rt)->info.has_fp64;
  size_t count = 0;
  for (size_t r = 0; st == KILN_OK && r < KILN__ROW_COUNT; r++) {
    const kiln__kernel_decl *d = &kiln__kernel_decls[r];
    int wanted = 0;
    for (size_t i = 0; i < NOPS && !wanted; i++)
      wanted = listed(list, warm_ops[i].op) &&
               ((warm_ops[i].files[0] && !strcmp(warm_ops[i].files[0], d->program)) ||
                (warm_ops[i].files[1] && !strcmp(warm_ops[i].files[1], d->program)));
    if (wanted)
      st = warm_row(rt, d, has_fp64, &count);
  }
  if (built)
    *built = count;
  return st;
}
