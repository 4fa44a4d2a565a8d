/*
 * bench.c — `kiln bench`: the whole suite, or one group of it, and what
 * every group shares: options, medians, records, the per-group table (see
 * bench.h). The groups are bench_gemm.c, bench_conv.c, bench_reduce.c,
 * bench_fft.c, bench_launch.c, bench_overhead.c, bench_streams.c,
 * bench_bandwidth.c, bench_compile.c and bench_mlp.c; the suite's table and the JSON,
 * CSV and plot files are bench_out.c, --compare bench_compare.c.
 *
 * Every figure is a median over repeats after a warm-up, and every result
 * is checked (against a CPU reference or the peer) before it is timed.
 */
#define KILN_EXPERIMENTAL /* kiln_tuning_stats() */
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
#include "cli.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#  include <json-c/json_pointer.h>
#endif

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

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
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

/* A group's sizes, repeats and peers where the options leave them out. */
static void fill_defaults(const bench_spec *s, bench_args *a, int sizes_given,
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
  fill_defaults(s, a, sizes_given, kiln_cli_given(c, given, "--repeat"), backends_given);
  for (int k = 0; k < s->npeers; k++)
    if (a->use[k] && !s->built[k])
      return kiln_cli_usage_error(c, "--backend", "%s", s->not_built[k]);
  return -1;
}

/* ---- measurements and records -------------------------------------------- */

double bench_median(double *ms, int n)
{
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  return ms[n / 2];
}

int bench_time(double (*once)(void *ctx), void *ctx, int repeats, double *median)
{
  double *ms = calloc((size_t)repeats, sizeof *ms);
  int rc = ms ? 0 : -1;
  for (int r = 0; r < repeats && rc == 0; r++)
    if ((ms[r] = once(ctx)) < 0)
      rc = -1;
  if (rc == 0)
    *median = bench_median(ms, repeats);
  free(ms);
  return rc;
}

float *bench_values(size_t n, uint64_t seed)
{
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; v && i < n; i++) {
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    v[i] = (float)((seed >> 40) % 1000) / 1000.0f - 0.5f;
  }
  return v;
}

int bench_time_kiln(kiln_runtime *rt, double (*once)(void *ctx), void *ctx, int repeats,
                    double *median)
{
  if (bench_time(once, ctx, repeats, median) == 0)
    return 0;
  fprintf(stderr, " FAILED (%s)\n", kiln_last_error(rt));
  return -1;
}

int bench_each_size(kiln_runtime *rt, const bench_args *a, bench_records *out,
                    int (*measure)(kiln_runtime *rt, const bench_args *a, size_t size,
                                   bench_records *out))
{
  int rc = 0;
  for (size_t s = 0; s < a->nsizes && rc == 0; s++)
    rc = measure(rt, a, a->sizes[s], out);
  return rc;
}

void bench_add(bench_records *rs, const bench_record *r)
{
  if (rs->n == BENCH_MAX_RECORDS)
    return;
  bench_record *o = &rs->r[rs->n++];
  *o = *r;
  o->spec = rs->spec;
  if (!o->repeats)
    o->repeats = rs->repeats;
}

double bench_value(const bench_record *r)
{
  switch (r->spec->figure) {
  case BENCH_GBPS: return r->gbps;
  case BENCH_US: return r->median_ms * 1e3;
  case BENCH_MS: return r->median_ms;
  default: return r->gflops;
  }
}

const char *bench_unit(const bench_spec *s)
{
  static const char *const units[] = {"GFLOP/s", "GB/s", "us", "ms"};
  return units[s->figure];
}

int bench_digits(const bench_spec *s)
{
  return s->figure == BENCH_GBPS ? 2 : 1;
}

/* Higher is faster, whatever the unit. */
static double speed(const bench_record *r)
{
  double v = bench_value(r);
  return r->spec->figure == BENCH_US || r->spec->figure == BENCH_MS ? 1 / v : v;
}

