/*
 * prelude.cl — what every kernel file of cl/ shares. Not a program of its
 * own: kiln puts it before each file when it makes that file's program
 * (tools/embed-cl.py for the embedded sources, src/program.c for
 * KILN_CL_DIR), so the binary cache's key, a hash of the whole text,
 * covers it.
 *
 * The text kiln compiles for cl/<file>.cl is this prelude, then the file
 * once per pass: a file that says `#define KILN_PASSES n` is read n times,
 * KILN_PASS 1 .. n, each time after `#line 1 "cl/<file>.cl"`, so that a
 * compiler message names the file's own line. A pass picks its type variant
 * (f16, f32, f64, ...) by defining a few macros (V, the variant's suffix;
 * the storage and compute types) from KILN_PASS, then the kernels are
 * ordinary code in terms of them, named NAME(kiln_<family>), and the pass
 * ends by undefining them. What a file needs once (helpers, tables) sits
 * under `#if KILN_PASS == 1`. A family's files may share a common part,
 * cl/<family>_common.cl, which is no program either: it comes before
 * cl/<family>.cl and each cl/<family>_<x>.cl in every pass (its
 * KILN_PASSES counts), and the family's files are built with the
 * family's options.
 *
 * Each kernel sits under `#if KILN_BUILDS(kiln_<family>)` (the pass's
 * variant added, as NAME does) or `#if KILN_WANTS(<whole name>)`: a build
 * with -DKILN_ONLY holds only the kernels it names -DKILN_WANT_<name>, so
 * that an operation's first call compiles the one or two kernels it runs,
 * not every kernel and variant of the file (src/program.c). An identifier
 * that names no macro is 0 in #if, which drops the rest.
 */
#define KILN_PRELUDE 1

#ifdef KILN_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* NAME(kiln_gemm_pack) is kiln_gemm_pack_<V>: the pass's variant. */
#define NAME(x) CAT(CAT(x, _), V)

#ifdef KILN_ONLY
#define KILN_WANTS(k) CAT(KILN_WANT_, k)
#else
#define KILN_WANTS(k) 1
#endif
#define KILN_BUILDS(x) KILN_WANTS(NAME(x))

/* The vector of W lanes of type T, and its loads and stores. */
#define VEC(T, W) CAT(T, W)
#define VLOAD(W) CAT(vload, W)
#define VSTORE(W) CAT(vstore, W)

/* The OpenCL type of a suffix: TYPE(f16) is half. */
#define TYPE_f16 half
#define TYPE_f32 float
#define TYPE_f64 double
#define TYPE_i32 int
#define TYPE_i64 long
#define TYPE(S) CAT(TYPE_, S)

/* Element i of p, by the storage's suffix: half is read into float and
 * written back rounded to nearest even (vload_half and vstore_half_rte are
 * core OpenCL C: no cl_khr_fp16 needed); the other types as they are. */
#define LOAD_f16(p, i) vload_half((i), (p))
#define LOAD_f32(p, i) ((p)[i])
#define LOAD_f64(p, i) ((p)[i])
#define LOAD_i32(p, i) ((p)[i])
#define LOAD_i64(p, i) ((p)[i])

#define STORE_f16(v, p, i) vstore_half_rte((v), (i), (p))
#define STORE_f32(v, p, i) ((p)[i] = (v))
#define STORE_f64(v, p, i) ((p)[i] = (v))
#define STORE_i32(v, p, i) ((p)[i] = (v))
#define STORE_i64(v, p, i) ((p)[i] = (v))

/* The same with the suffix a macro, such as a pass's V. */
#define LOAD(S, p, i) CAT(LOAD_, S)(p, i)
/* Four values from element i on, as a vector of the compute type (float
 * for half storage). */
#define LOAD4_f16(p, i) vload_half4(0, (p) + (i))
#define LOAD4_f32(p, i) vload4(0, (p) + (i))
#define LOAD4_f64(p, i) vload4(0, (p) + (i))
#define LOAD4(S, p, i) CAT(LOAD4_, S)(p, i)
#define STORE(S, v, p, i) CAT(STORE_, S)(v, p, i)

/* W consecutive elements at p, as a vector of the compute type (half: of
 * float, stored back rounded to nearest even), for the float types. */
#define VLOADS_f16(W, p) CAT(vload_half, W)(0, (p))
#define VLOADS_f32(W, p) VLOAD(W)(0, (p))
#define VLOADS_f64(W, p) VLOAD(W)(0, (p))
#define VSTORES_f16(W, v, p) CAT(CAT(vstore_half, W), _rte)((v), 0, (p))
#define VSTORES_f32(W, v, p) VSTORE(W)((v), 0, (p))
#define VSTORES_f64(W, v, p) VSTORE(W)((v), 0, (p))
#define VLOADS(S, W, p) CAT(VLOADS_, S)(W, p)
#define VSTORES(S, W, v, p) CAT(VSTORES_, S)(W, v, p)

/* x through kiln_activation act (include/kiln/kiln.h's values), in x's own
 * type T (float or double, scalar or vector): the operations' epilogues.
 * The operand T(...) keeps the constants in x's precision; GELU is the
 * exact form, x/2 (1 + erf(x / sqrt 2)), as PyTorch's default. */
#define ACTIVATE(T, x, act)                                                              \
  do {                                                                                   \
    if ((act) == 1)                                                                      \
      x = fmax(x, (T)0);                                                                 \
    else if ((act) == 2)                                                                 \
      x = (T)0.5 * x * ((T)1 + erf(x * rsqrt((T)2)));                                     \
    else if ((act) == 3)                                                                 \
      x = (T)1 / ((T)1 + exp(-x));                                                       \
    else if ((act) == 4)                                                                 \
      x = tanh(x);                                                                       \
  } while (0)
