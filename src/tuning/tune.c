/*
 * tune.c — kiln_tune(): the search for the parameters of kiln's own kernels
 * on one device, whose result becomes the device's tuning record.
 *
 * Each kernel (GEMM's three variants and the CPU shape's blocks of A, the
 * reductions, the FFT passes, the convolution's direct kernel and im2col
 * step) is a list of candidates: the
 * parameters in use first (the baseline), then the other kernel shape's
 * rules where there are two (CPU or GPU: which shape is a parameter too),
 * then the grid of the better shape in order of distance from the
 * baseline, so a short budget still tries the nearest neighbours. For each
 * candidate:
 *   1. kiln__tuning_check() against the device's limits (group size, local
 *      memory), before anything is compiled;
 *   2. the kernels are rebuilt with it (kiln__runtime_set_tuning()) and run
 *      on a small odd-sized case whose answer is known exactly (small whole
 *      numbers, so every variant, half included, must match to the bit);
 *      a build or launch failure, or a wrong answer, skips it with a note;
 *   3. one warm-up run, then the median of five runs of the timing case
 *      (wall time, host overhead included: what a caller sees). A candidate
 *      whose first run is three times the best is not run further.
 * The best is then measured against the baseline again, in turn, and
 * replaces it only when it is faster by more than 3% there, so tuning never
 * makes a kernel slower beyond noise. Each kernel gets the
 * budget left divided by the kernels left (the convolution's two count
 * half each); one reached with none left still measures its baseline, so
 * the budget may run over by that much. The record is written after
 * each kernel, so a stop (the budget, Ctrl-C through progress) keeps all
 * that was finished.
 *
 * The cases are in tune_case.c, the candidates and their grids in
 * tune_grid.c; this file is the search.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "tuning/tune.h"
#include "tuning/tuning.h"

enum { TIMED_RUNS = 5 };

typedef struct search {
  kiln_runtime *rt;
  const kiln_tune_options *o;
  double t0, budget;
  size_t index, count;
  int stop;
  kiln__measured m[8];
  size_t nm;
} search;

/* ---- measuring ------------------------------------------------------------- */

/* Reports a step; sets s->stop when progress asks to. */
static void report(search *s, kiln_tune_step *step)
{
  step->elapsed = (kiln__now_ns() * 1e-9) - s->t0;
  step->left = s->budget - step->elapsed;
  if (s->o->progress && s->o->progress(step, s->o->user))
    s->stop = 1;
}

/* A step of the search for progress, as it stands. */
static kiln_tune_step step_of(const search *s, const char *kernel, const char *candidate,
                              double secs, const char *best, double best_s, double base_s)
{
  return (kiln_tune_step){
    .struct_size = sizeof(kiln_tune_step),
    .kernel = kernel,
    .candidate = candidate,
    .index = s->index,
    .count = s->count,
    .seconds = secs,
    .best = best,
    .best_seconds = best_s,
    .baseline_seconds = base_s,
  };
}

/* Measures candidate c: its median in *secs, or a reason in why. `cutoff`
 * stops after the first run when that is slower. */
static void measure(search *s, kiln__tune_case *b, const kiln__tune_cand *c,
                    double cutoff, double *secs, kiln__str *why)
{
  const kiln_device_info *dev = &kiln__runtime_device(s->rt)->info;
  *secs = 0;
  if (kiln__tuning_check(dev, &c->t, why) != 0)
    return;
  kiln__runtime_set_tuning(s->rt, &c->t);
  int ok = 0;
  kiln_status st = b->check(b, &ok);
  if (st == KILN_OK)
    st = kiln_finish(s->rt);
  if (st != KILN_OK) {
    kiln__str_appendf(why, "%s: %s", kiln_status_name(st), kiln_last_error(s->rt));
    return;
  }
  if (!ok) {
    kiln__str_appendf(why, "wrong result on the check case");
    return;
  }
  double t[TIMED_RUNS + 1];
  int runs = 0;
  for (int r = 0; r <= TIMED_RUNS && st == KILN_OK; r++) {
    double t0 = (kiln__now_ns() * 1e-9);
    st = b->run(b);
    if (st == KILN_OK)
      st = kiln_finish(s->rt);
    t[runs++] = (kiln__now_ns() * 1e-9) - t0;
    if (r == 1 && cutoff > 0 && t[1] > 3 * cutoff)
      break; /* r == 0 was the warm-up */
  }
  if (st != KILN_OK) {
    kiln__str_appendf(why, "%s: %s", kiln_status_name(st), kiln_last_error(s->rt));
    return;
  }
  *secs = kiln__median(t + 1, (size_t)runs - 1);
}

