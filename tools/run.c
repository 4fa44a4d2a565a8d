/*
 * run.c — `kiln run gemm A.npy B.npy -o C.npy [options]`,
 * `kiln run reduce --op OP [--axis N] X.npy -o Y.npy` and
 * `kiln run conv2d X.npy W.npy -o Y.npy [options]` and
 * `kiln run fft X.npy -o Y.npy [--inverse] [--real] [--axes A,...]`: one operation on .npy
 * files, with the device, the backend and the time on stdout. A failure is
 * one line on stderr, a non-zero exit, and no output file.
 *
 * gemm: arrays already in the compute type go straight to kiln_gemm_host(),
 * which cuts problems larger than the device into panels. Others are
 * converted on the device (kiln_convert) and multiplied there.
 *
 * reduce: the array goes to kiln_reduce_host() as it is (it reduces arrays
 * larger than the device in chunks); the result has the input's shape
 * without the reduced axis, a 0-d array when every element is reduced.
 *
 * conv2d: X sets the compute type (float16, float32, float64); W and the
 * bias are converted to it on the device. The time is one kiln_conv2d() and
 * kiln_finish() on buffers already on the device.
 *
 * fft: complex64/complex128 (C2C), float32/float64 with --real (R2C), or
 * complex with --real --inverse (C2R, to --n or 2 (m - 1) values); over the
 * last one to three axes, the leading ones the batch, as kiln_fft() takes C
 * order. The time is one kiln_fft() and kiln_finish(), plan included.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kiln/kiln.h"

typedef struct gemm_args {
  const char *a, *b, *c0, *out;
  kiln_gemm_desc d;
  int dtype_given, beta_given;
} gemm_args;

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The command running, for messages: "kiln run gemm", "kiln run reduce". */
static const char *who = "kiln run";

