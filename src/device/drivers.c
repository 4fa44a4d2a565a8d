/*
 * drivers.c — the OpenCL drivers installed on this machine and the .icd
 * files that name them, found without loading any (kiln_driver_list_*).
 *
 * The ICD loader sees a driver only through an .icd file. A driver
 * installed without one is invisible to OpenCL, and kiln then runs on
 * whatever else there is, saying nothing: on the H200 machine of
 * shared/gpu, NVIDIA's libnvidia-opencl.so.1 was on the loader's path
 * (/usr/local/nvidia/lib64) and /etc/OpenCL/vendors held only pocl.icd.
 * This file knows each vendor's library and where it goes, so that kiln
 * can say so and how to fix it (drivers_note.c), and ci/gpu.sh and the
 * bundle's check can register it for a run (`kiln devices --icd-dir`).
 *
 * Nothing here dlopen()s: loading a driver runs its constructors (NVIDIA's
 * starts threads and opens the device nodes), which listing must not do.
 * A file counts when its ELF header says it is of this process's kind.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "device/drivers.h"

/* Each vendor's OpenCL driver: its library's name (the soname its .icd
 * files give), the names of the platform it makes (a cross-check: a
 * platform of that name means the driver is loaded some other way), and
 * the folders its installers use that the loader does not always search;
 * "%t" stands for the multiarch triplet. Where they come from:
 *  - NVIDIA: the container toolkit mounts the driver into /usr/lib/%t
 *    (Debian, Ubuntu images) or /usr/lib64 (RHEL images); Kubernetes'
 *    device plugin and older images into /usr/local/nvidia/lib64, which
 *    CUDA images put on LD_LIBRARY_PATH (the H200 machine); Debian's
 *    packages into /usr/lib/%t/nvidia/current.
 *  - AMD: ROCm into /opt/rocm/lib (before ROCm 5, /opt/rocm/opencl/lib);
 *    amdgpu-pro into /opt/amdgpu-pro/lib64 or lib/%t.
 *  - Intel: the compute runtime (GPUs) into /usr/lib/%t/intel-opencl or
 *    /usr/lib64/intel-opencl; the CPU runtime (oneAPI) into
 *    /opt/intel/oneapi/compiler/latest/lib, formerly /opt/intel/opencl.
 *  - PoCL, Mesa and Oclgrind: the distribution's library folders. */
/* What kind of driver a row is, for when kiln advises registering it: a
 * GPU vendor's always; another (a CPU runtime, Mesa's, whose packages
 * bring their .icd files: one missing was most often left out on purpose)
 * only where nothing is registered; a simulator never. */
enum { DRIVER_GPU, DRIVER_OTHER, DRIVER_SIMULATOR };

typedef struct driver_row {
  const char *name, *vendor, *library;
  const char *what; /* for the notes: "NVIDIA's OpenCL driver" */
  int kind;
  const char *platforms; /* '|'-separated parts of its platforms' names */
  const char *dirs[8];
} driver_row;

