/*
 * test-tuning-clblast.c — CLBlast's parameters in the tuning record
 * (src/tuning/record_clblast.c, src/backends/clblast/clblast_tune.c): they round-trip
 * through the record, kiln_tuning_get/set and kiln_tuning_clear; every
 * kind of bad entry makes the record bad with a note; and, with CLBlast,
 * kiln_tuning_set_clblast() refuses what CLBlast refuses, CLBlast's GEMM
 * is still right with a valid set that is not its default, a set CLBlast
 * refuses at runtime creation is a note and the runtime works, and a
 * record's set reaches CLBlast at all (a poisoned one breaks its GEMM, in
 * a process of its own: CLBlast keeps parameters for the whole process).
 * Built only with json-c.
 */
#define KILN_EXPERIMENTAL /* the tuning API */
#include <spawn.h>
#include <sys/wait.h>

#include "kiln_config.h"
#include "tuning-case.h"
#include "core/runtime.h"
#include "tuning/tuning.h"

extern char **environ;

/* Valid on PoCL and not CLBlast's defaults there: CLBlast 1.5.3's tuners'
 * picks on this machine (Xgemm: one of its fixed set; XgemmDirect: its
 * best), and GemmRoutine's size from which Xgemm runs instead of
 * XgemmDirect (m n k >= 64^3), lowered so that small tests reach both. */
static const char *const xgemm_names[] = {
  "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
  "NDIMC", "NWG",  "SA",  "SB",  "STRM",  "STRN",  "VWM", "VWN"};
static const size_t xgemm_values[] = {0, 1, 32, 2, 8, 8, 16, 8, 8, 32, 1, 1, 0, 0, 1, 4};
static const char *const direct_names[] = {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD",
                                           "PADA", "PADB",   "VWMD",   "VWND",   "WGD"};
static const size_t direct_values[] = {2, 16, 16, 8, 8, 1, 1, 1, 1, 32};
static const char *const routine_names[] = {"XGEMM_MIN_INDIRECT_SIZE"};
static const size_t routine_values[] = {64};

static kiln__clblast_params set_of(const char *kernel, kiln_dtype dtype, size_t n,
                                   const char *const *names, const size_t *values)
{
  kiln__clblast_params p;
  memset(&p, 0, sizeof p);
  strcpy(p.kernel, kernel);
  p.dtype = dtype;
  p.n = n;
  for (size_t i = 0; i < n; i++) {
    strcpy(p.names[i], names[i]);
    p.values[i] = values[i];
  }
  return p;
}

enum { NSETS = 3 };

static void three_sets(kiln__clblast_params *p)
{
  p[0] = set_of("Xgemm", KILN_F32, COUNT(xgemm_names), xgemm_names, xgemm_values);
  p[1] =
    set_of("XgemmDirect", KILN_F32, COUNT(direct_names), direct_names, direct_values);
  p[2] = set_of("GemmRoutine", KILN_F32, 1, routine_names, routine_values);
}

/* Saves a record holding sets p[0..n), put in place as kiln_tune() would
 * (without asking CLBlast); returns its text and path (malloc'd). */
static char *record_with(const fixture *fx, const kiln__clblast_params *p, size_t n,
                         char **path)
{
  kiln_runtime *rt = runtime(fx, 0);
  rt->tuning->clblast = malloc(n * sizeof *p);
  assert_non_null(rt->tuning->clblast);
  memcpy(rt->tuning->clblast, p, n * sizeof *p);
  rt->tuning->nclblast = n;
  assert_kiln_ok(rt, kiln__record_save(rt, "test", NULL, 0));
  char *text = record_text(rt, path);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  return text;
}

static kiln_tuning_usage usage(kiln_runtime *rt)
{
  kiln_tuning_usage u;
  kiln_tuning_usage_init(&u);
  assert_kiln_ok(rt, kiln_tuning_stats(rt, &u));
  return u;
}

