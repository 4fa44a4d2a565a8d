/*
 * tune_clblast_check.c — `kiln tune --clblast-check DEVICE DIR KERNEL PREC
 * NAME=VALUE...`, the process in which `kiln tune --clblast` checks a
 * tuner's candidate before keeping it (internal; not in --help).
 *
 * Why: CLBlast's tuners check a configuration at the one size they time,
 * on the kernel alone, and a configuration right there can be wrong in
 * CLBlast's GEMM at others. On PoCL here the xgemm tuner's fastest at
 * 512^3 (GEMMK=1 KREG=2 KWG=1 KWI=1 MDIMA=16 MDIMC=16 MWG=128 NDIMB=4
 * NDIMC=4 NWG=16 VWM=8 VWN=1) gives wrong products at 768^3 and 1024^3
 * (and at 1024 x 512 x 512: the tuner's 512^3 was right).
 * So each candidate runs CLBlast's GEMM (through kiln_gemm) at the shapes
 * below, against a reference in double, before it is kept.
 *
 * A process of its own, as CLBlast keeps parameters for the whole process
 * and kiln cannot take a bad set back from it. The candidate goes to
 * CLBlast as kiln_tuning_set_clblast() gives it, into a record in DIR (a
 * scratch folder), with GemmRoutine's XGEMM_MIN_INDIRECT_SIZE set so that
 * every shape runs the kernel checked: 1 for Xgemm, 4096 (4096^3 is above
 * any shape here) for XgemmDirect. Exit status 0 when every shape is
 * right, 1 when not; either way one line in DIR/verdict says what.
 *
 * With `time=N,...` before the parameters (none: CLBlast's own), it times
 * CLBlast's GEMM at those sizes instead, as `kiln bench gemm` runs it
 * (CLBlast's routine picks its kernel, no XGEMM_MIN_INDIRECT_SIZE), and
 * writes one line "N MS" a size, the median of its runs, into DIR/times:
 * the rematch of tune_clblast_rematch.c runs it for each side in turn.
 */
#define KILN_EXPERIMENTAL
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kiln/kiln.h"

/* Away from the sizes the tuners checked (512^3 and 256^3): a larger one,
 * odd ones that CLBlast pads, one with A transposed, a small one. */
static const struct {
  size_t m, n, k;
  int trans_a;
} shapes[] = {
  {1024, 1024, 1024, 0}, {1000, 300, 700, 0}, {300, 1000, 700, 1}, {67, 45, 129, 0}};

/* A buffer of dtype holding x[0..n), through a float32 one and
 * kiln_convert(); NULL on failure. */
static kiln_buffer *upload(kiln_runtime *rt, kiln_dtype dtype, const float *x, size_t n)
{
  kiln_buffer *f = NULL, *out = NULL;
  if (kiln_buffer_create(rt, KILN_F32, n, 0, &f) != KILN_OK ||
      kiln_buffer_write(f, 0, n, x) != KILN_OK)
    return kiln_buffer_destroy(f), NULL;
  if (dtype == KILN_F32)
    return f;
  if (kiln_buffer_create(rt, dtype, n, 0, &out) != KILN_OK ||
      kiln_convert(f, out) != KILN_OK)
    kiln_buffer_destroy(out), out = NULL;
  kiln_buffer_destroy(f);
  return out;
}

/* c (dtype) back as float32 into x[0..n): 0, or -1. */
static int download(kiln_runtime *rt, kiln_buffer *c, kiln_dtype dtype, float *x,
                    size_t n)
{
  kiln_buffer *f = c;
  int ok = dtype == KILN_F32 || (kiln_buffer_create(rt, KILN_F32, n, 0, &f) == KILN_OK &&
                                 kiln_convert(c, f) == KILN_OK);
  ok = ok && kiln_buffer_read(f, 0, n, x) == KILN_OK;
  if (f != c)
    kiln_buffer_destroy(f);
  return ok ? 0 : -1;
}

/* Whole numbers from -2 to 2: their products and sums are exact in float
 * and double, and the bound below covers half's rounding. */
static void fill(float *x, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float)((i * 2654435761u + seed) % 5) - 2.0f;
}

/* The rows checked: every seventh, and the last. */
static size_t next_row(size_t i, size_t m)
{
  return i + 7 < m ? i + 7 : i + 1 < m ? m - 1 : m;
}

/* Shape s in CLBlast's GEMM against double, on the rows next_row() picks:
 * 0, or -1 with what was wrong in why. */
