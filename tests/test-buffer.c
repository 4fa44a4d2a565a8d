/*
 * test-buffer.c — buffers: round trips for every element type, copies, fills,
 * wrapped host memory, getters, memory accounting, every refused request, and
 * OpenCL failures injected with clfault. Expected data is computed here on
 * the host, never by kiln; a new buffer's contents are never assumed zero.
 */
#include "clfault.h"
#include "common.h"

#include <math.h>

#include "kiln/kiln_cl.h"

/* Element types: common.h's. */
#define NDTYPES COUNT(kiln_test_dtypes)

static const size_t counts[] = {1, 3, 17, 1000003};

/* Sets element i to pattern `seed`: derived from the index, so neighbours
 * differ and a shifted, truncated or re/im-swapped copy shows. */
static void put(kiln_dtype dtype, void *dst, size_t i, unsigned seed)
{
  switch (dtype) {
  case KILN_F16: /* bit patterns; 40503 is odd, so 65536 neighbours differ */
    ((uint16_t *)dst)[i] = (uint16_t)(i * 40503u + seed * 7919u);
    break;
  case KILN_F32: ((float *)dst)[i] = (float)i * 0.5f + (float)seed; break;
  case KILN_F64: ((double *)dst)[i] = (double)i * 0.25 - (double)seed; break;
  case KILN_C32:
    ((float *)dst)[2 * i] = (float)i + (float)seed;
    ((float *)dst)[2 * i + 1] = -(float)i - 0.5f;
    break;
  case KILN_C64:
    ((double *)dst)[2 * i] = (double)i + 0.25 * seed;
    ((double *)dst)[2 * i + 1] = -(double)i * 3.0 - 1.0;
    break;
  case KILN_I32: ((int32_t *)dst)[i] = (int32_t)i * 3 - (int32_t)seed; break;
  case KILN_I64:
    ((int64_t *)dst)[i] = (int64_t)i * INT64_C(0x100000001) - (int64_t)seed;
    break;
  }
}

static void *pattern(const kiln_test_dtype *t, size_t count, unsigned seed)
{
  void *p = malloc(count * t->size);
  assert_non_null(p);
  for (size_t i = 0; i < count; i++)
    put(t->dtype, p, i, seed);
  return p;
}

/* Host memory that no correct read leaves as it is. */
static void *scratch(const kiln_test_dtype *t, size_t count)
{
  void *p = malloc(count * t->size);
  assert_non_null(p);
  memset(p, 0xA5, count * t->size);
  return p;
}

static void *elem(const kiln_test_dtype *t, void *base, size_t i)
{
  return (unsigned char *)base + i * t->size;
}

static void assert_same(const kiln_test_dtype *t, const void *want, const void *got,
                        size_t count, const char *what)
{
  const unsigned char *a = want, *b = got;
  if (memcmp(a, b, count * t->size) == 0)
    return;
  for (size_t i = 0; i < count; i++)
    if (memcmp(a + i * t->size, b + i * t->size, t->size) != 0)
      fail_msg("%s: %s element %zu of %zu differs", what, t->name, i, count);
}

/* Reads the whole buffer and compares it with want. */
static void assert_contents(kiln_runtime *rt, const kiln_test_dtype *t, kiln_buffer *b,
                            const void *want, size_t count, const char *what)
{
  void *got = scratch(t, count);
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, count, got));
  assert_same(t, want, got, count, what);
  free(got);
}

static kiln_memory_usage stats(kiln_runtime *rt)
{
  kiln_memory_usage u;
  memset(&u, 0xFF, sizeof u); /* every field must be written */
  u.struct_size = sizeof u;
  assert_kiln_ok(rt, kiln_memory_stats(rt, &u));
  return u;
}

/* After a refused call: nothing leaked into the accounting (the peak is left
 * to the caller), and the runtime still creates, writes and reads buffers. */
static void assert_usable(kiln_runtime *rt, const kiln_memory_usage *before)
{
  kiln_memory_usage now = stats(rt);
  assert_int_equal(now.current_bytes, before->current_bytes);
  assert_int_equal(now.live_buffers, before->live_buffers);
  const kiln_test_dtype *t = &kiln_test_dtypes[1];
  float *src = pattern(t, 17, 3);
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 17, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, 17, src));
  assert_contents(rt, t, b, src, 17, "after a failure");
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_finish(rt));
  free(src);
}

static void assert_usage(kiln_runtime *rt, uint64_t current, uint64_t peak, uint64_t live)
{
  kiln_memory_usage u = stats(rt);
  assert_int_equal(u.current_bytes, current);
  assert_int_equal(u.peak_bytes, peak);
  assert_int_equal(u.live_buffers, live);
}

static void assert_intact(kiln_runtime *rt, const kiln_memory_usage *before)
{
  assert_int_equal(stats(rt).peak_bytes, before->peak_bytes);
  assert_usable(rt, before);
}

/* These tests count bytes exactly, so their runtimes have no pool: each
 * buffer holds its own bytes (test-pool.c tests the pool). */
static kiln_runtime *runtime_with(uint64_t limit, double fraction)
{
  kiln_options o;
  kiln_options_init(&o);
  o.memory_limit = limit;
  o.memory_fraction = fraction;
  o.ignore_env = 1;
  o.no_memory_pool = 1;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&o, &rt));
  return rt;
}

/* Fails unless call returns want with `needle` in the message, and sets the
 * kiln_buffer pointer out, non-NULL before, to NULL. */
#define assert_create_fails(rt, want, needle, out, call)                                 \
  do {                                                                                   \
    (out) = (kiln_buffer *)&(out);                                                       \
    assert_kiln_fails(rt, want, needle, call);                                           \
    assert_null(out);                                                                    \
  } while (0)

