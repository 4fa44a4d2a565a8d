/*
 * group.h — a device group's scheduler (group.c) as the operations over a
 * group (group_ops.c and the files it names) use it. Not installed.
 */
#ifndef KILN_GROUP_H
#define KILN_GROUP_H

#include "base/util.h"

/* The kinds of operation, each with its own learnt speed per device. */
enum kiln__group_op {
  KILN__GROUP_GEMM,
  KILN__GROUP_CONV,
  KILN__GROUP_FFT,
  KILN__GROUP_REDUCE,
  KILN__GROUP_OPS
};

/* One device's share of a call: where its thread takes chunks from. */
typedef struct kiln__group_feed kiln__group_feed;

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
  /* Optional: serves the device's chunks itself, as a pipeline that moves
   * the next chunk in while the current one computes: takes them from f
   * (kiln__group_take) until none is left, reports each when its results
   * are in the caller's arrays (kiln__group_done), and returns KILN_OK, or
   * a failure with the chunks it holds undone (they go to the others).
   * NULL: kiln__group_serve(). */
  kiln_status (*pipe)(kiln_runtime *rt, const kiln__group_job *j, kiln__group_feed *f);
  const void *op_data; /* the operation's own, for run() and pipe() */
};

/* The next chunk for f's device, [*at, *at + *count): 1. 0 when there is
 * none to take now (wait 0), or none will come (wait 1: it waits until
 * one can be taken, or until every unit is done or held by a device that
 * is still working). */
int kiln__group_take(kiln__group_feed *f, int wait, size_t *at, size_t *count);

/* Chunk [at, at + count), taken from f, is done: its results are in the
 * caller's arrays. Its time counts from the end of f's last chunk. */
void kiln__group_done(kiln__group_feed *f, size_t at, size_t count);

/* Chunks f takes from now on have at most cap units (what a pipeline's
 * buffers hold); 0: any. */
void kiln__group_cap(kiln__group_feed *f, size_t cap);

/* Gives the chunks f holds back to the group, undone, for any device (f's
 * too) to take: once a call, when a pipeline falls back to
 * kiln__group_serve(). */
void kiln__group_release(kiln__group_feed *f);

/* How many of g's devices are at least a quarter as fast at op as the
 * fastest by what they are (their tuning records, else their peaks; not
 * what earlier calls measured, which the machine's moments sway): those an
 * even split of a call would keep busy, where a simulator or a far slower
 * device takes little or nothing. */
size_t kiln__group_peers(const kiln_group *g, enum kiln__group_op op);

/* Runs each chunk f's device takes, one at a time, with j->run(). */
kiln_status kiln__group_serve(kiln_runtime *rt, const kiln__group_job *j,
                              kiln__group_feed *f);

/* Runs j over the group's devices (group.c): each device's thread takes
 * chunks as it finishes the last, sized by its speed; a device that fails
 * leaves its chunk to the others. KILN_OK when every unit ran; else the
 * failure of every device, in kiln_last_error(NULL). */
kiln_status kiln__group_run(kiln_group *g, const kiln__group_job *j);

/* A failure on rt (a request's check) as the thread's failure without a
 * runtime, where a group's callers read it: returns st. */
kiln_status kiln__group_fail_from(kiln_runtime *rt, kiln_status st);

#endif /* KILN_GROUP_H */
