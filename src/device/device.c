/*
 * device.c — finding every OpenCL platform and device, and reading all their
 * properties by walking the tables of device_props.def (devprop.c formats
 * them).
 *
 * One failing platform or device must never hide the others (a broken ICD
 * next to a working one is common), so every failure here becomes a note in
 * the list and the walk goes on. Within a record, one failing query must not
 * hide the others either: it reads "n/a", with the error kept in its row.
 */
#define _GNU_SOURCE /* pthread_setattr_default_np(), where glibc has it */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/devprop.h"
#include "kiln_config.h"
#include "base/util.h"
#include "device/rank.h"

/* What a string field the driver would not report reads as; never freed. */
static const char no_value[] = "";

/* clGetDeviceInfo or clGetPlatformInfo, with its object type erased so one
 * walk serves both tables. */
typedef cl_int (*info_fn)(const void *obj, cl_uint param, size_t size, void *value,
                          size_t *size_ret);

static cl_int device_info(const void *obj, cl_uint param, size_t size, void *value,
                          size_t *size_ret)
{
  return clGetDeviceInfo((cl_device_id)obj, param, size, value, size_ret);
}

static cl_int platform_info(const void *obj, cl_uint param, size_t size, void *value,
                            size_t *size_ret)
{
  return clGetPlatformInfo((cl_platform_id)obj, param, size, value, size_ret);
}

/* One walk over a table for one object, and what the rows read so far say
 * about it: later rows depend on its version and extensions. */
typedef struct reader {
  const kiln__row *rows;
  size_t count;
  info_fn fn;
  const void *obj;
  const char *call; /* "clGetDeviceInfo", for messages */
  const char *what; /* "device" or "platform", for messages */
  cl_uint version_param, extensions_param;
  unsigned version;       /* 100 until the version row is read */
  const char *extensions; /* "" until the extensions row is read */
} reader;

static char *textf(const char *fmt, ...) KILN__PRINTF(1, 2);

/* printf into a new string; NULL when out of memory. */
static char *textf(const char *fmt, ...)
{
  kiln__str s = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln__str_vappendf(&s, fmt, ap);
  va_end(ap);
  if (!s.failed && s.data)
    return s.data;
  kiln__str_free(&s);
  return NULL;
}

