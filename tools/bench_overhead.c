/*
 * bench_overhead.c — `kiln bench overhead`: what one call of each
 * operation costs the host (issue 17), in microseconds per call (medians):
 *   kiln       N calls back to back on the bench's runtime with no wait
 *              between them, the time over N; the kiln_finish() that
 *              drains them is outside the timed span. This is the cost of
 *              checking, choosing and enqueueing, workspaces included.
 *   no-pool    the same on a second runtime opened with no_memory_pool
 *              (KILN_MEMORY_POOL=0): every workspace a new device
 *              allocation, so the ratio kiln/no-pool is what the caching
 *              pool saves
 *   kiln-wait  each call followed by kiln_finish(): the whole round trip
 * N is 50 calls a sample (10 with --quick), and the peers' samples are
 * taken in turns. The rows are small cases, where the host's share
 * matters most (--sizes picks them by number):
 *   1 gemm64   kiln_gemm 64x64x64 float32, AUTO
 *   2 conv8    kiln_conv2d n1 c8 16x16 -> k8, 3x3, padding 1, float32, AUTO
 *   3 sum64K   kiln_reduce sum of 65536 float32
 *   4 fft1K    kiln_fft C2C of 1024 complex64, forward, AUTO
 *   5 rfft1K   kiln_fft R2C of 1024 float32, AUTO
 *   6 f2h4K    kiln_convert of 4096 float32 to float16
 *   7 copy4K   kiln_buffer_copy of 4096 float32
 * Each peer's first call is its warm-up and is checked against answers
 * known on the host: ones in give k (GEMM) or the taps inside the image
 * times c (the convolution) and n (the sum); a delta's transform is all
 * ones (within 1e-5: twiddles); the conversion and the copy give their
 * inputs back exactly. Every other check is exact.
 * The steady calls should allocate nothing new: kiln_memory_stats()'s
 * pool_misses before and after the timed calls of the pool's peers give
 * the device allocations they made, in the progress line and the records
 * ("allocs"); the pool off counts none, as every workspace is one.
 */
/* kiln_tuning_stats() is experimental API. */
#define KILN_EXPERIMENTAL
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "kiln/kiln.h"

#define CALLS 50
#define QUICK_CALLS 10
#define GEMM_N 64
#define CONV_C 8
#define CONV_HW 16
#define SUM_N 65536
#define FFT_N 1024
#define SMALL_N 4096

static const char *const overhead_peers[] = {"kiln", "no-pool", "kiln-wait"};
static const int overhead_built[] = {1, 1, 1};
static const char *const overhead_not_built[] = {NULL, NULL, NULL};
static const char *const overhead_labels[] = {"gemm64", "conv8", "sum64K", "fft1K",
                                              "rfft1K", "f2h4K", "copy4K"};
static const size_t overhead_defaults[] = {1, 2, 3, 4, 5, 6, 7};
static const size_t overhead_quick[] = {1, 2, 3, 4, 5, 6, 7};
static const char *const overhead_ratios[][2] = {{"kiln", "no-pool"}};
/* Each case's operation, AUTO's where it picks a backend; the conversion
 * and the copy have no parameters. */
static const char *const overhead_reach[] = {"gemm.f32 choices clblast",
                                             "conv gemm.f32 choices clblast",
                                             "reduce choices clblast",
                                             "fft choices",
                                             "fft choices",
                                             "",
                                             ""};
_Static_assert(BENCH_COUNT(overhead_reach) == BENCH_COUNT(overhead_labels),
               "a reach per case");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec overhead_spec = {
  .op = "overhead",
  .summary = "host us per call of each operation at a small size, with and without "
             "the caching pool",
  .sizes_value = "CASE,...",
  BENCH_TABLES(overhead),
  .reach = overhead_reach, .reach_by_case = 1,
  .selectable = 3,
  .min_size = 1, .max_size = BENCH_COUNT(overhead_labels), .size_multiple = 1,
  .sizes_help = "case numbers such as 1,3 (1: gemm 64^3, 2: conv2d c8 16x16 3x3, "
                "3: sum of 64K, 4: FFT C2C 1024, 5: FFT R2C 1024, 6: convert 4K f32 "
                "to f16, 7: copy 4K)",
  .repeats = 15,
  .figure = BENCH_US,
  .labels = overhead_labels,
  .note = "overhead: host us per call, N calls enqueued back to back (kiln-wait: each "
          "waited for); no-pool: a runtime without the caching pool",
};
/* clang-format on */

