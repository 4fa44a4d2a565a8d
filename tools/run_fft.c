/*
 * run_fft.c — `kiln run fft X.npy -o Y.npy [--inverse] [--real] [--axes
 * A,...] [--n N] [--norm NORM]`: one FFT of a .npy file, as numpy.fft
 * computes it (what the operations share is in run.c).
 *
 * fft and ifft of real or complex X (C2C; real X taken as complex, as
 * numpy's fft takes it), rfft with --real (R2C), irfft with --real
 * --inverse (C2R, to --n or 2 (m - 1) values); over the last one to three
 * axes, the leading ones the batch, as kiln_fft() takes C order. --n cuts
 * or pads the last axis with zeros, as numpy's n. Y is typed as numpy 2
 * types it: complex64 (float32 for irfft) from float16, float32 and
 * complex64; complex128 (float64) from float64, complex128 and integers.
 * The arrays go through kiln_fft_host(), so a batch larger than the device
 * (or KILN_MEMORY_LIMIT) runs in pieces; the time is that one call, plan
 * and transfers included. With --devices, kiln_group_fft_host() over a
 * device group, transforms of the batch to each device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct fft_args {
  const char *x, *out, *devices;
  int inverse, real;
  cli_ints axes; /* as given */
  long n;        /* --n: the last axis' length (0: not given) */
  int norm;      /* kiln_fft_norm: fft_norms' index */
  int backend;   /* fft_backends' index */
} fft_args;

static const char *const fft_norms[] = {"backward", "ortho", "forward", NULL};
static const char *const fft_backends[] = {"auto", "kiln", "vkfft", "clfft", NULL};

static const cli_option fft_rows[] = {
  {.name = "X.npy",
   CLI_TEXT_AT(fft_args, x),
   .help = "the array: complex, or real (float16, float32, float64, int32, int64), "
           "taken as complex unless --real",
   .required = 1},
  {.name = "-o",
   CLI_TEXT_AT(fft_args, out),
   .value = "Y.npy",
   .help = "the transform, written as a .npy file of numpy 2's type for it",
   .required = 1},
  {.name = "--inverse",
   CLI_FLAG_AT(fft_args, inverse),
   .help = "the inverse transform: numpy's ifft, or with --real its irfft"},
  {.name = "--real",
   CLI_FLAG_AT(fft_args, real),
   .help = "a real transform: numpy's rfft of a real X (the half spectrum, n // 2 + 1 "
           "bins), or with --inverse its irfft of a half spectrum"},
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
   CLI_INT_AT(fft_args, n),
   .value = "N",
   .help = "the length of the last transformed axis, as numpy's n: X's last axis is "
           "cut or padded with zeros to N (to N // 2 + 1 bins for --real --inverse, "
           "whose output has N values)",
   .def_text = "X's, or 2 (m - 1) for m bins with --real --inverse",
   .min = 1,
   .max = CLI_INT31},
  {.name = "--norm",
   CLI_CHOICE_AT(fft_args, norm),
   .help = "the scaling, as numpy's norm: backward scales the inverse by 1/n, ortho "
           "both ways by 1/sqrt(n), forward the forward by 1/n",
   .def = "backward",
   .choices = fft_norms},
  {.name = "--backend",
   CLI_CHOICE_AT(fft_args, backend),
   .help = "kiln's kernels, VkFFT, clFFT, or kiln's rules (auto)",
   .def = "auto",
   .choices = fft_backends},
  RUN_DEVICES_ROW(fft_args, devices),
};

static int run_fft(int argc, char **argv);