static int say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr: what was wrong with the command. */
static int say(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", who);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

static const char usage[] =
  "usage: kiln run gemm A.npy B.npy -o C.npy [--ta] [--tb] [--alpha X] [--beta Y]\n"
  "                     [--c C0.npy] [--dtype float16|float32|float64]\n"
  "                     [--backend auto|kiln|clblast]";

static int parse_number(const char *s, double *v)
{
  char *end;
  *v = strtod(s, &end);
  return *s && !*end && isfinite(*v) ? 0 : -1;
}

static int parse_enum(const char *s, const char *const *names, int n)
{
  for (int i = 0; i < n; i++)
    if (names[i] && strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

/* --backend's value, one of the n backends an operation takes, into *be;
 * 0, or -1 after saying why ("expected auto, kiln or clblast"). */
static int parse_backend_of(const char *v, kiln_backend *be, const kiln_backend *takes,
                            int n)
{
  char names[96];
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(v, kiln_backend_name(takes[i])) == 0) {
      *be = takes[i];
      return 0;
    }
    at += (size_t)snprintf(names + at, sizeof names - at, "%s%s",
                           i == 0 ? "" : i == n - 1 ? " or " : ", ",
                           kiln_backend_name(takes[i]));
  }
  return say("--backend '%s': expected %s", v, names), -1;
}

/* gemm's and reduce's --backend: auto, kiln or clblast. */
static int parse_backend(const char *v, kiln_backend *be)
{
  static const kiln_backend takes[] = {KILN_BACKEND_AUTO, KILN_BACKEND_KILN,
                                       KILN_BACKEND_CLBLAST};
  return parse_backend_of(v, be, takes, 3);
}

/* Loads a .npy file in C order; -1 after saying why. */
static int load_c_order(const char *path, kiln_array *x)
{
  if (kiln_npy_load(path, x) != KILN_OK || kiln_array_to_c_order(x) != KILN_OK)
    return say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

/* Writes the result; -1 after saying why. */
static int save(const char *path, const kiln_array *y)
{
  if (kiln_npy_save(path, y) != KILN_OK)
    return say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

/* The runtime on the best device (or KILN_DEVICE's); -1 after saying why. */
static int start(kiln_runtime **rt)
{
  if (kiln_runtime_create(NULL, rt) != KILN_OK)
    return say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

/* One option; returns the arguments it used (1 or 2), or -1. */
static int option(gemm_args *g, int argc, char **argv, int i)
{
  static const char *const dtypes[] = {NULL, "float16", "float32", "float64"};
  const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
  int k;
  if (strcmp(o, "--ta") == 0 || strcmp(o, "--tb") == 0) {
    *(o[3] == 'a' ? &g->d.trans_a : &g->d.trans_b) = KILN_TRANS;
    return 1;
  }
  if (!v)
    return say("%s needs a value", o), -1;
  if (strcmp(o, "-o") == 0)
    g->out = v;
  else if (strcmp(o, "--c") == 0)
    g->c0 = v;
  else if (strcmp(o, "--alpha") == 0 || strcmp(o, "--beta") == 0) {
    if (parse_number(v, o[2] == 'a' ? &g->d.alpha : &g->d.beta) != 0)
      return say("%s takes a finite number", o), -1;
    g->beta_given |= o[2] == 'b';
  } else if (strcmp(o, "--dtype") == 0) {
    if ((k = parse_enum(v, dtypes, 4)) < 0)
      return say("--dtype '%s': expected float16, float32 or float64", v), -1;
    g->d.dtype = (kiln_dtype)k;
    g->dtype_given = 1;
  } else if (strcmp(o, "--backend") == 0) {
    if (parse_backend(v, &g->d.backend) != 0)
      return -1;
  } else
    return say("unknown option '%s'", o), -1;
  return 2;
}

static int parse(gemm_args *g, int argc, char **argv)
{
  memset(g, 0, sizeof *g);
  g->d.alpha = 1;
  for (int i = 1; i < argc;) {
    if (argv[i][0] == '-' && argv[i][1]) {
      int used = option(g, argc, argv, i);
      if (used < 0)
        return -1;
      i += used;
    } else if (!g->a || !g->b) {
      *(g->a ? &g->b : &g->a) = argv[i++];
    } else {
      return say("one matrix too many: '%s'", argv[i]), -1;
    }
  }
  if (!g->a || !g->b || !g->out)
    return fprintf(stderr, "%s\n", usage), -1;
  if (g->c0 && !g->beta_given)
    g->d.beta = 1; /* C = alpha A B + C0 */
  return 0;
}

/* Loads a 2-D .npy file in C order. */
static int load(const char *path, const char *name, kiln_array *x)
{
  if (load_c_order(path, x) != 0)
    return -1;
  if (x->ndim != 2)
    return say("%s (%s) has %u dimensions; expected a matrix (2)", name, path,
               x->ndim), -1;
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
  if (kb != d->k) {
    fprintf(stderr, "kiln run gemm: op(A) is %zu x %zu but op(B) is %zu x %zu; expected "
            "op(B) to have %zu rows\n", d->m, d->k, kb, d->n, d->k);
    return -1;
  }
  if (c0 && (c0->ndim != 2 || c0->shape[0] != d->m || c0->shape[1] != d->n)) {
    fprintf(stderr, "kiln run gemm: --c is not a %zu x %zu matrix\n", d->m, d->n);
    return -1;
  }
  if (!g->dtype_given)
    d->dtype = a->dtype;
  if (d->dtype != KILN_F16 && d->dtype != KILN_F32 && d->dtype != KILN_F64) {
    fprintf(stderr, "kiln run gemm: A holds %s; pass --dtype float16, float32 or "
            "float64 to compute in one of those\n", kiln_dtype_name(a->dtype));
    return -1;
  }
  return 0;
}

/* Uploads x and converts it to dtype on the device (one write when x
 * already holds dtype). */
static kiln_status upload(kiln_runtime *rt, const kiln_array *x, kiln_dtype dtype,
                          kiln_buffer **out)
{
  kiln_buffer *raw = NULL;
  size_t n = x->count ? x->count : 1;
  if (x->dtype == dtype) {
    kiln_status st = kiln_buffer_create(rt, dtype, n, 0, out);
    return st == KILN_OK ? kiln_buffer_write(*out, 0, x->count, x->data) : st;
  }
  kiln_status st = kiln_buffer_create(rt, x->dtype, n, 0, &raw);
  if (st == KILN_OK)
    st = kiln_buffer_write(raw, 0, x->count, x->data);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, dtype, n, 0, out);
  if (st == KILN_OK)
    st = kiln_convert(*out, raw);
  kiln_buffer_destroy(raw);
  return st;
}

/* C = alpha op(A) op(B) + beta C in the compute type, into c (dtype d). */
static kiln_status compute(kiln_runtime *rt, const kiln_gemm_desc *d, const kiln_array *a,
                           const kiln_array *b, kiln_array *c)
{
  if (a->dtype == d->dtype && b->dtype == d->dtype && c->dtype == d->dtype)
    return kiln_gemm_host(rt, d, a->data, b->data, c->data);
  kiln_buffer *da = NULL, *db = NULL, *dc = NULL, *out = NULL;
  kiln_status st = upload(rt, a, d->dtype, &da);
  if (st == KILN_OK)
    st = upload(rt, b, d->dtype, &db);
  if (st == KILN_OK)
    st = upload(rt, c, d->dtype, &dc);
  if (st == KILN_OK)
    st = kiln_gemm(rt, d, da, db, dc);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, c->dtype, c->count, 0, &out);
  if (st == KILN_OK)
    st = kiln_convert(out, dc);
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
  int rc = 1;
  who = "kiln run gemm";
  if (parse(&g, argc, argv) != 0 || load(g.a, "A", &a) != 0 || load(g.b, "B", &b) != 0 ||
      (g.c0 && load(g.c0, "C0", &c) != 0) || shapes(&g, &a, &b, g.c0 ? &c : NULL) != 0)
    goto done;
  if (!g.c0) { /* C starts as zeros of the compute type (beta is 0: never read) */
    c = (kiln_array){.dtype = g.d.dtype, .ndim = 2, .shape = {g.d.m, g.d.n},
                     .count = g.d.m * g.d.n};
    c.data = calloc(c.count ? c.count : 1, 8);
  } else if (c.dtype != g.d.dtype) {
    say("--c holds another dtype than the computation (%s)", kiln_dtype_name(g.d.dtype));
    goto done;
  }
  if (start(&rt) != 0)
    goto done;
  kiln_backend be = kiln_gemm_backend_for(rt, &g.d);
  double t0 = now_ms();
  kiln_status st = compute(rt, &g.d, &a, &b, &c);
  double ms = now_ms() - t0;
  if (st != KILN_OK) {
    say("%s", kiln_last_error(rt));
    goto done;
  }
  if (save(g.out, &c) != 0)
    goto done;
  printf("device   %s\nbackend  %s\nproduct  %zu x %zu x %zu %s\ntime     %.2f ms "
         "(%.1f GFLOP/s, transfers included)\nwrote    %s\n",
         kiln_runtime_device(rt)->name, kiln_backend_name(be), g.d.m, g.d.n, g.d.k,
         kiln_dtype_name(g.d.dtype), ms, 2.0 * g.d.m * g.d.n * g.d.k / ms / 1e6, g.out);
  rc = 0;
done:
  kiln_array_free(&a), kiln_array_free(&b), kiln_array_free(&c);
  kiln_runtime_destroy(rt);
  return rc;
}

/* ---- kiln run reduce ------------------------------------------------------ */

typedef struct reduce_args {
  const char *x, *out;
  kiln_reduce_op op;
  int32_t axis; /* as given, or KILN_AXIS_ALL */
  kiln_backend backend;
} reduce_args;

static const char reduce_usage[] =
  "usage: kiln run reduce --op sum|mean|min|max|argmin|argmax|norm [--axis N]\n"
  "                       [--backend auto|kiln|clblast] X.npy -o Y.npy";

/* One option and its value; -1 after saying why. */
static int reduce_option(reduce_args *r, const char *o, const char *v)
{
  if (!v)
    return say("%s needs a value", o), -1;
  if (strcmp(o, "-o") == 0) {
    r->out = v;
  } else if (strcmp(o, "--op") == 0) {
    int k = KILN_REDUCE_SUM;
    while (k <= KILN_REDUCE_NORM2 && strcmp(v, kiln_reduce_op_name((kiln_reduce_op)k)) != 0)
      k++;
    if (k > KILN_REDUCE_NORM2)
      return say("--op '%s': expected sum, mean, min, max, argmin, argmax or norm", v), -1;
    r->op = (kiln_reduce_op)k;
  } else if (strcmp(o, "--axis") == 0) {
    char *end;
    long a = strtol(v, &end, 10);
    if (!*v || *end || a < -KILN_ARRAY_MAX_DIMS || a >= KILN_ARRAY_MAX_DIMS)
      return say("--axis '%s': expected an integer from %d to %d", v,
                 -KILN_ARRAY_MAX_DIMS, KILN_ARRAY_MAX_DIMS - 1), -1;
    r->axis = (int32_t)a;
  } else if (strcmp(o, "--backend") == 0) {
    return parse_backend(v, &r->backend) == 0 ? 0 : -1;
  } else {
    return say("unknown option '%s'", o), -1;
  }
  return 0;
}

static int reduce_parse(reduce_args *r, int argc, char **argv)
{
  *r = (reduce_args){.axis = KILN_AXIS_ALL};
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1]) {
      if (reduce_option(r, argv[i], i + 1 < argc ? argv[i + 1] : NULL) != 0)
        return -1;
      i++;
    } else if (!r->x) {
      r->x = argv[i];
    } else {
      return say("one array too many: '%s'", argv[i]), -1;
    }
  }
  if (!r->x || !r->out || !r->op)
    return fprintf(stderr, "%s\n", reduce_usage), -1;
  return 0;
}

