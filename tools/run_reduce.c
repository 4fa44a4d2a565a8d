/*
 * run_reduce.c — `kiln run reduce --op OP [--axis N] X.npy -o Y.npy`: one
 * reduction of a .npy file (what the operations share is in run.c).
 *
 * The array goes to kiln_reduce_host() as it is (it reduces arrays larger
 * than the device in chunks); the result has the input's shape without the
 * reduced axis, a 0-d array when every element is reduced.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct reduce_args {
  const char *x, *out;
  kiln_reduce_op op;
  int32_t axis; /* as given, or KILN_AXIS_ALL */
  kiln_backend backend;
} reduce_args;

static const char usage[] =
  "usage: kiln run reduce --op sum|mean|min|max|argmin|argmax|norm [--axis N]\n"
  "                       [--backend auto|kiln|clblast] X.npy -o Y.npy";

/* One option and its value (run_cli.option); 2, or -1 after saying why. */
static int option(void *ctx, const char *o, const char *v)
{
  static const char *const known[] = {"-o", "--op", "--axis", "--backend"};
  reduce_args *r = ctx;
  if (run_option_value(o, v, known, sizeof known / sizeof known[0]) != 0)
    return -1;
  if (strcmp(o, "-o") == 0) {
    r->out = v;
  } else if (strcmp(o, "--op") == 0) {
    int k = KILN_REDUCE_SUM;
    while (k <= KILN_REDUCE_NORM2 &&
           strcmp(v, kiln_reduce_op_name((kiln_reduce_op)k)) != 0)
      k++;
    if (k > KILN_REDUCE_NORM2)
      return run_say("--op '%s': expected sum, mean, min, max, argmin, argmax or norm",
                     v),
             -1;
    r->op = (kiln_reduce_op)k;
  } else if (strcmp(o, "--axis") == 0) {
    char *end;
    long a = strtol(v, &end, 10);
    if (!*v || *end || a < -KILN_ARRAY_MAX_DIMS || a >= KILN_ARRAY_MAX_DIMS)
      return run_say("--axis '%s': expected an integer from %d to %d", v,
                     -KILN_ARRAY_MAX_DIMS, KILN_ARRAY_MAX_DIMS - 1),
             -1;
    r->axis = (int32_t)a;
  } else if (strcmp(o, "--backend") == 0) {
    if (run_parse_blas_backend(v, &r->backend) != 0)
      return -1;
  } else {
    return run_say("unknown option '%s'", o), -1;
  }
  return 2;
}

static int parse(reduce_args *r, int argc, char **argv)
{
  *r = (reduce_args){.axis = KILN_AXIS_ALL};
  run_cli cli = {option, r, {&r->x, NULL}, "array"};
  if (run_parse_args(&cli, argc, argv) != 0)
    return -1;
  if (!r->x || !r->out || !r->op)
    return run_usage(usage);
  return 0;
}

/* The request for x and the array that receives its result (x's shape
 * without the axis), its data zeroed; -1 after saying why. */
static int plan(const reduce_args *r, const kiln_array *x, kiln_reduce_desc *d,
                kiln_array *y)
{
  kiln_dtype out = kiln_reduce_out_dtype(r->op, x->dtype);
  if (!out)
    return run_say("X holds %s; kiln reduces float16, float32, float64 and int32",
                   kiln_dtype_name(x->dtype)),
           -1;
  int all = r->axis == KILN_AXIS_ALL;
  int32_t axis = !all && r->axis < 0 ? r->axis + (int32_t)x->ndim : r->axis;
  if (!all && x->ndim == 0)
    return run_say("X is a 0-d array, which has no axis; leave --axis out"), -1;
  if (!all && (axis < 0 || axis >= (int32_t)x->ndim))
    return run_say("--axis %d is out of range for an array of %u dimensions; expected "
                   "%d to %d",
                   (int)r->axis, x->ndim, -(int)x->ndim, (int)x->ndim - 1),
           -1;
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
    return run_say("out of host memory for the result"), -1;
  if (!y->count) { /* kiln_npy_save() wants no data for no elements */
    free(y->data);
    y->data = NULL;
  }
  return 0;
}

static void report(kiln_runtime *rt, const reduce_args *r, const kiln_array *x,
                   const kiln_array *y, double ms)
{
  char xs[160], ys[160];
  run_shape_text(xs, sizeof xs, x->ndim, x->shape);
  run_shape_text(ys, sizeof ys, y->ndim, y->shape);
  double bytes = (double)x->count * (double)kiln_dtype_size(x->dtype);
  printf("device   %s\nbackend  %s\nreduce   %s of %s %s ", kiln_runtime_device(rt)->name,
         run_backend_label(r->backend), kiln_reduce_op_name(r->op),
         kiln_dtype_name(x->dtype), xs);
  if (r->axis == KILN_AXIS_ALL)
    printf("over every element");
  else
    printf("along axis %d", (int)r->axis);
  printf(" -> %s %s\ntime     %.2f ms (%.3g GB/s, transfers included)\nwrote    %s\n",
         kiln_dtype_name(y->dtype), ys, ms, ms > 0 ? bytes / ms / 1e6 : 0.0, r->out);
}

int run_reduce(int argc, char **argv)
{
  reduce_args r;
  kiln_array x = {0}, y = {0};
  kiln_reduce_desc d;
  kiln_runtime *rt = NULL;
  int rc = 1;
  if (parse(&r, argc, argv) != 0 || run_load(r.x, &x) != 0 || plan(&r, &x, &d, &y) != 0 ||
      run_start(&rt) != 0)
    goto done;
  int64_t spare = 0; /* stands for the data of an array of no elements */
  double t0 = run_now_ms();
  kiln_status st =
    kiln_reduce_host(rt, &d, x.data ? x.data : &spare, y.data ? y.data : &spare);
  double ms = run_now_ms() - t0;
  if (run_write(rt, st, r.out, &y) != 0)
    goto done;
  report(rt, &r, &x, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&y);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
