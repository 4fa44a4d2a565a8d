/*
 * drivers_note.c — what to do about an OpenCL driver no .icd file names:
 * the note in kiln_runtime_diagnostics() and the device list's, with the
 * exact fix, and the folder for OCL_ICD_VENDORS that registers every
 * driver (kiln_driver_list_write_icd_dir(), `kiln devices --icd-dir`).
 *
 * The notes say "... but no .icd file names it, ..."; the kiln command
 * prints the diagnostics' lines with those words (tools/drivers.c).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"
#include "device/device.h"
#include "device/drivers.h"

/* Where the fix without root puts its folder. */
#define PRIVATE_DIR "$HOME/.local/share/kiln/vendors"

/* s, quoted for a POSIX shell where it needs it. */
static void append_quoted(kiln__str *out, const char *s)
{
  if (s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  "0123456789_./-+:=@%,")] == '\0' &&
      *s) {
    kiln__str_appendf(out, "%s", s);
    return;
  }
  kiln__str_appendf(out, "'");
  for (const char *p = s; *p; p++)
    kiln__str_appendf(out, *p == '\'' ? "'\\''" : "%c", *p);
  kiln__str_appendf(out, "'");
}

/* Whether one of the platforms found is this driver's, loaded some other
 * way than by an .icd file kiln can see: then there is nothing to fix. */
static int platform_present(const kiln__device_list *devices, const char *platforms)
{
  for (size_t p = 0; p < devices->platform_count; p++) {
    const char *name = devices->platform_items[p].info.name;
    for (const char *part = platforms; name && *part;) {
      size_t len = strcspn(part, "|");
      char want[128];
      if (len > 0 && len < sizeof want) {
        memcpy(want, part, len);
        want[len] = '\0';
        if (strstr(name, want))
          return 1;
      }
      part += len + (part[len] == '|');
    }
  }
  return 0;
}

/* The commands that make a folder of one's own for the ICD loader: copies
 * of what registers the drivers now, and the new driver's .icd file. */
static void append_private_fix(kiln__str *out, const kiln_driver_list *list,
                               const kiln_driver *d)
{
  int is_dir;
  const char *source = kiln__driver_source(list, &is_dir);
  kiln__str_appendf(out, "`mkdir -p %s", PRIVATE_DIR);
  int copied = 0;
  for (size_t i = 0; i < kiln_driver_list_count(list); i++) {
    const kiln_driver *r = kiln_driver_list_at(list, i);
    if (!r->registered)
      continue;
    if (r->icd && is_dir && copied++ == 0) {
      kiln__str_appendf(out, " && cp ");
      append_quoted(out, source);
      kiln__str_appendf(out, "/*.icd %s/", PRIVATE_DIR);
    } else if (r->icd && !is_dir) {
      kiln__str_appendf(out, " && cp ");
      append_quoted(out, r->icd);
      kiln__str_appendf(out, " %s/", PRIVATE_DIR);
    } else if (!r->icd) {
      kiln__str_appendf(out, " && echo ");
      append_quoted(out, r->icd_line);
      kiln__str_appendf(out, " > %s/%s", PRIVATE_DIR, r->icd_name);
    }
  }
  kiln__str_appendf(out, " && echo ");
  append_quoted(out, d->library);
  kiln__str_appendf(out,
                    " > %s/%s` and `export OCL_ICD_VENDORS=%s` (`eval \"$(kiln devices "
                    "--icd-dir %s)\"` does both)",
                    PRIVATE_DIR, d->icd_name, PRIVATE_DIR, PRIVATE_DIR);
}

