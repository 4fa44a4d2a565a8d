/*
 * run_conv.c — `kiln run conv2d X.npy W.npy -o Y.npy [options]`: one 2-D
 * convolution of .npy files (what the operations share is in run.c).
 *
 * X sets the compute type (float16, float32, float64); W and the bias are
 * converted to it on the device. X and Y go through kiln_conv2d_host(), so
 * arrays larger than the device (or KILN_MEMORY_LIMIT) run in pieces; the
 * time is that one call, transfers included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct conv_args {
  const char *x, *w, *bias, *out, *devices;
  cli_ints stride, pad, dilation;
  long groups;
  int relu, layout, backend; /* layout: kiln_tensor_layout; backend: conv_backends' */
  int activation;            /* kiln_activation: run_activations' index */
  kiln_conv2d_desc d;        /* the options; sizes and dtype come from the files */
} conv_args;

static const char *const conv_layouts[] = {"nchw", "nhwc", NULL};
static const char *const conv_backends[] = {"auto", "im2col", "direct", "clblast", NULL};

static const cli_option conv_rows[] = {
  {.name = "X.npy",
   CLI_TEXT_AT(conv_args, x),
   .help = "the input: (n, c, h, w), or (n, h, w, c) with --layout nhwc; float16, "
           "float32 or float64, which sets the compute type",
   .required = 1},
  {.name = "W.npy",
   CLI_TEXT_AT(conv_args, w),
   .help = "the filters: (k, c/groups, r, s), or (k, r, s, c/groups) with --layout "
           "nhwc; converted to X's type",
   .required = 1},
  {.name = "-o",
   CLI_TEXT_AT(conv_args, out),
   .value = "Y.npy",
   .help = "the result: (n, k, p, q), or (n, p, q, k) with --layout nhwc",
   .required = 1},
  {.name = "--bias",
   CLI_TEXT_AT(conv_args, bias),
   .value = "b.npy",
   .help = "one value per output channel, shape (k,), added to each",
   .def_text = "none"},
  {.name = "--stride",
   CLI_INTS_AT(conv_args, stride),
   .value = "S|SH,SW",
   .help = "the filter's step: one for both axes, or height,width",
   .def = "1",
   .min = 1,
   .max = CLI_INT31,
   .counts = 1u << 1 | 1u << 2},
  {.name = "--pad",
   CLI_INTS_AT(conv_args, pad),
   .value = "P|PH,PW|T,B,L,R",
   .help = "zeros around the input: one for every side, height,width (each on both "
           "sides, as PyTorch's padding), or top,bottom,left,right",
   .def = "0",
   .min = 0,
   .max = CLI_INT31,
   .counts = 1u << 1 | 1u << 2 | 1u << 4},
  {.name = "--dilation",
   CLI_INTS_AT(conv_args, dilation),
   .value = "D|DH,DW",
   .help = "the spacing of the filter's taps: one for both axes, or height,width",
   .def = "1",
   .min = 1,
   .max = CLI_INT31,
   .counts = 1u << 1 | 1u << 2},
  {.name = "--groups",
   CLI_INT_AT(conv_args, groups),
   .value = "G",
   .help = "channel groups; c and k must be multiples (c for depthwise)",
   .def = "1",
   .min = 1,
   .max = CLI_INT31},
  {.name = "--relu",
   CLI_FLAG_AT(conv_args, relu),
   .help = "max(0, y), fused: --activation relu"},
  {.name = "--activation",
   CLI_CHOICE_AT(conv_args, activation),
   .help = "applied to y after the bias, fused into the kernel that writes it",
   .def = "none",
   .choices = run_activations},
  {.name = "--layout",
   CLI_CHOICE_AT(conv_args, layout),
   .help = "the order of X's, W's and Y's axes",
   .def = "nchw",
   .choices = conv_layouts},
  {.name = "--backend",
   CLI_CHOICE_AT(conv_args, backend),
   .help = "im2col and kiln's GEMM, kiln's direct kernel, CLBlast's convgemm, or "
           "kiln's rules (auto)",
   .def = "auto",
   .choices = conv_backends},
  RUN_DEVICES_ROW(conv_args, devices),
};

static int run_conv2d(int argc, char **argv);

