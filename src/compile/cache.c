/*
 * cache.c — the on-disk cache of compiled program binaries.
 *
 * Building a program takes from tens of milliseconds to seconds; a binary an
 * earlier process saved loads in a few. The cache is a folder of files, one
 * per key. Each is written whole under a temporary name and renamed into
 * place, so processes sharing the folder (MPI ranks on one node) need no
 * lock: rename() is atomic, and a reader opens the old entry, the new one or
 * none, never half of one. Every entry is checked when loaded; one that does
 * not check out is deleted and counted, and the caller builds from source as
 * on a miss. Nothing here prints or fails the caller: the cache only ever
 * saves time.
 *
 * An entry is code the device will run, so the folder and each entry must
 * pass trust.c's checks first: a folder another user could write, or an
 * entry they own, is never used, and never deleted either (it is not
 * kiln's). Every access goes through the folder's descriptor, opened and
 * checked once, so a folder renamed into its place later changes nothing.
 *
 * An entry, <dir>/<32 hex digits of the key>.bin:
 *   offset  size  field
 *        0     8  magic "KILNBIN\n" (the newline catches text-mode mangling)
 *        8     4  format version, uint32 little-endian
 *       12     4  reserved, 0
 *       16    16  the key, whole: a file renamed from another key's name,
 *                 e.g. another device's, is refused
 *       32     8  payload length, uint64 little-endian; must equal the rest
 *                 of the file
 *       40     8  XXH3-64 of the payload, uint64 little-endian
 *       48     -  the payload: the driver's program binary
 * Temporary files are ".<32 hex digits>.tmp.XXXXXX": hidden, and never
 * ending in ".bin", so nothing mistakes one for an entry.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "base/env.h"
#include "base/error.h"
#include "base/util.h"
#include "compile/cache.h"
#include "compile/trust.h"
#include "core/runtime.h"

enum { HEADER_SIZE = 48, FORMAT_VERSION = 1 };

/* No driver's binary comes near this; a larger size means a damaged or
 * foreign file, and reading it would only waste memory. */
#define MAX_PAYLOAD ((uint64_t)1 << 30)

static const unsigned char entry_magic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '\n'};

/* Change this when the key's inputs change, so old entries stop matching. */
static const char key_tag[] = "kiln binary cache key, format 1";

/* ---- small helpers -------------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, unsigned bytes)
{
  for (unsigned i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, unsigned bytes)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void kiln__cache_key_hex(const kiln__cache_key *key, char out[33])
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < sizeof key->bytes; i++) {
    out[2 * i] = digits[key->bytes[i] >> 4];
    out[2 * i + 1] = digits[key->bytes[i] & 15];
  }
  out[32] = '\0';
}

/* strerror() may share one buffer between threads; the XSI strerror_r that
 * _POSIX_C_SOURCE selects does not. */
static const char *error_text(int err, char *buf, size_t size)
{
  if (strerror_r(err, buf, size) != 0)
    snprintf(buf, size, "error %d", err);
  return buf;
}

/* "<hex><suffix>": an entry's name in the folder. */
static void entry_name(const kiln__cache_key *key, const char *suffix, char *out,
                       size_t size)
{
  char hex[33];
  kiln__cache_key_hex(key, hex);
  snprintf(out, size, "%s%s", hex, suffix);
}

