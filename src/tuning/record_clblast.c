/*
 * record_clblast.c — the tuning record's "clblast" section: CLBlast's
 * parameters for its kernels as CLBlast's own tuners found them on the
 * device (`kiln tune --clblast` runs them), checked like every other field
 * of a record and handed to CLBlast when a runtime is created, through
 * the hook its backend fills (kiln__clblast_section_apply: backends/table.c
 * points it at backends/clblast/clblast_tune.c):
 *
 *   "clblast": [{"kernel": "Xgemm", "precision": "f32",
 *                "parameters": {"GEMMK": 0, "KWG": 32, ...}}, ...]
 *
 * CLBlast pastes the names and values into its kernels' source as
 * #defines, so a record's names are held to identifiers and its values to
 * whole numbers below 2^31: anything else makes the whole record bad, with
 * the reason in the runtime's notes (record.c), like any other bad field.
 * Whether the values make a kernel that builds and runs is CLBlast's to
 * find at its first call; kiln tune --clblast only keeps what the tuner ran
 * and checked.
 */
#include <stdlib.h>
#include <string.h>

#include "kiln_config.h"
#include "base/error.h"
#include "base/util.h"
#include "core/runtime.h"
#include "tuning/tuning.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

static const struct {
  kiln_dtype dtype;
  const char *tag;
} precisions[] = {{KILN_F16, "f16"}, {KILN_F32, "f32"}, {KILN_F64, "f64"}};

const char *kiln__clblast_precision_tag(kiln_dtype dtype)
{
  for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++)
    if (precisions[i].dtype == dtype)
      return precisions[i].tag;
  return NULL;
}

/* Whether s is a name CLBlast could have: a letter, then letters, digits
 * and '_', shorter than KILN__CLBLAST_NAME; upper-case only when `upper`
 * (parameters). ASCII by hand: the locale has no say in a #define. */
static int is_name(const char *s, int upper)
{
  size_t len = strlen(s);
  if (len == 0 || len >= KILN__CLBLAST_NAME)
    return 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    int letter = (c >= 'A' && c <= 'Z') || (!upper && c >= 'a' && c <= 'z');
    int more = c == '_' || (c >= '0' && c <= '9');
    if (!letter && (i == 0 || !more))
      return 0;
  }
  return 1;
}

/* s as a note can show it: quoted, at most 40 characters, anything but
 * printable ASCII as '?'. */
static void append_shown(kiln__str *why, const char *s)
{
  char shown[48];
  size_t i = 0;
  for (; s[i] && i < 40; i++)
    shown[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
  shown[i] = '\0';
  kiln__str_appendf(why, "\"%s%s\"", shown, s[i] ? "..." : "");
}

int kiln__clblast_check(const kiln__clblast_params *p, const char *path, kiln__str *why)
{
  if (!is_name(p->kernel, 0)) {
    kiln__str_appendf(why, "%s.kernel is ", path);
    append_shown(why, p->kernel);
    kiln__str_appendf(why, "; expected a CLBlast kernel's name (a letter, then letters, "
                           "digits and '_', at most 47)");
    return -1;
  }
  if (!kiln__clblast_precision_tag(p->dtype)) {
    kiln__str_appendf(why, "%s.precision is %s; expected float16, float32 or float64",
                      path, kiln_dtype_name(p->dtype));
    return -1;
  }
  if (p->n == 0 || p->n > KILN__CLBLAST_PARAMS) {
    kiln__str_appendf(why, "%s.parameters has %zu; expected 1 to %d", path, p->n,
                      KILN__CLBLAST_PARAMS);
    return -1;
  }
  for (size_t i = 0; i < p->n; i++) {
    if (!is_name(p->names[i], 1)) {
      kiln__str_appendf(why, "%s.parameters has the name ", path);
      append_shown(why, p->names[i]);
      kiln__str_appendf(why, "; expected a CLBlast parameter's (an upper-case letter, "
                             "then upper-case letters, digits and '_', at most 47)");
      return -1;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(p->names[i], p->names[j]) == 0) {
        kiln__str_appendf(why, "%s.parameters names %s twice", path, p->names[i]);
        return -1;
      }
    if (p->values[i] > INT32_MAX) {
      kiln__str_appendf(why, "%s.parameters.%s = %zu is out of range (below 2^31)", path,
                        p->names[i], p->values[i]);
      return -1;
    }
  }
  return 0;
}

/* p handed to CLBlast through the hook its backend fills; without CLBlast
 * KILN_ERR_UNSUPPORTED, with why. */
static kiln_status apply_set(kiln_runtime *rt, const kiln__clblast_params *p,
                             kiln__str *why)
{
  if (kiln__clblast_section_apply)
    return kiln__clblast_section_apply(rt, p, why);
  kiln__str_appendf(why, "kiln was built without CLBlast (Debian: libclblast-dev)");
  return KILN_ERR_UNSUPPORTED;
}

void kiln__clblast_apply_record(kiln_runtime *rt)
{
  kiln__tuning_state *s = rt->tuning;
  s->clblast_applied = 0;
  for (size_t i = 0; i < s->nclblast; i++) {
    const kiln__clblast_params *p = &s->clblast[i];
    kiln__str why = {0};
    if (apply_set(rt, p, &why) == KILN_OK)
      s->clblast_applied++;
    else
      kiln__str_appendf(&rt->devices.notes,
                        "tuning record %s: CLBlast's parameters for %s %s not "
                        "applied: %s; CLBlast's own apply to it\n",
                        s->path ? s->path : "(imported)", p->kernel,
                        kiln__clblast_precision_tag(p->dtype), kiln__str_get(&why));
    kiln__str_free(&why);
  }
}

#if HAVE_JSON_C

struct json_object *kiln__clblast_json(const kiln__clblast_params *p, size_t n)
{
  json_object *a = json_object_new_array();
  for (size_t i = 0; a && i < n; i++) {
    json_object *x = json_object_new_object(), *ps = json_object_new_object();
    json_object_object_add(x, "kernel", json_object_new_string(p[i].kernel));
    json_object_object_add(
      x, "precision", json_object_new_string(kiln__clblast_precision_tag(p[i].dtype)));
    for (size_t j = 0; j < p[i].n; j++)
      json_object_object_add(ps, p[i].names[j],
                             json_object_new_int64((int64_t)p[i].values[j]));
    json_object_object_add(x, "parameters", ps);
    json_object_array_add(a, x);
  }
  return a;
}

/* The string at o[k] if it is one and fits a name, copied to out. */
static int get_name(json_object *o, const char *k, char out[KILN__CLBLAST_NAME])
{
  json_object *v;
  if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string) ||
      strlen(json_object_get_string(v)) >= KILN__CLBLAST_NAME)
    return -1;
  strcpy(out, json_object_get_string(v));
  return 0;
}

