/*
 * kiln — a vendor-neutral OpenCL compute runtime.
 *
 * Introduction
 *
 * A C program creates one kiln_runtime. kiln finds every OpenCL platform and
 * device through the ICD loader, chooses one device, and creates an OpenCL
 * context and an in-order command queue on it. Buffers live on that device;
 * operations are enqueued on that queue and return without waiting.
 * kiln_finish() waits for everything enqueued and reports errors that only
 * surface when the device runs the work.
 *
 * Every function that can fail returns a kiln_status: KILN_OK (0) on success,
 * a negative KILN_ERR_* otherwise. After a failure, kiln_last_error() gives
 * the whole story in one message: what kiln was doing, what was wrong (with
 * the OpenCL call and its error name when OpenCL failed), and what was
 * expected. The library never prints, aborts or exits.
 *
 * Lifetime: objects come in create/destroy pairs; the new object is returned
 * through the last parameter, and is left NULL on failure. Destroy functions
 * accept NULL.
 *
 * Names and arguments: kiln_<object>_<verb>, the object the call acts on
 * first (the runtime of an operation, the buffer of kiln_buffer_write());
 * after it, inputs before outputs: kiln_gemm(rt, &desc, a, b, c),
 * kiln_convert(src, dst).
 *
 * Threads: one runtime may be shared by all threads, or each may have its
 * own; the "Threads" section below says which calls may run at once and
 * which need the caller's own lock.
 *
 * OpenCL handles (context, queue, cl_mem) are available through
 * <kiln/kiln_cl.h>, which includes the OpenCL headers; this header does not.
 *
 * A header that can grow
 *
 * A program compiled against this header keeps working with a later
 * libkiln.so.0, and one compiled against a later header works with this
 * library as long as it asks for nothing this library lacks:
 *  - Every struct the caller allocates for kiln to read or fill starts with
 *    `size_t struct_size`: kiln_options, kiln_gemm_desc, kiln_reduce_desc,
 *    kiln_conv2d_desc, kiln_fft_desc, kiln_memory_usage, kiln_cache_usage
 *    and kiln_profile_row. Its kiln_<struct>_init() sets struct_size to
 *    sizeof(the struct) as the program was compiled, and the defaults; start
 *    every such struct from its init (a binding that cannot call it sets
 *    struct_size to the size of the struct it declares, and the rest to 0).
 *  - kiln checks struct_size on entry. 0 means the struct was never
 *    initialised: KILN_ERR_INVALID_ARGUMENT, naming the init to call. A
 *    smaller size comes from an older program: kiln reads the fields it
 *    has and takes 0 for the others, so every field added later has 0 as
 *    its default (and 0 means "as before"). A larger size comes from a newer
 *    program: kiln accepts it when the bytes it does not know are all 0
 *    (the new fields left at their defaults), and refuses it otherwise with
 *    KILN_ERR_UNSUPPORTED, giving both sizes. Into an output struct kiln
 *    writes the fields that fit in struct_size, and leaves those it does
 *    not know as the init set them, 0.
 *  - The init functions are static inline in this header, so that sizeof
 *    is the program's own: a function in the library would clear its own
 *    struct, which may be longer than the program's.
 *  - Fields are only appended: never reordered, resized or removed.
 *  - Enums have explicit values; new values are appended, and a value is
 *    never renumbered or reused.
 * Why a size rather than reserved space: one word per struct, no limit on
 * growth, and a struct nobody initialised is caught instead of read as
 * garbage. Every one of these structs already had an init function, so
 * programs that used it need no change.
 * kiln_device_info and kiln_platform_info are kiln's records, returned by
 * pointer; they grow at the end as well, so read them only through kiln's
 * pointers (records you fill yourself for kiln_device_compare() are for
 * tests, outside this promise). kiln_array mirrors a .npy header and does
 * not grow: a need it cannot hold will get a struct of its own.
 *
 * Stability
 *
 * Everything this header declares is stable, in the sense above, except
 * the calls in the "Experimental" section at its end. Those are declared
 * only when the program defines KILN_EXPERIMENTAL before including
 * <kiln/kiln.h>, as zstd's ZSTD_STATIC_LINKING_ONLY; they may change or
 * go in any release, and a 1.0 will promise everything but them.
 */
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h> /* memset, for the inline kiln_*_init() */

#include "kiln/version.h"

#if defined(_WIN32)
#  if defined(KILN_BUILDING)
#    define KILN_API __declspec(dllexport)
#  else
#    define KILN_API
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define KILN_API __attribute__((visibility("default")))
#else
#  define KILN_API
#endif

/* printf-style arguments, checked by the compilers that can. */
#if defined(__GNUC__)
#  define KILN__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define KILN__PRINTF(fmt, args)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The part every kiln_<struct>_init() shares: zeroes *p and sets its
 * struct_size to the program's sizeof (see "A header that can grow").
 * Yields 1, or 0 without touching anything when p is NULL. Internal to
 * this header; p is evaluated more than once. */
#define KILN__INIT(p)                                                                    \
  ((p) != NULL && (memset((p), 0, sizeof *(p)), (p)->struct_size = sizeof *(p), 1))

/*====================================================================
 * Version
 *====================================================================*/

/*! kiln_version() :
 * @return : the library's version as "MAJOR.MINOR.PATCH", which may differ
 *           from KILN_VERSION_STRING when the program was built against
 *           other headers. Static storage; never NULL. */
KILN_API const char *kiln_version(void);

/*! kiln_version_number() :
 * @return : MAJOR*10000 + MINOR*100 + PATCH, comparable with
 *           KILN_VERSION_NUMBER. */
KILN_API unsigned kiln_version_number(void);

/*====================================================================
 * Status
 *====================================================================*/

/* One list generates the enum, kiln_status_name() and kiln_status_string().
 * KILN_OK is 0; errors are negative, grouped by hundreds, and a code once
 * published is never renumbered.
 *   -1 .. -99    the caller's request is wrong
 *   -100 .. -199 the device, the driver or resources
 *   -200 .. -299 files and formats
 *   -300 .. -399 between processes (libkiln-mpi, kiln/kiln_mpi.h) */
/* A table, aligned by hand: */
/* clang-format off */
#define KILN_STATUS_MAP(XX)                                                           \
  XX(OK,                      0,    "success")                                        \
  XX(ERR_INVALID_ARGUMENT,    -1,   "an argument is missing, out of range or "        \
                                    "inconsistent with the others")                   \
  XX(ERR_INVALID_DTYPE,       -2,   "the element type is not one this call "          \
                                    "accepts")                                        \
  XX(ERR_OUT_OF_BOUNDS,       -3,   "the requested range lies outside the buffer")    \
  XX(ERR_OVERFLOW,            -4,   "a size computation overflows")                   \
  XX(ERR_INVALID_ENV,         -5,   "an environment variable has a value kiln "       \
                                    "cannot use")                                     \
  XX(ERR_WRONG_RUNTIME,       -6,   "the objects belong to different runtimes")       \
  XX(ERR_BUSY,                -7,   "the object is still in use")                     \
  XX(ERR_UNSUPPORTED,         -8,   "the device or this build of kiln cannot do "     \
                                    "what was asked")                                 \
  XX(ERR_INVALID_DEVICE_SELECTOR, -9, "the device selector does not parse or "        \
                                    "matches no device")                              \
  XX(ERR_NO_DEVICE,           -100, "no usable OpenCL device was found")              \
  XX(ERR_OUT_OF_MEMORY,       -101, "the device does not have the memory asked "      \
                                    "for")                                            \
  XX(ERR_OUT_OF_HOST_MEMORY,  -102, "the host ran out of memory")                     \
  XX(ERR_DEVICE_UNAVAILABLE,  -103, "the device is not available")                    \
  XX(ERR_OPENCL,              -104, "an OpenCL call failed")                          \
  XX(ERR_BUILD,               -105, "an OpenCL program failed to build")              \
  XX(ERR_IO,                  -200, "a file could not be read or written")            \
  XX(ERR_FORMAT,              -201, "a file is malformed or in a format kiln "        \
                                    "does not read")                                  \
  XX(ERR_MPI,                 -300, "an MPI call failed")                             \
  XX(ERR_RANK_MISMATCH,       -301, "the ranks of a collective disagree on its "      \
                                    "arguments")                                      \
  XX(ERR_PEER_FAILED,         -302, "another process of the job failed")
/* clang-format on */

/*! kiln_status :
 * The result of every call that can fail. */
typedef enum kiln_status {
#define KILN_XX_(name, code, text) KILN_##name = code,
  KILN_STATUS_MAP(KILN_XX_)
#undef KILN_XX_
} kiln_status;

/*! kiln_status_name() :
 * @return : the enumerator's name without its prefix, e.g. "ERR_OUT_OF_MEMORY",
 *           or "UNKNOWN" for a value that is not a kiln_status. Static. */
KILN_API const char *kiln_status_name(kiln_status status);

/*! kiln_status_string() :
 * @return : a one-line description of the status, e.g. "the device does not
 *           have the memory asked for". Static; never NULL. */
KILN_API const char *kiln_status_string(kiln_status status);

/*! kiln_cl_error_name() :
 * @return : the name of an OpenCL error code as the Khronos headers spell it,
 *           e.g. "CL_OUT_OF_RESOURCES" for -5, covering the core codes and
 *           the extensions' codes; "CL_SUCCESS" for 0; "CL_UNKNOWN_ERROR" for
 *           a code no header defines. Static; never NULL. */
KILN_API const char *kiln_cl_error_name(int cl_error);

/*====================================================================
 * Types
 *====================================================================*/

/*! KILN_ARRAY_MAX_DIMS : the most dimensions kiln handles: of a kiln_array,
 * and of a kiln_reduce_desc's view. */
#define KILN_ARRAY_MAX_DIMS 8

/* Opaque handles. */
typedef struct kiln_runtime kiln_runtime;
typedef struct kiln_buffer kiln_buffer;

/*! kiln_dtype :
 * Element types. 0 is not a type, so a zeroed descriptor is caught. */
typedef enum kiln_dtype {
  KILN_F16 = 1, /* IEEE half, stored as 16 bits (uint16_t on the host) */
  KILN_F32 = 2, /* float */
  KILN_F64 = 3, /* double */
  KILN_C32 = 4, /* complex of two floats, interleaved (re, im) */
  KILN_C64 = 5, /* complex of two doubles, interleaved */
  KILN_I32 = 6, /* int32_t */
  KILN_I64 = 7  /* int64_t */
} kiln_dtype;

/*! kiln_dtype_size() :
 * @return : the size of one element in bytes, or 0 for a value that is not a
 *           kiln_dtype. */
KILN_API size_t kiln_dtype_size(kiln_dtype dtype);

/*! kiln_dtype_name() :
 * @return : numpy's name for the type ("float16", "float32", "float64",
 *           "complex64", "complex128", "int32", "int64"), or "invalid".
 *           Static. */
KILN_API const char *kiln_dtype_name(kiln_dtype dtype);

/*! kiln_backend :
 * Who runs an operation. Each operation accepts the ones its documentation
 * names; KILN_BACKEND_AUTO lets kiln choose by its measured rules. */
typedef enum kiln_backend {
  KILN_BACKEND_AUTO = 0,
  KILN_BACKEND_KILN = 1,    /* kiln's own kernels in cl/ */
  KILN_BACKEND_CLBLAST = 2, /* CLBlast, when kiln is built with it */
  KILN_BACKEND_IM2COL = 3,  /* convolution: kiln's im2col, then kiln_gemm() */
  KILN_BACKEND_DIRECT = 4,  /* convolution: kiln's direct kernel */
  KILN_BACKEND_CLFFT = 5,   /* FFT: clFFT, when kiln is built with it */
  KILN_BACKEND_VKFFT = 6    /* FFT: VkFFT's OpenCL backend, when built with it */
} kiln_backend;

/*! kiln_backend_name() :
 * @return : "auto", "kiln", "clblast", "im2col", "direct", "clfft", "vkfft",
 *           or "invalid". Static. */
KILN_API const char *kiln_backend_name(kiln_backend backend);

/*====================================================================
 * Runtime
 *====================================================================*/

/*! kiln_options :
 * Set by kiln_options_init(), then change the fields you care about.
 * An option left at its default is taken from the environment variable named
 * beside it when that is set; an option you set wins over the environment.
 * Environment values are read once, by kiln_runtime_create(); a value kiln
 * cannot use makes it fail with KILN_ERR_INVALID_ENV. */
typedef struct kiln_options {
  /* Set by kiln_options_init(): see "A header that can grow". */
  size_t struct_size;
  /* Cap on the device memory kiln may hold in buffers at once, in bytes.
   * 0: no cap beyond the device's global memory. Env: KILN_MEMORY_LIMIT,
   * bytes with an optional K, M, G or T suffix (powers of 1024), or a
   * percentage of the device's global memory such as "50%". */
  uint64_t memory_limit;
  /* Cap as a fraction of the device's global memory, in (0, 1]; 0: none.
   * When both caps are set the smaller one holds. */
  double memory_fraction;
  /* Which device to run on, as an order of preference: comma-separated
   * terms, the first that matches a usable device wins, and among its
   * matches the best ranked. A term is
   *   P:D        platform P's device D, as `kiln info --list` numbers them
   *   N          the N-th visible device, as kiln_runtime_device_at() lists
   *   a vendor   nvidia, amd, intel, apple, arm, qualcomm, imagination,
   *              pocl, mesa, oclgrind
   *   a type     gpu, cpu, accelerator
   *   name=TEXT  a device whose name contains TEXT (case-insensitive)
   *   local-rank the device of the process's node-local rank (see
   *              local_rank_source); fails when there is none
   * A simulator (Oclgrind) is matched only by a term that names it: P:D, N,
   * oclgrind or name=. NULL: the best ranked device. Env: KILN_DEVICE.
   * A value that does not parse or matches no usable device makes
   * kiln_runtime_create() fail with KILN_ERR_INVALID_DEVICE_SELECTOR. */
  const char *device;
  /* Which devices kiln may see at all, as CUDA_VISIBLE_DEVICES: terms as
   * above (N counting every device found), comma-separated; the devices
   * they match, in the order of the terms, become the visible devices
   * 0, 1, ... Each term must match a device. NULL: all devices.
   * Env: KILN_VISIBLE_DEVICES. */
  const char *visible_devices;
  /* The folder of kiln's on-disk cache of compiled kernels. NULL: the
   * default, $XDG_CACHE_HOME/kiln, else ~/.cache/kiln (created 0700).
   * Env: KILN_CACHE_DIR. The cache holds code the device will run, so kiln
   * uses a folder only when no other user can plant code in it: owned by
   * the user (or root), writable by no one else, and no folder above it
   * that another user could replace it from. A folder kiln cannot create,
   * write or trust means no cache, not an error: kiln_runtime_diagnostics()
   * says why and how to fix it. */
  const char *cache_dir;
  /* Non-zero: no on-disk cache; kernels are compiled in every process.
   * Env: KILN_CACHE=0 (or 1 for the default). */
  int no_cache;
  /* The backend kiln_gemm() uses when a request says AUTO. Env:
   * KILN_GEMM_BACKEND (auto, kiln, clblast). */
  kiln_backend gemm_backend;
  /* Non-zero: record every operation's times (see "Profiling" below).
   * Env: KILN_PROFILE=1 (or 0 for the default, off). */
  int profile;
  /* A file to write a Chrome trace-event JSON timeline of the recorded
   * operations into when the runtime is destroyed; implies profile. NULL:
   * none. Env: KILN_TRACE. A file kiln cannot create is not an error: the
   * runtime works, profiles, and says so in kiln_runtime_diagnostics(). */
  const char *trace;
  /* Non-zero: ignore every KILN_* environment variable. */
  int ignore_env;
  /* Non-zero: cache_dir may be a team cache, shared by the members of its
   * group, who must all be trusted: each can plant code every other member
   * will run. kiln then accepts a folder of a group this process has, not
   * world-writable, group-writable only with the setgid bit; loads entries
   * owned by the group's members; and writes entries group-readable (0640).
   * A folder that passes the ordinary checks is used as always.
   * Env: KILN_CACHE_SHARED=1 (or 0 for the default, off). */
  int cache_shared;
  /* Non-zero: ignore the device's tuning record (see "Tuning"): the rules'
   * parameters apply, as on a device never tuned. Env: KILN_TUNING=0 (or 1
   * for the default, on). */
  int no_tuning;
  /* Non-zero: benchmark mode, kiln's cudnn.benchmark. The first AUTO call
   * of kiln_gemm() or kiln_conv2d() with a new shape (type, sizes, layout,
   * transposes, strides, groups) runs each backend that can do it, checks
   * that they agree, and keeps the fastest for that shape, in the runtime
   * and in the device's tuning record; later calls, and later processes
   * even without benchmark mode, use it. The first call takes as long as
   * all the candidates. Env: KILN_BENCHMARK=1 (or 0 for the default, off). */
  int benchmark;
  /* Non-zero: no caching pool: each buffer's memory goes back to the driver
   * when it is destroyed, and each buffer holds exactly its bytes, so that
   * valgrind and Oclgrind see every allocation and every overrun (see
   * "Memory accounting"). Env: KILN_MEMORY_POOL=0 (or 1 for the default,
   * on). */
  int no_memory_pool;
  /* Milliseconds that a buffer creation the driver refuses for want of
   * memory may spend waiting and retrying, the waits doubling from 1 ms,
   * after kiln has trimmed its pool: for a device shared with other
   * processes, whose memory may come free. 0, the default: fail at once.
   * At most 3600000. Env: KILN_OOM_WAIT (500, 500ms or 2s). */
  unsigned oom_wait_ms;
  /* Which devices a device group runs on (kiln_group_create(); a runtime
   * ignores it): the terms of `device` above but local-rank,
   * comma-separated, or `all`
   * (every usable device but simulators); the group takes every usable
   * device that any term matches, a simulator only by a term that names
   * it. NULL: every usable device of the best-ranked device's kind (every
   * discrete GPU, say). Env: KILN_DEVICES. A term that does not parse or
   * matches no usable device makes kiln_group_create() fail with
   * KILN_ERR_INVALID_DEVICE_SELECTOR. */
  const char *devices;
  /* The process's rank among the processes of its job on this node, for a
   * program that knows it otherwise than from a launcher's variable (as
   * libkiln-mpi does, from MPI_Comm_split_type). Used only when
   * local_rank_source is not NULL. */
  unsigned local_rank;
  /* What gave local_rank, in words, for kiln_runtime_selection(); NULL: the
   * first launcher variable set of LOCAL_RANK (torchrun),
   * OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MPI_LOCALRANKID (MPICH, Intel
   * MPI), SLURM_LOCALID (srun) and MV2_COMM_WORLD_LOCAL_RANK (MVAPICH2),
   * in that order, gives it (not KILN_ variables: ignore_env keeps them);
   * a value that is not an integer is KILN_ERR_INVALID_ENV. With a local
   * rank and no `device`, the runtime runs on device (rank mod M) of the M
   * visible usable devices of the best-ranked device's kind (as `devices`
   * takes them: every discrete GPU, say), in their order: the ranks of a node spread over its
   * devices, round-robin, sharing one, when they outnumber them
   * (kiln_runtime_selection() says so). The device term `local-rank` asks
   * for the same explicitly. */
  const char *local_rank_source;
} kiln_options;