/* Whether a space-separated extension list names ext exactly. */
static int has_extension(const char *list, const char *ext)
{
  size_t n = strlen(ext);
  for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

/* "OpenCL 3.0 PoCL ..." -> 300. Text of another form counts as 1.0, as
 * clinfo assumes, so only the queries every version has are made. */
static unsigned parse_version(const char *v)
{
  unsigned major = 0, minor = 0;
  if (sscanf(v, "OpenCL %u.%u", &major, &minor) != 2 || major > 9 || minor > 9)
    return 100;
  return major * 100 + minor * 10;
}

/* See `since` and `needs` in device_props.def. */
static int row_applies(const reader *r, const kiln__row *row)
{
  if (row->needs && has_extension(r->extensions, row->needs))
    return 1;
  if (row->needs && row->since <= 100)
    return 0;
  return r->version >= row->since;
}

static char *why_not(const reader *r, const kiln__row *row)
{
  unsigned v = r->version;
  if (row->since <= 100)
    return textf("needs %s, which the %s does not list", row->needs, r->what);
  if (row->needs)
    return textf("needs OpenCL %u.%u or %s; the %s reports OpenCL %u.%u without it",
                 row->since / 100, row->since / 10 % 10, row->needs, r->what, v / 100,
                 v / 10 % 10);
  return textf("needs OpenCL %u.%u; the %s reports %u.%u", row->since / 100,
               row->since / 10 % 10, r->what, v / 100, v / 10 % 10);
}

/* Bytes of a scalar kind; 0 for strings and arrays, whose size is asked. */
static size_t kind_size(kiln__kind kind)
{
  switch (kind) {
  case U32: return sizeof(cl_uint);
  case U64: return sizeof(cl_ulong);
  case SIZE: return sizeof(size_t);
  case BOOL: return sizeof(cl_bool);
  case BITS: return sizeof(cl_bitfield);
  default: return 0;
  }
}

/* Fetches a row's value into a buffer the caller frees. It has a NUL after
 * the value, so a string is terminated even from a driver that forgets to. */
static cl_int fetch(const reader *r, const kiln__row *row, void **out, size_t *size)
{
  size_t want = kind_size(row->kind);
  if (!want) {
    cl_int err = r->fn(r->obj, row->param, 0, NULL, &want);
    if (err != CL_SUCCESS)
      return err;
  }
  char *buf = calloc(1, want + 1);
  if (!buf)
    return CL_OUT_OF_HOST_MEMORY;
  cl_int err = want ? r->fn(r->obj, row->param, want, buf, NULL) : CL_SUCCESS;
  if (err != CL_SUCCESS) {
    free(buf);
    return err;
  }
  *out = buf;
  *size = want;
  return CL_SUCCESS;
}

/* Copies a fetched value into the row's field, if it has one. A string
 * field points at the property's raw text, which the record owns. */
static void store(const kiln__row *row, char *record, const void *value,
                  const kiln__prop *prop)
{
  if (row->offset == KILN__NO_FIELD)
    return;
  char *field = record + row->offset;
  switch (row->kind) {
  case STR: *(const char **)field = prop->raw; break;
  case U32: *(uint32_t *)field = *(const cl_uint *)value; break;
  case U64:
  case BITS: *(uint64_t *)field = *(const cl_ulong *)value; break;
  case SIZE: *(uint64_t *)field = *(const size_t *)value; break;
  case BOOL: *(int *)field = *(const cl_bool *)value != CL_FALSE; break;
  default: break;
  }
}

/* Reads one row into its property and field. Returns CL_SUCCESS when the row
 * reads, as a value or as n/a; else the query's error, which the property's
 * `why` keeps; CL_OUT_OF_HOST_MEMORY also when kiln runs out. */
static cl_int read_row(const reader *r, const kiln__row *row, char *record,
                       kiln__prop *prop)
{
  if (!row_applies(r, row)) {
    prop->why = why_not(r, row);
    return prop->why ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
  }
  void *value = NULL;
  size_t size = 0;
  cl_int err = fetch(r, row, &value, &size);
  if (err == CL_SUCCESS && kiln__prop_format(row, value, size, prop) != 0)
    err = CL_OUT_OF_HOST_MEMORY;
  if (err == CL_SUCCESS)
    store(row, record, value, prop);
  free(value);
  if (err != CL_SUCCESS && err != CL_OUT_OF_HOST_MEMORY) {
    prop->why = textf("%s(%s) failed with %s (%d)", r->call, row->name,
                      kiln_cl_error_name(err), (int)err);
    if (!prop->why)
      return CL_OUT_OF_HOST_MEMORY;
  }
  return err;
}

/* Walks the table over one record. Returns the first required row that
 * failed, with its error in *err (CL_OUT_OF_HOST_MEMORY for any row when kiln
 * ran out), or NULL when the record is complete. */
static const kiln__row *read_record(reader *r, char *record, kiln__prop *props,
                                    cl_int *err)
{
  for (size_t i = 0; i < r->count; i++) {
    const kiln__row *row = &r->rows[i];
    *err = read_row(r, row, record, &props[i]);
    if (*err == CL_OUT_OF_HOST_MEMORY || (*err != CL_SUCCESS && row->required))
      return row;
    if (props[i].raw && row->param == r->extensions_param)
      r->extensions = props[i].raw;
    if (props[i].raw && row->param == r->version_param)
      r->version = parse_version(props[i].raw);
  }
  *err = CL_SUCCESS;
  for (size_t i = 0; i < r->count; i++) {
    const kiln__row *row = &r->rows[i];
    if (row->kind == STR && row->offset != KILN__NO_FIELD &&
        !*(const char **)(record + row->offset))
      *(const char **)(record + row->offset) = no_value;
  }
  return NULL;
}

void kiln__device_free(kiln__device *dev)
{
  kiln__props_free(dev->props, kiln__device_row_count);
  dev->props = NULL;
}

static void platform_free(kiln__platform *p)
{
  kiln__props_free(p->props, kiln__platform_row_count);
  p->props = NULL;
}

/* What kiln derives from the fields the table filled. */
static void device_derive(kiln__device *dev)
{
  dev->info.has_fp64 =
    dev->double_fp_config != 0 || has_extension(dev->info.extensions, "cl_khr_fp64");
  dev->info.has_fp16 = has_extension(dev->info.extensions, "cl_khr_fp16");
  dev->has_amd_free_memory =
    has_extension(dev->info.extensions, "cl_amd_device_attribute_query");
  kiln__device_derive(&dev->info);
}

int64_t kiln__device_free_memory(const kiln__device *dev)
{
  if (!dev->has_amd_free_memory)
    return -1;
  /* AMD answers in KiB: total free, then the largest free block. */
  size_t kib[2] = {0, 0};
  if (clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof kib, kib, NULL) !=
      CL_SUCCESS)
    return -1;
  return (int64_t)kib[0] * 1024;
}

/* The array grown by one element of `size` bytes, or NULL (the old one is
 * then intact). */
static void *grow(void *array, size_t count, size_t size)
{
  return realloc(array, (count + 1) * size);
}

