/*
 * kernel.h — setting a kernel's arguments with the caller's checks (kernel.c).
 */
#ifndef KILN_COMPILE_KERNEL_H
#define KILN_COMPILE_KERNEL_H

#include "base/util.h"

/* Sets argument i of k to buffer's memory, for a view its buffer's (the
 * caller passes the view's offset as another argument), with
 * kiln_kernel_set_buffer()'s checks (kernel.c). */
kiln_status kiln__kernel_set_root(kiln_kernel *k, const char *fn, unsigned i,
                                  const kiln_buffer *buffer);

/* Sets argument i of k from *ap by kiln_kernel_set_args()'s format letter
 * c, checked as it checks (kernel.c); for 'b', *buffer gets the buffer.
 * fn names the caller in messages. */
kiln_status kiln__kernel_set_one(kiln_kernel *k, const char *fn, unsigned i, char c,
                                 va_list *ap, const kiln_buffer **buffer);

#endif /* KILN_COMPILE_KERNEL_H */
