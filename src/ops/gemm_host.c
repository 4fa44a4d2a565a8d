/*
 * gemm_host.c — kiln_gemm_host(): a GEMM on the caller's host arrays, in
 * panels that fit the device.
 *
 * C is cut into mb x nb blocks and k into kb-deep slices, halving the
 * largest of the three until the blocks of A, B and C and the kiln backend's
 * packing workspace fit what is left of the memory budget and each buffer
 * fits the device's largest allocation. Blocks travel with rectangular
 * transfers (clEnqueueWriteBufferRect), so no host copy is made; slices
 * after the first accumulate into C with beta = 1, and the last applies
 * the epilogue, the bias from a device copy of the product's vector.
 */
#include <string.h>

#include "base/abi.h"
#include "base/error.h"
#include "compile/program.h"
#include "core/buffer.h"
#include "core/memory.h"
#include "ops/ops.h"
#include "ops/transfer.h"

typedef struct panels {
  size_t mb, nb, kb; /* block sizes */
  size_t es;         /* bytes per element */
} panels;

uint64_t kiln__gemm_pack_bytes(kiln_dtype dtype, size_t m, size_t n, size_t k)
{
  uint64_t cs = dtype == KILN_F64 ? 8 : 4;
  return cs * ((uint64_t)(m + 64) + (n + 64)) * (k + 16);
}

/* Bytes one block needs on the device, workspace included. */
static uint64_t panel_bytes(const kiln__gemm *g, const panels *p)
{
  uint64_t blocks =
    (uint64_t)p->mb * p->kb + (uint64_t)p->kb * p->nb + (uint64_t)p->mb * p->nb;
  return blocks * p->es + kiln__gemm_pack_bytes(g->dtype, p->mb, p->nb, p->kb);
}

static uint64_t largest_block(const panels *p)
{
  uint64_t a = (uint64_t)p->mb * p->kb, b = (uint64_t)p->kb * p->nb,
           c = (uint64_t)p->mb * p->nb;
  uint64_t m = a > b ? a : b;
  return (m > c ? m : c) * p->es;
}

static kiln_status choose_panels(kiln_runtime *rt, const kiln__gemm *g, panels *p)
{
  uint64_t left, max_alloc;
  kiln__host_room(rt, &left, &max_alloc);
  *p = (panels){g->m, g->n, g->k, kiln_dtype_size(g->dtype)};
  while (panel_bytes(g, p) > left || largest_block(p) > max_alloc) {
    size_t *big = p->mb >= p->nb && p->mb >= p->kb ? &p->mb
                  : p->nb >= p->kb                 ? &p->nb
                                                   : &p->kb;
    if (*big == 1)
      return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                        "kiln_gemm_host: even a 1 x 1 x 1 panel of this %zu x %zu x %zu "
                        "product needs %llu bytes, but %llu are left of the budget",
                        g->m, g->n, g->k, (unsigned long long)panel_bytes(g, p),
                        (unsigned long long)left);
    *big = (*big + 1) / 2;
  }
  return KILN_OK;
}

typedef struct host_args {
  const unsigned char *a, *b, *bias; /* bias: the caller's bias_host, or NULL */
  unsigned char *c;
  kiln_buffer *da, *db, *dc, *dbias; /* dbias: one product's bias vector */
  kiln_backend backend;
} host_args;

/* One C block (i0, j0, mh x nw) of one product, over every k slice. Stored
 * row-major: A(i, p) at a[i * lda + p] (transposed: a[p * lda + i]), B(p, j)
 * at b[p * ldb + j] (transposed: b[j * ldb + p]). */
