/*
 * npy.c — numpy's .npy files: kiln_npy_load(), kiln_npy_save(),
 * kiln_array_to_c_order() and kiln_array_free(). npy_header.c parses and
 * writes the header's dict.
 *
 * A file is the magic "\x93NUMPY", a major and a minor version byte, the
 * header's length (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), the
 * header, then the raw elements (numpy/lib/format.py).
 *
 * The sizes are checked against the file's before anything is allocated, so
 * a header that lies costs nothing. Data after the last element is refused,
 * where np.load ignores it: for a compute runtime a shape that disagrees
 * with the data is more likely a corrupt file than several arrays saved
 * into one, and computing on a prefix would hide it.
 *
 * A save writes a temporary file beside the target and renames it over the
 * target, so a failed write never leaves a partial file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "io/npy.h"

/* Elements are copied between disk and memory as they are, so the host must
 * store them as .npy's '<' does. Every host OpenCL runs on today does. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "kiln's .npy support assumes a little-endian host"
#endif

/* A header of kiln's dtypes and 8 dimensions is under 300 bytes; the cap
 * only stops a lying length from costing memory on a stream of unknown size. */
#define MAX_HEADER (1u << 20)

/* strerror() may share one buffer between threads; strerror_r does not. */
static const char *error_text(int err, char *buf, size_t size)
{
  if (strerror_r(err, buf, size) != 0)
    snprintf(buf, size, "error %d", err);
  return buf;
}

/* Sets a->count and *bytes from the shape, or fails naming the overflow. */
static kiln_status check_size(const char *name, kiln_array *a, size_t *bytes)
{
  kiln__str m = {0};
  int count_over = kiln__npy_shape_count(a->ndim, a->shape, &a->count) != 0;
  if (!count_over && !kiln__mul_overflow(a->count, kiln_dtype_size(a->dtype), bytes))
    return KILN_OK;
  kiln__npy_shape_repr(&m, a->ndim, a->shape);
  kiln_status st = kiln__fail(NULL, KILN_ERR_FORMAT,
                              "kiln_npy_load: '%s': shape %s %s than size_t can "
                              "count",
                              name, kiln__str_get(&m),
                              count_over ? "has more elements" : "is more bytes");
  kiln__str_free(&m);
  return st;
}

/* ---- reading --------------------------------------------------------------- */

/* Where the bytes come from: a file, or memory (tests and fuzzers). */
typedef struct source {
  const char *name;
  int fd; /* -1: memory */
  const unsigned char *mem;
  size_t size;    /* the whole, when size_known */
  int size_known; /* a regular file or memory: checked before reading */
  size_t pos;     /* bytes consumed */
} source;

/* Reads up to n bytes; *got is fewer only at the end of the source. */
static kiln_status source_read(source *s, void *buf, size_t n, size_t *got)
{
  *got = 0;
  if (s->fd < 0) {
    *got = n < s->size - s->pos ? n : s->size - s->pos;
    if (*got)
      memcpy(buf, s->mem + s->pos, *got);
    s->pos += *got;
    return KILN_OK;
  }
  while (*got < n) {
    size_t chunk = n - *got < (1u << 30) ? n - *got : (1u << 30);
    ssize_t r = read(s->fd, (unsigned char *)buf + *got, chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      char e[128];
      return kiln__fail(NULL, KILN_ERR_IO, "kiln_npy_load: cannot read '%s': %s", s->name,
                        error_text(errno, e, sizeof e));
    }
    if (r == 0)
      break;
    *got += (size_t)r;
    s->pos += (size_t)r;
  }
  return KILN_OK;
}

static kiln_status preamble_short(const source *s)
{
  return kiln__fail(NULL, KILN_ERR_FORMAT,
                    "kiln_npy_load: '%s' ends after %zu bytes, inside the .npy "
                    "preamble (magic, version, header length)",
                    s->name, s->pos);
}

