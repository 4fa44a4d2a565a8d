/*
 * internal.h — what the files of libkiln share. Not installed.
 *
 * Names shared between files start with kiln__; file-local ones are static.
 */
#ifndef KILN_INTERNAL_H
#define KILN_INTERNAL_H

/* kiln calls OpenCL 1.2 entry points and may query 3.0 properties; the
 * deprecated 1.2 calls (clCreateCommandQueue) are the ones every driver has. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "kiln/kiln_cl.h"

#if defined(__GNUC__)
#  define KILN__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define KILN__PRINTF(fmt, args)
#endif

/* The number of elements of an array (not of a pointer). */
#define KILN__COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- growable strings (util.c) ---------------------------------------- */

typedef struct kiln__str {
  char *data; /* NUL-terminated, or NULL while empty */
  size_t len, cap;
  int failed; /* an allocation failed; data holds what fitted */
} kiln__str;

void kiln__str_appendf(kiln__str *s, const char *fmt, ...) KILN__PRINTF(2, 3);
void kiln__str_vappendf(kiln__str *s, const char *fmt, va_list ap) KILN__PRINTF(2, 0);
const char *kiln__str_get(const kiln__str *s); /* "" while empty */
void kiln__str_free(kiln__str *s);

/* Overflow-checked arithmetic: 0 on success, 1 when the result would wrap. */
int kiln__mul_overflow(size_t a, size_t b, size_t *out);
int kiln__add_overflow(size_t a, size_t b, size_t *out);

/* The value of an IEEE half (util.c). */
double kiln__half_to_double(uint16_t h);

/* "1.5 GiB"-style rendering of a byte count into buf (at least 32 bytes). */
const char *kiln__format_bytes(uint64_t bytes, char *buf, size_t size);

/* ---- errors (error.c) --------------------------------------------------- */

/* Records a failure's message for kiln_last_error(rt), or for the calling
 * thread when rt is NULL, and returns status so callers can
 * `return kiln__fail(...)`. */
kiln_status kiln__fail(kiln_runtime *rt, kiln_status status, const char *fmt,
                       ...) KILN__PRINTF(3, 4);

/* The same for a failed OpenCL call: the status comes from the CL error, and
 * the message ends with "<call> failed with <CL_NAME> (<code>)". fmt says
 * what kiln was doing. */
kiln_status kiln__fail_cl(kiln_runtime *rt, cl_int err, const char *call,
                          const char *fmt, ...) KILN__PRINTF(4, 5);

/* The kiln_status an OpenCL error maps to (status.c). */
kiln_status kiln__status_from_cl(cl_int err);

/* ---- configuration (env.c) ---------------------------------------------- */

/* kiln_options merged with the environment; read once per runtime. */
typedef struct kiln__config {
  uint64_t memory_limit;     /* bytes, 0 for none */
  double memory_fraction;    /* of global memory, 0 for none */
  const char *memory_source; /* where the limit came from, for messages */
  const char *icd_vendors;   /* OCL_ICD_VENDORS, for the no-driver message */
  const char *device;        /* selector, or NULL */
  const char *device_source; /* "KILN_DEVICE" or "kiln_options.device" */
  const char *visible;       /* mask, or NULL */
  const char *visible_source;
  const char *cache_dir;     /* NULL: the default below */
  const char *xdg_cache_home, *home; /* for the default cache folder */
  int no_cache;
  const char *cl_dir;        /* KILN_CL_DIR, or NULL */
  kiln_backend gemm_backend; /* kiln_options.gemm_backend or KILN_GEMM_BACKEND */
  int profile;               /* kiln_options.profile or KILN_PROFILE */
  const char *trace;         /* kiln_options.trace or KILN_TRACE, or NULL */
  const char *trace_source;  /* which of the two, for messages */
} kiln__config;

kiln_status kiln__config_resolve(const kiln_options *opts, kiln__config *cfg);

/* Parses a size: "1048576", "512M", "2G", "1.5T" (powers of 1024) or "50%".
 * Sets exactly one of *bytes (else 0) and *fraction (else 0). Returns 0 on
 * success, -1 when s is not a size kiln accepts. */
