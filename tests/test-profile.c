/*
 * test-profile.c — profiling: the records of buffer calls, operations and
 * kernel launches (names, backends, counts, times, flops and bytes from the
 * shapes), calls on several threads, profiling off, reset, the table's
 * text, the trace file (loaded with json-c where the build has it), the
 * builds, cache loads, FFT plans and benchmark mode's timing apart from the
 * calls, and the errors.
 *
 * usage: test-profile          every test (compiles kernels: the device suite)
 *        test-profile --core   the tests that compile no kernel (the core
 *                              suite, which valgrind runs)
 */
#include "common.h"

#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "kiln_config.h"
#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

#define N (1u << 18) /* elements of the buffer tests: long enough to time */

static char tmp_dir[64];

/* A runtime with profiling on (through the option, or off), keeping the
 * environment's other settings (the test cache folder). */
static kiln_runtime *runtime_with(int profile, const char *trace)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = profile;
  opts.trace = trace;
  return kiln_test_runtime_with(&opts);
}

static void tmp_path(char *buf, size_t size, const char *name)
{
  snprintf(buf, size, "%s/%s", tmp_dir, name);
}

/* The row of op on backend, or NULL. */
static const kiln_profile_row *find_row(const kiln_profile_row *rows, size_t n,
                                        const char *op, const char *backend)
{
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i].op, op) && (!backend || !strcmp(rows[i].backend, backend)))
      return &rows[i];
  return NULL;
}

/* Whether a row is a build's or a cache load's: host time, the table's
 * second section. */
static int is_build(const kiln_profile_row *r)
{
  return r->kind == KILN_PROFILE_BUILD || r->kind == KILN_PROFILE_LOAD;
}

/* How many rows are of kind. */
static size_t rows_of(const kiln_profile_row *rows, size_t n, kiln_profile_kind kind)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += rows[i].kind == kind;
  return k;
}

/* What holds for every row: times, rates and shares consistent with each
 * other, and the order: the calls' and benchmarks' rows by total time, then
 * the builds' and loads' by total time, which share nothing of the device
 * time's 100%. */
static void check_rows(const kiln_profile_row *rows, size_t n)
{
  double percent = 0;
  size_t device_rows = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln_profile_row *r = &rows[i];
    assert_true(r->calls >= 1);
    if (!(r->min_ns > 0 && r->min_ns <= r->max_ns && r->max_ns <= r->total_ns &&
          r->total_ns <= r->max_ns * r->calls))
      fail_msg("%s/%s: total %llu, min %llu, max %llu over %llu calls", r->op, r->backend,
               (unsigned long long)r->total_ns, (unsigned long long)r->min_ns,
               (unsigned long long)r->max_ns, (unsigned long long)r->calls);
    assert_true(r->host_ns > 0);
    assert_true(r->gflops >= 0 && r->gbps >= 0);
    if (r->flops)
      assert_true(r->gflops > 0);
    if (r->bytes)
      assert_true(r->gbps > 0);
    assert_true((unsigned)r->kind <= KILN_PROFILE_BENCHMARK);
    if (i > 0 && is_build(&rows[i - 1]))
      assert_true(is_build(r)); /* the builds' section is the last */
    if (i > 0 && is_build(&rows[i - 1]) == is_build(r))
      assert_true(rows[i - 1].total_ns >= r->total_ns);
    if (is_build(r))
      assert_true(r->percent == 0 && r->flops == 0 && r->bytes == 0);
    device_rows += !is_build(r);
    percent += r->percent;
  }
  if (device_rows)
    assert_true(fabs(percent - 100) < 1e-6);
}

/* Every row, into a malloc'd array; checked by check_rows() unless the
 * driver gives no device times (check_rows() wants them). */
static kiln_profile_row *fetch_rows(kiln_runtime *rt, size_t *n, int timed)
{
  assert_kiln_ok(rt, kiln_profile_rows(rt, NULL, 0, n));
  kiln_profile_row *rows = calloc(*n ? *n : 1, sizeof *rows);
  kiln_profile_row_init(&rows[0]); /* rows[0].struct_size: the element size */
  size_t again = 0;
  assert_kiln_ok(rt, kiln_profile_rows(rt, rows, *n, &again));
  assert_int_equal(again, *n);
  if (timed)
    check_rows(rows, *n);
  return rows;
}

static kiln_profile_row *all_rows(kiln_runtime *rt, size_t *n)
{
  return fetch_rows(rt, n, 1);
}

/* Two blocking and one asynchronous write, a fill, a copy, one blocking
 * and one asynchronous read of N floats. */
static void buffer_calls(kiln_runtime *rt)
{
  float *host = calloc(N, sizeof *host);
  kiln_buffer *a = NULL, *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &b));
  float one = 1;
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, N, host));
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, N, host));
  assert_kiln_ok(rt, kiln_buffer_write_async(a, 0, N, host));
  assert_kiln_ok(rt, kiln_buffer_fill(b, 0, N, &one));
  assert_kiln_ok(rt, kiln_buffer_copy(a, 0, b, 0, N));
  assert_kiln_ok(rt, kiln_buffer_read(a, 0, N, host));
  assert_kiln_ok(rt, kiln_buffer_read_async(b, 0, N, host));
  /* nothing enqueued, nothing recorded */
  assert_kiln_ok(rt, kiln_buffer_copy(a, 0, b, 0, 0));
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_true(host[0] == 1 && host[N - 1] == 1);
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  free(host);
}

