/*
 * warm.h — what the runtime's assembly needs of the background warm-up
 * (warm.c): kiln_runtime_warm_async()'s thread is stopped before a runtime
 * goes.
 */
#ifndef KILN_OPS_WARM_H
#define KILN_OPS_WARM_H

#include "base/util.h"

/* Stops the background warm-up after the kernel in hand, joins its thread
 * and frees its state: kiln_runtime_destroy(), and a creation that failed. */
void kiln__warm_stop(kiln_runtime *rt);

#endif /* KILN_OPS_WARM_H */