/* One driver's note: what is wrong, what it costs, and the fix. */
static void note_one(kiln__str *out, const kiln_driver_list *list, const kiln_driver *d,
                     const char *what, const char *cost, int writable)
{
  int is_dir;
  const char *source = kiln__driver_source(list, &is_dir);
  kiln__str_appendf(out, "%s is installed at %s but no .icd file names it, %s; fix: ",
                    what ? what : d->vendor, d->library, cost);
  if (is_dir && writable) {
    kiln__str_appendf(out, "`echo ");
    append_quoted(out, d->library);
    kiln__str_appendf(out, " > ");
    append_quoted(out, source);
    kiln__str_appendf(out, "/%s`", d->icd_name);
  } else if (is_dir) {
    kiln__str_appendf(out, "as root, `echo ");
    append_quoted(out, d->library);
    kiln__str_appendf(out, " > ");
    append_quoted(out, source);
    kiln__str_appendf(out, "/%s`; or, without root, ", d->icd_name);
    append_private_fix(out, list, d);
  } else {
    kiln__str_appendf(
      out, "the ICD loader reads %s alone: ", kiln_driver_list_icd_source(list));
    append_private_fix(out, list, d);
  }
  if (d->where == KILN_DRIVER_VENDOR_FOLDER) {
    /* The loader would not find the libraries it needs beside it. */
    const char *slash = strrchr(d->library, '/');
    kiln__str_appendf(out,
                      "; and put its folder on the loader's path for the libraries "
                      "beside it: `export LD_LIBRARY_PATH=%.*s${LD_LIBRARY_PATH:+:"
                      "$LD_LIBRARY_PATH}`",
                      (int)(slash ? slash - d->library : 0), d->library);
  }
  kiln__str_appendf(out, "\n");
}

void kiln__drivers_note_list(kiln__str *notes, const kiln_driver_list *list,
                             const kiln__device_list *devices,
                             const kiln_device_info *picked, int writable)
{
  const char *cost = !picked ? "so kiln has no OpenCL device to run on"
                     : picked->type & KILN_DEVICE_CPU ? "so kiln runs on the CPU"
                                                      : "so kiln cannot use it";
  for (size_t i = 0; i < kiln_driver_list_count(list); i++) {
    const kiln_driver *d = kiln_driver_list_at(list, i);
    const char *platforms;
    const char *what = kiln__driver_what(list, i, &platforms);
    if (d->advised && !platform_present(devices, platforms))
      note_one(notes, list, d, what, cost, writable);
  }
}

void kiln__drivers_note(kiln__str *notes, const kiln__config *cfg,
                        const kiln__device_list *devices, const kiln_device_info *picked)
{
  const kiln__driver_env env = {"", cfg->ld_library_path, cfg->icd_vendors,
                                cfg->vendor_path};
  kiln_driver_list *list = NULL;
  if (kiln__driver_list_find(&env, &list) != KILN_OK)
    return; /* out of memory: the notes are advice, the runtime goes on */
  int is_dir;
  const char *source = kiln__driver_source(list, &is_dir);
  kiln__drivers_note_list(notes, list, devices, picked, access(source, W_OK) == 0);
  kiln_driver_list_destroy(list);
}

/* ---- kiln_driver_list_write_icd_dir() ------------------------------------ */

/* mkdir -p. */
static kiln_status make_dirs(const char *dir)
{
  char path[4096];
  if (strlen(dir) >= sizeof path)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_driver_list_write_icd_dir: the folder's path is %zu "
                      "characters long; expected fewer than %zu",
                      strlen(dir), sizeof path);
  strcpy(path, dir);
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    struct stat st;
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
      return kiln__fail(NULL, KILN_ERR_IO,
                        "kiln_driver_list_write_icd_dir: cannot make the folder '%s': %s",
                        path, strerror(errno));
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      return kiln__fail(NULL, KILN_ERR_IO,
                        "kiln_driver_list_write_icd_dir: '%s' is not a folder", path);
    if ((*p = c) == '\0')
      return KILN_OK;
  }
}

/* An .icd file dir has that the list would not write would register a
 * driver twice, or one the caller left out: refused, never deleted. */
