/*
 * test-faults.c — every operation with an OpenCL failure at each point
 * where it calls OpenCL (kiln issue 10). Built with the meson option
 * fault_injection.
 *
 * clfault.c stands in for the OpenCL entry points; the operations, their
 * inputs and their references are in fault-ops.c. For each operation the
 * test first runs it once to warm the runtime (builtin programs built, FFT
 * plans made), then once more only counting its calls of each class
 * (allocations, enqueues, builds, maps: clfault_class). Then, for each class
 * k and each n up to that count, on fresh inputs, it makes the nth call of
 * class k fail and checks four things:
 *   1. the status is the specific one the OpenCL error maps to (an
 *      allocation failure is KILN_ERR_OUT_OF_MEMORY, not KILN_ERR_OPENCL),
 *      from the call or else from kiln_finish(), and kiln_last_error()
 *      names the error and the OpenCL call that failed (for a call CLBlast
 *      or clFFT made, which report only the error: the library's call);
 *   2. nothing leaks: once the inputs are destroyed, kiln_memory_stats() and
 *      the OpenCL references clfault counts (memory objects, kernels,
 *      programs, events, queues, contexts) are back where they were, and
 *      stay there after the rerun;
 *   3. the runtime still works: the same operation, disarmed, matches a
 *      double-precision reference computed on the host;
 *   4. the caller's inputs (buffers, read back, and host arrays) are byte
 *      for byte what they were.
 * Builds happen once per runtime (kiln's on-disk cache is off here), so the
 * ops that build programs or plans are swept again "cold": a new runtime
 * for each fault point, where 2. compares kiln's memory counters at once
 * and every OpenCL reference once the runtime is destroyed.
 * Also: kiln_runtime_create() with each of its allocations failing; a cached
 * binary that fails to load costing a compile, not an error; and the
 * instrument itself counting and failing each class.
 *
 * What is out of reach: host malloc; maps and SVM, which neither kiln nor
 * the libraries it calls use (the map class counts 0 calls, and the summary
 * says so); failures inside clFFT's plan bake (see fault-ops.c).
 * An argument runs only the tests whose names match it (cmocka's pattern,
 * e.g. "*fft*").
 */
#include "clfault.h"
#include "common.h"

#include "fault-ops.h"
#include "kiln/kiln_cl.h"

/* What a failed call of each class answers, taken in turn, and what kiln
 * must make of each (kiln__status_from_cl()). */
static const cl_int class_errors[CLFAULT_CLASSES][3] = {
  [CLFAULT_ALLOC] = {CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY,
                     CL_OUT_OF_RESOURCES},
  [CLFAULT_ENQUEUE] = {CL_OUT_OF_RESOURCES, CL_MEM_OBJECT_ALLOCATION_FAILURE,
                       CL_OUT_OF_HOST_MEMORY},
  [CLFAULT_BUILD] = {CL_BUILD_PROGRAM_FAILURE, CL_OUT_OF_HOST_MEMORY,
                     CL_BUILD_PROGRAM_FAILURE},
  [CLFAULT_MAP] = {CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_RESOURCES},
};

static kiln_status expected_status(cl_int err)
{
  switch (err) {
  case CL_OUT_OF_HOST_MEMORY: return KILN_ERR_OUT_OF_HOST_MEMORY;
  case CL_BUILD_PROGRAM_FAILURE: return KILN_ERR_BUILD;
  default: return KILN_ERR_OUT_OF_MEMORY;
  }
}

static struct {
  long points[CLFAULT_CLASSES], cold, ops;
} tally;

/* A runtime on the best device for operation which (NULL: any), with neither the environment nor
 * kiln's on-disk cache: every new runtime builds its programs. */
static kiln_runtime *new_runtime(const op *which)
{
  kiln_options o;
  kiln_options_init(&o);
  o.ignore_env = 1;
  o.no_cache = 1;
  o.memory_limit = which ? which->memory_limit : 0;
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(&o, &rt) != KILN_OK)
    fail_msg("kiln_runtime_create: %s", kiln_last_error(NULL));
  return rt;
}

typedef struct snapshot {
  long live[CLFAULT_OBJECTS];
  uint64_t bytes, buffers, plans;
} snapshot;

