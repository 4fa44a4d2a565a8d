/*
 * program.c — building OpenCL programs (the caller's and kiln's own cl/
 * files) through the on-disk cache, and the kernel API.
 *
 * A build first looks in the cache; a binary the driver refuses is deleted
 * and the program is compiled from source again, so a driver update or a
 * bad entry costs one compile, never a wrong binary.
 *
 * With profiling on, each build or cache load is a record of its own
 * ("build cl/gemm.cl", "load cl/gemm.cl", "build program saxpy"), set
 * aside from the call that needed it (profile.h), so that an operation's
 * first call is not charged with compiling its kernels.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "base/util.h"
#include "compile/cache.h"
#include "compile/program.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "device/device.h"
#include "profile/profile.h"

struct kiln_program {
  kiln_runtime *rt;
  cl_program program;
  char *log;
};

static void counted(kiln_runtime *rt, uint64_t *counter, int delta)
{
  pthread_mutex_lock(&rt->lock);
  *counter += (uint64_t)(int64_t)delta;
  pthread_mutex_unlock(&rt->lock);
}

/* The compiler's messages, as a malloc'd string ("" when it said nothing). */
static char *build_log(cl_program p, cl_device_id dev)
{
  size_t size = 0;
  char *log = NULL;
  if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS &&
      (log = malloc(size + 1)) != NULL &&
      clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
        CL_SUCCESS) {
    log[size] = '\0';
    return log;
  }
  free(log);
  return strdup("");
}

/* Whether a driver that aborts on a binary it cannot read would read this
 * one. Mesa's rusticl panics (the process ends) on any other than its own
 * format, which begins with a format version (1, little-endian), the SPIR-V
 * module's length and a 4-byte field, then the module with its magic number
 * 0x07230203. An entry of the cache passed its checksum and its key (the
 * driver's version among them), so a refusal here means a driver that could
 * not read what it wrote; the entry is then refused as a driver refuses
 * one. Other drivers say what they refuse with a status. */
static int binary_readable(const kiln__device *dev, const unsigned char *bin, size_t size)
{
  static const unsigned char spirv[4] = {0x03, 0x02, 0x23, 0x07}, v1[4] = {1, 0, 0, 0};
  if (!strstr(dev->info.platform_name, "rusticl"))
    return 1;
  return size >= 16 && memcmp(bin, v1, 4) == 0 && memcmp(bin + 12, spirv, 4) == 0;
}

/* Tries the cache; on a hit that the driver builds, *out is the program. */
static void build_from_cache(kiln_runtime *rt, const kiln__cache_key *key,
                             const char *options, cl_program *out)
{
  const kiln__device *dev = kiln__runtime_device(rt);
  unsigned char *bin = NULL;
  size_t size = 0;
  pthread_mutex_lock(&rt->lock);
  int hit = kiln__cache_load(rt->cache, key, &bin, &size) == 0;
  pthread_mutex_unlock(&rt->lock);
  if (!hit)
    return;
  cl_int err, status;
  const unsigned char *bins[1] = {bin};
  cl_program p =
    binary_readable(dev, bin, size)
      ? clCreateProgramWithBinary(rt->context, 1, &dev->id, &size, bins, &status, &err)
      : NULL;
  free(bin);
  if (p && clBuildProgram(p, 1, &dev->id, options, NULL, NULL) == CL_SUCCESS) {
    *out = p;
    return;
  }
  if (p)
    clReleaseProgram(p);
  pthread_mutex_lock(&rt->lock);
  kiln__cache_remove(rt->cache, key);
  rt->cache->rejected++;
  rt->cache->hits--; /* it was not one after all */
  pthread_mutex_unlock(&rt->lock);
}

