/*
 * fuzz.h — what kiln's fuzz harnesses share.
 *
 * Each tests/fuzz/fuzz-<area>.c defines LLVMFuzzerTestOneInput() (and, when
 * it needs set-up, LLVMFuzzerInitialize()). With clang and -Dfuzzing=true it
 * links libFuzzer and ASan+UBSan (ci/fuzz.sh runs it); every build also links
 * it with replay.c into a plain program that feeds it the seed corpus and the
 * regressions, as a test of the unit suite.
 *
 * A harness prints nothing while its properties hold. A property that fails
 * is a bug: FUZZ_CHECK names it on stderr and aborts, which libFuzzer reports
 * as a crash with the input, and the replay test as a failure.
 */
#ifndef KILN_FUZZ_H
#define KILN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);        \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

/* Exact arithmetic on sizes: products of two size_t values cannot wrap.
 * GCC and clang have it; __extension__ keeps -Wpedantic quiet. */
__extension__ typedef unsigned __int128 fuzz_u128;

/* The input, consumed front to back; reads past its end give zeros, so
 * every input decodes to something. */
typedef struct fuzz_input {
  const uint8_t *p;
  size_t left;
} fuzz_input;

static inline uint8_t fuzz_byte(fuzz_input *in)
{
  if (!in->left)
    return 0;
  in->left--;
  return *in->p++;
}

static inline uint64_t fuzz_le(fuzz_input *in, unsigned bytes)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; i++)
    v |= (uint64_t)fuzz_byte(in) << (8 * i);
  return v;
}

/* A size, coded so that small ones (which get past validation) take one
 * byte, the edges where products overflow take two, and any 64-bit value is
 * reachable: a first byte below 0xe0 is the value; 0xe0-0xef: 2 bytes
 * follow, 0xf0-0xf7: 4 bytes, 0xf8-0xfe: 8 bytes (little-endian); 0xff: one
 * byte b follows, for 2^(b & 63), less 1 when b & 64. */
static inline uint64_t fuzz_size(fuzz_input *in)
{
  uint8_t b = fuzz_byte(in);
  if (b == 0xff) {
    b = fuzz_byte(in);
    return ((uint64_t)1 << (b & 63)) - ((b & 64) != 0);
  }
  return b < 0xe0   ? b
         : b < 0xf0 ? fuzz_le(in, 2)
         : b < 0xf8 ? fuzz_le(in, 4)
                    : fuzz_le(in, 8);
}

#endif /* KILN_FUZZ_H */
