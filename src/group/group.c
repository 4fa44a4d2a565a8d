/*
 * group.c — a device group: one runtime per device that KILN_DEVICES
 * selects, and the scheduler that spreads one call over them.
 *
 * A call is a row of units (group.h). Each device gets a thread, which
 * takes the next chunk of units when it has finished its last, so a slow
 * device takes fewer: a dynamic schedule. A chunk is sized by the device's
 * speed, guided: half its share by speed of what is left (all of it for a
 * device working alone), so the chunks shrink towards the end and the
 * devices finish together; rounded down to the job's smallest chunk times
 * a power of two. Speeds are units a second of the device's chunks so far
 * in this call; before its first, what it did in earlier calls of the same
 * operation (doubled, up to the next estimate, for each call it sat out);
 * before any, what `kiln tune` measured on it (its tuning record);
 * untuned, a prior from its estimated peak (kiln_device_info.peak_gflops;
 * a simulator, which has none, counts as 1 MFLOP/s). A device that would
 * finish even the smallest chunk after the working devices are done with
 * everything left waits instead, and takes a chunk only when that changes
 * (the others fail, or give a chunk back): so Oclgrind beside PoCL takes
 * nothing of a large call. The fastest device never waits, so a call never
 * stalls.
 *
 * An operation serves its device's chunks as a pipeline where it can
 * (group_ops.c and the files beside it: convolutions, FFTs, reductions,
 * and GEMMs over rows of one product or whole products): what every chunk needs (weights, B)
 * goes to the device once, and the next chunk is taken, and moved in,
 * while the current one computes, so a device holds up to two chunks. That early take is put
 * off when, with the chunk the device holds, it would end after the group
 * ends everything: near the end another device may take the chunk sooner
 * (the same test as for waiting). Otherwise each chunk is
 * one call of the device's runtime's host operation (kiln_gemm_host(),
 * ...), one after another. Chunks a device holds when it fails go back,
 * whole, for the others to take; the device takes no more in this call.
 * The call fails only when every device has.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "device/device.h"
#include "device/select.h"
#include "group/group.h"
#include "tuning/tuning.h"

#define SIMULATOR_PRIOR_GFLOPS 1e-3 /* a CPU core is ~1e3 times more */
#define PRIOR_EFFICIENCY 0.2        /* of the peak, before any measure */
#define FEED_HELD 4                 /* chunks a device holds at once: a pipeline's, 2 */
#define BACK_ROOM (2 * FEED_HELD)   /* entries of the back list a device */
#define PEER_PART 4 /* kiln__group_peers(): at least a quarter of the fastest */

typedef struct member {
  kiln_runtime *rt;
  double speed[KILN__GROUP_OPS]; /* work a second, learnt; 0: none yet */
  kiln_group_usage stats;        /* since creation or the last reset */
} member;

struct kiln_group {
  member *m;
  size_t n;
  kiln__str notes;      /* who was left out at creation and why */
  kiln__str failures;   /* failures of calls, a line each */
  pthread_mutex_t lock; /* speeds, stats and failures */
};

kiln_status kiln__group_fail_from(kiln_runtime *rt, kiln_status st)
{
  return kiln__fail(NULL, st, "%s", kiln_last_error(rt));
}

/* ---- creating and destroying -------------------------------------------- */

/* Opens a runtime on device d: the caller's options with the device named
 * by its platform and index, which no visibility mask renumbers. */
static kiln_status open_member(const kiln_options *opts, const kiln_device_info *d,
                               kiln_runtime **rt)
{
  char sel[48];
  snprintf(sel, sizeof sel, "%u:%u", d->platform_index, d->device_index);
  kiln_options o; /* checked by find_devices() already */
  kiln_options_init(&o);
  if (opts)
    KILN__STRUCT_IN(NULL, "kiln_group_create", kiln_options, opts, &o);
  o.device = sel;
  return kiln_runtime_create(&o, rt);
}

