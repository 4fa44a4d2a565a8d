/*
 * saxpy.h — a caller's kernel for the tests that build one through kiln's
 * program API (and so through the binary cache), run it and check it
 * against the host: test-kernels and test-trust.
 */
#ifndef KILN_TESTS_SAXPY_H
#define KILN_TESTS_SAXPY_H

#include "common.h"

static const char saxpy[] =
  "kernel void saxpy(float a, global const float *x, global float *y, int n)\n"
  "{ int i = get_global_id(0); if (i < n) y[i] += a * x[i]; }\n";

/* saxpy from source, through set_args and launch, against the host. */
static inline void run_saxpy(kiln_runtime *rt, kiln_program *p, int n)
{
  kiln_kernel *k = NULL;
  assert_kiln_ok(rt, kiln_kernel_create(p, "saxpy", &k));
  float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  kiln_buffer *bx = NULL, *by = NULL;
  for (int i = 0; i < n; i++) {
    x[i] = (float)i * 0.25f;
    y[i] = (float)(n - i);
  }
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, (size_t)n, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, (size_t)n, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, (size_t)n, x));
  assert_kiln_ok(rt, kiln_buffer_write(by, 0, (size_t)n, y));
  assert_kiln_ok(rt, kiln_kernel_set_args(k, "fbbi", 3.0, bx, by, (int32_t)n));
  assert_kiln_ok(rt, kiln_kernel_launch(k, 1, (size_t[]){(size_t)n}, NULL));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, (size_t)n, y));
  for (int i = 0; i < n; i++) /* exact: small integers and quarters */
    assert_true(y[i] == (float)((double)(n - i) + 3.0 * i * 0.25));
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_buffer_destroy(bx);
  kiln_buffer_destroy(by);
  free(x);
  free(y);
  assert_kiln_ok(rt, kiln_kernel_destroy(k));
}

#endif /* KILN_TESTS_SAXPY_H */
