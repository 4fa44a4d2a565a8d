/*
 * bench.c — `kiln bench gemm`: GFLOP/s of each GEMM backend and of OpenBLAS
 * on the CPU, as medians over repeats after a warm-up, each result checked
 * against OpenBLAS (or a naive loop without it) before it is timed.
 *
 * Records share one shape for every operation's bench: op, backend, dtype,
 * shape ("MxNxK"), median_ms, gflops, gbps (null where it does not apply).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_OPENBLAS
#include <cblas.h>
#endif
#if HAVE_JSON_C
#include <json-c/json.h>
#endif

#define MAX_SIZES 16
#define MAX_RECORDS 64

typedef struct record {
  const char *backend;
  size_t n;
  double median_ms, gflops;
} record;

typedef struct bench_args {
  size_t sizes[MAX_SIZES], nsizes;
  int use[3]; /* kiln, clblast, openblas */
  int json, repeats;
} bench_args;

static const char *const peer_names[3] = {"kiln", "clblast", "openblas"};

static double now_ms(void)
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

/* Parses "a,b,c" of numbers, or of backend names. */
static int parse_sizes(bench_args *a, char *list)
{
  a->nsizes = 0;
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    char *end;
    unsigned long v = strtoul(t, &end, 10);
    if (*end || v == 0 || v > 65536 || a->nsizes == MAX_SIZES)
      return -1;
    a->sizes[a->nsizes++] = v;
  }
  return a->nsizes ? 0 : -1;
}

static int parse_backends(bench_args *a, char *list)
{
  memset(a->use, 0, sizeof a->use);
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    int k = 0;
    while (k < 3 && strcmp(t, peer_names[k]) != 0)
      k++;
    if (k == 3)
      return -1;
    a->use[k] = 1;
  }
  return 0;
}

static int parse(bench_args *a, int argc, char **argv)
{
  static const size_t defaults[] = {128, 256, 512, 1024, 2048};
  *a = (bench_args){.nsizes = 5, .use = {1, HAVE_CLBLAST, HAVE_OPENBLAS}, .repeats = 5};
  memcpy(a->sizes, defaults, sizeof defaults);
  for (int i = 1; i < argc; i++) {
    int more = i + 1 < argc;
    if (strcmp(argv[i], "--json") == 0)
      a->json = 1;
    else if (strcmp(argv[i], "--sizes") == 0 && more)
      if (parse_sizes(a, argv[++i]) != 0)
        return fprintf(stderr, "kiln bench gemm: --sizes takes sizes such as "
                               "512,1024 (at most %d, each 1 to 65536)\n", MAX_SIZES), -1;
      else
        continue;
    else if (strcmp(argv[i], "--backend") == 0 && more) {
      if (parse_backends(a, argv[++i]) != 0)
        return fprintf(stderr, "kiln bench gemm: --backend takes kiln, clblast or "
                               "openblas, comma-separated\n"), -1;
    } else if (strcmp(argv[i], "--repeat") == 0 && more) {
      a->repeats = atoi(argv[++i]);
      if (a->repeats < 1 || a->repeats > 1000)
        return fprintf(stderr, "kiln bench gemm: --repeat takes 1 to 1000\n"), -1;
    } else
      return fprintf(stderr, "usage: kiln bench gemm [--sizes N,N...] [--backend "
                             "kiln,clblast,openblas] [--repeat R] [--json]\n"), -1;
  }
  if (a->use[1] && !HAVE_CLBLAST)
    return fprintf(stderr, "kiln bench gemm: this kiln was built without CLBlast\n"), -1;
  if (a->use[2] && !HAVE_OPENBLAS)
    return fprintf(stderr, "kiln bench gemm: this kiln was built without OpenBLAS "
                           "(Debian libopenblas-dev)\n"), -1;
  return 0;
}

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

/* One timed run of backend k; returns milliseconds, or -1 on failure. */
static double run_once(kiln_runtime *rt, int k, size_t n, const float *a, const float *b,
                       float *c, kiln_buffer *da, kiln_buffer *db, kiln_buffer *dc)
{
  double t0 = now_ms();
  if (k == 2) {
#if HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f,
                a, (int)n, b, (int)n, 0.0f, c, (int)n);
#endif
    return now_ms() - t0;
  }
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, n, n, n);
  d.backend = k == 0 ? KILN_BACKEND_KILN : KILN_BACKEND_CLBLAST;
  if (kiln_gemm(rt, &d, da, db, dc) != KILN_OK || kiln_finish(rt) != KILN_OK)
    return -1;
  return now_ms() - t0;
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

