/*
 * mpi_npy_reduce.c — a reduction of one .npy file (float32, any shape) over
 * MPI ranks, each on its own device, none reading more than its share:
 * rank r reads elements [r N / P, (r + 1) N / P) alone
 * (kiln_npy_load_range), reduces them on its device, and the partial
 * results meet through libkiln-mpi's collectives on kiln buffers. Rank 0
 * prints sum, mean, norm, min, max and argmax (its index in the whole
 * file), and, when the file is small enough to read whole, checks them
 * against the host in double.
 *
 *   build: with kiln and MPI (meson builds it as examples/mpi_npy_reduce)
 *   run:   mpirun -np 4 ./mpi_npy_reduce data.npy [N]
 *          N: rank 0 first writes data.npy with N values (for a test)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/kiln_mpi.h>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if ((call) != KILN_OK) {                                                             \
      fprintf(stderr, "rank %d: %s: %s\n", rank, #call, kiln_last_error(rt));            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
    }                                                                                    \
  } while (0)

/* Writes n float32 values with a single greatest one (for argmax). */
static kiln_status make_file(const char *path, size_t n)
{
  kiln_array a = {.dtype = KILN_F32, .ndim = 1, .shape = {n}, .count = n};
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] =
      (float)(sin((double)i * 1e-3) * 100 + (double)(i % 7) - (i == n / 3 ? -500 : 0));
  a.data = v;
  kiln_status st = kiln_npy_save(path, &a);
  free(v);
  return st;
}

/* One reduction of the rank's part on its device, as a double. */
static double reduce(kiln_runtime *rt, kiln_reduce_op op, const kiln_array *part,
                     size_t n)
{
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, op, KILN_F32, n);
  union {
    float f;
    int64_t i;
  } out = {0};
  if (kiln_reduce_host(rt, &d, part->data, &out) != KILN_OK) {
    fprintf(stderr, "%s: %s\n", kiln_reduce_op_name(op), kiln_last_error(rt));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return op == KILN_REDUCE_ARGMAX ? (double)out.i : (double)out.f;
}

int main(int argc, char **argv)
{
  int rank = 0, size = 1;
  kiln_runtime *rt = NULL;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2)
    return fprintf(stderr, "usage: mpi_npy_reduce FILE.npy [N]\n"), MPI_Finalize(), 2;
  if (argc > 2 && rank == 0)
    CHECK(make_file(argv[1], strtoull(argv[2], NULL, 10)));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(kiln_mpi_runtime_create(MPI_COMM_WORLD, NULL, &rt));

  /* The header alone, then this rank's share. */
  kiln_array part;
  size_t n = 0;
  CHECK(kiln_npy_load_range(argv[1], 0, &n, &part));
  size_t total = part.count, first = total * rank / size;
  n = total * (rank + 1) / size - first;
  if (part.dtype != KILN_F32 || n == 0) {
    fprintf(stderr, "rank %d: expected float32 and at least one element a rank\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  CHECK(kiln_npy_load_range(argv[1], first, &n, &part));

  /* Partials: [sum, sum of squares] (summed), min, max; each rank's
   * [max, its global index] (gathered: argmax keeps the first maximum). */
  double norm = reduce(rt, KILN_REDUCE_NORM2, &part, n);
  double sums[2] = {reduce(rt, KILN_REDUCE_SUM, &part, n), norm * norm};
  float lo = (float)reduce(rt, KILN_REDUCE_MIN, &part, n);
  float hi = (float)reduce(rt, KILN_REDUCE_MAX, &part, n);
  double best[2] = {hi, (double)first + reduce(rt, KILN_REDUCE_ARGMAX, &part, n)};
  kiln_buffer *s, *mn, *mx, *b, *all;
  CHECK(kiln_buffer_create(rt, KILN_F64, 2, 0, &s));
  CHECK(kiln_buffer_create(rt, KILN_F32, 1, 0, &mn));
  CHECK(kiln_buffer_create(rt, KILN_F32, 1, 0, &mx));
  CHECK(kiln_buffer_create(rt, KILN_F64, 2, 0, &b));
  CHECK(kiln_buffer_create(rt, KILN_F64, 2 * (size_t)size, 0, &all));
  CHECK(kiln_buffer_write(s, 0, 2, sums));
  CHECK(kiln_buffer_write(mn, 0, 1, &lo));
  CHECK(kiln_buffer_write(mx, 0, 1, &hi));
  CHECK(kiln_buffer_write(b, 0, 2, best));
  CHECK(kiln_mpi_reduce(MPI_COMM_WORLD, s, s, KILN_MPI_SUM, 0));
  CHECK(kiln_mpi_reduce(MPI_COMM_WORLD, mn, mn, KILN_MPI_MIN, 0));
  CHECK(kiln_mpi_reduce(MPI_COMM_WORLD, mx, mx, KILN_MPI_MAX, 0));
  CHECK(kiln_mpi_gather(MPI_COMM_WORLD, b, all, 0));

  int wrong = 0;
  if (rank == 0) {
    double *each = malloc(2 * (size_t)size * sizeof *each);
    CHECK(kiln_buffer_read(s, 0, 2, sums));
    CHECK(kiln_buffer_read(mn, 0, 1, &lo));
    CHECK(kiln_buffer_read(mx, 0, 1, &hi));
    CHECK(kiln_buffer_read(all, 0, 2 * (size_t)size, each));
    size_t argmax = 0;
    for (int r = size - 1; r >= 0; r--)
      argmax = each[2 * r] == hi ? (size_t)each[2 * r + 1] : argmax;
    printf("%zu float32 values on %d ranks (%zu to %zu a rank)\n", total, size,
           total / size, total - total * (size - 1) / size);
    printf("sum %.9g  mean %.9g  norm %.9g  min %.9g  max %.9g  argmax %zu\n", sums[0],
           sums[0] / (double)total, sqrt(sums[1]), lo, hi, argmax);
    kiln_array whole;
    if (total <= (64u << 20) / 4 && kiln_npy_load(argv[1], &whole) == KILN_OK) {
      const float *v = whole.data;
      double rs = 0, rq = 0, rabs = 0, rlo = v[0], rhi = v[0];
      size_t ra = 0;
      for (size_t i = 0; i < total; i++) {
        rs += v[i], rq += (double)v[i] * v[i], rabs += fabs(v[i]);
        rlo = v[i] < rlo ? v[i] : rlo;
        ra = v[i] > rhi ? i : ra;
        rhi = v[i] > rhi ? v[i] : rhi;
      }
      wrong = fabs(sums[0] - rs) > 1e-6 * rabs ||
              fabs(sqrt(sums[1]) - sqrt(rq)) > 1e-5 * sqrt(rq) || lo != rlo ||
              hi != rhi || argmax != ra;
      printf("%s the host's: sum %.9g norm %.9g argmax %zu\n",
             wrong ? "WRONG: unlike" : "as", rs, sqrt(rq), ra);
      kiln_array_free(&whole);
    }
    free(each);
  }
  kiln_array_free(&part);
  kiln_buffer_destroy(s), kiln_buffer_destroy(mn), kiln_buffer_destroy(mx);
  kiln_buffer_destroy(b), kiln_buffer_destroy(all);
  kiln_runtime_destroy(rt);
  MPI_Bcast(&wrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return wrong;
}
