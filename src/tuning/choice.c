/*
 * choice.c — per-shape choices, kiln's cudnn.benchmark. With benchmark mode
 * on (KILN_BENCHMARK=1, kiln_options.benchmark), the first AUTO call of an
 * operation with a new key (operation, type, shapes, layout, strides,
 * groups: whatever can change the winner) runs every backend that can do
 * it, checks that they agree, times them and keeps the fastest, in the
 * runtime and in the device's tuning record, so the next process does not
 * time again. Without benchmark mode AUTO still uses a recorded choice.
 *
 * The candidates write a scratch copy of the output (a copy, since GEMM's
 * beta reads it), so the caller's output is written once, by the winner,
 * as in any call. A scratch buffer that does not fit the memory budget
 * means no measurement: the rules decide, as cudnn skips an algorithm whose
 * workspace does not fit.
 *
 * Each operation says how its candidates must agree (kiln__agreement): the
 * error bound of its arithmetic, so that different orders of rounding pass
 * and a wrong kernel does not. The timing is a profile record of its own,
 * "benchmark <op>" (KILN_PROFILE_BENCHMARK), so the operation's row holds
 * only its calls; the builds and plans the candidates need on their first
 * run are records of their own again (profile.h).
 *
 * Threads: a key is measured once per runtime (the others run the rules'
 * pick meanwhile). Processes: the record is written under the cache
 * folder's lock, merged with the choices another process kept since this
 * one read it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "compile/cache.h"
#include "core/runtime.h"
#include "profile/profile.h"
#include "tuning/tuning.h"

void (*kiln__choice_seam)(kiln_backend id);

kiln_backend kiln__choice_find(kiln_runtime *rt, const char *key)
{
  kiln_backend id = KILN_BACKEND_AUTO;
  if (!rt->tuning)
    return id; /* a runtime of the fuzzers', checks only */
  pthread_mutex_lock(&rt->lock);
  const kiln__tuning_state *s = rt->tuning;
  for (size_t i = 0; i < s->nchoices && id == KILN_BACKEND_AUTO; i++)
    if (strcmp(s->choices[i].key, key) == 0)
      id = s->choices[i].id;
  pthread_mutex_unlock(&rt->lock);
  return id;
}

/* A key being timed, on the measuring thread's stack, in rt->tuning's list
 * while it is: another thread that meets the key then runs the rules' pick
 * rather than time it again (its timings would disturb each other's). */
struct kiln__measuring {
  const char *key;
  struct kiln__measuring *next;
};

/* rt's choice for key, KILN_BACKEND_AUTO with *claimed 1 when this thread
 * is to measure it (m joins the list), or AUTO with *claimed 0 when
 * another thread is measuring it. The measurer keeps the choice before it
 * leaves the list, so a key is measured once per runtime. */
static kiln_backend claim(kiln_runtime *rt, struct kiln__measuring *m, int *claimed)
{
  kiln_backend id = KILN_BACKEND_AUTO;
  pthread_mutex_lock(&rt->lock);
  kiln__tuning_state *s = rt->tuning;
  for (size_t i = 0; i < s->nchoices && id == KILN_BACKEND_AUTO; i++)
    if (strcmp(s->choices[i].key, m->key) == 0)
      id = s->choices[i].id;
  struct kiln__measuring *p = s->measuring;
  while (p && strcmp(p->key, m->key) != 0)
    p = p->next;
  *claimed = id == KILN_BACKEND_AUTO && !p;
  if (*claimed) {
    m->next = s->measuring;
    s->measuring = m;
  }
  pthread_mutex_unlock(&rt->lock);
  return id;
}

static void unclaim(kiln_runtime *rt, struct kiln__measuring *m)
{
  pthread_mutex_lock(&rt->lock);
  struct kiln__measuring **p = &rt->tuning->measuring;
  while (*p != m)
    p = &(*p)->next;
  *p = m->next;
  pthread_mutex_unlock(&rt->lock);
}