static void test_buffer_round_trip_every_dtype(void **state)
{
  kiln_runtime *rt = *state;
  for (size_t d = 0; d < NDTYPES; d++)
    for (size_t c = 0; c < COUNT(counts); c++) {
      const kiln_test_dtype *t = &kiln_test_dtypes[d];
      size_t n = counts[c], k = n < 3 ? n : 3, size = 0;
      void *a = pattern(t, n, 1), *a2 = pattern(t, n, 4), *part = pattern(t, k, 5);
      void *got = scratch(t, n), *last = scratch(t, 1);
      kiln_buffer *b = NULL;
      assert_kiln_ok(rt, kiln_buffer_create(rt, t->dtype, n, 0, &b));
      assert_int_equal(kiln_buffer_dtype(b), t->dtype);
      assert_int_equal(kiln_buffer_count(b), n);
      assert_int_equal(kiln_buffer_bytes(b), n * t->size);
      assert_ptr_equal(kiln_buffer_runtime(b), rt);
      assert_non_null(kiln_buffer_cl_mem(b));
      assert_int_equal(
        clGetMemObjectInfo(kiln_buffer_cl_mem(b), CL_MEM_SIZE, sizeof size, &size, NULL),
        CL_SUCCESS);
      assert_int_equal(size, n * t->size);
      assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, a));
      assert_contents(rt, t, b, a, n, "round trip");
      /* In order: the second write lands on the first, the reads see both. */
      assert_kiln_ok(rt, kiln_buffer_write_async(b, 0, n, a2));
      assert_kiln_ok(rt, kiln_buffer_write_async(b, n - k, k, part));
      assert_kiln_ok(rt, kiln_buffer_read_async(b, 0, n, got));
      assert_kiln_ok(rt, kiln_buffer_read_async(b, n - 1, 1, last));
      assert_kiln_ok(rt, kiln_finish(rt));
      memcpy(elem(t, a2, n - k), part, k * t->size);
      assert_same(t, a2, got, n, "async round trip");
      assert_same(t, elem(t, a2, n - 1), last, 1, "async read of the last element");
      assert_kiln_ok(rt, kiln_buffer_destroy(b));
      free(a), free(a2), free(part), free(got), free(last);
    }
}

static void test_buffer_partial_transfers(void **state)
{
  kiln_runtime *rt = *state;
  const size_t n = 17;
  for (size_t d = 0; d < NDTYPES; d++) {
    const kiln_test_dtype *t = &kiln_test_dtypes[d];
    void *want = pattern(t, n, 1), *part = pattern(t, 6, 2), *got = scratch(t, n);
    kiln_buffer *b = NULL;
    assert_kiln_ok(rt, kiln_buffer_create(rt, t->dtype, n, 0, &b));
    assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, want));
    assert_kiln_ok(rt, kiln_buffer_write(b, 7, 5, part));
    assert_kiln_ok(rt, kiln_buffer_write(b, n - 1, 1, elem(t, part, 5)));
    memcpy(elem(t, want, 7), part, 5 * t->size);
    memcpy(elem(t, want, n - 1), elem(t, part, 5), t->size);
    assert_contents(rt, t, b, want, n, "partial writes");
    assert_kiln_ok(rt, kiln_buffer_read(b, 3, 6, got));
    assert_same(t, elem(t, want, 3), got, 6, "read at offset 3");
    assert_kiln_ok(rt, kiln_buffer_read(b, n - 1, 1, got));
    assert_same(t, elem(t, want, n - 1), got, 1, "read of the last element");
    assert_kiln_ok(rt, kiln_buffer_destroy(b));
    free(want), free(part), free(got);
  }
}

static void test_buffer_big_256mib(void **state)
{
  kiln_runtime *rt = *state;
  const size_t n = (size_t)64 << 20; /* 64 Mi float32: 256 MiB */
  uint32_t *src = malloc(n * 4), *dst = malloc(n * 4);
  assert_non_null(src);
  assert_non_null(dst);
  /* i * odd mod 2^30 is one-to-one; the mask keeps every value finite. */
  for (size_t i = 0; i < n; i++)
    src[i] = (uint32_t)(i * 2654435761u) & 0x3FFFFFFFu;
  memset(dst, 0xFF, n * 4);
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &b));
  assert_int_equal(kiln_buffer_bytes(b), (size_t)256 << 20);
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, src));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, n, dst));
  for (size_t i = 0; i < n; i++)
    if (dst[i] != src[i])
      fail_msg("element %zu of %zu: 0x%08x, expected 0x%08x", i, n, (unsigned)dst[i],
               (unsigned)src[i]);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  free(src);
  free(dst);
}

static void test_buffer_copy_within_and_between(void **state)
{
  kiln_runtime *rt = *state;
  for (size_t d = 0; d < NDTYPES; d++) {
    const kiln_test_dtype *t = &kiln_test_dtypes[d];
    void *a = pattern(t, 100, 1), *bb = pattern(t, 50, 2);
    kiln_buffer *ba = NULL, *bufb = NULL;
    assert_kiln_ok(rt, kiln_buffer_create(rt, t->dtype, 100, 0, &ba));
    assert_kiln_ok(rt, kiln_buffer_create(rt, t->dtype, 50, 0, &bufb));
    assert_kiln_ok(rt, kiln_buffer_write(ba, 0, 100, a));
    assert_kiln_ok(rt, kiln_buffer_write(bufb, 0, 50, bb));
    /* Within one buffer: disjoint ranges, then two that only touch. */
    assert_kiln_ok(rt, kiln_buffer_copy(ba, 60, ba, 5, 30));
    memmove(elem(t, a, 60), elem(t, a, 5), 30 * t->size);
    assert_kiln_ok(rt, kiln_buffer_copy(ba, 40, ba, 30, 10));
    memmove(elem(t, a, 40), elem(t, a, 30), 10 * t->size);
    /* Between buffers, both ways, and a copy of nothing. */
    assert_kiln_ok(rt, kiln_buffer_copy(bufb, 10, ba, 70, 25));
    memcpy(elem(t, bb, 10), elem(t, a, 70), 25 * t->size);
    assert_kiln_ok(rt, kiln_buffer_copy(ba, 0, bufb, 49, 1));
    memcpy(a, elem(t, bb, 49), t->size);
    assert_kiln_ok(rt, kiln_buffer_copy(ba, 3, bufb, 4, 0));
    assert_contents(rt, t, ba, a, 100, "copy within a buffer");
    assert_contents(rt, t, bufb, bb, 50, "copy between buffers");
    assert_kiln_ok(rt, kiln_buffer_destroy(ba));
    assert_kiln_ok(rt, kiln_buffer_destroy(bufb));
    free(a), free(bb);
  }
}