static void test_profile_buffer_calls(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1, NULL);
  assert_true(kiln_profile_enabled(rt));
  buffer_calls(rt);
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  assert_int_equal(n, 4);
  const uint64_t bytes = N * sizeof(float);
  static const struct {
    const char *op;
    uint64_t calls, bytes;
  } want[] = {{"write", 3, 3 * bytes},
              {"read", 2, 2 * bytes},
              {"fill", 1, bytes},
              {"copy", 1, 2 * bytes}};
  for (size_t i = 0; i < 4; i++) {
    const kiln_profile_row *r = find_row(rows, n, want[i].op, "opencl");
    if (!r)
      fail_msg("no row for %s", want[i].op);
    assert_int_equal(r->calls, want[i].calls);
    assert_int_equal(r->bytes, want[i].bytes);
    assert_int_equal(r->flops, 0);
    assert_true(r->gflops == 0);
  }
  free(rows);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_profile_off_records_nothing(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(0, NULL);
  assert_false(kiln_profile_enabled(rt));
  buffer_calls(rt);
  size_t n = 99;
  assert_kiln_ok(rt, kiln_profile_rows(rt, NULL, 0, &n));
  assert_int_equal(n, 0);
  char text[512] = "";
  FILE *f = fmemopen(text, sizeof text - 1, "w");
  assert_kiln_ok(rt, kiln_profile_report(rt, f));
  fclose(f);
  assert_non_null(strstr(text, "profiling is off"));
  assert_non_null(strstr(text, "KILN_PROFILE=1"));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_profile_reset(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1, NULL);
  buffer_calls(rt);
  size_t n;
  assert_kiln_ok(rt, kiln_profile_rows(rt, NULL, 0, &n));
  assert_int_equal(n, 4);
  assert_kiln_ok(rt, kiln_profile_reset(rt));
  assert_kiln_ok(rt, kiln_profile_rows(rt, NULL, 0, &n));
  assert_int_equal(n, 0);
  /* records again after a reset */
  float one = 1;
  kiln_buffer *b = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_fill(b, 0, N, &one));
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_profile_row row;
  kiln_profile_row_init(&row);
  assert_kiln_ok(rt, kiln_profile_rows(rt, &row, 1, &n));
  assert_int_equal(n, 1);
  assert_string_equal(row.op, "fill");
  assert_int_equal(row.calls, 1);
  /* fewer slots than rows: the count says how many there are */
  buffer_calls(rt);
  assert_kiln_ok(rt, kiln_profile_rows(rt, &row, 1, &n));
  assert_int_equal(n, 4);
  kiln_buffer_destroy(b);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* The table: a title, the header, one line per row in the getter's order,
 * and the total line. */

/* Every line of a table in text, from its header line at head (which
 * starts with the newline before it) down to its Total line, is as wide as
 * the header: the columns are aligned. */
static void assert_aligned(const char *head, const char *text)
{
  size_t width = (size_t)(strchr(head + 1, '\n') - (head + 1));
  for (const char *line = head + 1; *line && strncmp(line, "Total", 5);) {
    const char *end = strchr(line, '\n');
    if ((size_t)(end - line) != width)
      fail_msg("a line of %zu characters, the header's %zu:\n%s", (size_t)(end - line),
               width, text);
    line = end + 1;
  }
}
/* A driver whose profiling timestamps are no clock (Mesa 22's rusticl
 * counts 0, 1, 2, 3 for every command) gives no device times: kiln says so
 * in the diagnostics and the table, the rows' device fields are 0 and the
 * table shows "-". PoCL's clock is one. On `device` (NULL: kiln's pick). */
static void check_timed(const char *device, int timed)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = 1;
  opts.device = device;
  kiln_runtime *rt = kiln_test_runtime_with(&opts);
  const char *name = kiln_runtime_device(rt)->name;
  buffer_calls(rt);
  if (!!strstr(kiln_runtime_diagnostics(rt), "gives no device times") == timed)
    fail_msg("%s: the diagnostics %s that it gives no device times: '%s'", name,
             timed ? "say" : "do not say", kiln_runtime_diagnostics(rt));
  size_t n;
  kiln_profile_row *rows = fetch_rows(rt, &n, timed);
  assert_true(n > 0);
  for (size_t i = 0; i < n; i++)
    if ((rows[i].total_ns > 0) != timed || rows[i].host_ns == 0)
      fail_msg("%s: %s/%s has device time %llu and host time %llu", name, rows[i].op,
               rows[i].backend, (unsigned long long)rows[i].total_ns,
               (unsigned long long)rows[i].host_ns);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_kiln_ok(rt, kiln_profile_report(rt, f));
  fclose(f);
  if (!!strstr(text, "(no device times") == timed)
    fail_msg("%s: the table %s no device times:\n%s", name,
             timed ? "says" : "does not say", text);
  free(text);
  free(rows);
  kiln_runtime_destroy(rt);
}

static void test_profile_untimed_driver(void **state)
{
  (void)state;
  check_timed(NULL, 1);
  if (kiln_test_has_rusticl())
    check_timed("mesa", 0);
}

static void test_profile_report_text(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1, NULL);
  buffer_calls(rt);
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_kiln_ok(rt, kiln_profile_report(rt, f));
  fclose(f);
  assert_non_null(strstr(text, kiln_runtime_device(rt)->name));
  static const char *const header[] = {"Op",      "Backend", "Calls", "Device total",
                                       "Mean",    "Min",     "Max",   "Host total",
                                       "GFLOP/s", "GB/s",    "% time"};
  const char *head = strstr(text, "\nOp ");
  assert_non_null(head);
  for (size_t i = 0; i < sizeof header / sizeof header[0]; i++) {
    const char *at = strstr(head, header[i]);
    if (!at || at > strchr(head + 1, '\n'))
      fail_msg("the header has no '%s':\n%s", header[i], text);
  }
  const char *at = head;
  for (size_t i = 0; i < n; i++) { /* the rows, in the getter's order */
    char line[96];
    snprintf(line, sizeof line, "\n%s ", rows[i].op);
    const char *next = strstr(at, line);
    if (!next)
      fail_msg("row %zu (%s) is missing or out of order:\n%s", i, rows[i].op, text);
    at = next + 1;
  }
  assert_non_null(strstr(at, "\nTotal "));
  assert_non_null(strstr(at, "100.0%"));
  assert_aligned(head, text); /* aligned columns */
  free(text);
  free(rows);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* Threads sharing a runtime each record their own calls. */
typedef struct worker {
  kiln_runtime *rt;
  kiln_buffer *a, *b;
  int failed;
} worker;

static void *work(void *arg)
{
  worker *w = arg;
  float one = 1;
  for (int i = 0; i < 50 && !w->failed; i++)
    w->failed = kiln_buffer_fill(w->a, 0, 1024, &one) != KILN_OK ||
                kiln_buffer_copy(w->b, 0, w->a, 0, 1024) != KILN_OK;
  return NULL;
}

