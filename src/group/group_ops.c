/*
 * group_ops.c — the operations over a device group, from host arrays: each
 * cuts its request into units whose results do not depend on how they are
 * grouped into chunks, and runs a chunk as the device runtime's own host
 * operation on the units' part of the caller's arrays (group.c schedules).
 *
 *   GEMM       rows of C of one product, or whole products of a batch
 *   conv2d     images of the batch; when the batch is small for the
 *              group, bands of each image's output rows
 *   FFT        transforms of the batch
 *   reductions along an axis: outer rows of the view, each reduced whole;
 *              of every element: grains of a fixed size (set by the length
 *              and the group's size, not by the devices' speeds), each
 *              reduced to one result kept by its index and combined in
 *              index order (kiln__reduce_combine), so the answer does not
 *              depend on which device did what
 *
 * Each has its file (group_gemm.c, group_batch.c: conv2d and FFT,
 * group_reduce.c); this one holds what they share: the checks of a
 * request, and the pipeline of one device's chunks.
 */
#include "base/error.h"
#include "group/group_ops.h"

kiln_status kiln__group_in(const kiln_group *g, const char *fn, const void *p1,
                           const void *p2, const void *p3)
{
  if (!g || !p1 || !p2 || !p3)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a group, a descriptor and the caller's "
                      "arrays",
                      fn, !g ? "group" : "an array or the descriptor");
  return KILN_OK;
}

/* ---- pipelines ----------------------------------------------------------- */

static int pipe_next(kiln__host_job *hj, size_t i)
{
  kiln__group_pipe *p = hj->op;
  size_t at, count;
  /* A run's first piece waits for a chunk; later ones are taken only when
   * there is one now, else the run ends (its last piece comes back) */
  if (!kiln__group_take(p->feed, i == 0, &at, &count))
    return 0;
  p->at[i % KILN__GROUP_RING] = at, p->count[i % KILN__GROUP_RING] = count;
  p->claimed++;
  if (p->keep)
    p->keep(p, i, 0);
  return 1;
}

static void pipe_done(kiln__host_job *hj, size_t i)
{
  kiln__group_pipe *p = hj->op;
  p->done++;
  kiln__group_done(p->feed, p->at[i % KILN__GROUP_RING], p->count[i % KILN__GROUP_RING]);
}

void kiln__group_pipe_chunk(const kiln__host_job *hj, size_t i, size_t *at, size_t *count)
{
  const kiln__group_pipe *p = hj->op;
  *at = p->at[i % KILN__GROUP_RING], *count = p->count[i % KILN__GROUP_RING];
}

kiln_status kiln__group_pipe_serve(kiln_runtime *rt, const kiln__group_job *j,
                                   kiln__group_feed *f, kiln__group_pipe *p,
                                   kiln__host_job *hj)
{
  p->feed = f, p->j = j, p->rt = rt;
  hj->op = p, hj->next = pipe_next, hj->done = pipe_done;
  kiln__host_room(rt, &p->room, &p->max_alloc);
  if (!kiln__host_choose(hj, j->per_part ? j->per_part : j->units) ||
      (p->prepare && p->prepare(p, hj->per)))
    return kiln__group_serve(rt, j, f);
  kiln__group_cap(f, hj->per);
  kiln_status st;
  do {
    p->claimed = p->done = 0;
    st = kiln__host_run(rt, hj); /* which waits for every transfer */
  } while (st == KILN_OK && p->claimed);
  for (size_t i = p->done; p->keep && i < p->claimed && st != KILN_OK; i++)
    p->keep(p, i, 1);
  if (st != KILN_ERR_OUT_OF_MEMORY)
    return st;
  kiln__group_release(f);
  kiln__group_cap(f, 0);
  return kiln__group_serve(rt, j, f);
}
