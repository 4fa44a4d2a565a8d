/*
 * env.h — kiln's configuration: kiln_options merged with the environment (env.c).
 */
#ifndef KILN_BASE_ENV_H
#define KILN_BASE_ENV_H

#include "base/util.h"

/* ---- configuration (env.c) ---------------------------------------------- */

/* kiln_options merged with the environment; read once per runtime. */
typedef struct kiln__config {
  uint64_t memory_limit;         /* bytes, 0 for none */
  double memory_fraction;        /* of global memory, 0 for none */
  const char *memory_source;     /* where the limit came from, for messages */
  const char *icd_vendors;       /* OCL_ICD_VENDORS, for the no-driver message */
  const char *vendor_path;       /* OPENCL_VENDOR_PATH (drivers.c) */
  const char *ld_library_path;   /* LD_LIBRARY_PATH (drivers.c) */
  const char *device;            /* selector, or NULL */
  const char *device_source;     /* "KILN_DEVICE" or "kiln_options.device" */
  unsigned local_rank;           /* when local_rank_source is set */
  const char *local_rank_source; /* a launcher's variable or the option's
                                       source; NULL: no local rank */
  const char *visible;           /* mask, or NULL */
  const char *visible_source;
  const char *devices;               /* a group's selector, or NULL */
  const char *devices_source;        /* "KILN_DEVICES" or "kiln_options.devices" */
  const char *cache_dir;             /* NULL: the default below */
  const char *xdg_cache_home, *home; /* for the default cache folder */
  int no_cache;
  int cache_binaries;        /* KILN_CACHE=1: kiln's binaries where the driver
                                keeps its own too (kiln__driver_cache()) */
  int cache_shared;          /* a team folder is acceptable */
  int no_tuning;             /* the rules' parameters, whatever the record */
  int benchmark;             /* benchmark mode (choice.c) */
  int no_memory_pool;        /* buffers' memory straight back to the driver */
  unsigned oom_wait_ms;      /* a refused allocation retries for this long */
  int keep_sub_buffers;      /* KILN_KEEP_SUB_BUFFERS=1 (buffer_view.c) */
  const char *cl_dir;        /* KILN_CL_DIR, or NULL */
  kiln_device_type shape;    /* KILN_TEST_SHAPE's kind, 0: the device's */
  kiln_backend gemm_backend; /* kiln_options.gemm_backend or KILN_GEMM_BACKEND */
  int profile;               /* kiln_options.profile or KILN_PROFILE */
  const char *trace;         /* kiln_options.trace or KILN_TRACE, or NULL */
  const char *trace_source;  /* which of the two, for messages */
} kiln__config;

kiln_status kiln__config_resolve(const kiln_options *opts, kiln__config *cfg);

/* Appends the launcher variables that give the node-local rank, in the
 * order env.c reads them: "LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, ...". */
void kiln__local_rank_vars(kiln__str *s);

/* Parses a size: "1048576", "512M", "2G", "1.5T" (powers of 1024) or "50%".
 * Sets exactly one of *bytes (else 0) and *fraction (else 0). Returns 0 on
 * success, -1 when s is not a size kiln accepts. */
int kiln__parse_size(const char *s, uint64_t *bytes, double *fraction);

#endif /* KILN_BASE_ENV_H */