int kiln__parse_size(const char *s, uint64_t *bytes, double *fraction);

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
  kiln__prop *props;       /* one per platform row */
} kiln__platform;

typedef struct kiln__device {
  kiln_device_info info; /* the public view; its strings point into props
                            and into its platform's props */
  cl_platform_id platform;
  cl_device_id id;
  uint64_t single_fp_config, double_fp_config, half_fp_config;
  int has_amd_free_memory; /* cl_amd_device_attribute_query */
  kiln__prop *props;       /* one per device row; owned */
  const kiln__platform *platform_record; /* in the list that found it */
} kiln__device;

typedef struct kiln__device_list {
  kiln__device *items;
  size_t count;
  size_t platforms; /* how many platforms the ICD loader listed */
  kiln__platform *platform_items; /* those kiln could read, in ICD order */
  size_t platform_count;
  kiln__str notes;  /* what was skipped and why */
} kiln__device_list;

/* Finds every platform and device; never fails as a whole for one bad
 * platform or device. Returns KILN_ERR_OUT_OF_HOST_MEMORY only. */
kiln_status kiln__devices_discover(kiln__device_list *list);
void kiln__devices_free(kiln__device_list *list);

/* Says that there is no OpenCL platform and how to install one (devlist.c). */
void kiln__note_no_platform(kiln__str *out, const kiln__config *cfg);
void kiln__device_free(kiln__device *dev); /* what one record owns */

/* ---- ranking (rank.c) ---------------------------------------------------- */

/* Fills the derived fields of a record (vendor_family, integrated,
 * is_simulator, opencl_version, peak_gflops) from the fields the driver
 * reported. Pure: tests call it on records of devices we do not have. */
void kiln__device_derive(kiln_device_info *info);


/* ---- selection (select.c) ------------------------------------------------ */

/* Keeps only the devices the mask (KILN_VISIBLE_DEVICES' grammar) matches,
 * in the order of its terms, and says in `why` what it hid. Fails with
 * KILN_ERR_INVALID_DEVICE_SELECTOR (message for the thread) when the mask
 * does not parse or a term matches nothing. `source` names the setting. */
kiln_status kiln__devices_mask(kiln__device_list *list, const char *mask,
                               const char *source, kiln__str *why);

/* Finds the device a selector picks among the list; see kiln_options.device.
 * Adds to `why` what matched. Fails like kiln__devices_mask(). */
kiln_status kiln__devices_select(const kiln__device_list *list, const char *selector,
                                 const char *source, size_t *chosen, kiln__str *why);

/* The best usable, non-simulator device by ranking; else the best usable
 * simulator; SIZE_MAX when nothing is usable. */
size_t kiln__devices_best(const kiln__device_list *list);

/* Free global memory by the vendor's query, or -1 when there is none. */
int64_t kiln__device_free_memory(const kiln__device *dev);

/* ---- the on-disk binary cache (cache.c) --------------------------------- */

/* An entry's key: XXH3-128 over every input that can change the binary. */
typedef struct kiln__cache_key {
  uint8_t bytes[16];
} kiln__cache_key;

typedef struct kiln__cache {
  char *dir; /* NULL when the cache is off or unusable */
  /* counters, for tests and `kiln cache`; guarded by the runtime's lock */
  uint64_t hits, misses, stores, rejected;
} kiln__cache;

/* Resolves the folder (cfg->cache_dir, else $XDG_CACHE_HOME/kiln, else
 * $HOME/.cache/kiln), creating it as needed. A folder that cannot be made or
 * written leaves the cache off, with a note saying why; never an error. */
void kiln__cache_open(kiln__cache *c, const kiln__config *cfg, kiln__str *notes);
void kiln__cache_close(kiln__cache *c);

/* The key of a program built from `source` with `options` for `dev`; covers
 * the platform's name and version, the device's name, the driver's version
 * and kiln's version too. */
kiln__cache_key kiln__cache_key_of(const char *source, size_t source_len,
                                   const char *options, const kiln_device_info *dev);

