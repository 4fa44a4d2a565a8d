/*
 * kiln — the command line: the table of commands, `kiln help`, `kiln
 * version`, `kiln devices`, and what the commands share.
 *
 * The library never prints; this program does, and turns every kiln_status
 * into one clear line on stderr and a non-zero exit. Every command's
 * options are rows (opts.h), from which its parser and its help come.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kiln/kiln.h"
#include "kiln/version.h"
#include "kiln_config.h"
#include "opts.h"

void kiln_cli_say(const char *who, const char *msg)
{
  fprintf(stderr, "%s: ", who);
  for (const char *p = msg; *p; p++) {
    if (*p != '\n') {
      fputc(*p, stderr);
      continue;
    }
    int after_colon = p > msg && p[-1] == ':'; /* a list follows: no ";" */
    while (p[1] == ' ' || p[1] == '\t' || p[1] == '\n')
      p++;
    if (p[1]) /* nothing for a break at the end */
      fputs(after_colon ? " " : "; ", stderr);
  }
  fputc('\n', stderr);
}

char *kiln_cli_read_file(const char *path)
{
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return NULL;
  size_t len = 0, cap = 4096;
  char *s = malloc(cap);
  size_t got;
  while (s && (got = fread(s + len, 1, cap - len - 1, f)) > 0) {
    len += got;
    if (cap - len - 1 == 0) {
      char *t = realloc(s, cap *= 2);
      if (!t)
        free(s);
      s = t;
    }
  }
  if (s)
    s[len] = '\0';
  if (f != stdin)
    fclose(f);
  return s;
}

void kiln_cli_pin_pocl(void)
{
  setenv("POCL_AFFINITY", "1", 0); /* before PoCL reads it, at discovery */
}

int kiln_cli_fail(const char *what, kiln_status st, const kiln_runtime *rt)
{
  char who[128];
  snprintf(who, sizeof who, "kiln %s: %s (%s)", what, kiln_status_string(st),
           kiln_status_name(st));
  kiln_cli_say(who, kiln_last_error(rt));
  return 1;
}

/* `kiln help env`: src/base/env.def, the table the library reads them by. */
static int help_env(void)
{
  static const struct {
    const char *name, *option, *meaning;
  } vars[] = {
#define KILN_ENV(name, reader, option, meaning) {#name, option, meaning},
#include "src/base/env.def"
#undef KILN_ENV
  };
  printf("kiln reads these when a runtime is created; a kiln_options field set by\n"
         "the program wins over its variable, and ignore_env ignores the KILN_ ones.\n"
         "A value kiln cannot use is an error that names it.\n\n");
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    printf("  %-21s %s\n", vars[i].name, vars[i].meaning);
    if (*vars[i].option)
      printf("  %-21s option: %s\n", "", vars[i].option);
  }
  printf("\ndocs/environment.md says more of each.\n");
  return 0;
}

void kiln_cli_print_cache(FILE *out, kiln_runtime *rt)
{
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  kiln_cache_stats(rt, &u);
  if (u.dir) {
    fprintf(out, "kernel cache: %s%s\n", u.dir,
            u.shared ? " (a team folder: every member of its group is trusted)" : "");
    if (u.binaries_off)
      fprintf(out,
              "kernel binaries: the driver's cache, not kiln's: %s (KILN_CACHE=1 "
              "keeps kiln's too)\n",
              u.binaries_off);
    return;
  }
  char why[512];
  fprintf(out, "kernel cache off: %s\n", kiln_cli_cache_off_why(rt, why, sizeof why));
}

const char *kiln_cli_cache_off_why(kiln_runtime *rt, char *buf, size_t size)
{
  static const char off[] = "kernel cache off: ";
  const char *line = strstr(kiln_runtime_diagnostics(rt), off);
  if (line) {
    line += strlen(off);
    snprintf(buf, size, "%.*s", (int)strcspn(line, "\n"), line);
  } else {
    snprintf(buf, size, "KILN_CACHE=0 or kiln_options.no_cache asked for it");
  }
  return buf;
}

void kiln_cli_runtime_destroy(kiln_runtime *rt)
{
  if (kiln_profile_enabled(rt)) {
    /* so that every call is counted; a command that failed on the device
     * has already said so */
    kiln_finish(rt);
    if (kiln_profile_report(rt, stdout) != KILN_OK)
      fprintf(stderr, "kiln: the profile table: %s\n", kiln_last_error(rt));
  }
  kiln_status st = kiln_runtime_destroy(rt);
  if (st != KILN_OK) /* BUSY leaves the runtime, and its message, alive */
    fprintf(stderr, "kiln: %s\n", kiln_last_error(st == KILN_ERR_BUSY ? rt : NULL));
}

/* The devices in kiln's order, best first, with the keys that put them
 * there, the pick, and what KILN_DEVICE or KILN_VISIBLE_DEVICES changed;
 * then the device group kiln_group_create() would form (KILN_DEVICES). */
static int run_devices(int argc, char **argv);

typedef struct devices_args {
  const char *icd_dir;
} devices_args;

