/*
 * fuzz-cache.c — the binary cache's entry reader (kiln__cache_load) on an
 * entry file whose bytes are the input, in a cache folder of its own under
 * $TMPDIR (never the user's cache), removed at exit.
 *
 * Each input is loaded three ways: as it is; with its XXH3-64 field set to
 * the checksum of the bytes after the header, so that mutations reach past
 * the checksum; and with the length field set to match the file as well.
 * Then it is stored as a payload (kiln__cache_store) and loaded back.
 *
 * Properties, beyond ASan and UBSan finding nothing:
 *  - kiln__cache_load() accepts exactly the entries an independent reading
 *    of the format (cache.c's header comment) accepts, and returns the
 *    payload's bytes;
 *  - an entry it refuses is deleted and counted as rejected; one it accepts
 *    stays and counts as a hit;
 *  - what kiln__cache_store() writes, kiln__cache_load() returns.
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "base/env.h"
#include "base/util.h"
#include "compile/cache.h"

#include "fuzz.h"

enum { HEADER = 48 };

static char folder[4096], entry[4200];
static kiln__cache cache;
static kiln__cache_key key;

static uint64_t le(const uint8_t *p, unsigned bytes)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void put_le64(uint8_t *p, uint64_t v)
{
  for (unsigned i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void remove_folder(void)
{
  kiln__cache_close(&cache);
  DIR *d = opendir(folder);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char path[4400];
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name) < (int)sizeof path)
      unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(folder);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(folder, sizeof folder, "%s/kiln-fuzz-cache-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  FUZZ_CHECK(mkdtemp(folder) != NULL);
  atexit(remove_folder);
  kiln__config cfg = {.cache_dir = folder};
  kiln__str notes = {0};
  kiln__cache_open(&cache, &cfg, &notes);
  FUZZ_CHECK(cache.dir != NULL && notes.len == 0);
  kiln__str_free(&notes);
  /* A fixed key, so the seed entries (tests/fuzz/make-corpus.py) keep
   * matching it whatever kiln's version, which kiln__cache_key_of() hashes. */
  memcpy(key.bytes, "kiln fuzz key 16", sizeof key.bytes);
  /* The entry's name, spelt out here rather than taken from cache.c. */
  int at = snprintf(entry, sizeof entry, "%s/", folder);
  for (size_t i = 0; i < sizeof key.bytes; i++)
    at += snprintf(entry + at, sizeof entry - (size_t)at, "%02x", key.bytes[i]);
  snprintf(entry + at, sizeof entry - (size_t)at, ".bin");
  return 0;
}

/* Whether the format accepts the entry. */
static int valid_entry(const uint8_t *b, size_t n)
{
  if (n <= HEADER || n - HEADER > ((size_t)1 << 30))
    return 0;
  return memcmp(b, "KILNBIN\n", 8) == 0 && le(b + 8, 4) == 1 && le(b + 12, 4) == 0 &&
         memcmp(b + 16, key.bytes, 16) == 0 && le(b + 32, 8) == n - HEADER &&
         XXH3_64bits(b + HEADER, n - HEADER) == le(b + 40, 8);
}

static void write_entry_file(const uint8_t *b, size_t n)
{
  int fd = open(entry, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0);
  for (size_t done = 0; done < n;) {
    ssize_t w = write(fd, b + done, n - done);
    FUZZ_CHECK(w > 0);
    done += (size_t)w;
  }
  FUZZ_CHECK(close(fd) == 0);
}

static void load_and_check(const uint8_t *b, size_t n)
{
  write_entry_file(b, n);
  uint64_t hits = cache.hits, rejected = cache.rejected;
  unsigned char *payload = NULL;
  size_t size = 1;
  int rc = kiln__cache_load(&cache, &key, &payload, &size);
  if (valid_entry(b, n)) {
    FUZZ_CHECK(rc == 0 && cache.hits == hits + 1);
    FUZZ_CHECK(size == n - HEADER && memcmp(payload, b + HEADER, size) == 0);
    FUZZ_CHECK(access(entry, F_OK) == 0);
  } else {
    FUZZ_CHECK(rc == -1 && payload == NULL && size == 0);
    FUZZ_CHECK(cache.rejected == rejected + 1);
    FUZZ_CHECK(access(entry, F_OK) != 0); /* deleted */
  }
  free(payload);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  load_and_check(data, size);
  if (size >= HEADER) {
    uint8_t *fixed = malloc(size);
    FUZZ_CHECK(fixed != NULL);
    memcpy(fixed, data, size);
    put_le64(fixed + 40, XXH3_64bits(fixed + HEADER, size - HEADER));
    load_and_check(fixed, size);
    put_le64(fixed + 32, size - HEADER);
    load_and_check(fixed, size);
    free(fixed);
  }

  /* The input as a payload, through the writer and back. */
  unsigned char *payload = NULL;
  size_t got = 0;
  int stored = kiln__cache_store(&cache, &key, data, size);
  FUZZ_CHECK(stored == (size ? 0 : -1));
  if (stored == 0) {
    FUZZ_CHECK(kiln__cache_load(&cache, &key, &payload, &got) == 0);
    FUZZ_CHECK(got == size && memcmp(payload, data, size) == 0);
  }
  free(payload);
  unlink(entry);
  return 0;
}
