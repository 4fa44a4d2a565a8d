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
 * a binary, since its values decide what code the device runs:
 *
 *   {
 *     "format": "kiln tuning record 5",
 *     "kiln_version": "0.9.0", "platform": "...", "platform_version": "...",
 *     "device": "...", "driver_version": "...",
 *     "created": "2026-11-25T16:00:00Z", "by": "kiln_tune",
 *     "gemm": {"f32": {"shape": "cpu", "tm": 8, "vw": 16, "cg": 0, "small": 768,
 *                      "akib": 4096, "tsm": 128, "tsn": 128, "tsk": 16,
 *                      "wptm": 8, "wptn": 8, "vwm": 4, "vwn": 4, "strm": 1,
 *                      "strn": 1, "pad": 0, "db": 1, "gm": 8},
 *              "f16": {...}, "f64": {...}},
 *     "reduce": {"shape": "cpu", "chunks": 8, "wg": 256, "groups": 16},
 *     "fft": {"wide_from": 16, "group": 64, "vec_first": 1, "row_max": 2048,
 *             "local_max": 0, "local_radix": 8, "local_cols": 16},
 *     "conv": {"qw": 1, "kb": 1, "lq": 0, "lp": 0, "col_kib": 8192},
 *     "measured": [{"kernel": "gemm f32", "from": "...", "to": "...",
 *                   "from_ns": 1, "to_ns": 1, "candidates": 1}, ...],
 *     "choices": {"<op's key>": "<backend>", ...},
 *     "clblast": [{"kernel": "Xgemm", "precision": "f32",
 *                  "parameters": {"GEMMK": 0, ...}}, ...],
 *     "checksum": "xxh3-64:<16 hex digits>"
 *   }
 *
 * The checksum is XXH3-64 of the object without it, as json-c prints it
 * plain; numbers are whole, so the text round-trips exactly. A record is
 * applied only when the checksum matches, every identity field names this
 * device and driver and this kiln, every parameter is present, whole and
 * one the device can run (kiln__tuning_check()). Anything else is ignored
 * with a note in kiln_runtime_diagnostics(): the rules' values apply, as
 * with no record. "measured" is what kiln tune reports; it is not read.
 * "clblast" (record_clblast.c) is CLBlast's parameters, from its tuners,
 * checked here like the rest and handed to CLBlast once the record applies;
 * CLBlast refusing them is a note, and the rest of the record applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "kiln_config.h"
#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "compile/cache.h"
#include "core/runtime.h"
#include "tuning/tuning.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

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

static void free_choices(kiln__choice *c, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(c[i].key);
  free(c);
}

/* What a record holds beside the parameters. */
typedef struct extras {
  kiln__choice *c;
  size_t nc;
  kiln__measured *m;
  size_t nm;
  kiln__clblast_params *cb;
  size_t ncb;
} extras;

static void free_extras(extras *x)
{
  free_choices(x->c, x->nc);
  free(x->m);
  free(x->cb);
  *x = (extras){0};
}

/* Replaces rt's choices, measurements and CLBlast sets with those read
 * from a record (taken; *x is left empty). */
static void keep_extras(kiln_runtime *rt, extras *x)
{
  pthread_mutex_lock(&rt->lock);
  kiln__tuning_state *s = rt->tuning;
  extras old = {s->choices,   s->nchoices, s->measured,
                s->nmeasured, s->clblast,  s->nclblast};
  s->choices = x->c;
  s->nchoices = x->nc;
  s->measured = x->m;
  s->nmeasured = x->nm;
  s->clblast = x->cb;
  s->nclblast = x->ncb;
  s->clblast_applied = 0;
  pthread_mutex_unlock(&rt->lock);
  free_extras(&old);
  *x = (extras){0};
}