/* The OpenCL objects alive and what kiln holds, after kiln_memory_trim()
 * has given back the pool's memory and released the cached FFT plans: what
 * the pool and the plans keep is not a leak, and what they cannot give back
 * (a block still counted as live, plan bytes still counted) is. */
static snapshot snap(kiln_runtime *rt)
{
  snapshot s = {0};
  if (rt && kiln_memory_trim(rt) != KILN_OK)
    fail_msg("kiln_memory_trim: %s", kiln_last_error(rt));
  for (int o = 0; o < CLFAULT_OBJECTS; o++)
    s.live[o] = clfault_live((clfault_object)o);
  kiln_memory_usage mu;
  kiln_memory_usage_init(&mu);
  if (rt && kiln_memory_stats(rt, &mu) == KILN_OK)
    s.bytes = mu.current_bytes, s.buffers = mu.live_buffers, s.plans = mu.plan_bytes;
  return s;
}

/* Fails unless the counts are back at `was`; `objects` 0 leaves the OpenCL
 * references alone (a cold runtime keeps what it built). */
static void assert_no_leak(const char *where, const snapshot *was, kiln_runtime *rt,
                           int objects)
{
  snapshot now = snap(rt);
  for (int o = 0; objects && o < CLFAULT_OBJECTS; o++)
    if (now.live[o] != was->live[o])
      fail_msg("%s: %ld %s reference%s leaked", where, now.live[o] - was->live[o],
               clfault_object_name((clfault_object)o),
               now.live[o] - was->live[o] == 1 ? "" : "s");
  if (now.bytes != was->bytes || now.buffers != was->buffers)
    fail_msg("%s: kiln holds %llu buffers of %llu bytes, %llu of %llu before", where,
             (unsigned long long)now.buffers, (unsigned long long)now.bytes,
             (unsigned long long)was->buffers, (unsigned long long)was->bytes);
  if (now.plans != 0)
    fail_msg("%s: %llu bytes still counted for FFT plans after kiln_memory_trim()", where,
             (unsigned long long)now.plans);
}

static void setup_or_fail(const op *o, fx *f)
{
  o->setup(f);
  if (f->setup_failed)
    fail_msg("%s: making the inputs failed: %s", o->name, kiln_last_error(f->rt));
}

/* Runs the op unarmed and checks its result. */
static void assert_works(const op *o, kiln_runtime *rt, const char *when)
{
  fx f = {.rt = rt};
  setup_or_fail(o, &f);
  kiln_status st = o->run(&f);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  if (st != KILN_OK)
    fail_msg("%s %s: %s: %s", o->name, when, kiln_status_name(st), kiln_last_error(rt));
  const char *why = o->verify(&f);
  if (why)
    fail_msg("%s %s: %s", o->name, when, why);
  fx_free(&f);
}

/* The calls of each class one run of the op makes on rt. */
static void count_calls(const op *o, kiln_runtime *rt, long n[CLFAULT_CLASSES])
{
  fx f = {.rt = rt};
  setup_or_fail(o, &f);
  clfault_reset_calls();
  kiln_status st = o->run(&f);
  if (st == KILN_OK)
    st = kiln_finish(rt);
  for (int k = 0; k < CLFAULT_CLASSES; k++)
    n[k] = clfault_calls((clfault_class)k);
  if (st != KILN_OK)
    fail_msg("%s: %s", o->name, kiln_last_error(rt));
  fx_free(&f);
}

/* The inputs must be as they were. */
static void assert_inputs_intact(const char *where, fx *f)
{
  for (size_t i = 0; i < f->nbuf; i++) {
    if (f->roles[i] != IN)
      continue;
    void *now = fx_read(f, i);
    if (!now || memcmp(now, f->want[i], kiln_buffer_bytes(f->buf[i])))
      fail_msg("%s: input buffer %zu %s", where, i,
               now ? "changed" : "cannot be read back");
    free(now);
  }
  for (size_t i = 0; i < f->nhost; i++)
    if (f->host_roles[i] == IN && memcmp(f->host[i], f->host_copy[i], f->host_bytes[i]))
      fail_msg("%s: input array %zu changed", where, i);
}