/* The magic, the version and the header's length. */
static kiln_status read_preamble(source *s, size_t *hlen)
{
  unsigned char b[12] = {0};
  size_t got, lenbytes;
  kiln_status st = source_read(s, b, 8, &got);
  if (st != KILN_OK)
    return st;
  size_t cmp = got < KILN__NPY_MAGIC_LEN ? got : KILN__NPY_MAGIC_LEN;
  if (memcmp(b, KILN__NPY_MAGIC, cmp) != 0)
    return kiln__fail(NULL, KILN_ERR_FORMAT,
                      "kiln_npy_load: '%s' is not a .npy file: it starts with "
                      "%02x %02x..., expected numpy's magic \\x93NUMPY",
                      s->name, b[0], b[1]);
  if (got < 8)
    return preamble_short(s);
  if (b[6] < 1 || b[6] > 3 || b[7] != 0)
    return kiln__fail(NULL, KILN_ERR_FORMAT,
                      "kiln_npy_load: '%s' is .npy format version %u.%u; kiln "
                      "reads 1.0, 2.0 and 3.0",
                      s->name, b[6], b[7]);
  lenbytes = b[6] == 1 ? 2 : 4;
  st = source_read(s, b + 8, lenbytes, &got);
  if (st == KILN_OK && got < lenbytes)
    return preamble_short(s);
  *hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
          (size_t)b[11] << 24; /* b[10] and b[11] stay 0 in version 1.0 */
  return st;
}

static kiln_status header_past_end(const source *s, size_t hlen, size_t have)
{
  return kiln__fail(NULL, KILN_ERR_FORMAT,
                    "kiln_npy_load: '%s': the header length says %zu bytes, but "
                    "the file ends %zu bytes after the preamble",
                    s->name, hlen, have);
}

static kiln_status read_header(source *s, size_t hlen, unsigned char **text)
{
  size_t got;
  if (hlen > MAX_HEADER)
    return kiln__fail(NULL, KILN_ERR_FORMAT,
                      "kiln_npy_load: '%s': the header length says %zu bytes; kiln "
                      "reads headers of at most %u",
                      s->name, hlen, MAX_HEADER);
  if (s->size_known && hlen > s->size - s->pos)
    return header_past_end(s, hlen, s->size - s->pos);
  *text = malloc(hlen ? hlen : 1);
  if (!*text)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_npy_load: out of "
                      "host memory for a header of %zu bytes",
                      hlen);
  kiln_status st = source_read(s, *text, hlen, &got);
  if (st == KILN_OK && got < hlen)
    st = header_past_end(s, hlen, got);
  return st;
}

static kiln_status data_size_fail(const source *s, const kiln_array *a, size_t need,
                                  size_t have, int at_least)
{
  kiln__str m = {0};
  kiln__npy_shape_repr(&m, a->ndim, a->shape);
  kiln_status st =
    kiln__fail(NULL, KILN_ERR_FORMAT,
               "kiln_npy_load: '%s': the data is %s%zu bytes, but shape %s of %s needs "
               "%zu%s",
               s->name, at_least ? "more than " : "", have, kiln__str_get(&m),
               kiln_dtype_name(a->dtype), need,
               have > need || at_least
                 ? "; bytes after the data are refused (np.load ignores them, but they "
                   "mean the shape does not describe the data)"
                 : ": the file is truncated");
  kiln__str_free(&m);
  return st;
}

static kiln_status read_data(source *s, kiln_array *a, size_t bytes)
{
  unsigned char extra;
  size_t got = 0, more = 0;
  if (s->size_known && s->size - s->pos != bytes)
    return data_size_fail(s, a, bytes, s->size - s->pos, 0);
  if (bytes && !(a->data = malloc(bytes)))
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_npy_load: '%s': "
                      "out of host memory for %zu bytes of data",
                      s->name, bytes);
  kiln_status st = source_read(s, a->data, bytes, &got);
  if (st == KILN_OK && got == bytes)
    st = source_read(s, &extra, 1, &more); /* a stream: look for trailing bytes */
  if (st == KILN_OK && (got < bytes || more))
    st = data_size_fail(s, a, bytes, got, (int)more);
  if (st != KILN_OK) {
    free(a->data);
    a->data = NULL;
  }
  return st;
}

