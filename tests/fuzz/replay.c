/*
 * replay.c — runs a fuzz harness without libFuzzer: feeds it every file
 * named on the command line, and every file of every folder named (in name
 * order, hidden files skipped), once each. tests/fuzz/meson.build builds one
 * per harness with the project's compiler and runs it over the harness's
 * seed corpus and regressions in the unit suite, so every build checks the
 * inputs that once crashed kiln.
 *
 * Each input is copied into a buffer of exactly its size, so a read past
 * its end is one that valgrind or ASan sees.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, size = 0, got;
  uint8_t *buf = malloc(cap);
  while (buf && (got = fread(buf + size, 1, cap - size, f)) > 0) {
    size += got;
    if (size == cap) {
      uint8_t *more = realloc(buf, cap *= 2);
      if (!more)
        free(buf);
      buf = more;
    }
  }
  int err = ferror(f);
  fclose(f);
  uint8_t *exact = buf ? malloc(size ? size : 1) : NULL;
  if (!exact || err) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    free(exact);
    return -1;
  }
  memcpy(exact, buf, size);
  free(buf);
  LLVMFuzzerTestOneInput(exact, size);
  free(exact);
  return 0;
}

static int visible_entry(const struct dirent *e)
{
  return e->d_name[0] != '.';
}

/* The number of inputs run from path, or -1. */
static long run_path(const char *path)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode))
    return run_file(path) == 0 ? 1 : -1;
  struct dirent **names;
  int n = scandir(path, &names, visible_entry, alphasort);
  if (n < 0) {
    fprintf(stderr, "replay: cannot list %s: %s\n", path, strerror(errno));
    return -1;
  }
  long done = 0;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(path) + strlen(names[i]->d_name) + 2;
    char *file = malloc(len);
    if (file) {
      snprintf(file, len, "%s/%s", path, names[i]->d_name);
      if (stat(file, &st) == 0 && S_ISREG(st.st_mode))
        done = done < 0 || run_file(file) != 0 ? -1 : done + 1;
    }
    if (!file)
      done = -1;
    free(file);
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char **argv)
{
  LLVMFuzzerInitialize(&argc, &argv);
  long total = 0;
  for (int i = 1; i < argc; i++) {
    long n = run_path(argv[i]);
    if (n < 0)
      return 1;
    printf("replayed %ld inputs from %s\n", n, argv[i]);
    total += n;
  }
  if (total == 0) {
    fprintf(stderr, "replay: no input given: a replay of nothing checks nothing\n");
    return 1;
  }
  return 0;
}
