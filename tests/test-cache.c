/*
 * test-cache.c — the on-disk binary cache (src/compile/cache.c), through its
 * internal interface: entries round-trip, keys cover every input, every
 * kind of damaged or foreign entry is a miss that deletes it, what is not
 * a file is left alone, an unusable folder turns the cache off, and two processes writing one entry at once
 * never let a reader see a mix. No device needed: a hand-filled
 * kiln_device_info stands in for one. Each test gets a fresh folder under
 * /tmp, removed afterwards.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#include "base/env.h"
#include "base/util.h"
#include "compile/cache.h"

enum { HEADER = 48 }; /* the entry header's size, as cache.c lays it out */

typedef struct fixture {
  char root[64]; /* the test's own folder */
  char dir[128]; /* root/cache, where `cache` lives */
  kiln__cache cache;
  kiln__str notes;
  kiln_device_info dev;
  kiln__cache_key key; /* of `source` for `dev` */
} fixture;

static const char source[] = "kernel void k(global float *x) { x[0] = 1; }";
static const char options[] = "-cl-std=CL1.2 -DKILN_FP64=1";

/* ---- helpers ------------------------------------------------------------- */

static void fill_device(kiln_device_info *d)
{
  memset(d, 0, sizeof *d);
  d->platform_name = "Portable Computing Language";
  d->platform_version = "OpenCL 3.0 PoCL 5.0+debian";
  d->name = "cpu-haswell-AMD EPYC 7B13";
  d->driver_version = "5.0+debian";
}

static void fill_random(unsigned char *buf, size_t n, uint64_t seed)
{
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++)
    buf[i] = (unsigned char)(kiln_test_random(&s) >> 21);
}

static void entry_name(const fixture *fx, const kiln__cache_key *key, char *out,
                       size_t size)
{
  char hex[33];
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", key->bytes[i]);
  snprintf(out, size, "%s/%s.bin", fx->dir, hex);
}

static int file_exists(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0;
}

static unsigned char *read_whole(const char *path, size_t *size)
{
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return buf;
}

static void write_whole(const char *path, const unsigned char *buf, size_t n)
{
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* How many names the folder holds, and how many of them end in ".bin". */
static int count_files(const char *dir, int *entries)
{
  int n = 0;
  *entries = 0;
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    size_t len = strlen(e->d_name);
    n++;
    if (len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0)
      (*entries)++;
  }
  closedir(d);
  return n;
}

/* Opens a cache on `dir` as kiln_options.cache_dir would name it. */
static void open_at(kiln__cache *c, const char *dir, kiln__str *notes)
{
  kiln__config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.cache_dir = dir;
  kiln__cache_open(c, &cfg, notes);
}

static int setup(void **state)
{
  fixture *fx = calloc(1, sizeof *fx);
  if (!fx || kiln_test_cache_folders("cache", fx->root, sizeof fx->root, fx->dir,
                                     sizeof fx->dir)) {
    free(fx);
    return -1;
  }
  fill_device(&fx->dev);
  fx->key = kiln__cache_key_of(source, sizeof source - 1, options, &fx->dev);
  open_at(&fx->cache, fx->dir, &fx->notes);
  *state = fx;
  return fx->cache.dir ? 0 : -1;
}

static int teardown(void **state)
{
  fixture *fx = *state;
  kiln__cache_close(&fx->cache);
  kiln__str_free(&fx->notes);
  kiln_test_remove_tree(fx->root);
  free(fx);
  return 0;
}

/* ---- round trips and keys -------------------------------------------------- */

static void test_cache_round_trip(void **state)
{
  fixture *fx = *state;
  assert_string_equal(fx->cache.dir, fx->dir);
  assert_true(fx->cache.hits == 0 && fx->cache.misses == 0 && fx->cache.stores == 0 &&
              fx->cache.rejected == 0);
  unsigned char *out = (unsigned char *)state;
  size_t out_size = 99;
  assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, &out, &out_size), -1);
  assert_null(out);
  assert_int_equal(out_size, 0);
  assert_int_equal(fx->cache.misses, 1);

  static const size_t sizes[] = {1, 4097, 1 << 20};
  char path[256];
  entry_name(fx, &fx->key, path, sizeof path);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *in = malloc(sizes[i]);
    assert_non_null(in);
    fill_random(in, sizes[i], i + 1);
    assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, in, sizes[i]), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, HEADER + sizes[i]);
    assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, &out, &out_size), 0);
    assert_int_equal(out_size, sizes[i]);
    assert_memory_equal(out, in, sizes[i]);
    free(out);
    free(in);
  }
  assert_int_equal(fx->cache.stores, 3);
  assert_int_equal(fx->cache.hits, 3);
  assert_int_equal(fx->cache.rejected, 0);
  int entries;
  assert_int_equal(count_files(fx->dir, &entries), 1);

  kiln__cache_remove(&fx->cache, &fx->key);
  assert_false(file_exists(path));
  assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, &out, &out_size), -1);
  assert_int_equal(fx->cache.misses, 2);
}