/* clang-format off */
static const driver_row rows[] = {
  {"nvidia", "NVIDIA", "libnvidia-opencl.so.1", "NVIDIA's OpenCL driver", DRIVER_GPU,
   "NVIDIA CUDA",
   {"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/%t/nvidia/current",
    "/usr/lib64/nvidia", "/usr/lib/nvidia"}},
  {"amd", "AMD", "libamdocl64.so", "AMD's OpenCL driver", DRIVER_GPU,
   "AMD Accelerated Parallel Processing",
   {"/opt/rocm/lib", "/opt/rocm/opencl/lib", "/opt/rocm/lib64", "/opt/amdgpu-pro/lib64",
    "/opt/amdgpu-pro/lib/%t", "/opt/amdgpu/lib64", "/opt/amdgpu/lib/%t"}},
  {"amd-orca", "AMD", "libamdocl-orca64.so", "AMD's legacy OpenCL driver (Orca)",
   DRIVER_GPU, "AMD Accelerated Parallel Processing",
   {"/opt/amdgpu-pro/lib64", "/opt/amdgpu-pro/lib/%t"}},
  {"intel", "Intel", "libigdrcl.so", "Intel's OpenCL driver for its GPUs", DRIVER_GPU,
   "Intel(R) OpenCL Graphics|Intel(R) OpenCL HD Graphics",
   {"/usr/lib/%t/intel-opencl", "/usr/lib64/intel-opencl", "/usr/local/lib/intel-opencl",
    "/opt/intel/opencl"}},
  {"intel-cpu", "Intel", "libintelocl.so", "Intel's OpenCL runtime for CPUs", DRIVER_OTHER,
   "Intel(R) CPU Runtime",
   {"/opt/intel/oneapi/compiler/latest/lib", "/opt/intel/oneapi/compiler/latest/linux/lib",
    "/opt/intel/opencl/lib64", "/opt/intel/oneapi/lib"}},
  {"pocl", "PoCL", "libpocl.so.2", "PoCL, OpenCL on the CPU,", DRIVER_OTHER,
   "Portable Computing Language", {"/usr/local/lib", "/usr/local/lib64"}},
  {"rusticl", "Mesa (rusticl)", "libRusticlOpenCL.so.1", "Mesa's rusticl", DRIVER_OTHER,
   "rusticl", {"/usr/local/lib", "/usr/local/lib64"}},
  {"clover", "Mesa (Clover)", "libMesaOpenCL.so.1", "Mesa's Clover", DRIVER_OTHER, "Clover",
   {"/usr/local/lib", "/usr/local/lib64"}},
  {"oclgrind", "Oclgrind", "liboclgrind-rt-icd.so", "Oclgrind", DRIVER_SIMULATOR,
   "Oclgrind", {"/usr/lib/oclgrind", "/usr/local/lib/oclgrind"}},
};
/* clang-format on */

/* The folders the loader searches after its cache, whatever ld.so.conf
 * says: glibc's built-in ones, multiarch first as Debian builds it. */
static const char *const system_dirs[] = {"/lib/%t",    "/usr/lib/%t", "/lib64",
                                          "/usr/lib64", "/lib",        "/usr/lib"};

/* This process's multiarch triplet and ELF machine (EM_*), for folders and
 * for telling its libraries from another architecture's (/usr/lib holds
 * 32-bit ones on RHEL). 0: any machine. */
#if defined(__x86_64__)
#  define KILN__TRIPLET "x86_64-linux-gnu"
#  define KILN__ELF_MACHINE 62
#elif defined(__aarch64__)
#  define KILN__TRIPLET "aarch64-linux-gnu"
#  define KILN__ELF_MACHINE 183
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
#  define KILN__TRIPLET "powerpc64le-linux-gnu"
#  define KILN__ELF_MACHINE 21
#elif defined(__i386__)
#  define KILN__TRIPLET "i386-linux-gnu"
#  define KILN__ELF_MACHINE 3
#elif defined(__riscv) && __riscv_xlen == 64
#  define KILN__TRIPLET "riscv64-linux-gnu"
#  define KILN__ELF_MACHINE 243
#else
#  define KILN__TRIPLET NULL
#  define KILN__ELF_MACHINE 0
#endif

struct kiln_driver_list {
  kiln_driver *items;
  size_t count, cap;
  const driver_row **row; /* each item's row, or NULL */
  char *source;           /* kiln_driver_list_icd_source() */
  char *source_path;      /* the folder or file the loader reads, or the
                             library OCL_ICD_VENDORS names */
  int source_kind;        /* KILN__ICD_DIR, _FILE or _LIBRARY */
  int failed;             /* out of memory on the way */
};

enum { KILN__ICD_DIR, KILN__ICD_FILE, KILN__ICD_LIBRARY };

/* ---- files ---------------------------------------------------------------- */

/* A copy of s, or NULL with l->failed set (also for s NULL: a string
 * that could not be made). */
static char *dup_or_fail(struct kiln_driver_list *l, const char *s)
{
  char *d = s ? strdup(s) : NULL;
  l->failed |= !d;
  return d;
}

/* root + dir (with "%t" expanded) + "/" + name, or NULL when dir needs a
 * triplet this build does not know or when out of memory. */
static char *join(const char *root, const char *dir, const char *name)
{
  const char *t = strstr(dir, "%t");
  if (t && !KILN__TRIPLET)
    return NULL;
  kiln__str s = {0};
  if (t)
    kiln__str_appendf(&s, "%s%.*s%s%s", root, (int)(t - dir), dir,
                      KILN__TRIPLET ? KILN__TRIPLET : "", t + 2);
  else
    kiln__str_appendf(&s, "%s%s", root, dir);
  if (name)
    kiln__str_appendf(&s, "/%s", name);
  if (s.failed) {
    kiln__str_free(&s);
    return NULL;
  }
  char *out = strdup(kiln__str_get(&s));
  kiln__str_free(&s);
  return out;
}

