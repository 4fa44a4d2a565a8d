/*
 * gemm.cl — kiln's matrix multiply: C = alpha * op(A) * op(B) + beta * C.
 *
 * The host first packs op(A) and op(B) (any layout, transpose, leading
 * dimension, offset and batch stride) into zero-padded panels in the
 * compute type, so the products below need no bounds checks, read memory
 * in order, and handle every size. Only the C update checks bounds.
 *
 * Two shapes of the product, chosen by the device class (src/tuning.c):
 *  - kiln_gemm_cpu_*: one work-item owns a TM x TN tile of C in registers
 *    (TM rows, TN = 2 vectors of VW lanes) and streams its A and B panels;
 *    no local memory. PoCL runs a group's work-items one after another, so
 *    this is what vectorises.
 *  - kiln_gemm_gpu_*: a work-group stages TSK-deep slices of a TSM x TSN
 *    tile in local memory, loaded coalesced in vectors, double-buffered;
 *    each work-item keeps WPTM x WPTN outputs in registers.
 * Half storage is packed into float and stored back with vstore_half_rte:
 * float32 accumulation on every device, no cl_khr_fp16 needed.
 *
 * Read once per variant after cl/prelude.cl (which says how): f32, f16
 * (half storage, float compute) and f64 where the device has fp64.
 */
#ifndef KILN_PRELUDE
#error "cl/gemm.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif
#define KILN_PASSES 3

#if KILN_PASS == 1
/* The tile sizes are kiln's -D options, chosen for the device and variant
 * in src/tuning.c (or its tuning record), the one place that holds them:
 * KILN_GEMM_<name>_<variant>, so each variant is tuned alone. */
#if !defined(KILN_GEMM_TM_f32) || !defined(KILN_GEMM_VW_f32) ||                     \
  !defined(KILN_GEMM_TSM_f32) || !defined(KILN_GEMM_TSK_f32) || !defined(KILN_GEMM_GM_f32)
#error "cl/gemm.cl needs kiln's -DKILN_GEMM_* options (src/tuning.c)"
#endif

/* The pass's parameters, by its variant V. */
#define TM CAT(KILN_GEMM_TM_, V)
#define VW CAT(KILN_GEMM_VW_, V)
#define TSM CAT(KILN_GEMM_TSM_, V)
#define TSK CAT(KILN_GEMM_TSK_, V)
#define TSN CAT(KILN_GEMM_TSN_, V)
#define WPTM CAT(KILN_GEMM_WPTM_, V)
#define WPTN CAT(KILN_GEMM_WPTN_, V)
#define VWM CAT(KILN_GEMM_VWM_, V)
#define VWN CAT(KILN_GEMM_VWN_, V)
#define STRM CAT(KILN_GEMM_STRM_, V)
#define STRN CAT(KILN_GEMM_STRN_, V)
#define PADL CAT(KILN_GEMM_PAD_, V)
#define DB CAT(KILN_GEMM_DB_, V)
#define GM CAT(KILN_GEMM_GM_, V)

/* The epilogue, as the host packs it in `epi` (src/ops/gemm_kiln.c):
 * kiln_bias in bits 0-1 (1: a value per row, 2: per column), then
 * kiln_activation. The kernels take the bias pointer, its offset and batch
 * stride; bb is the batch item's bias vector. */
#define EPI_BIAS(epi) ((epi) & 3)
#define EPI_ACT(epi) ((epi) >> 2)

/* C[i, j] = act(alpha * v + beta * C[i, j] + bias) in C's storage (the
 * pass's V), C never read when beta_zero; the kernel's own alpha, beta,
 * beta_zero, ldc and epi. */
#define UPDATE(c, bb, i, j, v)                                                            \
  do {                                                                                   \
    size_t at_ = (i) * ldc + (j);                                                        \
    RT u_ = beta_zero ? alpha * (v) : alpha * (v) + beta * LOAD(V, c, at_);              \
    STORE(V, NAME(kiln_gemm_epi)(u_, bb, i, j, epi), c, at_);                            \
  } while (0)
#endif