/*! kiln_options_init() :
 * Fills *opts with the defaults, all 0, and struct_size. NULL is ignored.
 * Inline, as every kiln_*_init(): see "A header that can grow". */
static inline void kiln_options_init(kiln_options *opts)
{
  KILN__INIT(opts);
}

/*! kiln_runtime_create() :
 * Finds every OpenCL platform and device through the ICD loader, chooses the
 * best usable one (available, with a compiler) by kiln's ranking: discrete
 * GPU, integrated GPU, accelerator, then CPU, then by estimated throughput,
 * memory and OpenCL version; a simulator such as Oclgrind only when there is
 * nothing else. It creates a context and an in-order command queue with
 * profiling enabled on that device.
 * A platform or device whose queries fail is skipped, and a note saying why
 * goes into kiln_runtime_diagnostics(); it never stops the others from being
 * found.
 * @opts : NULL for the defaults.
 * @out  : receives the runtime, or NULL on failure.
 * @return : KILN_OK;
 *           KILN_ERR_NO_DEVICE when no platform or no usable device exists
 *             (the message says how to install a driver);
 *           KILN_ERR_INVALID_ENV, KILN_ERR_INVALID_ARGUMENT for bad options;
 *           KILN_ERR_OUT_OF_HOST_MEMORY; KILN_ERR_OPENCL.
 * On failure, kiln_last_error(NULL) tells why. */
KILN_API kiln_status kiln_runtime_create(const kiln_options *opts, kiln_runtime **out);

/*! kiln_runtime_destroy() :
 * Waits for the queue, writes the trace when kiln_options.trace or
 * KILN_TRACE names a file, then releases the queue, the context and every
 * resource of the runtime. NULL is ignored.
 * @return : KILN_OK;
 *           KILN_ERR_BUSY while buffers, programs or kernels of this
 *             runtime are still alive (the message counts each kind):
 *             destroy them first; the runtime is then left intact;
 *           KILN_ERR_IO when the trace could not be written: the runtime
 *             is destroyed all the same, and kiln_last_error(NULL) says
 *             why. */
KILN_API kiln_status kiln_runtime_destroy(kiln_runtime *rt);

/*! kiln_finish() :
 * Waits until everything enqueued on the runtime has finished: on its queue
 * and on every stream of it.
 * @return : KILN_OK, or the status of the first enqueued command that failed
 *           since the last kiln_finish() (KILN_ERR_OUT_OF_MEMORY when the
 *           driver could not allocate at first use, KILN_ERR_OPENCL ...). */
KILN_API kiln_status kiln_finish(kiln_runtime *rt);

/*! kiln_last_error() :
 * @rt : the runtime whose last failure you want, or NULL for the last
 *        failure of this thread that had no runtime (kiln_runtime_create(),
 *        or a call given a NULL runtime or buffer).
 * @return : the message of the calling thread's most recent failure on rt,
 *           whatever other threads fail meanwhile; for a thread that has
 *           had no failure on rt, the runtime's most recent failure of any
 *           thread; "" when there was none. Successful calls do not clear
 *           it. A thread keeps its messages for the last 8 runtimes it
 *           failed on. The text is a copy that belongs to kiln and stays
 *           valid until this thread calls kiln_last_error() again. Never
 *           NULL. */
KILN_API const char *kiln_last_error(const kiln_runtime *rt);

/*! kiln_last_error_set() :
 * For a library built on kiln (libkiln-mpi is one): records a failure as
 * kiln's own calls do, so that kiln_last_error(rt) returns the message,
 * printf-formatted from fmt. rt NULL: the thread's message, as for a call
 * with no runtime.
 * @return : status, so that a caller can `return kiln_last_error_set(...)`. */
KILN_API kiln_status kiln_last_error_set(kiln_runtime *rt, kiln_status status,
                                         const char *fmt, ...) KILN__PRINTF(3, 4);

/*! kiln_runtime_diagnostics() :
 * @return : notes gathered while finding devices, one per line: platforms or
 *           devices that were skipped and why. "" when there were none. Owned
 *           by the runtime; valid until it is destroyed. NULL for rt == NULL. */
KILN_API const char *kiln_runtime_diagnostics(const kiln_runtime *rt);

/*! kiln_runtime_selection() :
 * @return : what the visibility mask and the device selector did, one line
 *           each: which devices were hidden, which term picked the device,
 *           and what the ranking alone would have picked. "" when neither
 *           was set. Owned by the runtime; NULL for rt == NULL. */
KILN_API const char *kiln_runtime_selection(const kiln_runtime *rt);

/*====================================================================
 * Threads
 *====================================================================*/

/* Share one runtime among threads, or give each thread its own: both are
 * supported. A shared runtime has one in-order queue, so its threads' work
 * runs one command at a time on the device; separate runtimes run side by
 * side. tests/test-threads.c checks all of this with 8 threads, under
 * ThreadSanitizer in CI.
 *
 * These may run at the same time on one runtime, from any threads:
 *  - every operation (kiln_gemm(), kiln_conv2d(), kiln_reduce(), kiln_fft(),
 *    kiln_convert(), and their _host forms), also on the
 *    same shapes: the runtime keeps one FFT plan per shape, and each call
 *    enqueues its commands under the plan's lock;
 *  - the buffer calls on different buffers (create, wrap, write, read, the
 *    _async forms, copy, fill, destroy); several threads may read one
 *    buffer, or use it as an operation's input;
 *  - kiln_program_create*(), kiln_kernel_create() (also of one program),
 *    kiln_program_destroy(), and calls on different kiln_kernels;
 *  - kiln_finish(): it waits for every thread's work on the runtime, and
 *    the failure of a command of any thread goes to the first kiln_finish()
 *    after it;
 *  - kiln_memory_stats(), kiln_memory_trim() (a plan another thread is
 *    running stays), kiln_cache_stats(), kiln_cache_contents(),
 *    kiln_cache_clear(), the profiling calls, and the getters;
 *  - kiln_runtime_create() and kiln_device_list_create(), and destroying
 *    other runtimes and lists.
 *
 * These need the caller's own ordering:
 *  - one kiln_kernel holds its arguments: kiln_kernel_set_arg*() and the
 *    kiln_kernel_launch() they are for must not interleave with another
 *    thread's calls on that kernel (hold a lock from the first set_arg to
 *    the launch, or create a kernel per thread);
 *  - kiln_buffer_destroy() must not run while another thread's call uses
 *    the buffer (commands already enqueued on it are fine); a write to a
 *    range that another thread reads or writes at the same time lands in
 *    whichever order the calls reach the queue;
 *  - kiln_runtime_destroy(): no call on the runtime or its buffers,
 *    programs and kernels may be in flight or follow.
 *
 * Errors are per thread, as errno: see kiln_last_error().
 *
 * The process as a whole: kiln never changes the locale (it gives VkFFT's
 * code generator the C locale on the building thread only). clFFT's state
 * is process-wide: kiln sets it up for its first plan and tears it down
 * after its last. kiln makes one call at a time into clFFT, and into
 * CLBlast, in the whole process: neither is safe to call from two threads
 * at once. While discovering devices, kiln_runtime_create() raises the
 * process's default thread stack size for the drivers' worker threads; a
 * thread the program creates at that moment gets it too. */

/*====================================================================
 * Device information
 *====================================================================*/

/*! kiln_device_type :
 * The bits of an OpenCL device type, with OpenCL's values. */
typedef enum kiln_device_type {
  KILN_DEVICE_DEFAULT = 1,
  KILN_DEVICE_CPU = 2,
  KILN_DEVICE_GPU = 4,
  KILN_DEVICE_ACCELERATOR = 8,
  KILN_DEVICE_CUSTOM = 16
} kiln_device_type;

/*! kiln_vendor :
 * Who made the device (or the driver, for CPU runtimes and simulators),
 * derived from the vendor id and strings. */
typedef enum kiln_vendor {
  KILN_VENDOR_OTHER = 0,
  KILN_VENDOR_NVIDIA = 1,
  KILN_VENDOR_AMD = 2,
  KILN_VENDOR_INTEL = 3,
  KILN_VENDOR_APPLE = 4,
  KILN_VENDOR_ARM = 5,
  KILN_VENDOR_QUALCOMM = 6,
  KILN_VENDOR_IMAGINATION = 7,
  KILN_VENDOR_POCL = 8,     /* the Portable Computing Language CPU runtime */
  KILN_VENDOR_OCLGRIND = 9, /* the Oclgrind kernel simulator */
  KILN_VENDOR_MESA = 10     /* Mesa's Clover or rusticl, on any GPU */
} kiln_vendor;

/*! kiln_vendor_name() :
 * @return : the lower-case name ("nvidia", "amd", "intel", "apple", "arm",
 *           "qualcomm", "imagination", "pocl", "oclgrind", "mesa", "other").
 *           Static. */
KILN_API const char *kiln_vendor_name(kiln_vendor vendor);

/*! kiln_device_info :
 * One device as the driver describes it. Strings are never NULL; a property
 * the driver would not report reads as "" or 0 (kiln_device_property() has
 * every property, with the reason). Owned by the runtime or the device list
 * that found it; valid until that is destroyed. */
typedef struct kiln_device_info {
  unsigned platform_index; /* position in the ICD loader's platform list */
  unsigned device_index;   /* position in that platform's device list */
  const char *platform_name;
  const char *platform_vendor;
  const char *platform_version; /* "OpenCL 3.0 PoCL ..." */
  const char *name;
  const char *vendor;
  const char *version; /* "OpenCL 1.2 ..." */
  const char *driver_version;
  const char *opencl_c_version;
  const char *extensions; /* space-separated */
  uint64_t type;          /* kiln_device_type bits */
  uint32_t vendor_id;
  uint32_t compute_units;
  uint32_t clock_mhz;
  uint64_t global_mem_bytes;
  uint64_t max_alloc_bytes;
  uint64_t local_mem_bytes;
  uint64_t max_work_group_size;
  int available;                      /* CL_DEVICE_AVAILABLE */
  int compiler_available;             /* CL_DEVICE_COMPILER_AVAILABLE */
  int has_fp64;                       /* double precision arithmetic */
  int has_fp16;                       /* cl_khr_fp16 arithmetic; half storage
                                   (vload_half) works on every device */
  uint32_t native_vector_width_float; /* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT */
  int host_unified_memory;            /* CL_DEVICE_HOST_UNIFIED_MEMORY */
  uint32_t arch_major;                /* NVIDIA compute capability or AMD GFX IP */
  uint32_t arch_minor;                /*   version; 0 when the driver has none */
  /* Derived by kiln from the above: */
  kiln_vendor vendor_family;
  int integrated;          /* shares the host's memory: an integrated
                                   GPU, or a CPU device */
  int is_simulator;        /* simulates a device (Oclgrind): correct but
                                   far slower; never picked unless asked */
  unsigned opencl_version; /* from `version`: 120 for "OpenCL 1.2" */
  double peak_gflops;      /* estimated fp32 peak; see device.c */
  /* Read from the device like the first fields, added after these so that
   * they keep their places: */
  uint64_t global_mem_cache_bytes; /* CL_DEVICE_GLOBAL_MEM_CACHE_SIZE; on a
                                      CPU device, its last-level cache */
} kiln_device_info;

/*! kiln_device_compare() :
 * kiln's ranking of devices, as a qsort-style comparison: negative when a is
 * the better pick. Keys in order, each deciding only when those before tie:
 *  1. usable: available, with a compiler;
 *  2. not a simulator;
 *  3. the class: discrete GPU, integrated GPU, accelerator, CPU;
 *  4. the estimated fp32 peak (peak_gflops);
 *  5. global memory;
 *  6. the OpenCL version;
 *  7. name, platform name, driver version, device index, platform index.
 * A total order: the platform order the ICD loader happens to use decides
 * only between records identical in everything else. Pure: works on records
 * you fill yourself (then call nothing else on them). */
KILN_API int kiln_device_compare(const kiln_device_info *a, const kiln_device_info *b);

/*! kiln_device_rank_reasons() :
 * Writes why the device ranks where it does into buf, in a few words:
 * "discrete GPU, ~82575 GFLOP/s fp32, 24.0 GiB, OpenCL 3.0", prefixed by
 * "not available", "no compiler" or "simulator" where that holds. Always
 * NUL-terminated when size > 0. @return : buf. */
KILN_API const char *kiln_device_rank_reasons(const kiln_device_info *info, char *buf,
                                              size_t size);

/*! kiln_runtime_device() :
 * @return : the device the runtime runs on. Owned by the runtime; NULL for
 *           rt == NULL. */
