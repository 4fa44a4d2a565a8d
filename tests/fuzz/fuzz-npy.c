/*
 * fuzz-npy.c — kiln's .npy reader on any bytes (kiln_npy_load_memory(),
 * and kiln__npy_parse_header() on the same bytes as a header's dict).
 *
 * Properties, beyond ASan and UBSan finding nothing:
 *  - a failure returns KILN_ERR_FORMAT with a message, and leaves the array
 *    empty;
 *  - a loaded array is consistent: count is the product of the shape, data
 *    is there when count is not 0, and its bytes are the input's last ones;
 *  - kiln_array_to_c_order() puts every element where an independent index
 *    computation says;
 *  - the header kiln writes for the loaded array (kiln__npy_build_header),
 *    followed by the data, loads back to the same array.
 */
#include <string.h>

#include "base/util.h"
#include "io/npy.h"

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  return 0;
}

/* The C-order array c holds what the Fortran-order f does, element by
 * element, with the offsets computed the slow way. */
static void check_c_order(const kiln_array *f, const unsigned char *fdata,
                          const kiln_array *c)
{
  size_t es = kiln_dtype_size(f->dtype), idx[KILN_ARRAY_MAX_DIMS] = {0};
  for (size_t n = 0; n < f->count; n++) {
    size_t foff = 0, coff = 0, fs = 1, cs = 1; /* strides in elements */
    for (unsigned d = 0; d < f->ndim; d++) {
      foff += idx[d] * fs;
      fs *= f->shape[d];
    }
    for (unsigned d = f->ndim; d-- > 0;) {
      coff += idx[d] * cs;
      cs *= f->shape[d];
    }
    FUZZ_CHECK(
      memcmp((const unsigned char *)c->data + coff * es, fdata + foff * es, es) == 0);
    for (unsigned d = f->ndim; d-- > 0;) /* the next C-order index */
      if (++idx[d] < f->shape[d])
        break;
      else
        idx[d] = 0;
  }
}

/* Writes a's header and data into memory and loads that back. */
static void check_round_trip(const kiln_array *a)
{
  unsigned char pre[12];
  size_t prelen = 0, bytes = a->count * kiln_dtype_size(a->dtype);
  kiln__str h = {0};
  FUZZ_CHECK(kiln__npy_build_header(a, pre, &prelen, &h) == KILN_OK);
  size_t total = prelen + h.len + bytes;
  FUZZ_CHECK((prelen + h.len) % 64 == 0); /* numpy aligns the data */
  unsigned char *file = malloc(total);
  FUZZ_CHECK(file != NULL);
  memcpy(file, pre, prelen);
  memcpy(file + prelen, h.data, h.len);
  if (bytes)
    memcpy(file + prelen + h.len, a->data, bytes);
  kiln_array b;
  FUZZ_CHECK(kiln_npy_load_memory(file, total, "round-trip.npy", &b) == KILN_OK);
  FUZZ_CHECK(b.dtype == a->dtype && b.ndim == a->ndim && b.count == a->count &&
             b.fortran_order == a->fortran_order);
  FUZZ_CHECK(memcmp(b.shape, a->shape, sizeof a->shape) == 0);
  FUZZ_CHECK(bytes == 0 || memcmp(b.data, a->data, bytes) == 0);
  kiln_array_free(&b);
  kiln__str_free(&h);
  free(file);
}

static void check_loaded(const uint8_t *data, size_t size, kiln_array *a)
{
  size_t count = 1, es = kiln_dtype_size(a->dtype);
  FUZZ_CHECK(es != 0 && a->ndim <= KILN_ARRAY_MAX_DIMS);
  int empty = 0;
  for (unsigned d = 0; d < a->ndim; d++)
    empty |= a->shape[d] == 0;
  for (unsigned d = 0; d < a->ndim && !empty; d++)
    FUZZ_CHECK(!__builtin_mul_overflow(count, a->shape[d], &count));
  count = empty ? 0 : count;
  FUZZ_CHECK(a->count == count);
  size_t bytes = count * es;
  FUZZ_CHECK(bytes <= size && (bytes == 0 || a->data != NULL));
  FUZZ_CHECK(bytes == 0 || memcmp(a->data, data + size - bytes, bytes) == 0);
  for (unsigned d = a->ndim; d < KILN_ARRAY_MAX_DIMS; d++)
    FUZZ_CHECK(a->shape[d] == 0);

  if (a->fortran_order) {
    kiln_array f = *a;
    FUZZ_CHECK(kiln_array_to_c_order(a) == KILN_OK);
    FUZZ_CHECK(!a->fortran_order && a->count == f.count);
    check_c_order(&f, data + size - bytes, a);
  }
  check_round_trip(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  kiln_array a;
  kiln_status st = kiln_npy_load_memory(data, size, "fuzz.npy", &a);
  if (st == KILN_OK) {
    check_loaded(data, size, &a);
  } else {
    FUZZ_CHECK(st == KILN_ERR_FORMAT);
    FUZZ_CHECK(a.data == NULL && a.count == 0 && a.ndim == 0);
    FUZZ_CHECK(kiln_last_error(NULL)[0] != '\0');
  }
  kiln_array_free(&a);

  /* The whole input as a header's dict: the parser alone, without the
   * preamble's and the data's checks in the way. */
  kiln_array h;
  st = kiln__npy_parse_header("fuzz.npy", data, size, &h);
  FUZZ_CHECK(st == KILN_OK || st == KILN_ERR_FORMAT);
  FUZZ_CHECK(h.data == NULL && h.ndim <= KILN_ARRAY_MAX_DIMS);
  if (st == KILN_OK)
    FUZZ_CHECK(kiln_dtype_size(h.dtype) != 0);
  return 0;
}
