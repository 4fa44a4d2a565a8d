/*
 * bench_fft.c — `kiln bench fft`: GFLOP/s of a complex64 forward FFT of
 * 2^12 to 2^20 points (1-D) and of 256^2 and 1024^2 (2-D; the cases below)
 * by each FFT backend, next to FFTW on the CPU (2 threads when
 * libfftw3f_threads is there) measured in the same run, planned two ways:
 * FFTW_MEASURE ("fftw-measure"), the plan a user who cares picks, and
 * FFTW_ESTIMATE ("fftw"), which plans at once; with the ratio of the best
 * kiln backend to each.
 * GFLOP/s = 5 N log2 N / the median time of one kiln_fft() and kiln_finish()
 * on buffers already on the device, the peers' runs interleaved. The plan is timed apart: the first call
 * (which bakes kiln's plan, or makes FFTW's plan and runs it) minus the
 * median, because baking a plan can take seconds on some drivers and is paid
 * once per shape.
 *
 * Each peer's result is checked before it is timed: DC (the sum of x)
 * within 1e-4 relative of a float64 sum, and Parseval's sum |X|^2 =
 * N sum |x|^2 within 1e-4. A backend that cannot run here (not built in,
 * KILN_ERR_UNSUPPORTED) is reported and shown as "-".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_FFTW
#  include <fftw3.h>
#endif

#define FFTW_NTHREADS 2

/* kiln's backends, then FFTW planned with FFTW_ESTIMATE (FFTW_PEER) and
 * with FFTW_MEASURE (MEASURE_PEER). */
static const char *const fft_peers[] = {"kiln", "vkfft", "clfft", "fftw", "fftw-measure"};
static const kiln_backend fft_backends[] = {KILN_BACKEND_KILN, KILN_BACKEND_VKFFT,
                                            KILN_BACKEND_CLFFT};
#define FFTW_PEER 3
#define MEASURE_PEER 4
_Static_assert(MEASURE_PEER < BENCH_MAX_PEERS, "bench.h: BENCH_MAX_PEERS is too small");
static const int fft_built[] = {1, 1, 1, HAVE_FFTW, HAVE_FFTW};
static const char *const fft_not_built[] = {
  NULL, NULL, NULL, "this kiln was built without FFTW (Debian libfftw3-dev)",
  "this kiln was built without FFTW (Debian libfftw3-dev)"};
/* The cases (rows; --sizes picks them by number): n0 x n1 points, 1-D
 * where n1 is 1; fft_points[] holds n0 * n1. */
typedef struct fft_case {
  size_t n0, n1;
} fft_case;
static const fft_case fft_cases[] = {
  {1 << 20, 1}, {1024, 1024}, {1 << 12, 1}, {1 << 16, 1}, {256, 256}};
static const char *const fft_labels[] = {"2^20", "1024^2", "2^12", "2^16", "256^2"};
static const size_t fft_points[] = {1 << 20, 1 << 20, 1 << 12, 1 << 16, 1 << 16};
static const char *const fft_series[] = {"1-D", "2-D", "1-D", "1-D", "2-D"};
static const size_t fft_defaults[] = {3, 4, 1, 5, 2};
static const size_t fft_quick[] = {3, 5};
static const char *const fft_ratios[][2] = {{"best", "fftw-measure"}, {"best", "fftw"}};
static const char *const fft_reach[] = {"fft", "", "", "", ""};
_Static_assert(BENCH_COUNT(fft_reach) == BENCH_COUNT(fft_peers), "a reach per peer");
/* A spec, its related fields on one line: */
/* clang-format off */
static const bench_spec fft_spec = {
  .op = "fft",
  .summary = "GFLOP/s of 1-D and 2-D FFTs, plan time apart, against FFTW",
  .sizes_value = "CASE,...",
  BENCH_TABLES(fft),
  .reach = fft_reach,
  .selectable = 5,
  .host_peers = 2, .tuned_peers = 1,
  .min_size = 1, .max_size = 5, .size_multiple = 1,
  .sizes_help = "case numbers such as 1,2 (1: 1-D 2^20, 2: 2-D 1024^2, 3: 1-D 2^12, "
                "4: 1-D 2^16, 5: 2-D 256^2)",
  .repeats = 10,
  .labels = fft_labels,
  .best_of = 3,
  .xs = fft_points, .series = fft_series, .axis = "points",
};
/* clang-format on */

/* One case's data, for fft_once(). */
typedef struct fft_run {
  kiln_runtime *rt;
  int k; /* the peer */
  kiln_fft_desc d;
  size_t n;
  float *x, *y; /* host input, and the output read back */
  kiln_buffer *din, *dout;
#if HAVE_FFTW
  fftwf_plan plan;
#endif
} fft_run;

