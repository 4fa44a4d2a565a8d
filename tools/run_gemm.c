/*
 * run_gemm.c — `kiln run gemm A.npy B.npy -o C.npy [options]`: C =
 * act(alpha op(A) op(B) + beta C0 + bias) on .npy files (what the
 * operations share is in run.c).
 *
 * C's type is numpy's for the same product; matrices in another type are
 * converted on the device (kiln_convert), then kiln_gemm_host() multiplies
 * them, in panels when they are larger than the device.
 */
/* kiln_gemm_backend_for() is experimental API. */
#define KILN_EXPERIMENTAL
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct gemm_args {
  const char *a, *b, *c0, *bias, *out, *devices;
  int ta, tb;
  int activation;     /* kiln_activation: run_activations' index */
  double alpha, beta; /* beta NAN: not given */
  int dtype;          /* gemm_dtypes' index; -1: not given */
  int backend;        /* gemm_backends' index */
  kiln_gemm_desc d;
} gemm_args;

/* --dtype's choices: kiln_dtype KILN_F16 + index */
static const char *const gemm_dtypes[] = {"float16", "float32", "float64", NULL};
static const char *const gemm_backends[] = {"auto", "kiln", "clblast", NULL};

static const cli_option gemm_rows[] = {
  {.name = "A.npy",
   CLI_TEXT_AT(gemm_args, a),
   .help = "the matrix A: (m, k), or (k, m) with --ta",
   .required = 1},
  {.name = "B.npy",
   CLI_TEXT_AT(gemm_args, b),
   .help = "the matrix B: (k, n), or (n, k) with --tb",
   .required = 1},
  {.name = "-o",
   CLI_TEXT_AT(gemm_args, out),
   .value = "C.npy",
   .help = "the result C, (m, n), written as a .npy file",
   .required = 1},
  {.name = "--ta", CLI_FLAG_AT(gemm_args, ta), .help = "use A transposed: op(A) = A^T"},
  {.name = "--tb", CLI_FLAG_AT(gemm_args, tb), .help = "use B transposed: op(B) = B^T"},
  {.name = "--alpha",
   CLI_NUMBER_AT(gemm_args, alpha),
   .value = "X",
   .help = "the factor of op(A) op(B)",
   .def = "1",
   .min = -HUGE_VAL,
   .max = HUGE_VAL},
  {.name = "--beta",
   CLI_NUMBER_AT(gemm_args, beta),
   .value = "Y",
   .help = "the factor of C0",
   .def_text = "1 with --c, else 0",
   .min = -HUGE_VAL,
   .max = HUGE_VAL},
  {.name = "--c",
   CLI_TEXT_AT(gemm_args, c0),
   .value = "C0.npy",
   .help = "C0, an (m, n) matrix added as beta C0",
   .def_text = "none"},
  {.name = "--bias",
   CLI_TEXT_AT(gemm_args, bias),
   .value = "BIAS.npy",
   .help = "added to C as numpy broadcasts it: (n,) or (1, n) one value per column, "
           "(m, 1) one per row; fused into the product",
   .def_text = "none"},
  {.name = "--activation",
   CLI_CHOICE_AT(gemm_args, activation),
   .help = "applied to C after the bias, fused into the product",
   .def = "none",
   .choices = run_activations},
  {.name = "--dtype",
   CLI_CHOICE_AT(gemm_args, dtype),
   .help = "the type to compute and write C in; A, B and C0 are converted on the "
           "device",
   .def_text = "numpy's type for A @ B",
   .choices = gemm_dtypes},
  {.name = "--backend",
   CLI_CHOICE_AT(gemm_args, backend),
   .help = "kiln's kernels, CLBlast, or kiln's rules (auto)",
   .def = "auto",
   .choices = gemm_backends},
  RUN_DEVICES_ROW(gemm_args, devices),
};

static int run_gemm(int argc, char **argv);