static void test_profile_threads(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1, NULL);
  worker w[4];
  pthread_t th[4];
  for (int t = 0; t < 4; t++) {
    w[t] = (worker){.rt = rt};
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1024, 0, &w[t].a));
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1024, 0, &w[t].b));
    assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(th[t], NULL);
    assert_false(w[t].failed);
  }
  assert_kiln_ok(rt, kiln_finish(rt));
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  assert_int_equal(n, 2);
  assert_int_equal(find_row(rows, n, "fill", "opencl")->calls, 200);
  assert_int_equal(find_row(rows, n, "copy", "opencl")->calls, 200);
  free(rows);
  for (int t = 0; t < 4; t++) {
    kiln_buffer_destroy(w[t].a);
    kiln_buffer_destroy(w[t].b);
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_profile_env(void **state)
{
  (void)state;
  setenv("KILN_PROFILE", "1", 1);
  kiln_runtime *rt = runtime_with(0, NULL);
  assert_true(kiln_profile_enabled(rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  setenv("KILN_PROFILE", "0", 1);
  rt = runtime_with(0, NULL);
  assert_false(kiln_profile_enabled(rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  rt = runtime_with(1, NULL); /* the option wins */
  assert_true(kiln_profile_enabled(rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  setenv("KILN_PROFILE", "yes", 1);
  rt = NULL;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV, "KILN_PROFILE='yes'",
                    kiln_runtime_create(NULL, &rt));
  assert_null(rt);
  assert_non_null(strstr(kiln_last_error(NULL), "expected 1"));
  unsetenv("KILN_PROFILE");
  /* a trace implies profiling */
  char path[128];
  tmp_path(path, sizeof path, "env.json");
  setenv("KILN_TRACE", path, 1);
  rt = runtime_with(0, NULL);
  unsetenv("KILN_TRACE");
  assert_true(kiln_profile_enabled(rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  remove(path);
}

static void test_profile_bad_input(void **state)
{
  (void)state;
  size_t n;
  kiln_profile_row row;
  kiln_profile_row_init(&row);
  assert_false(kiln_profile_enabled(NULL));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_profile_rows(NULL, &row, 1, &n));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_profile_report(NULL, stdout));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_profile_reset(NULL));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_profile_write_trace(NULL, "x.json"));
  kiln_runtime *rt = runtime_with(1, NULL);
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "f is NULL",
                    kiln_profile_report(rt, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "count is NULL",
                    kiln_profile_rows(rt, &row, 1, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "rows is NULL",
                    kiln_profile_rows(rt, NULL, 1, &n));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "path is NULL",
                    kiln_profile_write_trace(rt, NULL));
  const char *bad = "/nonexistent-kiln-dir/trace.json";
  assert_kiln_fails(rt, KILN_ERR_IO, bad, kiln_profile_write_trace(rt, bad));
  /* a FILE that cannot be written */
  FILE *ro = fopen("/dev/null", "r");
  assert_kiln_fails(rt, KILN_ERR_IO, "writing the table", kiln_profile_report(rt, ro));
  fclose(ro);
  /* a failed call is not recorded, and the runtime goes on */
  kiln_buffer *b = NULL;
  float one = 1;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 16, 0, &b));
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "outside",
                    kiln_buffer_fill(b, 8, 16, &one));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "value is NULL",
                    kiln_buffer_fill(b, 0, 16, NULL));
  assert_kiln_ok(rt, kiln_buffer_fill(b, 0, 16, &one));
  assert_kiln_ok(rt, kiln_finish(rt));
  assert_kiln_ok(rt, kiln_profile_rows(rt, &row, 1, &n));
  assert_int_equal(n, 1);
  assert_int_equal(row.calls, 1);
  kiln_buffer_destroy(b);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* A trace file that cannot be created: the runtime works and profiles, the
 * diagnostics say so, and kiln_runtime_destroy() reports the failure. */
static void test_profile_trace_unwritable(void **state)
{
  (void)state;
  const char *bad = "/nonexistent-kiln-dir/trace.json";
  kiln_runtime *rt = runtime_with(0, bad);
  assert_true(kiln_profile_enabled(rt));
  const char *notes = kiln_runtime_diagnostics(rt);
  if (!strstr(notes, bad) || !strstr(notes, "kiln_options.trace"))
    fail_msg("the diagnostics do not name the trace file: %s", notes);
  buffer_calls(rt);
  size_t n;
  assert_kiln_ok(rt, kiln_profile_rows(rt, NULL, 0, &n));
  assert_int_equal(n, 4);
  assert_kiln_fails(NULL, KILN_ERR_IO, bad, kiln_runtime_destroy(rt));
}

/* ---- the trace ------------------------------------------------------------ */

#if HAVE_JSON_C
static const char *str_of(json_object *o, const char *key)
{
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static double num_of(json_object *o, const char *key)
{
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v))
    fail_msg("an event has no '%s': %s", key, json_object_to_json_string(o));
  return json_object_get_double(v);
}

/* The event of category cat named name, or NULL. */
static json_object *event(json_object *events, const char *cat, const char *name)
{
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *e = json_object_array_get_idx(events, i);
    const char *c = str_of(e, "cat"), *nm = str_of(e, "name");
    if (c && nm && !strcmp(c, cat) && !strcmp(nm, name))
      return e;
  }
  return NULL;
}

/* The part of a call's device event (1 of 1 when it is whole). */
static int part_of(json_object *e)
{
  json_object *args, *part;
  return json_object_object_get_ex(e, "args", &args) &&
             json_object_object_get_ex(args, "part", &part)
           ? json_object_get_int(part)
           : 1;
}

/* The events of category cat, a device event cut in parts counted once. */
static size_t count_of(json_object *events, const char *cat)
{
  size_t n = 0;
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *e = json_object_array_get_idx(events, i);
    const char *c = str_of(e, "cat");
    n += c && !strcmp(c, cat) && part_of(e) == 1;
  }
  return n;
}

/* Checks the trace against the calls that ran: one device and one host
 * event each, with the call's args, on tracks of their own, the host's
 * beginning before the device's ends; every track named. */
static void check_trace(const char *path, const char *const *names, const uint64_t *flops,
                        const uint64_t *bytes, size_t n)
{
  json_object *root = json_object_from_file(path);
  if (!root)
    fail_msg("%s does not parse as JSON", path);
  json_object *events;
  assert_true(json_object_object_get_ex(root, "traceEvents", &events));
  assert_int_equal(count_of(events, "device"), n);
  assert_int_equal(count_of(events, "host"), n);
  for (size_t i = 0; i < n; i++) {
    json_object *d = event(events, "device", names[i]);
    json_object *h = event(events, "host", names[i]);
    if (!d || !h)
      fail_msg("no device or host event for %s", names[i]);
    assert_string_equal(str_of(d, "ph"), "X");
    assert_true(num_of(d, "ts") >= 0 && num_of(d, "dur") >= 0);
    assert_true(num_of(h, "ts") >= 0 && num_of(h, "dur") >= 0);
    assert_true(num_of(d, "tid") != num_of(h, "tid"));
    assert_true(num_of(d, "pid") == num_of(h, "pid"));
    if (!(num_of(h, "ts") <= num_of(d, "ts") + num_of(d, "dur")))
      fail_msg("%s: the host event begins at %.3f us, after its device event ends at "
               "%.3f",
               names[i], num_of(h, "ts"), num_of(d, "ts") + num_of(d, "dur"));
    json_object *args;
    assert_true(json_object_object_get_ex(d, "args", &args));
    assert_non_null(str_of(args, "backend"));
    assert_true(strlen(str_of(args, "shape")) > 0);
    assert_true(num_of(args, "bytes") == (double)bytes[i]);
    assert_true(num_of(args, "flops") == (double)flops[i]);
  }
  /* every track of an event is named by a metadata event */
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *e = json_object_array_get_idx(events, i);
    const char *ph = str_of(e, "ph");
    if (strcmp(ph, "X"))
      continue;
    int named = 0;
    for (size_t j = 0; j < json_object_array_length(events) && !named; j++) {
      json_object *m = json_object_array_get_idx(events, j);
      named = !strcmp(str_of(m, "ph"), "M") &&
              !strcmp(str_of(m, "name"), "thread_name") &&
              num_of(m, "tid") == num_of(e, "tid");
    }
    if (!named)
      fail_msg("track %g has no name", num_of(e, "tid"));
  }
  json_object_put(root);
}
#else
/* Without json-c: the file at least looks like a trace, with the calls. */
static void check_trace(const char *path, const char *const *names, const uint64_t *flops,
                        const uint64_t *bytes, size_t n)
{
  (void)flops;
  (void)bytes;
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  assert_true(text[0] == '{');
  assert_non_null(strstr(text, "\"traceEvents\""));
  for (size_t i = 0; i < n; i++) {
    char name[80];
    snprintf(name, sizeof name, "{\"name\":\"%s\",\"cat\":\"device\"", names[i]);
    if (!strstr(text, name))
      fail_msg("no device event for %s", names[i]);
  }
}
#endif

