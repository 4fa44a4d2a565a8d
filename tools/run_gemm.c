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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct gemm_args {
  const char *a, *b, *c0, *out;
  kiln_gemm_desc d;
  int dtype_given, beta_given;
} gemm_args;

static const char usage[] =
  "usage: kiln run gemm A.npy B.npy -o C.npy [--ta] [--tb] [--alpha X] [--beta Y]\n"
  "                     [--c C0.npy] [--dtype float16|float32|float64]\n"
  "                     [--backend auto|kiln|clblast]";

/* One option (run_cli.option); returns the arguments it used (1 or 2), or
 * -1. */
static int option(void *ctx, const char *o, const char *v)
{
  static const char *const dtypes[] = {NULL, "float16", "float32", "float64"};
  gemm_args *g = ctx;
  int k;
  if (strcmp(o, "--ta") == 0 || strcmp(o, "--tb") == 0) {
    *(o[3] == 'a' ? &g->d.trans_a : &g->d.trans_b) = KILN_TRANS;
    return 1;
  }
  static const char *const known[] = {"-o",     "--c",     "--alpha",
                                      "--beta", "--dtype", "--backend"};
  if (run_option_value(o, v, known, sizeof known / sizeof known[0]) != 0)
    return -1;
  if (strcmp(o, "-o") == 0)
    g->out = v;
  else if (strcmp(o, "--c") == 0)
    g->c0 = v;
  else if (strcmp(o, "--alpha") == 0 || strcmp(o, "--beta") == 0) {
    if (run_parse_number(v, o[2] == 'a' ? &g->d.alpha : &g->d.beta) != 0)
      return run_say("%s takes a finite number", o), -1;
    g->beta_given |= o[2] == 'b';
  } else if (strcmp(o, "--dtype") == 0) {
    if ((k = run_parse_enum(v, dtypes, 4)) < 0)
      return run_say("--dtype '%s': expected float16, float32 or float64", v), -1;
    g->d.dtype = (kiln_dtype)k;
    g->dtype_given = 1;
  } else if (strcmp(o, "--backend") == 0) {
    if (run_parse_blas_backend(v, &g->d.backend) != 0)
      return -1;
  } else
    return run_say("unknown option '%s'", o), -1;
  return 2;
}

static int parse(gemm_args *g, int argc, char **argv)
{
  memset(g, 0, sizeof *g);
  /* alpha 1; the dtype and sizes come from the options and the files */
  kiln_gemm_desc_init(&g->d, (kiln_dtype)0, 0, 0, 0);
  run_cli cli = {option, g, {&g->a, &g->b}, "matrix"};
  if (run_parse_args(&cli, argc, argv) != 0)
    return -1;
  if (!g->a || !g->b || !g->out)
    return run_usage(usage);
  if (g->c0 && !g->beta_given)
    g->d.beta = 1; /* C = alpha A B + C0 */
  return 0;
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
  if (!g->dtype_given)
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

int run_gemm(int argc, char **argv)
{
  gemm_args g;
  kiln_array a = {0}, b = {0}, c = {0};
  kiln_runtime *rt = NULL;
  int rc = 1;
  if (parse(&g, argc, argv) != 0 || load(g.a, "A", &a) != 0 || load(g.b, "B", &b) != 0 ||
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
