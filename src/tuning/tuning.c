/*
 * tuning.c — the device-dependent parameters of kiln's own kernels, in one
 * place: kernels read them as -D defines and the host dispatch reads the same
 * struct, so no kernel or op tests "is this a CPU" itself. These are the
 * rules' values; a device's tuning record (record.c), measured by kiln_tune()
 * (tune.c), replaces them, after kiln__tuning_check() has passed it.
 */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "compile/program.h"
#include "core/runtime.h"
#include "device/rank.h"
#include "tuning/tuning.h"

/*
 * GEMM. On a CPU device (PoCL) a work-item owns TM rows x 2 vectors of VW
 * lanes of C in registers, VW the lanes of the device's widest vectors
 * (kiln__vector_lanes_float): on AVX-512, 16 lanes and TM 8 make 16
 * accumulators, half the 32 vector registers, which leaves room for the B
 * vectors and keeps both FMA pipes busy; on AVX2, 8 lanes and TM 6 make 12
 * of its 16 (TM 8 would spill); double takes half the lanes. GPUs and
 * accelerators run the GPU shape, whose rule is kiln__gemm_gpu_rule below.
 */
/* Products of at most SMALL_RULE^3 multiply-adds skip the packs on a CPU
 * device (one launch, not three, and no copy of A and B): unpacked ran
 * faster up to 768^3 on PoCL and slower from 1000^3, where B's rows stream
 * from the cache less well than its packed panels once the product no
 * longer fits. A row pitch of B that is a multiple of 4 KiB (1024 floats)
 * packs whatever the size (gemm_kiln.c): those rows share cache sets, and
 * unpacked ran at half the speed. The figures are in docs/performance.md,
 * "Matrix multiply" (`kiln bench gemm --sizes 256,512,640,768,1000,1024
 * --backend kiln`, built with SMALL_RULE 0 against this one). */
#define SMALL_RULE 768

/* Products of at most DIRECT_RULE^3 multiply-adds, on any device, run one
 * plain work-item an element of C (kiln_gemm_direct): their time is the
 * launches, and a process's first such call builds a short program, not a
 * register tile's unrolled code (docs/performance.md#first-call has the
 * figures). Up to this size the plain kernel, which PoCL runs scalar, is
 * as fast as the tiles once built; from 24^3 on it falls behind them. */
#define DIRECT_RULE 16

/* The CPU product walks A in blocks of about an eighth of the device's
 * last-level cache (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE), each block against
 * every panel of B: the block stays in the cache while B's panels stream
 * past it once, where A whole was read again for every B panel. Blocks of
 * 1 to 4 MiB were alike on PoCL (32 MiB L3), and no block at all the old
 * speed; docs/performance.md, "Matrix multiply", has the figures
 * (`kiln bench gemm --sizes 2048 --backend kiln`; kiln tune's progress
 * times each akib). */
#define A_BLOCK_PART 8
#define A_BLOCK_MAX_KIB (1u << 22) /* 4 GiB: what a record may hold */

/*
 * GEMM's GPU shape (cl/gemm.cl's kiln_gemm_gpu, built as CLBlast's xgemm
 * is). The rule starts from the shape known good on NVIDIA's Ampere and
 * Hopper class (CUTLASS's SGEMM and CLBlast's tuned xgemm there take the
 * same): a group computes 128 x 128 of C, 16 x 16 = 256 work-items of 8 x 8
 * outputs each. An 8 x 8 tile makes each value read from local memory
 * feed 8 multiply-adds (4 x 4 left local memory the bottleneck), and a
 * 128-wide tile makes each value read from global memory feed 128; 256
 * work-items are 8 warps (4 wavefronts), enough to hide the barriers'
 * waits with two groups on a multiprocessor. Slices 16 deep: two buffers
 * of A's and B's slices take 32 KiB of float, within the 48 KiB a group
 * gets on NVIDIA (64 KiB on AMD and Intel), and half the barriers of 8
 * deep. Loads of 4 lanes (vwm, vwn): 128-bit loads, the widest a GPU's
 * load instruction takes. Strided register tiles (strm, strn): neighbouring
 * work-items read neighbouring vectors of a local slice (no bank
 * conflicts) and write neighbouring columns of C (coalesced). No padding:
 * the packed slices are copied to local memory in order, not transposed,
 * so stores and reads already spread over the banks; the tuner tries it.
 * Double buffering: one barrier a slice, not two, and the next slice's
 * global loads in flight during the multiply. Groups walk C 8 tile rows at
 * a time (Triton's default GROUP_M): those rows of A stay in L2 while B's
 * tiles pass. Where a group cannot hold 256 work-items the tiles halve
 * (64 x 64 of 8 x 8 is 64 work-items, a wavefront); where local memory
 * cannot hold the slices (double's, on NVIDIA), they are 8 deep, then
 * single-buffered, then the tiles halve.
 *
 * Measure: `kiln tune` (its progress times every candidate of the grid in
 * tune_grid.c at the device's sizes) and `kiln bench gemm --backend
 * kiln,clblast` before and after; the figures go to docs/performance.md.
 */