void kiln__tuning_free(kiln_runtime *rt)
{
  if (!rt->tuning)
    return;
  free(rt->tuning->record);
  free(rt->tuning->path);
  free_choices(rt->tuning->choices, rt->tuning->nchoices);
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

#if HAVE_JSON_C

static const char format_tag[] = "kiln tuning record 5";

static const char *const gemm_tags[KILN__GEMM_VARIANTS] = {"f32", "f16", "f64"};

/* ---- writing ------------------------------------------------------------- */

static void put_str(json_object *o, const char *k, const char *v)
{
  json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

/* The GPU kernel's parameters, each as the record names it (X(field)). */
#  define GEMM_GPU_FIELDS(X)                                                             \
    X(tsm), X(tsn), X(tsk), X(wptm), X(wptn), X(vwm), X(vwn), X(strm), X(strn), X(pad),  \
      X(db), X(gm)
#  define GEMM_NAME(f) #  f
#  define GEMM_FIELD(f) &g->f

static void put_uint(json_object *o, const char *k, unsigned v)
{
  json_object_object_add(o, k, json_object_new_int64(v));
}

static void checksum_of(json_object *o, char out[32])
{
  const char *plain = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  snprintf(out, 32, "xxh3-64:%016llx",
           (unsigned long long)XXH3_64bits(plain, strlen(plain)));
}

/* The convolution's parameters as o's "conv" section. */
static void put_conv(json_object *o, const kiln__conv_tuning *c)
{
  json_object *x = json_object_new_object();
  put_uint(x, "qw", c->qw);
  put_uint(x, "kb", c->kb);
  put_uint(x, "lq", c->lq);
  put_uint(x, "lp", c->lp);
  put_uint(x, "col_kib", c->col_kib);
  json_object_object_add(o, "conv", x);
}

/* The record of t for rt's device, with rt's choices and measurements. */
static json_object *record_new(kiln_runtime *rt, const kiln__tuning *t, const char *by)
{
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  json_object *o = json_object_new_object();
  put_str(o, "format", format_tag);
  put_str(o, "kiln_version", kiln_version());
  put_str(o, "platform", dev->platform_name);
  put_str(o, "platform_version", dev->platform_version);
  put_str(o, "device", dev->name);
  put_str(o, "driver_version", dev->driver_version);
  char when[32];
  time_t now = time(NULL);
  struct tm utc;
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
  put_str(o, "created", when);
  put_str(o, "by", by);
  json_object *gemm = json_object_new_object();
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
    const kiln__gemm_tuning *g = &t->gemm[v];
    json_object *x = json_object_new_object();
    put_str(x, "shape", g->gpu_shape ? "gpu" : "cpu");
    put_uint(x, "tm", g->tm);
    put_uint(x, "vw", g->vw);
    put_uint(x, "cg", g->cg);
    put_uint(x, "small", g->small);
    put_uint(x, "akib", g->akib);
    static const char *const gpu[] = {GEMM_GPU_FIELDS(GEMM_NAME)};
    const unsigned *gv[] = {GEMM_GPU_FIELDS(GEMM_FIELD)};
    for (size_t i = 0; i < KILN__COUNT(gpu); i++)
      put_uint(x, gpu[i], *gv[i]);
    json_object_object_add(gemm, gemm_tags[v], x);
  }
  json_object_object_add(o, "gemm", gemm);
  json_object *r = json_object_new_object();
  put_str(r, "shape", t->reduce.gpu_shape ? "gpu" : "cpu");
  put_uint(r, "chunks", t->reduce.chunks);
  put_uint(r, "wg", t->reduce.wg);
  put_uint(r, "groups", t->reduce.groups);
  json_object_object_add(o, "reduce", r);
  json_object *f = json_object_new_object();
  put_uint(f, "wide_from", t->fft.wide_from);
  put_uint(f, "group", t->fft.group);
  put_uint(f, "vec_first", t->fft.vec_first);
  put_uint(f, "row_max", t->fft.row_max);
  put_uint(f, "local_max", t->fft.local_max);
  put_uint(f, "local_radix", t->fft.local_radix);
  put_uint(f, "local_cols", t->fft.local_cols);
  json_object_object_add(o, "fft", f);
  put_conv(o, &t->conv);
  pthread_mutex_lock(&rt->lock);
  const kiln__measured *m = rt->tuning->measured;
  json_object *ms = json_object_new_array();
  for (size_t i = 0; i < rt->tuning->nmeasured; i++) {
    json_object *x = json_object_new_object();
    put_str(x, "kernel", m[i].kernel);
    put_str(x, "from", m[i].from);
    put_str(x, "to", m[i].to);
    json_object_object_add(x, "from_ns",
                           json_object_new_int64((int64_t)(m[i].from_s * 1e9)));
    json_object_object_add(x, "to_ns", json_object_new_int64((int64_t)(m[i].to_s * 1e9)));
    put_uint(x, "candidates", m[i].candidates);
    json_object_array_add(ms, x);
  }
  json_object_object_add(o, "measured", ms);
  json_object *cs = json_object_new_object();
  for (size_t i = 0; i < rt->tuning->nchoices; i++)
    put_str(cs, rt->tuning->choices[i].key, kiln_backend_name(rt->tuning->choices[i].id));
  json_object_object_add(o, "choices", cs);
  json_object_object_add(o, "clblast",
                         kiln__clblast_json(rt->tuning->clblast, rt->tuning->nclblast));
  pthread_mutex_unlock(&rt->lock);
  char sum[32];
  checksum_of(o, sum);
  put_str(o, "checksum", sum);
  return o;
}

/* The record's text, pretty-printed (malloc'd), or NULL. */
static char *record_text(kiln_runtime *rt, const kiln__tuning *t, const char *by)
{
  json_object *o = record_new(rt, t, by);
  char *text = strdup(
    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
  json_object_put(o);
  return text;
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
  char *text = record_text(rt, &rt->tuning->t, fn);
  if (!text)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  keep_record(rt, text);
  rt->tuning->tuned = 1;
  return save_text(rt, fn, text);
}

/* ---- reading -------------------------------------------------------------- */

static const char *get_str(json_object *o, const char *k)
{
  json_object *v;
  return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
           ? json_object_get_string(v)
           : NULL;
}

/* A whole number in [0, 2^31) at o[k]: 0, or -1 with why. */
static int get_uint(json_object *o, const char *path, const char *k, unsigned *out,
                    kiln__str *why)
{
  json_object *v;
  if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int)) {
    kiln__str_appendf(why, "%s.%s is missing or not a whole number", path, k);
    return -1;
  }
  int64_t x = json_object_get_int64(v);
  if (x < 0 || x > INT32_MAX) {
    kiln__str_appendf(why, "%s.%s = %lld is out of range", path, k, (long long)x);
    return -1;
  }
  *out = (unsigned)x;
  return 0;
}