/* Saves the program's binary; failing to is no error for the caller. */
static void store_binary(kiln_runtime *rt, const kiln__cache_key *key, cl_program p)
{
  size_t size = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
        CL_SUCCESS ||
      size == 0)
    return;
  unsigned char *bin = malloc(size);
  unsigned char *bins[1] = {bin};
  if (bin &&
      clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) {
    pthread_mutex_lock(&rt->lock);
    kiln__cache_store(rt->cache, key, bin, size);
    pthread_mutex_unlock(&rt->lock);
  }
  free(bin);
}

/* Builds source for the runtime's device, through the cache; *loaded is 1
 * when the cache had it. On success *log is the compiler's messages
 * (malloc'd). */
static kiln_status build_or_load(kiln_runtime *rt, const char *fn, const char *src,
                                 size_t len, const char *options, cl_program *out,
                                 char **log, int *loaded)
{
  const kiln__device *dev = kiln__runtime_device(rt);
  kiln__cache_key key = kiln__cache_key_of(src, len, options, &dev->info);
  int binaries = !rt->cache->binaries_off; /* the driver's cache instead */
  *out = NULL;
  if (binaries)
    build_from_cache(rt, &key, options, out);
  *loaded = *out != NULL;
  if (*out) {
    *log = strdup("");
    return *log ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
  }
  cl_int err;
  cl_program p = clCreateProgramWithSource(rt->context, 1, &src, &len, &err);
  if (!p)
    return kiln__fail_cl(rt, err, "clCreateProgramWithSource", "%s: creating a program",
                         fn);
  err = clBuildProgram(p, 1, &dev->id, options, NULL, NULL);
  counted(rt, &rt->compiles, 1);
  size_t nk = 0;
  if (err == CL_SUCCESS &&
      clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL) == CL_SUCCESS)
    counted(rt, &rt->kernels_compiled, (int)nk);
  *log = build_log(p, dev->id);
  if (err != CL_SUCCESS) {
    kiln_status st = kiln__fail(rt, kiln__status_from_cl(err),
                                "%s: clBuildProgram failed with %s (%d) on '%s'.\n"
                                "options: %s\nbuild log:\n%s",
                                fn, kiln_cl_error_name(err), (int)err, dev->info.name,
                                *options ? options : "(none)", *log ? *log : "(none)");
    free(*log);
    *log = NULL;
    clReleaseProgram(p);
    return st;
  }
  if (binaries)
    store_binary(rt, &key, p);
  *out = p;
  return *log ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
}

/* The profile's name of a program built or loaded: "build cl/gemm.cl" for
 * kiln's own (`what`), "build program saxpy" for the caller's, named by
 * its kernels (as many as fit). */
static void profile_name(char *name, size_t size, int loaded, const char *what,
                         cl_program p)
{
  int at =
    snprintf(name, size, "%s %s", loaded ? "load" : "build", what ? what : "program");
  size_t names = 0;
  if (what || !p || at < 0 || (size_t)at + 2 >= size ||
      clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &names) != CL_SUCCESS ||
      names <= 1)
    return;
  char *list = malloc(names);
  if (list &&
      clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, names, list, NULL) == CL_SUCCESS) {
    for (char *c = list; *c; c++)
      *c = *c == ';' ? ',' : *c; /* "a;b" */
    snprintf(name + at, size - (size_t)at, " %s", list);
  }
  free(list);
}

/* build_or_load(), recorded apart when profiling (see the top): `what`
 * names kiln's own programs ("cl/gemm.cl"), NULL the caller's. */
static kiln_status build(kiln_runtime *rt, const char *fn, const char *what,
                         const char *src, size_t len, const char *options,
                         cl_program *out, char **log)
{
  options = options ? options : "";
  char name[64] = "";
  kiln__profile_scope ps;
  kiln__profile_aside(rt, &ps, KILN_PROFILE_BUILD, name);
  kiln__profile_describe(&ps, "opencl", 0, 0, "%s", options);
  int loaded = 0;
  kiln_status st = build_or_load(rt, fn, src, len, options, out, log, &loaded);
  if (ps.rt) {
    profile_name(name, sizeof name, loaded, what, *out);
    ps.kind = loaded ? KILN_PROFILE_LOAD : KILN_PROFILE_BUILD;
  }
  kiln__profile_back(&ps);
  return st;
}

