/*
 * test-tuning.c — tuning records and kiln_tune() (src/tuning/record.c, src/tuning/tune.c):
 * a record round-trips into the next runtime, whose tuned kernels still
 * match the CPU references; every kind of bad record is ignored with a
 * note and the rules' parameters apply; kiln_tuning_set() refuses what a
 * runtime would ignore; kiln_tune() keeps a record, stops when asked, and
 * two processes tuning one device at once leave a record that loads;
 * benchmark mode runs the faster backend of a shape (convolution, FFT, sum)
 * and the next process uses its choice; its timing is a profile row of its
 * own; 8 threads benchmark one runtime at once, and two processes one
 * folder. Each test gets a fresh cache folder under /tmp. Built only with
 * json-c.
 */
#define KILN_EXPERIMENTAL /* the tuning API */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conv-case.h"
#include "kiln_config.h"
#include "tuning-case.h"
#include "base/util.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "tuning/tune.h"
#include "tuning/tuning.h"

static void assert_defaults(kiln_runtime *rt)
{
  kiln__tuning want;
  kiln__tuning_defaults(&kiln__runtime_device(rt)->info, &want);
  assert_memory_equal(&rt->tuning->t, &want, sizeof want);
}

/* Parameters unlike the rules' on any device, and valid on PoCL. */
static kiln__tuning unusual(kiln_runtime *rt)
{
  kiln__tuning t = rt->tuning->t;
  t.gemm[KILN__GEMM_F32].tm = 5;
  t.gemm[KILN__GEMM_F32].vw = 4;
  t.gemm[KILN__GEMM_F32].cg = 4;
  t.gemm[KILN__GEMM_F32].akib = 777;
  t.gemm[KILN__GEMM_F16].tm = 3;
  t.gemm[KILN__GEMM_F64].vw = 2;
  t.reduce.chunks = 3;
  t.fft.group = 32;
  t.fft.wide_from = 64;
  t.fft.vec_first = !t.fft.vec_first;
  t.fft.row_max = 512;
  t.conv = (kiln__conv_tuning){.qw = 4, .kb = 2, .lq = 8, .lp = 8, .col_kib = 1024};
  return t;
}

/* Saves unusual() as the device's record; returns its text and path. */
static char *saved_record(const fixture *fx, char **path)
{
  kiln_runtime *rt = runtime(fx, 0);
  kiln__tuning t = unusual(rt);
  kiln__runtime_set_tuning(rt, &t);
  assert_kiln_ok(rt, kiln__record_save(rt, "test", NULL, 0));
  char *text = record_text(rt, path);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  return text;
}

/* ---- CPU references for the tuned kernels --------------------------------- */

/* The sum of 100003 floats i % 7 - 3, exact in float and double. */
static void check_sum(kiln_runtime *rt)
{
  enum { N = 100003 };
  float *x = malloc(N * sizeof *x), got = 0;
  double want = 0;
  for (size_t i = 0; i < N; i++)
    want += x[i] = (float)((int)(i % 7) - 3);
  kiln_buffer *in, *out;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &out));
  assert_kiln_ok(rt, kiln_buffer_write(in, 0, N, x));
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, N);
  assert_kiln_ok(rt, kiln_reduce(rt, &d, in, out));
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, 1, &got));
  assert_true(got == want);
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(x);
}

/* ---- records ----------------------------------------------------------- */