/* KILN_BUFFER_ZERO gives zeros; then a fill sets a middle range to one
 * element's value. */
static void test_buffer_zeroed_then_filled(void **state)
{
  kiln_runtime *rt = *state;
  for (size_t d = 0; d < NDTYPES; d++)
    for (size_t c = 0; c < COUNT(counts); c++) {
      const kiln_test_dtype *t = &kiln_test_dtypes[d];
      size_t n = counts[c], off = n / 4, len = n / 2;
      unsigned char value[16], *got = scratch(t, n);
      put(t->dtype, value, 0, 77); /* distinct from the pattern's elements */
      kiln_buffer *b = NULL;
      assert_kiln_ok(rt, kiln_buffer_create(rt, t->dtype, n, KILN_BUFFER_ZERO, &b));
      assert_kiln_ok(rt, kiln_buffer_read(b, 0, n, got));
      for (size_t i = 0; i < n * t->size; i++)
        if (got[i])
          fail_msg("%s: byte %zu of a zeroed buffer is 0x%02x", t->name, i, got[i]);
      void *want = pattern(t, n, 1);
      assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, want));
      assert_kiln_ok(rt, kiln_buffer_fill(b, off, len, value));
      for (size_t i = off; i < off + len; i++)
        memcpy(elem(t, want, i), value, t->size);
      assert_contents(rt, t, b, want, n, "fill");
      assert_kiln_ok(rt, kiln_buffer_destroy(b));
      free(want), free(got);
    }
}

static void test_buffer_wrap_host_memory(void **state)
{
  kiln_runtime *rt = *state;
  const size_t n = 1000;
  for (size_t d = 0; d < NDTYPES; d++) {
    const kiln_test_dtype *t = &kiln_test_dtypes[d];
    void *host = aligned_alloc(64, (n * t->size + 63) / 64 * 64);
    assert_non_null(host);
    void *a = pattern(t, n, 1), *bnew = pattern(t, n, 2);
    memcpy(host, a, n * t->size);
    kiln_memory_usage before = stats(rt);
    kiln_buffer *b = NULL;
    assert_kiln_ok(rt, kiln_buffer_wrap(rt, t->dtype, n, host, &b));
    assert_int_equal(stats(rt).current_bytes, before.current_bytes + n * t->size);
    assert_int_equal(kiln_buffer_dtype(b), t->dtype);
    assert_int_equal(kiln_buffer_count(b), n);
    cl_mem_flags flags = 0;
    assert_int_equal(
      clGetMemObjectInfo(kiln_buffer_cl_mem(b), CL_MEM_FLAGS, sizeof flags, &flags, NULL),
      CL_SUCCESS);
    assert_true(flags & CL_MEM_USE_HOST_PTR);
    assert_contents(rt, t, b, a, n, "wrapped host memory");
    assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, bnew));
    assert_contents(rt, t, b, bnew, n, "write to wrapped memory");
    assert_kiln_ok(rt, kiln_buffer_destroy(b));
    assert_kiln_ok(rt, kiln_finish(rt));
    assert_int_equal(stats(rt).current_bytes, before.current_bytes);
    free(host), free(a), free(bnew);
  }
}

static void test_buffer_getters_of_null(void **state)
{
  (void)state;
  assert_int_equal(kiln_buffer_dtype(NULL), 0);
  assert_int_equal(kiln_buffer_count(NULL), 0);
  assert_int_equal(kiln_buffer_bytes(NULL), 0);
  assert_null(kiln_buffer_runtime(NULL));
  assert_null(kiln_buffer_cl_mem(NULL));
  assert_int_equal(kiln_buffer_destroy(NULL), KILN_OK);
}

static void test_buffer_memory_stats(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(0, 0);
  const kiln_device_info *dev = kiln_runtime_device(rt);
  assert_usage(rt, 0, 0, 0);
  kiln_memory_usage u = stats(rt);
  assert_int_equal(u.limit_bytes, dev->global_mem_bytes);
  assert_int_equal(u.max_alloc_bytes, dev->max_alloc_bytes);
  if (!strstr(dev->extensions, "cl_amd_device_attribute_query"))
    assert_int_equal(u.device_free_bytes, -1); /* PoCL has no such query */
  kiln_buffer *a = NULL, *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1000, 0, &a));
  assert_usage(rt, 4000, 4000, 1);
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C64, 10, KILN_BUFFER_ZERO, &b));
  assert_usage(rt, 4160, 4160, 2);
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  assert_usage(rt, 160, 4160, 1); /* the peak stays */
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_usage(rt, 0, 4160, 0);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_memory_stats(NULL, &u));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_memory_stats(rt, NULL));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Requests kiln_buffer_create() and kiln_buffer_wrap() refuse. */
static const struct bad_create {
  kiln_dtype dtype;
  size_t count;
  unsigned flags; /* create only */
  kiln_status want;
  const char *needle;
} bad_creates[] = {
  {(kiln_dtype)0, 4, 0, KILN_ERR_INVALID_DTYPE, "dtype 0 is not a kiln_dtype"},
  {(kiln_dtype)99, 4, 0, KILN_ERR_INVALID_DTYPE, "dtype 99 is not a kiln_dtype"},
  {KILN_F32, 0, 0, KILN_ERR_INVALID_ARGUMENT, "count is 0"},
  {KILN_F32, SIZE_MAX / 2, 0, KILN_ERR_OVERFLOW, "overflow"},
  {KILN_C64, SIZE_MAX / 8, 0, KILN_ERR_OVERFLOW, "overflow"},
  {KILN_F32, 4, 2, KILN_ERR_INVALID_ARGUMENT, "flags 0x2"},
  {KILN_F32, 4, 0x80000001u, KILN_ERR_INVALID_ARGUMENT, "unknown bits"},
};

