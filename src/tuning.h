/*
 * tuning.h — the parameters of kiln's kernels for a device (tuning.c): what
 * the ops and the program builder read, and the tests' seams. Not
 * installed.
 */
#ifndef KILN_TUNING_H
#define KILN_TUNING_H

#include "internal.h"

/* ---- tuning (tuning.c) --------------------------------------------------- */

/* The parameters of cl/gemm.cl for a device (see tuning.c for why). */
typedef struct kiln__gemm_tuning {
  int gpu_shape;          /* local-memory tiles, else the CPU shape */
  unsigned tm, vw, vwd;   /* CPU: rows per work-item; float and double lanes */
  unsigned tsm, tsk, wpt; /* GPU: tile side, slice depth, outputs per side */
} kiln__gemm_tuning;

void kiln__gemm_tuning_for(const kiln_device_info *dev, kiln__gemm_tuning *t);

/* The parameters of cl/reduce.cl: chunks per whole reduction on a CPU
 * device; on GPUs, the work-group size (a power of two) and groups. */
typedef struct kiln__reduce_tuning {
  int gpu_shape;
  unsigned chunks, wg, groups;
} kiln__reduce_tuning;

void kiln__reduce_tuning_for(const kiln_device_info *dev, kiln__reduce_tuning *t);

/* kiln's own FFT (cl/fft.cl): passes whose stride p is at least wide_from
 * run the 2-D indexed kernel in groups of `group` work-items along k. */
typedef struct kiln__fft_tuning {
  unsigned wide_from, group;
} kiln__fft_tuning;

void kiln__fft_tuning_for(const kiln_device_info *dev, kiln__fft_tuning *t);

/* Test seams: when set, every device gets these parameters (runtimes
 * created afterwards build their kernels with them). Tests link the static
 * library to set them; nothing else does. */
extern kiln__gemm_tuning *kiln__gemm_tuning_override;
extern kiln__reduce_tuning *kiln__reduce_tuning_override;

#endif /* KILN_TUNING_H */
