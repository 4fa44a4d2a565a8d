/*
 * test-npy.c — .npy files: round trips of every dtype and layout, files
 * written byte for byte as numpy writes them, Fortran to C order, and every
 * malformed file kiln must refuse with a clear message; no device needed.
 * Every load runs twice: from a file and from memory (the fuzzers' entry).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common.h"

#include "base/util.h"
#include "io/npy.h"

static char dir[] = "/tmp/kiln-npy-XXXXXX";

/* The header np.save writes for a float32 array of shape (2, 3). */
#define F4_23 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
static const float f4_values[6] = {1.5f, -2, 3.25f, 4, -5.5f, 6e10f};

/* dir/name, in a static buffer. */
static const char *path_of(const char *name)
{
  static char buf[300];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* The whole file, malloc'd. */
static unsigned char *read_bytes(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size >= 0);
  rewind(f);
  unsigned char *b = malloc((size_t)size + 1);
  assert_non_null(b);
  *n = fread(b, 1, (size_t)size, f);
  assert_int_equal(*n, (size_t)size);
  fclose(f);
  return b;
}

/* How many entries the test folder holds: a failed save leaves none. */
static int dir_entries(void)
{
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static int dir_setup(void **state)
{
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int dir_teardown(void **state)
{
  (void)state;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      unlink(path_of(e->d_name));
  if (d)
    closedir(d);
  return rmdir(dir);
}

/* A .npy file of the given version: the preamble, the header text (padded
 * with spaces and a newline so the data starts at a multiple of 64, as
 * numpy does, when pad is set; as it is otherwise), then data_len bytes. */
static unsigned char *make_npy(int major, const char *header, int pad, const void *data,
                               size_t data_len, size_t *n)
{
  size_t lenbytes = major == 1 ? 2 : 4, pre = 8 + lenbytes, h = strlen(header);
  size_t hlen = pad ? h + 1 + (64 - (pre + h + 1) % 64) % 64 : h;
  unsigned char *b = malloc(pre + hlen + data_len + 1);
  assert_non_null(b);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  for (size_t i = 0; i < lenbytes; i++)
    b[8 + i] = (unsigned char)(hlen >> (8 * i));
  memset(b + pre, ' ', hlen);
  memcpy(b + pre, header, h);
  if (pad)
    b[pre + hlen - 1] = '\n';
  if (data_len)
    memcpy(b + pre + hlen, data, data_len);
  *n = pre + hlen + data_len;
  return b;
}

/* Loads the bytes from a file and from memory; both must give want. When
 * want is KILN_OK *out holds the file's array, else the message must name
 * needle and out stays zeroed. */
static void load_both(const unsigned char *bytes, size_t n, kiln_status want,
                      const char *needle, kiln_array *out)
{
  static const kiln_array zero;
  kiln_array mem;
  const char *path = path_of("case.npy");
  write_bytes(path, bytes, n);
  kiln_status st = kiln_npy_load(path, out);
  if (st != want)
    fail_msg("load returned %s, expected %s: %s", kiln_status_name(st),
             kiln_status_name(want), kiln_last_error(NULL));
  if (needle && !strstr(kiln_last_error(NULL), needle))
    fail_msg("the message does not mention '%s': %s", needle, kiln_last_error(NULL));
  if (want != KILN_OK) {
    assert_memory_equal(out, &zero, sizeof zero);
    assert_non_null(strstr(kiln_last_error(NULL), path)); /* names the file */
  }
  st = kiln_npy_load_memory(bytes, n, "memory.npy", &mem);
  assert_int_equal(st, want);
  if (needle)
    assert_non_null(strstr(kiln_last_error(NULL), needle));
  if (want == KILN_OK) {
    assert_int_equal(mem.count, out->count);
    if (mem.count)
      assert_memory_equal(mem.data, out->data, mem.count * kiln_dtype_size(mem.dtype));
  }
  kiln_array_free(&mem);
}

/* An array of `dtype` and `shape` whose bytes are a counting pattern. */
static kiln_array pattern_array(kiln_dtype dtype, unsigned ndim, const size_t *shape,
                                int fortran)
{
  kiln_array a = {.dtype = dtype, .ndim = ndim, .fortran_order = fortran, .count = 1};
  for (unsigned i = 0; i < ndim; i++) {
    a.shape[i] = shape[i];
    a.count *= shape[i];
  }
  size_t bytes = a.count * kiln_dtype_size(dtype);
  a.data = bytes ? malloc(bytes) : NULL;
  for (size_t i = 0; i < bytes; i++)
    ((unsigned char *)a.data)[i] = (unsigned char)(i * 7 + 3);
  return a;
}

static void assert_same_array(const kiln_array *a, const kiln_array *b)
{
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->ndim, b->ndim);
  assert_int_equal(!!a->fortran_order, !!b->fortran_order);
  assert_int_equal(a->count, b->count);
  for (unsigned i = 0; i < a->ndim; i++)
    assert_int_equal(a->shape[i], b->shape[i]);
  if (a->count)
    assert_memory_equal(a->data, b->data, a->count * kiln_dtype_size(a->dtype));
  else
    assert_null(b->data);
}

static void round_trip(const kiln_array *a)
{
  kiln_array back;
  const char *path = path_of("trip.npy");
  assert_kiln_ok(NULL, kiln_npy_save(path, a));
  size_t n;
  unsigned char *bytes = read_bytes(path, &n);
  size_t data_at = n - a->count * kiln_dtype_size(a->dtype);
  assert_int_equal(bytes[8] + 256 * bytes[9] + 10, data_at);
  assert_int_equal(data_at % 64, 0);
  load_both(bytes, n, KILN_OK, NULL, &back);
  assert_same_array(a, &back);
  kiln_array_free(&back);
  free(bytes);
}

static void test_npy_round_trip_every_dtype(void **state)
{
  (void)state;
  static const kiln_dtype all[] = {KILN_F16, KILN_F32, KILN_F64, KILN_C32,
                                   KILN_C64, KILN_I32, KILN_I64};
  static const size_t shape[] = {2, 3};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    for (int fortran = 0; fortran < 2; fortran++) {
      kiln_array a = pattern_array(all[i], 2, shape, fortran);
      round_trip(&a);
      kiln_array_free(&a);
    }
}

static void test_npy_round_trip_shapes(void **state)
{
  (void)state;
  static const struct {
    unsigned ndim;
    size_t shape[KILN_ARRAY_MAX_DIMS];
  } cases[] = {
    {0, {0}},
    {1, {5}},
    {1, {0}},
    {2, {4, 3}},
    {2, {0, 3}},
    {2, {3, 0}},
    {3, {2, 3, 4}},
    {5, {2, 1, 3, 2, 2}},
    {8, {1, 2, 1, 2, 1, 2, 1, 3}},
    {1, {1000}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int fortran = 0; fortran < 2; fortran++) {
      kiln_array a = pattern_array(KILN_F32, cases[i].ndim, cases[i].shape, fortran);
      round_trip(&a);
      kiln_array_free(&a);
    }
}

/* np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3)) */
static void test_npy_save_writes_numpy_bytes(void **state)
{
  (void)state;
  static const char dict[] = F4_23;
  static const float values[] = {0, 1, 2, 3, 4, 5};
  unsigned char want[128 + sizeof values];
  memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10);
  memset(want + 10, ' ', 118);
  memcpy(want + 10, dict, strlen(dict));
  want[127] = '\n';
  memcpy(want + 128, values, sizeof values);

  kiln_array a = {
    .dtype = KILN_F32, .ndim = 2, .shape = {2, 3}, .count = 6, .data = (void *)values};
  assert_kiln_ok(NULL, kiln_npy_save(path_of("numpy.npy"), &a));
  size_t n;
  unsigned char *got = read_bytes(path_of("numpy.npy"), &n);
  assert_int_equal(n, sizeof want);
  assert_memory_equal(got, want, sizeof want);
  free(got);
}

/* numpy adds GROWTH_AXIS_MAX_DIGITS - len(str(growing axis)) spaces, and a
 * whole 64 bytes of padding when the header is already aligned: a header
 * that fits 128 bytes without the growth room takes 192 with it. */
static void test_npy_save_growth_padding(void **state)
{
  (void)state;
  kiln_array a = {
    .dtype = KILN_F32, .ndim = 8, .shape = {0, 100000, 100000, 100000, 100000, 1, 1, 1}};
  assert_kiln_ok(NULL, kiln_npy_save(path_of("growth.npy"), &a));
  size_t n;
  unsigned char *got = read_bytes(path_of("growth.npy"), &n);
  assert_int_equal(n, 192);
  assert_int_equal(got[8] + 256 * got[9], 182);
  /* dict (97 bytes), 20 growth spaces, 64 of padding, the newline */
  assert_memory_equal(got + 10, F4_23, 51); /* up to the shape's "(" */
  assert_memory_equal(got + 61, "0, 100000, ", 11);
  for (size_t i = 10 + 97; i < 191; i++)
    assert_int_equal(got[i], ' ');
  assert_int_equal(got[191], '\n');
  free(got);

  /* The growing axis is the first in C order, the last in Fortran order:
   * "10000000" leaves 13 spaces and fits 128 bytes, "0" leaves 20 and does
   * not (numbers from numpy's _write_array_header). */
  kiln_array b = {.dtype = KILN_F32,
                  .ndim = 8,
                  .shape = {10000000, 100000, 100000, 100000, 1, 1, 1, 0}};
  for (int fortran = 0; fortran < 2; fortran++) {
    kiln__str h = {0};
    unsigned char pre[12];
    size_t prelen;
    b.fortran_order = fortran;
    assert_int_equal(kiln__npy_build_header(&b, pre, &prelen, &h), KILN_OK);
    assert_int_equal(prelen, 10);
    assert_int_equal(prelen + h.len, fortran ? 192 : 128);
    kiln__str_free(&h);
  }
}

static void assert_f4_23(const kiln_array *a)
{
  assert_int_equal(a->dtype, KILN_F32);
  assert_int_equal(a->ndim, 2);
  assert_int_equal(a->shape[0], 2);
  assert_int_equal(a->shape[1], 3);
  assert_int_equal(a->count, 6);
  assert_false(a->fortran_order);
  assert_memory_equal(a->data, f4_values, sizeof f4_values);
}

/* Files as numpy writes them: v1 (np.save), v2 and v3 (np.lib.format with
 * version=(2, 0) and (3, 0)), checked value by value. */
static void test_npy_reads_numpy_files(void **state)
{
  (void)state;
  static const double f8[4] = {1, 2, 3, 4};
  static const float c8[6] = {1, -1, 2.5f, 0, 0, 3}; /* 1-1j, 2.5, 3j */
  static const struct {
    int major;
    const char *header;
    const void *data;
    size_t bytes;
    kiln_dtype dtype;
    unsigned ndim;
    size_t dim0;
    int fortran;
  } files[] = {
    {1, F4_23, f4_values, sizeof f4_values, KILN_F32, 2, 2, 0},
    {2, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", f8, sizeof f8,
     KILN_F64, 2, 2, 1},
    {3, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", c8, sizeof c8,
     KILN_C32, 1, 3, 0},
    {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", f8, 8, KILN_F64, 0, 0,
     0},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    size_t n;
    kiln_array a;
    unsigned char *b =
      make_npy(files[i].major, files[i].header, 1, files[i].data, files[i].bytes, &n);
    assert_int_equal((n - files[i].bytes) % 64, 0);
    load_both(b, n, KILN_OK, NULL, &a);
    assert_int_equal(a.dtype, files[i].dtype);
    assert_int_equal(a.ndim, files[i].ndim);
    assert_int_equal(a.fortran_order, files[i].fortran);
    if (a.ndim)
      assert_int_equal(a.shape[0], files[i].dim0);
    assert_int_equal(a.count * kiln_dtype_size(a.dtype), files[i].bytes);
    assert_memory_equal(a.data, files[i].data, files[i].bytes);
    kiln_array_free(&a);
    free(b);
  }
}

/* What literal_eval accepts and writers other than np.save produce. */
static void test_npy_reads_lenient_headers(void **state)
{
  (void)state;
  static const char *const headers[] = {
    "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
    "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}\n",
    "  {\n 'descr' :'<f4' ,\t'fortran_order':False,\r\n'shape':( 2 , 3 , ) ,}   \n",
    "{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3), }",
    "{'descr': '=f4', 'fortran_order': False, 'shape': (2, 3), }",
    "{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3), }",
    /* numpy before 1.9 aligned the data to 16 bytes: 10 + 70 = 80 */
    F4_23 "         \n",
  };
  for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
    size_t n;
    kiln_array a;
    unsigned char *b = make_npy(1, headers[i], 0, f4_values, sizeof f4_values, &n);
    load_both(b, n, KILN_OK, NULL, &a);
    assert_f4_23(&a);
    kiln_array_free(&a);
    free(b);
  }
}

