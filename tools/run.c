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
#include <assert.h>
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

int run_parse(const cli_command *c, void *args, int argc, char **argv)
{
  who = c->name;
  return kiln_cli_parse(c, args, argc, argv, NULL);
}

const char *const run_activations[] = {"none", "relu", "gelu", "sigmoid", "tanh", NULL};

kiln_backend run_backend_named(const char *name)
{
  kiln_backend be = KILN_BACKEND_AUTO;
  while (be <= KILN_BACKEND_VKFFT && strcmp(kiln_backend_name(be), name) != 0)
    be++;
  assert(be <= KILN_BACKEND_VKFFT && "a --backend choice names a backend");
  return be;
}

/* ---- arrays and the device ------------------------------------------------ */

int run_load(const char *path, kiln_array *x)
{
  /* FILE.npz:NAME, or FILE.npz for its only array */
  const char *npz = strstr(path, ".npz:");
  size_t len = strlen(path);
  if (npz || (len > 4 && strcmp(path + len - 4, ".npz") == 0)) {
    char *file = malloc(len + 1);
    if (!file)
      return run_say("out of host memory"), -1;
    memcpy(file, path, len + 1);
    if (npz)
      file[npz - path + 4] = '\0';
    int rc = run_load_npz(file, npz ? npz + 5 : NULL, x);
    free(file);
    return rc;
  }
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

int run_group_start(const char *sel, kiln_group **g)
{
  *g = NULL;
  if (!sel)
    return 0;
  kiln_options o;
  kiln_options_init(&o);
  o.devices = sel;
  if (kiln_group_create(&o, g) != KILN_OK)
    return run_say("%s", kiln_last_error(NULL)), -1;
  return 0;
}

void run_group_report(const kiln_group *g)
{
  if (!g)
    return;
  printf("group    %zu devices: units, share of the work, chunks, seconds in them\n",
         kiln_group_size(g));
  for (size_t i = 0; i < kiln_group_size(g); i++) {
    const kiln_device_info *d = kiln_runtime_device(kiln_group_runtime(g, i));
    kiln_group_usage u;
    kiln_group_usage_init(&u);
    kiln_group_stats(g, i, &u);
    printf("  %u:%-3u %-40.40s %8llu %6.1f%% %5llu %8.3f s%s\n", d->platform_index,
           d->device_index, d->name, (unsigned long long)u.units, 100 * u.share,
           (unsigned long long)u.chunks, u.seconds, u.failures ? "  failed" : "");
  }
  char why[4096];
  printf("%s", kiln_group_diagnostics(g, why, sizeof why));
}

const char *run_device_name(const kiln_runtime *rt, const kiln_group *g)
{
  return g ? "a group (below)" : kiln_runtime_device(rt)->name;
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

int run_to_type(kiln_runtime *rt, kiln_array *a, kiln_dtype t)
{
  if (a->dtype == t)
    return 0;
  kiln_array conv = *a;
  conv.dtype = t;
  if (run_alloc_result(&conv) != 0)
    return -1;
  kiln_buffer *buf = NULL;
  kiln_status st = run_upload(rt, a, t, &buf);
  if (st == KILN_OK)
    st = kiln_buffer_read(buf, 0, a->count, conv.data);
  kiln_buffer_destroy(buf);
  if (st != KILN_OK) {
    free(conv.data);
    return run_say("%s", kiln_last_error(rt)), -1;
  }
  kiln_array_free(a);
  *a = conv;
  return 0;
}

int run_write(const kiln_runtime *rt, const kiln_group *g, kiln_status st,
              const char *path, const kiln_array *y)
{
  if (st != KILN_OK) /* a group's calls say why for the whole process */
    return run_say("%s", kiln_last_error(g ? NULL : rt)), -1;
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

static const cli_command *const ops[] = {
  &run_gemm_command,
  &run_reduce_command,
  &run_conv2d_command,
  &run_fft_command,
};

static const cli_command *op_at(size_t i)
{
  return i < sizeof ops / sizeof ops[0] ? ops[i] : NULL;
}

typedef struct run_args {
  const char *op;
} run_args;

static const cli_option run_rows[] = {
  {.name = "OPERATION",
   CLI_TEXT_AT(run_args, op),
   .help = "gemm, reduce, conv2d or fft: the commands below",
   .required = 1},
};

static int run_cmd(int argc, char **argv);

const cli_command kiln_run_command = {
  .name = "kiln run",
  .summary = "one operation on .npy files, with the device, the backend and the time",
  .usage = "kiln run OPERATION ARRAYS... -o OUT.npy [options]",
  CLI_ROWS(run_rows),
  .about = "Each reads its arrays, runs on the picked device through kiln's _host\n"
           "calls (so arrays larger than the device run in pieces), writes the\n"
           "result, and prints the device, the backend and the time. A failure is\n"
           "one line on stderr, exit 1, and no output file." RUN_ARRAYS_NOTE,
  .example = "kiln run gemm a.npy b.npy -o c.npy",
  .sub = op_at,
  .run = run_cmd,
};

/* Only when argv[1] names no operation (kiln_cli_dispatch() runs those). */
static int run_cmd(int argc, char **argv)
{
  run_args a = {0};
  int rc = kiln_cli_parse(&kiln_run_command, &a, argc, argv, NULL);
  return rc >= 0 ? rc
                 : kiln_cli_usage_error(&kiln_run_command, NULL,
                                        "unknown operation '%s'; expected gemm, reduce, "
                                        "conv2d or fft",
                                        a.op);
}
