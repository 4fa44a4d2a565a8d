/*
 * bench.c — `kiln bench`: what every operation's bench shares (options,
 * medians, the table and the JSON records; see bench.h), and `kiln bench
 * gemm`: GFLOP/s of each GEMM backend and of OpenBLAS on the CPU, as medians
 * over repeats after a warm-up, each result checked against OpenBLAS (or a
 * naive loop without it) before it is timed. `kiln bench reduce` is in
 * bench_reduce.c, `kiln bench conv` in bench_conv.c, `kiln bench fft` in
 * bench_fft.c.
 *
 * Records share one shape for every operation's bench: op, backend, dtype,
 * shape ("MxNxK"), median_ms, gflops, gbps (null where it does not apply).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_OPENBLAS
#include <cblas.h>
#endif
#if HAVE_JSON_C
#include <json-c/json.h>
#endif

/* ---- shared by every operation's bench ----------------------------------- */

double bench_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One size: a number, in bytes with an optional K, M or G (powers of 1024)
 * when the spec says so. 0 when it does not parse or is out of range. */
static size_t parse_size(const bench_spec *s, const char *t)
{
  char *end;
  unsigned long long v = strtoull(t, &end, 10);
  int shift = !s->byte_sizes || !*end ? 0 : *end == 'K' ? 10 : *end == 'M' ? 20
                                          : *end == 'G' ? 30 : -1;
  if (end == t || *t == '-' || shift < 0 || end[shift ? 1 : 0] || v > (SIZE_MAX >> shift))
    return 0;
  v <<= shift;
  if (v < s->min_size || v > s->max_size || v % s->size_multiple)
    return 0;
  return (size_t)v;
}

static int parse_sizes(const bench_spec *s, bench_args *a, char *list)
{
  a->nsizes = 0;
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    size_t v = parse_size(s, t);
    if (!v || a->nsizes == BENCH_MAX_SIZES)
      return -1;
    a->sizes[a->nsizes++] = v;
  }
  return a->nsizes ? 0 : -1;
}

static int parse_backends(const bench_spec *s, bench_args *a, char *list)
{
  memset(a->use, 0, sizeof a->use);
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    int k = 0;
    while (k < s->selectable && strcmp(t, s->peers[k]) != 0)
      k++;
    if (k == s->selectable)
      return -1;
    a->use[k] = 1;
  }
  for (int k = s->selectable; k < s->npeers; k++)
    a->use[k] = 1;
  return 0;
}

/* "kiln, clblast or openblas" */
static void list_backends(const bench_spec *s, char *buf, size_t size)
{
  size_t at = 0;
  for (int k = 0; k < s->selectable && at < size; k++)
    at += (size_t)snprintf(buf + at, size - at, "%s%s", k == 0 ? ""
                           : k == s->selectable - 1 ? " or " : ", ", s->peers[k]);
}

int bench_parse(const bench_spec *s, bench_args *a, int argc, char **argv)
{
  char names[128];
  list_backends(s, names, sizeof names);
  *a = (bench_args){.nsizes = s->ndefaults, .repeats = s->repeats};
  memcpy(a->sizes, s->defaults, s->ndefaults * sizeof *s->defaults);
  for (int k = 0; k < s->npeers; k++)
    a->use[k] = s->built[k];
  for (int i = 1; i < argc; i++) {
    int more = i + 1 < argc;
    if (strcmp(argv[i], "--json") == 0) {
      a->json = 1;
    } else if (strcmp(argv[i], "--sizes") == 0 && more) {
      if (parse_sizes(s, a, argv[++i]) != 0)
        return fprintf(stderr, "kiln bench %s: --sizes takes %s\n", s->op,
                       s->sizes_help), -1;
    } else if (strcmp(argv[i], "--backend") == 0 && more) {
      if (parse_backends(s, a, argv[++i]) != 0)
        return fprintf(stderr, "kiln bench %s: --backend takes %s, comma-separated\n",
                       s->op, names), -1;
    } else if (strcmp(argv[i], "--repeat") == 0 && more) {
      a->repeats = atoi(argv[++i]);
      if (a->repeats < 1 || a->repeats > 1000)
        return fprintf(stderr, "kiln bench %s: --repeat takes 1 to 1000\n", s->op), -1;
    } else {
      return fprintf(stderr, "%s\n", s->usage), -1;
    }
  }
  for (int k = 0; k < s->npeers; k++)
    if (a->use[k] && !s->built[k])
      return fprintf(stderr, "kiln bench %s: %s\n", s->op, s->not_built[k]), -1;
  return 0;
}

