/*
 * tuning.h — the parameters of kiln's kernels for a device (tuning.c), the
 * tuning records that replace the rules' values with measured ones
 * (record.c), and the search that measures them (tune.c). Not installed.
 */
#ifndef KILN_TUNING_H
#define KILN_TUNING_H

#include "base/util.h"

/* ---- the parameters (tuning.c) ------------------------------------------- */

/* GEMM's variants, each tuned alone: float, half storage with float
 * compute, double. */
enum kiln__gemm_variant {
  KILN__GEMM_F32,
  KILN__GEMM_F16,
  KILN__GEMM_F64,
  KILN__GEMM_VARIANTS
};

/* The parameters of one variant of cl/gemm.cl (see tuning.c for why). */
typedef struct kiln__gemm_tuning {
  int gpu_shape;   /* local-memory tiles, else the CPU shape */
  unsigned tm, vw; /* CPU: rows per work-item; vector lanes (2 vectors) */
  unsigned cg;     /* CPU: work-items a group along M, a power of two
                             (or less where M's tiles do not divide); 0: the
                             driver's choice */
  unsigned small;  /* CPU: products of at most small^3 multiply-adds
                             (m n k) run unpacked (kiln_gemm_small); 0: none */
  unsigned direct; /* products of at most direct^3 multiply-adds run
                             kiln_gemm_direct, an element of C a work-item;
                             0: none. A rule, not in the tuning record */
  unsigned akib;   /* CPU: the product walks A in blocks of about akib
                             KiB of packed panels, each block against every
                             B panel before the next (gemm_kiln.c); 0: all
                             of A as one block */
  /* GPU (cl/gemm.cl's kiln_gemm_gpu; tuning.c says why each rule): */
  unsigned tsm, tsn, tsk; /* a group's tile of C, rows x columns, and the
                             depth of the slices it stages in local memory */
  unsigned wptm, wptn;    /* a work-item's outputs along M and along N: a
                             group is (tsm / wptm) x (tsn / wptn) */
  unsigned vwm, vwn;      /* lanes of A's and B's vector loads (global and
                             local): 1, 2, 4 or 8 */
  unsigned strm, strn;    /* 1: a work-item's vectors lie a group's width
                             apart (strided), 0: next to each other */
  unsigned pad;           /* vectors of padding after each local row */
  unsigned db;            /* 1: two local buffers, the next slice loaded
                             while the current one is multiplied */
  unsigned gm;            /* groups walk C's tiles gm tile rows at a time
                             (L2 reuse); 1: row by row */
} kiln__gemm_tuning;

/* The rules' GPU tiles of a device (tuning.c), for tests and the tuner:
 * the first that fits max_wg work-items and local_bytes of local memory
 * for reals of real_bytes. */
void kiln__gemm_gpu_rule(uint64_t max_wg, uint64_t local_bytes, size_t real_bytes,
                         kiln__gemm_tuning *g);

/* Bytes of local memory g's GPU kernel takes for reals of real_bytes, and
 * its work-items a group. */
size_t kiln__gemm_gpu_local_bytes(const kiln__gemm_tuning *g, size_t real_bytes);
size_t kiln__gemm_gpu_group(const kiln__gemm_tuning *g);

/* The parameters of cl/reduce.cl: chunks per whole reduction on a CPU
 * device; on GPUs, the work-group size (a power of two) and groups. */
typedef struct kiln__reduce_tuning {
  int gpu_shape;
  unsigned chunks, wg, groups;
} kiln__reduce_tuning;

/* kiln's own FFT (cl/fft.cl): scalar passes whose stride p is at least
 * wide_from run the 2-D indexed kernel in groups of `group` work-items
 * along k; vec_first 1: float32 rows of 2^7 points or more run the vector
 * kernels (8 points' parts in float8s a work-item, radix 16 in groups of
 * `group` points, radix 256 in groups of one), 0: the scalar ones; with
 * them, rows of up to row_max points (0: none) run every pass in one
 * launch, a row a work-item (kiln_fft_rowv), at most KILN__FFT_ROW_MAX
 * (its private arrays). local_max > 0 (GPUs): lengths of up to local_max
 * points (float32; half of it float64) run whole in a work-group's local
 * memory (cl/fft_local.cl), longer ones up to local_max^2 as two such
 * launches, local_radix (4, 8, 16) points a work-item per pass, groups of
 * up to local_cols sequences (1 to 64: columns side by side). */
