/*
 * tune_clblast.c — `kiln tune --clblast`: runs CLBlast's own GEMM tuners
 * (Debian's clblast-utils) for the picked device, reads the JSON files they
 * write, checks their fastest results in CLBlast's GEMM at other shapes
 * (tune_clblast_check.c says why), rematches the fastest right one of each
 * kernel and precision against CLBlast's own parameters at the device's
 * bench sizes (tune_clblast_rematch.c), and hands it, where it wins there,
 * to libkiln (kiln_tuning_set_clblast()), which keeps it in the device's
 * tuning record and gives it to CLBlast in every later runtime.
 *
 * The tuners are programs of their own: each is started with posix_spawn()
 * in a fresh temporary folder (they write their JSON into the current
 * one), never by fork(), as a driver's threads do not survive a fork of a
 * process that has opened OpenCL. Their table goes into a log there, and
 * one line a configuration to stderr.
 *
 * Which device: the tuners take -platform P -device D, positions in the
 * ICD loader's lists (CL_DEVICE_TYPE_ALL), which is how kiln numbers its
 * devices too (kiln_device_info.platform_index, device_index). That the
 * tuner ran on the same device is checked afterwards, by the device name
 * and platform version its JSON names: results from another device are
 * refused, not kept.
 *
 * The search is cut down to fit a few minutes on a small CPU device: the
 * tuners' full searches would take hours there. -fraction F makes a tuner
 * time 1/F of each phase's configurations, drawn at random (with a fixed
 * seed). CLBlast 1.5.3's xgemm tuner has four phases, GEMMK 0 and 1 each
 * with a small fixed set and a large random one (578, 120800, 407 and
 * 16566 configurations on PoCL here); F = 1500 times about 90 of them, the
 * random sets' share, at 512 x 512 x 512 (1024 costs 8 times more a
 * configuration and ranks them alike): 35 s for f32 on PoCL here, 100 s
 * for f64. xgemm_direct (CLBlast's kernel for small products) has 46 and
 * 8420, each costing 2.5 s here (CLBlast builds its four direct kernels
 * for every one); F = 300 times about 28 of them at 256. The whole run,
 * f32 and f64, took 2 minutes here with PoCL's kernel cache warm, checks
 * included, and 8.5 for the tuners alone with it cold on a busy machine.
 *
 * The tuning size follows the device: a GPU's xgemm tuner runs at 1024 and
 * at 4096 where memory allows (tiles that win at 512 lose at 8192 there),
 * and the candidates of both runs are ranked by GFLOP/s; a CPU's at 512.
 */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np() */
#define KILN_EXPERIMENTAL
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln_config.h"
#include "cli.h"
#include "kiln/kiln.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

extern char **environ;

#if HAVE_JSON_C && HAVE_CLBLAST

/* One of CLBlast's tuners and how kiln runs it. */
typedef struct tuner {
  const char *program;  /* the executable's name */
  const char *kernel;   /* CLBlast's database name for what it tunes */
  int exact;            /* its results name the kernel exactly, else with a
                          suffix (XgemmDirectTN) */
  unsigned cpu_size;    /* m = n = k on a CPU (any device but a GPU) */
  unsigned gpu_size[2]; /* on a GPU, those of them that fit */
  unsigned fraction;    /* -fraction: 1/F of each phase's configurations */
} tuner;

/* The direct kernel is CLBlast's for small products on every device. */
static const tuner tuners[] = {
  {"clblast_tuner_xgemm", "Xgemm", 1, 512, {1024, 4096}, 1500},
  {"clblast_tuner_xgemm_direct", "XgemmDirect", 0, 256, {256, 0}, 300},
};
enum { NTUNERS = sizeof tuners / sizeof tuners[0] };

/* The precisions tuned, where the device has them. */
static const struct {
  kiln_dtype dtype;
  const char *tag, *bits;
} precisions[] = {
  {KILN_F32, "f32", "32"}, {KILN_F64, "f64", "64"}, {KILN_F16, "f16", "16"}};

/* One of a tuner's results. */
typedef struct cand {
  double ms;
  unsigned size; /* the m = n = k it was timed at */
  size_t n;
  char names[32][48];
  size_t values[32];
} cand;

/* The fastest results of one tuner run, fastest first, and how many it
 * had in all. */
enum { CANDIDATES = 5 };
typedef struct best {
  cand c[CANDIDATES];
  size_t n, configs;
} best;

/* The tuner's absolute path (it runs in another folder), in dir or else
 * on PATH, into out (PATH_MAX bytes); 0, or -1. */