/* Loads the entry of `key` into a malloc'd buffer. Returns 0 on a hit; -1 on
 * a miss, or when the entry is truncated, corrupt, empty or another key's,
 * in which case it is deleted. Never crashes on any file content. */
int kiln__cache_load(kiln__cache *c, const kiln__cache_key *key,
                     unsigned char **data, size_t *size);

/* Stores an entry atomically: a temporary file in the same folder, then
 * rename(), so a concurrent reader sees the whole entry or none. Returns 0,
 * or -1 when it could not (the cache stays usable). */
int kiln__cache_store(kiln__cache *c, const kiln__cache_key *key,
                      const unsigned char *data, size_t size);

/* Deletes the entry, e.g. one the driver refused to build. */
void kiln__cache_remove(kiln__cache *c, const kiln__cache_key *key);

/* ---- kernels (program.c, generated builtin_sources.c) ------------------- */

/* One of kiln's cl/ files, embedded by tools/embed-cl.py. */
typedef struct kiln__builtin_source {
  const char *name; /* the file's name without .cl */
  const unsigned char *bytes;
  size_t size;
} kiln__builtin_source;

extern const kiln__builtin_source kiln__builtin_sources[];
extern const size_t kiln__builtin_count;

/* The options every builtin program is built with on this device: the
 * -cl-std it supports and the device-dependent defines (tuning.c). */
void kiln__builtin_options(const kiln_device_info *dev, kiln__str *out);

/* A new kernel object of a builtin program, which is built on first use and
 * kept by the runtime. Release the kernel once enqueued: each call gets its
 * own, so threads never share a kernel's arguments. Fails with
 * KILN_ERR_BUILD and the log. */
kiln_status kiln__builtin_kernel(kiln_runtime *rt, const char *program,
                                 const char *kernel, cl_kernel *out);

/* The runtime and OpenCL program of a caller's program (program.c). */
kiln_runtime *kiln__program_runtime(const kiln_program *program);
cl_program kiln__program_cl(const kiln_program *program);

/* Releases the runtime's builtin programs and kernels. */
void kiln__programs_release(kiln_runtime *rt);

/* ---- tuning (tuning.c) --------------------------------------------------- */

/* The parameters of cl/gemm.cl for a device (see tuning.c for why). */
typedef struct kiln__gemm_tuning {
  int gpu_shape;         /* local-memory tiles, else the CPU shape */
  unsigned tm, vw, vwd;  /* CPU: rows per work-item; float and double lanes */
  unsigned tsm, tsk, wpt; /* GPU: tile side, slice depth, outputs per side */
} kiln__gemm_tuning;

void kiln__gemm_tuning_for(const kiln_device_info *dev, kiln__gemm_tuning *t);

/* The parameters of cl/reduce.cl: chunks per whole reduction on a CPU
 * device; on GPUs, the work-group size (a power of two) and groups. */
typedef struct kiln__reduce_tuning {
  int gpu_shape;
  unsigned chunks, wg, groups;
} kiln__reduce_tuning;

void kiln__reduce_tuning_for(const kiln_device_info *dev, kiln__reduce_tuning *t);

/* kiln's own FFT (cl/fft.cl): passes whose stride p is at least wide_from
 * run the 2-D indexed kernel in groups of `group` work-items along k. */
typedef struct kiln__fft_tuning {
  unsigned wide_from, group;
} kiln__fft_tuning;

void kiln__fft_tuning_for(const kiln_device_info *dev, kiln__fft_tuning *t);

/* Test seams: when set, every device gets these parameters (runtimes
 * created afterwards build their kernels with them). Tests link the static
 * library to set them; nothing else does. */
extern kiln__gemm_tuning *kiln__gemm_tuning_override;
extern kiln__reduce_tuning *kiln__reduce_tuning_override;

/* ---- GEMM backends (src/ops/gemm.c, src/backends/) ---------------------- */

/* A checked kiln_gemm() request with every default resolved: leading
 * dimensions and strides are real numbers, batch >= 1. */
