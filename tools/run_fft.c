/*
 * run_fft.c — `kiln run fft X.npy -o Y.npy [--inverse] [--real] [--axes
 * A,...]`: one FFT of a .npy file (what the operations share is in run.c).
 *
 * complex64/complex128 (C2C), float32/float64 with --real (R2C), or complex
 * with --real --inverse (C2R, to --n or 2 (m - 1) values); over the last one
 * to three axes, the leading ones the batch, as kiln_fft() takes C order.
 * The arrays go through kiln_fft_host(), so a batch larger than the device
 * (or KILN_MEMORY_LIMIT) runs in pieces; the time is that one call, plan
 * and transfers included.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct fft_args {
  const char *x, *out;
  int inverse, real;
  cli_ints axes; /* as given */
  long n_out;    /* C2R: --n, the output's last length (0: 2 (m - 1)) */
  int backend;   /* fft_backends' index */
} fft_args;

static const char *const fft_backends[] = {"auto", "kiln", "vkfft", "clfft", NULL};

static const cli_option fft_rows[] = {
  {.name = "X.npy",
   CLI_TEXT_AT(fft_args, x),
   .help = "the array: complex64 or complex128, or float32 or float64 with --real",
   .required = 1},
  {.name = "-o",
   CLI_TEXT_AT(fft_args, out),
   .value = "Y.npy",
   .help = "the transform, written as a .npy file",
   .required = 1},
  {.name = "--inverse",
   CLI_FLAG_AT(fft_args, inverse),
   .help = "the inverse transform, scaled by 1/n"},
  {.name = "--real",
   CLI_FLAG_AT(fft_args, real),
   .help = "a real transform: R2C of a real X (the half spectrum), or with --inverse "
           "C2R of a half spectrum"},
  {.name = "--axes",
   CLI_INTS_AT(fft_args, axes),
   .value = "A[,A...]",
   .help = "the axes to transform, the last ones of X (the leading ones are the "
           "batch)",
   .def = "-1",
   .min = -KILN_ARRAY_MAX_DIMS,
   .max = KILN_ARRAY_MAX_DIMS - 1,
   .counts = 1u << 1 | 1u << 2 | 1u << 3},
  {.name = "--n",
   CLI_INT_AT(fft_args, n_out),
   .value = "N",
   .help = "with --real --inverse: the output's last length, 2 m - 2 or 2 m - 1 for "
           "m bins",
   .def_text = "2 m - 2",
   .min = 1,
   .max = CLI_INT31},
  {.name = "--backend",
   CLI_CHOICE_AT(fft_args, backend),
   .help = "kiln's kernels, VkFFT, clFFT, or kiln's rules (auto)",
   .def = "auto",
   .choices = fft_backends},
};

static int run_fft(int argc, char **argv);

const cli_command run_fft_command = {
  .name = "kiln run fft",
  .summary = "an FFT of a .npy file over its last one to three axes",
  CLI_ROWS(fft_rows),
  .about = "The arrays go through kiln_fft_host(), so a batch larger than the device\n"
           "(or KILN_MEMORY_LIMIT) runs in pieces; the time is that one call, plan\n"
           "and transfers included.",
  .example = "kiln run fft x.npy --axes -2,-1 -o y.npy",
  .run = run_fft,
};

static int parse(fft_args *f, int argc, char **argv)
{
  *f = (fft_args){.x = NULL};
  int rc = run_parse(&run_fft_command, f, argc, argv);
  if (rc >= 0)
    return rc;
  if (f->n_out && !(f->real && f->inverse))
    return kiln_cli_usage_error(&run_fft_command, "--n",
                                "--n sets the output length of --real --inverse only");
  return -1;
}

/* The axes must be the last naxes of x, each once: kiln_fft() transforms
 * the trailing axes of C-order data, the leading ones being the batch. */
static int check_axes(const fft_args *f, const kiln_array *x)
{
  int nd = (int)x->ndim, seen[KILN_ARRAY_MAX_DIMS] = {0};
  if (nd < f->axes.n)
    return run_say("X has %d dimension%s; --axes names %d", nd, nd == 1 ? "" : "s",
                   f->axes.n),
           -1;
  for (int i = 0; i < f->axes.n; i++) {
    int given = (int)f->axes.v[i], a = given < 0 ? given + nd : given;
    if (a < 0 || a >= nd)
      return run_say("--axes: axis %d is out of range for an array of %d dimensions",
                     given, nd),
             -1;
    if (seen[a]++)
      return run_say("--axes: axis %d is named twice", given), -1;
    if (a < nd - f->axes.n)
      return run_say("--axes: kiln transforms the last %d axes of the array only (the "
                     "leading axes are the batch, in C order); axis %d is not among "
                     "them. Expected -1, -2,-1 or -3,-2,-1; move the axes last first "
                     "(e.g. numpy.moveaxis)",
                     f->axes.n, given),
             -1;
  }
  return 0;
}

/* The request for x and the array that receives the result, its data
 * allocated; -1 after saying why. */
