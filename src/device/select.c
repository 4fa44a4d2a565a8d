/*
 * select.c — which devices kiln may see (KILN_VISIBLE_DEVICES), which one
 * it runs on (KILN_DEVICE) and which a device group runs on (KILN_DEVICES):
 * parsing the selector grammar documented at kiln_options.device, and
 * matching it against device records.
 *
 * A setting that does not parse, or matches nothing, is an error whose
 * message names the value and lists the devices: kiln never falls back
 * silently to a device the user did not ask for.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "device/device.h"
#include "device/select.h"

typedef enum term_kind {
  TERM_PD,
  TERM_N,
  TERM_VENDOR,
  TERM_TYPE,
  TERM_NAME,
  TERM_ALL,       /* a group's selector only: every device but simulators */
  TERM_LOCAL_RANK /* a device selector's only: the local rank's device */
} term_kind;

typedef struct term {
  term_kind kind;
  unsigned long p, d; /* TERM_PD; TERM_N and TERM_LOCAL_RANK (resolved) use p */
  kiln_vendor vendor;
  uint64_t type;
  const char *text; /* the term as written, not NUL-terminated */
  size_t len;
} term;

static const struct {
  const char *word;
  uint64_t type;
} type_words[] = {
  {"gpu", KILN_DEVICE_GPU},
  {"cpu", KILN_DEVICE_CPU},
  {"accelerator", KILN_DEVICE_ACCELERATOR},
};

/* Parses a run of digits into *v; returns the end, or NULL. */
static const char *parse_index(const char *s, const char *end, unsigned long *v)
{
  if (s == end || !isdigit((unsigned char)*s))
    return NULL;
  *v = 0;
  for (; s < end && isdigit((unsigned char)*s); s++) {
    if (*v > 100000) /* no machine has that many devices */
      return NULL;
    *v = *v * 10 + (unsigned long)(*s - '0');
  }
  return s;
}

static int word_is(const char *s, size_t len, const char *word)
{
  return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* The terms only some settings take. */
enum { ALLOW_ALL = 1, ALLOW_LOCAL_RANK = 2 };

/* Parses one term, already trimmed; `all` and `local-rank` only where
 * `allow` says. Returns 0, or -1 when it is not one. */
static int parse_term(const char *s, size_t len, int allow, term *t)
{
  const char *end = s + len;
  memset(t, 0, sizeof *t);
  t->text = s;
  t->len = len;
  if ((allow & ALLOW_ALL) && word_is(s, len, "all")) {
    t->kind = TERM_ALL;
    return 0;
  }
  if (len > 5 && strncasecmp(s, "name=", 5) == 0) {
    t->kind = TERM_NAME;
    return 0;
  }
  if ((allow & ALLOW_LOCAL_RANK) && word_is(s, len, "local-rank")) {
    t->kind = TERM_LOCAL_RANK;
    return 0;
  }
  const char *q = parse_index(s, end, &t->p);
  if (q == end) {
    t->kind = TERM_N;
    return 0;
  }
  if (q && *q == ':' && parse_index(q + 1, end, &t->d) == end) {
    t->kind = TERM_PD;
    return 0;
  }
  for (size_t i = 0; i < KILN__COUNT(type_words); i++)
    if (word_is(s, len, type_words[i].word)) {
      t->kind = TERM_TYPE;
      t->type = type_words[i].type;
      return 0;
    }
  for (int v = KILN_VENDOR_NVIDIA; v <= KILN_VENDOR_MESA; v++)
    if (word_is(s, len, kiln_vendor_name((kiln_vendor)v))) {
      t->kind = TERM_VENDOR;
      t->vendor = (kiln_vendor)v;
      return 0;
    }
  return -1;
}

static int contains_nocase(const char *hay, const char *needle, size_t n)
{
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0)
      return 1;
  return 0;
}