/* Opens the members; a device whose runtime fails is left out with why. */
static kiln_status open_members(kiln_group *g, const kiln_options *opts,
                                const kiln__device_list *list, const int *chosen)
{
  g->m = calloc(list->count + 1, sizeof *g->m);
  if (!g->m)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_group_create: out of host memory");
  kiln_status first = KILN_OK;
  for (size_t i = 0; i < list->count; i++) {
    const kiln_device_info *d = &list->items[i].info;
    if (!chosen[i])
      continue;
    kiln_status st = open_member(opts, d, &g->m[g->n].rt);
    if (st == KILN_OK) {
      kiln_group_usage_init(&g->m[g->n++].stats);
      continue;
    }
    if (first == KILN_OK)
      first = st;
    kiln__str_appendf(&g->notes, "%u:%u %s left out: %s\n", d->platform_index,
                      d->device_index, d->name, kiln_last_error(NULL));
  }
  if (g->n == 0)
    return kiln__fail(NULL, first == KILN_OK ? KILN_ERR_NO_DEVICE : first,
                      "kiln_group_create: no device could be opened\n%s",
                      kiln__str_get(&g->notes));
  return KILN_OK;
}

/* Finds the devices and which of them the group takes. */
static kiln_status find_devices(const kiln_options *opts, kiln__device_list *list,
                                int **chosen, kiln__str *notes)
{
  kiln__config cfg;
  kiln_status st = kiln__config_resolve(opts, &cfg);
  if (st == KILN_OK && kiln__devices_discover(list) != KILN_OK)
    st = kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                    "kiln_group_create: out of host memory while listing devices");
  if (st == KILN_OK && list->count && cfg.visible)
    st = kiln__devices_mask(list, cfg.visible, cfg.visible_source, notes);
  if (st != KILN_OK)
    return st;
  if (kiln__devices_best(list) == SIZE_MAX)
    return kiln__fail(NULL, KILN_ERR_NO_DEVICE,
                      "kiln_group_create: no usable OpenCL device (available, with a "
                      "compiler) among %zu found\n%s",
                      list->count, kiln__str_get(&list->notes));
  *chosen = calloc(list->count, sizeof **chosen);
  if (!*chosen)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_group_create: out of host memory");
  return kiln__devices_group(list, cfg.devices, cfg.devices_source, *chosen, notes);
}

KILN_API kiln_status kiln_group_create(const kiln_options *opts, kiln_group **out)
{
  if (!out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_group_create: out is NULL; expected the address of a "
                      "kiln_group pointer to receive the group");
  *out = NULL;
  kiln_group *g = calloc(1, sizeof *g);
  if (!g || pthread_mutex_init(&g->lock, NULL) != 0) {
    free(g);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_group_create: out of host memory");
  }
  kiln__device_list list = {0};
  int *chosen = NULL;
  kiln_status st = find_devices(opts, &list, &chosen, &g->notes);
  if (st == KILN_OK)
    st = open_members(g, opts, &list, chosen);
  free(chosen);
  kiln__devices_free(&list);
  if (st != KILN_OK) {
    kiln_group_destroy(g);
    return st;
  }
  *out = g;
  return KILN_OK;
}

KILN_API kiln_status kiln_group_destroy(kiln_group *g)
{
  if (!g)
    return KILN_OK;
  kiln_status busy = KILN_OK;
  for (size_t i = 0; i < g->n; i++) {
    kiln_status st = kiln_runtime_destroy(g->m[i].rt);
    if (st == KILN_ERR_BUSY)
      busy = kiln__fail(NULL, st, "kiln_group_destroy: %s", kiln_last_error(g->m[i].rt));
    else
      g->m[i].rt = NULL;
  }
  if (busy != KILN_OK)
    return busy; /* the group stays, with the runtimes that are busy */
  free(g->m);
  kiln__str_free(&g->notes);
  kiln__str_free(&g->failures);
  pthread_mutex_destroy(&g->lock);
  free(g);
  return KILN_OK;
}

KILN_API size_t kiln_group_size(const kiln_group *g)
{
  return g ? g->n : 0;
}

KILN_API kiln_runtime *kiln_group_runtime(const kiln_group *g, size_t i)
{
  return g && i < g->n ? g->m[i].rt : NULL;
}

