/*
 * test-streams.c — streams and events: work on two streams ordered by
 * events, against host references; kiln_finish() waiting for every stream;
 * the caching pool and FFT plans kept safe across streams; events' query,
 * wait and elapsed time; every refused call.
 */
#include "common.h"

#include <complex.h>
#include <math.h>

#define TAU 6.283185307179586476925286766559005768 /* 2 pi */

/* y[i] = the sum of x[(i + r) % n] over r < reps: slow enough (reps loads
 * an element) for other queues' work to run beside it. */
static const char window_src[] =
  "kernel void window(global const float *x, global float *y, int n, int reps)\n"
  "{\n"
  "  int i = get_global_id(0);\n"
  "  float acc = 0;\n"
  "  for (int r = 0; r < reps; r++)\n"
  "    acc += x[(i + r) % n];\n"
  "  y[i] = acc;\n"
  "}\n";

enum { N = 4096, REPS = 3000 };

static double window_want(const float *x, int i)
{
  double acc = 0;
  for (int r = 0; r < REPS; r++)
    acc += x[(i + r) % N];
  return acc;
}

/* Small integers, so that every sum is exact in float. */
static void fill(float *x, int salt)
{
  for (int i = 0; i < N; i++)
    x[i] = (float)((i * 7 + salt) % 7 - 3);
}

/* The window kernel of a new program *p. */
static kiln_kernel *window_kernel(kiln_runtime *rt, kiln_program **p)
{
  kiln_kernel *k = NULL;
  assert_kiln_ok(rt, kiln_program_create(rt, window_src, NULL, p));
  assert_kiln_ok(rt, kiln_kernel_create(*p, "window", &k));
  return k;
}

static void launch_window(kiln_runtime *rt, kiln_kernel *k, kiln_buffer *x,
                          kiln_buffer *y)
{
  assert_kiln_ok(rt, kiln_kernel_set_args(k, "bbii", x, y, (int32_t)N, (int32_t)REPS));
  assert_kiln_ok(rt, kiln_kernel_launch(k, 1, (size_t[]){N}, NULL));
}

static void check_window(const float *x, const float *y, const char *what)
{
  for (int i = 0; i < N; i++)
    if (y[i] != window_want(x, i))
      fail_msg("%s: y[%d] = %g; expected %g", what, i, y[i], window_want(x, i));
}

/* A stream writes x and records an event; the runtime's queue waits for it
 * and computes; kiln_finish() waits for both. */
static void test_streams_event_orders_two_queues(void **state)
{
  kiln_runtime *rt = *state;
  kiln_program *p = NULL;
  kiln_kernel *k = window_kernel(rt, &p);
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  fill(x, 1);
  kiln_buffer *bx = NULL, *by = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &by));
  kiln_stream *s = NULL;
  kiln_event *written = NULL, *t0 = NULL, *t1 = NULL;
  assert_kiln_ok(rt, kiln_stream_create(rt, &s));
  assert_kiln_ok(rt, kiln_stream_use(rt, s));
  assert_kiln_ok(rt, kiln_buffer_write_async(bx, 0, N, x));
  assert_kiln_ok(rt, kiln_event_record(rt, &written));
  assert_kiln_ok(rt, kiln_stream_use(rt, NULL));
  assert_kiln_ok(rt, kiln_stream_wait_event(rt, written));
  assert_kiln_ok(rt, kiln_event_record(rt, &t0));
  launch_window(rt, k, bx, by);
  assert_kiln_ok(rt, kiln_event_record(rt, &t1));
  /* the result read back on the stream, after the compute */
  assert_kiln_ok(rt, kiln_stream_use(rt, s));
  assert_kiln_ok(rt, kiln_stream_wait_event(rt, t1));
  assert_kiln_ok(rt, kiln_buffer_read_async(by, 0, N, y));
  assert_kiln_ok(rt, kiln_stream_use(rt, NULL));
  assert_kiln_ok(rt, kiln_finish(rt)); /* waits for the stream too */
  check_window(x, y, "written on a stream, computed on the queue");
  int done = 0;
  assert_kiln_ok(rt, kiln_event_query(t1, &done));
  assert_true(done);
  double ms = -1;
  assert_kiln_ok(rt, kiln_event_elapsed(t0, t1, &ms));
  assert_true(ms >= 0 && ms < 60000);
  assert_kiln_ok(rt, kiln_event_wait(written));
  kiln_event_destroy(written), kiln_event_destroy(t0), kiln_event_destroy(t1);
  assert_kiln_ok(rt, kiln_stream_destroy(s));
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by);
  kiln_kernel_destroy(k), kiln_program_destroy(p);
  free(x), free(y);
}

/* A buffer destroyed while a kernel on a stream still reads it: its block
 * must not serve a new buffer that the runtime's queue writes at once. The
 * kernel's result shows any overwrite. Repeated, so a race would show. */
