/*
 * tune_grid.c — kiln_tune()'s candidates (tune.c): the baseline, the other
 * kernel shape's rules, and the grid of the better shape around the best,
 * nearest first; each with the text that names it in progress and the
 * record.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "tuning/tune.h"
#include "tuning/tuning.h"

static void gemm_text(const kiln__gemm_tuning *g, char *out, size_t size)
{
  if (g->gpu_shape)
    snprintf(out, size,
             "gpu tile=%ux%ux%u wpt=%ux%u vw=%u,%u str=%u,%u pad=%u db=%u gm=%u", g->tsm,
             g->tsn, g->tsk, g->wptm, g->wptn, g->vwm, g->vwn, g->strm, g->strn, g->pad,
             g->db, g->gm);
  else
    snprintf(out, size, "cpu tm=%u vw=%u cg=%u", g->tm, g->vw, g->cg);
}

static void reduce_text(const kiln__reduce_tuning *r, char *out, size_t size)
{
  if (r->gpu_shape)
    snprintf(out, size, "gpu wg=%u groups=%u", r->wg, r->groups);
  else
    snprintf(out, size, "cpu chunks=%u", r->chunks);
}

static void conv_text(int variant, const kiln__conv_tuning *t, char *out, size_t size)
{
  if (variant == 0)
    snprintf(out, size, "qw=%u kb=%u group=%ux%u", t->qw, t->kb, t->lq, t->lp);
  else
    snprintf(out, size, "col_kib=%u", t->col_kib);
}

void kiln__tune_cand_text(int what, int variant, kiln__tune_cand *c)
{
  if (what == 4) {
    snprintf(c->text, sizeof c->text, "akib=%u", c->t.gemm[variant].akib);
    return;
  }
  if (what == 3)
    conv_text(variant, &c->t.conv, c->text, sizeof c->text);
  else if (what == 0)
    gemm_text(&c->t.gemm[variant], c->text, sizeof c->text);
  else if (what == 1)
    reduce_text(&c->t.reduce, c->text, sizeof c->text);
  else
    snprintf(c->text, sizeof c->text,
             "group=%u wide_from=%u vec_first=%u row_max=%u local=%u/%u/%u",
             c->t.fft.group, c->t.fft.wide_from, c->t.fft.vec_first, c->t.fft.row_max,
             c->t.fft.local_max, c->t.fft.local_radix, c->t.fft.local_cols);
}

static double ldist(unsigned a, unsigned b)
{
  return fabs(log2((double)a) - log2((double)b));
}

static void add(kiln__tune_cand *list, size_t *n, const kiln__tuning *t, double dist)
{
  if (*n < KILN__TUNE_CANDIDATES)
    list[(*n)++] = (kiln__tune_cand){.t = *t, .dist = dist};
}

/* add(), unless list[start..] holds t already (grids that change one
 * parameter at a time meet their own candidates). */
static void add_new(kiln__tune_cand *list, size_t *n, const kiln__tuning *t, double dist,
                    size_t start)
{
  for (size_t e = start; e < *n; e++)
    if (memcmp(&list[e].t, t, sizeof *t) == 0)
      return;
  add(list, n, t, dist);
}

/* Convolution's grid around base: the direct kernel's blocks (columns and
 * channels a work-item, at most 64 accumulators) in the driver's groups or
 * three shapes of 64 work-items; im2col's step from 256 KiB (within the L2
 * of most CPUs) to 64 MiB. A group shape differs from the driver's choice
 * by one step. */