KILN_API const kiln_device_info *kiln_runtime_device(const kiln_runtime *rt);

/*! kiln_runtime_device_count() :
 * @return : how many usable devices were found on all platforms (0 for NULL). */
KILN_API size_t kiln_runtime_device_count(const kiln_runtime *rt);

/*! kiln_runtime_device_at() :
 * @return : the i-th device found, in platform then device order, or NULL when
 *           i is out of range. Owned by the runtime. */
KILN_API const kiln_device_info *kiln_runtime_device_at(const kiln_runtime *rt, size_t i);

/*-------------------------------------------------------------------
 * Listing devices without a runtime, and every property, as clinfo
 *-------------------------------------------------------------------*/

/* Opaque: every platform and device, found as kiln_runtime_create() finds
 * them, but without creating a context on any. */
typedef struct kiln_device_list kiln_device_list;

/*! kiln_platform_info :
 * One OpenCL platform. Strings are never NULL. Owned by the list or runtime
 * that found it; valid until that is destroyed. */
typedef struct kiln_platform_info {
  unsigned index;      /* position in the ICD loader's platform list */
  const char *name;    /* CL_PLATFORM_NAME */
  const char *vendor;  /* CL_PLATFORM_VENDOR */
  const char *version; /* CL_PLATFORM_VERSION: "OpenCL 3.0 PoCL ..." */
  size_t device_count; /* devices kiln could read on it */
} kiln_platform_info;

/*! kiln_property :
 * One property of a device or platform, as clinfo reports it. The strings
 * are never NULL and belong to the list or runtime that found the device;
 * valid until that is destroyed. */
typedef struct kiln_property {
  const char *name;  /* the OpenCL name, as `clinfo --raw` prints it:
                        "CL_DEVICE_GLOBAL_MEM_SIZE" */
  const char *label; /* clinfo's human label: "Global memory size" */
  const char *raw;   /* the value as `clinfo --raw` prints it: numbers in
                        decimal, "0x8086" for ids, "CL_TRUE", bitfields as
                        "CL_FP_DENORM | CL_FP_INF_NAN", sizes "4096 4096 4096";
                        "n/a" when not available */
  const char *human; /* as clinfo's report prints it, e.g.
                        "4802110464 (4.472GiB)"; lists of versioned names
                        take one line each; "n/a" when not available */
  const char *why;   /* why it is not available ("needs OpenCL 3.0; the
                        device reports 1.2", "clGetDeviceInfo failed with
                        CL_INVALID_VALUE (-30)"); "" when it is */
  unsigned param;    /* the cl_device_info or cl_platform_info value */
  int available;     /* 0: the device does not support the query (its
                        OpenCL version is too low, it lacks the extension,
                        or the query failed). Never an error. */
} kiln_property;

/*! kiln_device_list_create() :
 * Finds every OpenCL platform and device and reads all their properties,
 * as kiln_runtime_create() does, but creates no context, so listing works
 * on a device that is busy or that kiln could not run on. Every device
 * found is listed: KILN_VISIBLE_DEVICES and KILN_DEVICE do not apply. A
 * platform or device whose required queries fail is left out, with a note
 * in kiln_device_list_diagnostics().
 * @opts : NULL for the defaults; checked as kiln_runtime_create() does.
 * @out  : receives the list, or NULL on failure.
 * @return : KILN_OK, also when there is no platform at all (then the
 *             diagnostics say how to install a driver);
 *           KILN_ERR_INVALID_ARGUMENT (out is NULL), KILN_ERR_INVALID_ENV;
 *           KILN_ERR_OUT_OF_HOST_MEMORY.
 * On failure, kiln_last_error(NULL) tells why. */
KILN_API kiln_status kiln_device_list_create(const kiln_options *opts,
                                             kiln_device_list **out);

/*! kiln_device_list_destroy() :
 * Frees the list, its records and their strings. NULL is ignored.
 * @return : KILN_OK. */
KILN_API kiln_status kiln_device_list_destroy(kiln_device_list *list);

/*! kiln_device_list_count() :
 * @return : how many devices the list holds (0 for NULL). */
KILN_API size_t kiln_device_list_count(const kiln_device_list *list);

/*! kiln_device_list_at() :
 * @return : the i-th device, in platform then device order (the global
 *           index `kiln info --device N` takes), or NULL when list is NULL
 *           or i is out of range. Owned by the list. */
KILN_API const kiln_device_info *kiln_device_list_at(const kiln_device_list *list,
                                                     size_t i);

/*! kiln_device_list_diagnostics() :
 * @return : notes gathered while finding devices, one per line: platforms
 *           or devices left out and why, and how to install a driver when
 *           there is no platform. "" when there are none. Owned by the list;
 *           NULL for list == NULL. */
KILN_API const char *kiln_device_list_diagnostics(const kiln_device_list *list);

/*! kiln_device_list_select() :
 * The device a selector picks from the list, by the grammar of
 * kiln_options.device ("1:0", "2", "gpu", "nvidia,cpu", "name=A770", ...).
 * @index : receives its position in the list (for kiln_device_list_at()).
 * @return : KILN_OK; KILN_ERR_INVALID_DEVICE_SELECTOR when it does not parse
 *           or matches no usable device: kiln_last_error(NULL) says which and
 *           lists the devices; KILN_ERR_INVALID_ARGUMENT for NULL. */
KILN_API kiln_status kiln_device_list_select(const kiln_device_list *list,
                                             const char *selector, size_t *index);

/*! kiln_device_list_platform_count() :
 * @return : how many platforms kiln could read (0 for NULL); a platform
 *           whose name, vendor or version cannot be read is left out. */
KILN_API size_t kiln_device_list_platform_count(const kiln_device_list *list);

/*! kiln_device_list_platform() :
 * @return : the i-th platform read, in the ICD loader's order, or NULL when
 *           list is NULL or i is out of range. Owned by the list. */
KILN_API const kiln_platform_info *kiln_device_list_platform(const kiln_device_list *list,
                                                             size_t i);

/*! kiln_device_platform() :
 * @info : a record kiln returned (kiln_device_list_at(), kiln_runtime_device(),
 *         kiln_runtime_device_at()); not a copy or a record you filled.
 * @return : the platform of the device, owned like the record; NULL for
 *           info == NULL. */
KILN_API const kiln_platform_info *kiln_device_platform(const kiln_device_info *info);

/*! kiln_device_property_count() :
 * @return : how many properties every device has: the rows of kiln's table,
 *           the same for every device (those a device lacks read "n/a"). */
KILN_API size_t kiln_device_property_count(void);

/*! kiln_device_property() :
 * Fills *out with the i-th property of a device, in the order of clinfo's
 * report (the name, the extensions and the vendor come first).
 * @info : a record kiln returned (kiln_device_list_at(), kiln_runtime_device(),
 *         kiln_runtime_device_at()); not a copy or a record you filled.
 * @i    : below kiln_device_property_count().
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for NULL or i out of range
 *           (then *out, when not NULL, is zeroed). A property the device
 *           does not support is KILN_OK with out->available 0. */
KILN_API kiln_status kiln_device_property(const kiln_device_info *info, size_t i,
                                          kiln_property *out);

/*! kiln_platform_property_count() :
 * @return : how many properties every platform has. */
KILN_API size_t kiln_platform_property_count(void);

/*! kiln_platform_property() :
 * Fills *out with the i-th property of a platform; as kiln_device_property().
 * @platform : from kiln_device_list_platform() or kiln_device_platform().
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for NULL or i out of range. */
KILN_API kiln_status kiln_platform_property(const kiln_platform_info *platform, size_t i,
                                            kiln_property *out);

/*====================================================================
 * Buffers
 *====================================================================*/

/* Flags for kiln_buffer_create(). */
#define KILN_BUFFER_ZERO                                                                 \
  1u /* fill the new buffer with zero bytes; without
                               it the contents are whatever the driver gives */

/*! kiln_buffer_create() :
 * Allocates count elements of dtype on the runtime's device, and makes the
 * allocation resident at once, so that a device without the memory says so
 * here rather than at a later launch. Waits for that, not for the queue.
 * @count : at least 1.
 * @flags : 0 or KILN_BUFFER_ZERO.
 * @return : KILN_OK;
 *           KILN_ERR_INVALID_ARGUMENT (NULL, count 0, unknown flags),
 *           KILN_ERR_INVALID_DTYPE, KILN_ERR_OVERFLOW (count * size);
 *           KILN_ERR_OUT_OF_MEMORY when the request exceeds the device's
 *             largest allocation, what is left of its memory or of the
 *             runtime's memory limit, or when the driver fails to allocate
 *             (the message gives the bytes requested and available). */
KILN_API kiln_status kiln_buffer_create(kiln_runtime *rt, kiln_dtype dtype, size_t count,
                                        unsigned flags, kiln_buffer **out);

/*! kiln_buffer_wrap() :
 * Makes a buffer over count elements of host memory (CL_MEM_USE_HOST_PTR).
 * The memory stays the caller's: it must outlive the buffer and be aligned to
 * the element size; its contents are what the device sees at first use.
 * Counted against the memory limit like any buffer, because a discrete GPU
 * may mirror it. Returns the same statuses as kiln_buffer_create().
 * Coherence, as OpenCL defines it: a discrete GPU may work on a copy, so
 *  - what the device writes is in the host array once kiln_buffer_map()
 *    with KILN_MAP_READ returns (the pointer it gives is the host array
 *    itself, and on a CPU device or an integrated GPU the map copies
 *    nothing), or after kiln_buffer_read() into it; before that, after
 *    kiln_finish() alone, the array may still hold the old values;
 *  - what the host writes into the array after the first use reaches the
 *    device only through kiln_buffer_map() with KILN_MAP_WRITE and
 *    kiln_buffer_unmap(), or kiln_buffer_write(). */
KILN_API kiln_status kiln_buffer_wrap(kiln_runtime *rt, kiln_dtype dtype, size_t count,
                                      void *host, kiln_buffer **out);

/*! kiln_buffer_destroy() :
 * Releases the buffer once the commands already enqueued on it have run
 * (and unmaps it first when it is mapped). NULL is ignored.
 * @return : KILN_OK; KILN_ERR_BUSY while views of it are alive (the
 *           buffer is then left as it was). */
KILN_API kiln_status kiln_buffer_destroy(kiln_buffer *buf);

/*! kiln_buffer_view() :
 * A buffer that is elements [offset, offset + count) of buf, without a
 * copy: usable wherever a buffer is (operations, kiln_kernel_set_buffer(),
 * transfers, maps, more views), where its first element is index 0. Writes
 * through either are writes to the same memory. The view holds no memory
 * of its own (it counts as a live buffer of 0 bytes) and must be destroyed,
 * with kiln_buffer_destroy(), before buf. A view of a view is a view of the
 * first buffer. Any offset will do for kiln's own calls, which take the
 * buffer's memory and the offset. Only a cl_mem of the view itself (an
 * OpenCL sub-buffer, made on first use by kiln_buffer_cl_mem() and
 * kiln_kernel_set_buffer()) needs the offset's bytes to be a multiple of
 * the device's base-address alignment (CL_DEVICE_MEM_BASE_ADDR_ALIGN: 128
 * bytes on PoCL, up to 4096 on GPUs); those two refuse a view that is not,
 * and the message gives the multiple to use.
 * @return : KILN_OK; KILN_ERR_OUT_OF_BOUNDS when the range leaves buf;
 *           KILN_ERR_INVALID_ARGUMENT (NULL, count 0). */
KILN_API kiln_status kiln_buffer_view(kiln_buffer *buf, size_t offset, size_t count,
                                      kiln_buffer **out);

/* Flags for kiln_buffer_map(). */
#define KILN_MAP_READ 1u  /* the host reads: the device's data is there */
#define KILN_MAP_WRITE 2u /* the host writes: the device sees it after unmap */

/*! kiln_buffer_map() :
 * Gives the host the whole buffer at *host, after everything enqueued
 * before (it waits): where the device shares host memory (CPU devices,
 * integrated GPUs) this is the buffer's own memory and nothing is copied;
 * elsewhere the driver copies. Until kiln_buffer_unmap(), kiln refuses the
 * buffer to every command (KILN_ERR_INVALID_ARGUMENT: transfers,
 * operations, kiln_kernel_set_buffer()), as OpenCL leaves such use
 * undefined; map a view to give the host part of a buffer.
 * @flags : KILN_MAP_READ, KILN_MAP_WRITE or both.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL, bad flags, mapped
 *           already); KILN_ERR_OPENCL and others of the driver's map. */
KILN_API kiln_status kiln_buffer_map(kiln_buffer *buf, unsigned flags, void **host);

/*! kiln_buffer_unmap() :
 * Ends the map that gave host (enqueued: commands enqueued after it see
 * what the host wrote); host must not be used after.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT when host is not where buf
 *           is mapped. */
KILN_API kiln_status kiln_buffer_unmap(kiln_buffer *buf, void *host);

/* Getters: 0 or KILN_DTYPE 0 / NULL for buf == NULL. */
KILN_API kiln_dtype kiln_buffer_dtype(const kiln_buffer *buf);
KILN_API size_t kiln_buffer_count(const kiln_buffer *buf); /* elements */
KILN_API size_t kiln_buffer_bytes(const kiln_buffer *buf);
KILN_API kiln_runtime *kiln_buffer_runtime(const kiln_buffer *buf);

/* Transfers. Offsets and counts are in elements of the buffer's dtype; the
 * range [offset, offset + count) must lie in the buffer (KILN_ERR_OUT_OF_BOUNDS
 * otherwise, also for count 0 with offset beyond the end). An empty range
 * inside the buffer does nothing and succeeds, and its host pointer may be
 * NULL; otherwise host pointers must not be NULL. */

/*! kiln_buffer_write() : copies count elements from src into the buffer and
 * returns when src may be reused. */
KILN_API kiln_status kiln_buffer_write(kiln_buffer *buf, size_t offset, size_t count,
                                       const void *src);

/*! kiln_buffer_write_async() : enqueues the copy and returns at once; src
 * must stay unchanged until kiln_finish(). */
KILN_API kiln_status kiln_buffer_write_async(kiln_buffer *buf, size_t offset,
                                             size_t count, const void *src);

/*! kiln_buffer_read() : copies count elements from the buffer into dst,
 * after everything enqueued before it, and returns when dst holds them. */
KILN_API kiln_status kiln_buffer_read(const kiln_buffer *buf, size_t offset, size_t count,
                                      void *dst);

/*! kiln_buffer_read_async() : enqueues the copy and returns at once; dst holds
 * the data after kiln_finish(). */
KILN_API kiln_status kiln_buffer_read_async(const kiln_buffer *buf, size_t offset,
                                            size_t count, void *dst);

/*! kiln_buffer_copy() : enqueues a device-side copy of count elements from
 * src into dst. Both must have the same dtype (KILN_ERR_INVALID_DTYPE) and
 * runtime (KILN_ERR_WRONG_RUNTIME); overlapping ranges of one buffer are
 * refused (KILN_ERR_INVALID_ARGUMENT). */
KILN_API kiln_status kiln_buffer_copy(kiln_buffer *dst, size_t dst_offset,
                                      const kiln_buffer *src, size_t src_offset,
                                      size_t count);

/*! kiln_buffer_fill() : enqueues setting count elements to *value, one element
 * of the buffer's dtype (e.g. a float for KILN_F32, two for KILN_C32). */
KILN_API kiln_status kiln_buffer_fill(kiln_buffer *buf, size_t offset, size_t count,
                                      const void *value);

/*====================================================================
 * Streams and events
 *====================================================================*/

