/*
 * pool.h — the runtime's caching pool of device memory (pool.c).
 */
#ifndef KILN_CORE_POOL_H
#define KILN_CORE_POOL_H

#include "base/util.h"

/* ---- the memory pool (pool.c) ------------------------------------------- */

/* Four size classes per power of two from 4 KiB up (pool.c says why). */
#define KILN__POOL_CLASSES 208

/* Destroyed buffers whose memory is kept for the next creation of their
 * size class: their records, linked through next_free, one list a class.
 * Guarded by the runtime's lock. */
typedef struct kiln__pool {
  int on; /* KILN_MEMORY_POOL=0 or kiln_options.no_memory_pool: off */
  struct kiln_buffer *free[KILN__POOL_CLASSES];
  uint64_t cached, peak_cached; /* bytes of the blocks kept */
  uint64_t hits, misses, trims;
} kiln__pool;

/* The bytes a creation of `bytes` asks the driver for: its size class, or
 * bytes itself when the pool is off or the class exceeds the device's
 * largest allocation. */
size_t kiln__pool_block_bytes(const kiln_runtime *rt, size_t bytes);

/* A kept buffer record whose block holds bytes, now counted as live (its
 * dtype and count for the caller to set), or NULL: a miss, or the pool off. */
struct kiln_buffer *kiln__pool_take(kiln_runtime *rt, size_t bytes);

/* Keeps b's block and record for a later creation: 1, or 0 when b is not
 * the pool's to keep (the pool off, or b wraps host memory). */
int kiln__pool_give(struct kiln_buffer *b);

/* Gives every kept block back to the driver; the bytes given back. */
uint64_t kiln__pool_trim(kiln_runtime *rt);

/* The largest kept block's bytes, 0 for none; under the runtime's lock. */
uint64_t kiln__pool_largest_free(const kiln_runtime *rt);

#endif /* KILN_CORE_POOL_H */