const cli_command run_gemm_command = {
  .name = "kiln run gemm",
  .summary = "C = act(alpha op(A) op(B) + beta C0 + bias) of .npy files",
  CLI_ROWS(gemm_rows),
  .about = "C's type is numpy's for the same product (np.result_type): the widest\n"
           "float of A, B and C0, float64 where an integer meets a float; --dtype\n"
           "chooses another. Matrices not in that type are converted on the device,\n"
           "then kiln_gemm_host() multiplies them, in panels when they are larger\n"
           "than the device; with --devices, kiln_group_gemm_host() over a device\n"
           "group, rows of C to each device." RUN_ARRAYS_NOTE,
  .example = "kiln run gemm x.npy w.npy --tb --bias b.npy --activation relu -o y.npy",
  .run = run_gemm,
};

static int parse(gemm_args *g, int argc, char **argv)
{
  *g = (gemm_args){.beta = NAN, .dtype = -1};
  int rc = run_parse(&run_gemm_command, g, argc, argv);
  if (rc >= 0)
    return rc;
  /* alpha 1; the dtype and sizes come from the options and the files */
  kiln_gemm_desc_init(&g->d, (kiln_dtype)0, 0, 0, 0);
  g->d.trans_a = g->ta ? KILN_TRANS : KILN_NO_TRANS;
  g->d.trans_b = g->tb ? KILN_TRANS : KILN_NO_TRANS;
  g->d.alpha = g->alpha;
  g->d.beta = !isnan(g->beta) ? g->beta : g->c0 ? 1 : 0; /* C = alpha A B + C0 */
  if (g->dtype >= 0)
    g->d.dtype = (kiln_dtype)(KILN_F16 + g->dtype);
  g->d.backend = run_backend_named(gemm_backends[g->backend]);
  g->d.activation = (kiln_activation)g->activation;
  return -1;
}

/* Loads a 2-D .npy file in C order. */
static int load(const char *path, const char *name, kiln_array *x)
{
  if (run_load(path, x) != 0)
    return -1;
  if (x->ndim != 2)
    return run_say("%s (%s) has %u dimensions; expected a matrix (2)", name, path,
                   x->ndim),
           -1;
  return 0;
}

/* numpy's type for alpha op(A) op(B) + beta C0 (np.result_type): the
 * widest float among them, float64 where an integer meets a float (as
 * numpy promotes int32 with float32); 0 for integers alone or complex,
 * which kiln does not multiply. */
static kiln_dtype numpy_type(const kiln_array *const *x, int n)
{
  int ints = 0;
  kiln_dtype widest = (kiln_dtype)0;
  for (int i = 0; i < n; i++) {
    kiln_dtype t = x[i]->dtype;
    if (t == KILN_I32 || t == KILN_I64)
      ints = 1;
    else if (t == KILN_F16 || t == KILN_F32 || t == KILN_F64)
      widest = t > widest ? t : widest; /* KILN_F16 < KILN_F32 < KILN_F64 */
    else
      return (kiln_dtype)0;
  }
  return widest && ints ? KILN_F64 : widest;
}

/* Checks the shapes against each other and fills m, n, k and the type. */
static int shapes(gemm_args *g, const kiln_array *a, const kiln_array *b,
                  const kiln_array *c0, const kiln_array *bias)
{
  kiln_gemm_desc *d = &g->d;
  d->m = a->shape[d->trans_a ? 1 : 0];
  d->k = a->shape[d->trans_a ? 0 : 1];
  size_t kb = b->shape[d->trans_b ? 1 : 0];
  d->n = b->shape[d->trans_b ? 0 : 1];
  if (kb != d->k)
    return run_say("op(A) is %zu x %zu but op(B) is %zu x %zu; expected op(B) to have "
                   "%zu rows",
                   d->m, d->k, kb, d->n, d->k),
           -1;
  if (c0 && (c0->ndim != 2 || c0->shape[0] != d->m || c0->shape[1] != d->n))
    return run_say("--c is not a %zu x %zu matrix", d->m, d->n), -1;
  if (bias) { /* numpy's broadcasting against the m x n result */
    int col = bias->ndim == 1
                ? bias->shape[0] == d->n
                : bias->ndim == 2 && bias->shape[0] == 1 && bias->shape[1] == d->n;
    int row = bias->ndim == 2 && bias->shape[0] == d->m && bias->shape[1] == 1;
    if (!col && !row)
      return run_say("--bias does not broadcast against the %zu x %zu result; expected "
                     "(%zu,) or (1, %zu) for a value per column, (%zu, 1) per row",
                     d->m, d->n, d->n, d->n, d->m),
             -1;
    d->bias = col ? KILN_BIAS_COL : KILN_BIAS_ROW;
  }
  const kiln_array *all[] = {a, b, c0 ? c0 : bias, bias};
  if (g->dtype < 0 && !(d->dtype = numpy_type(all, 2 + (c0 != NULL) + (bias != NULL))))
    return run_say("A holds %s and B %s%s%s; kiln multiplies float16, float32 and "
                   "float64: pass --dtype to compute in one of those",
                   kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype),
                   c0 ? ", C0 " : "", c0 ? kiln_dtype_name(c0->dtype) : ""),
           -1;
  return 0;
}

