/*
 * test-mpi.c — libkiln-mpi under `mpirun -np N` (suite mpi). Not cmocka:
 * N processes share one output, so each rank counts its own failures,
 * prints them with its rank, and rank 0 prints the total; the exit status
 * says whether every rank passed.
 *
 *   test-mpi            each rank's device (ranks 0 and 1 on different
 *                       devices with POCL_DEVICES="pthread pthread"); every
 *                       collective for every element type and operation,
 *                       small and of several pieces, against a host
 *                       reference of every rank's data (one process's
 *                       result); the mismatch and failed-rank errors
 *   test-mpi create-fails   rank 1 asks for a device there is not, then
 *                       ranks 0 and 1 give options never initialised and
 *                       from a newer kiln.h: every rank must fail
 *                       kiln_mpi_runtime_create() with a clear message,
 *                       none hang (meson's timeout)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln_mpi.h"
#include "values.h"

static int rank, size, failures, checks;

#define CHECK(cond, ...)                                                                 \
  do {                                                                                   \
    checks++;                                                                            \
    if (!(cond)) {                                                                       \
      failures++;                                                                        \
      fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__);                \
      fprintf(stderr, __VA_ARGS__);                                                      \
      fprintf(stderr, "\n");                                                             \
    }                                                                                    \
  } while (0)

/* Expects st from a call, and `needle` in its message. */
static void expect(kiln_runtime *rt, kiln_status st, kiln_status want, const char *needle,
                   const char *what)
{
  const char *msg = kiln_last_error(rt);
  CHECK(st == want, "%s: %s, expected %s: %s", what, kiln_status_name(st),
        kiln_status_name(want), msg);
  CHECK(!needle || strstr(msg, needle), "%s: the message lacks '%s': %s", what, needle,
        msg);
}

static const kiln_dtype dtypes[] = {KILN_F16, KILN_F32, KILN_F64, KILN_C32,
                                    KILN_C64, KILN_I32, KILN_I64};

/* Rank r's element i (each of a complex's two parts, j): small integers,
 * exact in every type and in every sum of a few ranks. */
static double value(int r, size_t i, int j)
{
  return (double)((int)((r * 7 + i * 3 + (size_t)j * 5) % 11) - 5);
}

static size_t parts(kiln_dtype t)
{
  return t == KILN_C32 || t == KILN_C64 ? 2 : 1;
}

/* Fills host with rank r's data, n elements of t, from element `first`. */
static void fill(kiln_dtype t, void *host, size_t n, int r, size_t first)
{
  kiln_dtype real = t == KILN_C32 ? KILN_F32 : t == KILN_C64 ? KILN_F64 : t;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < parts(t); j++)
      kiln_test_put(real, host, i * parts(t) + j, value(r, first + i, (int)j));
}

static double combine(kiln_mpi_op op, double a, double b)
{
  return op == KILN_MPI_SUM   ? a + b
         : op == KILN_MPI_MIN ? (a < b ? a : b)
                              : (a > b ? a : b);
}

static kiln_buffer *make(kiln_runtime *rt, kiln_dtype t, size_t n, const void *host)
{
  kiln_buffer *b = NULL;
  kiln_status st = kiln_buffer_create(rt, t, n, 0, &b);
  CHECK(st == KILN_OK, "kiln_buffer_create: %s", kiln_last_error(rt));
  if (host && st == KILN_OK)
    kiln_buffer_write(b, 0, n, host);
  return b;
}

/* Compares a buffer with the reference, element by element. */
static void compare(kiln_buffer *b, const void *want, const char *what)
{
  kiln_dtype t = kiln_buffer_dtype(b);
  size_t n = kiln_buffer_count(b), bytes = kiln_buffer_bytes(b);
  unsigned char *got = malloc(bytes);
  kiln_buffer_read(b, 0, n, got);
  size_t bad = 0;
  while (bad < bytes && got[bad] == ((const unsigned char *)want)[bad])
    bad++;
  CHECK(bad == bytes, "%s of %zu %s: byte %zu differs from one process's result", what, n,
        kiln_dtype_name(t), bad);
  free(got);
}

