/*
 * devlist.c — the public view of discovery without a runtime
 * (kiln_device_list_*), and every property of a device or platform, read
 * from the rows kept in its record (kiln_device_property and friends).
 *
 * The runtime finds its devices with the same kiln__devices_discover(), so
 * the property calls work on its records too.
 */
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "device/device.h"
#include "device/devprop.h"
#include "device/drivers.h"
#include "device/select.h"

struct kiln_device_list {
  kiln__device_list devices;
};

/* A driver-less machine is the first thing a new user meets: the list says
 * what to install rather than just "0 platforms". */
void kiln__note_no_platform(kiln__str *out, const kiln__config *cfg)
{
  kiln__str_appendf(out,
                    "no OpenCL platform found: the ICD loader (libOpenCL.so.1) "
                    "found no driver in %s%s%s. Install one: on Debian or Ubuntu, "
                    "'apt-get install pocl-opencl-icd' gives a CPU device; GPU "
                    "drivers come from their vendors (NVIDIA's driver, AMD ROCm, "
                    "intel-opencl-icd, mesa-opencl-icd)\n",
                    cfg->icd_vendors ? "OCL_ICD_VENDORS='" : "/etc/OpenCL/vendors",
                    cfg->icd_vendors ? cfg->icd_vendors : "",
                    cfg->icd_vendors ? "'" : "");
}

KILN_API kiln_status kiln_device_list_create(const kiln_options *opts,
                                             kiln_device_list **out)
{
  if (!out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_device_list_create: out is NULL; expected the "
                      "address of a kiln_device_list pointer to receive the list");
  *out = NULL;
  kiln__config cfg;
  kiln_status st = kiln__config_resolve(opts, &cfg);
  if (st != KILN_OK)
    return st;
  kiln_device_list *list = calloc(1, sizeof *list);
  if (!list)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_device_list_create: allocating the list failed");
  st = kiln__devices_discover(&list->devices);
  if (st == KILN_OK && list->devices.platforms == 0)
    kiln__note_no_platform(&list->devices.notes, &cfg);
  if (st == KILN_OK) {
    size_t best = kiln__devices_best(&list->devices);
    kiln__drivers_note(&list->devices.notes, &cfg, &list->devices,
                       best == SIZE_MAX ? NULL : &list->devices.items[best].info);
    if (list->devices.notes.failed)
      st = KILN_ERR_OUT_OF_HOST_MEMORY;
  }
  if (st != KILN_OK) {
    kiln_device_list_destroy(list);
    return kiln__fail(NULL, st,
                      "kiln_device_list_create: out of host memory "
                      "while listing OpenCL devices");
  }
  *out = list;
  return KILN_OK;
}

KILN_API kiln_status kiln_device_list_destroy(kiln_device_list *list)
{
  if (list) {
    kiln__devices_free(&list->devices);
    free(list);
  }
  return KILN_OK;
}

KILN_API size_t kiln_device_list_count(const kiln_device_list *list)
{
  return list ? list->devices.count : 0;
}

KILN_API const kiln_device_info *kiln_device_list_at(const kiln_device_list *list,
                                                     size_t i)
{
  return list && i < list->devices.count ? &list->devices.items[i].info : NULL;
}

KILN_API const char *kiln_device_list_diagnostics(const kiln_device_list *list)
{
  return list ? kiln__str_get(&list->devices.notes) : NULL;
}

KILN_API size_t kiln_device_list_platform_count(const kiln_device_list *list)
{
  return list ? list->devices.platform_count : 0;
}

KILN_API const kiln_platform_info *kiln_device_list_platform(const kiln_device_list *list,
                                                             size_t i)
{
  return list && i < list->devices.platform_count ? &list->devices.platform_items[i].info
                                                  : NULL;
}

/* The records kiln hands out are the first member of its own; the header
 * says only those may be passed back. */
static const kiln__device *device_of(const kiln_device_info *info)
{
  return (const kiln__device *)(const void *)((const char *)info -
                                              offsetof(kiln__device, info));
}

static const kiln__platform *platform_of(const kiln_platform_info *info)
{
  return (const kiln__platform *)(const void *)((const char *)info -
                                                offsetof(kiln__platform, info));
}

KILN_API const kiln_platform_info *kiln_device_platform(const kiln_device_info *info)
{
  if (!info || !device_of(info)->platform_record)
    return NULL;
  return &device_of(info)->platform_record->info;
}

KILN_API size_t kiln_device_property_count(void)
{
  return kiln__device_row_count;
}

KILN_API size_t kiln_platform_property_count(void)
{
  return kiln__platform_row_count;
}

static void fill(kiln_property *out, const kiln__row *row, const kiln__prop *prop)
{
  out->name = row->name;
  out->label = row->label;
  out->param = row->param;
  out->available = prop->raw != NULL;
  out->raw = prop->raw ? prop->raw : "n/a";
  out->human = prop->human ? prop->human : "n/a";
  out->why = prop->why ? prop->why : "";
}

/* Both property calls: property i of `record`, whose props are NULL when
 * it is, against the table `rows` of `count` rows. Zeroes *out first. */
static kiln_status property(const char *fn, const void *record, const char *record_name,
                            const kiln__prop *props, const kiln__row *rows, size_t count,
                            size_t i, kiln_property *out)
{
  if (out)
    memset(out, 0, sizeof *out);
  if (!record || !out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL; expected %s", fn,
                      record ? "out" : record_name,
                      record ? "the address of a kiln_property to fill"
                             : "a record kiln returned");
  if (i >= count)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: property %zu is out of range; expected an index below "
                      "%zu",
                      fn, i, count);
  fill(out, &rows[i], &props[i]);
  return KILN_OK;
}

KILN_API kiln_status kiln_device_property(const kiln_device_info *info, size_t i,
                                          kiln_property *out)
{
  return property("kiln_device_property", info, "info",
                  info ? device_of(info)->props : NULL, kiln__device_rows,
                  kiln__device_row_count, i, out);
}

KILN_API kiln_status kiln_platform_property(const kiln_platform_info *platform, size_t i,
                                            kiln_property *out)
{
  return property("kiln_platform_property", platform, "platform",
                  platform ? platform_of(platform)->props : NULL, kiln__platform_rows,
                  kiln__platform_row_count, i, out);
}

KILN_API kiln_status kiln_device_list_select(const kiln_device_list *list,
                                             const char *selector, size_t *index)
{
  if (!list || !selector || !index)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_device_list_select: %s is NULL",
                      !list       ? "list"
                      : !selector ? "selector"
                                  : "index");
  kiln__str why = {0};
  kiln_status st =
    kiln__devices_select(&list->devices, selector, "--device", index, &why);
  kiln__str_free(&why);
  return st;
}