static int peer_index(const bench_spec *s, const char *backend)
{
  int k = 0;
  while (k < s->npeers && strcmp(s->peers[k], backend) != 0)
    k++;
  return k;
}

static const bench_record *find(const bench_records *rs, const bench_spec *s, size_t size,
                                const char *backend)
{
  for (size_t i = 0; i < rs->n; i++)
    if (rs->r[i].spec == s && rs->r[i].size == size &&
        strcmp(rs->r[i].backend, backend) == 0)
      return &rs->r[i];
  return NULL;
}

/* The speed of `backend` at a size, or for "best" the best of the spec's
 * first best_of peers; 0 when there is no such record. */
static double speed_at(const bench_records *rs, const bench_spec *s, size_t size,
                       const char *backend)
{
  if (s->best_of && strcmp(backend, "best") == 0) {
    double best = 0;
    for (int k = 0; k < s->best_of; k++)
      best = fmax(best, speed_at(rs, s, size, s->peers[k]));
    return best;
  }
  const bench_record *r = find(rs, s, size, backend);
  return r ? speed(r) : 0;
}

double bench_peer_ratio(const bench_records *rs, const bench_record *r, const char **peer)
{
  const bench_spec *s = r->spec;
  for (size_t q = 0; q < s->nratios; q++) {
    const char *top = s->ratios[q][0];
    int best = s->best_of && strcmp(top, "best") == 0;
    if (strcmp(top, r->backend) == 0 ||
        (best && peer_index(s, r->backend) < s->best_of)) {
      double bottom = speed_at(rs, s, r->size, s->ratios[q][1]);
      *peer = s->ratios[q][1];
      return bottom > 0 ? speed(r) / bottom : NAN;
    }
  }
  *peer = "";
  return NAN;
}

void bench_size_label(const bench_spec *s, size_t v, char *buf, size_t size)
{
  static const char units[] = "GMK";
  if (s->labels) {
    snprintf(buf, size, "%s", s->labels[v - 1]);
    return;
  }
  for (int u = 0; s->byte_sizes && u < 3; u++) {
    size_t one = (size_t)1 << (30 - 10 * u);
    if (v % one == 0) {
      snprintf(buf, size, "%zu%c", v / one, units[u]);
      return;
    }
  }
  snprintf(buf, size, "%zu", v);
}

/* ---- one group's table --------------------------------------------------- */

/* Sizes down, peers across, then the ratios; plan times and the note. */
static void print_table(const bench_spec *s, const bench_args *a, const bench_records *rs)
{
  printf("%-6s", s->labels ? "case" : "size");
  for (int k = 0; k < s->npeers; k++)
    if (a->use[k])
      printf("  %9s", s->peers[k]);
  for (size_t q = 0; q < s->nratios; q++) {
    char head[64];
    snprintf(head, sizeof head, "%s/%s", s->ratios[q][0], s->ratios[q][1]);
    printf("  %14s", head);
  }
  printf("   (%s, medians)\n", bench_unit(s));
  for (size_t i = 0; i < a->nsizes; i++) {
    char label[32];
    bench_size_label(s, a->sizes[i], label, sizeof label);
    printf("%-6s", label);
    for (int k = 0; k < s->npeers; k++) {
      const bench_record *r = a->use[k] ? find(rs, s, a->sizes[i], s->peers[k]) : NULL;
      if (r)
        printf("  %9.*f", bench_digits(s), bench_value(r));
      else if (a->use[k])
        printf("  %9s", "-");
    }
    for (size_t q = 0; q < s->nratios; q++) {
      double top = speed_at(rs, s, a->sizes[i], s->ratios[q][0]);
      double bottom = speed_at(rs, s, a->sizes[i], s->ratios[q][1]);
      if (top > 0 && bottom > 0)
        printf("  %13.2fx", top / bottom);
      else
        printf("  %14s", "-");
    }
    printf("\n");
  }
  int plans = 0;
  for (size_t i = 0; i < rs->n; i++) {
    char label[32];
    if (!rs->r[i].has_plan)
      continue;
    bench_size_label(s, rs->r[i].size, label, sizeof label);
    printf("%s %s %s %.0f ms", plans++ ? "," : "plan   ", label, rs->r[i].backend,
           rs->r[i].plan_ms);
  }
  if (plans)
    printf("\n");
  if (s->note)
    printf("%s\n", s->note);
}

