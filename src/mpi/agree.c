/*
 * agree.c — how the ranks of a collective make sure they all mean the same
 * call before any data moves, and kiln_mpi_runtime_create(), the first
 * such call.
 *
 * A rank whose own arguments are wrong cannot just return: the others would
 * wait in a collective it never enters. So every call starts with one
 * MPI_Allreduce (MPI_MAX) of each field and its negation, which gives every
 * rank the least and greatest value of each field, plus the lowest failed
 * rank; only when all agree and none failed does data move.
 */
#include <stdio.h>
#include <string.h>

#include "mpi_internal.h"

/* A failed rank's message, as the others report it: cut to this length. */
#define PEER_MESSAGE_BYTES 1024

static const char *const call_names[] = {
  [KILN_MPI__CREATE] = "kiln_mpi_runtime_create",
  [KILN_MPI__ALLREDUCE] = "kiln_mpi_allreduce",
  [KILN_MPI__REDUCE] = "kiln_mpi_reduce",
  [KILN_MPI__BROADCAST] = "kiln_mpi_broadcast",
  [KILN_MPI__SCATTER] = "kiln_mpi_scatter",
  [KILN_MPI__GATHER] = "kiln_mpi_gather",
};

const char *kiln_mpi__call_name(int64_t call)
{
  return call >= 0 && call <= KILN_MPI__GATHER ? call_names[call] : "an unknown call";
}

static const char *const op_names[] = {"none", "sum", "min", "max"};

/* One field's value in words: "float32", "sum", "100". */
static void field_text(kiln_mpi__field_kind kind, int64_t v, char *buf, size_t size)
{
  switch (kind) {
  case KILN_MPI__FIELD_CALL: snprintf(buf, size, "%s", kiln_mpi__call_name(v)); return;
  case KILN_MPI__FIELD_DTYPE:
    snprintf(buf, size, "%s", kiln_dtype_name((kiln_dtype)v));
    return;
  case KILN_MPI__FIELD_OP:
    snprintf(buf, size, "%s", v >= 0 && v <= KILN_MPI_MAX ? op_names[v] : "none");
    return;
  default: snprintf(buf, size, "%lld", (long long)v); return;
  }
}

kiln_status kiln_mpi__fail(kiln_runtime *rt, const char *fn, const char *call, int err)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
    snprintf(text, sizeof text, "error %d", err);
  return kiln_last_error_set(rt, KILN_ERR_MPI, "%s: %s failed: %s", fn, call, text);
}

/* Tells every rank the message of `failed`; the others record it as a
 * peer's, `failed` keeps its own. */
static kiln_status peer_failed(MPI_Comm comm, kiln_runtime *rt, const char *fn,
                               int failed, int rank, int size, kiln_status own)
{
  char msg[PEER_MESSAGE_BYTES] = "";
  if (rank == failed)
    snprintf(msg, sizeof msg, "%s", kiln_last_error(rt));
  int err = MPI_Bcast(msg, sizeof msg, MPI_CHAR, failed, comm);
  if (own != KILN_OK)
    return own;
  if (err != MPI_SUCCESS)
    return kiln_mpi__fail(rt, fn, "MPI_Bcast", err);
  return kiln_last_error_set(rt, KILN_ERR_PEER_FAILED,
                             "%s: rank %d of %d failed, so this rank (%d) stops too: %s",
                             fn, failed, size, rank, msg);
}