static void test_profile_trace_buffer_calls(void **state)
{
  (void)state;
  char path[128];
  tmp_path(path, sizeof path, "buffer.json");
  setenv("KILN_TRACE", path, 1);
  kiln_runtime *rt = runtime_with(0, NULL);
  unsetenv("KILN_TRACE");
  float *host = calloc(N, sizeof *host);
  kiln_buffer *a = NULL, *b = NULL;
  float one = 1;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &b));
  assert_kiln_ok(rt, kiln_buffer_write(a, 0, N, host));
  assert_kiln_ok(rt, kiln_buffer_fill(b, 0, N, &one));
  assert_kiln_ok(rt, kiln_buffer_copy(a, 0, b, 0, N));
  assert_kiln_ok(rt, kiln_buffer_read(a, 0, N, host));
  kiln_buffer_destroy(a);
  kiln_buffer_destroy(b);
  free(host);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  static const char *const names[] = {"write", "fill", "copy", "read"};
  static const uint64_t flops[] = {0, 0, 0, 0};
  const uint64_t bytes[] = {4 * N, 4 * N, 8 * N, 4 * N};
  check_trace(path, names, flops, bytes, 4);
  remove(path);
}

/* ---- operations and kernels (compile kernels: not in --core) ------------- */

static const char saxpy[] =
  "kernel void saxpy(float a, global const float *x, global float *y)\n"
  "{ size_t i = get_global_id(0); y[i] += a * x[i]; }\n";

/* One of each: a GEMM, a sum, an FFT (when built), a conversion, a
 * convolution through im2col (which runs a GEMM inside), a user kernel;
 * and a failing GEMM, which is not recorded. Returns how many ran. */
static size_t run_ops(kiln_runtime *rt, const char **names, uint64_t *flops,
                      uint64_t *bytes)
{
  enum { M = 64, NN = 48, K = 32, R = 1 << 16, F = 1024 };
  kiln_buffer *a, *b, *c, *x, *s, *h, *fi, *fo, *cx, *cw, *cy;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, M * K, KILN_BUFFER_ZERO, &a));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, K * NN, KILN_BUFFER_ZERO, &b));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, M * NN, 0, &c));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, R, KILN_BUFFER_ZERO, &x));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &s));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F16, R, 0, &h));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, F, KILN_BUFFER_ZERO, &fi));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, F, 0, &fo));
  /* conv2d: 1 image of 8 x 16 x 16, 16 filters of 3 x 3 -> 16 x 14 x 14 */
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 8 * 256, KILN_BUFFER_ZERO, &cx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 16 * 8 * 9, KILN_BUFFER_ZERO, &cw));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 16 * 14 * 14, 0, &cy));
  size_t n = 0;

  kiln_gemm_desc g;
  kiln_gemm_desc_init(&g, KILN_F32, M, NN, K);
  g.backend = KILN_BACKEND_KILN;
  assert_kiln_ok(rt, kiln_gemm(rt, &g, a, b, c));
  names[n] = "gemm", flops[n] = 2ull * M * NN * K;
  bytes[n++] = 4ull * (M * K + K * NN + M * NN);
  g.m = 1000; /* A is too small: refused, not recorded */
  assert_kiln_fails(rt, KILN_ERR_OUT_OF_BOUNDS, "A needs", kiln_gemm(rt, &g, a, b, c));

  kiln_reduce_desc r;
  kiln_reduce_desc_init(&r, KILN_REDUCE_SUM, KILN_F32, R);
  assert_kiln_ok(rt, kiln_reduce(rt, &r, x, s));
  names[n] = "reduce.sum", flops[n] = R, bytes[n++] = 4ull * R + 4;

  kiln_fft_desc fd;
  kiln_fft_desc_init(&fd, KILN_F32, F);
  kiln_status st = kiln_fft(rt, &fd, fi, fo);
  if (st != KILN_ERR_UNSUPPORTED) { /* a kiln without an FFT backend */
    assert_kiln_ok(rt, st);
    names[n] = "fft", flops[n] = 5ull * F * 10, bytes[n++] = 2ull * 8 * F;
  }

  assert_kiln_ok(rt, kiln_convert(x, h));
  names[n] = "convert", flops[n] = 0, bytes[n++] = 6ull * R;

  kiln_conv2d_desc cd;
  kiln_conv2d_desc_init(&cd, KILN_F32, 1, 8, 16, 16, 16, 3, 3);
  cd.backend = KILN_BACKEND_IM2COL;
  assert_kiln_ok(rt, kiln_conv2d(rt, &cd, cx, cw, NULL, cy));
  names[n] = "conv2d", flops[n] = 2ull * 16 * 14 * 14 * 8 * 9;
  bytes[n++] = 4ull * (8 * 16 * 16 + 16 * 8 * 9 + 16 * 14 * 14);

  kiln_program *p;
  kiln_kernel *k;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, NULL, &p));
  assert_kiln_ok(rt, kiln_kernel_create(p, "saxpy", &k));
  assert_kiln_ok(rt, kiln_kernel_set_args(k, "fbb", 2.0, x, x));
  size_t global = R;
  assert_kiln_ok(rt, kiln_kernel_launch(k, 1, &global, NULL));
  names[n] = "saxpy", flops[n] = 0, bytes[n++] = 0; /* kiln cannot know */

  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_kernel_destroy(k);
  kiln_program_destroy(p);
  kiln_buffer *all[] = {a, b, c, x, s, h, fi, fo, cx, cw, cy};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_buffer_destroy(all[i]);
  return n;
}