int bench_time(double (*once)(void *ctx), void *ctx, int repeats, double *median)
{
  double *ms = calloc((size_t)repeats, sizeof *ms);
  int rc = ms ? 0 : -1;
  for (int r = 0; r < repeats && rc == 0; r++)
    if ((ms[r] = once(ctx)) < 0)
      rc = -1;
  if (rc == 0) {
    qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
    *median = ms[repeats / 2];
  }
  free(ms);
  return rc;
}

void bench_add(bench_records *rs, const bench_record *r)
{
  if (rs->n < BENCH_MAX_RECORDS)
    rs->r[rs->n++] = *r;
}

static double find(const bench_spec *s, const bench_records *rs, size_t size,
                   const char *backend)
{
  if (s->best_of && strcmp(backend, "best") == 0) {
    double best = 0;
    for (int k = 0; k < s->best_of; k++)
      best = fmax(best, find(s, rs, size, s->peers[k]));
    return best;
  }
  for (size_t i = 0; i < rs->n; i++)
    if (rs->r[i].size == size && strcmp(rs->r[i].backend, backend) == 0)
      return s->gbps ? rs->r[i].gbps : rs->r[i].gflops;
  return 0;
}

void bench_size_label(const bench_spec *s, size_t v, char *buf, size_t size)
{
  static const char units[] = "GMK";
  if (s->labels) {
    snprintf(buf, size, "%s", s->labels[v - 1]);
    return;
  }
  for (int u = 0; s->byte_sizes && u < 3; u++) {
    size_t one = (size_t)1 << (30 - 10 * u);
    if (v % one == 0) {
      snprintf(buf, size, "%zu%c", v / one, units[u]);
      return;
    }
  }
  snprintf(buf, size, "%zu", v);
}

static void print_table(const bench_spec *s, const bench_args *a, const bench_records *rs)
{
  printf("%-6s", s->labels ? "layer" : "size");
  for (int k = 0; k < s->npeers; k++)
    if (a->use[k])
      printf("  %9s", s->peers[k]);
  for (size_t q = 0; q < s->nratios; q++) {
    char head[64];
    snprintf(head, sizeof head, "%s/%s", s->ratios[q][0], s->ratios[q][1]);
    printf("  %14s", head);
  }
  printf("   (%s, medians)\n", s->gbps ? "GB/s" : "GFLOP/s");
  for (size_t i = 0; i < a->nsizes; i++) {
    char label[32];
    bench_size_label(s, a->sizes[i], label, sizeof label);
    printf("%-6s", label);
    for (int k = 0; k < s->npeers; k++) {
      double v = a->use[k] ? find(s, rs, a->sizes[i], s->peers[k]) : 0;
      if (a->use[k] && v > 0)
        printf("  %9.*f", s->gbps ? 2 : 1, v);
      else if (a->use[k])
        printf("  %9s", "-");
    }
    for (size_t q = 0; q < s->nratios; q++) {
      double top = find(s, rs, a->sizes[i], s->ratios[q][0]);
      double bottom = find(s, rs, a->sizes[i], s->ratios[q][1]);
      printf("  %13.2fx", top > 0 && bottom > 0 ? top / bottom : NAN);
    }
    printf("\n");
  }
}

#if HAVE_JSON_C
static json_object *json_figure(double v)
{
  return isnan(v) ? NULL : json_object_new_double(v);
}
#endif

static int print_json(const bench_records *rs)
{
#if HAVE_JSON_C
  json_object *all = json_object_new_array();
  for (size_t i = 0; i < rs->n; i++) {
    const bench_record *r = &rs->r[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "op", json_object_new_string(r->op));
    json_object_object_add(o, "backend", json_object_new_string(r->backend));
    json_object_object_add(o, "dtype", json_object_new_string(r->dtype));
    json_object_object_add(o, "shape", json_object_new_string(r->shape));
    json_object_object_add(o, "median_ms", json_object_new_double(r->median_ms));
    json_object_object_add(o, "gflops", json_figure(r->gflops));
    json_object_object_add(o, "gbps", json_figure(r->gbps));
    if (r->has_plan)
      json_object_object_add(o, "plan_ms", json_object_new_double(r->plan_ms));
    json_object_array_add(all, o);
  }
  puts(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY));
  json_object_put(all);
  return 0;