static void test_no_record_defaults(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  assert_false(tuned(rt));
  assert_defaults(rt);
  assert_null(strstr(kiln_runtime_diagnostics(rt), "tuning record"));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_round_trip(void **state)
{
  fixture *fx = *state;
  kiln_runtime *rt = runtime(fx, 0);
  kiln__tuning t = unusual(rt);
  kiln__runtime_set_tuning(rt, &t);
  assert_kiln_ok(rt, kiln__record_save(rt, "test", NULL, 0));
  char *json = NULL;
  assert_kiln_ok(rt, kiln_tuning_get(rt, &json));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = runtime(fx, 0); /* the next process, as it were */
  assert_true(tuned(rt));
  assert_memory_equal(&rt->tuning->t, &t, sizeof t);
  check_gemm_on(rt, KILN_BACKEND_KILN, 67, 45,
                129); /* tm = 5, vw = 4: every tile padded */
  check_sum(rt);      /* 3 chunks: ends inside the input */
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = runtime(fx, 1); /* KILN_TUNING=0 */
  assert_false(tuned(rt));
  assert_defaults(rt);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  /* Exported, cleared, imported: the fleet's way. */
  rt = runtime(fx, 0);
  assert_kiln_ok(rt, kiln_tuning_clear(rt));
  assert_false(tuned(rt));
  assert_defaults(rt);
  assert_kiln_ok(rt, kiln_tuning_set(rt, json));
  assert_true(tuned(rt));
  assert_memory_equal(&rt->tuning->t, &t, sizeof t);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  rt = runtime(fx, 0);
  assert_true(tuned(rt));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  free(json);
}

enum damage {
  TRUNCATED,
  GARBAGE,
  EDITED,       /* a value changed, the checksum not */
  OTHER_DRIVER, /* resealed */
  OTHER_KILN,
  IMPOSSIBLE, /* a group larger than any device's, resealed */
  NOT_WHOLE,  /* a parameter that is not a whole number, resealed */
  MISSING,    /* a parameter left out, resealed */
  CONV_BAD,   /* conv.kb = 0, resealed */
  CONV_GROUP, /* conv.lq set and conv.lp not, resealed */
  CONV_NONE,  /* no "conv" section, resealed */
  AKIB_HUGE,  /* gemm.f64.akib past 4 GiB, resealed */
  ROW_LONG,   /* fft.row_max past kiln_fft_rowv's arrays, resealed */
  DAMAGES
};

static const char *const damage_note[DAMAGES] = {
  "not a JSON object",
  "not a JSON object",
  "checksum does not match",
  "made for driver_version",
  "made for kiln_version",
  "reduce.wg = 1048576",
  "gemm.f32.tm is missing or not a whole number",
  "fft.group is missing",
  "conv.kb = 0, but it is 1 to 16 channels",
  "conv.lp = 0, but lq and lp are both 0",
  "\"conv\" is missing",
  "gemm.f64.akib = 4194305, but A's blocks are at most 4 GiB",
  "fft.row_max = 4096, but it is 0 or a power of two from 128 to 2048"};

/* The record text with damage d. */
static char *damaged(const char *good, enum damage d)
{
  if (d == TRUNCATED) {
    char *t = strdup(good);
    t[strlen(t) / 2] = '\0';
    return t;
  }
  if (d == GARBAGE)
    return strdup("\x7f"
                  "ELF\x01\x02 not a record at all");
  json_object *o = json_tokener_parse(good), *x;
  assert_non_null(o);
  if (d == EDITED || d == IMPOSSIBLE) {
    json_object_object_get_ex(o, "reduce", &x);
    json_object_object_add(x, "wg", json_object_new_int(d == EDITED ? 64 : 1 << 20));
  } else if (d == OTHER_DRIVER || d == OTHER_KILN) {
    json_object_object_add(o, d == OTHER_DRIVER ? "driver_version" : "kiln_version",
                           json_object_new_string("0.0-other"));
  } else if (d == NOT_WHOLE) {
    json_object_object_get_ex(o, "gemm", &x);
    json_object_object_get_ex(x, "f32", &x);
    json_object_object_add(x, "tm", json_object_new_double(7.5));
  } else if (d == CONV_BAD || d == CONV_GROUP) {
    json_object_object_get_ex(o, "conv", &x);
    json_object_object_add(x, d == CONV_BAD ? "kb" : "lp", json_object_new_int(0));
  } else if (d == CONV_NONE) {
    json_object_object_del(o, "conv");
  } else if (d == AKIB_HUGE) {
    json_object_object_get_ex(o, "gemm", &x);
    json_object_object_get_ex(x, "f64", &x);
    json_object_object_add(x, "akib", json_object_new_int((1 << 22) + 1));
  } else if (d == ROW_LONG) {
    json_object_object_get_ex(o, "fft", &x);
    json_object_object_add(x, "row_max", json_object_new_int(4096));
  } else {
    json_object_object_get_ex(o, "fft", &x);
    json_object_object_del(x, "group");
  }
  if (d != EDITED)
    reseal(o);
  char *t = strdup(json_object_to_json_string(o));
  json_object_put(o);
  return t;
}

static void test_bad_records(void **state)
{
  fixture *fx = *state;
  char *path, *good = saved_record(fx, &path);
  kiln_runtime *rt;
  for (int d = 0; d < DAMAGES; d++) {
    char *bad = damaged(good, (enum damage)d);
    write_file(path, bad, strlen(bad));
    rt = runtime(fx, 0);
    const char *diag = kiln_runtime_diagnostics(rt);
    if (!strstr(diag, "tuning record") || !strstr(diag, damage_note[d]))
      fail_msg("damage %d: diagnostics say:\n%s", d, diag);
    assert_false(tuned(rt));
    assert_defaults(rt);
    check_sum(rt); /* the runtime works, with the rules */
    assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, damage_note[d],
                      kiln_tuning_set(rt, bad));
    assert_defaults(rt); /* nothing changed */
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
    free(bad);
  }
  /* An empty file, and one far larger than any record. */
  write_file(path, "", 0);
  rt = runtime(fx, 0);
  assert_false(tuned(rt));
  assert_non_null(strstr(kiln_runtime_diagnostics(rt), "not a JSON object"));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  size_t big = (2u << 20) + 1;
  char *huge = malloc(big);
  memset(huge, ' ', big);
  write_file(path, huge, big);
  free(huge);
  rt = runtime(fx, 0);
  assert_false(tuned(rt));
  assert_non_null(strstr(kiln_runtime_diagnostics(rt), "more than a record's"));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  free(good);
  free(path);
}

/* A record another user could have written is not read (trust.c). */
static void test_untrusted_record(void **state)
{
  fixture *fx = *state;
  char *path, *good = saved_record(fx, &path);
  kiln_runtime *rt;
  assert_int_equal(chmod(path, 0666), 0);
  rt = runtime(fx, 0);
  assert_false(tuned(rt));
  assert_non_null(strstr(kiln_runtime_diagnostics(rt), "writable"));
  assert_defaults(rt);
  /* ... nor replaced or deleted. */
  assert_kiln_fails(rt, KILN_ERR_IO, "writable", kiln_tuning_clear(rt));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  free(good);
  free(path);
}

/* ---- kiln_tune() ------------------------------------------------------------ */

typedef struct seen {
  size_t steps, done;
  int stop_after; /* steps; 0: never */
} seen;

static int count_steps(const kiln_tune_step *s, void *user)
{
  seen *n = user;
  assert_int_equal(s->struct_size, sizeof *s);
  assert_non_null(s->kernel);
  assert_non_null(s->candidate);
  assert_true(s->index >= 1 && s->index <= s->count);
  if (s->kernel_done)
    n->done++;
  else
    n->steps++;
  return n->stop_after && n->steps >= (size_t)n->stop_after;
}