/* Wraps a built program for the caller. Takes ownership of p and log. */
static kiln_status program_new(kiln_runtime *rt, cl_program p, char *log,
                               kiln_program **out)
{
  kiln_program *prog = calloc(1, sizeof *prog);
  if (!prog) {
    clReleaseProgram(p);
    free(log);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
  }
  *prog = (kiln_program){.rt = rt, .program = p, .log = log};
  counted(rt, &rt->live_programs, 1);
  *out = prog;
  return KILN_OK;
}

/* The start of every kiln_program_create*(): rt and out must not be NULL;
 * then *out is cleared, so that it is NULL on any later failure. */
static kiln_status check_out(kiln_runtime *rt, const char *fn, kiln_program **out)
{
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: rt is NULL; expected a runtime from kiln_runtime_create()",
                      fn);
  if (!out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: out is NULL; expected the address of a kiln_program "
                      "pointer",
                      fn);
  *out = NULL;
  return KILN_OK;
}

/* build() for the caller's programs: with -cl-kernel-arg-info, so that
 * kernel.c can check each argument against its declaration. */
static kiln_status build_user(kiln_runtime *rt, const char *fn, const char *src,
                              size_t len, const char *options, cl_program *out,
                              char **log)
{
  kiln__str opts = {0};
  kiln__str_appendf(&opts, "-cl-kernel-arg-info%s%s", options && *options ? " " : "",
                    options ? options : "");
  kiln_status st =
    opts.failed
      ? kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn)
      : build(rt, fn, NULL, src, len, kiln__str_get(&opts), out, log);
  kiln__str_free(&opts);
  return st;
}

KILN_API kiln_status kiln_program_create(kiln_runtime *rt, const char *source,
                                         const char *options, kiln_program **out)
{
  static const char fn[] = "kiln_program_create";
  kiln_status st = check_out(rt, fn, out);
  if (st != KILN_OK)
    return st;
  if (!source || !*source)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: source is %s; expected OpenCL C source text", fn,
                      source ? "empty" : "NULL");
  cl_program p;
  char *log;
  st = build_user(rt, fn, source, strlen(source), options, &p, &log);
  return st == KILN_OK ? program_new(rt, p, log, out) : st;
}

/* Reads a whole file into a malloc'd NUL-terminated string. */
static kiln_status read_file(kiln_runtime *rt, const char *fn, const char *path,
                             char **text, size_t *len)
{
  FILE *f = fopen(path, "rb");
  kiln__str s = {0};
  char chunk[4096];
  size_t n;
  if (!f)
    return kiln__fail(rt, KILN_ERR_IO, "%s: cannot open '%s': %s", fn, path,
                      strerror(errno));
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    kiln__str_appendf(&s, "%.*s", (int)n, chunk);
  int bad = ferror(f);
  fclose(f);
  if (bad || s.failed || memchr(kiln__str_get(&s), '\0', s.len)) {
    kiln__str_free(&s);
    return kiln__fail(rt, bad ? KILN_ERR_IO : KILN_ERR_INVALID_ARGUMENT,
                      "%s: cannot read '%s'%s", fn, path,
                      bad ? ""
                          : ": it holds NUL bytes or is too large; expected "
                            "OpenCL C source text");
  }
  *text = s.data ? s.data : strdup("");
  *len = s.len;
  return *text ? KILN_OK : KILN_ERR_OUT_OF_HOST_MEMORY;
}

KILN_API kiln_status kiln_program_create_file(kiln_runtime *rt, const char *path,
                                              const char *options, kiln_program **out)
{
  static const char fn[] = "kiln_program_create_file";
  kiln_status st = check_out(rt, fn, out);
  if (st != KILN_OK)
    return st;
  if (!path)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: path is NULL; expected the path of a .cl file", fn);
  char *text;
  size_t len;
  if ((st = read_file(rt, fn, path, &text, &len)) != KILN_OK)
    return st;
  if (len == 0) {
    free(text);
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: '%s' is empty; expected OpenCL C source text", fn, path);
  }
  cl_program p;
  char *log;
  st = build_user(rt, fn, text, len, options, &p, &log);
  free(text);
  return st == KILN_OK ? program_new(rt, p, log, out) : st;
}

