/*
 * test-abi.c — the structs a caller allocates, as programs built against
 * other versions of kiln.h pass them (kiln.h: "A header that can grow").
 *
 * The "v0" structs below are what an older kiln.h would have declared: this
 * release's fields with the last ones cut off. They are filled as such a
 * program would, passed to the real calls of the shared library, and the
 * results checked against double references. The "newer" structs add a
 * field at the end, as a later kiln.h would; and a struct nobody initialised
 * must be refused with a message that names its init.
 */
#include "common.h"

#include <math.h>

/* ---- older and newer copies of the structs -------------------------------- */

/* kiln_gemm_desc without backend. */
typedef struct v0_gemm_desc {
  size_t struct_size;
  kiln_dtype dtype;
  kiln_layout layout;
  kiln_transpose trans_a, trans_b;
  size_t m, n, k;
  double alpha, beta;
  size_t lda, ldb, ldc;
  size_t offset_a, offset_b, offset_c;
  size_t batch;
  size_t stride_a, stride_b, stride_c;
} v0_gemm_desc;

/* kiln_reduce_desc without offset and backend. */
typedef struct v0_reduce_desc {
  size_t struct_size;
  kiln_reduce_op op;
  kiln_dtype dtype;
  unsigned ndim;
  size_t shape[KILN_ARRAY_MAX_DIMS];
  int32_t axis;
} v0_reduce_desc;

/* kiln_conv2d_desc without relu and backend. */
typedef struct v0_conv2d_desc {
  size_t struct_size;
  kiln_dtype dtype;
  kiln_tensor_layout layout;
  size_t n, c, h, w;
  size_t k, r, s;
  size_t stride_h, stride_w;
  size_t pad_top, pad_bottom, pad_left, pad_right;
  size_t dilation_h, dilation_w;
  size_t groups;
} v0_conv2d_desc;

/* kiln_options up to memory_fraction: the rest defaults. */
typedef struct v0_options {
  size_t struct_size;
  uint64_t memory_limit;
  double memory_fraction;
} v0_options;

/* kiln_memory_usage without max_alloc_bytes and device_free_bytes. */
typedef struct v0_memory_usage {
  size_t struct_size;
  uint64_t current_bytes, peak_bytes, live_buffers, limit_bytes;
} v0_memory_usage;

/* kiln_profile_row without gflops, gbps and percent. */
typedef struct v0_profile_row {
  size_t struct_size;
  char op[64];
  char backend[16];
  uint64_t calls, total_ns, min_ns, max_ns, host_ns, flops, bytes;
} v0_profile_row;

/* A later kiln.h's structs: one more field at the end. */
typedef struct newer_gemm_desc {
  kiln_gemm_desc now;
  uint64_t added;
} newer_gemm_desc;

typedef struct newer_options {
  kiln_options now;
  uint64_t added;
} newer_options;

typedef struct newer_memory_usage {
  kiln_memory_usage now;
  uint64_t added;
} newer_memory_usage;

/* Each v0 struct must be a prefix of this release's. */
_Static_assert(offsetof(v0_gemm_desc, stride_c) == offsetof(kiln_gemm_desc, stride_c) &&
                 sizeof(v0_gemm_desc) < sizeof(kiln_gemm_desc),
               "v0_gemm_desc is a prefix of kiln_gemm_desc");
_Static_assert(offsetof(v0_reduce_desc, axis) == offsetof(kiln_reduce_desc, axis) &&
                 sizeof(v0_reduce_desc) < sizeof(kiln_reduce_desc),
               "v0_reduce_desc is a prefix of kiln_reduce_desc");
_Static_assert(offsetof(v0_conv2d_desc, groups) == offsetof(kiln_conv2d_desc, groups) &&
                 sizeof(v0_conv2d_desc) < sizeof(kiln_conv2d_desc),
               "v0_conv2d_desc is a prefix of kiln_conv2d_desc");
_Static_assert(offsetof(v0_options, memory_fraction) ==
                 offsetof(kiln_options, memory_fraction),
               "v0_options is a prefix of kiln_options");