static void test_profile_ops(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1, NULL);
  const char *names[8];
  uint64_t flops[8], bytes[8];
  size_t ran = run_ops(rt, names, flops, bytes);
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  /* the calls alone: KILN_BUFFER_ZERO's fills at creation are not calls;
   * the programs built or loaded are rows of their own */
  assert_int_equal(rows_of(rows, n, KILN_PROFILE_CALL), ran);
  assert_true(find_row(rows, n, "build program saxpy", "opencl") ||
              find_row(rows, n, "load program saxpy", "opencl"));
  for (size_t i = 0; i < ran; i++) {
    const kiln_profile_row *r = find_row(rows, n, names[i], NULL);
    if (!r)
      fail_msg("no row for %s", names[i]);
    assert_int_equal(r->kind, KILN_PROFILE_CALL);
    assert_int_equal(r->calls, 1); /* the failed GEMM, im2col's GEMM not counted */
    assert_int_equal(r->flops, flops[i]);
    assert_int_equal(r->bytes, bytes[i]);
  }
  assert_string_equal(find_row(rows, n, "gemm", NULL)->backend, "kiln");
  assert_string_equal(find_row(rows, n, "reduce.sum", NULL)->backend, "kiln");
  assert_string_equal(find_row(rows, n, "convert", NULL)->backend, "kiln");
  assert_string_equal(find_row(rows, n, "conv2d", NULL)->backend, "im2col");
  assert_string_equal(find_row(rows, n, "saxpy", NULL)->backend, "user");
  const kiln_profile_row *fft = find_row(rows, n, "fft", NULL);
  if (fft && strcmp(fft->backend, "kiln") && strcmp(fft->backend, "vkfft") &&
      strcmp(fft->backend, "clfft"))
    fail_msg("fft ran on backend '%s'", fft->backend);
  free(rows);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void test_profile_trace_ops(void **state)
{
  (void)state;
  char path[128];
  tmp_path(path, sizeof path, "ops.json");
  setenv("KILN_TRACE", path, 1);
  kiln_runtime *rt = runtime_with(0, NULL);
  unsetenv("KILN_TRACE");
  const char *names[8];
  uint64_t flops[8], bytes[8];
  size_t ran = run_ops(rt, names, flops, bytes);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  check_trace(path, names, flops, bytes, ran);
  remove(path);
}

/* ---- builds, loads, plans and benchmarks: rows of their own -------------- */

/* A runtime profiling into its own kernel cache folder dir, with a trace
 * file when trace is not NULL, in benchmark mode when benchmark. */
static kiln_runtime *cached_runtime(const char *dir, const char *trace, int benchmark)
{
  kiln_options opts;
  kiln_options_init(&opts);
  opts.profile = 1;
  opts.trace = trace;
  opts.cache_dir = dir;
  opts.benchmark = benchmark;
  return kiln_test_runtime_with(&opts);
}

/* `times` inverse complex FFTs of 1024 points on kiln's own backend, which
 * scales the output by 1/n in a pass of cl/scale.cl after the transform's
 * passes: on a cold cache cl/fft.cl is built before the call's first
 * command, cl/scale.cl between two of its commands. Returns the host time
 * the calls took, ns. */
static uint64_t inverse_ffts(kiln_runtime *rt, int times)
{
  enum { F = 1024 };
  kiln_buffer *in, *out;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, F, KILN_BUFFER_ZERO, &in));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, F, 0, &out));
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, F);
  d.inverse = 1;
  d.backend = KILN_BACKEND_KILN;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < times; i++)
    assert_kiln_ok(rt, kiln_fft(rt, &d, in, out));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_buffer_destroy(in);
  kiln_buffer_destroy(out);
  return (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
         (uint64_t)t0.tv_nsec;
}

/* The row of op, which must be there, of kind and from `calls` calls. */
static const kiln_profile_row *need_row(const kiln_profile_row *rows, size_t n,
                                        const char *op, kiln_profile_kind kind,
                                        uint64_t calls)
{
  const kiln_profile_row *r = find_row(rows, n, op, NULL);
  if (!r)
    fail_msg("no row '%s'", op);
  if (r->kind != kind || r->calls != calls)
    fail_msg("row '%s': kind %d and %llu calls, expected kind %d and %llu", op,
             (int)r->kind, (unsigned long long)r->calls, (int)kind,
             (unsigned long long)calls);
  assert_true(r->total_ns > 0);
  return r;
}

/* The rows of one kernel file's programs, of kind, summed: kiln builds or
 * loads each kernel as a program of its own, named "build cl/fft.cl
 * kiln_fft_r2_f32" (src/compile/program.c), once a runtime. NULL-free: fails when
 * there is none, or one is of another kind or count. */
static kiln_profile_row need_file_rows(const kiln_profile_row *rows, size_t n,
                                       const char *op, kiln_profile_kind kind)
{
  kiln_profile_row sum = {0};
  size_t len = strlen(op), found = 0;
  for (size_t i = 0; i < n; i++) {
    const kiln_profile_row *r = &rows[i];
    if (strncmp(r->op, op, len) || (r->op[len] && r->op[len] != ' '))
      continue;
    if (r->kind != kind || r->calls != 1)
      fail_msg("row '%s': kind %d and %llu calls, expected kind %d and 1", r->op,
               (int)r->kind, (unsigned long long)r->calls, (int)kind);
    assert_true(r->total_ns > 0);
    if (!found++)
      sum = *r;
    else {
      sum.total_ns += r->total_ns;
      sum.host_ns += r->host_ns;
      sum.calls += r->calls;
    }
  }
  if (!found)
    fail_msg("no row '%s' (or '%s KERNEL')", op, op);
  return sum;
}

/* Whether any row is of op's file (see need_file_rows()). */
static int has_file_rows(const kiln_profile_row *rows, size_t n, const char *op)
{
  size_t len = strlen(op);
  for (size_t i = 0; i < n; i++)
    if (!strncmp(rows[i].op, op, len) && (!rows[i].op[len] || rows[i].op[len] == ' '))
      return 1;
  return 0;
}

#if HAVE_JSON_C
/* The trace of the cold calls: the builds and the plan are "build" spans
 * inside the first call's host span, on its track, which says how long
 * they took in all; its device span is cut around them, so that no part
 * of it covers cl/scale.cl's build. */