static int get_shape(json_object *o, const char *path, int *gpu, kiln__str *why)
{
  const char *s = get_str(o, "shape");
  if (!s || (strcmp(s, "cpu") && strcmp(s, "gpu"))) {
    kiln__str_appendf(why, "%s.shape is %s%s%s; expected \"cpu\" or \"gpu\"", path,
                      s ? "\"" : "", s ? s : "missing", s ? "\"" : "");
    return -1;
  }
  *gpu = strcmp(s, "gpu") == 0;
  return 0;
}

/* g's GPU parameters from x (at path): 0, or -1 with why. */
static int get_gpu(json_object *x, const char *path, kiln__gemm_tuning *g, kiln__str *why)
{
  static const char *const name[] = {GEMM_GPU_FIELDS(GEMM_NAME)};
  unsigned *field[] = {GEMM_GPU_FIELDS(GEMM_FIELD)};
  for (size_t i = 0; i < KILN__COUNT(name); i++)
    if (get_uint(x, path, name[i], field[i], why))
      return -1;
  return 0;
}

static json_object *get_obj(json_object *o, const char *k, kiln__str *why)
{
  json_object *v;
  if (json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_object))
    return v;
  kiln__str_appendf(why, "\"%s\" is missing or not an object", k);
  return NULL;
}

/* Record o's "conv" section into c: 0, or -1 with why. */
static int read_conv(json_object *o, kiln__conv_tuning *c, kiln__str *why)
{
  json_object *x = get_obj(o, "conv", why);
  return !x || get_uint(x, "conv", "qw", &c->qw, why) ||
             get_uint(x, "conv", "kb", &c->kb, why) ||
             get_uint(x, "conv", "lq", &c->lq, why) ||
             get_uint(x, "conv", "lp", &c->lp, why) ||
             get_uint(x, "conv", "col_kib", &c->col_kib, why)
           ? -1
           : 0;
}

/* The parameters of record o into t: 0, or -1 with why. */
static int read_params(json_object *o, kiln__tuning *t, kiln__str *why)
{
  json_object *gemm = get_obj(o, "gemm", why), *r, *f;
  if (!gemm)
    return -1;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
    char path[16];
    snprintf(path, sizeof path, "gemm.%s", gemm_tags[v]);
    json_object *x = get_obj(gemm, gemm_tags[v], why);
    kiln__gemm_tuning *g = &t->gemm[v];
    if (!x || get_shape(x, path, &g->gpu_shape, why) ||
        get_uint(x, path, "tm", &g->tm, why) || get_uint(x, path, "vw", &g->vw, why) ||
        get_uint(x, path, "cg", &g->cg, why) ||
        get_uint(x, path, "small", &g->small, why) ||
        get_uint(x, path, "akib", &g->akib, why) || get_gpu(x, path, g, why))
      return -1;
  }
  if (!(r = get_obj(o, "reduce", why)) ||
      get_shape(r, "reduce", &t->reduce.gpu_shape, why) ||
      get_uint(r, "reduce", "chunks", &t->reduce.chunks, why) ||
      get_uint(r, "reduce", "wg", &t->reduce.wg, why) ||
      get_uint(r, "reduce", "groups", &t->reduce.groups, why))
    return -1;
  if (!(f = get_obj(o, "fft", why)) ||
      get_uint(f, "fft", "wide_from", &t->fft.wide_from, why) ||
      get_uint(f, "fft", "group", &t->fft.group, why) ||
      get_uint(f, "fft", "vec_first", &t->fft.vec_first, why) ||
      get_uint(f, "fft", "row_max", &t->fft.row_max, why) ||
      get_uint(f, "fft", "local_max", &t->fft.local_max, why) ||
      get_uint(f, "fft", "local_radix", &t->fft.local_radix, why) ||
      get_uint(f, "fft", "local_cols", &t->fft.local_cols, why))
    return -1;
  return read_conv(o, &t->conv, why);
}