typedef struct overhead_case overhead_case;

/* One case on one runtime, for overhead_once(). */
typedef struct overhead_run {
  kiln_runtime *rt;
  const overhead_case *c;
  int wait;     /* kiln-wait: finish after every call */
  size_t calls; /* per timed sample */
  kiln_buffer *in[2], *out;
  union {
    kiln_gemm_desc gemm;
    kiln_conv2d_desc conv;
    kiln_reduce_desc reduce;
    kiln_fft_desc fft;
  } d;
} overhead_run;

/* A case: its record's fields, its buffers (counts in elements of their
 * types; a second input of 0 elements is none), the host's input, and what
 * each float of the output must be, within tol. */
struct overhead_case {
  const char *op, *dtype, *shape;
  kiln_dtype in_type, out_type;
  size_t nin[2], nout;
  float (*input)(size_t i); /* the i-th float of each input */
  double (*want)(size_t i); /* the i-th float of the output */
  double tol;
  void (*describe)(overhead_run *g); /* the descriptor; NULL: none */
  kiln_status (*call)(overhead_run *g);
};

/* ---- inputs and answers -------------------------------------------------- */

static float one(size_t i)
{
  (void)i;
  return 1.0f;
}

static float delta(size_t i)
{
  return i == 0 ? 1.0f : 0.0f;
}

/* Floats float16 holds exactly, so the conversion must give them back. */
static float halves(size_t i)
{
  static const float v[] = {0.0f, 1.0f, -2.0f, 0.5f, 1024.0f, -0.125f, 3.0f, 65504.0f};
  return v[i % BENCH_COUNT(v)];
}

static float index_of(size_t i)
{
  return (float)i;
}

static double want_gemm(size_t i)
{
  (void)i;
  return GEMM_N; /* a row of ones times a column of ones */
}

/* The taps of a 3-tap filter with padding 1 that fall inside a length. */
static double taps(size_t at)
{
  return at == 0 || at == CONV_HW - 1 ? 2 : 3;
}

static double want_conv(size_t i)
{
  size_t pq = i % (CONV_HW * CONV_HW);
  return CONV_C * taps(pq / CONV_HW) * taps(pq % CONV_HW);
}

static double want_sum(size_t i)
{
  (void)i;
  return SUM_N;
}

/* A delta's transform: 1 + 0i everywhere. */
static double want_ones(size_t i)
{
  return i % 2 ? 0 : 1;
}

static double want_halves(size_t i)
{
  return halves(i);
}

static double want_index(size_t i)
{
  return (double)i;
}

/* ---- descriptors and calls ----------------------------------------------- */

static void describe_gemm(overhead_run *g)
{
  kiln_gemm_desc_init(&g->d.gemm, KILN_F32, GEMM_N, GEMM_N, GEMM_N);
}

static void describe_conv(overhead_run *g)
{
  kiln_conv2d_desc_init(&g->d.conv, KILN_F32, 1, CONV_C, CONV_HW, CONV_HW, CONV_C, 3, 3);
  g->d.conv.pad_top = g->d.conv.pad_bottom = g->d.conv.pad_left = g->d.conv.pad_right = 1;
}

static void describe_sum(overhead_run *g)
{
  kiln_reduce_desc_init(&g->d.reduce, KILN_REDUCE_SUM, KILN_F32, SUM_N);
}

static void describe_fft(overhead_run *g)
{
  kiln_fft_desc_init(&g->d.fft, KILN_F32, FFT_N);
}