const cli_command run_fft_command = {
  .name = "kiln run fft",
  .summary = "an FFT of a .npy file over its last one to three axes, as numpy.fft",
  CLI_ROWS(fft_rows),
  .about = "As numpy.fft: fft (fftn with --axes), ifft with --inverse, rfft with\n"
           "--real, irfft with --real --inverse; --n and --norm as numpy's n and norm.\n"
           "Y's type is numpy 2's: complex64 (float32 from irfft) for float16,\n"
           "float32 and complex64 input, complex128 (float64) for float64, complex128\n"
           "and integers. The arrays go through kiln_fft_host(), so a batch larger\n"
           "than the device runs in pieces; the time is that one call, plan and\n"
           "transfers included. With --devices, kiln_group_fft_host() over a device\n"
           "group, transforms of the batch to each device." RUN_ARRAYS_NOTE,
  .example = "kiln run fft x.npy --real --axes -2,-1 -o y.npy",
  .run = run_fft,
};

static int parse(fft_args *f, int argc, char **argv)
{
  *f = (fft_args){.x = NULL};
  int rc = run_parse(&run_fft_command, f, argc, argv);
  if (rc >= 0)
    return rc;
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

/* a (float32 or float64) as complex, each imaginary part 0: how numpy's fft
 * takes real input. 0, or -1 after saying why. */
static int to_complex(kiln_array *a)
{
  size_t half = kiln_dtype_size(a->dtype);
  kiln_array z = *a;
  z.dtype = a->dtype == KILN_F64 ? KILN_C64 : KILN_C32;
  if (run_alloc_result(&z) != 0)
    return -1;
  memset(z.data, 0, z.count * 2 * half);
  for (size_t i = 0; i < a->count; i++)
    memcpy((char *)z.data + 2 * i * half, (const char *)a->data + i * half, half);
  kiln_array_free(a);
  *a = z;
  return 0;
}

/* a's last axis cut, or padded with zeros, to n values, as numpy's fft
 * does with its n. 0, or -1 after saying why. */
static int resize_last(kiln_array *a, size_t n)
{
  size_t m = a->shape[a->ndim - 1], rows = a->count / m, size = kiln_dtype_size(a->dtype);
  kiln_array r = *a;
  r.shape[r.ndim - 1] = n;
  r.count = rows * n;
  if (r.count / n != rows)
    return run_say("--n %zu makes X larger than memory holds", n), -1;
  if (run_alloc_result(&r) != 0)
    return -1;
  memset(r.data, 0, r.count * size);
  for (size_t i = 0; i < rows; i++)
    memcpy((char *)r.data + i * n * size, (const char *)a->data + i * m * size,
           (m < n ? m : n) * size);
  kiln_array_free(a);
  *a = r;
  return 0;
}

/* Element i of a complex64 or complex128 array, as doubles, and back. */
static void get_c(const kiln_array *a, size_t i, double v[2])
{
  for (int p = 0; p < 2; p++)
    v[p] = a->dtype == KILN_C64 ? ((const double *)a->data)[2 * i + p]
                                : ((const float *)a->data)[2 * i + p];
}

static void set_c(kiln_array *a, size_t i, const double v[2])
{
  for (int p = 0; p < 2; p++)
    if (a->dtype == KILN_C64)
      ((double *)a->data)[2 * i + p] = v[p];
    else
      ((float *)a->data)[2 * i + p] = (float)v[p];
}

/* A half spectrum made what numpy's irfftn reads from it: the columns of
 * the last axis that stand for themselves (bin 0, and bin n/2 for an even
 * n) must be Hermitian over the other transformed axes, and numpy's
 * transform keeps only that part of them (the real part of the inverse,
 * in one dimension: their imaginary parts are dropped). Each pair of
 * mirrored elements c[i], c[-i] becomes (c[i] + conj c[-i]) / 2 and its
 * conjugate, as a transform of the whole would leave them. x: complex,
 * its last axis n / 2 + 1 bins, its last k axes transformed. */
static void hermitian_edges(kiln_array *x, unsigned k, size_t n)
{
  size_t m = n / 2 + 1, lead = x->count / m, inner = 1; /* inner: of the k - 1 */
  for (unsigned a = x->ndim - k; a + 1 < x->ndim; a++)
    inner *= x->shape[a];
  for (size_t col = 0; col < m; col += n % 2 == 0 && n / 2 > 0 ? n / 2 : m)
    for (size_t row = 0; row < lead; row++) {
      size_t base = row - row % inner, i = row % inner, j = 0, rest = i, stride = 1;
      for (unsigned a = x->ndim - 1; a-- > x->ndim - k;) { /* j = -i, axis by axis */
        size_t s = x->shape[a];
        j += (s - rest % s) % s * stride;
        rest /= s, stride *= s;
      }
      if (j < i)
        continue; /* done with its mirror */
      double u[2], w[2];
      get_c(x, (base + i) * m + col, u);
      get_c(x, (base + j) * m + col, w);
      double v[2] = {(u[0] + w[0]) / 2, (u[1] - w[1]) / 2}, vc[2] = {v[0], -v[1]};
      set_c(x, (base + i) * m + col, v);
      set_c(x, (base + j) * m + col, vc);
    }
}

/* The kind of transform, and the checks on X that need no device. */
static int check(const fft_args *f, const kiln_array *x, kiln_fft_kind *kind)
{
  int cplx = x->dtype == KILN_C32 || x->dtype == KILN_C64;
  *kind = !f->real ? KILN_FFT_C2C : f->inverse ? KILN_FFT_C2R : KILN_FFT_R2C;
  if (*kind == KILN_FFT_R2C && cplx)
    return run_say("X holds %s; --real transforms real input (numpy's rfft would "
                   "drop the imaginary parts): leave --real out for the complex "
                   "transform",
                   kiln_dtype_name(x->dtype)),
           -1;
  if (check_axes(f, x) != 0)
    return -1;
  if (x->count == 0)
    return run_say("X has no elements"), -1;
  if (*kind == KILN_FFT_C2R && !f->n && x->shape[x->ndim - 1] == 1)
    return run_say("--real --inverse of 1 bin is 0 values by default (2 (m - 1)); give "
                   "the length with --n"),
           -1;
  return 0;
}

/* X made what the transform reads: in its precision (numpy's: float64 for
 * float64, complex128 and integers, else float32), complex unless R2C, its
 * last axis as long as the transform takes; then the request and the array
 * that receives the result, its data allocated. -1 after saying why. */
static int plan(kiln_runtime *rt, const fft_args *f, kiln_fft_kind kind, kiln_array *x,
                kiln_fft_desc *d, kiln_array *y)
{
  kiln_dtype t = x->dtype;
  int wide = t == KILN_F64 || t == KILN_C64 || t == KILN_I32 || t == KILN_I64;
  kiln_dtype real = wide ? KILN_F64 : KILN_F32, cplx = wide ? KILN_C64 : KILN_C32;
  unsigned nd = x->ndim, k = (unsigned)f->axes.n, first = nd - k;
  size_t m = x->shape[nd - 1], n = f->n                   ? (size_t)f->n
                                   : kind == KILN_FFT_C2R ? 2 * (m - 1)
                                                          : m;
  size_t take = kind == KILN_FFT_C2R ? n / 2 + 1 : n;
  if ((t != cplx && run_to_type(rt, x, real) != 0) ||
      (kind != KILN_FFT_R2C && x->dtype == real && to_complex(x) != 0) ||
      (take != m && resize_last(x, take) != 0))
    return -1;
  if (kind == KILN_FFT_C2R)
    hermitian_edges(x, k, n);
  kiln_fft_desc_init(d, real, n);
  d->kind = kind, d->ndim = k, d->inverse = f->inverse && kind == KILN_FFT_C2C;
  d->norm = (kiln_fft_norm)f->norm;
  d->backend = run_backend_named(fft_backends[f->backend]);
  d->batch = 1;
  for (unsigned i = 0; i < first; i++)
    d->batch *= x->shape[i];
  memcpy(d->shape, x->shape + first, k * sizeof *d->shape);
  d->shape[k - 1] = n;
  *y = (kiln_array){.dtype = kind == KILN_FFT_C2R ? real : cplx, .ndim = nd};
  memcpy(y->shape, x->shape, sizeof y->shape);
  y->shape[nd - 1] = kind == KILN_FFT_R2C ? n / 2 + 1 : n;
  y->count = x->count / take * y->shape[nd - 1];
  return run_alloc_result(y);
}

/* The transform through kiln_fft_host(), which cuts a batch larger than the
 * device into pieces, or over the group grp; timed into *ms, the plan and
 * transfers included. x has elements (check()). */
static kiln_status compute(kiln_runtime *rt, kiln_group *grp, const kiln_fft_desc *d,
                           const kiln_array *x, kiln_array *y, double *ms)
{
  double t0 = run_now_ms();
  kiln_status st = grp ? kiln_group_fft_host(grp, d, x->data, y->data)
                       : kiln_fft_host(rt, d, x->data, y->data);
  *ms = run_now_ms() - t0;
  return st;
}

/* in: X as given (its type and shape; x: as transformed). */
static void report(kiln_runtime *rt, kiln_group *grp, const fft_args *f,
                   const kiln_fft_desc *d, const kiln_array *in, const kiln_array *x,
                   const kiln_array *y, double ms)
{
  static const char *const kinds[] = {"C2C", "R2C", "C2R"};
  char xs[160], ys[160], as[64] = "";
  run_shape_text(xs, sizeof xs, in->ndim, in->shape);
  run_shape_text(ys, sizeof ys, y->ndim, y->shape);
  if (in->dtype != x->dtype || in->count != x->count)
    snprintf(as, sizeof as, " as %s (%zu values a row)", kiln_dtype_name(x->dtype),
             x->shape[x->ndim - 1]);
  double n = 1;
  for (unsigned i = 0; i < d->ndim; i++)
    n *= (double)d->shape[i];
  double flops = 5 * n * log2(n) * (double)d->batch * (d->kind == KILN_FFT_C2C ? 1 : 0.5);
  printf(
    "device   %s\nbackend  %s\nfft      %s%s of %s %s%s over the last %u ax%s, batch "
    "%zu, norm %s -> %s %s\ntime     %.2f ms (%.2f GFLOP/s at 5 N log2 N; one call "
    "with its plan, transfers included)\nwrote    %s\n",
    run_device_name(rt, grp), run_backend_label(d->backend), d->inverse ? "inverse " : "",
    kinds[d->kind], kiln_dtype_name(in->dtype), xs, as, d->ndim,
    d->ndim == 1 ? "is" : "es", d->batch, fft_norms[f->norm], kiln_dtype_name(y->dtype),
    ys, ms, ms > 0 ? flops / ms / 1e6 : 0.0, f->out);
  run_group_report(grp);
}

static int run_fft(int argc, char **argv)
{
  fft_args f;
  kiln_array x = {0}, y = {0};
  kiln_fft_desc d;
  kiln_fft_kind kind;
  kiln_runtime *rt = NULL;
  kiln_group *grp = NULL;
  double ms = 0;
  int rc = parse(&f, argc, argv);
  if (rc >= 0)
    return rc;
  rc = 1;
  if (run_load(f.x, &x) != 0 || check(&f, &x, &kind) != 0)
    goto done;
  kiln_array in = x; /* its type and shape, for the report */
  in.data = NULL;
  if (run_start(&rt) != 0 || run_group_start(f.devices, &grp) != 0 ||
      plan(rt, &f, kind, &x, &d, &y) != 0)
    goto done;
  kiln_status st = compute(rt, grp, &d, &x, &y, &ms);
  if (run_write(rt, grp, st, f.out, &y) != 0)
    goto done;
  report(rt, grp, &f, &d, &in, &x, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&y);
  kiln_group_destroy(grp);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
