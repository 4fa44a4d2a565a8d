/*
 * bench_devices.c — `kiln bench devices`: GFLOP/s of one call over a device
 * group (kiln_group_*_host) against one device of it alone (the first that
 * is not a simulator, through the same runtime's kiln_*_host), on the
 * caller's host arrays, transfers included; the ratio is the group's
 * speed-up. The group is the one --devices (or KILN_DEVICES) forms. After
 * each case, each device's share of the work, chunks and time in them
 * goes to stderr, from kiln_group_stats().
 *
 * The cases (rows; --sizes picks them by number):
 *   1  gemm     2048 x 2048 x 2048 float32
 *   2  conv3x3  ResNet's conv2_x: N=8, C=K=64, 56x56, 3x3, pad 1, float32
 * Each peer's first call is a warm-up, and its result is checked against
 * the other's (the group's against one device's) within 1e-4 of the largest
 * |y|: both compute the same thing on the same kind of kernels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kiln/kiln.h"

static const char *const devices_peers[] = {"one", "group"};
static const int devices_built[] = {1, 1};
static const char *const devices_not_built[] = {NULL, NULL};
static const size_t devices_defaults[] = {1, 2};
static const size_t devices_quick[] = {2};
static const char *const devices_ratios[][2] = {{"group", "one"}};
static const char *const devices_labels[] = {"gemm", "conv3x3"};
/* AUTO's GEMM and convolution; the group splits by the speeds kiln tune
 * measured. */
static const char *const devices_reach[] = {"gemm.f32 choices clblast measured",
                                            "conv gemm.f32 choices clblast measured"};
_Static_assert(BENCH_COUNT(devices_reach) == BENCH_COUNT(devices_labels),
               "a reach per case");
/* clang-format off */
static const bench_spec devices_spec = {
  .op = "devices",
  .summary = "GFLOP/s of a call over a device group (--devices) against one of its "
             "devices alone",
  .sizes_value = "CASE,...",
  BENCH_TABLES(devices),
  .reach = devices_reach, .reach_by_case = 1,
  .selectable = 2,
  .min_size = 1, .max_size = 2, .size_multiple = 1,
  .sizes_help = "1 (GEMM 2048^3) and 2 (ResNet's 3x3 conv2_x layer, batch 8)",
  .repeats = 5,
  .figure = BENCH_GFLOPS,
  .labels = devices_labels,
  .note = "devices: host arrays in and out, transfers included; group/one is the "
          "group's speed-up over its first device that is not a simulator",
};
/* clang-format on */

enum { GEMM_N = 2048, CONV_N = 8, CONV_C = 64, CONV_HW = 56 };

/* One case's arrays, and what runs it. */
typedef struct devices_run {
  kiln_group *g;
  kiln_runtime *one;
  int k;    /* the peer */
  int conv; /* case 2 */
  kiln_gemm_desc gd;
  kiln_conv2d_desc cd;
  float *in, *w, *out;
  size_t nout;
} devices_run;

/* One call by peer k, timed; a negative time when it failed. */
static double devices_once(void *ctx)
{
  devices_run *r = ctx;
  double t0 = bench_now_ms();
  kiln_status st;
  if (r->conv)
    st = r->k ? kiln_group_conv2d_host(r->g, &r->cd, r->in, r->w, NULL, r->out)
              : kiln_conv2d_host(r->one, &r->cd, r->in, r->w, NULL, r->out);
  else
    st = r->k ? kiln_group_gemm_host(r->g, &r->gd, r->in, r->w, r->out)
              : kiln_gemm_host(r->one, &r->gd, r->in, r->w, r->out);
  return st == KILN_OK ? bench_now_ms() - t0 : -1;
}

/* Each device's part of what the group did since the last reset. */
static void shares(const kiln_group *g)
{
  for (size_t i = 0; i < kiln_group_size(g); i++) {
    kiln_group_usage u;
    kiln_group_usage_init(&u);
    kiln_group_stats(g, i, &u);
    const kiln_device_info *d = kiln_runtime_device(kiln_group_runtime(g, i));
    fprintf(stderr, "    %u:%u %s: %.1f%% of the work, %llu chunks, %.3f s in them%s\n",
            d->platform_index, d->device_index, d->name, 100 * u.share,
            (unsigned long long)u.chunks, u.seconds, u.failures ? ", failed" : "");
  }
}

/* Times peer k on the case, checks it against *ref (the other peer's
 * output, NULL for the first), adds its record. 0, or -1 after a line. */
