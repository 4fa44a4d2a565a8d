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
  const char *x, *w, *bias, *out;
  kiln_conv2d_desc d; /* the options; sizes and dtype come from the files */
} conv_args;

static const char usage[] =
  "usage: kiln run conv2d X.npy W.npy -o Y.npy [--bias b.npy] [--stride S | SH,SW]\n"
  "                       [--pad P | T,B,L,R] [--dilation D | DH,DW] [--groups G]\n"
  "                       [--relu] [--layout nchw|nhwc]\n"
  "                       [--backend auto|im2col|direct|clblast]";

/* A known option with its value into c->d; -1 after saying why. */
static int value(conv_args *c, const char *o, const char *v)
{
  static const kiln_backend takes[] = {KILN_BACKEND_AUTO, KILN_BACKEND_IM2COL,
                                       KILN_BACKEND_DIRECT, KILN_BACKEND_CLBLAST};
  static const char *const layouts[] = {"nchw", "nhwc"};
  kiln_conv2d_desc *d = &c->d;
  size_t v4[4];
  int n = 0;
  if (strcmp(o, "-o") == 0 || strcmp(o, "--bias") == 0) {
    *(o[1] == 'o' ? &c->out : &c->bias) = v;
  } else if (strcmp(o, "--stride") == 0 || strcmp(o, "--dilation") == 0) {
    int stride = o[2] == 's';
    if ((n = run_parse_counts(o, v, 1, 2,
                              "one number or two (height,width), each "
                              "from 1 to 2^31-1",
                              v4)) < 0)
      return -1;
    *(stride ? &d->stride_h : &d->dilation_h) = v4[0];
    *(stride ? &d->stride_w : &d->dilation_w) = v4[n - 1];
  } else if (strcmp(o, "--pad") == 0) {
    if ((n = run_parse_counts(o, v, 0, 4,
                              "one number, or four (top,bottom,left,"
                              "right), each from 0 to 2^31-1",
                              v4)) < 0)
      return -1;
    d->pad_top = v4[0], d->pad_bottom = v4[n == 4 ? 1 : 0];
    d->pad_left = v4[n == 4 ? 2 : 0], d->pad_right = v4[n == 4 ? 3 : 0];
  } else if (strcmp(o, "--groups") == 0) {
    if (run_parse_counts(o, v, 1, 1, "a number from 1 to 2^31-1", v4) < 0)
      return -1;
    d->groups = v4[0];
  } else if (strcmp(o, "--layout") == 0) {
    if ((n = run_parse_enum(v, layouts, 2)) < 0)
      return run_say("--layout '%s': expected nchw or nhwc", v), -1;
    d->layout = (kiln_tensor_layout)n;
  } else { /* --backend: option() let known options only through */
    return run_parse_backend(v, &d->backend, takes, 4);
  }
  return 0;
}

/* One option (run_cli.option): --relu, or a known option and its value;
 * returns the arguments it used (1 or 2), or -1 after saying why. */
static int option(void *ctx, const char *o, const char *v)
{
  static const char *const known[] = {"-o",         "--bias",   "--stride", "--pad",
                                      "--dilation", "--groups", "--layout", "--backend"};
  conv_args *c = ctx;
  if (strcmp(o, "--relu") == 0) {
    c->d.relu = 1;
    return 1;
  }
  if (run_option_value(o, v, known, sizeof known / sizeof known[0]) != 0)
    return -1;
  return value(c, o, v) == 0 ? 2 : -1;
}