typedef struct kiln__gemm {
  kiln_dtype dtype;
  kiln_layout layout;
  kiln_transpose trans_a, trans_b;
  size_t m, n, k, batch;
  double alpha, beta;
  size_t lda, ldb, ldc;
  size_t offset_a, offset_b, offset_c;
  size_t stride_a, stride_b, stride_c;
  cl_mem a, b, c;
} kiln__gemm;

typedef struct kiln__gemm_backend {
  kiln_backend id;
  /* NULL when the backend can run g on rt's device; else why not, as a
   * phrase that completes "cannot run this GEMM: ..." (static text). */
  const char *(*cannot)(kiln_runtime *rt, const kiln__gemm *g);
  /* Enqueues g; sets kiln_last_error on failure. */
  kiln_status (*run)(kiln_runtime *rt, const kiln__gemm *g);
} kiln__gemm_backend;

/* Checks a request, buffers aside, and fills g normalised to row-major
 * (g's cl_mem fields stay NULL); used by kiln_gemm_host() (gemm.c). */
kiln_status kiln__gemm_plan(kiln_runtime *rt, const kiln_gemm_desc *d, kiln__gemm *g);

/* What kiln_gemm() does before it enqueues anything: checks the request
 * against the buffers' types and sizes and the device record, fills g and
 * picks the backend. Reads only those records (no OpenCL call), so tests and
 * tests/fuzz/fuzz-desc.c run it on fake buffers and devices. */
kiln_status kiln__gemm_check(kiln_runtime *rt, const kiln_gemm_desc *desc,
                             const kiln_buffer *a, const kiln_buffer *b,
                             const kiln_buffer *c, kiln__gemm *g,
                             const kiln__gemm_backend **be);

extern const kiln__gemm_backend kiln__gemm_kiln;    /* src/ops/gemm_kiln.c */

/* How kiln's GEMM packs its operands for g on rt's device: padded sizes,
 * panel heights and the compute type (float for half). Element (r, p) of
 * A (r < m) sits at ((r / pha) * kp + p) * pha + r % pha of a batch item's
 * mp * kp elements; element (j, p) of op(B)' likewise with phb, np. */
typedef struct kiln__gemm_packing {
  size_t mp, np, kp, pha, phb;
  kiln_dtype compute;
} kiln__gemm_packing;

void kiln__gemm_kiln_packing(kiln_runtime *rt, const kiln__gemm *g,
                             kiln__gemm_packing *out);

/* Runs g with A and/or op(B)' already packed that way (NULL: pack it from
 * g's buffers), so a producer such as im2col can write the packed form
 * itself and save a pass over memory. */
kiln_status kiln__gemm_kiln_run_packed(kiln_runtime *rt, const kiln__gemm *g,
                                       kiln_buffer *ap, kiln_buffer *bp);
extern const kiln__gemm_backend kiln__gemm_clblast; /* src/backends/clblast.c,
                                                        when HAVE_CLBLAST */
/* CLBlast keeps what it compiles in a process-wide cache; clblast.c counts
 * the runtimes that called it (kiln__clblast_use() before each call) and
 * empties the cache when the last of them is released. */
void kiln__clblast_use(kiln_runtime *rt);
void kiln__clblast_release(kiln_runtime *rt);

/* ---- .npy files (npy.c, npy_header.c) ------------------------------------ */

#define KILN__NPY_MAGIC "\x93NUMPY"
#define KILN__NPY_MAGIC_LEN 6

/* Parses a header's dict (the `len` bytes after the preamble) into out's
 * dtype, ndim, shape and fortran_order; count and data are left 0. Fails
 * with KILN_ERR_FORMAT and a message naming `name`. Never reads past len. */
kiln_status kiln__npy_parse_header(const char *name, const unsigned char *text,
                                   size_t len, kiln_array *out);

/* The preamble (magic, version, length: *prelen bytes into pre) and the
 * padded header (into h) np.save writes for a checked array. */
kiln_status kiln__npy_build_header(const kiln_array *a, unsigned char pre[12],
                                   size_t *prelen, kiln__str *h);

