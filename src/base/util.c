/*
 * util.c — small helpers: growable strings, overflow-checked sizes, byte
 * counts for messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"

void kiln__str_vappendf(kiln__str *s, const char *fmt, va_list ap)
{
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, again);
  va_end(again);
  if (n < 0 || s->failed)
    return;
  size_t need = s->len + (size_t)n + 1;
  if (need > s->cap) {
    size_t cap = s->cap ? s->cap : 128;
    while (cap < need)
      cap *= 2;
    char *grown = realloc(s->data, cap);
    if (!grown) {
      s->failed = 1; /* keep what we have: a short message beats none */
      return;
    }
    s->data = grown;
    s->cap = cap;
  }
  vsnprintf(s->data + s->len, s->cap - s->len, fmt, ap);
  s->len += (size_t)n;
}

void kiln__str_appendf(kiln__str *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(s, fmt, ap);
  va_end(ap);
}

const char *kiln__str_get(const kiln__str *s)
{
  return s->data ? s->data : "";
}

void kiln__str_free(kiln__str *s)
{
  free(s->data);
  memset(s, 0, sizeof *s);
}

int kiln__mul_overflow(size_t a, size_t b, size_t *out)
{
  if (b != 0 && a > SIZE_MAX / b)
    return 1;
  *out = a * b;
  return 0;
}

int kiln__add_overflow(size_t a, size_t b, size_t *out)
{
  if (a > SIZE_MAX - b)
    return 1;
  *out = a + b;
  return 0;
}

size_t kiln__pow2_divisor(size_t n, size_t most)
{
  size_t v = 1;
  while (v * 2 <= most && n % (v * 2) == 0)
    v *= 2;
  return v;
}

const char *kiln__format_bytes(uint64_t bytes, char *buf, size_t size)
{
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
    return buf;
  }
  double v = (double)bytes;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, size, "%.1f %s", v, units[u]);
  return buf;
}

double kiln__half_to_double(uint16_t h)
{
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

uint64_t kiln__now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kiln__sleep_ms(uint64_t ms)
{
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) /* interrupted: the rest */
    ;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double kiln__median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return v[(n - 1) / 2];
}
