/*
 * group.h — a device group's scheduler (group.c) as the operations over a
 * group (ops/group_ops.c) use it. Not installed.
 */
#ifndef KILN_GROUP_H
#define KILN_GROUP_H

#include "internal.h"

/* The kinds of operation, each with its own learnt speed per device. */
enum kiln__group_op {
  KILN__GROUP_GEMM,
  KILN__GROUP_CONV,
  KILN__GROUP_FFT,
  KILN__GROUP_REDUCE,
  KILN__GROUP_OPS
};

/* One call over the group: `units` of work (rows, images, transforms,
 * grains of elements), handed to the devices in chunks of consecutive
 * units. */
typedef struct kiln__group_job kiln__group_job;
struct kiln__group_job {
  const char *fn;         /* the public function, for messages */
  enum kiln__group_op op; /* whose learnt speeds apply */
  size_t units;           /* >= 1 */
  size_t min;             /* the smallest chunk worth a call, >= 1 */
  double unit_work;       /* flops (bytes for reductions) of one unit */
  size_t per_part;        /* units of the parts chunks may not straddle
                              (a product's rows); 0: none */
  /* Runs units [at, at + count) on rt and returns when they are done. A
   * failure leaves kiln_last_error(rt) set on the calling thread; the units
   * go to the other devices, so run() must write only what those units
   * own. Called from several threads at once, each with its own rt. */
  kiln_status (*run)(kiln_runtime *rt, const kiln__group_job *j, size_t at, size_t count);
  const void *op_data; /* the operation's own, for run() */
};

/* Runs j over the group's devices (group.c): each device's thread takes
 * chunks as it finishes the last, sized by its speed; a device that fails
 * leaves its chunk to the others. KILN_OK when every unit ran; else the
 * failure of every device, in kiln_last_error(NULL). */
kiln_status kiln__group_run(kiln_group *g, const kiln__group_job *j);

/* A failure on rt (a request's check) as the thread's failure without a
 * runtime, where a group's callers read it: returns st. */
kiln_status kiln__group_fail_from(kiln_runtime *rt, kiln_status st);

#endif /* KILN_GROUP_H */