void kiln__gemm_gpu_rule(uint64_t max_wg, uint64_t local_bytes, size_t real_bytes,
                         kiln__gemm_tuning *g)
{
  g->tsm = g->tsn = 128;
  g->tsk = 16;
  g->wptm = g->wptn = 8;
  g->vwm = g->vwn = 4;
  g->strm = g->strn = 1;
  g->pad = 0;
  g->db = 1;
  g->gm = 8;
  while (kiln__gemm_gpu_group(g) > max_wg && g->tsm > 1) {
    g->tsm /= 2, g->tsn /= 2; /* 8 x 8 outputs kept while tiles allow */
    if (g->wptm > g->tsm)
      g->wptm = g->wptn = g->tsm;
    if (g->vwm > g->wptm)
      g->vwm = g->vwn = g->wptm;
  }
  while (kiln__gemm_gpu_local_bytes(g, real_bytes) > local_bytes && g->tsm > 1) {
    if (g->tsk > 8)
      g->tsk /= 2;
    else if (g->db)
      g->db = 0;
    else {
      g->tsm /= 2, g->tsn /= 2;
      g->wptm = g->wptn = g->wptm / 2 ? g->wptm / 2 : 1;
      if (g->vwm > g->wptm)
        g->vwm = g->vwn = g->wptm;
    }
  }
}

size_t kiln__gemm_gpu_group(const kiln__gemm_tuning *g)
{
  return g->wptm && g->wptn ? (size_t)(g->tsm / g->wptm) * (g->tsn / g->wptn) : 0;
}

size_t kiln__gemm_gpu_local_bytes(const kiln__gemm_tuning *g, size_t real_bytes)
{
  if (!g->vwm || !g->vwn)
    return 0;
  size_t row = (size_t)(g->tsm / g->vwm + g->pad) * g->vwm +
               (size_t)(g->tsn / g->vwn + g->pad) * g->vwn;
  return (g->db ? 2 : 1) * (size_t)g->tsk * row * real_bytes;
}

static void gemm_defaults(const kiln_device_info *dev, kiln__gemm_tuning g[])
{
  unsigned w = kiln__vector_lanes_float(dev);
  unsigned vw = w >= 16 ? 16 : w >= 8 ? 8 : 4;
  /* x86 has 32 vector registers with AVX-512 and 16 below it: TM x 2
   * accumulators, 2 vectors of B and A's broadcast must fit. */
  unsigned tm = w >= 16 ? 8 : 6;
  uint64_t akib = dev->global_mem_cache_bytes / A_BLOCK_PART / 1024;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
    g[v] = (kiln__gemm_tuning){
      .gpu_shape = (dev->type & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) != 0,
      .tm = tm,
      .vw = v == KILN__GEMM_F64 ? vw / 2 : vw,
      .small = SMALL_RULE,
      .direct = DIRECT_RULE,
      .akib = (unsigned)(akib < A_BLOCK_MAX_KIB ? akib : A_BLOCK_MAX_KIB),
    };
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
    kiln__gemm_gpu_rule(dev->max_work_group_size, dev->local_mem_bytes,
                        v == KILN__GEMM_F64 ? 8 : 4, &g[v]);
}