/* Saves rt's record with its choices and those another process kept since
 * rt read it: under the build lock (kiln_tuning_get() reads the record
 * under it; two threads saving at once would free each other's text) and
 * the cache folder's lock (the other process's read, merge and write). */
static void save(kiln_runtime *rt)
{
  pthread_mutex_lock(&rt->build_lock);
  kiln__cache_lock_folder(rt->cache, 1);
  kiln__record_merge_choices(rt);
  /* A record that cannot be written costs the next process one
   * measurement, so it is no failure of this call. */
  kiln__record_save(rt, "benchmark mode", NULL, 0);
  kiln__cache_lock_folder(rt->cache, 0);
  pthread_mutex_unlock(&rt->build_lock);
}

void kiln__choice_keep(kiln_runtime *rt, const char *key, kiln_backend id)
{
  pthread_mutex_lock(&rt->lock);
  kiln__tuning_state *s = rt->tuning;
  size_t i = 0;
  while (i < s->nchoices && strcmp(s->choices[i].key, key) != 0)
    i++;
  int added = 0;
  if (i == s->nchoices) {
    kiln__choice *grown = realloc(s->choices, (s->nchoices + 1) * sizeof *grown);
    char *copy = strdup(key);
    if (grown)
      s->choices = grown;
    if (grown && copy) {
      s->choices[s->nchoices++] = (kiln__choice){.key = copy, .id = id};
      added = 1;
    } else {
      free(copy); /* no room to remember: the next call measures again */
    }
  } else {
    s->choices[i].id = id;
    added = 1;
  }
  pthread_mutex_unlock(&rt->lock);
  if (added)
    save(rt);
}

double kiln__choice_epsilon(kiln_dtype t)
{
  return t == KILN_F16 ? 0x1p-11 : t == KILN_F64 || t == KILN_C64 ? 0x1p-53 : 0x1p-24;
}

/* Element i of a float output as a double; complex outputs are read as
 * their real parts' type, twice as many. */
static double value(kiln_dtype t, const unsigned char *p, size_t i)
{
  if (t == KILN_F64 || t == KILN_C64) {
    double d;
    memcpy(&d, p + 8 * i, 8);
    return d;
  }
  if (t == KILN_F16) {
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return kiln__half_to_double(h);
  }
  float f;
  memcpy(&f, p + 4 * i, 4);
  return f;
}

/* Whether two backends' outputs (bytes each) agree as `how` says. The
 * default bound is far above what different orders of summation give (k
 * terms, each rounded at the type's epsilon) and far below what a wrong
 * kernel gives. Integer outputs must be equal. */
static int agree(kiln_dtype t, const unsigned char *ref, const unsigned char *got,
                 size_t bytes, const kiln__agreement *how)
{
  if (t == KILN_I32 || t == KILN_I64)
    return memcmp(ref, got, bytes) == 0;
  size_t n = bytes / (t == KILN_F16 ? 2 : t == KILN_F64 || t == KILN_C64 ? 8 : 4);
  double big = 0, worst = 0, ref2 = 0, diff2 = 0;
  for (size_t i = 0; i < n; i++) {
    double r = value(t, ref, i), g = value(t, got, i);
    if (isnan(r) != isnan(g))
      return 0;
    if (!isnan(r)) {
      big = fmax(big, fabs(r));
      worst = fmax(worst, fabs(r - g));
      ref2 += r * r;
      diff2 += (r - g) * (r - g);
    }
  }
  double tol = how->tol > 0    ? how->tol
               : t == KILN_F64 ? 1e-9
               : t == KILN_F16 ? 3e-2
                               : 1e-3;
  return how->normwise ? sqrt(diff2) <= tol * sqrt(ref2) : worst <= tol * big;
}
/* Runs trial id once on scratch (a fresh copy of out) and waits. */
static kiln_status once(kiln_runtime *rt, kiln__trial trial, const void *req,
                        kiln_backend id, kiln_buffer *out, kiln_buffer *scratch,
                        double *secs)
{
  kiln_status st = kiln_buffer_copy(scratch, 0, out, 0, kiln_buffer_count(out));
  if (st == KILN_OK)
    st = kiln_finish(rt);
  if (st != KILN_OK)
    return st;
  double t0 = (kiln__now_ns() * 1e-9);
  if (secs && kiln__choice_seam) /* inside the timing: a slower candidate */
    kiln__choice_seam(id);
  st = trial(rt, req, id, scratch);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  if (secs)
    *secs = (kiln__now_ns() * 1e-9) - t0;
  return st;
}

