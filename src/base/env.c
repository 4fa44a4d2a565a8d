/*
 * env.c — the one place kiln reads its environment.
 *
 * kiln_runtime_create() merges kiln_options with KILN_* variables here: an
 * option the caller set wins, a variable fills an option left at its
 * default, and a value kiln cannot use is an error that names it. Which
 * variables there are, and what each means, is env.def: one row each, read
 * here and printed by `kiln help env`.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/abi.h"
#include "base/env.h"
#include "base/error.h"
#include "base/util.h"

/* Reads a 0-or-1 value into *out (negated when `inverted`, as KILN_CACHE=0
 * sets no_cache). `expected` says what each value means, for the message. */
static kiln_status parse_flag(const char *name, const char *v, const char *expected,
                              int inverted, int *out)
{
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
  } units[] = {{"", 0},     {"b", 0},   {"k", 10},   {"kb", 10}, {"kib", 10},
               {"m", 20},   {"mb", 20}, {"mib", 20}, {"g", 30},  {"gb", 30},
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

/* ---- the readers of env.def ------------------------------------------------
 *
 * Each gets a non-empty value (an empty variable counts as unset, as shells
 * make `KILN_DEVICE= prog` easy) and leaves alone what an option set. */

typedef kiln_status (*env_reader)(const char *name, const char *value, kiln__config *cfg);

/* The variables kept with where they came from, for messages: selectors,
 * parsed against the devices once they are found, and the trace file. */
#define KILN__READ_SOURCED(reader, field, source)                                        \
  static kiln_status reader(const char *name, const char *value, kiln__config *cfg)      \
  {                                                                                      \
    if (!cfg->field) {                                                                   \
      cfg->field = value;                                                                \
      cfg->source = name;                                                                \
    }                                                                                    \
    return KILN_OK;                                                                      \
  }
KILN__READ_SOURCED(read_device, device, device_source)
KILN__READ_SOURCED(read_visible_devices, visible, visible_source)
KILN__READ_SOURCED(read_devices, devices, devices_source)
KILN__READ_SOURCED(read_trace, trace, trace_source)
#undef KILN__READ_SOURCED

/* A launcher's node-local rank: the first variable set, in env.def's order,
 * unless kiln_options gave one. */
static kiln_status read_local_rank(const char *name, const char *value, kiln__config *cfg)
{
  if (cfg->local_rank_source)
    return KILN_OK;
  double v;
  uint64_t exact;
  int has_fraction;
  const char *end = parse_number(value, &v, &exact, &has_fraction);
  if (!end || *end || has_fraction || exact > 1000000)
    return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                      "%s='%s' is not a node-local rank; expected an integer from 0 "
                      "to 1000000, as the launcher sets it",
                      name, value);
  cfg->local_rank = (unsigned)exact;
  cfg->local_rank_source = name;
  return KILN_OK;
}

/* The variables whose value is a path kiln takes as it is. */
#define KILN__READ_PATH(reader, field, unless)                                           \
  static kiln_status reader(const char *name, const char *value, kiln__config *cfg)      \
  {                                                                                      \
    (void)name;                                                                          \
    if (!(unless))                                                                       \
      cfg->field = value;                                                                \
    return KILN_OK;                                                                      \
  }
KILN__READ_PATH(read_cache_dir, cache_dir, cfg->cache_dir)
KILN__READ_PATH(read_cl_dir, cl_dir, 0)
KILN__READ_PATH(read_xdg_cache_home, xdg_cache_home, 0)
KILN__READ_PATH(read_home, home, 0)
KILN__READ_PATH(read_icd_vendors, icd_vendors, 0)
KILN__READ_PATH(read_vendor_path, vendor_path, 0)
KILN__READ_PATH(read_ld_library_path, ld_library_path, 0)
#undef KILN__READ_PATH

/* The 0-or-1 variables: what an option already set stays (a flag set by the
 * caller is never unset by the environment). `inverted`: KILN_CACHE=0 sets
 * no_cache. */
#define KILN__READ_FLAG(reader, field, inverted, expected)                               \
  static kiln_status reader(const char *name, const char *value, kiln__config *cfg)      \
  {                                                                                      \
    return cfg->field ? KILN_OK                                                          \
                      : parse_flag(name, value, expected, inverted, &cfg->field);        \
  }
