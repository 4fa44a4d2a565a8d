/*
 * device.h — the platforms and devices discovery finds (device.c, devprop.c,
 * devlist.c).
 */
#ifndef KILN_DEVICE_DEVICE_H
#define KILN_DEVICE_DEVICE_H

#include "base/env.h"
#include "base/util.h"

/* ---- devices (device.c) ------------------------------------------------- */

/* One property of a device or platform, one per row of device_props.def,
 * formatted once at discovery (devprop.c). */
typedef struct kiln__prop {
  char *raw;   /* as `clinfo --raw` prints it; NULL when not available */
  char *human; /* as clinfo's report prints it; NULL when not available */
  char *why;   /* why it is not available; NULL when it is */
} kiln__prop;

typedef struct kiln__platform {
  kiln_platform_info info; /* the public view; strings point into props */
  cl_platform_id id;
  kiln__prop *props; /* one per platform row */
} kiln__platform;

typedef struct kiln__device {
  kiln_device_info info; /* the public view; its strings point into props
                            and into its platform's props */
  cl_platform_id platform;
  cl_device_id id;
  uint64_t single_fp_config, double_fp_config, half_fp_config;
  int has_amd_free_memory;               /* cl_amd_device_attribute_query */
  kiln__prop *props;                     /* one per device row; owned */
  const kiln__platform *platform_record; /* in the list that found it */
} kiln__device;

typedef struct kiln__device_list {
  kiln__device *items;
  size_t count;
  size_t platforms;               /* how many platforms the ICD loader listed */
  kiln__platform *platform_items; /* those kiln could read, in ICD order */
  size_t platform_count;
  kiln__str notes; /* what was skipped and why */
} kiln__device_list;

/* Finds every platform and device; never fails as a whole for one bad
 * platform or device. Returns KILN_ERR_OUT_OF_HOST_MEMORY only. */
kiln_status kiln__devices_discover(kiln__device_list *list);
void kiln__devices_free(kiln__device_list *list);

/* Says that there is no OpenCL platform and how to install one (devlist.c). */
void kiln__note_no_platform(kiln__str *out, const kiln__config *cfg);
void kiln__device_free(kiln__device *dev); /* what one record owns */

/* Free global memory by the vendor's query, or -1 when there is none. */
int64_t kiln__device_free_memory(const kiln__device *dev);

#endif /* KILN_DEVICE_DEVICE_H */