static void conv_grid(int variant, const kiln__tuning *base, kiln__tune_cand *list,
                      size_t *n)
{
  kiln__tuning t = *base;
  const kiln__conv_tuning *b = &base->conv;
  kiln__conv_tuning *c = &t.conv;
  if (variant == 1) {
    for (unsigned kib = 256; kib <= 65536; kib *= 2) {
      c->col_kib = kib;
      add(list, n, &t, ldist(kib, b->col_kib));
    }
    return;
  }
  static const unsigned qws[] = {1, 2, 4, 8, 16}, kbs[] = {1, 2, 4, 8},
                        groups[][2] = {{0, 0}, {8, 8}, {16, 4}, {64, 1}};
  for (size_t i = 0; i < KILN__COUNT(qws); i++)
    for (size_t j = 0; j < KILN__COUNT(kbs); j++)
      for (size_t g = 0; g < KILN__COUNT(groups) && qws[i] * kbs[j] <= 64; g++) {
        c->qw = qws[i];
        c->kb = kbs[j];
        c->lq = groups[g][0];
        c->lp = groups[g][1];
        int same = c->lq == b->lq && c->lp == b->lp;
        add(list, n, &t, ldist(c->qw, b->qw) + ldist(c->kb, b->kb) + (same ? 0 : 1));
      }
}

/* GEMM's blocks of A around base: from 512 KiB (a core's L2) to 16 MiB,
 * and none (0), counted as far as the largest; for every variant alike, as
 * the block that fits is the cache's (bytes of packed panels, whatever the
 * type). */
static void blocks_grid(int variant, const kiln__tuning *base, kiln__tune_cand *list,
                        size_t *n)
{
  kiln__tuning t = *base;
  for (unsigned kib = 512; kib <= 32768; kib *= 2) {
    for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
      t.gemm[v].akib = kib > 16384 ? 0 : kib;
    unsigned b = base->gemm[variant].akib;
    add(list, n, &t, ldist(kib, b ? b : 32768));
  }
}

/* The GPU shape's grid around b (the variant's parameters in t, g in it):
 * the shapes of tile and register tile that good GPU GEMMs use (CLBlast's
 * tuned xgemm, CUTLASS's SGEMM): 64 to 128 x 256 tiles of 4 x 4 to 8 x 16
 * outputs a work-item, 64 to 512 work-items, each in its best-known
 * settings (vectors of 4 where the register tile allows, strided,
 * double-buffered, GROUP_M 8), then each of the other parameters changed
 * alone from b: depth 8 to 32, vectors of 1 and 2, contiguous tiles,
 * padding, one buffer, row-by-row order and bands of 4 and 16. Some 60
 * candidates, those the device cannot run refused by kiln__tuning_check()
 * in the tuner, nearest b first. */
static void gemm_gpu_grid(kiln__gemm_tuning *g, const kiln__gemm_tuning *b,
                          kiln__tuning *t, kiln__tune_cand *list, size_t *n)
{
#define add(list, n, t, d) add_new(list, n, t, d, start)
  size_t start = *n;
  static const unsigned tiles[][4] = {
    {64, 64, 4, 4},   {64, 64, 8, 8},    {64, 128, 4, 8},  {128, 64, 8, 4},
    {128, 128, 4, 8}, {128, 128, 8, 4},  {128, 128, 8, 8}, {128, 256, 8, 8},
    {256, 128, 8, 8}, {128, 256, 8, 16}, {128, 128, 4, 4}, {64, 128, 8, 8}};
  static const unsigned tsks[] = {8, 16, 32};
  for (size_t i = 0; i < KILN__COUNT(tiles); i++)
    for (size_t k = 0; k < KILN__COUNT(tsks); k++) {
      *g = *b;
      g->tsm = tiles[i][0], g->tsn = tiles[i][1], g->tsk = tsks[k];
      g->wptm = tiles[i][2], g->wptn = tiles[i][3];
      g->vwm = g->vwn = 4, g->strm = g->strn = 1, g->db = 1, g->gm = 8, g->pad = 0;
      add(list, n, t,
          ldist(g->tsm, b->tsm) + ldist(g->tsn, b->tsn) + ldist(g->tsk, b->tsk) +
            ldist(g->wptm, b->wptm) + ldist(g->wptn, b->wptn));
    }
  /* one parameter at a time from b: {field, value} */
  static const unsigned vws[] = {1, 2, 4, 8}, gms[] = {1, 4, 8, 16};
  for (size_t i = 0; i < KILN__COUNT(vws); i++) {
    *g = *b;
    g->vwm = vws[i];
    add(list, n, t, 0.5 + ldist(g->vwm, b->vwm));
    *g = *b;
    g->vwn = vws[i];
    add(list, n, t, 0.5 + ldist(g->vwn, b->vwn));
    *g = *b;
    g->gm = gms[i];
    add(list, n, t, 0.5 + ldist(g->gm, b->gm));
  }
  for (unsigned v = 0; v < 2; v++) {
    *g = *b, g->strm = v, add(list, n, t, 0.5 + (v != b->strm));
    *g = *b, g->strn = v, add(list, n, t, 0.5 + (v != b->strn));
    *g = *b, g->strm = g->strn = v, add(list, n, t, 0.5 + 2 * (v != b->strm));
    *g = *b, g->pad = v, add(list, n, t, 0.5 + (v != b->pad));
    *g = *b, g->db = v, add(list, n, t, 0.5 + (v != b->db));
  }
#undef add
}

