/*
 * bench_streams.c — `kiln bench streams`: what a second queue buys when
 * data flows through the device in pieces, in milliseconds for the whole
 * run (medians). Each run moves 8 pieces of A (m x 512 float32) to the
 * device, multiplies each by a resident B (512 x 512) into C, and reads C
 * back, through two sets of device buffers:
 *   one-queue    everything on the runtime's queue, in turn: write A_i,
 *                GEMM, read C_i, write A_i+1, ...
 *   two-streams  the transfers on a stream of their own, the GEMMs on the
 *                runtime's queue, ordered by events (kiln_event_record,
 *                kiln_stream_wait_event): A_i+1 goes in and C_i-1 comes out
 *                while piece i computes
 * The rows are m (--sizes). The ratio two-streams/one-queue is what the
 * overlap gains: up to 2x when a piece's transfers take as long as its
 * GEMM, on a device that runs a copy beside a kernel (a GPU's copy engine;
 * on a CPU device both share the cores). Every run's C is checked against
 * the host: B is all ones, so each element of C is its row's sum of A,
 * small integers that float32 holds exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "kiln/kiln.h"

#define PIECES 8
#define K 512
#define N 512

static const char *const streams_peers[] = {"one-queue", "two-streams"};
static const int streams_built[] = {1, 1};
static const char *const streams_not_built[] = {NULL, NULL};
static const size_t streams_defaults[] = {256, 1024};
static const size_t streams_quick[] = {32};
static const char *const streams_ratios[][2] = {{"two-streams", "one-queue"}};
/* AUTO's GEMM (kiln's or CLBlast's). */
static const char *const streams_reach[] = {"gemm.f32 choices clblast",
                                            "gemm.f32 choices clblast"};
_Static_assert(BENCH_COUNT(streams_reach) == BENCH_COUNT(streams_peers),
               "a reach per peer");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec streams_spec = {
  .op = "streams",
  .summary = "ms for 8 pieces in, a GEMM each and out: all on one queue, or the "
             "transfers on a stream beside the GEMMs",
  .sizes_value = "M,...",
  BENCH_TABLES(streams),
  .reach = streams_reach,
  .selectable = 2,
  .min_size = 1, .max_size = 8192, .size_multiple = 1,
  .sizes_help = "piece rows m such as 256,1024 (at most 16, each 1 to 8192)",
  .repeats = 5,
  .figure = BENCH_MS,
  .note = "streams: ms for 8 pieces of m x 512 in, a GEMM by 512 x 512 each, m x 512 "
          "out; two-streams moves the pieces on a stream beside the GEMMs",
};
/* clang-format on */

typedef struct streams_run {
  kiln_runtime *rt;
  kiln_stream *copy;
  size_t m;
  int two;      /* the peer */
  float *a, *c; /* the host's pieces, PIECES * m rows */
  kiln_buffer *da[2], *dc[2], *db;
  kiln_gemm_desc d;
} streams_run;

/* Enqueues the whole run on one queue; kiln_finish() ends it. */
static kiln_status run_one_queue(streams_run *g)
{
  kiln_status st = KILN_OK;
  for (int i = 0; i < PIECES && st == KILN_OK; i++) {
    st = kiln_buffer_write_async(g->da[i % 2], 0, g->m * K, g->a + (size_t)i * g->m * K);
    if (st == KILN_OK)
      st = kiln_gemm(g->rt, &g->d, g->da[i % 2], g->db, g->dc[i % 2]);
    if (st == KILN_OK)
      st = kiln_buffer_read_async(g->dc[i % 2], 0, g->m * N, g->c + (size_t)i * g->m * N);
  }
  return st;
}

/* The transfers of piece i on the stream: its A after the GEMM two back
 * has read that set (the stream runs in order after the read of C_i-2),
 * then the event the GEMM waits for. */
static kiln_status put(streams_run *g, int i, kiln_event **in)
{
  kiln_status st = kiln_stream_use(g->rt, g->copy);
  if (st == KILN_OK)
    st = kiln_buffer_write_async(g->da[i % 2], 0, g->m * K, g->a + (size_t)i * g->m * K);
  if (st == KILN_OK)
    st = kiln_event_record(g->rt, in);
  return st;
}

/* Enqueues the whole run on two queues (see the top); kiln_finish() ends
 * it. */