/* Elements [first, first + *count) of a regular file's data, *count cut
 * at its end, into a->data. */
static kiln_status read_range(source *s, kiln_array *a, size_t bytes, size_t first,
                              size_t *count)
{
  size_t es = kiln_dtype_size(a->dtype);
  if (s->size - s->pos != bytes)
    return data_size_fail(s, a, bytes, s->size - s->pos, 0);
  *count = first >= a->count ? 0 : a->count - first < *count ? a->count - first : *count;
  if (*count == 0)
    return KILN_OK;
  if (!(a->data = malloc(*count * es)))
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_npy_load_range: '%s': out of host memory for %zu bytes",
                      s->name, *count * es);
  size_t got = 0;
  kiln_status st = KILN_OK;
  if (lseek(s->fd, (off_t)(s->pos + first * es), SEEK_SET) < 0) {
    char e[128];
    st = kiln__fail(NULL, KILN_ERR_IO, "kiln_npy_load_range: cannot seek in '%s': %s",
                    s->name, error_text(errno, e, sizeof e));
  } else
    st = source_read(s, a->data, *count * es, &got);
  if (st == KILN_OK && got < *count * es)
    st = data_size_fail(s, a, bytes, got, 0);
  if (st != KILN_OK) {
    free(a->data);
    a->data = NULL;
  }
  return st;
}

/* Reads the header, then the whole data, or with `range` (a regular file)
 * elements [first, first + *range) of it. */
static kiln_status load(source *s, kiln_array *out, size_t first, size_t *range)
{
  size_t hlen = 0, bytes = 0;
  unsigned char *text = NULL;
  kiln_array a = {0};
  kiln_status st = read_preamble(s, &hlen);
  if (st == KILN_OK)
    st = read_header(s, hlen, &text);
  if (st == KILN_OK)
    st = kiln__npy_parse_header(s->name, text, hlen, &a);
  free(text);
  if (st == KILN_OK)
    st = check_size(s->name, &a, &bytes);
  if (st == KILN_OK)
    st = range ? read_range(s, &a, bytes, first, range) : read_data(s, &a, bytes);
  if (st == KILN_OK)
    *out = a;
  return st;
}

/* Opens path and loads it as load() does; `fn` names the call. */
static kiln_status load_file(const char *fn, const char *path, kiln_array *out,
                             size_t first, size_t *range)
{
  struct stat sb;
  char e[128];
  if (out)
    memset(out, 0, sizeof *out);
  if (!path || !out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                      !path ? "path" : "out");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return kiln__fail(NULL, KILN_ERR_IO, "%s: cannot open '%s': %s", fn, path,
                      error_text(errno, e, sizeof e));
  source s = {.name = path, .fd = fd};
  /* A regular file's size lets a lying header fail before any allocation. */
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (uintmax_t)sb.st_size <= SIZE_MAX) {
    s.size = (size_t)sb.st_size;
    s.size_known = 1;
  }
  kiln_status st = range && !s.size_known
                     ? kiln__fail(NULL, KILN_ERR_IO,
                                  "%s: '%s' is not a regular file; expected one to "
                                  "read a part of",
                                  fn, path)
                     : load(&s, out, first, range);
  close(fd);
  return st;
}

KILN_API kiln_status kiln_npy_load(const char *path, kiln_array *out)
{
  return load_file("kiln_npy_load", path, out, 0, NULL);
}

KILN_API kiln_status kiln_npy_load_range(const char *path, size_t first, size_t *count,
                                         kiln_array *out)
{
  if (!count)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_npy_load_range: count is NULL");
  return load_file("kiln_npy_load_range", path, out, first, count);
}

