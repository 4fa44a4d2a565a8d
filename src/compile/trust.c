/*
 * trust.c — whether kiln may act on what a file on disk holds.
 *
 * A cached program binary is code the device will run; on a CPU device it
 * is native code run inside the caller's process. So kiln loads such a file
 * only when no one but the user (and root, who can do anything anyway) could
 * have written it, the way ssh treats its key folders:
 *
 *  - the folder is owned by the user or root and writable by no one else;
 *  - no folder above it lets another user rename it away and put their own
 *    in its place: each is owned by the user or root, and one that others
 *    may write has the sticky bit (as /tmp has);
 *  - a file is checked on the descriptor it is read through, opened without
 *    following a link, so nothing can be swapped in between check and use:
 *    a regular file, owned by the user or root, writable by no one else.
 *
 * A team cache (KILN_CACHE_SHARED) widens "the user" to the members of the
 * folder's group, who must then all be trusted: the folder belongs to a
 * group the user is in, is not world-writable, and when group-writable has
 * the setgid bit, so that what members write keeps the team's group.
 *
 * "Writable by its group" is harmless when the group is its owner's private
 * group (user private groups: the group has the owner's name and no other
 * member), as Fedora's umask 002 leaves home folders; that is allowed.
 *
 * Any file kiln reads to decide what code to run goes through here: the
 * binary cache now, tuning records when they come.
 */
#define _XOPEN_SOURCE 700 /* S_ISVTX */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "compile/cache.h"
#include "compile/trust.h"

void (*kiln__trust_seam)(enum kiln__trust_stage stage, int dirfd, const char *name);

/* ---- users and groups ------------------------------------------------------ */

/* getpw*_r / getgr*_r want a buffer; 16 KiB holds any ordinary entry, and a
 * group too large for it is treated as unknown (so not trusted). */
enum { DB_BUFFER = 16384 };

/* Whether user `uid` belongs to group `gid`: as its primary group, or
 * listed as a member. `private_only` asks instead whether the group is the
 * user's private group: its primary one, with the user's name, and no
 * member listed. An account the database does not know belongs nowhere. */
static int in_group(uid_t uid, gid_t gid, int private_only)
{
  struct passwd pw, *pf = NULL;
  struct group gr, *gf = NULL;
  char *pbuf = malloc(DB_BUFFER), *gbuf = malloc(DB_BUFFER);
  int yes = 0;
  if (pbuf && gbuf && getpwuid_r(uid, &pw, pbuf, DB_BUFFER, &pf) == 0 && pf &&
      getgrgid_r(gid, &gr, gbuf, DB_BUFFER, &gf) == 0 && gf) {
    if (private_only) {
      yes = pw.pw_gid == gid && strcmp(gr.gr_name, pw.pw_name) == 0 &&
            (!gr.gr_mem || !gr.gr_mem[0]);
    } else {
      yes = pw.pw_gid == gid;
      for (char **m = gr.gr_mem; !yes && m && *m; m++)
        yes = strcmp(*m, pw.pw_name) == 0;
    }
  }
  free(pbuf);
  free(gbuf);
  return yes;
}

/* Whether this process has group `gid`, effective or supplementary. */
static int self_in_group(gid_t gid)
{
  if (getegid() == gid)
    return 1;
  int n = getgroups(0, NULL);
  gid_t *list = n > 0 ? malloc((size_t)n * sizeof *list) : NULL;
  int yes = 0;
  if (list && (n = getgroups(n, list)) > 0)
    for (int i = 0; i < n && !yes; i++)
      yes = list[i] == gid;
  free(list);
  return yes;
}

/* "user 'nobody' (65534)" or "group 'daemon' (1)"; the number alone when
 * the account database has no name for it. */
static const char *describe(int group, unsigned id, char *out, size_t size)
{
  struct passwd pw, *pf = NULL;
  struct group gr, *gf = NULL;
  char *buf = malloc(DB_BUFFER);
  const char *name = NULL;
  if (buf && !group && getpwuid_r((uid_t)id, &pw, buf, DB_BUFFER, &pf) == 0 && pf)
    name = pw.pw_name;
  if (buf && group && getgrgid_r((gid_t)id, &gr, buf, DB_BUFFER, &gf) == 0 && gf)
    name = gr.gr_name;
  if (name)
    snprintf(out, size, "%s '%s' (%u)", group ? "group" : "user", name, id);
  else
    snprintf(out, size, "%s %u", group ? "group" : "user", id);
  free(buf);
  return out;
}