/* The files of --json FILE, --csv and --plot; 0, or 1 when one could not be
 * written. */
static int write_files(const bench_args *a, const bench_records *rs)
{
  int rc = 0;
  if (a->json_path)
    rc |= bench_write_json(rs, a->json_path);
  if (a->csv_path)
    rc |= bench_write_csv(rs, a->csv_path);
  if (a->plot_path)
    rc |= bench_plot(rs, a->plot_path);
  return rc;
}

int bench_print(const bench_spec *s, const bench_args *a, const bench_records *rs)
{
  int rc = 0;
  if (a->json)
    rc |= bench_write_json(rs, NULL);
  else if (s)
    print_table(s, a, rs);
  else
    bench_print_suite(rs);
  fflush(stdout);
  return rc | write_files(a, rs);
}

/* ---- the command --------------------------------------------------------- */

/* Puts the records in the order of the tables: by group, then by row (in
 * the order first measured), then by peer; the CPU peers run last. */
static void sort_records(bench_records *rs)
{
  size_t key[BENCH_MAX_RECORDS];
  for (size_t i = 0; i < rs->n; i++) {
    const bench_record *r = &rs->r[i];
    size_t group = 0, row = 0;
    while (rs->r[group].spec != r->spec)
      group++;
    while (rs->r[row].spec != r->spec || rs->r[row].size != r->size)
      row++;
    key[i] = (group * BENCH_MAX_RECORDS + row) * BENCH_MAX_PEERS +
             (size_t)peer_index(r->spec, r->backend);
  }
  for (size_t i = 1; i < rs->n; i++) { /* insertion: stable, and few records */
    bench_record r = rs->r[i];
    size_t k = key[i], j = i;
    for (; j > 0 && key[j - 1] > k; j--) {
      rs->r[j] = rs->r[j - 1];
      key[j] = key[j - 1];
    }
    rs->r[j] = r;
    key[j] = k;
  }
}

/* The run: the device, its driver and platform, kiln's version, and the
 * time, now. */