/* The pass's variant: V names the storage type ST, RT is the compute type. */
#if KILN_PASS == 1
#define V f32
#define ST float
#define RT float
#elif KILN_PASS == 2
#define V f16
#define ST half
#define RT float
#elif KILN_PASS == 3 && defined(KILN_HAS_FP64)
#define V f64
#define ST double
#define RT double
#endif

#ifdef V

/* v plus the bias of row i or column j (bb: the batch item's vector), then
 * the activation, as EPI_BIAS and EPI_ACT read epi. */
inline RT NAME(kiln_gemm_epi)(RT v, global const ST *bb, size_t i, size_t j, int epi)
{
  if (EPI_BIAS(epi))
    v += (RT)LOAD(V, bb, EPI_BIAS(epi) == 1 ? i : j);
  ACTIVATE(RT, v, EPI_ACT(epi));
  return v;
}

/*
 * Packs X, R x K with element (r, p) at src[off + b*sb + r*sr + p*sp], into
 * dst: panels of PH rows, each Kp deep, row r of a panel at ((r / PH) * Kp +
 * p) * PH + r % PH; zero where r >= R or p >= K. A work-item writes W
 * rows of one panel at depth p, a contiguous run (W divides PH). On a CPU,
 * W = PH and work-item (p, run, b): a panel's width each, neighbours along
 * k, so a group reads its rows in order (runs as dimension 0 were slower).
 * On a GPU, W = 1 and work-item (run, p, b): neighbouring work-items write
 * neighbouring addresses. Global size (Kp, Rp / W, batch) or (Rp / W, Kp,
 * batch) by k_first. No division per element: with one work-item per
 * element, the index arithmetic made the packs a large share of the
 * product's time. Figures: docs/performance.md, "Matrix multiply" (the
 * packs' time in the trace of KILN_TRACE=gemm.json kiln bench gemm --sizes
 * 2048 --backend kiln).
 */
#if KILN_BUILDS(kiln_gemm_pack)
kernel void NAME(kiln_gemm_pack)(global const ST *src, ulong off, ulong sr, ulong sp,
                                 ulong sb, uint R, uint K, uint Kp, uint PH, uint W,
                                 int k_first, global RT *dst, ulong db)
{
  size_t g0 = get_global_id(0), g1 = get_global_id(1), b = get_global_id(2);
  size_t p = k_first ? g0 : g1, r0 = (k_first ? g1 : g0) * W;
  global RT *out = dst + b * db + ((r0 / PH) * Kp + p) * PH + r0 % PH;
  uint live = p >= K || r0 >= R ? 0 : min((size_t)W, R - r0);
  size_t at = off + b * sb + r0 * sr + p * sp;
  for (uint i = 0; i < live; i++)
    out[i] = LOAD(V, src, at + i * sr);
  for (uint i = live; i < W; i++)
    out[i] = 0;
}
#endif

/*
 * kiln_gemm_pack with W = PH where X's rows are contiguous (sr = 1: op(B)
 * of a row-major B, op(A) of a transposed or column-major A), for CPUs:
 * work-item (q, t, b) copies depths [q D, q D + D) of panels [t P, t P + P),
 * the panels' runs at a depth being P PH contiguous values of a row of src,
 * each run to its contiguous place in dst, by vectors of 4 where whole. In
 * kiln_gemm_pack a vector of work-items spans neighbouring depths, a row of
 * src apart, so each of its loads was a gather and each store a scatter;
 * here the work-items stay scalar (PoCL does not vectorise across
 * work-items that use vectors) and read long runs of a row; P = 16 and
 * D = 16 packed B about as fast as the same copy of A takes, several times
 * faster than the gathers (docs/performance.md, "Matrix multiply", the
 * pack's time in the trace of KILN_TRACE=FILE kiln bench gemm --sizes
 * 2048 --backend kiln).
 */
