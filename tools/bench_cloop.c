/*
 * bench_cloop.c — the C loop `kiln bench reduce` measures the machine's
 * memory bandwidth with: a float32 sum by one thread per online core, each
 * over its contiguous chunk. Built as its own library at -O2 whatever the
 * build type (tools/meson.build): the ratio kiln / c-loop means something
 * only if this loop runs at the memory's speed.
 *
 * Why 16 accumulators: one accumulator is one chain of dependent adds, a
 * few cycles each, slower than memory; 16 lanes in four independent vectors
 * keep several vector adds in flight, so loads are the limit. GCC and Clang
 * get them as vector types (standard C would leave the lanes to the
 * vectoriser, which at -O2 keeps them in memory); others get the plain
 * loop.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define LANES 16
#define MAX_THREADS 256

typedef struct chunk {
  const float *x;
  size_t n;
  double sum;
} chunk;

#if defined(__GNUC__)
/* four 4-float vectors: SSE2, which every x86-64 has, without -march */
typedef float lanes4 __attribute__((vector_size(16)));

static void *sum_chunk(void *arg)
{
  chunk *c = arg;
  lanes4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, v0, v1, v2, v3;
  size_t i = 0;
  for (; i + LANES <= c->n; i += LANES) {
    /* unaligned loads */
    memcpy(&v0, c->x + i, 16), memcpy(&v1, c->x + i + 4, 16);
    memcpy(&v2, c->x + i + 8, 16), memcpy(&v3, c->x + i + 12, 16);
    a0 += v0, a1 += v1, a2 += v2, a3 += v3;
  }
  lanes4 t = (a0 + a1) + (a2 + a3);
  double s = (double)t[0] + t[1] + t[2] + t[3];
  for (; i < c->n; i++)
    s += c->x[i];
  c->sum = s;
  return NULL;
}
#else
static void *sum_chunk(void *arg)
{
  chunk *c = arg;
  float acc[LANES] = {0};
  size_t i = 0;
  for (; i + LANES <= c->n; i += LANES)
    for (int j = 0; j < LANES; j++)
      acc[j] += c->x[i + j];
  double s = 0;
  for (; i < c->n; i++)
    s += c->x[i];
  for (int j = 0; j < LANES; j++)
    s += acc[j];
  c->sum = s;
  return NULL;
}
#endif

double bench_cloop_sum(const float *x, size_t n, unsigned threads)
{
  if (!threads) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    threads = online > 0 ? (unsigned)online : 1;
  }
  if (threads > MAX_THREADS)
    threads = MAX_THREADS;
  chunk parts[MAX_THREADS];
  pthread_t tid[MAX_THREADS];
  int started[MAX_THREADS] = {0};
  /* chunks of whole 64-byte lines, so no two threads share one */
  size_t per = ((n + threads - 1) / threads + LANES - 1) / LANES * LANES;
  for (unsigned t = 0; t < threads; t++) {
    size_t lo = per * t < n ? per * t : n, hi = lo + per < n ? lo + per : n;
    parts[t] = (chunk){x + lo, hi - lo, 0};
    /* the calling thread takes chunk 0; a thread that cannot start is run
     * here too */
    if (t > 0)
      started[t] = pthread_create(&tid[t], NULL, sum_chunk, &parts[t]) == 0;
  }
  sum_chunk(&parts[0]);
  double sum = parts[0].sum;
  for (unsigned t = 1; t < threads; t++) {
    if (started[t])
      pthread_join(tid[t], NULL);
    else
      sum_chunk(&parts[t]);
    sum += parts[t].sum;
  }
  return sum;
}