/* No driver returns an empty binary, and load would refuse one: store
 * writes nothing for it. */
static void test_cache_empty_payload_refused(void **state)
{
  fixture *fx = *state;
  unsigned char byte = 7;
  assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, &byte, 0), -1);
  assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, NULL, 1), -1);
  assert_int_equal(kiln__cache_store(&fx->cache, NULL, &byte, 1), -1);
  assert_int_equal(kiln__cache_store(NULL, &fx->key, &byte, 1), -1);
  int entries;
  assert_int_equal(count_files(fx->dir, &entries), 0);
  assert_int_equal(fx->cache.stores, 0);
  unsigned char *out;
  size_t size;
  assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, NULL, &size), -1);
  assert_int_equal(kiln__cache_load(NULL, &fx->key, &out, &size), -1);
  kiln__cache_remove(NULL, &fx->key);
  kiln__cache_close(NULL);
}

static void test_cache_key_inputs(void **state)
{
  fixture *fx = *state;
  kiln_device_info d = fx->dev;
  /* Equal inputs in other buffers give the same key. */
  char src_copy[sizeof source], opt_copy[sizeof options], name_copy[64];
  memcpy(src_copy, source, sizeof source);
  memcpy(opt_copy, options, sizeof options);
  snprintf(name_copy, sizeof name_copy, "%s", fx->dev.name);
  d.name = name_copy;
  kiln__cache_key same = kiln__cache_key_of(src_copy, sizeof source - 1, opt_copy, &d);
  assert_memory_equal(same.bytes, fx->key.bytes, 16);

  /* Each one input changed, and two that only move a boundary. */
  kiln__cache_key k[11];
  size_t n = 0;
  src_copy[5] ^= 1;
  k[n++] = kiln__cache_key_of(src_copy, sizeof source - 1, options, &fx->dev);
  k[n++] = kiln__cache_key_of(source, sizeof source - 2, options, &fx->dev);
  k[n++] = kiln__cache_key_of(source, sizeof source - 1, "-cl-std=CL1.2", &fx->dev);
  k[n++] = kiln__cache_key_of(source, sizeof source - 1, NULL, &fx->dev);
  const char **fields[] = {&d.platform_name, &d.platform_version, &d.name,
                           &d.driver_version};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    d = fx->dev;
    *fields[i] = "other";
    k[n++] = kiln__cache_key_of(source, sizeof source - 1, options, &d);
  }
  d = fx->dev;
  d.driver_version = "5.1+debian"; /* a driver update */
  k[n++] = kiln__cache_key_of(source, sizeof source - 1, options, &d);
  k[n++] = kiln__cache_key_of("ab", 2, "c", &fx->dev);
  k[n++] = kiln__cache_key_of("a", 1, "bc", &fx->dev);
  assert_int_equal(n, sizeof k / sizeof k[0]);
  for (size_t i = 0; i < n; i++) {
    if (memcmp(k[i].bytes, fx->key.bytes, 16) == 0)
      fail_msg("changed input %zu gives the same key", i);
    for (size_t j = 0; j < i; j++)
      if (memcmp(k[i].bytes, k[j].bytes, 16) == 0)
        fail_msg("inputs %zu and %zu give the same key", j, i);
  }
  /* NULL options and "" are the same build; a NULL device is not a crash. */
  kiln__cache_key a = kiln__cache_key_of(source, sizeof source - 1, NULL, &fx->dev);
  kiln__cache_key b = kiln__cache_key_of(source, sizeof source - 1, "", &fx->dev);
  assert_memory_equal(a.bytes, b.bytes, 16);
  (void)kiln__cache_key_of(NULL, 0, NULL, NULL);
}

/* ---- damaged and foreign entries ----------------------------------------- */