/* Every malformed header: the status and a distinctive part of the message. */
static void test_npy_refuses_bad_headers(void **state)
{
  (void)state;
  static const struct {
    const char *header;
    size_t data; /* bytes of data after it */
    const char *needle;
  } cases[] = {
    {"", 24, "expected a Python dict literal starting with '{', found the end"},
    {"[1, 2]", 24, "expected a Python dict literal starting with '{', found '['"},
    {"{'descr': '<f4', 'fortran_order': False}", 24,
     "no key 'shape'; expected the keys 'descr', 'fortran_order' and 'shape'"},
    {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24,
     "the key 'descr' appears twice"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", 24,
     "unknown key 'extra'; expected only"},
    {"{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3)}", 24,
     "dtype '<u2' is not supported; kiln reads '<f2' (float16), '<f4' (float32)"},
    {"{'descr': 'float32', 'fortran_order': False, 'shape': (2, 3)}", 24,
     "'<c16' (complex128), '<i4' (int32), '<i8' (int64)"},
    {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3)}", 24,
     "big-endian dtype '>f4' is not supported"},
    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3)}", 24,
     "structured dtypes"},
    {"{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 3)}", 24,
     "expected True or False for 'fortran_order', found '1'"},
    {"{'descr': '<f4', 'fortran_order': Trueish, 'shape': (2, 3)}", 24,
     "expected True or False"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", 24,
     "expected a tuple such as (2, 3) for 'shape', found '['"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", 24,
     "a 1-d shape is written (N,)"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 6)}", 24,
     "more than 8 dimensions"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", 24, "negative"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", 24,
     "a dimension larger than size_t can hold"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (06,)}", 24, "leading zero"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", 24,
     "expected ',' or ')' in the shape, found '3'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", 24,
     "expected a dimension (a decimal integer), found ','"},
    {F4_23 " x", 24, "text after the dict's closing '}'"},
    {"{'descr': '<f4", 24, "a string that is not closed"},
    {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}", 24,
     "expected ':' after the key"},
    {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}", 24,
     "expected ',' or '}' after a value, found '''"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),,}", 24,
     "expected a key string such as 'shape', or '}', found ','"},
    {"{1: 2}", 24, "expected a key string"},
    {"{'d\\x65scr': '<f4'}", 24, "an escape in a string"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", 24,
     "after a value, found the end of the header"},
    {F4_23, 20,
     "the data is 20 bytes, but shape (2, 3) of float32 needs 24: the "
     "file is truncated"},
    {F4_23, 28,
     "the data is 28 bytes, but shape (2, 3) of float32 needs 24; bytes "
     "after the data are refused"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 0,
     "the data is 0 bytes, but shape () of float32 needs 4"},
  };
  unsigned char data[32] = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n;
    kiln_array a;
    unsigned char *b = make_npy(1, cases[i].header, 1, data, cases[i].data, &n);
    load_both(b, n, KILN_ERR_FORMAT, cases[i].needle, &a);
    free(b);
  }
}