/* Measures the backends `which` selects (bit k: peer k) at size n. */
static int measure(kiln_runtime *rt, const bench_args *args, unsigned which, size_t n,
                   record *out, size_t *nrec)
{
  size_t nn = n * n;
  float *a = malloc(nn * 4), *b = malloc(nn * 4), *c = malloc(nn * 4), *ref = malloc(nn * 4);
  kiln_buffer *da = NULL, *db = NULL, *dc = NULL;
  int rc = 0;
  for (size_t i = 0; i < nn; i++) {
    a[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    b[i] = (float)((i * 104729) % 1000) / 500.0f - 1.0f;
  }
  reference(n, a, b, ref);
  if (kiln_buffer_create(rt, KILN_F32, nn, 0, &da) || kiln_buffer_create(rt, KILN_F32, nn, 0, &db) ||
      kiln_buffer_create(rt, KILN_F32, nn, 0, &dc) || kiln_buffer_write(da, 0, nn, a) ||
      kiln_buffer_write(db, 0, nn, b))
    rc = -1;
  for (int k = 0; k < 3 && rc == 0; k++) {
    if (!args->use[k] || !(which & (1u << k)))
      continue;
    fprintf(stderr, "  gemm %zu^3 %-8s warm-up and check...", n, peer_names[k]);
    double t = run_once(rt, k, n, a, b, c, da, db, dc);
    if (t >= 0 && k != 2 && kiln_buffer_read(dc, 0, nn, c) != KILN_OK)
      t = -1;
    double err = t < 0 ? 0 : check(n, ref, c);
    if (t < 0 || err > 1e-5) {
      fprintf(stderr, " FAILED (%s)\n", t < 0 ? kiln_last_error(rt) : "wrong result");
      rc = -1;
      break;
    }
    double *ms = calloc((size_t)args->repeats, sizeof *ms);
    for (int r = 0; r < args->repeats && rc == 0; r++)
      if ((ms[r] = run_once(rt, k, n, a, b, c, da, db, dc)) < 0)
        rc = -1;
    qsort(ms, (size_t)args->repeats, sizeof *ms, cmp_double);
    double med = ms[args->repeats / 2];
    free(ms);
    out[(*nrec)++] = (record){peer_names[k], n, med, 2.0 * (double)n * n * n / med / 1e6};
    fprintf(stderr, " %.1f GFLOP/s\n", out[*nrec - 1].gflops);
  }
  kiln_buffer_destroy(da);
  kiln_buffer_destroy(db);
  kiln_buffer_destroy(dc);
  free(a), free(b), free(c), free(ref);
  return rc;
}

static double find(const record *r, size_t nrec, size_t n, const char *backend)
{
  for (size_t i = 0; i < nrec; i++)
    if (r[i].n == n && strcmp(r[i].backend, backend) == 0)
      return r[i].gflops;
  return 0;
}

static void print_table(const bench_args *a, const record *r, size_t nrec)
{
  printf("%-6s", "size");
  for (int k = 0; k < 3; k++)
    if (a->use[k])
      printf("  %9s", peer_names[k]);
  printf("  %14s  %14s   (GFLOP/s, medians)\n", "kiln/openblas", "kiln/clblast");
  for (size_t s = 0; s < a->nsizes; s++) {
    size_t n = a->sizes[s];
    printf("%-6zu", n);
    for (int k = 0; k < 3; k++)
      if (a->use[k])
        printf("  %9.1f", find(r, nrec, n, peer_names[k]));
    double kl = find(r, nrec, n, "kiln"), ob = find(r, nrec, n, "openblas"),
           cb = find(r, nrec, n, "clblast");
    printf("  %13.2fx  %13.2fx\n", ob > 0 ? kl / ob : NAN, cb > 0 ? kl / cb : NAN);
  }
}

static int print_json(const record *r, size_t nrec)
{
#if HAVE_JSON_C
  json_object *all = json_object_new_array();
  for (size_t i = 0; i < nrec; i++) {
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu", r[i].n, r[i].n, r[i].n);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "op", json_object_new_string("gemm"));
    json_object_object_add(o, "backend", json_object_new_string(r[i].backend));
    json_object_object_add(o, "dtype", json_object_new_string("float32"));
    json_object_object_add(o, "shape", json_object_new_string(shape));
    json_object_object_add(o, "median_ms", json_object_new_double(r[i].median_ms));
    json_object_object_add(o, "gflops", json_object_new_double(r[i].gflops));
    json_object_object_add(o, "gbps", NULL);
    json_object_array_add(all, o);
  }
  puts(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY));
  json_object_put(all);
  return 0;
#else
  (void)r, (void)nrec;
  fprintf(stderr, "kiln bench: --json needs kiln built with json-c (libjson-c-dev)\n");
  return 1;
#endif
}

static int bench_gemm(int argc, char **argv)
{
  bench_args a;
  if (parse(&a, argc, argv) != 0)
    return 2;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(NULL, &rt) != KILN_OK) {
    fprintf(stderr, "kiln bench: %s\n", kiln_last_error(NULL));
    return 1;
  }
  fprintf(stderr, "kiln bench gemm on %s (float32, row-major, C = A B)\n",
          kiln_runtime_device(rt)->name);
  record r[MAX_RECORDS];
  size_t nrec = 0;
  int rc = 0;
  /* OpenBLAS last, after every device run: its worker threads spin for a
   * while after each call and would take the CPU from PoCL's. */
  for (size_t s = 0; s < a.nsizes && rc == 0; s++)
    rc = measure(rt, &a, 3, a.sizes[s], r, &nrec);
  for (size_t s = 0; s < a.nsizes && rc == 0; s++)
    rc = measure(rt, &a, 4, a.sizes[s], r, &nrec);
  if (rc == 0)
    rc = a.json ? print_json(r, nrec) : (print_table(&a, r, nrec), 0);
  kiln_runtime_destroy(rt);
  return rc ? 1 : 0;
}

int kiln_cmd_bench(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "gemm") == 0)
    return bench_gemm(argc - 1, argv + 1);
  fprintf(stderr, "usage: kiln bench gemm [--sizes N,N...] [--backend kiln,clblast,"
                  "openblas] [--repeat R] [--json]\n");
  return 2;
}