static int find_tuner(const char *dir, const char *program, char *out)
{
  const char *path = dir ? dir : getenv("PATH");
  char name[PATH_MAX];
  for (const char *p = path ? path : ""; *p;) {
    size_t len = dir ? strlen(p) : strcspn(p, ":");
    int n = snprintf(name, sizeof name, "%.*s/%s", (int)len, p, program);
    if (len && n > 0 && (size_t)n < sizeof name && access(name, X_OK) == 0 &&
        realpath(name, out))
      return 0;
    p += len + (p[len] == ':');
  }
  return -1;
}

/* dir/name into out: 0, or -1 when it does not fit. */
static int join(char *out, size_t size, const char *dir, const char *name)
{
  int n = snprintf(out, size, "%s/%s", dir, name);
  return n >= 0 && (size_t)n < size ? 0 : -1;
}

/* One line of the tuner's table as a progress line on stderr: its
 * configuration rows ("|   12 |    90 | ... |  3.41 ms |") and phases. */
static void progress(const char *line, const char *label)
{
  size_t id, total;
  if (strncmp(line, "* (", 3) == 0) {
    fprintf(stderr, "  %s: %s", label, line + 2);
    return;
  }
  if (sscanf(line, "| %zu | %zu |", &id, &total) != 2)
    return;
  const char *ms = NULL;
  for (const char *p = strstr(line, " ms |"); p; p = strstr(p + 1, " ms |"))
    ms = p;
  const char *num = ms;
  while (num && num > line && (num[-1] == '.' || (num[-1] >= '0' && num[-1] <= '9')))
    num--;
  if (ms && num < ms && strstr(line, "results match"))
    fprintf(stderr, "  %s [%zu/%zu] %.*s ms\n", label, id, total, (int)(ms - num), num);
  else
    fprintf(stderr, "  %s [%zu/%zu] skipped (it did not build, run or match)\n", label,
            id, total);
}

/* Runs the tuner at path with argv in folder dir, its output into
 * dir/tuner.log and progress on stderr. Its exit status; -1 when it was
 * killed, -2 (said) when it did not start. */
static int run_tuner(const char *path, char *const argv[], const char *dir,
                     const char *label)
{
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, dir);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid;
  int err = posix_spawn(&pid, path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    fprintf(stderr, "kiln tune --clblast: cannot start %s: %s\n", path, strerror(err));
    return -2;
  }
  char logname[4096], line[2048];
  FILE *in = fdopen(fds[0], "r");
  FILE *log =
    join(logname, sizeof logname, dir, "tuner.log") == 0 ? fopen(logname, "w") : NULL;
  while (in) {
    if (fgets(line, sizeof line, in)) {
      if (log)
        fputs(line, log);
      progress(line, label);
    } else if (ferror(in) && errno == EINTR) {
      clearerr(in); /* Ctrl-C: the tuner got it too; read to its end */
    } else {
      break;
    }
  }
  if (in)
    fclose(in);
  else
    close(fds[0]);
  if (log)
    fclose(log);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *str_at(json_object *o, const char *k)
{
  json_object *v;
  return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
           ? json_object_get_string(v)
           : NULL;
}

/* Milliseconds per GFLOP: how candidates timed at different sizes rank. */
static double rank(const cand *c)
{
  return c->ms / ((double)c->size * c->size * c->size * 2e-9);
}

/* Keeps result r (one of a JSON file's "results", timed at tsize^3) in b
 * when it is of t's kernel and among the fastest; 0, or -1 with why for one
 * that does not read (parameters not whole numbers, too many). */
static int take_result(json_object *r, const tuner *t, unsigned tsize, best *b, char *why,
                       size_t size)
{
  json_object *tm, *ps;
  const char *kernel = str_at(r, "kernel");
  size_t klen = strlen(t->kernel);
  if (!kernel || strncmp(kernel, t->kernel, klen) != 0 || (t->exact && kernel[klen]))
    return 0;
  if (!json_object_object_get_ex(r, "time", &tm) ||
      !(json_object_is_type(tm, json_type_double) ||
        json_object_is_type(tm, json_type_int)) ||
      !json_object_object_get_ex(r, "parameters", &ps) ||
      !json_object_is_type(ps, json_type_object))
    return snprintf(why, size, "a result without a time or parameters"), -1;
  b->configs++;
  cand next = {.ms = json_object_get_double(tm), .size = tsize};
  json_object_object_foreach(ps, name, val)
  {
    if (strcmp(name, "PRECISION") == 0)
      continue; /* the tuner's note of the precision, not a parameter */
    int64_t v = json_object_is_type(val, json_type_int) ? json_object_get_int64(val) : -1;
    if (v < 0 || next.n == 32 || strlen(name) >= sizeof next.names[0])
      return snprintf(why, size, "parameter %.48s is not a whole number", name), -1;
    strcpy(next.names[next.n], name);
    next.values[next.n++] = (size_t)v;
  }
  size_t i = b->n < CANDIDATES ? b->n++ : CANDIDATES;
  for (; i > 0 && rank(&b->c[i - 1]) > rank(&next); i--)
    if (i < CANDIDATES)
      b->c[i] = b->c[i - 1];
  if (i < CANDIDATES)
    b->c[i] = next;
  return 0;
}