static kiln_status run_two_streams(streams_run *g)
{
  kiln_event *in = NULL, *done = NULL;
  kiln_status st = put(g, 0, &in);
  for (int i = 0; i < PIECES && st == KILN_OK; i++) {
    st = kiln_stream_use(g->rt, NULL);
    if (st == KILN_OK)
      st = kiln_stream_wait_event(g->rt, in);
    if (st == KILN_OK)
      st = kiln_gemm(g->rt, &g->d, g->da[i % 2], g->db, g->dc[i % 2]);
    if (st == KILN_OK)
      st = kiln_event_record(g->rt, &done);
    kiln_event_destroy(in);
    in = NULL;
    if (st == KILN_OK && i + 1 < PIECES)
      st = put(g, i + 1, &in); /* goes in while piece i computes */
    if (st == KILN_OK)
      st = kiln_stream_use(g->rt, g->copy);
    if (st == KILN_OK)
      st = kiln_stream_wait_event(g->rt, done);
    if (st == KILN_OK)
      st = kiln_buffer_read_async(g->dc[i % 2], 0, g->m * N, g->c + (size_t)i * g->m * N);
    kiln_event_destroy(done);
    done = NULL;
  }
  kiln_event_destroy(in);
  kiln_stream_use(g->rt, NULL);
  return st;
}

static double streams_once(void *ctx)
{
  streams_run *g = ctx;
  double t0 = bench_now_ms();
  kiln_status st = g->two ? run_two_streams(g) : run_one_queue(g);
  if (kiln_finish(g->rt) != KILN_OK || st != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* Every element of C is its row's sum of A (B is ones): a failure, or NULL. */
static const char *check(const streams_run *g)
{
  for (size_t r = 0; r < PIECES * g->m; r++) {
    double want = 0;
    for (size_t k = 0; k < K; k++)
      want += g->a[r * K + k];
    for (size_t j = 0; j < N; j += 97)
      if (g->c[r * N + j] != want)
        return "C differs from the host's row sums of A";
  }
  return NULL;
}

static int measure(kiln_runtime *rt, const bench_args *a, size_t m, bench_records *out)
{
  streams_run g = {.rt = rt, .m = m};
  g.a = malloc(PIECES * m * K * sizeof *g.a);
  g.c = malloc(PIECES * m * N * sizeof *g.c);
  float *ones = malloc(K * N * sizeof *ones);
  int rc = g.a && g.c && ones ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < PIECES * m * K; i++)
    g.a[i] = (float)((int)(i * 7 % 13) - 6);
  for (size_t i = 0; rc == 0 && i < K * N; i++)
    ones[i] = 1;
  kiln_gemm_desc_init(&g.d, KILN_F32, m, N, K);
  if (rc == 0 && (kiln_stream_create(rt, &g.copy) != KILN_OK ||
                  kiln_buffer_create(rt, KILN_F32, K * N, 0, &g.db) != KILN_OK ||
                  kiln_buffer_write(g.db, 0, K * N, ones) != KILN_OK))
    rc = -1;
  for (int s = 0; s < 2 && rc == 0; s++)
    if (kiln_buffer_create(rt, KILN_F32, m * K, 0, &g.da[s]) != KILN_OK ||
        kiln_buffer_create(rt, KILN_F32, m * N, 0, &g.dc[s]) != KILN_OK)
      rc = -1;
  if (rc != 0)
    fprintf(stderr, "kiln bench streams: %s\n", kiln_last_error(rt));
  for (g.two = 0; g.two < 2 && rc == 0; g.two++) {
    if (!a->use[g.two])
      continue;
    fprintf(stderr, "  streams m=%-5zu %-12s warm-up and check...", m,
            streams_peers[g.two]);
    const char *failure = NULL;
    for (size_t i = 0; i < PIECES * m * N; i++)
      g.c[i] = NAN;
    if (streams_once(&g) < 0)
      failure = kiln_last_error(rt);
    else
      failure = check(&g);
    double med = 0;
    if (failure) {
      fprintf(stderr, " FAILED (%s)\n", failure);
      rc = -1;
    } else if (bench_time_kiln(rt, streams_once, &g, a->repeats, &med) != 0) {
      rc = -1;
    } else {
      double bytes = (double)PIECES * m * (K + N) * sizeof(float),
             flops = 2.0 * PIECES * m * N * K;
      bench_record r = {.op = "streams",
                        .backend = streams_peers[g.two],
                        .dtype = "float32",
                        .size = m,
                        .median_ms = med,
                        .gflops = flops / (med * 1e6),
                        .gbps = bytes / (med * 1e6)};
      snprintf(r.shape, sizeof r.shape, "8x%zux%dx%d", m, N, K);
      bench_add(out, &r);
      fprintf(stderr, " %.2f ms (%.1f GFLOP/s, %.2f GB/s moved)\n", med, r.gflops,
              r.gbps);
    }
  }
  for (int s = 0; s < 2; s++)
    kiln_buffer_destroy(g.da[s]), kiln_buffer_destroy(g.dc[s]);
  kiln_buffer_destroy(g.db);
  kiln_stream_destroy(g.copy);
  free(g.a), free(g.c), free(ones);
  return rc;
}

static int run_streams(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench streams on %s (ms for 8 pieces in, GEMM, out; the transfers on "
          "the runtime's queue or on a stream of their own)\n",
          kiln_runtime_device(rt)->name);
  return bench_each_size(rt, a, out, measure);
}

const bench_group bench_streams_group = {&streams_spec, run_streams};