/* Reads exactly n bytes: 0, or -1 on an error or an early end of file. */
static int read_full(int fd, unsigned char *buf, size_t n)
{
  while (n > 0) {
    ssize_t got = read(fd, buf, n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return -1;
    buf += got;
    n -= (size_t)got;
  }
  return 0;
}

/* Writes exactly n bytes through short writes and signals: 0, or -1. */
static int write_full(int fd, const unsigned char *buf, size_t n)
{
  while (n > 0) {
    ssize_t put = write(fd, buf, n);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return -1;
    buf += put;
    n -= (size_t)put;
  }
  return 0;
}

/* ---- the key --------------------------------------------------------------- */

kiln__cache_key kiln__cache_key_of(const char *source, size_t source_len,
                                   const char *options, const kiln_device_info *dev)
{
  const char *fields[] = {
    key_tag,
    source,
    options,
    dev ? dev->platform_name : NULL,
    dev ? dev->platform_version : NULL,
    dev ? dev->name : NULL,
    dev ? dev->driver_version : NULL,
    kiln_version(),
  };
  enum { SOURCE_FIELD = 1, NFIELDS = sizeof fields / sizeof fields[0] };
  enum { RECORD = 8 + 16 };
  /* Each field is hashed alone and recorded as (length, XXH3-128) in a
   * fixed slot; the key is the XXH3-128 of those records. Fixed slots keep
   * fields from running into each other ("ab"+"c" is not "a"+"bc"), and
   * one-shot calls need no XXH3_state_t, whose layout xxHash promises only
   * to static linkers, nor an allocation that could fail here. */
  unsigned char records[NFIELDS * RECORD];
  for (size_t i = 0; i < NFIELDS; i++) {
    const char *f = fields[i] ? fields[i] : "";
    /* The source comes with its length; the other fields are strings. */
    size_t len = i == SOURCE_FIELD ? (source ? source_len : 0) : strlen(f);
    XXH128_canonical_t h;
    XXH128_canonicalFromHash(&h, XXH3_128bits(f, len));
    put_le(records + i * RECORD, (uint64_t)len, 8);
    memcpy(records + i * RECORD + 8, h.digest, 16);
  }
  XXH128_canonical_t digest;
  XXH128_canonicalFromHash(&digest, XXH3_128bits(records, sizeof records));
  kiln__cache_key key;
  memcpy(key.bytes, digest.digest, sizeof key.bytes);
  return key;
}

/* ---- opening the folder ---------------------------------------------------- */

/* The folder by precedence, malloc'd, without trailing slashes; NULL with a
 * note when there is none or memory ran out. XDG_CACHE_HOME counts only when
 * absolute: the XDG spec says to ignore a relative one. */
static char *resolve_dir(const kiln__config *cfg, kiln__str *notes)
{
  kiln__str s = {0};
  const char *xdg = cfg->xdg_cache_home, *home = cfg->home;
  if (cfg->cache_dir && *cfg->cache_dir)
    kiln__str_appendf(&s, "%s", cfg->cache_dir);
  else if (xdg && xdg[0] == '/')
    kiln__str_appendf(&s, "%s/kiln", xdg);
  else if (home && *home)
    kiln__str_appendf(&s, "%s/.cache/kiln", home);
  else
    kiln__str_appendf(notes, "kernel cache off: no folder for it: "
                             "KILN_CACHE_DIR, XDG_CACHE_HOME and HOME are unset\n");
  if (s.failed || !s.data) {
    kiln__str_free(&s);
    return NULL;
  }
  while (s.len > 1 && s.data[s.len - 1] == '/')
    s.data[--s.len] = '\0';
  return s.data;
}

static int is_dir(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p, with 0700 for what it creates: the cache holds code that will
 * run, so other users should not read or plant entries. Returns 0, or an
 * errno value with `path` cut at the component that failed. */
static int make_dirs(char *path)
{
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char saved = *p;
    *p = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
      int err = errno; /* is_dir() may change errno */
      if (!is_dir(path))
        return err;
    }
    if (saved == '\0')
      return 0;
    *p = saved;
  }
}

static void open_dir(kiln__cache *c, const kiln__config *cfg, kiln__str *notes)
{
  char *dir = resolve_dir(cfg, notes);
  if (!dir)
    return;
  char why[128];
  kiln__str problem = {0};
  int err = make_dirs(dir);
  if (err) {
    kiln__str_appendf(notes, "kernel cache off: cannot create %s: %s\n", dir,
                      error_text(err, why, sizeof why));
  } else if (!is_dir(dir)) {
    kiln__str_appendf(notes, "kernel cache off: %s is not a folder\n", dir);
  } else if (c->trust.shared = cfg->cache_shared,
             (c->dirfd = kiln__trust_open_dir(dir, &c->trust, &problem)) < 0) {
    kiln__str_appendf(notes, "kernel cache off: %s\n", kiln__str_get(&problem));
  } else if (access(dir, W_OK | X_OK) != 0) {
    kiln__str_appendf(notes, "kernel cache off: cannot write to %s: %s\n", dir,
                      error_text(errno, why, sizeof why));
    close(c->dirfd);
    c->dirfd = -1;
  } else {
    c->dir = dir;
    dir = NULL;
  }
  kiln__str_free(&problem);
  free(dir);
}

