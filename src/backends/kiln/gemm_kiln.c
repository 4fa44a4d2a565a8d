/*
 * gemm_kiln.c — the `kiln` GEMM backend: cl/gemm.cl's pack kernels, then the
 * CPU- or GPU-shaped product that src/tuning/tuning.c picks for the device.
 *
 * Packing costs one read and write of A and B, O(mk + kn), against the
 * product's O(mnk); it buys in-order panels, any layout, transpose, stride
 * and offset through one kernel, and zero padding so every size works.
 */
#include "compile/kernel_args.h"

#include "base/error.h"
#include "base/util.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "ops/ops.h"
#include "tuning/tuning.h"

/* The caller's name in messages. */
static const char what[] = "kiln_gemm(kiln)";

static size_t round_up(size_t x, size_t to)
{
  return (x + to - 1) / to * to;
}

/* The padded sizes and panel heights of one request on one device. */
typedef struct plan {
  kiln__gemm_tuning t;
  size_t mp, np, kp;  /* padded m, n, k */
  size_t pha, phb;    /* panel heights of packed A and packed op(B)' */
  kiln_dtype compute; /* KILN_F32, or KILN_F64 */
  const char *tag;    /* "f16", "f32", "f64": the kernels' suffix */
} plan;

static void make_plan(kiln_runtime *rt, const kiln__gemm *g, plan *p)
{
  p->t = rt->tuning->t.gemm[kiln__gemm_variant_of(g->dtype)];
  p->compute = g->dtype == KILN_F64 ? KILN_F64 : KILN_F32;
  p->tag = g->dtype == KILN_F16 ? "f16" : g->dtype == KILN_F64 ? "f64" : "f32";
  if (p->t.gpu_shape) {
    p->mp = round_up(g->m, p->t.tsm);
    p->np = round_up(g->n, p->t.tsn);
    p->kp = round_up(g->k, p->t.tsk);
    p->pha = p->mp; /* one panel each: at[p * Mp + i], bt[p * Np + j] */
    p->phb = p->np;
  } else {
    unsigned tn = 2 * p->t.vw;
    p->mp = round_up(g->m, p->t.tm);
    p->np = round_up(g->n, tn);
    p->kp = g->k;
    p->pha = p->t.tm;
    p->phb = tn;
  }
}

static const char *cannot(kiln_runtime *rt, const kiln__gemm *g)
{
  (void)rt;
  (void)g; /* every type, layout and size: the packs pad what the tiles need */
  return NULL;
}

/* The depths and panels one work-item of kiln_gemm_pack_runs copies
 * (cl/gemm.cl says what they gave). */
#define PACK_DEPTHS 16
#define PACK_PANELS 16

/* Packs X (R x K, element (r, p) at off + r*sr + p*sp, batch stride sb) into
 * the workspace dst in panels of ph rows. */
static kiln_status pack(kiln_runtime *rt, const plan *p, cl_mem src, size_t off,
                        size_t sr, size_t sp, size_t sb, size_t rows, size_t k,
                        size_t rows_padded, size_t ph, size_t batch, kiln_buffer *dst)
{
  /* On a CPU, a panel's width along k a work-item, or where X's rows are
   * contiguous, blocks of their runs; on a GPU, one row along the rows
   * (gemm.cl). */
  int cpu = !p->t.gpu_shape;
  unsigned w = cpu ? (unsigned)ph : 1;
  if (cpu && sr == 1) {
    size_t panels = rows_padded / ph;
    size_t runs[3] = {(p->kp + PACK_DEPTHS - 1) / PACK_DEPTHS,
                      (panels + PACK_PANELS - 1) / PACK_PANELS, batch};
    return kiln__launch_gemm_pack_runs(rt, what, p->tag, 3, runs, NULL, src, off, sp, sb,
                                       rows, k, p->kp, ph, PACK_DEPTHS, PACK_PANELS,
                                       kiln__buffer_mem(dst), rows_padded * p->kp);
  }
  size_t global[3] = {cpu ? p->kp : rows_padded, cpu ? rows_padded / w : p->kp, batch};
  return kiln__launch_gemm_pack(rt, what, p->tag, 3, global, NULL, src, off, sr, sp, sb,
                                rows, k, p->kp, ph, w, cpu, kiln__buffer_mem(dst),
                                rows_padded * p->kp);
}

/* g's epilogue as the kernels read it (cl/gemm.cl's EPI_BIAS, EPI_ACT). */
static cl_int epi(const kiln__gemm *g)
{
  return (cl_int)g->bias_kind | (cl_int)g->activation << 2;
}

/* The bias argument: with no bias the kernels never read it, but OpenCL
 * wants a valid object. */
static cl_mem bias_mem(const kiln__gemm *g)
{
  return g->bias ? g->bias : g->c;
}