/* Whether the term matches device d, which is at `index` in its list. */
static int term_matches(const term *t, const kiln_device_info *d, size_t index)
{
  switch (t->kind) {
  case TERM_PD: return d->platform_index == t->p && d->device_index == t->d;
  case TERM_N:
  case TERM_LOCAL_RANK: return index == t->p;
  case TERM_NAME: return contains_nocase(d->name, t->text + 5, t->len - 5);
  case TERM_VENDOR: return d->vendor_family == t->vendor;
  case TERM_TYPE: return (d->type & t->type) && !d->is_simulator;
  case TERM_ALL: return !d->is_simulator;
  }
  return 0;
}

/* Splits a comma-separated setting into terms. Returns the count, or -1 with
 * *bad set to the first term that does not parse. *terms is malloc'd. */
static long parse_terms(const char *value, int allow, term **terms, term *bad)
{
  size_t n = 1;
  for (const char *c = value; *c; c++)
    n += *c == ',';
  *terms = calloc(n, sizeof **terms);
  if (!*terms)
    return -2;
  const char *s = value;
  for (size_t i = 0; i < n; i++) {
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    const char *a = s, *b = end;
    while (a < b && isspace((unsigned char)*a))
      a++;
    while (b > a && isspace((unsigned char)b[-1]))
      b--;
    if (parse_term(a, (size_t)(b - a), allow, &(*terms)[i]) != 0) {
      *bad = (term){.text = a, .len = (size_t)(b - a)};
      free(*terms);
      *terms = NULL;
      return -1;
    }
    s = end + 1;
  }
  return (long)n;
}

/* Appends the devices of the list, one a line, for error messages. */
static void list_devices(kiln__str *s, const kiln__device_list *list)
{
  if (list->count == 0)
    kiln__str_appendf(s, "\n  (none)");
  for (size_t i = 0; i < list->count; i++) {
    const kiln_device_info *d = &list->items[i].info;
    kiln__str_appendf(s, "\n  %zu  %u:%u  %s (%s, %s%s%s)", i, d->platform_index,
                      d->device_index, d->name, kiln_vendor_name(d->vendor_family),
                      d->type & KILN_DEVICE_GPU   ? "gpu"
                      : d->type & KILN_DEVICE_CPU ? "cpu"
                                                  : "accelerator",
                      d->is_simulator ? ", a simulator: only P:D, N, its vendor "
                                        "or name= selects it"
                                      : "",
                      d->available && d->compiler_available ? "" : ", not usable");
  }
}

static const char grammar[] =
  "expected comma-separated terms, each P:D (platform:device), N (an index), "
  "a vendor (nvidia, amd, intel, apple, arm, qualcomm, imagination, pocl, "
  "mesa, oclgrind), a type (gpu, cpu, accelerator) or name=TEXT";

/* Records the failure for the thread: what, then the devices there are. */
static kiln_status fail_selector(const kiln__device_list *list, const char *fmt, ...)
  KILN__PRINTF(2, 3);

static kiln_status fail_selector(const kiln__device_list *list, const char *fmt, ...)
{
  kiln__str s = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&s, fmt, ap);
  va_end(ap);
  kiln__str_appendf(&s, "\nthe devices are:");
  list_devices(&s, list);
  kiln_status st =
    kiln__fail(NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "%s", kiln__str_get(&s));
  kiln__str_free(&s);
  return st;
}

static kiln_status parse_or_fail(const kiln__device_list *list, const char *value,
                                 const char *source, int allow, term **terms, long *n)
{
  term bad = {.text = value};
  *n = parse_terms(value, allow, terms, &bad);
  if (*n == -2)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "%s: out of host memory while parsing '%s'", source, value);
  if (*n < 0)
    return fail_selector(list, "%s='%s': '%.*s' is not a device selector; %s%s", source,
                         value, (int)bad.len, bad.text, grammar,
                         allow & ALLOW_ALL          ? ", or all"
                         : allow & ALLOW_LOCAL_RANK ? ", or local-rank"
                                                    : "");
  return KILN_OK;
}

