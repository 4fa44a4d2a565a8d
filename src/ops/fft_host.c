/*
 * fft_host.c — kiln_fft_host(): transforms of the caller's host arrays, in
 * runs of whole transforms that fit the device.
 *
 * The batch is cut into pieces of one fixed size, the largest whose input
 * and output fit what is left of the memory budget and the largest
 * allocation, and a last smaller piece: the runtime caches a plan per
 * batch size, so a long batch builds two plans at most. Two things the
 * pieces need are not foreseen: the plan's own memory (a scratch buffer
 * the size of a piece for kiln's multi-pass kernels and VkFFT's inverses,
 * VkFFT's and clFFT's temporary buffers; counted in the budget as plan
 * bytes, kiln__plan_mem_create()), and the complex workspace of a real
 * transform that no backend runs. When either does not fit, AUTO tries the
 * other backends, and then kiln__host_run() shrinks the pieces, whose
 * smaller plans need less.
 */
#include "base/abi.h"
#include "base/error.h"
#include "compile/program.h"
#include "core/memory.h"
#include "core/pool.h"
#include "ops/ops.h"

static const char fn[] = "kiln_fft_host";

typedef struct fft_job {
  kiln_runtime *rt;
  kiln__fft f;            /* the whole request */
  size_t in_one, out_one; /* elements of one transform */
  size_t in_es, out_es;
  const unsigned char *in;
  unsigned char *out;
  uint64_t room, max_alloc;
} fft_job;

static int fits(const kiln__host_job *j, size_t per, int sets)
{
  const fft_job *t = j->op;
  uint64_t in = (uint64_t)per * t->in_one * t->in_es,
           out = (uint64_t)per * t->out_one * t->out_es;
  uint64_t set = (uint64_t)kiln__pool_block_bytes(t->rt, in) +
                 kiln__pool_block_bytes(t->rt, out); /* as the pool rounds them */
  return sets * set <= t->room && in <= t->max_alloc && out <= t->max_alloc;
}

static size_t pieces(const kiln__host_job *j)
{
  const fft_job *t = j->op;
  return (t->f.d.batch + j->per - 1) / j->per;
}

/* Transforms in piece i. */
static size_t count(const kiln__host_job *j, size_t i)
{
  const fft_job *t = j->op;
  size_t left = t->f.d.batch - i * j->per;
  return left < j->per ? left : j->per;
}

static kiln_status create(kiln_runtime *rt, const kiln__host_job *j, kiln_buffer *io[2])
{
  const fft_job *t = j->op;
  kiln_status st = kiln__workspace(rt, fn, "device piece of in", kiln__fft_type(&t->f, 0),
                                   j->per * t->in_one, &io[0]);
  if (st == KILN_OK)
    st = kiln__workspace(rt, fn, "device piece of out", kiln__fft_type(&t->f, 1),
                         j->per * t->out_one, &io[1]);
  return st;
}

/* Piece i between the caller's array and a device buffer. */
static kiln_status move(const kiln__host_job *j, size_t i, kiln_buffer *buf, int write)
{
  const fft_job *t = j->op;
  size_t one = write ? t->in_one : t->out_one;
  return kiln__host_move(j, buf, 0, write, write ? (const void *)t->in : t->out,
                         i * j->per * one, 1, 1, count(j, i) * one);
}

static kiln_status put(kiln_runtime *rt, const kiln__host_job *j, size_t i,
                       kiln_buffer *in)
{
  (void)rt;
  return move(j, i, in, 1);
}

static kiln_status run(kiln_runtime *rt, const kiln__host_job *j, size_t i,
                       kiln_buffer *in, kiln_buffer *out)
{
  const fft_job *t = j->op;
  kiln_fft_desc d = t->f.d;
  d.batch = count(j, i);
  d.inverse = t->f.d.kind == KILN_FFT_C2C && t->f.d.inverse;
  return kiln_fft(rt, &d, in, out);
}

static kiln_status get(kiln_runtime *rt, const kiln__host_job *j, size_t i,
                       kiln_buffer *out)
{
  (void)rt;
  return move(j, i, out, 0);
}

KILN_API kiln_status kiln_fft_host(kiln_runtime *rt, const kiln_fft_desc *desc,
                                   const void *in, void *out)
{
  kiln_fft_desc given;
  kiln_status st = KILN__OP_DESC_IN(rt, fn, kiln_fft_desc, desc, &given);
  if (st != KILN_OK)
    return st;
  if (!in || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected the caller's array", fn,
                      !in ? "in" : "out");
  if (in == out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: in and out are the same array; expected two (the transform "
                      "runs out of place)",
                      fn);
  fft_job t = {.rt = rt, .in = in, .out = out};
  st = kiln__fft_plan(rt, &given, &t.f);
  if (st != KILN_OK)
    return st;
  size_t batch = t.f.d.batch;
  t.in_one = t.f.in_count / batch, t.out_one = t.f.out_count / batch;
  t.in_es = kiln_dtype_size(kiln__fft_type(&t.f, 0));
  t.out_es = kiln_dtype_size(kiln__fft_type(&t.f, 1));
  kiln__host_room(rt, &t.room, &t.max_alloc);
  kiln__host_job j = {&t, 0, 1, fits, pieces, create, put, run, get, NULL, NULL, NULL};
  if (!kiln__host_choose(&j, batch)) {
    uint64_t in_b = t.in_one * t.in_es, out_b = t.out_one * t.out_es;
    return kiln__fail(rt, KILN_ERR_OUT_OF_MEMORY,
                      "%s: one transform (%zu %s in, %zu %s out) needs %llu bytes on the "
                      "device (%llu as the memory pool rounds its two buffers), the "
                      "larger buffer %llu; but %llu are left of the memory budget, and "
                      "the largest allocation is %llu",
                      fn, t.in_one, kiln_dtype_name(kiln__fft_type(&t.f, 0)), t.out_one,
                      kiln_dtype_name(kiln__fft_type(&t.f, 1)),
                      (unsigned long long)(in_b + out_b),
                      (unsigned long long)(kiln__pool_block_bytes(rt, in_b) +
                                           kiln__pool_block_bytes(rt, out_b)),
                      (unsigned long long)(in_b > out_b ? in_b : out_b),
                      (unsigned long long)t.room, (unsigned long long)t.max_alloc);
  }
  return kiln__host_run(rt, &j);
}
