/*
 * bench.c — `kiln bench`: the whole suite, or one group of it; its options
 * and each group's command. bench_run.c measures (bench_untuned.c:
 * --untuned); what every group shares is in bench.h: medians and records
 * (bench_record.c), the tables and the JSON, CSV and plot files
 * (bench_out.c), --compare (bench_compare.c). The groups are bench_gemm.c,
 * bench_conv.c, bench_reduce.c, bench_fft.c, bench_launch.c,
 * bench_overhead.c, bench_streams.c, bench_bandwidth.c, bench_compile.c,
 * bench_mlp.c and bench_devices.c.
 *
 * Every figure is a median over repeats after a warm-up, and every result
 * is checked (against a CPU reference or the peer) before it is timed.
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "bench_cmd.h"
#include "cli.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

/* --quick's repeats at most: the run checks that everything works. */
#define QUICK_REPEATS 3

static const bench_group *const groups[] = {
  &bench_gemm_group,    &bench_conv_group,      &bench_reduce_group,
  &bench_fft_group,     &bench_launch_group,    &bench_overhead_group,
  &bench_streams_group, &bench_bandwidth_group, &bench_compile_group,
  &bench_mlp_group,     &bench_devices_group,
};
#define NGROUPS (sizeof groups / sizeof groups[0])

double bench_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- options ------------------------------------------------------------- */

/* One size: a number, in bytes with an optional K, M or G (powers of 1024)
 * when the spec says so. 0 when it does not parse or is out of range. */
static size_t parse_size(const bench_spec *s, const char *t)
{
  char *end;
  unsigned long long v = strtoull(t, &end, 10);
  int shift = !s->byte_sizes || !*end ? 0
              : *end == 'K'           ? 10
              : *end == 'M'           ? 20
              : *end == 'G'           ? 30
                                      : -1;
  if (end == t || *t == '-' || shift < 0 || end[shift ? 1 : 0] || v > (SIZE_MAX >> shift))
    return 0;
  v <<= shift;
  if (v < s->min_size || v > s->max_size || v % s->size_multiple)
    return 0;
  return (size_t)v;
}

static int parse_sizes(const bench_spec *s, bench_args *a, const char *list)
{
  char copy[256];
  if (strlen(list) >= sizeof copy)
    return -1;
  strcpy(copy, list);
  a->nsizes = 0;
  for (char *t = strtok(copy, ","); t; t = strtok(NULL, ",")) {
    size_t v = parse_size(s, t);
    if (!v || a->nsizes == BENCH_MAX_SIZES)
      return -1;
    a->sizes[a->nsizes++] = v;
  }
  return a->nsizes ? 0 : -1;
}

void bench_fill_defaults(const bench_spec *s, bench_args *a, int sizes_given,
                         int repeats_given, int backends_given)
{
  if (!sizes_given) {
    a->nsizes = a->quick ? s->nquick : s->ndefaults;
    memcpy(a->sizes, a->quick ? s->quick : s->defaults, a->nsizes * sizeof *a->sizes);
  }
  if (!repeats_given)
    a->repeats = a->quick && s->repeats > QUICK_REPEATS ? QUICK_REPEATS : s->repeats;
  assert(s->npeers <= BENCH_MAX_PEERS); /* bench_args.use holds them */
  for (int k = 0; k < s->npeers && !backends_given; k++)
    a->use[k] = s->built[k];
}

/* Whether path can be written once the measurements are done: not a folder,
 * in a folder that exists and is writable. Checked before measuring, so a
 * bad path costs no run and leaves no table behind; 0, or -1 after a line on
 * stderr. */
static int check_writable(const char *who, const char *opt, const char *path)
{
  struct stat st;
  const char *slash = strrchr(path, '/');
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
           slash ? (slash == path ? "/" : path) : ".");
  const char *why = NULL;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    why = "it is a folder";
  else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    why = "its folder does not exist";
  else if (access(dir, W_OK) != 0)
    why = strerror(errno);
  if (why)
    fprintf(stderr, "%s: %s '%s' cannot be written: %s\n", who, opt, path, why);
  return why ? -1 : 0;
}