/* The best candidate against the baseline once more, three rounds of each
 * in turn, so that a slow spell of the machine (PoCL's come and go over
 * seconds) falls on both alike: *base_s and *best_s become the medians of
 * their rounds. The search compared candidates measured minutes apart. */
static void rematch(search *s, kiln__tune_case *b, const kiln__tune_cand *base,
                    const kiln__tune_cand *best, double *base_s, double *best_s)
{
  double t[2][3];
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 2; k++) {
      kiln__str why = {0};
      measure(s, b, k ? best : base, 0, &t[k][r], &why);
      kiln__str_free(&why);
      if (t[k][r] == 0)
        return; /* it failed this time: keep the search's figures */
    }
  *base_s = kiln__median(t[0], 3);
  *best_s = kiln__median(t[1], 3);
}

/* Keeps what the search of `kernel` found for the record: the baseline,
 * what it kept, their times, and how many candidates it had. */
static void note(search *s, const char *kernel, const kiln__tune_cand *base,
                 const kiln__tune_cand *kept, double base_s, double kept_s, size_t n)
{
  if (s->nm >= KILN__COUNT(s->m))
    return;
  kiln__measured *m = &s->m[s->nm++];
  snprintf(m->kernel, sizeof m->kernel, "%s", kernel);
  snprintf(m->from, sizeof m->from, "%s", base->text);
  snprintf(m->to, sizeof m->to, "%s", kept->text);
  m->from_s = base_s;
  m->to_s = kept_s;
  m->candidates = (unsigned)n;
}

/* Searches kernel `what` within `budget` seconds; updates rt's parameters
 * with the best and records what changed. */
static void tune_kernel(search *s, int what, int variant, double budget)
{
  kiln_runtime *rt = s->rt;
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  const kiln__tuning base = rt->tuning->t;
  if (what == 4 && base.gemm[variant].gpu_shape) {
    s->count -= 2; /* GEMM took the GPU shape, which has no blocks of A */
    return;
  }
  kiln__tune_case b;
  kiln_status st = kiln__tune_case_make(rt, what, variant, &b);
  if (st != KILN_OK)
    return; /* nothing to measure on: the device lacks memory or a type */
  kiln__tune_cand *list = malloc(KILN__TUNE_CANDIDATES * sizeof *list);
  if (!list) {
    kiln__tune_case_free(&b);
    return;
  }
  /* The baseline, then the other shape's rules, then the better shape's
   * grid (filled in once the first two are measured). */
  size_t n = kiln__tune_start(what, variant, &base, dev, list), first = n;
  double start = (kiln__now_ns() * 1e-9), best_s = 0, base_s = 0;
  size_t best = 0;
  for (size_t i = 0; !s->stop; i++) {
    if (i == first) { /* the shapes are measured: the grid of the better one */
      n = kiln__tune_more(what, variant, dev, list, first, best);
      s->count += n - first;
    }
    if (i >= n)
      break;
    kiln__tune_cand_text(what, variant, &list[i]);
    kiln__str why = {0};
    double secs;
    measure(s, &b, &list[i], best_s, &secs, &why);
    if (secs > 0 && (best_s == 0 || secs < best_s)) {
      best_s = secs;
      best = i;
    }
    if (i == 0)
      base_s = secs;
    s->index++;
    int last = (kiln__now_ns() * 1e-9) - start > budget;
    kiln_tune_step step =
      step_of(s, b.kernel, list[i].text, secs, list[best].text, best_s, base_s);
    step.skipped = secs > 0 ? NULL : kiln__str_get(&why);
    report(s, &step);
    kiln__str_free(&why);
    if (last)
      break;
  }
  /* Keep the baseline unless the best beats it beyond noise, measured
   * again side by side. */
  if (best != 0 && base_s > 0 && !s->stop)
    rematch(s, &b, &list[0], &list[best], &base_s, &best_s);
  size_t keep = base_s > 0 && best_s < base_s / 1.03 ? best : 0;
  if (base_s == 0 && best_s > 0)
    keep = best; /* the baseline itself failed here */
  kiln__runtime_set_tuning(rt, &list[keep].t);
  double kept_s = keep == 0 ? base_s : best_s;
  note(s, b.kernel, &list[0], &list[keep], base_s, kept_s, n);
  kiln_tune_step done =
    step_of(s, b.kernel, list[keep].text, kept_s, list[keep].text, kept_s, base_s);
  done.kernel_done = 1;
  report(s, &done);
  free(list);
  kiln__tune_case_free(&b);
}

