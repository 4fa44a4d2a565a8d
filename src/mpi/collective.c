/*
 * collective.c — MPI collectives on kiln buffers, staged through host
 * memory a piece at a time.
 *
 * Each collective is one plan: which buffer this rank reads to the host
 * (src), which it writes back (dst), and how many parts of n elements each
 * holds (root's side of scatter and gather holds one per rank). The buffer
 * is cut into pieces of at most KILN_MPI_PIECE_BYTES of each part; while
 * MPI moves piece k, the device reads piece k+1 and writes piece k-1, and
 * the host polls both (MPI_Test, kiln_event_query), which also lets MPI
 * implementations without a progress thread move data meanwhile.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

typedef struct plan {
  kiln_mpi__call call;
  MPI_Comm comm;
  int rank, size, root;
  kiln_runtime *rt;
  const kiln_buffer *src;   /* read to the host; NULL where this rank sends nothing */
  kiln_buffer *dst;         /* written from the host; NULL where it receives nothing */
  int wants_src, wants_dst; /* this rank must be given them */
  size_t src_parts, dst_parts;
  size_t n, esize; /* elements of a part, bytes of one */
  MPI_Datatype type;
  MPI_Op op;
  unsigned char *hsrc, *hdst; /* host copies of src's and dst's parts */
  int *counts, *displs;       /* scatterv's and gatherv's, one per rank */
} plan;

