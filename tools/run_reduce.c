/*
 * run_reduce.c — `kiln run reduce --op OP [--axis N] X.npy -o Y.npy`: one
 * reduction of a .npy file (what the operations share is in run.c).
 *
 * The array goes to kiln_reduce_host() as it is (it reduces arrays larger
 * than the device in chunks), or with --devices to kiln_group_reduce_host()
 * over a device group; the result has the input's shape without the
 * reduced axis, a 0-d array when every element is reduced, and numpy's
 * type for the same call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef struct reduce_args {
  const char *x, *out, *devices;
  int op;      /* reduce_ops' index: kiln_reduce_op KILN_REDUCE_SUM + index */
  long axis;   /* as given; KILN_AXIS_ALL when not */
  int backend; /* reduce_backends' index */
} reduce_args;

static const char *const reduce_ops[] = {"sum",    "mean",   "min",  "max",
                                         "argmin", "argmax", "norm", NULL};
static const char *const reduce_backends[] = {"auto", "kiln", "clblast", NULL};

static const cli_option reduce_rows[] = {
  {.name = "X.npy",
   CLI_TEXT_AT(reduce_args, x),
   .help = "the array: float16, float32, float64 or int32, up to 8 dimensions",
   .required = 1},
  {.name = "-o",
   CLI_TEXT_AT(reduce_args, out),
   .value = "Y.npy",
   .help = "the result: X's shape without the axis, a 0-d array when every element is "
           "reduced; typed as numpy types it",
   .required = 1},
  {.name = "--op",
   CLI_CHOICE_AT(reduce_args, op),
   .help = "what to compute; norm is the L2 norm",
   .required = 1,
   .choices = reduce_ops},
  {.name = "--axis",
   CLI_INT_AT(reduce_args, axis),
   .value = "N",
   .help = "reduce along this axis only, counted from the end when negative, as "
           "numpy's",
   .def_text = "every element",
   .min = -KILN_ARRAY_MAX_DIMS,
   .max = KILN_ARRAY_MAX_DIMS - 1},
  {.name = "--backend",
   CLI_CHOICE_AT(reduce_args, backend),
   .help = "kiln's kernels, CLBlast (float sums and norms of every element), or "
           "kiln's rules (auto)",
   .def = "auto",
   .choices = reduce_backends},
  RUN_DEVICES_ROW(reduce_args, devices),
};

static int run_reduce(int argc, char **argv);

const cli_command run_reduce_command = {
  .name = "kiln run reduce",
  .summary = "a reduction of a .npy file: sum, mean, min, max, argmin, argmax or norm",
  CLI_ROWS(reduce_rows),
  .about = "Y is typed as numpy types the same call: float16's sum, mean and norm are\n"
           "float16 (accumulated in float32 or better, then rounded), int32's sum is\n"
           "int64 and its mean and norm float64, argmin and argmax are int64 (the\n"
           "first index of the extreme). Arrays larger than the device are reduced\n"
           "in chunks (kiln_reduce_host). With --devices, kiln_group_reduce_host()\n"
           "over a device group: runs of the positions before the axis, or grains\n"
           "of every element, to each device." RUN_ARRAYS_NOTE,
  .example = "kiln run reduce --op sum --axis 1 x.npy -o y.npy",
  .run = run_reduce,
};

/* The request for x and the array that receives its result (x's shape
 * without the axis), its data zeroed; -1 after saying why. */
static int plan(const reduce_args *r, const kiln_array *x, kiln_reduce_desc *d,
                kiln_array *y)
{
  kiln_reduce_op op = (kiln_reduce_op)(KILN_REDUCE_SUM + r->op);
  kiln_dtype out = kiln_reduce_out_dtype(op, x->dtype);
  if (!out)
    return run_say("X holds %s; kiln reduces float16, float32, float64 and int32",
                   kiln_dtype_name(x->dtype)),
           -1;
  int all = r->axis == KILN_AXIS_ALL;
  int32_t axis = (int32_t)(!all && r->axis < 0 ? r->axis + (long)x->ndim : r->axis);
  if (!all && x->ndim == 0)
    return run_say("X is a 0-d array, which has no axis; leave --axis out"), -1;
  if (!all && (axis < 0 || axis >= (int32_t)x->ndim))
    return run_say("--axis %d is out of range for an array of %u dimensions; expected "
                   "%d to %d",
                   (int)r->axis, x->ndim, -(int)x->ndim, (int)x->ndim - 1),
           -1;
  kiln_reduce_desc_init(d, op, x->dtype, x->count);
  d->backend = run_backend_named(reduce_backends[r->backend]);
  if (x->ndim > 0) { /* a 0-d array stays the 1-D view of its one element */
    d->ndim = x->ndim;
    memcpy(d->shape, x->shape, sizeof d->shape);
    d->axis = (int32_t)r->axis;
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

static void report(kiln_runtime *rt, kiln_group *grp, const reduce_args *r,
                   const kiln_array *x, const kiln_array *y, double ms)
{
  char xs[160], ys[160];
  run_shape_text(xs, sizeof xs, x->ndim, x->shape);
  run_shape_text(ys, sizeof ys, y->ndim, y->shape);
  double bytes = (double)x->count * (double)kiln_dtype_size(x->dtype);
  printf("device   %s\nbackend  %s\nreduce   %s of %s %s ", run_device_name(rt, grp),
         run_backend_label(run_backend_named(reduce_backends[r->backend])),
         reduce_ops[r->op], kiln_dtype_name(x->dtype), xs);
  if (r->axis == KILN_AXIS_ALL)
    printf("over every element");
  else
    printf("along axis %ld", r->axis);
  printf(" -> %s %s\ntime     %.2f ms (%.3g GB/s, transfers included)\nwrote    %s\n",
         kiln_dtype_name(y->dtype), ys, ms, ms > 0 ? bytes / ms / 1e6 : 0.0, r->out);
  run_group_report(grp);
}

static int run_reduce(int argc, char **argv)
{
  reduce_args r = {.axis = KILN_AXIS_ALL};
  kiln_array x = {0}, y = {0};
  kiln_reduce_desc d;
  kiln_runtime *rt = NULL;
  kiln_group *grp = NULL;
  int rc = run_parse(&run_reduce_command, &r, argc, argv);
  if (rc >= 0)
    return rc;
  rc = 1;
  if (run_load(r.x, &x) != 0 || plan(&r, &x, &d, &y) != 0 || run_start(&rt) != 0 ||
      run_group_start(r.devices, &grp) != 0)
    goto done;
  int64_t spare = 0; /* stands for the data of an array of no elements */
  const void *in = x.data ? x.data : &spare;
  void *out = y.data ? y.data : &spare;
  double t0 = run_now_ms();
  kiln_status st =
    grp ? kiln_group_reduce_host(grp, &d, in, out) : kiln_reduce_host(rt, &d, in, out);
  double ms = run_now_ms() - t0;
  /* numpy's type: float16's sum, mean and norm are float16 (kiln_reduce()'s
   * float32, rounded to nearest even on the device) */
  if (st == KILN_OK && x.dtype == KILN_F16 && y.dtype == KILN_F32) {
    if (y.count && run_to_type(rt, &y, KILN_F16) != 0)
      goto done;
    y.dtype = KILN_F16;
  }
  if (run_write(rt, grp, st, r.out, &y) != 0)
    goto done;
  report(rt, grp, &r, &x, &y, ms);
  rc = 0;
done:
  kiln_array_free(&x), kiln_array_free(&y);
  kiln_group_destroy(grp);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