KILN_API const char *kiln_group_diagnostics(const kiln_group *g, char *buf, size_t size)
{
  if (!buf || size == 0)
    return buf;
  buf[0] = '\0';
  if (!g)
    return buf;
  kiln_group *mg = (kiln_group *)g; /* the lock is not part of the value */
  pthread_mutex_lock(&mg->lock);
  snprintf(buf, size, "%s%s", kiln__str_get(&g->notes), kiln__str_get(&g->failures));
  pthread_mutex_unlock(&mg->lock);
  return buf;
}

KILN_API kiln_status kiln_group_stats(const kiln_group *g, size_t i,
                                      kiln_group_usage *out)
{
  if (!g || !out || i >= g->n)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_group_stats: %s; expected a group, a device index below "
                      "its size (%zu) and a kiln_group_usage to fill",
                      !g     ? "group is NULL"
                      : !out ? "out is NULL"
                             : "i is out of range",
                      g ? g->n : 0);
  kiln_status st = KILN__STRUCT_OUT(NULL, "kiln_group_stats", kiln_group_usage,
                                    kiln_group_usage_init, out);
  if (st != KILN_OK)
    return st;
  kiln_group *mg = (kiln_group *)g;
  pthread_mutex_lock(&mg->lock);
  kiln_group_usage s = g->m[i].stats;
  double all = 0;
  for (size_t k = 0; k < g->n; k++)
    all += g->m[k].stats.work;
  pthread_mutex_unlock(&mg->lock);
  s.share = all > 0 ? s.work / all : 0;
  kiln__struct_put(out, out->struct_size, &s, sizeof s);
  return KILN_OK;
}

KILN_API kiln_status kiln_group_stats_reset(kiln_group *g)
{
  if (!g)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_group_stats_reset: group is NULL");
  pthread_mutex_lock(&g->lock);
  for (size_t i = 0; i < g->n; i++)
    kiln_group_usage_init(&g->m[i].stats);
  kiln__str_free(&g->failures);
  pthread_mutex_unlock(&g->lock);
  return KILN_OK;
}

/* ---- the schedule -------------------------------------------------------- */

/* One device's part in one call (the feed a pipelined job takes its
 * chunks from: group.h). */
typedef struct kiln__group_feed worker;
struct kiln__group_feed {
  struct call *call;
  size_t i;                  /* its member */
  double rate;               /* units a second: measured, learnt or the prior */
  int alive;                 /* not failed */
  int waiting;               /* it declined the last chunk it was offered */
  size_t cap;                /* the largest chunk it takes; 0: any */
  int released;              /* it gave its chunks back once (a pipeline's fallback) */
  size_t held[FEED_HELD][2]; /* chunks taken, not yet done: at, count */
  size_t nheld;
  uint64_t since_ns;    /* when its device's current run of chunks began,
                                 or its last chunk ended */
  size_t chunks, units; /* done in this call */
  double seconds;
  kiln_status st; /* its failure */
  char *why;
};

typedef struct call {
  kiln_group *g;
  const kiln__group_job *j;
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a chunk finished or came back */
  size_t next;            /* the first unit no device has taken */
  size_t (*back)[2];      /* chunks devices gave back: at, count */
  size_t nback, back_units;
  size_t in_flight; /* units taken and not finished */
  worker *w;
} call;

/* The kernel of kiln_tune() whose measured speed stands for each kind of
 * operation before the group has timed it (kiln__tuned_speed). */
static const char *const tuned_kernel[KILN__GROUP_OPS] = {
  [KILN__GROUP_GEMM] = "gemm f32",
  [KILN__GROUP_CONV] = "conv im2col",
  [KILN__GROUP_FFT] = "fft",
  [KILN__GROUP_REDUCE] = "reduce",
};

/* A device's speed for an operation before the group has measured it, in
 * work a second: what kiln tune measured on it (device time alone: the
 * first chunks, transfers included, correct it); untuned, a share of the
 * estimated peak. */
static double base_speed(const member *m, enum kiln__group_op op)
{
  double speed = kiln__tuned_speed(m->rt, tuned_kernel[op]);
  if (speed <= 0) {
    double peak = kiln_runtime_device(m->rt)->peak_gflops;
    speed = (peak > 0 ? peak * PRIOR_EFFICIENCY : SIMULATOR_PRIOR_GFLOPS) * 1e9;
  }
  return speed;
}

/* A device's speed for op in work a second: what it did in earlier calls
 * of the operation, else base_speed(). */