/* Bad bytes before the header. */
static void test_npy_refuses_bad_preambles(void **state)
{
  (void)state;
  static const struct {
    const char *bytes;
    size_t n;
    const char *needle;
  } cases[] = {
    {"", 0, "ends after 0 bytes, inside the .npy preamble"},
    {"\x93NUM", 4, "ends after 4 bytes"},
    {"\x93NUMPY\x01\x00\x10", 9, "ends after 9 bytes"},
    {"\x93NUMPY\x02\x00\x10\x00\x00", 11, "ends after 11 bytes"},
    {"\x89PNG\r\n\x1a\n\0\0\0\0", 12,
     "is not a .npy file: it starts with 89 50..., "
     "expected numpy's magic"},
    {"\x93NUMPZ\x01\x00\x00\x00", 10, "is not a .npy file"},
    {"x", 1, "is not a .npy file: it starts with 78"},
    {"\x93NUMPY\x04\x00\x00\x00", 10,
     "is .npy format version 4.0; kiln reads 1.0, "
     "2.0 and 3.0"},
    {"\x93NUMPY\x01\x01\x00\x00", 10, "version 1.1"},
    {"\x93NUMPY\x00\x00\x00\x00", 10, "version 0.0"},
    {"\x93NUMPY\x01\x00\xff\x00{}", 12,
     "the header length says 255 bytes, but the "
     "file ends 2 bytes after the preamble"},
    {"\x93NUMPY\x03\x00\x00\x00\x00\x01{}", 14,
     "the header length says 16777216 "
     "bytes; kiln reads headers of at most"},
    {"\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14, "the header length says 4294967295"},
    {"\x93NUMPY\x01\x00\x03\x00{}\0", 13, "text after the dict's closing '}'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_array a;
    load_both((const unsigned char *)cases[i].bytes, cases[i].n, KILN_ERR_FORMAT,
              cases[i].needle, &a);
  }
}

/* Shapes whose size overflows size_t, built from SIZE_MAX so the test holds on
 * 32-bit hosts too; a zero dimension makes any shape empty. */
static void test_npy_refuses_overflowing_shapes(void **state)
{
  (void)state;
  char h[256];
  size_t n;
  kiln_array a;
  snprintf(h, sizeof h, "{'descr': '<i4', 'fortran_order': False, 'shape': (%zu, 3)}",
           SIZE_MAX / 2);
  unsigned char *b = make_npy(1, h, 1, NULL, 0, &n);
  load_both(b, n, KILN_ERR_FORMAT, "has more elements than size_t can count", &a);
  free(b);
  snprintf(h, sizeof h, "{'descr': '<c16', 'fortran_order': False, 'shape': (%zu,)}",
           SIZE_MAX / 8);
  b = make_npy(1, h, 1, NULL, 0, &n);
  load_both(b, n, KILN_ERR_FORMAT, "is more bytes than size_t can count", &a);
  free(b);
  snprintf(h, sizeof h,
           "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, 0, %zu)}", SIZE_MAX,
           SIZE_MAX);
  b = make_npy(1, h, 1, NULL, 0, &n);
  load_both(b, n, KILN_OK, NULL, &a);
  assert_int_equal(a.count, 0);
  assert_null(a.data);
  assert_int_equal(a.shape[2], SIZE_MAX);
  kiln_array_free(&a);
  free(b);
}

/* A Fortran-order file made C order: np.asfortranarray([[1, 2, 3], [4, 5,
 * 6]]) stores 1 4 2 5 3 6. */
static void test_npy_fortran_file_to_c_order(void **state)
{
  (void)state;
  static const double stored[6] = {1, 4, 2, 5, 3, 6}, want[6] = {1, 2, 3, 4, 5, 6};
  size_t n;
  kiln_array a;
  unsigned char *b = make_npy(1,
                              "{'descr': '<f8', 'fortran_order': True, 'shape': "
                              "(2, 3), }",
                              1, stored, sizeof stored, &n);
  load_both(b, n, KILN_OK, NULL, &a);
  assert_true(a.fortran_order);
  assert_memory_equal(a.data, stored, sizeof stored);
  assert_kiln_ok(NULL, kiln_array_to_c_order(&a));
  assert_false(a.fortran_order);
  assert_int_equal(a.shape[0], 2);
  assert_int_equal(a.shape[1], 3);
  assert_memory_equal(a.data, want, sizeof want);
  kiln_array_free(&a);
  free(b);
}

/* Every element size against a hand-transposed 3 x 4 reference, and a 4-d
 * array whose elements name their own C index. */
static void test_npy_to_c_order_matches_reference(void **state)
{
  (void)state;
  static const kiln_dtype all[] = {KILN_F16, KILN_F32, KILN_F64, KILN_C32,
                                   KILN_C64, KILN_I32, KILN_I64};
  static const size_t shape[] = {3, 4}, shape4[] = {2, 3, 4, 5};
  for (size_t t = 0; t < sizeof all / sizeof all[0]; t++) {
    size_t es = kiln_dtype_size(all[t]);
    kiln_array a = pattern_array(all[t], 2, shape, 1);
    unsigned char ref[12 * 16];
    for (size_t i = 0; i < 3; i++)
      for (size_t j = 0; j < 4; j++) /* C (i, j) <- Fortran offset i + 3 j */
        memcpy(ref + (i * 4 + j) * es, (unsigned char *)a.data + (i + 3 * j) * es, es);
    assert_kiln_ok(NULL, kiln_array_to_c_order(&a));
    assert_memory_equal(a.data, ref, 12 * es);
    kiln_array_free(&a);
  }
  kiln_array a = pattern_array(KILN_I32, 4, shape4, 1);
  int32_t *v = a.data;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        for (int l = 0; l < 5; l++)
          v[i + 2 * j + 6 * k + 24 * l] = i * 1000 + j * 100 + k * 10 + l;
  assert_kiln_ok(NULL, kiln_array_to_c_order(&a));
  v = a.data;
  for (int c = 0; c < 120; c++)
    assert_int_equal(v[c], c / 60 * 1000 + c / 20 % 3 * 100 + c / 5 % 4 * 10 + c % 5);
  kiln_array_free(&a);
}

/* C order stays as it is; a layout that is the same bytes in both orders
 * only changes its flag; bad arrays are refused. */
static void test_npy_to_c_order_edges(void **state)
{
  (void)state;
  static const size_t row[] = {1, 5}, empty[] = {0, 3}, shape[] = {2, 3};
  kiln_array a = pattern_array(KILN_F32, 2, shape, 0);
  void *before = a.data;
  assert_kiln_ok(NULL, kiln_array_to_c_order(&a));
  assert_ptr_equal(a.data, before);
  kiln_array_free(&a);
  a = pattern_array(KILN_F32, 2, row, 1);
  before = a.data;
  assert_kiln_ok(NULL, kiln_array_to_c_order(&a));
  assert_ptr_equal(a.data, before);
  assert_false(a.fortran_order);
  kiln_array_free(&a);
  a = pattern_array(KILN_F32, 2, empty, 1);
  assert_kiln_ok(NULL, kiln_array_to_c_order(&a));
  assert_false(a.fortran_order);
  assert_null(a.data);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "array is NULL",
                    kiln_array_to_c_order(NULL));
  a = pattern_array(KILN_F32, 2, shape, 1);
  a.count = 5;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT,
                    "count is 5, but shape (2, 3) holds 6 elements",
                    kiln_array_to_c_order(&a));
  assert_true(a.fortran_order);
  kiln_array_free(&a);
}