static void describe_rfft(overhead_run *g)
{
  kiln_fft_desc_init(&g->d.fft, KILN_F32, FFT_N);
  g->d.fft.kind = KILN_FFT_R2C;
}

static kiln_status call_gemm(overhead_run *g)
{
  return kiln_gemm(g->rt, &g->d.gemm, g->in[0], g->in[1], g->out);
}

static kiln_status call_conv(overhead_run *g)
{
  return kiln_conv2d(g->rt, &g->d.conv, g->in[0], g->in[1], NULL, g->out);
}

static kiln_status call_reduce(overhead_run *g)
{
  return kiln_reduce(g->rt, &g->d.reduce, g->in[0], g->out);
}

static kiln_status call_fft(overhead_run *g)
{
  return kiln_fft(g->rt, &g->d.fft, g->in[0], g->out);
}

static kiln_status call_convert(overhead_run *g)
{
  return kiln_convert(g->in[0], g->out);
}

static kiln_status call_copy(overhead_run *g)
{
  return kiln_buffer_copy(g->out, 0, g->in[0], 0, SMALL_N);
}

#define CONV_X (CONV_C * CONV_HW * CONV_HW)
/* clang-format off */
static const overhead_case cases[] = {
  {"gemm", "float32", "64x64x64", KILN_F32, KILN_F32, {GEMM_N * GEMM_N, GEMM_N * GEMM_N},
   GEMM_N * GEMM_N, one, want_gemm, 0, describe_gemm, call_gemm},
  {"conv2d", "float32", "n1c8h16w16k8r3s3", KILN_F32, KILN_F32, {CONV_X, CONV_C * CONV_C * 9},
   CONV_X, one, want_conv, 0, describe_conv, call_conv},
  {"reduce", "float32", "65536", KILN_F32, KILN_F32, {SUM_N, 0}, 1, one, want_sum, 0,
   describe_sum, call_reduce},
  {"fft", "complex64", "1024", KILN_C32, KILN_C32, {FFT_N, 0}, FFT_N, delta, want_ones, 1e-5,
   describe_fft, call_fft},
  {"fft", "float32", "1024r2c", KILN_F32, KILN_C32, {FFT_N, 0}, FFT_N / 2 + 1, delta,
   want_ones, 1e-5, describe_rfft, call_fft},
  {"convert", "float16", "4096", KILN_F32, KILN_F16, {SMALL_N, 0}, SMALL_N, halves,
   want_halves, 0, NULL, call_convert},
  {"copy", "float32", "4096", KILN_F32, KILN_F32, {SMALL_N, 0}, SMALL_N, index_of,
   want_index, 0, NULL, call_copy},
};
/* clang-format on */
_Static_assert(BENCH_COUNT(cases) == BENCH_COUNT(overhead_labels),
               "a label for every case");

/* ---- one case ------------------------------------------------------------ */

/* float16 bits as a double; every float16 value is one exactly. */
static double from_half(uint16_t h)
{
  int e = (h >> 10) & 0x1f;
  double m = h & 0x3ff, s = h & 0x8000 ? -1 : 1;
  if (e == 0x1f)
    return m ? NAN : s * INFINITY;
  return e ? s * ldexp(1024 + m, e - 25) : s * ldexp(m, -24);
}

/* Reads the output back and holds each float of it to c->want; 0, or -1
 * after saying what is wrong. */
static int overhead_check(const overhead_run *g)
{
  const overhead_case *c = g->c;
  size_t floats = g->c->nout * (c->out_type == KILN_C32 ? 2 : 1);
  void *got = malloc(c->nout * kiln_dtype_size(c->out_type));
  if (!got || kiln_buffer_read(g->out, 0, c->nout, got) != KILN_OK) {
    fprintf(stderr, " FAILED (%s)\n",
            got ? kiln_last_error(g->rt) : "out of host memory");
    free(got);
    return -1;
  }
  size_t i = 0;
  double v = 0;
  for (; i < floats; i++) {
    v = c->out_type == KILN_F16 ? from_half(((const uint16_t *)got)[i])
                                : ((const float *)got)[i];
    if (!(fabs(v - c->want(i)) <= c->tol))
      break;
  }
  free(got);
  if (i == floats)
    return 0;
  fprintf(stderr, " FAILED (wrong result: float %zu of the output is %.9g, not %.9g)\n",
          i, v, c->want(i));
  return -1;
}