/* Times b's candidates ids[0..n) on scratch; the fastest that agrees with
 * the first that runs, or AUTO. */
static kiln_backend measure(kiln_runtime *rt, const kiln__bench *b,
                            const kiln_backend *ids, size_t n, kiln_buffer *scratch)
{
  kiln_dtype t = kiln_buffer_dtype(b->out);
  size_t count = kiln_buffer_count(b->out), bytes = kiln_buffer_bytes(b->out);
  unsigned char *ref = malloc(bytes ? bytes : 1), *got = malloc(bytes ? bytes : 1);
  kiln_backend winner = KILN_BACKEND_AUTO;
  double best = INFINITY;
  int have_ref = 0;
  for (size_t i = 0; ref && got && i < n; i++) {
    /* The warm-up builds what the backend needs and gives its answer. */
    unsigned char *into = have_ref ? got : ref;
    if (once(rt, b->trial, b->req, ids[i], b->out, scratch, NULL) != KILN_OK ||
        kiln_buffer_read(scratch, 0, count, into) != KILN_OK)
      continue;
    if (have_ref && !agree(t, ref, got, bytes, &b->agree))
      continue;
    have_ref = 1; /* the rules' pick, unless it failed */
    double runs[3];
    int ok = 1;
    for (int r = 0; r < 3 && ok; r++)
      ok = once(rt, b->trial, b->req, ids[i], b->out, scratch, &runs[r]) == KILN_OK;
    double med = ok ? kiln__median(runs, 3) : INFINITY;
    if (med < best) {
      best = med;
      winner = ids[i];
    }
  }
  free(ref);
  free(got);
  return winner;
}

kiln_backend kiln__choice_benchmark(kiln_runtime *rt, const kiln__bench *b)
{
  kiln_backend ids[8] = {b->first};
  size_t n = 1;
  for (size_t i = 0; i < b->nall && n < KILN__COUNT(ids); i++)
    if (b->all[i] != b->first && b->can(rt, b->req, b->all[i]))
      ids[n++] = b->all[i];
  struct kiln__measuring m = {.key = b->key};
  int claimed;
  kiln_backend id = claim(rt, &m, &claimed);
  if (!claimed || n < 2) { /* known, being measured, or no choice to make */
    if (claimed)
      unclaim(rt, &m);
    return id != KILN_BACKEND_AUTO && b->can(rt, b->req, id) ? id : KILN_BACKEND_AUTO;
  }
  /* "benchmark gemm": the record's name is the key's first word */
  char name[48];
  snprintf(name, sizeof name, "benchmark %.*s", (int)strcspn(b->key, " "), b->key);
  kiln__profile_scope ps;
  kiln__profile_aside(rt, &ps, KILN_PROFILE_BENCHMARK, name);
  kiln_buffer *scratch = NULL;
  if (kiln_buffer_create(rt, kiln_buffer_dtype(b->out), kiln_buffer_count(b->out), 0,
                         &scratch) == KILN_OK)
    id = measure(rt, b, ids, n, scratch);
  kiln_buffer_destroy(scratch);
  if (id != KILN_BACKEND_AUTO)
    kiln__choice_keep(rt, b->key, id);
  unclaim(rt, &m);
  const char *shape = b->key + strcspn(b->key, " ");
  kiln__profile_describe(&ps, "all", 0, 0, "%s: %s", kiln_backend_name(id),
                         shape + (*shape == ' '));
  kiln__profile_back(&ps);
  return id;
}
