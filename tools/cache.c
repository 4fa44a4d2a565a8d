/*
 * cache.c — `kiln cache` (the kernel cache's folder, entries and size, and
 * --clear) and `kiln kernels` (build kiln's kernels on the picked device,
 * with --time for how long that takes, cold or warm).
 */
/* kiln's own kernels (kiln_builtin_name() ...) are experimental API. */
#define KILN_EXPERIMENTAL
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kiln/kiln.h"

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int failed(const char *what, kiln_status st, const kiln_runtime *rt)
{
  if (st == KILN_ERR_BUILD) { /* the compiler's log, as it wrote it */
    fprintf(stderr, "kiln %s: %s (%s): %s\n", what, kiln_status_string(st),
            kiln_status_name(st), kiln_last_error(rt));
    return 1;
  }
  char who[128];
  snprintf(who, sizeof who, "kiln %s: %s (%s)", what, kiln_status_string(st),
           kiln_status_name(st));
  kiln_cli_say(who, kiln_last_error(rt));
  return 1;
}

typedef struct flag_args {
  int set; /* --clear, --time */
} flag_args;

typedef struct cache_args {
  int clear;
  const char *warm; /* --warm's list, or NULL */
} cache_args;

static const cli_option cache_rows[] = {
  {.name = "--clear",
   CLI_FLAG_AT(cache_args, clear),
   .help = "delete every entry (the folder stays)"},
  {.name = "--warm",
   CLI_TEXT_AT(cache_args, warm),
   .value = "OPS",
   .bare = "all",
   .def_text = "none",
   .help = "build ahead, on the picked device, the float32 kernels of these "
           "operations (comma-separated: gemm, conv2d, reduce, fft, convert, scale; "
           "alone: all), so that their first calls wait for no compiler"},
};

static int run_cache(int argc, char **argv);

const cli_command kiln_cache_command = {
  .name = "kiln cache",
  .summary = "the kernel cache: folder, entries, size",
  CLI_ROWS(cache_rows),
  .about = "The folder is KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln or ~/.cache/kiln;\n"
           "a folder kiln cannot trust turns the cache off, and this says why and the\n"
           "fix. Entries other users own are left alone, and counted.",
  .example = "kiln cache --clear",
  .run = run_cache,
};

/* Whether the comma-separated list names op ("all": every one). */
static int listed(const char *list, const char *op)
{
  size_t n = strlen(op);
  if (!strcmp(list, "all"))
    return 1;
  for (const char *at = list; at; at = strchr(at, ',')) {
    at += *at == ',';
    if (!strncmp(at, op, n) && (at[n] == ',' || at[n] == '\0'))
      return 1;
  }
  return 0;
}

static const char *const warm_ops[] = {"gemm", "conv2d",  "reduce",
                                       "fft",  "convert", "scale"};
#define NWARM (sizeof warm_ops / sizeof *warm_ops)

/* The first name of --warm's list that is no operation, or NULL. */
static const char *not_an_op(const char *list, char *one, size_t size)
{
  for (const char *at = list; strcmp(list, "all") && at; at = strchr(at, ',')) {
    at += *at == ',';
    snprintf(one, size, "%.*s", (int)strcspn(at, ","), at);
    size_t i = 0;
    while (i < NWARM && strcmp(warm_ops[i], one))
      i++;
    if (i == NWARM)
      return one;
  }
  return NULL;
}

/* --warm: each operation of the list in turn, with its time, so that a
 * long build is seen to progress. */