#undef KILN__READ_FLAG

/* KILN_CACHE: 0 turns the cache off; 1 keeps kiln's binaries even on a
 * driver that keeps its own build cache (kiln__driver_cache()). */
static kiln_status read_cache(const char *name, const char *value, kiln__config *cfg)
{
  int off = 0;
  kiln_status st = cfg->no_cache ? KILN_OK
                                 : parse_flag(name, value,
                                              "0 to turn the on-disk kernel cache off, "
                                              "or 1 to keep kiln's binaries even where "
                                              "the driver caches its own builds",
                                              1, &off);
  if (st == KILN_OK && !cfg->no_cache) {
    cfg->no_cache = off;
    cfg->cache_binaries = !off;
  }
  return st;
}

#define KILN__READ_FLAG(reader, field, inverted, expected)                               \
  static kiln_status reader(const char *name, const char *value, kiln__config *cfg)      \
  {                                                                                      \
    return cfg->field ? KILN_OK                                                          \
                      : parse_flag(name, value, expected, inverted, &cfg->field);        \
  }
KILN__READ_FLAG(read_cache_shared, cache_shared, 0,
                "1 to accept a team cache folder shared by its group, or 0 for "
                "the default (off)")
KILN__READ_FLAG(read_tuning, no_tuning, 1,
                "0 to ignore the device's tuning record, or 1 for the default (on)")
KILN__READ_FLAG(read_benchmark, benchmark, 0,
                "1 to time the backends of each new shape and keep the fastest, or 0 "
                "for the default (off)")
KILN__READ_FLAG(read_memory_pool, no_memory_pool, 1,
                "0 to give each buffer's memory back to the driver at once, or 1 for "
                "the default (a caching pool)")
KILN__READ_FLAG(read_keep_sub_buffers, keep_sub_buffers, 0,
                "1 to keep each view's OpenCL sub-buffer until its buffer is "
                "released, or 0 for the default (the device's known quirks decide)")
KILN__READ_FLAG(read_profile, profile, 0,
                "1 to record every operation's times, or 0 for the default (off)")
#undef KILN__READ_FLAG

static kiln_status read_gemm_backend(const char *name, const char *value,
                                     kiln__config *cfg)
{
  static const kiln_backend gemm_backends[] = {KILN_BACKEND_AUTO, KILN_BACKEND_KILN,
                                               KILN_BACKEND_CLBLAST};
  if (cfg->gemm_backend != KILN_BACKEND_AUTO)
    return KILN_OK;
  size_t i = 0;
  while (i < 3 && strcmp(value, kiln_backend_name(gemm_backends[i])) != 0)
    i++;
  if (i == 3)
    return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                      "%s='%s' is not a GEMM backend; expected auto, kiln or clblast",
                      name, value);
  cfg->gemm_backend = gemm_backends[i];
  return KILN_OK;
}

static kiln_status read_memory_limit(const char *name, const char *value,
                                     kiln__config *cfg)
{
  if (cfg->memory_source)
    return KILN_OK;
  if (kiln__parse_size(value, &cfg->memory_limit, &cfg->memory_fraction) != 0)
    return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                      "%s='%s' is not a memory size; expected bytes with an optional "
                      "K, M, G or T suffix (powers of 1024), such as 512M or 1.5G, or "
                      "a percentage of the device's global memory in (0, 100], such "
                      "as 50%%",
                      name, value);
  cfg->memory_source = name;
  return KILN_OK;
}

/* KILN_OOM_WAIT: how long an allocation the driver refuses may wait and
 * retry, in milliseconds ("500", "500ms") or seconds ("2s", "0.5s"). */
static kiln_status read_oom_wait(const char *name, const char *value, kiln__config *cfg)
{
  double v;
  uint64_t exact;
  int has_fraction;
  const char *end =
    cfg->oom_wait_ms ? NULL : parse_number(value, &v, &exact, &has_fraction);
  if (cfg->oom_wait_ms)
    return KILN_OK; /* the option's */
  double ms = !end                          ? -1
              : strcmp(end, "s") == 0       ? v * 1000
              : !*end || !strcmp(end, "ms") ? v
                                            : -1;
  if (!(ms >= 0 && ms <= 3600e3))
    return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                      "%s='%s' is not a wait; expected milliseconds (500 or 500ms) or "
                      "seconds (2s), at most an hour, or 0 for the default (no wait)",
                      name, value);
  cfg->oom_wait_ms = (unsigned)(ms + 0.5);
  return KILN_OK;
}