static void test_streams_pool_waits_for_every_queue(void **state)
{
  kiln_runtime *rt = *state;
  kiln_program *p = NULL;
  kiln_kernel *k = window_kernel(rt, &p);
  float *x = malloc(N * sizeof *x), *other = malloc(N * sizeof *other),
        *y = malloc(N * sizeof *y);
  fill(x, 2), fill(other, 5);
  kiln_stream *s = NULL;
  assert_kiln_ok(rt, kiln_stream_create(rt, &s));
  kiln_buffer *by = NULL;
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &by));
  for (int round = 0; round < 4; round++) {
    kiln_buffer *bx = NULL, *again = NULL;
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &bx));
    assert_kiln_ok(rt, kiln_buffer_write(bx, 0, N, x));
    assert_kiln_ok(rt, kiln_stream_use(rt, s));
    launch_window(rt, k, bx, by);
    assert_kiln_ok(rt, kiln_stream_use(rt, NULL));
    assert_kiln_ok(rt, kiln_buffer_destroy(bx)); /* the kernel still reads it */
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &again));
    assert_kiln_ok(rt, kiln_buffer_write_async(again, 0, N, other));
    assert_kiln_ok(rt, kiln_finish(rt));
    assert_kiln_ok(rt, kiln_buffer_read(by, 0, N, y));
    check_window(x, y, "x destroyed under a stream's kernel");
    kiln_buffer_destroy(again);
  }
  assert_kiln_ok(rt, kiln_stream_destroy(s));
  kiln_buffer_destroy(by);
  kiln_kernel_destroy(k), kiln_program_destroy(p);
  free(x), free(other), free(y);
}

/* kiln_stream_finish() and kiln_finish() wait for a stream's kernel that a
 * marker has already flushed to the driver (Debian 12's rusticl returned from
 * clFinish at once): the event after it is done, and its output is there. */
static void test_streams_finish_waits_after_flush(void **state)
{
  kiln_runtime *rt = *state;
  enum { LONG = 30000 }; /* 10 times the window: within llvmpipe's loop limit */
  kiln_program *p = NULL;
  kiln_kernel *k = window_kernel(rt, &p);
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  fill(x, 2); /* every element -1: each sum is exactly -reps */
  kiln_stream *s = NULL;
  kiln_buffer *bx = NULL, *by = NULL;
  assert_kiln_ok(rt, kiln_stream_create(rt, &s));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &bx));
  assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_F32, N, 0, &by));
  assert_kiln_ok(rt, kiln_buffer_write(bx, 0, N, x));
  for (int how = 0; how < 2; how++) {
    int reps = LONG - how; /* each round's sums differ from the last's */
    kiln_event *after = NULL;
    assert_kiln_ok(rt, kiln_stream_use(rt, s));
    assert_kiln_ok(rt,
                   kiln_kernel_set_args(k, "bbii", bx, by, (int32_t)N, (int32_t)reps));
    assert_kiln_ok(rt, kiln_kernel_launch(k, 1, (size_t[]){N}, NULL));
    assert_kiln_ok(rt, kiln_event_record(rt, &after)); /* a marker, flushed */
    assert_kiln_ok(rt, kiln_stream_use(rt, NULL));
    assert_kiln_ok(rt, how ? kiln_stream_finish(s) : kiln_finish(rt));
    int done = 0;
    assert_kiln_ok(rt, kiln_event_query(after, &done));
    if (!done)
      fail_msg("%s returned before the stream's kernel finished",
               how ? "kiln_stream_finish" : "kiln_finish");
    assert_kiln_ok(rt, kiln_buffer_read(by, 0, N, y)); /* on the runtime's queue */
    for (int i = 0; i < N; i++)
      if (y[i] != (float)-reps)
        fail_msg("round %d: y[%d] = %g; expected %d", how, i, y[i], -reps);
    kiln_event_destroy(after);
  }
  assert_kiln_ok(rt, kiln_stream_destroy(s));
  kiln_buffer_destroy(bx), kiln_buffer_destroy(by);
  kiln_kernel_destroy(k), kiln_program_destroy(p);
  free(x), free(y);
}

/* Every count transforms of length l in out against a direct DFT of in,
 * at every 37th bin. */
static void check_transforms(const float complex *in, const float complex *out, int count,
                             int l, int round)
{
  for (int j = 0; j < count; j++)
    for (int f = 0; f < l; f += 37) {
      double complex want = 0;
      for (int t = 0; t < l; t++)
        want += in[j * l + t] * cexp(-TAU * I * (double)((long)f * t % l) / l);
      /* float rounding over log2(l) passes of sums of up to l terms */
      if (cabs(out[j * l + f] - want) > 1e-3 * (1 + cabs(want)))
        fail_msg("round %d, transform %d, bin %d: %g%+gi; expected %g%+gi", round, j, f,
                 crealf(out[j * l + f]), cimagf(out[j * l + f]), creal(want),
                 cimag(want));
    }
}