/* Writes "(2, 3)" into buf, as numpy prints a shape. */
static void shape_text(char *buf, size_t size, unsigned ndim, const size_t *shape)
{
  size_t at = (size_t)snprintf(buf, size, "(");
  for (unsigned i = 0; i < ndim && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%zu", i ? ", " : "", shape[i]);
  if (at < size)
    snprintf(buf + at, size - at, ndim == 1 ? ",)" : ")");
}

/* The request for x and the array that receives its result (x's shape
 * without the axis), its data zeroed; -1 after saying why. */
static int reduce_plan(const reduce_args *r, const kiln_array *x, kiln_reduce_desc *d,
                       kiln_array *y)
{
  kiln_dtype out = kiln_reduce_out_dtype(r->op, x->dtype);
  if (!out)
    return say("X holds %s; kiln reduces float16, float32, float64 and int32",
               kiln_dtype_name(x->dtype)), -1;
  int all = r->axis == KILN_AXIS_ALL;
  int32_t axis = !all && r->axis < 0 ? r->axis + (int32_t)x->ndim : r->axis;
  if (!all && x->ndim == 0)
    return say("X is a 0-d array, which has no axis; leave --axis out"), -1;
  if (!all && (axis < 0 || axis >= (int32_t)x->ndim))
    return say("--axis %d is out of range for an array of %u dimensions; expected "
               "%d to %d", (int)r->axis, x->ndim, -(int)x->ndim, (int)x->ndim - 1), -1;
  kiln_reduce_desc_init(d, r->op, x->dtype, x->count);
  d->backend = r->backend;
  if (x->ndim > 0) { /* a 0-d array stays the 1-D view of its one element */
    d->ndim = x->ndim;
    memcpy(d->shape, x->shape, sizeof d->shape);
    d->axis = r->axis;
  }
  *y = (kiln_array){.dtype = out, .count = 1};
  for (unsigned i = 0; i < x->ndim && !all; i++)
    if ((int32_t)i != axis) {
      y->shape[y->ndim++] = x->shape[i];
      y->count *= x->shape[i];
    }
  y->data = calloc(y->count ? y->count : 1, kiln_dtype_size(out));
  if (!y->data)
    return say("out of host memory for the result"), -1;
  if (!y->count) { /* kiln_npy_save() wants no data for no elements */
    free(y->data);
    y->data = NULL;
  }
  return 0;
}

static void reduce_report(kiln_runtime *rt, const reduce_args *r, const kiln_array *x,
                          const kiln_array *y, double ms)
{
  char xs[160], ys[160];
  shape_text(xs, sizeof xs, x->ndim, x->shape);
  shape_text(ys, sizeof ys, y->ndim, y->shape);
  double bytes = (double)x->count * (double)kiln_dtype_size(x->dtype);
  printf("device   %s\nbackend  %s\nreduce   %s of %s %s ", kiln_runtime_device(rt)->name,
         r->backend == KILN_BACKEND_AUTO ? "auto (kiln's rules)" : kiln_backend_name(r->backend),
         kiln_reduce_op_name(r->op), kiln_dtype_name(x->dtype), xs);
  if (r->axis == KILN_AXIS_ALL)
    printf("over every element");
  else
    printf("along axis %d", (int)r->axis);
  printf(" -> %s %s\ntime     %.2f ms (%.3g GB/s, transfers included)\nwrote    %s\n",
         kiln_dtype_name(y->dtype), ys, ms, ms > 0 ? bytes / ms / 1e6 : 0.0, r->out);
}

static int run_reduce(int argc, char **argv)
{
  reduce_args r;
  kiln_array x = {0}, y = {0};
  kiln_reduce_desc d;
  kiln_runtime *rt = NULL;
  int rc = 1;
  who = "kiln run reduce";
  if (reduce_parse(&r, argc, argv) != 0 || load_c_order(r.x, &x) != 0 ||
      reduce_plan(&r, &x, &d, &y) != 0 || start(&rt) != 0)
    goto done;
  int64_t spare = 0; /* stands for the data of an array of no elements */
  double t0 = now_ms();
  kiln_status st = kiln_reduce_host(rt, &d, x.data ? x.data : &spare,
                                    y.data ? y.data : &spare);
  double ms = now_ms() - t0;
  if (st != KILN_OK) {
    say("%s", kiln_last_error(rt));
    goto done;
  }
  if (save(r.out, &y) != 0)
    goto done;
  reduce_report(rt, &r, &x, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&y);
  kiln_runtime_destroy(rt);
  return rc;
}

/* ---- kiln run conv2d ------------------------------------------------------ */

typedef struct conv_args {
  const char *x, *w, *bias, *out;
  kiln_conv2d_desc d; /* the options; sizes and dtype come from the files */
} conv_args;

static const char conv_usage[] =
  "usage: kiln run conv2d X.npy W.npy -o Y.npy [--bias b.npy] [--stride S | SH,SW]\n"
  "                       [--pad P | T,B,L,R] [--dilation D | DH,DW] [--groups G]\n"
  "                       [--relu] [--layout nchw|nhwc]\n"
  "                       [--backend auto|im2col|direct|clblast]";

/* A comma-separated list of 1 or `most` whole numbers of at least `least`
 * into v; the count, or -1 after saying what the option takes. */
static int parse_counts(const char *o, const char *s, size_t least, int most,
                        const char *takes, size_t *v)
{
  int n = 0;
  const char *at = s;
  while (n < most) {
    char *end;
    if (*at < '0' || *at > '9')
      break;
    unsigned long long x = strtoull(at, &end, 10);
    if (x < least || x >= ((size_t)1 << 31))
      break;
    v[n++] = (size_t)x;
    if (*end == '\0') {
      if (n == 1 || n == most)
        return n;
      break;
    }
    if (*end != ',')
      break;
    at = end + 1;
  }
  return say("%s '%s': expected %s", o, s, takes), -1;
}

/* One option with its value into c->d; -1 after saying why. */
static int conv_value(conv_args *c, const char *o, const char *v)
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
    if ((n = parse_counts(o, v, 1, 2, "one number or two (height,width), each "
                          "from 1 to 2^31-1", v4)) < 0)
      return -1;
    *(stride ? &d->stride_h : &d->dilation_h) = v4[0];
    *(stride ? &d->stride_w : &d->dilation_w) = v4[n - 1];
  } else if (strcmp(o, "--pad") == 0) {
    if ((n = parse_counts(o, v, 0, 4, "one number, or four (top,bottom,left,"
                          "right), each from 0 to 2^31-1", v4)) < 0)
      return -1;
    d->pad_top = v4[0], d->pad_bottom = v4[n == 4 ? 1 : 0];
    d->pad_left = v4[n == 4 ? 2 : 0], d->pad_right = v4[n == 4 ? 3 : 0];
  } else if (strcmp(o, "--groups") == 0) {
    if (parse_counts(o, v, 1, 1, "a number from 1 to 2^31-1", v4) < 0)
      return -1;
    d->groups = v4[0];
  } else if (strcmp(o, "--layout") == 0) {
    if ((n = parse_enum(v, layouts, 2)) < 0)
      return say("--layout '%s': expected nchw or nhwc", v), -1;
    d->layout = (kiln_tensor_layout)n;
  } else { /* --backend: conv_parse() let known options only through */
    return parse_backend_of(v, &d->backend, takes, 4);
  }
  return 0;
}

