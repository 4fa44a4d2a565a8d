/*
 * tune.c — `kiln tune`: measure the parameters of kiln's kernels on a
 * device and keep them as its tuning record (kiln_tune()); show, clear,
 * export and import records. Progress goes to stderr, one line a
 * candidate; what changed goes to stdout. Ctrl-C stops the search and keeps
 * what was measured.
 */
/* kiln_tune() and the tuning records are experimental API. */
#define KILN_EXPERIMENTAL
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kiln/kiln.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
  (void)sig;
  interrupted = 1;
}

static int usage(FILE *out)
{
  fprintf(out,
          "usage: kiln tune [--device SEL | --all] [--only gemm,reduce,fft,conv]\n"
          "                 [--budget SECONDS]\n"
          "       kiln tune [--device SEL | --all] --show | --clear\n"
          "       kiln tune [--device SEL] --export FILE | --import FILE\n"
          "       kiln tune [--device SEL | --all] --clblast [--tuners DIR]\n"
          "\n"
          "Searches the parameters of kiln's own kernels (GEMM's tiles and shape\n"
          "for f32, f16 storage and f64; the reductions; the FFT passes; the\n"
          "convolution's direct kernel and im2col step) on the picked device,\n"
          "checks each candidate against a CPU reference, times it,\n"
          "and keeps the best as the device's tuning record beside the kernel\n"
          "cache. Every later runtime on that device and driver applies it.\n"
          "\n"
          "  --device SEL      a device as KILN_DEVICE selects (default: kiln's pick)\n"
          "  --all             every visible device but simulators, in turn\n"
          "  --only LIST       gemm, reduce, fft, conv, comma-separated (default: all)\n"
          "  --budget SECONDS  for the whole search of each device (default 240)\n"
          "  --show            print the parameters in use, as a record\n"
          "  --clear           delete the device's record: the rules apply again\n"
          "  --export FILE     write the device's record to FILE (- for stdout)\n"
          "  --import FILE     check FILE's record against the device and keep it\n"
          "  --clblast         run CLBlast's GEMM tuners (clblast-utils) for the\n"
          "                    device, a cut-down search of minutes, check their\n"
          "                    fastest results in CLBlast's GEMM at other sizes,\n"
          "                    and keep the fastest right one in the record: every\n"
          "                    later runtime hands it to CLBlast\n"
          "  --tuners DIR      the folder of CLBlast's tuners (default: PATH)\n"
          "\n"
          "example: kiln tune --only gemm --budget 60\n");
  return out == stdout ? 0 : 2;
}

static double ms(double s)
{
  return s * 1e3;
}

static int progress(const kiln_tune_step *s, void *user)
{
  (void)user;
  if (s->kernel_done && s->best_seconds == 0) {
    printf("%-9s no candidate ran here (see the lines above); the parameters in use "
           "stay\n",
           s->kernel);
  } else if (s->kernel_done) {
    double gain = s->best_seconds > 0 ? s->baseline_seconds / s->best_seconds : 1;
    printf("%-9s %s: %.3f ms -> %s: %.3f ms (%.2fx)\n", s->kernel,
           gain > 1 ? "was" : "kept", ms(s->baseline_seconds), s->best,
           ms(s->best_seconds), gain);
    fflush(stdout);
  } else if (s->skipped) {
    fprintf(stderr, "[%zu/%zu] %-9s %-28s skipped: %s\n", s->index, s->count, s->kernel,
            s->candidate, s->skipped);
  } else {
    fprintf(stderr, "[%zu/%zu] %-9s %-28s %9.3f ms  best %.3f ms  %.0f s left\n",
            s->index, s->count, s->kernel, s->candidate, ms(s->seconds),
            ms(s->best_seconds), s->left > 0 ? s->left : 0);
  }
  return interrupted;
}

typedef struct job {
  enum { TUNE, SHOW, CLEAR, EXPORT, IMPORT, CLBLAST } action;
  const char *file; /* --export, --import; --tuners DIR for CLBLAST */
  kiln_tune_options opts;
} job;

