/*
 * abi.h — the one place kiln reads and writes the structs a caller allocates (abi.c).
 */
#ifndef KILN_BASE_ABI_H
#define KILN_BASE_ABI_H

#include "base/util.h"

/* ---- caller-allocated structs (abi.c) ---------------------------------- */

/* Every struct a caller allocates starts with size_t struct_size; kiln.h's
 * introduction gives the rules. These are the only code that reads it. */

/* Checks the caller's struct *in and copies it into *copy, kiln's own
 * version of `known` bytes: a shorter (older) struct's missing fields read
 * as 0, a longer (newer) one is refused unless its extra bytes are all 0.
 * copy->struct_size becomes `known`. `how` names what sets struct_size. */
kiln_status kiln__struct_in(kiln_runtime *rt, const char *func, const char *type,
                            const char *how, size_t known, const void *in, void *copy);
#define KILN__STRUCT_IN(rt, func, type, in, copy)                                        \
  kiln__struct_in((rt), (func), #type, #type "_init()", sizeof(type), (in), (copy))

/* An operation's entry: rt and its descriptor `in` (named `name` in the
 * message) must not be NULL; then kiln__struct_in(). */
kiln_status kiln__op_desc_in(kiln_runtime *rt, const char *func, const char *name,
                             const char *type, const char *how, size_t known,
                             const void *in, void *copy);
#define KILN__OP_DESC_IN(rt, func, type, in, copy)                                       \
  kiln__op_desc_in((rt), (func), #in, #type, #type "_init()", sizeof(type), (in), (copy))

/* Checks the struct_size of an output struct the caller allocated. */
kiln_status kiln__struct_out(kiln_runtime *rt, const char *func, const char *type,
                             const char *how, size_t known, const void *out);
#define KILN__STRUCT_OUT(rt, func, type, init, out)                                      \
  kiln__struct_out((rt), (func), #type, #init, sizeof(type), (out))

/* A stats call's entry: rt and the struct `out` to fill must not be NULL;
 * then kiln__struct_out(). */
kiln_status kiln__stats_out(kiln_runtime *rt, const char *func, const char *type,
                            const char *how, size_t known, const void *out);
#define KILN__STATS_OUT(rt, func, type, out)                                             \
  kiln__stats_out((rt), (func), #type, #type "_init()", sizeof(type), (out))

/* Writes kiln's version `full` (known bytes) into an output struct of
 * `given` bytes, a struct_size kiln__struct_out() checked: what fits of it,
 * zeros where the caller's struct is longer, and struct_size `given`. */
void kiln__struct_put(void *out, size_t given, const void *full, size_t known);

#endif /* KILN_BASE_ABI_H */