/* A runtime runs its work on one in-order queue. A stream is another queue
 * of the same runtime, on the model of CUDA's streams: work on two streams
 * may run at the same time (a transfer on one beside a kernel on the
 * other), and buffers are usable from every stream of their runtime.
 *
 *   kiln_stream *copy;  kiln_event *ready;
 *   kiln_stream_create(rt, &copy);
 *   kiln_stream_use(rt, copy);            // this thread's calls on rt: copy
 *   kiln_buffer_write_async(next, 0, n, host);
 *   kiln_event_record(rt, &ready);        // the point copy has reached
 *   kiln_stream_use(rt, NULL);            // back to the runtime's queue
 *   kiln_gemm(rt, &d, a, b, c);           // runs while `next` goes in
 *   kiln_stream_wait_event(rt, ready);    // later work waits for the copy
 *   kiln_gemm(rt, &d, next, b, c2);
 *
 * The binding is per thread: kiln_stream_use() changes where the calling
 * thread's later calls on rt go (every call that enqueues: operations,
 * transfers, fills, copies, kernel launches, maps), and nothing for other
 * threads. Ordering between streams is yours, through events, as in CUDA;
 * kiln keeps its own state safe across streams (its memory pool reuses a
 * block only after every queue has passed its release; an FFT plan's run
 * on another stream waits for its last run). kiln_finish() waits for all
 * streams. Destroy streams before their runtime (KILN_ERR_BUSY). */

typedef struct kiln_stream kiln_stream;
typedef struct kiln_event kiln_event;

/*! kiln_stream_create() :
 * A new in-order queue of the runtime's device, with profiling.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL); KILN_ERR_OPENCL. */
KILN_API kiln_status kiln_stream_create(kiln_runtime *rt, kiln_stream **out);

/*! kiln_stream_destroy() :
 * Waits for the stream's work, then releases it (and unbinds it from the
 * calling thread; no other thread may still use it). NULL is ignored.
 * Failures of its commands go to kiln_finish(). @return : KILN_OK. */
KILN_API kiln_status kiln_stream_destroy(kiln_stream *s);

/*! kiln_stream_use() :
 * Sends the calling thread's later calls on rt to stream s, or to the
 * runtime's queue for NULL. A thread may have streams bound on up to 8
 * runtimes at once.
 * @return : KILN_OK; KILN_ERR_WRONG_RUNTIME (s is another runtime's);
 *           KILN_ERR_UNSUPPORTED (a ninth runtime). */
KILN_API kiln_status kiln_stream_use(kiln_runtime *rt, kiln_stream *s);

/*! kiln_stream_finish() : waits for the work enqueued on s so far. */
KILN_API kiln_status kiln_stream_finish(kiln_stream *s);

/*! kiln_event_record() :
 * An event that completes when everything the calling thread's queue of rt
 * (its bound stream, or the runtime's) holds now has finished: record it
 * after an operation or a transfer to wait for that one alone.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL); KILN_ERR_OPENCL. */
KILN_API kiln_status kiln_event_record(kiln_runtime *rt, kiln_event **out);

/*! kiln_stream_wait_event() :
 * Makes later work on the calling thread's queue of rt wait for ev (of any
 * stream of rt), without the host waiting. */
KILN_API kiln_status kiln_stream_wait_event(kiln_runtime *rt, const kiln_event *ev);

/*! kiln_event_wait() :
 * Waits on the host for ev. @return : KILN_OK, or the failure of a command
 * before it (KILN_ERR_OUT_OF_MEMORY, KILN_ERR_OPENCL ...). */
KILN_API kiln_status kiln_event_wait(const kiln_event *ev);

/*! kiln_event_query() :
 * *done = 1 when ev has completed, 0 while work before it runs; does not
 * wait. */
KILN_API kiln_status kiln_event_query(const kiln_event *ev, int *done);

/*! kiln_event_elapsed() :
 * Milliseconds of device time from start to end, two completed events
 * (cudaEventElapsedTime): record one before and one after the work to time.
 * @return : KILN_OK; KILN_ERR_BUSY when one has not completed yet. */
KILN_API kiln_status kiln_event_elapsed(const kiln_event *start, const kiln_event *end,
                                        double *ms);

/*! kiln_event_destroy() : NULL is ignored. @return : KILN_OK. */
KILN_API kiln_status kiln_event_destroy(kiln_event *ev);

/*====================================================================
 * Kernels
 *====================================================================*/

/* Your own OpenCL C kernels, without the OpenCL setup:
 *
 *   kiln_program *p;  kiln_kernel *k;
 *   kiln_program_create(rt, source, NULL, &p);
 *   kiln_kernel_create(p, "saxpy", &k);
 *   kiln_kernel_set_args(k, "fbbi", 2.0, x, y, n);
 *   kiln_kernel_launch(k, 1, (size_t[]){n}, NULL);
 *
 * Programs are compiled for the runtime's device and kept in kiln's on-disk
 * cache (see kiln_options.cache_dir), so a second process loads the binary
 * instead of compiling. A kernel object holds its arguments: use one from one
 * thread at a time. Programs and kernels must be destroyed before their
 * runtime (KILN_ERR_BUSY otherwise). */

typedef struct kiln_program kiln_program;
typedef struct kiln_kernel kiln_kernel;

/*! kiln_program_create() :
 * Builds a program from OpenCL C source (NUL-terminated) with build options
 * (NULL for none), e.g. "-DN=4 -cl-fast-relaxed-math".
 * @return : KILN_OK; KILN_ERR_BUILD when it does not compile: then
 *           kiln_last_error(rt) holds the options and the whole build log;
 *           KILN_ERR_INVALID_ARGUMENT; KILN_ERR_OPENCL. */
KILN_API kiln_status kiln_program_create(kiln_runtime *rt, const char *source,
                                         const char *options, kiln_program **out);

/*! kiln_program_create_file() :
 * The same from a file. KILN_ERR_IO when it cannot be read (the message
 * gives the path and the system's reason). */
KILN_API kiln_status kiln_program_create_file(kiln_runtime *rt, const char *path,
                                              const char *options, kiln_program **out);

/*! kiln_program_destroy() : NULL is ignored. @return : KILN_OK. */
KILN_API kiln_status kiln_program_destroy(kiln_program *program);

/*! kiln_program_build_log() :
 * @return : the compiler's messages (warnings) of a successful build, "" when
 *           it said nothing or the binary came from the cache. Owned by the
 *           program. */
KILN_API const char *kiln_program_build_log(const kiln_program *program);

/*! kiln_kernel_create() :
 * The kernel `name` of the program. KILN_ERR_INVALID_ARGUMENT when the
 * program has no such kernel (the message lists the kernels it has). */
KILN_API kiln_status kiln_kernel_create(kiln_program *program, const char *name,
                                        kiln_kernel **out);

/*! kiln_kernel_destroy() : NULL is ignored. @return : KILN_OK. */
KILN_API kiln_status kiln_kernel_destroy(kiln_kernel *kernel);

/*! kiln_kernel_set_arg() : sets argument `index` to `size` bytes at value
 * (a scalar, vector or struct), or local memory of `size` bytes when value
 * is NULL. kiln_kernel_set_buffer() sets it to a buffer of the same runtime.
 * Programs are built with -cl-kernel-arg-info, and each argument is checked
 * against the kernel's declaration before OpenCL sees it: an index past the
 * last argument, a value for a __local argument or local memory for another,
 * a buffer for a value or a value for a pointer, a scalar or vector of the
 * wrong size. KILN_ERR_INVALID_ARGUMENT, and the message names the argument
 * by index and name, its declared type, and what was given ("argument 3
 * (n: int) of saxpy: given float of 8 bytes ..."). Where the driver keeps no
 * argument information (some cached binaries) the index is checked, and
 * OpenCL's own errors come back as KILN_ERR_OPENCL. A buffer of any dtype
 * may go to any __global or __constant pointer; a view goes as its
 * sub-buffer (kiln_buffer_view() says when one can be made). */
KILN_API kiln_status kiln_kernel_set_arg(kiln_kernel *kernel, unsigned index, size_t size,
                                         const void *value);
KILN_API kiln_status kiln_kernel_set_buffer(kiln_kernel *kernel, unsigned index,
                                            const kiln_buffer *buffer);

/*! kiln_kernel_set_args() :
 * Sets arguments 0, 1, ... from a format, one letter each:
 *   b  kiln_buffer *        f  float (pass a double, as C promotes)
 *   i  int32_t              d  double
 *   u  uint32_t             l  int64_t
 *   L  uint64_t             z  size_t, sent as a ulong
 * e.g. kiln_kernel_set_args(k, "fbbi", 2.0, x, y, n). KILN_ERR_INVALID_ARGUMENT
 * for another letter, and for a letter whose type is not the scalar the
 * kernel declares ('f' for an int: the message gives the letter to use);
 * the checks of kiln_kernel_set_arg() besides. */
KILN_API kiln_status kiln_kernel_set_args(kiln_kernel *kernel, const char *format, ...);

/*! kiln_kernel_launch() :
 * Enqueues the kernel over `dims` (1 to 3) dimensions of global work-items;
 * local gives the work-group size, or NULL for the driver's choice. With
 * local, each global size must be a multiple of it. Every argument must have
 * been set: KILN_ERR_INVALID_ARGUMENT names the first that was not. Returns
 * without waiting; kiln_finish() reports failures on the device. */
KILN_API kiln_status kiln_kernel_launch(kiln_kernel *kernel, unsigned dims,
                                        const size_t *global, const size_t *local);

/*! kiln_elementwise_create() :
 * A kernel from an expression, in the spirit of PyOpenCL's
 * ElementwiseKernel and ArrayFire's JIT:
 *
 *   kiln_elementwise *relu;
 *   kiln_elementwise_create(rt, "float *y, const float *x, float a, float b",
 *                           "y = max(a * x + b, 0)", &relu);
 *   kiln_elementwise_run(relu, n, y, x, 2.0, 1.0);   // y[i] for i < n
 *
 * @args : the arguments, as C declarations separated by commas: buffers
 *         `[const] TYPE *NAME` of float, double, int, long, half, float2
 *         (complex64) or double2 (complex128) elements, and scalars
 *         `TYPE NAME` of float, double, int, uint, long or ulong; no name
 *         may be i or n.
 * @expr : OpenCL C statements for each index i in [0, n). A buffer's name
 *         alone stands for its element i ("y = a * x"); with an index it is
 *         left as written ("y[i] = x[i + 1]"). Without any index (the short
 *         form), integer literals take the first buffer's element type, so
 *         max(v, 0) works on floats. OpenCL C's built-ins are there (exp,
 *         tanh, fma, ...).
 * The kernel is generated once, built like kiln_program_create() (and so
 * kept in the binary cache for the next process), and run by
 * kiln_elementwise_run() over any length.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for a declaration kiln does
 *           not take (the message says which and what it takes);
 *           KILN_ERR_BUILD when the expression does not compile (the
 *           message holds the generated kernel and the build log). */
typedef struct kiln_elementwise kiln_elementwise;
KILN_API kiln_status kiln_elementwise_create(kiln_runtime *rt, const char *args,
                                             const char *expr, kiln_elementwise **out);

/*! kiln_elementwise_run() :
 * Enqueues the expression over i in [0, n), with the arguments in the
 * order declared: a kiln_buffer * for each buffer (of the declared
 * element type, holding at least n elements), a double for float and
 * double, int32_t, uint32_t, int64_t or uint64_t for the integers. Safe
 * from several threads (runs of one object take turns). n == 0 does
 * nothing.
 * @return : KILN_OK; KILN_ERR_INVALID_DTYPE, KILN_ERR_OUT_OF_BOUNDS,
 *           KILN_ERR_WRONG_RUNTIME for a buffer (named by its argument);
 *           otherwise kiln_kernel_launch()'s. */
KILN_API kiln_status kiln_elementwise_run(kiln_elementwise *ew, size_t n, ...);

/*! kiln_elementwise_run_values() :
 * kiln_elementwise_run() with the arguments in an array, for a caller that
 * builds the call at run time (a language binding): values[j] for argument
 * j, a buffer in .buffer, a float or double in .real, an integer in
 * .integer (a uint or ulong as its bits). The same checks and returns. */
typedef struct kiln_elementwise_value {
  const kiln_buffer *buffer;
  double real;
  int64_t integer;
} kiln_elementwise_value;
KILN_API kiln_status kiln_elementwise_run_values(kiln_elementwise *ew, size_t n,
                                                 const kiln_elementwise_value *values);

/*! kiln_elementwise_destroy() : NULL is ignored. @return : KILN_OK. */
KILN_API kiln_status kiln_elementwise_destroy(kiln_elementwise *ew);

/*! kiln_cache_usage : what the kernel cache did for this runtime. */
typedef struct kiln_cache_usage {
  /* Set by kiln_cache_usage_init(): see "A header that can grow". */
  size_t struct_size;
  const char *dir;          /* the cache folder, or NULL when the cache is off */
  uint64_t compiles;        /* programs compiled from source */
  uint64_t hits;            /* programs loaded from the cache */
  uint64_t misses;          /* looked for and not there */
  uint64_t stores;          /* entries written */
  uint64_t rejected;        /* entries found corrupt, foreign or refused by the
                         driver: deleted and rebuilt */
  uint64_t untrusted;       /* entries left alone, neither loaded nor deleted, as
                         kiln does not trust them: links, not regular files,
                         another user's, writable by others (by loads and by
                         kiln_cache_contents() and kiln_cache_clear()) */
  char untrusted_note[256]; /* why the last of those was left alone, or "" */
  int shared;               /* the folder is a team cache (kiln_options.cache_shared) */
  const char *binaries_off; /* why kiln keeps no binaries of its own though dir is
                         set: the driver caches its builds itself (KILN_CACHE=1
                         keeps them); NULL when it keeps them */
} kiln_cache_usage;

/*! kiln_cache_usage_init() :
 * Zeroes *usage and sets struct_size, as kiln needs before it fills one.
 * NULL is ignored. Inline. */
static inline void kiln_cache_usage_init(kiln_cache_usage *usage)
{
  KILN__INIT(usage);
}

/*! kiln_cache_stats() : fills *out, which kiln_cache_usage_init() set up;
 * dir is owned by the runtime.
 * @return : KILN_OK, or KILN_ERR_INVALID_ARGUMENT for NULL or an
 *           out->struct_size of 0. */
KILN_API kiln_status kiln_cache_stats(kiln_runtime *rt, kiln_cache_usage *out);

/*! kiln_cache_contents() :
 * Counts the entries in the runtime's cache folder and their bytes; entries
 * kiln does not trust are not counted here but in kiln_cache_usage.untrusted.
 * @return : KILN_OK (zeros when the cache is off); KILN_ERR_IO when the
 *           folder cannot be read. */
KILN_API kiln_status kiln_cache_contents(kiln_runtime *rt, uint64_t *entries,
                                         uint64_t *bytes);

/*! kiln_cache_clear() :
 * Deletes every entry of the runtime's cache folder (and temporary files
 * left by a writer that died), for every device: the folder is shared.
 * Entries kiln does not trust are left alone (they are not kiln's), and
 * counted in kiln_cache_usage.untrusted.
 * *removed (may be NULL) gets how many files went.
 * @return : KILN_OK; KILN_ERR_IO when the folder cannot be read or an entry
 *           cannot be deleted (the message names it). */
KILN_API kiln_status kiln_cache_clear(kiln_runtime *rt, uint64_t *removed);

/*====================================================================
 * Operations
 *====================================================================*/

/*! kiln_layout, kiln_transpose : how a matrix is stored, and whether an
 * operation uses it or its transpose. */
typedef enum kiln_layout { KILN_ROW_MAJOR = 0, KILN_COL_MAJOR = 1 } kiln_layout;
typedef enum kiln_transpose { KILN_NO_TRANS = 0, KILN_TRANS = 1 } kiln_transpose;

/*! kiln_bias, kiln_activation : an operation's epilogue, applied to each
 * output as it is stored, in the same kernel: y = act(y + bias), as
 * cuBLASLt's and oneDNN's. */