static double known_speed(const member *m, enum kiln__group_op op)
{
  return m->speed[op] > 0 ? m->speed[op] : base_speed(m, op);
}

size_t kiln__group_peers(const kiln_group *g, enum kiln__group_op op)
{
  double top = 0;
  size_t peers = 0;
  for (size_t i = 0; i < g->n; i++)
    top = fmax(top, base_speed(&g->m[i], op));
  for (size_t i = 0; i < g->n; i++)
    peers += base_speed(&g->m[i], op) * PEER_PART >= top;
  return peers;
}

/* Whether worker i is the fastest alive one (the lowest index of ties). */
static int fastest(const call *c, size_t i)
{
  for (size_t k = 0; k < c->g->n; k++)
    if (k != i && c->w[k].alive &&
        (c->w[k].rate > c->w[i].rate || (c->w[k].rate == c->w[i].rate && k < i)))
      return 0;
  return 1;
}

/* Under c->lock: the chunk worker i takes, [*at, *at + *count): 1; 0 when it
 * should wait; -1 when nothing is left to take. */
static int choose(call *c, size_t i, size_t *at, size_t *count)
{
  const kiln__group_job *j = c->j;
  size_t left = c->back_units + (j->units - c->next);
  if (left == 0)
    return -1;
  double sum = 0; /* of the devices that work: not failed, not waiting */
  size_t working = 0;
  for (size_t k = 0; k < c->g->n; k++)
    if (c->w[k].alive && (k == i || !c->w[k].waiting))
      sum += c->w[k].rate, working++;
  double rate = c->w[i].rate;
  size_t least = j->min < left ? j->min : left;
  size_t mine = 0; /* what it holds: a pipeline takes its next chunk early */
  for (size_t k = 0; k < c->w[i].nheld; k++)
    mine += c->w[i].held[k][1];
  /* Would even the smallest chunk end after the group ends everything? */
  int late = (double)(least + mine) / rate > (double)(left + c->in_flight) / sum;
  if (mine && late) /* not yet: another device may end the call sooner */
    return 0;
  c->w[i].waiting = !mine && !fastest(c, i) && late;
  if (c->w[i].waiting)
    return 0;
  /* Half its share by speed, so that the others can even out the end;
   * all of what is left to a device working alone. min times a power of
   * two: kernels, plans and tuning choices depend on a call's size (a
   * GEMM's rows per work-group, an FFT's batch), and a size seen before
   * reuses what was built for it. */
  double share = (double)left * rate / sum / (working > 1 ? 2 : 1);
  size_t want = least;
  while (want <= left / 2 && (double)(want * 2) <= share)
    want *= 2;
  if (c->w[i].cap && want > c->w[i].cap)
    want = c->w[i].cap;
  if (c->nback) { /* what came back first, from its start */
    size_t *b = c->back[c->nback - 1];
    *at = b[0];
    *count = want < b[1] ? want : b[1];
    b[0] += *count, b[1] -= *count;
    c->nback -= b[1] == 0;
    c->back_units -= *count;
    return 1;
  }
  *at = c->next;
  if (j->per_part) { /* not across a part's end */
    size_t end = (*at / j->per_part + 1) * j->per_part;
    want = want < end - *at ? want : end - *at;
  }
  *count = want < j->units - *at ? want : j->units - *at;
  c->next += *count;
  return 1;
}