/* Every prefix of a valid file is an error, never a crash or a success. */
static void test_npy_truncated_at_every_byte(void **state)
{
  (void)state;
  static const double v[6] = {1, 2, 3, 4, 5, 6};
  static const char *const headers[] = {
    "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }",
    "{'descr': '<f8', 'fortran_order': True, 'shape': (6,), }",
  };
  for (int major = 1; major <= 3; major++)
    for (size_t h = 0; h < 2; h++) {
      size_t n;
      kiln_array a;
      unsigned char *b = make_npy(major, headers[h], 1, v, sizeof v, &n);
      load_both(b, n, KILN_OK, NULL, &a);
      kiln_array_free(&a);
      for (size_t len = 0; len < n; len++)
        load_both(b, len, KILN_ERR_FORMAT, NULL, &a);
      free(b);
    }
}

/* Each header byte replaced by bytes that matter to the parser: a success or
 * KILN_ERR_FORMAT, and nothing valgrind or the sanitizers object to. */
static void test_npy_mutated_headers(void **state)
{
  (void)state;
  static const unsigned char subst[] = {0,   ' ', '\'', '"', '(', ')',  ',',  ':',
                                        '{', '}', '0',  '9', 'T', '\\', '\n', 0xff};
  size_t n;
  unsigned char *b = make_npy(1, F4_23, 1, f4_values, sizeof f4_values, &n);
  for (size_t pos = 0; pos < n - sizeof f4_values; pos++)
    for (size_t k = 0; k < sizeof subst; k++) {
      unsigned char keep = b[pos];
      kiln_array a;
      b[pos] = subst[k];
      kiln_status st = kiln_npy_load_memory(b, n, "mutant.npy", &a);
      if (st != KILN_OK && st != KILN_ERR_FORMAT)
        fail_msg("byte %zu = 0x%02x: %s", pos, subst[k], kiln_last_error(NULL));
      if (st == KILN_OK)
        assert_int_equal(a.count * kiln_dtype_size(a.dtype), sizeof f4_values);
      kiln_array_free(&a);
      b[pos] = keep;
    }
  free(b);
}

