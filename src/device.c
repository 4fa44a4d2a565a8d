/*
 * device.c — finding every OpenCL platform and device, and reading their
 * properties from the table in device_props.def.
 *
 * One failing platform or device must never hide the others (a broken ICD
 * next to a working one is common), so every failure here becomes a note in
 * the list and the walk goes on.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include <CL/cl_ext.h>

#ifndef CL_DEVICE_GLOBAL_FREE_MEMORY_AMD
#  define CL_DEVICE_GLOBAL_FREE_MEMORY_AMD 0x4039
#endif
#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#  define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#  define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif
#ifndef CL_DEVICE_GFXIP_MAJOR_AMD
#  define CL_DEVICE_GFXIP_MAJOR_AMD 0x404A
#  define CL_DEVICE_GFXIP_MINOR_AMD 0x404B
#endif
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#  define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

typedef enum prop_kind { STR, U32, U64, SIZE, BOOL, BITS } prop_kind;

typedef struct device_prop {
  cl_device_info param;
  const char *raw_name;
  prop_kind kind;
  size_t offset; /* into kiln__device */
  int required;
  const char *needs; /* the extension that defines the query, or NULL */
} device_prop;

static const device_prop device_props[] = {
#define KILN_DEVICE_PROP(param, label, kind, field, required, needs) \
  {param, #param, kind, offsetof(kiln__device, field), required, needs},
#include "device_props.def"
#undef KILN_DEVICE_PROP
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* What a property the driver would not report reads as; never freed. */
static const char no_value[] = "";

/* Reads a string property through `query`, which is clGetDeviceInfo or
 * clGetPlatformInfo with its object bound by the caller. The result is always
 * NUL-terminated, even from a driver that forgets to. */
typedef cl_int (*info_fn)(const void *obj, cl_uint param, size_t size,
                          void *value, size_t *size_ret);

static cl_int device_info(const void *obj, cl_uint param, size_t size,
                          void *value, size_t *size_ret)
{
  return clGetDeviceInfo((cl_device_id)obj, param, size, value, size_ret);
}

static cl_int platform_info(const void *obj, cl_uint param, size_t size,
                            void *value, size_t *size_ret)
{
  return clGetPlatformInfo((cl_platform_id)obj, param, size, value, size_ret);
}

static cl_int query_string(info_fn fn, const void *obj, cl_uint param, char **out)
{
  size_t size = 0;
  cl_int err = fn(obj, param, 0, NULL, &size);
  if (err != CL_SUCCESS)
    return err;
  char *s = malloc(size + 1);
  if (!s)
    return CL_OUT_OF_HOST_MEMORY;
  err = size ? fn(obj, param, size, s, NULL) : CL_SUCCESS;
  if (err != CL_SUCCESS) {
    free(s);
    return err;
  }
  s[size] = '\0';
  *out = s;
  return CL_SUCCESS;
}

static cl_int query_prop(kiln__device *dev, const device_prop *p)
{
  char *field = (char *)dev + p->offset;
  union {
    cl_uint u32;
    cl_ulong u64;
    size_t size;
    cl_bool b;
    cl_bitfield bits;
  } v;
  size_t want = 0;
  switch (p->kind) {
  case STR:
    return query_string(device_info, dev->id, p->param, (char **)field);
  case U32: want = sizeof v.u32; break;
  case U64: want = sizeof v.u64; break;
  case SIZE: want = sizeof v.size; break;
  case BOOL: want = sizeof v.b; break;
  case BITS: want = sizeof v.bits; break;
  }
  memset(&v, 0, sizeof v);
  cl_int err = clGetDeviceInfo(dev->id, p->param, want, &v, NULL);
  if (err != CL_SUCCESS)
    return err;
  switch (p->kind) {
  case U32: *(uint32_t *)field = v.u32; break;
  case U64: *(uint64_t *)field = v.u64; break;
  case SIZE: *(uint64_t *)field = v.size; break;
  case BOOL: *(int *)field = v.b != CL_FALSE; break;
  case BITS: *(uint64_t *)field = v.bits; break;
  case STR: break;
  }
  return CL_SUCCESS;
}

/* The owned strings of a record, as an array of slots to walk. */
static const char **string_slots(kiln__device *dev, size_t i)
{
  static const size_t platform_fields[] = {
    offsetof(kiln__device, info.platform_name),
    offsetof(kiln__device, info.platform_vendor),
    offsetof(kiln__device, info.platform_version),
  };
  if (i < COUNT(platform_fields))
    return (const char **)((char *)dev + platform_fields[i]);
  i -= COUNT(platform_fields);
  for (size_t p = 0; p < COUNT(device_props); p++)
    if (device_props[p].kind == STR && i-- == 0)
      return (const char **)((char *)dev + device_props[p].offset);
  return NULL;
}

void kiln__device_free(kiln__device *dev)
{
  const char **slot;
  for (size_t i = 0; (slot = string_slots(dev, i)) != NULL; i++)
    if (*slot != no_value)
      free((char *)*slot);
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

/* Fills dev from the table. Returns the first failed required row, or NULL. */
static const device_prop *device_read(kiln__device *dev, cl_int *err_out)
{
  for (size_t i = 0; i < COUNT(device_props); i++) {
    const device_prop *p = &device_props[i];
    if (p->needs && !(dev->info.extensions && has_extension(dev->info.extensions, p->needs)))
      continue;
    cl_int err = query_prop(dev, p);
    if (err == CL_OUT_OF_HOST_MEMORY || (err != CL_SUCCESS && p->required)) {
      *err_out = err;
      return p;
    }
  }
  const char **slot;
  for (size_t i = 0; (slot = string_slots(dev, i)) != NULL; i++)
    if (!*slot)
      *slot = no_value;
  dev->info.has_fp64 = dev->double_fp_config != 0 ||
                       has_extension(dev->info.extensions, "cl_khr_fp64");
  dev->info.has_fp16 = has_extension(dev->info.extensions, "cl_khr_fp16");
  dev->has_amd_free_memory =
    has_extension(dev->info.extensions, "cl_amd_device_attribute_query");
  kiln__device_derive(&dev->info);
  return NULL;
}

int64_t kiln__device_free_memory(const kiln__device *dev)
{
  if (!dev->has_amd_free_memory)
    return -1;
  /* AMD answers in KiB: total free, then the largest free block. */
  size_t kib[2] = {0, 0};
  if (clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof kib,
                      kib, NULL) != CL_SUCCESS)
    return -1;
  return (int64_t)kib[0] * 1024;
}

static int list_push(kiln__device_list *list, const kiln__device *dev)
{
  kiln__device *grown = realloc(list->items, (list->count + 1) * sizeof *grown);
  if (!grown)
    return -1;
  list->items = grown;
  list->items[list->count++] = *dev;
  return 0;
}

/* Reads the platform's three strings into tmpl, which every device record of
 * the platform copies. */
static cl_int platform_read(cl_platform_id p, kiln__device *tmpl, const char **failed)
{
  static const cl_platform_info params[] = {CL_PLATFORM_NAME, CL_PLATFORM_VENDOR,
                                            CL_PLATFORM_VERSION};
  static const char *const names[] = {"CL_PLATFORM_NAME", "CL_PLATFORM_VENDOR",
                                      "CL_PLATFORM_VERSION"};
  for (size_t i = 0; i < COUNT(params); i++) {
    cl_int err = query_string(platform_info, p, params[i],
                              (char **)string_slots(tmpl, i));
    if (err != CL_SUCCESS) {
      *failed = names[i];
      return err;
    }
  }
  return CL_SUCCESS;
}

static kiln_status add_device(kiln__device_list *list, const kiln__device *tmpl,
                              cl_device_id id, unsigned di)
{
  kiln__device dev = {0};
  const char **src, **dst;
  for (size_t i = 0; i < 3; i++) {
    src = string_slots((kiln__device *)tmpl, i);
    dst = string_slots(&dev, i);
    *dst = strdup(*src);
    if (!*dst) {
      kiln__device_free(&dev);
      return KILN_ERR_OUT_OF_HOST_MEMORY;
    }
  }
  dev.platform = tmpl->platform;
  dev.id = id;
  dev.info.platform_index = tmpl->info.platform_index;
  dev.info.device_index = di;
  cl_int err = CL_SUCCESS;
  const device_prop *bad = device_read(&dev, &err);
  if (!bad && list_push(list, &dev) == 0)
    return KILN_OK;
  kiln__device_free(&dev);
  if (err == CL_OUT_OF_HOST_MEMORY || !bad)
    return KILN_ERR_OUT_OF_HOST_MEMORY;
  kiln__str_appendf(&list->notes,
                    "platform %u device %u skipped: clGetDeviceInfo(%s) failed "
                    "with %s (%d)\n",
                    tmpl->info.platform_index, di, bad->raw_name,
                    kiln_cl_error_name(err), (int)err);
  return KILN_OK;
}

static kiln_status add_platform(kiln__device_list *list, cl_platform_id p,
                                unsigned pi)
{
  kiln__device tmpl = {0};
  tmpl.platform = p;
  tmpl.info.platform_index = pi;
  const char *failed = NULL;
  kiln_status st = KILN_OK;
  cl_uint n = 0;
  cl_device_id *ids = NULL;
  cl_int err = platform_read(p, &tmpl, &failed);
  if (err != CL_SUCCESS) {
    kiln__str_appendf(&list->notes,
                      "platform %u skipped: clGetPlatformInfo(%s) failed with "
                      "%s (%d)\n",
                      pi, failed, kiln_cl_error_name(err), (int)err);
    goto done;
  }
  err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
  if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && n == 0)) {
    kiln__str_appendf(&list->notes, "platform %u (%s) has no devices\n", pi,
                      tmpl.info.platform_name);
    goto done;
  }
  if (err == CL_SUCCESS) {
    ids = calloc(n, sizeof *ids);
    err = ids ? clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids, NULL)
              : CL_OUT_OF_HOST_MEMORY;
  }
  if (err != CL_SUCCESS) {
    kiln__str_appendf(&list->notes,
                      "platform %u (%s) skipped: clGetDeviceIDs failed with %s "
                      "(%d)\n",
                      pi, tmpl.info.platform_name, kiln_cl_error_name(err),
                      (int)err);
    goto done;
  }
  for (cl_uint d = 0; d < n && st == KILN_OK; d++)
    st = add_device(list, &tmpl, ids[d], d);
done:
  free(ids);
  kiln__device_free(&tmpl);
  return st;
}

kiln_status kiln__devices_discover(kiln__device_list *list)
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
    return KILN_OK;
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
  if (st != KILN_OK || list->notes.failed)
    kiln__devices_free(list);
  return st != KILN_OK ? st : list->notes.failed ? KILN_ERR_OUT_OF_HOST_MEMORY : KILN_OK;
}

void kiln__devices_free(kiln__device_list *list)
{
  for (size_t i = 0; i < list->count; i++)
    kiln__device_free(&list->items[i]);
  free(list->items);
  kiln__str_free(&list->notes);
  memset(list, 0, sizeof *list);
}