static void test_buffer_create_refused(void **state)
{
  kiln_runtime *rt = *state;
  kiln_memory_usage before = stats(rt);
  static double host[64];
  kiln_buffer *b;
  for (size_t i = 0; i < COUNT(bad_creates); i++) {
    const struct bad_create *c = &bad_creates[i];
    assert_create_fails(rt, c->want, c->needle, b,
                        kiln_buffer_create(rt, c->dtype, c->count, c->flags, &b));
    if (c->flags)
      continue;
    assert_create_fails(rt, c->want, c->needle, b,
                        kiln_buffer_wrap(rt, c->dtype, c->count, host, &b));
  }
  assert_create_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL", b,
                      kiln_buffer_create(NULL, KILN_F32, 4, 0, &b));
  assert_create_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL", b,
                      kiln_buffer_wrap(NULL, KILN_F32, 4, host, &b));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_buffer_create(rt, KILN_F32, 4, 0, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_buffer_wrap(rt, KILN_F32, 4, host, NULL));
  /* Host memory missing or not aligned to the element (complex: component). */
  assert_create_fails(rt, KILN_ERR_INVALID_ARGUMENT, "host is", b,
                      kiln_buffer_wrap(rt, KILN_F32, 4, NULL, &b));
  assert_create_fails(rt, KILN_ERR_INVALID_ARGUMENT, "aligned to 4", b,
                      kiln_buffer_wrap(rt, KILN_F32, 4, (char *)host + 2, &b));
  assert_create_fails(rt, KILN_ERR_INVALID_ARGUMENT, "aligned to 8", b,
                      kiln_buffer_wrap(rt, KILN_C64, 4, (char *)host + 4, &b));
  assert_intact(rt, &before);
}

static void test_buffer_create_above_max_alloc(void **state)
{
  kiln_runtime *rt = *state;
  kiln_memory_usage before = stats(rt);
  uint64_t max = kiln_runtime_device(rt)->max_alloc_bytes;
  size_t n = (size_t)(max / 4 + 1);
  char need[32], have[32];
  snprintf(need, sizeof need, "%zu bytes", n * 4);
  snprintf(have, sizeof have, "%llu bytes", (unsigned long long)max);
  kiln_buffer *b;
  assert_create_fails(rt, KILN_ERR_OUT_OF_MEMORY, need, b,
                      kiln_buffer_create(rt, KILN_F32, n, 0, &b));
  assert_non_null(strstr(kiln_last_error(rt), have));
  assert_intact(rt, &before);
}

static void test_buffer_memory_limit(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1 << 20, 0);
  assert_int_equal(stats(rt).limit_bytes, 1 << 20);
  const size_t n = 600 * 1024 / 4; /* 600 KiB of float32 */
  kiln_buffer *a = NULL, *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &a));
  kiln_memory_usage before = stats(rt);
  assert_create_fails(rt, KILN_ERR_OUT_OF_MEMORY, "614400 bytes", b,
                      kiln_buffer_create(rt, KILN_F32, n, 0, &b));
  /* 1 MiB - 600 KiB = 434176 bytes are left. */
  assert_non_null(strstr(kiln_last_error(rt), "434176 bytes"));
  float *host = aligned_alloc(64, n * 4);
  assert_non_null(host);
  assert_create_fails(rt, KILN_ERR_OUT_OF_MEMORY, "434176 bytes", b,
                      kiln_buffer_wrap(rt, KILN_F32, n, host, &b));
  assert_intact(rt, &before);
  /* Destroying the first gives its share back. */
  assert_kiln_ok(rt, kiln_buffer_destroy(a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  free(host);
}

static void test_buffer_memory_fraction(void **state)
{
  uint64_t global = kiln_runtime_device(*state)->global_mem_bytes;
  /* A fraction alone, then each cap winning when both are set. */
  const struct {
    uint64_t limit;
    double fraction;
    uint64_t want;
  } cases[] = {
    {0, 0.5, global / 2},
    {0, 1.0, global},
    {1 << 20, 0.5, 1 << 20},
    {global, 0.25, global / 4},
  };
  for (size_t i = 0; i < COUNT(cases); i++) {
    kiln_runtime *rt = runtime_with(cases[i].limit, cases[i].fraction);
    uint64_t got = stats(rt).limit_bytes;
    if (got + 1 < cases[i].want || got > cases[i].want) /* rounding of * */
      fail_msg("case %zu: limit %llu, expected %llu", i, (unsigned long long)got,
               (unsigned long long)cases[i].want);
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  }
  const double bad[] = {1.5, -0.25, NAN};
  for (size_t i = 0; i < COUNT(bad); i++) {
    kiln_options o;
    kiln_options_init(&o);
    o.memory_fraction = bad[i];
    kiln_runtime *rt = (kiln_runtime *)&o;
    assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "memory_fraction",
                      kiln_runtime_create(&o, &rt));
    assert_null(rt);
  }
}

/* Every call that takes a range, with buf's range [off, off + n). */
typedef kiln_status (*range_op)(kiln_buffer *buf, kiln_buffer *other, size_t off,
                                size_t n, void *host);
#define RANGE_OP(name, call)                                                             \
  static kiln_status name(kiln_buffer *b, kiln_buffer *o, size_t off, size_t n, void *h) \
  {                                                                                      \
    (void)b, (void)o, (void)h;                                                           \
    return call;                                                                         \
  }
RANGE_OP(op_write, kiln_buffer_write(b, off, n, h))
RANGE_OP(op_write_async, kiln_buffer_write_async(b, off, n, h))
RANGE_OP(op_read, kiln_buffer_read(b, off, n, h))
RANGE_OP(op_read_async, kiln_buffer_read_async(b, off, n, h))
RANGE_OP(op_fill, kiln_buffer_fill(b, off, n, h))
RANGE_OP(op_copy_to, kiln_buffer_copy(b, off, o, 0, n))
RANGE_OP(op_copy_from, kiln_buffer_copy(o, 0, b, off, n))

static const struct {
  const char *name;
  range_op op;
  int host; /* takes a host pointer */
} range_ops[] = {
  {"write", op_write, 1},         {"write_async", op_write_async, 1},
  {"read", op_read, 1},           {"read_async", op_read_async, 1},
  {"fill", op_fill, 1},           {"copy into", op_copy_to, 0},
  {"copy from", op_copy_from, 0},
};

/* Two float32 buffers holding known data, b of 17 elements and other of 64,
 * and host memory for the calls to use. */
typedef struct pair {
  kiln_buffer *b, *other;
  float *want, *other_want, io[64];
  kiln_memory_usage before;
} pair;