/* The backend named name, or KILN_BACKEND_AUTO. */
static kiln_backend backend_named(const char *name)
{
  for (int id = KILN_BACKEND_KILN; id <= KILN_BACKEND_VKFFT; id++)
    if (name && strcmp(name, kiln_backend_name((kiln_backend)id)) == 0)
      return (kiln_backend)id;
  return KILN_BACKEND_AUTO;
}

/* The per-shape choices of record o (an object of key: backend name), in
 * *out (malloc'd): 0, or -1 with why. A record without them has none. */
static int read_choices(json_object *o, kiln__choice **out, size_t *n, kiln__str *why)
{
  json_object *cs;
  *out = NULL;
  *n = 0;
  if (!json_object_object_get_ex(o, "choices", &cs))
    return 0;
  if (!json_object_is_type(cs, json_type_object)) {
    kiln__str_appendf(why, "\"choices\" is not an object");
    return -1;
  }
  size_t len = (size_t)json_object_object_length(cs);
  kiln__choice *c = calloc(len ? len : 1, sizeof *c);
  if (!c) {
    kiln__str_appendf(why, "out of host memory");
    return -1;
  }
  json_object_object_foreach(cs, key, val)
  {
    kiln_backend id = json_object_is_type(val, json_type_string)
                        ? backend_named(json_object_get_string(val))
                        : KILN_BACKEND_AUTO;
    if (id == KILN_BACKEND_AUTO || !(c[*n].key = strdup(key))) {
      kiln__str_appendf(why, "choices[\"%s\"] is not a backend's name", key);
      free_choices(c, *n);
      *n = 0;
      return -1;
    }
    c[(*n)++].id = id;
  }
  *out = c;
  return 0;
}

/* What kiln_tune() measured, as far as record o says it (it is only
 * reported, so what does not read is left out). */
static void read_measured(json_object *o, kiln__measured **out, size_t *n)
{
  json_object *ms;
  *out = NULL;
  *n = 0;
  if (!json_object_object_get_ex(o, "measured", &ms) ||
      !json_object_is_type(ms, json_type_array))
    return;
  size_t len = json_object_array_length(ms);
  kiln__measured *m = calloc(len ? len : 1, sizeof *m);
  for (size_t i = 0; m && i < len; i++) {
    json_object *x = json_object_array_get_idx(ms, i), *v;
    if (!json_object_is_type(x, json_type_object))
      continue;
    kiln__measured *e = &m[(*n)++];
    snprintf(e->kernel, sizeof e->kernel, "%s",
             get_str(x, "kernel") ? get_str(x, "kernel") : "");
    snprintf(e->from, sizeof e->from, "%s", get_str(x, "from") ? get_str(x, "from") : "");
    snprintf(e->to, sizeof e->to, "%s", get_str(x, "to") ? get_str(x, "to") : "");
    if (json_object_object_get_ex(x, "from_ns", &v))
      e->from_s = (double)json_object_get_int64(v) * 1e-9;
    if (json_object_object_get_ex(x, "to_ns", &v))
      e->to_s = (double)json_object_get_int64(v) * 1e-9;
    if (json_object_object_get_ex(x, "candidates", &v))
      e->candidates = (unsigned)json_object_get_int64(v);
  }
  *out = m;
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
  free_choices(c, nc);
}

/* Checks record text for rt's device and reads its parameters into t: 0,
 * or -1 with what is wrong in why. On success rt adopts the record's
 * choices, measurements and CLBlast sets (not yet applied); with merge,
 * only the choices it lacks. */