/* A regular file (links followed) whose ELF header says it is a shared
 * object of this process's class, byte order and machine. */
static int native_library(const char *path)
{
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  FILE *f = fopen(path, "rb");
  unsigned char h[20];
  size_t got = f ? fread(h, 1, sizeof h, f) : 0;
  if (f)
    fclose(f);
  if (got < sizeof h || memcmp(h, "\177ELF", 4) != 0)
    return 0;
  int little = 1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  little = 0;
#endif
  if (h[4] != (sizeof(void *) == 8 ? 2 : 1) || h[5] != (little ? 1 : 2))
    return 0;
  unsigned machine = little ? h[18] | (unsigned)h[19] << 8 : (unsigned)h[18] << 8 | h[19];
  return KILN__ELF_MACHINE == 0 || machine == KILN__ELF_MACHINE;
}

/* The first line of a small file (an .icd file), trimmed; NULL when it
 * cannot be read. */
static char *first_line(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  buf[strcspn(buf, "\r\n")] = '\0';
  for (n = strlen(buf); n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t');)
    buf[--n] = '\0';
  char *start = buf + strspn(buf, " \t");
  return strdup(start);
}

/* ---- the loader's cache ------------------------------------------------- */

/* /etc/ld.so.cache, as `ldconfig -p` reads it: glibc's format since 2.2
 * ("glibc-ld.so.cache1.1"), alone (glibc 2.32 on) or after the old one
 * ("ld.so-1.7.0"). Entries of 24 bytes after a 48-byte header; key (the
 * soname) and value (the path) are offsets from that header. */
typedef struct ldcache {
  char *data;
  size_t size, base, n;
} ldcache;

#define LDCACHE_NEW "glibc-ld.so.cache1.1"
#define LDCACHE_OLD "ld.so-1.7.0"

static uint32_t read32(const char *p)
{
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void ldcache_load(ldcache *c, const char *path)
{
  memset(c, 0, sizeof *c);
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f)
    return;
  struct stat st;
  /* A real cache is tens of kilobytes: 64 MiB is not one. */
  if (fstat(fileno(f), &st) == 0 && st.st_size > 48 && st.st_size < (64 << 20))
    c->data = malloc((size_t)st.st_size + 1);
  if (c->data)
    c->size = fread(c->data, 1, (size_t)st.st_size, f);
  fclose(f);
  if (!c->data)
    return;
  c->data[c->size] = '\0'; /* every string ends inside the buffer */
  if (c->size >= 16 && memcmp(c->data, LDCACHE_OLD, 11) == 0) {
    uint64_t end = 16 + (uint64_t)read32(c->data + 12) * 12;
    c->base = (size_t)((end + 7) & ~(uint64_t)7); /* aligned as glibc does */
    if (end > c->size)
      c->base = c->size;
  }
  if (c->base + 48 > c->size || memcmp(c->data + c->base, LDCACHE_NEW, 20) != 0) {
    c->n = 0;
    return;
  }
  uint64_t n = read32(c->data + c->base + 20);
  c->n = (size_t)(n <= (c->size - c->base - 48) / 24 ? n : 0);
}

/* The i-th entry's soname and path, or 0 when they point outside. */
static int ldcache_entry(const ldcache *c, size_t i, const char **key, const char **value)
{
  const char *e = c->data + c->base + 48 + i * 24;
  uint64_t k = (uint64_t)c->base + read32(e + 4), v = (uint64_t)c->base + read32(e + 8);
  if (k >= c->size || v >= c->size)
    return 0;
  *key = c->data + k;
  *value = c->data + v;
  return 1;
}

/* ---- finding a library by name ----------------------------------------- */

typedef struct search {
  const kiln__driver_env *env;
  ldcache cache;
} search;

/* The first native library called name in dir, or NULL. */
static char *try_dir(const char *root, const char *dir, const char *name)
{
  char *p = join(root, dir, name);
  if (p && native_library(p))
    return p;
  free(p);
  return NULL;
}

/* Where the loader would find name (LD_LIBRARY_PATH, its cache, its
 * folders), then, given a row, where its vendor puts it. */
static char *find_library(search *s, const char *name, const driver_row *row,
                          kiln_driver_where *where)
{
  const char *root = s->env->root ? s->env->root : "";
  const char *p = s->env->ld_library_path;
  while (p && *p) {
    size_t len = strcspn(p, ":;");
    if (p[0] == '/' && len < 4096) { /* relative entries: the caller's cwd */
      char dir[4096];
      memcpy(dir, p, len);
      dir[len] = '\0';
      char *hit = try_dir("", dir, name);
      if (hit)
        return *where = KILN_DRIVER_LD_LIBRARY_PATH, hit;
    }
    p += len + (p[len] != '\0');
  }
  for (size_t i = 0; i < s->cache.n; i++) {
    const char *key, *value;
    if (ldcache_entry(&s->cache, i, &key, &value) && strcmp(key, name) == 0 &&
        native_library(value)) {
      char *hit = strdup(value);
      if (hit)
        return *where = KILN_DRIVER_LOADER_CACHE, hit;
    }
  }
  for (size_t i = 0; i < KILN__COUNT(system_dirs); i++) {
    char *hit = try_dir(root, system_dirs[i], name);
    if (hit)
      return *where = KILN_DRIVER_SYSTEM_FOLDER, hit;
  }
  for (size_t i = 0; row && i < KILN__COUNT(row->dirs) && row->dirs[i]; i++) {
    char *hit = try_dir(root, row->dirs[i], name);
    if (hit)
      return *where = KILN_DRIVER_VENDOR_FOLDER, hit;
  }
  *where = KILN_DRIVER_NOT_FOUND;
  return NULL;
}

/* The row whose library an .icd file's line names: the same file name up
 * to ".so" (pocl.icd names libpocl.so.2.10.0, the row libpocl.so.2). */
static const driver_row *row_of(const char *line)
{
  const char *base = strrchr(line, '/');
  base = base ? base + 1 : line;
  const char *so = strstr(base, ".so");
  size_t stem = so ? (size_t)(so - base) + 3 : strlen(base);
  for (size_t i = 0; i < KILN__COUNT(rows); i++)
    if (strncmp(rows[i].library, base, stem) == 0 &&
        (rows[i].library[stem] == '\0' || rows[i].library[stem] == '.'))
      return &rows[i];
  return NULL;
}

/* ---- the list ------------------------------------------------------------ */

static kiln_driver *add(struct kiln_driver_list *l, const driver_row *row)
{
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    kiln_driver *items = realloc(l->items, cap * sizeof *items);
    if (items)
      l->items = items;
    const driver_row **r = items ? realloc(l->row, cap * sizeof *r) : NULL;
    if (r)
      l->row = r;
    if (!items || !r) {
      l->failed = 1;
      return NULL;
    }
    l->cap = cap;
  }
  kiln_driver *d = &l->items[l->count];
  memset(d, 0, sizeof *d);
  l->row[l->count++] = row;
  d->vendor = dup_or_fail(l, row ? row->vendor : "");
  d->gpu = row && row->kind == DRIVER_GPU;
  return d;
}