_Static_assert(offsetof(v0_memory_usage, limit_bytes) ==
                 offsetof(kiln_memory_usage, limit_bytes),
               "v0_memory_usage is a prefix of kiln_memory_usage");
_Static_assert(offsetof(v0_profile_row, bytes) == offsetof(kiln_profile_row, bytes),
               "v0_profile_row is a prefix of kiln_profile_row");

/* An older program's init: zeros, its own sizeof, then the defaults. */
#define V0_INIT(p) (memset((p), 0, sizeof *(p)), (p)->struct_size = sizeof *(p))

/* ---- older programs ---------------------------------------------------------- */

/* Values on a 2^-4 grid: exact in float32, products and their sums too. */
static void fill(float *x, size_t n, uint64_t *seed)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float)((double)(kiln_test_random(seed) % 64) - 32.0) / 16.0f;
}

static void test_abi_gemm_v0_desc(void **state)
{
  kiln_runtime *rt = *state;
  enum { M = 5, N = 7, K = 3 };
  float a[M * K], b[K * N], c[M * N], got[M * N];
  uint64_t seed = 15;
  fill(a, M * K, &seed);
  fill(b, K * N, &seed);
  fill(c, M * N, &seed);
  v0_gemm_desc d;
  V0_INIT(&d);
  d.dtype = KILN_F32, d.m = M, d.n = N, d.k = K, d.alpha = 2, d.beta = 0.5;
  kiln_buffer *ba = NULL, *bb = NULL, *bc = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, M * K, 0, &ba));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, K * N, 0, &bb));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, M * N, 0, &bc));
  assert_kiln_ok(rt, kiln_buffer_write(ba, 0, M * K, a));
  assert_kiln_ok(rt, kiln_buffer_write(bb, 0, K * N, b));
  assert_kiln_ok(rt, kiln_buffer_write(bc, 0, M * N, c));
  assert_kiln_ok(rt, kiln_gemm(rt, (const kiln_gemm_desc *)&d, ba, bb, bc));
  assert_kiln_ok(rt, kiln_buffer_read(bc, 0, M * N, got));
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double want = 0.5 * c[i * N + j];
      for (size_t p = 0; p < K; p++)
        want += 2.0 * a[i * K + p] * b[p * N + j];
      assert_true(got[i * N + j] == want); /* exact on this grid */
    }
  kiln_buffer_destroy(ba);
  kiln_buffer_destroy(bb);
  kiln_buffer_destroy(bc);
}

static void test_abi_reduce_v0_desc(void **state)
{
  kiln_runtime *rt = *state;
  enum { ROWS = 4, COLS = 9 };
  float x[ROWS * COLS], got[ROWS];
  uint64_t seed = 16;
  fill(x, ROWS * COLS, &seed);
  v0_reduce_desc d;
  V0_INIT(&d);
  d.op = KILN_REDUCE_SUM, d.dtype = KILN_F32, d.ndim = 2, d.axis = -1;
  d.shape[0] = ROWS, d.shape[1] = COLS;
  kiln_buffer *in = NULL, *out = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, ROWS * COLS, 0, &in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, ROWS, 0, &out));
  assert_kiln_ok(rt, kiln_buffer_write(in, 0, ROWS * COLS, x));
  assert_kiln_ok(rt, kiln_reduce(rt, (const kiln_reduce_desc *)&d, in, out));
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, ROWS, got));
  for (size_t i = 0; i < ROWS; i++) {
    double want = 0;
    for (size_t j = 0; j < COLS; j++)
      want += x[i * COLS + j];
    assert_true(got[i] == want);
  }
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
}

