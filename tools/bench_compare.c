/*
 * bench_compare.c — `kiln bench --compare OLD.json [--tolerance 10%]`, a
 * regression check as clpeak's --compare: the cases of an earlier --json
 * run (its groups, rows and peers) are measured again, and each is printed
 * with its old and new figure and how many times faster it is now; a case
 * that now takes more than (1 + tolerance) times its old time is SLOWER,
 * and the command exits 1 when any is. Throughputs and times alike: the
 * comparison is of speeds, and a time's speed is its inverse.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kiln_config.h"

#if HAVE_JSON_C
#  include <json-c/json.h>

typedef struct old_case {
  const char *group, *label, *backend, *unit; /* owned by the document */
  long long size;
  double median;
} old_case;

struct bench_old {
  json_object *doc;
  const char *path, *device, *driver, *kiln, *time; /* NULL where not recorded */
  old_case *cases;
  size_t n;
};

/* The string member `key` of o, or NULL. */
static const char *text_of(json_object *o, const char *key)
{
  json_object *v;
  return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
           ? json_object_get_string(v)
           : NULL;
}

/* Record i of the file into c; 0, or -1 after saying what it lacks. */
static int read_case(const char *path, json_object *r, size_t i, old_case *c)
{
  static const char *const keys[] = {"group", "case", "backend", "unit"};
  const char **fields[] = {&c->group, &c->label, &c->backend, &c->unit};
  json_object *size, *median;
  for (size_t k = 0; k < 4; k++)
    if (!(*fields[k] = text_of(r, keys[k])))
      return fprintf(stderr, "kiln bench: --compare %s: record %zu has no \"%s\"\n", path,
                     i + 1, keys[k]),
             -1;
  if (!json_object_object_get_ex(r, "size", &size) ||
      !json_object_object_get_ex(r, "median", &median) ||
      !(json_object_is_type(median, json_type_double) ||
        json_object_is_type(median, json_type_int)))
    return fprintf(stderr,
                   "kiln bench: --compare %s: record %zu has no \"size\" or no number "
                   "\"median\"\n",
                   path, i + 1),
           -1;
  c->size = json_object_get_int64(size);
  c->median = json_object_get_double(median);
  return 0;
}