#if KILN_BUILDS(kiln_gemm_pack_runs)
kernel void NAME(kiln_gemm_pack_runs)(global const ST *src, ulong off, ulong sp, ulong sb,
                                      uint R, uint K, uint Kp, uint PH, uint D, uint P,
                                      global RT *dst, ulong db)
{
  size_t b = get_global_id(2), panels = (R + PH - 1) / PH;
  size_t t0 = get_global_id(1) * P, t1 = min(t0 + P, panels);
  for (size_t p = get_global_id(0) * D, e = min(p + D, (size_t)Kp); p < e; p++)
    for (size_t t = t0; t < t1; t++) {
      global RT *out = dst + b * db + (t * Kp + p) * PH;
      size_t at = off + b * sb + t * PH + p * sp;
      uint n = p < K ? min((size_t)PH, R - t * PH) : 0, i = 0;
      if (n == PH)
        for (; i + 4 <= PH; i += 4)
          vstore4(LOAD4(V, src, at + i), 0, out + i);
      for (; i < n; i++)
        out[i] = LOAD(V, src, at + i);
      for (; i < PH; i++)
        out[i] = 0;
    }
}
#endif

/* The CPU shapes' register tile: TM rows of two VW-lane vectors. ROW_FMA
 * adds row r's A value times the B vectors b0, b1; STORE_TILE updates the
 * tile at rows i0.., columns j0.. of cb, with the epilogue (bias vector bb):
 * a whole tile inside C by vectors,
 * one at C's edges value by value (unrolled like the loops that fill acc,
 * so acc stays in registers; the vectors took a few percent off the
 * product on PoCL, against value by value everywhere: docs/performance.md,
 * "Matrix multiply"). */
#define ROW_FMA(r, a_r, b0, b1)                                                          \
  do {                                                                                   \
    VEC(RT, VW) av = (VEC(RT, VW))(a_r);                                                \
    acc[r][0] = fma(av, b0, acc[r][0]);                                                  \
    acc[r][1] = fma(av, b1, acc[r][1]);                                                  \
  } while (0)
#define STORE_TILE(cb, i0, j0)                                                           \
  do {                                                                                   \
    RT t[2 * VW];                                                                        \
    if ((i0) + TM <= M && (j0) + 2 * VW <= N) {                                          \
      VEC(RT, VW) bc0 = 0, bc1 = 0; /* the tile's column bias */                         \
      if (EPI_BIAS(epi) == 2) {                                                          \
        bc0 = VLOADS(V, VW, bb + (j0));                                                  \
        bc1 = VLOADS(V, VW, bb + (j0) + VW);                                             \
      }                                                                                  \
      _Pragma("unroll") for (int r = 0; r < TM; r++)                                     \
      {                                                                                  \
        global ST *row = cb + ((i0) + r) * ldc + (j0);                                   \
        VEC(RT, VW) v0 = alpha * acc[r][0], v1 = alpha * acc[r][1];                     \
        if (!beta_zero) {                                                                \
          v0 += beta * VLOADS(V, VW, row);                                               \
          v1 += beta * VLOADS(V, VW, row + VW);                                          \
        }                                                                                \
        if (EPI_BIAS(epi)) {                                                             \
          RT rb = EPI_BIAS(epi) == 1 ? LOAD(V, bb, (i0) + r) : 0;                        \
          v0 += bc0 + rb;                                                                \
          v1 += bc1 + rb;                                                                \
        }                                                                                \
        ACTIVATE(VEC(RT, VW), v0, EPI_ACT(epi));                                         \
        ACTIVATE(VEC(RT, VW), v1, EPI_ACT(epi));                                         \
        VSTORES(V, VW, v0, row);                                                         \
        VSTORES(V, VW, v1, row + VW);                                                    \
      }                                                                                  \
    } else                                                                               \
      _Pragma("unroll") for (int r = 0; r < TM; r++)                                     \
    {                                                                                    \
      size_t i = (i0) + r;                                                               \
      VSTORE(VW)(acc[r][0], 0, t);                                                       \
      VSTORE(VW)(acc[r][1], 0, t + VW);                                                  \
      for (int cc = 0; i < M && cc < 2 * VW; cc++) {                                     \
        size_t j = (j0) + cc;                                                            \
        if (j < N)                                                                       \
          UPDATE(cb, bb, i, j, t[cc]);                                                   \
      }                                                                                  \
    }                                                                                    \
  } while (0)

