/*
 * bench_out.c — what `kiln bench` writes besides a group's own table: the
 * whole suite's table (one row per record), the records as JSON (json-c;
 * an object: kiln, device, driver, platform and time of the run, then its
 * records) and CSV, and the plot of each sized group's figures against size, one
 * panel per group, drawn by gnuplot when it is installed.
 *
 * A record's "case" is its row's label ("1024", "16M", "3x3") and its
 * "size" that row as a number (n, bytes, points; a layer's or a case's
 * number where the rows are named and have no size).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "kiln_config.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

/* A record's size as a number (see the top of the file). */
static size_t record_x(const bench_record *r)
{
  return r->spec->labels && r->spec->xs ? r->spec->xs[r->size - 1] : r->size;
}

/* ---- the suite's table --------------------------------------------------- */

void bench_print_suite(const bench_records *rs)
{
  printf("%-10s %-7s %-13s %10s  %-8s %s\n", "group", "case", "backend", "median", "unit",
         "vs peer (times faster)");
  for (size_t i = 0; i < rs->n; i++) {
    const bench_record *r = &rs->r[i];
    const char *peer;
    char label[32], ratio[48] = "";
    double q = bench_peer_ratio(rs, r, &peer);
    bench_size_label(r->spec, r->size, label, sizeof label);
    if (!isnan(q))
      snprintf(ratio, sizeof ratio, "%.*fx %s", q < 0.1 ? 3 : 2, q, peer);
    printf("%-10s %-7s %-13s %10.*f  %-*s%s\n", r->spec->op, label, r->backend,
           bench_digits(r->spec), bench_value(r), *ratio ? 9 : 0, bench_unit(r->spec),
           ratio);
  }
  /* each group's note, once */
  for (size_t i = 0; i < rs->n; i++)
    if (rs->r[i].spec->note && (i == 0 || rs->r[i - 1].spec != rs->r[i].spec))
      printf("%s\n", rs->r[i].spec->note);
  printf("Medians after a warm-up; each result was checked before it was timed, against "
         "the CPU reference where there is one.\n");
}

/* ---- JSON and CSV -------------------------------------------------------- */

#if HAVE_JSON_C
static json_object *json_figure(double v)
{
  return isnan(v) ? NULL : json_object_new_double(v);
}

static json_object *json_text(const char *s)
{
  return s ? json_object_new_string(s) : NULL;
}

static json_object *json_record(const bench_record *r)
{
  char label[32];
  bench_size_label(r->spec, r->size, label, sizeof label);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "group", json_object_new_string(r->spec->op));
  json_object_object_add(o, "case", json_object_new_string(label));
  json_object_object_add(o, "size", json_object_new_int64((int64_t)record_x(r)));
  json_object_object_add(o, "backend", json_object_new_string(r->backend));
  json_object_object_add(o, "median", json_object_new_double(bench_value(r)));
  json_object_object_add(o, "unit", json_object_new_string(bench_unit(r->spec)));
  json_object_object_add(o, "repeats", json_object_new_int(r->repeats));
  json_object_object_add(o, "checked", json_object_new_boolean(!r->reference));
  json_object_object_add(o, "op", json_object_new_string(r->op));
  json_object_object_add(o, "dtype", json_text(r->dtype));
  json_object_object_add(o, "shape", json_object_new_string(r->shape));
  json_object_object_add(o, "median_ms", json_object_new_double(r->median_ms));
  json_object_object_add(o, "gflops", json_figure(r->gflops));
  json_object_object_add(o, "gbps", json_figure(r->gbps));
  if (r->has_plan)
    json_object_object_add(o, "plan_ms", json_object_new_double(r->plan_ms));
  if (r->has_allocs)
    json_object_object_add(o, "allocs", json_object_new_int64((int64_t)r->allocs));
  return o;
}
#endif

/* Opens path for writing, or says why not; "stdout" for NULL. */
static FILE *open_out(const char *path)
{
  FILE *f = path ? fopen(path, "w") : stdout;
  if (!f)
    fprintf(stderr, "kiln bench: cannot write '%s': %s\n", path, strerror(errno));
  return f;
}

/* Closes what open_out() opened; 0, or 1 after saying that writing failed. */
static int close_out(FILE *f, const char *path, size_t n)
{
  int bad = ferror(f) != 0;
  if (path)
    bad |= fclose(f) != 0;
  if (bad)
    fprintf(stderr, "kiln bench: writing '%s' failed\n", path ? path : "stdout");
  else if (path)
    fprintf(stderr, "kiln bench: %zu results in %s\n", n, path);
  return bad;
}