/* One timed transform by peer g->k; milliseconds, or -1 on failure. */
static double fft_once(void *ctx)
{
  fft_run *g = ctx;
  double t0 = bench_now_ms();
#if HAVE_FFTW
  if (g->k >= FFTW_PEER) {
    fftwf_execute(g->plan);
    return bench_now_ms() - t0;
  }
#endif
  if (kiln_fft(g->rt, &g->d, g->din, g->dout) != KILN_OK || kiln_finish(g->rt) != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* The first call: FFTW's plan and one run, or kiln's first kiln_fft(). */
static double fft_first(fft_run *g)
{
  double t0 = bench_now_ms();
#if HAVE_FFTW
  if (g->k >= FFTW_PEER) {
    int n0 = (int)g->d.shape[0], n1 = (int)g->d.shape[1];
    unsigned flags = g->k == MEASURE_PEER ? FFTW_MEASURE : FFTW_ESTIMATE;
    fftwf_complex *in = (fftwf_complex *)g->x, *out = (fftwf_complex *)g->y;
    /* FFTW_MEASURE runs transforms on the arrays while it plans: the
     * input, which every peer shares, is put back afterwards. */
    float *keep = malloc(2 * g->n * sizeof *keep);
    if (!keep)
      return -1;
    memcpy(keep, g->x, 2 * g->n * sizeof *keep);
    g->plan = g->d.ndim == 1 ? fftwf_plan_dft_1d(n0, in, out, FFTW_FORWARD, flags)
                             : fftwf_plan_dft_2d(n0, n1, in, out, FFTW_FORWARD, flags);
    memcpy(g->x, keep, 2 * g->n * sizeof *keep);
    free(keep);
    if (!g->plan)
      return -1;
    fftwf_execute(g->plan);
    return bench_now_ms() - t0;
  }
#endif
  double ms = fft_once(g);
  if (ms < 0 || kiln_buffer_read(g->dout, 0, g->n, g->y) != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* The check of the header comment; 0, or -1 after saying why. */
static int fft_check(const fft_run *g)
{
  double sre = 0, sim = 0, sx = 0, sy = 0;
  for (size_t i = 0; i < g->n; i++) {
    sre += g->x[2 * i], sim += g->x[2 * i + 1];
    sx += (double)g->x[2 * i] * g->x[2 * i] + (double)g->x[2 * i + 1] * g->x[2 * i + 1];
    sy += (double)g->y[2 * i] * g->y[2 * i] + (double)g->y[2 * i + 1] * g->y[2 * i + 1];
  }
  double dc = hypot(g->y[0] - sre, g->y[1] - sim) / hypot(sre, sim);
  double parseval = fabs(sy / ((double)g->n * sx) - 1);
  if (dc <= 1e-4 && parseval <= 1e-4)
    return 0;
  fprintf(stderr, " FAILED (DC off by %.3g relative, Parseval by %.3g)\n", dc, parseval);
  return -1;
}

/* Plans and checks peer g->k: 1 when it is ready to time (*first: the first
 * call's milliseconds), 0 when kiln says it cannot run here (the reason is
 * printed), -1 on a failure. */
static int prepare_peer(fft_run *g, size_t c, double *first)
{
  fprintf(stderr, "  fft %-6s %-6s plan, check...", fft_labels[c - 1], fft_peers[g->k]);
  if (g->k < FFTW_PEER)
    g->d.backend = fft_backends[g->k];
  memset(g->y, 0, 2 * g->n * sizeof *g->y);
  *first = fft_first(g);
  if (*first < 0 && g->k < FFTW_PEER &&
      kiln_fft(g->rt, &g->d, g->din, g->dout) == KILN_ERR_UNSUPPORTED) {
    fprintf(stderr, " cannot run here: %s\n", kiln_last_error(g->rt));
    return 0;
  }
  if (*first < 0) {
    fprintf(stderr, " FAILED (%s)\n",
            g->k < FFTW_PEER ? kiln_last_error(g->rt) : "no FFTW plan");
    return -1;
  }
  if (fft_check(g) != 0)
    return -1;
  fprintf(stderr, " ok\n");
  return 1;
}

/* Peer g->k's record from its timed runs (sorted in place) and first call. */
static void add_record(const fft_run *g, size_t c, double *ms, int repeats, double first,
                       bench_records *out)
{
  double med = bench_median(ms, repeats), n = (double)g->n;
  bench_record r = {.op = "fft",
                    .backend = fft_peers[g->k],
                    .dtype = "complex64",
                    .size = c,
                    .median_ms = med,
                    .gflops = 5 * n * log2(n) / med / 1e6,
                    .gbps = NAN,
                    .has_plan = 1,
                    .plan_ms = fmax(first - med, 0)};
  if (g->d.ndim == 1)
    snprintf(r.shape, sizeof r.shape, "%zu", g->n);
  else
    snprintf(r.shape, sizeof r.shape, "%zux%zu", g->d.shape[0], g->d.shape[1]);
  bench_add(out, &r);
  fprintf(stderr, "  fft %-6s %-6s plan %.1f ms, %.2f ms, %.2f GFLOP/s\n",
          fft_labels[c - 1], fft_peers[g->k], r.plan_ms, med, r.gflops);
}

/* Every chosen peer on case c (fft_cases[c - 1]): each planned and checked,
 * then timed in rounds of one run of every peer, so that the machine's slow
 * spells (a shared VM's are seconds long) fall on all of them alike. */
static int measure(kiln_runtime *rt, const bench_args *args, size_t c, bench_records *out)
{
  const fft_case *fc = &fft_cases[c - 1];
  size_t n = fc->n0 * fc->n1;
  fft_run g = {.rt = rt, .n = n}, peer[MEASURE_PEER + 1];
  int ready[MEASURE_PEER + 1] = {0};
  double first[MEASURE_PEER + 1] = {0}, *ms[MEASURE_PEER + 1] = {NULL};
  kiln_fft_desc_init(&g.d, KILN_F32, fc->n0);
  if (fc->n1 > 1)
    g.d.ndim = 2, g.d.shape[1] = fc->n1;
  g.x = malloc(2 * n * sizeof *g.x), g.y = malloc(2 * n * sizeof *g.y);
  int rc = 0;
  if (!g.x || !g.y) {
    fprintf(stderr, "kiln bench fft: out of host memory\n");
    rc = -1;
  }
  for (size_t i = 0; i < 2 * n && rc == 0; i++)
    g.x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.4f;
  if (rc == 0 && (kiln_buffer_create(rt, KILN_C32, n, 0, &g.din) != KILN_OK ||
                  kiln_buffer_create(rt, KILN_C32, n, 0, &g.dout) != KILN_OK ||
                  kiln_buffer_write(g.din, 0, n, g.x) != KILN_OK)) {
    fprintf(stderr, "kiln bench fft: %s\n", kiln_last_error(rt));
    rc = -1;
  }
  for (int k = 0; k <= MEASURE_PEER; k++) {
    peer[k] = g;
    peer[k].k = k;
    if (rc == 0 && args->use[k] && (ready[k] = prepare_peer(&peer[k], c, &first[k])) < 0)
      rc = -1;
    if (ready[k] > 0 && !(ms[k] = calloc((size_t)args->repeats, sizeof *ms[k]))) {
      fprintf(stderr, "kiln bench fft: out of host memory\n");
      rc = -1;
    }
  }
  for (int r = 0; r < args->repeats && rc == 0; r++)
    for (int k = 0; k <= MEASURE_PEER && rc == 0; k++)
      if (ready[k] > 0 && (ms[k][r] = fft_once(&peer[k])) < 0) {
        fprintf(stderr, "kiln bench fft: %s: %s\n", fft_peers[k], kiln_last_error(rt));
        rc = -1;
      }
  for (int k = 0; k <= MEASURE_PEER; k++) {
    if (rc == 0 && ready[k] > 0)
      add_record(&peer[k], c, ms[k], args->repeats, first[k], out);
    free(ms[k]);
#if HAVE_FFTW
    if (peer[k].plan)
      fftwf_destroy_plan(peer[k].plan);
#endif
  }
  kiln_buffer_destroy(g.din);
  kiln_buffer_destroy(g.dout);
  free(g.x);
  free(g.y);
  return rc;
}

static int run_fft(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  int threads = 1;
#if HAVE_FFTW && HAVE_FFTW_THREADS
  if (fftwf_init_threads()) {
    fftwf_plan_with_nthreads(FFTW_NTHREADS);
    threads = FFTW_NTHREADS;
  }
#endif
  fprintf(stderr,
          "kiln bench fft on %s (complex64 forward; GFLOP/s at 5 N log2 N; "
          "FFTW with %d thread%s, planned with FFTW_MEASURE and FFTW_ESTIMATE)\n",
          kiln_runtime_device(rt)->name, threads, threads == 1 ? "" : "s");
  return bench_each_size(rt, a, out, measure);
}

const bench_group bench_fft_group = {&fft_spec, run_fft};