/*
 * The CPU shape. A work-item computes rows ib*TM .. +TM and columns jb*TN ..
 * +TN of product b, TN = 2 * VW, from A's panel ib (TM rows, Kp deep) and
 * B's panel jb (TN columns). A's panels go in blocks of mb: work-item (i,
 * jb, q) has ib = (q mod blocks) mb + i and b = q / blocks, global size
 * (mb, Np / TN, blocks * batch). Neighbouring work-items share B's panel,
 * which stays in cache while a block's smaller A panels stream past it, and
 * the block stays in the last-level cache until every B panel has met it.
 * Work-items past A's last panel (in a short last block) return at once.
 */
#if KILN_BUILDS(kiln_gemm_cpu)
kernel void NAME(kiln_gemm_cpu)(global const RT *ap, global const RT *bp, ulong da,
                                ulong dbb, uint Kp, uint mb, uint blocks,
                                global ST *c, ulong offc, ulong ldc, ulong sc, uint M,
                                uint N, RT alpha, RT beta, int beta_zero,
                                global const ST *bias, ulong offbias, ulong sbias,
                                int epi)
{
  size_t jb = get_global_id(1), b = get_global_id(2) / blocks;
  size_t ib = get_global_id(2) % blocks * mb + get_global_id(0);
  if (ib * TM >= M)
    return; /* past A's last panel, in the last block */
  global const ST *bb = bias + offbias + b * sbias;
  global const RT *pa = ap + b * da + ib * (size_t)Kp * TM;
  global const RT *pb = bp + b * dbb + jb * (size_t)Kp * (2 * VW);
  VEC(RT, VW) acc[TM][2];
#pragma unroll
  for (int r = 0; r < TM; r++)
    acc[r][0] = acc[r][1] = 0;
  for (uint p = 0; p < Kp; p++) {
    VEC(RT, VW) b0 = VLOAD(VW)(0, pb + p * (2 * VW));
    VEC(RT, VW) b1 = VLOAD(VW)(0, pb + p * (2 * VW) + VW);
#pragma unroll
    for (int r = 0; r < TM; r++)
      ROW_FMA(r, pa[p * TM + r], b0, b1);
  }
  global ST *cb = c + offc + b * sc;
  STORE_TILE(cb, ib * TM, jb * (2 * VW));
}
#endif

#if KILN_PASS != 2
/*
 * Small products on the CPU shape, unpacked: the same register tile, read
 * where A and op(B) lie, for requests too small to repay the two pack
 * launches (src/tuning.c's `small`). A(i, p) at a[offa + b*sab + i*sar +
 * p*sap], any layout; op(B)(p, j) at b[offb + b*sbb + p*ldb + j], columns
 * contiguous (no transpose), so a row of the tile is two vector loads;
 * tiles past N's end load its columns one by one. Rows past M read row M -
 * 1 and are not stored. Float and double only: half storage packs.
 * Global size (ceil(M / TM), ceil(N / TN), batch).
 */
#if KILN_BUILDS(kiln_gemm_small)
kernel void NAME(kiln_gemm_small)(global const ST *a, ulong offa, ulong sar, ulong sap,
                                  ulong sab, global const ST *b, ulong offb, ulong ldb,
                                  ulong sbb, uint K, global ST *c, ulong offc, ulong ldc,
                                  ulong sc, uint M, uint N, RT alpha, RT beta,
                                  int beta_zero, global const ST *bias, ulong offbias,
                                  ulong sbias, int epi)
{
  size_t ib = get_global_id(0), jb = get_global_id(1), bt = get_global_id(2);
  global const ST *bb = bias + offbias + bt * sbias;
  size_t i0 = ib * TM, j0 = jb * (2 * VW);
  global const ST *pa[TM];
#pragma unroll
  for (int r = 0; r < TM; r++)
    pa[r] = a + offa + bt * sab + min(i0 + r, (size_t)M - 1) * sar;
  global const ST *pb = b + offb + bt * sbb + j0;
  VEC(RT, VW) acc[TM][2];
#pragma unroll
  for (int r = 0; r < TM; r++)
    acc[r][0] = acc[r][1] = 0;
  if (j0 + 2 * VW <= N) {
    for (uint p = 0; p < K; p++) {
      VEC(RT, VW) b0 = VLOAD(VW)(0, pb + p * ldb);
      VEC(RT, VW) b1 = VLOAD(VW)(0, pb + p * ldb + VW);
#pragma unroll
      for (int r = 0; r < TM; r++)
        ROW_FMA(r, pa[r][p * sap], b0, b1);
    }
  } else {
    RT t[2 * VW];
    for (uint p = 0; p < K; p++) {
      for (int cc = 0; cc < 2 * VW; cc++)
        t[cc] = j0 + cc < N ? pb[p * ldb + cc] : 0;
      VEC(RT, VW) b0 = VLOAD(VW)(0, t), b1 = VLOAD(VW)(0, t + VW);
#pragma unroll
      for (int r = 0; r < TM; r++)
        ROW_FMA(r, pa[r][p * sap], b0, b1);
    }
  }
  global ST *cb = c + offc + bt * sc;
  STORE_TILE(cb, i0, j0);
}
#endif
#endif

