/*
 * kiln — the command line: device report, version.
 *
 * The library never prints; this program does, and turns every kiln_status
 * into one clear line on stderr and a non-zero exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kiln/kiln.h"

static int usage(FILE *out)
{
  fprintf(out,
          "usage: kiln <command> [options]\n"
          "\n"
          "commands:\n"
          "  info       every OpenCL platform and device, as clinfo reports them\n"
          "             (--raw, --list, --json, --device SEL; see kiln info --help)\n"
          "  devices    rank the devices, and say which one kiln picks and why\n"
          "  kernels    build kiln's kernels on the picked device (--time)\n"
          "  build      compile FILE.cl [OPTIONS...] and show the build log\n"
          "  run        one operation on .npy files: run gemm A.npy B.npy -o C.npy,\n"
          "             run reduce --op sum [--axis N] X.npy -o Y.npy,\n"
          "             run conv2d X.npy W.npy -o Y.npy [--stride] [--pad] [...],\n"
          "             run fft X.npy -o Y.npy [--inverse] [--real] [--axes -2,-1]\n"
          "  check      one of each operation on the picked device, checked against\n"
          "             a CPU reference, with its time (KILN_PROFILE=1: the profile)\n"
          "  bench      the benchmark suite, one table (--quick, --json F, --csv F,\n"
          "             --plot F.png), or one group: bench gemm|conv|reduce|fft|launch|\n"
          "             overhead|streams|bandwidth|compile [--sizes] [--backend]\n"
          "             (see kiln bench --help)\n"
          "  tune       measure kiln's kernel parameters on a device and keep them\n"
          "             as its tuning record (--budget S, --only, --show, --clear,\n"
          "             --export F, --import F; see kiln tune --help)\n"
          "  cache      the kernel cache: folder, entries, size (--clear)\n"
          "  version    print kiln's version\n"
          "  help       print this help; help env: the environment variables\n");
  return out == stdout ? 0 : 2;
}

void kiln_cli_say(const char *who, const char *msg)
{
  fprintf(stderr, "%s: ", who);
  for (const char *p = msg; *p; p++) {
    if (*p != '\n') {
      fputc(*p, stderr);
      continue;
    }
    while (p[1] == ' ' || p[1] == '\t' || p[1] == '\n')
      p++;
    if (p[1]) /* nothing for a break at the end */
      fputs(p > msg && p[-1] == ':' ? " " : "; ", stderr);
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

/* `kiln help env`: src/env.def, the table the library reads them by. */
static int help_env(void)
{
  static const struct {
    const char *name, *option, *meaning;
  } vars[] = {
#define KILN_ENV(name, reader, option, meaning) {#name, option, meaning},
#include "src/env.def"
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
  printf("\nThe README's \"Environment variables\" says more of each.\n");
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
    return;
  }
  static const char off[] = "kernel cache off: ";
  const char *line = strstr(kiln_runtime_diagnostics(rt), off);
  if (line)
    fprintf(out, "%.*s\n", (int)strcspn(line, "\n"), line);
  else
    fprintf(out, "%sKILN_CACHE=0 or kiln_options.no_cache asked for it\n", off);
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
 * there, the pick, and what KILN_DEVICE or KILN_VISIBLE_DEVICES changed. */
static int cmd_devices(int argc, char **argv)
{
  if (argc > 1) {
    fprintf(stderr,
            "kiln devices: unexpected argument '%s'; usage: kiln devices (the "
            "device is chosen as always, e.g. KILN_DEVICE=...)\n",
            argv[1]);
    return 2;
  }
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
  free(order);
  kiln_cli_runtime_destroy(rt);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) { /* one line: the help is kiln help */
    fprintf(stderr, "usage: kiln <command> [options]; kiln help lists the commands\n");
    return 2;
  }
  /* The commands that take the arguments after their name. */
  static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
  } commands[] = {
    {"info", kiln_cmd_info},       {"devices", cmd_devices},  {"cache", kiln_cmd_cache},
    {"kernels", kiln_cmd_kernels}, {"build", kiln_cmd_build}, {"check", kiln_cmd_check},
    {"bench", kiln_cmd_bench},     {"run", kiln_cmd_run},     {"tune", kiln_cmd_tune},
  };
  const char *cmd = argv[1];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    printf("kiln %s\n", kiln_version());
    return 0;
  }
  if (strcmp(cmd, "help") == 0 && argc == 3 && strcmp(argv[2], "env") == 0)
    return help_env();
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
    return usage(stdout);
  fprintf(stderr, "kiln: unknown command '%s'; kiln help lists the commands\n", cmd);
  return 2;
}