typedef enum kiln_bias {
  KILN_BIAS_NONE = 0,
  KILN_BIAS_ROW = 1, /* bias[i] added to row i of C: m values */
  KILN_BIAS_COL = 2  /* bias[j] added to column j of C: n values */
} kiln_bias;
typedef enum kiln_activation {
  KILN_ACTIVATION_NONE = 0,
  KILN_ACTIVATION_RELU = 1,    /* max(x, 0) */
  KILN_ACTIVATION_GELU = 2,    /* x/2 (1 + erf(x / sqrt 2)), the exact form */
  KILN_ACTIVATION_SIGMOID = 3, /* 1 / (1 + exp(-x)) */
  KILN_ACTIVATION_TANH = 4
} kiln_activation;

/*! kiln_activation_name() :
 * @return : "none", "relu", "gelu", "sigmoid", "tanh", or "invalid". Static. */
KILN_API const char *kiln_activation_name(kiln_activation act);

/*! kiln_gemm_desc :
 * C = alpha * op(A) * op(B) + beta * C, with op(A) m x k, op(B) k x n and C
 * m x n, for `batch` products at once. Set by kiln_gemm_desc_init(), then
 * change what differs. Sizes, offsets and strides are in elements. */
typedef struct kiln_gemm_desc {
  /* Set by kiln_gemm_desc_init(): see "A header that can grow". */
  size_t struct_size;
  kiln_dtype dtype;   /* KILN_F32; KILN_F64 on devices with fp64; KILN_F16
                           storage, accumulated in float32 on every device */
  kiln_layout layout; /* of all three matrices */
  kiln_transpose trans_a, trans_b;
  size_t m, n, k;
  double alpha, beta;                  /* beta = 0: C is not read, as in BLAS */
  size_t lda, ldb, ldc;                /* leading dimensions; 0: packed (the row length in
                           row-major storage, the column length otherwise) */
  size_t offset_a, offset_b, offset_c; /* where the first matrix starts */
  size_t batch;                        /* products; 0 counts as 1 */
  size_t stride_a, stride_b, stride_c; /* between the batch's matrices;
                                          0: packed, one after another */
  kiln_backend backend;                /* KILN_BACKEND_AUTO: the runtime's choice
                           (kiln_options.gemm_backend, KILN_GEMM_BACKEND),
                           else kiln's rules */
  /* The epilogue: C = act(alpha * op(A) * op(B) + beta * C + bias), in the
   * kernel that computes the product (CLBlast, which cannot fuse, gets a
   * second pass over C; float16 storage then rounds twice). Row and column
   * are C's as the layout says, whatever the transposes. */
  kiln_bias bias;                 /* KILN_BIAS_NONE: no bias */
  kiln_activation activation;     /* KILN_ACTIVATION_NONE: none */
  const kiln_buffer *bias_buffer; /* kiln_gemm(): the bias, of dtype, m values
                                     (ROW) or n (COL) from offset_bias */
  const void *bias_host;          /* kiln_gemm_host(): the same, on the host */
  size_t offset_bias;
  size_t stride_bias; /* between the batch's bias vectors; 0: one for all */
} kiln_gemm_desc;

/*! kiln_gemm_desc_init() :
 * Row-major, no transposes, alpha 1, beta 0, packed, one product, backend
 * AUTO, and struct_size. NULL is ignored. Inline. */
static inline void kiln_gemm_desc_init(kiln_gemm_desc *desc, kiln_dtype dtype, size_t m,
                                       size_t n, size_t k)
{
  if (!KILN__INIT(desc))
    return;
  desc->dtype = dtype;
  desc->m = m;
  desc->n = n;
  desc->k = k;
  desc->alpha = 1.0;
}

/*! kiln_gemm() :
 * Enqueues the product on buffers of the runtime; returns without waiting.
 * @return : KILN_OK;
 *           KILN_ERR_INVALID_ARGUMENT (NULL, a zero size, a leading dimension
 *             smaller than its matrix's rows or columns, overlapping batch
 *             strides), KILN_ERR_INVALID_DTYPE (a buffer of another type),
 *             KILN_ERR_OUT_OF_BOUNDS (a buffer too small: the message gives
 *             the elements needed and held), KILN_ERR_WRONG_RUNTIME,
 *             KILN_ERR_UNSUPPORTED (float64 without fp64; a backend that is
 *             not built in or cannot do this request: the message says why),
 *             KILN_ERR_OUT_OF_MEMORY (kiln's packing workspace, or
 *             CLBlast's, does not fit: the message names the workspace and
 *             its bytes), KILN_ERR_BUILD. */
KILN_API kiln_status kiln_gemm(kiln_runtime *rt, const kiln_gemm_desc *desc,
                               const kiln_buffer *a, const kiln_buffer *b,
                               kiln_buffer *c);

/*! kiln_gemm_host() :
 * The same product on host memory: a, b and c are the caller's arrays laid
 * out as the descriptor says (offsets count from them). kiln copies them to
 * the device in panels that fit its largest allocation and the runtime's
 * memory budget, so problems larger than the device work; it returns when c
 * holds the result. KILN_ERR_OUT_OF_MEMORY, naming the device block and its
 * bytes, when not even one panel fits; otherwise the statuses of
 * kiln_gemm(). */
KILN_API kiln_status kiln_gemm_host(kiln_runtime *rt, const kiln_gemm_desc *desc,
                                    const void *a, const void *b, void *c);

/*! kiln_reduce_op : what kiln_reduce() computes. */
typedef enum kiln_reduce_op {
  KILN_REDUCE_SUM = 1,
  KILN_REDUCE_MEAN = 2,
  KILN_REDUCE_MIN = 3,
  KILN_REDUCE_MAX = 4,
  KILN_REDUCE_ARGMIN = 5,
  KILN_REDUCE_ARGMAX = 6,
  KILN_REDUCE_NORM2 = 7 /* sqrt of the sum of squares */
} kiln_reduce_op;

/*! kiln_reduce_op_name() :
 * @return : "sum", "mean", "min", "max", "argmin", "argmax", "norm", or
 *           "invalid". Static. */
KILN_API const char *kiln_reduce_op_name(kiln_reduce_op op);

/* kiln_reduce_desc.axis for a reduction of every element. */
#define KILN_AXIS_ALL INT32_MIN

/*! kiln_reduce_desc :
 * A reduction over a contiguous C-order view of the input buffer. Set by
 * kiln_reduce_desc_init(), then change what differs. */
typedef struct kiln_reduce_desc {
  /* Set by kiln_reduce_desc_init(): see "A header that can grow". */
  size_t struct_size;
  kiln_reduce_op op;
  kiln_dtype dtype;                  /* of the input: KILN_F32, KILN_F64 (with fp64),
                           KILN_F16, KILN_I32 */
  unsigned ndim;                     /* 1 to KILN_ARRAY_MAX_DIMS */
  size_t shape[KILN_ARRAY_MAX_DIMS]; /* the view; a 0 makes it empty */
  int32_t axis;                      /* the axis to reduce along, 0 .. ndim-1, or negative
                           from the end as numpy counts (-1: the last);
                           KILN_AXIS_ALL: every element, one result */
  size_t offset;                     /* elements before the view in the input buffer */
  kiln_backend backend;              /* AUTO (kiln's kernels), KILN_BACKEND_KILN, or
                           KILN_BACKEND_CLBLAST where CLBlast applies: float
                           sums and norms of every element */
} kiln_reduce_desc;

/*! kiln_reduce_desc_init() :
 * A reduction of every one of `count` elements (a 1-D view), backend AUTO,
 * and struct_size. NULL is ignored. Inline. */
static inline void kiln_reduce_desc_init(kiln_reduce_desc *desc, kiln_reduce_op op,
                                         kiln_dtype dtype, size_t count)
{
  if (!KILN__INIT(desc))
    return;
  desc->op = op;
  desc->dtype = dtype;
  desc->ndim = 1;
  desc->shape[0] = count;
  desc->axis = KILN_AXIS_ALL;
}

/*! kiln_reduce_out_dtype() :
 * The type of the results, as numpy gives it:
 *   sum:            float16, float32 -> float32 (accumulated in float64 where
 *                   the device has it, else compensated float32); float64 ->
 *                   float64; int32 -> int64 (exact)
 *   mean, norm:     float16, float32 -> float32; float64, int32 -> float64
 *   min, max:       the input's type
 *   argmin, argmax: int64, the first index of the extreme
 * @return : 0 (not a kiln_dtype) for a pair kiln_reduce() refuses. */
KILN_API kiln_dtype kiln_reduce_out_dtype(kiln_reduce_op op, kiln_dtype in);

/*! kiln_reduce() :
 * Enqueues the reduction of `in` into `out`, which holds
 * kiln_reduce_out_dtype() elements: one for KILN_AXIS_ALL, else one per
 * position of the other axes, in C order (the view's shape without `axis`).
 * NaN propagates through sum, mean, norm, min and max, as in numpy; argmin
 * and argmax return the first NaN's index, then the first extreme's. An
 * empty reduction gives the identity: sum and norm 0, mean NaN; min, max,
 * argmin and argmax of nothing are KILN_ERR_INVALID_ARGUMENT, as numpy's
 * ValueError. Inputs larger than the device's largest allocation are
 * reduced by kiln_reduce_host() in chunks.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (op, axis, ndim, shape),
 *           KILN_ERR_INVALID_DTYPE (in or out of another type),
 *           KILN_ERR_OUT_OF_BOUNDS (a buffer too small: elements needed and
 *           held), KILN_ERR_UNSUPPORTED (float64 without fp64; a backend that
 *           cannot), KILN_ERR_OUT_OF_MEMORY (the partials' workspace,
 *           named in the message), KILN_ERR_WRONG_RUNTIME, KILN_ERR_BUILD. */
KILN_API kiln_status kiln_reduce(kiln_runtime *rt, const kiln_reduce_desc *desc,
                                 const kiln_buffer *in, kiln_buffer *out);

/*! kiln_reduce_host() :
 * The same on the caller's host arrays (offset counts from `in`): the input
 * goes to the device in chunks that fit its largest allocation and the
 * memory budget, and the chunks' results are combined exactly as one pass
 * would (partial sums in float64 or compensated float32, first indices kept).
 * Returns when `out` holds the result. KILN_ERR_OUT_OF_MEMORY, naming the
 * device piece, when not even the smallest piece fits; otherwise the
 * statuses of kiln_reduce(). */
KILN_API kiln_status kiln_reduce_host(kiln_runtime *rt, const kiln_reduce_desc *desc,
                                      const void *in, void *out);

/*! kiln_tensor_layout : how a batch of images is stored. */
typedef enum kiln_tensor_layout {
  KILN_NCHW = 0, /* x[n][c][h][w]; weights [k][c/groups][r][s] */
  KILN_NHWC = 1  /* x[n][h][w][c]; weights [k][r][s][c/groups] */
} kiln_tensor_layout;

/*! kiln_conv2d_desc :
 * y = relu?(conv(x, weights) + bias), conv being the cross-correlation of
 * deep-learning frameworks (the filter is not flipped): n images of c
 * channels, h x w, into
 * k channels of p x q, where p = (h + pad_top + pad_bottom - dilation_h *
 * (r - 1) - 1) / stride_h + 1 and q likewise. Set by kiln_conv2d_desc_init(),
 * then change what differs. Zero means the default where one is given. */
typedef struct kiln_conv2d_desc {
  /* Set by kiln_conv2d_desc_init(): see "A header that can grow". */
  size_t struct_size;
  kiln_dtype dtype;          /* KILN_F32; KILN_F64 with fp64; KILN_F16 storage
                               with float32 accumulation */
  kiln_tensor_layout layout; /* of x, weights and y */
  size_t n, c, h, w;         /* the input */
  size_t k, r, s;            /* output channels; the filter's height, width */
  size_t stride_h, stride_w; /* 0: 1 */
  size_t pad_top, pad_bottom, pad_left, pad_right; /* zeros around x */
  size_t dilation_h, dilation_w;                   /* 0: 1 */
  size_t groups;              /* 0: 1; c and k must divide by it; c: depthwise */
  int relu;                   /* non-zero: y = max(y, 0) after the bias */
  kiln_backend backend;       /* AUTO, IM2COL, DIRECT, or CLBLAST (convgemm,
                               where it applies) */
  kiln_activation activation; /* after the bias, in the kernel that writes y;
                                 relu non-zero is KILN_ACTIVATION_RELU */
} kiln_conv2d_desc;

/*! kiln_conv2d_desc_init() :
 * NCHW, stride 1, no padding, dilation 1, one group, no ReLU, AUTO, and
 * struct_size. NULL is ignored. Inline. */
static inline void kiln_conv2d_desc_init(kiln_conv2d_desc *desc, kiln_dtype dtype,
                                         size_t n, size_t c, size_t h, size_t w, size_t k,
                                         size_t r, size_t s)
{
  if (!KILN__INIT(desc))
    return;
  desc->dtype = dtype;
  desc->n = n;
  desc->c = c;
  desc->h = h;
  desc->w = w;
  desc->k = k;
  desc->r = r;
  desc->s = s;
}

/*! kiln_conv2d_output() :
 * The output's height and width for the descriptor.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT when the filter, dilated, is
 *           larger than the padded input (an output of zero or fewer rows or
 *           columns: the message gives the sizes), or a stride or size is
 *           out of range. For kiln_last_error(NULL). */
KILN_API kiln_status kiln_conv2d_output(const kiln_conv2d_desc *desc, size_t *p,
                                        size_t *q);

/*! kiln_conv2d() :
 * Enqueues the convolution. x holds n*c*h*w elements, weights k*(c/groups)*
 * r*s, bias (NULL for none) k, y n*k*p*q, all of desc->dtype.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (sizes, channels or groups
 *           that do not divide, an empty output); KILN_ERR_INVALID_DTYPE;
 *           KILN_ERR_OUT_OF_BOUNDS (a buffer too small: elements needed and
 *           held); KILN_ERR_UNSUPPORTED (float64 without fp64, a backend that
 *           cannot); KILN_ERR_OUT_OF_MEMORY (im2col's workspace, not even
 *           one panel of an image's rows fits: the message names it and its
 *           bytes); KILN_ERR_WRONG_RUNTIME; KILN_ERR_BUILD. */
KILN_API kiln_status kiln_conv2d(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                                 const kiln_buffer *x, const kiln_buffer *weights,
                                 const kiln_buffer *bias, kiln_buffer *y);

/*! kiln_conv2d_host() :
 * The same convolution on host memory: x, weights, bias (NULL for none) and
 * y are the caller's arrays, laid out and sized as for kiln_conv2d(). The
 * weights and bias stay on the device for the whole call; the batch goes
 * in runs of whole images that fit the device's largest allocation and
 * the runtime's memory budget (with the backend's workspace), and an image
 * that does not fit alone goes in runs of its output rows, each with the
 * input rows they read. Where two runs fit at once, the next one's input
 * is written while the current one computes. Returns when y holds the
 * result, which is the one kiln_conv2d() gives.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (x, weights or y NULL; the
 *           descriptor's, as kiln_conv2d()); KILN_ERR_OUT_OF_MEMORY (the
 *           weights do not fit, or not even one output row of one image
 *           with its input rows: the message names the piece and its bytes,
 *           and what is left); otherwise the statuses of kiln_conv2d(). */
KILN_API kiln_status kiln_conv2d_host(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                                      const void *x, const void *weights,
                                      const void *bias, void *y);

/*! kiln_fft_kind : what the transform takes and gives. */
typedef enum kiln_fft_kind {
  KILN_FFT_C2C = 0, /* complex to complex */
  KILN_FFT_R2C = 1, /* real to the half-spectrum: the last axis n -> n/2 + 1 */
  KILN_FFT_C2R = 2  /* the half-spectrum back to real: n/2 + 1 -> n */
} kiln_fft_kind;

/*! kiln_fft_norm : the scaling, as numpy.fft's `norm`. */
typedef enum kiln_fft_norm {
  KILN_FFT_NORM_BACKWARD = 0, /* forward unscaled, inverse 1/n (the default) */
  KILN_FFT_NORM_ORTHO = 1,    /* both 1/sqrt(n) */
  KILN_FFT_NORM_FORWARD = 2   /* forward 1/n, inverse unscaled */
} kiln_fft_norm;