/* The nth call of class k fails during the op on rt; the four checks. With
 * `cold`, rt is new and may keep programs and plans it built. On a warm
 * runtime an FFT runs once unarmed first: snap()'s trim released the plan
 * it had cached, and the armed run must meet the calls counted with the
 * plan there. */
static void fault_point(const op *o, kiln_runtime *rt, clfault_class k, int n, int cold)
{
  snapshot before = snap(rt);
  if (!cold && !strncmp(o->name, "fft", 3))
    assert_works(o, rt, "before the fault");
  fx f = {.rt = rt};
  setup_or_fail(o, &f);
  cl_int err = class_errors[k][(n - 1) % 3];
  clfault_arm_class(k, n, err);
  kiln_status st = o->run(&f);
  kiln_status fin = kiln_finish(rt);
  int hits = clfault_hits();
  clfault_disarm();
  char where[256];
  snprintf(where, sizeof where, "%s%s, %s call %d (%s from %s) failing with %s", o->name,
           cold ? " (cold)" : "", clfault_class_name(k), n,
           hits ? clfault_failed_function() : "none",
           hits ? clfault_failed_caller() : "-", kiln_cl_error_name(err));
  if (hits != 1)
    fail_msg("%s: the call was not reached: the op made fewer calls than counted", where);
  /* 1. A failed enqueue may surface from kiln_finish(); not both. An op
   * that survives out-of-memory may instead succeed, with the right
   * result. */
  kiln_status got = st != KILN_OK ? st : fin;
  const char *msg = kiln_last_error(rt);
  int survived =
    got == KILN_OK && o->survives_oom && expected_status(err) == KILN_ERR_OUT_OF_MEMORY;
  const char *why = survived ? o->verify(&f) : NULL;
  if (why)
    fail_msg("%s: survived, but %s", where, why);
  if (!survived && (got != expected_status(err) || (st != KILN_OK && fin != KILN_OK)))
    fail_msg("%s: returned %s, finish %s; expected %s: %s", where, kiln_status_name(st),
             kiln_status_name(fin), kiln_status_name(expected_status(err)), msg);
  /* CLBlast and clFFT return the OpenCL error, not which of their calls
   * failed: there the message names the library's call and the error. */
  int library = !strstr(clfault_failed_caller(), "libkiln");
  if (!survived && ((!library && !strstr(msg, clfault_failed_function())) ||
                    !strstr(msg, kiln_cl_error_name(err))))
    fail_msg("%s: the message does not name the call and the error: %s", where, msg);
  /* 4. */
  assert_inputs_intact(where, &f);
  fx_free(&f);
  /* 2. */
  assert_no_leak(where, &before, rt, !cold);
  /* 3.: after the trim in 2., the rerun builds its FFT plan again. */
  assert_works(o, rt, "after the fault");
  char rerun[300];
  snprintf(rerun, sizeof rerun, "%s, then run again", where);
  assert_no_leak(rerun, &before, rt, !cold);
  tally.points[k]++;
  tally.cold += cold;
}

/* Every fault point of every class on a warm runtime, then, for an op that
 * builds or plans, every point of its first run on new runtimes. */
static void test_faults_op(void **state)
{
  const op *o = *state;
  clfault_disarm(); /* after a test that failed armed */
  clfault_only_from(NULL);
  snapshot start = snap(NULL);
  kiln_runtime *rt = new_runtime(o);
  if (o->needs) { /* skip what this kiln was built without */
    fx f = {.rt = rt};
    setup_or_fail(o, &f);
    kiln_status st = o->run(&f);
    kiln_finish(rt);
    fx_free(&f);
    if (st == KILN_ERR_UNSUPPORTED && strstr(kiln_last_error(rt), "built without")) {
      kiln_runtime_destroy(rt);
      skip();
    }
  }
  assert_works(o, rt, "unarmed");
  long n[CLFAULT_CLASSES];
  count_calls(o, rt, n);
  for (int k = 0; k < CLFAULT_CLASSES; k++)
    for (long i = 1; i <= n[k]; i++)
      fault_point(o, rt, (clfault_class)k, (int)i, 0);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  assert_no_leak(o->name, &start, NULL, 1); /* what the runtime held is gone */
  tally.ops++;
  if (!o->cold)
    return;
  for (int k = 0; k < CLFAULT_CLASSES; k++) {
    clfault_only_from(o->kiln_only & BIT(k) ? "libkiln" : NULL);
    rt = new_runtime(o);
    count_calls(o, rt, n);
    assert_kiln_ok(rt, kiln_runtime_destroy(rt));
    for (long i = 1; i <= n[k]; i++) {
      rt = new_runtime(o);
      fault_point(o, rt, (clfault_class)k, (int)i, 1);
      assert_kiln_ok(rt, kiln_runtime_destroy(rt));
      char where[128];
      snprintf(where, sizeof where,
               "%s (cold), %s call %ld failing, then the runtime "
               "destroyed",
               o->name, clfault_class_name((clfault_class)k), i);
      assert_no_leak(where, &start, NULL, 1);
    }
  }
  clfault_only_from(NULL);
}