static int icd_name_taken(const struct kiln_driver_list *l, const char *name)
{
  for (size_t i = 0; i < l->count; i++)
    if (l->items[i].icd_name && strcmp(l->items[i].icd_name, name) == 0)
      return 1;
  return 0;
}

/* A record for what registers a driver: an .icd file (icd) whose first
 * line is line, or OCL_ICD_VENDORS naming a library (icd NULL). */
static void add_registered(struct kiln_driver_list *l, search *s, const char *icd,
                           const char *line)
{
  const driver_row *row = row_of(line);
  kiln_driver *d = add(l, row);
  if (!d)
    return;
  d->registered = 1;
  d->icd = icd ? dup_or_fail(l, icd) : NULL;
  d->icd_line = dup_or_fail(l, line);
  char *path = NULL;
  if (strchr(line, '/')) { /* a path: the loader takes it as it is */
    if (native_library(line)) {
      path = strdup(line);
      d->where = KILN_DRIVER_ICD_PATH;
    }
  } else if (*line) { /* a name: where the loader looks, not the vendor's */
    path = find_library(s, line, NULL, &d->where);
  }
  d->library = path ? path : dup_or_fail(l, line);
  /* Its name in a folder kiln writes: the .icd file's own, else the row's. */
  const char *base = icd ? strrchr(icd, '/') : NULL;
  base = icd ? (base ? base + 1 : icd) : NULL;
  kiln__str name = {0};
  if (base)
    kiln__str_appendf(&name, "%s", base);
  else
    kiln__str_appendf(&name, "%s.icd", row ? row->name : "driver");
  d->icd_name = dup_or_fail(l, name.failed ? NULL : kiln__str_get(&name));
  kiln__str_free(&name);
  char *short_name = dup_or_fail(l, row ? row->name : d->icd_name);
  size_t len = short_name ? strlen(short_name) : 0;
  if (!row && len > 4 && strcmp(short_name + len - 4, ".icd") == 0)
    short_name[len - 4] = '\0';
  d->name = short_name;
}

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .icd files of a folder, in name order, as the loader reads them:
 * names ending in ".icd", regular files (links followed). */
