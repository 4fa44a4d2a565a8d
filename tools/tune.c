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
  const char *file;  /* --export, --import; --tuners DIR for CLBLAST */
  const char *times; /* --rematch-times FILE for CLBLAST */
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
  char *text = NULL, why[512];
  if (j->action != SHOW && j->action != EXPORT)
    fprintf(stderr, "kiln tune: %s (%s), record %s%s%s\n", d->name, d->driver_version,
            u.path ? u.path : "(none: the kernel cache is off: ",
            u.path ? "" : kiln_cli_cache_off_why(rt, why, sizeof why), u.path ? "" : ")");
  switch (j->action) {
  case TUNE:
    st = kiln_tune(rt, &j->opts);
    if (interrupted)
      fprintf(stderr, "kiln tune: stopped; what was measured is kept\n");
    break;
  case CLBLAST: {
    int rc = kiln_cli_tune_clblast(rt, j->file, j->times, &interrupted);
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

typedef struct tune_args {
  const char *device, *export_file, *import_file, *tuners, *times;
  int all, show, clear, clblast, check; /* check: argv's index after --clblast-check */
  unsigned only;
  double budget;
} tune_args;

/* --only's choices are kiln_tune_what's bits, in order. */
static const char *const tune_kernels[] = {"gemm", "reduce", "fft", "conv", NULL};
_Static_assert(KILN_TUNE_GEMM == 1 && KILN_TUNE_REDUCE == 2 && KILN_TUNE_FFT == 4 &&
                 KILN_TUNE_CONV == 8,
               "--only's bits are kiln_tune_what's");

static const cli_option tune_rows[] = {
  {.name = "--device",
   CLI_TEXT_AT(tune_args, device),
   .value = "SEL",
   .help = "a device, as KILN_DEVICE selects",
   .def_text = "kiln's pick"},
  {.name = "--all",
   CLI_FLAG_AT(tune_args, all),
   .help = "every visible device but simulators, in turn"},
  {.name = "--only",
   CLI_CHOICES_AT(tune_args, only),
   .help = "the kernels to measure",
   .def = "gemm,reduce,fft,conv",
   .choices = tune_kernels},
  {.name = "--budget",
   CLI_NUMBER_AT(tune_args, budget),
   .value = "SECONDS",
   .help = "for the whole search of each device",
   .def = "240",
   .min = 1,
   .max = 1e6},
  {.name = "--show",
   CLI_FLAG_AT(tune_args, show),
   .help = "print the parameters in use, as a record"},
  {.name = "--clear",
   CLI_FLAG_AT(tune_args, clear),
   .help = "delete the device's record: the rules apply again"},
  {.name = "--export",
   CLI_TEXT_AT(tune_args, export_file),
   .value = "FILE",
   .help = "write the device's record to FILE (- for stdout)",
   .def_text = "none"},
  {.name = "--import",
   CLI_TEXT_AT(tune_args, import_file),
   .value = "FILE",
   .help = "check FILE's record against the device and keep it",
   .def_text = "none"},
  {.name = "--clblast",
   CLI_FLAG_AT(tune_args, clblast),
   .help = "run CLBlast's GEMM tuners (clblast-utils) for the device, a cut-down "
           "search of minutes, check their fastest results in CLBlast's GEMM at "
           "other sizes, rematch the fastest right one against CLBlast's own "
           "parameters at the device's bench sizes, and keep it in the record where "
           "it is faster and nowhere slower: every later runtime hands it to CLBlast"},
  {.name = "--tuners",
   CLI_TEXT_AT(tune_args, tuners),
   .value = "DIR",
   .help = "with --clblast: the folder of CLBlast's tuners",
   .def_text = "PATH"},
  {.name = "--rematch-times",
   CLI_TEXT_AT(tune_args, times),
   .value = "FILE",
   .help = "with --clblast, for tests: the rematch's sizes from FILE, one a line, each "
           "alone (timed) or with CLBlast's own and the tuned time in ms (taken as "
           "measured)",
   .def_text = "the device's bench sizes, timed"},
  {.name = "--clblast-check",
   CLI_REST_AT(tune_args, check),
   .value = "DEVICE DIR KERNEL PREC [time=N,...] NAME=VALUE...",
   .help = "internal: the process that --clblast starts to check one candidate in "
           "CLBlast's GEMM (or time it, with time=); exits 0 when its products are "
           "right"},
};

static int run_tune(int argc, char **argv);

const cli_command kiln_tune_command = {
  .name = "kiln tune",
  .summary = "measure kiln's kernel parameters on a device and keep them as its "
             "tuning record",
  .usage = "kiln tune [--device SEL | --all] [--only LIST] [--budget SECONDS]\n"
           "       kiln tune [--device SEL | --all] --show | --clear\n"
           "       kiln tune [--device SEL] --export FILE | --import FILE\n"
           "       kiln tune [--device SEL | --all] --clblast [--tuners DIR]",
  CLI_ROWS(tune_rows),
  .about = "Searches the parameters of kiln's own kernels (GEMM's tiles and shape for\n"
           "f32, f16 storage and f64; the reductions; the FFT passes; the convolution's\n"
           "direct kernel and im2col step) on the device, checks each candidate\n"
           "against a CPU reference, times it, and keeps the best as the device's\n"
           "tuning record beside the kernel cache. Every later runtime on that device\n"
           "and driver applies it. Progress goes to stderr, what changed to stdout;\n"
           "Ctrl-C stops the search and keeps what was measured.",
  .example = "kiln tune --only gemm --budget 60",
  .run = run_tune,
};

static int run_tune(int argc, char **argv)
{
  const cli_command *c = &kiln_tune_command;
  tune_args a = {0};
  uint64_t given = 0;
  int rc = kiln_cli_parse(c, &a, argc, argv, &given);
  if (rc >= 0)
    return rc;
  if (a.check)
    return kiln_cli_clblast_check(argc - a.check, argv + a.check); /* its child */
  kiln_cli_pin_pocl();
  job j = {.action = TUNE};
  kiln_tune_options_init(&j.opts);
  j.opts.progress = progress;
  j.opts.what = a.only;
  j.opts.budget = a.budget;
  int actions = a.show + a.clear + a.clblast + !!a.export_file + !!a.import_file;
  int search = kiln_cli_given(c, given, "--only") || kiln_cli_given(c, given, "--budget");
  j.action = a.show ? SHOW : a.clear ? CLEAR : a.clblast ? CLBLAST : TUNE;
  if (a.export_file || a.import_file) {
    j.action = a.export_file ? EXPORT : IMPORT;
    j.file = a.export_file ? a.export_file : a.import_file;
  }
  if (actions > 1 || (a.all && a.device) ||
      (a.all && (j.action == EXPORT || j.action == IMPORT)))
    return kiln_cli_usage_error(c, NULL,
                                "--show, --clear, --export, --import and --clblast go "
                                "alone, and --all neither with --device nor with a file");
  if (a.tuners && j.action != CLBLAST)
    return kiln_cli_usage_error(c, "--tuners", "--tuners goes with --clblast");
  if (a.times && j.action != CLBLAST)
    return kiln_cli_usage_error(c, "--rematch-times",
                                "--rematch-times goes with --clblast");
  if (search && j.action != TUNE)
    return kiln_cli_usage_error(
      c, kiln_cli_given(c, given, "--only") ? "--only" : "--budget",
      "--only and --budget are for the search of kiln's own "
      "kernels, alone");
  if (j.action == CLBLAST)
    j.file = a.tuners, j.times = a.times;
  struct sigaction sa = {0};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process */
  sigaction(SIGINT, &sa, NULL);
  if (!a.all)
    return one_device(&j, a.device);
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
  rc = skip ? 0 : 1;
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
  else {
    char why[512];
    fprintf(out,
            "not tuned: kiln's rules set the kernel parameters (kiln tune "
            "measures them%s%s)\n",
            u.path ? "" : "; records need the kernel cache, which is off: ",
            u.path ? "" : kiln_cli_cache_off_why(rt, why, sizeof why));
  }
}