static const cli_option devices_rows[] = {
  {"--icd-dir", NULL, CLI_TEXT_AT(devices_args, icd_dir), "DIR",
   "list no device: make DIR a folder for OCL_ICD_VENDORS, with a copy of each .icd "
   "file in use and one naming each installed driver that no .icd file names; say "
   "what it wrote on stderr, and print the export lines to eval on stdout",
   .def_text = "none"},
};

static const cli_command devices_command = {
  .name = "kiln devices",
  .summary = "rank the devices, and say which one kiln picks and why",
  CLI_ROWS(devices_rows),
  .about = "Each device's ranking keys, in order: its type (a discrete GPU first), its\n"
           "estimated fp32 peak, its memory, its OpenCL version. The device is chosen\n"
           "as always: KILN_DEVICE and KILN_VISIBLE_DEVICES (kiln help env). Then a\n"
           "note for each installed GPU driver that no .icd file names (OpenCL cannot\n"
           "see it), with the fix. Last, the device group that `kiln run --devices`\n"
           "and kiln_group_create() form (KILN_DEVICES), and why each other device is\n"
           "left out.",
  .example = "KILN_DEVICE=gpu,cpu kiln devices\n"
             "eval \"$(kiln devices --icd-dir ~/.local/share/kiln/vendors)\"",
  .run = run_devices,
};

/* The group kiln_group_create() forms, and who is left out. */
static int print_group(void)
{
  kiln_group *g = NULL;
  kiln_status st = kiln_group_create(NULL, &g);
  if (st != KILN_OK)
    return kiln_cli_fail("devices", st, NULL);
  size_t n = kiln_group_size(g);
  printf("\ngroup of %zu device%s (KILN_DEVICES, kiln run --devices):\n", n,
         n == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++) {
    const kiln_device_info *d = kiln_runtime_device(kiln_group_runtime(g, i));
    printf("  %u:%-3u %s\n", d->platform_index, d->device_index, d->name);
  }
  char why[4096];
  kiln_group_diagnostics(g, why, sizeof why);
  printf("%s", why);
  st = kiln_group_destroy(g);
  return st == KILN_OK ? 0 : kiln_cli_fail("devices", st, NULL);
}