/* Loads bytes through a FIFO: a stream whose size is unknown up front. */
static kiln_status load_stream(const unsigned char *bytes, size_t n, kiln_array *out)
{
  const char *fifo = path_of("stream.npy");
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGPIPE, SIG_IGN); /* the reader may stop early */
    FILE *f = fopen(fifo, "wb");
    if (f) {
      fwrite(bytes, 1, n, f);
      fclose(f);
    }
    _exit(0);
  }
  kiln_status st = kiln_npy_load(fifo, out);
  int status;
  waitpid(pid, &status, 0);
  unlink(fifo);
  return st;
}

static void test_npy_reads_streams(void **state)
{
  (void)state;
  unsigned char data[32] = {0};
  size_t n;
  kiln_array a;
  unsigned char *b = make_npy(1, F4_23, 1, f4_values, sizeof f4_values, &n);
  assert_kiln_ok(NULL, load_stream(b, n, &a));
  assert_f4_23(&a);
  kiln_array_free(&a);
  assert_kiln_fails(NULL, KILN_ERR_FORMAT,
                    "the data is 20 bytes, but shape (2, 3) "
                    "of float32 needs 24: the file is truncated",
                    load_stream(b, n - 4, &a));
  assert_null(a.data);
  assert_kiln_fails(NULL, KILN_ERR_FORMAT,
                    "the header length says 118 bytes, but the "
                    "file ends 50 bytes after",
                    load_stream(b, 60, &a));
  free(b);
  b = make_npy(1, F4_23, 1, data, 28, &n);
  assert_kiln_fails(NULL, KILN_ERR_FORMAT, "the data is more than 24 bytes",
                    load_stream(b, n, &a));
  assert_null(a.data);
  free(b);
}

