/*
 * cache.h — the on-disk cache of program binaries and the files beside them
 * (cache.c), and whom a folder's files may come from (trust.c).
 */
#ifndef KILN_COMPILE_CACHE_H
#define KILN_COMPILE_CACHE_H

#include "base/env.h"
#include "base/util.h"
#include <sys/types.h>

/* ---- the on-disk binary cache (cache.c) --------------------------------- */

/* An entry's key: XXH3-128 over every input that can change the binary. */
typedef struct kiln__cache_key {
  uint8_t bytes[16];
} kiln__cache_key;

/* Whom a folder's files may come from (trust.c). */
typedef struct kiln__trust {
  int shared;  /* in: a team folder is acceptable (KILN_CACHE_SHARED);
                  out: the folder is one, so its group's members are trusted */
  gid_t group; /* out: the folder's group */
} kiln__trust;

typedef struct kiln__cache {
  char *dir; /* NULL when the cache is off or unusable */
  int dirfd; /* the folder, opened once it passed its checks; -1 when off */
  kiln__trust trust;
  /* counters, for tests and `kiln cache`; guarded by the runtime's lock */
  uint64_t hits, misses, stores, rejected, untrusted;
  char untrusted_note[256]; /* why the last untrusted entry was left alone */
  const char *binaries_off; /* kiln__driver_cache(): no binaries kept, or NULL */
} kiln__cache;

/* Resolves the folder (cfg->cache_dir, else $XDG_CACHE_HOME/kiln, else
 * $HOME/.cache/kiln), creating it as needed, and checks that no one but the
 * user (or, with cfg->cache_shared, the folder's group) can plant code in
 * it (trust.c). A folder that cannot be made, written or trusted leaves the
 * cache off, with a note saying why and how to fix it; never an error. */
void kiln__cache_open(kiln__cache *c, const kiln__config *cfg, kiln__str *notes);
/* Closes what kiln__cache_open() opened; a zeroed kiln__cache (a runtime
 * that failed before opening its cache) is a closed one. */
void kiln__cache_close(kiln__cache *c);

/* The key of a program built from `source` with `options` for `dev`; covers
 * the platform's name and version, the device's name, the driver's version
 * and kiln's version too. */
kiln__cache_key kiln__cache_key_of(const char *source, size_t source_len,
                                   const char *options, const kiln_device_info *dev);

/* Loads the entry of `key` into a malloc'd buffer. Returns 0 on a hit; -1 on
 * a miss, or when the entry is truncated, corrupt, empty or another key's,
 * in which case it is deleted, or when it is not to be trusted (a link, not
 * a regular file, another user's, writable by others), in which case it is
 * counted in `untrusted` and left alone. Never crashes on any file content. */
int kiln__cache_load(kiln__cache *c, const kiln__cache_key *key, unsigned char **data,
                     size_t *size);

/* Stores an entry atomically: a temporary file in the same folder, then
 * rename(), so a concurrent reader sees the whole entry or none. Owner-only
 * (0600), or group-readable (0640) in a team folder. Never replaces a file
 * kiln does not trust. Returns 0, or -1 when it could not (the cache stays
 * usable). */
int kiln__cache_store(kiln__cache *c, const kiln__cache_key *key,
                      const unsigned char *data, size_t size);

/* The key as 32 lower-case hex digits, as entries are named. */
void kiln__cache_key_hex(const kiln__cache_key *key, char out[33]);

/* Deletes the entry, e.g. one the driver refused to build. */
void kiln__cache_remove(kiln__cache *c, const kiln__cache_key *key);

/* Other files of the folder (tuning records), by name, through the same
 * checks as entries. put: writes text as `name`, atomically; 0, or -1 (no
 * folder, no room, or a file there kiln does not trust). get: reads a
 * trusted file of at most max bytes into *text (malloc'd, NUL-terminated);
 * 0, 1 when there is none (or no folder), -1 with the reason in why.
 * delete: 0 when it is gone (or never was), -1 with why. */
int kiln__cache_put_file(kiln__cache *c, const char *name, const char *text, size_t len);
int kiln__cache_get_file(kiln__cache *c, const char *name, size_t max, char **text,
                         size_t *len, kiln__str *why);
int kiln__cache_delete_file(kiln__cache *c, const char *name, kiln__str *why);

/* Takes (lock 1) or releases (0) the folder's lock, an flock() on its
 * descriptor, which serialises a read-modify-write of its files (a tuning
 * record's choices) between processes. Nothing when the cache is off. */
void kiln__cache_lock_folder(kiln__cache *c, int lock);

#endif /* KILN_COMPILE_CACHE_H */