/*
 * Tiny products, on any device: one work-item an element of C, A and op(B)
 * read where they lie (A(i, p) at a[offa + b*sab + i*sar + p*sap], op(B)(p,
 * j) at b[offb + b*sbb + p*sbp + j*sbj], any layout and transpose), no
 * packs, no tiles. For the products src/tuning.c's `direct` admits, the
 * launches and the first call's build cost more than the arithmetic: this
 * is one launch where the packed path makes three, and a short program,
 * where the register tiles' unrolled code is most of what a process's
 * first small product waited for (docs/performance.md). Work-item (j, i,
 * b): neighbours along j share A's value and read neighbouring B and C.
 * Global size (N, M, batch).
 */
#if KILN_BUILDS(kiln_gemm_direct)
kernel void NAME(kiln_gemm_direct)(global const ST *a, ulong offa, ulong sar, ulong sap,
                                   ulong sab, global const ST *b, ulong offb, ulong sbp,
                                   ulong sbj, ulong sbb, uint K, global ST *c, ulong offc,
                                   ulong ldc, ulong sc, RT alpha, RT beta, int beta_zero,
                                   global const ST *bias, ulong offbias, ulong sbias,
                                   int epi)
{
  size_t j = get_global_id(0), i = get_global_id(1), bt = get_global_id(2);
  size_t oa = offa + bt * sab + i * sar, ob = offb + bt * sbb + j * sbj;
  RT v = 0;
  for (uint p = 0; p < K; p++)
    v = fma((RT)LOAD(V, a, oa + p * sap), (RT)LOAD(V, b, ob + p * sbp), v);
  global ST *cb = c + offc + bt * sc;
  UPDATE(cb, bias + offbias + bt * sbias, i, j, v);
}
#endif

/*
 * The GPU shape, built as CLBlast's xgemm is (docs/gemm.md, "On GPUs"). A
 * and B are packed as single panels, at[p * Mp + i] and bt[p * Np + j], Mp
 * a multiple of TSM, Np of TSN, Kp of TSK, so no load needs a bound. A
 * group computes a TSM x TSN tile of C: MDIMC x NDIMC work-items, each
 * WPTM x WPTN outputs in registers. Per slice of TSK depths, the group
 * copies A's TSK x TSM and B's TSK x TSN values to local memory in vectors
 * of VWM and VWN lanes (each load a contiguous run of a packed row, so
 * neighbouring work-items read neighbouring vectors), then every
 * work-item reads its WPTM / VWM vectors of A and WPTN / VWN of B at each
 * depth and multiplies them into its tile. Its vectors lie MDIMC (NDIMC)
 * vectors apart with STRM (STRN) 1, next to each other with 0. Local rows
 * end in PADL vectors of padding. The next slice's global loads go to
 * registers before the multiply, so they are in flight during it; with DB
 * they are stored to the other of two local buffers after it, one barrier
 * a slice, else to the one buffer after a second barrier. Groups take
 * C's tiles GM tile rows at a time, down each band's columns, so a band's
 * rows of A stay in the L2 cache while B's tiles pass (GM 1: row by row).
 * Local size (NDIMC, MDIMC, 1): dimension 0 along N, so neighbouring
 * work-items write neighbouring columns of C.
 */