static kiln_status block(kiln_runtime *rt, const kiln__gemm *g, const panels *p,
                         const host_args *h, size_t i0, size_t j0, size_t mh, size_t nw)
{
  int ta = g->trans_a == KILN_TRANS, tb = g->trans_b == KILN_TRANS;
  kiln_status st = KILN_OK;
  if (g->beta != 0.0)
    st = kiln__buffer_write_rect(h->dc, h->c, i0 * g->ldc + j0, g->ldc, mh, nw);
  for (size_t p0 = 0; p0 < g->k && st == KILN_OK; p0 += p->kb) {
    size_t kw = g->k - p0 < p->kb ? g->k - p0 : p->kb;
    st = ta ? kiln__buffer_write_rect(h->da, h->a, p0 * g->lda + i0, g->lda, kw, mh)
            : kiln__buffer_write_rect(h->da, h->a, i0 * g->lda + p0, g->lda, mh, kw);
    if (st == KILN_OK)
      st = tb ? kiln__buffer_write_rect(h->db, h->b, j0 * g->ldb + p0, g->ldb, nw, kw)
              : kiln__buffer_write_rect(h->db, h->b, p0 * g->ldb + j0, g->ldb, kw, nw);
    kiln_gemm_desc d;
    kiln_gemm_desc_init(&d, g->dtype, mh, nw, kw);
    d.trans_a = g->trans_a;
    d.trans_b = g->trans_b;
    d.alpha = g->alpha;
    d.beta = p0 == 0 ? g->beta : 1.0; /* later slices add to the first */
    d.backend = h->backend;
    if (p0 + kw == g->k) { /* the epilogue, on the last slice */
      d.activation = g->activation;
      d.bias = g->bias_kind;
      d.bias_buffer = h->dbias;
      d.offset_bias = g->bias_kind == KILN_BIAS_ROW ? i0 : j0;
    }
    if (st == KILN_OK)
      st = kiln_gemm(rt, &d, h->da, h->db, h->dc);
  }
  if (st == KILN_OK)
    st = kiln__buffer_read_rect(h->dc, h->c, i0 * g->ldc + j0, g->ldc, mh, nw);
  return st;
}

static kiln_status all_blocks(kiln_runtime *rt, const kiln__gemm *g, const panels *p,
                              host_args *h)
{
  kiln_status st = KILN_OK;
  const unsigned char *a0 = h->a, *b0 = h->b;
  unsigned char *c0 = h->c;
  for (size_t bi = 0; bi < g->batch && st == KILN_OK; bi++) {
    h->a = a0 + (g->offset_a + bi * g->stride_a) * p->es;
    h->b = b0 + (g->offset_b + bi * g->stride_b) * p->es;
    h->c = c0 + (g->offset_c + bi * g->stride_c) * p->es;
    if (h->bias)
      st = kiln_buffer_write(h->dbias, 0, kiln_buffer_count(h->dbias),
                             h->bias + (g->offset_bias + bi * g->stride_bias) * p->es);
    for (size_t i0 = 0; i0 < g->m && st == KILN_OK; i0 += p->mb)
      for (size_t j0 = 0; j0 < g->n && st == KILN_OK; j0 += p->nb)
        st = block(rt, g, p, h, i0, j0, g->m - i0 < p->mb ? g->m - i0 : p->mb,
                   g->n - j0 < p->nb ? g->n - j0 : p->nb);
  }
  return st;
}

KILN_API kiln_status kiln_gemm_host(kiln_runtime *rt, const kiln_gemm_desc *desc,
                                    const void *a, const void *b, void *c)
{
  kiln_gemm_desc given;
  kiln_status st = KILN__OP_DESC_IN(rt, "kiln_gemm_host", kiln_gemm_desc, desc, &given);
  if (st != KILN_OK)
    return st;
  if (!a || !b || !c)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_gemm_host: %s is NULL",
                      !a   ? "a"
                      : !b ? "b"
                           : "c");
  desc = &given;
  static const char fn[] = "kiln_gemm_host";
  kiln__gemm g;
  panels p;
  size_t need;
  st = kiln__gemm_plan(rt, desc, &g);
  if (st == KILN_OK)
    st = kiln__gemm_bias_check(rt, fn, desc, g.batch, 1, &need);
  if (st != KILN_OK)
    return st;
  int swap = desc->layout == KILN_COL_MAJOR; /* plan() swapped A and B */
  host_args h = {.a = swap ? b : a,
                 .b = swap ? a : b,
                 .bias = desc->bias_host,
                 .c = c,
                 .backend = desc->backend};
  /* the bias first, so that the panels fit beside it */
  if (h.bias)
    st = kiln__workspace(rt, fn, "device copy of the bias", g.dtype,
                         g.bias_kind == KILN_BIAS_ROW ? g.m : g.n, &h.dbias);
  if (st == KILN_OK)
    st = choose_panels(rt, &g, &p);
  if (st == KILN_OK)
    st = kiln__workspace(rt, fn, "device block of A", g.dtype, p.mb * p.kb, &h.da);
  if (st == KILN_OK)
    st = kiln__workspace(rt, fn, "device block of B", g.dtype, p.kb * p.nb, &h.db);
  if (st == KILN_OK)
    st = kiln__workspace(rt, fn, "device block of C", g.dtype, p.mb * p.nb, &h.dc);
  if (st == KILN_OK)
    st = all_blocks(rt, &g, &p, &h);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  kiln_buffer_destroy(h.da);
  kiln_buffer_destroy(h.db);
  kiln_buffer_destroy(h.dc);
  kiln_buffer_destroy(h.dbias);
  return st;
}