/* "()", "(3,)", "(2, 3)": Python's repr() of the shape. */
void kiln__npy_shape_repr(kiln__str *s, unsigned ndim, const size_t *shape);

/* The product of the shape, 1 for ndim 0, 0 when a dimension is 0: 0, or -1
 * when it overflows size_t. */
int kiln__npy_shape_count(unsigned ndim, const size_t *shape, size_t *count);

/* kiln_npy_load() of bytes in memory, for tests and fuzzers; `name` stands
 * for the path in messages. */
kiln_status kiln__npy_load_memory(const void *bytes, size_t size, const char *name,
                                  kiln_array *out);

/* ---- reduction backends (src/ops/reduce*.c, src/backends/) ------------- */

/* A checked kiln_reduce() request: the view as (outer, len, inner), reduced
 * along len; every element (KILN_AXIS_ALL) is outer = inner = 1. The result
 * for (o, i) goes to out[out_offset + o * inner + i]. len >= 1. */
typedef struct kiln__reduce {
  kiln_reduce_op op;
  kiln_dtype in_type, out_type;
  size_t outer, len, inner;
  size_t offset, out_offset;
  cl_mem in, out;
} kiln__reduce;

typedef struct kiln__reduce_backend {
  kiln_backend id;
  /* NULL when the backend can run r; else why not (static text). */
  const char *(*cannot)(kiln_runtime *rt, const kiln__reduce *r);
  kiln_status (*run)(kiln_runtime *rt, const kiln__reduce *r);
} kiln__reduce_backend;

/* Checks a request, buffers aside: fills r's view and types, and the
 * elements it reads (*count) and writes (*outputs) (reduce.c). */
kiln_status kiln__reduce_plan(kiln_runtime *rt, const kiln_reduce_desc *d,
                              kiln__reduce *r, size_t *count, size_t *outputs);

/* kiln__reduce_plan(), then the buffers: `in` holds offset + *count
 * elements of the input type and `out` *outputs of the result type. No
 * OpenCL call, like kiln__gemm_check(). */
kiln_status kiln__reduce_check(kiln_runtime *rt, const kiln_reduce_desc *desc,
                               const kiln_buffer *in, const kiln_buffer *out,
                               kiln__reduce *r, size_t *count, size_t *outputs);

/* An empty axis: writes the identity of sum, mean (NaN) and norm into the
 * outputs of out; an error for the others (reduce.c). */
kiln_status kiln__reduce_empty(kiln_runtime *rt, const kiln__reduce *r,
                               kiln_buffer *out, size_t outputs);

/* The backend for r: the one asked for (AUTO: kiln's), or why not. */
kiln_status kiln__reduce_choose(kiln_runtime *rt, kiln_backend asked,
                                const kiln__reduce *r, const kiln__reduce_backend **out);

extern const kiln__reduce_backend kiln__reduce_kiln;    /* src/ops/reduce_kiln.c */
extern const kiln__reduce_backend kiln__reduce_clblast; /* src/backends/clblast_reduce.c,
                                                            when HAVE_CLBLAST */

/* ---- convolution backends (src/ops/conv*.c, src/backends/) ------------- */

/* A checked kiln_conv2d() request with defaults resolved (strides,
 * dilations, groups >= 1) and the output size. */
typedef struct kiln__conv {
  kiln_conv2d_desc d;
  size_t p, q;
  cl_mem x, w, bias, y; /* bias may be NULL */
  const kiln_buffer *wbuf; /* the same weights and output, for backends */
  kiln_buffer *ybuf;       /* that call kiln_gemm() */
} kiln__conv;

typedef struct kiln__conv_backend {
  kiln_backend id;
  const char *(*cannot)(kiln_runtime *rt, const kiln__conv *c);
  kiln_status (*run)(kiln_runtime *rt, const kiln__conv *c);
} kiln__conv_backend;

/* What kiln_conv2d() does before it enqueues anything: checks the request
 * against the buffers and the device record, fills cv and picks the
 * backend. No OpenCL call, like kiln__gemm_check(). */