static void tune_reduce(const fixture *fx, double budget, seen *n)
{
  kiln_runtime *rt = runtime(fx, 0);
  kiln_tune_options o;
  kiln_tune_options_init(&o);
  o.what = KILN_TUNE_REDUCE;
  o.budget = budget;
  o.progress = count_steps;
  o.user = n;
  assert_kiln_ok(rt, kiln_tune(rt, &o));
  assert_true(tuned(rt));
  check_sum(rt);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static void test_tune_keeps_a_record(void **state)
{
  fixture *fx = *state;
  seen n = {0};
  tune_reduce(fx, 20, &n);
  assert_true(n.steps >= 2); /* both shapes at least */
  assert_int_equal(n.done, 1);
  kiln_runtime *rt = runtime(fx, 0);
  assert_true(tuned(rt));
  check_sum(rt);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Ctrl-C: progress says stop after the first candidate; the kernel is
 * finished with what was measured and the record kept. */
static void test_tune_stops_when_asked(void **state)
{
  seen n = {.stop_after = 1};
  tune_reduce(*state, 60, &n);
  assert_int_equal(n.steps, 1);
  assert_int_equal(n.done, 1);
}

static void test_tune_bad_options(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  kiln_tune_options o;
  kiln_tune_options_init(&o);
  o.budget = -1;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "budget", kiln_tune(rt, &o));
  o.budget = 0;
  o.what = 64;
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "KILN_TUNE_", kiln_tune(rt, &o));
  assert_false(tuned(rt));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

static kiln_runtime *profiled(const fixture *fx, int benchmark);
static const char *conv_auto(kiln_runtime *rt, size_t k);

/* kiln_tune() of the convolution on a small budget: both of its kernels
 * finish, the record keeps a "conv" section, and the next runtime's direct
 * kernel (AUTO's pick for conv_auto()) matches the reference with it. */
static void test_tune_conv(void **state)
{
  fixture *fx = *state;
  seen n = {0};
  kiln_runtime *rt = runtime(fx, 0);
  kiln_tune_options o;
  kiln_tune_options_init(&o);
  o.what = KILN_TUNE_CONV;
  o.budget = 8;
  o.progress = count_steps;
  o.user = &n;
  assert_kiln_ok(rt, kiln_tune(rt, &o));
  assert_int_equal(n.done, 2); /* the direct kernel and the im2col step */
  assert_true(n.steps >= 2);
  char *json = NULL;
  assert_kiln_ok(rt, kiln_tuning_get(rt, &json));
  assert_non_null(strstr(json, "\"conv\""));
  assert_non_null(strstr(json, "\"conv im2col\""));
  free(json);
  kiln__tuning t = rt->tuning->t;
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  rt = profiled(fx, 0);
  assert_true(tuned(rt));
  assert_memory_equal(&rt->tuning->t.conv, &t.conv, sizeof t.conv);
  assert_string_equal(conv_auto(rt, 5), "direct");
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* A child process of test_two_processes_tune: tunes the reductions into
 * the cache folder dir. Exit status 0 on success. */
static int tune_child(const char *dir)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = dir;
  kiln_tune_options t;
  kiln_tune_options_init(&t);
  t.what = KILN_TUNE_REDUCE;
  t.budget = 10;
  kiln_runtime *r = NULL;
  int ok = kiln_runtime_create(&o, &r) == KILN_OK && kiln_tune(r, &t) == KILN_OK;
  if (!ok)
    fprintf(stderr, "tune child: %s\n", kiln_last_error(r));
  return r && kiln_runtime_destroy(r) == KILN_OK && ok ? 0 : 1;
}

/* Runs this program again twice at once, with arguments one and two, and
 * checks that both exit 0. */
static void run_two(char *one[], char *two[])
{
  pid_t kids[2];
  for (int i = 0; i < 2; i++) {
    kids[i] = fork();
    assert_true(kids[i] >= 0);
    if (kids[i] == 0) {
      execv("/proc/self/exe", i ? two : one);
      _exit(127);
    }
  }
  for (int i = 0; i < 2; i++) {
    int status = 0;
    assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

/* Two processes tune the same device into one folder at once: both
 * succeed, and the record left is whole and applies. They are new
 * processes (this program, run again), not forks: a driver's threads do
 * not survive fork(). */
static void test_two_processes_tune(void **state)
{
  fixture *fx = *state;
  kiln_runtime *rt = runtime(fx, 0); /* creates the folder before the race */
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  char *argv[] = {"test-tuning", "--tune-child", fx->dir, NULL};
  run_two(argv, argv);
  rt = runtime(fx, 0);
  assert_true(tuned(rt));
  check_sum(rt);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* ---- benchmark mode --------------------------------------------------------- */

static kiln_backend fast_one; /* the seam makes every other backend 50 ms
                                slower than it is */
static int seam_calls;

static void slow_seam(kiln_backend id)
{
  seam_calls++;
  if (id != fast_one)
    nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
}

/* The profile's row of op (the first, there is one backend in these
 * tests), or a row of zeros when there is none; the row lives until the
 * next call. */
static const kiln_profile_row *profile_row(kiln_runtime *rt, const char *op)
{
  static kiln_profile_row rows[64], none; /* builds and loads too */
  size_t n = 0;
  assert_kiln_ok(rt, kiln_finish(rt)); /* rows are of finished calls */
  for (size_t i = 0; i < COUNT(rows); i++)
    kiln_profile_row_init(&rows[i]);
  assert_kiln_ok(rt, kiln_profile_rows(rt, rows, COUNT(rows), &n));
  for (size_t i = 0; i < n && i < COUNT(rows); i++)
    if (strcmp(rows[i].op, op) == 0)
      return &rows[i];
  kiln_profile_row_init(&none);
  return &none;
}

/* A small NCHW float convolution (c = 3: the rules pick direct), run with
 * AUTO and checked against conv-case.h's reference; returns the backend
 * the profile says ran it. */
static const char *conv_auto(kiln_runtime *rt, size_t k)
{
  conv_case cc = {.n = 2,
                  .c = 3,
                  .h = 11,
                  .w = 9,
                  .k = k,
                  .r = 3,
                  .s = 3,
                  .pt = 1,
                  .pb = 1,
                  .pl = 1,
                  .pr = 1};
  kiln_conv2d_desc d = conv_case_desc(&cc, KILN_F32, KILN_NCHW);
  size_t p, q, nx = cc.n * cc.c * cc.h * cc.w, nw = cc.k * cc.c * cc.r * cc.s;
  conv_case_output(&d, &p, &q);
  size_t ny = cc.n * cc.k * p * q;
  float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *y = malloc(ny * 4);
  double *xd = malloc(nx * 8), *wd = malloc(nw * 8), *sum = malloc(ny * 8),
         *mag = malloc(ny * 8);
  uint64_t st = 3;
  for (size_t i = 0; i < nx; i++)
    xd[i] = x[i] = (float)(kiln_test_random(&st) % 201) / 100.0f - 1.0f;
  for (size_t i = 0; i < nw; i++)
    wd[i] = w[i] = (float)(kiln_test_random(&st) % 201) / 100.0f - 1.0f;
  kiln_buffer *bx, *bw, *by;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, nx, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, nw, 0, &bw));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, ny, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, nx, x));
  assert_kiln_ok(rt, kiln_buffer_write(bw, 0, nw, w));
  assert_kiln_ok(rt, kiln_profile_reset(rt));
  assert_kiln_ok(rt, kiln_conv2d(rt, &d, bx, bw, NULL, by));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, ny, y));
  conv_case_reference(&d, xd, wd, NULL, sum, mag);
  /* 27 terms, each rounded at float's epsilon, and their sum. */
  for (size_t i = 0; i < ny; i++)
    if (fabs(y[i] - sum[i]) > 28 * 0x1p-24 * mag[i] + 1e-30)
      fail_msg("y[%zu] = %.9g, want %.9g", i, y[i], sum[i]);
  const char *ran = profile_row(rt, "conv2d")->backend;
  kiln_buffer_destroy(bx);
  kiln_buffer_destroy(bw);
  kiln_buffer_destroy(by);
  free(x), free(w), free(y), free(xd), free(wd), free(sum), free(mag);
  return ran;
}