/* One timed sample: g->calls calls; milliseconds per call, or -1 when one
 * failed. Without wait, the drain is not timed. */
static double overhead_once(void *ctx)
{
  overhead_run *g = ctx;
  double t0 = bench_now_ms();
  for (size_t i = 0; i < g->calls; i++)
    if (g->c->call(g) != KILN_OK || (g->wait && kiln_finish(g->rt) != KILN_OK))
      return -1;
  double ms = bench_now_ms() - t0;
  if (!g->wait && kiln_finish(g->rt) != KILN_OK)
    return -1;
  return ms / (double)g->calls;
}

/* The buffers of case g->c on g->rt, its inputs written, and its
 * descriptor; NULL, or why not. */
static const char *overhead_setup(overhead_run *g)
{
  const overhead_case *c = g->c;
  size_t most = c->nin[0] > c->nin[1] ? c->nin[0] : c->nin[1];
  size_t floats = most * (c->in_type == KILN_C32 ? 2 : 1);
  float *host = malloc(floats * sizeof *host);
  if (!host)
    return "out of host memory";
  for (size_t i = 0; i < floats; i++)
    host[i] = c->input(i);
  int rc =
    kiln_buffer_create(g->rt, c->out_type, c->nout, 0, &g->out) == KILN_OK ? 0 : -1;
  for (int k = 0; k < 2 && rc == 0; k++)
    if (c->nin[k] &&
        (kiln_buffer_create(g->rt, c->in_type, c->nin[k], 0, &g->in[k]) != KILN_OK ||
         kiln_buffer_write(g->in[k], 0, c->nin[k], host) != KILN_OK))
      rc = -1;
  free(host);
  if (rc != 0)
    return kiln_last_error(g->rt);
  if (c->describe)
    c->describe(g);
  return NULL;
}

static uint64_t pool_misses(kiln_runtime *rt)
{
  kiln_memory_usage u;
  kiln_memory_usage_init(&u);
  return kiln_memory_stats(rt, &u) == KILN_OK ? u.pool_misses : 0;
}

/* Sets up case `index` as peer k on rt and checks its first call; 0, or -1
 * after the progress line ends in FAILED. */
static int prepare_peer(const bench_args *a, kiln_runtime *rt, int k, size_t index,
                        overhead_run *g)
{
  *g = (overhead_run){.rt = rt,
                      .c = &cases[index - 1],
                      .wait = k == 2,
                      .calls = a->quick ? QUICK_CALLS : CALLS};
  fprintf(stderr, "  overhead %-6s %-9s warm-up and check...", overhead_labels[index - 1],
          overhead_peers[k]);
  const char *why = overhead_setup(g);
  if (!why && g->c->call(g) != KILN_OK)
    why = kiln_last_error(rt);
  if (why)
    return fprintf(stderr, " FAILED (%s)\n", why), -1;
  if (overhead_check(g) != 0)
    return -1;
  fprintf(stderr, " ok\n");
  return 0;
}

/* Peer k's record from its samples (sorted in place) and the device
 * allocations they made. */
static void add_record(const overhead_run *g, int k, size_t index, double *ms,
                       int repeats, unsigned long long allocs, bench_records *out)
{
  const overhead_case *c = g->c;
  bench_record r = {.op = c->op,
                    .backend = overhead_peers[k],
                    .dtype = c->dtype,
                    .size = index,
                    .median_ms = bench_median(ms, repeats),
                    .gflops = NAN,
                    .gbps = NAN,
                    .has_allocs = k != 1, /* the pool off counts none */
                    .allocs = allocs};
  snprintf(r.shape, sizeof r.shape, "%s", c->shape);
  bench_add(out, &r);
  fprintf(stderr, "  overhead %-6s %-9s %.1f us per call", overhead_labels[index - 1],
          overhead_peers[k], r.median_ms * 1e3);
  if (r.has_allocs)
    fprintf(stderr, ", %llu new device allocations in %zu calls", allocs,
            g->calls * (size_t)repeats);
  fprintf(stderr, "\n");
}