kiln_status kiln__conv_check(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                             const kiln_buffer *x, const kiln_buffer *weights,
                             const kiln_buffer *bias, kiln_buffer *y, kiln__conv *cv,
                             const kiln__conv_backend **be);

extern const kiln__conv_backend kiln__conv_direct;  /* src/ops/conv_kiln.c */
extern const kiln__conv_backend kiln__conv_im2col;  /* src/ops/conv_kiln.c */
extern const kiln__conv_backend kiln__conv_clblast; /* src/backends/clblast_conv.c,
                                                        when HAVE_CLBLAST */

/* ---- FFT backends (src/ops/fft.c, src/backends/) ----------------------- */

/* A checked kiln_fft() request: batch >= 1, and the element counts; d.inverse
 * is 1 for C2R and an inverse C2C, else 0; shape[i] is 0 for i >= ndim. */
typedef struct kiln__fft {
  kiln_fft_desc d;
  size_t in_count, out_count; /* elements of in's and out's types */
  cl_mem in, out;
} kiln__fft;

/* A backend's plan, opaque to fft.c: built once per key and cached by the
 * runtime (fft.c), released when the runtime is destroyed. */
typedef struct kiln__fft_backend {
  kiln_backend id;
  /* NULL when the backend can run f; else why not (static text). */
  const char *(*cannot)(kiln_runtime *rt, const kiln__fft *f);
  /* Builds a plan for f's shape, kind, batch, precision and direction. */
  kiln_status (*plan)(kiln_runtime *rt, const kiln__fft *f, void **plan);
  /* Enqueues f with a plan from plan(); events go to kiln__runtime_track. */
  kiln_status (*run)(kiln_runtime *rt, void *plan, const kiln__fft *f);
  void (*release)(void *plan);
} kiln__fft_backend;

extern const kiln__fft_backend kiln__fft_kiln;  /* src/ops/fft_kiln.c */
extern const kiln__fft_backend kiln__fft_clfft; /* src/backends/clfft.c, HAVE_CLFFT */
extern const kiln__fft_backend kiln__fft_vkfft; /* src/backends/vkfft.c, HAVE_VKFFT */

/* What kiln_fft() does before it plans anything: checks the request against
 * the buffers and the device record, fills f, and puts the backends that
 * may run it, best first, into be[0 .. *n). No OpenCL call, like
 * kiln__gemm_check(). */
kiln_status kiln__fft_check(kiln_runtime *rt, const kiln_fft_desc *desc,
                            const kiln_buffer *in, const kiln_buffer *out, kiln__fft *f,
                            const kiln__fft_backend *be[3], unsigned *n);

struct kiln__profile_scope; /* profiling, below */

/* kiln_fft() within the profiling scope ps of the call (fft.c). */
kiln_status kiln__fft_run(kiln_runtime *rt, const kiln_fft_desc *desc,
                          const kiln_buffer *in, kiln_buffer *out,
                          struct kiln__profile_scope *ps);

/* R2C or C2R (checked desc, batch >= 1) as a C2C transform through
 * kiln__fft_run(), for shapes no backend runs (src/ops/fft_real.c). */
kiln_status kiln__fft_real_via_complex(kiln_runtime *rt, const kiln_fft_desc *d,
                                       const kiln_buffer *in, kiln_buffer *out,
                                       struct kiln__profile_scope *ps);

/* Releases the runtime's cached FFT plans (fft.c). */
void kiln__fft_release_plans(kiln_runtime *rt);

/* ---- profiling (profile.c, profile_report.c, trace.c) ------------------- */

/* One command a recorded call enqueued: its event until the record is
 * resolved, then its OpenCL profiling times (the device's clock, ns). */
typedef struct kiln__prof_cmd {
  cl_event ev;
  char label[48]; /* the kernel's name, or the call that enqueued it */
  cl_ulong queued, submit, start, end;
} kiln__prof_cmd;

enum { KILN__PROF_PENDING, KILN__PROF_DONE, KILN__PROF_FAILED };