/* Loads fx->key, which must fail, delete the entry and count one more
 * rejection; then the cache must still store and load. */
static void expect_rejected(fixture *fx, const char *what)
{
  char path[256];
  entry_name(fx, &fx->key, path, sizeof path);
  uint64_t before = fx->cache.rejected;
  unsigned char *out = NULL;
  size_t size = 0;
  if (kiln__cache_load(&fx->cache, &fx->key, &out, &size) != -1)
    fail_msg("%s: the entry was loaded", what);
  assert_null(out);
  if (fx->cache.rejected != before + 1)
    fail_msg("%s: not counted as rejected", what);
  if (file_exists(path))
    fail_msg("%s: the entry was not deleted", what);
}

static void test_cache_corrupt_entries(void **state)
{
  fixture *fx = *state;
  enum { PAYLOAD = 4096, WHOLE = HEADER + PAYLOAD };
  static const struct {
    const char *what;
    long keep; /* bytes kept (more: zeros appended), -1 all */
    long flip; /* offset of a byte whose bits are inverted, -1 none */
  } cases[] = {
    {"an empty file", 0, -1},
    {"half a header", HEADER / 2, -1},
    {"the header only", HEADER, -1},
    {"half the payload", HEADER + PAYLOAD / 2, -1},
    {"all but the last byte", WHOLE - 1, -1},
    {"one byte too many", WHOLE + 1, -1},
    {"a flipped byte in the magic", -1, 0},
    {"a flipped byte in the version", -1, 8},
    {"a flipped reserved byte", -1, 12},
    {"a flipped byte in the key", -1, 20},
    {"a flipped low byte of the length", -1, 32},
    {"a flipped high byte of the length", -1, 39},
    {"a flipped byte in the checksum", -1, 40},
    {"a flipped first payload byte", -1, HEADER},
    {"a flipped middle payload byte", -1, HEADER + PAYLOAD / 2},
    {"a flipped last payload byte", -1, WHOLE - 1},
  };
  unsigned char payload[PAYLOAD];
  fill_random(payload, sizeof payload, 42);
  char path[256];
  entry_name(fx, &fx->key, path, sizeof path);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, payload, PAYLOAD), 0);
    size_t size;
    unsigned char *bytes = read_whole(path, &size);
    assert_int_equal(size, WHOLE);
    size_t keep = cases[i].keep < 0 ? size : (size_t)cases[i].keep;
    unsigned char *changed = calloc(1, keep + 1);
    assert_non_null(changed);
    memcpy(changed, bytes, keep < size ? keep : size);
    if (cases[i].flip >= 0)
      changed[cases[i].flip] ^= 0xff;
    write_whole(path, changed, keep);
    expect_rejected(fx, cases[i].what);
    free(changed);
    free(bytes);
  }
  assert_int_equal(fx->cache.rejected, sizeof cases / sizeof cases[0]);
  /* Rebuilt: the next store and load work. */
  assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, payload, PAYLOAD), 0);
  unsigned char *out;
  size_t size;
  assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, &out, &size), 0);
  assert_memory_equal(out, payload, PAYLOAD);
  free(out);
}

/* Another device's valid entry, renamed to this key's name. */
static void test_cache_foreign_entry(void **state)
{
  fixture *fx = *state;
  kiln_device_info other = fx->dev;
  other.name = "gfx1100";
  kiln__cache_key theirs = kiln__cache_key_of(source, sizeof source - 1, options, &other);
  unsigned char payload[100];
  fill_random(payload, sizeof payload, 5);
  assert_int_equal(kiln__cache_store(&fx->cache, &theirs, payload, sizeof payload), 0);
  char from[256], to[256];
  entry_name(fx, &theirs, from, sizeof from);
  entry_name(fx, &fx->key, to, sizeof to);
  assert_int_equal(rename(from, to), 0);
  expect_rejected(fx, "another key's entry");
}

