/*
 * bench_untuned.c — `kiln bench --untuned`: every case on a second runtime
 * without the device's tuning record as well, in rounds, and the table of
 * tuned against untuned with the run's noise to judge it by. What it knows
 * of the two runtimes is a bench_untuned (bench_cmd.h), passed.
 */
#define KILN_EXPERIMENTAL /* kiln_tuning_stats() */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cmd.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#  include <json-c/json_pointer.h>
#endif

void bench_median_round(const bench_records *rounds, int n, bench_records *out)
{
  *out = rounds[0];
  for (size_t i = 0; i < out->n; i++) {
    const bench_record *r = &out->r[i], *at[BENCH_UNTUNED_ROUNDS];
    int m = 0;
    for (int k = 0; k < n; k++)
      if ((at[m] = bench_find(&rounds[k], r->spec, r->size, r->backend)))
        m++;
    for (int j = 1; j < m; j++) /* insertion sort by speed */
      for (int q = j; q > 0 && bench_speed(at[q]) < bench_speed(at[q - 1]); q--) {
        const bench_record *t = at[q];
        at[q] = at[q - 1], at[q - 1] = t;
      }
    out->r[i] = *at[m / 2];
  }
}

/* The row's parts of a tuning record (bench_spec's reach), or NULL: the
 * whole record. */
static const char *reach_of(const bench_record *r)
{
  const bench_spec *s = r->spec;
  size_t k = s->reach_by_case ? r->size - 1 : (size_t)bench_peer_index(s, r->backend);
  size_t n = s->reach_by_case ? s->max_size : (size_t)s->npeers;
  return s->reach && k < n ? s->reach[k] : NULL;
}

#if HAVE_JSON_C
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

void bench_untuned_open(bench_untuned *u, kiln_runtime *rt, kiln_runtime *plain)
{
  kiln_tuning_usage tu;
  kiln_tuning_usage_init(&tu);
  int known = kiln_tuning_stats(rt, &tu) == KILN_OK;
  *u = (bench_untuned){.record_applies = known && tu.tuned,
                       .clblast_tuned = known && tu.clblast_applied > 0};
#if HAVE_JSON_C
  char *tj = NULL, *rj = NULL;
  if (kiln_tuning_get(rt, &tj) == KILN_OK && kiln_tuning_get(plain, &rj) == KILN_OK) {
    u->tuned_params = json_tokener_parse(tj);
    u->rule_params = json_tokener_parse(rj);
  }
  free(tj);
  free(rj);
#else
  (void)plain;
#endif
}

void bench_untuned_close(bench_untuned *u)
{
#if HAVE_JSON_C
  json_object_put(u->tuned_params);
  json_object_put(u->rule_params);
#endif
  u->tuned_params = u->rule_params = NULL;
}

/* Whether the tuned runtime runs row r with the rules' parameters: every
 * part of the record the row's reach names is what the untuned runtime
 * has (both absent counts as the same). */
static int at_rules(const bench_untuned *u, const bench_record *r)
{
#if HAVE_JSON_C
  const char *parts = reach_of(r);
  if (!parts || !u->tuned_params || !u->rule_params)
    return 0;
  for (const char *p = parts + strspn(parts, " "); *p; p += strspn(p, " ")) {
    size_t n = strcspn(p, " ");
    json_object *a = at_path(u->tuned_params, p, n), *b = at_path(u->rule_params, p, n);
    if (a != b && !(a && b && json_object_equal(a, b)))
      return 0;
    p += n;
  }
  return 1;
#else
  (void)u, (void)r;
  return 0;
#endif
}

/* A row no tuning record reaches: a host peer, a library's peer past
 * tuned_peers, CLBlast's rows when the record holds no CLBlast parameters,
 * any row of a group the record does not touch. */
static int unreached(const bench_untuned *u, const bench_record *r)
{
  int k = bench_peer_index(r->spec, r->backend);
  return r->spec->untouched || k >= r->spec->npeers - r->spec->host_peers ||
         (r->spec->tuned_peers && k >= r->spec->tuned_peers) ||
         (!u->clblast_tuned && strcmp(r->backend, "clblast") == 0);
}

/* A row --untuned reads as the run's noise: every row when no record
 * applies (both runtimes run kiln's rules), one no record reaches, or one
 * whose parameters the record holds at the rules' values (kiln tune kept
 * them): either way both sides run the same code. */