#if KILN_BUILDS(kiln_gemm_gpu)
#define MDIMC (TSM / WPTM) /* work-items along M */
#define NDIMC (TSN / WPTN) /* and along N */
#define MVECS (TSM / VWM)  /* vectors in a slice's row of A */
#define NVECS (TSN / VWN)  /* and of B */
/* Vectors each work-item loads of a slice of A, and of B. */
#define ALOADS ((TSK * MVECS + MDIMC * NDIMC - 1) / (MDIMC * NDIMC))
#define BLOADS ((TSK * NVECS + MDIMC * NDIMC - 1) / (MDIMC * NDIMC))
/* A vector of W lanes of T, W = 1 the scalar; PUT stores one to p[0..W). */
#define GV_1(T) T
#define GV_2(T) CAT(T, 2)
#define GV_4(T) CAT(T, 4)
#define GV_8(T) CAT(T, 8)
#define GV(T, W) CAT(GV_, W)(T)
#define GV_PUT_1(v, p) (*(p) = (v))
#define GV_PUT_2(v, p) vstore2((v), 0, (p))
#define GV_PUT_4(v, p) vstore4((v), 0, (p))
#define GV_PUT_8(v, p) vstore8((v), 0, (p))
#define GV_PUT(W, v, p) CAT(GV_PUT_, W)(v, p)
#define AV GV(RT, VWM)
#define BV GV(RT, VWN)
/* The local vector of row kk that holds a work-item's w-th vector along M
 * (its rows AVEC * VWM on) or N. */
#define AVEC(tm, w) (STRM ? (tm) + (w) * MDIMC : (tm) * (WPTM / VWM) + (w))
#define BVEC(tn, w) (STRN ? (tn) + (w) * NDIMC : (tn) * (WPTN / VWN) + (w))
/* Slice k0's vectors of this work-item (flat id lid), from the group's
 * tile at vectors m0v and n0v of the packed rows (mv and nv vectors long),
 * into registers ra and rb, and from them into local buffer buf. A group's
 * vector count need not divide by its size: the guards are constant where
 * it does. */
#define LOAD_SLICE(k0)                                                                   \
  do {                                                                                   \
    _Pragma("unroll") for (int q = 0; q < ALOADS; q++)                                  \
    {                                                                                    \
      int l = lid + q * MDIMC * NDIMC;                                                   \
      if (ALOADS * MDIMC * NDIMC == TSK * MVECS || l < TSK * MVECS)                       \
        ra[q] = ag[((k0) + l / MVECS) * mv + m0v + l % MVECS];                           \
    }                                                                                    \
    _Pragma("unroll") for (int q = 0; q < BLOADS; q++)                                  \
    {                                                                                    \
      int l = lid + q * MDIMC * NDIMC;                                                   \
      if (BLOADS * MDIMC * NDIMC == TSK * NVECS || l < TSK * NVECS)                       \
        rb[q] = bg[((k0) + l / NVECS) * nv + n0v + l % NVECS];                           \
    }                                                                                    \
  } while (0)
#define STORE_SLICE(buf)                                                                 \
  do {                                                                                   \
    _Pragma("unroll") for (int q = 0; q < ALOADS; q++)                                  \
    {                                                                                    \
      int l = lid + q * MDIMC * NDIMC;                                                   \
      if (ALOADS * MDIMC * NDIMC == TSK * MVECS || l < TSK * MVECS)                       \
        as[buf][l / MVECS][l % MVECS] = ra[q];                                           \
    }                                                                                    \
    _Pragma("unroll") for (int q = 0; q < BLOADS; q++)                                  \
    {                                                                                    \
      int l = lid + q * MDIMC * NDIMC;                                                   \
      if (BLOADS * MDIMC * NDIMC == TSK * NVECS || l < TSK * NVECS)                       \
        bs[buf][l / NVECS][l % NVECS] = rb[q];                                           \
    }                                                                                    \
  } while (0)