static int devices_peer(const bench_args *a, devices_run *r, const float *ref,
                        double flops, bench_records *out)
{
  fprintf(stderr, "  %s %s:", devices_labels[r->conv], devices_peers[r->k]);
  double med;
  if (devices_once(r) < 0) {
    fprintf(stderr, " FAILED (%s)\n", kiln_last_error(r->k ? NULL : r->one));
    return -1;
  }
  double big = 0, err = 0;
  for (size_t i = 0; ref && i < r->nout; i++) {
    big = fmax(big, fabs(ref[i]));
    err = fmax(err, fabs(ref[i] - r->out[i]));
  }
  if (err > 1e-4 * big) {
    fprintf(stderr, " FAILED (off by %g of %g from one device)\n", err, big);
    return -1;
  }
  kiln_group_stats_reset(r->g);
  if (bench_time(devices_once, r, a->repeats, &med) != 0) {
    fprintf(stderr, " FAILED (%s)\n", kiln_last_error(r->k ? NULL : r->one));
    return -1;
  }
  bench_record rec = {.op = "devices",
                      .backend = devices_peers[r->k],
                      .dtype = "float32",
                      .size = (size_t)r->conv + 1,
                      .median_ms = med,
                      .gflops = flops / med / 1e6,
                      .gbps = NAN};
  snprintf(rec.shape, sizeof rec.shape, "%s",
           r->conv ? "8x64x56x56,64x3x3" : "2048x2048x2048");
  bench_add(out, &rec);
  fprintf(stderr, " %.1f GFLOP/s\n", rec.gflops);
  if (r->k)
    shares(r->g);
  return 0;
}

static int devices_case(const bench_args *a, devices_run *r, size_t c, bench_records *out)
{
  r->conv = c == 2;
  kiln_gemm_desc_init(&r->gd, KILN_F32, GEMM_N, GEMM_N, GEMM_N);
  kiln_conv2d_desc_init(&r->cd, KILN_F32, CONV_N, CONV_C, CONV_HW, CONV_HW, CONV_C, 3, 3);
  r->cd.pad_top = r->cd.pad_bottom = r->cd.pad_left = r->cd.pad_right = 1;
  size_t nin =
    r->conv ? (size_t)CONV_N * CONV_C * CONV_HW * CONV_HW : (size_t)GEMM_N * GEMM_N;
  size_t nw = r->conv ? (size_t)CONV_C * CONV_C * 9 : (size_t)GEMM_N * GEMM_N;
  r->nout = nin; /* same padding: as many outputs as inputs, and square C */
  double flops =
    r->conv ? 2.0 * (double)r->nout * CONV_C * 9 : 2.0 * GEMM_N * (double)GEMM_N * GEMM_N;
  r->in = bench_values(nin, 1), r->w = bench_values(nw, 2),
  r->out = malloc(r->nout * sizeof(float));
  float *ref = malloc(r->nout * sizeof(float)), *prev = NULL;
  int rc = r->in && r->w && r->out && ref ? 0 : -1;
  for (int k = 0; k < 2 && rc == 0; k++) {
    if (!a->use[k])
      continue;
    r->k = k;
    rc = devices_peer(a, r, prev, flops, out);
    if (rc == 0 && !prev)
      prev = memcpy(ref, r->out, r->nout * sizeof(float));
  }
  free(r->in), free(r->w), free(r->out), free(ref);
  return rc;
}

static int run_devices(kiln_runtime *rt, const bench_args *a, bench_records *out)
{
  (void)rt; /* the group's devices are the group's */
  kiln_options o;
  kiln_options_init(&o);
  o.devices = a->devices;
  devices_run r = {0};
  if (kiln_group_create(&o, &r.g) != KILN_OK) {
    fprintf(stderr, "kiln bench devices: %s\n", kiln_last_error(NULL));
    return -1;
  }
  r.one = kiln_group_runtime(r.g, 0);
  for (size_t i = kiln_group_size(r.g); i-- > 0;)
    if (!kiln_runtime_device(kiln_group_runtime(r.g, i))->is_simulator)
      r.one = kiln_group_runtime(r.g, i);
  fprintf(stderr, "kiln bench devices over a group of %zu (one: %s)\n",
          kiln_group_size(r.g), kiln_runtime_device(r.one)->name);
  size_t pooled = 0; /* PoCL's pthread devices: docs/performance.md, "Device groups" */
  for (size_t i = 0; i < kiln_group_size(r.g); i++)
    pooled +=
      strncmp(kiln_runtime_device(kiln_group_runtime(r.g, i))->name, "pthread-", 8) == 0;
  if (pooled > 1)
    fprintf(stderr, "  note: PoCL runs every pthread device of a process on one pool of "
                    "POCL_MAX_PTHREAD_COUNT threads, so they do not compute side by "
                    "side; POCL_DEVICES=\"basic basic\" gives devices that compute each "
                    "on the thread that drives it\n");
  int rc = 0;
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    rc = devices_case(a, &r, a->sizes[s], out);
  kiln_group_destroy(r.g);
  return rc;
}

const bench_group bench_devices_group = {&devices_spec, run_devices};
