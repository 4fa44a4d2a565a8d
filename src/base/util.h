/*
 * util.h — what every file of libkiln includes first: OpenCL's and kiln's public
 * headers, and the small helpers of util.c. Not installed.
 *
 * Names shared between files start with kiln__; file-local ones are static.
 */
#ifndef KILN_BASE_UTIL_H
#define KILN_BASE_UTIL_H

/* kiln calls OpenCL 1.2 entry points and may query 3.0 properties; the
 * deprecated 1.2 calls (clCreateCommandQueue) are the ones every driver has. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

/* The library defines its experimental calls too. */
#define KILN_EXPERIMENTAL
#include "kiln/kiln.h"
#include "kiln/kiln_cl.h"

/* A precondition "called with mutex m held", checked where asserts are on
 * (debug and CI builds): a default mutex cannot say which thread holds it,
 * only that one does. */
#define KILN__ASSERT_HELD(m) assert(pthread_mutex_trylock(m) == EBUSY)

/* The number of elements of an array. */
#define KILN__COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- growable strings (util.c) ---------------------------------------- */

typedef struct kiln__str {
  char *data; /* NUL-terminated, or NULL while empty */
  size_t len, cap;
  int failed; /* an allocation failed; data holds what fitted */
} kiln__str;

void kiln__str_appendf(kiln__str *s, const char *fmt, ...) KILN__PRINTF(2, 3);
void kiln__str_vappendf(kiln__str *s, const char *fmt, va_list ap) KILN__PRINTF(2, 0);
const char *kiln__str_get(const kiln__str *s); /* "" while empty */
void kiln__str_free(kiln__str *s);

/* Overflow-checked arithmetic: 0 on success, 1 when the result would wrap. */
int kiln__mul_overflow(size_t a, size_t b, size_t *out);
int kiln__add_overflow(size_t a, size_t b, size_t *out);

/* The largest power of two that divides n and is at most most (1 when
 * most < 2): a work-group side that divides its global size (util.c). */
size_t kiln__pow2_divisor(size_t n, size_t most);

/* The value of an IEEE half (util.c). */
double kiln__half_to_double(uint16_t h);

/* CLOCK_MONOTONIC in nanoseconds (util.c). */
uint64_t kiln__now_ns(void);

/* Sleeps ms milliseconds, interruptions included. */
void kiln__sleep_ms(uint64_t ms);

/* The median of v[0..n), n >= 1, which it sorts (util.c). */
double kiln__median(double *v, size_t n);

/* "1.5 GiB"-style rendering of a byte count into buf (at least 32 bytes). */
const char *kiln__format_bytes(uint64_t bytes, char *buf, size_t size);

#endif /* KILN_BASE_UTIL_H */