kernel __attribute__((reqd_work_group_size(NDIMC, MDIMC, 1))) void
NAME(kiln_gemm_gpu)(global const RT *at, global const RT *bt, ulong da, ulong dbb,
                    uint Mp, uint Np, uint Kp, global ST *c, ulong offc, ulong ldc,
                    ulong sc, uint M, uint N, RT alpha, RT beta, int beta_zero,
                    global const ST *bias, ulong offbias, ulong sbias, int epi)
{
  local AV as[DB + 1][TSK][MVECS + PADL];
  local BV bs[DB + 1][TSK][NVECS + PADL];
  int tn = get_local_id(0), tm = get_local_id(1), lid = tm * NDIMC + tn;
  size_t gn = get_group_id(0), gm = get_group_id(1), b = get_global_id(2);
#if GM > 1
  { /* band gm / GM of GM tile rows, its tiles down each column in turn */
    size_t cols = get_num_groups(0), span = (size_t)GM * cols;
    size_t pid = gm * cols + gn, first = pid / span * GM;
    size_t rows = min((size_t)GM, (size_t)get_num_groups(1) - first);
    gm = first + pid % span % rows;
    gn = pid % span / rows;
  }
#endif
  size_t m0 = gm * TSM, n0 = gn * TSN;
  size_t mv = Mp / VWM, nv = Np / VWN, m0v = m0 / VWM, n0v = n0 / VWN;
  /* The packed rows are whole vectors from a whole vector's offset: Mp,
   * Np and the batch strides are multiples of the tiles, and so of VWM and
   * VWN, and the workspaces start aligned as OpenCL buffers do. */
  global const AV *ag = (global const AV *)(at + b * da);
  global const BV *bg = (global const BV *)(bt + b * dbb);
  global const ST *bb = bias + offbias + b * sbias;
  AV ra[ALOADS];
  BV rb[BLOADS];
  RT acc[WPTM][WPTN];
#pragma unroll
  for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
    for (int wn = 0; wn < WPTN; wn++)
      acc[wm][wn] = 0;
  uint slices = Kp / TSK;
  LOAD_SLICE(0);
  STORE_SLICE(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = 0; s < slices; s++) {
    int cur = DB ? s & 1 : 0;
    if (s + 1 < slices)
      LOAD_SLICE((size_t)(s + 1) * TSK);
    for (int kk = 0; kk < TSK; kk++) { /* unrolled as the compiler sees fit */
      RT av[WPTM], bv[WPTN];
#pragma unroll
      for (int w = 0; w < WPTM / VWM; w++)
        GV_PUT(VWM, as[cur][kk][AVEC(tm, w)], av + w * VWM);
#pragma unroll
      for (int w = 0; w < WPTN / VWN; w++)
        GV_PUT(VWN, bs[cur][kk][BVEC(tn, w)], bv + w * VWN);
#pragma unroll
      for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
        for (int wn = 0; wn < WPTN; wn++)
          acc[wm][wn] = fma(av[wm], bv[wn], acc[wm][wn]);
    }
    if (DB) { /* the other buffer was last read before the last barrier */
      if (s + 1 < slices)
        STORE_SLICE(DB ? cur ^ 1 : 0); /* 0: in bounds where DB is 0 */
      barrier(CLK_LOCAL_MEM_FENCE);
    } else {
      barrier(CLK_LOCAL_MEM_FENCE);
      if (s + 1 < slices) {
        STORE_SLICE(0);
        barrier(CLK_LOCAL_MEM_FENCE);
      }
    }
  }
  global ST *cb = c + offc + b * sc;
#pragma unroll
  for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
    for (int wn = 0; wn < WPTN; wn++) {
      size_t i = m0 + AVEC(tm, wm / VWM) * VWM + wm % VWM;
      size_t j = n0 + BVEC(tn, wn / VWN) * VWN + wn % VWN;
      if (i < M && j < N)
        UPDATE(cb, bb, i, j, acc[wm][wn]);
    }
}
#undef LOAD_SLICE
#undef STORE_SLICE
#undef AV
#undef BV
#endif

/* The epilogue alone, on C as a backend that cannot fuse it left it:
 * work-item (j, i, b). Global size (n, m, batch). */
#if KILN_BUILDS(kiln_gemm_epilogue)
kernel void NAME(kiln_gemm_epilogue)(global ST *c, ulong offc, ulong ldc, ulong sc,
                                     global const ST *bias, ulong offbias, ulong sbias,
                                     int epi)
{
  size_t j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
  size_t at = offc + b * sc + i * ldc + j;
  STORE(V, NAME(kiln_gemm_epi)(LOAD(V, c, at), bias + offbias + b * sbias, i, j, epi), c,
        at);
}
#endif

#undef V
#undef ST
#undef RT
#endif /* V */