KILN_API kiln_status kiln_tune(kiln_runtime *rt, const kiln_tune_options *opts)
{
  static const char fn[] = "kiln_tune";
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: rt is NULL", fn);
  kiln_tune_options o;
  kiln_tune_options_init(&o);
  kiln_status st = KILN__OP_DESC_IN(rt, fn, kiln_tune_options, opts, &o);
  if (st != KILN_OK)
    return st;
  if (!(o.budget >= 0) || o.budget > 1e7 || (o.what & ~(unsigned)KILN_TUNE_ALL))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: budget %g or what 0x%x is out of range; expected 0 (240 s) or "
                      "seconds, and KILN_TUNE_* bits",
                      fn, o.budget, o.what);
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  unsigned what = o.what ? o.what : KILN_TUNE_ALL;
  /* The kernels in order: GEMM's variants, the reductions, the FFT, the
   * convolution's direct kernel and im2col step. Each gets its weight's
   * share of the budget left: the convolution's two, one kernel's together
   * (their grids are short, and most candidates rebuild nothing). */
  struct {
    int what, variant;
    double weight;
  } kernels[8] = {{0}};
  size_t nk = 0;
  for (int v = 0; (what & KILN_TUNE_GEMM) && v < KILN__GEMM_VARIANTS; v++)
    if (v != KILN__GEMM_F64 || dev->has_fp64)
      kernels[nk].what = 0, kernels[nk++].variant = v;
  /* A's blocks, measured on float once GEMM f32 has its shape: the CPU
   * shape's only, and one kernel's share for the three variants */
  if (what & KILN_TUNE_GEMM)
    kernels[nk].what = 4, kernels[nk].weight = 0.5,
    kernels[nk++].variant = KILN__GEMM_F32;
  if (what & KILN_TUNE_REDUCE)
    kernels[nk].what = 1, kernels[nk++].variant = 0;
  if (what & KILN_TUNE_FFT)
    kernels[nk].what = 2, kernels[nk++].variant = 0;
  for (int v = 0; (what & KILN_TUNE_CONV) && v < 2; v++)
    kernels[nk].what = 3, kernels[nk].weight = 0.5, kernels[nk++].variant = v;
  double weights = 0;
  for (size_t k = 0; k < nk; k++)
    weights += kernels[k].weight = kernels[k].weight > 0 ? kernels[k].weight : 1;
  search s = {.rt = rt,
              .o = &o,
              .t0 = (kiln__now_ns() * 1e-9),
              .budget = o.budget > 0 ? o.budget : 240,
              .count = 2 * nk};
  st = KILN_OK;
  for (size_t k = 0; k < nk && !s.stop; k++) {
    /* A kernel reached with nothing left still measures its baseline, so
     * every kernel asked for is in the record, on a slow machine too. */
    double left = s.budget - ((kiln__now_ns() * 1e-9) - s.t0);
    tune_kernel(&s, kernels[k].what, kernels[k].variant,
                left > 0 ? left * kernels[k].weight / weights : 0);
    weights -= kernels[k].weight;
    /* Kept after each kernel, so a stop loses nothing finished. */
    st = kiln__record_save(rt, fn, s.m, s.nm);
    if (st != KILN_OK)
      break;
  }
  return st;
}