int kiln__group_take(kiln__group_feed *w, int wait, size_t *at, size_t *count)
{
  call *c = w->call;
  int got = 0;
  pthread_mutex_lock(&c->lock);
  assert(w->nheld < FEED_HELD);
  while (w->alive) {
    got = choose(c, w->i, at, count);
    if (got == 1) {
      c->in_flight += *count;
      if (w->nheld == 0) /* the device was idle until now */
        w->since_ns = kiln__now_ns();
      w->held[w->nheld][0] = *at, w->held[w->nheld++][1] = *count;
      break;
    }
    got = 0;
    /* Nothing to take now; when waiting, until there is, or until nothing
     * is left and nothing can come back. A waiting worker is woken by
     * every change: the fastest alive one never waits, so work left is
     * always taken. */
    if (!wait || (c->back_units + (c->j->units - c->next) == 0 && c->in_flight == 0))
      break;
    pthread_cond_wait(&c->changed, &c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return got;
}

void kiln__group_done(kiln__group_feed *w, size_t at, size_t count)
{
  call *c = w->call;
  pthread_mutex_lock(&c->lock);
  size_t k = 0;
  while (k < w->nheld && !(w->held[k][0] == at && w->held[k][1] == count))
    k++;
  assert(k < w->nheld);
  memmove(w->held[k], w->held[k + 1], (w->nheld - k - 1) * sizeof w->held[0]);
  w->nheld--;
  c->in_flight -= count;
  /* From the end of its last chunk (or the start of this run of chunks):
   * with a pipeline, what the device spent on this one beside the next. */
  uint64_t now = kiln__now_ns();
  double secs = (double)(now - w->since_ns) * 1e-9;
  w->since_ns = now;
  w->chunks++, w->units += count, w->seconds += secs;
  /* Its speed over the whole call so far: a pipeline's chunks overlap, so
   * one may seem to take all the time and the next none (a driver that
   * runs both when the host waits), and one chunk slowed by something
   * else on the machine counts for its share only. */
  w->rate = (double)w->units / (w->seconds > 1e-9 ? w->seconds : 1e-9);
  pthread_cond_broadcast(&c->changed);
  pthread_mutex_unlock(&c->lock);
}

void kiln__group_cap(kiln__group_feed *w, size_t cap)
{
  pthread_mutex_lock(&w->call->lock);
  w->cap = cap;
  pthread_mutex_unlock(&w->call->lock);
}

kiln_status kiln__group_serve(kiln_runtime *rt, const kiln__group_job *j,
                              kiln__group_feed *w)
{
  size_t at, count;
  while (kiln__group_take(w, 1, &at, &count)) {
    kiln_status st = j->run(rt, j, at, count);
    if (st != KILN_OK)
      return st;
    kiln__group_done(w, at, count);
  }
  return KILN_OK;
}

/* Under c->lock: the chunks worker w holds go back, for any device to
 * take. A worker does so at most twice (kiln__group_release(), then a
 * failure), so the back list has room: BACK_ROOM entries a worker. */
static void give_back(call *c, worker *w)
{
  for (size_t k = 0; k < w->nheld; k++) {
    assert(c->nback < c->g->n * BACK_ROOM);
    c->back[c->nback][0] = w->held[k][0], c->back[c->nback++][1] = w->held[k][1];
    c->back_units += w->held[k][1];
    c->in_flight -= w->held[k][1];
  }
  w->nheld = 0;
  pthread_cond_broadcast(&c->changed);
}

void kiln__group_release(kiln__group_feed *w)
{
  pthread_mutex_lock(&w->call->lock);
  assert(!w->released);
  w->released = 1;
  give_back(w->call, w);
  pthread_mutex_unlock(&w->call->lock);
}

static void *work(void *arg)
{
  worker *w = arg;
  call *c = w->call;
  kiln_runtime *rt = c->g->m[w->i].rt;
  kiln_status st = c->j->pipe ? c->j->pipe(rt, c->j, w) : kiln__group_serve(rt, c->j, w);
  if (st != KILN_OK) {
    char *why = strdup(kiln_last_error(rt));
    pthread_mutex_lock(&c->lock);
    free(w->why), w->why = why;
    w->alive = 0;
    w->st = st;
    give_back(c, w);
    pthread_mutex_unlock(&c->lock);
  }
  assert(st != KILN_OK || w->nheld == 0);
  return NULL;
}

/* Under g->lock: what the call's workers did goes into the stats, their
 * speeds into what later calls start from, their failures into the
 * diagnostics. */
static void account(kiln_group *g, const call *c)
{
  const kiln__group_job *j = c->j;
  for (size_t i = 0; i < g->n; i++) {
    const worker *w = &c->w[i];
    kiln_group_usage *s = &g->m[i].stats;
    s->calls += w->chunks || w->st != KILN_OK;
    s->chunks += w->chunks;
    s->units += w->units;
    s->work += (double)w->units * j->unit_work;
    s->seconds += w->seconds;
    double *speed = &g->m[i].speed[j->op];
    if (w->chunks) {
      *speed = w->rate * j->unit_work;
    } else if (*speed > 0 && w->alive) {
      /* It waited the whole call on a speed measured earlier, which may
       * have been a bad moment: each such call doubles it, up to where it
       * started, so that the device tries a chunk again. A device that
       * is that slow (a simulator) starts there and keeps waiting. */
      double base = base_speed(&g->m[i], j->op);
      *speed = *speed * 2 < base ? *speed * 2 : (*speed > base ? *speed : base);
    }
    if (w->st == KILN_OK)
      continue;
    s->failures++;
    const kiln_device_info *d = kiln_runtime_device(g->m[i].rt);
    kiln__str_appendf(&g->failures,
                      "%s: %u:%u %s failed, its chunk went to the "
                      "others: %s: %s\n",
                      j->fn, d->platform_index, d->device_index, d->name,
                      kiln_status_name(w->st), w->why ? w->why : "");
  }
}

/* Every worker failed: the call fails with each one's reason. */
static kiln_status fail_all(const kiln_group *g, const call *c)
{
  kiln__str msg = {0};
  for (size_t i = 0; i < g->n; i++) {
    const kiln_device_info *d = kiln_runtime_device(g->m[i].rt);
    kiln__str_appendf(&msg, "\n  %u:%u %s: %s: %s", d->platform_index, d->device_index,
                      d->name, kiln_status_name(c->w[i].st),
                      c->w[i].why ? c->w[i].why : "");
  }
  kiln_status st = kiln__fail(NULL, c->w[0].st, "%s: every device of the group failed:%s",
                              c->j->fn, kiln__str_get(&msg));
  kiln__str_free(&msg);
  return st;
}

/* Starts a thread per worker; one that cannot start fails at once. */
static void start(call *c, pthread_t *tid, int *started)
{
  for (size_t i = 0; i < c->g->n; i++) {
    started[i] = pthread_create(&tid[i], NULL, work, &c->w[i]) == 0;
    if (started[i])
      continue;
    pthread_mutex_lock(&c->lock);
    c->w[i].alive = 0;
    c->w[i].st = KILN_ERR_OUT_OF_HOST_MEMORY;
    c->w[i].why = strdup("pthread_create failed: no thread for this device");
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
  }
}

kiln_status kiln__group_run(kiln_group *g, const kiln__group_job *j)
{
  assert(j->units >= 1 && j->min >= 1 && j->unit_work > 0);
  call c = {.g = g, .j = j};
  c.w = calloc(g->n, sizeof *c.w);
  c.back = calloc(g->n * BACK_ROOM, sizeof *c.back);
  pthread_t *tid = calloc(g->n, sizeof *tid);
  int *started = calloc(g->n, sizeof *started);
  int sync = c.w && c.back && tid && started && pthread_mutex_init(&c.lock, NULL) == 0;
  if (sync && pthread_cond_init(&c.changed, NULL) != 0) {
    pthread_mutex_destroy(&c.lock);
    sync = 0;
  }
  if (!sync) {
    free(c.w), free(c.back), free(tid), free(started);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", j->fn);
  }
  pthread_mutex_lock(&g->lock);
  for (size_t i = 0; i < g->n; i++)
    c.w[i] = (worker){.call = &c,
                      .i = i,
                      .rate = known_speed(&g->m[i], j->op) / j->unit_work,
                      .alive = 1};
  pthread_mutex_unlock(&g->lock);
  start(&c, tid, started);
  for (size_t i = 0; i < g->n; i++)
    if (started[i])
      pthread_join(tid[i], NULL);
  size_t ok = 0;
  for (size_t i = 0; i < g->n; i++)
    ok += c.w[i].st == KILN_OK;
  assert(!ok || (c.back_units == 0 && c.next == j->units));
  pthread_mutex_lock(&g->lock);
  account(g, &c);
  pthread_mutex_unlock(&g->lock);
  kiln_status st = ok ? KILN_OK : fail_all(g, &c);
  for (size_t i = 0; i < g->n; i++)
    free(c.w[i].why);
  pthread_cond_destroy(&c.changed);
  pthread_mutex_destroy(&c.lock);
  free(c.w), free(c.back), free(tid), free(started);
  return st;
}
