/*
 * clblast.h — what the CLBlast backend (clblast.c) shares with its unit test
 * (tests/test-clblast-status.c), and the runtime's release of CLBlast's
 * cache. Only built when meson finds CLBlast. Everything else reaches the
 * backend through its tables in src/ops/ops.h.
 */
#ifndef KILN_BACKENDS_CLBLAST_H
#define KILN_BACKENDS_CLBLAST_H

#include <stdint.h>

#include "base/util.h"

/* The name of a CLBlastStatusCode as clblast_c.h spells it
 * ("CLBlastInsufficientMemoryC"); for a code CLBlast does not define but
 * OpenCL does (CLBlast passes OpenCL's errors through), the OpenCL name;
 * else "unknown CLBlast status". Static; never NULL. */
const char *kiln__clblast_status_name(int code);

/* The kiln_status a CLBlastStatusCode maps to. The codes CLBlast shares with
 * OpenCL map as kiln__status_from_cl() maps them; an unknown code is
 * KILN_ERR_OPENCL. */
kiln_status kiln__status_from_clblast(int code);

/* Appends "<call> failed with <name> (<code>): <what it means>" to out, and
 * for a code shared with OpenCL, the OpenCL name after the code. */
void kiln__clblast_describe(kiln__str *out, int code, const char *call);

/* Records a failed CLBlast call, like kiln__fail_cl(): the message ends with
 * "<call> failed with <name> (<code>): <what it means>", and for a code
 * shared with OpenCL, the OpenCL name too. Returns the mapped status. */
kiln_status kiln__fail_clblast(kiln_runtime *rt, int code, const char *call,
                               const char *fmt, ...) KILN__PRINTF(4, 5);

/* Taken around every CLBlast call: kiln makes one at a time in the process,
 * as CLBlast 1.5.3 is not safe to call from two threads at once (clblast.c
 * says why). Never held with another kiln lock. */
void kiln__clblast_lock(void);
void kiln__clblast_unlock(void);

/* d as an IEEE binary16 bit pattern, rounded to nearest even in one step
 * (no double rounding through float); overflow gives infinity, NaN stays a
 * quiet NaN of the same sign. CLBlast's Hgemm takes alpha and beta so. */
uint16_t kiln__half_from_double(double d);

/* CLBlast keeps what it compiles in a process-wide cache; clblast.c counts
 * the runtimes that called it (kiln__clblast_use() before each call, which
 * registers the runtime's CLBlast slot) and empties the cache when the last
 * of them is destroyed. */
void kiln__clblast_use(kiln_runtime *rt);

/* The tuning record's "clblast" section's hook (kiln__clblast_section_apply,
 * tuning/tuning.h, which says what it does), filled by backends/table.c
 * (clblast_tune.c). */
struct kiln__clblast_params;
kiln_status kiln__clblast_override(kiln_runtime *rt, const struct kiln__clblast_params *p,
                                   kiln__str *why);

#endif /* KILN_BACKENDS_CLBLAST_H */