/* One FFT plan run on a stream and at once on the runtime's queue: its
 * scratch is shared, so the second run waits for the first. Both against
 * a direct DFT. */
static void test_streams_fft_plan_on_two_queues(void **state)
{
  kiln_runtime *rt = *state;
  enum { L = 1024, B = 8 };
  float complex *in = malloc(2 * L * B * sizeof *in),
                *out = malloc(2 * L * B * sizeof *out);
  for (int i = 0; i < 2 * L * B; i++)
    in[i] = (float)((i * 5) % 11 - 5) + I * (float)((i * 3) % 7 - 3);
  kiln_buffer *bin[2] = {NULL, NULL}, *bout[2] = {NULL, NULL};
  kiln_stream *s = NULL;
  assert_kiln_ok(rt, kiln_stream_create(rt, &s));
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, L);
  d.batch = B;
  d.backend = KILN_BACKEND_KILN; /* two passes at 1024: a scratch buffer */
  for (int j = 0; j < 2; j++) {
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, L * B, 0, &bin[j]));
    assert_kiln_ok(rt, kiln_buffer_create(rt, KILN_C32, L * B, 0, &bout[j]));
    assert_kiln_ok(rt, kiln_buffer_write(bin[j], 0, L * B, in + j * L * B));
  }
  for (int round = 0; round < 4; round++) { /* a race would show in one */
    assert_kiln_ok(rt, kiln_stream_use(rt, s));
    assert_kiln_ok(rt, kiln_fft(rt, &d, bin[0], bout[0]));
    assert_kiln_ok(rt, kiln_stream_use(rt, NULL));
    assert_kiln_ok(rt, kiln_fft(rt, &d, bin[1], bout[1]));
    assert_kiln_ok(rt, kiln_finish(rt));
    for (int j = 0; j < 2; j++)
      assert_kiln_ok(rt, kiln_buffer_read(bout[j], 0, L * B, out + j * L * B));
    check_transforms(in, out, 2 * B, L, round);
  }
  assert_kiln_ok(rt, kiln_stream_destroy(s));
  for (int j = 0; j < 2; j++)
    kiln_buffer_destroy(bin[j]), kiln_buffer_destroy(bout[j]);
  free(in), free(out);
}

/* Refused: NULLs, another runtime's stream and event, destroying a runtime
 * with a stream alive. */
static void test_streams_refused(void **state)
{
  kiln_runtime *rt = *state;
  kiln_runtime *other = kiln_test_runtime_on(NULL, NULL, 0);
  kiln_stream *s = NULL, *theirs = NULL;
  kiln_event *ev = NULL, *their_ev = NULL;
  assert_kiln_ok(rt, kiln_stream_create(rt, &s));
  assert_kiln_ok(other, kiln_stream_create(other, &theirs));
  assert_kiln_ok(other, kiln_event_record(other, &their_ev));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "the stream belongs to another runtime",
                    kiln_stream_use(rt, theirs));
  assert_kiln_fails(rt, KILN_ERR_WRONG_RUNTIME, "the event belongs to another runtime",
                    kiln_stream_wait_event(rt, their_ev));
  assert_kiln_fails(other, KILN_ERR_BUSY, "1 stream alive", kiln_runtime_destroy(other));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "rt is NULL",
                    kiln_stream_create(NULL, &s));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_event_record(rt, NULL));
  assert_kiln_fails(rt, KILN_ERR_INVALID_ARGUMENT, "ev is NULL",
                    kiln_stream_wait_event(rt, NULL));
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "ev is NULL", kiln_event_wait(NULL));
  double ms;
  assert_kiln_fails(other, KILN_ERR_INVALID_ARGUMENT, "end is NULL",
                    kiln_event_elapsed(their_ev, NULL, &ms));
  assert_kiln_ok(rt, kiln_stream_use(rt, s));
  assert_kiln_ok(rt, kiln_event_record(rt, &ev));
  assert_kiln_ok(rt, kiln_event_wait(ev));
  assert_kiln_ok(rt, kiln_stream_destroy(s)); /* unbinds this thread */
  assert_kiln_ok(rt, kiln_finish(rt));
  kiln_event_destroy(ev), kiln_event_destroy(their_ev);
  assert_kiln_ok(other, kiln_stream_destroy(theirs));
  assert_kiln_ok(NULL, kiln_runtime_destroy(other));
  assert_kiln_ok(rt, kiln_stream_destroy(NULL));
  assert_kiln_ok(rt, kiln_event_destroy(NULL));
}

int main(void)
{
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_streams_event_orders_two_queues),
    cmocka_unit_test(test_streams_pool_waits_for_every_queue),
    cmocka_unit_test(test_streams_finish_waits_after_flush),
    cmocka_unit_test(test_streams_fft_plan_on_two_queues),
    cmocka_unit_test(test_streams_refused),
  };
  return cmocka_run_group_tests(tests, kiln_test_runtime_setup,
                                kiln_test_runtime_teardown);
}