static kiln_runtime *profiled(const fixture *fx, int benchmark)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = fx->dir;
  o.profile = 1;
  o.benchmark = benchmark;
  return kiln_test_runtime_with(&o);
}

/* Benchmark mode runs the fastest candidate when the others are made slow
 * (whichever is the faster here, CLBlast or kiln's, without), remembers
 * the choice, and the next process uses it without timing again. */
static void test_benchmark_mode(void **state)
{
  fixture *fx = *state;
  kiln__choice_seam = slow_seam;
  kiln_runtime *rt = profiled(fx, 1);
  fast_one = KILN_BACKEND_IM2COL; /* the rules pick direct */
  assert_string_equal(conv_auto(rt, 5), "im2col");
  assert_true(seam_calls > 0);
  fast_one = KILN_BACKEND_DIRECT; /* another shape: now direct is faster */
  assert_string_equal(conv_auto(rt, 7), "direct");
  seam_calls = 0;
  assert_string_equal(conv_auto(rt, 5), "im2col"); /* known: not timed again */
  assert_int_equal(seam_calls, 0);
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  assert_kiln_ok(rt, kiln_tuning_stats(rt, &u));
  assert_true(u.choices >= 2); /* im2col's own GEMM shapes may add more */
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = profiled(fx, 0); /* the next process, without benchmark mode */
  assert_string_equal(conv_auto(rt, 5), "im2col");
  assert_string_equal(conv_auto(rt, 7), "direct");
  assert_int_equal(seam_calls, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = profiled(fx, 0); /* a record's choices go with --clear */
  assert_kiln_ok(rt, kiln_tuning_clear(rt));
  assert_string_equal(conv_auto(rt, 5), "direct");
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  kiln__choice_seam = NULL;
}

/* ---- benchmark mode: FFT and sums ------------------------------------------ */

/* A runtime in benchmark mode whose seam slows every backend but fast;
 * skips the test when the build has no second backend of the op (have 0). */
static kiln_runtime *slowed(const fixture *fx, int have, const char *op,
                            kiln_backend fast)
{
  if (!have) {
    print_message("# skipped: kiln's own is the only %s backend in this build\n", op);
    skip();
  }
  kiln__choice_seam = slow_seam;
  seam_calls = 0;
  fast_one = fast;
  return profiled(fx, 1);
}

/* A 1-D complex64 FFT of n points (n a power of two: every backend runs
 * it) on backend be, against a naive DFT in double. The bound, in the
 * 2-norm relative to the output's: log2(n) passes, each rounding at
 * float's epsilon, with room for the twiddle factors' own error. Returns
 * the backend the profile says ran it. */
static const char *fft_on(kiln_runtime *rt, size_t n, kiln_backend be)
{
  float *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y);
  uint64_t st = 11;
  for (size_t i = 0; i < 2 * n; i++)
    x[i] = (float)(kiln_test_random(&st) % 2001) / 1000.0f - 1.0f;
  kiln_buffer *bx, *by;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, n, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, n, x));
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, n);
  d.backend = be;
  assert_kiln_ok(rt, kiln_profile_reset(rt));
  assert_kiln_ok(rt, kiln_fft(rt, &d, bx, by));
  assert_kiln_ok(rt, kiln_buffer_read(by, 0, n, y));
  double err = 0, norm = 0;
  for (size_t k = 0; k < n; k++) {
    double re = 0, im = 0;
    for (size_t j = 0; j < n; j++) {
      double a = -2 * acos(-1.0) * (double)((j * k) % n) / (double)n;
      re += x[2 * j] * cos(a) - x[2 * j + 1] * sin(a);
      im += x[2 * j] * sin(a) + x[2 * j + 1] * cos(a);
    }
    err += (y[2 * k] - re) * (y[2 * k] - re) + (y[2 * k + 1] - im) * (y[2 * k + 1] - im);
    norm += re * re + im * im;
  }
  double bound = 8 * (log2((double)n) + 1) * 0x1p-24;
  if (sqrt(err) > bound * sqrt(norm))
    fail_msg("fft of %zu: relative error %.3g, bound %.3g", n, sqrt(err / norm), bound);
  kiln_buffer_destroy(bx);
  kiln_buffer_destroy(by);
  free(x), free(y);
  return profile_row(rt, "fft")->backend;
}

/* fft_on() with AUTO: the backend kiln chooses. */
static const char *fft_auto(kiln_runtime *rt, size_t n)
{
  return fft_on(rt, n, KILN_BACKEND_AUTO);
}

