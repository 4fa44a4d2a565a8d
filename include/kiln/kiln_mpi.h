/*
 * kiln_mpi.h — libkiln-mpi: one kiln runtime per MPI rank, on the rank's own
 * device, and MPI collectives on kiln buffers.
 *
 * A separate library (link -lkiln-mpi, pkg-config kiln-mpi), built when
 * meson finds MPI (meson option `mpi`), so that libkiln itself never
 * depends on MPI.
 *
 * The collectives stage through host memory: no MPI implementation moves
 * OpenCL memory. A buffer is read to the host, the host copies go through
 * MPI's own collectives (MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast,
 * MPI_Iscatterv, MPI_Igatherv), and the results are written back. Buffers
 * of more than one piece (KILN_MPI_PIECE_BYTES) are moved a piece at a
 * time, the device's transfers of one piece overlapping the network's of
 * the previous. Each call holds a host copy of the bytes it moves.
 *
 * Every collective first agrees on its arguments: one small MPI_Allreduce
 * of a descriptor (which collective, element type, count, operation, root,
 * and whether each rank's own arguments were right). A disagreement fails
 * on every rank with KILN_ERR_RANK_MISMATCH before any data moves, and a
 * rank whose arguments are wrong fails with its own status while the
 * others get KILN_ERR_PEER_FAILED and that rank's message: no rank is left
 * waiting in a collective the others never enter. Failures after the
 * agreement (a device or MPI error halfway) cannot be announced that way;
 * MPI's error handler (by default, abort the job) applies to MPI's.
 *
 * All calls are collective over `comm`: every rank calls them, in the same
 * order. Messages are for kiln_last_error() of the buffer's runtime (NULL
 * for kiln_mpi_runtime_create()). Like libkiln, libkiln-mpi prints nothing.
 */
#ifndef KILN_MPI_H
#define KILN_MPI_H

#include <mpi.h>

#include "kiln/kiln.h"

#if defined(_WIN32)
#  if defined(KILN_MPI_BUILDING)
#    define KILN_MPI_API __declspec(dllexport)
#  else
#    define KILN_MPI_API
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define KILN_MPI_API __attribute__((visibility("default")))
#else
#  define KILN_MPI_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The most bytes a collective stages per piece (of each rank's part, for
 * scatter and gather). */
#define KILN_MPI_PIECE_BYTES (4u << 20)

/*! kiln_mpi_op : the reduction of kiln_mpi_allreduce() and kiln_mpi_reduce().
 * MPI_SUM, MPI_MIN and MPI_MAX on MPI's types for float32 (MPI_FLOAT),
 * float64 (MPI_DOUBLE), complex64 and complex128 (MPI_C_FLOAT_COMPLEX,
 * MPI_C_DOUBLE_COMPLEX: sum only, as complex numbers have no order), int32
 * and int64 (MPI_INT32_T, MPI_INT64_T). float16, which MPI has no type
 * for, is converted to float32 on the device (kiln_convert()), reduced as
 * MPI_FLOAT (4 bytes an element on the wire) and rounded to float16 once,
 * at the end; broadcast, scatter and gather move its bits as MPI_UINT16_T. */
typedef enum kiln_mpi_op {
  KILN_MPI_SUM = 1,
  KILN_MPI_MIN = 2,
  KILN_MPI_MAX = 3
} kiln_mpi_op;

/*! kiln_mpi_runtime_create() :
 * kiln_runtime_create() for one rank of comm: the rank's node-local rank
 * (its rank in MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED)) becomes
 * kiln_options.local_rank, so that the ranks of a node spread over its
 * devices (see kiln_options.local_rank_source), unless opts gives a
 * local_rank_source of its own. KILN_DEVICE and kiln_options.device still
 * win; KILN_DEVICE=local-rank uses this rank. Collective: if any rank
 * fails, every rank fails and none keeps a runtime.
 * @opts : NULL for the defaults; not kept.
 * @out  : receives the runtime, or NULL on failure.
 * @return : KILN_OK; a rank's own failure, the statuses of
 *           kiln_runtime_create(); on the other ranks KILN_ERR_PEER_FAILED,
 *           with the lowest failing rank's number and message;
 *           KILN_ERR_MPI when an MPI call returns an error;
 *           KILN_ERR_INVALID_ARGUMENT for a NULL out (on every rank).
 *           For kiln_last_error(NULL). */
KILN_MPI_API kiln_status kiln_mpi_runtime_create(MPI_Comm comm, const kiln_options *opts,
                                                 kiln_runtime **out);

/*! kiln_mpi_allreduce() :
 * Every rank's recv receives the element-wise op of every rank's send.
 * send and recv: the same type and count on every rank; recv may be send.
 * Returns when recv holds the result.
 * @return : KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL, an op that is not
 *           one, recv of another count), KILN_ERR_INVALID_DTYPE (min or max
 *           of complex values, recv of another type), KILN_ERR_WRONG_RUNTIME;
 *           KILN_ERR_RANK_MISMATCH (the message says what differs, its least
 *           and greatest values); KILN_ERR_PEER_FAILED; KILN_ERR_MPI; the
 *           statuses of kiln_buffer_read() and kiln_buffer_write(). */
KILN_MPI_API kiln_status kiln_mpi_allreduce(MPI_Comm comm, const kiln_buffer *send,
                                            kiln_buffer *recv, kiln_mpi_op op);

/*! kiln_mpi_reduce() :
 * kiln_mpi_allreduce() whose result only root receives: recv is read only
 * on root, and may be NULL on the others. */
KILN_MPI_API kiln_status kiln_mpi_reduce(MPI_Comm comm, const kiln_buffer *send,
                                         kiln_buffer *recv, kiln_mpi_op op, int root);

/*! kiln_mpi_broadcast() :
 * Every rank's buf receives root's. Same type and count on every rank. */
KILN_MPI_API kiln_status kiln_mpi_broadcast(MPI_Comm comm, kiln_buffer *buf, int root);

/*! kiln_mpi_scatter() :
 * Root's send holds size parts of recv's count (size: the ranks of comm),
 * and rank r's recv receives part r. send is read only on root, and may be
 * NULL on the others. */
KILN_MPI_API kiln_status kiln_mpi_scatter(MPI_Comm comm, const kiln_buffer *send,
                                          kiln_buffer *recv, int root);

/*! kiln_mpi_gather() :
 * The reverse: part r of root's recv (size parts of send's count) receives
 * rank r's send. recv is used only on root, and may be NULL on the others. */
KILN_MPI_API kiln_status kiln_mpi_gather(MPI_Comm comm, const kiln_buffer *send,
                                         kiln_buffer *recv, int root);

#ifdef __cplusplus
}
#endif

#endif /* KILN_MPI_H */
