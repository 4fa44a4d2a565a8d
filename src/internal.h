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

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

/* The library defines its experimental calls too. */
#define KILN_EXPERIMENTAL
#include "kiln/kiln.h"
#include "kiln/kiln_cl.h"

/* A precondition "called with mutex m held", checked where asserts are on
 * (debug and CI builds): a default mutex cannot say which thread holds it,
 * only that one does. */
#define KILN__ASSERT_HELD(m) assert(pthread_mutex_trylock(m) == EBUSY)

/* The number of elements of an array. */
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

/* The largest power of two that divides n and is at most most (1 when
 * most < 2): a work-group side that divides its global size (util.c). */
size_t kiln__pow2_divisor(size_t n, size_t most);

/* The value of an IEEE half (util.c). */
double kiln__half_to_double(uint16_t h);

/* CLOCK_MONOTONIC in nanoseconds (util.c). */
uint64_t kiln__now_ns(void);

/* Sleeps ms milliseconds, interruptions included. */
void kiln__sleep_ms(uint64_t ms);

/* The median of v[0..n), n >= 1, which it sorts (util.c). */
double kiln__median(double *v, size_t n);

/* "1.5 GiB"-style rendering of a byte count into buf (at least 32 bytes). */
const char *kiln__format_bytes(uint64_t bytes, char *buf, size_t size);

/* ---- errors (error.c) --------------------------------------------------- */

/* Records a failure's message for kiln_last_error(rt), or for the calling
 * thread when rt is NULL, and returns status so callers can
 * `return kiln__fail(...)`: the call kiln.h offers libraries built on kiln. */
#define kiln__fail kiln_last_error_set

/* The same for a failed OpenCL call: the status comes from the CL error, and
 * the message ends with "<call> failed with <CL_NAME> (<code>)". fmt says
 * what kiln was doing. */
kiln_status kiln__fail_cl(kiln_runtime *rt, cl_int err, const char *call, const char *fmt,
                          ...) KILN__PRINTF(4, 5);

/* KILN_ERR_UNSUPPORTED: `what` (e.g. "float64", "mean of int32, whose result
 * is float64,") needs fp64, which rt's device has not. The message names
 * the best device of the machine that has it and the KILN_DEVICE that picks
 * it, or says that none has. */
kiln_status kiln__no_fp64(kiln_runtime *rt, const char *func, const char *what);

/* The kiln_status an OpenCL error maps to (status.c). */
kiln_status kiln__status_from_cl(cl_int err);

/* ---- caller-allocated structs (abi.c) ---------------------------------- */

/* Every struct a caller allocates starts with size_t struct_size; kiln.h's
 * introduction gives the rules. These are the only code that reads it. */

/* Checks the caller's struct *in and copies it into *copy, kiln's own
 * version of `known` bytes: a shorter (older) struct's missing fields read
 * as 0, a longer (newer) one is refused unless its extra bytes are all 0.
 * copy->struct_size becomes `known`. `how` names what sets struct_size. */
kiln_status kiln__struct_in(kiln_runtime *rt, const char *func, const char *type,
                            const char *how, size_t known, const void *in, void *copy);