static kiln_status add_device(kiln__device_list *list, const kiln__platform *plat,
                              cl_device_id id, unsigned di)
{
  kiln__device dev = {0};
  dev.platform = plat->id;
  dev.id = id;
  dev.info.platform_index = plat->info.index;
  dev.info.device_index = di;
  dev.info.platform_name = plat->info.name;
  dev.info.platform_vendor = plat->info.vendor;
  dev.info.platform_version = plat->info.version;
  dev.props = calloc(kiln__device_row_count, sizeof *dev.props);
  if (!dev.props)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  reader r = {kiln__device_rows,
              kiln__device_row_count,
              device_info,
              id,
              "clGetDeviceInfo",
              "device",
              CL_DEVICE_VERSION,
              CL_DEVICE_EXTENSIONS,
              100,
              ""};
  cl_int err = CL_SUCCESS;
  const kiln__row *bad = read_record(&r, (char *)&dev, dev.props, &err);
  if (!bad) {
    device_derive(&dev);
    kiln__device *grown = grow(list->items, list->count, sizeof *grown);
    if (grown) {
      list->items = grown;
      list->items[list->count++] = dev;
      return KILN_OK;
    }
    err = CL_OUT_OF_HOST_MEMORY;
  }
  kiln__device_free(&dev);
  if (err == CL_OUT_OF_HOST_MEMORY)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  kiln__str_appendf(&list->notes,
                    "platform %u device %u skipped: clGetDeviceInfo(%s) failed "
                    "with %s (%d)\n",
                    plat->info.index, di, bad->name, kiln_cl_error_name(err), (int)err);
  return KILN_OK;
}

/* Reads platform pi's table into a new record at the end of the list; *out
 * is that record, or NULL when a required query failed (a note says which). */
static kiln_status read_platform(kiln__device_list *list, cl_platform_id id, unsigned pi,
                                 kiln__platform **out)
{
  *out = NULL;
  kiln__platform p = {0};
  p.id = id;
  p.info.index = pi;
  p.props = calloc(kiln__platform_row_count, sizeof *p.props);
  if (!p.props)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  reader r = {kiln__platform_rows,
              kiln__platform_row_count,
              platform_info,
              id,
              "clGetPlatformInfo",
              "platform",
              CL_PLATFORM_VERSION,
              CL_PLATFORM_EXTENSIONS,
              100,
              ""};
  cl_int err = CL_SUCCESS;
  const kiln__row *bad = read_record(&r, (char *)&p, p.props, &err);
  kiln__platform *grown =
    bad ? NULL : grow(list->platform_items, list->platform_count, sizeof *grown);
  if (grown) {
    list->platform_items = grown;
    grown[list->platform_count] = p;
    *out = &grown[list->platform_count++];
    return KILN_OK;
  }
  platform_free(&p);
  if (!bad || err == CL_OUT_OF_HOST_MEMORY)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  kiln__str_appendf(&list->notes,
                    "platform %u skipped: clGetPlatformInfo(%s) failed with %s (%d)\n",
                    pi, bad->name, kiln_cl_error_name(err), (int)err);
  return KILN_OK;
}

static kiln_status add_platform(kiln__device_list *list, cl_platform_id p, unsigned pi)
{
  kiln__platform *plat = NULL;
  kiln_status st = read_platform(list, p, pi, &plat);
  if (st != KILN_OK || !plat)
    return st;
  cl_uint n = 0;
  cl_device_id *ids = NULL;
  cl_int err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && n == 0)) {
    kiln__str_appendf(&list->notes, "platform %u (%s) has no devices\n", pi,
                      plat->info.name);
    return KILN_OK;
  }
  if (err == CL_SUCCESS) {
    ids = calloc(n, sizeof *ids);
    err =
      ids ? clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids, NULL) : CL_OUT_OF_HOST_MEMORY;
  }
  if (err != CL_SUCCESS)
    kiln__str_appendf(&list->notes,
                      "platform %u (%s) skipped: clGetDeviceIDs failed with %s "
                      "(%d)\n",
                      pi, plat->info.name, kiln_cl_error_name(err), (int)err);
  for (cl_uint d = 0; err == CL_SUCCESS && d < n && st == KILN_OK; d++)
    st = add_device(list, plat, ids[d], d);
  free(ids);
  return st;
}

/* Points each device at its platform record and counts them, once the
 * platform array no longer moves. */
static void link_platforms(kiln__device_list *list)
{
  for (size_t i = 0; i < list->count; i++)
    for (size_t p = 0; p < list->platform_count; p++)
      if (list->platform_items[p].info.index == list->items[i].info.platform_index) {
        list->items[i].platform_record = &list->platform_items[p];
        list->platform_items[p].info.device_count++;
      }
}

