/*
 * env.c — the one place kiln reads its environment.
 *
 * kiln_runtime_create() merges kiln_options with KILN_* variables here: an
 * option the caller set wins, a variable fills an option left at its
 * default, and a value kiln cannot use is an error that names it.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

KILN_API void kiln_options_init(kiln_options *opts)
{
  if (!opts)
    return;
  memset(opts, 0, sizeof *opts);
}

/* Reads a 0-or-1 variable into *out (negated when `inverted`, as KILN_CACHE=0
 * sets no_cache); leaves *out alone when unset or empty. `expected` says
 * what each value means, for the message. */
static kiln_status parse_flag(const char *name, const char *expected, int inverted,
                              int *out)
{
  const char *v = getenv(name);
  if (!v || !*v)
    return KILN_OK;
  if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
    return kiln__fail(NULL, KILN_ERR_INVALID_ENV, "%s='%s' is not 0 or 1; expected %s",
                      name, v, expected);
  *out = (strcmp(v, "1") == 0) != inverted;
  return KILN_OK;
}

/* Parses "123", "1.5" into a double and, when there is no fraction, an exact
 * integer. Locale-independent, unlike strtod. Returns the end, or NULL. */
static const char *parse_number(const char *s, double *value, uint64_t *exact,
                                int *has_fraction)
{
  uint64_t whole = 0;
  int digits = 0, overflow = 0;
  for (; isdigit((unsigned char)*s); s++, digits++) {
    unsigned d = (unsigned)(*s - '0');
    if (whole > (UINT64_MAX - d) / 10)
      overflow = 1;
    else
      whole = whole * 10 + d;
  }
  double v = (double)whole, scale = 0.1;
  *has_fraction = 0;
  if (*s == '.') {
    s++;
    for (; isdigit((unsigned char)*s); s++, digits++, scale /= 10) {
      v += (*s - '0') * scale;
      *has_fraction = 1;
    }
  }
  if (digits == 0 || overflow)
    return NULL;
  *value = v;
  *exact = whole;
  return s;
}

int kiln__parse_size(const char *s, uint64_t *bytes, double *fraction)
{
  static const struct {
    const char *suffix;
    unsigned shift;
  } units[] = {{"", 0},    {"b", 0},    {"k", 10},   {"kb", 10},  {"kib", 10},
               {"m", 20},  {"mb", 20},  {"mib", 20}, {"g", 30},   {"gb", 30},
               {"gib", 30}, {"t", 40},  {"tb", 40},  {"tib", 40}};
  *bytes = 0;
  *fraction = 0;
  if (!s)
    return -1;
  double v;
  uint64_t exact;
  int has_fraction;
  const char *end = parse_number(s, &v, &exact, &has_fraction);
  if (!end)
    return -1;
  if (strcmp(end, "%") == 0) {
    if (!(v > 0 && v <= 100))
      return -1;
    *fraction = v / 100.0;
    return 0;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].suffix) != 0)
      continue;
    unsigned shift = units[i].shift;
    if (!has_fraction) {
      if (exact == 0 || exact > (UINT64_MAX >> shift))
        return -1;
      *bytes = exact << shift;
    } else {
      double scaled = ldexp(v, (int)shift);
      if (scaled < 1 || scaled >= 18446744073709551616.0 /* 2^64 */)
        return -1;
      *bytes = (uint64_t)scaled;
    }
    return 0;
  }
  return -1;
}