static void pair_open(kiln_runtime *rt, pair *p)
{
  p->want = pattern(&kiln_test_dtypes[1], 17, 1);
  p->other_want = pattern(&kiln_test_dtypes[1], 64, 2);
  memcpy(p->io, p->other_want, sizeof p->io);
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 17, 0, &p->b));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 64, 0, &p->other));
  assert_kiln_ok(rt, kiln_buffer_write(p->b, 0, 17, p->want));
  assert_kiln_ok(rt, kiln_buffer_write(p->other, 0, 64, p->other_want));
  p->before = stats(rt);
}

/* Checks that what was refused changed neither buffer nor the accounting. */
static void pair_close(kiln_runtime *rt, pair *p)
{
  assert_kiln_ok(rt, kiln_finish(rt)); /* nothing was left pending */
  assert_contents(rt, &kiln_test_dtypes[1], p->b, p->want, 17, "buf after refusals");
  assert_contents(rt, &kiln_test_dtypes[1], p->other, p->other_want, 64,
                  "other after refusals");
  assert_kiln_ok(rt, kiln_buffer_destroy(p->b));
  assert_kiln_ok(rt, kiln_buffer_destroy(p->other));
  p->before.current_bytes -= (17 + 64) * 4;
  p->before.live_buffers -= 2;
  assert_intact(rt, &p->before);
  free(p->want), free(p->other_want);
}

static void test_buffer_out_of_bounds(void **state)
{
  kiln_runtime *rt = *state;
  const struct {
    size_t off, count;
  } bad[] = {{0, 18},
             {17, 1},
             {10, 8},
             {18, 1},
             {1, SIZE_MAX},
             {SIZE_MAX, 2},
             {SIZE_MAX / 4 + 1, SIZE_MAX / 4 * 3}};
  pair p;
  pair_open(rt, &p);
  for (size_t o = 0; o < COUNT(range_ops); o++)
    for (size_t i = 0; i < COUNT(bad); i++) {
      kiln_status st = range_ops[o].op(p.b, p.other, bad[i].off, bad[i].count, p.io);
      if (st != KILN_ERR_OUT_OF_BOUNDS || !strstr(kiln_last_error(rt), "outside"))
        fail_msg("%s at %zu + %zu returned %s: %s", range_ops[o].name, bad[i].off,
                 bad[i].count, kiln_status_name(st), kiln_last_error(rt));
    }
  pair_close(rt, &p);
}

static void test_buffer_null_pointers_and_empty_ranges(void **state)
{
  kiln_runtime *rt = *state;
  char empty[300] = ""; /* reported after cleaning up */
  pair p;
  pair_open(rt, &p);
  for (size_t o = 0; o < COUNT(range_ops); o++) {
    const char *name = range_ops[o].name;
    kiln_status st;
    if (range_ops[o].host) {
      st = range_ops[o].op(p.b, p.other, 2, 3, NULL);
      if (st != KILN_ERR_INVALID_ARGUMENT || !strstr(kiln_last_error(rt), "NULL"))
        fail_msg("%s with a NULL host pointer returned %s: %s", name,
                 kiln_status_name(st), kiln_last_error(rt));
    }
    /* Nothing to move, so no pointer needed: at the start, inside, at the end. */
    const size_t offs[] = {0, 5, 17};
    for (size_t i = 0; i < COUNT(offs); i++) {
      st = range_ops[o].op(p.b, p.other, offs[i], 0, NULL);
      if (st != KILN_OK && !*empty)
        snprintf(empty, sizeof empty,
                 "%s of 0 elements at %zu with NULL returned "
                 "%s: %s",
                 name, offs[i], kiln_status_name(st), kiln_last_error(rt));
      assert_kiln_ok(rt, range_ops[o].op(p.b, p.other, offs[i], 0, p.io));
    }
    st = range_ops[o].op(NULL, p.other, 0, 1, p.io);
    if (st != KILN_ERR_INVALID_ARGUMENT || !strstr(kiln_last_error(NULL), "is NULL"))
      fail_msg("%s on a NULL buffer returned %s: %s", name, kiln_status_name(st),
               kiln_last_error(NULL));
  }
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "src is NULL",
                    kiln_buffer_copy(p.b, 0, NULL, 0, 1));
  pair_close(rt, &p);
  if (*empty)
    fail_msg("%s", empty);
}

static void test_buffer_copy_refused(void **state)
{
  kiln_runtime *rt = *state;
  kiln_runtime *rt2 = runtime_with(0, 0);
  kiln_buffer *f = NULL, *i32 = NULL, *g = NULL, *far = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 64, 0, &f));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, 64, 0, &i32));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 64, 0, &g));
  assert_kiln_ok(rt2, kiln_buffer_create(rt2, KILN_F32, 64, 0, &far));
  kiln_memory_usage before = stats(rt);
  /* Same element size, different types. */
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "int32",
                    kiln_buffer_copy(f, 0, i32, 0, 8));
  assert_kiln_fails(rt, KILN_ERR_INVALID_DTYPE, "float32",
                    kiln_buffer_copy(i32, 0, f, 0, 8));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "different runtimes",
                    kiln_buffer_copy(f, 0, far, 0, 8));
  assert_kiln_fails(rt2, KILN_ERR_WRONG_RUNTIME, "different runtimes",
                    kiln_buffer_copy(far, 0, g, 0, 8));
  const struct {
    size_t dst, src, count;
  } overlaps[] = {{5, 0, 10}, {0, 5, 10}, {3, 3, 1}, {0, 0, 64}, {20, 29, 10}};
  for (size_t i = 0; i < COUNT(overlaps); i++)
    assert_kiln_fails(
      rt, KILN_ERR_INVALID_ARGUMENT, "overlap",
      kiln_buffer_copy(f, overlaps[i].dst, f, overlaps[i].src, overlaps[i].count));
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_kiln_ok(rt, kiln_buffer_destroy(f));
  assert_kiln_ok(rt, kiln_buffer_destroy(i32));
  assert_kiln_ok(rt, kiln_buffer_destroy(g));
  assert_kiln_ok(rt2, kiln_buffer_destroy(far));
  assert_kiln_ok(rt2, kiln_runtime_destroy(rt2));
  before.current_bytes -= 3 * 64 * 4;
  before.live_buffers -= 3;
  assert_intact(rt, &before);
}

