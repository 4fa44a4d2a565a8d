/*
 * tuning-case.h — what the tests of tuning records share (test-tuning.c,
 * test-tuning-clblast.c): a fresh cache folder per test, a runtime on it,
 * the record file, resealing an edited record, and GEMM checked against a
 * double CPU reference.
 */
#ifndef KILN_TESTS_TUNING_CASE_H
#define KILN_TESTS_TUNING_CASE_H

#include <math.h>

#include "common.h"

#include <json-c/json.h>
#include <xxhash.h>

#include "base/util.h"
#include "tuning/tuning.h"

typedef struct fixture {
  char root[64], dir[128];
} fixture;

static inline int setup(void **state)
{
  fixture *fx = calloc(1, sizeof *fx);
  if (!fx || kiln_test_cache_folders("tuning", fx->root, sizeof fx->root, fx->dir,
                                     sizeof fx->dir) != 0)
    return -1;
  *state = fx;
  return 0;
}

static inline int teardown(void **state)
{
  fixture *fx = *state;
  kiln_test_remove_tree(fx->root);
  free(fx);
  return 0;
}

static inline kiln_runtime *runtime(const fixture *fx, int no_tuning)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = fx->dir;
  o.no_tuning = no_tuning;
  return kiln_test_runtime_with(&o);
}

static inline int tuned(kiln_runtime *rt)
{
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  assert_kiln_ok(rt, kiln_tuning_stats(rt, &u));
  return u.tuned;
}

/* The record file's text, and its path in *path (malloc'd both). */
static inline char *record_text(kiln_runtime *rt, char **path)
{
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  assert_kiln_ok(rt, kiln_tuning_stats(rt, &u));
  assert_non_null(u.path);
  *path = strdup(u.path);
  FILE *f = fopen(u.path, "rb");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strdup(buf);
}

static inline void write_file(const char *path, const char *text, size_t len)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* C = A B for a batch of m x k and k x n row-major float matrices (packed
 * one after another) on backend, against doubles. The bound: k products
 * each rounded by at most 2^-24 relative, summed. */
static inline void check_gemm_batch_on(kiln_runtime *rt, kiln_backend backend, size_t m,
                                       size_t n, size_t k, size_t batch)
{
  size_t na = batch * m * k, nb = batch * k * n, nc = batch * m * n;
  float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b),
        *c = malloc(nc * sizeof *c);
  uint64_t s = 7;
  for (size_t i = 0; i < na; i++)
    a[i] = (float)(kiln_test_random(&s) % 2001) / 1000.0f - 1.0f;
  for (size_t i = 0; i < nb; i++)
    b[i] = (float)(kiln_test_random(&s) % 2001) / 1000.0f - 1.0f;
  kiln_buffer *ba, *bb, *bc;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, na, 0, &ba));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, nb, 0, &bb));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, nc, 0, &bc));
  assert_kiln_ok(rt, kiln_buffer_write(ba, 0, na, a));
  assert_kiln_ok(rt, kiln_buffer_write(bb, 0, nb, b));
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, m, n, k);
  d.backend = backend;
  d.batch = batch;
  d.stride_a = m * k, d.stride_b = k * n, d.stride_c = m * n;
  assert_kiln_ok(rt, kiln_gemm(rt, &d, ba, bb, bc));
  assert_kiln_ok(rt, kiln_buffer_read(bc, 0, nc, c));
  for (size_t q = 0; q < batch; q++)
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        const float *aq = a + q * m * k, *bq = b + q * k * n;
        double want = 0, mag = 0, got = c[(q * m + i) * n + j];
        for (size_t p = 0; p < k; p++) {
          want += (double)aq[i * k + p] * bq[p * n + j];
          mag += fabs((double)aq[i * k + p] * bq[p * n + j]);
        }
        double bound = (double)(k + 1) * 0x1p-24 * mag + 1e-30;
        if (fabs(got - want) > bound)
          fail_msg("C[%zu][%zu,%zu] = %.9g, want %.9g (bound %.3g)", q, i, j, got, want,
                   bound);
      }
  kiln_buffer_destroy(ba);
  kiln_buffer_destroy(bb);
  kiln_buffer_destroy(bc);
  free(a);
  free(b);
  free(c);
}

static inline void check_gemm_on(kiln_runtime *rt, kiln_backend backend, size_t m,
                                 size_t n, size_t k)
{
  check_gemm_batch_on(rt, backend, m, n, k, 1);
}

/* Sets o.checksum as record.c computes it: XXH3-64 of the object without
 * it, printed plain. */
static inline void reseal(json_object *o)
{
  json_object_object_del(o, "checksum");
  const char *plain = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  char sum[32];
  snprintf(sum, sizeof sum, "xxh3-64:%016llx",
           (unsigned long long)XXH3_64bits(plain, strlen(plain)));
  json_object_object_add(o, "checksum", json_object_new_string(sum));
}

#endif /* KILN_TESTS_TUNING_CASE_H */