static void test_abi_conv2d_v0_desc(void **state)
{
  (void)state;
  v0_conv2d_desc d;
  V0_INIT(&d);
  d.dtype = KILN_F32, d.n = 1, d.c = 3, d.h = 10, d.w = 12, d.k = 4, d.r = 3, d.s = 5;
  d.stride_h = 2, d.pad_left = d.pad_right = 1;
  size_t p = 0, q = 0;
  assert_kiln_ok(NULL, kiln_conv2d_output((const kiln_conv2d_desc *)&d, &p, &q));
  assert_int_equal(p, (10 - 3) / 2 + 1);
  assert_int_equal(q, 12 + 2 - 5 + 1);
}

/* An older program's options, and its (shorter) memory usage: kiln fills
 * what the struct has and not a byte beyond it. */
static void test_abi_v0_options_and_usage(void **state)
{
  (void)state;
  v0_options o;
  V0_INIT(&o);
  o.memory_limit = 3u << 20;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create((const kiln_options *)&o, &rt));
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1000, 0, &b));
  union {
    v0_memory_usage u;
    unsigned char bytes[sizeof(kiln_memory_usage) + 16];
  } mem;
  memset(&mem, 0xAB, sizeof mem);
  mem.u.struct_size = sizeof mem.u;
  assert_kiln_ok(rt, kiln_memory_stats(rt, (kiln_memory_usage *)&mem.u));
  assert_int_equal(mem.u.struct_size, sizeof mem.u);
  assert_int_equal(mem.u.limit_bytes, 3u << 20);
  assert_int_equal(mem.u.live_buffers, 1);
  assert_true(mem.u.current_bytes >= 4000 && mem.u.peak_bytes >= mem.u.current_bytes);
  for (size_t i = sizeof mem.u; i < sizeof mem; i++)
    assert_int_equal(mem.bytes[i], 0xAB);
  kiln_buffer_destroy(b);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* An array of an older program's rows: kiln steps by rows[0].struct_size. */
static void test_abi_v0_profile_rows(void **state)
{
  (void)state;
  kiln_options o;
  kiln_options_init(&o);
  o.profile = 1;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&o, &rt));
  kiln_buffer *b = NULL;
  float one = 1, back[16];
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 16, 0, &b));
  for (int i = 0; i < 3; i++)
    assert_kiln_ok(rt, kiln_buffer_fill(b, 0, 16, &one));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, 16, back));
  assert_kiln_ok(rt, kiln_finish(rt));
  v0_profile_row rows[3];
  memset(rows, 0xAB, sizeof rows);
  rows[0].struct_size = sizeof rows[0];
  size_t n = 0;
  assert_kiln_ok(rt, kiln_profile_rows(rt, (kiln_profile_row *)rows, 2, &n));
  assert_int_equal(n, 2);
  uint64_t fills = 0, reads = 0;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(rows[i].struct_size, sizeof rows[i]);
    assert_string_equal(rows[i].backend, "opencl");
    fills += strcmp(rows[i].op, "fill") == 0 ? rows[i].calls : 0;
    reads += strcmp(rows[i].op, "read") == 0 ? rows[i].calls : 0;
  }
  assert_int_equal(fills, 3);
  assert_int_equal(reads, 1);
  assert_int_equal(rows[2].struct_size, (size_t)0xABABABABABABABABull); /* untouched */
  kiln_buffer_destroy(b);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* ---- newer programs ------------------------------------------------------ */

/* A newer struct whose added field is left at its default (0) works; one
 * that sets it is refused, naming both sizes. */
static void test_abi_newer_desc(void **state)
{
  kiln_runtime *rt = *state;
  float a[4] = {1, 2, 3, 4}, got[4];
  kiln_buffer *ba = NULL, *bc = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 4, 0, &ba));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 4, 0, &bc));
  assert_kiln_ok(rt, kiln_buffer_write(ba, 0, 4, a));
  newer_gemm_desc d;
  memset(&d, 0, sizeof d);
  kiln_gemm_desc_init(&d.now, KILN_F32, 2, 2, 2);
  d.now.struct_size = sizeof d;
  assert_kiln_ok(rt, kiln_gemm(rt, &d.now, ba, ba, bc));
  assert_kiln_ok(rt, kiln_buffer_read(bc, 0, 4, got));
  assert_true(got[0] == 7 && got[1] == 10 && got[2] == 15 && got[3] == 22);
  d.added = 1;
  char sizes[64];
  snprintf(sizes, sizeof sizes, "struct_size is %zu", sizeof d);
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, sizes, kiln_gemm(rt, &d.now, ba, ba, bc));
  snprintf(sizes, sizeof sizes, "first %zu bytes", sizeof(kiln_gemm_desc));
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, sizes, kiln_gemm(rt, &d.now, ba, ba, bc));
  assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "newer kiln.h",
                    kiln_gemm_host(rt, &d.now, a, a, got));
  kiln_buffer_destroy(ba);
  kiln_buffer_destroy(bc);
}