void kiln__cache_open(kiln__cache *c, const kiln__config *cfg, kiln__str *notes)
{
  memset(c, 0, sizeof *c);
  c->dirfd = -1;
  if (!cfg || cfg->no_cache)
    return;
  kiln__str ignored = {0}; /* a caller without notes still gets the checks */
  open_dir(c, cfg, notes ? notes : &ignored);
  kiln__str_free(&ignored);
}

void kiln__cache_close(kiln__cache *c)
{
  if (!c)
    return;
  /* By dir, not dirfd: a runtime that failed before opening its cache has
   * a zeroed one, whose dirfd 0 is someone else's descriptor (stdin). */
  if (c->dir)
    close(c->dirfd);
  free(c->dir);
  memset(c, 0, sizeof *c);
  c->dirfd = -1;
}

/* Counts a file left alone because it is not to be trusted, and keeps the
 * reason for kiln_cache_stats(). */
static void note_untrusted(kiln__cache *c, const kiln__str *why)
{
  c->untrusted++;
  snprintf(c->untrusted_note, sizeof c->untrusted_note, "%s", kiln__str_get(why));
}

/* ---- loading ---------------------------------------------------------------- */

enum entry_check { ENTRY_OK, ENTRY_BAD, ENTRY_NO_MEMORY };

/* Reads and checks the entry open on fd, whose fstat is *st. Reads are
 * bounded by the size fstat gave, which must agree with the header. */
static enum entry_check read_entry(int fd, const struct stat *st,
                                   const kiln__cache_key *key, unsigned char **payload,
                                   size_t *size)
{
  unsigned char h[HEADER_SIZE];
  if (!S_ISREG(st->st_mode) || st->st_size < HEADER_SIZE ||
      (uint64_t)st->st_size - HEADER_SIZE > MAX_PAYLOAD ||
      read_full(fd, h, sizeof h) != 0)
    return ENTRY_BAD;
  uint64_t len = get_le(h + 32, 8);
  if (memcmp(h, entry_magic, sizeof entry_magic) != 0 ||
      get_le(h + 8, 4) != FORMAT_VERSION || get_le(h + 12, 4) != 0 ||
      memcmp(h + 16, key->bytes, sizeof key->bytes) != 0 ||
      len != (uint64_t)st->st_size - HEADER_SIZE || len == 0)
    return ENTRY_BAD;
  unsigned char *buf = malloc((size_t)len);
  if (!buf)
    return ENTRY_NO_MEMORY;
  if (read_full(fd, buf, (size_t)len) != 0 ||
      XXH3_64bits(buf, (size_t)len) != get_le(h + 40, 8)) {
    free(buf);
    return ENTRY_BAD;
  }
  *payload = buf;
  *size = (size_t)len;
  return ENTRY_OK;
}

/* Deletes a bad entry of kiln's, but only if the name still holds the file
 * that was read: a concurrent writer may have renamed a good one over it
 * since. */