static void test_buffer_runtime_destroy_busy(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(0, 0);
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I64, 3, 0, &b));
  kiln_memory_usage before = stats(rt);
  assert_kiln_fails(rt, KILN_ERR_BUSY, "alive", kiln_runtime_destroy(rt));
  assert_kiln_fails(rt, KILN_ERR_BUSY,
                    "1 buffer (holding 24 bytes), 0 programs and 0 kernels",
                    kiln_runtime_destroy(rt));
  assert_intact(rt, &before);
  const int64_t v[3] = {-1, INT64_MAX, INT64_MIN};
  int64_t got[3] = {0, 0, 0};
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, 3, v));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, 3, got));
  assert_memory_equal(got, v, sizeof v);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* OpenCL failures while creating or wrapping a buffer of 4096 float32. */
#define FAULT(fn, err, flags, wrap, want)                                                \
  {                                                                                      \
    fn, err, #err, flags, wrap, KILN_ERR_##want                                          \
  }
static const struct create_fault {
  const char *fn;
  cl_int err;
  const char *err_name;
  unsigned flags;
  int wrap;
  kiln_status want;
} create_faults[] = {
  FAULT("clCreateBuffer", CL_MEM_OBJECT_ALLOCATION_FAILURE, 0, 0, OUT_OF_MEMORY),
  FAULT("clCreateBuffer", CL_OUT_OF_HOST_MEMORY, 0, 0, OUT_OF_HOST_MEMORY),
  FAULT("clCreateBuffer", CL_INVALID_BUFFER_SIZE, 0, 1, OUT_OF_MEMORY),
  FAULT("clEnqueueMigrateMemObjects", CL_MEM_OBJECT_ALLOCATION_FAILURE, 0, 0,
        OUT_OF_MEMORY),
  FAULT("clEnqueueMigrateMemObjects", CL_OUT_OF_RESOURCES, 0, 0, OUT_OF_MEMORY),
  FAULT("clEnqueueMigrateMemObjects", CL_OUT_OF_RESOURCES, 0, 1, OUT_OF_MEMORY),
  FAULT("clEnqueueMigrateMemObjects", CL_INVALID_VALUE, 0, 0, OPENCL),
  FAULT("clWaitForEvents", CL_MEM_OBJECT_ALLOCATION_FAILURE, 0, 0, OUT_OF_MEMORY),
  FAULT("clWaitForEvents", CL_OUT_OF_RESOURCES, KILN_BUFFER_ZERO, 0, OUT_OF_MEMORY),
  FAULT("clEnqueueFillBuffer", CL_MEM_OBJECT_ALLOCATION_FAILURE, KILN_BUFFER_ZERO, 0,
        OUT_OF_MEMORY),
  FAULT("clEnqueueFillBuffer", CL_OUT_OF_RESOURCES, KILN_BUFFER_ZERO, 0, OUT_OF_MEMORY),
};

/* Disarms clfault, then checks that the armed call failed once, and that kiln
 * returned the status expected with a message naming the call and error. */
static void check_fault(kiln_runtime *rt, const struct create_fault *f, kiln_status st)
{
  int hits = clfault_hits();
  clfault_disarm();
  const char *msg = kiln_last_error(rt);
  if (hits != 1 || st != f->want || !strstr(msg, f->fn) || !strstr(msg, f->err_name))
    fail_msg("%s failing with %s (%d hits): %s, expected %s: %s", f->fn, f->err_name,
             hits, kiln_status_name(st), kiln_status_name(f->want), msg);
}

static void test_buffer_create_faults(void **state)
{
  (void)state;
  /* A runtime of its own, so the peak starts at 0 and shows any leak. */
  kiln_runtime *rt = runtime_with(0, 0);
  static float host[4096];
  char peak[200] = "";
  for (size_t i = 0; i < COUNT(create_faults); i++) {
    const struct create_fault *f = &create_faults[i];
    kiln_memory_usage before = stats(rt);
    kiln_buffer *b = (kiln_buffer *)&before;
    clfault_arm(f->fn, 1, 1, f->err);
    kiln_status st = f->wrap ? kiln_buffer_wrap(rt, KILN_F32, 4096, host, &b)
                             : kiln_buffer_create(rt, KILN_F32, 4096, f->flags, &b);
    check_fault(rt, f, st);
    assert_null(b);
    /* Memory never held is no peak; reported after the other cases ran. */
    uint64_t p = stats(rt).peak_bytes;
    if (p != before.peak_bytes && !*peak)
      snprintf(peak, sizeof peak,
               "%s failing with %s raised peak_bytes from "
               "%llu to %llu",
               f->fn, f->err_name, (unsigned long long)before.peak_bytes,
               (unsigned long long)p);
    assert_usable(rt, &before);
  }
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  if (*peak)
    fail_msg("%s", peak);
}

static void test_buffer_transfer_faults(void **state)
{
  kiln_runtime *rt = *state;
  /* The same table, with the transfer in place of flags. */
  static const struct {
    range_op op;
    struct create_fault f;
  } faults[] = {
    {op_write,
     FAULT("clEnqueueWriteBuffer", CL_OUT_OF_HOST_MEMORY, 0, 0, OUT_OF_HOST_MEMORY)},
    {op_write_async,
     FAULT("clEnqueueWriteBuffer", CL_OUT_OF_HOST_MEMORY, 0, 0, OUT_OF_HOST_MEMORY)},
    {op_read, FAULT("clEnqueueReadBuffer", CL_OUT_OF_RESOURCES, 0, 0, OUT_OF_MEMORY)},
    {op_read_async, FAULT("clEnqueueReadBuffer", CL_INVALID_VALUE, 0, 0, OPENCL)},
    {op_fill,
     FAULT("clEnqueueFillBuffer", CL_MEM_OBJECT_ALLOCATION_FAILURE, 0, 0, OUT_OF_MEMORY)},
  };
  pair p;
  pair_open(rt, &p);
  for (size_t i = 0; i < COUNT(faults); i++) {
    const struct create_fault *f = &faults[i].f;
    clfault_arm(f->fn, 1, 1, f->err);
    check_fault(rt, f, faults[i].op(p.b, p.other, 2, 10, p.io));
  }
  pair_close(rt, &p);
}

