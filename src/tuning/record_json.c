/*
 * record_json.c — a tuning record's text: rt's parameters, choices,
 * measurements and CLBlast sets to JSON, and back with the checks that
 * decide whether a record applies. record.c keeps the record's file, its
 * name and the public calls. The text:
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xxhash.h>

#include "kiln_config.h"
#include "base/abi.h"
#include "core/runtime.h"
#include "tuning/record.h"
#include "tuning/tuning.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

void kiln__record_free_choices(kiln__choice *c, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(c[i].key);
  free(c);
}

void kiln__record_extras_free(kiln__record_extras *x)
{
  kiln__record_free_choices(x->c, x->nc);
  free(x->m);
  free(x->cb);
  *x = (kiln__record_extras){0};
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

char *kiln__record_text(kiln_runtime *rt, const kiln__tuning *t, const char *by)
{
  json_object *o = record_new(rt, t, by);
  char *text = strdup(
    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
  json_object_put(o);
  return text;
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
      kiln__record_free_choices(c, *n);
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

int kiln__record_parse(kiln_runtime *rt, const char *text, size_t len, kiln__tuning *t,
                       kiln__record_extras *x, kiln__str *why)
{
  *x = (kiln__record_extras){0};
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
             read_choices(o, &x->c, &x->nc, why) == 0 &&
             kiln__clblast_from_json(o, &x->cb, &x->ncb, why) == 0)
      rc = 0;
    if (rc == 0)
      read_measured(o, &x->m, &x->nm);
    free(given);
  }
  if (o)
    json_object_put(o);
  if (rc != 0)
    kiln__record_extras_free(x);
  return rc;
}

#else /* !HAVE_JSON_C */

char *kiln__record_text(kiln_runtime *rt, const kiln__tuning *t, const char *by)
{
  (void)rt, (void)t, (void)by;
  return NULL;
}

int kiln__record_parse(kiln_runtime *rt, const char *text, size_t len, kiln__tuning *t,
                       kiln__record_extras *x, kiln__str *why)
{
  (void)rt, (void)text, (void)len, (void)t;
  *x = (kiln__record_extras){0};
  kiln__str_appendf(why, "kiln was built without json-c (Debian: libjson-c-dev), so "
                         "it cannot read records");
  return -1;
}

#endif /* HAVE_JSON_C */