#else
  (void)rs;
  fprintf(stderr, "kiln bench: --json needs kiln built with json-c (libjson-c-dev)\n");
  return 1;
#endif
}

int bench_print(const bench_spec *s, const bench_args *a, const bench_records *rs)
{
  if (a->json)
    return print_json(rs);
  print_table(s, a, rs);
  return 0;
}

/* ---- kiln bench gemm ------------------------------------------------------ */

static const char *const gemm_peers[] = {"kiln", "clblast", "openblas"};
static const int gemm_built[] = {1, HAVE_CLBLAST, HAVE_OPENBLAS};
static const char *const gemm_not_built[] = {
  NULL, "this kiln was built without CLBlast",
  "this kiln was built without OpenBLAS (Debian libopenblas-dev)"};
static const size_t gemm_defaults[] = {128, 256, 512, 1024, 2048};
static const char *const gemm_ratios[][2] = {{"kiln", "openblas"}, {"kiln", "clblast"}};
static const bench_spec gemm_spec = {
  .op = "gemm",
  .usage = "usage: kiln bench gemm [--sizes N,N...] [--backend kiln,clblast,openblas] "
           "[--repeat R] [--json]",
  .peers = gemm_peers, .npeers = 3, .selectable = 3,
  .built = gemm_built, .not_built = gemm_not_built,
  .defaults = gemm_defaults, .ndefaults = 5,
  .min_size = 1, .max_size = 65536, .size_multiple = 1,
  .sizes_help = "sizes such as 512,1024 (at most 16, each 1 to 65536)",
  .repeats = 5,
  .ratios = gemm_ratios, .nratios = 2,
};

/* The reference C for the check: OpenBLAS when built in, else naive. */
static void reference(size_t n, const float *a, const float *b, float *c)
{
#if HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
              a, (int)n, b, (int)n, 0.0f, c, (int)n);
#else
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < n; p++)
        s += (double)a[i * n + p] * b[p * n + j];
      c[i * n + j] = (float)s;
    }
#endif
}

/* One product's inputs, for run_once(). */
typedef struct gemm_run {
  kiln_runtime *rt;
  int k; /* the peer */
  size_t n;
  const float *a, *b;
  float *c;
  kiln_buffer *da, *db, *dc;
} gemm_run;

/* One timed run of peer g->k; returns milliseconds, or -1 on failure. */
static double run_once(void *ctx)
{
  const gemm_run *g = ctx;
  size_t n = g->n;
  double t0 = bench_now_ms();
  if (g->k == 2) {
#if HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
                g->a, (int)n, g->b, (int)n, 0.0f, g->c, (int)n);
#endif
    return bench_now_ms() - t0;
  }
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, n, n, n);
  d.backend = g->k == 0 ? KILN_BACKEND_KILN : KILN_BACKEND_CLBLAST;
  if (kiln_gemm(g->rt, &d, g->da, g->db, g->dc) != KILN_OK || kiln_finish(g->rt) != KILN_OK)
    return -1;
  return bench_now_ms() - t0;
}

/* Largest difference from the reference, relative to sqrt(n) * max |C|. */
static double check(size_t n, const float *want, const float *got)
{
  double err = 0, top = 0;
  for (size_t i = 0; i < n * n; i++) {
    err = fmax(err, fabs((double)got[i] - want[i]));
    top = fmax(top, fabs((double)want[i]));
  }
  return err / (top * sqrt((double)n) + 1e-30);
}