static void describe_run(kiln_runtime *rt, bench_run *run)
{
  const kiln_device_info *d = kiln_runtime_device(rt);
  time_t now = time(NULL);
  struct tm utc;
  *run = (bench_run){.device = d->name,
                     .driver = d->driver_version,
                     .platform = d->platform_name,
                     .kiln = kiln_version()};
  if (gmtime_r(&now, &utc))
    strftime(run->time, sizeof run->time, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* A runtime on the device kiln picks; without the device's tuning record
 * (its parameters and per-shape choices) when untuned. */
static kiln_runtime *open_runtime(int untuned)
{
  kiln_options o;
  kiln_options_init(&o);
  o.no_tuning = untuned;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(&o, &rt) != KILN_OK)
    kiln_cli_say("kiln bench", kiln_last_error(NULL));
  return rt;
}

/* --untuned's rounds: each group runs this many times on each runtime,
 * tuned and untuned in turn and in alternating order, so that a slow spell
 * of the machine (a shared VM's last seconds) falls on both sides. */
#define UNTUNED_ROUNDS 3

/* Into out, every record of rounds[0] as its median round (by speed)
 * measured it: a figure that one slow round cannot move. */
static void median_round(const bench_records *rounds, int n, bench_records *out)
{
  *out = rounds[0];
  for (size_t i = 0; i < out->n; i++) {
    const bench_record *r = &out->r[i], *at[UNTUNED_ROUNDS];
    int m = 0;
    for (int k = 0; k < n; k++)
      if ((at[m] = find(&rounds[k], r->spec, r->size, r->backend)))
        m++;
    for (int j = 1; j < m; j++) /* insertion sort by speed */
      for (int q = j; q > 0 && speed(at[q]) < speed(at[q - 1]); q--) {
        const bench_record *t = at[q];
        at[q] = at[q - 1], at[q - 1] = t;
      }
    out->r[i] = *at[m / 2];
  }
}

/* Whether a tuning record applies to the tuned runtime at all, and whether
 * it hands CLBlast parameters (kiln tune --clblast); set by --untuned. */
static int record_applies, clblast_tuned;

/* The row's parts of a tuning record (bench_spec's reach), or NULL: the
 * whole record. */
static const char *reach_of(const bench_record *r)
{
  const bench_spec *s = r->spec;
  size_t k = s->reach_by_case ? r->size - 1 : (size_t)peer_index(s, r->backend);
  size_t n = s->reach_by_case ? s->max_size : (size_t)s->npeers;
  return s->reach && k < n ? s->reach[k] : NULL;
}

#if HAVE_JSON_C
/* kiln_tuning_get() of the tuned runtime and of the untuned one (the
 * rules' values), parsed; set by --untuned, NULL when either cannot be
 * had. */
static json_object *tuned_params, *rule_params;

/* The value at the dotted path of len characters ("gemm.f32") in o, or
 * NULL: json-c's JSON pointer ("/gemm/f32"). */
static json_object *at_path(json_object *o, const char *path, size_t len)
{
  char pointer[64];
  json_object *v = NULL;
  if (!o || len + 1 >= sizeof pointer)
    return NULL;
  pointer[0] = '/';
  for (size_t i = 0; i < len; i++)
    pointer[i + 1] = path[i] == '.' ? '/' : path[i];
  pointer[len + 1] = '\0';
  return json_pointer_get(o, pointer, &v) == 0 ? v : NULL;
}
#endif

/* Frees what --untuned parsed. */
static void drop_params(void)
{
#if HAVE_JSON_C
  json_object_put(tuned_params);
  json_object_put(rule_params);
  tuned_params = rule_params = NULL;
#endif
}

/* Whether the tuned runtime runs row r with the rules' parameters: every
 * part of the record the row's reach names is what the untuned runtime
 * has (both absent counts as the same). */
static int at_rules(const bench_record *r)
{
#if HAVE_JSON_C
  const char *parts = reach_of(r);
  if (!parts || !tuned_params || !rule_params)
    return 0;
  for (const char *p = parts + strspn(parts, " "); *p; p += strspn(p, " ")) {
    size_t n = strcspn(p, " ");
    json_object *a = at_path(tuned_params, p, n), *b = at_path(rule_params, p, n);
    if (a != b && !(a && b && json_object_equal(a, b)))
      return 0;
    p += n;
  }
  return 1;
#else
  (void)r;
  return 0;
#endif
}

/* A row no tuning record reaches: a host peer, a library's peer past
 * tuned_peers, CLBlast's rows when the record holds no CLBlast parameters,
 * any row of a group the record does not touch. */
static int unreached(const bench_record *r)
{
  int k = peer_index(r->spec, r->backend);
  return r->spec->untouched || k >= r->spec->npeers - r->spec->host_peers ||
         (r->spec->tuned_peers && k >= r->spec->tuned_peers) ||
         (!clblast_tuned && strcmp(r->backend, "clblast") == 0);
}

/* A row --untuned reads as the run's noise: every row when no record
 * applies (both runtimes run kiln's rules), one no record reaches, or one
 * whose parameters the record holds at the rules' values (kiln tune kept
 * them): either way both sides run the same code. */
static int noise_row(const bench_record *r)
{
  return !record_applies || unreached(r) || at_rules(r);
}

/* How far from 1 a ratio is, either way: 1.25 for 0.8 and for 1.25. */
static double off_one(double ratio)
{
  return ratio < 1 ? 1 / ratio : ratio;
}

/* One item of a list on stdout, after a comma from the second on. */
static void say_item(int *said, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  printf("%s", (*said)++ ? ", " : "");
  vprintf(fmt, ap);
  va_end(ap);
}

/* --untuned: every figure tuned beside untuned (each its median round),
 * their ratio, and its lowest and highest round by round. The noise rows
 * (noise_row()) run the same code on both sides, so how far their ratios
 * stray from 1 is the run's noise: a kiln figure is named slower when it
 * was slower in every round and further below 1 than the noise rows of its
 * case (measured in the same rounds) stray either way, or in a group
 * without any, than the furthest noise row of the run; and never by less
 * than the noise rows' median stray (a case whose one host peer read 1.00
 * by chance would otherwise name a kiln row at 0.99). */
static void print_untuned(const bench_records *tuned, const bench_records *untuned,
                          const bench_records *t_rounds, const bench_records *u_rounds,
                          int rounds)
{
  printf("\ntuned against untuned (KILN_TUNING=0), same run, %d rounds each in "
         "alternating order:\n",
         rounds);
  printf("%-9s %-12s %-13s %10s %10s %14s %15s\n", "group", "case", "backend", "tuned",
         "untuned", "tuned/untuned", "rounds");
  double lo = INFINITY, hi = 0, ratio[BENCH_MAX_RECORDS], top[BENCH_MAX_RECORDS];
  int noisy[BENCH_MAX_RECORDS]; /* noise_row() of each */
  for (size_t i = 0; i < tuned->n; i++) {
    const bench_record *t = &tuned->r[i];
    const bench_record *u = find(untuned, t->spec, t->size, t->backend);
    noisy[i] = noise_row(t);
    double least = INFINITY; /* the rounds' lowest ratio; top[i] the highest */
    ratio[i] = NAN, top[i] = 0;
    for (int k = 0; u && k < rounds; k++) {
      const bench_record *tk = find(&t_rounds[k], t->spec, t->size, t->backend);
      const bench_record *uk = find(&u_rounds[k], t->spec, t->size, t->backend);
      if (tk && uk) {
        least = fmin(least, speed(tk) / speed(uk));
        top[i] = fmax(top[i], speed(tk) / speed(uk));
      }
    }
    if (!top[i])
      continue;
    ratio[i] = speed(t) / speed(u);
    char label[32];
    bench_size_label(t->spec, t->size, label, sizeof label);
    printf("%-9s %-12s %-13s %10.*f %10.*f %13.2fx %7.2f-%.2fx\n", t->spec->op, label,
           t->backend, bench_digits(t->spec), bench_value(t), bench_digits(t->spec),
           bench_value(u), ratio[i], least, top[i]);
    if (noisy[i])
      lo = fmin(lo, ratio[i]), hi = fmax(hi, ratio[i]);
  }
  if (!hi) {
    printf("no row here runs the same code on both sides (a host peer, say), so this "
           "run measured no noise to judge by: no verdict (leave --backend out)\n");
    return;
  }
  double noise = fmax(off_one(lo), off_one(hi)), strays[BENCH_MAX_RECORDS];
  size_t nstray = 0;
  for (size_t i = 0; i < tuned->n; i++)
    if (noisy[i] && !isnan(ratio[i]))
      strays[nstray++] = off_one(ratio[i]);
  double typical = bench_median(strays, (int)nstray);
  if (!record_applies) {
    printf(
      "no tuning record applies to this device (kiln tune makes one): both sides ran "
      "kiln's rules, so every ratio above is this run's noise, %.2fx to %.2fx "
      "(their median strays %.2fx from 1)\n",
      lo, hi, typical);
    return;
  }
  int said = 0, host = 0; /* items of the list said so far */
  for (size_t i = 0; i < tuned->n; i++)
    host |= tuned->r[i].spec->host_peers > 0;
  if (host)
    say_item(&said, "the host peers");
  for (size_t i = 0; i < tuned->n; i++) { /* each group once */
    const bench_spec *g = tuned->r[i].spec;
    if (i && tuned->r[i - 1].spec == g)
      continue;
    if (g->untouched)
      say_item(&said, "the %s group", g->op);
    else if (!clblast_tuned && peer_index(g, "clblast") < g->npeers)
      say_item(&said, "%s clblast", g->op);
    for (int k = g->tuned_peers; k && k < g->npeers - g->host_peers; k++)
      say_item(&said, "%s %s", g->op, g->peers[k]);
  }
  if (said)
    printf(" (no record reaches them)");
  int kept = 0; /* rows at the rules' values: each peer (or case) once */
  for (size_t i = 0; i < tuned->n; i++) {
    const bench_record *t = &tuned->r[i];
    const char *parts = reach_of(t); /* a record applies: noisy is at_rules() */
    if (!noisy[i] || unreached(t) || !parts[strspn(parts, " ")])
      continue;
    size_t j = 0;
    while (j < i &&
           !(tuned->r[j].spec == t->spec &&
             (t->spec->reach_by_case ? tuned->r[j].size == t->size
                                     : !strcmp(tuned->r[j].backend, t->backend))))
      j++;
    if (j < i)
      continue;
    char label[32];
    bench_size_label(t->spec, t->size, label, sizeof label);
    printf("%s %s %s",
           kept++ ? ","
           : said ? ", and where the record holds the rules' values,"
                  : "where the record holds the rules' values,",
           t->spec->op, t->spec->reach_by_case ? label : t->backend);
  }
  printf(": tuned/untuned %.2fx to %.2fx, this run's noise (their median strays %.2fx "
         "from 1)\n",
         lo, hi, typical);
  int slower = 0;
  for (size_t i = 0; i < tuned->n; i++) {
    const bench_record *t = &tuned->r[i];
    if (noisy[i] || !(top[i] < 1))
      continue;
    double stray = 0; /* the case's noise rows' */
    for (size_t j = 0; j < tuned->n; j++)
      if (tuned->r[j].spec == t->spec && tuned->r[j].size == t->size && noisy[j] &&
          !isnan(ratio[j]))
        stray = fmax(stray, off_one(ratio[j]));
    if (!(ratio[i] * fmax(stray > 0 ? stray : noise, typical) < 1))
      continue;
    char label[32];
    bench_size_label(t->spec, t->size, label, sizeof label);
    printf("%s %s %s %s %.2fx",
           slower++ ? "," : "slower tuned beyond the noise:", t->spec->op, label,
           t->backend, ratio[i]);
  }
  printf(slower
           ? "\n"
           : "no kiln figure is slower tuned in every round and by more than the "
             "noise rows of its case (above) stray from 1 (or, without any, the run's "
             "noise)\n");
}

/* Measures `count` groups with the options o into one set of records and
 * prints it (s: the one group's table, NULL: the suite's). With --untuned,
 * each group runs UNTUNED_ROUNDS times on this runtime and as many on a
 * second one without the tuning record, in turn, and the table is of the
 * median rounds. */
static int run(const bench_group *const *gs, size_t count, const bench_spec *s,
               const bench_args *o)
{
  bench_old *old = NULL;
  if (o->compare && bench_old_load(o->compare, &old) != 0)
    return 1;
  int rounds = o->untuned ? UNTUNED_ROUNDS : 1;
  kiln_runtime *rt = open_runtime(0), *plain = o->untuned && rt ? open_runtime(1) : NULL;
  if (plain) {
    kiln_tuning_usage tu;
    kiln_tuning_usage_init(&tu);
    int known = kiln_tuning_stats(rt, &tu) == KILN_OK;
    record_applies = known && tu.tuned;
    clblast_tuned = known && tu.clblast_applied > 0;
#if HAVE_JSON_C
    char *tj = NULL, *rj = NULL;
    if (kiln_tuning_get(rt, &tj) == KILN_OK && kiln_tuning_get(plain, &rj) == KILN_OK) {
      tuned_params = json_tokener_parse(tj);
      rule_params = json_tokener_parse(rj);
    }
    free(tj);
    free(rj);
#endif
  }
  /* ts[0..rounds-1], then the median round's at ts[rounds]; us alike */
  bench_records *ts = calloc((size_t)rounds + 1, sizeof *ts);
  bench_records *us = o->untuned ? calloc((size_t)rounds + 1, sizeof *us) : NULL;
  if (!rt || !ts || (o->untuned && (!plain || !us))) {
    if (rt && (!o->untuned || plain))
      fprintf(stderr, "kiln bench: out of host memory\n");
    free(ts);
    free(us);
    drop_params();
    kiln_cli_runtime_destroy(plain);
    kiln_cli_runtime_destroy(rt);
    bench_old_free(old);
    return 1;
  }
  describe_run(rt, &ts[0].run);
  double t0 = bench_now_ms();
  int failed = 0, cases = 0;
  if (!s)
    fprintf(stderr, "kiln bench: the whole suite on %s%s\n", ts[0].run.device,
            o->quick ? " (--quick: small sizes, figures not to quote)" : "");
  for (size_t g = 0; g < count; g++) {
    bench_args a = *o;
    if (old && !bench_old_cases(old, gs[g]->spec, &a))
      continue; /* OLD.json has none of this group's cases */
    cases++;
    if (!s && !old) /* the suite: each group's own sizes and peers */
      fill_defaults(gs[g]->spec, &a, 0, o->repeats > 0, 0);
    else if (old)
      fill_defaults(gs[g]->spec, &a, 1, o->repeats > 0, 1); /* the repeats */
    for (int k = 0; k < rounds; k++)
      for (int side = 0; side < (o->untuned ? 2 : 1); side++) {
        int untuned = o->untuned && side != (k & 1); /* T U, U T, T U */
        bench_records *r = untuned ? &us[k] : &ts[k];
        if (o->untuned)
          fprintf(stderr, "kiln bench %s: round %d of %d, %s\n", gs[g]->spec->op, k + 1,
                  rounds, untuned ? "untuned" : "tuned");
        r->spec = gs[g]->spec;
        r->repeats = a.repeats;
        failed |= gs[g]->run(untuned ? plain : rt, &a, r) != 0;
      }
  }
  bench_records *rs = &ts[0];
  if (o->untuned) {
    median_round(ts, rounds, &ts[rounds]);
    median_round(us, rounds, &us[rounds]);
    rs = &ts[rounds];
  }
  if (!s)
    fprintf(stderr, "kiln bench: %zu results in %.1f s%s\n", rs->n,
            (bench_now_ms() - t0) / 1e3, failed ? "; a group FAILED (above)" : "");
  sort_records(rs);
  int rc = 0;
  if (old && !cases)
    fprintf(stderr, "kiln bench: --compare %s has no case of %s\n", o->compare,
            s ? s->op : "the groups kiln bench knows");
  else if (old)
    rc = (bench_compare(old, rs, o->tolerance) > 0) | write_files(o, rs);
  else if (rs->n)
    rc = bench_print(s, o, rs);
  if (us && !o->json)
    print_untuned(rs, &us[rounds], ts, us, rounds);
  free(ts);
  free(us);
  drop_params();
  kiln_cli_runtime_destroy(plain);
  kiln_cli_runtime_destroy(rt);
  bench_old_free(old);
  return failed || rc || (old && !cases) ? 1 : 0;
}

static int run_suite(int argc, char **argv)
{
  bench_args a;
  int rc = parse(NULL, 0, &a, argc, argv);
  if (rc >= 0)
    return rc;
  kiln_cli_pin_pocl();
  return run(groups, NGROUPS, NULL, &a);
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
  return run(&groups[g], 1, groups[g]->spec, &a);
}