/* A part of a file: the whole header, the elements asked for, cut at the
 * end; the file's size is still held against its header. */
static void test_npy_load_range(void **state)
{
  (void)state;
  size_t n, count;
  kiln_array a;
  unsigned char *b = make_npy(1, F4_23, 1, f4_values, sizeof f4_values, &n);
  write_bytes(path_of("range.npy"), b, n);
  static const struct {
    size_t first, want, got;
  } cases[] = {{0, 0, 0}, {0, 6, 6}, {2, 3, 3}, {4, 10, 2}, {6, 1, 0}, {9, 1, 0}};
  for (size_t i = 0; i < COUNT(cases); i++) {
    count = cases[i].want;
    assert_kiln_ok(NULL,
                   kiln_npy_load_range(path_of("range.npy"), cases[i].first, &count, &a));
    assert_int_equal(count, cases[i].got);
    assert_int_equal(a.count, 6);
    assert_int_equal(a.ndim, 2);
    assert_int_equal(a.shape[1], 3);
    if (count)
      assert_memory_equal(a.data, f4_values + cases[i].first, count * sizeof(float));
    else
      assert_null(a.data);
    kiln_array_free(&a);
  }
  write_bytes(path_of("range.npy"), b, n - 4);
  count = 1;
  assert_kiln_fails(NULL, KILN_ERR_FORMAT, "the file is truncated",
                    kiln_npy_load_range(path_of("range.npy"), 0, &count, &a));
  assert_kiln_fails(NULL, KILN_ERR_IO, "not a regular file",
                    kiln_npy_load_range("/dev/null", 0, &count, &a));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "count is NULL",
                    kiln_npy_load_range(path_of("range.npy"), 0, NULL, &a));
  unlink(path_of("range.npy"));
  free(b);
}