/* A GEMM variant's grid of one shape (gpu) around base. */
static void gemm_grid(int variant, int gpu, const kiln__tuning *base,
                      kiln__tune_cand *list, size_t *n)
{
  kiln__tuning t = *base;
  const kiln__gemm_tuning *b = &base->gemm[variant];
  kiln__gemm_tuning *g = &t.gemm[variant];
  g->gpu_shape = gpu;
  if (!gpu) {
    /* cg: the driver's groups, or groups of 1 to 16 work-items (log
     * distance counted from 1 for the driver's). */
    static const unsigned tms[] = {2, 4, 6, 8, 12, 16}, vws[] = {2, 4, 8, 16},
                          cgs[] = {0, 1, 4, 16};
    for (size_t i = 0; i < KILN__COUNT(tms); i++)
      for (size_t j = 0; j < KILN__COUNT(vws); j++)
        for (size_t k = 0; k < KILN__COUNT(cgs); k++) {
          g->tm = tms[i];
          g->vw = vws[j];
          g->cg = cgs[k];
          add(list, n, &t,
              ldist(g->tm, b->tm) + ldist(g->vw, b->vw) +
                ldist(g->cg ? g->cg : 1, b->cg ? b->cg : 1) + (g->cg != b->cg));
        }
  } else
    gemm_gpu_grid(g, b, &t, list, n);
}

/* The reductions' grid of one shape (gpu) around base: chunks, or groups
 * and their size, a few for each compute unit. */
static void reduce_grid(int gpu, unsigned cu, const kiln__tuning *base,
                        kiln__tune_cand *list, size_t *n)
{
  kiln__tuning t = *base;
  kiln__reduce_tuning *r = &t.reduce;
  r->gpu_shape = gpu;
  static const unsigned per_cu[] = {1, 2, 4, 8, 16, 32},
                        wgs[] = {32, 64, 128, 256, 512, 1024};
  for (size_t i = 0; i < KILN__COUNT(per_cu); i++) {
    if (!gpu) {
      r->chunks = per_cu[i] * cu;
      add(list, n, &t, ldist(r->chunks, base->reduce.chunks));
      continue;
    }
    for (size_t j = 0; j < KILN__COUNT(wgs); j++) {
      r->groups = per_cu[i] * cu;
      r->wg = wgs[j];
      add(list, n, &t,
          ldist(r->groups, base->reduce.groups) + ldist(r->wg, base->reduce.wg));
    }
  }
}

/* The FFT's grid around base: group sizes, the scalar kernels' wide_from,
 * and the vector kernels with and without whole rows; where the rules run
 * the local-memory kernels (GPUs), their radix a work-item, sequences a
 * group and a local room of half the rule's too. */