/* One recorded call. */
typedef struct kiln__prof_op {
  char name[64], backend[16], shape[64];
  uint64_t bytes, flops;
  uint64_t host_start, host_end; /* the host's monotonic clock, ns */
  unsigned thread;               /* the host thread, numbered from 1 */
  int state;                     /* KILN__PROF_* */
  kiln__prof_cmd *cmds;
  size_t ncmds;
  /* once DONE, over its commands: the first queued, submit and start, and
   * the last end (the device's clock) */
  cl_ulong queued, submit, start, end;
} kiln__prof_op;

/* A runtime's records; guarded by the runtime's lock. */
typedef struct kiln__profiler {
  char *trace;     /* the trace file for kiln_runtime_destroy(), or NULL */
  uint64_t origin; /* host time of the runtime's creation: the trace's 0 */
  int64_t offset;  /* host clock = device clock + offset, ns */
  kiln__prof_op *ops;
  size_t nops, cap;
  size_t first_pending; /* ops before it are all resolved */
  uint64_t dropped;     /* calls not recorded: no host memory, or the
                           driver refused to retain or enqueue an event */
} kiln__profiler;

/* A call being recorded, on the caller's stack, from kiln__profile_begin()
 * to kiln__profile_end(). The commands kiln__runtime_track() sees on this
 * thread in between are the call's. */
typedef struct kiln__profile_scope {
  kiln_runtime *rt; /* NULL: not recording (profiling off, or this call
                       runs inside another recorded call, which takes its
                       commands) */
  const char *name, *backend; /* name lives through the call; backend static */
  char shape[64];
  uint64_t bytes, flops, host_start;
  kiln__prof_cmd *cmds;
  size_t ncmds, cap;
  int lost; /* out of host memory, or an event refused: the call goes
               unrecorded */
} kiln__profile_scope;

void kiln__profile_open(kiln_runtime *rt, kiln__profile_scope *ps, const char *name);
void kiln__profile_set(kiln__profile_scope *ps, const char *backend, uint64_t bytes,
                       uint64_t flops, const char *shape, ...) KILN__PRINTF(5, 6);
kiln_status kiln__profile_close(kiln__profile_scope *ps, kiln_status st);
void kiln__profile_marker(kiln_runtime *rt);

/* The profiling hooks of an operation, each one test of a flag when
 * profiling is off (the macros evaluate nothing else then):
 *
 *   kiln__profile_scope ps;
 *   kiln__profile_begin(rt, &ps, "gemm");       at entry, once rt is known
 *   ...                                         checks, choice, plans
 *   kiln__profile_describe(&ps, "kiln", bytes, flops, "%zux%zu", m, n);
 *   st = enqueue...;
 *   return kiln__profile_end(&ps, st);          on every path after begin
 *
 * end() keeps the record when st is KILN_OK and something was enqueued. */
#define kiln__profile_begin(rt_, ps_, name_)                                   \
  ((rt_)->profile ? kiln__profile_open((rt_), (ps_), (name_)) : (void)((ps_)->rt = NULL))
#define kiln__profile_describe(ps_, ...)                                       \
  ((ps_)->rt ? kiln__profile_set((ps_), __VA_ARGS__) : (void)0)
#define kiln__profile_end(ps_, st_)                                            \
  ((ps_)->rt ? kiln__profile_close((ps_), (st_)) : (st_))

/* For backends that hand the queue to a library that enqueues commands
 * without giving back their events (CLBlast returns the last one, clFFT
 * likewise, VkFFT none): when the calling thread's recorded call has no
 * command yet, enqueues a marker so its device time starts where the
 * library's work does. */
#define kiln__profile_mark(rt_) ((rt_)->profile ? kiln__profile_marker(rt_) : (void)0)

/* Adds ev (retained) to the calling thread's recorded call on rt, if any;
 * kiln__runtime_track() calls it. */
void kiln__profile_attach(kiln_runtime *rt, cl_event ev, const char *label);

/* At creation: aligns the device's clock with the host's and checks that
 * the trace file can be written (a note in the diagnostics when not).
 * Fails only for want of host memory. */
kiln_status kiln__profile_init(kiln_runtime *rt, const kiln__config *cfg);
void kiln__profile_free(kiln_runtime *rt);

