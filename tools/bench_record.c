/*
 * bench_record.c — what `kiln bench`'s groups share to measure and keep
 * their figures (bench.h): medians, timings, values, records, and lookups
 * of records by case.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kiln/kiln.h"

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

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

double bench_speed(const bench_record *r)
{
  double v = bench_value(r);
  return r->spec->figure == BENCH_US || r->spec->figure == BENCH_MS ? 1 / v : v;
}

int bench_peer_index(const bench_spec *s, const char *backend)
{
  int k = 0;
  while (k < s->npeers && strcmp(s->peers[k], backend) != 0)
    k++;
  return k;
}

const bench_record *bench_find(const bench_records *rs, const bench_spec *s, size_t size,
                               const char *backend)
{
  for (size_t i = 0; i < rs->n; i++)
    if (rs->r[i].spec == s && rs->r[i].size == size &&
        strcmp(rs->r[i].backend, backend) == 0)
      return &rs->r[i];
  return NULL;
}

double bench_speed_at(const bench_records *rs, const bench_spec *s, size_t size,
                      const char *backend)
{
  if (s->best_of && strcmp(backend, "best") == 0) {
    double best = 0;
    for (int k = 0; k < s->best_of; k++)
      best = fmax(best, bench_speed_at(rs, s, size, s->peers[k]));
    return best;
  }
  const bench_record *r = bench_find(rs, s, size, backend);
  return r ? bench_speed(r) : 0;
}

double bench_peer_ratio(const bench_records *rs, const bench_record *r, const char **peer)
{
  const bench_spec *s = r->spec;
  for (size_t q = 0; q < s->nratios; q++) {
    const char *top = s->ratios[q][0];
    int best = s->best_of && strcmp(top, "best") == 0;
    if (strcmp(top, r->backend) == 0 ||
        (best && bench_peer_index(s, r->backend) < s->best_of)) {
      double bottom = bench_speed_at(rs, s, r->size, s->ratios[q][1]);
      *peer = s->ratios[q][1];
      return bottom > 0 ? bench_speed(r) / bottom : NAN;
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