/* One set of the section, x, into p (zeroed): 0, or -1 with why. */
static int read_set(json_object *x, const char *path, kiln__clblast_params *p,
                    kiln__str *why)
{
  json_object *ps, *v;
  if (!json_object_is_type(x, json_type_object)) {
    kiln__str_appendf(why, "%s is not an object", path);
    return -1;
  }
  if (get_name(x, "kernel", p->kernel) != 0) {
    kiln__str_appendf(why, "%s.kernel is missing, or not a CLBlast kernel's name", path);
    return -1;
  }
  const char *tag = json_object_object_get_ex(x, "precision", &v) &&
                        json_object_is_type(v, json_type_string)
                      ? json_object_get_string(v)
                      : NULL;
  size_t i = 0;
  while (i < sizeof precisions / sizeof precisions[0] &&
         (!tag || strcmp(tag, precisions[i].tag) != 0))
    i++;
  if (i == sizeof precisions / sizeof precisions[0]) {
    kiln__str_appendf(why, "%s.precision is ", path);
    if (tag)
      append_shown(why, tag);
    kiln__str_appendf(why, "%s; expected \"f16\", \"f32\" or \"f64\"",
                      tag ? "" : "missing");
    return -1;
  }
  p->dtype = precisions[i].dtype;
  if (!json_object_object_get_ex(x, "parameters", &ps) ||
      !json_object_is_type(ps, json_type_object) ||
      json_object_object_length(ps) > KILN__CLBLAST_PARAMS) {
    kiln__str_appendf(why, "%s.parameters is missing, not an object, or more than %d",
                      path, KILN__CLBLAST_PARAMS);
    return -1;
  }
  json_object_object_foreach(ps, key, val)
  {
    int64_t value =
      json_object_is_type(val, json_type_int) ? json_object_get_int64(val) : -1;
    if (strlen(key) >= KILN__CLBLAST_NAME || value < 0 || value > INT32_MAX) {
      kiln__str_appendf(why, "%s.parameters: ", path);
      append_shown(why, key);
      kiln__str_appendf(why,
                        " is not a whole number from 0 to 2^31-1, under a name of at "
                        "most 47 characters");
      return -1;
    }
    strcpy(p->names[p->n], key);
    p->values[p->n++] = (size_t)value;
  }
  return kiln__clblast_check(p, path, why);
}

int kiln__clblast_from_json(struct json_object *record, kiln__clblast_params **out,
                            size_t *n, kiln__str *why)
{
  json_object *a;
  *out = NULL;
  *n = 0;
  if (!json_object_object_get_ex(record, "clblast", &a))
    return 0; /* a record from before kiln tune --clblast */
  if (!json_object_is_type(a, json_type_array) ||
      json_object_array_length(a) > KILN__CLBLAST_SETS) {
    kiln__str_appendf(why, "\"clblast\" is not an array of at most %d parameter sets",
                      KILN__CLBLAST_SETS);
    return -1;
  }
  size_t len = json_object_array_length(a);
  kiln__clblast_params *p = calloc(len ? len : 1, sizeof *p);
  if (!p) {
    kiln__str_appendf(why, "out of host memory");
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    char path[32];
    snprintf(path, sizeof path, "clblast[%zu]", i);
    int bad = read_set(json_object_array_get_idx(a, i), path, &p[i], why);
    for (size_t j = 0; !bad && j < i; j++)
      if (strcmp(p[j].kernel, p[i].kernel) == 0 && p[j].dtype == p[i].dtype) {
        kiln__str_appendf(why, "%s repeats %s %s", path, p[i].kernel,
                          kiln__clblast_precision_tag(p[i].dtype));
        bad = 1;
      }
    if (bad) {
      free(p);
      return -1;
    }
  }
  *out = p;
  *n = len;
  return 0;
}