static void test_clblast_round_trip(void **state)
{
  fixture *fx = *state;
  kiln__clblast_params sets[NSETS];
  three_sets(sets);
  char *path, *text = record_with(fx, sets, NSETS, &path);
  assert_non_null(strstr(text, "\"XGEMM_MIN_INDIRECT_SIZE\""));

  kiln_runtime *rt = runtime(fx, 0);
  assert_true(tuned(rt));
  kiln_tuning_usage u = usage(rt);
  assert_int_equal(u.clblast_sets, NSETS);
  assert_int_equal(u.clblast_applied, HAVE_CLBLAST ? NSETS : 0);
  assert_int_equal(rt->tuning->nclblast, NSETS);
  assert_memory_equal(rt->tuning->clblast, sets, sizeof sets);
  if (!HAVE_CLBLAST)
    assert_non_null(strstr(kiln_runtime_diagnostics(rt), "built without CLBlast"));
  else
    assert_null(strstr(kiln_runtime_diagnostics(rt), "tuning record"));
  char *json = NULL;
  assert_kiln_ok(rt, kiln_tuning_get(rt, &json));
  assert_non_null(strstr(json, "\"XgemmDirect\""));
  assert_kiln_ok(rt, kiln_tuning_clear(rt)); /* they go with the record */
  u = usage(rt);
  assert_int_equal(u.clblast_sets, 0);
  assert_int_equal(u.clblast_applied, 0);
  assert_kiln_ok(rt, kiln_tuning_set(rt, json)); /* and come back with it */
  u = usage(rt);
  assert_int_equal(u.clblast_sets, NSETS);
  assert_int_equal(u.clblast_applied, HAVE_CLBLAST ? NSETS : 0);
  assert_memory_equal(rt->tuning->clblast, sets, sizeof sets);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = runtime(fx, 1); /* KILN_TUNING=0: the record is not read at all */
  assert_int_equal(usage(rt).clblast_sets, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  free(json);
  free(text);
  free(path);
}

enum damage {
  PRECISION,    /* "f8" */
  FRACTION,     /* a value 2.5 */
  NEGATIVE,     /* a value -1 */
  TOO_LARGE,    /* 2^31 */
  KERNEL_PATH,  /* a kernel "../../x" */
  LOWER_NAME,   /* a parameter "mwg" */
  LONG_NAME,    /* a parameter of 60 letters */
  REPEATED,     /* Xgemm f32 twice */
  NOT_AN_ARRAY, /* "clblast": "Xgemm" */
  NO_PARAMS,    /* "parameters": {} */
  DAMAGES
};

static const char *const damage_note[DAMAGES] = {
  "clblast[0].precision is \"f8\"",
  "\"KWG\" is not a whole number",
  "\"KWG\" is not a whole number",
  "\"KWG\" is not a whole number",
  "clblast[1].kernel is \"../../x\"",
  "has the name \"mwg\"",
  "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...\" is not a whole number",
  "clblast[2] repeats Xgemm f32",
  "\"clblast\" is not an array",
  "clblast[0].parameters has 0; expected 1 to 32"};

/* The record text with damage d to its "clblast" section, resealed. */
static char *damaged(const char *good, enum damage d)
{
  json_object *o = json_tokener_parse(good), *a, *x, *ps;
  assert_non_null(o);
  assert_true(json_object_object_get_ex(o, "clblast", &a));
  x = json_object_array_get_idx(a, d == KERNEL_PATH ? 1 : 0);
  assert_true(json_object_object_get_ex(x, "parameters", &ps));
  static const double bad_value[] = {
    [FRACTION] = 2.5, [NEGATIVE] = -1, [TOO_LARGE] = 0x1p31};
  char long_name[61];
  memset(long_name, 'A', 60);
  long_name[60] = '\0';
  switch (d) {
  case PRECISION:
    json_object_object_add(x, "precision", json_object_new_string("f8"));
    break;
  case FRACTION:
    json_object_object_add(ps, "KWG", json_object_new_double(bad_value[d]));
    break;
  case NEGATIVE:
  case TOO_LARGE:
    json_object_object_add(ps, "KWG", json_object_new_int64((int64_t)bad_value[d]));
    break;
  case KERNEL_PATH:
    json_object_object_add(x, "kernel", json_object_new_string("../../x"));
    break;
  case LOWER_NAME: json_object_object_add(ps, "mwg", json_object_new_int(16)); break;
  case LONG_NAME: json_object_object_add(ps, long_name, json_object_new_int(16)); break;
  case REPEATED: json_object_array_put_idx(a, 2, json_object_get(x)); break;
  case NOT_AN_ARRAY:
    json_object_object_add(o, "clblast", json_object_new_string("Xgemm"));
    break;
  case NO_PARAMS:
    json_object_object_add(x, "parameters", json_object_new_object());
    break;
  case DAMAGES: break;
  }
  reseal(o);
  char *t = strdup(json_object_to_json_string(o));
  json_object_put(o);
  return t;
}

static void test_clblast_bad_entries(void **state)
{
  fixture *fx = *state;
  kiln__clblast_params sets[NSETS];
  three_sets(sets);
  char *path, *good = record_with(fx, sets, NSETS, &path);
  for (int d = 0; d < DAMAGES; d++) {
    char *bad = damaged(good, (enum damage)d);
    write_file(path, bad, strlen(bad));
    kiln_runtime *rt = runtime(fx, 0);
    const char *diag = kiln_runtime_diagnostics(rt);
    if (!strstr(diag, "tuning record") || !strstr(diag, damage_note[d]))
      fail_msg("damage %d: diagnostics say:\n%s", d, diag);
    assert_false(tuned(rt));
    assert_int_equal(usage(rt).clblast_sets, 0);
    assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, damage_note[d],
                      kiln_tuning_set(rt, bad));
    assert_int_equal(usage(rt).clblast_sets, 0); /* nothing changed */
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
    free(bad);
  }
  free(good);
  free(path);
}