/* ---- the commands' rows --------------------------------------------------- */

/* What the rows fill; parse() turns it into bench_args. */
typedef struct bench_cli {
  const char *group, *sizes, *json, *csv, *plot, *compare, *tolerance, *devices;
  unsigned backends; /* bit k: the spec's peer k */
  long repeat;       /* 0: not given, in the suite */
  int quick, untuned;
} bench_cli;

/* The suite's rows; a group's are --sizes and --backend, then these but
 * GROUP, with its own --repeat. */
static const cli_option suite_rows[] = {
  {.name = "GROUP",
   CLI_TEXT_AT(bench_cli, group),
   .help = "one group, one of the commands below",
   .def_text = "the whole suite"},
  {.name = "--quick",
   CLI_FLAG_AT(bench_cli, quick),
   .help = "small sizes and at most 3 repeats: a check that everything runs, not "
           "figures to quote"},
  {.name = "--repeat",
   CLI_INT_AT(bench_cli, repeat),
   .value = "R",
   .help = "the runs each median is of",
   .def_text = "each group's own",
   .min = 1,
   .max = 1000},
  {.name = "--untuned",
   CLI_FLAG_AT(bench_cli, untuned),
   .help = "every case on a second runtime without the device's tuning record "
           "(KILN_TUNING=0) as well, 3 rounds of each in turn, and a table of "
           "tuned against untuned"},
  {.name = "--json",
   CLI_TEXT_AT(bench_cli, json),
   .value = "FILE",
   .help = "write the records as JSON to FILE; alone, print them on stdout instead "
           "of the table (needs json-c)",
   .def_text = "none",
   .bare = "-"},
  {.name = "--csv",
   CLI_TEXT_AT(bench_cli, csv),
   .value = "FILE",
   .help = "write the records as CSV to FILE",
   .def_text = "none"},
  {.name = "--plot",
   CLI_TEXT_AT(bench_cli, plot),
   .value = "FILE.png",
   .help = "draw each sized group's figures against size with gnuplot",
   .def_text = "none"},
  {.name = "--compare",
   CLI_TEXT_AT(bench_cli, compare),
   .value = "OLD.json",
   .help = "a regression check: run the cases of an earlier --json run again, print "
           "each with its old and new figure and how many times faster it is now, "
           "mark SLOWER each that takes longer than --tolerance allows, and exit 1 "
           "when any does (needs json-c)",
   .def_text = "none"},
  {.name = "--tolerance",
   CLI_TEXT_AT(bench_cli, tolerance),
   .value = "PERCENT",
   .help = "with --compare: how much longer than in OLD.json a case may take before "
           "it is SLOWER; 0% to 1000%",
   .def = "10%"},
  {.name = "--devices",
   CLI_TEXT_AT(bench_cli, devices),
   .value = "SEL",
   .help = "the device group the devices group measures: every device SEL selects "
           "(KILN_DEVICE's terms, or all)",
   .def_text = "KILN_DEVICES, else every device of the best one's kind"},
};
#define NSUITE (sizeof suite_rows / sizeof suite_rows[0])

static int run_suite(int argc, char **argv);
static const cli_command *group_at(size_t i);

const cli_command kiln_bench_command = {
  .name = "kiln bench",
  .summary = "the benchmark suite, one table, each figure against a peer measured in "
             "the same run",
  .usage = "kiln bench [GROUP] [options]",
  CLI_ROWS(suite_rows),
  .about = "Every figure is a median over repeats after a warm-up, and every result\n"
           "is checked (against a CPU reference or the peer) before it is timed.\n"
           "Progress goes to stderr. A group takes the same options, and --sizes\n"
           "and --backend: kiln bench GROUP --help.",
  .example = "kiln bench --json bench.json --plot bench.png",
  .sub = group_at,
  .run = run_suite,
};