/*
 * Reductions are memory-bound. On a CPU device each of 4 chunks per compute
 * unit is one work-item reading a contiguous run with 16-wide vector loads
 * (PoCL runs a group's work-items in turn, so a grid-stride loop there
 * reads a fiftieth as fast: docs/performance.md, "Reductions", `kiln bench
 * reduce --backend kiln,clblast`). On GPUs (docs/reduce.md, "On GPUs"),
 * groups of up to 256 work-items read grid-stride 16-byte vectors, 4 loads
 * in flight each, and 1024 work-items per compute unit: half of what an
 * NVIDIA SM or an AMD CU holds, so the whole grid is resident at once with
 * up to 64 registers a work-item (a second, partial wave would leave some
 * units with twice the work), and 64 KiB of loads in flight per unit, more
 * than bandwidth times latency asks. kiln tune searches 1 to 32 groups a
 * unit and groups of 32 to 1024 around it.
 */
#define REDUCE_ITEMS_PER_CU 1024

static void reduce_defaults(const kiln_device_info *dev, kiln__reduce_tuning *t)
{
  unsigned cu = dev->compute_units ? dev->compute_units : 1, wg = 1;
  while (wg * 2 <= 256 && wg * 2 <= dev->max_work_group_size)
    wg *= 2;
  *t = (kiln__reduce_tuning){
    .gpu_shape = (dev->type & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) != 0,
    .chunks = 4 * cu,
    .wg = wg,
    .groups =
      cu < 65536 / (REDUCE_ITEMS_PER_CU / wg) ? REDUCE_ITEMS_PER_CU / wg * cu : 65536,
  };
}

/*
 * FFT passes (cl/fft.cl). A pass of stride p >= 16 runs the kernel indexed
 * by (k, block), which tells the compiler that neighbouring work-items read
 * and write neighbouring points and twiddles (with k = i mod p it sees a
 * scatter and a gather); below 16 a vector of work-items would span several
 * blocks. Groups of 64 along k: on PoCL they halved the wide passes' time
 * against the 1-D kernel in PoCL's own group size, and 16 and 1024 were
 * slower; 64 is also a whole number of warps or wavefronts on GPUs.
 *
 * On a CPU float32 rows run the vector kernels (vec_first, cl/fft.cl):
 * radix 16 and 256 written with float8s, whole-vector loads and stores, the
 * first pass transposing in registers: faster a pass than PoCL's
 * vectorisation of the scalar radix-32 kernels. On a GPU each work-item's
 * 32 float8s would crowd its registers and leave 8 times fewer work-items:
 * the scalar kernels. Rows of up to 2048 points run whole in one launch
 * (row_max), which saves every pass but the first and last its trip through
 * memory; at 128 points it gained nothing.
 *
 * The figures are in docs/performance.md, "The kernels' parameters" under
 * FFT (each pass's time from KILN_TRACE=FILE kiln run fft, on one PoCL
 * thread with POCL_MAX_PTHREAD_COUNT=1).
 *
 * On a GPU whole sequences run in local memory (cl/fft_local.cl), as
 * VkFFT and cuFFT do: 4096 float32 points (32 KiB) where the device gives
 * a group 48 KiB, radix 8 (512 work-items at 4096, 16 registers of points
 * each), up to 16 sequences a group (columns of 16 points' 128 bytes side
 * by side). Not yet measured on a GPU (docs/fft.md, "On GPUs").
 */
static void fft_defaults(const kiln_device_info *dev, kiln__fft_tuning *t)
{
  size_t group = 64;
  while (group > 1 && group > dev->max_work_group_size)
    group /= 2;
  int gpu = (dev->type & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) != 0;
  *t = (kiln__fft_tuning){.wide_from = 16,
                          .group = (unsigned)group,
                          .vec_first = !gpu,
                          .row_max = gpu ? 0 : KILN__FFT_ROW_MAX,
                          .local_radix = 8,
                          .local_cols = 16};
  size_t pts = 4096; /* the local room for float32 points, within the group's size */
  while (pts > 16 &&
         (pts * 8 > dev->local_mem_bytes || pts / 8 > dev->max_work_group_size))
    pts /= 2;
  t->local_max = gpu && pts > 16 ? (unsigned)pts : 0;
}

