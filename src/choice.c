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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "tuning.h"

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
  /* Kept on disk too; a record that cannot be written costs the next
   * process one measurement, so it is no failure of this call. */
  if (added)
    kiln__record_save(rt, "benchmark mode", NULL, 0);
}

/* Element i of a float output as a double. */
static double value(kiln_dtype t, const unsigned char *p, size_t i)
{
  if (t == KILN_F64) {
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

/* Whether two backends' outputs agree: within a bound far above what their
 * different orders of summation give (k terms, each rounded at the type's
 * epsilon) and far below what a wrong kernel gives, relative to the largest
 * magnitude of the reference. */
static int agree(kiln_dtype t, const unsigned char *ref, const unsigned char *got,
                 size_t n)
{
  double big = 0, worst = 0;
  for (size_t i = 0; i < n; i++) {
    double r = value(t, ref, i), g = value(t, got, i);
    if (isnan(r) != isnan(g))
      return 0;
    if (!isnan(r)) {
      big = fmax(big, fabs(r));
      worst = fmax(worst, fabs(r - g));
    }
  }
  double tol = t == KILN_F64 ? 1e-9 : t == KILN_F16 ? 3e-2 : 1e-3;
  return worst <= tol * big;
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

kiln_backend kiln__choice_measure(kiln_runtime *rt, const char *key,
                                  const kiln_backend *ids, size_t n, kiln_buffer *out,
                                  kiln__trial trial, const void *req)
{
  kiln_dtype t = kiln_buffer_dtype(out);
  size_t count = kiln_buffer_count(out), bytes = kiln_buffer_bytes(out);
  kiln_buffer *scratch = NULL;
  unsigned char *ref = malloc(bytes ? bytes : 1), *got = malloc(bytes ? bytes : 1);
  kiln_backend winner = KILN_BACKEND_AUTO;
  double best = INFINITY;
  int have_ref = 0;
  if (ref && got && kiln_buffer_create(rt, t, count, 0, &scratch) == KILN_OK) {
    for (size_t i = 0; i < n; i++) {
      /* The warm-up builds what the backend needs and gives its answer. */
      unsigned char *into = have_ref ? got : ref;
      if (once(rt, trial, req, ids[i], out, scratch, NULL) != KILN_OK ||
          kiln_buffer_read(scratch, 0, count, into) != KILN_OK)
        continue;
      if (!have_ref)
        have_ref = i == 0; /* only the rules' pick is the reference */
      else if (!agree(t, ref, got, count))
        continue;
      double runs[3];
      int ok = 1;
      for (int r = 0; r < 3 && ok; r++)
        ok = once(rt, trial, req, ids[i], out, scratch, &runs[r]) == KILN_OK;
      if (!ok)
        continue;
      double med = kiln__median(runs, 3);
      if (med < best) {
        best = med;
        winner = ids[i];
      }
    }
  }
  kiln_buffer_destroy(scratch);
  free(ref);
  free(got);
  if (winner != KILN_BACKEND_AUTO)
    kiln__choice_keep(rt, key, winner);
  return winner;
}