kiln_status kiln__gemm_epilogue(kiln_runtime *rt, const kiln__gemm *g)
{
  size_t global[3] = {g->n, g->m, g->batch};
  const char *tag = g->dtype == KILN_F16 ? "f16" : g->dtype == KILN_F64 ? "f64" : "f32";
  return kiln__launch_gemm_epilogue(rt, "kiln_gemm(epilogue)", tag, 3, global, NULL, g->c,
                                    g->offset_c, g->ldc, g->stride_c, bias_mem(g),
                                    g->offset_bias, g->stride_bias, epi(g));
}

/* The CPU product's block of A (tuning.h's akib): panels of panel_bytes
 * each, at least one, at most all `panels`. */
static size_t a_block(const kiln__gemm_tuning *t, size_t panel_bytes, size_t panels)
{
  size_t mb = (size_t)t->akib * 1024 / panel_bytes;
  return !t->akib || mb >= panels ? panels : mb ? mb : 1;
}

static kiln_status product(kiln_runtime *rt, const kiln__gemm *g, const plan *p,
                           kiln_buffer *ap, kiln_buffer *bp)
{
  cl_mem a = kiln__buffer_mem(ap), b = kiln__buffer_mem(bp);
  cl_ulong da = p->mp * p->kp, db = p->np * p->kp;
  int beta_zero = g->beta == 0.0;
  if (p->t.gpu_shape) {
    /* a group a tile of C: (tsn / wptn) x (tsm / wptm) work-items */
    size_t global[3] = {p->np / p->t.wptn, p->mp / p->t.wptm, g->batch};
    size_t local[3] = {p->t.tsn / p->t.wptn, p->t.tsm / p->t.wptm, 1};
    return kiln__launch_gemm_gpu(rt, what, p->tag, 3, global, local, a, b, da, db, p->mp,
                                 p->np, p->kp, g->c, g->offset_c, g->ldc, g->stride_c,
                                 g->m, g->n, g->alpha, g->beta, beta_zero, bias_mem(g),
                                 g->offset_bias, g->stride_bias, epi(g));
  }
  /* Work-item (i, jb, block + blocks * batch item) computes A's panel
   * block * mb + i against B's panel jb: a block of mb panels meets every B
   * panel before the next block starts (tuning.c). Groups of cg work-items
   * along M (the most up to cg that divide mb): many groups, which the
   * driver's threads take as they finish, where a driver left to choose
   * may make one a core, each waiting on the slowest. */
  size_t panels = p->mp / p->pha,
         mb = a_block(&p->t, p->pha * p->kp * kiln_dtype_size(p->compute), panels);
  size_t blocks = (panels + mb - 1) / mb;
  size_t global[3] = {mb, p->np / p->phb, blocks * g->batch};
  size_t local[3] = {kiln__pow2_divisor(global[0], p->t.cg), 1, 1};
  return kiln__launch_gemm_cpu(
    rt, what, p->tag, 3, global, p->t.cg ? local : NULL, a, b, da, db, p->kp, (cl_uint)mb,
    (cl_uint)blocks, g->c, g->offset_c, g->ldc, g->stride_c, g->m, g->n, g->alpha,
    g->beta, beta_zero, bias_mem(g), g->offset_bias, g->stride_bias, epi(g));
}

void kiln__gemm_kiln_packing(kiln_runtime *rt, const kiln__gemm *g,
                             kiln__gemm_packing *out)
{
  plan p;
  make_plan(rt, g, &p);
  *out = (kiln__gemm_packing){
    .mp = p.mp, .np = p.np, .kp = p.kp, .pha = p.pha, .phb = p.phb, .compute = p.compute};
}