static int run_gemm(int argc, char **argv)
{
  gemm_args g;
  kiln_array a = {0}, b = {0}, c = {0}, bias = {0};
  kiln_runtime *rt = NULL;
  kiln_group *grp = NULL;
  int rc = parse(&g, argc, argv);
  if (rc >= 0)
    return rc;
  rc = 1;
  if (load(g.a, "A", &a) != 0 || load(g.b, "B", &b) != 0 ||
      (g.c0 && load(g.c0, "C0", &c) != 0) || (g.bias && run_load(g.bias, &bias) != 0) ||
      shapes(&g, &a, &b, g.c0 ? &c : NULL, g.bias ? &bias : NULL) != 0)
    goto done;
  if (!g.c0) { /* C starts as zeros of the compute type (beta is 0: never read) */
    c = (kiln_array){
      .dtype = g.d.dtype, .ndim = 2, .shape = {g.d.m, g.d.n}, .count = g.d.m * g.d.n};
    c.data = calloc(c.count ? c.count : 1, kiln_dtype_size(g.d.dtype));
  }
  /* every matrix in the compute type, converted on the device, then one
   * kiln_gemm_host(), which cuts products larger than the device into
   * panels */
  if (run_start(&rt) != 0 || run_group_start(g.devices, &grp) != 0 ||
      run_to_type(rt, &a, g.d.dtype) != 0 || run_to_type(rt, &b, g.d.dtype) != 0 ||
      run_to_type(rt, &c, g.d.dtype) != 0 ||
      (g.bias && run_to_type(rt, &bias, g.d.dtype) != 0))
    goto done;
  g.d.bias_host = bias.data;
  kiln_backend be = kiln_gemm_backend_for(rt, &g.d);
  double t0 = run_now_ms();
  kiln_status st = grp ? kiln_group_gemm_host(grp, &g.d, a.data, b.data, c.data)
                       : kiln_gemm_host(rt, &g.d, a.data, b.data, c.data);
  double ms = run_now_ms() - t0;
  if (run_write(rt, grp, st, g.out, &c) != 0)
    goto done;
  printf("device   %s\nbackend  %s\nproduct  %zu x %zu x %zu %s\n",
         run_device_name(rt, grp), kiln_backend_name(be), g.d.m, g.d.n, g.d.k,
         kiln_dtype_name(g.d.dtype));
  if (g.d.bias || g.d.activation)
    printf("epilogue %s%s%s\n",
           g.d.bias == KILN_BIAS_ROW   ? "bias per row, "
           : g.d.bias == KILN_BIAS_COL ? "bias per column, "
                                       : "",
           "activation ", kiln_activation_name(g.d.activation));
  printf("time     %.2f ms (%.1f GFLOP/s, transfers included)\nwrote    %s\n", ms,
         2.0 * g.d.m * g.d.n * g.d.k / ms / 1e6, g.out);
  run_group_report(grp);
  rc = 0;
done:
  kiln_array_free(&a), kiln_array_free(&b), kiln_array_free(&c);
  kiln_array_free(&bias);
  kiln_group_destroy(grp);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
