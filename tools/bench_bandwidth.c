/*
 * bench_bandwidth.c — `kiln bench bandwidth`: GB/s (bytes moved / the
 * median time) of kiln's transfers, next to a host memcpy() of the same
 * bytes (one thread) measured in the same run:
 *   copy    kiln_buffer_copy() between two device buffers, and kiln_finish()
 *   write   kiln_buffer_write(): host to device, blocking
 *   read    kiln_buffer_read(): device to host, blocking
 *   memcpy  the peer
 * The rows are the bytes moved (--sizes). Each peer's warm-up is checked
 * before it is timed: its destination is cleared first, and afterwards
 * holds exactly the source's bytes.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kiln/kiln.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

enum { COPY, WRITE, READ, MEMCPY };
static const char *const bw_peers[] = {"copy", "write", "read", "memcpy"};
static const int bw_built[] = {1, 1, 1, 1};
static const char *const bw_not_built[] = {NULL, NULL, NULL, NULL};
static const size_t bw_defaults[] = {64 * KiB, 1 * MiB, 16 * MiB, 128 * MiB};
static const size_t bw_quick[] = {64 * KiB, 1 * MiB};
static const char *const bw_ratios[][2] = {
  {"copy", "memcpy"}, {"write", "memcpy"}, {"read", "memcpy"}};
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec bw_spec = {
  .op = "bandwidth",
  .summary = "GB/s of device-to-device copies, writes and reads against a host memcpy",
  .sizes_value = "BYTES,...",
  BENCH_TABLES(bw),
  .selectable = 3,
  .untouched = 1,
  .host_peers = 1,
  .byte_sizes = 1, .min_size = 1024, .max_size = (size_t)4 << 30, .size_multiple = 4,
  .sizes_help = "bytes such as 1M,64M (K, M, G: powers of 1024; at most 16, each a "
                "multiple of 4 from 1K to 4G)",
  .repeats = 10,
  .figure = BENCH_GBPS,
  .axis = "bytes moved",
  .note = "bandwidth: bytes moved / time; copy is device to device (kiln_buffer_copy), "
          "write host to device, read device to host, memcpy one host thread",
};
/* clang-format on */

/* One size's buffers, for bw_once(). */
typedef struct bw_run {
  kiln_runtime *rt;
  int k;    /* the peer */
  size_t n; /* floats */
  const float *src;
  float *dst;               /* host */
  kiln_buffer *dsrc, *ddst; /* device: dsrc holds src */
} bw_run;

/* One timed transfer by peer g->k; milliseconds, or -1 on failure. */
static double bw_once(void *ctx)
{
  bw_run *g = ctx;
  kiln_status st = KILN_OK;
  double t0 = bench_now_ms();
  switch (g->k) {
  case COPY:
    st = kiln_buffer_copy(g->ddst, 0, g->dsrc, 0, g->n);
    if (st == KILN_OK)
      st = kiln_finish(g->rt);
    break;
  case WRITE: st = kiln_buffer_write(g->ddst, 0, g->n, g->src); break;
  case READ: st = kiln_buffer_read(g->dsrc, 0, g->n, g->dst); break;
  default: memcpy(g->dst, g->src, g->n * sizeof *g->src);
  }
  return st == KILN_OK ? bench_now_ms() - t0 : -1;
}

/* The warm-up: clears the destination, moves, and compares every byte
 * that arrived (a device destination is read back). 0, or -1 after a line. */
static int bw_check(bw_run *g)
{
  const float zero = 0;
  int device_dst = g->k == COPY || g->k == WRITE;
  memset(g->dst, 0, g->n * sizeof *g->dst);
  if ((device_dst && kiln_buffer_fill(g->ddst, 0, g->n, &zero) != KILN_OK) ||
      bw_once(g) < 0 ||
      (device_dst && kiln_buffer_read(g->ddst, 0, g->n, g->dst) != KILN_OK)) {
    fprintf(stderr, " FAILED (%s)\n", kiln_last_error(g->rt));
    return -1;
  }
  if (memcmp(g->dst, g->src, g->n * sizeof *g->src) != 0) {
    fprintf(stderr, " FAILED (the bytes that arrived differ from the source's)\n");
    return -1;
  }
  return 0;
}

/* Checks, then times peer g->k; adds its record. */
static int measure_peer(const bench_args *args, bw_run *g, bench_records *out)
{
  char label[32];
  size_t bytes = g->n * sizeof *g->src;
  double med = 0;
  bench_size_label(&bw_spec, bytes, label, sizeof label);
  fprintf(stderr, "  bandwidth %-6s %-7s warm-up and check...", label, bw_peers[g->k]);
  if (bw_check(g) != 0)
    return -1;
  if (bench_time_kiln(g->rt, bw_once, g, args->repeats, &med) != 0)
    return -1;
  bench_record r = {.op = bw_peers[g->k],
                    .backend = bw_peers[g->k],
                    .size = bytes,
                    .median_ms = med,
                    .gflops = NAN,
                    .gbps = (double)bytes / med / 1e6};
  snprintf(r.shape, sizeof r.shape, "%zu", bytes);
  bench_add(out, &r);
  fprintf(stderr, " %.2f GB/s\n", r.gbps);
  return 0;
}

/* Every chosen peer at one size, the memcpy last. */
static int measure(kiln_runtime *rt, const bench_args *args, size_t bytes,
                   bench_records *out)
{
  size_t n = bytes / sizeof(float);
  float *src = malloc(bytes), *dst = malloc(bytes);
  bw_run g = {rt, 0, n, src, dst, NULL, NULL};
  int rc = 0;
  if (!src || !dst) {
    fprintf(stderr, "kiln bench bandwidth: out of host memory for 2 x %zu bytes\n",
            bytes);
    rc = -1;
  }
  for (size_t i = 0; i < n && rc == 0; i++)
    src[i] = (float)((i * 7919) % 1000) + 1.0f;
  if (rc == 0 && (kiln_buffer_create(rt, KILN_F32, n, 0, &g.dsrc) != KILN_OK ||
                  kiln_buffer_create(rt, KILN_F32, n, 0, &g.ddst) != KILN_OK ||
                  kiln_buffer_write(g.dsrc, 0, n, src) != KILN_OK)) {
    fprintf(stderr, "kiln bench bandwidth: %s\n", kiln_last_error(rt));
    rc = -1;
  }
  for (g.k = COPY; g.k <= MEMCPY && rc == 0; g.k++)
    if (args->use[g.k])
      rc = measure_peer(args, &g, out);
  kiln_buffer_destroy(g.dsrc);
  kiln_buffer_destroy(g.ddst);
  free(src);
  free(dst);
  return rc;
}

static int run_bandwidth(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench bandwidth on %s (GB/s: bytes moved / time; against one "
          "host thread's memcpy)\n",
          kiln_runtime_device(rt)->name);
  return bench_each_size(rt, a, out, measure);
}

const bench_group bench_bandwidth_group = {&bw_spec, run_bandwidth};