#endif /* HAVE_JSON_C */

/* p from the caller's arguments: 0, or -1 with why. */
static int params_from(kiln__clblast_params *p, const char *kernel, kiln_dtype dtype,
                       size_t n, const char *const *names, const size_t *values,
                       kiln__str *why)
{
  memset(p, 0, sizeof *p);
  p->dtype = dtype;
  p->n = n;
  if (strlen(kernel) >= KILN__CLBLAST_NAME || n > KILN__CLBLAST_PARAMS) {
    kiln__str_appendf(why, "%s",
                      n > KILN__CLBLAST_PARAMS ? "n is over 32" : "kernel is ");
    if (n <= KILN__CLBLAST_PARAMS)
      append_shown(why, kernel);
    kiln__str_appendf(why, "%s", n > KILN__CLBLAST_PARAMS ? "" : ", over 47 characters");
    return -1;
  }
  strcpy(p->kernel, kernel);
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || strlen(names[i]) >= KILN__CLBLAST_NAME) {
      kiln__str_appendf(why, "names[%zu] is %s", i, names[i] ? "" : "NULL");
      if (names[i]) {
        append_shown(why, names[i]);
        kiln__str_appendf(why, ", over 47 characters");
      }
      return -1;
    }
    strcpy(p->names[i], names[i]);
    p->values[i] = values[i];
  }
  return kiln__clblast_check(p, "the set", why);
}

/* Keeps p (checked, applied) in rt's sets, replacing one of the same kernel
 * and precision: 0, or -1 when the record is full. */
static int keep_set(kiln_runtime *rt, const kiln__clblast_params *p)
{
  kiln__tuning_state *s = rt->tuning;
  int rc = 0;
  pthread_mutex_lock(&rt->lock);
  size_t i = 0;
  while (i < s->nclblast && (strcmp(s->clblast[i].kernel, p->kernel) != 0 ||
                             s->clblast[i].dtype != p->dtype))
    i++;
  if (i == s->nclblast) {
    kiln__clblast_params *grown = s->nclblast < KILN__CLBLAST_SETS
                                    ? realloc(s->clblast, (i + 1) * sizeof *grown)
                                    : NULL;
    if (grown) {
      s->clblast = grown;
      s->nclblast++;
      s->clblast_applied++;
    }
    rc = grown ? 0 : -1;
  }
  if (rc == 0)
    s->clblast[i] = *p;
  pthread_mutex_unlock(&rt->lock);
  return rc;
}

KILN_API kiln_status kiln_tuning_set_clblast(kiln_runtime *rt, const char *kernel,
                                             kiln_dtype dtype, size_t n,
                                             const char *const *names,
                                             const size_t *values)
{
  static const char fn[] = "kiln_tuning_set_clblast";
  if (!rt || !kernel || !names || !values)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime, a CLBlast kernel's name, and "
                      "n parameter names and values",
                      fn,
                      !rt       ? "rt"
                      : !kernel ? "kernel"
                      : !names  ? "names"
                                : "values");
  if (!HAVE_JSON_C)
    return kiln__record_save(rt, fn, NULL, 0); /* says why records cannot be kept */
  kiln__clblast_params *p = malloc(sizeof *p);
  if (!p)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  kiln__str why = {0};
  kiln_status st = KILN_OK;
  if (params_from(p, kernel, dtype, n, names, values, &why) != 0)
    st = kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "%s: %s; nothing changed", fn,
                    kiln__str_get(&why));
  else if ((st = apply_set(rt, p, &why)) != KILN_OK)
    st = kiln__fail(
      rt, st, "%s: CLBlast refuses the parameters for %s %s: %s; nothing changed", fn,
      p->kernel, kiln__clblast_precision_tag(p->dtype), kiln__str_get(&why));
  else if (keep_set(rt, p) != 0)
    st = kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                    "%s: the record holds %d parameter sets already, the most it takes; "
                    "CLBlast runs %s %s with them in this process, but the record does "
                    "not keep them",
                    fn, KILN__CLBLAST_SETS, p->kernel,
                    kiln__clblast_precision_tag(p->dtype));
  kiln__str_free(&why);
  free(p);
  return st == KILN_OK ? kiln__record_save(rt, fn, NULL, 0) : st;
}