KILN_API size_t kiln_builtin_count(void)
{
  return kiln__builtin_count;
}

KILN_API const char *kiln_builtin_name(size_t i)
{
  return i < kiln__builtin_count ? kiln__builtin_sources[i].name : NULL;
}

static size_t builtin_index(const char *name)
{
  for (size_t i = 0; name && i < kiln__builtin_count; i++)
    if (strcmp(kiln__builtin_sources[i].name, name) == 0)
      return i;
  return SIZE_MAX;
}

/* The n of text's first line that reads `#define KILN_PASSES n`; 0 without
 * one. */
static unsigned long passes_of(const char *text, size_t len)
{
  static const char key[] = "#define KILN_PASSES ";
  for (const char *at = text, *end = text + len; at < end;) {
    const char *nl = memchr(at, '\n', (size_t)(end - at));
    size_t line = nl ? (size_t)(nl - at) : (size_t)(end - at);
    if (line > sizeof key - 1 && !memcmp(at, key, sizeof key - 1) &&
        at[sizeof key - 1] >= '0' && at[sizeof key - 1] <= '9')
      return strtoul(at + sizeof key - 1, NULL, 10);
    at += line + 1;
  }
  return 0;
}

void kiln__builtin_join(kiln__str *out, const char *prelude, size_t plen,
                        const char *common, const char *ctext, size_t clen,
                        const char *name, const char *text, size_t len)
{
  assert(plen <= INT_MAX && clen <= INT_MAX && len <= INT_MAX);
  unsigned long n = common ? passes_of(ctext, clen) : 0;
  n = n ? n : passes_of(text, len);
  kiln__str_appendf(out, "#line 1 \"cl/prelude.cl\"\n%.*s", (int)plen, prelude);
  for (unsigned long k = 1; k <= (n ? n : 1); k++) {
    kiln__str_appendf(out, "\n#define KILN_PASS %lu\n", k);
    if (common)
      kiln__str_appendf(out, "#line 1 \"cl/%s.cl\"\n%.*s\n", common, (int)clen, ctext);
    kiln__str_appendf(out, "#line 1 \"cl/%s.cl\"\n%.*s\n#undef KILN_PASS\n", name,
                      (int)len, text);
  }
}

void kiln__builtin_family(const kiln__builtin_source *b, char *out, size_t size)
{
  size_t n = b->common ? strcspn(b->name, "_") : strlen(b->name);
  snprintf(out, size, "%.*s", (int)n, b->name);
}

/* The options cl/<b's name>.cl is built with (kiln__builtin_family()). */
static void builtin_options(kiln_runtime *rt, const kiln__builtin_source *b,
                            kiln__str *out)
{
  char family[64];
  kiln__builtin_family(b, family, sizeof family);
  kiln__builtin_options_of(rt, family, out);
}

/* The text of builtin b from the files of KILN_CL_DIR, joined as the
 * embedded one is (malloc'd, in *text and *len). */