static void check_build_trace(const char *path)
{
  json_object *root = json_object_from_file(path), *events, *args;
  if (!root)
    fail_msg("%s does not parse as JSON", path);
  assert_true(json_object_object_get_ex(root, "traceEvents", &events));
  json_object *call = NULL; /* the first call: the one with work aside */
  for (size_t i = 0; i < json_object_array_length(events) && !call; i++) {
    json_object *e = json_object_array_get_idx(events, i), *aside;
    if (!strcmp(str_of(e, "ph"), "X") && !strcmp(str_of(e, "cat"), "host") &&
        !strcmp(str_of(e, "name"), "fft") &&
        json_object_object_get_ex(e, "args", &args) &&
        json_object_object_get_ex(args, "aside_us", &aside))
      call = e;
  }
  if (!call)
    fail_msg("no host event of fft has aside_us");
  double c0 = num_of(call, "ts"), c1 = c0 + num_of(call, "dur"), sum = 0;
  json_object_object_get_ex(call, "args", &args);
  /* each kernel is a program of its own: "build cl/fft.cl kiln_fft_r2_f32" */
  static const char *const built[] = {"build cl/fft.cl", "build cl/scale.cl",
                                      "fft plan 1024 c2c inverse float32"};
  double scale_mid = 0;
  size_t seen[3] = {0};
  for (size_t j = 0; j < json_object_array_length(events); j++) {
    json_object *b = json_object_array_get_idx(events, j);
    const char *name = str_of(b, "name"), *cat = str_of(b, "cat");
    size_t i = 0;
    for (; i < 3; i++) {
      size_t len = strlen(built[i]);
      if (name && !strncmp(name, built[i], len) && (!name[len] || name[len] == ' '))
        break;
    }
    if (i == 3 || !cat || strcmp(cat, "build"))
      continue;
    double b0 = num_of(b, "ts"), b1 = b0 + num_of(b, "dur");
    assert_true(num_of(b, "tid") == num_of(call, "tid"));
    if (!(b0 >= c0 && b1 <= c1))
      fail_msg("'%s' (%.3f to %.3f us) is not inside its call (%.3f to %.3f)", name, b0,
               b1, c0, c1);
    sum += b1 - b0;
    if (i == 1 && !seen[1])
      scale_mid = (b0 + b1) / 2;
    seen[i]++;
  }
  for (size_t i = 0; i < 3; i++)
    if (!seen[i])
      fail_msg("no build event '%s'", built[i]);
  if (fabs(sum - num_of(args, "aside_us")) > 0.01)
    fail_msg("the builds took %.3f us, the call says %.3f aside", sum,
             num_of(args, "aside_us"));
  size_t parts = 0;
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *e = json_object_array_get_idx(events, i);
    const char *c = str_of(e, "cat");
    if (!c || strcmp(c, "device") || strcmp(str_of(e, "name"), "fft"))
      continue;
    double d0 = num_of(e, "ts"), d1 = d0 + num_of(e, "dur");
    if (d0 < scale_mid && scale_mid < d1)
      fail_msg("a device event of fft (%.3f to %.3f us) covers cl/scale.cl's build "
               "(middle %.3f)",
               d0, d1, scale_mid);
    parts += part_of(e) > 1;
  }
  assert_true(parts >= 1); /* the first call's, cut at cl/scale.cl */
  json_object_put(root);
}
#else
static void check_build_trace(const char *path)
{
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  assert_non_null(strstr(text, "{\"name\":\"build cl/scale.cl kiln_scale_"));
}
#endif

/* On a cold cache, building kiln's programs and planning the FFT are rows
 * of their own, and not in the calls' times: the slowest call's device
 * time is below the build that happened inside it (hundreds of
 * microseconds against tens of milliseconds or more on PoCL), and the
 * rows' host times add up to no more than the calls took. On a warm cache,
 * the same programs are loads, rows of their own again. The trace has the
 * builds as spans. */
static void test_profile_builds_apart(void **state)
{
  (void)state;
  char root[128], dir[160], path[128];
  assert_int_equal(kiln_test_cache_folders("profile", root, sizeof root, dir, sizeof dir),
                   0);
  tmp_path(path, sizeof path, "builds.json");
  /* The driver's own cache warm, as a user's second program finds it:
   * PoCL compiles a kernel for its work-group size when it first runs,
   * which is the device's time, unseen by kiln. */
  kiln_runtime *rt = kiln_test_runtime_on(NULL, NULL, 1);
  inverse_ffts(rt, 1);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));

  rt = cached_runtime(dir, path, 0);
  uint64_t wall = inverse_ffts(rt, 3);
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  const kiln_profile_row *fft = need_row(rows, n, "fft", KILN_PROFILE_CALL, 3);
  kiln_profile_row fft_rows =
    need_file_rows(rows, n, "build cl/fft.cl", KILN_PROFILE_BUILD);
  kiln_profile_row scale_rows =
    need_file_rows(rows, n, "build cl/scale.cl", KILN_PROFILE_BUILD);
  const kiln_profile_row *fft_cl = &fft_rows, *scale = &scale_rows;
  const kiln_profile_row *plan =
    need_row(rows, n, "fft plan 1024 c2c inverse float32", KILN_PROFILE_BUILD, 1);
  assert_string_equal(fft_cl->backend, "opencl");
  assert_string_equal(plan->backend, "kiln");
  assert_true(fft_cl->host_ns == fft_cl->total_ns); /* a build's time is the host's */
  assert_false(has_file_rows(rows, n, "load cl/fft.cl"));
  if (!(fft->max_ns < scale->total_ns && fft->total_ns < fft_cl->total_ns))
    fail_msg("the calls' device time (%llu ns at most, %llu in all) holds the builds "
             "(cl/scale.cl %llu ns, cl/fft.cl %llu)",
             (unsigned long long)fft->max_ns, (unsigned long long)fft->total_ns,
             (unsigned long long)scale->total_ns, (unsigned long long)fft_cl->total_ns);
  uint64_t parts = fft->host_ns + fft_cl->total_ns + scale->total_ns + plan->total_ns;
  if (parts > wall)
    fail_msg("the calls' host time and the builds' add up to %llu ns, more than the "
             "%llu the calls took: counted twice",
             (unsigned long long)parts, (unsigned long long)wall);
  free(rows);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  check_build_trace(path);
  remove(path);

  rt = cached_runtime(dir, NULL, 0); /* warm: the cache's binaries */
  inverse_ffts(rt, 1);
  rows = all_rows(rt, &n);
  need_row(rows, n, "fft", KILN_PROFILE_CALL, 1);
  need_file_rows(rows, n, "load cl/fft.cl", KILN_PROFILE_LOAD);
  need_file_rows(rows, n, "load cl/scale.cl", KILN_PROFILE_LOAD);
  assert_false(has_file_rows(rows, n, "build cl/fft.cl"));
  free(rows);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_test_remove_tree(root);
}