/*! kiln_fft_desc :
 * batch transforms of a 1-D, 2-D or 3-D C-order shape, one after another in
 * memory. Set by kiln_fft_desc_init(), then change what differs. */
typedef struct kiln_fft_desc {
  /* Set by kiln_fft_desc_init(): see "A header that can grow". */
  size_t struct_size;
  kiln_fft_kind kind;
  kiln_dtype dtype; /* the real type: KILN_F32, or KILN_F64 with fp64;
                           complex data is KILN_C32 / KILN_C64 */
  unsigned ndim;    /* 1 to 3 */
  size_t shape[3];  /* the real-space lengths (for C2R, the output's) */
  size_t batch;     /* 0 counts as 1 */
  int inverse;      /* C2C only: non-zero for the inverse transform */
  kiln_fft_norm norm;
  kiln_backend backend; /* AUTO, KILN_BACKEND_KILN (C2C of power-of-two
                           lengths, up to 2^30 points a transform),
                           KILN_BACKEND_VKFFT or KILN_BACKEND_CLFFT */
} kiln_fft_desc;

/*! kiln_fft_desc_init() :
 * A forward C2C of one 1-D length-n transform of dtype, numpy's scaling,
 * and struct_size. NULL is ignored. Inline. */
static inline void kiln_fft_desc_init(kiln_fft_desc *desc, kiln_dtype dtype, size_t n)
{
  if (!KILN__INIT(desc))
    return;
  desc->kind = KILN_FFT_C2C;
  desc->dtype = dtype;
  desc->ndim = 1;
  desc->shape[0] = n;
  desc->batch = 1;
  desc->norm = KILN_FFT_NORM_BACKWARD;
  desc->backend = KILN_BACKEND_AUTO;
}

/*! kiln_fft() :
 * Enqueues the transforms of `in` into `out` (they may not be the same
 * buffer). C2C: both complex, batch * prod(shape) elements. R2C: in real,
 * out complex with the last axis n/2 + 1. C2R: the reverse. Plans are built
 * once per shape, kind, batch, precision and backend, and kept by the
 * runtime; building one can take long on some drivers, so the first call
 * of a shape is slower. The device memory a plan holds counts against the
 * memory budget (kiln_memory_usage.plan_bytes); kiln_memory_trim(), or a
 * creation that finds no room, releases the plans no call is using, and
 * the next call of their shape builds them again. AUTO picks the backend
 * by kiln's measured rules (on CPUs kiln's own kernels for power-of-two
 * C2C, then VkFFT, then clFFT; on GPUs VkFFT first), goes on to the next
 * when one refuses a length or its plan's memory does not fit, and runs a
 * real transform that none can do as a complex one.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (shape, ndim, kind);
 *           KILN_ERR_INVALID_DTYPE; KILN_ERR_OUT_OF_BOUNDS (buffers too
 *           small: elements needed and held); KILN_ERR_UNSUPPORTED (float64
 *           without fp64; no FFT library built in: the message names the
 *           Debian packages; a backend that cannot do the length);
 *           KILN_ERR_OUT_OF_MEMORY (a plan's scratch or temporary buffer,
 *           or a real transform's complex workspace, named in the message
 *           with its bytes; the runtime stays usable);
 *           KILN_ERR_WRONG_RUNTIME; KILN_ERR_OPENCL. */
KILN_API kiln_status kiln_fft(kiln_runtime *rt, const kiln_fft_desc *desc,
                              const kiln_buffer *in, kiln_buffer *out);

/*! kiln_fft_host() :
 * The same transforms on host memory: in and out are the caller's arrays
 * (two, sized as for kiln_fft()). The batch goes to the device in runs of
 * one size, the largest that fits its largest allocation and the memory
 * budget, and a last shorter run, so that at most two plans are built;
 * where two runs fit at once, the next one's input is written while the
 * current one computes. Returns when out holds the result.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (in or out NULL, or the
 *           same array; the descriptor's, as kiln_fft());
 *           KILN_ERR_OUT_OF_MEMORY (not even one transform fits: the message
 *           gives its bytes and what is left); otherwise the statuses of
 *           kiln_fft(). */
KILN_API kiln_status kiln_fft_host(kiln_runtime *rt, const kiln_fft_desc *desc,
                                   const void *in, void *out);

/*! kiln_convert() :
 * Enqueues dst[i] = src[i] converted to dst's type, for every element. The
 * input comes first, as in every kiln call.
 * Types: KILN_F16, KILN_F32, KILN_F64 (on devices with fp64), KILN_I32 and
 * KILN_I64. To a floating type values round to nearest even (so float32 to
 * float16 rounds as numpy's astype does); to an integer type they round
 * toward zero and saturate, and NaN becomes 0; between integers they
 * saturate. The same type is a copy.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL, different counts);
 *           KILN_ERR_INVALID_DTYPE (a complex type); KILN_ERR_WRONG_RUNTIME;
 *           KILN_ERR_UNSUPPORTED (float64 on a device without fp64);
 *           KILN_ERR_BUILD when kiln's kernel does not build. */
KILN_API kiln_status kiln_convert(const kiln_buffer *src, kiln_buffer *dst);

/*====================================================================
 * Device groups: one call over several devices
 *====================================================================*/

/* A group holds a runtime on each of several devices (every GPU of a
 * workstation, say) and runs one host-array operation over all of them:
 *
 *   kiln_group *g;
 *   kiln_group_create(NULL, &g);              // KILN_DEVICES, or the default
 *   kiln_group_gemm_host(g, &desc, a, b, c);  // rows of C over the devices
 *   kiln_group_destroy(g);
 *
 * The work is cut into chunks (rows of C or whole products, images or
 * bands of their output rows, transforms, parts of a reduction) that each device's thread takes as it
 * has room, sized by that device's speed (measured in this call, learnt
 * from earlier ones, first estimated from its tuning record or its peak):
 * a slow device takes fewer and smaller ones, and one so slow that even
 * the smallest would end after the others are done (a simulator beside
 * real devices) takes none. Each device runs its chunks as a pipeline: the
 * weights (or B) go to it once, and its next chunk moves in while the
 * current one computes (rows of a small batch of GEMMs run each chunk as
 * the device runtime's own kiln_gemm_host()). A device that fails a chunk
 * (a lost device, any OpenCL error) takes no more in that call; the others
 * take the chunks it held, the call succeeds, and kiln_group_diagnostics()
 * says what failed (a pipeline that runs out of device memory goes on a
 * chunk at a time instead). Only when every device fails does the call fail, with each
 * one's reason in kiln_last_error(NULL). The result is the one a single device gives,
 * within its tolerance; a reduction of every element is combined in a
 * fixed order, so it does not depend on which device was faster.
 * Several threads may share a group; its calls then share the devices. */
typedef struct kiln_group kiln_group;

/*! kiln_group_create() :
 * Finds the devices as kiln_runtime_create() does (KILN_VISIBLE_DEVICES
 * applies) and opens a runtime with opts on each device that opts->devices
 * (or KILN_DEVICES) selects; see kiln_options.devices. A device whose
 * runtime cannot be opened is left out, with why in
 * kiln_group_diagnostics(), as is each device not selected.
 * @opts : NULL for the defaults; opts->device is ignored.
 * @out  : receives the group, or NULL on failure.
 * @return : KILN_OK; KILN_ERR_INVALID_DEVICE_SELECTOR (a term does not
 *           parse or matches no usable device); KILN_ERR_NO_DEVICE (no
 *           usable device, or none could be opened: the message says why
 *           for each); KILN_ERR_INVALID_ENV, KILN_ERR_INVALID_ARGUMENT,
 *           KILN_ERR_OUT_OF_HOST_MEMORY. kiln_last_error(NULL) tells why. */
KILN_API kiln_status kiln_group_create(const kiln_options *opts, kiln_group **out);

/*! kiln_group_destroy() :
 * Destroys the group's runtimes and the group. NULL is ignored.
 * @return : KILN_OK; KILN_ERR_BUSY when buffers, programs or streams made on
 *           a runtime of the group (kiln_group_runtime()) are still alive:
 *           the other runtimes are destroyed, that one and the group stay;
 *           destroy what is left and call again. */
KILN_API kiln_status kiln_group_destroy(kiln_group *group);

/*! kiln_group_size() : @return : how many devices the group runs on (0 for
 * NULL). */
KILN_API size_t kiln_group_size(const kiln_group *group);

/*! kiln_group_runtime() :
 * @return : the runtime of the group's i-th device (kiln_runtime_device()
 *           says which device), or NULL when group is NULL or i is out of
 *           range. Owned by the group: do not destroy it. */
KILN_API kiln_runtime *kiln_group_runtime(const kiln_group *group, size_t i);

/*! kiln_group_diagnostics() :
 * Writes into buf, one a line, each device left out of the group and why,
 * then each failure of a device in a call since the group was created or
 * its stats were reset (which call, which device, the status and message).
 * "" when there is none. Always NUL-terminated when size > 0, cut at size.
 * @return : buf. */
KILN_API const char *kiln_group_diagnostics(const kiln_group *group, char *buf,
                                            size_t size);

/*! kiln_group_gemm_host() :
 * kiln_gemm_host() over the group: rows of C, of each product in turn (at
 * least a quarter of a device's even share a chunk, as each chunk sends all
 * of op(B)), or whole products where the batch has at least 4 a device.
 * The arguments and statuses are kiln_gemm_host()'s; the request is checked
 * on the group's first device before any work starts. */
KILN_API kiln_status kiln_group_gemm_host(kiln_group *group, const kiln_gemm_desc *desc,
                                          const void *a, const void *b, void *c);

/*! kiln_group_conv2d_host() :
 * kiln_conv2d_host() over the group, images of the batch to each device;
 * a batch of fewer than 4 images a device is cut into bands of output
 * rows (8 rows or more each, about 4 bands and images a device; not where
 * the padding reaches past the filter), so a batch of 1 runs on every
 * device too. Devices are counted by their tuning record or peak: a
 * simulator beside a real device does not count.
 * Arguments and statuses as there. */
KILN_API kiln_status kiln_group_conv2d_host(kiln_group *group,
                                            const kiln_conv2d_desc *desc, const void *x,
                                            const void *weights, const void *bias,
                                            void *y);

/*! kiln_group_fft_host() :
 * kiln_fft_host() over the group, transforms of the batch to each device.
 * Arguments and statuses as there. */
KILN_API kiln_status kiln_group_fft_host(kiln_group *group, const kiln_fft_desc *desc,
                                         const void *in, void *out);

/*! kiln_group_reduce_host() :
 * kiln_reduce_host() over the group. Along an axis: the positions of the
 * axes before it, in runs (a reduction whose axis is the first runs on one
 * device). Of every element: grains of max(16384, len / (32 x devices))
 * elements, each reduced to one result on some device, combined on the
 * host in grain order as kiln_reduce_host() combines its chunks. Arguments
 * and statuses as there. */
KILN_API kiln_status kiln_group_reduce_host(kiln_group *group,
                                            const kiln_reduce_desc *desc, const void *in,
                                            void *out);

/*! kiln_group_usage :
 * What one device of a group did, since the group was created or
 * kiln_group_stats_reset(). Set up by kiln_group_usage_init(). */
typedef struct kiln_group_usage {
  /* Set by kiln_group_usage_init(): see "A header that can grow". */
  size_t struct_size;
  uint64_t calls;    /* calls it took a chunk in */
  uint64_t chunks;   /* chunks it finished */
  uint64_t units;    /* rows, products, images or bands of an image's
                        output rows, transforms, positions or grains it
                        finished */
  double work;       /* their work: floating-point operations (reductions:
                        bytes read), as kiln estimates them */
  double share;      /* work over the work of all the group's devices */
  double seconds;    /* wall time in its chunks, transfers included */
  uint64_t failures; /* chunks it failed, which others took */
} kiln_group_usage;

/*! kiln_group_usage_init() : zeros and struct_size. NULL is ignored. */
static inline void kiln_group_usage_init(kiln_group_usage *stats)
{
  KILN__INIT(stats);
}

/*! kiln_group_stats() :
 * Fills *out, set up by kiln_group_usage_init(), for the group's i-th
 * device. @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL, i out of
 * range, a struct_size of 0). */
KILN_API kiln_status kiln_group_stats(const kiln_group *group, size_t i,
                                      kiln_group_usage *out);

/*! kiln_group_stats_reset() :
 * Zeros every device's stats and forgets the calls' failures in
 * kiln_group_diagnostics() (not the speeds learnt). @return : KILN_OK;
 * KILN_ERR_INVALID_ARGUMENT for NULL. */
KILN_API kiln_status kiln_group_stats_reset(kiln_group *group);

/*====================================================================
 * Profiling
 *====================================================================*/

/* With kiln_options.profile or KILN_PROFILE=1, every call that enqueues work
 * is recorded: the operations (kiln_gemm(), kiln_conv2d(), kiln_reduce(),
 * kiln_fft(), kiln_convert()), the buffer transfers, copies and fills, and
 * each kiln_kernel_launch(). A record holds the call's name, its backend,
 * its shape, the bytes it moves and the floating-point operations it does,
 * the host time spent in the call, and the OpenCL profiling times (queued,
 * submit, start, end) of every command it enqueued; its device time runs
 * from its first command's start to its last command's end. A call that
 * runs another (conv2d's im2col runs a GEMM, kiln_convert() between equal
 * types a copy) is one record; kiln_gemm_host(), kiln_reduce_host(),
 * kiln_conv2d_host() and kiln_fft_host() are recorded as the transfers and
 * operations they make. Calls that fail, or
 * enqueue nothing, are not recorded.
 *
 * Records are completed from the commands' events once these have finished
 * (kiln_finish() completes all); recording never waits for the device.
 * They are kept until kiln_profile_reset() or kiln_runtime_destroy(), so a
 * long run grows by a few hundred bytes per call. With profiling off a
 * call costs a test of one flag (at its entry, exit and each command).
 *
 * Work a call does that is not the call itself is recorded apart, and is
 * left out of the call's host and device times: building or loading a
 * program (kiln's own cl/ files, the caller's kiln_program_create*(),
 * kiln_elementwise_create()), planning an FFT (VkFFT and clFFT compile
 * their kernels then), and benchmark mode's timing of the candidates. The
 * device time left out is the idle gap the work left between the call's
 * commands, at most the work's host time. Two compiles stay in the call's
 * times, as kiln cannot see them apart: CLBlast's, inside its first call
 * of a routine, and a driver's that finishes a kernel at its first launch
 * (PoCL, for each work-group size, on the device's time). */

/*! kiln_profile_kind :
 * What a row counts (kiln_profile_row.kind). */
typedef enum kiln_profile_kind {
  KILN_PROFILE_CALL = 0,     /* calls: operations, transfers, kernel launches */
  KILN_PROFILE_BUILD = 1,    /* programs compiled from source ("build cl/gemm.cl",
                                "build program saxpy") and FFT plans made
                                ("fft plan 1024 c2c float32") */
  KILN_PROFILE_LOAD = 2,     /* programs loaded from kiln's binary cache
                                ("load cl/gemm.cl") */
  KILN_PROFILE_BENCHMARK = 3 /* benchmark mode's timing ("benchmark gemm") */
} kiln_profile_kind;

/*! kiln_profile_row :
 * The recorded calls of one operation on one backend, summed; or the
 * builds, loads or plans of one program or FFT shape, or benchmark mode's
 * timing of one operation (see kind). Times are in nanoseconds. */