KILN_API kiln_status kiln_npy_load_memory(const void *bytes, size_t size,
                                          const char *name, kiln_array *out)
{
  if (out)
    memset(out, 0, sizeof *out);
  if ((!bytes && size) || !name || !out)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_npy_load_memory: NULL argument");
  source s = {.name = name, .fd = -1, .mem = bytes, .size = size, .size_known = 1};
  return load(&s, out, 0, NULL);
}

/* ---- writing --------------------------------------------------------------- */

/* The caller's array is consistent; *bytes gets its data's size. */
static kiln_status check_array(const char *fn, const kiln_array *a, size_t *bytes)
{
  size_t count;
  kiln__str m = {0};
  kiln_status st = KILN_OK;
  if (!a)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "%s: array is NULL", fn);
  if (!kiln_dtype_size(a->dtype))
    return kiln__fail(NULL, KILN_ERR_INVALID_DTYPE, "%s: dtype %d is not a kiln_dtype",
                      fn, (int)a->dtype);
  if (a->ndim > KILN_ARRAY_MAX_DIMS)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "%s: ndim is %u; kiln "
                      "handles at most %d dimensions",
                      fn, a->ndim, KILN_ARRAY_MAX_DIMS);
  kiln__npy_shape_repr(&m, a->ndim, a->shape);
  if (kiln__npy_shape_count(a->ndim, a->shape, &count) ||
      kiln__mul_overflow(count, kiln_dtype_size(a->dtype), bytes))
    st = kiln__fail(NULL, KILN_ERR_OVERFLOW,
                    "%s: shape %s of %s is more bytes "
                    "than size_t can count",
                    fn, kiln__str_get(&m), kiln_dtype_name(a->dtype));
  else if (count != a->count)
    st = kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                    "%s: count is %zu, but shape "
                    "%s holds %zu elements",
                    fn, a->count, kiln__str_get(&m), count);
  else if (!a->data && *bytes)
    st = kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                    "%s: data is NULL for %zu "
                    "elements",
                    fn, count);
  kiln__str_free(&m);
  return st;
}

/* Creates "<path>.tmp.<pid>.<serial>" beside path with O_EXCL, so two
 * writers never share one, and mode 0666 less the umask, as the target
 * would get from fopen(). -1 with errno on failure; *tmp is then NULL. */
static int open_temp(const char *path, char **tmp)
{
  static atomic_uint serial;
  *tmp = NULL;
  for (int tries = 0; tries < 100; tries++) {
    kiln__str s = {0};
    kiln__str_appendf(&s, "%s.tmp.%ld.%u", path, (long)getpid(),
                      atomic_fetch_add(&serial, 1u));
    if (s.failed) {
      kiln__str_free(&s);
      errno = ENOMEM;
      return -1;
    }
    int fd = open(s.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *tmp = s.data;
      return fd;
    }
    int err = errno;
    kiln__str_free(&s);
    errno = err;
    if (err != EEXIST)
      return -1;
  }
  return -1;
}

/* 0, or the errno of the failed write(). */
static int write_full(int fd, const void *buf, size_t n)
{
  const unsigned char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n < (1u << 30) ? n : (1u << 30));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return w < 0 ? errno : EIO;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes the three parts to a temporary file, flushes it to the disk and
 * renames it over path: a crash or a full disk leaves the old file or the
 * whole new one, never a part. */