static int one_device(const job *j, const char *sel)
{
  kiln_options o;
  kiln_options_init(&o);
  o.device = sel;
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(&o, &rt);
  if (st != KILN_OK)
    return kiln_cli_fail("tune", st, NULL);
  const kiln_device_info *d = kiln_runtime_device(rt);
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  kiln_tuning_stats(rt, &u);
  char *text = NULL;
  if (j->action != SHOW && j->action != EXPORT)
    fprintf(stderr, "kiln tune: %s (%s), record %s\n", d->name, d->driver_version,
            u.path ? u.path : "(none: the kernel cache is off)");
  switch (j->action) {
  case TUNE:
    st = kiln_tune(rt, &j->opts);
    if (interrupted)
      fprintf(stderr, "kiln tune: stopped; what was measured is kept\n");
    break;
  case CLBLAST: {
    int rc = kiln_cli_tune_clblast(rt, j->file, &interrupted);
    if (interrupted)
      fprintf(stderr, "kiln tune: stopped; what was measured is kept\n");
    kiln_cli_runtime_destroy(rt);
    return rc;
  }
  case SHOW:
  case EXPORT:
    if ((st = kiln_tuning_get(rt, &text)) == KILN_OK) {
      FILE *f =
        j->action == SHOW || strcmp(j->file, "-") == 0 ? stdout : fopen(j->file, "w");
      if (!f || fprintf(f, "%s\n", text) < 0 || (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, "kiln tune: cannot write %s\n", j->file);
        free(text);
        kiln_cli_runtime_destroy(rt);
        return 1;
      }
    }
    break;
  case CLEAR:
    if ((st = kiln_tuning_clear(rt)) == KILN_OK)
      printf("%s: %s; the rules' parameters apply\n", d->name,
             u.tuned ? "record deleted" : "no record applied");
    break;
  case IMPORT:
    if (!(text = kiln_cli_read_file(j->file))) {
      fprintf(stderr, "kiln tune: cannot read %s\n", j->file);
      kiln_cli_runtime_destroy(rt);
      return 1;
    }
    if ((st = kiln_tuning_set(rt, text)) == KILN_OK)
      printf("%s: record imported from %s\n", d->name, j->file);
    break;
  }
  free(text);
  int rc = st == KILN_OK ? 0 : kiln_cli_fail("tune", st, rt);
  kiln_cli_runtime_destroy(rt);
  return rc;
}

/* --only gemm,reduce,fft,conv */
static int parse_only(const char *list, unsigned *what)
{
  static const struct {
    const char *name;
    unsigned bit;
  } kinds[] = {{"gemm", KILN_TUNE_GEMM},
               {"reduce", KILN_TUNE_REDUCE},
               {"fft", KILN_TUNE_FFT},
               {"conv", KILN_TUNE_CONV}};
  *what = 0;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ","), i = 0;
    while (i < sizeof kinds / sizeof kinds[0] &&
           (strlen(kinds[i].name) != len || strncmp(p, kinds[i].name, len) != 0))
      i++;
    if (i == sizeof kinds / sizeof kinds[0])
      return -1;
    *what |= kinds[i].bit;
    p += len + (p[len] == ',');
  }
  return *what ? 0 : -1;
}