static void add_folder(struct kiln_driver_list *l, search *s, const char *dir)
{
  DIR *d = opendir(dir);
  if (!d)
    return;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len <= 4 || strcmp(e->d_name + len - 4, ".icd") != 0)
      continue;
    if (n == cap) {
      char **more = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *more);
      if (!more) {
        l->failed = 1;
        break;
      }
      names = more;
    }
    if ((names[n] = strdup(e->d_name)) == NULL)
      l->failed = 1;
    else
      n++;
  }
  closedir(d);
  if (n) /* qsort of NULL, 0 is undefined */
    qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    char *path = join("", dir, names[i]);
    struct stat st;
    char *line =
      path && stat(path, &st) == 0 && S_ISREG(st.st_mode) ? first_line(path) : NULL;
    if (line)
      add_registered(l, s, path, line);
    free(line);
    free(path);
    free(names[i]);
  }
  free(names);
}

/* A record for each driver of the table that no .icd file names but that
 * is installed: the ones the loader never loads. */
static void add_unregistered(struct kiln_driver_list *l, search *s)
{
  for (size_t i = 0; i < KILN__COUNT(rows) && !l->failed; i++) {
    int named = 0;
    for (size_t j = 0; j < l->count; j++)
      named |= l->row[j] == &rows[i];
    kiln_driver_where where;
    char *path = named ? NULL : find_library(s, rows[i].library, &rows[i], &where);
    if (!path)
      continue;
    kiln_driver *d = add(l, &rows[i]);
    if (!d) {
      free(path);
      return;
    }
    d->library = path;
    d->where = where;
    d->name = dup_or_fail(l, rows[i].name);
    kiln__str name = {0};
    kiln__str_appendf(&name, "%s.icd", rows[i].name);
    if (icd_name_taken(l, kiln__str_get(&name))) { /* a foreign nvidia.icd */
      kiln__str_free(&name);
      kiln__str_appendf(&name, "%s-kiln.icd", rows[i].name);
    }
    d->icd_name = dup_or_fail(l, name.failed ? NULL : kiln__str_get(&name));
    kiln__str_free(&name);
  }
}

static int is_dir(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where the ICD loader takes its drivers from, by ocl-icd's rules (its
 * libOpenCL(7)): OCL_ICD_VENDORS, when set, is a folder of .icd files; else
 * one .icd file (a bare name is first looked for in the vendors folder);
 * else a library to load as it is. Without it, OPENCL_VENDOR_PATH or
 * /etc/OpenCL/vendors. The Khronos loader reads OCL_ICD_VENDORS as a
 * folder too. */
static void set_source(struct kiln_driver_list *l, const kiln__driver_env *env)
{
  const char *root = env->root ? env->root : "";
  const char *v = env->icd_vendors, *vp = env->vendor_path;
  kiln__str text = {0};
  char *path = NULL;
  l->source_kind = KILN__ICD_DIR;
  if (v && *v) {
    size_t len = strlen(v);
    if (is_dir(v)) {
      path = strdup(v);
    } else if (len > 4 && strcmp(v + len - 4, ".icd") == 0) {
      l->source_kind = KILN__ICD_FILE;
      if (!strchr(v, '/')) {
        path = vp && *vp ? join("", vp, v) : join(root, "/etc/OpenCL/vendors", v);
        struct stat st;
        if (path && stat(path, &st) != 0) {
          free(path);
          path = NULL;
        }
      }
      if (!path)
        path = strdup(v);
    } else {
      l->source_kind = KILN__ICD_LIBRARY;
      path = strdup(v);
    }
    kiln__str_appendf(&text, "OCL_ICD_VENDORS=%s", v);
  } else if (vp && *vp) {
    path = strdup(vp);
    kiln__str_appendf(&text, "OPENCL_VENDOR_PATH=%s", vp);
  } else {
    path = join(root, "/etc/OpenCL/vendors", NULL);
    kiln__str_appendf(&text, "%s", path ? path : "");
  }
  l->source_path = path;
  l->source = text.failed ? NULL : strdup(kiln__str_get(&text));
  kiln__str_free(&text);
  l->failed |= !l->source_path || !l->source;
}

