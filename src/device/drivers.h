/*
 * drivers.h — the OpenCL drivers installed and what to say of those no .icd file
 * names (drivers.c, drivers_note.c).
 */
#ifndef KILN_DEVICE_DRIVERS_H
#define KILN_DEVICE_DRIVERS_H

#include "base/env.h"
#include "base/util.h"
#include "device/device.h"

/* ---- OpenCL drivers (drivers.c, drivers_note.c) -------------------------- */

/* Where kiln_driver_list_create() looks: the environment's values, and
 * root, put before every path of kiln's own (/etc/ld.so.cache,
 * /etc/OpenCL/vendors, the vendors' folders); "" for this machine. The
 * test seam: tests build a machine in a folder. */
typedef struct kiln__driver_env {
  const char *root;
  const char *ld_library_path; /* LD_LIBRARY_PATH, or NULL */
  const char *icd_vendors;     /* OCL_ICD_VENDORS, or NULL */
  const char *vendor_path;     /* OPENCL_VENDOR_PATH, or NULL */
} kiln__driver_env;

/* kiln_driver_list, which kiln.h declares only for KILN_EXPERIMENTAL: tests
 * that include kiln.h before this header see it so. */
struct kiln_driver_list;

kiln_status kiln__driver_list_find(const kiln__driver_env *env,
                                   struct kiln_driver_list **out);

/* What drivers.c's table says of record i: the phrase for notes ("NVIDIA's
 * OpenCL driver"; NULL for a library the table does not know) and the
 * '|'-separated parts of its platforms' names. */
const char *kiln__driver_what(const struct kiln_driver_list *list, size_t i,
                              const char **platforms);
/* The folder, .icd file or library the ICD loader reads; *is_dir 1 for a
 * folder. */
const char *kiln__driver_source(const struct kiln_driver_list *list, int *is_dir);

/* kiln__drivers_note() on a list: writable says whether this process may
 * write into the .icd folder in use (else the fix says "as root" and
 * gives a folder of one's own). */
void kiln__drivers_note_list(kiln__str *notes, const struct kiln_driver_list *list,
                             const kiln__device_list *devices,
                             const kiln_device_info *picked, int writable);

/* Appends a line to notes for each installed driver that no .icd file
 * names and that kiln would use: a GPU vendor's (unless its platform is
 * there all the same), any when there is no platform at all. It says what
 * that costs given the device picked (NULL: none), and the fix. */
void kiln__drivers_note(kiln__str *notes, const kiln__config *cfg,
                        const kiln__device_list *devices, const kiln_device_info *picked);

#endif /* KILN_DEVICE_DRIVERS_H */