/* KILN_TEST_SHAPE, a seam for kiln's tests: the kind of device whose
 * rules (tuning.c) shape the kernels, workspaces and backend order, so that
 * a GPU's shape runs and is checked on PoCL. Which device runs is not
 * changed, nor what kiln reports of it. Read even under ignore_env. */
static kiln_status read_test_shape(const char *name, const char *value, kiln__config *cfg)
{
  if (strcmp(value, "gpu") != 0 && strcmp(value, "cpu") != 0)
    return kiln__fail(NULL, KILN_ERR_INVALID_ENV,
                      "%s='%s' is not a device shape; expected gpu or cpu (for "
                      "kiln's tests)",
                      name, value);
  cfg->shape = value[0] == 'g' ? KILN_DEVICE_GPU : KILN_DEVICE_CPU;
  return KILN_OK;
}

/* env.def, as env.c reads it. */
static const struct {
  const char *name;
  env_reader read;
} env_vars[] = {
#define KILN_ENV(name, reader, option, meaning) {#name, reader},
#include "base/env.def"
#undef KILN_ENV
};

void kiln__local_rank_vars(kiln__str *s)
{
  const char *sep = "";
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
    if (env_vars[i].read == read_local_rank) {
      kiln__str_appendf(s, "%s%s", sep, env_vars[i].name);
      sep = ", ";
    }
}

/* Reads every variable of env.def that is set, in its order; KILN_* ones
 * only when the caller did not ask to ignore them, but KILN_TEST_SHAPE
 * always: it stands for the kind of device the tests run as, which a test's
 * runtime that ignores the user's settings still runs as. */
static kiln_status read_environment(const kiln_options *opts, kiln__config *cfg)
{
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
    const char *value = getenv(env_vars[i].name);
    if (!env_vars[i].read || !value || !*value ||
        (opts->ignore_env && strncmp(env_vars[i].name, "KILN_", 5) == 0 &&
         env_vars[i].read != read_test_shape))
      continue;
    kiln_status st = env_vars[i].read(env_vars[i].name, value, cfg);
    if (st != KILN_OK)
      return st;
  }
  return KILN_OK;
}

kiln_status kiln__config_resolve(const kiln_options *opts, kiln__config *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  kiln_options given; /* the caller's options as this kiln's struct */
  kiln_options_init(&given);
  kiln_status st = KILN_OK;
  if (opts)
    st = KILN__STRUCT_IN(NULL, "kiln_runtime_create", kiln_options, opts, &given);
  if (st != KILN_OK)
    return st;
  opts = &given;

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
  cfg->local_rank = opts->local_rank;
  cfg->local_rank_source = opts->local_rank_source;
  cfg->visible = opts->visible_devices;
  cfg->visible_source = "kiln_options.visible_devices";
  cfg->devices = opts->devices;
  cfg->devices_source = "kiln_options.devices";
  if ((unsigned)opts->gemm_backend > KILN_BACKEND_CLBLAST)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_create: options.gemm_backend is %d; expected "
                      "KILN_BACKEND_AUTO, KILN_BACKEND_KILN or KILN_BACKEND_CLBLAST",
                      (int)opts->gemm_backend);
  cfg->gemm_backend = opts->gemm_backend;
  cfg->cache_dir = opts->cache_dir;
  cfg->no_cache = opts->no_cache;
  cfg->cache_shared = opts->cache_shared != 0;
  cfg->no_tuning = opts->no_tuning != 0;
  cfg->benchmark = opts->benchmark != 0;
  cfg->no_memory_pool = opts->no_memory_pool != 0;
  if (opts->oom_wait_ms > 3600000u)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_runtime_create: options.oom_wait_ms is %u; expected at "
                      "most 3600000 (an hour), or 0 for no wait",
                      opts->oom_wait_ms);
  cfg->oom_wait_ms = opts->oom_wait_ms;
  cfg->profile = opts->profile != 0;
  cfg->trace = opts->trace && *opts->trace ? opts->trace : NULL;
  cfg->trace_source = "kiln_options.trace";
  return read_environment(opts, cfg);
}