int kiln_cmd_tune(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "--clblast-check") == 0)
    return kiln_cli_clblast_check(argc - 2, argv + 2); /* tune_clblast.c's child */
  kiln_cli_pin_pocl();
  job j = {.action = TUNE};
  kiln_tune_options_init(&j.opts);
  j.opts.progress = progress;
  const char *device = NULL, *tuners = NULL;
  int all = 0, actions = 0, search = 0; /* search: --only or --budget given */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      return usage(stdout);
    if (strcmp(a, "--all") == 0) {
      all = 1;
    } else if (strcmp(a, "--show") == 0 || strcmp(a, "--clear") == 0) {
      j.action = a[2] == 's' ? SHOW : CLEAR;
      actions++;
    } else if (strcmp(a, "--clblast") == 0) {
      j.action = CLBLAST;
      actions++;
    } else if (!v && (strcmp(a, "--device") == 0 || strcmp(a, "--only") == 0 ||
                      strcmp(a, "--budget") == 0 || strcmp(a, "--export") == 0 ||
                      strcmp(a, "--import") == 0 || strcmp(a, "--tuners") == 0)) {
      fprintf(stderr, "kiln tune: %s needs a value; kiln tune --help\n", a);
      return 2;
    } else if (strcmp(a, "--device") == 0) {
      device = argv[++i];
    } else if (strcmp(a, "--only") == 0) {
      search = 1;
      if (parse_only(argv[++i], &j.opts.what) != 0) {
        fprintf(stderr,
                "kiln tune: --only '%s': expected gemm, reduce, fft or conv, "
                "comma-separated\n",
                argv[i]);
        return 2;
      }
    } else if (strcmp(a, "--budget") == 0) {
      search = 1;
      j.opts.budget = strtod(argv[++i], &end);
      if (*end || !(j.opts.budget > 0) || j.opts.budget > 1e6) {
        fprintf(stderr, "kiln tune: --budget '%s': expected seconds, more than 0\n",
                argv[i]);
        return 2;
      }
    } else if (strcmp(a, "--tuners") == 0) {
      tuners = argv[++i];
    } else if (strcmp(a, "--export") == 0 || strcmp(a, "--import") == 0) {
      j.action = a[2] == 'e' ? EXPORT : IMPORT;
      j.file = argv[++i];
      actions++;
    } else {
      fprintf(stderr, "kiln tune: unknown option '%s'\n", a);
      return usage(stderr);
    }
  }
  if (actions > 1 || (all && device) ||
      (all && (j.action == EXPORT || j.action == IMPORT))) {
    fprintf(stderr, "kiln tune: --show, --clear, --export and --import go alone, and "
                    "--all neither with --device nor with a file\n");
    return 2;
  }
  if ((j.action == CLBLAST && search) || (j.action != CLBLAST && tuners)) {
    fprintf(stderr, "kiln tune: %s\n",
            tuners ? "--tuners goes with --clblast"
                   : "--only and --budget are for kiln's own kernels, not --clblast "
                     "(whose search is fixed: kiln tune --help)");
    return 2;
  }
  if (j.action == CLBLAST)
    j.file = tuners;
  struct sigaction sa = {0};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process */
  sigaction(SIGINT, &sa, NULL);
  if (!all)
    return one_device(&j, device);
  /* Every visible device but simulators, by their index. */
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return kiln_cli_fail("tune", st, NULL);
  size_t n = kiln_runtime_device_count(rt);
  int *skip = calloc(n ? n : 1, sizeof *skip);
  for (size_t i = 0; skip && i < n; i++)
    skip[i] = kiln_runtime_device_at(rt, i)->is_simulator;
  kiln_cli_runtime_destroy(rt);
  int rc = skip ? 0 : 1;
  for (size_t i = 0; skip && i < n && !interrupted; i++) {
    char sel[24];
    snprintf(sel, sizeof sel, "%zu", i);
    if (!skip[i] && one_device(&j, sel) != 0)
      rc = 1;
  }
  free(skip);
  return rc;
}

void kiln_cli_print_tuning(FILE *out, kiln_runtime *rt)
{
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  if (kiln_tuning_stats(rt, &u) != KILN_OK)
    return;
  const char *ignored = strstr(kiln_runtime_diagnostics(rt), "tuning record ");
  if (u.tuned && u.clblast_applied)
    fprintf(out, "tuned: %s (CLBlast tuned too: %zu of its kernels)\n", u.path,
            u.clblast_applied);
  else if (u.tuned)
    fprintf(out, "tuned: %s\n", u.path);
  else if (ignored)
    fprintf(out, "not tuned: %.*s\n", (int)strcspn(ignored, "\n"), ignored);
  else
    fprintf(out,
            "not tuned: kiln's rules set the kernel parameters (kiln tune "
            "measures them%s)\n",
            u.path ? "" : "; records need the kernel cache, which is off");
}