static int parse_record(kiln_runtime *rt, const char *text, size_t len, kiln__tuning *t,
                        kiln__str *why, int merge)
{
  extras x = {0};
  json_tokener *tok = json_tokener_new();
  json_object *o = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
  int complete = tok && json_tokener_get_error(tok) == json_tokener_success &&
                 json_tokener_get_parse_end(tok) == len;
  if (tok)
    json_tokener_free(tok);
  int rc = -1;
  const char *sum = o ? get_str(o, "checksum") : NULL;
  const kiln_device_info *dev = &kiln__runtime_device(rt)->info;
  if (!o || !complete || !json_object_is_type(o, json_type_object)) {
    kiln__str_appendf(why, "it is not a JSON object (damaged or truncated)");
  } else if (!get_str(o, "format") || strcmp(get_str(o, "format"), format_tag) != 0) {
    kiln__str_appendf(why, "its format is \"%s\", expected \"%s\"",
                      get_str(o, "format") ? get_str(o, "format") : "(none)", format_tag);
  } else if (!sum) {
    kiln__str_appendf(why, "it has no checksum");
  } else {
    char *given = strdup(sum), want[32];
    json_object_object_del(o, "checksum");
    checksum_of(o, want);
    static const char *const ids[] = {"kiln_version", "platform", "device",
                                      "driver_version"};
    const char *mine[] = {kiln_version(), dev->platform_name, dev->name,
                          dev->driver_version};
    size_t i = 0;
    while (i < 4 && get_str(o, ids[i]) &&
           strcmp(get_str(o, ids[i]), mine[i] ? mine[i] : "") == 0)
      i++;
    if (!given || strcmp(given, want) != 0)
      kiln__str_appendf(why, "its checksum does not match its contents (%s, computed %s)",
                        given ? given : "?", want);
    else if (i < 4)
      kiln__str_appendf(why, "it was made for %s \"%s\", and this is \"%s\"", ids[i],
                        get_str(o, ids[i]) ? get_str(o, ids[i]) : "(none)",
                        mine[i] ? mine[i] : "");
    else if (read_params(o, t, why) == 0 && kiln__tuning_check(dev, t, why) == 0 &&
             read_choices(o, &x.c, &x.nc, why) == 0 &&
             kiln__clblast_from_json(o, &x.cb, &x.ncb, why) == 0)
      rc = 0;
    if (rc == 0)
      read_measured(o, &x.m, &x.nm);
    free(given);
  }
  if (o)
    json_object_put(o);
  if (rc == 0 && merge) {
    add_choices(rt, x.c, x.nc, x.m); /* takes the choices, frees m */
    x.c = NULL, x.nc = 0, x.m = NULL, x.nm = 0;
  } else if (rc == 0) {
    keep_extras(rt, &x);
  }
  free_extras(&x);
  return rc;
}

KILN_API kiln_status kiln_tuning_set(kiln_runtime *rt, const char *json)
{
  static const char fn[] = "kiln_tuning_set";
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

#else /* !HAVE_JSON_C */

kiln_status kiln__record_save(kiln_runtime *rt, const char *fn, const kiln__measured *m,
                              size_t n)
{
  (void)m;
  (void)n;
  return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                    "%s: tuning records are JSON, and kiln was built without json-c "
                    "(Debian: libjson-c-dev)",
                    fn);
}

KILN_API kiln_status kiln_tuning_set(kiln_runtime *rt, const char *json)
{
  (void)json;
  return kiln__record_save(rt, "kiln_tuning_set", NULL, 0);
}

static int parse_record(kiln_runtime *rt, const char *text, size_t len, kiln__tuning *t,
                        kiln__str *why, int merge)
{
  (void)rt, (void)text, (void)len, (void)t, (void)merge;
  kiln__str_appendf(why, "kiln was built without json-c (Debian: libjson-c-dev), so "
                         "it cannot read records");
  return -1;
}

#endif /* HAVE_JSON_C */

/* One definition for both builds: without json-c there is no record text
 * to give, and the failure is kiln__record_save()'s. */
KILN_API kiln_status kiln_tuning_get(kiln_runtime *rt, char **json)
{
#if !HAVE_JSON_C
  if (json)
    *json = NULL;
  return kiln__record_save(rt, "kiln_tuning_get", NULL, 0);
#else
  if (!rt || !json)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_tuning_get: %s is NULL; expected a runtime and the address "
                      "of a char pointer",
                      !rt ? "rt" : "json");
  pthread_mutex_lock(&rt->build_lock);
  *json = rt->tuning->tuned && rt->tuning->record
            ? strdup(rt->tuning->record)
            : record_text(rt, &rt->tuning->t, "defaults");
  pthread_mutex_unlock(&rt->build_lock);
  return *json ? KILN_OK
               : kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                            "kiln_tuning_get: out of host memory");
#endif
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
  extras none = {0};
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