/* What kiln_tuning_set_clblast() refuses before CLBlast sees it. */
static void test_clblast_bad_arguments(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  const char *twice[] = {"MWG", "MWG"}, *lower[] = {"mwg"};
  const size_t big[] = {(size_t)1 << 31}, two[] = {16, 16};
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "names is NULL",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, 1, NULL, two));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "has 0; expected 1 to 32",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, 0, twice, two));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "n is over 32",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, 33, twice, two));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "names MWG twice",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, 2, twice, two));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "has the name \"mwg\"",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, 1, lower, two));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "MWG = 2147483648 is out of range",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, 1, twice, big));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "kernel is \"Xgemm;\"",
                    kiln_tuning_set_clblast(rt, "Xgemm;", KILN_F32, 1, twice, two));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "precision is complex64",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_C32, 1, twice, two));
  assert_false(tuned(rt));
  assert_int_equal(usage(rt).clblast_sets, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

#if HAVE_CLBLAST

/* What CLBlast refuses: nothing kept, the runtime as it was. */
static void test_clblast_refused(void **state)
{
  kiln_runtime *rt = runtime(*state, 0);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "it has no kernel named Nope",
                    kiln_tuning_set_clblast(rt, "Nope", KILN_F32, COUNT(xgemm_names),
                                            xgemm_names, xgemm_values));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "CLBlastMissingOverrideParameter",
                    kiln_tuning_set_clblast(rt, "Xgemm", KILN_F32, COUNT(xgemm_names) - 1,
                                            xgemm_names, xgemm_values));
  if (!kiln_runtime_device(rt)->has_fp16)
    assert_kiln_fails(rt, KILN_ERR_UNSUPPORTED, "no float16",
                      kiln_tuning_set_clblast(rt, "Xgemm", KILN_F16, COUNT(xgemm_names),
                                              xgemm_names, xgemm_values));
  assert_false(tuned(rt));
  assert_int_equal(usage(rt).clblast_sets, 0);
  check_gemm_on(rt, KILN_BACKEND_CLBLAST, 20, 30, 40);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* A valid set that is not CLBlast's default: its GEMM still right through
 * both of its kernels, in this runtime and the next, which reads them from
 * the record. Another set for the same kernel and precision replaces it. */
static void test_clblast_gemm(void **state)
{
  fixture *fx = *state;
  kiln__clblast_params sets[NSETS];
  three_sets(sets);
  kiln_runtime *rt = runtime(fx, 0);
  for (size_t i = 0; i < NSETS; i++) {
    const char *names[KILN__CLBLAST_PARAMS];
    for (size_t j = 0; j < sets[i].n; j++)
      names[j] = sets[i].names[j];
    assert_kiln_ok(rt, kiln_tuning_set_clblast(rt, sets[i].kernel, sets[i].dtype,
                                               sets[i].n, names, sets[i].values));
  }
  assert_kiln_ok(rt,
                 kiln_tuning_set_clblast(rt, "GemmRoutine", KILN_F32, 1, routine_names,
                                         routine_values)); /* again: replaced */
  kiln_tuning_usage u = usage(rt);
  assert_true(u.tuned);
  assert_int_equal(u.clblast_sets, NSETS);
  assert_int_equal(u.clblast_applied, NSETS);
  check_gemm_on(rt, KILN_BACKEND_CLBLAST, 131, 67, 45); /* >= 64^3: Xgemm */
  check_gemm_on(rt, KILN_BACKEND_CLBLAST, 20, 30, 40);  /* < 64^3: XgemmDirect */
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));

  rt = runtime(fx, 0);
  u = usage(rt);
  assert_int_equal(u.clblast_sets, NSETS);
  assert_int_equal(u.clblast_applied, NSETS);
  assert_memory_equal(rt->tuning->clblast, sets, sizeof sets);
  check_gemm_on(rt, KILN_BACKEND_CLBLAST, 131, 67, 45);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* A record whose sets CLBlast refuses at runtime creation (a kernel it
 * does not know, one with a parameter missing): a note each, the valid one
 * and the rest of the record apply, and the runtime works. */