/* Reads every JSON file the tuner wrote into dir, for device d and
 * precision bits, keeping t's fastest result in b: 0, or -1 with why. */
static int read_results(const char *dir, const tuner *t, unsigned tsize,
                        const kiln_device_info *d, const char *bits, best *b, char *why,
                        size_t size)
{
  DIR *dh = opendir(dir);
  struct dirent *e;
  int rc = dh ? 0 : -1;
  while (rc == 0 && (e = readdir(dh))) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0)
      continue;
    char path[4096];
    char *text =
      join(path, sizeof path, dir, e->d_name) == 0 ? kiln_cli_read_file(path) : NULL;
    json_object *o = text ? json_tokener_parse(text) : NULL, *rs;
    free(text);
    const char *dev = o ? str_at(o, "device") : NULL,
               *pv = o ? str_at(o, "platform_version") : NULL;
    if (!o || !json_object_object_get_ex(o, "results", &rs) ||
        !json_object_is_type(rs, json_type_array) || !dev || !pv ||
        !str_at(o, "precision")) {
      snprintf(why, size, "%s is not a CLBlast tuner's JSON", e->d_name);
      rc = -1;
    } else if (strcmp(dev, d->name) != 0 || strcmp(pv, d->platform_version) != 0) {
      snprintf(why, size, "%s names the device '%s' (%s), not kiln's '%s' (%s)",
               e->d_name, dev, pv, d->name, d->platform_version);
      rc = -1;
    } else if (strcmp(str_at(o, "precision"), bits) == 0) {
      for (size_t i = 0; rc == 0 && i < json_object_array_length(rs); i++)
        rc = take_result(json_object_array_get_idx(rs, i), t, tsize, b, why, size);
    }
    if (o)
      json_object_put(o);
  }
  if (dh)
    closedir(dh);
  else
    snprintf(why, size, "cannot read the folder %.400s", dir);
  return rc;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
  (void)st, (void)type, (void)f;
  remove(path); /* what cannot go stays; the rest goes */
  return 0;
}

/* Removes the folder dir and all in it. */
static void remove_tree(const char *dir)
{
  nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Checks candidate c (the i-th fastest) of kernel at precision tag in
 * CLBlast's GEMM on device d, in a process of its own (this program's
 * `tune --clblast-check`, tune_clblast_check.c, says why), with a scratch
 * record folder in dir and its output in dir/check.log: 0 when right. */
static int check(const kiln_device_info *d, const char *kernel, const char *tag,
                 const cand *c, size_t i, const char *label, const char *dir)
{
  char sel[32], sub[32], scratch[4096], log[4096], args[32][64];
  char *argv[40] = {"kiln",  "tune",         "--clblast-check", sel,
                    scratch, (char *)kernel, (char *)tag};
  size_t argc = 7;
  snprintf(sel, sizeof sel, "%u:%u", d->platform_index, d->device_index);
  snprintf(sub, sizeof sub, "check-%zu", i);
  if (join(scratch, sizeof scratch, dir, sub) != 0 || mkdir(scratch, 0700) != 0 ||
      join(log, sizeof log, dir, "check.log") != 0)
    return -1;
  for (size_t j = 0; j < c->n; j++) {
    snprintf(args[j], sizeof args[j], "%s=%zu", c->names[j], c->values[j]);
    argv[argc++] = args[j];
  }
  argv[argc] = NULL;
  fprintf(stderr, "  %s: checking the %s (%.3f ms) in CLBlast's GEMM: ", label,
          i ? "next fastest" : "fastest", c->ms);
  /* The driver's and CLBlast's messages into the log; the verdict, one
   * line, comes back in scratch/verdict. */
  int rc = kiln_cli_spawn_self(argv, log);
  char verdict[4096];
  char *line = join(verdict, sizeof verdict, scratch, "verdict") == 0
                 ? kiln_cli_read_file(verdict)
                 : NULL;
  fprintf(stderr, "%s", line && *line ? line : "no verdict (see check.log)\n");
  free(line);
  return rc;
}