/*
 * Convolution. The rules keep what the kernels did before they had
 * parameters, on every device: the direct kernel computes one output a
 * work-item (qw = kb = 1) in groups the driver picks (lq = lp = 0), and
 * im2col writes about 8 MiB of im2col matrix a step, whole images (the
 * matrix then stays in the last-level cache between im2col's write and the
 * GEMM's read; a ResNet 3x3 layer of 56 x 56 x 64 is 7 MiB an image).
 * kiln tune measures the rest (docs/tuning.md): on PoCL wider blocks (qw)
 * ran several times as fast as the rule, more channels a work-item (kb)
 * only where channels share inputs (not depthwise), and im2col steps near
 * 8 MiB were alike where much smaller or larger ones were slower. Blocks
 * along a row cost coalescing on GPUs, which is why the rules leave them
 * to kiln tune. The figures are in docs/performance.md, "Convolution"
 * (kiln tune's progress, which times every candidate).
 */
static void conv_defaults(const kiln_device_info *dev, kiln__conv_tuning *t)
{
  (void)dev;
  *t = (kiln__conv_tuning){.qw = 1, .kb = 1, .lq = 0, .lp = 0, .col_kib = 8192};
}

void kiln__tuning_defaults(const kiln_device_info *dev, kiln__tuning *t)
{
  gemm_defaults(dev, t->gemm);
  reduce_defaults(dev, &t->reduce);
  fft_defaults(dev, &t->fft);
  conv_defaults(dev, &t->conv);
}

void kiln__tuning_shape(kiln_runtime *rt, kiln_device_type shape)
{
  kiln_device_info dev = kiln__runtime_device(rt)->info;
  if (shape)
    dev.type = shape;
  rt->shape = dev.type;
  kiln__tuning_defaults(&dev, &rt->tuning->t);
}

int kiln__gpu_shape(const kiln_runtime *rt)
{
  return (rt->shape & (KILN_DEVICE_GPU | KILN_DEVICE_ACCELERATOR)) != 0;
}

enum kiln__gemm_variant kiln__gemm_variant_of(kiln_dtype dtype)
{
  return dtype == KILN_F64   ? KILN__GEMM_F64
         : dtype == KILN_F16 ? KILN__GEMM_F16
                             : KILN__GEMM_F32;
}

static const char *const gemm_tags[KILN__GEMM_VARIANTS] = {"f32", "f16", "f64"};

static int is_pow2(unsigned x)
{
  return x && !(x & (x - 1));
}

/* One bad value: its name (where.field), what it is and what the device
 * allows. */
static int bad(kiln__str *why, const char *where, const char *field, unsigned v,
               const char *allowed)
{
  kiln__str_appendf(why, "%s%s.%s = %u, but %s", why->len ? "; " : "", where, field, v,
                    allowed);
  return -1;
}

static int is_vw(unsigned v)
{
  return v == 1 || v == 2 || v == 4 || v == 8;
}

/* The GPU shape's parameters (tuning.h), at `at`: each in its range, the
 * register tile whole vectors and whole in the group's tile, the group
 * within the device's and the slices within its local memory. */