kiln_status kiln__devices_mask(kiln__device_list *list, const char *mask,
                               const char *source, kiln__str *why)
{
  term *terms;
  long n;
  kiln_status st = parse_or_fail(list, mask, source, 0, &terms, &n);
  if (st != KILN_OK)
    return st;
  /* Where each device goes: its position among the visible, or SIZE_MAX. */
  size_t *slot = malloc(list->count * sizeof *slot + 1);
  kiln__device *kept = malloc(list->count * sizeof *kept + 1);
  if (!slot || !kept) {
    free(slot), free(kept), free(terms);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                      source);
  }
  for (size_t i = 0; i < list->count; i++)
    slot[i] = SIZE_MAX;
  size_t visible = 0;
  for (long t = 0; t < n && st == KILN_OK; t++) {
    size_t matched = 0;
    for (size_t i = 0; i < list->count; i++)
      if (term_matches(&terms[t], &list->items[i].info, i)) {
        matched++;
        if (slot[i] == SIZE_MAX)
          slot[i] = visible++;
      }
    if (!matched)
      st = fail_selector(list, "%s='%s': '%.*s' matches no device", source, mask,
                         (int)terms[t].len, terms[t].text);
  }
  if (st == KILN_OK) {
    kiln__str_appendf(why, "%s='%s' shows %zu of %zu devices", source, mask, visible,
                      list->count);
    const char *sep = "; hides ";
    for (size_t i = 0; i < list->count; i++) {
      if (slot[i] != SIZE_MAX) {
        kept[slot[i]] = list->items[i];
        continue;
      }
      const kiln_device_info *d = &list->items[i].info;
      kiln__str_appendf(why, "%s%u:%u %s", sep, d->platform_index, d->device_index,
                        d->name);
      sep = ", ";
      kiln__device_free(&list->items[i]);
    }
    kiln__str_appendf(why, "\n");
    memcpy(list->items, kept, visible * sizeof *kept);
    list->count = visible;
  }
  free(slot), free(kept), free(terms);
  return st;
}

size_t kiln__devices_best(const kiln__device_list *list)
{
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < list->count; i++) {
    const kiln_device_info *d = &list->items[i].info;
    if (d->available && d->compiler_available &&
        (best == SIZE_MAX || kiln_device_compare(d, &list->items[best].info) < 0))
      best = i;
  }
  return best;
}

static int usable(const kiln_device_info *d)
{
  return d->available && d->compiler_available;
}

/* Whether d is of the best device's kind: its type, integrated or discrete,
 * a simulator or not. */
static int same_kind(const kiln_device_info *d, const kiln_device_info *best)
{
  return (d->type & best->type) && d->integrated == best->integrated &&
         d->is_simulator == best->is_simulator;
}

kiln_status kiln__devices_local_rank(const kiln__device_list *list,
                                     const kiln__local_rank *lr, size_t *chosen,
                                     kiln__str *why)
{
  size_t best = kiln__devices_best(list);
  if (best == SIZE_MAX)
    return fail_selector(list, "local rank %u (%s): no usable device", lr->rank,
                         lr->source);
  const kiln_device_info *b = &list->items[best].info;
  size_t m = 0;
  for (size_t i = 0; i < list->count; i++)
    m += usable(&list->items[i].info) && same_kind(&list->items[i].info, b);
  size_t k = lr->rank % m, seen = 0;
  for (size_t i = 0; i < list->count; i++)
    if (usable(&list->items[i].info) && same_kind(&list->items[i].info, b) && seen++ == k)
      *chosen = i;
  const kiln_device_info *d = &list->items[*chosen].info;
  kiln__str_appendf(why,
                    "%s=%u: local rank %u takes device %zu of the %zu usable "
                    "devices of the best-ranked device's kind: %u:%u %s\n",
                    lr->source, lr->rank, lr->rank, k, m, d->platform_index,
                    d->device_index, d->name);
  if (lr->rank >= m)
    kiln__str_appendf(why,
                      "local ranks outnumber these %zu devices: they take them "
                      "round-robin, so local rank %u shares this device with local "
                      "rank %zu at least\n",
                      m, lr->rank, k);
  return KILN_OK;
}

kiln_status kiln__devices_select(const kiln__device_list *list, const char *selector,
                                 const char *source, size_t *chosen, kiln__str *why)
{
  const kiln__local_rank none = {0};
  return kiln__devices_select_ranked(list, selector, source, &none, chosen, why);
}