/* Every chosen peer on case `index`: each set up and checked, then timed in
 * rounds of one sample of every peer, so that the machine's slow spells
 * fall on all of them alike. rts[k]: peer k's runtime. */
static int measure(const bench_args *a, kiln_runtime *const *rts, size_t index,
                   bench_records *out)
{
  overhead_run g[3] = {{0}};
  double *ms[3] = {NULL};
  unsigned long long allocs[3] = {0};
  int rc = 0;
  for (int k = 0; k < 3 && rc == 0; k++)
    if (a->use[k] && ((rc = prepare_peer(a, rts[k], k, index, &g[k])) != 0 ||
                      !(ms[k] = calloc((size_t)a->repeats, sizeof *ms[k]))))
      rc = rc ? rc : (fprintf(stderr, "kiln bench overhead: out of host memory\n"), -1);
  for (int r = 0; r < a->repeats && rc == 0; r++)
    for (int k = 0; k < 3 && rc == 0; k++) {
      if (!a->use[k])
        continue;
      uint64_t misses = pool_misses(rts[k]);
      if ((ms[k][r] = overhead_once(&g[k])) < 0) {
        fprintf(stderr, "kiln bench overhead: %s %s: %s\n", overhead_labels[index - 1],
                overhead_peers[k], kiln_last_error(rts[k]));
        rc = -1;
      }
      allocs[k] += pool_misses(rts[k]) - misses;
    }
  for (int k = 0; k < 3; k++) {
    if (rc == 0 && a->use[k])
      add_record(&g[k], k, index, ms[k], a->repeats, allocs[k], out);
    free(ms[k]);
    for (int i = 0; i < 2; i++)
      kiln_buffer_destroy(g[k].in[i]);
    kiln_buffer_destroy(g[k].out);
  }
  return rc;
}

/* A runtime like rt (its device, and its tuning record or none) without the
 * caching pool; NULL after a line on stderr. */
static kiln_runtime *open_no_pool(kiln_runtime *rt)
{
  kiln_tuning_usage t;
  kiln_tuning_usage_init(&t);
  kiln_options o;
  kiln_options_init(&o);
  o.no_memory_pool = 1;
  o.no_tuning = kiln_tuning_stats(rt, &t) == KILN_OK && !t.tuned;
  kiln_runtime *plain = NULL;
  if (kiln_runtime_create(&o, &plain) != KILN_OK) {
    fprintf(stderr, "kiln bench overhead: no-pool: %s\n", kiln_last_error(NULL));
    return NULL;
  }
  if (strcmp(kiln_runtime_device(plain)->name, kiln_runtime_device(rt)->name) != 0) {
    fprintf(stderr,
            "kiln bench overhead: no-pool: the second runtime is on '%s', not '%s'\n",
            kiln_runtime_device(plain)->name, kiln_runtime_device(rt)->name);
    kiln_runtime_destroy(plain);
    return NULL;
  }
  return plain;
}

static int run_overhead(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  fprintf(stderr,
          "kiln bench overhead on %s (host us per call at small sizes; %d calls a "
          "sample; no-pool: KILN_MEMORY_POOL=0)\n",
          kiln_runtime_device(rt)->name, a->quick ? QUICK_CALLS : CALLS);
  kiln_runtime *plain = a->use[1] ? open_no_pool(rt) : NULL;
  int rc = a->use[1] && !plain ? -1 : 0;
  kiln_runtime *rts[3] = {rt, plain, rt};
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    rc = measure(a, rts, a->sizes[s], out);
  kiln_cli_runtime_destroy(plain);
  return rc;
}

const bench_group bench_overhead_group = {&overhead_spec, run_overhead};
