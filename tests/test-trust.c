/*
 * test-trust.c — kiln runs what its binary cache holds only when no one but
 * the user could have put it there (src/compile/trust.c, src/compile/cache.c): a folder
 * others may write, one owned by another user, one under a folder others
 * may replace it from, and entries that are links, another user's or
 * writable by others are refused, with a note that says why and how to fix
 * it; refused entries are never loaded, replaced or deleted; an entry
 * swapped in between check and use is not read; a team folder is accepted
 * only as KILN_CACHE_SHARED describes. In every refused case the program
 * still builds and runs correctly, with the cache off.
 *
 * Cases that need another owner run as root (chown, setgroups), as CI
 * does; other users run the rest. meson runs this file a second time as
 * user nobody (setpriv), where the rules must hold for an ordinary user.
 */
#define _DEFAULT_SOURCE /* setgroups() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common.h"
#include "saxpy.h"

#include "base/env.h"
#include "compile/cache.h"
#include "compile/trust.h"

typedef struct fixture {
  char root[64];   /* the test's own folder, 0700 */
  char dir[128];   /* root/cache */
  char diag[2048]; /* the last runtime's diagnostics */
  char entry[400]; /* the path of saxpy's entry, once stored */
} fixture;

/* ---- helpers ------------------------------------------------------------- */

/* A runtime whose cache is `dir` builds and runs saxpy; returns its cache
 * counters, and keeps its diagnostics in fx->diag. */
static kiln_cache_usage build_in(fixture *fx, const char *dir, int shared)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.cache_dir = dir;
  opts.cache_shared = shared;
  kiln_runtime *rt = kiln_test_runtime_with(&opts);
  kiln_program *p = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, "-DTRUST_TEST", &p));
  run_saxpy(rt, p, 257); /* right, whether from the cache or not */
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  assert_kiln_ok(rt, kiln_cache_stats(rt, &u));
  snprintf(fx->diag, sizeof fx->diag, "%s", kiln_runtime_diagnostics(rt));
  u.dir = u.dir ? fx->dir : NULL; /* owned by the runtime, about to go */
  assert_kiln_ok(rt, kiln_program_destroy(p));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  return u;
}

static void expect_note(const fixture *fx, const char *needle)
{
  if (!strstr(fx->diag, needle))
    fail_msg("the diagnostics do not say '%s':\n%s", needle, fx->diag);
}

/* The folder is refused: the cache is off, the note says `why`, the program
 * was compiled and ran, and nothing was written into the folder. */
static void expect_refused(fixture *fx, const char *dir, int shared, const char *why)
{
  kiln_cache_usage u = build_in(fx, dir, shared);
  assert_null(u.dir);
  assert_int_equal(u.compiles, 1);
  assert_int_equal(u.stores, 0);
  expect_note(fx, "kernel cache off: ");
  expect_note(fx, why);
}

static void expect_used(fixture *fx, const char *dir, int shared)
{
  kiln_cache_usage u = build_in(fx, dir, shared);
  if (!u.dir)
    fail_msg("%s was refused:\n%s", dir, fx->diag);
  assert_int_equal(u.hits + u.stores, 1);
}

/* Stores saxpy's entry in fx->dir (a first runtime), and finds its name. */
static void store_entry(fixture *fx, int shared)
{
  kiln_cache_usage u = build_in(fx, fx->dir, shared);
  assert_int_equal(u.stores, 1);
  DIR *d = opendir(fx->dir);
  struct dirent *e;
  fx->entry[0] = '\0';
  while (d && (e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".bin"))
      snprintf(fx->entry, sizeof fx->entry, "%s/%s", fx->dir, e->d_name);
  if (d)
    closedir(d);
  assert_true(fx->entry[0] != '\0');
}

/* The entry was left alone: not loaded, not replaced, not deleted. */
static void expect_untrusted(fixture *fx, int shared, const char *why)
{
  struct stat before, after;
  assert_int_equal(lstat(fx->entry, &before), 0);
  kiln_cache_usage u = build_in(fx, fx->dir, shared);
  assert_non_null(u.dir);
  assert_int_equal(u.hits, 0);
  assert_int_equal(u.compiles, 1);
  assert_int_equal(u.stores, 0);
  assert_int_equal(u.untrusted, 1);
  if (!strstr(u.untrusted_note, why))
    fail_msg("the note does not say '%s': %s", why, u.untrusted_note);
  assert_int_equal(lstat(fx->entry, &after), 0);
  assert_int_equal(after.st_ino, before.st_ino);
  assert_int_equal(after.st_mtime, before.st_mtime);
  assert_int_equal(after.st_uid, before.st_uid);
}

