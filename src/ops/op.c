/*
 * op.c — what the entry of every operation (kiln_gemm(), kiln_conv2d(),
 * kiln_reduce(), kiln_fft()) does alike: take the descriptor, begin the
 * profile record, and say why a backend cannot be had.
 */
#include "base/abi.h"
#include "base/error.h"
#include "ops/ops.h"
#include "profile/profile.h"

kiln_status kiln__op_begin(kiln_runtime *rt, const char *func, const char *in_name,
                           const char *type, const char *how, size_t known,
                           const void *in, void *copy, kiln__profile_scope *ps,
                           const char *name)
{
  kiln_status st = kiln__op_desc_in(rt, func, in_name, type, how, known, in, copy);
  if (st == KILN_OK)
    kiln__profile_begin(rt, ps, name);
  return st;
}

kiln_status kiln__backend_unknown(kiln_runtime *rt, const char *func, kiln_backend id,
                                  const char *expected)
{
  if (id == KILN_BACKEND_CLBLAST)
    return kiln__fail(rt, KILN_ERR_UNSUPPORTED,
                      "%s: backend clblast was asked for, but this kiln was built "
                      "without CLBlast",
                      func);
  return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT,
                    "%s: backend %d is not one %s() runs; expected %s", func, (int)id,
                    func, expected);
}

kiln_status kiln__backend_refuses(kiln_runtime *rt, const char *func, kiln_backend id,
                                  const char *what, const char *why)
{
  if (!why)
    return KILN_OK;
  return kiln__fail(rt, KILN_ERR_UNSUPPORTED, "%s: backend %s cannot run this %s: %s",
                    func, kiln_backend_name(id), what, why);
}
