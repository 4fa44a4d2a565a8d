/*
 * record.h — what record.c (the record's file, its key and the public
 * calls) and record_json.c (the record's text, to and from JSON) share.
 * Not installed; nothing else includes it.
 */
#ifndef KILN_TUNING_RECORD_H
#define KILN_TUNING_RECORD_H

#include <stddef.h>

#include "base/util.h"
#include "tuning/tuning.h"

/* What a record holds beside the parameters. */
typedef struct kiln__record_extras {
  kiln__choice *c;
  size_t nc;
  kiln__measured *m;
  size_t nm;
  kiln__clblast_params *cb;
  size_t ncb;
} kiln__record_extras;

void kiln__record_free_choices(kiln__choice *c, size_t n);
void kiln__record_extras_free(kiln__record_extras *x);

/* Checks record text for rt's device and reads its parameters into t and
 * the rest into *x (empty on failure): 0, or -1 with what is wrong in why.
 * Without json-c always -1, why saying so. */
int kiln__record_parse(kiln_runtime *rt, const char *text, size_t len, kiln__tuning *t,
                       kiln__record_extras *x, kiln__str *why);

/* The record of t for rt's device, with rt's choices, measurements and
 * CLBlast sets, pretty-printed (malloc'd), "by" naming who made it; NULL
 * when out of memory, and always without json-c. */
char *kiln__record_text(kiln_runtime *rt, const kiln__tuning *t, const char *by);

#endif