static int noise_row(const bench_untuned *u, const bench_record *r)
{
  return !u->record_applies || unreached(u, r) || at_rules(u, r);
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

/* What bench_print_untuned() read of each row: its ratio tuned/untuned of
 * the median rounds (NAN: none), the highest of its rounds (0: none), and
 * whether it is a noise row (noise_row()); and the lowest and highest ratio
 * of the noise rows (hi 0: there are none). */
typedef struct untuned_rows {
  double lo, hi, ratio[BENCH_MAX_RECORDS], top[BENCH_MAX_RECORDS];
  int noisy[BENCH_MAX_RECORDS];
} untuned_rows;

/* The table: every figure tuned beside untuned, their ratio, and its lowest
 * and highest round by round; what it read into w. */
static void print_rows(const bench_untuned *u, const bench_records *tuned,
                       const bench_records *untuned, const bench_records *t_rounds,
                       const bench_records *u_rounds, int rounds, untuned_rows *w)
{
  printf("\ntuned against untuned (KILN_TUNING=0), same run, %d rounds each in "
         "alternating order:\n",
         rounds);
  printf("%-9s %-12s %-13s %10s %10s %14s %15s\n", "group", "case", "backend", "tuned",
         "untuned", "tuned/untuned", "rounds");
  w->lo = INFINITY, w->hi = 0;
  for (size_t i = 0; i < tuned->n; i++) {
    const bench_record *t = &tuned->r[i];
    const bench_record *un = bench_find(untuned, t->spec, t->size, t->backend);
    w->noisy[i] = noise_row(u, t);
    double least = INFINITY; /* the rounds' lowest ratio; top[i] the highest */
    w->ratio[i] = NAN, w->top[i] = 0;
    for (int k = 0; un && k < rounds; k++) {
      const bench_record *tk = bench_find(&t_rounds[k], t->spec, t->size, t->backend);
      const bench_record *uk = bench_find(&u_rounds[k], t->spec, t->size, t->backend);
      if (tk && uk) {
        least = fmin(least, bench_speed(tk) / bench_speed(uk));
        w->top[i] = fmax(w->top[i], bench_speed(tk) / bench_speed(uk));
      }
    }
    if (!w->top[i])
      continue;
    w->ratio[i] = bench_speed(t) / bench_speed(un);
    char label[32];
    bench_size_label(t->spec, t->size, label, sizeof label);
    printf("%-9s %-12s %-13s %10.*f %10.*f %13.2fx %7.2f-%.2fx\n", t->spec->op, label,
           t->backend, bench_digits(t->spec), bench_value(t), bench_digits(t->spec),
           bench_value(un), w->ratio[i], least, w->top[i]);
    if (w->noisy[i])
      w->lo = fmin(w->lo, w->ratio[i]), w->hi = fmax(w->hi, w->ratio[i]);
  }
}

/* The list of what no record reaches: the host peers, untouched groups,
 * CLBlast's rows without CLBlast parameters, peers past tuned_peers.
 * Returns how many items it said. */
static int say_unreached(const bench_untuned *u, const bench_records *tuned)
{
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
    else if (!u->clblast_tuned && bench_peer_index(g, "clblast") < g->npeers)
      say_item(&said, "%s clblast", g->op);
    for (int k = g->tuned_peers; k && k < g->npeers - g->host_peers; k++)
      say_item(&said, "%s %s", g->op, g->peers[k]);
  }
  if (said)
    printf(" (no record reaches them)");
  return said;
}

/* The noise rows a record reaches at the rules' values, each peer (or
 * case) once, after the `said` items of say_unreached(). */
static void say_at_rules(const bench_untuned *u, const bench_records *tuned,
                         const untuned_rows *w, int said)
{
  int kept = 0;
  for (size_t i = 0; i < tuned->n; i++) {
    const bench_record *t = &tuned->r[i];
    const char *parts = reach_of(t); /* a record applies: noisy is at_rules() */
    if (!w->noisy[i] || unreached(u, t) || !parts[strspn(parts, " ")])
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
}

/* The kiln figures slower tuned beyond the noise (bench_print_untuned()). */
static void say_slower(const bench_records *tuned, const untuned_rows *w, double noise,
                       double typical)
{
  int slower = 0;
  for (size_t i = 0; i < tuned->n; i++) {
    const bench_record *t = &tuned->r[i];
    if (w->noisy[i] || !(w->top[i] < 1))
      continue;
    double stray = 0; /* the case's noise rows' */
    for (size_t j = 0; j < tuned->n; j++)
      if (tuned->r[j].spec == t->spec && tuned->r[j].size == t->size && w->noisy[j] &&
          !isnan(w->ratio[j]))
        stray = fmax(stray, off_one(w->ratio[j]));
    if (!(w->ratio[i] * fmax(stray > 0 ? stray : noise, typical) < 1))
      continue;
    char label[32];
    bench_size_label(t->spec, t->size, label, sizeof label);
    printf("%s %s %s %s %.2fx",
           slower++ ? "," : "slower tuned beyond the noise:", t->spec->op, label,
           t->backend, w->ratio[i]);
  }
  printf(slower
           ? "\n"
           : "no kiln figure is slower tuned in every round and by more than the "
             "noise rows of its case (above) stray from 1 (or, without any, the run's "
             "noise)\n");
}

void bench_print_untuned(const bench_untuned *u, const bench_records *tuned,
                         const bench_records *untuned, const bench_records *t_rounds,
                         const bench_records *u_rounds, int rounds)
{
  untuned_rows w;
  print_rows(u, tuned, untuned, t_rounds, u_rounds, rounds, &w);
  if (!w.hi) {
    printf("no row here runs the same code on both sides (a host peer, say), so this "
           "run measured no noise to judge by: no verdict (leave --backend out)\n");
    return;
  }
  double noise = fmax(off_one(w.lo), off_one(w.hi)), strays[BENCH_MAX_RECORDS];
  size_t nstray = 0;
  for (size_t i = 0; i < tuned->n; i++)
    if (w.noisy[i] && !isnan(w.ratio[i]))
      strays[nstray++] = off_one(w.ratio[i]);
  double typical = bench_median(strays, (int)nstray);
  if (!u->record_applies) {
    printf(
      "no tuning record applies to this device (kiln tune makes one): both sides ran "
      "kiln's rules, so every ratio above is this run's noise, %.2fx to %.2fx "
      "(their median strays %.2fx from 1)\n",
      w.lo, w.hi, typical);
    return;
  }
  say_at_rules(u, tuned, &w, say_unreached(u, tuned));
  printf(": tuned/untuned %.2fx to %.2fx, this run's noise (their median strays %.2fx "
         "from 1)\n",
         w.lo, w.hi, typical);
  say_slower(tuned, &w, noise, typical);
}