typedef struct group_command {
  cli_command cmd;
  cli_option rows[2 + NSUITE - 1]; /* --sizes, --backend, suite_rows but GROUP */
  const char *backends[BENCH_MAX_PEERS + 1];
  char name[32], sizes[160], sizes_help[320], used[96], repeat[16], example[96];
} group_command;

static group_command group_commands[NGROUPS];

static int run_group(int argc, char **argv);

/* "a,b,c" of n sizes, as --sizes takes them: row numbers where the spec
 * names rows, else as the table writes them (256M). */
static void sizes_text(const bench_spec *s, const size_t *v, size_t n, char *buf,
                       size_t size)
{
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && at < size; i++) {
    char one[32];
    if (s->labels)
      snprintf(one, sizeof one, "%zu", v[i]);
    else
      bench_size_label(s, v[i], one, sizeof one);
    at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? "," : "", one);
  }
}

static void make_group_command(group_command *g, const bench_spec *s)
{
  size_t used = 0;
  cli_option *r = g->rows;
  r[0] = (cli_option){.name = "--sizes", CLI_TEXT_AT(bench_cli, sizes)};
  r[1] = (cli_option){.name = "--backend", CLI_CHOICES_AT(bench_cli, backends)};
  memcpy(r + 2, suite_rows + 1, (NSUITE - 1) * sizeof *r);
  snprintf(g->name, sizeof g->name, "kiln bench %s", s->op);
  sizes_text(s, s->defaults, s->ndefaults, g->sizes, sizeof g->sizes);
  snprintf(g->sizes_help, sizeof g->sizes_help, "the cases: %s", s->sizes_help);
  for (int k = 0; k < s->selectable; k++) {
    g->backends[k] = s->peers[k];
    if (s->built[k])
      used += (size_t)snprintf(g->used + used, sizeof g->used - used, "%s%s",
                               used ? "," : "", s->peers[k]);
  }
  snprintf(g->repeat, sizeof g->repeat, "%d", s->repeats);
  r[0].value = s->sizes_value, r[0].help = g->sizes_help, r[0].def = g->sizes;
  r[1].help = "the backends and peers to run (the others run always)";
  r[1].choices = g->backends, r[1].def = g->used;
  r[3].help = "the runs each median is of", r[3].def = g->repeat; /* --repeat */
  char quick[64];
  sizes_text(s, s->quick, s->nquick, quick, sizeof quick);
  snprintf(g->example, sizeof g->example, "kiln bench %s --sizes %s --backend %s", s->op,
           quick, s->peers[0]);
  g->cmd = (cli_command){.name = g->name,
                         .summary = s->summary,
                         .opts = g->rows,
                         .nopts = sizeof g->rows / sizeof g->rows[0],
                         .about = s->note,
                         .example = g->example,
                         .run = run_group};
}

static const cli_command *group_at(size_t i)
{
  if (i >= NGROUPS)
    return NULL;
  if (!group_commands[i].cmd.name)
    make_group_command(&group_commands[i], groups[i]->spec);
  return &group_commands[i].cmd;
}

/* --compare and --tolerance into a; -1 to go on, else the exit status.
 * cases: the options that choose cases or the output were given. */
static int parse_compare(const cli_command *c, const bench_cli *b, uint64_t given,
                         int cases, bench_args *a)
{
  char *end;
  a->compare = b->compare;
  a->tolerance = strtod(b->tolerance, &end) / 100;
  if (end == b->tolerance || (*end && strcmp(end, "%") != 0) || !(a->tolerance >= 0) ||
      a->tolerance > 10)
    return kiln_cli_usage_error(c, "--tolerance",
                                "--tolerance '%s' is not a value it takes", b->tolerance);
  if (!b->compare && kiln_cli_given(c, given, "--tolerance"))
    return kiln_cli_usage_error(c, "--tolerance", "--tolerance goes with --compare");
  if (b->compare && !HAVE_JSON_C)
    return kiln_cli_usage_error(c, "--compare",
                                "--compare reads JSON: it needs kiln built with json-c "
                                "(libjson-c-dev)");
  /* the cases are OLD.json's, and the table the comparison */
  if (b->compare && cases)
    return kiln_cli_usage_error(c, "--compare",
                                "--compare runs OLD.json's cases and prints their "
                                "comparison: it goes without --sizes, --backend, "
                                "--quick, --untuned and --json alone (--json FILE "
                                "writes the new records)");
  return -1;
}