#define KILN__FFT_ROW_MAX 2048
typedef struct kiln__fft_tuning {
  unsigned wide_from, group;
  unsigned vec_first, row_max;
  unsigned local_max, local_radix, local_cols;
} kiln__fft_tuning;

/* Convolution (cl/conv.cl, src/backends/kiln/conv_kiln.c). The direct kernel: each
 * work-item computes qw neighbouring outputs of a row for kb output
 * channels, in work-groups of lq x lp (outputs' columns x rows; 0 x 0: the
 * driver's choice). im2col: each im2col + GEMM step writes at most about
 * col_kib KiB of im2col matrix (whole images while they fit, else column
 * chunks of one image). */
/* The GPU shape's depthwise kernel (cl/conv.cl): work-groups of LX x LY
 * work-items, QW outputs of a row each, an input tile of at most TILE
 * elements in local memory (16 KiB of float, 32 KiB of double: within the
 * 48 KiB NVIDIA gives a work-group). Fixed until a GPU measures others. */
#define KILN__CONV_DW_LX 16
#define KILN__CONV_DW_LY 8
#define KILN__CONV_DW_QW 4
#define KILN__CONV_DW_TILE 4096

typedef struct kiln__conv_tuning {
  unsigned qw, kb, lq, lp;
  unsigned col_kib;
} kiln__conv_tuning;

/* Everything a runtime's kernels are built and launched with. */
typedef struct kiln__tuning {
  kiln__gemm_tuning gemm[KILN__GEMM_VARIANTS];
  kiln__reduce_tuning reduce;
  kiln__fft_tuning fft;
  kiln__conv_tuning conv;
} kiln__tuning;

/* What kiln_tune() found for one kernel: the parameters it started from and
 * those it kept, each as text, with their median times. */
typedef struct kiln__measured {
  char kernel[16];
  char from[96], to[96];
  double from_s, to_s;
  unsigned candidates;
} kiln__measured;

/* CLBlast's parameters for one of its kernels ("Xgemm", "XgemmDirect",
 * "GemmRoutine", ...) at one precision, as its tuners find them (kiln tune
 * --clblast) and CLBlastOverrideParameters() takes them. Fixed arrays: a
 * record holds a few of them, and CLBlast's kernels have at most 16
 * parameters. */
enum {
  KILN__CLBLAST_NAME = 48,   /* a kernel's or parameter's name, with its NUL */
  KILN__CLBLAST_PARAMS = 32, /* parameters of one kernel */
  KILN__CLBLAST_SETS = 16    /* kernel and precision pairs in a record */
};
typedef struct kiln__clblast_params {
  char kernel[KILN__CLBLAST_NAME];
  kiln_dtype dtype; /* KILN_F16, KILN_F32 or KILN_F64 */
  size_t n;
  char names[KILN__CLBLAST_PARAMS][KILN__CLBLAST_NAME];
  size_t values[KILN__CLBLAST_PARAMS]; /* each below 2^31 */
} kiln__clblast_params;

/* A per-shape choice: the backend that benchmark mode measured fastest for
 * an operation's key (choice.c). */
typedef struct kiln__choice {
  char *key;
  kiln_backend id;
} kiln__choice;

/* A runtime's parameters and where they came from. The choices and the
 * measurements are guarded by the runtime's lock. */
typedef struct kiln__tuning_state {
  kiln__tuning t; /* in use: the record's, else the rules' */
  int tuned;      /* a record applies */
  int benchmark;  /* benchmark mode: time the backends per new key */
  char *record;   /* the record's JSON text as read or written, or NULL */
  char *path;     /* the record's file, or NULL when the cache is off */
  kiln__choice *choices;
  size_t nchoices;
  kiln__measured *measured; /* what kiln_tune() found, kept in the record */
  size_t nmeasured;
  struct kiln__measuring *measuring; /* keys being timed (choice.c) */
  kiln__clblast_params *clblast;     /* CLBlast's, kept in the record */
  size_t nclblast;
  size_t clblast_applied; /* of them, how many CLBlast took in this runtime */
} kiln__tuning_state;