static kiln_status check_foreign(const kiln_driver_list *list, const char *dir)
{
  DIR *d = opendir(dir);
  if (!d)
    return kiln__fail(NULL, KILN_ERR_IO,
                      "kiln_driver_list_write_icd_dir: cannot read the folder '%s': %s",
                      dir, strerror(errno));
  kiln_status st = KILN_OK;
  struct dirent *e;
  while (st == KILN_OK && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len <= 4 || strcmp(e->d_name + len - 4, ".icd") != 0)
      continue;
    int ours = 0;
    for (size_t i = 0; i < kiln_driver_list_count(list); i++) {
      const kiln_driver *r = kiln_driver_list_at(list, i);
      ours |= (r->registered || r->advised) && strcmp(r->icd_name, e->d_name) == 0;
    }
    if (!ours)
      st = kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_driver_list_write_icd_dir: '%s' already holds %s, which "
                      "is not one of the drivers in use (%s) nor one found; expected "
                      "a new or empty folder, or one kiln made for these drivers: "
                      "remove %s or choose another folder",
                      dir, e->d_name, kiln_driver_list_icd_source(list), e->d_name);
  }
  closedir(d);
  return st;
}

/* What record d's file holds: a copy of its .icd file, else the line. */
static kiln_status icd_content(const kiln_driver *d, kiln__str *out)
{
  if (!d->icd) {
    kiln__str_appendf(out, "%s\n", d->registered ? d->icd_line : d->library);
    return KILN_OK;
  }
  FILE *f = fopen(d->icd, "rb");
  if (!f)
    return kiln__fail(NULL, KILN_ERR_IO,
                      "kiln_driver_list_write_icd_dir: cannot read '%s': %s", d->icd,
                      strerror(errno));
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0 && out->len < (64u << 10))
    kiln__str_appendf(out, "%.*s", (int)n, buf);
  fclose(f);
  return KILN_OK;
}

static kiln_status write_one(const char *dir, const kiln_driver *d)
{
  kiln__str text = {0}, path = {0}, tmp = {0};
  kiln_status st = icd_content(d, &text);
  kiln__str_appendf(&path, "%s/%s", dir, d->icd_name);
  kiln__str_appendf(&tmp, "%s/.%s.tmp", dir, d->icd_name);
  if (st == KILN_OK && (text.failed || path.failed || tmp.failed))
    st = kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                    "kiln_driver_list_write_icd_dir: out of host memory");
  FILE *f = st == KILN_OK ? fopen(kiln__str_get(&tmp), "wb") : NULL;
  if (st == KILN_OK) {
    int ok = f && fwrite(kiln__str_get(&text), 1, text.len, f) == text.len;
    ok = f && fclose(f) == 0 && ok;
    if (!ok || rename(kiln__str_get(&tmp), kiln__str_get(&path)) != 0) {
      st = kiln__fail(NULL, KILN_ERR_IO,
                      "kiln_driver_list_write_icd_dir: cannot write '%s': %s",
                      kiln__str_get(&path), strerror(errno));
      remove(kiln__str_get(&tmp));
    }
  }
  kiln__str_free(&text);
  kiln__str_free(&path);
  kiln__str_free(&tmp);
  return st;
}

KILN_API kiln_status kiln_driver_list_write_icd_dir(const kiln_driver_list *list,
                                                    const char *dir)
{
  if (!list || !dir || !*dir)
    return kiln__fail(NULL, KILN_ERR_INVALID_ARGUMENT,
                      "kiln_driver_list_write_icd_dir: %s is %s; expected a list "
                      "from kiln_driver_list_create() and a folder's path",
                      !list ? "list" : "dir", !list || !dir ? "NULL" : "empty");
  kiln_status st = make_dirs(dir);
  if (st == KILN_OK)
    st = check_foreign(list, dir);
  for (size_t i = 0; st == KILN_OK && i < kiln_driver_list_count(list); i++) {
    const kiln_driver *d = kiln_driver_list_at(list, i);
    if (d->registered || d->advised)
      st = write_one(dir, d);
  }
  return st;
}
