/*
 * run.h — what the operations of `kiln run` share (run.c): the command's
 * messages, the option parsing, .npy files in and out, the runtime, uploads
 * and the pieces of the report. Each operation's command is in its own file:
 * run_gemm.c, run_reduce.c, run_conv.c, run_fft.c.
 */
#ifndef KILN_TOOLS_RUN_H
#define KILN_TOOLS_RUN_H

#include <stddef.h>

#include "cli.h" /* kiln_cli_runtime_destroy() */
#include "kiln/kiln.h"

double run_now_ms(void);

/* One line on stderr, after the command running ("kiln run gemm: "): what
 * was wrong with the command. Returns 1, so that callers can write
 * `return run_say(...), -1;`. */
int run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The operation's usage on stderr, as one line; returns -1. */
int run_usage(const char *usage);

/* Checks an option that takes a value: 0 when o is one of the n known ones
 * and has its value v (NULL: o came last); else -1 after saying "unknown
 * option" or that o needs a value. */
int run_option_value(const char *o, const char *v, const char *const *known, int n);

/* ---- options -------------------------------------------------------------- */

/* The files named without an option go into operands[0], then operands[1]
 * (NULL: not taken); one more is "one <noun> too many". Every argument that
 * starts with '-' (and is not "-" alone) goes to option(ctx, o, v), v the
 * next argument or NULL at the end; it returns the arguments it used: 1 for
 * a flag, 2 for an option with its value, or -1 after saying why. */
typedef struct run_cli {
  int (*option)(void *ctx, const char *o, const char *v);
  void *ctx;
  const char **operands[2];
  const char *noun; /* "array", "matrix" */
} run_cli;

/* Parses argv (argv[0] is the operation's name); 0, or -1 after saying why.
 * Which options and operands are required is the caller's to check. */
int run_parse_args(const run_cli *cli, int argc, char **argv);

/* A finite number; 0, or -1 (the caller says why). */
int run_parse_number(const char *s, double *v);

/* The index of s among the n names (NULL names never match), or -1. */
int run_parse_enum(const char *s, const char *const *names, int n);

/* Option o's value s, a comma-separated list of 1 or `most` whole numbers of
 * at least `least`, into v; the count, or -1 after saying that o takes
 * `takes`. */
int run_parse_counts(const char *o, const char *s, size_t least, int most,
                     const char *takes, size_t *v);

/* --backend's value v, one of the n backends an operation takes, into *be;
 * 0, or -1 after saying why ("expected auto, kiln or clblast"). */
int run_parse_backend(const char *v, kiln_backend *be, const kiln_backend *takes, int n);

/* gemm's and reduce's --backend: auto, kiln or clblast. */
int run_parse_blas_backend(const char *v, kiln_backend *be);

/* ---- arrays and the device ------------------------------------------------ */

/* Loads a .npy file in C order; 0, or -1 after saying why. */
int run_load(const char *path, kiln_array *x);

/* Allocates y->data for y->count elements of y->dtype (uninitialised); 0, or
 * -1 after saying why. */
int run_alloc_result(kiln_array *y);

/* The runtime on the best device (or KILN_DEVICE's); 0, or -1 after saying
 * why. */
int run_start(kiln_runtime **rt);

/* Uploads x and converts it to dtype on the device (one write when x already
 * holds dtype) into a new buffer *out, which the caller destroys. */
kiln_status run_upload(kiln_runtime *rt, const kiln_array *x, kiln_dtype dtype,
                       kiln_buffer **out);

/* The end of the computation that returned st: its error from rt, or y
 * written to path. 0, or -1 after saying why. */
int run_write(const kiln_runtime *rt, kiln_status st, const char *path,
              const kiln_array *y);

/* ---- the report ----------------------------------------------------------- */

/* Writes "(2, 3)" into buf, as numpy prints a shape. */
void run_shape_text(char *buf, size_t size, unsigned ndim, const size_t *shape);

/* The backend as the report names it: "auto (kiln's rules)" for auto. */
const char *run_backend_label(kiln_backend be);

/* ---- the operations --------------------------------------------------------
 * Each takes the arguments after `kiln run` (argv[0] is the operation's
 * name) and returns the exit status. */

/* `kiln run gemm` (run_gemm.c). */
int run_gemm(int argc, char **argv);

/* `kiln run reduce` (run_reduce.c). */
int run_reduce(int argc, char **argv);

/* `kiln run conv2d` (run_conv.c). */
int run_conv2d(int argc, char **argv);

/* `kiln run fft` (run_fft.c). */
int run_fft(int argc, char **argv);

#endif /* KILN_TOOLS_RUN_H */