static int plan(const fft_args *f, const kiln_array *x, kiln_fft_desc *d, kiln_array *y)
{
  int cplx = x->dtype == KILN_C32 || x->dtype == KILN_C64;
  int wide = x->dtype == KILN_C64 || x->dtype == KILN_F64;
  kiln_fft_kind kind = !f->real ? KILN_FFT_C2C : f->inverse ? KILN_FFT_C2R : KILN_FFT_R2C;
  if (kind == KILN_FFT_R2C ? (x->dtype != KILN_F32 && x->dtype != KILN_F64) : !cplx)
    return run_say("X holds %s; expected %s", kiln_dtype_name(x->dtype),
                   kind == KILN_FFT_R2C
                     ? "float32 or float64 for --real"
                     : "complex64 or complex128 (or --real for a real X)"),
           -1;
  if (check_axes(f, x) != 0)
    return -1;
  if (x->count == 0)
    return run_say("X has no elements"), -1;
  unsigned nd = x->ndim, k = (unsigned)f->axes.n, first = nd - k;
  size_t m = x->shape[nd - 1], n = kind != KILN_FFT_C2R ? m
                                   : f->n_out           ? (size_t)f->n_out
                                                        : 2 * (m - 1);
  if (kind == KILN_FFT_C2R && (n == 0 || n / 2 + 1 != m))
    return run_say("--real --inverse: the last axis holds %zu bins, which is the "
                   "half-spectrum of %zu or %zu real values, not %zu",
                   m, 2 * m - 2, 2 * m - 1, n),
           -1;
  kiln_fft_desc_init(d, wide ? KILN_F64 : KILN_F32, n);
  d->kind = kind, d->ndim = k, d->inverse = f->inverse && kind == KILN_FFT_C2C;
  d->backend = run_backend_named(fft_backends[f->backend]);
  d->batch = 1;
  for (unsigned i = 0; i < first; i++)
    d->batch *= x->shape[i];
  memcpy(d->shape, x->shape + first, k * sizeof *d->shape);
  d->shape[k - 1] = n;
  *y = (kiln_array){.dtype = kind == KILN_FFT_C2R   ? d->dtype
                             : kind == KILN_FFT_R2C ? (wide ? KILN_C64 : KILN_C32)
                                                    : x->dtype,
                    .ndim = nd};
  memcpy(y->shape, x->shape, sizeof y->shape);
  y->shape[nd - 1] = kind == KILN_FFT_R2C ? n / 2 + 1 : n;
  y->count = x->count / m * y->shape[nd - 1];
  return run_alloc_result(y);
}

/* The transform through kiln_fft_host(), which cuts a batch larger than the
 * device into pieces; timed into *ms, the plan and transfers included. */
static kiln_status compute(kiln_runtime *rt, const kiln_fft_desc *d, const kiln_array *x,
                           kiln_array *y, double *ms)
{
  double t0 = run_now_ms();
  kiln_status st = kiln_fft_host(rt, d, x->data, y->data); /* x has elements: plan() */
  *ms = run_now_ms() - t0;
  return st;
}

static void report(kiln_runtime *rt, const fft_args *f, const kiln_fft_desc *d,
                   const kiln_array *x, const kiln_array *y, double ms)
{
  static const char *const kinds[] = {"C2C", "R2C", "C2R"};
  char xs[160], ys[160];
  run_shape_text(xs, sizeof xs, x->ndim, x->shape);
  run_shape_text(ys, sizeof ys, y->ndim, y->shape);
  double n = 1;
  for (unsigned i = 0; i < d->ndim; i++)
    n *= (double)d->shape[i];
  double flops = 5 * n * log2(n) * (double)d->batch * (d->kind == KILN_FFT_C2C ? 1 : 0.5);
  printf("device   %s\nbackend  %s\nfft      %s%s %s %s%s over the last %u ax%s, batch "
         "%zu -> %s %s\ntime     %.2f ms (%.2f GFLOP/s at 5 N log2 N; one call with its "
         "plan, transfers included)\nwrote    %s\n",
         kiln_runtime_device(rt)->name, run_backend_label(d->backend),
         d->inverse ? "inverse " : "", kinds[d->kind], kiln_dtype_name(x->dtype), xs,
         d->kind == KILN_FFT_C2C ? "" : " (real)", d->ndim, d->ndim == 1 ? "is" : "es",
         d->batch, kiln_dtype_name(y->dtype), ys, ms, ms > 0 ? flops / ms / 1e6 : 0.0,
         f->out);
}

static int run_fft(int argc, char **argv)
{
  fft_args f;
  kiln_array x = {0}, y = {0};
  kiln_fft_desc d;
  kiln_runtime *rt = NULL;
  double ms = 0;
  int rc = parse(&f, argc, argv);
  if (rc >= 0)
    return rc;
  rc = 1;
  if (run_load(f.x, &x) != 0 || plan(&f, &x, &d, &y) != 0 || run_start(&rt) != 0)
    goto done;
  kiln_status st = compute(rt, &d, &x, &y, &ms);
  if (run_write(rt, st, f.out, &y) != 0)
    goto done;
  report(rt, &f, &d, &x, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&y);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