static int parse(conv_args *c, int argc, char **argv)
{
  memset(c, 0, sizeof *c);
  kiln_conv2d_desc_init(&c->d, KILN_F32, 0, 0, 0, 0, 0, 0, 0);
  run_cli cli = {option, c, {&c->x, &c->w}, "array"};
  if (run_parse_args(&cli, argc, argv) != 0)
    return -1;
  if (!c->x || !c->w || !c->out)
    return run_usage(usage);
  return 0;
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

/* a (W or the bias) in type t, converted on the device when it is not:
 * a's data replaced by the converted values. -1 after saying why. */
static int to_type(kiln_runtime *rt, kiln_array *a, kiln_dtype t)
{
  if (a->dtype == t)
    return 0;
  kiln_array conv = *a;
  conv.dtype = t;
  if (run_alloc_result(&conv) != 0)
    return -1;
  kiln_buffer *buf = NULL;
  kiln_status st = run_upload(rt, a, t, &buf);
  if (st == KILN_OK)
    st = kiln_buffer_read(buf, 0, a->count, conv.data);
  kiln_buffer_destroy(buf);
  if (st != KILN_OK) {
    free(conv.data);
    return run_say("%s", kiln_last_error(rt)), -1;
  }
  kiln_array_free(a);
  *a = conv;
  return 0;
}

/* The convolution through kiln_conv2d_host(), which cuts what does not fit
 * the device into pieces; timed into *ms, transfers included. */
static kiln_status compute(kiln_runtime *rt, const kiln_conv2d_desc *d,
                           const kiln_array *x, const kiln_array *w, const kiln_array *b,
                           kiln_array *y, double *ms)
{
  double t0 = run_now_ms();
  kiln_status st = kiln_conv2d_host(rt, d, x->data, w->data, b ? b->data : NULL, y->data);
  *ms = run_now_ms() - t0;
  return st;
}

static void report(kiln_runtime *rt, const conv_args *c, const kiln_array *x,
                   const kiln_array *w, const kiln_array *y, double ms)
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
         "pad %zu,%zu,%zu,%zu, dilation %zu,%zu, groups %zu%s%s -> %s\n"
         "time     %.2f ms (%.1f GFLOP/s; one call, transfers included)\n"
         "wrote    %s\n",
         kiln_runtime_device(rt)->name, run_backend_label(d->backend),
         kiln_dtype_name(d->dtype), xs, ws, d->layout == KILN_NHWC ? "NHWC" : "NCHW",
         d->stride_h ? d->stride_h : 1, d->stride_w ? d->stride_w : 1, d->pad_top,
         d->pad_bottom, d->pad_left, d->pad_right, d->dilation_h ? d->dilation_h : 1,
         d->dilation_w ? d->dilation_w : 1, groups, c->bias ? ", bias" : "",
         d->relu ? ", relu" : "", ys, ms, ms > 0 ? flops / ms / 1e6 : 0.0, c->out);
}

int run_conv2d(int argc, char **argv)
{
  conv_args c;
  kiln_array x = {0}, w = {0}, b = {0}, y = {0};
  kiln_runtime *rt = NULL;
  size_t p = 0, q = 0;
  double ms = 0;
  int rc = 1;
  if (parse(&c, argc, argv) != 0 || run_load(c.x, &x) != 0 || run_load(c.w, &w) != 0 ||
      (c.bias && run_load(c.bias, &b) != 0) ||
      shapes(&c, &x, &w, c.bias ? &b : NULL, &p, &q) != 0)
    goto done;
  int nhwc = c.d.layout == KILN_NHWC;
  y = (kiln_array){.dtype = c.d.dtype,
                   .ndim = 4,
                   .count = c.d.n * c.d.k * p * q,
                   .shape = {c.d.n, nhwc ? p : c.d.k, nhwc ? q : p, nhwc ? c.d.k : q}};
  if (run_alloc_result(&y) != 0 || run_start(&rt) != 0 ||
      to_type(rt, &w, c.d.dtype) != 0 || (c.bias && to_type(rt, &b, c.d.dtype) != 0))
    goto done;
  kiln_status st = compute(rt, &c.d, &x, &w, c.bias ? &b : NULL, &y, &ms);
  if (run_write(rt, st, c.out, &y) != 0)
    goto done;
  report(rt, &c, &x, &w, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&w), kiln_array_free(&b), kiln_array_free(&y);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
