/*
 * trust.h — whether kiln may act on what a file on disk holds (trust.c):
 * the folder and file checks for anything kiln reads to decide what code to
 * run. Not installed.
 */
#ifndef KILN_TRUST_H
#define KILN_TRUST_H

#include <sys/stat.h>
#include <sys/types.h>

#include "base/util.h"
#include "compile/cache.h"

/* Opens folder `dir` (which must exist) when no untrusted user can change
 * what it holds (see trust.c for the rules), and returns a descriptor
 * (O_DIRECTORY, close-on-exec) for every later access to go through; -1
 * otherwise, with the problem and its fix appended to why (no newline).
 * Fills t's outputs. */
int kiln__trust_open_dir(const char *dir, kiln__trust *t, kiln__str *why);

/* Whether a file, as stat'ed without following links, may be trusted:
 * 0, or -1 with the reason (naming it as `name`) appended to why. */
int kiln__trust_check_file(const kiln__trust *t, const char *name, const struct stat *st,
                           kiln__str *why);

enum kiln__trust_result {
  KILN__TRUST_OK,        /* *fd is open on a trusted file, *st its fstat */
  KILN__TRUST_ABSENT,    /* no such file */
  KILN__TRUST_REFUSED,   /* not to be trusted; why says how */
  KILN__TRUST_UNREADABLE /* it exists but cannot be opened; why says how */
};

/* Opens dirfd/name for reading, without following a link, and checks the
 * file on the open descriptor, so nothing can be swapped in between the
 * check and the reads. */
enum kiln__trust_result kiln__trust_open_file(const kiln__trust *t, int dirfd,
                                              const char *name, int *fd, struct stat *st,
                                              kiln__str *why);

/* Test seam: when set, called just before a file is opened, between the
 * open and the checks, and after the checks (before any read), so a test
 * can swap what the name holds at each point. */
enum kiln__trust_stage {
  KILN__TRUST_BEFORE_OPEN,
  KILN__TRUST_AFTER_OPEN,
  KILN__TRUST_AFTER_CHECK
};
extern void (*kiln__trust_seam)(enum kiln__trust_stage stage, int dirfd,
                                const char *name);

#endif /* KILN_TRUST_H */