static int conv_parse(conv_args *c, int argc, char **argv)
{
  memset(c, 0, sizeof *c);
  kiln_conv2d_desc_init(&c->d, KILN_F32, 0, 0, 0, 0, 0, 0, 0);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--relu") == 0) {
      c->d.relu = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      static const char *const known[] = {"-o", "--bias", "--stride", "--pad",
                                          "--dilation", "--groups", "--layout",
                                          "--backend"};
      if (parse_enum(argv[i], known, sizeof known / sizeof known[0]) < 0)
        return say("unknown option '%s'", argv[i]), -1;
      if (i + 1 >= argc)
        return say("%s needs a value", argv[i]), -1;
      if (conv_value(c, argv[i], argv[i + 1]) != 0)
        return -1;
      i++;
    } else if (!c->x || !c->w) {
      *(c->x ? &c->w : &c->x) = argv[i];
    } else {
      return say("one array too many: '%s'", argv[i]), -1;
    }
  }
  if (!c->x || !c->w || !c->out)
    return fprintf(stderr, "%s\n", conv_usage), -1;
  return 0;
}

/* The sizes of x and W into c->d, checked against each other and the
 * options; the output's sides into *p and *q. -1 after saying why. */
static int conv_shapes(conv_args *c, const kiln_array *x, const kiln_array *w,
                       const kiln_array *b, size_t *p, size_t *q)
{
  kiln_conv2d_desc *d = &c->d;
  int nhwc = d->layout == KILN_NHWC;
  const char *order = nhwc ? "(n, h, w, c)" : "(n, c, h, w)";
  if (x->ndim != 4)
    return say("X (%s) has %u dimensions; expected 4, %s", c->x, x->ndim, order), -1;
  if (w->ndim != 4)
    return say("W (%s) has %u dimensions; expected 4, %s", c->w, w->ndim,
               nhwc ? "(k, r, s, c/groups)" : "(k, c/groups, r, s)"), -1;
  if (x->dtype != KILN_F16 && x->dtype != KILN_F32 && x->dtype != KILN_F64)
    return say("X holds %s; kiln convolves float16, float32 and float64",
               kiln_dtype_name(x->dtype)), -1;
  d->dtype = x->dtype;
  d->n = x->shape[0], d->c = x->shape[nhwc ? 3 : 1];
  d->h = x->shape[nhwc ? 1 : 2], d->w = x->shape[nhwc ? 2 : 3];
  d->k = w->shape[0], d->r = w->shape[nhwc ? 1 : 2], d->s = w->shape[nhwc ? 2 : 3];
  if (kiln_conv2d_output(d, p, q) != KILN_OK)
    return say("%s", kiln_last_error(NULL)), -1;
  size_t groups = d->groups ? d->groups : 1, wc = w->shape[nhwc ? 3 : 1];
  if (wc != d->c / groups)
    return say("W has %zu input channels per filter, but X has %zu channels in %zu "
               "group%s; expected %zu", wc, d->c, groups, groups == 1 ? "" : "s",
               d->c / groups), -1;
  if (b && (b->ndim != 1 || b->shape[0] != d->k))
    return say("--bias (%s) has %u dimensions of %zu values; expected one value "
               "per output channel, shape (%zu,)", c->bias, b->ndim,
               b->ndim ? b->shape[0] : 1, d->k), -1;
  return 0;
}