static void test_npy_load_io_errors(void **state)
{
  (void)state;
  kiln_array a;
  assert_kiln_fails(NULL, KILN_ERR_IO, "cannot open '/nonexistent/x.npy': No such file",
                    kiln_npy_load("/nonexistent/x.npy", &a));
  assert_kiln_fails(NULL, KILN_ERR_IO, "cannot read", kiln_npy_load(dir, &a));
  assert_non_null(strstr(kiln_last_error(NULL), "directory"));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "path is NULL",
                    kiln_npy_load(NULL, &a));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_npy_load("x.npy", NULL));
  kiln_array_free(NULL);
  kiln_array_free(&a);
  kiln_array_free(&a); /* freeing a zeroed array again is harmless */
}

static void test_npy_save_refuses_bad_arrays(void **state)
{
  (void)state;
  static const float v[6];
  const char *path = path_of("bad.npy");
  kiln_array a = {
    .dtype = KILN_F32, .ndim = 2, .shape = {2, 3}, .count = 6, .data = (void *)v};
  int before = dir_entries();
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "path is NULL",
                    kiln_npy_save(NULL, &a));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "array is NULL",
                    kiln_npy_save(path, NULL));
  a.dtype = (kiln_dtype)0;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_DTYPE, "dtype 0 is not a kiln_dtype",
                    kiln_npy_save(path, &a));
  a.dtype = KILN_F32;
  a.ndim = 9;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "ndim is 9; kiln handles at most 8",
                    kiln_npy_save(path, &a));
  a.ndim = 2;
  a.count = 5;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT,
                    "count is 5, but shape (2, 3) "
                    "holds 6",
                    kiln_npy_save(path, &a));
  a.count = 6;
  a.data = NULL;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "data is NULL for 6 elements",
                    kiln_npy_save(path, &a));
  a.shape[0] = SIZE_MAX / 2;
  assert_kiln_fails(NULL, KILN_ERR_OVERFLOW, "more bytes than size_t can count",
                    kiln_npy_save(path, &a));
  assert_int_equal(dir_entries(), before);
}