static void fft_grid(const kiln__tuning *base, kiln__tune_cand *list, size_t *n)
{
  kiln__tuning t = *base;
  static const unsigned groups[] = {16, 32, 64, 128, 256}, wides[] = {16, 32, 64, 128};
  /* the vector candidates' whole rows: the rule's row_max, else the longest */
  unsigned rows = base->fft.row_max ? base->fft.row_max : KILN__FFT_ROW_MAX;
  for (size_t i = 0; i < KILN__COUNT(groups); i++)
    for (size_t j = 0; j < KILN__COUNT(wides); j++)
      for (unsigned v = 0; v < 3; v++) {
        if (v && j) /* wide_from changes nothing the vector kernels run */
          continue;
        /* v: the scalar kernels, the vector ones, the vector ones with
         * whole rows */
        t.fft.group = groups[i];
        t.fft.wide_from = v ? base->fft.wide_from : wides[j];
        t.fft.vec_first = v > 0;
        t.fft.row_max = v == 2 ? rows : 0;
        add(list, n, &t,
            ldist(t.fft.group, base->fft.group) +
              ldist(t.fft.wide_from, base->fft.wide_from) +
              (t.fft.vec_first != base->fft.vec_first) +
              (t.fft.row_max != base->fft.row_max));
      }
  static const unsigned radices[] = {4, 8, 16}, cols[] = {1, 4, 16, 64};
  for (unsigned h = 0; base->fft.local_max && h < 2; h++)
    for (size_t i = 0; i < KILN__COUNT(radices); i++)
      for (size_t j = 0; j < KILN__COUNT(cols); j++) {
        t = *base;
        t.fft.local_max = base->fft.local_max >> h;
        t.fft.local_radix = radices[i];
        t.fft.local_cols = cols[j];
        if (t.fft.local_max < 32)
          continue;
        add(list, n, &t,
            h + ldist(radices[i], base->fft.local_radix) +
              ldist(cols[j], base->fft.local_cols));
      }
}

/* The grid of one shape of kernel `what` around base (the baseline's
 * parameters in t), each with its distance from base. */
static void grid(int what, int variant, int gpu, const kiln__tuning *base,
                 const kiln_device_info *dev, kiln__tune_cand *list, size_t *n)
{
  unsigned cu = dev->compute_units ? dev->compute_units : 1;
  if (what == 3)
    conv_grid(variant, base, list, n);
  else if (what == 4)
    blocks_grid(variant, base, list, n);
  else if (what == 0)
    gemm_grid(variant, gpu, base, list, n);
  else if (what == 1)
    reduce_grid(gpu, cu, base, list, n);
  else
    fft_grid(base, list, n);
}

static int by_dist(const void *a, const void *b)
{
  const kiln__tune_cand *x = a, *y = b;
  return x->dist < y->dist ? -1 : x->dist > y->dist;
}

size_t kiln__tune_start(int what, int variant, const kiln__tuning *base,
                        const kiln_device_info *dev, kiln__tune_cand *list)
{
  size_t n = 0;
  add(list, &n, base, 0);
  kiln__tuning other = *base;
  int gpu = what == 0 ? base->gemm[variant].gpu_shape : base->reduce.gpu_shape;
  if (what < 2) {
    kiln_device_info flipped = *dev;
    flipped.type = gpu ? KILN_DEVICE_CPU : KILN_DEVICE_GPU;
    kiln__tuning rules;
    kiln__tuning_defaults(&flipped, &rules);
    if (what == 0)
      other.gemm[variant] = rules.gemm[variant];
    else
      other.reduce = rules.reduce;
    add(list, &n, &other, 0);
  }
  return n;
}

size_t kiln__tune_more(int what, int variant, const kiln_device_info *dev,
                       kiln__tune_cand *list, size_t first, size_t best)
{
  size_t n = first;
  int shape =
    what == 0 ? list[best].t.gemm[variant].gpu_shape : list[best].t.reduce.gpu_shape;
  grid(what, variant, shape, &list[best].t, dev, list, &n);
  qsort(list + first, n - first, sizeof *list, by_dist);
  size_t kept = first; /* less what was measured already */
  for (size_t k = first; k < n; k++) {
    kiln__tune_cand_text(what, variant, &list[k]);
    int seen = 0;
    for (size_t e = 0; e < first; e++)
      seen |= strcmp(list[k].text, list[e].text) == 0;
    if (!seen)
      list[kept++] = list[k];
  }
  return kept;
}