static kiln_status read_from_cl_dir(kiln_runtime *rt, const char *fn,
                                    const kiln__builtin_source *b, char **text,
                                    size_t *len)
{
  char path[4096];
  char *prelude = NULL, *common = NULL, *file = NULL;
  size_t plen = 0, clen = 0, flen = 0;
  snprintf(path, sizeof path, "%s/prelude.cl", rt->cl_dir);
  kiln_status st = read_file(rt, fn, path, &prelude, &plen);
  if (st == KILN_OK && b->common) {
    snprintf(path, sizeof path, "%s/%s.cl", rt->cl_dir, b->common);
    st = read_file(rt, fn, path, &common, &clen);
  }
  snprintf(path, sizeof path, "%s/%s.cl", rt->cl_dir, b->name);
  if (st == KILN_OK)
    st = read_file(rt, fn, path, &file, &flen);
  kiln__str s = {0};
  if (st == KILN_OK)
    kiln__builtin_join(&s, prelude, plen, b->common, common, clen, b->name, file, flen);
  free(prelude);
  free(common);
  free(file);
  if (st == KILN_OK && s.failed)
    st = kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  if (st != KILN_OK) {
    kiln__str_free(&s);
    return st;
  }
  *len = s.len;
  *text = s.data;
  return KILN_OK;
}

/* Builds builtin i unless it is built. Called with rt->build_lock held. */
static kiln_status builtin_build(kiln_runtime *rt, const char *fn, size_t i)
{
  KILN__ASSERT_HELD(&rt->build_lock);
  if (rt->builtins[i])
    return KILN_OK;
  const kiln__builtin_source *b = &kiln__builtin_sources[i];
  char *text = NULL;
  size_t len = b->size;
  const char *src = (const char *)b->bytes;
  kiln_status st = KILN_OK;
  if (rt->cl_dir) { /* kernel development: the files on disk win */
    if ((st = read_from_cl_dir(rt, fn, b, &text, &len)) != KILN_OK)
      return st;
    src = text;
  }
  kiln__str options = {0};
  builtin_options(rt, b, &options);
  char *log = NULL, what[64];
  snprintf(what, sizeof what, "cl/%s.cl", b->name);
  st = options.failed
         ? KILN_ERR_OUT_OF_HOST_MEMORY
         : build(rt, fn, what, src, len, kiln__str_get(&options), &rt->builtins[i], &log);
  free(log);
  free(text);
  kiln__str_free(&options);
  return st;
}

KILN_API kiln_status kiln_program_create_builtin(kiln_runtime *rt, const char *name,
                                                 kiln_program **out)
{
  static const char fn[] = "kiln_program_create_builtin";
  kiln_status st = check_out(rt, fn, out);
  if (st != KILN_OK)
    return st;
  size_t i = builtin_index(name);
  if (i == SIZE_MAX) {
    kiln__str names = {0};
    for (size_t k = 0; k < kiln__builtin_count; k++)
      kiln__str_appendf(&names, "%s%s", k ? ", " : "", kiln__builtin_sources[k].name);
    st = kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                    "%s: kiln has no kernel file named '%s'; expected one of: %s", fn,
                    name ? name : "(NULL)", kiln__str_get(&names));
    kiln__str_free(&names);
    return st;
  }
  pthread_mutex_lock(&rt->build_lock);
  st = builtin_build(rt, fn, i);
  cl_program p = rt->builtins[i];
  if (st == KILN_OK)
    clRetainProgram(p);
  pthread_mutex_unlock(&rt->build_lock);
  if (st != KILN_OK)
    return st;
  /* the runtime's build, whose messages the program object still holds
   * (none when its binary came from the cache) */
  char *log = build_log(p, kiln__runtime_device(rt)->id);
  if (!log) {
    clReleaseProgram(p);
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  }
  return program_new(rt, p, log, out);
}

/*
 * One kernel's programs. An operation's first call builds only the kernels
 * it launches, each a program of its own: the file's text with -DKILN_ONLY
 * -DKILN_WANT_<kernel> (cl/prelude.cl), so that the compiler sees one
 * kernel, not every kernel and variant of the file (cl/fft.cl has 29 a
 * type). A kernel is built once a runtime: the first thread to want it
 * builds it outside build_lock, and others that want it wait on `built`;
 * threads that want other kernels build those meanwhile.
 */
typedef struct kernel_program {
  char name[64];
  cl_program program; /* NULL while building */
  int stale;          /* the tuning changed while it was built: not kept */
} kernel_program;

struct kiln__kernel_programs {
  pthread_cond_t built;
  kernel_program *at;
  size_t n, cap;
};