kiln_status kiln__driver_list_find(const kiln__driver_env *env, kiln_driver_list **out)
{
  *out = NULL;
  struct kiln_driver_list *l = calloc(1, sizeof *l);
  if (!l)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_driver_list_create: allocating the list failed");
  search s = {.env = env};
  char *cache = join(env->root ? env->root : "", "/etc/ld.so.cache", NULL);
  ldcache_load(&s.cache, cache);
  free(cache);
  set_source(l, env);
  if (!l->failed && l->source_kind == KILN__ICD_DIR) {
    add_folder(l, &s, l->source_path);
  } else if (!l->failed && l->source_kind == KILN__ICD_FILE) {
    char *line = first_line(l->source_path);
    if (line)
      add_registered(l, &s, l->source_path, line);
    free(line);
  } else if (!l->failed) {
    add_registered(l, &s, NULL, l->source_path);
  }
  add_unregistered(l, &s);
  free(s.cache.data);
  int any_registered = 0;
  for (size_t i = 0; i < l->count; i++)
    any_registered |= l->items[i].registered;
  for (size_t i = 0; i < l->count; i++)
    l->items[i].advised = !l->items[i].registered && l->row[i] &&
                          (l->row[i]->kind == DRIVER_GPU ||
                           (!any_registered && l->row[i]->kind != DRIVER_SIMULATOR));
  if (l->failed) {
    kiln_driver_list_destroy(l);
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_driver_list_create: out of host memory while listing "
                      "the OpenCL drivers");
  }
  *out = l;
  return KILN_OK;
}

KILN_API kiln_status kiln_driver_list_create(const kiln_options *opts,
                                             kiln_driver_list **out)
{
  if (!out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_driver_list_create: out is NULL; expected the address "
                      "of a kiln_driver_list pointer to receive the list");
  *out = NULL;
  kiln__config cfg;
  kiln_status st = kiln__config_resolve(opts, &cfg);
  if (st != KILN_OK)
    return st;
  const kiln__driver_env env = {"", cfg.ld_library_path, cfg.icd_vendors,
                                cfg.vendor_path};
  return kiln__driver_list_find(&env, out);
}

KILN_API kiln_status kiln_driver_list_destroy(kiln_driver_list *list)
{
  if (!list)
    return KILN_OK;
  for (size_t i = 0; i < list->count; i++) {
    kiln_driver *d = &list->items[i];
    const char *owned[] = {d->vendor, d->name,     d->library,
                           d->icd,    d->icd_line, d->icd_name};
    for (size_t k = 0; k < KILN__COUNT(owned); k++)
      free((void *)(uintptr_t)owned[k]);
  }
  free(list->items);
  free(list->row);
  free(list->source);
  free(list->source_path);
  free(list);
  return KILN_OK;
}

KILN_API size_t kiln_driver_list_count(const kiln_driver_list *list)
{
  return list ? list->count : 0;
}

KILN_API const kiln_driver *kiln_driver_list_at(const kiln_driver_list *list, size_t i)
{
  return list && i < list->count ? &list->items[i] : NULL;
}

KILN_API const char *kiln_driver_list_icd_source(const kiln_driver_list *list)
{
  return list ? list->source : NULL;
}

/* ---- for drivers_note.c ----------------------------------------------- */

const char *kiln__driver_what(const kiln_driver_list *list, size_t i,
                              const char **platforms)
{
  const driver_row *row = list->row[i];
  *platforms = row ? row->platforms : "";
  return row ? row->what : NULL;
}

const char *kiln__driver_source(const kiln_driver_list *list, int *is_dir_source)
{
  *is_dir_source = list->source_kind == KILN__ICD_DIR;
  return list->source_path;
}