/* Resolves the records whose commands have finished; with `all` 0 it
 * stops at the first that has not (cheap enough for every call's end).
 * Called with the runtime's lock held. */
void kiln__profile_resolve(kiln_runtime *rt, int all);

/* Writes the resolved records as a trace to path. Failures go to
 * kiln_last_error(report_to), report_to NULL for the thread's; fn names the
 * caller. Takes the runtime's lock. */
kiln_status kiln__trace_write(kiln_runtime *rt, kiln_runtime *report_to,
                              const char *path, const char *fn);

/* ---- the runtime -------------------------------------------------------- */

struct kiln_runtime {
  pthread_mutex_t lock; /* guards everything below that changes after create */
  kiln__device_list devices; /* the visible devices */
  size_t chosen;
  kiln__str selection;       /* what KILN_VISIBLE_DEVICES and KILN_DEVICE did */
  cl_context context;
  cl_command_queue queue;       /* in order, profiling: all user-visible work */
  cl_command_queue alloc_queue; /* makes new buffers resident without waiting
                                   for the work on `queue` */
  /* kernels: the builtin programs, built on first use (program.c) */
  pthread_mutex_t build_lock; /* one build at a time; not held with `lock` */
  cl_program *builtins;      /* kiln__builtin_count entries, NULL until built */
  char *cl_dir;              /* KILN_CL_DIR: builtin sources from disk */
  kiln__cache cache;
  uint64_t compiles;        /* programs built from source: for tests */
  uint64_t live_programs, live_kernels; /* the caller's, for KILN_ERR_BUSY */
  kiln_backend gemm_backend; /* forced for AUTO requests, or AUTO */
  struct kiln__fft_plan *fft_plans; /* cached FFT plans, a list (fft.c) */
  /* memory accounting */
  uint64_t mem_current, mem_peak, mem_limit, live_buffers;
  uint64_t mem_reserving; /* taken by creations in progress (buffer.c) */
  const char *mem_limit_source;
  /* commands enqueued without waiting, checked by kiln_finish() */
  struct kiln__pending {
    cl_event ev;
    const char *what; /* the call that enqueued it; static text */
  } *pending;
  size_t npending, cap_pending;
  cl_int deferred_err;       /* first failure found while reaping early */
  const char *deferred_what;
  char *error;           /* the last failure's message, of any thread */
  uint64_t serial;       /* unique in the process, never reused: names the
                            runtime in each thread's messages (error.c) */
  int profile;           /* recording calls; set at creation, never changed */
  kiln__profiler prof;
  int used_clblast;      /* counted by clblast.c; under its lock */
};

struct kiln_buffer {
  kiln_runtime *rt;
  cl_mem mem;
  kiln_dtype dtype;
  size_t count, bytes;
};

const kiln__device *kiln__runtime_device(const kiln_runtime *rt);

/* Blocking copies of a rows x cols block between host memory (row pitch ld
 * elements, the block at element `at`) and the packed start of buf
 * (buffer.c). */
kiln_status kiln__buffer_write_rect(kiln_buffer *buf, const void *host, size_t at,
                                    size_t ld, size_t rows, size_t cols);
kiln_status kiln__buffer_read_rect(kiln_buffer *buf, void *host, size_t at, size_t ld,
                                   size_t rows, size_t cols);

/* Takes ownership of an event of a command enqueued without waiting; its
 * status is checked by kiln_finish(). Returns a failure status only when the
 * list cannot grow, after waiting for the event itself. */
kiln_status kiln__runtime_track(kiln_runtime *rt, cl_event ev,
                                const char *what);

/* The same, with the label the profiler gives the command (a kernel's
 * name, which need not outlive the call) when it is not `what`. */
kiln_status kiln__runtime_track_as(kiln_runtime *rt, cl_event ev, const char *what,
                                   const char *label);

/* Stores msg (taking ownership) as rt's last error; used by error.c. */
void kiln__runtime_set_error(kiln_runtime *rt, char *msg);

#endif /* KILN_INTERNAL_H */