static int check_shape(kiln_runtime *rt, kiln_dtype dtype, size_t s, char *why,
                       size_t size)
{
  size_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
  float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b),
        *c = malloc(m * n * sizeof *c);
  kiln_buffer *ba = NULL, *bb = NULL, *bc = NULL;
  int rc = -1;
  snprintf(why, size, "%zux%zux%zu: out of memory", m, n, k);
  if (a && b && c) {
    fill(a, m * k, 1);
    fill(b, k * n, 2);
    ba = upload(rt, dtype, a, m * k);
    bb = upload(rt, dtype, b, k * n);
    kiln_buffer_create(rt, dtype, m * n, 0, &bc);
  }
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, dtype, m, n, k);
  d.trans_a = shapes[s].trans_a ? KILN_TRANS : KILN_NO_TRANS;
  d.backend = KILN_BACKEND_CLBLAST;
  kiln_status st =
    ba && bb && bc ? kiln_gemm(rt, &d, ba, bb, bc) : KILN_ERR_OUT_OF_HOST_MEMORY;
  if (st == KILN_OK && download(rt, bc, dtype, c, m * n) == 0)
    rc = 0;
  else
    snprintf(why, size, "%zux%zux%zu: %s", m, n, k, kiln_last_error(rt));
  double eps = dtype == KILN_F64 ? 0x1p-53 : dtype == KILN_F16 ? 0x1p-11 : 0x1p-24;
  size_t wrong = 0, first = 0;
  for (size_t i = 0; rc == 0 && i < m; i = next_row(i, m))
    for (size_t j = 0; j < n; j++) {
      double want = 0, mag = 0;
      for (size_t p = 0; p < k; p++) {
        double x = shapes[s].trans_a ? a[p * m + i] : a[i * k + p];
        want += x * b[p * n + j];
        mag += fabs(x * b[p * n + j]);
      }
      if (fabs(c[i * n + j] - want) > (double)(k + 1) * eps * mag && !wrong++)
        first = i * n + j;
    }
  if (wrong) {
    snprintf(why, size, "%zux%zux%zu%s: %zu wrong, C[%zu,%zu] = %g", m, n, k,
             shapes[s].trans_a ? " (A transposed)" : "", wrong, first / n, first % n,
             c[first]);
    rc = -1;
  }
  kiln_buffer_destroy(ba);
  kiln_buffer_destroy(bb);
  kiln_buffer_destroy(bc);
  free(a), free(b), free(c);
  return rc;
}

/* The verdict, one line, in dir/verdict for the parent to show: this
 * process's stdout and stderr go to a log, where the driver's and
 * CLBlast's own messages land too: prefix and why, or (why NULL) right. */