/* ---- views and mapping ------------------------------------------------------ */

/* The device's base-address alignment in bytes: where views may start. */
static size_t view_align(kiln_runtime *rt)
{
  cl_uint bits = 0;
  assert_int_equal(clGetDeviceInfo(kiln_runtime_cl_device(rt),
                                   CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits,
                                   NULL),
                   CL_SUCCESS);
  assert_true(bits >= 8);
  return bits / 8;
}

/* Views alias their buffer: writes through a view land in the buffer at the
 * view's offset and the other way round; a view of a view; views hold no
 * bytes but count as live; the buffer waits for its views. */
static void test_buffer_views(void **state)
{
  kiln_runtime *rt = *state;
  size_t at = view_align(rt) / sizeof(float); /* the first offset a view may have */
  size_t n = 4 * at + 5;
  float *host = malloc(n * sizeof *host), *got = malloc(n * sizeof *got);
  for (size_t i = 0; i < n; i++)
    host[i] = (float)i;
  kiln_buffer *b = NULL, *v = NULL, *vv = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, n, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, n, host));
  kiln_memory_usage before = stats(rt);
  assert_kiln_ok(rt, kiln_buffer_view(b, at, 2 * at + 3, &v));
  assert_int_equal(kiln_buffer_count(v), 2 * at + 3);
  assert_int_equal(kiln_buffer_dtype(v), KILN_F32);
  kiln_memory_usage with = stats(rt);
  assert_int_equal(with.current_bytes, before.current_bytes);
  assert_int_equal(with.live_buffers, before.live_buffers + 1);
  /* reads through the view start at its offset */
  assert_kiln_ok(rt, kiln_buffer_read(v, 0, 2 * at + 3, got));
  for (size_t i = 0; i < 2 * at + 3; i++)
    assert_true(got[i] == host[at + i]);
  /* a write through a view of the view lands in b */
  assert_kiln_ok(rt, kiln_buffer_view(v, at, 3, &vv));
  const float three[3] = {-1, -2, -3};
  assert_kiln_ok(rt, kiln_buffer_write(vv, 0, 3, three));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, n, got));
  for (size_t i = 0; i < n; i++)
    assert_true(got[i] == (i >= 2 * at && i < 2 * at + 3 ? three[i - 2 * at] : host[i]));
  /* and a fill of b shows through the views */
  const float seven = 7;
  assert_kiln_ok(rt, kiln_buffer_fill(b, 2 * at + 1, 1, &seven));
  assert_kiln_ok(rt, kiln_buffer_read(vv, 0, 3, got));
  assert_true(got[0] == -1 && got[1] == 7 && got[2] == -3);
  /* the buffer waits for its views; views go in any order */
  assert_kiln_fails(rt, KILN_ERR_BUSY, "2 views of this buffer are alive",
                    kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_buffer_destroy(v));
  assert_kiln_fails(rt, KILN_ERR_BUSY, "1 view of this buffer is alive",
                    kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_buffer_destroy(vv));
  assert_int_equal(stats(rt).live_buffers, before.live_buffers);
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, 1, got)); /* b intact */
  assert_true(got[0] == host[0]);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  free(host), free(got);
}

/* Views refused: out of the buffer, empty, NULL. A view at any offset is
 * made, but its cl_mem (an OpenCL sub-buffer) only at a multiple of the
 * device's base-address alignment (the message gives the multiple). */
static void test_buffer_view_refused(void **state)
{
  kiln_runtime *rt = *state;
  size_t at = view_align(rt) / sizeof(double);
  kiln_buffer *b = NULL, *v = (kiln_buffer *)&v;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F64, 3 * at, 0, &b));
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "lies outside buf",
                    kiln_buffer_view(b, at, 2 * at + 1, &v));
  assert_null(v);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "count is 0",
                    kiln_buffer_view(b, 0, 0, &v));
  char want[400];
  snprintf(want, sizeof want,
           "kiln_buffer_cl_mem: the view from element 1 starts 8 bytes into its buffer, "
           "not a multiple of the device's base-address alignment of %zu bytes "
           "(CL_DEVICE_MEM_BASE_ADDR_ALIGN), which an OpenCL sub-buffer needs; expected "
           "a view whose offset is a multiple of %zu float64 elements",
           at * sizeof(double), at);
  assert_kiln_ok(rt, kiln_buffer_view(b, 1, 4, &v));
  assert_null(kiln_buffer_cl_mem(v));
  if (!strstr(kiln_last_error(rt), want))
    fail_msg("kiln_buffer_cl_mem of a misaligned view said '%s'; expected '%s'",
             kiln_last_error(rt), want);
  assert_kiln_ok(rt, kiln_buffer_destroy(v));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_buffer_view(b, 0, 1, NULL));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "buf is NULL",
                    kiln_buffer_view(NULL, 0, 1, &v));
  assert_int_equal(stats(rt).live_buffers, 1);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
}

/* Mapping: the host reads what the device holds and writes what it will
 * see after the unmap; a mapped buffer is refused to commands; a view maps
 * its part. */