static int check_gemm_gpu(const kiln_device_info *dev, const kiln__gemm_tuning *g,
                          const char *at, size_t real, kiln__str *why)
{
  int rc = 0;
  if (g->tsm < 1 || g->tsm > 256)
    rc = bad(why, at, "tsm", g->tsm, "a group's tile has 1 to 256 rows");
  if (g->tsn < 1 || g->tsn > 256)
    rc = bad(why, at, "tsn", g->tsn, "a group's tile has 1 to 256 columns");
  if (g->tsk < 1 || g->tsk > 64)
    rc = bad(why, at, "tsk", g->tsk, "the slice depth is 1 to 64");
  if (g->wptm < 1 || g->wptm > 16 || g->tsm % g->wptm)
    rc = bad(why, at, "wptm", g->wptm, "it must divide tsm and be at most 16");
  if (g->wptn < 1 || g->wptn > 16 || g->tsn % g->wptn)
    rc = bad(why, at, "wptn", g->wptn, "it must divide tsn and be at most 16");
  else if (g->wptm <= 16 && g->wptm * g->wptn > 128)
    rc = bad(why, at, "wptn", g->wptn, "wptm x wptn outputs are at most 128");
  if (!is_vw(g->vwm) || (g->wptm && g->wptm % g->vwm))
    rc = bad(why, at, "vwm", g->vwm, "it is 1, 2, 4 or 8 and divides wptm");
  if (!is_vw(g->vwn) || (g->wptn && g->wptn % g->vwn))
    rc = bad(why, at, "vwn", g->vwn, "it is 1, 2, 4 or 8 and divides wptn");
  if (g->strm > 1)
    rc = bad(why, at, "strm", g->strm, "it is 0 (contiguous) or 1 (strided)");
  if (g->strn > 1)
    rc = bad(why, at, "strn", g->strn, "it is 0 (contiguous) or 1 (strided)");
  if (g->pad > 8)
    rc = bad(why, at, "pad", g->pad, "it is 0 to 8 vectors");
  if (g->db > 1)
    rc = bad(why, at, "db", g->db, "it is 0 (one buffer) or 1 (two)");
  if (g->gm < 1 || g->gm > 64)
    rc = bad(why, at, "gm", g->gm, "it is 1 (row by row) to 64 tile rows");
  if (rc)
    return rc; /* the sizes below need whole tiles */
  char text[160];
  size_t group = kiln__gemm_gpu_group(g), local = kiln__gemm_gpu_local_bytes(g, real);
  if (group > dev->max_work_group_size) {
    snprintf(
      text, sizeof text,
      "(tsm / wptm) x (tsn / wptn) = %zu work-items; the device's group holds %llu",
      group, (unsigned long long)dev->max_work_group_size);
    rc = bad(why, at, "wptm", g->wptm, text);
  }
  if (local > dev->local_mem_bytes) {
    snprintf(
      text, sizeof text,
      "the slices of A and B (two of each with db) take %zu bytes of local memory; "
      "the device has %llu",
      local, (unsigned long long)dev->local_mem_bytes);
    rc = bad(why, at, "tsk", g->tsk, text);
  }
  return rc;
}

static int check_gemm(const kiln_device_info *dev, const kiln__gemm_tuning *g,
                      const char *tag, kiln__str *why)
{
  char at[16];
  int rc = 0;
  size_t real = strcmp(tag, "f64") == 0 ? 8 : 4;
  snprintf(at, sizeof at, "gemm.%s", tag);
  if (g->tm < 1 || g->tm > 32)
    rc = bad(why, at, "tm", g->tm, "the CPU shape takes 1 to 32 rows");
  if (g->vw != 1 && g->vw != 2 && g->vw != 4 && g->vw != 8 && g->vw != 16)
    rc = bad(why, at, "vw", g->vw, "OpenCL vectors have 1, 2, 4, 8 or 16 lanes");
  if (g->cg > 64 || (g->cg & (g->cg - 1)) || g->cg > dev->max_work_group_size)
    rc = bad(why, at, "cg", g->cg,
             "a CPU group is 0 (the driver's choice) or a power of two up to 64 and "
             "the device's group size");
  if (g->akib > A_BLOCK_MAX_KIB)
    rc = bad(why, at, "akib", g->akib, "A's blocks are at most 4 GiB (0: none)");
  if (g->small > 4096)
    rc = bad(why, at, "small", g->small,
             "unpacked products go up to 4096^3 multiply-adds (0: none)");
  if (check_gemm_gpu(dev, g, at, real, why))
    rc = -1;
  return rc;
}

/* The direct kernel keeps kb x qw accumulators in registers (private
 * memory): at most 64, as the CPU GEMM's tile. Its work-group uses no local
 * memory, so the group size is the only device limit. */