/* Uploads the arrays in the compute type, runs the convolution (timed into
 * *ms: kiln_conv2d() and kiln_finish()) and reads y back. */
static kiln_status conv_compute(kiln_runtime *rt, const kiln_conv2d_desc *d,
                                const kiln_array *x, const kiln_array *w,
                                const kiln_array *b, kiln_array *y, double *ms)
{
  kiln_buffer *dx = NULL, *dw = NULL, *db = NULL, *dy = NULL;
  kiln_status st = upload(rt, x, d->dtype, &dx);
  if (st == KILN_OK)
    st = upload(rt, w, d->dtype, &dw);
  if (st == KILN_OK && b)
    st = upload(rt, b, d->dtype, &db);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, d->dtype, y->count, 0, &dy);
  if (st == KILN_OK)
    st = kiln_finish(rt); /* the conversions, outside the time */
  double t0 = now_ms();
  if (st == KILN_OK)
    st = kiln_conv2d(rt, d, dx, dw, db, dy);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  *ms = now_ms() - t0;
  if (st == KILN_OK)
    st = kiln_buffer_read(dy, 0, y->count, y->data);
  kiln_buffer_destroy(dx), kiln_buffer_destroy(dw);
  kiln_buffer_destroy(db), kiln_buffer_destroy(dy);
  return st;
}

