/*
 * record.c — tuning records: the kernel parameters kiln_tune() measured on
 * one device, kept beside the binary cache and applied by every runtime on
 * that device afterwards.
 *
 * A record is <cache>/tuning-<32 hex digits>.json, the digits a hash of the
 * platform, device, driver version and kiln version (kiln__cache_key_of()),
 * so a driver or kiln update looks for a new record and the old one no
 * longer applies. The file is readable JSON, written whole under a
 * temporary name and renamed (cache.c), read through trust.c's checks like
 * a binary, since its values decide what code the device runs. What the
 * text holds, and the checks that decide whether a record applies, are
 * record_json.c's; this file keeps the record's file, the runtime's copy
 * of it, and the public calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_config.h"
#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "compile/cache.h"
#include "core/runtime.h"
#include "tuning/record.h"
#include "tuning/tuning.h"

/* No record comes near this; a larger file is not one. */
enum { MAX_RECORD = 1 << 20 };

/* The record's file name for rt's device. */
static void record_name(const kiln_runtime *rt, char *out, size_t size)
{
  static const char tag[] = "kiln tuning record key, format 1";
  kiln__cache_key key =
    kiln__cache_key_of(tag, sizeof tag - 1, "", &kiln__runtime_device(rt)->info);
  char hex[33];
  kiln__cache_key_hex(&key, hex);
  snprintf(out, size, "tuning-%s.json", hex);
}

/* Replaces rt's choices, measurements and CLBlast sets with those read
 * from a record (taken; *x is left empty). */
static void keep_extras(kiln_runtime *rt, kiln__record_extras *x)
{
  pthread_mutex_lock(&rt->lock);
  kiln__tuning_state *s = rt->tuning;
  kiln__record_extras old = {s->choices,   s->nchoices, s->measured,
                             s->nmeasured, s->clblast,  s->nclblast};
  s->choices = x->c;
  s->nchoices = x->nc;
  s->measured = x->m;
  s->nmeasured = x->nm;
  s->clblast = x->cb;
  s->nclblast = x->ncb;
  s->clblast_applied = 0;
  pthread_mutex_unlock(&rt->lock);
  kiln__record_extras_free(&old);
  *x = (kiln__record_extras){0};
}

void kiln__tuning_free(kiln_runtime *rt)
{
  if (!rt->tuning)
    return;
  free(rt->tuning->record);
  free(rt->tuning->path);
  kiln__record_free_choices(rt->tuning->choices, rt->tuning->nchoices);
  free(rt->tuning->measured);
  free(rt->tuning->clblast);
  free(rt->tuning);
  rt->tuning = NULL;
}

/* Keeps text (taken) as the record in use, and the file it lives in. */
static void keep_record(kiln_runtime *rt, char *text)
{
  free(rt->tuning->record);
  rt->tuning->record = text;
}

/* The failure of every call that needs a record's text in a build
 * without json-c. */
static kiln_status no_json(kiln_runtime *rt, const char *fn)
{
  return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                    "%s: tuning records are JSON, and kiln was built without json-c "
                    "(Debian: libjson-c-dev)",
                    fn);
}

/* Saves text as rt's record; KILN_ERR_IO when it cannot be. */
static kiln_status save_text(kiln_runtime *rt, const char *fn, const char *text)
{
  if (!rt->tuning->path)
    return kiln__fail(rt, KILN_ERR_IO,
                      "%s: the parameters apply to this runtime, but cannot be kept: "
                      "the kernel cache is off, and records live in its folder (see "
                      "kiln_runtime_diagnostics())",
                      fn);
  char name[64];
  record_name(rt, name, sizeof name);
  if (kiln__cache_put_file(rt->cache, name, text, strlen(text)) != 0)
    return kiln__fail(rt, KILN_ERR_IO,
                      "%s: the parameters apply to this runtime, but writing %s "
                      "failed (no room, or a file there that kiln does not trust)",
                      fn, rt->tuning->path);
  return KILN_OK;
}

