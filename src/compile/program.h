/*
 * program.h — kiln's embedded cl/ sources and the programs built from them
 * (program.c, generated builtin_sources.c).
 */
#ifndef KILN_COMPILE_PROGRAM_H
#define KILN_COMPILE_PROGRAM_H

#include "base/util.h"

/* ---- kernels (program.c, generated builtin_sources.c) ------------------- */

/* One of kiln's cl/ files, embedded by tools/embed-cl.py: bytes is the text
 * kiln compiles for it, cl/prelude.cl and then the file once per pass
 * (kiln__builtin_join()). */
typedef struct kiln__builtin_source {
  const char *name;   /* the file's name without .cl */
  const char *common; /* its family's common part ("reduce_common"), or NULL */
  const unsigned char *bytes;
  size_t size;
} kiln__builtin_source;

extern const kiln__builtin_source kiln__builtin_sources[];
extern const size_t kiln__builtin_count;

/* Appends to out the text kiln compiles for cl/<name>.cl, whose text is
 * `text` (len bytes), after the prelude's (plen bytes): the prelude, then
 * the file once per pass, KILN_PASS 1 .. the n of its `#define KILN_PASSES
 * n` (1 without), each after `#line 1 "cl/<name>.cl"`. With a common part
 * (cl/<common>.cl, clen bytes; common NULL for none), that part comes
 * before the file in each pass, and its KILN_PASSES counts first.
 * tools/embed-cl.py joins the embedded files the same way. */
void kiln__builtin_join(kiln__str *out, const char *prelude, size_t plen,
                        const char *common, const char *ctext, size_t clen,
                        const char *name, const char *text, size_t len);

/* The name the options of builtin b go by, in out: for the files that
 * share a common part (cl/reduce.cl, cl/reduce_gpu.cl after
 * cl/reduce_common.cl) their family's, the name up to the first
 * underscore, since that part reads the same parameters; else the file's
 * own (cl/fft_local.cl's options are not cl/fft.cl's). */
void kiln__builtin_family(const kiln__builtin_source *b, char *out, size_t size);

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

/* Under rt's build lock, change(rt, arg), then drops the builtin programs
 * built so far, which the next call rebuilds with the options of then:
 * how the tuning replaces rt's parameters (kiln__runtime_set_tuning). */
void kiln__programs_rebuild_with(kiln_runtime *rt,
                                 void (*change)(kiln_runtime *rt, const void *arg),
                                 const void *arg);

/* Appends to out the options that builtin program `program` (a cl/
 * file's family: its name up to the first underscore) is built with on
 * rt's device. The tuning fills this hook (tuning.c: the
 * -cl-std the device takes and the defines of rt's parameters the program
 * reads), so compile/ never names the layer above it. Called with rt's
 * build lock held. */
typedef void (*kiln__options_fn)(kiln_runtime *rt, const char *program, kiln__str *out);
extern const kiln__options_fn kiln__builtin_options_of;

#endif /* KILN_COMPILE_PROGRAM_H */