static MPI_Datatype mpi_type(kiln_dtype t)
{
  switch (t) {
  case KILN_F16: return MPI_UINT16_T; /* its bits; reductions go through float32 */
  case KILN_F32: return MPI_FLOAT;
  case KILN_F64: return MPI_DOUBLE;
  case KILN_C32: return MPI_C_FLOAT_COMPLEX;
  case KILN_C64: return MPI_C_DOUBLE_COMPLEX;
  case KILN_I32: return MPI_INT32_T;
  case KILN_I64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

/* Enqueues the transfers of elements [off, off + len) of every part: reads
 * of src (`in`), or writes of dst. */
static kiln_status stage(const plan *p, size_t off, size_t len, int in)
{
  kiln_status st = KILN_OK;
  size_t parts = in ? p->src_parts : p->dst_parts;
  for (size_t r = 0; r < parts && st == KILN_OK; r++) {
    size_t at = r * p->n + off;
    st = in ? kiln_buffer_read_async(p->src, at, len, p->hsrc + at * p->esize)
            : kiln_buffer_write_async(p->dst, at, len, p->hdst + at * p->esize);
  }
  return st;
}

/* Starts MPI's part of the piece [off, off + len). */
static int start(plan *p, size_t off, size_t len, MPI_Request *req)
{
  int c = (int)len;
  void *s = p->hsrc ? p->hsrc + off * p->esize : NULL;
  void *d = p->hdst ? p->hdst + off * p->esize : NULL;
  for (int r = 0; r < p->size && p->counts; r++) { /* scatterv's and gatherv's */
    p->counts[r] = c;
    p->displs[r] = (int)((size_t)r * p->n + off);
  }
  switch (p->call) {
  case KILN_MPI__ALLREDUCE:
    return MPI_Iallreduce(MPI_IN_PLACE, d, c, p->type, p->op, p->comm, req);
  case KILN_MPI__REDUCE:
    return MPI_Ireduce(p->rank == p->root ? MPI_IN_PLACE : s, d, c, p->type, p->op,
                       p->root, p->comm, req);
  case KILN_MPI__BROADCAST:
    return MPI_Ibcast(p->rank == p->root ? s : d, c, p->type, p->root, p->comm, req);
  case KILN_MPI__SCATTER:
    return MPI_Iscatterv(p->hsrc, p->counts, p->displs, p->type, d, c, p->type, p->root,
                         p->comm, req);
  case KILN_MPI__GATHER:
    return MPI_Igatherv(s, c, p->type, p->hdst, p->counts, p->displs, p->type, p->root,
                        p->comm, req);
  case KILN_MPI__CREATE: break;
  }
  return MPI_ERR_OTHER;
}

/* Waits for the MPI request and for the device's work so far: polls both
 * while both are pending, then blocks on the one left, so that a rank
 * spins only while there is overlap to keep going. */
static kiln_status overlap(plan *p, MPI_Request *req, const char *fn)
{
  kiln_event *ev = NULL;
  kiln_status st = kiln_event_record(p->rt, &ev);
  int mpi_done = 0, dev_done = 0, err = MPI_SUCCESS;
  while (st == KILN_OK && err == MPI_SUCCESS && !mpi_done) {
    err = MPI_Test(req, &mpi_done, MPI_STATUS_IGNORE);
    if (!mpi_done && err == MPI_SUCCESS)
      st = kiln_event_query(ev, &dev_done);
    if (dev_done && !mpi_done && err == MPI_SUCCESS && st == KILN_OK) {
      err = MPI_Wait(req, MPI_STATUS_IGNORE);
      mpi_done = 1;
    }
  }
  if (st == KILN_OK)
    st = kiln_event_wait(ev); /* and the failure of a command before it, if any */
  kiln_event_destroy(ev);
  if (err != MPI_SUCCESS)
    return kiln_mpi__fail(p->rt, fn, "MPI_Test", err);
  return st;
}

/* Moves the data, piece by piece. */
static kiln_status run(plan *p)
{
  const char *fn = kiln_mpi__call_name(p->call);
  size_t piece = KILN_MPI_PIECE_BYTES / p->esize, pieces = (p->n + piece - 1) / piece;
  kiln_status st = KILN_OK;
  if (p->src)
    st = stage(p, 0, p->n < piece ? p->n : piece, 1);
  for (size_t k = 0; k < pieces && st == KILN_OK; k++) {
    size_t off = k * piece, len = p->n - off < piece ? p->n - off : piece;
    if (k == 0) { /* the first piece must be on the host before MPI starts */
      MPI_Request none = MPI_REQUEST_NULL;
      st = overlap(p, &none, fn);
    }
    MPI_Request req;
    int err = st == KILN_OK ? start(p, off, len, &req) : MPI_SUCCESS;
    if (err != MPI_SUCCESS)
      return kiln_mpi__fail(p->rt, fn, "a nonblocking collective", err);
    size_t next = off + len;
    if (st == KILN_OK && p->src && next < p->n)
      st = stage(p, next, p->n - next < piece ? p->n - next : piece, 1);
    if (st == KILN_OK)
      st = overlap(p, &req, fn); /* piece k on the wire, k+1 in, k-1 out */
    else
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (st == KILN_OK && p->dst)
      st = stage(p, off, len, 0);
  }
  if (st == KILN_OK) {
    MPI_Request none = MPI_REQUEST_NULL;
    st = overlap(p, &none, fn); /* the last writes */
  }
  return st;
}

static int is_reduction(const plan *p)
{
  return p->call == KILN_MPI__ALLREDUCE || p->call == KILN_MPI__REDUCE;
}

/* Checks one rank's own arguments; the message goes on rt. */
static kiln_status check(plan *p, const kiln_buffer *buf, kiln_mpi_op op)
{
  const char *fn = kiln_mpi__call_name(p->call);
  if (!buf || (p->wants_src && !p->src) || (p->wants_dst && !p->dst))
    return kiln_last_error_set(buf ? kiln_buffer_runtime(buf) : NULL,
                               KILN_ERR_INVALID_ARGUMENT,
                               "%s: %s is NULL on rank %d; expected a kiln buffer", fn,
                               p->wants_src && !p->src ? "send" : "recv", p->rank);
  p->rt = kiln_buffer_runtime(buf);
  kiln_dtype dtype = kiln_buffer_dtype(buf);
  size_t count = kiln_buffer_count(buf);
  if (p->root < 0 || p->root >= p->size)
    return kiln_last_error_set(p->rt, KILN_ERR_INVALID_ARGUMENT,
                               "%s: root is %d; expected a rank of the communicator, 0 "
                               "to %d",
                               fn, p->root, p->size - 1);
  if (is_reduction(p) && (op < KILN_MPI_SUM || op > KILN_MPI_MAX))
    return kiln_last_error_set(p->rt, KILN_ERR_INVALID_ARGUMENT,
                               "%s: op is %d; expected KILN_MPI_SUM, KILN_MPI_MIN or "
                               "KILN_MPI_MAX",
                               fn, (int)op);
  if (p->src && p->dst && kiln_buffer_runtime(p->src) != kiln_buffer_runtime(p->dst))
    return kiln_last_error_set(p->rt, KILN_ERR_WRONG_RUNTIME,
                               "%s: send and recv belong to different runtimes", fn);
  if (p->src && p->dst &&
      (kiln_buffer_dtype(p->src) != kiln_buffer_dtype(p->dst) ||
       kiln_buffer_count(p->src) != p->src_parts * count ||
       kiln_buffer_count(p->dst) != p->dst_parts * count))
    return kiln_last_error_set(
      p->rt, KILN_ERR_INVALID_ARGUMENT,
      "%s: send holds %zu %s, recv %zu %s; expected the same type, and %s", fn,
      kiln_buffer_count(p->src), kiln_dtype_name(kiln_buffer_dtype(p->src)),
      kiln_buffer_count(p->dst), kiln_dtype_name(kiln_buffer_dtype(p->dst)),
      is_reduction(p) ? "the same count"
                      : "the root's buffer one part of the other's for each rank");
  if ((dtype == KILN_C32 || dtype == KILN_C64) && is_reduction(p) && op != KILN_MPI_SUM)
    return kiln_last_error_set(p->rt, KILN_ERR_INVALID_DTYPE,
                               "%s: %s of %s values; complex numbers have no order: "
                               "expected KILN_MPI_SUM",
                               fn, op == KILN_MPI_MIN ? "min" : "max",
                               kiln_dtype_name(dtype));
  if ((size_t)p->size * count > INT_MAX)
    return kiln_last_error_set(p->rt, KILN_ERR_OVERFLOW,
                               "%s: %d parts of %zu elements are more than MPI's int "
                               "displacements count",
                               fn, p->size, count);
  p->n = count;
  p->esize = kiln_dtype_size(dtype);
  p->type = mpi_type(dtype);
  return KILN_OK;
}

/* A float16 reduction reduces a float32 copy of src (MPI has no float16),
 * made before the agreement, so that a rank that cannot make it says so. */
static kiln_status widen(plan *p, kiln_buffer **wide)
{
  kiln_status st = kiln_buffer_create(p->rt, KILN_F32, p->n, 0, wide);
  if (st == KILN_OK)
    st = kiln_convert(p->src, *wide);
  if (st != KILN_OK)
    return st;
  p->src = *wide;
  p->esize = sizeof(float);
  p->type = MPI_FLOAT;
  return KILN_OK;
}

/* Allocates the host copies and moves the data. */
static kiln_status stage_and_run(plan *p)
{
  int parted = p->call == KILN_MPI__SCATTER || p->call == KILN_MPI__GATHER;
  size_t src_bytes = p->src ? p->src_parts * p->n * p->esize : 0;
  size_t dst_bytes = p->dst ? p->dst_parts * p->n * p->esize : 0;
  /* The reductions and the broadcast work in place, in one copy. */
  unsigned char *host = malloc(parted ? src_bytes + dst_bytes + 1 : p->n * p->esize);
  p->counts = parted ? malloc(2 * (size_t)p->size * sizeof *p->counts) : NULL;
  if (!host || (parted && !p->counts)) {
    free(host), free(p->counts);
    return kiln_last_error_set(p->rt, KILN_ERR_OUT_OF_HOST_MEMORY,
                               "%s: out of host memory for the staging copy of %zu bytes",
                               kiln_mpi__call_name(p->call), src_bytes + dst_bytes);
  }
  p->displs = p->counts ? p->counts + p->size : NULL;
  p->hsrc = host;
  p->hdst = parted ? host + src_bytes : host;
  kiln_status st = run(p);
  free(host), free(p->counts);
  return st;
}

/* The common path: each rank checks its own arguments, the ranks agree,
 * then data moves. `buf` is the one whose type and count every rank has. */
static kiln_status collective(plan *p, const kiln_buffer *buf, kiln_mpi_op op)
{
  static const MPI_Op ops[] = {MPI_OP_NULL, MPI_SUM, MPI_MIN, MPI_MAX};
  kiln_status st;
  if (MPI_Comm_rank(p->comm, &p->rank) != MPI_SUCCESS ||
      MPI_Comm_size(p->comm, &p->size) != MPI_SUCCESS)
    st =
      kiln_mpi__fail(NULL, kiln_mpi__call_name(p->call), "MPI_Comm_rank", MPI_ERR_COMM);
  else
    st = check(p, buf, op);
  kiln_buffer *wide = NULL, *out = p->dst;
  int narrow =
    st == KILN_OK && is_reduction(p) && kiln_buffer_dtype(buf) == KILN_F16 && p->n;
  if (narrow)
    st = widen(p, &wide);
  const int64_t fields[KILN_MPI__FIELDS] = {p->call, buf ? kiln_buffer_dtype(buf) : 0,
                                            (int64_t)p->n, op, p->root};
  st = kiln_mpi__agree(p->comm, p->rt, fields, st);
  if (st == KILN_OK && p->n) {
    p->op = is_reduction(p) ? ops[op] : MPI_OP_NULL;
    p->dst = narrow && out ? wide : out;
    st = stage_and_run(p);
  }
  if (st == KILN_OK && narrow && out)
    st = kiln_convert(wide, out);
  if (narrow)
    kiln_finish(p->rt); /* before wide goes */
  kiln_buffer_destroy(wide);
  return st;
}

KILN_MPI_API kiln_status kiln_mpi_allreduce(MPI_Comm comm, const kiln_buffer *send,
                                            kiln_buffer *recv, kiln_mpi_op op)
{
  plan p = {.call = KILN_MPI__ALLREDUCE,
            .comm = comm,
            .src = send,
            .dst = recv,
            .wants_src = 1,
            .wants_dst = 1,
            .src_parts = 1,
            .dst_parts = 1};
  return collective(&p, send, op);
}

/* The collectives with a root. In broadcast and scatter the root alone
 * reads (send) and every other rank writes (recv; the root too in
 * scatter); in reduce and gather every rank reads and the root alone
 * writes. The root's side of scatter and gather holds one part per rank. */
static kiln_status rooted(kiln_mpi__call call, MPI_Comm comm, int root,
                          const kiln_buffer *send, kiln_buffer *recv, kiln_mpi_op op)
{
  int rank = -1, size = 1;
  MPI_Comm_rank(comm, &rank); /* failures: collective() reports them */
  MPI_Comm_size(comm, &size);
  int at_root = rank == root,
      root_sends = call == KILN_MPI__BROADCAST || call == KILN_MPI__SCATTER;
  int root_keeps = call == KILN_MPI__BROADCAST && at_root; /* its buffer is the source */
  plan p = {.call = call,
            .comm = comm,
            .root = root,
            .src = root_sends && !at_root ? NULL : send,
            .dst = (root_sends || at_root) && !root_keeps ? recv : NULL,
            .wants_src = !root_sends || at_root,
            .wants_dst = (root_sends || at_root) && !root_keeps,
            .src_parts = call == KILN_MPI__SCATTER ? (size_t)size : 1,
            .dst_parts = call == KILN_MPI__GATHER ? (size_t)size : 1};
  return collective(&p, call == KILN_MPI__SCATTER ? recv : send, op);
}

KILN_MPI_API kiln_status kiln_mpi_reduce(MPI_Comm comm, const kiln_buffer *send,
                                         kiln_buffer *recv, kiln_mpi_op op, int root)
{
  return rooted(KILN_MPI__REDUCE, comm, root, send, recv, op);
}

KILN_MPI_API kiln_status kiln_mpi_broadcast(MPI_Comm comm, kiln_buffer *buf, int root)
{
  return rooted(KILN_MPI__BROADCAST, comm, root, buf, buf, 0);
}

KILN_MPI_API kiln_status kiln_mpi_scatter(MPI_Comm comm, const kiln_buffer *send,
                                          kiln_buffer *recv, int root)
{
  return rooted(KILN_MPI__SCATTER, comm, root, send, recv, 0);
}

KILN_MPI_API kiln_status kiln_mpi_gather(MPI_Comm comm, const kiln_buffer *send,
                                         kiln_buffer *recv, int root)
{
  return rooted(KILN_MPI__GATHER, comm, root, send, recv, 0);
}