/* The instrument: calls of each class made here are counted in their
 * class, and the armed one fails, so a class that counts 0 calls of an
 * operation (map) is one the operation does not make. */
static void test_faults_classes_counted(void **state)
{
  (void)state;
  kiln_runtime *rt = new_runtime(NULL);
  snapshot start = snap(NULL);
  cl_context ctx = kiln_runtime_cl_context(rt);
  cl_command_queue q = kiln_runtime_cl_queue(rt);
  cl_device_id dev = kiln_runtime_cl_device(rt);
  static const char *src = "__kernel void nothing(void) {}";
  cl_int err;
  float one = 1;
  clfault_reset_calls();
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  assert_int_equal(clBuildProgram(p, 1, &dev, "", NULL, NULL), CL_SUCCESS);
  assert_int_equal(clEnqueueFillBuffer(q, m, &one, 4, 0, 64, 0, NULL, NULL), CL_SUCCESS);
  void *host = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ, 0, 64, 0, NULL, NULL, &err);
  assert_non_null(host);
  clfault_arm_class(CLFAULT_MAP, 1, CL_OUT_OF_RESOURCES); /* the unmap below */
  assert_int_equal(clEnqueueUnmapMemObject(q, m, host, 0, NULL, NULL),
                   CL_OUT_OF_RESOURCES);
  assert_int_equal(clfault_hits(), 1);
  assert_string_equal(clfault_failed_function(), "clEnqueueUnmapMemObject");
  clfault_disarm();
  assert_int_equal(clEnqueueUnmapMemObject(q, m, host, 0, NULL, NULL), CL_SUCCESS);
  static const long want[CLFAULT_CLASSES] = {2, 1, 1, 3};
  for (int k = 0; k < CLFAULT_CLASSES; k++)
    assert_int_equal(clfault_calls((clfault_class)k), want[k]);
  assert_int_equal(clfault_live(CLFAULT_MEM), start.live[CLFAULT_MEM] + 1);
  assert_int_equal(clFinish(q), CL_SUCCESS);
  clReleaseProgram(p);
  clReleaseMemObject(m);
  assert_no_leak("the instrument's own calls", &start, NULL, 1);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
}

/* kiln_runtime_create() with each of its allocations failing. */
static void test_faults_runtime_create(void **state)
{
  (void)state;
  kiln_options opts, copy;
  kiln_options_init(&opts);
  opts.ignore_env = 1;
  copy = opts;
  snapshot start = snap(NULL);
  kiln_runtime *rt = NULL;
  clfault_reset_calls();
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  long n[CLFAULT_CLASSES];
  for (int k = 0; k < CLFAULT_CLASSES; k++)
    n[k] = clfault_calls((clfault_class)k);
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  assert_true(n[CLFAULT_ALLOC] >= 4); /* a context and three queues */
  for (int k = 0; k < CLFAULT_CLASSES; k++)
    for (int i = 1; i <= n[k]; i++) {
      cl_int err = class_errors[k][(i - 1) % 3];
      clfault_arm_class((clfault_class)k, i, err);
      kiln_status st = kiln_runtime_create(&opts, &rt);
      int hits = clfault_hits();
      clfault_disarm();
      const char *msg = kiln_last_error(NULL);
      if (hits != 1 || st != expected_status(err) || rt ||
          !strstr(msg, clfault_failed_function()))
        fail_msg("kiln_runtime_create with %s call %d failing with %s: %s (%d hits): %s",
                 clfault_class_name((clfault_class)k), i, kiln_cl_error_name(err),
                 kiln_status_name(st), hits, msg);
      assert_memory_equal(&opts, &copy, sizeof opts);
      assert_no_leak("kiln_runtime_create", &start, NULL, 1);
      assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
      assert_kiln_ok(rt, kiln_runtime_destroy(rt));
      tally.points[k]++;
    }
  tally.ops++;
}