static uid_t nobody_uid(void)
{
  struct passwd *pw = getpwnam("nobody");
  return pw ? pw->pw_uid : 65534;
}

/* A group that is not this process's and not root's private group, and a
 * user whose primary group it is (a member), from the account database:
 * "daemon" on Debian. */
static gid_t team_group(uid_t *member)
{
  setpwent();
  struct passwd *pw;
  while ((pw = getpwent()) != NULL) {
    if (pw->pw_uid != 0 && pw->pw_uid != geteuid() && pw->pw_gid != 0 &&
        pw->pw_gid != getegid() && pw->pw_uid != nobody_uid()) {
      *member = pw->pw_uid;
      gid_t g = pw->pw_gid;
      endpwent();
      return g;
    }
  }
  endpwent();
  fail_msg("no account with a group of its own to act as a team");
  return 0;
}

static int setup(void **state)
{
  fixture *fx = calloc(1, sizeof *fx);
  if (!fx || kiln_test_cache_folders("trust", fx->root, sizeof fx->root, fx->dir,
                                     sizeof fx->dir)) {
    free(fx);
    return -1;
  }
  *state = fx;
  return mkdir(fx->dir, 0700);
}

static int teardown(void **state)
{
  fixture *fx = *state;
  char cmd[200];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", fx->root, fx->root);
  int rc = system(cmd);
  free(fx);
  return rc == 0 ? 0 : -1;
}

/* ---- folders ------------------------------------------------------------- */

