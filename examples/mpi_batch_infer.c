/*
 * mpi_batch_infer.c — data-parallel inference of a 2-layer perceptron over
 * MPI ranks, each on its own device: rank 0 holds the batch and the
 * weights, broadcasts the weights, scatters the batch's rows, each rank runs
 * both layers (kiln_gemm with its fused bias + ReLU epilogue) on its rows,
 * and the outputs are gathered back to rank 0, which checks them against
 * the same network run on the whole batch in one process (its own device).
 *
 *   build: with kiln and MPI (meson builds it as examples/mpi_batch_infer)
 *   run:   mpirun -np 4 ./mpi_batch_infer     exit 0 when both agree
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/kiln_mpi.h>

enum { ROWS_PER_RANK = 64, IN = 256, HIDDEN = 128, OUT = 16 };

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if ((call) != KILN_OK) {                                                             \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, kiln_last_error(rt));            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
    }                                                                                    \
  } while (0)

/* Deterministic values in [-0.5, 0.5). */
static void fill(float *v, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    v[i] = (float)((i * 2654435761u + seed * 40503u) % 1000) / 1000.0f - 0.5f;
}

/* out = ReLU(in W + b) for `rows` rows: in rows x k, W k x n, b n values. */
static kiln_status layer(kiln_runtime *rt, size_t rows, size_t k, size_t n,
                         const kiln_buffer *in, const kiln_buffer *w,
                         const kiln_buffer *b, kiln_buffer *out)
{
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, rows, n, k);
  d.bias = KILN_BIAS_COL;
  d.bias_buffer = b;
  d.activation = KILN_ACTIVATION_RELU;
  return kiln_gemm(rt, &d, in, w, out);
}

/* Both layers on `rows` rows of x (a buffer), into y. */
static kiln_status network(kiln_runtime *rt, size_t rows, kiln_buffer *const wb[4],
                           const kiln_buffer *x, kiln_buffer *y)
{
  kiln_buffer *h = NULL;
  kiln_status st = kiln_buffer_create(rt, KILN_F32, rows * HIDDEN, 0, &h);
  if (st == KILN_OK)
    st = layer(rt, rows, IN, HIDDEN, x, wb[0], wb[1], h);
  if (st == KILN_OK)
    st = layer(rt, rows, HIDDEN, OUT, h, wb[2], wb[3], y);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  kiln_buffer_destroy(h);
  return st;
}

int main(int argc, char **argv)
{
  int rank = 0, size = 1;
  kiln_runtime *rt = NULL;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(kiln_mpi_runtime_create(MPI_COMM_WORLD, NULL, &rt));
  const size_t batch = (size_t)size * ROWS_PER_RANK;
  const size_t sizes[4] = {IN * HIDDEN, HIDDEN, HIDDEN * OUT, OUT};

  /* The weights: rank 0's, broadcast to every rank's device. */
  kiln_buffer *wb[4];
  for (int i = 0; i < 4; i++) {
    CHECK(kiln_buffer_create(rt, KILN_F32, sizes[i], 0, &wb[i]));
    if (rank == 0) {
      float *v = malloc(sizes[i] * sizeof *v);
      fill(v, sizes[i], 2 + (unsigned)i);
      CHECK(kiln_buffer_write(wb[i], 0, sizes[i], v));
      free(v);
    }
    CHECK(kiln_mpi_broadcast(MPI_COMM_WORLD, wb[i], 0));
  }

  /* The batch: rank 0's, its rows scattered; the outputs gathered. */
  kiln_buffer *xall = NULL, *yall = NULL, *x, *y;
  if (rank == 0) {
    float *v = malloc(batch * IN * sizeof *v);
    fill(v, batch * IN, 1);
    CHECK(kiln_buffer_create(rt, KILN_F32, batch * IN, 0, &xall));
    CHECK(kiln_buffer_create(rt, KILN_F32, batch * OUT, 0, &yall));
    CHECK(kiln_buffer_write(xall, 0, batch * IN, v));
    free(v);
  }
  CHECK(kiln_buffer_create(rt, KILN_F32, ROWS_PER_RANK * IN, 0, &x));
  CHECK(kiln_buffer_create(rt, KILN_F32, ROWS_PER_RANK * OUT, 0, &y));
  double t0 = MPI_Wtime();
  CHECK(kiln_mpi_scatter(MPI_COMM_WORLD, xall, x, 0));
  CHECK(network(rt, ROWS_PER_RANK, wb, x, y));
  CHECK(kiln_mpi_gather(MPI_COMM_WORLD, y, yall, 0));
  double t1 = MPI_Wtime();

  int wrong = 0;
  if (rank == 0) {
    /* One process: the whole batch through the same network. */
    kiln_buffer *yone;
    CHECK(kiln_buffer_create(rt, KILN_F32, batch * OUT, 0, &yone));
    CHECK(network(rt, batch, wb, xall, yone));
    float *a = malloc(2 * batch * OUT * sizeof *a), *b = a + batch * OUT;
    CHECK(kiln_buffer_read(yall, 0, batch * OUT, a));
    CHECK(kiln_buffer_read(yone, 0, batch * OUT, b));
    double worst = 0;
    for (size_t i = 0; i < batch * OUT; i++)
      worst = fmax(worst, fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1e-3));
    wrong = !(worst <= 1e-5);
    printf("%zu rows on %d ranks in %.1f ms (scatter, 2 layers, gather); largest "
           "relative difference from one process: %.2g%s\n",
           batch, size, (t1 - t0) * 1e3, worst, wrong ? "  WRONG" : "");
    free(a);
    kiln_buffer_destroy(yone);
  }
  kiln_buffer_destroy(xall), kiln_buffer_destroy(yall);
  kiln_buffer_destroy(x), kiln_buffer_destroy(y);
  for (int i = 0; i < 4; i++)
    kiln_buffer_destroy(wb[i]);
  kiln_runtime_destroy(rt);
  MPI_Bcast(&wrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return wrong;
}