const cli_command run_conv2d_command = {
  .name = "kiln run conv2d",
  .summary = "a 2-D convolution of .npy files (cross-correlation, as PyTorch's conv2d)",
  CLI_ROWS(conv_rows),
  .about = "X and Y go through kiln_conv2d_host(), so arrays larger than the device\n"
           "run in pieces; the time is that one call, transfers included. With\n"
           "--devices, kiln_group_conv2d_host() over a device group, images of the\n"
           "batch to each device." RUN_ARRAYS_NOTE,
  .example = "kiln run conv2d x.npy w.npy --pad 1 --stride 2 --relu -o y.npy",
  .run = run_conv2d,
};

/* The options into c->d; -1 to go on, else the exit status. */
static int parse(conv_args *c, int argc, char **argv)
{
  memset(c, 0, sizeof *c);
  int rc = run_parse(&run_conv2d_command, c, argc, argv);
  if (rc >= 0)
    return rc;
  kiln_conv2d_desc *d = &c->d;
  const long *pad = c->pad.v, *s = c->stride.v, *dil = c->dilation.v;
  int p4 = c->pad.n == 4, p2 = c->pad.n == 2;
  kiln_conv2d_desc_init(d, KILN_F32, 0, 0, 0, 0, 0, 0, 0);
  d->stride_h = (size_t)s[0], d->stride_w = (size_t)s[c->stride.n - 1];
  d->dilation_h = (size_t)dil[0], d->dilation_w = (size_t)dil[c->dilation.n - 1];
  d->pad_top = (size_t)pad[0], d->pad_bottom = (size_t)pad[p4 ? 1 : 0];
  d->pad_left = (size_t)pad[p4 ? 2 : p2 ? 1 : 0];
  d->pad_right = (size_t)pad[p4 ? 3 : p2 ? 1 : 0];
  d->groups = (size_t)c->groups;
  d->relu = c->relu;
  d->activation = (kiln_activation)c->activation;
  d->layout = (kiln_tensor_layout)c->layout;
  d->backend = run_backend_named(conv_backends[c->backend]);
  return -1;
}

/* The sizes of x and W into c->d, checked against each other and the
 * options; the output's sides into *p and *q. -1 after saying why. */
static int shapes(conv_args *c, const kiln_array *x, const kiln_array *w,
                  const kiln_array *b, size_t *p, size_t *q)
{
  kiln_conv2d_desc *d = &c->d;
  int nhwc = d->layout == KILN_NHWC;
  const char *order = nhwc ? "(n, h, w, c)" : "(n, c, h, w)";
  if (x->ndim != 4)
    return run_say("X (%s) has %u dimensions; expected 4, %s", c->x, x->ndim, order), -1;
  if (w->ndim != 4)
    return run_say("W (%s) has %u dimensions; expected 4, %s", c->w, w->ndim,
                   nhwc ? "(k, r, s, c/groups)" : "(k, c/groups, r, s)"),
           -1;
  if (x->dtype != KILN_F16 && x->dtype != KILN_F32 && x->dtype != KILN_F64)
    return run_say("X holds %s; kiln convolves float16, float32 and float64",
                   kiln_dtype_name(x->dtype)),
           -1;
  d->dtype = x->dtype;
  d->n = x->shape[0], d->c = x->shape[nhwc ? 3 : 1];
  d->h = x->shape[nhwc ? 1 : 2], d->w = x->shape[nhwc ? 2 : 3];
  d->k = w->shape[0], d->r = w->shape[nhwc ? 1 : 2], d->s = w->shape[nhwc ? 2 : 3];
  if (kiln_conv2d_output(d, p, q) != KILN_OK)
    return run_say("%s", kiln_last_error(NULL)), -1;
  size_t groups = d->groups ? d->groups : 1, wc = w->shape[nhwc ? 3 : 1];
  if (wc != d->c / groups)
    return run_say("W has %zu input channels per filter, but X has %zu channels in %zu "
                   "group%s; expected %zu",
                   wc, d->c, groups, groups == 1 ? "" : "s", d->c / groups),
           -1;
  if (b && (b->ndim != 1 || b->shape[0] != d->k))
    return run_say("--bias (%s) has %u dimensions of %zu values; expected one value "
                   "per output channel, shape (%zu,)",
                   c->bias, b->ndim, b->ndim ? b->shape[0] : 1, d->k),
           -1;
  return 0;
}