/* Benchmark mode's timing of the candidates is its own row, and so are the
 * builds its first runs need: the call's row holds its one run. */
static void test_profile_benchmark_apart(void **state)
{
  (void)state;
  if (!HAVE_CLBLAST)
    skip(); /* a sum has one candidate: nothing to time */
  enum { R = 4099 };
  char root[128], dir[160];
  assert_int_equal(kiln_test_cache_folders("profile", root, sizeof root, dir, sizeof dir),
                   0);
  kiln_runtime *rt = cached_runtime(dir, NULL, 1); /* no choice recorded yet */
  kiln_buffer *x, *s;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, R, KILN_BUFFER_ZERO, &x));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 1, 0, &s));
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_reduce_desc d;
  kiln_reduce_desc_init(&d, KILN_REDUCE_SUM, KILN_F32, R);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_kiln_ok(rt, kiln_reduce(rt, &d, x, s));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_kiln_ok(rt, kiln_finish(rt));
  uint64_t wall = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
                  (uint64_t)t0.tv_nsec;
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  const kiln_profile_row *sum = need_row(rows, n, "reduce.sum", KILN_PROFILE_CALL, 1);
  const kiln_profile_row *bench =
    need_row(rows, n, "benchmark reduce", KILN_PROFILE_BENCHMARK, 1);
  /* the GPU shape's kernels are cl/reduce_gpu.cl's */
  const char *file = has_file_rows(rows, n, "build cl/reduce_gpu.cl")
                       ? "build cl/reduce_gpu.cl"
                       : "build cl/reduce.cl";
  kiln_profile_row build_rows = need_file_rows(rows, n, file, KILN_PROFILE_BUILD);
  const kiln_profile_row *build = &build_rows;
  assert_string_equal(bench->backend, "all");
  assert_true(sum->total_ns < bench->total_ns && sum->host_ns < bench->host_ns);
  if (sum->host_ns + bench->host_ns + build->total_ns > wall)
    fail_msg("the call (%llu ns), its benchmark (%llu) and its build (%llu) add up to "
             "more than the %llu ns it took: counted twice",
             (unsigned long long)sum->host_ns, (unsigned long long)bench->host_ns,
             (unsigned long long)build->total_ns, (unsigned long long)wall);
  free(rows);
  kiln_buffer_destroy(x);
  kiln_buffer_destroy(s);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_test_remove_tree(root);
}

/* The table's second section: the builds and loads, after the calls'
 * total, with a header, a line each and a total of their own. */
static void test_profile_report_builds(void **state)
{
  (void)state;
  kiln_runtime *rt = runtime_with(1, NULL);
  buffer_calls(rt);
  kiln_program *p;
  assert_kiln_ok(rt, kiln_program_create(rt, saxpy, NULL, &p));
  size_t n;
  kiln_profile_row *rows = all_rows(rt, &n);
  const kiln_profile_row *built = find_row(rows, n, "build program saxpy", "opencl");
  built = built ? built : find_row(rows, n, "load program saxpy", "opencl");
  assert_non_null(built);
  assert_true(is_build(built));
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_kiln_ok(rt, kiln_profile_report(rt, f));
  fclose(f);
  const char *calls_total = strstr(text, "\nTotal ");
  const char *section = strstr(text, "\nBuilds, cache loads and FFT plans");
  if (!calls_total || !section || section < calls_total)
    fail_msg("no builds' section after the calls' total:\n%s", text);
  const char *head = strstr(section, "\nBuilt ");
  assert_non_null(head);
  char line[96];
  snprintf(line, sizeof line, "\n%s ", built->op);
  const char *row = strstr(head, line);
  if (!row)
    fail_msg("no line for %s in the builds' section:\n%s", built->op, text);
  assert_non_null(strstr(row, "\nTotal "));
  assert_aligned(head, text);
  free(text);
  free(rows);
  kiln_program_destroy(p);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

/* ---- kiln_conv2d_host(): the copy queue in the trace --------------------- */

#if HAVE_JSON_C
/* The device events named name on track tid, by start time (each queue
 * runs in order, so this is the order they were enqueued in); how many. */
static size_t device_events(json_object *events, const char *name, int tid, double *ts,
                            double *end, size_t cap)
{
  size_t n = 0;
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *e = json_object_array_get_idx(events, i);
    const char *c = str_of(e, "cat"), *nm = str_of(e, "name");
    if (!c || strcmp(c, "device") || strcmp(nm, name) || num_of(e, "tid") != tid)
      continue;
    assert_true(n < cap);
    size_t at = n++;
    double t0 = num_of(e, "ts"), t1 = t0 + num_of(e, "dur");
    for (; at > 0 && ts[at - 1] > t0; at--)
      ts[at] = ts[at - 1], end[at] = end[at - 1];
    ts[at] = t0, end[at] = t1;
  }
  return n;
}

/* 8 images of 8 x 32 x 32 (32 KiB in and out each), a 3 x 3 filter with
 * padding 1, through kiln_conv2d_host() under `limit` bytes with profiling
 * and a trace; y against loops over small integers, whose sums float32
 * holds exactly; the trace, loaded, into *root. */
static void host_conv_traced(uint64_t limit, const char *path, json_object **root)
{
  enum { NI = 8, C = 8, H = 32, W = 32, K = 8 };
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, NI, C, H, W, K, 3, 3);
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.backend = KILN_BACKEND_DIRECT; /* no workspace: the budget is the pieces' */
  float *x = malloc(sizeof(float) * NI * C * H * W),
        *w = malloc(sizeof(float) * K * C * 9),
        *y = malloc(sizeof(float) * NI * K * H * W);
  for (size_t i = 0; i < (size_t)NI * C * H * W; i++)
    x[i] = (float)((int)(i * 7 % 13) - 6);
  for (size_t i = 0; i < (size_t)K * C * 9; i++)
    w[i] = (float)((int)(i % 5) - 2);
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = limit;
  opts.no_memory_pool = 1; /* the budget to the byte */
  opts.trace = path;
  kiln_runtime *rt = kiln_test_runtime_with(&opts);
  assert_kiln_ok(rt, kiln_conv2d_host(rt, &d, x, w, NULL, y));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt)); /* writes the trace */
  for (int n = 0; n < NI; n++)
    for (int k = 0; k < K; k++)
      for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) {
          double want = 0;
          for (int c = 0; c < C; c++)
            for (int r = 0; r < 3; r++)
              for (int s = 0; s < 3; s++) {
                int ii = i + r - 1, jj = j + s - 1;
                if (ii >= 0 && ii < H && jj >= 0 && jj < W)
                  want += (double)x[((n * C + c) * H + ii) * W + jj] *
                          w[((k * C + c) * 3 + r) * 3 + s];
              }
          double got = y[((n * K + k) * H + i) * W + j];
          if (got != want)
            fail_msg("under %llu bytes: y[%d][%d][%d][%d] = %g, expected %g",
                     (unsigned long long)limit, n, k, i, j, got, want);
        }
  free(x), free(w), free(y);
  *root = json_object_from_file(path);
  if (!*root)
    fail_msg("%s does not parse as JSON", path);
  remove(path);
}

