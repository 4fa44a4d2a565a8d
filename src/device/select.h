/*
 * select.h — which devices kiln may see and which one a selector, a group or a
 * local rank picks (select.c).
 */
#ifndef KILN_DEVICE_SELECT_H
#define KILN_DEVICE_SELECT_H

#include "base/util.h"
#include "device/device.h"

/* ---- selection (select.c) ------------------------------------------------ */

/* Keeps only the devices the mask (KILN_VISIBLE_DEVICES' grammar) matches,
 * in the order of its terms, and says in `why` what it hid. Fails with
 * KILN_ERR_INVALID_DEVICE_SELECTOR (message for the thread) when the mask
 * does not parse or a term matches nothing. `source` names the setting. */
kiln_status kiln__devices_mask(kiln__device_list *list, const char *mask,
                               const char *source, kiln__str *why);

/* Finds the device a selector picks among the list; see kiln_options.device.
 * Adds to `why` what matched. Fails like kiln__devices_mask(). */
kiln_status kiln__devices_select(const kiln__device_list *list, const char *selector,
                                 const char *source, size_t *chosen, kiln__str *why);

/* Which devices a group runs on (group.c): member[i] set for each usable
 * device the selector (kiln_options.devices' grammar: KILN_DEVICE's and
 * `all`) matches, or with selector NULL each usable device of the
 * best-ranked one's kind; `why` gets a line for each device left out. Fails
 * like kiln__devices_mask(), also when a term matches no usable device. */
kiln_status kiln__devices_group(const kiln__device_list *list, const char *selector,
                                const char *source, int *member, kiln__str *why);

/* The best usable, non-simulator device by ranking; else the best usable
 * simulator; SIZE_MAX when nothing is usable. */
size_t kiln__devices_best(const kiln__device_list *list);

/* A process's rank among the processes of its job on its node. */
typedef struct kiln__local_rank {
  unsigned rank;
  const char *source; /* where it came from, for `why`; NULL: none known */
} kiln__local_rank;

/* kiln__devices_select() for a process that may have a local rank: the
 * term local-rank picks as kiln__devices_local_rank() does, and fails,
 * naming the launcher variables, when lr->source is NULL. */
kiln_status kiln__devices_select_ranked(const kiln__device_list *list,
                                        const char *selector, const char *source,
                                        const kiln__local_rank *lr, size_t *chosen,
                                        kiln__str *why);

/* The device of a local rank: device (rank mod M) of the M usable devices
 * of the best-ranked device's kind (its type, integrated or discrete, a
 * simulator or not, as a group's default takes them), in list order, so that the ranks of a node
 * spread over its devices, round-robin when they outnumber them. Says in
 * `why` which rank from where took which device, and when it is shared.
 * Fails like kiln__devices_mask() when nothing is usable. */
kiln_status kiln__devices_local_rank(const kiln__device_list *list,
                                     const kiln__local_rank *lr, size_t *chosen,
                                     kiln__str *why);

#endif /* KILN_DEVICE_SELECT_H */