/* ---- the rules ------------------------------------------------------------ */

/* Whether a file or folder owned by `uid` may be trusted: the user's own,
 * root's, or in a team folder a member's. */
static int trusted_owner(const kiln__trust *t, uid_t uid)
{
  return uid == geteuid() || uid == 0 || (t->shared && in_group(uid, t->group, 0));
}

/* Whether group write on st is harmless: a private group, or the team's. */
static int group_write_ok(const kiln__trust *t, const struct stat *st)
{
  return (t->shared && st->st_gid == t->group) || in_group(st->st_uid, st->st_gid, 1);
}

/* Checks a folder above the cache folder: could someone untrusted rename
 * the cache folder away? Appends the problem and its fix to why. */
static int check_above(const kiln__trust *t, const char *path, const struct stat *st,
                       kiln__str *why)
{
  char who[128];
  if (!trusted_owner(t, st->st_uid)) {
    kiln__str_appendf(why,
                      "%s, a folder above it, belongs to %s, who could replace "
                      "the cache folder with one of their own; fix: choose a "
                      "folder under your own home (KILN_CACHE_DIR)",
                      path, describe(0, (unsigned)st->st_uid, who, sizeof who));
    return -1;
  }
  if (st->st_mode & S_ISVTX) /* others may write, but not rename ours */
    return 0;
  if (st->st_mode & S_IWOTH) {
    kiln__str_appendf(why,
                      "%s, a folder above it, is writable by every user "
                      "without the sticky bit, so anyone could replace the "
                      "cache folder; fix: chmod o-w %s (or chmod +t %s)",
                      path, path, path);
    return -1;
  }
  if ((st->st_mode & S_IWGRP) && !group_write_ok(t, st)) {
    kiln__str_appendf(why,
                      "%s, a folder above it, is writable by %s without the "
                      "sticky bit, so its members could replace the cache "
                      "folder; fix: chmod g-w %s",
                      path, describe(1, (unsigned)st->st_gid, who, sizeof who), path);
    return -1;
  }
  return 0;
}

/* Checks the cache folder itself, as opened. Asked for a team folder
 * (t->shared), decides whether it is one: a folder of a group this process
 * has, writable by that group; one only its owner writes is private, and
 * t->shared stays set only when that owner is another member, whose entries
 * are then the ones to read. */
static int check_folder(kiln__trust *t, const char *dir, const struct stat *st,
                        kiln__str *why)
{
  char who[128];
  int team = t->shared && self_in_group(st->st_gid);
  t->group = st->st_gid;
  t->shared = team;
  if (!trusted_owner(t, st->st_uid)) {
    kiln__str_appendf(why,
                      "%s belongs to %s, not to you%s; kiln runs the code it "
                      "caches, so it uses only a folder you own; fix: choose "
                      "a folder of your own (KILN_CACHE_DIR)",
                      dir, describe(0, (unsigned)st->st_uid, who, sizeof who),
                      team ? " nor to a member of its group" : "");
    return -1;
  }
  if (st->st_mode & S_IWOTH) {
    kiln__str_appendf(why,
                      "%s is writable by every user (mode %04o), so anyone "
                      "could plant code that kiln would run; fix: chmod 700 %s",
                      dir, (unsigned)(st->st_mode & 07777), dir);
    return -1;
  }
  if (!(st->st_mode & S_IWGRP) || in_group(st->st_uid, st->st_gid, 1)) {
    if (st->st_uid == geteuid() || st->st_uid == 0)
      t->shared = 0;
    return 0;
  }
  describe(1, (unsigned)st->st_gid, who, sizeof who);
  if (!team) {
    kiln__str_appendf(why,
                      "%s is writable by %s (mode %04o), whose members could "
                      "plant code that kiln would run; fix: chmod 700 %s, or "
                      "for a cache shared by that group: chmod 2770 %s and "
                      "KILN_CACHE_SHARED=1 for each member",
                      dir, who, (unsigned)(st->st_mode & 07777), dir, dir);
    return -1;
  }
  if (!(st->st_mode & S_ISGID)) {
    kiln__str_appendf(why,
                      "%s is a team folder of %s without the setgid bit, so "
                      "entries would not keep the team's group; fix: chmod "
                      "g+s %s",
                      dir, who, dir);
    return -1;
  }
  return 0;
}