static void discard(kiln__cache *c, const char *name, const struct stat *seen)
{
  struct stat now;
  c->rejected++;
  if (fstatat(c->dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(now.st_mode) &&
      now.st_dev == seen->st_dev && now.st_ino == seen->st_ino)
    unlinkat(c->dirfd, name, 0);
}

int kiln__cache_load(kiln__cache *c, const kiln__cache_key *key, unsigned char **data,
                     size_t *size)
{
  if (data)
    *data = NULL;
  if (size)
    *size = 0;
  if (!c || !c->dir || !key || !data || !size)
    return -1;
  char name[48];
  entry_name(key, ".bin", name, sizeof name);
  int fd;
  struct stat st;
  kiln__str why = {0};
  enum kiln__trust_result trust =
    kiln__trust_open_file(&c->trust, c->dirfd, name, &fd, &st, &why);
  if (trust == KILN__TRUST_REFUSED)
    note_untrusted(c, &why);
  kiln__str_free(&why);
  if (trust != KILN__TRUST_OK) {
    c->misses++; /* absent mostly; an unreadable or untrusted one is no better */
    return -1;
  }
  enum entry_check check = read_entry(fd, &st, key, data, size);
  close(fd);
  if (check == ENTRY_OK)
    c->hits++;
  else if (check == ENTRY_NO_MEMORY)
    c->misses++; /* the entry may be fine; keep it for a process with room */
  else
    discard(c, name, &st);
  return check == ENTRY_OK ? 0 : -1;
}

/* ---- storing and removing ----------------------------------------------- */

/* Writes header and payload to fd and closes it: 0, or -1. No fsync: after a
 * crash the renamed entry may be empty or short on some file systems, but
 * load checks the length and checksum and discards it, so durability would
 * buy nothing a rebuild does not, at a disk flush per program. close() is
 * checked because network file systems report write errors there. */
static int write_entry(int fd, const kiln__cache_key *key, const unsigned char *data,
                       size_t size)
{
  unsigned char h[HEADER_SIZE] = {0};
  memcpy(h, entry_magic, sizeof entry_magic);
  put_le(h + 8, FORMAT_VERSION, 4);
  memcpy(h + 16, key->bytes, sizeof key->bytes);
  put_le(h + 32, (uint64_t)size, 8);
  put_le(h + 40, XXH3_64bits(data, size), 8);
  int ok = write_full(fd, h, sizeof h) == 0 && write_full(fd, data, size) == 0;
  if (close(fd) != 0)
    ok = 0;
  return ok ? 0 : -1;
}

/* Creates ".<final>.tmp.<12 hex digits>" in the folder, exclusively, as
 * mkstemp() would but relative to the checked folder's descriptor. Entries
 * of a team folder are readable by the team; chmod after the open, as the
 * umask may have taken bits away. Returns the descriptor, or -1. */
static int create_temp(const kiln__cache *c, const char *final, char *name, size_t size)
{
  static atomic_uint_fast64_t counter;
  const mode_t mode = c->trust.shared ? 0640 : 0600;
  for (int attempt = 0; attempt < 64; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed[4] = {(uint64_t)getpid(), atomic_fetch_add(&counter, 1),
                        (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec};
    uint64_t r = XXH3_64bits(seed, sizeof seed);
    snprintf(name, size, ".%s.tmp.%012llx", final,
             (unsigned long long)(r & 0xffffffffffffull));
    int fd =
      openat(c->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0 && fchmod(fd, mode) != 0) {
      close(fd);
      unlinkat(c->dirfd, name, 0);
      return -1;
    }
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

/* Puts a new file in the folder as `final`: written whole by `fill` under a
 * temporary name (fill closes the descriptor; 0 or -1), then renamed into
 * place, so a reader sees the old file, the new one or none, never half of
 * one. A file kiln does not trust is not kiln's to replace: -1. */
static int replace_file(kiln__cache *c, const char *final,
                        int (*fill)(int fd, const void *arg), const void *arg)
{
  char tmp[128];
  struct stat st;
  kiln__str why = {0};
  int foreign = fstatat(c->dirfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                kiln__trust_check_file(&c->trust, final, &st, &why) != 0;
  kiln__str_free(&why);
  /* In the same folder, so rename() never crosses a file system. */
  int fd = foreign ? -1 : create_temp(c, final, tmp, sizeof tmp);
  if (fd < 0)
    return -1;
  if (fill(fd, arg) != 0 || renameat(c->dirfd, tmp, c->dirfd, final) != 0) {
    unlinkat(c->dirfd, tmp, 0);
    return -1;
  }
  return 0;
}

struct entry_fill {
  const kiln__cache_key *key;
  const unsigned char *data;
  size_t size;
};

static int fill_entry(int fd, const void *arg)
{
  const struct entry_fill *e = arg;
  return write_entry(fd, e->key, e->data, e->size);
}

int kiln__cache_store(kiln__cache *c, const kiln__cache_key *key,
                      const unsigned char *data, size_t size)
{
  /* An empty binary is no binary: no driver returns one, and load refuses
   * one, so it is not written. */
  if (!c || !c->dir || !key || !data || size == 0 || (uint64_t)size > MAX_PAYLOAD)
    return -1;
  char final[48];
  entry_name(key, ".bin", final, sizeof final);
  struct entry_fill e = {key, data, size};
  if (replace_file(c, final, fill_entry, &e) != 0)
    return -1;
  c->stores++;
  return 0;
}

/* ---- other files of the folder: tuning records ------------------------- */

struct text_fill {
  const char *text;
  size_t len;
};

static int fill_text(int fd, const void *arg)
{
  const struct text_fill *t = arg;
  int ok = write_full(fd, (const unsigned char *)t->text, t->len) == 0;
  if (close(fd) != 0)
    ok = 0;
  return ok ? 0 : -1;
}

int kiln__cache_put_file(kiln__cache *c, const char *name, const char *text, size_t len)
{
  if (!c || !c->dir)
    return -1;
  struct text_fill t = {text, len};
  return replace_file(c, name, fill_text, &t);
}

int kiln__cache_get_file(kiln__cache *c, const char *name, size_t max, char **text,
                         size_t *len, kiln__str *why)
{
  *text = NULL;
  *len = 0;
  if (!c || !c->dir)
    return 1;
  int fd;
  struct stat st;
  enum kiln__trust_result r =
    kiln__trust_open_file(&c->trust, c->dirfd, name, &fd, &st, why);
  if (r != KILN__TRUST_OK)
    return r == KILN__TRUST_ABSENT ? 1 : -1;
  char *buf = NULL;
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max)
    kiln__str_appendf(why, "%s is %lld bytes, more than a record's %zu", name,
                      (long long)st.st_size, max);
  else if (!(buf = malloc((size_t)st.st_size + 1)))
    kiln__str_appendf(why, "out of host memory reading %s", name);
  else if (read_full(fd, (unsigned char *)buf, (size_t)st.st_size) != 0) {
    kiln__str_appendf(why, "cannot read %s: %s", name, strerror(errno));
    free(buf);
    buf = NULL;
  }
  close(fd);
  if (!buf)
    return -1;
  buf[st.st_size] = '\0';
  *text = buf;
  *len = (size_t)st.st_size;
  return 0;
}

int kiln__cache_delete_file(kiln__cache *c, const char *name, kiln__str *why)
{
  struct stat st;
  if (!c || !c->dir || fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return 0; /* nothing to delete */
  if (kiln__trust_check_file(&c->trust, name, &st, why) != 0)
    return -1;
  if (unlinkat(c->dirfd, name, 0) != 0 && errno != ENOENT) {
    kiln__str_appendf(why, "cannot delete %s/%s: %s", c->dir, name, strerror(errno));
    return -1;
  }
  return 0;
}

void kiln__cache_lock_folder(kiln__cache *c, int lock)
{
  if (!c || !c->dir || c->dirfd < 0)
    return;
  /* EINTR aside, flock on an open folder fails only for want of kernel
   * memory; the writer then goes unserialised, as without this lock: one
   * process's new choices may be lost, and measured again later. */
  while (flock(c->dirfd, lock ? LOCK_EX : LOCK_UN) != 0 && errno == EINTR)
    ;
}

/* Deletes an entry that was loaded (so trusted) but that the driver
 * refused. */
void kiln__cache_remove(kiln__cache *c, const kiln__cache_key *key)
{
  if (!c || !c->dir || !key)
    return;
  char name[48];
  entry_name(key, ".bin", name, sizeof name);
  unlinkat(c->dirfd, name, 0);
}

/* ---- the folder as a whole: `kiln cache` --------------------------------- */

/* "<32 hex digits>.bin": an entry. */
static int is_entry_name(const char *name)
{
  size_t i = 0;
  for (; i < 32; i++)
    if (!strchr("0123456789abcdef", name[i]) || name[i] == '\0')
      return 0;
  return strcmp(name + 32, ".bin") == 0;
}

/* ".<hex>.tmp.XXXXXX": a temporary that a writer never renamed. */
static int is_temp_name(const char *name)
{
  return name[0] == '.' && strstr(name, ".tmp.") != NULL;
}

/* Walks the runtime's cache folder; for each entry (temporaries too when
 * `temps`) that kiln trusts, calls visit with its name and stat; a visit
 * that fails (-1, with errno) stops the walk. Entries kiln does not trust
 * are counted and left alone. Returns KILN_OK or KILN_ERR_IO. */
static kiln_status walk(kiln_runtime *rt, const char *fn, int temps,
                        int (*visit)(int dirfd, const char *name, const struct stat *st,
                                     void *arg),
                        void *arg)
{
  kiln__cache *c = rt->cache;
  if (!c->dir)
    return KILN_OK;
  int fd = dup(c->dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    kiln_status st = kiln__fail(rt, KILN_ERR_IO,
                                "%s: cannot read the cache folder "
                                "%s: %s",
                                fn, c->dir, strerror(errno));
    if (fd >= 0)
      close(fd);
    return st;
  }
  rewinddir(d); /* the offset is shared with c->dirfd: an earlier walk's end */
  kiln_status st = KILN_OK;
  struct dirent *e;
  while (st == KILN_OK && (e = readdir(d)) != NULL) {
    int entry = is_entry_name(e->d_name);
    struct stat sb;
    if ((!entry && !(temps && is_temp_name(e->d_name))) ||
        fstatat(c->dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    kiln__str why = {0};
    if (kiln__trust_check_file(&c->trust, e->d_name, &sb, &why) != 0) {
      if (entry) {
        pthread_mutex_lock(&rt->lock);
        note_untrusted(c, &why);
        pthread_mutex_unlock(&rt->lock);
      }
    } else if (visit(c->dirfd, e->d_name, &sb, arg) != 0) {
      st = kiln__fail(rt, KILN_ERR_IO, "%s: cannot delete %s/%s: %s", fn, c->dir,
                      e->d_name, strerror(errno));
    }
    kiln__str_free(&why);
  }
  closedir(d);
  return st;
}

static int add_up(int dirfd, const char *name, const struct stat *st, void *arg)
{
  (void)dirfd;
  (void)name;
  uint64_t *sums = arg;
  sums[0]++;
  sums[1] += (uint64_t)st->st_size;
  return 0;
}

static int delete_one(int dirfd, const char *name, const struct stat *st, void *arg)
{
  (void)st;
  if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
    return -1;
  ++*(uint64_t *)arg;
  return 0;
}

KILN_API kiln_status kiln_cache_contents(kiln_runtime *rt, uint64_t *entries,
                                         uint64_t *bytes)
{
  if (!rt || !entries || !bytes)
    return kiln__fail(rt, KILN_ERR_INVALID_ARGUMENT, "kiln_cache_contents: %s is NULL",
                      !rt ? "rt" : "a result");
  uint64_t sums[2] = {0, 0};
  kiln_status st = walk(rt, "kiln_cache_contents", 0, add_up, sums);
  *entries = sums[0];
  *bytes = sums[1];
  return st;
}

KILN_API kiln_status kiln_cache_clear(kiln_runtime *rt, uint64_t *removed)
{
  if (!rt)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT, "kiln_cache_clear: rt is NULL");
  uint64_t n = 0;
  kiln_status st = walk(rt, "kiln_cache_clear", 1, delete_one, &n);
  if (removed)
    *removed = n;
  return st;
}