/* The sizes tuner t runs at on device d for elements of elem bytes (the
 * head of this file says why), into out: how many. */
static size_t tuning_sizes(const tuner *t, const kiln_device_info *d, size_t elem,
                           unsigned *out)
{
  size_t n = 0;
  if (!(d->type & KILN_DEVICE_GPU)) {
    out[n++] = t->cpu_size;
    return n;
  }
  for (size_t i = 0; i < 2; i++)
    if (t->gpu_size[i] && kiln_cli_clblast_fits(d, t->gpu_size[i], elem))
      out[n++] = t->gpu_size[i];
  if (n == 0)
    out[n++] = t->cpu_size;
  return n;
}

/* Runs tuner t (at path) at precision p and size^3 on d in folder dir: the
 * tuner's exit status, as run_tuner(). */
static int run_at(const tuner *t, const char *path, size_t p, unsigned size_n,
                  const kiln_device_info *d, const char *dir, const char *label)
{
  char plat[16], dev[16], size[16], fraction[16];
  snprintf(plat, sizeof plat, "%u", d->platform_index);
  snprintf(dev, sizeof dev, "%u", d->device_index);
  snprintf(size, sizeof size, "%u", size_n);
  snprintf(fraction, sizeof fraction, "%u", t->fraction);
  char *argv[] = {(char *)t->program,
                  "-platform",
                  plat,
                  "-device",
                  dev,
                  "-precision",
                  (char *)precisions[p].bits,
                  "-m",
                  size,
                  "-n",
                  size,
                  "-k",
                  size,
                  "-fraction",
                  fraction,
                  "-runs",
                  "2",
                  NULL};
  fprintf(stderr,
          "kiln tune --clblast: %s: %s -platform %s -device %s -precision %s "
          "-m %s -n %s -k %s -fraction %s -runs 2\n",
          label, path, plat, dev, precisions[p].bits, size, size, size, fraction);
  return run_tuner(path, argv, dir, label);
}

/* Runs tuner t at precision p on rt's device at its tuning sizes, checks
 * its fastest results in CLBlast's GEMM (of the CANDIDATES fastest), and
 * keeps the fastest right one when it beats CLBlast's own parameters in
 * the rematch (times: --rematch-times): 0, or 1 after saying what went
 * wrong. */