/* Discovery runs one thread at a time: drivers start up on their first
 * queries, and PoCL crashes in clGetDeviceInfo when two threads start it at
 * once. Later queries are cheap, so the lock costs nothing that matters. */
static pthread_mutex_t discovery_lock = PTHREAD_MUTEX_INITIALIZER;

static kiln_status discover(kiln__device_list *list);

/* PoCL runs all the items of a work-group on one worker thread, and keeps
 * their private data, and whatever lives across a barrier, on that thread's
 * stack (pocl/pocl#1525). glibc gives new threads 8 MiB by default, which
 * VkFFT's kernels of 2048 to 4096 items overflowed: the process crashed
 * (a C2C of 65521 points needed between 16 and 64 MiB). Drivers start their
 * worker threads on the first query, in discovery, so kiln raises the
 * default stack of threads created meanwhile to DRIVER_STACK_BYTES and puts
 * the process's default back afterwards. Only address space is reserved:
 * pages are used as touched. Threads a driver starts later, or started
 * before kiln's first discovery, keep the process's default. */
#define DRIVER_STACK_BYTES ((size_t)128 << 20)

#if HAVE_PTHREAD_SETATTR_DEFAULT_NP
static int driver_threads_begin(pthread_attr_t *saved)
{
  pthread_attr_t big;
  size_t size = 0;
  if (pthread_getattr_default_np(saved) != 0)
    return 0;
  if (pthread_attr_getstacksize(saved, &size) == 0 && size >= DRIVER_STACK_BYTES) {
    pthread_attr_destroy(saved);
    return 0;
  }
  if (pthread_attr_init(&big) != 0) {
    pthread_attr_destroy(saved);
    return 0;
  }
  int set = pthread_attr_setstacksize(&big, DRIVER_STACK_BYTES) == 0 &&
            pthread_setattr_default_np(&big) == 0;
  pthread_attr_destroy(&big);
  if (!set)
    pthread_attr_destroy(saved);
  return set;
}

static void driver_threads_end(pthread_attr_t *saved, int changed)
{
  if (!changed)
    return;
  pthread_setattr_default_np(saved);
  pthread_attr_destroy(saved);
}
#endif

kiln_status kiln__devices_discover(kiln__device_list *list)
{
  pthread_mutex_lock(&discovery_lock);
#if HAVE_PTHREAD_SETATTR_DEFAULT_NP
  pthread_attr_t saved;
  int changed = driver_threads_begin(&saved);
#endif
  kiln_status st = discover(list);
#if HAVE_PTHREAD_SETATTR_DEFAULT_NP
  driver_threads_end(&saved, changed);
#endif
  pthread_mutex_unlock(&discovery_lock);
  return st;
}

static kiln_status discover(kiln__device_list *list)
{
  memset(list, 0, sizeof *list);
  cl_uint n = 0;
  cl_int err = clGetPlatformIDs(0, NULL, &n);
  /* The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR when it found no
   * driver at all: that is zero platforms, not a failure. */
  if (err == CL_PLATFORM_NOT_FOUND_KHR)
    n = 0;
  else if (err != CL_SUCCESS) {
    kiln__str_appendf(&list->notes, "clGetPlatformIDs failed with %s (%d)\n",
                      kiln_cl_error_name(err), (int)err);
    n = 0;
  }
  if (n == 0)
    return list->notes.failed ? KILN_ERR_OUT_OF_HOST_MEMORY : KILN_OK;
  cl_platform_id *ids = calloc(n, sizeof *ids);
  if (!ids)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  err = clGetPlatformIDs(n, ids, NULL);
  if (err != CL_SUCCESS) {
    kiln__str_appendf(&list->notes, "clGetPlatformIDs failed with %s (%d)\n",
                      kiln_cl_error_name(err), (int)err);
    n = 0;
  }
  list->platforms = n;
  kiln_status st = KILN_OK;
  for (cl_uint p = 0; p < n && st == KILN_OK; p++)
    st = add_platform(list, ids[p], p);
  free(ids);
  if (st != KILN_OK || list->notes.failed) {
    kiln__devices_free(list);
    return st != KILN_OK ? st : KILN_ERR_OUT_OF_HOST_MEMORY;
  }
  link_platforms(list);
  return KILN_OK;
}

void kiln__devices_free(kiln__device_list *list)
{
  for (size_t i = 0; i < list->count; i++)
    kiln__device_free(&list->items[i]);
  free(list->items);
  for (size_t p = 0; p < list->platform_count; p++)
    platform_free(&list->platform_items[p]);
  free(list->platform_items);
  kiln__str_free(&list->notes);
  memset(list, 0, sizeof *list);
}