kiln_status kiln__record_save(kiln_runtime *rt, const char *fn, const kiln__measured *m,
                              size_t n)
{
  if (!HAVE_JSON_C)
    return no_json(rt, fn);
  if (m) {
    kiln__measured *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
      return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(copy, m, n * sizeof *copy);
    pthread_mutex_lock(&rt->lock);
    free(rt->tuning->measured);
    rt->tuning->measured = copy;
    rt->tuning->nmeasured = n;
    pthread_mutex_unlock(&rt->lock);
  }
  char *text = kiln__record_text(rt, &rt->tuning->t, fn);
  if (!text)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  keep_record(rt, text);
  rt->tuning->tuned = 1;
  return save_text(rt, fn, text);
}

/* Adds the choices c[0..nc) (taken) whose keys rt has not; frees m. */
static void add_choices(kiln_runtime *rt, kiln__choice *c, size_t nc, kiln__measured *m)
{
  free(m);
  pthread_mutex_lock(&rt->lock);
  kiln__tuning_state *s = rt->tuning;
  kiln__choice *grown = realloc(s->choices, (s->nchoices + nc + 1) * sizeof *grown);
  if (grown)
    s->choices = grown;
  size_t have = s->nchoices;
  for (size_t i = 0; i < nc; i++) {
    size_t j = 0;
    while (j < have && strcmp(s->choices[j].key, c[i].key) != 0)
      j++;
    if (grown && j == have) { /* new to rt: taken */
      s->choices[s->nchoices++] = c[i];
      c[i].key = NULL;
    }
  }
  pthread_mutex_unlock(&rt->lock);
  kiln__record_free_choices(c, nc);
}

/* Checks record text for rt's device and reads its parameters into t: 0,
 * or -1 with what is wrong in why. On success rt adopts the record's
 * choices, measurements and CLBlast sets (not yet applied); with merge,
 * only the choices it lacks. */
static int parse_record(kiln_runtime *rt, const char *text, size_t len, kiln__tuning *t,
                        kiln__str *why, int merge)
{
  kiln__record_extras x;
  int rc = kiln__record_parse(rt, text, len, t, &x, why);
  if (rc == 0 && merge) {
    add_choices(rt, x.c, x.nc, x.m); /* takes the choices, frees m */
    x.c = NULL, x.nc = 0, x.m = NULL, x.nm = 0;
  } else if (rc == 0) {
    keep_extras(rt, &x);
  }
  kiln__record_extras_free(&x);
  return rc;
}

KILN_API kiln_status kiln_tuning_set(kiln_runtime *rt, const char *json)
{
  static const char fn[] = "kiln_tuning_set";
  if (!HAVE_JSON_C)
    return no_json(rt, fn);
  if (!rt || !json)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime and a record's JSON text", fn,
                      !rt ? "rt" : "json");
  kiln__tuning t = rt->tuning->t;
  kiln__str why = {0};
  int rc = parse_record(rt, json, strlen(json), &t, &why, 0);
  kiln_status st = rc == 0 ? KILN_OK
                           : kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                                        "%s: the record does not apply to this device: "
                                        "%s; nothing changed",
                                        fn, kiln__str_get(&why));
  kiln__str_free(&why);
  char *text = rc == 0 ? strdup(json) : NULL;
  if (rc == 0 && !text)
    st = kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  if (st != KILN_OK)
    return st;
  kiln__runtime_set_tuning(rt, &t);
  keep_record(rt, text);
  rt->tuning->tuned = 1;
  kiln__clblast_apply_record(rt);
  return save_text(rt, fn, text);
}

/* Without json-c there is no record text to give. */
KILN_API kiln_status kiln_tuning_get(kiln_runtime *rt, char **json)
{
  if (!HAVE_JSON_C) {
    if (json)
      *json = NULL;
    return no_json(rt, "kiln_tuning_get");
  }
  if (!rt || !json)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_tuning_get: %s is NULL; expected a runtime and the address "
                      "of a char pointer",
                      !rt ? "rt" : "json");
  pthread_mutex_lock(&rt->build_lock);
  *json = rt->tuning->tuned && rt->tuning->record
            ? strdup(rt->tuning->record)
            : kiln__record_text(rt, &rt->tuning->t, "defaults");
  pthread_mutex_unlock(&rt->build_lock);
  return *json ? KILN_OK
               : kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                            "kiln_tuning_get: out of host memory");
}

