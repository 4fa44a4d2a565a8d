/*
 * ops.h — what the operations (src/ops/) share with their backends (kiln's
 * own in src/ops/, the libraries' in src/backends/): each operation's
 * checked request, its backend table, and the checks that tests and
 * fuzzers call without a device. Not installed.
 */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "core/buffer.h"
#include "ops/transfer.h"
#include "profile/profile.h"

/* ---- every operation's entry (src/ops/op.c) ----------------------------- */

/* KILN__OP_DESC_IN(), then, when it succeeded, the call's profile record
 * begins under `name` (static text); on a failure none has begun, so the
 * caller returns the status as it is, and else ends with
 * kiln__profile_end(). */
kiln_status kiln__op_begin(kiln_runtime *rt, const char *func, const char *in_name,
                           const char *type, const char *how, size_t known,
                           const void *in, void *copy, kiln__profile_scope *ps,
                           const char *name);
#define KILN__OP_BEGIN(rt, func, type, in, copy, ps, name)                               \
  kiln__op_begin((rt), (func), #in, #type, #type "_init()", sizeof(type), (in), (copy),  \
                 (ps), (name))

/* The failure of an operation `func` asked for backend `id`, which it has
 * not: clblast in a kiln built without CLBlast, or one it does not run
 * (`expected` lists those it does). */
kiln_status kiln__backend_unknown(kiln_runtime *rt, const char *func, kiln_backend id,
                                  const char *expected);

/* KILN_OK when the chosen backend's cannot() gave `why` NULL; else the
 * failure that backend `id` cannot run this `what` (a GEMM, ...). */
kiln_status kiln__backend_refuses(kiln_runtime *rt, const char *func, kiln_backend id,
                                  const char *what, const char *why);

/* ---- operations on host arrays, in pieces (src/ops/host.c) -------------- */

/* What is left of rt's memory budget, less a tenth for the driver, and the
 * device's largest allocation, in bytes. */
void kiln__host_room(kiln_runtime *rt, uint64_t *room, uint64_t *max_alloc);

/* An operation split into pieces of up to `per` units (images, rows of an
 * image, transforms), each moved to the device, computed and moved back
 * through one of `sets` sets of piece buffers. The callbacks enqueue
 * without waiting; `op` is the operation's own state. */
typedef struct kiln__host_job {
  void *op;
  size_t per;
  int sets; /* 1, or 2 */
  /* Whether pieces of per units fit the budget and the largest allocation
   * with `sets` sets of buffers (and the operation's workspace). */
  int (*fits)(const struct kiln__host_job *j, size_t per, int sets);
  size_t (*pieces)(const struct kiln__host_job *j); /* how many, at per */
  /* One set: io[0] for a piece's input, io[1] for its output. */
  kiln_status (*create)(kiln_runtime *rt, const struct kiln__host_job *j,
                        kiln_buffer *io[2]);
  kiln_status (*put)(kiln_runtime *rt, const struct kiln__host_job *j, size_t i,
                     kiln_buffer *in);
  kiln_status (*run)(kiln_runtime *rt, const struct kiln__host_job *j, size_t i,
                     kiln_buffer *in, kiln_buffer *out);
  kiln_status (*get)(kiln_runtime *rt, const struct kiln__host_job *j, size_t i,
                     kiln_buffer *out);
  const kiln__lane *lane; /* where kiln__host_move() enqueues: kiln__host_run()'s */
  /* A stream of pieces whose number is not known up front (a device
   * group's chunks, group_ops.c), or NULL for pieces() of them. next()
   * claims piece i and says whether there is one: it is asked for piece
   * i + 1 while piece i computes. done() hears of each piece, in order,
   * once its output is in host memory and no command of the runtime has
   * failed so far; the host waits for that piece by piece. */
  int (*next)(struct kiln__host_job *j, size_t i);
  void (*done)(struct kiln__host_job *j, size_t i);
} kiln__host_job;

/* Sets j->per to the largest piece of at most `units` that fits, and
 * j->sets to 2 when the job takes more than one piece (or is a stream) and
 * two sets of pieces fit (j->per is then the largest for two). 0 when not
 * even a piece of one unit fits with one set. */
int kiln__host_choose(kiln__host_job *j, size_t units);

/* Runs every piece, then waits for the device (also after a failure: the
 * transfers use the caller's arrays). A KILN_ERR_OUT_OF_MEMORY from a
 * workspace the fits() model did not foresee runs it again with one set,
 * then with pieces halved, down to one unit (not a stream of pieces, whose
 * claimed pieces the caller gives back). */
kiln_status kiln__host_run(kiln_runtime *rt, kiln__host_job *j);