/* Checks, then times peer g->k; adds its record. */
static int measure_peer(const bench_args *args, gemm_run *g, const float *ref,
                        bench_records *out)
{
  size_t n = g->n, nn = n * n;
  fprintf(stderr, "  gemm %zu^3 %-8s warm-up and check...", n, gemm_peers[g->k]);
  double t = run_once(g), med = 0;
  if (t >= 0 && g->k != 2 && kiln_buffer_read(g->dc, 0, nn, g->c) != KILN_OK)
    t = -1;
  double err = t < 0 ? 0 : check(n, ref, g->c);
  if (t < 0 || err > 1e-5) {
    fprintf(stderr, " FAILED (%s)\n", t < 0 ? kiln_last_error(g->rt) : "wrong result");
    return -1;
  }
  if (bench_time(run_once, g, args->repeats, &med) != 0) {
    fprintf(stderr, " FAILED (%s)\n", kiln_last_error(g->rt));
    return -1;
  }
  bench_record r = {"gemm", gemm_peers[g->k], "float32", n, "", med,
                    2.0 * (double)n * n * n / med / 1e6, NAN, 0, 0};
  snprintf(r.shape, sizeof r.shape, "%zux%zux%zu", n, n, n);
  bench_add(out, &r);
  fprintf(stderr, " %.1f GFLOP/s\n", r.gflops);
  return 0;
}

/* Measures the peers `which` selects (bit k: peer k) at size n. */
static int measure(kiln_runtime *rt, const bench_args *args, unsigned which, size_t n,
                   bench_records *out)
{
  size_t nn = n * n;
  float *a = malloc(nn * 4), *b = malloc(nn * 4), *c = malloc(nn * 4), *ref = malloc(nn * 4);
  gemm_run g = {rt, 0, n, a, b, c, NULL, NULL, NULL};
  int rc = a && b && c && ref ? 0 : -1;
  for (size_t i = 0; i < nn && rc == 0; i++) {
    a[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    b[i] = (float)((i * 104729) % 1000) / 500.0f - 1.0f;
  }
  if (rc == 0)
    reference(n, a, b, ref);
  if (rc == 0 && (kiln_buffer_create(rt, KILN_F32, nn, 0, &g.da) ||
                  kiln_buffer_create(rt, KILN_F32, nn, 0, &g.db) ||
                  kiln_buffer_create(rt, KILN_F32, nn, 0, &g.dc) ||
                  kiln_buffer_write(g.da, 0, nn, a) || kiln_buffer_write(g.db, 0, nn, b)))
    rc = -1;
  for (g.k = 0; g.k < 3 && rc == 0; g.k++)
    if (args->use[g.k] && (which & (1u << g.k)))
      rc = measure_peer(args, &g, ref, out);
  kiln_buffer_destroy(g.da);
  kiln_buffer_destroy(g.db);
  kiln_buffer_destroy(g.dc);
  free(a), free(b), free(c), free(ref);
  return rc;
}

static int bench_gemm(int argc, char **argv)
{
  bench_args a;
  if (bench_parse(&gemm_spec, &a, argc, argv) != 0)
    return 2;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(NULL, &rt) != KILN_OK) {
    fprintf(stderr, "kiln bench: %s\n", kiln_last_error(NULL));
    return 1;
  }
  fprintf(stderr, "kiln bench gemm on %s (float32, row-major, C = A B)\n",
          kiln_runtime_device(rt)->name);
  bench_records r = {.n = 0};
  int rc = 0;
  /* OpenBLAS last, after every device run: its worker threads spin for a
   * while after each call and would take the CPU from PoCL's. */
  for (size_t s = 0; s < a.nsizes && rc == 0; s++)
    rc = measure(rt, &a, 3, a.sizes[s], &r);
  for (size_t s = 0; s < a.nsizes && rc == 0; s++)
    rc = measure(rt, &a, 4, a.sizes[s], &r);
  if (rc == 0)
    rc = bench_print(&gemm_spec, &a, &r);
  kiln_runtime_destroy(rt);
  return rc ? 1 : 0;
}

int kiln_cmd_bench(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "gemm") == 0)
    return bench_gemm(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "reduce") == 0)
    return bench_reduce(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "conv") == 0)
    return bench_conv(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "fft") == 0)
    return bench_fft(argc - 1, argv + 1);
  fprintf(stderr, "usage: kiln bench gemm [--sizes N,N...] [--backend kiln,clblast,"
                  "openblas] [--repeat R] [--json]\n"
                  "       kiln bench reduce [--sizes BYTES,...] [--backend kiln,clblast] "
                  "[--repeat R] [--json]\n"
                  "       kiln bench conv [--sizes LAYER,...] [--backend im2col,direct,"
                  "clblast,openblas] [--repeat R] [--json]\n"
                  "       kiln bench fft [--sizes CASE,...] [--backend clfft,vkfft,fftw] "
                  "[--repeat R] [--json]\n");
  return 2;
}