static int check_conv(const kiln_device_info *dev, const kiln__conv_tuning *c,
                      kiln__str *why)
{
  int rc = 0;
  if (c->qw < 1 || c->qw > 16)
    rc = bad(why, "conv", "qw", c->qw, "it is 1 to 16 outputs");
  if (c->kb < 1 || c->kb > 16)
    rc = bad(why, "conv", "kb", c->kb, "it is 1 to 16 channels");
  else if (c->qw <= 16 && c->qw * c->kb > 64)
    rc = bad(why, "conv", "kb", c->kb, "kb x qw accumulators are at most 64");
  if ((c->lq == 0) != (c->lp == 0))
    rc = bad(why, "conv", c->lq ? "lp" : "lq", 0,
             "lq and lp are both 0 (the driver's choice) or both set");
  else if (c->lq > 1024 || c->lp > 1024 ||
           (size_t)c->lq * c->lp > dev->max_work_group_size)
    rc = bad(why, "conv", "lq", c->lq, "lq x lp work-items exceed the device's group");
  if (c->col_kib < 64 || c->col_kib > (1u << 20))
    rc = bad(why, "conv", "col_kib", c->col_kib, "it is 64 KiB to 1 GiB");
  return rc;
}

int kiln__tuning_check(const kiln_device_info *dev, const kiln__tuning *t, kiln__str *why)
{
  int rc = 0;
  for (int v = 0; v < KILN__GEMM_VARIANTS; v++)
    if (check_gemm(dev, &t->gemm[v], gemm_tags[v], why))
      rc = -1;
  const kiln__reduce_tuning *r = &t->reduce;
  if (r->chunks < 1 || r->chunks > 65536)
    rc = bad(why, "reduce", "chunks", r->chunks, "it is 1 to 65536");
  if (!is_pow2(r->wg) || r->wg > dev->max_work_group_size)
    rc = bad(why, "reduce", "wg", r->wg,
             "it must be a power of two within the device's group");
  if (r->groups < 1 || r->groups > 65536)
    rc = bad(why, "reduce", "groups", r->groups, "it is 1 to 65536");
  const kiln__fft_tuning *f = &t->fft;
  if (!is_pow2(f->group) || f->group > dev->max_work_group_size)
    rc = bad(why, "fft", "group", f->group,
             "it must be a power of two within the device's group");
  if (!is_pow2(f->wide_from) || f->wide_from < 16)
    rc =
      bad(why, "fft", "wide_from", f->wide_from, "it must be a power of two, 16 or more");
  if (f->vec_first > 1)
    rc = bad(why, "fft", "vec_first", f->vec_first, "it is 0 or 1");
  if (f->row_max &&
      (!is_pow2(f->row_max) || f->row_max < 128 || f->row_max > KILN__FFT_ROW_MAX))
    rc = bad(why, "fft", "row_max", f->row_max,
             "it is 0 or a power of two from 128 to 2048");
  _Static_assert(KILN__FFT_ROW_MAX == 2048, "row_max's message names the limit");
  if (f->local_radix != 4 && f->local_radix != 8 && f->local_radix != 16)
    rc = bad(why, "fft", "local_radix", f->local_radix, "it is 4, 8 or 16");
  if (f->local_cols < 1 || f->local_cols > 64 || !is_pow2(f->local_cols))
    rc =
      bad(why, "fft", "local_cols", f->local_cols, "it is a power of two from 1 to 64");
  if (f->local_max && (!is_pow2(f->local_max) || f->local_max < 32 ||
                       f->local_max > 4096 || f->local_max * 8 > dev->local_mem_bytes ||
                       f->local_max / f->local_radix > dev->max_work_group_size))
    rc = bad(why, "fft", "local_max", f->local_max,
             "it is 0 or a power of two from 32 to 4096 whose float32 points fit the "
             "device's local memory, local_max / local_radix work-items its group");
  if (check_conv(dev, &t->conv, why))
    rc = -1;
  return rc;
}