/* The rules' values for a device: what applies without a record. */
void kiln__tuning_defaults(const kiln_device_info *dev, kiln__tuning *t);

/* Sets rt's parameters to the rules' values for its device, shaped for
 * `shape` (KILN_TEST_SHAPE's KILN_DEVICE_GPU or KILN_DEVICE_CPU), or for the
 * device's own type when shape is 0: rt->shape says which. */
void kiln__tuning_shape(kiln_runtime *rt, kiln_device_type shape);

/* Whether rt's kernels, workspaces and backend order take a GPU's shape
 * (a GPU or an accelerator, or KILN_TEST_SHAPE=gpu) rather than a CPU's. */
int kiln__gpu_shape(const kiln_runtime *rt);

/* Whether dev can run t: 0, or -1 with what is wrong appended to why (a
 * group larger than the device's, local memory it lacks, a value outside
 * what the kernels take). Every value from a record passes here first. */
int kiln__tuning_check(const kiln_device_info *dev, const kiln__tuning *t,
                       kiln__str *why);

/* GEMM's variant for a storage type. */
enum kiln__gemm_variant kiln__gemm_variant_of(kiln_dtype dtype);

/* The defines of builtin program `program` (a cl/ file's name) for these
 * parameters, appended to out: only what that file reads, so retuning one
 * kernel leaves the others' cached binaries valid. */
void kiln__tuning_defines(const kiln__tuning *t, const char *program, kiln__str *out);

/* The options every builtin program is built with on this device: the
 * -cl-std it supports and the defines of t that `program` reads. */
void kiln__builtin_options(const kiln_device_info *dev, const kiln__tuning *t,
                           const char *program, kiln__str *out);

/* Replaces rt's parameters and drops its built kernels and its FFT plans,
 * which the next call rebuilds with them. Only while no other call uses rt
 * (kiln_tune(), the records, tests). */
void kiln__runtime_set_tuning(kiln_runtime *rt, const kiln__tuning *t);

/* ---- tuning records (record.c) ------------------------------------------- */

/* Loads the device's record, if any, from the cache folder at runtime
 * creation: its values replace the defaults in rt->tuning. A record that is
 * absent leaves the defaults; one that is corrupt, stale, foreign or that
 * the device cannot run is ignored with a note in the diagnostics. */
void kiln__record_load(kiln_runtime *rt);

/* Frees what the records hold in rt->tuning, and rt->tuning. */
void kiln__tuning_free(kiln_runtime *rt);

/* Writes rt's parameters and choices as the device's record, with the
 * measurements m[0..n) (or, for NULL, those kept before) beside them, and
 * marks rt tuned. KILN_ERR_IO when the record cannot be kept (the
 * parameters still apply to rt). */
kiln_status kiln__record_save(kiln_runtime *rt, const char *fn, const kiln__measured *m,
                              size_t n);

/* The speed kiln_tune() measured on rt's device for one of its kernels
 * ("gemm f32", "conv im2col", "fft", "reduce", ...: kiln__measured.kernel)
 * with the parameters it kept: work a second of the kernel's timed case,
 * flops (bytes read for "reduce"), device time alone; 0 when rt's record
 * has no such measurement (tune.c). */
double kiln__tuned_speed(const kiln_runtime *rt, const char *kernel);

/* Adds to rt's choices those of the device's record on disk that rt lacks
 * (another process's, kept since rt read the record), so that saving rt's
 * record keeps them. A record that is absent or does not apply adds none. */
void kiln__record_merge_choices(kiln_runtime *rt);
/* ---- CLBlast's parameters in the record (record_clblast.c) --------------- */

/* Whether p is a parameter set a record may hold: 0, or -1 with what is
 * wrong appended to why (prefixed by `path`, e.g. "clblast[1]"): a name
 * that is not an identifier (kernel: letters, digits and '_'; parameter:
 * upper-case, digits and '_'), a precision other than f16/f32/f64, no
 * parameters or too many, one named twice, a value of 2^31 or more. */
int kiln__clblast_check(const kiln__clblast_params *p, const char *path, kiln__str *why);

/* "f16", "f32" or "f64" for dtype; NULL for another. */
const char *kiln__clblast_precision_tag(kiln_dtype dtype);