static int run_devices(int argc, char **argv)
{
  devices_args args = {0};
  int rc = kiln_cli_parse(&devices_command, &args, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  if (args.icd_dir)
    return kiln_cli_icd_dir(args.icd_dir);
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return kiln_cli_fail("devices", st, NULL);
  size_t n = kiln_runtime_device_count(rt);
  const kiln_device_info **order = calloc(n ? n : 1, sizeof *order);
  if (!order) {
    kiln_cli_runtime_destroy(rt);
    fprintf(stderr, "kiln devices: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    /* insertion sort: a handful of devices */
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    size_t j = i;
    for (; j > 0 && kiln_device_compare(d, order[j - 1]) < 0; j--)
      order[j] = order[j - 1];
    order[j] = d;
  }
  const kiln_device_info *picked = kiln_runtime_device(rt);
  printf("rank  P:D   %-40s  score: the ranking keys, in order\n", "device");
  for (size_t r = 0; r < n; r++) {
    char why[160];
    printf("%-4zu  %u:%-3u %-40.40s  %s%s\n", r + 1, order[r]->platform_index,
           order[r]->device_index, order[r]->name,
           kiln_device_rank_reasons(order[r], why, sizeof why),
           order[r] == picked ? "  <- picked" : "");
  }
  const char *selection = kiln_runtime_selection(rt);
  printf("\npicked %u:%u %s\n%s", picked->platform_index, picked->device_index,
         picked->name,
         *selection ? selection
                    : "KILN_DEVICE and KILN_VISIBLE_DEVICES are not set: the best "
                      "ranked device is picked\n");
  kiln_cli_print_cache(stdout, rt);
  kiln_cli_print_tuning(stdout, rt);
  kiln_cli_print_driver_notes(stdout, kiln_runtime_diagnostics(rt));
  free(order);
  kiln_cli_runtime_destroy(rt);
  return print_group();
}

/* ---- kiln version ---------------------------------------------------------- */

/* The version, and what this kiln was built with: the backends of its
 * operations, then the optional libraries of its tools. */
static int print_version(void)
{
  static const struct {
    const char *what;
    int built;
  } parts[] =
    {
      {"kiln", 1},
      {"clblast", HAVE_CLBLAST},
      {"clfft", HAVE_CLFFT},
      {"vkfft", HAVE_VKFFT},
    },
    extras[] = {
      {"json-c (tuning records, --json)", HAVE_JSON_C},
      {"libzip (.npz files)", HAVE_LIBZIP},
      {"openblas (kiln bench)", HAVE_OPENBLAS},
      {"fftw (kiln bench)", HAVE_FFTW},
    };
  printf("kiln %s\n", kiln_version());
  if (strcmp(kiln_version(), KILN_VERSION_STRING) != 0)
    printf("(this kiln command was built with libkiln %s)\n", KILN_VERSION_STRING);
  for (int pass = 0; pass < 4; pass++) {
    static const char *const heads[] = {"backends:", "not built:", "with:", "without:"};
    int n = 0, extra = pass >= 2;
    size_t count =
      extra ? sizeof extras / sizeof extras[0] : sizeof parts / sizeof parts[0];
    for (size_t i = 0; i < count; i++) {
      const char *what = extra ? extras[i].what : parts[i].what;
      int built = extra ? extras[i].built : parts[i].built;
      if (built == (pass % 2 == 0))
        printf("%s %s", n++ ? "," : heads[pass], what);
    }
    if (n)
      printf("\n");
  }
  return 0;
}

static int run_version(int argc, char **argv);

static const cli_command version_command = {
  .name = "kiln version",
  .summary = "print kiln's version and what it was built with (as kiln --version)",
  .example = "kiln version",
  .run = run_version,
};

static int run_version(int argc, char **argv)
{
  int rc = kiln_cli_parse(&version_command, &(int){0}, argc, argv, NULL);
  return rc >= 0 ? rc : print_version();
}

/* ---- the commands ---------------------------------------------------------- */

static const cli_command help_command;

static const cli_command *const commands[] = {
  &kiln_info_command,  &devices_command,   &kiln_check_command, &kiln_run_command,
  &kiln_bench_command, &kiln_tune_command, &kiln_cache_command, &kiln_kernels_command,
  &kiln_build_command, &version_command,   &help_command,
};

static const cli_command *command_at(size_t i)
{
  return i < sizeof commands / sizeof commands[0] ? commands[i] : NULL;
}

typedef struct main_args {
  const char *command;
  int version;
} main_args;

static const cli_option main_rows[] = {
  {.name = "COMMAND",
   CLI_TEXT_AT(main_args, command),
   .help = "what to do: one of the commands below"},
  {.name = "--version",
   CLI_FLAG_AT(main_args, version),
   .help = "print kiln's version and what it was built with (its backends, its "
           "optional libraries), and exit"},
};

static int run_main(int argc, char **argv);

static const cli_command main_command = {
  .name = "kiln",
  .summary = "kiln: OpenCL devices, kiln's pick among them, and its operations on .npy "
             "files, from the shell.",
  .usage = "kiln COMMAND [options]",
  CLI_ROWS(main_rows),
  .about = "Every option of every command is in its help: kiln COMMAND --help, or\n"
           "kiln help COMMAND. An option's value may follow it (--device 1:0) or be\n"
           "joined to it (--device=1:0); -- ends the options. The environment\n"
           "variables: kiln help env.\n"
           "\n"
           "Exit status: 0 when the command did what it was asked; 1 when it failed\n"
           "(a file, a device, a result), 2 for a usage error; either way with one\n"
           "line on stderr.",
  .example = "kiln devices\nkiln run gemm a.npy b.npy -o c.npy",
  .sub = command_at,
  .run = run_main,
};

static int run_main(int argc, char **argv)
{
  /* no command's name came first: an option (--version, --help), or a
   * word that names none */
  main_args a = {NULL, 0};
  int rc = kiln_cli_parse(&main_command, &a, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  if (a.version)
    return print_version();
  if (!a.command)
    return kiln_cli_usage_error(&main_command, NULL, "no command given");
  return kiln_cli_usage_error(&main_command, NULL, "unknown command '%s'", a.command);
}

/* ---- kiln help --------------------------------------------------------------- */

typedef struct help_args {
  int words; /* argv's index of the first word, 0 when none */
} help_args;

static const cli_option help_rows[] = {
  {.name = "COMMAND...",
   CLI_REST_AT(help_args, words),
   .help = "a command, and the command under it (run gemm, bench fft); env for the "
           "environment variables",
   .def_text = "the list of commands"},
};

static int run_help(int argc, char **argv);

static const cli_command help_command = {
  .name = "kiln help",
  .summary = "print the help of kiln or of a command; help env: the environment "
             "variables",
  CLI_ROWS(help_rows),
  .example = "kiln help run conv2d\nkiln help env",
  .run = run_help,
};

static int run_help(int argc, char **argv)
{
  help_args a = {0};
  int rc = kiln_cli_parse(&help_command, &a, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  if (a.words && argc - a.words == 1 && strcmp(argv[a.words], "env") == 0)
    return help_env();
  const cli_command *c = a.words
                           ? kiln_cli_find(&main_command, argc - a.words, argv + a.words)
                           : &main_command;
  if (!c) {
    char words[256] = "";
    for (int i = a.words, at = 0; i < argc && at < (int)sizeof words; i++)
      at +=
        snprintf(words + at, sizeof words - (size_t)at, "%s%s", at ? " " : "", argv[i]);
    return kiln_cli_usage_error(&help_command, NULL,
                                "no command 'kiln %s' (kiln help lists them)", words);
  }
  kiln_cli_help(c, stdout);
  return 0;
}

int main(int argc, char **argv)
{
  return kiln_cli_dispatch(&main_command, argc, argv);
}