static void test_reductions(kiln_runtime *rt, kiln_dtype t, size_t n)
{
  size_t es = kiln_dtype_size(t);
  unsigned char *mine = malloc(n * es), *want = malloc(n * es), *other = malloc(n * es);
  fill(t, mine, n, rank, 0);
  kiln_dtype real = t == KILN_C32 ? KILN_F32 : t == KILN_C64 ? KILN_F64 : t;
  for (int op = KILN_MPI_SUM; op <= (parts(t) == 2 ? KILN_MPI_SUM : KILN_MPI_MAX); op++) {
    /* The reference: every rank's data, reduced here in double. */
    fill(t, want, n, 0, 0);
    for (int r = 1; r < size; r++) {
      fill(t, other, n, r, 0);
      for (size_t i = 0; i < n * parts(t); i++)
        kiln_test_put(real, want, i,
                      combine((kiln_mpi_op)op, kiln_test_get(real, want, i),
                              kiln_test_get(real, other, i)));
    }
    char what[96];
    kiln_buffer *send = make(rt, t, n, mine), *recv = make(rt, t, n, NULL);
    snprintf(what, sizeof what, "allreduce (op %d)", op);
    expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, send, recv, (kiln_mpi_op)op), KILN_OK,
           NULL, what);
    compare(recv, want, what);
    /* In place, and reduce to the last rank. */
    snprintf(what, sizeof what, "allreduce in place (op %d)", op);
    expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, send, send, (kiln_mpi_op)op), KILN_OK,
           NULL, what);
    compare(send, want, what);
    kiln_buffer_write(send, 0, n, mine);
    snprintf(what, sizeof what, "reduce (op %d)", op);
    expect(rt,
           kiln_mpi_reduce(MPI_COMM_WORLD, send, rank == size - 1 ? recv : NULL,
                           (kiln_mpi_op)op, size - 1),
           KILN_OK, NULL, what);
    if (rank == size - 1)
      compare(recv, want, what);
    kiln_buffer_destroy(send);
    kiln_buffer_destroy(recv);
  }
  free(mine), free(want), free(other);
}

static void test_moves(kiln_runtime *rt, kiln_dtype t, size_t n)
{
  size_t es = kiln_dtype_size(t);
  unsigned char *all = malloc(size * n * es);
  for (int r = 0; r < size; r++)
    fill(t, all + r * n * es, n, r, 0);
  /* Broadcast from rank 1 (0 with one rank): everyone gets its data. */
  int root = 1 % size;
  kiln_buffer *b = make(rt, t, n, all + rank * n * es);
  expect(rt, kiln_mpi_broadcast(MPI_COMM_WORLD, b, root), KILN_OK, NULL, "broadcast");
  compare(b, all + root * n * es, "broadcast");
  /* Scatter from 0 of every rank's part, and gather them to the last. */
  kiln_buffer *whole = rank == 0 || rank == size - 1 ? make(rt, t, size * n, NULL) : NULL;
  if (rank == 0)
    kiln_buffer_write(whole, 0, size * n, all);
  expect(rt, kiln_mpi_scatter(MPI_COMM_WORLD, rank == 0 ? whole : NULL, b, 0), KILN_OK,
         NULL, "scatter");
  compare(b, all + rank * n * es, "scatter");
  if (rank == size - 1 && rank != 0)
    kiln_buffer_fill(whole, 0, size * n, (const double[2]){0, 0});
  expect(rt,
         kiln_mpi_gather(MPI_COMM_WORLD, b, rank == size - 1 ? whole : NULL, size - 1),
         KILN_OK, NULL, "gather");
  if (rank == size - 1)
    compare(whole, all, "gather");
  kiln_buffer_destroy(whole);
  kiln_buffer_destroy(b);
  free(all);
}

static void test_mismatches(kiln_runtime *rt)
{
  kiln_buffer *f = make(rt, KILN_F32, 100 + (rank != 0), NULL);
  expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, f, f, KILN_MPI_SUM),
         size > 1 ? KILN_ERR_RANK_MISMATCH : KILN_OK, size > 1 ? "element count" : NULL,
         "different counts");
  kiln_buffer *t = make(rt, rank == 0 ? KILN_F32 : KILN_F64, 100, NULL);
  expect(rt, kiln_mpi_broadcast(MPI_COMM_WORLD, t, 0),
         size > 1 ? KILN_ERR_RANK_MISMATCH : KILN_OK, size > 1 ? "element type" : NULL,
         "different types");
  kiln_buffer *g = make(rt, KILN_F32, 100, NULL);
  expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, g, g, rank ? KILN_MPI_MAX : KILN_MPI_SUM),
         size > 1 ? KILN_ERR_RANK_MISMATCH : KILN_OK, size > 1 ? "operation" : NULL,
         "different operations");
  expect(rt, kiln_mpi_broadcast(MPI_COMM_WORLD, g, rank ? 0 : size - 1),
         size > 1 ? KILN_ERR_RANK_MISMATCH : KILN_OK, size > 1 ? "the root" : NULL,
         "different roots");
  /* Rank 0's recv is NULL: it says so, the others name rank 0. */
  expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, g, rank == 0 ? NULL : g, KILN_MPI_SUM),
         rank == 0 ? KILN_ERR_INVALID_ARGUMENT : KILN_ERR_PEER_FAILED,
         rank == 0 ? "recv is NULL on rank 0" : "rank 0 of", "a NULL buffer on rank 0");
  kiln_buffer *c = make(rt, KILN_C32, 10, NULL);
  expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, c, c, KILN_MPI_MIN),
         KILN_ERR_INVALID_DTYPE, "no order", "min of complex");
  /* And the communicator is still in step. */
  expect(rt, kiln_mpi_allreduce(MPI_COMM_WORLD, g, g, KILN_MPI_SUM), KILN_OK, NULL,
         "after the errors");
  kiln_buffer_destroy(f), kiln_buffer_destroy(t), kiln_buffer_destroy(g);
  kiln_buffer_destroy(c);
}

