/*
 * run_gemm.c — `kiln run gemm A.npy B.npy -o C.npy [options]`: C = alpha
 * op(A) op(B) + beta C0 on .npy files (what the operations share is in
 * run.c).
 *
 * Arrays already in the compute type go straight to kiln_gemm_host(), which
 * cuts problems larger than the device into panels. Others are converted on
 * the device (kiln_convert) and multiplied there.
 */
/* kiln_gemm_backend_for() is experimental API. */
#define KILN_EXPERIMENTAL
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct gemm_args {
  const char *a, *b, *c0, *out;
  int ta, tb;
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
  {.name = "--dtype",
   CLI_CHOICE_AT(gemm_args, dtype),
   .help = "the type to compute and write C in; A and B are converted on the device",
   .def_text = "A's",
   .choices = gemm_dtypes},
  {.name = "--backend",
   CLI_CHOICE_AT(gemm_args, backend),
   .help = "kiln's kernels, CLBlast, or kiln's rules (auto)",
   .def = "auto",
   .choices = gemm_backends},
};

static int run_gemm(int argc, char **argv);

const cli_command run_gemm_command = {
  .name = "kiln run gemm",
  .summary = "C = alpha op(A) op(B) + beta C0 of .npy files",
  CLI_ROWS(gemm_rows),
  .about = "Matrices already in the compute type go through kiln_gemm_host(), which\n"
           "cuts products larger than the device into panels; others are converted\n"
           "on the device and multiplied there.",
  .example = "kiln run gemm a.npy b.npy --tb --alpha 0.5 -o c.npy",
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

/* Checks the shapes against each other and fills m, n, k. */
static int shapes(gemm_args *g, const kiln_array *a, const kiln_array *b,
                  const kiln_array *c0)
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
  if (g->dtype < 0)
    d->dtype = a->dtype;
  if (d->dtype != KILN_F16 && d->dtype != KILN_F32 && d->dtype != KILN_F64)
    return run_say("A holds %s; pass --dtype float16, float32 or float64 to compute in "
                   "one of those",
                   kiln_dtype_name(a->dtype)),
           -1;
  return 0;
}

/* C = alpha op(A) op(B) + beta C in the compute type, into c (dtype d). */
static kiln_status compute(kiln_runtime *rt, const kiln_gemm_desc *d, const kiln_array *a,
                           const kiln_array *b, kiln_array *c)
{
  if (a->dtype == d->dtype && b->dtype == d->dtype && c->dtype == d->dtype)
    return kiln_gemm_host(rt, d, a->data, b->data, c->data);
  kiln_buffer *da = NULL, *db = NULL, *dc = NULL, *out = NULL;
  kiln_status st = run_upload(rt, a, d->dtype, &da);
  if (st == KILN_OK)
    st = run_upload(rt, b, d->dtype, &db);
  if (st == KILN_OK)
    st = run_upload(rt, c, d->dtype, &dc);
  if (st == KILN_OK)
    st = kiln_gemm(rt, d, da, db, dc);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, c->dtype, c->count, 0, &out);
  if (st == KILN_OK)
    st = kiln_convert(dc, out);
  if (st == KILN_OK)
    st = kiln_buffer_read(out, 0, c->count, c->data);
  kiln_buffer_destroy(da), kiln_buffer_destroy(db);
  kiln_buffer_destroy(dc), kiln_buffer_destroy(out);
  return st;
}

static int run_gemm(int argc, char **argv)
{
  gemm_args g;
  kiln_array a = {0}, b = {0}, c = {0};
  kiln_runtime *rt = NULL;
  int rc = parse(&g, argc, argv);
  if (rc >= 0)
    return rc;
  rc = 1;
  if (load(g.a, "A", &a) != 0 || load(g.b, "B", &b) != 0 ||
      (g.c0 && load(g.c0, "C0", &c) != 0) || shapes(&g, &a, &b, g.c0 ? &c : NULL) != 0)
    goto done;
  if (!g.c0) { /* C starts as zeros of the compute type (beta is 0: never read) */
    c = (kiln_array){
      .dtype = g.d.dtype, .ndim = 2, .shape = {g.d.m, g.d.n}, .count = g.d.m * g.d.n};
    c.data = calloc(c.count ? c.count : 1, 8);
  } else if (c.dtype != g.d.dtype) {
    run_say("--c holds another dtype than the computation (%s)",
            kiln_dtype_name(g.d.dtype));
    goto done;
  }
  if (run_start(&rt) != 0)
    goto done;
  kiln_backend be = kiln_gemm_backend_for(rt, &g.d);
  double t0 = run_now_ms();
  kiln_status st = compute(rt, &g.d, &a, &b, &c);
  double ms = run_now_ms() - t0;
  if (run_write(rt, st, g.out, &c) != 0)
    goto done;
  printf("device   %s\nbackend  %s\nproduct  %zu x %zu x %zu %s\ntime     %.2f ms "
         "(%.1f GFLOP/s, transfers included)\nwrote    %s\n",
         kiln_runtime_device(rt)->name, kiln_backend_name(be), g.d.m, g.d.n, g.d.k,
         kiln_dtype_name(g.d.dtype), ms, 2.0 * g.d.m * g.d.n * g.d.k / ms / 1e6, g.out);
  rc = 0;
done:
  kiln_array_free(&a), kiln_array_free(&b), kiln_array_free(&c);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
