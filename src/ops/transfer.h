/*
 * transfer.h — the transfers the operations' host loops enqueue themselves:
 * blocks of host memory with a row pitch, blocking or on a lane
 * (transfer.c, which also holds kiln_buffer_read/write/copy/fill). Here,
 * above profile/, because each transfer is recorded like any other call.
 */
#ifndef KILN_OPS_TRANSFER_H
#define KILN_OPS_TRANSFER_H

#include "core/buffer.h"

/* Blocking copies of a rows x cols block between host memory (row pitch ld
 * elements, the block at element `at`) and the packed start of buf
 * (transfer.c). */
kiln_status kiln__buffer_write_rect(kiln_buffer *buf, const void *host, size_t at,
                                    size_t ld, size_t rows, size_t cols);
kiln_status kiln__buffer_read_rect(kiln_buffer *buf, void *host, size_t at, size_t ld,
                                   size_t rows, size_t cols);

/* Where an internal command is enqueued: on `queue`, after the nwait
 * events of `wait`. The host loops (ops/host.c) move pieces on the
 * runtime's copy queue with it; NULL stands for the runtime's queue and
 * nothing to wait for. */
typedef struct kiln__lane {
  cl_command_queue queue;
  cl_uint nwait;
  const cl_event *wait;
} kiln__lane;

/* The same without waiting (write: host to buf, else buf to host), the
 * block packed in buf from its element `to`, on lane: host must stay as it
 * is, or be left unread, until kiln_finish(). */
kiln_status kiln__buffer_move_async(kiln_buffer *buf, size_t to, int write,
                                    const void *host, size_t at, size_t ld, size_t rows,
                                    size_t cols, const kiln__lane *lane);

#endif /* KILN_OPS_TRANSFER_H */