/* ---- folders -------------------------------------------------------------- */

/* Checks every folder above `real` (an absolute path without links). */
static int check_parents(const kiln__trust *t, const char *real, kiln__str *why)
{
  size_t n = strlen(real);
  char *path = malloc(n + 1);
  if (!path) {
    kiln__str_appendf(why, "out of host memory");
    return -1;
  }
  memcpy(path, real, n + 1);
  int rc = 0;
  for (char *slash = strrchr(path, '/'); rc == 0 && slash; slash = strrchr(path, '/')) {
    if (slash == path) /* the root folder */
      slash[1] = '\0';
    else
      *slash = '\0';
    struct stat st;
    if (lstat(path, &st) != 0) {
      kiln__str_appendf(why, "cannot inspect %s, a folder above it: %s", path,
                        strerror(errno));
      rc = -1;
    } else {
      rc = check_above(t, path, &st, why);
    }
    if (slash == path)
      break;
  }
  free(path);
  return rc;
}

int kiln__trust_open_dir(const char *dir, kiln__trust *t, kiln__str *why)
{
  char *real = realpath(dir, NULL);
  if (!real) {
    kiln__str_appendf(why, "cannot resolve %s: %s", dir, strerror(errno));
    return -1;
  }
  int fd = -1;
  struct stat st;
  if (check_parents(t, real, why) == 0) {
    /* The folder is checked on the descriptor every later access goes
     * through: renaming another folder into its place changes nothing. */
    fd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      kiln__str_appendf(why, "cannot open %s: %s", dir, strerror(errno));
    else if (fstat(fd, &st) != 0 || check_folder(t, dir, &st, why) != 0) {
      close(fd);
      fd = -1;
    }
  }
  free(real);
  return fd;
}

/* ---- files ---------------------------------------------------------------- */

int kiln__trust_check_file(const kiln__trust *t, const char *name, const struct stat *st,
                           kiln__str *why)
{
  char who[128];
  if (S_ISLNK(st->st_mode)) {
    kiln__str_appendf(why, "%s is a symbolic link; kiln follows none in its cache", name);
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    kiln__str_appendf(why, "%s is not a regular file", name);
    return -1;
  }
  if (!trusted_owner(t, st->st_uid)) {
    kiln__str_appendf(why, "%s belongs to %s, not to you%s", name,
                      describe(0, (unsigned)st->st_uid, who, sizeof who),
                      t->shared ? " nor to a member of the cache's group" : "");
    return -1;
  }
  if ((st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && !t->shared)) {
    kiln__str_appendf(why, "%s is writable by %s (mode %04o)", name,
                      (st->st_mode & S_IWOTH) ? "every user" : "its group",
                      (unsigned)(st->st_mode & 07777));
    return -1;
  }
  return 0;
}

enum kiln__trust_result kiln__trust_open_file(const kiln__trust *t, int dirfd,
                                              const char *name, int *fd_out,
                                              struct stat *st, kiln__str *why)
{
  *fd_out = -1;
  if (kiln__trust_seam)
    kiln__trust_seam(KILN__TRUST_BEFORE_OPEN, dirfd, name);
  /* O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: a FIFO in its
   * place must not hang the open (no effect on a regular file). */
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return KILN__TRUST_ABSENT;
    /* ELOOP (a link), or a file that cannot be opened: say which, from what
     * the name holds now. */
    int err = errno;
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 &&
        kiln__trust_check_file(t, name, st, why) != 0)
      return KILN__TRUST_REFUSED;
    kiln__str_appendf(why, "%s cannot be opened: %s", name, strerror(err));
    return KILN__TRUST_UNREADABLE;
  }
  if (kiln__trust_seam)
    kiln__trust_seam(KILN__TRUST_AFTER_OPEN, dirfd, name);
  if (fstat(fd, st) != 0) {
    kiln__str_appendf(why, "%s cannot be inspected: %s", name, strerror(errno));
    close(fd);
    return KILN__TRUST_UNREADABLE;
  }
  if (kiln__trust_check_file(t, name, st, why) != 0) {
    close(fd);
    return KILN__TRUST_REFUSED;
  }
  if (kiln__trust_seam)
    kiln__trust_seam(KILN__TRUST_AFTER_CHECK, dirfd, name);
  *fd_out = fd;
  return KILN__TRUST_OK;
}