/* The table, made on first use. Called with rt->build_lock held. */
static struct kiln__kernel_programs *kernel_table(kiln_runtime *rt)
{
  KILN__ASSERT_HELD(&rt->build_lock);
  if (!rt->kernel_programs) {
    struct kiln__kernel_programs *t = calloc(1, sizeof *t);
    if (t && pthread_cond_init(&t->built, NULL) != 0) {
      free(t);
      t = NULL;
    }
    rt->kernel_programs = t;
  }
  return rt->kernel_programs;
}

static kernel_program *kernel_find(struct kiln__kernel_programs *t, const char *name)
{
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->at[i].name, name))
      return &t->at[i];
  return NULL;
}

static void kernel_remove(struct kiln__kernel_programs *t, const char *name)
{
  kernel_program *e = kernel_find(t, name);
  if (e)
    *e = t->at[--t->n];
}

/* Builds kernel `kernel` of builtin i alone into *out: the source and
 * options are read under build_lock, the build runs outside it. Called
 * with build_lock held; returns with it held. */
static kiln_status kernel_build(kiln_runtime *rt, const char *fn, size_t i,
                                const char *kernel, cl_program *out)
{
  KILN__ASSERT_HELD(&rt->build_lock);
  const kiln__builtin_source *b = &kiln__builtin_sources[i];
  char *text = NULL, what[96];
  size_t len = b->size;
  kiln_status st = KILN_OK;
  if (rt->cl_dir && (st = read_from_cl_dir(rt, fn, b, &text, &len)) != KILN_OK)
    return st;
  const char *src = text ? text : (const char *)b->bytes;
  kiln__str options = {0};
  builtin_options(rt, b, &options);
  kiln__str_appendf(&options, " -DKILN_ONLY -DKILN_WANT_%s", kernel);
  snprintf(what, sizeof what, "cl/%s.cl %s", b->name, kernel);
  char *log = NULL;
  pthread_mutex_unlock(&rt->build_lock);
  st = options.failed
         ? kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn)
         : build(rt, fn, what, src, len, kiln__str_get(&options), out, &log);
  pthread_mutex_lock(&rt->build_lock);
  free(log);
  free(text);
  kiln__str_free(&options);
  return st;
}

/* The program that holds kernel `kernel` of builtin i, retained for the
 * caller: the whole file's when kiln_program_create_builtin() built it,
 * else the kernel's own, built or waited for. Called with build_lock held. */
static kiln_status kernel_program_get(kiln_runtime *rt, const char *fn, size_t i,
                                      const char *kernel, cl_program *out)
{
  struct kiln__kernel_programs *t = kernel_table(rt);
  if (!t)
    return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
  kernel_program *e;
  while ((e = kernel_find(t, kernel)) != NULL && !e->program)
    pthread_cond_wait(&t->built, &rt->build_lock);
  cl_program p = rt->builtins[i] ? rt->builtins[i] : e ? e->program : NULL;
  if (p) {
    clRetainProgram(p);
    *out = p;
    return KILN_OK;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 32;
    kernel_program *at = realloc(t->at, cap * sizeof *at);
    if (!at)
      return kiln__fail(rt, KILN_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    t->at = at, t->cap = cap;
  }
  e = &t->at[t->n++];
  *e = (kernel_program){0};
  snprintf(e->name, sizeof e->name, "%s", kernel);
  kiln_status st = kernel_build(rt, fn, i, kernel, &p);
  e = kernel_find(t, kernel); /* the table may have moved or been emptied */
  if (st == KILN_OK && e && !e->stale) {
    e->program = p;
    clRetainProgram(p);
  } else if (e) {
    kernel_remove(t, kernel);
  }
  pthread_cond_broadcast(&t->built);
  *out = p;
  return st;
}

kiln_status kiln__builtin_kernel(kiln_runtime *rt, const char *program,
                                 const char *kernel, cl_kernel *out)
{
  size_t i = builtin_index(program);
  if (i == SIZE_MAX)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "no builtin program '%s'", program);
  if (strlen(kernel) >= sizeof(((kernel_program *)0)->name))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "kernel name '%s' is too long",
                      kernel);
  char what[96];
  snprintf(what, sizeof what, "building %s of cl/%s.cl", kernel, program);
  cl_program p = NULL;
  pthread_mutex_lock(&rt->build_lock);
  kiln_status st = kernel_program_get(rt, what, i, kernel, &p);
  pthread_mutex_unlock(&rt->build_lock);
  if (st != KILN_OK)
    return st;
  cl_int err;
  *out = clCreateKernel(p, kernel, &err);
  clReleaseProgram(p);
  if (!*out)
    return kiln__fail_cl(rt, err, "clCreateKernel", "creating kernel %s of cl/%s.cl",
                         kernel, program);
  return KILN_OK;
}