/* Enqueues, without waiting, the copy of a rows x cols block between host
 * memory (row pitch ld elements, the block at element `at`) and buf,
 * packed from its element `to`: host to buf when `write`, else back. For
 * put() and get(): it goes where j's loop moves pieces (the copy queue
 * with two sets). */
kiln_status kiln__host_move(const kiln__host_job *j, kiln_buffer *buf, size_t to,
                            int write, const void *host, size_t at, size_t ld,
                            size_t rows, size_t cols);

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
  size_t offset_a, offset_b, offset_c; /* views' first elements added */
  size_t stride_a, stride_b, stride_c;
  size_t first_c; /* of offset_c, the C view's first element */
  cl_mem a, b, c; /* views' buffers' memory, never sub-buffers */
  /* The epilogue, row and column those of the row-major product; bias is
   * NULL without one. */
  kiln_bias bias_kind;
  kiln_activation activation;
  cl_mem bias;
  size_t offset_bias, stride_bias;
} kiln__gemm;

/* Whether g has an epilogue. */
static inline int kiln__gemm_has_epilogue(const kiln__gemm *g)
{
  return g->bias_kind != KILN_BIAS_NONE || g->activation != KILN_ACTIVATION_NONE;
}

/* The most the kiln backend's packs of an m x n x k product take on the
 * device (in float32, or float64, padded by up to a tile): the workspace a
 * GEMM on host arrays leaves room for (gemm_host.c). */
uint64_t kiln__gemm_pack_bytes(kiln_dtype dtype, size_t m, size_t n, size_t k);

/* Enqueues g's epilogue alone, on C as a backend that cannot fuse it has
 * left it (src/backends/kiln/gemm_kiln.c). */
kiln_status kiln__gemm_epilogue(kiln_runtime *rt, const kiln__gemm *g);

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

/* Checks d's bias against the call fn (host: kiln_gemm_host, whose bias is
 * bias_host; else bias_buffer): that the pointer the kind needs is set, and
 * only that one; *need gets the elements the batch's bias vectors span (0
 * without a bias). */
kiln_status kiln__gemm_bias_check(kiln_runtime *rt, const char *fn,
                                  const kiln_gemm_desc *d, size_t batch, int host,
                                  size_t *need);

/* What kiln_gemm() does before it enqueues anything: checks the request
 * against the buffers' types and sizes and the device record, fills g and
 * picks the backend. Reads only those records (no OpenCL call), so tests and
 * tests/fuzz/fuzz-desc.c run it on fake buffers and devices. */
kiln_status kiln__gemm_check(kiln_runtime *rt, const kiln_gemm_desc *desc,
                             const kiln_buffer *a, const kiln_buffer *b,
                             const kiln_buffer *c, kiln__gemm *g,
                             const kiln__gemm_backend **be);

extern const kiln__gemm_backend kiln__gemm_kiln; /* src/backends/kiln/gemm_kiln.c */

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
/* The GEMM backends built in, NULL-terminated (src/backends/table.c). */
extern const kiln__gemm_backend *const kiln__gemm_backends[];

/* ---- reduction backends (src/ops/reduce*.c, src/backends/) ------------- */

/* A checked kiln_reduce() request: the view as (outer, len, inner), reduced
 * along len; every element (KILN_AXIS_ALL) is outer = inner = 1. The result
 * for (o, i) goes to out[out_offset + o * inner + i]. len >= 1. */
