/*
 * mpi_internal.h — what the files of libkiln-mpi share. libkiln-mpi uses
 * only kiln.h's public API: it is a client of libkiln like any other.
 */
#ifndef KILN_MPI_INTERNAL_H
#define KILN_MPI_INTERNAL_H

#include <stdint.h>

#include "kiln/kiln_mpi.h"

/* The collective calls, as the agreement names them. */
typedef enum kiln_mpi__call {
  KILN_MPI__CREATE,
  KILN_MPI__ALLREDUCE,
  KILN_MPI__REDUCE,
  KILN_MPI__BROADCAST,
  KILN_MPI__SCATTER,
  KILN_MPI__GATHER
} kiln_mpi__call;

/* What a rank says about a collective's arguments, for the others to check
 * against theirs: one field each. */
typedef enum kiln_mpi__field_kind {
  KILN_MPI__FIELD_CALL,  /* a kiln_mpi__call */
  KILN_MPI__FIELD_DTYPE, /* a kiln_dtype */
  KILN_MPI__FIELD_COUNT, /* elements */
  KILN_MPI__FIELD_OP,    /* a kiln_mpi_op */
  KILN_MPI__FIELD_ROOT   /* a rank */
} kiln_mpi__field_kind;

#define KILN_MPI__FIELDS 5

/* Agrees with every rank of comm, in one MPI_Allreduce, before any data
 * moves: `fields` (KILN_MPI__FIELDS values, by kiln_mpi__field_kind) and
 * `own`, this rank's status so far (its message already recorded on rt).
 * Returns own when it failed; KILN_ERR_PEER_FAILED with the lowest failing
 * rank's message when another failed; KILN_ERR_RANK_MISMATCH naming the
 * first field that differs; KILN_ERR_MPI; else KILN_OK. */
kiln_status kiln_mpi__agree(MPI_Comm comm, kiln_runtime *rt,
                            const int64_t fields[KILN_MPI__FIELDS], kiln_status own);

/* "kiln_mpi_allreduce" ..., for messages. */
const char *kiln_mpi__call_name(int64_t call);

/* Records a failed MPI call (its error string) on rt; returns KILN_ERR_MPI. */
kiln_status kiln_mpi__fail(kiln_runtime *rt, const char *fn, const char *call, int err);

#endif /* KILN_MPI_INTERNAL_H */
