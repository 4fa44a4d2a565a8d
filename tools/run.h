/*
 * run.h — what the operations of `kiln run` share (run.c): the command's
 * messages, the option parsing, .npy and .npz files in and .npy files out,
 * the runtime, uploads and the pieces of the report. Each operation's command is in its own file:
 * run_gemm.c, run_reduce.c, run_conv.c, run_fft.c.
 */
#ifndef KILN_TOOLS_RUN_H
#define KILN_TOOLS_RUN_H

#include <stddef.h>

#include "cli.h" /* kiln_cli_runtime_destroy() */
#include "kiln/kiln.h"
#include "opts.h"

double run_now_ms(void);

/* One line on stderr, after the command running ("kiln run gemm: "): what
 * was wrong with the command. Returns 1, so that callers can write
 * `return run_say(...), -1;`. */
int run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* kiln_cli_parse() for the operation c, which run_say() then names: -1 to
 * go on, else the exit status. */
int run_parse(const cli_command *c, void *args, int argc, char **argv);

/* What every operation's help says of its arrays, after its own paragraph. */
#define RUN_ARRAYS_NOTE                                                                  \
  "\n\nEvery array is a .npy file, or an array of an .npz file: FILE.npz:NAME\n"         \
  "(np.savez's names; arr_0, arr_1, ... for unnamed ones), or FILE.npz alone\n"          \
  "when it holds one."

/* The backend that a --backend choice names. */
kiln_backend run_backend_named(const char *name);

/* --activation's choices, NULL-terminated: index i is kiln_activation i. */
extern const char *const run_activations[];

/* ---- arrays and the device ------------------------------------------------ */

/* Loads an array in C order: a .npy file, or FILE.npz:NAME, the array NAME
 * of an .npz file (FILE.npz alone: its only one); 0, or -1 after saying
 * why. */
int run_load(const char *path, kiln_array *x);

/* The array `member` (NULL: the only one) of the .npz file path, in C
 * order (npz.c); 0, or -1 after saying why. */
int run_load_npz(const char *path, const char *member, kiln_array *x);

/* Allocates y->data for y->count elements of y->dtype (uninitialised); 0, or
 * -1 after saying why. */
int run_alloc_result(kiln_array *y);

/* The runtime on the best device (or KILN_DEVICE's); 0, or -1 after saying
 * why. */
int run_start(kiln_runtime **rt);

/* --devices SEL (gemm, conv2d, fft, reduce): the operation runs over a
 * device group instead. */
#define RUN_DEVICES_ROW(type, field)                                                     \
  {                                                                                      \
    .name = "--devices", CLI_TEXT_AT(type, field), .value = "SEL",                       \
    .help = "run over a device group: every device SEL selects (KILN_DEVICE's terms, "   \
            "or all), each taking chunks as it finishes",                                \
    .def_text = "one device"                                                             \
  }

/* The device group of --devices sel (kiln_group_create()); *g stays NULL
 * when sel is NULL (no --devices: one device). 0, or -1 after saying why. */
int run_group_start(const char *sel, kiln_group **g);

/* What each device of the group did: its units, share, chunks and time,
 * then the group's diagnostics (devices left out, failures). Nothing for
 * NULL (no --devices). */
void run_group_report(const kiln_group *g);

/* The report's device: rt's name, or "a group (below)" when the operation
 * ran over g (not NULL), whose devices run_group_report() lists. */
const char *run_device_name(const kiln_runtime *rt, const kiln_group *g);

/* Uploads x and converts it to dtype on the device (one write when x already
 * holds dtype) into a new buffer *out, which the caller destroys. */
kiln_status run_upload(kiln_runtime *rt, const kiln_array *x, kiln_dtype dtype,
                       kiln_buffer **out);

/* a's data converted to type t on the device (kiln_convert), in place of
 * a's own; nothing to do when a holds t already. 0, or -1 after saying
 * why. */
int run_to_type(kiln_runtime *rt, kiln_array *a, kiln_dtype t);

/* The end of the computation that returned st: its error (from g's call,
 * kiln_last_error(NULL), when g is not NULL, else from rt), or y written to
 * path. 0, or -1 after saying why. */
int run_write(const kiln_runtime *rt, const kiln_group *g, kiln_status st,
              const char *path, const kiln_array *y);

/* ---- the report ----------------------------------------------------------- */

/* Writes "(2, 3)" into buf, as numpy prints a shape. */
void run_shape_text(char *buf, size_t size, unsigned ndim, const size_t *shape);

/* The backend as the report names it: "auto (kiln's rules)" for auto. */
const char *run_backend_label(kiln_backend be);

/* ---- the operations --------------------------------------------------------
 * run_gemm.c, run_reduce.c, run_conv.c, run_fft.c. */
extern const cli_command run_gemm_command, run_reduce_command, run_conv2d_command,
  run_fft_command;

#endif /* KILN_TOOLS_RUN_H */