static void test_clblast_refused_in_record(void **state)
{
  fixture *fx = *state;
  kiln__clblast_params sets[NSETS];
  three_sets(sets);
  strcpy(sets[2].kernel, "Nope");
  sets[1].n = 1; /* XgemmDirect with KWID only */
  char *path, *text = record_with(fx, sets, NSETS, &path);
  kiln_runtime *rt = runtime(fx, 0);
  const char *diag = kiln_runtime_diagnostics(rt);
  if (!strstr(diag, "CLBlast's parameters for Nope f32 not applied: "
                    "CLBlastOverrideParameters failed with CLBlastDatabaseError") ||
      !strstr(diag,
              "CLBlast's parameters for XgemmDirect f32 not applied: "
              "CLBlastOverrideParameters failed with CLBlastMissingOverrideParameter"))
    fail_msg("diagnostics say:\n%s", diag);
  kiln_tuning_usage u = usage(rt);
  assert_true(u.tuned);
  assert_int_equal(u.clblast_sets, NSETS);
  assert_int_equal(u.clblast_applied, 1);
  check_gemm_on(rt, KILN_BACKEND_CLBLAST, 131, 67, 45);
  check_gemm_on(rt, KILN_BACKEND_KILN, 33, 17, 9);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  free(text);
  free(path);
}

/* The child of test_clblast_reaches_clblast: a runtime on the record in
 * dir, and one CLBlast GEMM big enough for Xgemm. Exit status 0 when it
 * fails as a kernel that does not build fails, 2 when it runs. */
static int poisoned_child(const char *dir)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = dir;
  kiln_runtime *rt = NULL;
  kiln_buffer *a = NULL, *b = NULL, *c = NULL;
  if (kiln_runtime_create(&o, &rt) != KILN_OK ||
      kiln_buffer_create(rt, KILN_F32, 128 * 128, 0, &a) != KILN_OK ||
      kiln_buffer_create(rt, KILN_F32, 128 * 128, 0, &b) != KILN_OK ||
      kiln_buffer_create(rt, KILN_F32, 128 * 128, 0, &c) != KILN_OK)
    return 1;
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, 128, 128, 128);
  d.backend = KILN_BACKEND_CLBLAST;
  kiln_status st = kiln_gemm(rt, &d, a, b, c);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  fprintf(stderr, "poisoned child: %s: %s\n", kiln_status_name(st), kiln_last_error(rt));
  int rc = st == KILN_OK ? 2 : strstr(kiln_last_error(rt), "CLBlastSgemm") ? 0 : 1;
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  kiln_buffer_destroy(c);
  kiln_runtime_destroy(rt);
  return rc;
}

/* The record's sets reach CLBlast: with VWM = 5 (no float5 in OpenCL C),
 * which CLBlast takes (it checks names only), its Xgemm does not build. In
 * a new process, as CLBlast would keep the poison for the rest of this
 * one. */
static void test_clblast_reaches_clblast(void **state)
{
  fixture *fx = *state;
  kiln__clblast_params sets[NSETS];
  three_sets(sets);
  assert_string_equal(sets[0].names[14], "VWM");
  sets[0].values[14] = 5;
  char *path, *text = record_with(fx, sets, NSETS, &path);
  char *argv[] = {"test-tuning-clblast", "--poisoned-child", fx->dir, NULL};
  /* CLBlast prints the build log on stdout: keep it off the TAP stream. */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  free(text);
  free(path);
}

#endif /* HAVE_CLBLAST */

int main(int argc, char **argv)
{
#if HAVE_CLBLAST
  if (argc == 3 && strcmp(argv[1], "--poisoned-child") == 0)
    return poisoned_child(argv[2]);
#else
  (void)argc, (void)argv;
#endif
  kiln_test_require_device();
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
    T(test_clblast_round_trip),
    T(test_clblast_bad_entries),
    T(test_clblast_bad_arguments),
#if HAVE_CLBLAST
    T(test_clblast_refused),
    T(test_clblast_gemm),
    T(test_clblast_refused_in_record),
    T(test_clblast_reaches_clblast),
#endif
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