static void test_cache_garbage(void **state)
{
  fixture *fx = *state;
  unsigned char good[HEADER];
  unsigned char payload[64];
  fill_random(payload, sizeof payload, 9);
  char path[256];
  entry_name(fx, &fx->key, path, sizeof path);
  assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, payload, sizeof payload), 0);
  size_t size;
  unsigned char *whole = read_whole(path, &size);
  memcpy(good, whole, HEADER);
  free(whole);
  kiln__cache_remove(&fx->cache, &fx->key);

  uint64_t s = 77;
  unsigned char *buf = malloc(9000);
  assert_non_null(buf);
  for (int i = 0; i < 300; i++) {
    size_t len = (size_t)(kiln_test_random(&s) % 9000);
    if (i < 100)
      len %= 2 * HEADER; /* around the header's size */
    fill_random(buf, len, (uint64_t)i + 1000);
    /* A third keep a real header (so only the length or checksum can tell),
     * a third only its magic. */
    if (i % 3 == 1 && len >= HEADER)
      memcpy(buf, good, HEADER);
    else if (i % 3 == 2 && len >= 8)
      memcpy(buf, good, 8);
    write_whole(path, buf, len);
    expect_rejected(fx, "garbage");
  }
  free(buf);
}

/* What is not a regular file where the entry should be (a directory, a
 * FIFO) is not kiln's: load refuses it without crashing or hanging, counts
 * it as untrusted, and leaves it; store does not replace it either. */
static void test_cache_entry_not_a_file(void **state)
{
  fixture *fx = *state;
  char path[256];
  entry_name(fx, &fx->key, path, sizeof path);
  for (int fifo = 0; fifo <= 1; fifo++) {
    assert_int_equal(fifo ? mkfifo(path, 0600) : mkdir(path, 0700), 0);
    unsigned char *out = NULL;
    size_t size;
    assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, &out, &size), -1);
    assert_null(out);
    assert_int_equal(fx->cache.untrusted, (uint64_t)fifo + 1);
    assert_int_equal(fx->cache.rejected, 0);
    assert_non_null(strstr(fx->cache.untrusted_note, "is not a regular file"));
    unsigned char byte = 1;
    assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, &byte, 1), -1);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(fifo ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode));
    int entries;
    assert_int_equal(count_files(fx->dir, &entries), 1); /* no temporary */
    assert_int_equal(fifo ? unlink(path) : rmdir(path), 0);
  }
}

/* ---- the folder ------------------------------------------------------------ */

static void expect_off(kiln__cache *c, kiln__str *notes, const char *needle)
{
  assert_null(c->dir);
  const char *text = kiln__str_get(notes);
  if (!strstr(text, needle))
    fail_msg("the note does not say '%s': %s", needle, text);
  assert_int_equal(text[strlen(text) - 1], '\n');
  /* Off: every call is a quiet failure. */
  kiln__cache_key key = {{0}};
  unsigned char byte = 1, *out = NULL;
  size_t size;
  assert_int_equal(kiln__cache_store(c, &key, &byte, 1), -1);
  assert_int_equal(kiln__cache_load(c, &key, &out, &size), -1);
  assert_null(out);
  kiln__cache_remove(c, &key);
  kiln__cache_close(c);
  kiln__str_free(notes);
}

static void test_cache_unwritable_folder(void **state)
{
  fixture *fx = *state;
  kiln__cache c;
  kiln__str notes = {0};
  char path[400], file[128];
  /* Under a regular file, a folder can never be made, even by root. */
  snprintf(file, sizeof file, "%s/file", fx->root);
  write_whole(file, (const unsigned char *)"x", 1);
  snprintf(path, sizeof path, "%s/cache", file);
  open_at(&c, path, &notes);
  snprintf(path, sizeof path, "kernel cache off: cannot create %s/cache: ", file);
  expect_off(&c, &notes, path);
  /* The folder is a file. */
  open_at(&c, file, &notes);
  expect_off(&c, &notes, "is not a folder");
  /* A caller may pass no notes. */
  open_at(&c, file, NULL);
  assert_null(c.dir);

  /* chmod does not stop root, who then has a usable cache. */
  if (geteuid() == 0)
    return;
  snprintf(path, sizeof path, "%s/ro", fx->root);
  assert_int_equal(mkdir(path, 0500), 0);
  open_at(&c, path, &notes);
  expect_off(&c, &notes, "cannot write to");
  snprintf(path, sizeof path, "%s/ro/cache", fx->root);
  open_at(&c, path, &notes);
  expect_off(&c, &notes, "Permission denied");
}

/* A runtime that fails before it opens its cache releases a zeroed one,
 * whose descriptor field reads 0: closing it must not close stdin, which
 * would hand fd 0 to the next open() of another thread, and close that. */