static void conv_report(kiln_runtime *rt, const conv_args *c, const kiln_array *x,
                        const kiln_array *w, const kiln_array *y, double ms)
{
  const kiln_conv2d_desc *d = &c->d;
  char xs[160], ws[160], ys[160];
  shape_text(xs, sizeof xs, x->ndim, x->shape);
  shape_text(ws, sizeof ws, w->ndim, w->shape);
  shape_text(ys, sizeof ys, y->ndim, y->shape);
  size_t groups = d->groups ? d->groups : 1;
  double flops = 2.0 * (double)y->count * (double)(d->c / groups) * (double)d->r *
                 (double)d->s;
  printf("device   %s\nbackend  %s\nconv2d   %s X %s * W %s, %s, stride %zu,%zu, "
         "pad %zu,%zu,%zu,%zu, dilation %zu,%zu, groups %zu%s%s -> %s\n"
         "time     %.2f ms (%.1f GFLOP/s; one call, transfers excluded)\n"
         "wrote    %s\n", kiln_runtime_device(rt)->name,
         d->backend == KILN_BACKEND_AUTO ? "auto (kiln's rules)" : kiln_backend_name(d->backend),
         kiln_dtype_name(d->dtype), xs, ws, d->layout == KILN_NHWC ? "NHWC" : "NCHW",
         d->stride_h ? d->stride_h : 1, d->stride_w ? d->stride_w : 1,
         d->pad_top, d->pad_bottom, d->pad_left, d->pad_right,
         d->dilation_h ? d->dilation_h : 1, d->dilation_w ? d->dilation_w : 1, groups,
         c->bias ? ", bias" : "", d->relu ? ", relu" : "", ys, ms,
         ms > 0 ? flops / ms / 1e6 : 0.0, c->out);
}

static int run_conv2d(int argc, char **argv)
{
  conv_args c;
  kiln_array x = {0}, w = {0}, b = {0}, y = {0};
  kiln_runtime *rt = NULL;
  size_t p = 0, q = 0;
  double ms = 0;
  int rc = 1;
  who = "kiln run conv2d";
  if (conv_parse(&c, argc, argv) != 0 || load_c_order(c.x, &x) != 0 ||
      load_c_order(c.w, &w) != 0 || (c.bias && load_c_order(c.bias, &b) != 0) ||
      conv_shapes(&c, &x, &w, c.bias ? &b : NULL, &p, &q) != 0)
    goto done;
  int nhwc = c.d.layout == KILN_NHWC;
  y = (kiln_array){.dtype = c.d.dtype, .ndim = 4, .count = c.d.n * c.d.k * p * q,
                   .shape = {c.d.n, nhwc ? p : c.d.k, nhwc ? q : p, nhwc ? c.d.k : q}};
  if (!(y.data = malloc(y.count * kiln_dtype_size(y.dtype)))) {
    say("out of host memory for the result (%zu elements)", y.count);
    goto done;
  }
  if (start(&rt) != 0)
    goto done;
  if (conv_compute(rt, &c.d, &x, &w, c.bias ? &b : NULL, &y, &ms) != KILN_OK) {
    say("%s", kiln_last_error(rt));
    goto done;
  }
  if (save(c.out, &y) != 0)
    goto done;
  conv_report(rt, &c, &x, &w, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&w), kiln_array_free(&b), kiln_array_free(&y);
  kiln_runtime_destroy(rt);
  return rc;
}

/* ---- kiln run fft --------------------------------------------------------- */

typedef struct fft_args {
  const char *x, *out;
  int inverse, real;
  int axes[3], naxes; /* as given; default the last axis */
  size_t n_out;       /* C2R: --n, the output's last length (0: 2 (m - 1)) */
  kiln_backend backend;
} fft_args;