int bench_old_load(const char *path, bench_old **out)
{
  bench_old *o = calloc(1, sizeof *o);
  json_object *records = NULL;
  *out = NULL;
  if (!o)
    return fprintf(stderr, "kiln bench: out of host memory\n"), -1;
  o->path = path;
  if (!(o->doc = json_object_from_file(path))) {
    fprintf(stderr, "kiln bench: --compare %s: %s\n", path, json_util_get_last_err());
    bench_old_free(o);
    return -1;
  }
  /* an object with its run and "records"; or the bare array of records
   * that --json wrote before it recorded the run */
  if (json_object_is_type(o->doc, json_type_array))
    records = o->doc;
  else if (!json_object_object_get_ex(o->doc, "records", &records) ||
           !json_object_is_type(records, json_type_array))
    records = NULL;
  size_t n = records ? json_object_array_length(records) : 0;
  if (!n || !(o->cases = calloc(n, sizeof *o->cases))) {
    fprintf(stderr, "kiln bench: --compare %s: %s\n", path,
            n ? "out of host memory"
              : "no records: expected what kiln bench --json writes");
    bench_old_free(o);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (read_case(path, json_object_array_get_idx(records, i), i, &o->cases[o->n++]) !=
        0) {
      bench_old_free(o);
      return -1;
    }
  if (records != o->doc) {
    o->device = text_of(o->doc, "device"), o->driver = text_of(o->doc, "driver");
    o->kiln = text_of(o->doc, "kiln"), o->time = text_of(o->doc, "time");
  }
  *out = o;
  return 0;
}

void bench_old_free(bench_old *old)
{
  if (!old)
    return;
  json_object_put(old->doc);
  free(old->cases);
  free(old);
}

/* The row of group s that an old case names: its label ("1-D 2^20") where
 * the rows are named, else its size; 0 when s has no such row. */
static size_t row_of(const bench_spec *s, const old_case *c)
{
  char label[32];
  if (!s->labels)
    return c->size >= (long long)s->min_size && (unsigned long long)c->size <= s->max_size
             ? (size_t)c->size
             : 0;
  for (size_t v = s->min_size; v <= s->max_size; v++) {
    bench_size_label(s, v, label, sizeof label);
    if (strcmp(label, c->label) == 0)
      return v;
  }
  return 0;
}

size_t bench_old_cases(const bench_old *old, const bench_spec *s, bench_args *a)
{
  size_t n = 0;
  a->nsizes = 0;
  memset(a->use, 0, sizeof a->use);
  for (size_t i = 0; i < old->n; i++) {
    const old_case *c = &old->cases[i];
    size_t row = strcmp(c->group, s->op) == 0 ? row_of(s, c) : 0;
    int k = 0;
    while (row && k < s->npeers && strcmp(s->peers[k], c->backend) != 0)
      k++;
    if (!row || k == s->npeers)
      continue;
    if (!s->built[k]) {
      fprintf(stderr, "kiln bench %s: --compare: %s %s is left out: %s\n", s->op,
              c->label, c->backend, s->not_built[k]);
      continue;
    }
    a->use[k] = 1;
    size_t j = 0;
    while (j < a->nsizes && a->sizes[j] != row)
      j++;
    if (j == a->nsizes && a->nsizes < BENCH_MAX_SIZES)
      a->sizes[a->nsizes++] = row;
    n++;
  }
  for (int k = s->selectable; k < s->npeers && n; k++)
    a->use[k] = s->built[k]; /* the peers that always run */
  return n;
}

/* The new record of an old case, or NULL. */
static const bench_record *new_of(const bench_records *rs, const old_case *c)
{
  for (size_t i = 0; i < rs->n; i++) {
    const bench_record *r = &rs->r[i];
    char label[32];
    bench_size_label(r->spec, r->size, label, sizeof label);
    if (strcmp(r->spec->op, c->group) == 0 && strcmp(label, c->label) == 0 &&
        strcmp(r->backend, c->backend) == 0)
      return r;
  }
  return NULL;
}

/* Speed from a figure in unit: throughputs as they are, times inverted. */
static double speed_of(double v, const char *unit)
{
  return strcmp(unit, "us") == 0 || strcmp(unit, "ms") == 0 ? 1 / v : v;
}

size_t bench_compare(const bench_old *old, const bench_records *rs, double tolerance)
{
  size_t slower = 0, missing = 0;
  printf("old: %s: %s, driver %s, kiln %s, %s\nnew: %s, driver %s, kiln %s, %s\n",
         old->path, old->device ? old->device : "(device not recorded)",
         old->driver ? old->driver : "?", old->kiln ? old->kiln : "?",
         old->time ? old->time : "?", rs->run.device, rs->run.driver, rs->run.kiln,
         rs->run.time);
  if (old->device && strcmp(old->device, rs->run.device) != 0)
    fprintf(stderr,
            "kiln bench: --compare: %s was measured on %s, this run on %s: the "
            "ratios compare two devices\n",
            old->path, old->device, rs->run.device);
  printf("%-10s %-9s %-13s %10s %10s  %-8s %9s\n", "group", "case", "backend", "old",
         "new", "unit", "new/old");
  for (size_t i = 0; i < old->n; i++) {
    const old_case *c = &old->cases[i];
    const bench_record *r = new_of(rs, c);
    if (!r || strcmp(bench_unit(r->spec), c->unit) != 0) {
      missing++;
      printf("%-10s %-9s %-13s %10.4g %10s  %-8s %9s\n", c->group, c->label, c->backend,
             c->median, "-", c->unit, r ? "unit changed" : "not run");
      continue;
    }
    double v = bench_value(r);
    double ratio = speed_of(v, c->unit) / speed_of(c->median, c->unit);
    int worse = !(ratio * (1 + tolerance) >= 1); /* NAN too */
    slower += worse;
    printf("%-10s %-9s %-13s %10.*f %10.*f  %-8s %8.2fx%s\n", c->group, c->label,
           c->backend, bench_digits(r->spec), c->median, bench_digits(r->spec), v,
           c->unit, ratio, worse ? "  SLOWER" : "");
  }
  printf("%zu of %zu cases slower than %s's by more than %g%%%s\n", slower, old->n,
         old->path, tolerance * 100, missing ? " (some not run here: above)" : "");
  return slower;
}

#else

int bench_old_load(const char *path, bench_old **out)
{
  (void)path; /* bench.c refuses --compare without json-c */
  *out = NULL;
  return -1;
}

void bench_old_free(bench_old *old)
{
  (void)old;
}

size_t bench_old_cases(const bench_old *old, const bench_spec *s, bench_args *a)
{
  (void)old, (void)s, (void)a;
  return 0;
}

size_t bench_compare(const bench_old *old, const bench_records *rs, double tolerance)
{
  (void)old, (void)rs, (void)tolerance;
  return 0;
}

#endif
