/*
 * run.c — `kiln run gemm|reduce|conv2d|fft`: one operation on .npy files,
 * with the device, the backend and the time on stdout. A failure is one
 * line on stderr, a non-zero exit, and no output file.
 *
 * This file holds what the operations share (see run.h) and the table that
 * picks one: `kiln run gemm` is in run_gemm.c, `kiln run reduce` in
 * run_reduce.c, `kiln run conv2d` in run_conv.c, `kiln run fft` in
 * run_fft.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "run.h"

double run_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The command running, for messages: "kiln run gemm", "kiln run reduce". */
static const char *who = "kiln run";

int run_say(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (msg) { /* one line, whatever the library's message holds */
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  kiln_cli_say(who, msg ? msg : fmt);
  free(msg);
  return 1;
}

int run_usage(const char *usage)
{
  /* One line: the usage texts wrap for the source, not for the terminal. */
  for (const char *p = usage; *p; p++) {
    if (*p == '\n') {
      while (p[1] == ' ')
        p++;
      fputc(' ', stderr);
    } else {
      fputc(*p, stderr);
    }
  }
  fputc('\n', stderr);
  return -1;
}

int run_option_value(const char *o, const char *v, const char *const *known, int n)
{
  if (run_parse_enum(o, known, n) < 0)
    return run_say("unknown option '%s'", o), -1;
  if (!v)
    return run_say("%s needs a value", o), -1;
  return 0;
}

/* ---- options -------------------------------------------------------------- */

int run_parse_args(const run_cli *cli, int argc, char **argv)
{
  int got = 0;
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1]) {
      int used = cli->option(cli->ctx, a, i + 1 < argc ? argv[i + 1] : NULL);
      if (used < 0)
        return -1;
      i += used;
    } else if (got < 2 && cli->operands[got]) {
      *cli->operands[got++] = a;
      i++;
    } else {
      return run_say("one %s too many: '%s'", cli->noun, a), -1;
    }
  }
  return 0;
}

int run_parse_number(const char *s, double *v)
{
  char *end;
  *v = strtod(s, &end);
  return *s && !*end && isfinite(*v) ? 0 : -1;
}

int run_parse_enum(const char *s, const char *const *names, int n)
{
  for (int i = 0; i < n; i++)
    if (names[i] && strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

int run_parse_counts(const char *o, const char *s, size_t least, int most,
                     const char *takes, size_t *v)
{
  int n = 0;
  const char *at = s;
  while (n < most) {
    char *end;
    if (*at < '0' || *at > '9')
      break;
    unsigned long long x = strtoull(at, &end, 10);
    if (x < least || x >= ((size_t)1 << 31))
      break;
    v[n++] = (size_t)x;
    if (*end == '\0') {
      if (n == 1 || n == most)
        return n;
      break;
    }
    if (*end != ',')
      break;
    at = end + 1;
  }
  return run_say("%s '%s': expected %s", o, s, takes), -1;
}

int run_parse_backend(const char *v, kiln_backend *be, const kiln_backend *takes, int n)
{
  char names[96];
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(v, kiln_backend_name(takes[i])) == 0) {
      *be = takes[i];
      return 0;
    }
    at += (size_t)snprintf(names + at, sizeof names - at, "%s%s",
                           i == 0       ? ""
                           : i == n - 1 ? " or "
                                        : ", ",
                           kiln_backend_name(takes[i]));
  }
  return run_say("--backend '%s': expected %s", v, names), -1;
}

int run_parse_blas_backend(const char *v, kiln_backend *be)
{
  static const kiln_backend takes[] = {KILN_BACKEND_AUTO, KILN_BACKEND_KILN,
                                       KILN_BACKEND_CLBLAST};
  return run_parse_backend(v, be, takes, 3);
}

/* ---- arrays and the device ------------------------------------------------ */

int run_load(const char *path, kiln_array *x)
{
  if (kiln_npy_load(path, x) != KILN_OK || kiln_array_to_c_order(x) != KILN_OK)
    return run_say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

int run_alloc_result(kiln_array *y)
{
  if (!(y->data = malloc(y->count * kiln_dtype_size(y->dtype))))
    return run_say("out of host memory for the result (%zu elements)", y->count), -1;
  return 0;
}

int run_start(kiln_runtime **rt)
{
  if (kiln_runtime_create(NULL, rt) != KILN_OK)
    return run_say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

kiln_status run_upload(kiln_runtime *rt, const kiln_array *x, kiln_dtype dtype,
                       kiln_buffer **out)
{
  kiln_buffer *raw = NULL;
  size_t n = x->count ? x->count : 1;
  if (x->dtype == dtype) {
    kiln_status st = kiln_buffer_create(rt, dtype, n, 0, out);
    return st == KILN_OK ? kiln_buffer_write(*out, 0, x->count, x->data) : st;
  }
  kiln_status st = kiln_buffer_create(rt, x->dtype, n, 0, &raw);
  if (st == KILN_OK)
    st = kiln_buffer_write(raw, 0, x->count, x->data);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, dtype, n, 0, out);
  if (st == KILN_OK)
    st = kiln_convert(raw, *out);
  kiln_buffer_destroy(raw);
  return st;
}

int run_write(const kiln_runtime *rt, kiln_status st, const char *path,
              const kiln_array *y)
{
  if (st != KILN_OK)
    return run_say("%s", kiln_last_error(rt)), -1;
  if (kiln_npy_save(path, y) != KILN_OK)
    return run_say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

/* ---- the report ----------------------------------------------------------- */

void run_shape_text(char *buf, size_t size, unsigned ndim, const size_t *shape)
{
  size_t at = (size_t)snprintf(buf, size, "(");
  for (unsigned i = 0; i < ndim && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%zu", i ? ", " : "", shape[i]);
  if (at < size)
    snprintf(buf + at, size - at, ndim == 1 ? ",)" : ")");
}

const char *run_backend_label(kiln_backend be)
{
  return be == KILN_BACKEND_AUTO ? "auto (kiln's rules)" : kiln_backend_name(be);
}

/* ---- kiln run ------------------------------------------------------------- */

static const struct run_op {
  const char *name, *who;
  int (*run)(int argc, char **argv);
} ops[] = {
  {"gemm", "kiln run gemm", run_gemm},
  {"reduce", "kiln run reduce", run_reduce},
  {"conv2d", "kiln run conv2d", run_conv2d},
  {"fft", "kiln run fft", run_fft},
};

int kiln_cmd_run(int argc, char **argv)
{
  for (size_t i = 0; argc >= 2 && i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(argv[1], ops[i].name) == 0) {
      who = ops[i].who;
      return ops[i].run(argc - 1, argv + 1);
    }
  if (argc < 2)
    fprintf(stderr,
            "usage: kiln run gemm|reduce|conv2d|fft FILES... -o OUT.npy [options]; "
            "kiln help shows each\n");
  else
    fprintf(stderr,
            "kiln run: unknown operation '%s'; expected gemm, reduce, conv2d or "
            "fft\n",
            argv[1]);
  return 2;
}
