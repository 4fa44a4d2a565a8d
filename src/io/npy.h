/*
 * npy.h — what npy.c and npy_header.c share with each other and with the
 * tests and fuzzers of .npy files. Not installed.
 */
#ifndef KILN_NPY_H
#define KILN_NPY_H

#include "base/util.h"

/* ---- .npy files (npy.c, npy_header.c) ------------------------------------ */

#define KILN__NPY_MAGIC "\x93NUMPY"
#define KILN__NPY_MAGIC_LEN 6

/* Parses a header's dict (the `len` bytes after the preamble) into out's
 * dtype, ndim, shape and fortran_order; count and data are left 0. Fails
 * with KILN_ERR_FORMAT and a message naming `name`. Never reads past len. */
kiln_status kiln__npy_parse_header(const char *name, const unsigned char *text,
                                   size_t len, kiln_array *out);

/* The preamble (magic, version, length: *prelen bytes into pre) and the
 * padded header (into h) np.save writes for a checked array. */
kiln_status kiln__npy_build_header(const kiln_array *a, unsigned char pre[12],
                                   size_t *prelen, kiln__str *h);

/* "()", "(3,)", "(2, 3)": Python's repr() of the shape. */
void kiln__npy_shape_repr(kiln__str *s, unsigned ndim, const size_t *shape);

/* The product of the shape, 1 for ndim 0, 0 when a dimension is 0: 0, or -1
 * when it overflows size_t. */
int kiln__npy_shape_count(unsigned ndim, const size_t *shape, size_t *count);

#endif /* KILN_NPY_H */