int bench_write_json(const bench_records *rs, const char *path)
{
#if HAVE_JSON_C
  FILE *f = open_out(path);
  if (!f)
    return 1;
  json_object *all = json_object_new_object(), *records = json_object_new_array();
  json_object_object_add(all, "kiln", json_text(rs->run.kiln));
  json_object_object_add(all, "device", json_text(rs->run.device));
  json_object_object_add(all, "driver", json_text(rs->run.driver));
  json_object_object_add(all, "platform", json_text(rs->run.platform));
  json_object_object_add(all, "time", json_text(rs->run.time));
  for (size_t i = 0; i < rs->n; i++)
    json_object_array_add(records, json_record(&rs->r[i]));
  json_object_object_add(all, "records", records);
  fprintf(f, "%s\n",
          json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY |
                                                JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(all);
  return close_out(f, path, rs->n);
#else
  (void)rs, (void)path; /* bench.c's parse() refuses --json */
  return 1;
#endif
}

/* A CSV number: empty for NAN. */
static void csv_number(FILE *f, double v)
{
  if (!isnan(v))
    fprintf(f, "%.6g", v);
  fputc(',', f);
}

int bench_write_csv(const bench_records *rs, const char *path)
{
  FILE *f = open_out(path);
  if (!f)
    return 1;
  /* no field holds a comma, a quote or a line break: none is quoted */
  fprintf(f, "group,case,size,backend,median,unit,repeats,checked,op,dtype,shape,"
             "median_ms,gflops,gbps,plan_ms,allocs\n");
  for (size_t i = 0; i < rs->n; i++) {
    const bench_record *r = &rs->r[i];
    char label[32];
    bench_size_label(r->spec, r->size, label, sizeof label);
    fprintf(f, "%s,%s,%zu,%s,", r->spec->op, label, record_x(r), r->backend);
    csv_number(f, bench_value(r));
    fprintf(f, "%s,%d,%s,%s,%s,%s,", bench_unit(r->spec), r->repeats,
            r->reference ? "false" : "true", r->op, r->dtype ? r->dtype : "", r->shape);
    csv_number(f, r->median_ms);
    csv_number(f, r->gflops);
    csv_number(f, r->gbps);
    if (r->has_plan)
      fprintf(f, "%.6g", r->plan_ms);
    fputc(',', f);
    if (r->has_allocs)
      fprintf(f, "%llu", r->allocs);
    fputc('\n', f);
  }
  return close_out(f, path, rs->n);
}

/* ---- the plot ------------------------------------------------------------ */

/* Whether an executable `name` is in one of $PATH's folders. */
static int on_path(const char *name)
{
  const char *path = getenv("PATH");
  char dir[4096];
  while (path && *path) {
    size_t len = strcspn(path, ":");
    if (snprintf(dir, sizeof dir, "%.*s/%s", (int)(len ? len : 1), len ? path : ".",
                 name) < (int)sizeof dir &&
        access(dir, X_OK) == 0)
      return 1;
    path += len + (path[len] == ':');
  }
  return 0;
}

/* s as a gnuplot string in double quotes. */
static void gp_string(FILE *gp, const char *s)
{
  fputc('"', gp);
  for (; *s; s++)
    fprintf(gp, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
  fputc('"', gp);
}

/* Whether records a and b are on one line of the plot: one backend and
 * one series. */
static int same_line(const bench_record *a, const bench_record *b)
{
  const char *const *s = a->spec->series;
  return a->spec == b->spec && strcmp(a->backend, b->backend) == 0 &&
         (!s || strcmp(s[a->size - 1], s[b->size - 1]) == 0);
}

/* The line of record `first`: its points in order of size. */
static void plot_line(FILE *gp, const bench_records *rs, size_t first)
{
  size_t done = 0; /* the x already written: sizes are distinct on a line */
  for (;;) {
    const bench_record *next = NULL;
    for (size_t i = first; i < rs->n; i++)
      if (same_line(&rs->r[first], &rs->r[i]) && record_x(&rs->r[i]) > done &&
          (!next || record_x(&rs->r[i]) < record_x(next)))
        next = &rs->r[i];
    if (!next)
      break;
    done = record_x(next);
    fprintf(gp, "%zu %.6g\n", done, bench_value(next));
  }
  fprintf(gp, "e\n");
}

/* Whether a record of the panel that starts at `first` comes before i with
 * the same line (by_line) or the same size. */
static int seen(const bench_records *rs, size_t first, size_t i, int by_line)
{
  const bench_record *r = &rs->r[i];
  for (size_t j = first; j < i; j++)
    if (by_line ? same_line(&rs->r[j], r)
                : rs->r[j].spec == r->spec && record_x(&rs->r[j]) == record_x(r))
      return 1;
  return 0;
}

/* One panel: the group of record `first`, one line per backend (and
 * series), labelled ticks at its sizes. */
static void plot_panel(FILE *gp, const bench_records *rs, size_t first)
{
  const bench_spec *s = rs->r[first].spec;
  fprintf(gp, "set title ");
  gp_string(gp, s->op);
  fprintf(gp, "\nset xlabel ");
  gp_string(gp, s->axis);
  fprintf(gp, "\nset ylabel ");
  gp_string(gp, bench_unit(s));
  fprintf(gp, "\nset xtics (");
  for (size_t i = first, n = 0; i < rs->n; i++) {
    char label[32];
    if (rs->r[i].spec != s || seen(rs, first, i, 0))
      continue;
    if (s->labels) /* a named row's size, in points: 2^k */
      snprintf(label, sizeof label, "2^%.3g", log2((double)record_x(&rs->r[i])));
    else
      bench_size_label(s, rs->r[i].size, label, sizeof label);
    fprintf(gp, "%s", n++ ? ", " : "");
    gp_string(gp, label);
    fprintf(gp, " %zu", record_x(&rs->r[i]));
  }
  fprintf(gp, ")\nplot ");
  /* the first record of each line names it; its data follows the command */
  for (size_t i = first, n = 0; i < rs->n; i++) {
    if (rs->r[i].spec != s || seen(rs, first, i, 1))
      continue;
    const char *series = s->series ? s->series[rs->r[i].size - 1] : "";
    char title[64];
    snprintf(title, sizeof title, "%s%s%s", rs->r[i].backend, *series ? " " : "", series);
    /* the panel's second series (fft's 2-D) dashed */
    int dashed = s->series && strcmp(series, s->series[rs->r[first].size - 1]) != 0;
    fprintf(gp, "%s'-' using 1:2 with linespoints dashtype %d title ", n++ ? ", " : "",
            dashed ? 2 : 1);
    gp_string(gp, title);
  }
  fprintf(gp, "\n");
  for (size_t i = first; i < rs->n; i++)
    if (rs->r[i].spec == s && !seen(rs, first, i, 1))
      plot_line(gp, rs, i);
}

int bench_plot(const bench_records *rs, const char *path)
{
  if (!on_path("gnuplot")) {
    fprintf(stderr,
            "kiln bench: no plot: gnuplot is not installed (Debian: apt install "
            "gnuplot-nox); %s not written\n",
            path);
    return 0;
  }
  size_t panels = 0;
  for (size_t i = 0; i < rs->n; i++)
    panels += rs->r[i].spec->axis && (i == 0 || rs->r[i - 1].spec != rs->r[i].spec);
  if (!panels) {
    fprintf(stderr, "kiln bench: no plot: none of these results has a size\n");
    return 0;
  }
  size_t cols = panels > 1 ? 2 : 1, rows = (panels + cols - 1) / cols;
  /* gnuplot's messages go to stderr, as ours do; stdout is the table's */
  FILE *gp = popen("gnuplot 1>&2", "w");
  if (!gp) {
    fprintf(stderr, "kiln bench: no plot: cannot run gnuplot: %s\n", strerror(errno));
    return 1;
  }
  /* a gnuplot that dies early must not kill kiln with SIGPIPE */
  void (*old)(int) = signal(SIGPIPE, SIG_IGN);
  fprintf(gp,
          "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "  set terminal pngcairo noenhanced size %zu,%zu\n"
          "} else {\n  set terminal png noenhanced size %zu,%zu\n}\nset output ",
          640 * cols, 420 * rows, 640 * cols, 420 * rows);
  gp_string(gp, path);
  char title[256];
  snprintf(title, sizeof title, "kiln bench on %s", rs->run.device);
  fprintf(gp, "\nset multiplot layout %zu,%zu title ", rows, cols);
  gp_string(gp, title);
  /* the offsets keep the ticks at the ends of the size axis */
  fprintf(gp, "\nset logscale x 2\nset offsets graph 0.05, graph 0.05, 0, 0\nset grid\n"
              "set key left top opaque\nset yrange [0:*]\n");
  for (size_t i = 0; i < rs->n; i++)
    if (rs->r[i].spec->axis && (i == 0 || rs->r[i - 1].spec != rs->r[i].spec))
      plot_panel(gp, rs, i);
  fprintf(gp, "unset multiplot\nset output\n");
  int st = pclose(gp);
  signal(SIGPIPE, old);
  if (st != 0) {
    fprintf(stderr, "kiln bench: no plot: gnuplot failed (above)\n");
    return 1;
  }
  fprintf(stderr, "kiln bench: plot of %zu group%s in %s\n", panels,
          panels == 1 ? "" : "s", path);
  return 0;
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
      const bench_record *r =
        a->use[k] ? bench_find(rs, s, a->sizes[i], s->peers[k]) : NULL;
      if (r)
        printf("  %9.*f", bench_digits(s), bench_value(r));
      else if (a->use[k])
        printf("  %9s", "-");
    }
    for (size_t q = 0; q < s->nratios; q++) {
      double top = bench_speed_at(rs, s, a->sizes[i], s->ratios[q][0]);
      double bottom = bench_speed_at(rs, s, a->sizes[i], s->ratios[q][1]);
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

int bench_write_files(const bench_args *a, const bench_records *rs)
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
  return rc | bench_write_files(a, rs);
}