static void verdict(const char *dir, const char *prefix, const char *why)
{
  char path[4096];
  FILE *f = snprintf(path, sizeof path, "%s/verdict", dir) < (int)sizeof path
              ? fopen(path, "w")
              : NULL;
  if (!f)
    return;
  if (why)
    fprintf(f, "%s%.*s\n", prefix, (int)strcspn(why, "\n"), why);
  else
    fprintf(f, "right at %zu shapes\n", sizeof shapes / sizeof shapes[0]);
  fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* CLBlast's GEMM at n^3: the median of its timed runs after a warm-up, in
 * milliseconds, into *ms: 0, or -1 with why. Five runs, fewer once they
 * have taken two seconds (a CPU at the GPU's sizes). */
static int time_size(kiln_runtime *rt, kiln_dtype dtype, size_t n, double *ms, char *why,
                     size_t size)
{
  float *x = malloc(n * n * sizeof *x);
  kiln_buffer *a = NULL, *b = NULL, *c = NULL;
  if (x) {
    fill(x, n * n, 3);
    a = upload(rt, dtype, x, n * n);
    b = upload(rt, dtype, x, n * n);
    kiln_buffer_create(rt, dtype, n * n, 0, &c);
  }
  free(x);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, dtype, n, n, n);
  d.backend = KILN_BACKEND_CLBLAST;
  double t[6], spent = 0;
  int runs = 0;
  kiln_status st = a && b && c ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
  for (int r = 0; st == KILN_OK && r < 6 && (r < 4 || spent < 2000); r++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = kiln_gemm(rt, &d, a, b, c);
    if (st == KILN_OK)
      st = kiln_finish(rt);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (r > 0) /* r == 0 was the warm-up (and CLBlast's build) */
      t[runs++] = dt, spent += dt;
  }
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(c);
  if (st != KILN_OK || runs == 0)
    return snprintf(why, size, "%zu^3: %s", n, kiln_last_error(rt)), -1;
  qsort(t, (size_t)runs, sizeof *t, cmp_double);
  *ms = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
  return 0;
}

/* Time mode: CLBlast's GEMM at each of the sizes in list ("256,1024"),
 * "N MS" lines into dir/times: 0, or -1 with why. */
static int time_sizes(kiln_runtime *rt, kiln_dtype dtype, const char *list,
                      const char *dir, char *why, size_t size)
{
  char path[4096];
  FILE *f = snprintf(path, sizeof path, "%s/times", dir) < (int)sizeof path
              ? fopen(path, "w")
              : NULL;
  if (!f)
    return snprintf(why, size, "cannot write %.400s/times", dir), -1;
  int rc = 0;
  for (const char *p = list; rc == 0 && *p; p += *p == ',') {
    char *end;
    unsigned long n = strtoul(p, &end, 10);
    double ms = 0;
    if (end == p || n == 0 || n > 65536)
      rc = -1, snprintf(why, size, "time=%s: not a list of sizes", list);
    else if ((rc = time_size(rt, dtype, n, &ms, why, size)) == 0)
      fprintf(f, "%lu %.6f\n", n, ms);
    p = end;
  }
  return fclose(f) != 0 ? -1 : rc;
}

int kiln_cli_clblast_check(int argc, char **argv)
{
  const char *timing = argc > 4 && strncmp(argv[4], "time=", 5) == 0 ? argv[4] + 5 : NULL;
  if (timing) { /* the sizes go before the parameters */
    argv[4] = argv[3], argv[3] = argv[2], argv[2] = argv[1], argv[1] = argv[0];
    argv++, argc--;
  }
  if (argc < 4 + !timing || argc - 4 > 32)
    return fprintf(stderr,
                   "kiln tune --clblast-check: DEVICE DIR KERNEL PREC NAME=VALUE...\n"),
           2;
  static const struct {
    const char *tag;
    kiln_dtype dtype;
  } precs[] = {{"f16", KILN_F16}, {"f32", KILN_F32}, {"f64", KILN_F64}};
  size_t pi = 0;
  while (pi < 3 && strcmp(argv[3], precs[pi].tag) != 0)
    pi++;
  if (pi == 3)
    return fprintf(stderr, "kiln tune --clblast-check: precision '%s'?\n", argv[3]), 2;
  const char *names[32];
  size_t values[32], n = 0;
  char copy[32][64];
  for (int i = 4; i < argc; i++, n++) {
    char *eq = strchr(argv[i], '=');
    if (!eq || (size_t)(eq - argv[i]) >= sizeof copy[0])
      return fprintf(stderr, "kiln tune --clblast-check: '%s'?\n", argv[i]), 2;
    snprintf(copy[n], sizeof copy[n], "%.*s", (int)(eq - argv[i]), argv[i]);
    names[n] = copy[n];
    values[n] = strtoul(eq + 1, NULL, 10);
  }
  kiln_options o;
  kiln_options_init(&o);
  o.device = argv[0];
  o.cache_dir = argv[1];
  kiln_runtime *rt = NULL;
  const char *routine[] = {"XGEMM_MIN_INDIRECT_SIZE"};
  const size_t indirect[] = {strcmp(argv[2], "Xgemm") == 0 ? 1 : 4096};
  kiln_dtype dtype = precs[pi].dtype;
  char why[512] = "";
  int rc =
    kiln_runtime_create(&o, &rt) != KILN_OK ||
    (n && kiln_tuning_set_clblast(rt, argv[2], dtype, n, names, values) != KILN_OK) ||
    (!timing &&
     kiln_tuning_set_clblast(rt, "GemmRoutine", dtype, 1, routine, indirect) != KILN_OK);
  if (rc)
    snprintf(why, sizeof why, "%s", kiln_last_error(rt));
  if (timing) {
    rc = rc || time_sizes(rt, dtype, timing, argv[1], why, sizeof why) != 0;
    if (rc)
      verdict(argv[1], "failed: ", why);
    kiln_runtime_destroy(rt);
    return rc;
  }
  for (size_t s = 0; !rc && s < sizeof shapes / sizeof shapes[0]; s++)
    rc = check_shape(rt, dtype, s, why, sizeof why) != 0;
  verdict(argv[1], "wrong: ", rc ? why : NULL);
  kiln_runtime_destroy(rt);
  return rc;
}