/* With room for two sets of pieces, the pieces' transfers run on the copy
 * queue, a track of their own, and piece i + 1's input goes in before piece
 * i's output comes out, which waits for piece i's compute: the next input
 * never waits for the current compute. With room for one, everything is
 * on the runtime's queue. */
static void test_profile_trace_host_overlap(void **state)
{
  (void)state;
  enum { CAP = 64 };
  char path[128];
  tmp_path(path, sizeof path, "host.json");
  /* 300 KiB: two sets of 2 images (256 KiB), 4 pieces */
  json_object *root, *events;
  host_conv_traced(300 * 1024 + 2304, path, &root);
  assert_true(json_object_object_get_ex(root, "traceEvents", &events));
  double cs[CAP], ce[CAP], ws[CAP], we[CAP], rs[CAP], re[CAP];
  size_t nc = device_events(events, "conv2d", 1, cs, ce, CAP),
         nw = device_events(events, "write", 3, ws, we, CAP),
         nr = device_events(events, "read", 3, rs, re, CAP);
  assert_int_equal(nc, 4);
  assert_int_equal(nw, 4); /* the weights went on the queue: track 1 */
  assert_int_equal(nr, 4);
  assert_int_equal(device_events(events, "read", 1, rs + nr, re + nr, CAP - nr), 0);
  for (size_t i = 0; i < nc; i++) {
    if (rs[i] < ce[i])
      fail_msg("piece %zu's output was read at %.3f us, before its compute ended at %.3f",
               i, rs[i], ce[i]);
    if (i + 1 < nc && !(ws[i + 1] < rs[i]))
      fail_msg("piece %zu's input went in at %.3f us, after piece %zu's output came out "
               "at %.3f",
               i + 1, ws[i + 1], i, rs[i]);
  }
  json_object_put(root);
  /* 100 KiB: one set of one image, 8 pieces, no copy queue */
  host_conv_traced(100 * 1024 + 2304, path, &root);
  assert_true(json_object_object_get_ex(root, "traceEvents", &events));
  assert_int_equal(device_events(events, "conv2d", 1, cs, ce, CAP), 8);
  assert_int_equal(device_events(events, "read", 1, rs, re, CAP), 8);
  assert_int_equal(device_events(events, "write", 3, ws, we, CAP), 0);
  json_object_put(root);
}
/* Calls on a stream go on a track of their own, named after the stream;
 * the runtime queue's stay on track 1. */
static void test_profile_trace_streams(void **state)
{
  (void)state;
  char path[128];
  tmp_path(path, sizeof path, "streams.json");
  kiln_runtime *rt = runtime_with(1, path);
  kiln_buffer *b = NULL;
  float v[64] = {0};
  kiln_stream *s = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, 64, 0, &b));
  assert_kiln_ok(rt, kiln_stream_create(rt, &s));
  assert_kiln_ok(rt, kiln_stream_use(rt, s));
  assert_kiln_ok(rt, kiln_buffer_write(b, 0, 64, v));
  assert_kiln_ok(rt, kiln_stream_use(rt, NULL));
  assert_kiln_ok(rt, kiln_buffer_read(b, 0, 64, v));
  assert_kiln_ok(rt, kiln_stream_destroy(s));
  kiln_buffer_destroy(b);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  json_object *root = json_object_from_file(path), *events;
  assert_non_null(root);
  assert_true(json_object_object_get_ex(root, "traceEvents", &events));
  double ts[4], end[4];
  assert_int_equal(device_events(events, "write", 10001, ts, end, 4), 1);
  assert_int_equal(device_events(events, "read", 1, ts, end, 4), 1);
  int named = 0;
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *e = json_object_array_get_idx(events, i), *args, *name;
    named += !strcmp(str_of(e, "ph"), "M") && num_of(e, "tid") == 10001 &&
             json_object_object_get_ex(e, "args", &args) &&
             json_object_object_get_ex(args, "name", &name) &&
             !strcmp(json_object_get_string(name), "device: stream 1");
  }
  assert_int_equal(named, 1);
  json_object_put(root);
  remove(path);
}
#else
static void test_profile_trace_host_overlap(void **state)
{
  (void)state;
  skip(); /* the trace is read with json-c */
}

static void test_profile_trace_streams(void **state)
{
  (void)state;
  skip(); /* the trace is read with json-c */
}
#endif

static int group_setup(void **state)
{
  (void)state;
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/kiln-profile-XXXXXX");
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
  (void)state;
  static const char *const files[] = {"env.json", "buffer.json", "ops.json", "host.json",
                                      "builds.json"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[128];
    tmp_path(path, sizeof path, files[i]);
    remove(path); /* left by a test that failed */
  }
  return rmdir(tmp_dir);
}

int main(int argc, char **argv)
{
  int core = argc > 1 && !strcmp(argv[1], "--core");
  if (argc > 1 && !strcmp(argv[1], "--untimed")) /* on rusticl too (tests/meson.build) */
    cmocka_set_test_filter("test_profile_untimed_driver");
  unsetenv("KILN_PROFILE");
  unsetenv("KILN_TRACE");
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    /* --core: these, which compile no kernel */
    cmocka_unit_test(test_profile_buffer_calls),
    cmocka_unit_test(test_profile_off_records_nothing),
    cmocka_unit_test(test_profile_reset),
    cmocka_unit_test(test_profile_report_text),
    cmocka_unit_test(test_profile_threads),
    cmocka_unit_test(test_profile_env),
    cmocka_unit_test(test_profile_bad_input),
    cmocka_unit_test(test_profile_trace_unwritable),
    cmocka_unit_test(test_profile_trace_buffer_calls),
    cmocka_unit_test(test_profile_untimed_driver),
    /* then the operations */
    cmocka_unit_test(test_profile_ops),
    cmocka_unit_test(test_profile_trace_ops),
    cmocka_unit_test(test_profile_trace_host_overlap),
    cmocka_unit_test(test_profile_trace_streams),
    cmocka_unit_test(test_profile_builds_apart),
    cmocka_unit_test(test_profile_benchmark_apart),
    cmocka_unit_test(test_profile_report_builds),
  };
  size_t count = sizeof tests / sizeof tests[0];
  return _cmocka_run_group_tests("profile", tests, core ? count - 7 : count, group_setup,
                                 group_teardown);
}
