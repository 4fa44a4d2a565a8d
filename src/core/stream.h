/*
 * stream.h — the queue a call goes to, streams and the order of runs that share
 * state (stream.c).
 */
#ifndef KILN_CORE_STREAM_H
#define KILN_CORE_STREAM_H

#include "base/util.h"

/* The queue this thread's calls on rt go to: its bound stream's, else the
 * runtime's. Every command kiln enqueues for the caller goes there. */
cl_command_queue kiln__queue(kiln_runtime *rt);

/* Which of rt's queues q is, for the trace: 0 the runtime's (or one not
 * known), -1 the copy queue, k > 0 the stream numbered k, in the order the
 * runtime made its streams. */
int kiln__queue_lane(kiln_runtime *rt, cl_command_queue q);

/* With streams, a flushed marker on every queue of rt (the runtime's, then
 * each stream's) into a malloc'd *fence of *n events; none (*n 0)
 * without. For the pool: a block waits for its fence. */
cl_int kiln__fence(kiln_runtime *rt, cl_event **fence, cl_uint *n);

/* clFinish(q), made to wait where the driver's alone may not
 * (kiln__blocking_returns_early() in rank.c): there the call first waits
 * for a marker of its own. */
cl_int kiln__finish_queue(const kiln_runtime *rt, cl_command_queue q);

/* The blocking flag for a command kiln waits for: CL_FALSE where the
 * driver's blocking calls may return early (kiln__blocking_returns_early()),
 * whose callers ask for the command's event and kiln__wait_command() it. */
cl_bool kiln__blocking(const kiln_runtime *rt, int blocking);

/* Waits for ev, an event of a command kiln__blocking() made non-blocking;
 * returns the command's failure, or the wait's. */
cl_int kiln__wait_command(cl_event ev);

/* Waits for every command rt tracks (kiln__runtime_track), each on its own
 * event: where the driver's waits may return early
 * (kiln__blocking_returns_early()), a marker's wait may return while the
 * events of earlier commands still read running (the profiler's records
 * wait the same way: kiln__profile_resolve(rt, 2)). Called by kiln_finish()
 * with rt->lock held, after its queues' waits. */
void kiln__wait_tracked(kiln_runtime *rt);

/* kiln__finish_queue on every stream; the first failure into *first_err,
 * when it is still CL_SUCCESS. */
void kiln__streams_finish(kiln_runtime *rt, cl_int *first_err);

/* State that the runs of some object share whatever queue they go on (an
 * FFT plan's scratch): the queue of its last run, and a marker after it
 * (NULL when none was needed). Held under the object's own lock. */
typedef struct kiln__serial {
  cl_command_queue queue;
  cl_event last;
} kiln__serial;

/* Before a run: on another queue than the last run's, the current queue
 * waits for that run. */
kiln_status kiln__serial_begin(kiln_runtime *rt, kiln__serial *s, const char *fn);
/* After a run's commands are enqueued. */
void kiln__serial_end(kiln_runtime *rt, kiln__serial *s);
void kiln__serial_free(kiln__serial *s);

#endif /* KILN_CORE_STREAM_H */