static void test_cache_close_zeroed(void **state)
{
  (void)state;
  int opened = fcntl(0, F_GETFD) == -1 ? open("/dev/null", O_RDONLY) : -1;
  assert_int_not_equal(fcntl(0, F_GETFD), -1);
  kiln__cache c;
  memset(&c, 0, sizeof c);
  kiln__cache_close(&c);
  assert_int_not_equal(fcntl(0, F_GETFD), -1);
  if (opened >= 0)
    close(opened);
}

static void test_cache_creates_parents(void **state)
{
  fixture *fx = *state;
  mode_t mask = umask(0);
  umask(mask);
  char path[256];
  snprintf(path, sizeof path, "%s/a/b/c//", fx->root);
  kiln__cache c;
  kiln__str notes = {0};
  open_at(&c, path, &notes);
  snprintf(path, sizeof path, "%s/a/b/c", fx->root);
  assert_non_null(c.dir);
  assert_string_equal(c.dir, path); /* trailing slashes dropped */
  assert_string_equal(kiln__str_get(&notes), "");
  static const char *const made[] = {"a", "a/b", "a/b/c"};
  for (size_t i = 0; i < 3; i++) {
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", fx->root, made[i]);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700 & ~mask);
  }
  kiln__cache_close(&c);
}

/* Sets or unsets a variable; NULL unsets. */
static void set_env(const char *name, const char *value)
{
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

/* Resolves the configuration from the environment and opens the cache. */
static void open_from_env(kiln__cache *c, const kiln_options *opts, kiln__str *notes)
{
  kiln__config cfg;
  assert_int_equal(kiln__config_resolve(opts, &cfg), KILN_OK);
  kiln__cache_open(c, &cfg, notes);
}

static void expect_dir(const kiln_options *opts, const char *want)
{
  kiln__cache c;
  kiln__str notes = {0};
  open_from_env(&c, opts, &notes);
  if (!c.dir || strcmp(c.dir, want) != 0)
    fail_msg("the cache is at %s, expected %s (%s)", c.dir ? c.dir : "(off)", want,
             kiln__str_get(&notes));
  kiln__cache_close(&c);
  kiln__str_free(&notes);
}

static void test_cache_folder_resolution(void **state)
{
  fixture *fx = *state;
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  char home[256], xdg[256], env[256], opt[256], want[300];
  snprintf(home, sizeof home, "%s/home", fx->root);
  snprintf(xdg, sizeof xdg, "%s/xdg", fx->root);
  snprintf(env, sizeof env, "%s/env", fx->root);
  snprintf(opt, sizeof opt, "%s/opt", fx->root);
  set_env("HOME", home);
  set_env("XDG_CACHE_HOME", xdg);
  snprintf(want, sizeof want, "%s/kiln", xdg);
  expect_dir(NULL, want);
  /* A relative XDG_CACHE_HOME is ignored, as the XDG spec says. */
  set_env("XDG_CACHE_HOME", "relative/xdg");
  snprintf(want, sizeof want, "%s/.cache/kiln", home);
  expect_dir(NULL, want);
  assert_false(file_exists("relative"));
  set_env("XDG_CACHE_HOME", "");
  expect_dir(NULL, want);
  /* KILN_CACHE_DIR beats both; the option beats the variable. */
  set_env("KILN_CACHE_DIR", env);
  expect_dir(NULL, env);
  kiln_options opts;
  kiln_options_init(&opts);
  opts.cache_dir = opt;
  expect_dir(&opts, opt);
  set_env("KILN_CACHE_DIR", NULL);
  /* No folder at all: off, with a note. */
  set_env("HOME", NULL);
  set_env("XDG_CACHE_HOME", NULL);
  kiln__cache c;
  kiln__str notes = {0};
  open_from_env(&c, NULL, &notes);
  expect_off(&c, &notes, "HOME are unset");
  set_env("HOME", old_home);
  set_env("XDG_CACHE_HOME", old_xdg);
  free(old_home);
  free(old_xdg);
}

static void test_cache_turned_off(void **state)
{
  fixture *fx = *state;
  kiln__cache c;
  kiln__str notes = {0};
  set_env("KILN_CACHE_DIR", fx->dir);
  set_env("KILN_CACHE", "0");
  open_from_env(&c, NULL, &notes);
  assert_null(c.dir);
  assert_string_equal(kiln__str_get(&notes), ""); /* asked for: no note */
  set_env("KILN_CACHE", "1");
  expect_dir(NULL, fx->dir);
  kiln_options opts;
  kiln_options_init(&opts);
  opts.no_cache = 1;
  open_from_env(&c, &opts, &notes);
  assert_null(c.dir);
  assert_string_equal(kiln__str_get(&notes), "");
  set_env("KILN_CACHE", NULL);
  set_env("KILN_CACHE_DIR", NULL);
}

/* ---- two writers ---------------------------------------------------------- */

/* Two processes store the same key, each its own 8 MiB payload, 50 times,
 * while this one loads it over and over. The entry exists before they start,
 * and rename() replaces it without the name ever being empty, so every load
 * must hit, and every hit must be one of the two payloads whole. No
 * temporary file may remain. */
static void test_cache_two_writers(void **state)
{
  fixture *fx = *state;
  enum { BIG = 8 << 20, ROUNDS = 50 };
  unsigned char *payload[2] = {malloc(BIG), malloc(BIG)};
  assert_true(payload[0] && payload[1]);
  fill_random(payload[0], BIG, 1);
  fill_random(payload[1], BIG, 2);
  assert_int_equal(kiln__cache_store(&fx->cache, &fx->key, payload[0], BIG), 0);
  int go[2];
  assert_int_equal(pipe(go), 0);
  pid_t kid[2];
  for (int k = 0; k < 2; k++) {
    kid[k] = fork();
    assert_true(kid[k] >= 0);
    if (kid[k] == 0) {
      close(go[1]);
      char start;
      while (read(go[0], &start, 1) < 0 && errno == EINTR)
        ; /* EOF: the parent let both go at once */
      int failed = 0;
      for (int r = 0; r < ROUNDS; r++)
        failed += kiln__cache_store(&fx->cache, &fx->key, payload[k], BIG) != 0;
      free(payload[0]);
      free(payload[1]);
      _exit(failed ? 1 : 0);
    }
  }
  close(go[0]);
  close(go[1]);

  unsigned loads = 0, hits = 0, mixed = 0, seen[2] = {0, 0};
  int status[2] = {0, 0}, running = 2;
  while (running > 0) {
    unsigned char *out = NULL;
    size_t size = 0;
    loads++;
    if (kiln__cache_load(&fx->cache, &fx->key, &out, &size) == 0) {
      hits++;
      int which = size != BIG                         ? -1
                  : memcmp(out, payload[0], BIG) == 0 ? 0
                  : memcmp(out, payload[1], BIG) == 0 ? 1
                                                      : -1;
      if (which < 0)
        mixed++;
      else
        seen[which]++;
      free(out);
    }
    for (int k = 0; k < 2; k++)
      if (kid[k] > 0 && waitpid(kid[k], &status[k], WNOHANG) == kid[k]) {
        kid[k] = 0;
        running--;
      }
  }
  print_message("# two writers: %u loads, %u hits (%u of the first payload, "
                "%u of the second)\n",
                loads, hits, seen[0], seen[1]);
  for (int k = 0; k < 2; k++)
    if (!WIFEXITED(status[k]) || WEXITSTATUS(status[k]) != 0)
      fail_msg("writer %d failed (status %#x)", k, status[k]);
  assert_int_equal(mixed, 0);
  assert_int_equal(hits, loads);
  assert_int_equal(fx->cache.rejected, 0);
  assert_int_equal(fx->cache.misses, 0);
  /* The last store wins whole. */
  unsigned char *out;
  size_t size;
  assert_int_equal(kiln__cache_load(&fx->cache, &fx->key, &out, &size), 0);
  assert_int_equal(size, BIG);
  assert_true(memcmp(out, payload[0], BIG) == 0 || memcmp(out, payload[1], BIG) == 0);
  free(out);
  int entries;
  assert_int_equal(count_files(fx->dir, &entries), 1);
  assert_int_equal(entries, 1);
  free(payload[0]);
  free(payload[1]);
}

int main(void)
{
  unsetenv("KILN_CACHE");
  unsetenv("KILN_CACHE_DIR");
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
    T(test_cache_round_trip),        T(test_cache_empty_payload_refused),
    T(test_cache_key_inputs),        T(test_cache_corrupt_entries),
    T(test_cache_foreign_entry),     T(test_cache_garbage),
    T(test_cache_entry_not_a_file),  T(test_cache_unwritable_folder),
    T(test_cache_close_zeroed),      T(test_cache_creates_parents),
    T(test_cache_folder_resolution), T(test_cache_turned_off),
    T(test_cache_two_writers),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