#define KILN__STRUCT_IN(rt, func, type, in, copy)                                        \
  kiln__struct_in((rt), (func), #type, #type "_init()", sizeof(type), (in), (copy))

/* An operation's entry: rt and its descriptor `in` (named `name` in the
 * message) must not be NULL; then kiln__struct_in(). */
kiln_status kiln__op_desc_in(kiln_runtime *rt, const char *func, const char *name,
                             const char *type, const char *how, size_t known,
                             const void *in, void *copy);
#define KILN__OP_DESC_IN(rt, func, type, in, copy)                                       \
  kiln__op_desc_in((rt), (func), #in, #type, #type "_init()", sizeof(type), (in), (copy))

/* Checks the struct_size of an output struct the caller allocated. */
kiln_status kiln__struct_out(kiln_runtime *rt, const char *func, const char *type,
                             const char *how, size_t known, const void *out);
#define KILN__STRUCT_OUT(rt, func, type, init, out)                                      \
  kiln__struct_out((rt), (func), #type, #init, sizeof(type), (out))

/* A stats call's entry: rt and the struct `out` to fill must not be NULL;
 * then kiln__struct_out(). */
kiln_status kiln__stats_out(kiln_runtime *rt, const char *func, const char *type,
                            const char *how, size_t known, const void *out);
#define KILN__STATS_OUT(rt, func, type, out)                                             \
  kiln__stats_out((rt), (func), #type, #type "_init()", sizeof(type), (out))

/* Writes kiln's version `full` (known bytes) into an output struct of
 * `given` bytes, a struct_size kiln__struct_out() checked: what fits of it,
 * zeros where the caller's struct is longer, and struct_size `given`. */
void kiln__struct_put(void *out, size_t given, const void *full, size_t known);

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

/* ---- ranking (rank.c) ---------------------------------------------------- */

/* Fills the derived fields of a record (vendor_family, integrated,
 * is_simulator, opencl_version, peak_gflops) from the fields the driver
 * reported. Pure: tests call it on records of devices we do not have. */
void kiln__device_derive(kiln_device_info *info);

/* How many iterations of its main loop one work-item may run, on a driver
 * that silently ends a work-item's loops after a fixed count in all; 0 where
 * there is no such limit. Mesa's llvmpipe (rusticl's CPU device) stops at
 * 65535; this is half that, leaving room for the loops kiln does not count.
 * kiln's operations keep within it, or refuse the problem, saying why. */
size_t kiln__loop_limit(const kiln_device_info *info);

/* Why kiln keeps no binaries of its own on this driver, which keeps a build
 * cache of its own where reading binaries back costs more than it saves
 * (static text), or NULL where kiln's cache pays (rank.c). */
const char *kiln__driver_cache(const kiln_device_info *info);

/* The float lanes of the device's widest vector registers, which the CPU
 * rules shape kernels by (tuning.c): CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT,
 * save where a driver is known to report more than its target has (PoCL
 * names its target CPU and reports 16 for all of them). Pure. */
unsigned kiln__vector_lanes_float(const kiln_device_info *info);

/* Whether the driver crashes releasing an OpenCL sub-buffer while its
 * parent lives: kiln then keeps a view's sub-buffer (made only for
 * kiln_buffer_cl_mem() and user kernels) until its buffer's memory is
 * released, and releases the parent first (buffer_view.c). */
int kiln__keeps_sub_buffers(const kiln_device_info *info);

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

/* Which devices a group runs on (group.c): member[i] set for each usable
 * device the selector (kiln_options.devices' grammar: KILN_DEVICE's and
 * `all`) matches, or with selector NULL each usable device of the
 * best-ranked one's kind; `why` gets a line for each device left out. Fails
 * like kiln__devices_mask(), also when a term matches no usable device. */
kiln_status kiln__devices_group(const kiln__device_list *list, const char *selector,
                                const char *source, int *member, kiln__str *why);

/* The best usable, non-simulator device by ranking; else the best usable
 * simulator; SIZE_MAX when nothing is usable. */
size_t kiln__devices_best(const kiln__device_list *list);

/* A process's rank among the processes of its job on its node. */
typedef struct kiln__local_rank {
  unsigned rank;
  const char *source; /* where it came from, for `why`; NULL: none known */
} kiln__local_rank;

/* kiln__devices_select() for a process that may have a local rank: the
 * term local-rank picks as kiln__devices_local_rank() does, and fails,
 * naming the launcher variables, when lr->source is NULL. */
kiln_status kiln__devices_select_ranked(const kiln__device_list *list,
                                        const char *selector, const char *source,
                                        const kiln__local_rank *lr, size_t *chosen,
                                        kiln__str *why);

/* The device of a local rank: device (rank mod M) of the M usable devices
 * of the best-ranked device's kind (its type, integrated or discrete, a
 * simulator or not, as a group's default takes them), in list order, so that the ranks of a node
 * spread over its devices, round-robin when they outnumber them. Says in
 * `why` which rank from where took which device, and when it is shared.
 * Fails like kiln__devices_mask() when nothing is usable. */
kiln_status kiln__devices_local_rank(const kiln__device_list *list,
                                     const kiln__local_rank *lr, size_t *chosen,
                                     kiln__str *why);

/* Free global memory by the vendor's query, or -1 when there is none. */
int64_t kiln__device_free_memory(const kiln__device *dev);

/* ---- the on-disk binary cache (cache.c) --------------------------------- */

/* An entry's key: XXH3-128 over every input that can change the binary. */
typedef struct kiln__cache_key {
  uint8_t bytes[16];
} kiln__cache_key;

/* Whom a folder's files may come from (trust.c). */
typedef struct kiln__trust {
  int shared;  /* in: a team folder is acceptable (KILN_CACHE_SHARED);
                  out: the folder is one, so its group's members are trusted */
  gid_t group; /* out: the folder's group */
} kiln__trust;

typedef struct kiln__cache {
  char *dir; /* NULL when the cache is off or unusable */
  int dirfd; /* the folder, opened once it passed its checks; -1 when off */
  kiln__trust trust;
  /* counters, for tests and `kiln cache`; guarded by the runtime's lock */
  uint64_t hits, misses, stores, rejected, untrusted;
  char untrusted_note[256]; /* why the last untrusted entry was left alone */
  const char *binaries_off; /* kiln__driver_cache(): no binaries kept, or NULL */
} kiln__cache;

/* Resolves the folder (cfg->cache_dir, else $XDG_CACHE_HOME/kiln, else
 * $HOME/.cache/kiln), creating it as needed, and checks that no one but the
 * user (or, with cfg->cache_shared, the folder's group) can plant code in
 * it (trust.c). A folder that cannot be made, written or trusted leaves the
 * cache off, with a note saying why and how to fix it; never an error. */
void kiln__cache_open(kiln__cache *c, const kiln__config *cfg, kiln__str *notes);
/* Closes what kiln__cache_open() opened; a zeroed kiln__cache (a runtime
 * that failed before opening its cache) is a closed one. */
void kiln__cache_close(kiln__cache *c);

/* The key of a program built from `source` with `options` for `dev`; covers
 * the platform's name and version, the device's name, the driver's version
 * and kiln's version too. */
kiln__cache_key kiln__cache_key_of(const char *source, size_t source_len,
                                   const char *options, const kiln_device_info *dev);

/* Loads the entry of `key` into a malloc'd buffer. Returns 0 on a hit; -1 on
 * a miss, or when the entry is truncated, corrupt, empty or another key's,
 * in which case it is deleted, or when it is not to be trusted (a link, not
 * a regular file, another user's, writable by others), in which case it is
 * counted in `untrusted` and left alone. Never crashes on any file content. */
int kiln__cache_load(kiln__cache *c, const kiln__cache_key *key, unsigned char **data,
                     size_t *size);

/* Stores an entry atomically: a temporary file in the same folder, then
 * rename(), so a concurrent reader sees the whole entry or none. Owner-only
 * (0600), or group-readable (0640) in a team folder. Never replaces a file
 * kiln does not trust. Returns 0, or -1 when it could not (the cache stays
 * usable). */
int kiln__cache_store(kiln__cache *c, const kiln__cache_key *key,
                      const unsigned char *data, size_t size);

/* The key as 32 lower-case hex digits, as entries are named. */
void kiln__cache_key_hex(const kiln__cache_key *key, char out[33]);

/* Deletes the entry, e.g. one the driver refused to build. */
void kiln__cache_remove(kiln__cache *c, const kiln__cache_key *key);

/* Other files of the folder (tuning records), by name, through the same
 * checks as entries. put: writes text as `name`, atomically; 0, or -1 (no
 * folder, no room, or a file there kiln does not trust). get: reads a
 * trusted file of at most max bytes into *text (malloc'd, NUL-terminated);
 * 0, 1 when there is none (or no folder), -1 with the reason in why.
 * delete: 0 when it is gone (or never was), -1 with why. */
int kiln__cache_put_file(kiln__cache *c, const char *name, const char *text, size_t len);
int kiln__cache_get_file(kiln__cache *c, const char *name, size_t max, char **text,
                         size_t *len, kiln__str *why);
int kiln__cache_delete_file(kiln__cache *c, const char *name, kiln__str *why);

/* Takes (lock 1) or releases (0) the folder's lock, an flock() on its
 * descriptor, which serialises a read-modify-write of its files (a tuning
 * record's choices) between processes. Nothing when the cache is off. */
void kiln__cache_lock_folder(kiln__cache *c, int lock);

/* ---- kernels (program.c, generated builtin_sources.c) ------------------- */

/* One of kiln's cl/ files, embedded by tools/embed-cl.py: bytes is the text
 * kiln compiles for it, cl/prelude.cl and then the file once per pass
 * (kiln__builtin_join()). */
typedef struct kiln__builtin_source {
  const char *name; /* the file's name without .cl */
  const unsigned char *bytes;
  size_t size;
} kiln__builtin_source;

extern const kiln__builtin_source kiln__builtin_sources[];
extern const size_t kiln__builtin_count;

/* Appends to out the text kiln compiles for cl/<name>.cl, whose text is
 * `text` (len bytes), after the prelude's (plen bytes): the prelude, then
 * the file once per pass, KILN_PASS 1 .. the n of its `#define KILN_PASSES
 * n` (1 without), each after `#line 1 "cl/<name>.cl"`. tools/embed-cl.py
 * joins the embedded files the same way. */
void kiln__builtin_join(kiln__str *out, const char *prelude, size_t plen,
                        const char *name, const char *text, size_t len);

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

/* Stops the background warm-up after the kernel in hand, joins its thread
 * and frees its state (warm.c): kiln_runtime_destroy(). */
void kiln__warm_stop(kiln_runtime *rt);

/* An operation's workspace: kiln_buffer_create(), whose failure names the
 * operation (op, "kiln_gemm") and the workspace (what, "packing
 * workspace") before the creation's own message. */
kiln_status kiln__workspace(kiln_runtime *rt, const char *op, const char *what,
                            kiln_dtype dtype, size_t count, struct kiln_buffer **out);

/* ---- memory that cached plans hold (buffer.c) --------------------------- */

/* A device buffer of `bytes` (> 0) that a cached plan holds outside any
 * kiln_buffer (kiln's FFT scratch and twiddles, VkFFT's and clFFT's
 * temporary buffers): clCreateBuffer(flags, bytes, host), made resident at
 * once (host's contents kept with CL_MEM_COPY_HOST_PTR), counted in
 * rt->mem_plans against the budget buffers count against. When the budget
 * or the driver has no room, it trims the pool, then releases the cached
 * FFT plans no call is using, trying again after each (and waits as
 * KILN_OOM_WAIT says); then it fails, KILN_ERR_OUT_OF_MEMORY for want of
 * memory, with "<op>: its <what> of N bytes (X) ..." and why. *out is the
 * buffer, or NULL. Never called with rt->lock held. */
kiln_status kiln__plan_mem_create(kiln_runtime *rt, const char *op, const char *what,
                                  cl_mem_flags flags, size_t bytes, void *host,
                                  cl_mem *out);

/* Releases a buffer of kiln__plan_mem_create() and its bytes of
 * rt->mem_plans. NULL is ignored. */
void kiln__plan_mem_release(kiln_runtime *rt, cl_mem mem, size_t bytes);

/* Releases the cached FFT plans that no call is using, their device memory
 * with them; a later call builds its plan again (fft.c). Returns how many
 * went. Never called with rt->lock held. */
size_t kiln__fft_trim_plans(kiln_runtime *rt);

/* ---- the memory pool (pool.c) ------------------------------------------- */

/* Four size classes per power of two from 4 KiB up (pool.c says why). */
#define KILN__POOL_CLASSES 208

/* Destroyed buffers whose memory is kept for the next creation of their
 * size class: their records, linked through next_free, one list a class.
 * Guarded by the runtime's lock. */
typedef struct kiln__pool {
  int on; /* KILN_MEMORY_POOL=0 or kiln_options.no_memory_pool: off */
  struct kiln_buffer *free[KILN__POOL_CLASSES];
  uint64_t cached, peak_cached; /* bytes of the blocks kept */
  uint64_t hits, misses, trims;
} kiln__pool;

/* The bytes a creation of `bytes` asks the driver for: its size class, or
 * bytes itself when the pool is off or the class exceeds the device's
 * largest allocation. */
size_t kiln__pool_block_bytes(const kiln_runtime *rt, size_t bytes);

/* A kept buffer record whose block holds bytes, now counted as live (its
 * dtype and count for the caller to set), or NULL: a miss, or the pool off. */
struct kiln_buffer *kiln__pool_take(kiln_runtime *rt, size_t bytes);

/* Keeps b's block and record for a later creation: 1, or 0 when b is not
 * the pool's to keep (the pool off, or b wraps host memory). */
int kiln__pool_give(struct kiln_buffer *b);

/* Gives every kept block back to the driver; the bytes given back. */
uint64_t kiln__pool_trim(kiln_runtime *rt);

/* The largest kept block's bytes, 0 for none; under the runtime's lock. */
uint64_t kiln__pool_largest_free(const kiln_runtime *rt);

/* ---- the runtime -------------------------------------------------------- */

struct kiln_runtime {
  pthread_mutex_t lock;      /* guards everything below that changes after create */
  kiln__device_list devices; /* the visible devices */
  size_t chosen;
  kiln__str selection; /* what KILN_VISIBLE_DEVICES and KILN_DEVICE did */
  cl_context context;
  cl_command_queue queue;       /* in order, profiling: all user-visible work */
  cl_command_queue alloc_queue; /* makes new buffers resident without waiting
                                   for the work on `queue` */
  cl_command_queue copy_queue;  /* in order, profiling: the host loops' transfers,
                                   beside the compute on `queue` (ops/host.c) */
  int finish_by_marker;         /* kiln__finish_queue(): clFinish alone may not wait */
  struct kiln_stream **streams; /* the caller's streams (stream.c); under lock */
  size_t nstreams, cap_streams;
  unsigned stream_ids; /* streams made so far: the next one's number - 1 */
  /* kernels: the builtin programs, built on first use (program.c) */
  pthread_mutex_t build_lock; /* one build at a time; not held with `lock` */
  cl_program *builtins;       /* kiln__builtin_count entries, NULL until built */
  struct kiln__kernel_programs *kernel_programs; /* one kernel's each (program.c) */
  /* kiln_runtime_warm_async()'s (warm.c), made under lock */
  struct kiln__warm *warm;
  char *cl_dir; /* KILN_CL_DIR: builtin sources from disk */
  kiln__cache cache;
  struct kiln__tuning_state *tuning;    /* kernel parameters (tuning.h) */
  kiln_device_type shape;               /* the kind rules shape for (tuning.c) */
  uint64_t compiles;                    /* programs built from source: for tests */
  uint64_t kernels_compiled;            /* the kernels in them: for tests */
  uint64_t live_programs, live_kernels; /* the caller's, for KILN_ERR_BUSY */
  kiln_backend gemm_backend;            /* forced for AUTO requests, or AUTO */
  struct kiln__fft_plan *fft_plans;     /* cached FFT plans, a list (fft.c) */
  /* memory accounting */
  uint64_t mem_current, mem_peak, mem_limit, live_buffers;
  uint64_t mem_reserving; /* taken by creations in progress (buffer.c) */
  uint64_t mem_plans;     /* held by cached plans (kiln__plan_mem_create) */
  const char *mem_limit_source;
  kiln__pool pool;      /* blocks kept by destroyed buffers (pool.c) */
  unsigned oom_wait_ms; /* a refused allocation retries for this long */
  int keep_sub_buffers; /* views' sub-buffers live as long as their buffer's
                           memory (kiln__keeps_sub_buffers()) */
  /* commands enqueued without waiting, checked by kiln_finish() */
  struct kiln__pending {
    cl_event ev;
    const char *what; /* the call that enqueued it; static text */
  } * pending;
  size_t npending, cap_pending;
  cl_int deferred_err; /* first failure found while reaping early */
  const char *deferred_what;
  char *error;                 /* the last failure's message, of any thread */
  uint64_t serial;             /* unique in the process, never reused: names the
                            runtime in each thread's messages (error.c) */
  int profile;                 /* recording calls; set at creation, never changed */
  struct kiln__profiler *prof; /* the records (profile.h); NULL when off */
  int used_clblast;            /* counted by clblast.c; under its lock */
};

struct kiln_buffer {
  kiln_runtime *rt;
  cl_mem mem;
  kiln_dtype dtype;
  size_t count, bytes;
  size_t block;                  /* the bytes mem holds: bytes rounded up to
                                    its size class when pooled (pool.c) */
  int wrapped;                   /* mem is the caller's host memory, or a view's
                                    sub-buffer: never pooled */
  struct kiln_buffer *next_free; /* in the pool's list of its class */
  cl_event *fence;               /* in the pool: kiln__fence() of its release */
  cl_uint nfence;
  struct kiln_buffer *parent; /* a view's buffer (buffer_view.c), else NULL */
  size_t views;               /* views of this buffer alive; under rt->lock */
  size_t view_offset;         /* a view's first element in parent */
  cl_mem *kept;               /* dead views' sub-buffers (buffer_view.c) */
  size_t nkept;               /* under rt->lock */
  void *mapped;               /* the host pointer while mapped, else NULL */
};

const kiln__device *kiln__runtime_device(const kiln_runtime *rt);

/* KILN_OK when [offset, offset + count) lies in buf, else the failure of
 * fn, naming the buffer as `name` (buffer.c). */
kiln_status kiln__check_range(const kiln_buffer *buf, const char *fn, const char *name,
                              size_t offset, size_t count);

/* Counts a view as a live buffer of no bytes of its own, or one gone
 * (delta -1); takes the runtime's lock (buffer.c). */
void kiln__buffer_count_view(kiln_runtime *rt, int delta);

/* The memory that holds buf's elements, and the first of them in it: for a
 * view its buffer's memory and its offset, else buf's own and 0. kiln's own
 * calls (operations, transfers, fills, maps) take these, never a view's
 * sub-buffer, which some drivers cannot release (buffer_view.c). */
static inline cl_mem kiln__buffer_mem(const kiln_buffer *b)
{
  return !b ? NULL : b->parent ? b->parent->mem : b->mem;
}
static inline size_t kiln__buffer_first(const kiln_buffer *b)
{
  return b && b->parent ? b->view_offset : 0;
}

/* A view's own sub-buffer, made on first use (buffer_view.c): for
 * kiln_buffer_cl_mem() and user kernels. A buffer's own memory for a buffer.
 * Fails, naming fn, when the view's offset is not a multiple of the device's
 * base-address alignment or the driver refuses. */
kiln_status kiln__buffer_cl_mem(const kiln_buffer *buf, const char *fn, cl_mem *out);

/* Releases buf's memory and the sub-buffers kept for it (buffer_view.c):
 * the parent first, then the sub-buffers, newest first. */
void kiln__buffer_release_mem(kiln_buffer *buf);

/* Releases a view (buffer_view.c): its sub-buffer, its count. */
void kiln__view_destroy(kiln_buffer *v);

/* Sets argument i of k to buffer's memory, for a view its buffer's (the
 * caller passes the view's offset as another argument), with
 * kiln_kernel_set_buffer()'s checks (kernel.c). */
kiln_status kiln__kernel_set_root(kiln_kernel *k, const char *fn, unsigned i,
                                  const kiln_buffer *buffer);

/* Sets argument i of k from *ap by kiln_kernel_set_args()'s format letter
 * c, checked as it checks (kernel.c); for 'b', *buffer gets the buffer.
 * fn names the caller in messages. */
kiln_status kiln__kernel_set_one(kiln_kernel *k, const char *fn, unsigned i, char c,
                                 va_list *ap, const kiln_buffer **buffer);

/* ---- streams (stream.c) ------------------------------------------------- */

/* The queue this thread's calls on rt go to: its bound stream's, else the
 * runtime's. Every command kiln enqueues for the caller goes there. */
cl_command_queue kiln__queue(kiln_runtime *rt);

/* Which of rt's queues q is, for the trace: 0 the runtime's (or one not
 * known), -1 the copy queue, k > 0 the stream numbered k, in the order the
 * runtime made its streams. */
int kiln__queue_lane(kiln_runtime *rt, cl_command_queue q);

/* With streams, a flushed marker on every queue of rt (the runtime's, then
 * each stream's) into a malloc'd *fence of *n events; none (*n 0)
 * without. For the pool: a block waits for its fence. */
cl_int kiln__fence(kiln_runtime *rt, cl_event **fence, cl_uint *n);

/* clFinish(q), made to wait where the driver's alone may not: Mesa 22.3's
 * rusticl (Debian 12) returns from clFinish at once when an earlier
 * clFlush already handed the queue's commands to its worker, as kiln's
 * markers do; there the call first waits for a marker of its own. */
cl_int kiln__finish_queue(const kiln_runtime *rt, cl_command_queue q);

/* kiln__finish_queue on every stream; the first failure into *first_err,
 * when it is still CL_SUCCESS. */
void kiln__streams_finish(kiln_runtime *rt, cl_int *first_err);

/* State that the runs of some object share whatever queue they go on (an
 * FFT plan's scratch): the queue of its last run, and a marker after it
 * (NULL when none was needed). Held under the object's own lock. */
typedef struct kiln__serial {
  cl_command_queue queue;
  cl_event last;
} kiln__serial;

/* Before a run: on another queue than the last run's, the current queue
 * waits for that run. */
kiln_status kiln__serial_begin(kiln_runtime *rt, kiln__serial *s, const char *fn);
/* After a run's commands are enqueued. */
void kiln__serial_end(kiln_runtime *rt, kiln__serial *s);
void kiln__serial_free(kiln__serial *s);

/* Checks an operation's operand before anything is enqueued: not NULL,
 * rt's, of dtype `want`, and holding at least `need` elements. fn names the
 * call and `name` the operand ("x", "buffer A"); `detail` (or NULL) says
 * where `need` comes from. The one place these messages are worded
 * (buffer.c). */
kiln_status kiln__check_operand(kiln_runtime *rt, const char *fn, const char *name,
                                const kiln_buffer *b, kiln_dtype want, size_t need,
                                const char *detail);

/* Blocking copies of a rows x cols block between host memory (row pitch ld
 * elements, the block at element `at`) and the packed start of buf
 * (buffer.c). */
kiln_status kiln__buffer_write_rect(kiln_buffer *buf, const void *host, size_t at,
                                    size_t ld, size_t rows, size_t cols);
kiln_status kiln__buffer_read_rect(kiln_buffer *buf, void *host, size_t at, size_t ld,
                                   size_t rows, size_t cols);

/* Where an internal command is enqueued: on `queue`, after the nwait
 * events of `wait`. The host loops (ops/host.c) move pieces on the
 * runtime's copy queue with it; NULL stands for the runtime's queue and
 * nothing to wait for. */
typedef struct kiln__lane {
  cl_command_queue queue;
  cl_uint nwait;
  const cl_event *wait;
} kiln__lane;

/* The same without waiting (write: host to buf, else buf to host), the
 * block packed in buf from its element `to`, on lane: host must stay as it
 * is, or be left unread, until kiln_finish(). */
kiln_status kiln__buffer_move_async(kiln_buffer *buf, size_t to, int write,
                                    const void *host, size_t at, size_t ld, size_t rows,
                                    size_t cols, const kiln__lane *lane);

/* Whether a command tracked by rt (kiln__runtime_track) has failed so far:
 * the failure stays for kiln_finish() to report. */
int kiln__runtime_failed(kiln_runtime *rt);

/* Takes ownership of an event of a command enqueued without waiting; its
 * status is checked by kiln_finish(). Returns a failure status only when the
 * list cannot grow, after waiting for the event itself. */
kiln_status kiln__runtime_track(kiln_runtime *rt, cl_event ev, const char *what);

/* The same, with the label the profiler gives the command (a kernel's
 * name, which need not outlive the call) when it is not `what`. */
kiln_status kiln__runtime_track_as(kiln_runtime *rt, cl_event ev, const char *what,
                                   const char *label);

/* Stores msg (taking ownership) as rt's last error; used by error.c. */
void kiln__runtime_set_error(kiln_runtime *rt, char *msg);

#endif /* KILN_INTERNAL_H */