/* How the record's "clblast" section reaches CLBlast: the backend that
 * owns the section fills this hook (src/backends/table.c), so tuning never
 * names the backend; NULL when kiln was built without CLBlast. The hook
 * hands p to CLBlast for rt's device (CLBlastOverrideParameters(): its
 * later calls of p->kernel at that precision, in the whole process, build
 * with them): KILN_OK, or the status CLBlast's refusal maps to with its
 * name and meaning appended to why. */
typedef kiln_status (*kiln__clblast_apply_fn)(kiln_runtime *rt,
                                              const kiln__clblast_params *p,
                                              kiln__str *why);
extern const kiln__clblast_apply_fn kiln__clblast_section_apply;

/* The sets p[0..n) as the record's "clblast" array (json-c's; the caller
 * owns it). Only with json-c. */
struct json_object;
struct json_object *kiln__clblast_json(const kiln__clblast_params *p, size_t n);

/* The "clblast" section of record o, each set checked as
 * kiln__clblast_check() does, in *out (malloc'd) and *n: 0, or -1 with why.
 * A record without the section has none. Only with json-c. */
int kiln__clblast_from_json(struct json_object *record, kiln__clblast_params **out,
                            size_t *n, kiln__str *why);

/* Applies the record's CLBlast parameters (rt->tuning->clblast) at runtime
 * creation: each one CLBlast refuses, or all of them without CLBlast, is a
 * note in the diagnostics, and CLBlast's own parameters stay. */
void kiln__clblast_apply_record(kiln_runtime *rt);

/* ---- per-shape choices (choice.c) ---------------------------------------- */

/* The backend recorded for key, or KILN_BACKEND_AUTO for none. */
kiln_backend kiln__choice_find(kiln_runtime *rt, const char *key);

/* Keeps id as key's choice, in rt and in the device's record. */
void kiln__choice_keep(kiln_runtime *rt, const char *key, kiln_backend id);

/* Runs a request with backend id, its output in out (a copy of the
 * caller's), for kiln__choice_benchmark(). */
typedef kiln_status (*kiln__trial)(kiln_runtime *rt, const void *req, kiln_backend id,
                                   kiln_buffer *out);

/* How the candidates' outputs must agree with the reference's: with
 * normwise 0, each element within tol times the reference's largest
 * magnitude; with normwise 1, the 2-norm of the difference within tol
 * times the reference's 2-norm (complex outputs as pairs of reals). tol 0
 * is the output type's default for sums of products (GEMM, convolution). */
typedef struct kiln__agreement {
  double tol;
  int normwise;
} kiln__agreement;

/* The unit roundoff of a float type's arithmetic (of a complex type's
 * parts): 2^-11, 2^-24 or 2^-53. */
double kiln__choice_epsilon(kiln_dtype t);

/* Benchmark mode's request: the key, the backends and how to run one. */
typedef struct kiln__bench {
  const char *key;         /* "<op> ...": the op's name is the profile row's */
  kiln_backend first;      /* the rules' pick, the reference */
  const kiln_backend *all; /* the operation's backends, */
  size_t nall;             /* in the order they are tried after first */
  /* Whether backend id is built in and can run req. */
  int (*can)(kiln_runtime *rt, const void *req, kiln_backend id);
  kiln__trial trial;
  const void *req;
  kiln_buffer *out; /* the caller's output: its type and size */
  kiln__agreement agree;
} kiln__bench;

/* Benchmark mode's first call of a key: runs the request with each backend
 * that can (the rules' pick first: the first that runs is the reference) on
 * a scratch copy of the output, drops any that fails or disagrees, times
 * the rest (median of three after a warm-up), keeps the fastest as key's
 * choice and returns it. The key's recorded choice when it has one (and
 * can run the request), without timing. KILN_BACKEND_AUTO, the rules decide, when nothing was measured:
 * fewer than two candidates, no memory for the scratch output (as cudnn
 * skips what does not fit), or another thread measuring the same key. The
 * time goes to a profile record of its own, "benchmark <op>". */
kiln_backend kiln__choice_benchmark(kiln_runtime *rt, const kiln__bench *b);

/* Test seam: when set, called before each timed run of a candidate. */
extern void (*kiln__choice_seam)(kiln_backend id);

#endif /* KILN_TUNING_H */