kiln_status kiln_mpi__agree(MPI_Comm comm, kiln_runtime *rt,
                            const int64_t fields[KILN_MPI__FIELDS], kiln_status own)
{
  static const char *const what[KILN_MPI__FIELDS] = {
    "the call", "the element type", "the element count", "the operation", "the root"};
  const char *fn = kiln_mpi__call_name(fields[KILN_MPI__FIELD_CALL]);
  int rank, size, err = MPI_Comm_rank(comm, &rank);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_size(comm, &size);
  if (err != MPI_SUCCESS)
    return kiln_mpi__fail(rt, fn, "MPI_Comm_rank", err);
  /* The greatest of each field, of each negated (the least), and of
   * size - rank over the failed ranks (the lowest failed rank). */
  int64_t mine[2 * KILN_MPI__FIELDS + 1], all[2 * KILN_MPI__FIELDS + 1];
  for (int i = 0; i < KILN_MPI__FIELDS; i++) {
    mine[i] = fields[i];
    mine[KILN_MPI__FIELDS + i] = -fields[i];
  }
  mine[2 * KILN_MPI__FIELDS] = own != KILN_OK ? size - rank : 0;
  err = MPI_Allreduce(mine, all, 2 * KILN_MPI__FIELDS + 1, MPI_INT64_T, MPI_MAX, comm);
  if (err != MPI_SUCCESS)
    return kiln_mpi__fail(rt, fn, "MPI_Allreduce", err);
  if (all[2 * KILN_MPI__FIELDS]) {
    int failed = size - (int)all[2 * KILN_MPI__FIELDS];
    return peer_failed(comm, rt, fn, failed, rank, size, own);
  }
  for (int i = 0; i < KILN_MPI__FIELDS; i++) {
    int64_t most = all[i], least = -all[KILN_MPI__FIELDS + i];
    if (most == least)
      continue;
    char lo[64], hi[64], here[64];
    field_text((kiln_mpi__field_kind)i, least, lo, sizeof lo);
    field_text((kiln_mpi__field_kind)i, most, hi, sizeof hi);
    field_text((kiln_mpi__field_kind)i, fields[i], here, sizeof here);
    return kiln_last_error_set(rt, KILN_ERR_RANK_MISMATCH,
                               "%s: the %d ranks disagree on %s: this rank (%d) has %s, "
                               "others have from %s to %s; expected the same on every "
                               "rank. No data moved",
                               fn, size, what[i], rank, here, lo, hi);
  }
  return KILN_OK;
}

/* The caller's options into *o, by kiln.h's rules for a caller's struct
 * (its introduction), which libkiln's own checker applies inside libkiln
 * only: struct_size 0 was never initialised; a longer struct, from a newer
 * kiln.h, only with the bytes this library does not know all 0. */
static kiln_status take_options(const kiln_options *opts, kiln_options *o)
{
  static const char fn[] = "kiln_mpi_runtime_create";
  kiln_options_init(o);
  if (!opts)
    return KILN_OK;
  size_t given = opts->struct_size;
  if (given == 0)
    return kiln_last_error_set(
      NULL, KILN_ERR_INVALID_ARGUMENT,
      "%s: kiln_options.struct_size is 0: the options were never "
      "initialised; expected kiln_options_init() first",
      fn);
  for (size_t b = sizeof *o; b < given; b++)
    if (((const unsigned char *)opts)[b])
      return kiln_last_error_set(
        NULL, KILN_ERR_UNSUPPORTED,
        "%s: kiln_options.struct_size is %zu, and byte %zu is not "
        "zero, but this libkiln-mpi knows only the first %zu "
        "bytes: the program was built against a newer kiln.h",
        fn, given, b, sizeof *o);
  memcpy(o, opts, given < sizeof *o ? given : sizeof *o);
  o->struct_size = sizeof *o;
  return KILN_OK;
}

KILN_MPI_API kiln_status kiln_mpi_runtime_create(MPI_Comm comm, const kiln_options *opts,
                                                 kiln_runtime **out)
{
  static const char source[] = "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)";
  kiln_runtime *rt = NULL;
  kiln_status st = KILN_OK;
  MPI_Comm node;
  int local = 0,
      err = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  if (err == MPI_SUCCESS) {
    err = MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
  }
  if (err != MPI_SUCCESS)
    st = kiln_mpi__fail(NULL, "kiln_mpi_runtime_create", "MPI_Comm_split_type", err);
  else if (!out)
    st = kiln_last_error_set(NULL, KILN_ERR_INVALID_ARGUMENT,
                             "kiln_mpi_runtime_create: out is NULL; expected the address "
                             "of a kiln_runtime pointer");
  else {
    /* The caller's options, with this rank unless they name one. */
    kiln_options o;
    st = take_options(opts, &o);
    if (st == KILN_OK && !o.local_rank_source) {
      o.local_rank = (unsigned)local;
      o.local_rank_source = source;
    }
    if (st == KILN_OK)
      st = kiln_runtime_create(&o, &rt);
  }
  const int64_t fields[KILN_MPI__FIELDS] = {KILN_MPI__CREATE};
  kiln_status agreed = kiln_mpi__agree(comm, NULL, fields, st);
  if (agreed != KILN_OK) {
    kiln_runtime_destroy(rt);
    rt = NULL;
  }
  if (out)
    *out = rt;
  return agreed;
}