typedef struct kiln_profile_row {
  /* Set by kiln_profile_row_init(): see "A header that can grow". */
  size_t struct_size;
  char op[64];      /* "gemm", "conv2d", "reduce.sum", "fft", "convert",
                         "write", "read", "copy", "fill", or a launched
                         kernel's name (cut to 63 bytes); for the other
                         kinds, what was done: "build cl/fft.cl
                         kiln_fft_r2_f32" (a kernel's program),
                         "load cl/fft.cl ...", "fft plan 1024 c2c
                         float32", "benchmark gemm" */
  char backend[16]; /* kiln_backend_name() of the backend that ran it;
                         "opencl" for transfers, copies, fills and the
                         programs built or loaded, "user" for
                         kiln_kernel_launch(), "all" for benchmark mode */
  uint64_t calls;
  uint64_t total_ns;       /* device time, summed over the calls; for a build
                         or load, its host time (the compiler runs on the
                         host). 0, with min, max, rates and shares, where
                         the driver's timestamps are no clock (Mesa 22's
                         rusticl): kiln_runtime_diagnostics() says so */
  uint64_t min_ns, max_ns; /* the shortest and longest call */
  uint64_t host_ns;        /* time spent inside the calls on the host (checking,
                         choosing, enqueueing; not the builds, plans and
                         benchmarks inside, which are rows of their own) */
  uint64_t flops;          /* floating-point operations, summed: 2mnk for a
                         GEMM, 5 n log2 n per complex FFT; 0 where none */
  uint64_t bytes;          /* the least the calls must read and write, summed */
  double gflops;           /* flops / total_ns: GFLOP/s over the device time */
  double gbps;             /* bytes / total_ns: GB/s */
  double percent;          /* total_ns as a share of the device time of every
                         call and benchmark row, 0 to 100; 0 for builds
                         and loads */
  kiln_profile_kind kind;  /* KILN_PROFILE_CALL (0), or what else the row
                         counts; a program built against an older kiln.h
                         tells the others by their op names */
} kiln_profile_row;

/*! kiln_profile_row_init() :
 * Zeroes *row and sets struct_size, as kiln needs before it fills one.
 * NULL is ignored. Inline. */
static inline void kiln_profile_row_init(kiln_profile_row *row)
{
  KILN__INIT(row);
}

/*! kiln_profile_enabled() :
 * @return : non-zero when the runtime records calls; 0 for NULL. */
KILN_API int kiln_profile_enabled(const kiln_runtime *rt);

/*! kiln_profile_rows() :
 * The rows of the calls recorded and finished so far: the calls' and
 * benchmark mode's rows sorted by total device time, longest first, then
 * the builds' and loads' by total time (calls still running on the device
 * are left out: call kiln_finish() first).
 * @rows     : receives the first min(capacity, *count) rows; may be NULL
 *             when capacity is 0, to ask how many there are. Set up
 *             rows[0] with kiln_profile_row_init(): its struct_size is
 *             taken as the size of every element of the array, and each
 *             row filled gets it.
 * @count    : receives how many rows there are; 0 when profiling is off.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (rt or count NULL, rows NULL
 *           with capacity above 0, rows[0].struct_size 0);
 *           KILN_ERR_OUT_OF_HOST_MEMORY. */
KILN_API kiln_status kiln_profile_rows(kiln_runtime *rt, kiln_profile_row *rows,
                                       size_t capacity, size_t *count);

/*! kiln_profile_report() :
 * Prints the rows as a table into f, like torch.profiler's
 * key_averages().table(): one line per operation and backend with its
 * calls, total, mean, min and max device time, host time, GFLOP/s, GB/s
 * and share of the total, sorted by total device time, then a total line;
 * then, when there were any, the builds, loads and FFT plans in a section
 * of their own (count, total, mean, min and max host time); then notes on
 * calls left out (still running, failed). With profiling off,
 * one line says how to turn it on. kiln prints nothing anywhere else.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL); KILN_ERR_IO when
 *           writing to f fails; KILN_ERR_OUT_OF_HOST_MEMORY. */
KILN_API kiln_status kiln_profile_report(kiln_runtime *rt, FILE *f);

/*! kiln_profile_reset() :
 * Forgets every record, including those of calls still running. Calls
 * that are in progress on other threads are recorded when they return.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for NULL. */
KILN_API kiln_status kiln_profile_reset(kiln_runtime *rt);

/*! kiln_profile_write_trace() :
 * Writes the records finished so far to path as a Chrome trace-event JSON
 * file, which Perfetto (ui.perfetto.dev) and chrome://tracing open: a track
 * of each host thread's calls (the time spent enqueueing), a track of the
 * device's operations, one of the commands each enqueued (kernels by
 * name), and one of the transfers the _host operations run beside their
 * compute on a second queue ("device: copy queue"), on one clock, with each call's backend, shape, bytes and flops in
 * its args. Builds, loads and FFT plans are spans of category "build" on
 * the host thread's track, inside the span of the call that needed them;
 * the call's device span is cut where the device waited for them.
 * KILN_TRACE writes the same file at kiln_runtime_destroy().
 * With profiling off the file has no events.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL); KILN_ERR_IO when the
 *           file cannot be created or written (the message gives the path
 *           and the system's reason). */
KILN_API kiln_status kiln_profile_write_trace(kiln_runtime *rt, const char *path);

/*====================================================================
 * Files
 *====================================================================*/

/* numpy's .npy format, so that arrays move between kiln and Python without
 * conversion. kiln reads format versions 1.0, 2.0 and 3.0 with the dtypes
 * '<f2', '<f4', '<f8', '<c8', '<c16', '<i4' and '<i8' (float16 ... int64, in
 * kiln_dtype_name()'s terms), in C or Fortran order, with 0 to
 * KILN_ARRAY_MAX_DIMS (8) dimensions. The byte-order marks '|' and '='
 * are read as '<': they mean the writer's own order, and kiln runs on
 * little-endian hosts only.
 * Big-endian ('>') files, other dtypes and structured dtypes are refused
 * with KILN_ERR_FORMAT. kiln writes what np.save writes. */

/*! kiln_array :
 * An array in host memory, as a .npy file holds it. */
typedef struct kiln_array {
  kiln_dtype dtype;
  unsigned ndim;                     /* 0 (one element) to KILN_ARRAY_MAX_DIMS */
  size_t shape[KILN_ARRAY_MAX_DIMS]; /* the first ndim are used; 0 is allowed */
  int fortran_order; /* 0: C order, the last index varies fastest in memory;
                        non-zero: Fortran order, the first index does */
  size_t count;      /* elements: the product of the shape, 1 for ndim 0 */
  void *data;        /* count elements as the host stores them (little-
                        endian); NULL when count is 0 */
} kiln_array;

/*! kiln_npy_load() :
 * Reads a whole .npy file. The header's keys may come in any order, with any
 * whitespace; its padding is not checked. The data must be exactly as long
 * as the shape says: bytes after it are refused (np.load ignores them), as
 * they mean the shape does not describe the data.
 * @path : the file.
 * @out  : receives the array, zeroed first, and left zeroed on failure. Its
 *         data is malloc'd by kiln and belongs to the caller, who releases it
 *         with kiln_array_free(). Fortran-order files stay in Fortran order:
 *         see kiln_array_to_c_order().
 * @return : KILN_OK;
 *           KILN_ERR_IO when the file cannot be opened or read (the message
 *             gives the path and the system's reason);
 *           KILN_ERR_FORMAT when it is not a .npy file kiln reads: a bad
 *             magic, another version, a header length beyond the file, a
 *             header that does not parse, a missing, unknown or repeated
 *             key, an unsupported dtype, more than 8 dimensions, a shape
 *             whose size overflows size_t, data shorter or longer than the
 *             shape says. The message names the file, what was wrong and
 *             what was expected;
 *           KILN_ERR_INVALID_ARGUMENT for NULL; KILN_ERR_OUT_OF_HOST_MEMORY.
 * There is no runtime: the message is for kiln_last_error(NULL). */
KILN_API kiln_status kiln_npy_load(const char *path, kiln_array *out);

/*! kiln_npy_load_range() :
 * kiln_npy_load() of a part of a regular file, for a program that has its
 * own share of a large array to work on (an MPI rank): the header, and
 * elements [first, first + *count) of the data as stored (C or Fortran
 * order), *count cut at the end of the data.
 * @count : in, the elements wanted; out, those read (0 when first is past
 *          the end: count 0 reads the header alone).
 * @out   : dtype, ndim, shape, fortran_order and count describe the whole
 *          file, as kiln_npy_load() gives them; data holds only the part
 *          (NULL when it is empty). Release it with kiln_array_free().
 * @return : the statuses of kiln_npy_load() (the whole file's size is
 *           checked against its header); KILN_ERR_IO for a path that is
 *           not a regular file. For kiln_last_error(NULL). */
KILN_API kiln_status kiln_npy_load_range(const char *path, size_t first, size_t *count,
                                         kiln_array *out);

/*! kiln_npy_load_memory() :
 * kiln_npy_load() of a .npy file's bytes already in memory: a member of an
 * .npz archive (which is a zip of .npy files), a download, a database blob.
 * @bytes : size bytes, not changed and not kept; NULL only when size is 0.
 * @name  : what the messages call the bytes, as kiln_npy_load() names the
 *          path: "weights.npz:W". Not kept.
 * @out   : as kiln_npy_load()'s: zeroed first, and the caller's to release
 *          with kiln_array_free().
 * @return : KILN_OK; KILN_ERR_FORMAT as kiln_npy_load(), naming `name`;
 *           KILN_ERR_INVALID_ARGUMENT for NULL; KILN_ERR_OUT_OF_HOST_MEMORY.
 *           For kiln_last_error(NULL). */
KILN_API kiln_status kiln_npy_load_memory(const void *bytes, size_t size,
                                          const char *name, kiln_array *out);

/*! kiln_npy_save() :
 * Writes the array to path, byte for byte as np.save of current numpy does
 * (checked against numpy 2.4): format 1.0 (2.0 should the header outgrow
 * 65535 bytes), the dtype as '<f4' etc., and the header padded with spaces
 * and a newline so that the data starts at a multiple of 64 bytes. Older
 * numpy pads less; every version reads the result. The file is written
 * under a temporary name beside path ("path.tmp.*"), flushed, then renamed
 * over path: path holds its old content or the whole new file, never a
 * part. A symbolic link at path is replaced, not followed.
 * @array : consistent: count the product of the shape; data may be NULL when
 *          count is 0. Not changed.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL, ndim above
 *           KILN_ARRAY_MAX_DIMS, count unlike the shape's, NULL data);
 *           KILN_ERR_INVALID_DTYPE;
 *           KILN_ERR_OVERFLOW (a shape of more bytes than size_t counts);
 *           KILN_ERR_IO when the temporary file cannot be created, written,
 *           flushed or renamed (the message says which and why);
 *           KILN_ERR_OUT_OF_HOST_MEMORY. For kiln_last_error(NULL). */
KILN_API kiln_status kiln_npy_save(const char *path, const kiln_array *array);

/*! kiln_array_to_c_order() :
 * Makes a Fortran-order array C order, in place: the same element at each
 * index, stored with the last index fastest, as kiln's operations expect.
 * For a 2-D array this transposes the storage. A C-order array is left as
 * it is. data may be replaced by a new allocation (the old one is freed);
 * release it with kiln_array_free() as before.
 * @return : KILN_OK; for an inconsistent array, the errors of
 *           kiln_npy_save(); KILN_ERR_OUT_OF_HOST_MEMORY, leaving the array
 *           unchanged. For kiln_last_error(NULL). */
KILN_API kiln_status kiln_array_to_c_order(kiln_array *array);

/*! kiln_array_free() :
 * Frees data (which kiln or malloc() allocated) and zeroes *array. NULL is
 * ignored, and so is an array already freed. */
KILN_API void kiln_array_free(kiln_array *array);

/*====================================================================
 * Memory accounting
 *====================================================================*/

/*! kiln_memory_usage : what kiln holds on the runtime's device. */
typedef struct kiln_memory_usage {
  /* Set by kiln_memory_usage_init(): see "A header that can grow". */
  size_t struct_size;
  uint64_t current_bytes;    /* bytes in live buffers now */
  uint64_t peak_bytes;       /* the most ever held at once */
  uint64_t live_buffers;     /* buffers created and not yet destroyed */
  uint64_t limit_bytes;      /* the budget: global memory, or the limit set */
  uint64_t max_alloc_bytes;  /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
  int64_t device_free_bytes; /* free memory by the vendor's query
                                (cl_amd_device_attribute_query), -1 when the
                                device offers none */
  /* The caching pool (see "Memory accounting"); all 0 with the pool off. */
  uint64_t cached_bytes;       /* held by the pool for later buffers */
  uint64_t peak_cached_bytes;  /* the most the pool ever held */
  uint64_t pool_hits;          /* creations served from the pool */
  uint64_t pool_misses;        /* creations that asked the driver */
  uint64_t trims;              /* times the pool gave its memory back */
  uint64_t largest_free_block; /* the pool's largest block, in bytes */
  /* Device memory held by cached FFT plans (kiln's scratch and twiddle
   * tables, VkFFT's and clFFT's temporary buffers), in bytes, outside
   * current_bytes; the budget counts it. kiln_memory_trim() releases the
   * plans no call is using. Buffers that a library makes inside itself and
   * kiln cannot see (some of clFFT's) are not counted. */
  uint64_t plan_bytes;
} kiln_memory_usage;

/*! kiln_memory_usage_init() :
 * Zeroes *usage and sets struct_size, as kiln needs before it fills one.
 * NULL is ignored. Inline. */
static inline void kiln_memory_usage_init(kiln_memory_usage *usage)
{
  KILN__INIT(usage);
}

/*! kiln_memory_trim() :
 * Gives every block the pool holds back to the driver, as PyTorch's
 * torch.cuda.empty_cache(), and releases the cached FFT plans that no call
 * is using, with the device memory they hold (plan_bytes), as clearing
 * cuFFT's plan cache does: for a service that shares its device, after a
 * burst. Buffers alive are not touched, nor a plan a call on another
 * thread is running; a released plan is built again by the next kiln_fft()
 * that needs it (a compile for VkFFT and clFFT). kiln does the same by
 * itself, the pool first and the plans only if that was not enough,
 * before a buffer or a plan's memory fails for want of room.
 * @return : KILN_OK, or KILN_ERR_INVALID_ARGUMENT for a NULL rt. */
KILN_API kiln_status kiln_memory_trim(kiln_runtime *rt);

/*! kiln_memory_stats() :
 * Fills *out, which kiln_memory_usage_init() set up.
 * @return : KILN_OK, or KILN_ERR_INVALID_ARGUMENT for NULL or an
 *           out->struct_size of 0. */
KILN_API kiln_status kiln_memory_stats(kiln_runtime *rt, kiln_memory_usage *out);

/*====================================================================
 * Experimental
 *====================================================================*/

/* Declared only when the program defines KILN_EXPERIMENTAL before it
 * includes <kiln/kiln.h>. Not promised: any release may change or remove
 * them, and a program that uses them must be rebuilt against the headers
 * of the libkiln it runs with. They are exported all the same, so that
 * kiln's own tools can use them. */
#ifdef KILN_EXPERIMENTAL

/* kiln's own kernels: their files, names and arguments are kiln's
 * internals, and change with its kernels. */

/*! kiln_program_create_builtin() :
 * One of kiln's own kernel files (cl/NAME.cl, embedded in the library, or
 * read from $KILN_CL_DIR when that is set, for kernel development), built
 * with kiln's device-dependent options. The build happens once per runtime;
 * the program you get is yours to destroy. KILN_ERR_INVALID_ARGUMENT for a
 * name kiln does not have (the message lists the names). */
KILN_API kiln_status kiln_program_create_builtin(kiln_runtime *rt, const char *name,
                                                 kiln_program **out);

/*! kiln_runtime_warm() :
 * Builds ahead, on the runtime's device, the kernels that the operations
 * named in `ops` run: a comma-separated list of gemm, conv2d, reduce, fft,
 * convert and scale; NULL, "" or "all" for every one. Their float32
 * variants: other types still build on their first call. Through the
 * binary cache, once per runtime: an operation's first call then builds
 * nothing. Threads may call operations meanwhile; a kernel one of them
 * needs is built once, and the other waits for it. *built (may be NULL)
 * counts the kernels made ready.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for a name that is no
 *           operation; KILN_ERR_BUILD with the log if a build fails. */