/* A save that fails leaves no file and no temporary behind, and an existing
 * file as it was (issue 10). */
static void test_npy_save_failure_leaves_no_partial_file(void **state)
{
  (void)state;
  const char *target = path_of("keep.npy");
  size_t count = 1 << 18, n_before, n_after;
  kiln_array a = {.dtype = KILN_F32,
                  .ndim = 1,
                  .shape = {count},
                  .count = count,
                  .data = calloc(count, 4)};
  assert_non_null(a.data);
  assert_kiln_fails(NULL, KILN_ERR_IO, "creating the temporary file",
                    kiln_npy_save("/nonexistent/dir/x.npy", &a));
  assert_non_null(strstr(kiln_last_error(NULL), "No such file"));

  write_bytes(target, "old content", 11);
  int before = dir_entries();
  struct rlimit old, small;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  small = old;
  small.rlim_cur = 4096; /* writes past 4 KiB fail with EFBIG */
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
  kiln_status st = kiln_npy_save(target, &a);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, old_handler);
  assert_int_equal(st, KILN_ERR_IO);
  assert_non_null(strstr(kiln_last_error(NULL), "writing the temporary file"));
  assert_non_null(strstr(kiln_last_error(NULL), "is unchanged"));
  assert_int_equal(dir_entries(), before);
  unsigned char *got = read_bytes(target, &n_before);
  assert_int_equal(n_before, 11);
  assert_memory_equal(got, "old content", 11);
  free(got);

  /* Renaming over a folder fails after the whole write: still no temporary. */
  assert_int_equal(mkdir(path_of("folder.npy"), 0700), 0);
  assert_kiln_fails(NULL, KILN_ERR_IO, "renaming the temporary file",
                    kiln_npy_save(path_of("folder.npy"), &a));
  assert_int_equal(dir_entries(), before + 1);
  rmdir(path_of("folder.npy"));

  /* And a save that succeeds replaces the old file whole. */
  assert_kiln_ok(NULL, kiln_npy_save(target, &a));
  got = read_bytes(target, &n_after);
  assert_int_equal(n_after, 128 + 4 * count);
  free(got);
  free(a.data);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_npy_round_trip_every_dtype),
    cmocka_unit_test(test_npy_round_trip_shapes),
    cmocka_unit_test(test_npy_save_writes_numpy_bytes),
    cmocka_unit_test(test_npy_save_growth_padding),
    cmocka_unit_test(test_npy_reads_numpy_files),
    cmocka_unit_test(test_npy_reads_lenient_headers),
    cmocka_unit_test(test_npy_refuses_bad_headers),
    cmocka_unit_test(test_npy_refuses_bad_preambles),
    cmocka_unit_test(test_npy_refuses_overflowing_shapes),
    cmocka_unit_test(test_npy_fortran_file_to_c_order),
    cmocka_unit_test(test_npy_to_c_order_matches_reference),
    cmocka_unit_test(test_npy_to_c_order_edges),
    cmocka_unit_test(test_npy_truncated_at_every_byte),
    cmocka_unit_test(test_npy_mutated_headers),
    cmocka_unit_test(test_npy_reads_streams),
    cmocka_unit_test(test_npy_load_range),
    cmocka_unit_test(test_npy_load_io_errors),
    cmocka_unit_test(test_npy_save_refuses_bad_arrays),
    cmocka_unit_test(test_npy_save_failure_leaves_no_partial_file),
  };
  return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