static const char fft_usage[] =
  "usage: kiln run fft X.npy -o Y.npy [--inverse] [--real] [--axes A,...] [--n N]\n"
  "                    [--backend auto|clfft|vkfft]";

/* --axes: one to three comma-separated axes; -1 after saying why. */
static int fft_parse_axes(fft_args *f, const char *v)
{
  const char *at = v;
  f->naxes = 0;
  while (f->naxes < 3) {
    char *end;
    long a = strtol(at, &end, 10);
    if (end == at || a < -KILN_ARRAY_MAX_DIMS || a >= KILN_ARRAY_MAX_DIMS)
      break;
    f->axes[f->naxes++] = (int)a;
    if (*end == '\0')
      return 0;
    if (*end != ',')
      break;
    at = end + 1;
  }
  return say("--axes '%s': expected one to three comma-separated axes such as -1 or "
             "-2,-1", v), -1;
}

static int fft_option(fft_args *f, const char *o, const char *v)
{
  static const kiln_backend takes[] = {KILN_BACKEND_AUTO, KILN_BACKEND_CLFFT,
                                       KILN_BACKEND_VKFFT};
  size_t n;
  if (!v)
    return say("%s needs a value", o), -1;
  if (strcmp(o, "-o") == 0)
    f->out = v;
  else if (strcmp(o, "--axes") == 0)
    return fft_parse_axes(f, v);
  else if (strcmp(o, "--n") == 0) {
    if (parse_counts(o, v, 1, 1, "a length from 1 to 2^31-1", &n) < 0)
      return -1;
    f->n_out = n;
  } else if (strcmp(o, "--backend") == 0)
    return parse_backend_of(v, &f->backend, takes, 3);
  else
    return say("unknown option '%s'", o), -1;
  return 0;
}

static int fft_parse(fft_args *f, int argc, char **argv)
{
  *f = (fft_args){.axes = {-1}, .naxes = 1};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--inverse") == 0 || strcmp(argv[i], "--real") == 0) {
      *(argv[i][2] == 'i' ? &f->inverse : &f->real) = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      if (fft_option(f, argv[i], i + 1 < argc ? argv[i + 1] : NULL) != 0)
        return -1;
      i++;
    } else if (!f->x) {
      f->x = argv[i];
    } else {
      return say("one array too many: '%s'", argv[i]), -1;
    }
  }
  if (!f->x || !f->out)
    return fprintf(stderr, "%s\n", fft_usage), -1;
  if (f->n_out && !(f->real && f->inverse))
    return say("--n sets the output length of --real --inverse only"), -1;
  return 0;
}

/* The axes must be the last naxes of x, each once: kiln_fft() transforms
 * the trailing axes of C-order data, the leading ones being the batch. */
static int fft_check_axes(const fft_args *f, const kiln_array *x)
{
  int nd = (int)x->ndim, seen[KILN_ARRAY_MAX_DIMS] = {0};
  if (nd < f->naxes)
    return say("X has %d dimension%s; --axes names %d", nd, nd == 1 ? "" : "s",
               f->naxes), -1;
  for (int i = 0; i < f->naxes; i++) {
    int a = f->axes[i] < 0 ? f->axes[i] + nd : f->axes[i];
    if (a < 0 || a >= nd)
      return say("--axes: axis %d is out of range for an array of %d dimensions", f->axes[i],
                 nd), -1;
    if (seen[a]++)
      return say("--axes: axis %d is named twice", f->axes[i]), -1;
    if (a < nd - f->naxes)
      return say("--axes: kiln transforms the last %d axes of the array only (the "
                 "leading axes are the batch, in C order); axis %d is not among them. "
                 "Expected -1, -2,-1 or -3,-2,-1; move the axes last first (e.g. "
                 "numpy.moveaxis)", f->naxes, f->axes[i]), -1;
  }
  return 0;
}

/* The request for x and the array that receives the result, its data
 * allocated; -1 after saying why. */