void kiln__record_load(kiln_runtime *rt)
{
  if (!rt->cache->dir)
    return; /* records live in the cache's folder; its note says why it is off */
  char name[64];
  record_name(rt, name, sizeof name);
  kiln__str path = {0};
  kiln__str_appendf(&path, "%s/%s", rt->cache->dir, name);
  if (path.failed)
    kiln__str_free(&path);
  rt->tuning->path = path.data;
  kiln__str why = {0};
  char *text;
  size_t len;
  kiln__tuning t = rt->tuning->t;
  int got = kiln__cache_get_file(rt->cache, name, MAX_RECORD, &text, &len, &why);
  if (got == 0 && parse_record(rt, text, len, &t, &why, 0) == 0) {
    rt->tuning->t = t;
    rt->tuning->tuned = 1;
    keep_record(rt, text);
    text = NULL;
    kiln__clblast_apply_record(rt);
  } else if (got != 1) {
    kiln__str_appendf(&rt->devices.notes,
                      "tuning record %s ignored: %s; the default parameters apply "
                      "(run kiln tune to measure new ones)\n",
                      kiln__str_get(&path), kiln__str_get(&why));
  }
  free(got == 0 ? text : NULL);
  kiln__str_free(&why);
}

void kiln__record_merge_choices(kiln_runtime *rt)
{
  char name[64], *text;
  size_t len;
  record_name(rt, name, sizeof name);
  kiln__str why = {0};
  kiln__tuning t = rt->tuning->t;
  if (kiln__cache_get_file(rt->cache, name, MAX_RECORD, &text, &len, &why) == 0) {
    parse_record(rt, text, len, &t, &why, 1); /* one that does not apply adds none */
    free(text);
  }
  kiln__str_free(&why);
}

KILN_API kiln_status kiln_tuning_clear(kiln_runtime *rt)
{
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_tuning_clear: rt is NULL");
  char name[64];
  record_name(rt, name, sizeof name);
  kiln__str why = {0};
  kiln_status st = KILN_OK;
  if (kiln__cache_delete_file(rt->cache, name, &why) != 0)
    st = kiln__fail(rt, KILN_ERR_IO, "kiln_tuning_clear: %s", kiln__str_get(&why));
  kiln__str_free(&why);
  kiln__tuning t;
  kiln__tuning_defaults(&kiln__runtime_device(rt)->info, &t);
  kiln__runtime_set_tuning(rt, &t);
  keep_record(rt, NULL);
  kiln__record_extras none = {0};
  keep_extras(rt, &none); /* CLBlast keeps what it was given till the process ends */
  rt->tuning->tuned = 0;
  return st;
}

KILN_API kiln_status kiln_tuning_stats(kiln_runtime *rt, kiln_tuning_usage *out)
{
  if (!rt || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_tuning_stats: %s is NULL; expected a runtime and a "
                      "kiln_tuning_usage to fill",
                      !rt ? "rt" : "out");
  kiln_status st = KILN__STRUCT_OUT(rt, "kiln_tuning_stats", kiln_tuning_usage,
                                    kiln_tuning_usage_init(), out);
  if (st != KILN_OK)
    return st;
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  pthread_mutex_lock(&rt->build_lock);
  u.tuned = rt->tuning->tuned;
  u.path = rt->tuning->path;
  pthread_mutex_lock(&rt->lock);
  u.choices = rt->tuning->nchoices;
  u.clblast_sets = rt->tuning->nclblast;
  u.clblast_applied = rt->tuning->clblast_applied;
  pthread_mutex_unlock(&rt->lock);
  pthread_mutex_unlock(&rt->build_lock);
  kiln__struct_put(out, out->struct_size, &u, sizeof u);
  return KILN_OK;
}