/* An FFT plan is made with the parameters of its time (the vector kernels'
 * passes or the scalar ones'): new parameters drop the cached plans, so each
 * of kiln_tune()'s candidates runs its own (a stale plan once made every
 * candidate run the first one's passes). Seen in the plans' device memory:
 * 4096 points on the vector kernels (radix 16, then 256) hold a twiddle
 * table of 4 n + 512 floats, on the scalar ones (4, 32, 32) of 8 x 128.
 * Both against the DFT. */
static void test_fft_plans_follow_tuning(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  kiln__tuning t = rt->tuning->t;
  uint64_t bytes[2];
  for (unsigned v = 0; v < 2; v++) {
    t.fft.vec_first = v;
    kiln__runtime_set_tuning(rt, &t);
    fft_on(rt, 4096, KILN_BACKEND_KILN); /* AUTO may pick VkFFT (a GPU) */
    kiln_memory_usage use;
    kiln_memory_usage_init(&use);
    assert_kiln_ok(rt, kiln_memory_stats(rt, &use));
    bytes[v] = use.plan_bytes;
  }
  enum { N = 4096, SCRATCH = N * 8 };
  assert_int_equal(bytes[0], SCRATCH + 8 * 128 * sizeof(float));
  assert_int_equal(bytes[1], SCRATCH + (4 * N + 512) * sizeof(float));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Rows of up to row_max points run whole in one launch (kiln_fft_rowv),
 * which needs no scratch buffer: 1024 points (radix 16, 16, 4, a twiddle
 * table of 8 x 256 floats) with row_max 0 hold one of 8 KiB, with 1024 not,
 * with 512 again; each against the DFT. */
static void test_fft_whole_rows(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  kiln__tuning t = rt->tuning->t;
  static const unsigned row_max[] = {0, 1024, 512};
  enum { N = 1024, SCRATCH = N * 8, TABLE = 8 * 256 * sizeof(float) };
  for (size_t i = 0; i < KILN__COUNT(row_max); i++) {
    t.fft.vec_first = 1;
    t.fft.row_max = row_max[i];
    kiln__runtime_set_tuning(rt, &t);
    fft_on(rt, N, KILN_BACKEND_KILN);
    kiln_memory_usage use;
    kiln_memory_usage_init(&use);
    assert_kiln_ok(rt, kiln_memory_stats(rt, &use));
    assert_int_equal(use.plan_bytes, (row_max[i] >= N ? 0 : SCRATCH) + TABLE);
  }
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Benchmark mode times every FFT backend built in (kiln's own, VkFFT,
 * clFFT), runs the fastest, keeps it, and its time is the profile's row
 * "benchmark fft", not the call's. Whatever the rules pick (kiln's own on
 * a CPU, VkFFT on a GPU), the seam makes clFFT (or VkFFT) the fastest. */
static void test_benchmark_fft(void **state)
{
  fixture *fx = *state;
  kiln_runtime *rt = slowed(fx, HAVE_CLFFT || HAVE_VKFFT, "FFT",
                            HAVE_CLFFT ? KILN_BACKEND_CLFFT : KILN_BACKEND_VKFFT);
  assert_string_equal(fft_auto(rt, 512), kiln_backend_name(fast_one));
  int candidates = 1 + HAVE_CLFFT + HAVE_VKFFT;
  assert_int_equal(seam_calls, 3 * candidates); /* all agreed, each timed three times */
  const kiln_profile_row *bench = profile_row(rt, "benchmark fft");
  assert_int_equal(bench->calls, 1);
  assert_int_equal(bench->kind, KILN_PROFILE_BENCHMARK);
  assert_string_equal(bench->backend, "all");
  /* device time, where the driver's timestamps are a clock (not rusticl's) */
  int timed = !strstr(kiln_runtime_diagnostics(rt), "gives no device times");
  assert_int_equal(bench->total_ns > 0, timed);
  /* the slowed candidates' 50 ms each, and the call's row is its own */
  assert_true(bench->host_ns >= (uint64_t)3 * (candidates - 1) * 50000000);
  uint64_t bench_host = bench->host_ns;
  assert_true(profile_row(rt, "fft")->host_ns < bench_host);
  assert_int_equal(profile_row(rt, "fft")->calls, 1);
  seam_calls = 0;
  assert_string_equal(fft_auto(rt, 512), kiln_backend_name(fast_one)); /* known */
  assert_int_equal(seam_calls, 0);
  assert_int_equal(profile_row(rt, "benchmark fft")->calls, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = profiled(fx, 0); /* the next process, without benchmark mode */
  assert_string_equal(fft_auto(rt, 512), kiln_backend_name(fast_one));
  char later[32]; /* another shape: the rules' choice, as without the record */
  snprintf(later, sizeof later, "%s", fft_auto(rt, 256));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  kiln__choice_seam = NULL;
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = fx->dir;
  o.profile = 1;
  o.no_tuning = 1; /* the rules alone */
  rt = kiln_test_runtime_with(&o);
  assert_string_equal(later, fft_auto(rt, 256));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* The sum of n floats with AUTO, against the sum in double: within n
 * roundings at float's epsilon of the sum of magnitudes (a float32
 * accumulator's bound; kiln's is far tighter). 1 when right; no cmocka
 * call, so threads may run it. */
static int sum_ok(kiln_runtime *rt, size_t n, uint64_t seed)
{
  float *x = malloc(n * sizeof *x), got = NAN;
  double want = 0, mag = 0;
  for (size_t i = 0; x && i < n; i++) {
    x[i] = (float)(kiln_test_random(&seed) % 2001) / 1000.0f - 0.5f;
    want += x[i];
    mag += fabs(x[i]);
  }
  kiln_buffer *in = NULL, *out = NULL;
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, n);
  int ok = x && kiln_buffer_create(rt, KILN_F32, n, 0, &in) == KILN_OK &&
           kiln_buffer_create(rt, KILN_F32, 1, 0, &out) == KILN_OK &&
           kiln_buffer_write(in, 0, n, x) == KILN_OK &&
           kiln_reduce(rt, &d, in, out) == KILN_OK &&
           kiln_buffer_read(out, 0, 1, &got) == KILN_OK &&
           fabs(got - want) <= (double)(n + 1) * 0x1p-24 * mag;
  if (!ok)
    fprintf(stderr, "# sum of %zu: %.9g, want %.9g (%s)\n", n, got, want,
            kiln_last_error(rt));
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  free(x);
  return ok;
}

static const char *sum_auto(kiln_runtime *rt, size_t n)
{
  assert_kiln_ok(rt, kiln_profile_reset(rt));
  assert_true(sum_ok(rt, n, n));
  return profile_row(rt, "reduce.sum")->backend;
}

/* Benchmark mode times kiln's sum and CLBlast's Xsum, runs the faster and
 * keeps it; a reduction CLBlast cannot run (along an axis) has no choice
 * to make and is not timed. */
static void test_benchmark_reduce(void **state)
{
  fixture *fx = *state; /* the rules pick kiln's own */
  kiln_runtime *rt = slowed(fx, HAVE_CLBLAST, "reduction", KILN_BACKEND_CLBLAST);
  assert_string_equal(sum_auto(rt, 4099), "clblast");
  assert_int_equal(seam_calls, 6);
  assert_int_equal(profile_row(rt, "benchmark reduce")->calls, 1);
  fast_one = KILN_BACKEND_KILN;
  assert_string_equal(sum_auto(rt, 4100), "kiln");
  kiln_reduce_desc d; /* the max of each row of 3 x 5: kiln's alone */
  kiln_reduce_desc_init(&d, KILN_REDUCE_MAX, KILN_F32, 15);
  d.ndim = 2, d.shape[0] = 3, d.shape[1] = 5, d.axis = 1;
  kiln_buffer *in, *out;
  float x[15] = {0}, y[3];
  x[4] = 1, x[5] = 2, x[14] = 3;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 15, 0, &in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 3, 0, &out));
  assert_kiln_ok(rt, kiln_buffer_write(in, 0, 15, x));
  seam_calls = 0;
  assert_kiln_ok(rt, kiln_reduce(rt, &d, in, out));
  assert_kiln_ok(rt, kiln_buffer_read(out, 0, 3, y));
  assert_true(y[0] == 1 && y[1] == 2 && y[2] == 3);
  assert_int_equal(seam_calls, 0);
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = profiled(fx, 0); /* the next process, without benchmark mode */
  assert_string_equal(sum_auto(rt, 4099), "clblast");
  assert_string_equal(sum_auto(rt, 4100), "kiln");
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  kiln__choice_seam = NULL;
}