void kiln__tuning_defines(const kiln__tuning *t, const char *program, kiln__str *out)
{
  if (strcmp(program, "gemm") == 0)
    for (int v = 0; v < KILN__GEMM_VARIANTS; v++) {
      const kiln__gemm_tuning *g = &t->gemm[v];
      const char *s = gemm_tags[v];
      kiln__str_appendf(
        out,
        " -DKILN_GEMM_TM_%s=%u -DKILN_GEMM_VW_%s=%u -DKILN_GEMM_TSM_%s=%u"
        " -DKILN_GEMM_TSN_%s=%u -DKILN_GEMM_TSK_%s=%u"
        " -DKILN_GEMM_WPTM_%s=%u -DKILN_GEMM_WPTN_%s=%u"
        " -DKILN_GEMM_VWM_%s=%u -DKILN_GEMM_VWN_%s=%u"
        " -DKILN_GEMM_STRM_%s=%u -DKILN_GEMM_STRN_%s=%u"
        " -DKILN_GEMM_PAD_%s=%u -DKILN_GEMM_DB_%s=%u -DKILN_GEMM_GM_%s=%u",
        s, g->tm, s, g->vw, s, g->tsm, s, g->tsn, s, g->tsk, s, g->wptm, s, g->wptn, s,
        g->vwm, s, g->vwn, s, g->strm, s, g->strn, s, g->pad, s, g->db, s, g->gm);
    }
  else if (strcmp(program, "reduce") == 0)
    kiln__str_appendf(out, " -DKILN_REDUCE_WG=%u", t->reduce.wg);
  else if (strcmp(program, "conv") == 0)
    kiln__str_appendf(out,
                      " -DKILN_CONV_QW=%u -DKILN_CONV_KB=%u -DKILN_CONV_DW_LX=%u"
                      " -DKILN_CONV_DW_LY=%u -DKILN_CONV_DW_QW=%u -DKILN_CONV_DW_TILE=%u",
                      t->conv.qw, t->conv.kb, KILN__CONV_DW_LX, KILN__CONV_DW_LY,
                      KILN__CONV_DW_QW, KILN__CONV_DW_TILE);
  else if (strcmp(program, "fft") == 0) /* the size of kiln_fft_rowv's arrays */
    kiln__str_appendf(out, " -DKILN_FFT_ROW_MAX=%u", KILN__FFT_ROW_MAX);
  else if (strcmp(program, "fft_local") == 0) /* its local arrays and registers */
    kiln__str_appendf(out, " -DKILN_FFT_LPOINTS=%u -DKILN_FFT_LRADIX=%u",
                      t->fft.local_max ? t->fft.local_max : 64, t->fft.local_radix);
}

void kiln__builtin_options(const kiln_device_info *dev, const kiln__tuning *t,
                           const char *program, kiln__str *out)
{
  /* kiln's kernels are OpenCL C 1.2; a 1.1 device gets 1.1 and a 1.0 device
   * (which has no -cl-std) nothing. Every OpenCL 3.0 device accepts 1.2. */
  unsigned major = 0, minor = 0;
  sscanf(dev->opencl_c_version, "OpenCL C %u.%u", &major, &minor);
  unsigned c = major * 10 + minor;
  if (c >= 12)
    kiln__str_appendf(out, "-cl-std=CL1.2");
  else if (c == 11)
    kiln__str_appendf(out, "-cl-std=CL1.1");
  if (dev->has_fp64)
    kiln__str_appendf(out, " -DKILN_HAS_FP64=1");
  if (dev->has_fp16)
    kiln__str_appendf(out, " -DKILN_HAS_FP16=1");
  if (strcmp(program, "reduce") == 0)
    kiln__str_appendf(out, " -DKILN_REDUCE_LANES=%u",
                      kiln__vector_lanes_float(dev) >= 16 ? 16 : 8);
  kiln__tuning_defines(t, program, out);
}

/* compile/'s hook: rt's parameters, read under its build lock. */
static void options_of(kiln_runtime *rt, const char *program, kiln__str *out)
{
  kiln__builtin_options(&kiln__runtime_device(rt)->info, &rt->tuning->t, program, out);
}

const kiln__options_fn kiln__builtin_options_of = options_of;

static void set_params(kiln_runtime *rt, const void *t)
{
  rt->tuning->t = *(const kiln__tuning *)t;
}

void kiln__runtime_set_tuning(kiln_runtime *rt, const kiln__tuning *t)
{
  kiln__programs_rebuild_with(rt, set_params, t);
  kiln__runtime_tuning_changed(rt);
}