KILN_API kiln_status kiln_runtime_warm(kiln_runtime *rt, const char *ops, size_t *built);

/*! kiln_runtime_warm_async() :
 * kiln_runtime_warm() in the background, on a thread of kiln's: it returns
 * once the list is checked and the thread started, and the kernels build
 * while the caller goes on (a service that answers requests meanwhile, a
 * program that reads its input). Operations may be called at once: one
 * that needs a kernel the warm-up is building waits for that build and
 * does not repeat it. One warm-up a runtime at a time.
 * kiln_runtime_destroy() stops it after the kernel it is building and
 * waits for that one.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for a name that is no
 *           operation (nothing started); KILN_ERR_BUSY while a warm-up of
 *           this runtime still runs; KILN_ERR_OUT_OF_HOST_MEMORY when the
 *           thread cannot start. A build's failure is
 *           kiln_runtime_warm_wait()'s to report. */
KILN_API kiln_status kiln_runtime_warm_async(kiln_runtime *rt, const char *ops);

/*! kiln_runtime_warm_progress() :
 * Where the background warm-up stands, without waiting: *built kernels of
 * *total made ready so far (either may be NULL; 0 and 0 when none was
 * started). Any thread may call it.
 * @return : 1 while the warm-up runs, 0 once it is done or when none was
 *           started (or rt is NULL). */
KILN_API int kiln_runtime_warm_progress(kiln_runtime *rt, size_t *built, size_t *total);

/*! kiln_runtime_warm_wait() :
 * Waits for the background warm-up to end. *built (may be NULL) counts the
 * kernels it made ready.
 * @return : its result, as kiln_runtime_warm() would have returned it
 *           (KILN_ERR_BUILD with the log, on this thread's
 *           kiln_last_error()); KILN_OK at once when none was started. */
KILN_API kiln_status kiln_runtime_warm_wait(kiln_runtime *rt, size_t *built);

/*! kiln_builtin_count(), kiln_builtin_name() :
 * kiln's own kernel files, by name; kiln_builtin_name() returns NULL for i
 * out of range. Static. */
KILN_API size_t kiln_builtin_count(void);
KILN_API const char *kiln_builtin_name(size_t i);

/* The choice kiln_gemm() makes for AUTO follows kiln's measured rules and
 * tuning records, which change as kiln learns more devices. */

/*! kiln_gemm_backend_for() :
 * The backend kiln_gemm() would use for this request on this runtime
 * (resolving AUTO), or KILN_BACKEND_AUTO when none can do it. */
KILN_API kiln_backend kiln_gemm_backend_for(kiln_runtime *rt, const kiln_gemm_desc *desc);

/* Tuning: the parameters of kiln's own kernels (tile sizes, vector widths,
 * group sizes), measured per device by kiln_tune() and kept as a tuning
 * record per device, driver and kiln version beside the kernel cache. A
 * runtime applies its device's record when it is created (unless
 * kiln_options.no_tuning or KILN_TUNING=0); without one, kiln's rules
 * apply. A record that is damaged, stale (another driver or kiln), foreign
 * or that the device cannot run is ignored, with a note in
 * kiln_runtime_diagnostics(). The calls below that change the parameters
 * rebuild kiln's kernels: make them while no other call uses the runtime. */

/*! kiln_tuning_usage : whether this runtime runs with measured parameters. */
typedef struct kiln_tuning_usage {
  /* Set by kiln_tuning_usage_init(): see "A header that can grow". */
  size_t struct_size;
  int tuned;        /* the device's record applies */
  const char *path; /* the device's record file (it may not exist yet), or
                       NULL when the kernel cache, its folder, is off */
  size_t choices;   /* per-shape choices known (benchmark mode) */
  /* Added after choices: */
  size_t clblast_sets;    /* CLBlast parameter sets the record holds, one per
                             kernel and precision (kiln tune --clblast) */
  size_t clblast_applied; /* of them, those CLBlast took for this runtime's
                             device (none without CLBlast, or when it
                             refused them: see kiln_runtime_diagnostics()) */
} kiln_tuning_usage;

/*! kiln_tuning_usage_init() :
 * Zeroes *usage and sets struct_size. NULL is ignored. Inline. */
static inline void kiln_tuning_usage_init(kiln_tuning_usage *usage)
{
  if (!usage)
    return;
  memset(usage, 0, sizeof *usage);
  usage->struct_size = sizeof *usage;
}

/*! kiln_tuning_stats() : fills *out (set up by kiln_tuning_usage_init());
 * path is owned by the runtime. */
KILN_API kiln_status kiln_tuning_stats(kiln_runtime *rt, kiln_tuning_usage *out);

/*! kiln_tuning_get() :
 * The parameters in use as a record's JSON text, in *json (malloc'd: free()
 * it): the device's record, or the rules' values ("by": "defaults").
 * KILN_ERR_UNSUPPORTED when kiln was built without json-c. */
KILN_API kiln_status kiln_tuning_get(kiln_runtime *rt, char **json);

/*! kiln_tuning_set() :
 * Checks a record (as kiln_tuning_get() gives it, e.g. from another machine
 * with the same device and driver) and applies it: it must be whole, its
 * checksum must match, it must name this device, driver and kiln version,
 * and the device must be able to run its parameters. Then it is kept as
 * the device's record. KILN_ERR_INVALID_ARGUMENT (nothing changed) saying
 * what does not match; KILN_ERR_IO when it applies but cannot be kept. */
KILN_API kiln_status kiln_tuning_set(kiln_runtime *rt, const char *json);

/*! kiln_tuning_clear() :
 * Deletes the device's record and goes back to the rules' parameters. The
 * record's CLBlast parameters go with it, for later processes: CLBlast
 * keeps those it was given in this one (see kiln_tuning_set_clblast()).
 * KILN_ERR_IO when a record is there that kiln may not delete (see "What
 * kiln trusts"); the rules apply to this runtime all the same. */
KILN_API kiln_status kiln_tuning_clear(kiln_runtime *rt);

/*! kiln_tuning_set_clblast() :
 * Gives CLBlast parameters for one of its kernels at one precision on rt's
 * device, as CLBlast's tuners find them (`kiln tune --clblast` runs them),
 * and keeps them in the device's tuning record, beside any kept before for
 * other kernels and precisions (the same kernel and precision are
 * replaced). Every later runtime on the device and driver hands them to
 * CLBlast when it is created. CLBlast keeps parameters per device for the
 * whole process (CLBlastOverrideParameters()), so they apply to every
 * runtime on the device in this process from now on, and
 * kiln_tuning_clear() deletes them from the record but cannot take them
 * back from CLBlast before the process ends.
 *   kernel   CLBlast's name of the kernel in its database: "Xgemm",
 *            "XgemmDirect", "GemmRoutine", "Copy", ... (letters, digits and
 *            '_', at most 47)
 *   dtype    KILN_F16, KILN_F32 or KILN_F64, which the device must support
 *   n        1 to 32: the parameters names[0..n) with values[0..n); the
 *            names upper-case letters, digits and '_' (at most 47), each
 *            once; the values below 2^31. CLBlast needs every parameter of
 *            the kernel; extra ones (the tuners' PRECISION) are ignored.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT for arguments that break the
 *           above, or that CLBlast refuses (a kernel it does not know, a
 *           parameter it needs that is missing: the message has CLBlast's
 *           status), and then nothing changed; KILN_ERR_UNSUPPORTED when
 *           kiln was built without CLBlast or json-c, or the device lacks
 *           the precision; KILN_ERR_IO when CLBlast took them but the
 *           record cannot be kept. */
KILN_API kiln_status kiln_tuning_set_clblast(kiln_runtime *rt, const char *kernel,
                                             kiln_dtype dtype, size_t n,
                                             const char *const *names,
                                             const size_t *values);

/*! kiln_tune_what : which kernels kiln_tune() measures (bits). */
typedef enum kiln_tune_what {
  KILN_TUNE_GEMM = 1,   /* GEMM's f32, f16 storage and f64 variants */
  KILN_TUNE_REDUCE = 2, /* the reductions */
  KILN_TUNE_FFT = 4,    /* kiln's FFT passes */
  KILN_TUNE_CONV = 8,   /* the convolution's direct kernel and im2col step */
  KILN_TUNE_ALL = 15
} kiln_tune_what;

/*! kiln_tune_step : one candidate measured (or skipped), for progress. */
typedef struct kiln_tune_step {
  size_t struct_size;
  const char *kernel;    /* "gemm f32", "reduce", "fft" */
  const char *candidate; /* its parameters, e.g. "cpu tm=8 vw=16" */
  size_t index, count;   /* candidate index (1-based) of count, over the run */
  double seconds;        /* its median time on the kernel's test case; 0 when
                            skipped */
  const char *skipped;   /* why it was skipped (too large for the device, a
                            build or launch that failed, a wrong result), or
                            NULL */
  const char *best;      /* the kernel's best so far, and its time */
  double best_seconds;
  double baseline_seconds; /* the kernel's parameters before tuning */
  int kernel_done;         /* the last step of this kernel: best is kept */
  double elapsed, left;    /* seconds since the start, and of the budget */
} kiln_tune_step;

/*! kiln_tune_progress : called after each step; return non-zero to stop,
 * keeping what was measured so far (Ctrl-C in `kiln tune`). */
typedef int (*kiln_tune_progress)(const kiln_tune_step *step, void *user);

/*! kiln_tune_options : set up by kiln_tune_options_init(). */
typedef struct kiln_tune_options {
  size_t struct_size;
  unsigned what;               /* kiln_tune_what bits; 0: all */
  double budget;               /* seconds for the whole search; 0: 240 */
  kiln_tune_progress progress; /* or NULL */
  void *user;                  /* progress's */
} kiln_tune_options;

static inline void kiln_tune_options_init(kiln_tune_options *opts)
{
  if (!opts)
    return;
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
}

/*! kiln_tune() :
 * Searches the parameters of kiln's own kernels on rt's device, then keeps
 * the best as the device's record and applies it to rt. Each kernel starts
 * from its parameters in use and tries candidates around them; candidates
 * the device cannot run are skipped before compiling, and each one's result
 * is checked against a CPU reference before it is timed (the median of
 * several runs after a warm-up). The best replaces the parameters in use
 * only when it is faster beyond noise (3%) when the two are timed again in
 * turn. The search stops at the
 * budget or when progress says so, keeping what it measured.
 * @return : KILN_OK; KILN_ERR_IO when the record cannot be kept (the
 *           parameters still apply to rt); KILN_ERR_UNSUPPORTED without
 *           json-c. */
KILN_API kiln_status kiln_tune(kiln_runtime *rt, const kiln_tune_options *opts);

/* OpenCL drivers on this machine, found without loading them: which vendor
 * libraries are installed, where the dynamic loader would find each, and
 * which .icd file (if any) names it to the ICD loader. A driver no .icd
 * file names is invisible to OpenCL: NVIDIA's container images keep
 * libnvidia-opencl.so.1 without one. Linux only; elsewhere the list is
 * empty. */

/*! kiln_driver_where : where a driver's library was found. */
typedef enum kiln_driver_where {
  KILN_DRIVER_NOT_FOUND = 0,       /* nowhere kiln looks */
  KILN_DRIVER_LD_LIBRARY_PATH = 1, /* in a folder of LD_LIBRARY_PATH */
  KILN_DRIVER_LOADER_CACHE = 2,    /* in the loader's cache (/etc/ld.so.cache) */
  KILN_DRIVER_SYSTEM_FOLDER = 3,   /* in a folder the loader always searches
                                      (/usr/lib/<triplet>, /usr/lib64, ...) */
  KILN_DRIVER_VENDOR_FOLDER = 4,   /* where its vendor puts it, a folder the
                                      loader does not search by itself */
  KILN_DRIVER_ICD_PATH = 5         /* at the path its .icd file names */
} kiln_driver_where;

/*! kiln_driver : one OpenCL driver library, or one .icd file in use. Owned
 * by its list; strings valid until the list is destroyed. Grows at the end:
 * read it through kiln's pointers only. */
typedef struct kiln_driver {
  /* "NVIDIA", "AMD", "Intel", "PoCL", "Mesa (rusticl)", ...; "" for a
   * library kiln's table does not know */
  const char *vendor;
  /* kiln's short name ("nvidia"), or the .icd file's name without ".icd"
   * for a library kiln does not know */
  const char *name;
  /* the library: an absolute path where found, else as its .icd file
   * names it */
  const char *library;
  kiln_driver_where where;
  int gpu; /* a GPU vendor's driver (NVIDIA, AMD, Intel's GPUs) */
  /* the ICD loader loads it: an .icd file in use names it, or
   * OCL_ICD_VENDORS names the library itself */
  int registered;
  const char *icd; /* the .icd file that names it; NULL when none does */
  /* what names it: the .icd file's first line, or OCL_ICD_VENDORS's
   * value; NULL when not registered */
  const char *icd_line;
  /* the file name kiln_driver_list_write_icd_dir() gives it: the .icd
   * file's own, or NAME.icd */
  const char *icd_name;
  /* not registered, and kiln advises registering it: a GPU vendor's
   * driver; where none is registered at all, any but a simulator. A CPU
   * runtime or Mesa's library left out of an .icd folder is most often
   * left out on purpose. */
  int advised;
} kiln_driver;

typedef struct kiln_driver_list kiln_driver_list;

/*! kiln_driver_list_create() :
 * Lists the .icd files the ICD loader reads, as ocl-icd finds them
 * (OCL_ICD_VENDORS: a folder, an .icd file or a library; else
 * OPENCL_VENDOR_PATH; else /etc/OpenCL/vendors), one record each, in file
 * name order; then one record for each vendor library kiln knows that no
 * .icd file names but that is installed (a driver neither installed nor
 * named has no record): looked up by name where the
 * dynamic loader would look (LD_LIBRARY_PATH, /etc/ld.so.cache, the system
 * folders), then in its vendor's usual folders. Nothing is loaded: a file
 * counts when it is an ELF shared library of this process's architecture.
 * @opts : NULL for the defaults; checked as kiln_runtime_create() does.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (out NULL),
 *           KILN_ERR_INVALID_ENV, KILN_ERR_OUT_OF_HOST_MEMORY. */
KILN_API kiln_status kiln_driver_list_create(const kiln_options *opts,
                                             kiln_driver_list **out);

/*! kiln_driver_list_destroy() : frees the list. NULL is ignored. KILN_OK. */
KILN_API kiln_status kiln_driver_list_destroy(kiln_driver_list *list);

/*! kiln_driver_list_count(), kiln_driver_list_at() :
 * The records; kiln_driver_list_at() returns NULL for i out of range or
 * a NULL list. Owned by the list. */
KILN_API size_t kiln_driver_list_count(const kiln_driver_list *list);
KILN_API const kiln_driver *kiln_driver_list_at(const kiln_driver_list *list, size_t i);

/*! kiln_driver_list_icd_source() :
 * @return : where the ICD loader takes its .icd files from, as a user would
 *           write it: "/etc/OpenCL/vendors", "OCL_ICD_VENDORS=/some/dir".
 *           Owned by the list; NULL for NULL. */
KILN_API const char *kiln_driver_list_icd_source(const kiln_driver_list *list);

/*! kiln_driver_list_write_icd_dir() :
 * Makes dir (and its parents) a folder for OCL_ICD_VENDORS that registers
 * the drivers of the list: a copy of each .icd file in use and an .icd
 * file naming each driver found that kiln advises registering (advised),
 * each as its record's icd_name. Files dir has that are not .icd files are left alone; an .icd
 * file dir has with another content, or that the list would not write,
 * is refused, so that no driver is registered twice.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL, or dir holds another
 *           .icd file: the message names it); KILN_ERR_IO when a folder or
 *           file cannot be made or written (the message says which and why).
 *           kiln_last_error(NULL) has the message. */
KILN_API kiln_status kiln_driver_list_write_icd_dir(const kiln_driver_list *list,
                                                    const char *dir);

#endif /* KILN_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif

#endif /* KILN_H */