/* The convolution through kiln_conv2d_host(), which cuts what does not fit
 * the device into pieces, or over the group grp; timed into *ms, transfers
 * included. */
static kiln_status compute(kiln_runtime *rt, kiln_group *grp, const kiln_conv2d_desc *d,
                           const kiln_array *x, const kiln_array *w, const kiln_array *b,
                           kiln_array *y, double *ms)
{
  double t0 = run_now_ms();
  const void *bias = b ? b->data : NULL;
  kiln_status st = grp ? kiln_group_conv2d_host(grp, d, x->data, w->data, bias, y->data)
                       : kiln_conv2d_host(rt, d, x->data, w->data, bias, y->data);
  *ms = run_now_ms() - t0;
  return st;
}

static void report(kiln_runtime *rt, kiln_group *grp, const conv_args *c,
                   const kiln_array *x, const kiln_array *w, const kiln_array *y,
                   double ms)
{
  const kiln_conv2d_desc *d = &c->d;
  char xs[160], ws[160], ys[160];
  run_shape_text(xs, sizeof xs, x->ndim, x->shape);
  run_shape_text(ws, sizeof ws, w->ndim, w->shape);
  run_shape_text(ys, sizeof ys, y->ndim, y->shape);
  size_t groups = d->groups ? d->groups : 1;
  double flops =
    2.0 * (double)y->count * (double)(d->c / groups) * (double)d->r * (double)d->s;
  printf("device   %s\nbackend  %s\nconv2d   %s X %s * W %s, %s, stride %zu,%zu, "
         "pad %zu,%zu,%zu,%zu, dilation %zu,%zu, groups %zu%s%s%s -> %s\n"
         "time     %.2f ms (%.1f GFLOP/s; one call, transfers included)\n"
         "wrote    %s\n",
         run_device_name(rt, grp), run_backend_label(d->backend),
         kiln_dtype_name(d->dtype), xs, ws, d->layout == KILN_NHWC ? "NHWC" : "NCHW",
         d->stride_h ? d->stride_h : 1, d->stride_w ? d->stride_w : 1, d->pad_top,
         d->pad_bottom, d->pad_left, d->pad_right, d->dilation_h ? d->dilation_h : 1,
         d->dilation_w ? d->dilation_w : 1, groups, c->bias ? ", bias" : "",
         d->activation || d->relu ? ", " : "",
         d->activation || d->relu
           ? kiln_activation_name(d->relu ? KILN_ACTIVATION_RELU : d->activation)
           : "",
         ys, ms, ms > 0 ? flops / ms / 1e6 : 0.0, c->out);
  run_group_report(grp);
}

static int run_conv2d(int argc, char **argv)
{
  conv_args c;
  kiln_array x = {0}, w = {0}, b = {0}, y = {0};
  kiln_runtime *rt = NULL;
  kiln_group *grp = NULL;
  size_t p = 0, q = 0;
  double ms = 0;
  int rc = parse(&c, argc, argv);
  if (rc >= 0)
    return rc;
  rc = 1;
  if (run_load(c.x, &x) != 0 || run_load(c.w, &w) != 0 ||
      (c.bias && run_load(c.bias, &b) != 0) ||
      shapes(&c, &x, &w, c.bias ? &b : NULL, &p, &q) != 0)
    goto done;
  int nhwc = c.d.layout == KILN_NHWC;
  y = (kiln_array){.dtype = c.d.dtype,
                   .ndim = 4,
                   .count = c.d.n * c.d.k * p * q,
                   .shape = {c.d.n, nhwc ? p : c.d.k, nhwc ? q : p, nhwc ? c.d.k : q}};
  if (run_alloc_result(&y) != 0 || run_start(&rt) != 0 ||
      run_group_start(c.devices, &grp) != 0 || run_to_type(rt, &w, c.d.dtype) != 0 ||
      (c.bias && run_to_type(rt, &b, c.d.dtype) != 0))
    goto done;
  kiln_status st = compute(rt, grp, &c.d, &x, &w, c.bias ? &b : NULL, &y, &ms);
  if (run_write(rt, grp, st, c.out, &y) != 0)
    goto done;
  report(rt, grp, &c, &x, &w, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&w), kiln_array_free(&b), kiln_array_free(&y);
  kiln_group_destroy(grp);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