/* ---- benchmark mode: threads and processes --------------------------------- */

static atomic_int timed_runs;

static void count_seam(kiln_backend id)
{
  (void)id;
  atomic_fetch_add(&timed_runs, 1);
}

typedef struct sum_job {
  kiln_runtime *rt;
  size_t n;
  int ok;
} sum_job;

static void *sum_thread(void *arg)
{
  sum_job *j = arg;
  j->ok = sum_ok(j->rt, j->n, j->n);
  return NULL;
}

/* 8 threads in benchmark mode on one runtime at once, four on one key and
 * four on keys of their own: every sum right, each key measured once (one
 * "benchmark reduce" record each, both candidates timed three times) and
 * kept. ci/tsan.sh runs this one under ThreadSanitizer. */
static void test_benchmark_threads(void **state)
{
  if (!HAVE_CLBLAST) {
    print_message("# skipped: a sum has one backend without CLBlast\n");
    skip();
  }
  kiln__choice_seam = count_seam;
  atomic_store(&timed_runs, 0);
  kiln_runtime *rt = profiled(*state, 1);
  sum_job jobs[8];
  pthread_t th[8];
  for (int i = 0; i < 8; i++) {
    jobs[i] = (sum_job){rt, i < 4 ? 3000 : 3000 + (size_t)i, 0};
    assert_int_equal(pthread_create(&th[i], NULL, sum_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_true(jobs[i].ok);
  }
  assert_int_equal(profile_row(rt, "benchmark reduce")->calls, 5);
  assert_int_equal(atomic_load(&timed_runs), 5 * 2 * 3);
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  assert_kiln_ok(rt, kiln_tuning_stats(rt, &u));
  assert_int_equal(u.choices, 5);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  kiln__choice_seam = NULL;
}

/* A child of test_benchmark_processes: benchmark mode on the sums of 5000
 * floats (the key both children share) and of n (its own), kept in the
 * cache folder dir. Exit status 0 when both are right. */
static int bench_child(const char *dir, const char *n)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = dir;
  o.benchmark = 1;
  kiln_runtime *r = NULL;
  int ok = kiln_runtime_create(&o, &r) == KILN_OK && sum_ok(r, 5000, 5000) &&
           sum_ok(r, strtoul(n, NULL, 10), strtoul(n, NULL, 10));
  if (!ok)
    fprintf(stderr, "bench child: %s\n", kiln_last_error(r));
  return r && kiln_runtime_destroy(r) == KILN_OK && ok ? 0 : 1;
}

/* Two processes benchmark into one folder at once: the record left is
 * whole and holds both processes' choices, which the next process uses
 * without timing. New processes, not forks: see test_two_processes_tune. */
static void test_benchmark_processes(void **state)
{
  if (!HAVE_CLBLAST) {
    print_message("# skipped: a sum has one backend without CLBlast\n");
    skip();
  }
  fixture *fx = *state;
  kiln_runtime *rt = runtime(fx, 0); /* creates the folder before the race */
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  char *one[] = {"test-tuning", "--bench-child", fx->dir, "6001", NULL},
       *two[] = {"test-tuning", "--bench-child", fx->dir, "6002", NULL};
  run_two(one, two);
  kiln__choice_seam = count_seam;
  atomic_store(&timed_runs, 0);
  rt = profiled(fx, 1);
  assert_true(tuned(rt));
  assert_null(strstr(kiln_runtime_diagnostics(rt), "tuning record"));
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  assert_kiln_ok(rt, kiln_tuning_stats(rt, &u));
  assert_int_equal(u.choices, 3);
  assert_true(sum_ok(rt, 5000, 5000));
  assert_true(sum_ok(rt, 6001, 6001));
  assert_true(sum_ok(rt, 6002, 6002));
  assert_int_equal(atomic_load(&timed_runs), 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  kiln__choice_seam = NULL;
}

/* A choice naming no backend makes the record bad like any other damage. */
static void test_bad_choice(void **state)
{
  fixture *fx = *state;
  char *path, *good = saved_record(fx, &path);
  json_object *o = json_tokener_parse(good), *cs = json_object_new_object();
  json_object_object_add(cs, "conv2d f32 anything", json_object_new_string("fastest"));
  json_object_object_add(o, "choices", cs);
  reseal(o);
  const char *bad = json_object_to_json_string(o);
  write_file(path, bad, strlen(bad));
  kiln_runtime *rt = runtime(fx, 0);
  assert_false(tuned(rt));
  assert_non_null(strstr(kiln_runtime_diagnostics(rt), "is not a backend's name"));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  json_object_put(o);
  free(good);
  free(path);
}

/* Corners of the GPU shape's space, run on this device through a tuning
 * (what a record applies): the smallest tiles (8 x 8, one output a
 * work-item, scalar, one buffer), the rules' (128 x 128, 8 x 8 outputs,
 * vectors of 4, two buffers) and 128 x 256 of 8 x 16 outputs in vectors of
 * 8, padded, each against the reference. test-gemm.c has every corner. */
static void test_gpu_shape_extremes(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  static const kiln__gemm_tuning corners[] = {
    {.tsm = 8, .tsn = 8, .tsk = 1, .wptm = 1, .wptn = 1, .vwm = 1, .vwn = 1, .gm = 1},
    {.tsm = 128,
     .tsn = 128,
     .tsk = 16,
     .wptm = 8,
     .wptn = 8,
     .vwm = 4,
     .vwn = 4,
     .strm = 1,
     .strn = 1,
     .db = 1,
     .gm = 8},
    {.tsm = 128,
     .tsn = 256,
     .tsk = 32,
     .wptm = 8,
     .wptn = 16,
     .vwm = 8,
     .vwn = 8,
     .pad = 1,
     .db = 1,
     .gm = 64}};
  for (size_t i = 0; i < COUNT(corners); i++) {
    kiln__tuning t = rt->tuning->t;
    kiln__gemm_tuning *g = &t.gemm[KILN__GEMM_F32];
    unsigned tm = g->tm, vw = g->vw;
    *g = corners[i];
    g->gpu_shape = 1, g->tm = tm, g->vw = vw;
    kiln__str why = {0};
    if (kiln__tuning_check(&kiln__runtime_device(rt)->info, &t, &why) != 0) {
      fprintf(stderr, "# corner %zu: %s\n", i, kiln__str_get(&why));
      kiln__str_free(&why);
      continue; /* the device cannot run it: kiln_tune() skips it too */
    }
    kiln__runtime_set_tuning(rt, &t);
    check_gemm_on(rt, KILN_BACKEND_KILN, 131, 67, 45);
  }
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* The GPU rules on devices of every size: what they give passes
 * kiln__tuning_check() (the rules never pick what the device refuses); a
 * group of 1024 with NVIDIA's 48 KiB gets the Hopper-class shape, double
 * 8 deep to fit; smaller groups and local memories get smaller tiles. Then
 * the tuner's GPU grid there: no candidate twice, the 128 x 256 tile among
 * those the device can run, and those it cannot refused with the reason. */
static void test_gpu_rules_fit(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  kiln_device_info dev = kiln__runtime_device(rt)->info;
  dev.type = KILN_DEVICE_GPU;
  static const uint64_t limits[][2] = {{1024, 49152}, {256, 65536}, {256, 32768},
                                       {64, 16384},   {16, 4096},   {1, 1024}};
  for (size_t i = 0; i < COUNT(limits); i++) {
    dev.max_work_group_size = limits[i][0], dev.local_mem_bytes = limits[i][1];
    kiln__tuning t;
    kiln__tuning_defaults(&dev, &t);
    kiln__str why = {0};
    if (kiln__tuning_check(&dev, &t, &why) != 0)
      fail_msg("group %llu, local %llu: the rules give what the device refuses: %s",
               (unsigned long long)limits[i][0], (unsigned long long)limits[i][1],
               kiln__str_get(&why));
    kiln__str_free(&why);
    const kiln__gemm_tuning *g = &t.gemm[KILN__GEMM_F32], *d = &t.gemm[KILN__GEMM_F64];
    assert_true(g->gpu_shape);
    if (i == 0) {
      assert_true(g->tsm == 128 && g->tsn == 128 && g->tsk == 16 && g->wptm == 8 &&
                  g->wptn == 8 && g->vwm == 4 && g->db == 1 && g->gm == 8);
      assert_true(d->tsm == 128 && d->tsk == 8 && d->db == 1);
    }
    if (i == 3) /* 64 work-items: 64 x 64 of 8 x 8 */
      assert_true(g->tsm == 64 && g->tsn == 64 && g->wptm == 8);
  }
  dev.max_work_group_size = 1024, dev.local_mem_bytes = 49152;
  kiln__tuning base;
  kiln__tuning_defaults(&dev, &base);
  kiln__tune_cand *list = malloc(KILN__TUNE_CANDIDATES * sizeof *list);
  assert_non_null(list);
  size_t first = kiln__tune_start(0, KILN__GEMM_F32, &base, &dev, list);
  size_t n = kiln__tune_more(0, KILN__GEMM_F32, &dev, list, first, 0);
  size_t runs = 0, wide = 0;
  assert_true(n > first + 20 && n < KILN__TUNE_CANDIDATES);
  for (size_t i = first; i < n; i++) {
    for (size_t j = first; j < i; j++)
      assert_string_not_equal(list[i].text, list[j].text);
    kiln__str why = {0};
    if (kiln__tuning_check(&dev, &list[i].t, &why) == 0) {
      const kiln__gemm_tuning *g = &list[i].t.gemm[KILN__GEMM_F32];
      runs++;
      wide += g->tsm == 128 && g->tsn == 256;
    } else {
      assert_non_null(strstr(kiln__str_get(&why), "gemm.f32."));
    }
    kiln__str_free(&why);
  }
  assert_true(runs > 20 && wide > 0);
  free(list);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* The CPU product's blocks of A (tuning.h's akib): 14 panels of 5 rows of
 * A (67 rows, so the last panel is padded) in blocks of 4, the last block
 * 2 panels and 2 work-items with nothing to do, groups of 4 along the
 * block, over a batch of 3, against the reference; then the whole of A as
 * one block (0) and a block of one panel (1 KiB). Packed (small = 0): the
 * unpacked kernel has no blocks. */
static void test_gemm_a_blocks(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  kiln__tuning t = rt->tuning->t;
  kiln__gemm_tuning *g = &t.gemm[KILN__GEMM_F32];
  int gpu_shape = g->gpu_shape;
  if (gpu_shape)
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  kiln_test_require(!gpu_shape, "a device with the CPU shape's GEMM (the GPU shape "
                                "has no blocks of A)");
  enum { M = 67, N = 45, K = 129 };
  g->tm = 5, g->vw = 4, g->cg = 4, g->small = 0;
  size_t panel = 5 * K * sizeof(float); /* 2580 bytes: 4 a block in 11 KiB */
  static const unsigned kibs[] = {11, 0, 1};
  for (size_t i = 0; i < COUNT(kibs); i++) {
    g->akib = kibs[i];
    assert_true(kibs[i] != 11 || (size_t)kibs[i] * 1024 / panel == 4);
    kiln__runtime_set_tuning(rt, &t);
    check_gemm_batch_on(rt, KILN_BACKEND_KILN, M, N, K, 3);
  }
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* Before a device group has timed an operation, a device's tuning record
 * says how fast it is (group.c's prior): a device whose record measured
 * GEMM at 2 flops a second takes none of a product beside one that has no
 * measurement. The measurement is put in as loading a record does
 * (record.c): a record in the cache folder would apply to both PoCL
 * devices, one model. */
static void test_group_tuned_prior(void **state)
{
  fixture *fx = *state;
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = fx->dir;
  kiln_group *g;
  assert_kiln_ok(NULL, kiln_group_create(&o, &g)); /* nothing timed yet */
  size_t size = kiln_group_size(g);
  if (size < 2)
    assert_kiln_ok(NULL, kiln_group_destroy(g));
  kiln_test_require(size >= 2, "a group of two devices (PoCL's two)");
  kiln_runtime *slow = kiln_group_runtime(g, 1);
  assert_true(kiln__tuned_speed(slow, "gemm f32") == 0); /* no record */
  kiln__measured *m = calloc(1, sizeof *m);
  assert_non_null(m);
  snprintf(m->kernel, sizeof m->kernel, "gemm f32");
  m->from_s = m->to_s = 1e9; /* 2 * 1024^3 flops in 10^9 s */
  free(slow->tuning->measured);
  slow->tuning->measured = m, slow->tuning->nmeasured = 1;
  assert_true(fabs(kiln__tuned_speed(slow, "gemm f32") - 2 * pow(1024, 3) / 1e9) < 1e-9);
  assert_true(kiln__tuned_speed(slow, "fft") == 0);

  enum { M = 301, N = 33, K = 47 };
  float *a = malloc(M * K * sizeof *a), *b = malloc(K * N * sizeof *b),
        *c = malloc(M * N * sizeof *c);
  for (size_t i = 0; i < M * K; i++)
    a[i] = (float)(i % 7) - 3;
  for (size_t i = 0; i < K * N; i++)
    b[i] = (float)(i % 5) - 2;
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, M, N, K);
  assert_kiln_ok(NULL, kiln_group_gemm_host(g, &d, a, b, c));
  for (size_t i = 0; i < M; i++) /* small integers: exact */
    for (size_t j = 0; j < N; j++) {
      double want = 0;
      for (size_t p = 0; p < K; p++)
        want += (double)a[i * K + p] * b[p * N + j];
      assert_true(c[i * N + j] == want);
    }
  size_t units = 0;
  for (size_t i = 0; i < kiln_group_size(g); i++) {
    kiln_group_usage u;
    kiln_group_usage_init(&u);
    assert_kiln_ok(NULL, kiln_group_stats(g, i, &u));
    if (i == 1)
      assert_int_equal(u.units, 0);
    units += u.units;
  }
  assert_int_equal(units, M);
  free(a), free(b), free(c);
  assert_kiln_ok(NULL, kiln_group_destroy(g));
}

int main(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "--tune-child") == 0)
    return tune_child(argv[2]);
  if (argc == 4 && strcmp(argv[1], "--bench-child") == 0)
    return bench_child(argv[2], argv[3]);
  kiln_test_require_device();
  if (argc == 2) /* a pattern: run only the tests whose names match it */
    cmocka_set_test_filter(argv[1]);
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
    T(test_no_record_defaults),  T(test_round_trip),
    T(test_bad_records),         T(test_untrusted_record),
    T(test_tune_keeps_a_record), T(test_tune_stops_when_asked),
    T(test_tune_bad_options),    T(test_two_processes_tune),
    T(test_gpu_shape_extremes),  T(test_gpu_rules_fit),
    T(test_benchmark_mode),      T(test_fft_plans_follow_tuning),
    T(test_fft_whole_rows),      T(test_benchmark_fft),
    T(test_benchmark_reduce),    T(test_benchmark_threads),
    T(test_benchmark_processes), T(test_bad_choice),
    T(test_tune_conv),           T(test_group_tuned_prior),
    T(test_gemm_a_blocks),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