/* Parses argv (argv[0] is the group's name, or "bench" for the whole suite
 * when s is NULL) into a. Returns -1 to go on, else the exit status after
 * the help or a line on stderr. */
static int parse(const bench_spec *s, size_t group, bench_args *a, int argc, char **argv)
{
  const cli_command *c = s ? group_at(group) : &kiln_bench_command;
  bench_cli b = {0};
  uint64_t given = 0;
  int rc = kiln_cli_parse(c, &b, argc, argv, &given);
  if (rc >= 0)
    return rc;
  if (b.group)
    return kiln_cli_usage_error(c, NULL,
                                "unknown group '%s' (the commands of kiln bench "
                                "--help)",
                                b.group);
  *a = (bench_args){.repeats = (int)b.repeat,
                    .quick = b.quick,
                    .untuned = b.untuned,
                    .csv_path = b.csv,
                    .plot_path = b.plot,
                    .devices = b.devices};
  if (b.json && !HAVE_JSON_C)
    return kiln_cli_usage_error(c, "--json",
                                "--json needs kiln built with json-c "
                                "(libjson-c-dev)");
  a->json = b.json && strcmp(b.json, "-") == 0;
  a->json_path = b.json && !a->json ? b.json : NULL;
  int cases =
    b.quick || b.untuned || a->json ||
    (s && (kiln_cli_given(c, given, "--sizes") || kiln_cli_given(c, given, "--backend")));
  if ((rc = parse_compare(c, &b, given, cases, a)) >= 0)
    return rc;
  if ((a->json_path && check_writable(c->name, "--json", a->json_path) != 0) ||
      (a->csv_path && check_writable(c->name, "--csv", a->csv_path) != 0) ||
      (a->plot_path && check_writable(c->name, "--plot", a->plot_path) != 0))
    return 2;
  if (!s)
    return -1;
  if (a->plot_path && !s->axis)
    return kiln_cli_usage_error(c, "--plot",
                                "--plot draws figures against size, and "
                                "%s has no sizes to plot",
                                s->op);
  int sizes_given = kiln_cli_given(c, given, "--sizes");
  if (sizes_given && parse_sizes(s, a, b.sizes) != 0)
    return kiln_cli_usage_error(c, "--sizes", "--sizes '%s' is not a value it takes",
                                b.sizes);
  int backends_given = kiln_cli_given(c, given, "--backend");
  for (int k = 0; k < s->npeers; k++)
    a->use[k] = k >= s->selectable || (b.backends >> k & 1);
  bench_fill_defaults(s, a, sizes_given, kiln_cli_given(c, given, "--repeat"),
                      backends_given);
  for (int k = 0; k < s->npeers; k++)
    if (a->use[k] && !s->built[k])
      return kiln_cli_usage_error(c, "--backend", "%s", s->not_built[k]);
  return -1;
}

static int run_suite(int argc, char **argv)
{
  bench_args a;
  int rc = parse(NULL, 0, &a, argc, argv);
  if (rc >= 0)
    return rc;
  kiln_cli_pin_pocl();
  return bench_run_groups(groups, NGROUPS, NULL, &a);
}

static int run_group(int argc, char **argv)
{
  size_t g = 0;
  while (strcmp(argv[0], groups[g]->spec->op) != 0)
    g++; /* kiln_cli_dispatch() found it */
  bench_args a;
  int rc = parse(groups[g]->spec, g, &a, argc, argv);
  if (rc >= 0)
    return rc;
  kiln_cli_pin_pocl();
  return bench_run_groups(&groups[g], 1, groups[g]->spec, &a);
}