kiln_status kiln__config_resolve(const kiln_options *opts, kiln__config *cfg)
{
  kiln_options defaults;
  kiln_options_init(&defaults);
  if (!opts)
    opts = &defaults;
  memset(cfg, 0, sizeof *cfg);

  if (!(opts->memory_fraction >= 0 && opts->memory_fraction <= 1))
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_create: options.memory_fraction is %g; "
                      "expected a fraction in (0, 1], or 0 for no limit",
                      opts->memory_fraction);
  cfg->memory_limit = opts->memory_limit;
  cfg->memory_fraction = opts->memory_fraction;
  if (cfg->memory_limit || cfg->memory_fraction)
    cfg->memory_source = "kiln_options";
  cfg->device = opts->device;
  cfg->device_source = "kiln_options.device";
  cfg->visible = opts->visible_devices;
  cfg->visible_source = "kiln_options.visible_devices";
  if ((unsigned)opts->gemm_backend > KILN_BACKEND_CLBLAST)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_create: options.gemm_backend is %d; expected "
                      "KILN_BACKEND_AUTO, KILN_BACKEND_KILN or KILN_BACKEND_CLBLAST",
                      (int)opts->gemm_backend);
  cfg->gemm_backend = opts->gemm_backend;
  cfg->cache_dir = opts->cache_dir;
  cfg->no_cache = opts->no_cache;
  cfg->cache_shared = opts->cache_shared != 0;
  cfg->profile = opts->profile != 0;
  cfg->trace = opts->trace && *opts->trace ? opts->trace : NULL;
  cfg->trace_source = "kiln_options.trace";
  cfg->xdg_cache_home = getenv("XDG_CACHE_HOME");
  cfg->home = getenv("HOME");
  if (opts->ignore_env)
    return KILN_OK;

  cfg->icd_vendors = getenv("OCL_ICD_VENDORS");
  /* Selectors are parsed against the devices, once they are found. An empty
   * variable counts as unset, as shells make `KILN_DEVICE= prog` easy. */
  const char *device = getenv("KILN_DEVICE");
  if (!cfg->device && device && *device) {
    cfg->device = device;
    cfg->device_source = "KILN_DEVICE";
  }
  const char *visible = getenv("KILN_VISIBLE_DEVICES");
  if (!cfg->visible && visible && *visible) {
    cfg->visible = visible;
    cfg->visible_source = "KILN_VISIBLE_DEVICES";
  }
  const char *cache_dir = getenv("KILN_CACHE_DIR");
  if (!cfg->cache_dir && cache_dir && *cache_dir)
    cfg->cache_dir = cache_dir;
  const char *gemm = getenv("KILN_GEMM_BACKEND");
  if (gemm && *gemm && cfg->gemm_backend == KILN_BACKEND_AUTO) {
    static const kiln_backend gemm_backends[] = {KILN_BACKEND_AUTO, KILN_BACKEND_KILN,
                                                 KILN_BACKEND_CLBLAST};
    size_t i = 0;
    while (i < 3 && strcmp(gemm, kiln_backend_name(gemm_backends[i])) != 0)
      i++;
    if (i == 3)
      return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                        "KILN_GEMM_BACKEND='%s' is not a GEMM backend; expected "
                        "auto, kiln or clblast", gemm);
    cfg->gemm_backend = gemm_backends[i];
  }
  const char *cl_dir = getenv("KILN_CL_DIR");
  if (cl_dir && *cl_dir)
    cfg->cl_dir = cl_dir;
  kiln_status st = KILN_OK;
  if (!cfg->no_cache)
    st = parse_flag("KILN_CACHE", "0 to turn the on-disk kernel cache off, or 1 "
                    "for the default (on)", 1, &cfg->no_cache);
  if (st == KILN_OK && !cfg->cache_shared)
    st = parse_flag("KILN_CACHE_SHARED", "1 to accept a team cache folder "
                    "shared by its group, or 0 for the default (off)", 0,
                    &cfg->cache_shared);
  if (st == KILN_OK && !cfg->profile)
    st = parse_flag("KILN_PROFILE", "1 to record every operation's times, or 0 "
                    "for the default (off)", 0, &cfg->profile);
  if (st != KILN_OK)
    return st;
  const char *trace = getenv("KILN_TRACE");
  if (trace && *trace && !cfg->trace) {
    cfg->trace = trace;
    cfg->trace_source = "KILN_TRACE";
  }
  const char *limit = getenv("KILN_MEMORY_LIMIT");
  if (limit && *limit && !cfg->memory_source) {
    if (kiln__parse_size(limit, &cfg->memory_limit, &cfg->memory_fraction) != 0)
      return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                        "KILN_MEMORY_LIMIT='%s' is not a memory size; expected "
                        "bytes with an optional K, M, G or T suffix (powers of "
                        "1024), such as 512M or 1.5G, or a percentage of the "
                        "device's global memory in (0, 100], such as 50%%",
                        limit);
    cfg->memory_source = "KILN_MEMORY_LIMIT";
  }
  return KILN_OK;
}