/* Ranks 0 and 1 of a node run on different devices where there are two,
 * whether the rank comes from MPI or from mpirun's variable. */
static void test_devices(kiln_runtime *rt)
{
  const kiln_device_info *d = kiln_runtime_device(rt);
  printf("rank %d of %d: %u:%u %s\n", rank, size, d->platform_index, d->device_index,
         d->name);
  CHECK(strstr(kiln_runtime_selection(rt), "MPI_Comm_split_type"),
        "the selection does not name the local rank's source: %s",
        kiln_runtime_selection(rt));
  kiln_runtime *plain = NULL;
  kiln_status st = kiln_runtime_create(NULL, &plain);
  CHECK(st == KILN_OK && strstr(kiln_runtime_selection(plain), "LOCAL_RANK"),
        "kiln_runtime_create under mpirun: %s",
        st == KILN_OK ? kiln_runtime_selection(plain) : kiln_last_error(NULL));
  CHECK(!plain || kiln_runtime_device(plain)->device_index == d->device_index,
        "the launcher's variable and MPI gave different devices");
  kiln_runtime_destroy(plain);
  unsigned mine[2] = {d->platform_index, d->device_index}, all[2 * 64];
  if (size > 64)
    return;
  MPI_Gather(mine, 2, MPI_UNSIGNED, all, 2, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
  if (rank == 0 && size > 1 && kiln_runtime_device_count(rt) > 1)
    CHECK(all[0] != all[2] || all[1] != all[3], "ranks 0 and 1 share device %u:%u",
          all[0], all[1]);
}

static void test_create_fails(void)
{
  kiln_options o;
  kiln_options_init(&o);
  if (rank == 1)
    o.device = "name=no-such-device";
  kiln_runtime *rt = (kiln_runtime *)&o; /* must come back NULL */
  kiln_status st = kiln_mpi_runtime_create(MPI_COMM_WORLD, &o, &rt);
  printf("rank %d: %s: %s\n", rank, kiln_status_name(st), kiln_last_error(NULL));
  expect(NULL, st, rank == 1 ? KILN_ERR_INVALID_DEVICE_SELECTOR : KILN_ERR_PEER_FAILED,
         rank == 1 ? "no-such-device" : "rank 1 of", "a rank without its device");
  CHECK(rt == NULL, "a runtime came back from a failed creation");
  /* Options by kiln.h's rules for a caller's struct: never initialised
   * (rank 0's), and from a newer kiln.h with a field set (rank 1's, longer
   * than this kiln's); every other rank fails with its peer. */
  struct {
    kiln_options o;
    unsigned char newer[16];
  } big = {0};
  kiln_options_init(&big.o);
  if (rank == 0)
    big.o.struct_size = 0;
  if (rank == 1) {
    big.o.struct_size = sizeof big;
    big.newer[3] = 1;
  }
  st = kiln_mpi_runtime_create(MPI_COMM_WORLD, &big.o, &rt);
  kiln_status want = rank == 0   ? KILN_ERR_INVALID_ARGUMENT
                     : rank == 1 ? KILN_ERR_UNSUPPORTED
                                 : KILN_ERR_PEER_FAILED;
  expect(NULL, st, want,
         rank == 0   ? "kiln_options_init"
         : rank == 1 ? "newer kiln.h"
                     : "rank 0 of",
         "options by the struct rules");
  CHECK(rt == NULL, "a runtime came back from bad options");
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1 && strcmp(argv[1], "create-fails") == 0) {
    test_create_fails();
  } else {
    kiln_runtime *rt = NULL;
    kiln_status st = kiln_mpi_runtime_create(MPI_COMM_WORLD, NULL, &rt);
    CHECK(st == KILN_OK, "kiln_mpi_runtime_create: %s", kiln_last_error(NULL));
    if (rt) {
      test_devices(rt);
      int fp64 = kiln_runtime_device(rt)->has_fp64;
      for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (!fp64 && (dtypes[i] == KILN_F64 || dtypes[i] == KILN_C64))
          continue;
        test_reductions(rt, dtypes[i], 1000);
        test_moves(rt, dtypes[i], 1000);
      }
      /* Several pieces: the pipeline's overlap, and its last short piece. */
      size_t big = 2 * (KILN_MPI_PIECE_BYTES / 4) + 123;
      test_reductions(rt, KILN_F32, big);
      test_reductions(rt, KILN_F16, big);
      test_moves(rt, KILN_F32, big);
      test_mismatches(rt);
      kiln_runtime_destroy(rt);
    }
  }
  int total = 0;
  MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s: %d checks a rank on %d ranks, %d failed\n", total ? "FAIL" : "ok", checks,
           size, total);
  MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return total ? 1 : 0;
}
