/*
 * drivers.c — the OpenCL drivers no .icd file names, in the kiln command:
 * the library's notes on them (`kiln devices`, `kiln check`), and `kiln
 * devices --icd-dir DIR`, which registers them for scripts.
 *
 * --icd-dir's output is an interface: ci/gpu.sh and the portable bundle's
 * check eval its stdout, which holds export lines alone; what it wrote goes
 * to stderr, one line a file.
 */
#define _XOPEN_SOURCE 700 /* realpath() */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KILN_EXPERIMENTAL /* kiln_driver_list_* */
#include "cli.h"
#include "kiln/kiln.h"

void kiln_cli_print_driver_notes(FILE *out, const char *diagnostics)
{
  /* The library's words for such a note (src/device/drivers_note.c). */
  static const char mark[] = " but no .icd file names it, ";
  for (const char *line = diagnostics; line && *line;) {
    size_t len = strcspn(line, "\n");
    const char *hit = strstr(line, mark);
    if (hit && hit < line + len)
      fprintf(out, "note: %.*s\n", (int)len, line);
    line += len + (line[len] == '\n');
  }
}

/* s for a POSIX shell: as it is when it is safe, else in single quotes. */
static void print_quoted(const char *s)
{
  if (*s && s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789_./-+:=@%,")] == '\0') {
    fputs(s, stdout);
    return;
  }
  putchar('\'');
  for (const char *p = s; *p; p++) {
    if (*p == '\'')
      fputs("'\\''", stdout);
    else
      putchar(*p);
  }
  putchar('\'');
}

static const char *where_name(kiln_driver_where w)
{
  static const char *const names[] = {
    [KILN_DRIVER_NOT_FOUND] = "not found",
    [KILN_DRIVER_LD_LIBRARY_PATH] = "found on LD_LIBRARY_PATH",
    [KILN_DRIVER_LOADER_CACHE] = "found in the loader's cache",
    [KILN_DRIVER_SYSTEM_FOLDER] = "found in a system folder",
    [KILN_DRIVER_VENDOR_FOLDER] = "found in its vendor's folder",
    [KILN_DRIVER_ICD_PATH] = "at the path its .icd file names",
  };
  return (unsigned)w < sizeof names / sizeof names[0] ? names[w] : "?";
}

int kiln_cli_icd_dir(const char *dir)
{
  kiln_driver_list *list = NULL;
  kiln_status st = kiln_driver_list_create(NULL, &list);
  if (st == KILN_OK)
    st = kiln_driver_list_write_icd_dir(list, dir);
  char *abs = st == KILN_OK ? realpath(dir, NULL) : NULL;
  if (st != KILN_OK || !abs) {
    kiln_driver_list_destroy(list);
    free(abs);
    return st != KILN_OK
             ? kiln_cli_fail("devices --icd-dir", st, NULL)
             : (fprintf(stderr, "kiln devices --icd-dir: out of memory\n"), 1);
  }
  const char *lib_dirs[16];
  size_t nlib = 0;
  for (size_t i = 0; i < kiln_driver_list_count(list); i++) {
    const kiln_driver *d = kiln_driver_list_at(list, i);
    if (d->registered)
      fprintf(stderr, "%s/%s: %s %s (%s, %s)\n", abs, d->icd_name,
              d->icd ? "a copy of" : "names", d->icd ? d->icd : d->icd_line, d->library,
              where_name(d->where));
    else if (d->advised)
      fprintf(stderr, "%s/%s: names %s's driver %s, which no .icd file named (%s)\n", abs,
              d->icd_name, d->vendor, d->library, where_name(d->where));
    else
      fprintf(stderr,
              "left out: %s's driver %s, which no .icd file names (%s): kiln adds "
              "a GPU vendor's, and another only where none is registered\n",
              d->vendor, d->library, where_name(d->where));
    /* The loader must find the libraries beside such a driver too. */
    if (d->advised && d->where == KILN_DRIVER_VENDOR_FOLDER && nlib < 16)
      lib_dirs[nlib++] = d->library;
  }
  printf("export OCL_ICD_VENDORS=");
  print_quoted(abs);
  putchar('\n');
  if (nlib) {
    printf("export LD_LIBRARY_PATH=");
    for (size_t i = 0; i < nlib; i++) {
      char folder[PATH_MAX];
      snprintf(folder, sizeof folder, "%s", lib_dirs[i]);
      char *slash = strrchr(folder, '/');
      if (slash)
        *slash = '\0';
      if (i)
        putchar(':');
      print_quoted(folder);
    }
    printf("${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n");
  }
  free(abs);
  kiln_driver_list_destroy(list);
  return 0;
}