static void test_buffer_map(void **state)
{
  kiln_runtime *rt = *state;
  enum { N = 1000 };
  int32_t src[N], got[N];
  for (int i = 0; i < N; i++)
    src[i] = 3 * i - 7;
  kiln_buffer *b = NULL, *v = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, N, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write_async(b, 0, N, src));
  int32_t *p = NULL;
  assert_kiln_ok(rt, kiln_buffer_map(b, KILN_MAP_READ | KILN_MAP_WRITE, (void **)&p));
  assert_non_null(p);
  for (int i = 0; i < N; i++) /* the map waited for the write */
    assert_int_equal(p[i], src[i]);
  for (int i = 0; i < N; i++)
    p[i] = -p[i];
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "buf is mapped into host memory",
                    kiln_buffer_read(b, 0, N, got));
  void *again = NULL;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "mapped already",
                    kiln_buffer_map(b, KILN_MAP_READ, &again));
  assert_null(again);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "is not where the buffer is mapped",
                    kiln_buffer_unmap(b, got));
  assert_kiln_ok(rt, kiln_buffer_unmap(b, p));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, N, got));
  for (int i = 0; i < N; i++)
    assert_int_equal(got[i], -src[i]);
  /* a view maps its part only */
  size_t at = view_align(rt) / sizeof(int32_t);
  assert_kiln_ok(rt, kiln_buffer_view(b, at, 5, &v));
  assert_kiln_ok(rt, kiln_buffer_map(v, KILN_MAP_READ, (void **)&p));
  for (int i = 0; i < 5; i++)
    assert_int_equal(p[i], -src[at + (size_t)i]);
  assert_kiln_ok(rt, kiln_buffer_unmap(v, p));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "flags 0x4",
                    kiln_buffer_map(b, 4, (void **)&p));
  assert_kiln_ok(rt, kiln_buffer_destroy(v));
  /* destroyed while mapped: unmapped first, and the memory is whole */
  assert_kiln_ok(rt, kiln_buffer_map(b, KILN_MAP_WRITE, (void **)&p));
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_finish(rt));
}

/* kiln_buffer_wrap()'s rules (kiln.h): what the device writes is in the
 * host array once a read map returns, and the map gives the array itself;
 * what the host writes reaches the device through a write map. */
static void test_buffer_wrap_coherence(void **state)
{
  kiln_runtime *rt = *state;
  enum { N = 1024 }; /* aligned_alloc's size is a multiple of its alignment */
  float *host = aligned_alloc(4096, N * sizeof *host), got[N];
  for (int i = 0; i < N; i++)
    host[i] = (float)i;
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_wrap(rt, KILN_F32, N, host, &b));
  const float half = 0.5f;
  assert_kiln_ok(rt, kiln_buffer_fill(b, 10, 20, &half)); /* the device writes */
  float *p = NULL;
  assert_kiln_ok(rt, kiln_buffer_map(b, KILN_MAP_READ, (void **)&p));
  assert_ptr_equal(p, host);
  for (int i = 0; i < N; i++)
    assert_true(host[i] == (i >= 10 && i < 30 ? 0.5f : (float)i));
  assert_kiln_ok(rt, kiln_buffer_unmap(b, p));
  assert_kiln_ok(rt, kiln_buffer_map(b, KILN_MAP_WRITE, (void **)&p));
  p[100] = -100; /* the host writes */
  assert_kiln_ok(rt, kiln_buffer_unmap(b, p));
  assert_kiln_ok(rt, kiln_buffer_read(b, 100, 1, got));
  assert_true(got[0] == -100);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
  assert_kiln_ok(rt, kiln_finish(rt));
  free(host);
}

/* A command enqueued without waiting that fails on the device is reported by
 * the next kiln_finish(), naming the call that enqueued it; then the runtime
 * carries on. */
static void test_buffer_async_failure_reported_by_finish(void **state)
{
  kiln_runtime *rt = *state;
  kiln_buffer *b = NULL;
  float src[64], got[64];
  for (int i = 0; i < 64; i++)
    src[i] = (float)i * 0.5f;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 64, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write_async(b, 0, 64, src));
  clfault_arm_event_status(1, CL_MEM_OBJECT_ALLOCATION_FAILURE);
  kiln_status st = kiln_finish(rt);
  int hits = clfault_hits();
  clfault_disarm();
  assert_int_equal(hits, 1);
  assert_int_equal(st, KILN_ERR_OUT_OF_MEMORY);
  const char *msg = kiln_last_error(rt);
  assert_non_null(strstr(msg, "kiln_finish: a command failed on the device: "
                              "kiln_buffer_write_async failed with "
                              "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)"));
  /* Reported once; the next finish is clean and the data is there. */
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, 64, got));
  assert_memory_equal(got, src, sizeof src);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
}

/* Thousands of commands in flight: kiln's list of unchecked commands grows
 * and sheds finished ones, and every command still lands. */
static void test_buffer_many_pending_commands(void **state)
{
  kiln_runtime *rt = *state;
  enum { N = 3000 };
  static int32_t values[N], got[N];
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_I32, N, 0, &b));
  for (int32_t i = 0; i < N; i++) {
    values[i] = i * 7 - 1000;
    assert_kiln_ok(rt, kiln_buffer_fill(b, (size_t)i, 1, &values[i]));
  }
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, N, got));
  assert_memory_equal(got, values, sizeof values);
  assert_kiln_ok(rt, kiln_buffer_destroy(b));
}

static int setup(void **state)
{
  *state = runtime_with(0, 0);
  return 0;
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_buffer_round_trip_every_dtype),
    cmocka_unit_test(test_buffer_partial_transfers),
    cmocka_unit_test(test_buffer_big_256mib),
    cmocka_unit_test(test_buffer_copy_within_and_between),
    cmocka_unit_test(test_buffer_zeroed_then_filled),
    cmocka_unit_test(test_buffer_wrap_host_memory),
    cmocka_unit_test(test_buffer_getters_of_null),
    cmocka_unit_test(test_buffer_memory_stats),
    cmocka_unit_test(test_buffer_create_refused),
    cmocka_unit_test(test_buffer_create_above_max_alloc),
    cmocka_unit_test(test_buffer_memory_limit),
    cmocka_unit_test(test_buffer_memory_fraction),
    cmocka_unit_test(test_buffer_out_of_bounds),
    cmocka_unit_test(test_buffer_null_pointers_and_empty_ranges),
    cmocka_unit_test(test_buffer_copy_refused),
    cmocka_unit_test(test_buffer_runtime_destroy_busy),
    cmocka_unit_test(test_buffer_create_faults),
    cmocka_unit_test(test_buffer_transfer_faults),
    cmocka_unit_test(test_buffer_async_failure_reported_by_finish),
    cmocka_unit_test(test_buffer_many_pending_commands),
    cmocka_unit_test(test_buffer_views),
    cmocka_unit_test(test_buffer_view_refused),
    cmocka_unit_test(test_buffer_map),
    cmocka_unit_test(test_buffer_wrap_coherence),
  };
  return cmocka_run_group_tests(tests, setup, kiln_test_runtime_teardown);
}