typedef struct kiln__reduce {
  kiln_reduce_op op;
  kiln_dtype in_type, out_type;
  size_t outer, len, inner;
  size_t offset, out_offset; /* in in and out, views' first elements added */
  size_t out_first;          /* of out_offset, the out view's first element */
  cl_mem in, out;            /* views' buffers' memory, never sub-buffers */
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

/* Combines `count` results of type pt of consecutive chunks of every
 * element of r's view `in`, the i-th from element i * per (argmin and
 * argmax: indices within the chunk), into out: sums in double, norms as the
 * root of summed squares, NaN first, ties to the first index; a mean
 * divides the sum by r->len (reduce_host.c). */
void kiln__reduce_combine(const kiln__reduce *r, const void *in, kiln_dtype pt,
                          const void *parts, size_t count, size_t per, void *out);

/* What a chunk of op computes for kiln__reduce_combine(): a mean's sum. */
kiln_reduce_op kiln__reduce_part_op(kiln_reduce_op op);

/* An empty axis: writes the identity of sum, mean (NaN) and norm into the
 * outputs of out; an error for the others (reduce.c). */
kiln_status kiln__reduce_empty(kiln_runtime *rt, const kiln__reduce *r, kiln_buffer *out,
                               size_t outputs);

/* The backend for r: the one asked for (AUTO: kiln's), or why not. */
kiln_status kiln__reduce_choose(kiln_runtime *rt, kiln_backend asked,
                                const kiln__reduce *r, const kiln__reduce_backend **out);

extern const kiln__reduce_backend kiln__reduce_kiln; /* src/backends/kiln/reduce_kiln.c */
extern const kiln__reduce_backend kiln__reduce_clblast; /* src/backends/clblast_reduce.c,
                                                            when HAVE_CLBLAST */
/* The reduction backends built in, NULL-terminated (src/backends/table.c). */
extern const kiln__reduce_backend *const kiln__reduce_backends[];

/* ---- convolution backends (src/ops/conv*.c, src/backends/) ------------- */

/* A checked kiln_conv2d() request with defaults resolved (strides,
 * dilations, groups >= 1) and the output size. */
typedef struct kiln__conv {
  kiln_conv2d_desc d;
  size_t p, q;
  cl_mem x, w, bias, y;                 /* bias may be NULL; views' buffers' memory */
  size_t off_x, off_w, off_bias, off_y; /* views' first elements in them */
  const kiln_buffer *wbuf;              /* the same weights and output, for backends */
  kiln_buffer *ybuf;                    /* that call kiln_gemm() */
} kiln__conv;

typedef struct kiln__conv_backend {
  kiln_backend id;
  const char *(*cannot)(kiln_runtime *rt, const kiln__conv *c);
  kiln_status (*run)(kiln_runtime *rt, const kiln__conv *c);
  /* The fewest bytes of the memory budget run() needs left, beyond x, the
   * weights, the bias and y, to run c (NULL: none): what kiln_conv2d_host()
   * keeps room for when it cuts the batch (conv_host.c). */
  uint64_t (*workspace)(kiln_runtime *rt, const kiln__conv *c);
} kiln__conv_backend;

/* What kiln_conv2d() does before it enqueues anything: checks the request
 * against the buffers and the device record, fills cv and picks the
 * backend. No OpenCL call, like kiln__gemm_check(). */
kiln_status kiln__conv_check(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                             const kiln_buffer *x, const kiln_buffer *weights,
                             const kiln_buffer *bias, kiln_buffer *y, kiln__conv *cv,
                             const kiln__conv_backend **be);

/* Checks a request, buffers aside, and fills cv's d (defaults resolved), p
 * and q; the buffer fields stay NULL. Used by kiln_conv2d_host() (conv.c). */
kiln_status kiln__conv_plan(kiln_runtime *rt, const kiln_conv2d_desc *desc,
                            kiln__conv *cv);

/* The weights and the bias (NULL: none) of cv's request into new device
 * buffers *w and *b, for an operation on host arrays (`op`, for
 * messages), and cv's weight and bias fields pointed at them; written
 * before it returns (conv_host.c). */
kiln_status kiln__conv_upload(kiln_runtime *rt, const char *op, kiln__conv *cv,
                              const void *weights, const void *bias, kiln_buffer **w,
                              kiln_buffer **b);

/* The backend for cv: the one asked for, else the choice recorded for its
 * shape, else AUTO's rules; or why it cannot run cv (conv.c). */
/* AUTO's rule for d (conv.c): gpu, a GPU-shaped device; clblast, CLBlast's
 * convgemm built in and able to run it. Pure, for the rules' test. */
kiln_backend kiln__conv_rule(const kiln_conv2d_desc *d, int gpu, int clblast);
/* Whether the direct backend runs d with the GPU shape's depthwise kernel
 * (gpu: a GPU-shaped device): a depthwise layer whose staged input tile
 * fits the kernel's local memory (conv.c). Pure, for the rules' test. */
int kiln__conv_depthwise_kernel(const kiln_conv2d_desc *d, int gpu);
/* Whether it runs d, not depthwise, with the GPU shape's implicit GEMM
 * (no im2col buffer): a group's depth c/groups x r x s of 16 or more and 8
 * or more output channels a group (conv.c). Pure. */
int kiln__conv_implicit_gemm(const kiln_conv2d_desc *d, int gpu);
kiln_status kiln__conv_choose(kiln_runtime *rt, const kiln__conv *cv,
                              const kiln__conv_backend **out);

/* The fewest bytes of the memory budget that backend id needs left, beyond
 * x, the weights, the bias and y, to run cv: kiln's im2col packs, at least
 * one panel of the im2col matrix (conv_kiln.c); 0 for the direct kernel.
 * For the layers above the backends; ops/ asks the backend's workspace. */
uint64_t kiln__conv_workspace(kiln_runtime *rt, const kiln__conv *cv, kiln_backend id);

extern const kiln__conv_backend kiln__conv_direct;  /* src/backends/kiln/conv_kiln.c */
extern const kiln__conv_backend kiln__conv_im2col;  /* src/backends/kiln/conv_kiln.c */
extern const kiln__conv_backend kiln__conv_clblast; /* src/backends/clblast_conv.c,
                                                        when HAVE_CLBLAST */
/* The convolution backends built in, NULL-terminated (src/backends/table.c). */
extern const kiln__conv_backend *const kiln__conv_backends[];

/* ---- FFT backends (src/ops/fft.c, src/backends/) ----------------------- */

/* A checked kiln_fft() request: batch >= 1, and the element counts; d.inverse
 * is 1 for C2R and an inverse C2C, else 0; shape[i] is 0 for i >= ndim. */
typedef struct kiln__fft {
  kiln_fft_desc d;
  size_t in_count, out_count; /* elements of in's and out's types */
  cl_mem in, out;             /* views' buffers' memory, never sub-buffers */
  size_t in_off, out_off;     /* views' first elements, of in's and out's types */
} kiln__fft;

/* A backend's plan, opaque to fft.c: built once per key and cached by the
 * runtime (fft.c), released when no call uses it and kiln_memory_trim() or
 * a want of memory asks, or when the runtime is destroyed. The device
 * memory a plan holds comes from kiln__plan_mem_create(). */
typedef struct kiln__fft_backend {
  kiln_backend id;
  /* NULL when the backend can run f; else why not (static text). */
  const char *(*cannot)(kiln_runtime *rt, const kiln__fft *f);
  /* Builds a plan for f's shape, kind, batch, precision and direction. */
  kiln_status (*plan)(kiln_runtime *rt, const kiln__fft *f, void **plan);
  /* Enqueues f with a plan from plan(); events go to kiln__runtime_track. */
  kiln_status (*run)(kiln_runtime *rt, void *plan, const kiln__fft *f);
  /* Releases a plan of rt (NULL is ignored), its memory with
   * kiln__plan_mem_release(). */
  void (*release)(kiln_runtime *rt, void *plan);
} kiln__fft_backend;

extern const kiln__fft_backend kiln__fft_kiln; /* src/backends/kiln/fft_kiln.c */
extern const kiln__fft_backend
  kiln__fft_clfft; /* src/backends/clfft/clfft.c, HAVE_CLFFT */
extern const kiln__fft_backend kiln__fft_vkfft; /* src/backends/vkfft.c, HAVE_VKFFT */
/* The FFT backends built in, NULL-terminated (src/backends/table.c). */
extern const kiln__fft_backend *const kiln__fft_backends[];

/* What kiln_fft() does before it plans anything: checks the request against
 * the buffers and the device record, fills f, and puts the backends that
 * may run it, best first, into be[0 .. *n). No OpenCL call, like
 * kiln__gemm_check(). */
kiln_status kiln__fft_check(kiln_runtime *rt, const kiln_fft_desc *desc,
                            const kiln_buffer *in, const kiln_buffer *out, kiln__fft *f,
                            const kiln__fft_backend *be[3], unsigned *n);

/* AUTO's order of the backends for d (fft.c), best first, on a GPU-shaped
 * device or not; some may not be built in. Pure, for the rules' test. */
void kiln__fft_rule(const kiln_fft_desc *d, int gpu, kiln_backend order[3]);

/* Checks a request, buffers aside, and fills f (its cl_mem fields NULL);
 * used by kiln_fft_host() (fft.c). */
kiln_status kiln__fft_plan(kiln_runtime *rt, const kiln_fft_desc *desc, kiln__fft *f);

/* The element type of f's input (out == 0) or output (out == 1). */
kiln_dtype kiln__fft_type(const kiln__fft *f, int out);

/* kiln_fft() within the profiling scope ps of the call (fft.c). */
kiln_status kiln__fft_run(kiln_runtime *rt, const kiln_fft_desc *desc,
                          const kiln_buffer *in, kiln_buffer *out,
                          kiln__profile_scope *ps);

/* R2C or C2R (checked desc, batch >= 1) as a C2C transform through
 * kiln__fft_run(), for shapes no backend runs (src/ops/fft_real.c). */
kiln_status kiln__fft_real_via_complex(kiln_runtime *rt, const kiln_fft_desc *d,
                                       const kiln_buffer *in, kiln_buffer *out,
                                       kiln__profile_scope *ps);

#endif /* KILN_OPS_H */