kiln_status kiln__gemm_kiln_run_packed(kiln_runtime *rt, const kiln__gemm *g,
                                       kiln_buffer *ap, kiln_buffer *bp)
{
  plan p;
  make_plan(rt, g, &p);
  kiln_buffer *own_a = NULL, *own_b = NULL;
  size_t na, nb;
  if (kiln__mul_overflow(p.mp * p.kp, g->batch, &na) ||
      kiln__mul_overflow(p.np * p.kp, g->batch, &nb))
    return kiln__fail(rt, KILN_ERR_OVERFLOW, "kiln_gemm: the packed operands overflow");
  /* The workspace counts against the memory budget like any buffer; it is
   * released once the enqueued kernels are done with it. */
  kiln_status st = KILN_OK;
  if (!ap && (st = kiln__workspace(rt, "kiln_gemm", "packing workspace for A", p.compute,
                                   na, &own_a)) == KILN_OK)
    ap = own_a;
  if (st == KILN_OK && !bp &&
      (st = kiln__workspace(rt, "kiln_gemm", "packing workspace for B", p.compute, nb,
                            &own_b)) == KILN_OK)
    bp = own_b;
  /* A is m x k; op(B)' is n x k, so both pack along k. Row-major storage:
   * A(i, p) = a[i * lda + p], or a[p * lda + i] when transposed; op(B)(p, j)
   * = b[p * ldb + j], or b[j * ldb + p] when transposed. */
  int ta = g->trans_a == KILN_TRANS, tb = g->trans_b == KILN_TRANS;
  if (st == KILN_OK && own_a)
    st = pack(rt, &p, g->a, g->offset_a, ta ? 1 : g->lda, ta ? g->lda : 1, g->stride_a,
              g->m, g->k, p.mp, p.pha, g->batch, ap);
  if (st == KILN_OK && own_b)
    st = pack(rt, &p, g->b, g->offset_b, tb ? g->ldb : 1, tb ? 1 : g->ldb, g->stride_b,
              g->n, g->k, p.np, p.phb, g->batch, bp);
  if (st == KILN_OK)
    st = product(rt, g, &p, ap, bp);
  kiln_buffer_destroy(own_a);
  kiln_buffer_destroy(own_b);
  return st;
}

/* Whether g runs unpacked (cl/gemm.cl's kiln_gemm_small): the CPU shape,
 * float or double, op(B) not transposed, at most small^3 multiply-adds,
 * and B's row pitch not a multiple of 4 KiB (tuning.c says why). */
static int unpacked(const kiln__gemm_tuning *t, const kiln__gemm *g)
{
  double s = t->small;
  size_t pitch = g->ldb * kiln_dtype_size(g->dtype);
  return !t->gpu_shape && g->dtype != KILN_F16 && g->trans_b != KILN_TRANS &&
         pitch % 4096 != 0 && (double)g->m * g->n * g->k <= s * s * s;
}

static kiln_status run_unpacked(kiln_runtime *rt, const kiln__gemm *g,
                                const kiln__gemm_tuning *t)
{
  int ta = g->trans_a == KILN_TRANS;
  size_t tn = 2 * t->vw;
  /* Groups as the packed product's, but never the driver's: PoCL makes
   * the 64 work-items of a 128^3 product one group, on one core. */
  size_t global[3] = {(g->m + t->tm - 1) / t->tm, (g->n + tn - 1) / tn, g->batch};
  size_t local[3] = {kiln__pow2_divisor(global[0], t->cg), 1, 1};
  return kiln__launch_gemm_small(
    rt, what, g->dtype == KILN_F64 ? "f64" : "f32", 3, global, local, g->a, g->offset_a,
    ta ? 1 : g->lda, ta ? g->lda : 1, g->stride_a, g->b, g->offset_b, g->ldb, g->stride_b,
    g->k, g->c, g->offset_c, g->ldc, g->stride_c, g->m, g->n, g->alpha, g->beta,
    g->beta == 0.0, bias_mem(g), g->offset_bias, g->stride_bias, epi(g));
}

/* Whether g is a tiny product (tuning.c's `direct`): kiln_gemm_direct. */
static int direct(const kiln__gemm_tuning *t, const kiln__gemm *g)
{
  double s = t->direct;
  return (double)g->m * g->n * g->k <= s * s * s;
}

static kiln_status run_direct(kiln_runtime *rt, const kiln__gemm *g)
{
  int ta = g->trans_a == KILN_TRANS, tb = g->trans_b == KILN_TRANS;
  size_t global[3] = {g->n, g->m, g->batch};
  const char *tag = g->dtype == KILN_F16 ? "f16" : g->dtype == KILN_F64 ? "f64" : "f32";
  return kiln__launch_gemm_direct(
    rt, what, tag, 3, global, NULL, g->a, g->offset_a, ta ? 1 : g->lda, ta ? g->lda : 1,
    g->stride_a, g->b, g->offset_b, tb ? 1 : g->ldb, tb ? g->ldb : 1, g->stride_b, g->k,
    g->c, g->offset_c, g->ldc, g->stride_c, g->alpha, g->beta, g->beta == 0.0,
    bias_mem(g), g->offset_bias, g->stride_bias, epi(g));
}

static kiln_status run(kiln_runtime *rt, const kiln__gemm *g)
{
  const kiln__gemm_tuning *t = &rt->tuning->t.gemm[kiln__gemm_variant_of(g->dtype)];
  return direct(t, g)     ? run_direct(rt, g)
         : unpacked(t, g) ? run_unpacked(rt, g, t)
                          : kiln__gemm_kiln_run_packed(rt, g, NULL, NULL);
}

const kiln__gemm_backend kiln__gemm_kiln = {KILN_BACKEND_KILN, cannot, run};