static int fft_plan(const fft_args *f, const kiln_array *x, kiln_fft_desc *d, kiln_array *y)
{
  int cplx = x->dtype == KILN_C32 || x->dtype == KILN_C64;
  int wide = x->dtype == KILN_C64 || x->dtype == KILN_F64;
  kiln_fft_kind kind = !f->real ? KILN_FFT_C2C : f->inverse ? KILN_FFT_C2R : KILN_FFT_R2C;
  if (kind == KILN_FFT_R2C ? (x->dtype != KILN_F32 && x->dtype != KILN_F64) : !cplx)
    return say("X holds %s; expected %s", kiln_dtype_name(x->dtype),
               kind == KILN_FFT_R2C ? "float32 or float64 for --real"
                                    : "complex64 or complex128 (or --real for a real X)"), -1;
  if (fft_check_axes(f, x) != 0)
    return -1;
  if (x->count == 0)
    return say("X has no elements"), -1;
  unsigned nd = x->ndim, k = (unsigned)f->naxes, first = nd - k;
  size_t m = x->shape[nd - 1], n = kind != KILN_FFT_C2R ? m : f->n_out ? f->n_out : 2 * (m - 1);
  if (kind == KILN_FFT_C2R && (n == 0 || n / 2 + 1 != m))
    return say("--real --inverse: the last axis holds %zu bins, which is the half-spectrum "
               "of %zu or %zu real values, not %zu", m, 2 * m - 2, 2 * m - 1, n), -1;
  kiln_fft_desc_init(d, wide ? KILN_F64 : KILN_F32, n);
  d->kind = kind, d->ndim = k, d->inverse = f->inverse && kind == KILN_FFT_C2C;
  d->backend = f->backend;
  d->batch = 1;
  for (unsigned i = 0; i < first; i++)
    d->batch *= x->shape[i];
  memcpy(d->shape, x->shape + first, k * sizeof *d->shape);
  d->shape[k - 1] = n;
  *y = (kiln_array){.dtype = kind == KILN_FFT_C2R ? d->dtype : kind == KILN_FFT_R2C
                    ? (wide ? KILN_C64 : KILN_C32) : x->dtype, .ndim = nd};
  memcpy(y->shape, x->shape, sizeof y->shape);
  y->shape[nd - 1] = kind == KILN_FFT_R2C ? n / 2 + 1 : n;
  y->count = x->count / m * y->shape[nd - 1];
  if (!(y->data = malloc(y->count * kiln_dtype_size(y->dtype))))
    return say("out of host memory for the result (%zu elements)", y->count), -1;
  return 0;
}

/* Uploads x, runs the transform (timed into *ms: kiln_fft() and
 * kiln_finish(), the plan included) and reads y back. */
static kiln_status fft_compute(kiln_runtime *rt, const kiln_fft_desc *d,
                               const kiln_array *x, kiln_array *y, double *ms)
{
  kiln_buffer *dx = NULL, *dy = NULL;
  kiln_status st = kiln_buffer_create(rt, x->dtype, x->count, 0, &dx);
  if (st == KILN_OK)
    st = kiln_buffer_write(dx, 0, x->count, x->data);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, y->dtype, y->count, 0, &dy);
  double t0 = now_ms();
  if (st == KILN_OK)
    st = kiln_fft(rt, d, dx, dy);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  *ms = now_ms() - t0;
  if (st == KILN_OK)
    st = kiln_buffer_read(dy, 0, y->count, y->data);
  kiln_buffer_destroy(dx), kiln_buffer_destroy(dy);
  return st;
}

static void fft_report(kiln_runtime *rt, const fft_args *f, const kiln_fft_desc *d,
                       const kiln_array *x, const kiln_array *y, double ms)
{
  static const char *const kinds[] = {"C2C", "R2C", "C2R"};
  char xs[160], ys[160];
  shape_text(xs, sizeof xs, x->ndim, x->shape);
  shape_text(ys, sizeof ys, y->ndim, y->shape);
  double n = 1;
  for (unsigned i = 0; i < d->ndim; i++)
    n *= (double)d->shape[i];
  double flops = 5 * n * log2(n) * (double)d->batch * (d->kind == KILN_FFT_C2C ? 1 : 0.5);
  printf("device   %s\nbackend  %s\nfft      %s%s %s %s%s over the last %u ax%s, batch "
         "%zu -> %s %s\ntime     %.2f ms (%.2f GFLOP/s at 5 N log2 N; one call with its "
         "plan, transfers excluded)\nwrote    %s\n", kiln_runtime_device(rt)->name,
         f->backend == KILN_BACKEND_AUTO ? "auto (kiln's rules)" : kiln_backend_name(f->backend),
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
  int rc = 1;
  who = "kiln run fft";
  if (fft_parse(&f, argc, argv) != 0 || load_c_order(f.x, &x) != 0 ||
      fft_plan(&f, &x, &d, &y) != 0 || start(&rt) != 0)
    goto done;
  if (fft_compute(rt, &d, &x, &y, &ms) != KILN_OK) {
    say("%s", kiln_last_error(rt));
    goto done;
  }
  if (save(f.out, &y) != 0)
    goto done;
  fft_report(rt, &f, &d, &x, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&y);
  kiln_runtime_destroy(rt);
  return rc;
}

int kiln_cmd_run(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "gemm") == 0)
    return run_gemm(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "reduce") == 0)
    return run_reduce(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "conv2d") == 0)
    return run_conv2d(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "fft") == 0)
    return run_fft(argc - 1, argv + 1);
  fprintf(stderr, "usage: kiln run gemm A.npy B.npy -o C.npy [options]\n"
                  "       kiln run reduce --op OP [--axis N] X.npy -o Y.npy [options]\n"
                  "       kiln run conv2d X.npy W.npy -o Y.npy [options]\n"
                  "       kiln run fft X.npy -o Y.npy [--inverse] [--real] [--axes A,...]\n");
  return 2;
}