/* Gives each local-rank term the index of the rank's device. */
static kiln_status resolve_local_rank(const kiln__device_list *list, const char *selector,
                                      const char *source, const kiln__local_rank *lr,
                                      term *terms, long n, kiln__str *why)
{
  for (long t = 0; t < n; t++) {
    if (terms[t].kind != TERM_LOCAL_RANK)
      continue;
    if (!lr->source) {
      kiln__str vars = {0};
      kiln__local_rank_vars(&vars);
      kiln_status st =
        fail_selector(list,
                      "%s='%s': 'local-rank' needs the process's node-local rank, "
                      "and no launcher gave one: none of %s is set (mpirun, srun "
                      "and torchrun set one), nor kiln_options.local_rank_source",
                      source, selector, kiln__str_get(&vars));
      kiln__str_free(&vars);
      return st;
    }
    size_t index = 0;
    kiln_status st = kiln__devices_local_rank(list, lr, &index, why);
    if (st != KILN_OK)
      return st;
    terms[t].p = index;
  }
  return KILN_OK;
}

kiln_status kiln__devices_select_ranked(const kiln__device_list *list,
                                        const char *selector, const char *source,
                                        const kiln__local_rank *lr, size_t *chosen,
                                        kiln__str *why)
{
  term *terms;
  long n;
  kiln_status st = parse_or_fail(list, selector, source, ALLOW_LOCAL_RANK, &terms, &n);
  if (st == KILN_OK)
    st = resolve_local_rank(list, selector, source, lr, terms, n, why);
  if (st != KILN_OK) {
    free(terms);
    return st;
  }
  *chosen = SIZE_MAX;
  long t = 0;
  for (; t < n && *chosen == SIZE_MAX; t++)
    for (size_t i = 0; i < list->count; i++) {
      const kiln_device_info *d = &list->items[i].info;
      if (term_matches(&terms[t], d, i) && d->available && d->compiler_available &&
          (*chosen == SIZE_MAX || kiln_device_compare(d, &list->items[*chosen].info) < 0))
        *chosen = i;
    }
  if (*chosen == SIZE_MAX)
    st = fail_selector(list,
                       "%s='%s' matches no usable device (available, with a "
                       "compiler)",
                       source, selector);
  else
    kiln__str_appendf(
      why, "%s='%s': '%.*s' picks %u:%u %s\n", source, selector, (int)terms[t - 1].len,
      terms[t - 1].text, list->items[*chosen].info.platform_index,
      list->items[*chosen].info.device_index, list->items[*chosen].info.name);
  free(terms);
  return st;
}

kiln_status kiln__devices_group(const kiln__device_list *list, const char *selector,
                                const char *source, int *member, kiln__str *why)
{
  size_t best = kiln__devices_best(list);
  term *terms = NULL;
  long n = 0;
  kiln_status st =
    selector ? parse_or_fail(list, selector, source, ALLOW_ALL, &terms, &n) : KILN_OK;
  for (long t = 0; t < n && st == KILN_OK; t++) {
    size_t matched = 0;
    for (size_t i = 0; i < list->count; i++)
      matched +=
        term_matches(&terms[t], &list->items[i].info, i) && usable(&list->items[i].info);
    if (!matched)
      st = fail_selector(list, "%s='%s': '%.*s' matches no usable device", source,
                         selector, (int)terms[t].len, terms[t].text);
  }
  for (size_t i = 0; i < list->count && st == KILN_OK; i++) {
    const kiln_device_info *d = &list->items[i].info;
    member[i] = 0;
    for (long t = 0; t < n; t++)
      member[i] |= term_matches(&terms[t], d, i);
    if (!selector)
      member[i] = best != SIZE_MAX && same_kind(d, &list->items[best].info);
    member[i] = member[i] && usable(d);
    if (member[i])
      continue;
    kiln__str_appendf(
      why, "%u:%u %s left out: %s\n", d->platform_index, d->device_index, d->name,
      !usable(d)        ? "not usable (unavailable, or no compiler)"
      : d->is_simulator ? "a simulator, selected only by a term that names it"
      : selector        ? "the selector does not match it"
                 : "not of the best-ranked device's kind (KILN_DEVICES=all adds it)");
  }
  free(terms);
  return st;
}
