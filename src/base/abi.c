/*
 * abi.c — the one place kiln reads and writes the structs a caller allocates.
 *
 * Each such struct starts with `size_t struct_size`, the sizeof the caller
 * was compiled with (kiln.h's introduction gives the rules). A program built
 * against an older kiln.h passes a shorter struct, one built against a newer
 * kiln.h a longer one; both must work with this library where they can, so
 * no entry point reads a caller's struct except through these functions.
 */
#include <assert.h>
#include <string.h>

#include "base/abi.h"
#include "base/error.h"

/* The caller's struct_size. memcpy, not a cast: the pointer may be to any
 * of the structs, and struct_size is only known to lead each of them. */
static size_t given_size(const void *p)
{
  size_t given;
  memcpy(&given, p, sizeof given);
  return given;
}

/* The offset of the first non-zero byte in [from, to) of p, or `to`. */
static size_t first_nonzero(const void *p, size_t from, size_t to)
{
  const unsigned char *b = p;
  while (from < to && b[from] == 0)
    from++;
  return from;
}

/* How much longer than kiln's a newer kiln's struct may plausibly be. A
 * struct_size beyond it is taken for the garbage of a struct nobody
 * initialised, and not followed: kiln would read or write past the end. */
#define MAX_GROWTH 4096

/* What every struct_size must be: at least the field itself, and not
 * garbage; 0 is the usual mark of a struct nobody initialised. `how` says
 * what sets it right. */
static kiln_status check_size(kiln_runtime *rt, const char *func, const char *type,
                              const char *how, size_t given, size_t known)
{
  if (given == 0 || given > known + MAX_GROWTH)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s.struct_size is %zu: the struct was not initialised; "
                      "expected sizeof(%s) (%zu here), as %s sets it",
                      func, type, given, type, known, how);
  if (given < sizeof(size_t))
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s.struct_size is %zu, smaller than struct_size itself; "
                      "expected sizeof(%s) (%zu here), as %s sets it",
                      func, type, given, type, known, how);
  return KILN_OK;
}

kiln_status kiln__struct_in(kiln_runtime *rt, const char *func, const char *type,
                            const char *how, size_t known, const void *in, void *copy)
{
  assert(in && copy && known >= sizeof(size_t));
  size_t given = given_size(in);
  kiln_status st = check_size(rt, func, type, how, given, known);
  if (st != KILN_OK)
    return st;
  size_t bad = given > known ? first_nonzero(in, known, given) : given;
  if (bad < given)
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                      "%s: %s.struct_size is %zu, and byte %zu is not zero, but this "
                      "libkiln %s knows only the first %zu bytes: the program was "
                      "built against a newer kiln.h and sets a field this library "
                      "does not have; expected struct_size at most %zu, or bytes "
                      "beyond it all zero (run with the newer libkiln)",
                      func, type, given, bad, kiln_version(), known, known);
  /* Fields a shorter (older) struct lacks read as 0: every field kiln adds
   * has 0 as its default. */
  memset(copy, 0, known);
  memcpy(copy, in, given < known ? given : known);
  memcpy(copy, &known, sizeof known);
  return KILN_OK;
}

kiln_status kiln__op_desc_in(kiln_runtime *rt, const char *func, const char *name,
                             const char *type, const char *how, size_t known,
                             const void *in, void *copy)
{
  if (!rt || !in)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", func,
                      !rt ? "rt" : name);
  return kiln__struct_in(rt, func, type, how, known, in, copy);
}

kiln_status kiln__struct_out(kiln_runtime *rt, const char *func, const char *type,
                             const char *how, size_t known, const void *out)
{
  assert(out && known >= sizeof(size_t));
  return check_size(rt, func, type, how, given_size(out), known);
}

kiln_status kiln__stats_out(kiln_runtime *rt, const char *func, const char *type,
                            const char *how, size_t known, const void *out)
{
  if (!rt || !out)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                      "%s: %s is NULL; expected a runtime and a %s to fill", func,
                      !rt ? "rt" : "out", type);
  return kiln__struct_out(rt, func, type, how, known, out);
}

void kiln__struct_put(void *out, size_t given, const void *full, size_t known)
{
  assert(given >= sizeof(size_t));
  /* An older program's struct gets the prefix it has room for; a newer
   * one's fields beyond what kiln knows keep what its init set (0). */
  memcpy(out, full, given < known ? given : known);
  memcpy(out, &given, sizeof given);
}
