/*
 * tune.h — what kiln_tune()'s search (tune.c) shares with its cases
 * (tune_case.c) and its candidates (tune_grid.c). Not installed.
 */
#ifndef KILN_TUNE_H
#define KILN_TUNE_H

#include "base/util.h"
#include "tuning/tuning.h"

/* The most candidates one kernel's search holds. */
#define KILN__TUNE_CANDIDATES 160

/* A test case of one kernel: its buffers and how to run and check it. */
typedef struct kiln__tune_case kiln__tune_case;
struct kiln__tune_case {
  const char *kernel; /* "gemm f32" */
  kiln_runtime *rt;
  kiln_buffer *buf[6];
  int variant;                                       /* GEMM's */
  kiln_status (*run)(kiln__tune_case *b);            /* the timing case, enqueued */
  kiln_status (*check)(kiln__tune_case *b, int *ok); /* the checked case, waited for */
  int blocks;                                        /* GEMM: the case of A's blocks */
};

/* Sets up the case of kernel `what` (0: gemm variant `variant`, 1:
 * reduce, 2: fft, 3: conv's direct (variant 0) or im2col (1) backend, 4:
 * the gemm variant's blocks of A). */
kiln_status kiln__tune_case_make(kiln_runtime *rt, int what, int variant,
                                 kiln__tune_case *b);
void kiln__tune_case_free(kiln__tune_case *b);

/* A candidate: its parameters and the text that names them. */
typedef struct kiln__tune_cand {
  kiln__tuning t;
  char text[96];
  double dist; /* from the baseline, for the order */
} kiln__tune_cand;

/* Writes c's text: the parameters of kernel `what` (as kiln__tune_case_make()) that
 * its search changes. */
void kiln__tune_cand_text(int what, int variant, kiln__tune_cand *c);

/* The first candidates of kernel `what` into list: the baseline (base),
 * then, for GEMM and the reductions, the other kernel shape's rules.
 * Returns how many. */
size_t kiln__tune_start(int what, int variant, const kiln__tuning *base,
                        const kiln_device_info *dev, kiln__tune_cand *list);

/* Once list[0 .. first) are measured, list[best] the fastest: the grid of
 * best's shape around it after them, nearest first, less the candidates
 * measured already. Returns the count of the list. */
size_t kiln__tune_more(int what, int variant, const kiln_device_info *dev,
                       kiln__tune_cand *list, size_t first, size_t best);

#endif