static int tune_one(kiln_runtime *rt, const tuner *t, const char *path, size_t p,
                    const char *times, const volatile sig_atomic_t *stop)
{
  const kiln_device_info *d = kiln_runtime_device(rt);
  const char *tmp = getenv("TMPDIR");
  char dir[4096], sub[4200], label[64], why[512] = "";
  snprintf(dir, sizeof dir, "%s/kiln-clblast-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  snprintf(label, sizeof label, "%s %s", t->kernel, precisions[p].tag);
  if (!mkdtemp(dir)) {
    fprintf(stderr, "kiln tune --clblast: cannot make a folder %s: %s\n", dir,
            strerror(errno));
    return 1;
  }
  unsigned sizes[2];
  size_t nsizes = tuning_sizes(t, d, kiln_dtype_size(precisions[p].dtype), sizes);
  double t0 = now();
  best b = {0};
  int rc = 0, status = 0;
  for (size_t s = 0; s < nsizes && rc == 0 && !*stop; s++) {
    snprintf(sub, sizeof sub, "%s/tune-%u", dir, sizes[s]);
    if (mkdir(sub, 0700) != 0 ||
        (status = run_at(t, path, p, sizes[s], d, sub, label)) == -2) {
      remove_tree(dir);
      return 1;
    }
    rc = read_results(sub, t, sizes[s], d, precisions[p].bits, &b, why, sizeof why);
  }
  if (rc == 0 && b.n == 0)
    snprintf(why, sizeof why, "%s", *stop ? "stopped before any result" : "no result");
  if (rc != 0 || b.n == 0) {
    fprintf(stderr,
            "kiln tune --clblast: %s: %s (the tuner exited with %d; its output "
            "is in %s/tuner.log)\n",
            label, why, status, sub);
    if (*stop)
      remove_tree(dir);
    return *stop ? 0 : 1;
  }
  size_t kept = b.n;
  for (size_t i = 0; i < b.n && kept == b.n && !*stop; i++)
    if (check(d, t->kernel, precisions[p].tag, &b.c[i], i, label, dir) == 0)
      kept = i;
  if (kept == b.n) {
    printf(
      "%-11s %s  none of the %zu fastest of %zu configurations is right in CLBlast's "
      "GEMM at every size checked; CLBlast's own parameters stay (%s has the logs)\n",
      t->kernel, precisions[p].tag, b.n, b.configs, dir);
    return 0;
  }
  const cand *c = &b.c[kept];
  const char *names[32];
  char args[32][64], *params[32], summary[256];
  for (size_t i = 0; i < c->n; i++) {
    names[i] = c->names[i];
    snprintf(args[i], sizeof args[i], "%s=%zu", c->names[i], c->values[i]);
    params[i] = args[i];
  }
  kiln_cli_clblast_job job = {
    d, t->kernel, precisions[p].tag, label, precisions[p].dtype, c->n, params, times};
  int win = kiln_cli_clblast_rematch(&job, dir, summary, sizeof summary);
  if (win < 0) {
    fprintf(stderr, "kiln tune --clblast: %s: %s\n", label, summary);
    return 1;
  }
  if (win == 0) {
    printf("%-11s %s  refused the %s (%.3f ms at %ux%ux%u): %s; CLBlast's own "
           "parameters stay\n",
           t->kernel, precisions[p].tag, kept ? "fastest right one" : "best", c->ms,
           c->size, c->size, c->size, summary);
    fflush(stdout);
    remove_tree(dir);
    return 0;
  }
  kiln_status st =
    kiln_tuning_set_clblast(rt, t->kernel, precisions[p].dtype, c->n, names, c->values);
  if (st != KILN_OK && st != KILN_ERR_IO) {
    fprintf(stderr, "kiln tune --clblast: %s: the tuner's output is in %s\n", label, dir);
    return kiln_cli_fail("tune --clblast", st, rt);
  }
  printf("%-11s %s  %.3f ms at %ux%ux%u, the %s of %zu configurations (%.0f s):",
         t->kernel, precisions[p].tag, c->ms, c->size, c->size, c->size,
         kept ? "fastest right one" : "best", b.configs, now() - t0);
  for (size_t i = 0; i < c->n; i++)
    printf(" %s=%zu", c->names[i], c->values[i]);
  printf("\n%-11s %s  kept: %s\n", t->kernel, precisions[p].tag, summary);
  fflush(stdout);
  remove_tree(dir);
  return st == KILN_OK ? 0 : kiln_cli_fail("tune --clblast", st, rt);
}

int kiln_cli_tune_clblast(kiln_runtime *rt, const char *dir, const char *times,
                          const volatile sig_atomic_t *stop)
{
  const kiln_device_info *d = kiln_runtime_device(rt);
  char paths[NTUNERS][PATH_MAX];
  size_t sizes[16];
  double given[16][2];
  if (times && kiln_cli_clblast_read_times(times, sizes, given) == 0)
    return 1; /* before minutes of tuning */
  for (size_t t = 0; t < NTUNERS; t++)
    if (find_tuner(dir, tuners[t].program, paths[t]) != 0) {
      fprintf(stderr,
              "kiln tune --clblast: %s is not %s%s (CLBlast's tuners; Debian: apt "
              "install clblast-utils)\n",
              tuners[t].program, dir ? "in " : "on PATH", dir ? dir : "");
      return 1;
    }
  int rc = 0;
  for (size_t p = 0; p < sizeof precisions / sizeof precisions[0]; p++) {
    if ((precisions[p].dtype == KILN_F64 && !d->has_fp64) ||
        (precisions[p].dtype == KILN_F16 && !d->has_fp16))
      continue;
    for (size_t t = 0; t < NTUNERS && !*stop; t++)
      rc |= tune_one(rt, &tuners[t], paths[t], p, times, stop);
  }
  return rc;
}

#else /* !(HAVE_JSON_C && HAVE_CLBLAST) */

int kiln_cli_tune_clblast(kiln_runtime *rt, const char *dir, const char *times,
                          const volatile sig_atomic_t *stop)
{
  (void)rt, (void)dir, (void)times, (void)stop;
  fprintf(stderr,
          "kiln tune --clblast: this kiln was built without %s, which it needs "
          "(Debian: %s, then meson setup --reconfigure)\n",
          HAVE_CLBLAST ? "json-c" : "CLBlast",
          HAVE_CLBLAST ? "libjson-c-dev" : "libclblast-dev");
  return 1;
}

#endif