static kiln_status warm(kiln_runtime *rt, const char *list)
{
  static const char *const *ops = warm_ops;
  printf("building ahead on %s\n", kiln_runtime_device(rt)->name);
  double t0 = now_ms();
  kiln_status st = KILN_OK;
  for (size_t i = 0; i < NWARM && st == KILN_OK; i++) {
    if (!listed(list, ops[i]))
      continue;
    printf("  %-8s ", ops[i]);
    fflush(stdout);
    double t = now_ms();
    size_t n = 0;
    if ((st = kiln_runtime_warm(rt, ops[i], &n)) == KILN_OK)
      printf("%3zu kernels ready %9.1f ms\n", n, now_ms() - t);
    else
      printf("failed\n");
  }
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  kiln_cache_stats(rt, &u);
  if (st == KILN_OK)
    printf("compiled %llu, from the cache %llu, in %.1f s\n",
           (unsigned long long)u.compiles, (unsigned long long)u.hits,
           (now_ms() - t0) / 1e3);
  kiln_cli_print_cache(stdout, rt);
  return st;
}

static int run_cache(int argc, char **argv)
{
  cache_args a = {0};
  int rc = kiln_cli_parse(&kiln_cache_command, &a, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  int clear = a.clear;
  char one[64];
  if (a.warm && not_an_op(a.warm, one, sizeof one))
    return kiln_cli_usage_error(&kiln_cache_command, "--warm",
                                "--warm '%s' is not a value "
                                "it takes",
                                a.warm);
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return failed("cache", st, NULL);
  if (a.warm) {
    st = warm(rt, a.warm);
    rc = st == KILN_OK ? 0 : failed("cache --warm", st, rt);
    kiln_cli_runtime_destroy(rt);
    return rc;
  }
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  uint64_t entries = 0, bytes = 0, removed = 0;
  kiln_cache_stats(rt, &u);
  if (!u.dir) {
    kiln_cli_print_cache(stdout, rt);
  } else if (clear) {
    if ((st = kiln_cache_clear(rt, &removed)) == KILN_OK)
      printf("cleared %s: %llu files removed\n", u.dir, (unsigned long long)removed);
  } else if ((st = kiln_cache_contents(rt, &entries, &bytes)) == KILN_OK) {
    printf("location  %s%s\nentries   %llu\nsize      %.1f KiB\n", u.dir,
           u.shared ? " (a team folder: every member of its group is trusted)" : "",
           (unsigned long long)entries, (double)bytes / 1024.0);
    if (u.binaries_off)
      printf("binaries  the driver's cache, not kiln's: %s (KILN_CACHE=1 keeps "
             "kiln's too); the folder keeps tuning records\n",
             u.binaries_off);
  }
  kiln_cache_stats(rt, &u); /* the walk counts what it left alone */
  if (st == KILN_OK && u.untrusted)
    printf("left alone: %llu untrusted entries (kiln neither loads nor deletes "
           "them); the last: %s\n",
           (unsigned long long)u.untrusted, u.untrusted_note);
  rc = st == KILN_OK ? 0 : failed("cache", st, rt);
  kiln_cli_runtime_destroy(rt);
  return rc;
}

/* Builds one of kiln's kernel files; prints its time when asked. */
static kiln_status build_one(kiln_runtime *rt, const char *name, int timed)
{
  kiln_program *p = NULL;
  double t0 = now_ms();
  kiln_status st = kiln_program_create_builtin(rt, name, &p);
  if (st == KILN_OK && timed)
    printf("  cl/%-20s %9.1f ms\n", name, now_ms() - t0);
  kiln_program_destroy(p);
  return st;
}

static const cli_option kernels_rows[] = {
  {.name = "--time",
   CLI_FLAG_AT(flag_args, set),
   .help = "say how long each file took to build, and the whole"},
};

static int run_kernels(int argc, char **argv);

const cli_command kiln_kernels_command = {
  .name = "kiln kernels",
  .summary = "build kiln's kernels on the picked device",
  CLI_ROWS(kernels_rows),
  .about = "Builds every file of cl/ as the operations would, through the kernel\n"
           "cache: a second run loads them from it (compiled 0).",
  .example = "kiln kernels --time",
  .run = run_kernels,
};

static int run_kernels(int argc, char **argv)
{
  flag_args a = {0};
  int rc = kiln_cli_parse(&kiln_kernels_command, &a, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  int timed = a.set;
  double t0 = now_ms();
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return failed("kernels", st, NULL);
  double t1 = now_ms();
  printf("kiln's kernels on %s\n", kiln_runtime_device(rt)->name);
  for (size_t i = 0; i < kiln_builtin_count() && st == KILN_OK; i++) {
    st = build_one(rt, kiln_builtin_name(i), timed);
    if (!timed && st == KILN_OK)
      printf("  cl/%s.cl builds\n", kiln_builtin_name(i));
  }
  if (st != KILN_OK) {
    rc = failed("kernels", st, rt); /* the message holds the build log */
    kiln_cli_runtime_destroy(rt);
    return rc;
  }
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  kiln_cache_stats(rt, &u);
  if (timed)
    printf("runtime %.1f ms, kernels %.1f ms, total %.1f ms\n", t1 - t0, now_ms() - t1,
           now_ms() - t0);
  printf("compiled %llu, from the cache %llu\n", (unsigned long long)u.compiles,
         (unsigned long long)u.hits);
  kiln_cli_print_cache(stdout, rt);
  kiln_cli_runtime_destroy(rt);
  return 0;
}

/* `kiln build FILE.cl [OPTIONS...]`: compiles a kernel file for the picked
 * device, through the cache, and prints the compiler's messages; on failure
 * the options and the whole build log. */
typedef struct build_args {
  const char *file;
  int options; /* argv's index of the first build option; 0: none */
} build_args;

static const cli_option build_rows[] = {
  {.name = "FILE.cl",
   CLI_TEXT_AT(build_args, file),
   .help = "an OpenCL C file",
   .required = 1},
  {.name = "OPTIONS...",
   CLI_REST_AT(build_args, options),
   .help = "OpenCL build options, passed to the compiler as they are, e.g. -DTILE=8 "
           "-cl-fast-relaxed-math",
   .def_text = "none"},
};

static int run_build(int argc, char **argv);

const cli_command kiln_build_command = {
  .name = "kiln build",
  .summary = "compile FILE.cl [OPTIONS...] for the picked device and show the build log",
  CLI_ROWS(build_rows),
  .about = "Through the kernel cache, as kiln_program_create_file(): a failure prints\n"
           "the options and the compiler's whole log, and exits 1.",
  .example = "kiln build saxpy.cl -DTILE=8",
  .run = run_build,
};

static int run_build(int argc, char **argv)
{
  build_args a = {0};
  int rc = kiln_cli_parse(&kiln_build_command, &a, argc, argv, NULL);
  if (rc >= 0)
    return rc;
  char options[4096] = "";
  for (int i = a.options; i > 0 && i < argc; i++) {
    size_t used = strlen(options);
    if (snprintf(options + used, sizeof options - used, "%s%s", used ? " " : "",
                 argv[i]) >= (int)(sizeof options - used)) {
      fprintf(stderr, "kiln build: the build options are longer than %zu bytes\n",
              sizeof options - 1);
      return 2;
    }
  }
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return failed("build", st, NULL);
  kiln_program *p = NULL;
  double t0 = now_ms();
  st = kiln_program_create_file(rt, a.file, options, &p);
  rc = 0;
  if (st != KILN_OK) {
    rc = failed("build", st, rt);
  } else {
    kiln_cache_usage u;
    kiln_cache_usage_init(&u);
    kiln_cache_stats(rt, &u);
    printf("%s builds on %s in %.1f ms (%s)\n", a.file, kiln_runtime_device(rt)->name,
           now_ms() - t0, u.hits ? "from the cache" : "compiled");
    const char *log = kiln_program_build_log(p);
    if (*log)
      printf("build log:\n%s\n", log);
  }
  kiln_program_destroy(p);
  kiln_cli_runtime_destroy(rt);
  return rc;
}