/* Releases the builtin programs built so far; kernels made from them keep
 * them alive until released. */
static void drop_builtins(kiln_runtime *rt)
{
  for (size_t i = 0; rt->builtins && i < kiln__builtin_count; i++)
    if (rt->builtins[i]) {
      clReleaseProgram(rt->builtins[i]);
      rt->builtins[i] = NULL;
    }
  struct kiln__kernel_programs *t = rt->kernel_programs;
  for (size_t k = 0; t && k < t->n;) {
    kernel_program *e = &t->at[k];
    if (e->program) { /* built: dropped; being built: not kept when done */
      clReleaseProgram(e->program);
      *e = t->at[--t->n];
    } else {
      e->stale = 1;
      k++;
    }
  }
}

void kiln__programs_release(kiln_runtime *rt)
{
  drop_builtins(rt);
  free(rt->builtins);
  rt->builtins = NULL;
  if (rt->kernel_programs) {
    pthread_cond_destroy(&rt->kernel_programs->built);
    free(rt->kernel_programs->at);
    free(rt->kernel_programs);
    rt->kernel_programs = NULL;
  }
}

void kiln__programs_rebuild_with(kiln_runtime *rt,
                                 void (*change)(kiln_runtime *rt, const void *arg),
                                 const void *arg)
{
  pthread_mutex_lock(&rt->build_lock);
  change(rt, arg);
  drop_builtins(rt);
  pthread_mutex_unlock(&rt->build_lock);
}

KILN_API kiln_status kiln_program_destroy(kiln_program *program)
{
  if (!program)
    return KILN_OK;
  clReleaseProgram(program->program);
  counted(program->rt, &program->rt->live_programs, -1);
  free(program->log);
  free(program);
  return KILN_OK;
}

kiln_runtime *kiln__program_runtime(const kiln_program *program)
{
  return program->rt;
}

cl_program kiln__program_cl(const kiln_program *program)
{
  return program->program;
}

KILN_API const char *kiln_program_build_log(const kiln_program *program)
{
  return program ? program->log : "";
}

KILN_API kiln_status kiln_cache_stats(kiln_runtime *rt, kiln_cache_usage *out)
{
  kiln_status st = KILN__STATS_OUT(rt, "kiln_cache_stats", kiln_cache_usage, out);
  if (st != KILN_OK)
    return st;
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  pthread_mutex_lock(&rt->lock);
  u.dir = rt->cache->dir;
  u.compiles = rt->compiles;
  u.hits = rt->cache->hits;
  u.misses = rt->cache->misses;
  u.stores = rt->cache->stores;
  u.rejected = rt->cache->rejected;
  u.untrusted = rt->cache->untrusted;
  u.shared = rt->cache->trust.shared;
  u.binaries_off = rt->cache->binaries_off;
  snprintf(u.untrusted_note, sizeof u.untrusted_note, "%s", rt->cache->untrusted_note);
  pthread_mutex_unlock(&rt->lock);
  kiln__struct_put(out, out->struct_size, &u, sizeof u);
  return KILN_OK;
}
