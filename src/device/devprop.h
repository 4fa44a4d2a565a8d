/*
 * devprop.h — the rows of device_props.def and how their values are fetched
 * and shown. Shared by device.c (which queries), devprop.c (which holds the
 * tables and formats) and devlist.c (the public property API). Not installed.
 */
#ifndef KILN_DEVPROP_H
#define KILN_DEVPROP_H

#include <stddef.h>

#include "device/device.h"

#include <CL/cl_ext.h>

/* Vendor and extension constants the tables use, defined here once for
 * headers older than the extensions. */
#ifndef CL_PLATFORM_ICD_SUFFIX_KHR
#  define CL_PLATFORM_ICD_SUFFIX_KHR 0x0920
#endif
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#  define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif
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
#ifndef CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR
#  define CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR 0x12A9
#  define CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR 0x12AA
#  define CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR (1 << 0)
#  define CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR (1 << 1)
#  define CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR (1 << 2)
#  define CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR (1 << 3)
#endif

/* How a value is fetched (the `kind` column) and, for rows with a field,
 * stored. */
typedef enum kiln__kind {
  STR,    /* char array               -> const char * (the raw text) */
  U32,    /* cl_uint                  -> uint32_t */
  U64,    /* cl_ulong                 -> uint64_t */
  SIZE,   /* size_t                   -> uint64_t */
  BOOL,   /* cl_bool                  -> int */
  BITS,   /* cl_bitfield              -> uint64_t */
  SIZES,  /* size_t[]                    (no field) */
  PROPS,  /* cl_device_partition_property[] (no field) */
  NAMEVER /* cl_name_version[]           (no field) */
} kiln__kind;

/* How a value is shown (the `show` column): raw as `clinfo --raw` prints
 * it, human as clinfo's default report does. */
typedef enum kiln__show {
  AS_TEXT,      /* the string as the driver gives it */
  AS_DEC,       /* decimal; human adds the unit */
  AS_HEX,       /* 0x8086 */
  AS_MEM,       /* decimal; human adds " (4.472GiB)" above 1 KiB */
  AS_BOOL,      /* CL_TRUE / Yes */
  AS_VERSION,   /* cl_version: 0xc00000; human adds " (3.0.0)" */
  AS_NAMEVER,   /* name:0x400000 ...; human one per line */
  AS_SIZES,     /* "4096 4096 4096"; human "4096x4096x4096" */
  AS_ALIGN,     /* bits; human "1024 bits (128 bytes)" */
  AS_DEVTYPE,   /* the bitfields and enums below name their values */
  AS_FP,        /* half and double fp configs */
  AS_FP_SINGLE, /* single: also the correctly-rounded divide and sqrt bit */
  AS_QUEUE,
  AS_EXEC,
  AS_SVM,
  AS_ATOMIC,
  AS_ENQUEUE,
  AS_AFFINITY,
  AS_CMDBUF,
  AS_CACHE,
  AS_LMEM,
  AS_PARTITION,
  AS_COUNT_
} kiln__show;

/* Rows that fill no field of the record have this offset. */
#define KILN__NO_FIELD ((size_t)-1)

/* OpenCL versions as the `since` column writes them: 100 * major + 10 * minor. */
typedef struct kiln__row {
  cl_uint param;
  const char *name;  /* "CL_DEVICE_NAME": the raw name clinfo prints */
  const char *label; /* "Device Name": clinfo's human label */
  kiln__kind kind;
  size_t offset; /* into kiln__device or kiln__platform, or KILN__NO_FIELD */
  int required;
  const char *needs; /* the extension that defines (or backports) the query */
  unsigned since;    /* the first OpenCL version where the query is core */
  kiln__show show;
  const char *unit; /* human suffix for AS_DEC and AS_SIZES, e.g. "MHz" */
} kiln__row;

/* The tables built from device_props.def (devprop.c). */
extern const kiln__row kiln__device_rows[];
extern const size_t kiln__device_row_count;
extern const kiln__row kiln__platform_rows[];
extern const size_t kiln__platform_row_count;

/* Renders a fetched value (size bytes at value; strings NUL-terminated) into
 * prop->raw and prop->human. Returns 0, or -1 when out of memory. */
int kiln__prop_format(const kiln__row *row, const void *value, size_t size,
                      kiln__prop *prop);

/* Frees the texts of n properties and the array itself. NULL is ignored. */
void kiln__props_free(kiln__prop *props, size_t n);

#endif /* KILN_DEVPROP_H */