static void test_trust_own_folder_used(void **state)
{
  fixture *fx = *state;
  store_entry(fx, 0);
  struct stat st;
  assert_int_equal(stat(fx->entry, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  kiln_cache_usage u = build_in(fx, fx->dir, 0);
  assert_int_equal(u.hits, 1);
  assert_int_equal(u.compiles, 0);
  assert_int_equal(u.untrusted, 0);
  /* Asking for a team cache leaves a private folder private. */
  assert_int_equal(build_in(fx, fx->dir, 1).shared, 0);
}

static void test_trust_world_writable_folder(void **state)
{
  fixture *fx = *state;
  assert_int_equal(chmod(fx->dir, 0777), 0);
  char fix[200];
  snprintf(fix, sizeof fix, "fix: chmod 700 %s", fx->dir);
  expect_refused(fx, fx->dir, 0, "is writable by every user (mode 0777)");
  expect_note(fx, fix);
  /* Asking for a team cache changes nothing: no team writes everywhere. */
  expect_refused(fx, fx->dir, 1, "is writable by every user");
  assert_int_equal(rmdir(fx->dir), 0); /* empty: nothing was written */
}

static void test_trust_folder_of_another_user(void **state)
{
  fixture *fx = *state;
  assert_int_equal(chown(fx->dir, nobody_uid(), (gid_t)-1), 0);
  expect_refused(fx, fx->dir, 0, "belongs to user 'nobody'");
  expect_note(fx, "not to you");
}

static void test_trust_group_writable_folder(void **state)
{
  fixture *fx = *state;
  uid_t member;
  gid_t team = team_group(&member);
  assert_int_equal(chown(fx->dir, geteuid(), team), 0);
  assert_int_equal(chmod(fx->dir, 0770), 0);
  expect_refused(fx, fx->dir, 0, "whose members could plant code");
  expect_note(fx, "KILN_CACHE_SHARED=1");
}

static void test_trust_parent_others_could_replace(void **state)
{
  fixture *fx = *state;
  /* World-writable without the sticky bit: anyone may rename cache/. */
  assert_int_equal(chmod(fx->root, 0777), 0);
  expect_refused(fx, fx->dir, 0,
                 "a folder above it, is writable by every user "
                 "without the sticky bit");
  expect_note(fx, "chmod o-w");
  /* With it, as /tmp has, only the owner may. */
  assert_int_equal(chmod(fx->root, 01777), 0);
  expect_used(fx, fx->dir, 0);
  assert_int_equal(chmod(fx->root, 0700), 0);
  /* Owned by another user, who may always rename what it holds. */
  if (geteuid() != 0)
    return;
  assert_int_equal(chown(fx->root, nobody_uid(), (gid_t)-1), 0);
  expect_refused(fx, fx->dir, 0, "a folder above it, belongs to user 'nobody'");
  assert_int_equal(chown(fx->root, 0, (gid_t)-1), 0);
}

/* A link to a good folder is followed: it is the folder that is checked. */
static void test_trust_folder_through_a_link(void **state)
{
  fixture *fx = *state;
  char link[160];
  snprintf(link, sizeof link, "%s/link", fx->root);
  assert_int_equal(symlink(fx->dir, link), 0);
  expect_used(fx, link, 0);
  assert_int_equal(chmod(fx->dir, 0777), 0);
  expect_refused(fx, link, 0, "is writable by every user");
}

/* ---- entries ------------------------------------------------------------- */

static void test_trust_entry_of_another_user(void **state)
{
  fixture *fx = *state;
  store_entry(fx, 0);
  assert_int_equal(chown(fx->entry, nobody_uid(), (gid_t)-1), 0);
  expect_untrusted(fx, 0, "belongs to user 'nobody'");
}

static void test_trust_entry_writable_by_others(void **state)
{
  fixture *fx = *state;
  store_entry(fx, 0);
  assert_int_equal(chmod(fx->entry, 0666), 0);
  expect_untrusted(fx, 0, "is writable by every user (mode 0666)");
  assert_int_equal(chmod(fx->entry, 0620), 0);
  expect_untrusted(fx, 0, "is writable by its group (mode 0620)");
}

/* A link at an entry's name is refused even when it points at a good entry. */
static void test_trust_entry_is_a_link(void **state)
{
  fixture *fx = *state;
  store_entry(fx, 0);
  char elsewhere[160];
  snprintf(elsewhere, sizeof elsewhere, "%s/good.bin", fx->root);
  assert_int_equal(rename(fx->entry, elsewhere), 0);
  assert_int_equal(symlink(elsewhere, fx->entry), 0);
  expect_untrusted(fx, 0, "is a symbolic link");
  /* `kiln cache`'s view: not counted as an entry, not cleared. */
  kiln_runtime *rt = kiln_test_runtime_on(NULL, fx->dir, 0);
  uint64_t entries = 9, bytes = 9, removed = 9;
  assert_kiln_ok(rt, kiln_cache_contents(rt, &entries, &bytes));
  assert_int_equal(entries, 0);
  assert_kiln_ok(rt, kiln_cache_clear(rt, &removed));
  assert_int_equal(removed, 0);
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  assert_kiln_ok(rt, kiln_cache_stats(rt, &u));
  assert_int_equal(u.untrusted, 2);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  struct stat st;
  assert_int_equal(lstat(fx->entry, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
}

/* ---- between check and use (the seam in trust.c) -------------------------- */

static char swap_from[256], swap_to[256];
static enum kiln__trust_stage swap_at;

/* Puts swap_from at the entry's name at the chosen stage: rename() is what
 * an attacker with write access to the folder would do. */
static void swap_entry(enum kiln__trust_stage stage, int dirfd, const char *name)
{
  (void)dirfd;
  (void)name;
  if (stage == swap_at && swap_from[0])
    assert_int_equal(rename(swap_from, swap_to), 0);
}

/* Opens the cache on fx->dir through the internal interface. */
static void open_cache(fixture *fx, kiln__cache *c)
{
  kiln__config cfg = {.cache_dir = fx->dir};
  kiln__cache_open(c, &cfg, NULL);
  assert_non_null(c->dir);
}

/* Loads `key` from fx->dir with swap_from renamed over its entry at
 * `stage`; returns what kiln__cache_load() did and counts in *untrusted. */
static int load_swapped(fixture *fx, const kiln__cache_key *key,
                        enum kiln__trust_stage stage, unsigned char **out, size_t *size,
                        uint64_t *untrusted)
{
  kiln__cache c;
  open_cache(fx, &c);
  swap_at = stage;
  kiln__trust_seam = swap_entry;
  int rc = kiln__cache_load(&c, key, out, size);
  kiln__trust_seam = NULL;
  *untrusted = c.untrusted;
  kiln__cache_close(&c);
  return rc;
}

/* Stores `payload` as key's entry in fx->dir, and names it in swap_to. */
static void store_as(fixture *fx, const kiln__cache_key *key, const char *payload)
{
  kiln__cache c;
  open_cache(fx, &c);
  assert_int_equal(
    kiln__cache_store(&c, key, (const unsigned char *)payload, strlen(payload) + 1), 0);
  kiln__cache_close(&c);
  char hex[33];
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", key->bytes[i]);
  snprintf(swap_to, sizeof swap_to, "%s/%s.bin", fx->dir, hex);
}

static const char good[] = "the checked payload", evil[] = "a planted payload!!";

/* The swap at `stage` leaves the entry refused: nothing loaded, and counted. */
static void expect_swap_refused(fixture *fx, const kiln__cache_key *key,
                                enum kiln__trust_stage stage)
{
  unsigned char *out = NULL;
  size_t size = 0;
  uint64_t untrusted;
  assert_int_equal(load_swapped(fx, key, stage, &out, &size, &untrusted), -1);
  assert_null(out);
  assert_int_equal(untrusted, 1);
}

/* A link to a well-formed entry kept elsewhere, renamed over the entry
 * after kiln chose the name and before it opens it, is refused. */
static void test_trust_entry_swapped_before_open(void **state)
{
  fixture *fx = *state;
  kiln__cache_key key = {{1, 2, 3}};
  store_as(fx, &key, good);
  char kept[300];
  snprintf(kept, sizeof kept, "%s/kept.bin", fx->root);
  assert_int_equal(link(swap_to, kept), 0);
  snprintf(swap_from, sizeof swap_from, "%s/planted", fx->dir);
  assert_int_equal(symlink(kept, swap_from), 0);
  expect_swap_refused(fx, &key, KILN__TRUST_BEFORE_OPEN);
}

/* The name holds a file kiln must refuse when opened, and a good one by the
 * time it is checked: the check is of what was opened. */
static void test_trust_entry_swapped_after_open(void **state)
{
  fixture *fx = *state;
  kiln__cache_key key = {{7, 8, 9}};
  store_as(fx, &key, good);
  snprintf(swap_from, sizeof swap_from, "%s/good", fx->root);
  assert_int_equal(rename(swap_to, swap_from), 0);
  store_as(fx, &key, evil);
  assert_int_equal(chmod(swap_to, 0666), 0);
  expect_swap_refused(fx, &key, KILN__TRUST_AFTER_OPEN);
}

/* A well-formed entry renamed over the name after the check is not what is
 * read: what was checked is. */
static void test_trust_entry_swapped_after_check(void **state)
{
  fixture *fx = *state;
  kiln__cache_key key = {{4, 5, 6}};
  store_as(fx, &key, evil);
  snprintf(swap_from, sizeof swap_from, "%s/planted", fx->root);
  assert_int_equal(rename(swap_to, swap_from), 0);
  store_as(fx, &key, good);
  unsigned char *out = NULL;
  size_t size = 0;
  uint64_t untrusted;
  assert_int_equal(
    load_swapped(fx, &key, KILN__TRUST_AFTER_CHECK, &out, &size, &untrusted), 0);
  assert_int_equal(untrusted, 0);
  assert_int_equal(size, sizeof good);
  assert_memory_equal(out, good, sizeof good);
  free(out);
}

/* ---- a team cache ---------------------------------------------------------- */

/* Adds `g` to this process's groups (root only); returns the old count. */
static int join_group(gid_t g, gid_t *saved, int cap)
{
  int n = getgroups(cap - 1, saved);
  assert_true(n >= 0);
  saved[n] = g;
  assert_int_equal(setgroups((size_t)n + 1, saved), 0);
  return n;
}

static void test_trust_team_folder(void **state)
{
  fixture *fx = *state;
  uid_t member;
  gid_t team = team_group(&member), saved[256];
  int n = join_group(team, saved, 256);
  assert_int_equal(chown(fx->dir, geteuid(), team), 0);
  assert_int_equal(chmod(fx->dir, 02770), 0);
  /* Not asked for: refused, with the way to ask. */
  expect_refused(fx, fx->dir, 0, "KILN_CACHE_SHARED=1");
  /* Asked for: entries are written for the team to read... */
  store_entry(fx, 1);
  struct stat st;
  assert_int_equal(stat(fx->entry, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0640);
  assert_int_equal(st.st_gid, team); /* the setgid bit's doing */
  /* ...and a member's entry is loaded... */
  assert_int_equal(chown(fx->entry, member, (gid_t)-1), 0);
  kiln_cache_usage u = build_in(fx, fx->dir, 1);
  assert_int_equal(u.hits, 1);
  assert_int_equal(u.compiles, 0);
  assert_int_equal(u.shared, 1);
  /* ...but an outsider's is not, nor a member's anywhere else. */
  assert_int_equal(chown(fx->entry, nobody_uid(), (gid_t)-1), 0);
  expect_untrusted(fx, 1, "nor to a member of the cache's group");
  assert_int_equal(chmod(fx->dir, 0700), 0);
  assert_int_equal(chown(fx->entry, member, (gid_t)-1), 0);
  expect_untrusted(fx, 1, "belongs to user");
  assert_int_equal(setgroups((size_t)n, saved), 0);
}

static void test_trust_team_folder_refused(void **state)
{
  fixture *fx = *state;
  uid_t member;
  gid_t team = team_group(&member), saved[256];
  assert_int_equal(chown(fx->dir, geteuid(), team), 0);
  /* Not a group this process has. */
  assert_int_equal(chmod(fx->dir, 02770), 0);
  expect_refused(fx, fx->dir, 1, "whose members could plant code");
  int n = join_group(team, saved, 256);
  /* Without the setgid bit; world-writable. */
  assert_int_equal(chmod(fx->dir, 0770), 0);
  expect_refused(fx, fx->dir, 1, "without the setgid bit");
  expect_note(fx, "chmod g+s");
  assert_int_equal(chmod(fx->dir, 02777), 0);
  expect_refused(fx, fx->dir, 1, "is writable by every user");
  /* Owned by someone outside the team. */
  assert_int_equal(chmod(fx->dir, 02770), 0);
  assert_int_equal(chown(fx->dir, nobody_uid(), team), 0);
  expect_refused(fx, fx->dir, 1, "nor to a member of its group");
  assert_int_equal(setgroups((size_t)n, saved), 0);
}

/* usage: test-trust                  as root (CI) or any user
 *        test-trust --unprivileged   as an ordinary user, by setpriv */
int main(int argc, char **argv)
{
  kiln_test_require_device();
  unsetenv("KILN_CACHE_SHARED");
  int unprivileged = argc == 2 && strcmp(argv[1], "--unprivileged") == 0;
  if (unprivileged && geteuid() == 0) {
    fprintf(stderr, "test-trust --unprivileged runs as root: setpriv did not "
                    "switch users\n");
    return 1;
  }
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest everyone[] = {
    T(test_trust_own_folder_used),
    T(test_trust_world_writable_folder),
    T(test_trust_parent_others_could_replace),
    T(test_trust_folder_through_a_link),
    T(test_trust_entry_writable_by_others),
    T(test_trust_entry_is_a_link),
    T(test_trust_entry_swapped_before_open),
    T(test_trust_entry_swapped_after_open),
    T(test_trust_entry_swapped_after_check),
  };
  /* Another owner takes chown, and a team setgroups: root's. */
  const struct CMUnitTest as_root[] = {
    T(test_trust_folder_of_another_user), T(test_trust_group_writable_folder),
    T(test_trust_entry_of_another_user),  T(test_trust_team_folder),
    T(test_trust_team_folder_refused),
  };
#undef T
  enum {
    N_EVERYONE = sizeof everyone / sizeof everyone[0],
    N_ROOT = sizeof as_root / sizeof as_root[0]
  };
  struct CMUnitTest tests[N_EVERYONE + N_ROOT];
  memcpy(tests, everyone, sizeof everyone);
  size_t n = N_EVERYONE;
  if (geteuid() == 0) {
    memcpy(tests + n, as_root, sizeof as_root);
    n += N_ROOT;
  } else if (getenv("CI") && !unprivileged) {
    fprintf(stderr, "CI runs test-trust as root, so that no case is left out\n");
    return 1;
  } else {
    fprintf(stderr, "# not root: the cases with another owner do not run\n");
  }
  /* One group, so that TAP has one plan. */
  return _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
}