static void test_abi_newer_options_and_usage(void **state)
{
  kiln_runtime *rt = *state;
  newer_options o;
  memset(&o, 0, sizeof o);
  kiln_options_init(&o.now);
  o.now.struct_size = sizeof o;
  o.added = 7;
  kiln_runtime *other = NULL;
  assert_kiln_fails(NULL, KILN_ERR_UNSUPPORTED, "kiln_options.struct_size",
                    kiln_runtime_create(&o.now, &other));
  assert_null(other);
  /* an output struct: kiln fills what it knows, leaves the rest alone */
  newer_memory_usage u;
  memset(&u, 0, sizeof u);
  u.now.struct_size = sizeof u;
  u.added = 0x5A5A;
  assert_kiln_ok(rt, kiln_memory_stats(rt, &u.now));
  assert_int_equal(u.now.struct_size, sizeof u);
  assert_true(u.now.limit_bytes > 0);
  assert_int_equal(u.added, 0x5A5A);
}

/* ---- structs nobody initialised ------------------------------------------ */

static void test_abi_uninitialised(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 64, 0, &b));
  kiln_gemm_desc g;
  memset(&g, 0, sizeof g);
  g.dtype = KILN_F32, g.m = g.n = g.k = 2, g.alpha = 1;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_gemm_desc_init()",
                    kiln_gemm(rt, &g, b, b, b));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "struct_size is 0",
                    kiln_gemm(rt, &g, b, b, b));
  g.struct_size = (size_t)-1; /* garbage: not followed */
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "was not initialised",
                    kiln_gemm(rt, &g, b, b, b));
  kiln_reduce_desc r;
  memset(&r, 0, sizeof r);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_reduce_desc_init()",
                    kiln_reduce(rt, &r, b, b));
  kiln_fft_desc f;
  memset(&f, 0, sizeof f);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_fft_desc_init()",
                    kiln_fft(rt, &f, b, b));
  kiln_conv2d_desc c;
  memset(&c, 0, sizeof c);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_conv2d_desc_init()",
                    kiln_conv2d(rt, &c, b, b, NULL, b));
  kiln_options o;
  memset(&o, 0, sizeof o);
  kiln_runtime *other = NULL;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_options_init()",
                    kiln_runtime_create(&o, &other));
  kiln_memory_usage mu;
  memset(&mu, 0, sizeof mu);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_memory_usage_init()",
                    kiln_memory_stats(rt, &mu));
  kiln_cache_usage cu;
  memset(&cu, 0, sizeof cu);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_cache_usage_init()",
                    kiln_cache_stats(rt, &cu));
  kiln_profile_row row;
  memset(&row, 0, sizeof row);
  size_t n;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_profile_row_init()",
                    kiln_profile_rows(rt, &row, 1, &n));
  kiln_buffer_destroy(b);
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_abi_gemm_v0_desc),
    cmocka_unit_test(test_abi_reduce_v0_desc),
    cmocka_unit_test(test_abi_conv2d_v0_desc),
    cmocka_unit_test(test_abi_v0_options_and_usage),
    cmocka_unit_test(test_abi_v0_profile_rows),
    cmocka_unit_test(test_abi_newer_desc),
    cmocka_unit_test(test_abi_newer_options_and_usage),
    cmocka_unit_test(test_abi_uninitialised),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
