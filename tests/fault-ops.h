/*
 * fault-ops.h — the operations test-faults.c makes fail (fault-ops.c): each
 * makes fresh inputs, runs one kiln call as a program would, and checks the
 * result against a double-precision reference computed on the host.
 */
#ifndef KILN_TESTS_FAULT_OPS_H
#define KILN_TESTS_FAULT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#define MAXB 6

typedef enum role { IN, INOUT, OUT } role;

/* One operation's inputs and outputs, made fresh for each fault point. */
typedef struct fx {
  kiln_runtime *rt;
  kiln_buffer *buf[MAXB];
  role roles[MAXB];
  void *want[MAXB]; /* what was written into each buffer */
  size_t nbuf;
  void *host[MAXB], *host_copy[MAXB];
  size_t host_bytes[MAXB];
  role host_roles[MAXB];
  size_t nhost;
  kiln_buffer *made[3]; /* buffers the operation itself creates */
  kiln_program *prog;
  int setup_failed;
} fx;

typedef struct op {
  const char *name;
  void (*setup)(fx *f);
  kiln_status (*run)(fx *f);
  /* NULL when the result matches the reference, else why not (static) */
  const char *(*verify)(fx *f);
  /* Builds a program or a plan on its first run: swept cold as well. */
  int cold;
  /* The backend this kiln must be built with (0: none); the test is
   * skipped without it. */
  kiln_backend needs;
  /* The classes (bits 1 << clfault_class) in which the cold sweep fails
   * only kiln's own calls, not those a library makes: see the table. */
  unsigned kiln_only;
  /* The runtime's memory budget in bytes (0: the device's memory). */
  uint64_t memory_limit;
  /* Retries with smaller pieces when its memory is refused (ops/host.c):
   * an injected out-of-memory may end in success, with the right result. */
  int survives_oom;
} op;

#define BIT(k) (1u << (k))

/* Every operation, and how many. */
extern const op fault_ops[];
extern const size_t fault_op_count;

/* The contents of the fixture's buffer i now (malloc'd), or NULL when it
 * cannot be read back. */
void *fx_read(fx *f, size_t i);

/* Destroys the fixture's buffers and program and frees its arrays; keeps
 * its runtime. */
void fx_free(fx *f);

#endif /* KILN_TESTS_FAULT_OPS_H */