static kiln_status write_atomic(const char *path, const unsigned char *pre, size_t prelen,
                                const kiln__str *h, const void *data, size_t bytes)
{
  char *tmp = NULL, e[128];
  const char *step = "creating";
  int fd = open_temp(path, &tmp), err = fd < 0 ? errno : 0;
  if (!err) {
    step = "writing";
    err = write_full(fd, pre, prelen);
  }
  if (!err)
    err = write_full(fd, h->data, h->len);
  if (!err && bytes)
    err = write_full(fd, data, bytes);
  /* EINVAL: a file system that cannot flush, where there is nothing to wait for. */
  if (!err && fsync(fd) != 0 && errno != EINVAL)
    err = errno, step = "flushing";
  if (fd >= 0 && close(fd) != 0 && !err)
    err = errno, step = "closing"; /* NFS reports write errors here */
  if (!err && rename(tmp, path) != 0)
    err = errno, step = "renaming";
  if (err && tmp)
    unlink(tmp);
  kiln_status st = KILN_OK;
  if (err)
    st = kiln__fail(NULL, KILN_ERR_IO,
                    "kiln_npy_save: cannot write '%s': %s the "
                    "temporary file '%s%s' failed: %s; '%s' is unchanged",
                    path, step, tmp ? tmp : path, tmp ? "" : ".tmp.*",
                    error_text(err, e, sizeof e), path);
  free(tmp);
  return st;
}

KILN_API kiln_status kiln_npy_save(const char *path, const kiln_array *array)
{
  unsigned char pre[12];
  size_t bytes = 0, prelen = 0;
  kiln__str h = {0};
  if (!path)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_npy_save: path is NULL");
  kiln_status st = check_array("kiln_npy_save", array, &bytes);
  if (st == KILN_OK)
    st = kiln__npy_build_header(array, pre, &prelen, &h);
  if (st == KILN_OK)
    st = write_atomic(path, pre, prelen, &h, array->data, bytes);
  kiln__str_free(&h);
  return st;
}

/* ---- layout ---------------------------------------------------------------- */

/* memcpy of a size known at compile time becomes one or two moves. */
static void copy_element(unsigned char *dst, const unsigned char *src, size_t size)
{
  switch (size) {
  case 2: memcpy(dst, src, 2); break;
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  default: memcpy(dst, src, size); break;
  }
}

/* Walks the Fortran-order source in storage order (the first index fastest)
 * and puts each element at its C-order place: reads are sequential, writes
 * strided. */
static void fortran_to_c(const kiln_array *a, unsigned char *dst)
{
  size_t esize = kiln_dtype_size(a->dtype), stride[KILN_ARRAY_MAX_DIMS];
  size_t idx[KILN_ARRAY_MAX_DIMS] = {0}, off = 0, s = esize;
  const unsigned char *src = a->data;
  for (unsigned d = a->ndim; d-- > 0; s *= a->shape[d])
    stride[d] = s;
  for (size_t n = 0; n < a->count; n++, src += esize) {
    copy_element(dst + off, src, esize);
    for (unsigned d = 0; d < a->ndim; d++) {
      off += stride[d];
      if (++idx[d] < a->shape[d])
        break;
      off -= stride[d] * a->shape[d];
      idx[d] = 0;
    }
  }
}

KILN_API kiln_status kiln_array_to_c_order(kiln_array *array)
{
  size_t bytes = 0;
  unsigned spread = 0; /* dimensions longer than 1 */
  kiln_status st = check_array("kiln_array_to_c_order", array, &bytes);
  if (st != KILN_OK || !array->fortran_order)
    return st;
  for (unsigned d = 0; d < array->ndim; d++)
    spread += array->shape[d] > 1;
  /* With at most one dimension longer than 1, both orders are the same bytes. */
  if (spread > 1 && array->count > 0) {
    unsigned char *c = malloc(bytes);
    if (!c)
      return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                        "kiln_array_to_c_order: "
                        "out of host memory for a copy of %zu bytes",
                        bytes);
    fortran_to_c(array, c);
    free(array->data);
    array->data = c;
  }
  array->fortran_order = 0;
  return KILN_OK;
}

KILN_API void kiln_array_free(kiln_array *array)
{
  if (!array)
    return;
  free(array->data);
  memset(array, 0, sizeof *array);
}
