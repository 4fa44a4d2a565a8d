/*
 * npz.c — arrays out of .npz files for `kiln run` (run.c). An .npz file is
 * a zip archive of .npy files, one per array, each named NAME.npy (numpy's
 * savez and savez_compressed: stored or deflated). libzip reads the
 * archive; kiln reads the member's bytes (kiln_npy_load_memory()), with the
 * checks of any .npy file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_config.h"
#include "run.h"

#if HAVE_LIBZIP
#  include <zip.h>

/* "a, b and c": the arrays of the archive, for messages. */
static void member_names(zip_t *z, char *buf, size_t size)
{
  zip_int64_t n = zip_get_num_entries(z, 0);
  size_t at = 0;
  buf[0] = '\0';
  for (zip_int64_t i = 0; i < n && at < size; i++) {
    const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
    size_t len = name ? strlen(name) : 0;
    if (len > 4 && strcmp(name + len - 4, ".npy") == 0)
      len -= 4; /* as numpy names them: np.load(f)[NAME] */
    at += (size_t)snprintf(buf + at, size - at, "%s%.*s",
                           i == 0       ? ""
                           : i == n - 1 ? " and "
                                        : ", ",
                           (int)len, name ? name : "?");
  }
}

/* The index of member (NAME, or NAME.npy) in z; when member is NULL, of
 * the only one. -1 after saying why not. */
static zip_int64_t find_member(zip_t *z, const char *path, const char *member)
{
  char names[512], npy[1024];
  member_names(z, names, sizeof names);
  zip_int64_t n = zip_get_num_entries(z, 0), i = -1;
  if (!member) {
    if (n == 1)
      return 0;
    return run_say("%s holds %lld arrays (%s); name one: %s:NAME", path, (long long)n,
                   names, path),
           -1;
  }
  snprintf(npy, sizeof npy, "%s.npy", member);
  if ((i = zip_name_locate(z, npy, 0)) < 0)
    i = zip_name_locate(z, member, 0);
  if (i < 0)
    return run_say("%s has no array '%s'; it holds %s", path, member, n ? names : "none"),
           -1;
  return i;
}

/* The member's bytes into a malloc'd *bytes of *size; 0, or -1 after saying
 * why. */
static int read_member(zip_t *z, zip_int64_t i, const char *what, unsigned char **bytes,
                       size_t *size)
{
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    return run_say("%s: %s", what, zip_strerror(z)), -1;
  if (st.size > SIZE_MAX / 2)
    return run_say("%s: %llu bytes is more than this machine can hold", what,
                   (unsigned long long)st.size),
           -1;
  *size = (size_t)st.size;
  *bytes = malloc(*size ? *size : 1);
  zip_file_t *f = *bytes ? zip_fopen_index(z, (zip_uint64_t)i, 0) : NULL;
  zip_int64_t got = f ? zip_fread(f, *bytes, st.size) : -1;
  /* one byte more than the directory says is a damaged archive, too */
  unsigned char extra;
  int longer = f && got == (zip_int64_t)st.size && zip_fread(f, &extra, 1) > 0;
  if (!f || got != (zip_int64_t)st.size || longer) {
    run_say("%s: %s", what,
            !*bytes   ? "out of host memory"
            : !f      ? zip_strerror(z)
            : got < 0 ? zip_file_strerror(f)
                      : "the archive's member is not as long as its directory says");
    if (f)
      zip_fclose(f);
    free(*bytes);
    *bytes = NULL;
    return -1;
  }
  zip_fclose(f);
  return 0;
}

int run_load_npz(const char *path, const char *member, kiln_array *x)
{
  int err = 0;
  zip_t *z = zip_open(path, ZIP_RDONLY, &err);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    run_say("cannot read '%s' as an .npz file: %s", path, zip_error_strerror(&e));
    zip_error_fini(&e);
    return -1;
  }
  char what[1024];
  unsigned char *bytes = NULL;
  size_t size = 0;
  zip_int64_t i = find_member(z, path, member);
  snprintf(what, sizeof what, "%s:%s", path,
           i >= 0 ? zip_get_name(z, (zip_uint64_t)i, 0) : "");
  int rc = i < 0 || read_member(z, i, what, &bytes, &size) != 0 ? -1 : 0;
  zip_discard(z);
  if (rc == 0 && (kiln_npy_load_memory(bytes, size, what, x) != KILN_OK ||
                  kiln_array_to_c_order(x) != KILN_OK))
    rc = (run_say("%s", kiln_last_error(NULL)), -1);
  free(bytes);
  return rc;
}

#else

int run_load_npz(const char *path, const char *member, kiln_array *x)
{
  (void)member, (void)x;
  return run_say("cannot read '%s': this kiln was built without libzip (Debian: "
                 "libzip-dev), and reads no .npz files",
                 path),
         -1;
}

#endif