/* With the on-disk cache on, a program found there is created from its
 * binary; when that creation or build fails, kiln compiles the source
 * instead: one compile more, no error. */
static void test_faults_cached_binary_recovers(void **state)
{
  (void)state;
  const op *po = NULL;
  for (size_t i = 0; i < fault_op_count && !po; i++)
    if (!strcmp(fault_ops[i].name, "program_create"))
      po = &fault_ops[i];
  assert_non_null(po);
  char dir[] = "/tmp/kiln-faults-XXXXXX";
  assert_non_null(mkdtemp(dir));
  kiln_options o;
  kiln_options_init(&o);
  o.ignore_env = 1;
  o.cache_dir = dir;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&o, &rt));
  snapshot start = snap(rt);
  fx f = {.rt = rt};
  po->setup(&f);
  assert_kiln_ok(rt, po->run(&f)); /* compiled and stored */
  fx_free(&f);
  static const clfault_class classes[] = {CLFAULT_ALLOC, CLFAULT_BUILD};
  for (size_t i = 0; i < COUNT(classes); i++) {
    kiln_cache_usage before, after;
    kiln_cache_usage_init(&before);
    kiln_cache_usage_init(&after);
    assert_kiln_ok(rt, kiln_cache_stats(rt, &before));
    po->setup(&f);
    clfault_arm_class(classes[i], 1, class_errors[classes[i]][0]);
    kiln_status st = po->run(&f);
    int hits = clfault_hits();
    clfault_disarm();
    assert_kiln_ok(rt, st);
    assert_int_equal(hits, 1);
    assert_kiln_ok(rt, kiln_cache_stats(rt, &after));
    assert_int_equal(after.compiles, before.compiles + 1);
    assert_int_equal(after.rejected, before.rejected + 1);
    assert_null(po->verify(&f));
    fx_free(&f);
    assert_no_leak("a cached binary refused", &start, rt, 1);
  }
  uint64_t removed;
  assert_kiln_ok(rt, kiln_cache_clear(rt, &removed));
  assert_kiln_ok(rt, kiln_runtime_destroy(rt));
  assert_int_equal(rmdir(dir), 0);
}

int main(int argc, char **argv)
{
  kiln_test_require_device();
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  size_t count = fault_op_count + 3;
  struct CMUnitTest *tests = calloc(count, sizeof *tests);
  char(*names)[64] = calloc(fault_op_count, sizeof *names);
  if (!tests || !names)
    return 1;
  tests[0] = (struct CMUnitTest)cmocka_unit_test(test_faults_runtime_create);
  tests[1] = (struct CMUnitTest)cmocka_unit_test(test_faults_cached_binary_recovers);
  tests[2] = (struct CMUnitTest)cmocka_unit_test(test_faults_classes_counted);
  for (size_t i = 0; i < fault_op_count; i++) {
    snprintf(names[i], sizeof names[i], "test_faults_%s", fault_ops[i].name);
    tests[i + 3] = (struct CMUnitTest){.name = names[i],
                                       .test_func = test_faults_op,
                                       .initial_state = (void *)&fault_ops[i]};
  }
  int failed = _cmocka_run_group_tests("faults", tests, count, NULL, NULL);
  free(tests);
  free(names);
  long total = 0;
  for (int k = 0; k < CLFAULT_CLASSES; k++)
    total += tally.points[k];
  printf("# %ld fault points over %ld operations: %ld allocations, %ld enqueues, "
         "%ld builds, %ld maps; %ld of them on a new runtime\n",
         total, tally.ops, tally.points[CLFAULT_ALLOC], tally.points[CLFAULT_ENQUEUE],
         tally.points[CLFAULT_BUILD], tally.points[CLFAULT_MAP], tally.cold);
  return failed;
}
