/*
 * info.c — `kiln info`: every OpenCL platform and device with every property
 * kiln reads, in clinfo's layouts, from kiln's device list (no context is
 * created, so a busy device is reported too).
 *
 *   kiln info                 clinfo's report: aligned label / value pairs
 *   kiln info --raw           `clinfo --raw`: CL names and raw values, which
 *                             tests/check-clinfo.py compares with clinfo's
 *   kiln info --list          `clinfo -l`: one line per platform and device
 *   kiln info --json          one JSON document (json-c)
 *   kiln info --device SEL    one device: P:D or a global index N
 *
 * The text of every value comes from the library (kiln_device_property), so
 * this file only lays it out. Notes about skipped devices go to stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kiln/kiln.h"
#include "kiln_config.h"

#if HAVE_JSON_C
#  include <json-c/json.h>
#endif

enum mode { HUMAN, RAW, LIST, JSON };

typedef struct info_args {
  int raw, list, json;
  const char *device; /* --device's value, or NULL for all */
} info_args;

static const cli_option info_rows[] = {
  {.name = "--raw",
   CLI_FLAG_AT(info_args, raw),
   .help = "CL names and raw values, as clinfo --raw"},
  {.name = "--list",
   .alias = "-l",
   CLI_FLAG_AT(info_args, list),
   .help = "one line per platform and device, as clinfo -l"},
  {.name = "--json",
   CLI_FLAG_AT(info_args, json),
   .help = "one JSON document of all of it"},
  {.name = "--device",
   .alias = "-d",
   CLI_TEXT_AT(info_args, device),
   .value = "SEL",
   .help = "only one device, chosen as KILN_DEVICE chooses: P:D (platform P's device "
           "D, as --list numbers them), N (the N-th device), a vendor, a type (gpu, "
           "cpu, accelerator) or name=TEXT",
   .def_text = "every device"},
};

static int run_info(int argc, char **argv);

const cli_command kiln_info_command = {
  .name = "kiln info",
  .summary = "every OpenCL platform and device, as clinfo reports them",
  CLI_ROWS(info_rows),
  .about = "Without a layout option: clinfo's report, aligned label and value pairs.\n"
           "--raw, --list and --json are layouts: one at most. No context is created,\n"
           "so a busy device is reported too; notes on skipped devices go to stderr.",
  .example = "kiln info --list\nkiln info --device 1:0 --raw",
  .run = run_info,
};

/* clinfo's columns: labels are padded to 48 (46 after a 2-space indent),
 * then two spaces, so values start at column 50 of the line. */
#define LABEL_WIDTH 46

#if defined(__GNUC__)
#  define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#  define PRINTF_LIKE(fmt, args)
#endif

/* One "kiln info: ..." line on stderr; returns 1, the exit status. */
static int fail(const char *fmt, ...) PRINTF_LIKE(1, 2);

static int fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("kiln info: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

/* ---- clinfo's report ------------------------------------------------------ */

/* One "label  value" line; the lines of a multi-line value line up under
 * the first. */
static void print_pair(const char *indent, const char *label, const char *value)
{
  int width = LABEL_WIDTH + 2 - (int)strlen(indent);
  printf("%s%-*s  ", indent, width, label);
  for (const char *nl; (nl = strchr(value, '\n')) != NULL; value = nl + 1)
    printf("%.*s\n%*s", (int)(nl - value), value, LABEL_WIDTH + 4, "");
  printf("%s\n", value);
}

static void print_platform_props(const kiln_platform_info *p)
{
  kiln_property prop;
  for (size_t i = 0; i < kiln_platform_property_count(); i++)
    if (kiln_platform_property(p, i, &prop) == KILN_OK)
      print_pair("  ", prop.label, prop.human);
}

static void print_device_props(const kiln_device_info *d)
{
  kiln_property prop;
  char text[64];
  for (size_t i = 0; i < kiln_device_property_count(); i++)
    if (kiln_device_property(d, i, &prop) == KILN_OK)
      print_pair("  ", prop.label, prop.human);
  /* What kiln derives, which clinfo does not show. */
  print_pair("  ", "Vendor family (kiln)", kiln_vendor_name(d->vendor_family));
  print_pair("  ", "Integrated (kiln)", d->integrated ? "Yes" : "No");
  print_pair("  ", "Simulator (kiln)", d->is_simulator ? "Yes" : "No");
  snprintf(text, sizeof text, "%.0f GFLOP/s", d->peak_gflops);
  print_pair("  ", "Estimated fp32 peak (kiln)", text);
}

/* Whether device i is to be shown: all, or the one --device picked. */
static int shown(size_t i, const size_t *only)
{
  return !only || *only == i;
}

static void print_human(const kiln_device_list *list, const size_t *only)
{
  char n[32];
  size_t np = kiln_device_list_platform_count(list);
  snprintf(n, sizeof n, "%zu", np);
  if (!only) {
    print_pair("", "Number of platforms", n);
    for (size_t p = 0; p < np; p++) {
      print_platform_props(kiln_device_list_platform(list, p));
      printf("\n");
    }
  }
  for (size_t p = 0; p < np; p++) {
    const kiln_platform_info *plat = kiln_device_list_platform(list, p);
    if (only && kiln_device_platform(kiln_device_list_at(list, *only)) != plat)
      continue;
    print_pair("  ", "Platform Name", plat->name);
    snprintf(n, sizeof n, "%zu", plat->device_count);
    print_pair("", "Number of devices", n);
    for (size_t i = 0; i < kiln_device_list_count(list); i++) {
      const kiln_device_info *d = kiln_device_list_at(list, i);
      if (kiln_device_platform(d) == plat && shown(i, only)) {
        print_device_props(d);
        printf("\n");
      }
    }
  }
}

/* ---- clinfo --raw ----------------------------------------------------------- */

/* The tag clinfo puts before a platform's lines: its ICD suffix, or P<index>
 * when it has none. */
static const char *platform_tag(const kiln_platform_info *p, char *buf, size_t size)
{
  kiln_property prop;
  for (size_t i = 0; i < kiln_platform_property_count(); i++)
    if (kiln_platform_property(p, i, &prop) == KILN_OK && prop.available &&
        strcmp(prop.name, "CL_PLATFORM_ICD_SUFFIX_KHR") == 0 && *prop.raw) {
      snprintf(buf, size, "%s", prop.raw);
      return buf;
    }
  snprintf(buf, size, "P%u", p->index);
  return buf;
}

static void print_raw_line(const char *tag, const char *index, const char *name,
                           const char *value)
{
  char prefix[128];
  snprintf(prefix, sizeof prefix, "[%s/%s]", tag, index);
  printf("%s  %s%-*s  %s\n", prefix, *name == '#' ? "" : "  ",
         *name == '#' ? LABEL_WIDTH + 2 : LABEL_WIDTH, name, value);
}

static void print_raw_platform(const kiln_device_list *list, const kiln_platform_info *p,
                               const size_t *only)
{
  char tag[64], idx[32], n[32];
  kiln_property prop;
  platform_tag(p, tag, sizeof tag);
  print_raw_line(tag, "*", "CL_PLATFORM_NAME", p->name);
  snprintf(n, sizeof n, "%zu", p->device_count);
  print_raw_line(tag, "*", "#DEVICES", n);
  for (size_t i = 0; i < kiln_device_list_count(list); i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    if (kiln_device_platform(d) != p || !shown(i, only))
      continue;
    snprintf(idx, sizeof idx, "%u", d->device_index);
    for (size_t k = 0; k < kiln_device_property_count(); k++)
      if (kiln_device_property(d, k, &prop) == KILN_OK)
        print_raw_line(tag, idx, prop.name, prop.raw);
    printf("\n");
  }
}

static void print_raw(const kiln_device_list *list, const size_t *only)
{
  size_t np = kiln_device_list_platform_count(list);
  kiln_property prop;
  if (!only) {
    printf("%-*s  %zu\n", LABEL_WIDTH + 2, "#PLATFORMS", np);
    for (size_t p = 0; p < np; p++) {
      const kiln_platform_info *plat = kiln_device_list_platform(list, p);
      for (size_t k = 0; k < kiln_platform_property_count(); k++)
        if (kiln_platform_property(plat, k, &prop) == KILN_OK)
          printf("  %-*s  %s\n", LABEL_WIDTH, prop.name, prop.raw);
      printf("\n");
    }
  }
  for (size_t p = 0; p < np; p++) {
    const kiln_platform_info *plat = kiln_device_list_platform(list, p);
    if (!only || kiln_device_platform(kiln_device_list_at(list, *only)) == plat)
      print_raw_platform(list, plat, only);
  }
}

/* ---- clinfo -l ------------------------------------------------------------------ */

static void print_list(const kiln_device_list *list, const size_t *only)
{
  for (size_t p = 0; p < kiln_device_list_platform_count(list); p++) {
    const kiln_platform_info *plat = kiln_device_list_platform(list, p);
    if (only && kiln_device_platform(kiln_device_list_at(list, *only)) != plat)
      continue;
    printf("Platform #%u: %s\n", plat->index, plat->name);
    size_t left = only ? 1 : plat->device_count;
    for (size_t i = 0; i < kiln_device_list_count(list); i++) {
      const kiln_device_info *d = kiln_device_list_at(list, i);
      if (kiln_device_platform(d) == plat && shown(i, only))
        printf(" %s-- Device #%u: %s\n", --left ? "+" : "`", d->device_index, d->name);
    }
  }
}

/* ---- JSON ------------------------------------------------------------------------ */

#if HAVE_JSON_C
static json_object *json_property(const kiln_property *p)
{
  json_object *o = json_object_new_object();
  json_object_object_add(o, "label", json_object_new_string(p->label));
  json_object_object_add(o, "available", json_object_new_boolean(p->available));
  json_object_object_add(o, "raw", p->available ? json_object_new_string(p->raw) : NULL);
  json_object_object_add(o, "human",
                         p->available ? json_object_new_string(p->human) : NULL);
  if (!p->available)
    json_object_object_add(o, "why", json_object_new_string(p->why));
  return o;
}

static json_object *json_device(const kiln_device_info *d, size_t global)
{
  json_object *o = json_object_new_object(), *props = json_object_new_object();
  json_object *kiln = json_object_new_object();
  kiln_property prop;
  for (size_t i = 0; i < kiln_device_property_count(); i++)
    if (kiln_device_property(d, i, &prop) == KILN_OK)
      json_object_object_add(props, prop.name, json_property(&prop));
  json_object_object_add(kiln, "vendor_family",
                         json_object_new_string(kiln_vendor_name(d->vendor_family)));
  json_object_object_add(kiln, "integrated", json_object_new_boolean(d->integrated));
  json_object_object_add(kiln, "simulator", json_object_new_boolean(d->is_simulator));
  json_object_object_add(kiln, "opencl_version",
                         json_object_new_int((int)d->opencl_version));
  json_object_object_add(kiln, "peak_gflops", json_object_new_double(d->peak_gflops));
  json_object_object_add(o, "index", json_object_new_int((int)d->device_index));
  json_object_object_add(o, "global_index", json_object_new_int64((int64_t)global));
  json_object_object_add(o, "properties", props);
  json_object_object_add(o, "kiln", kiln);
  return o;
}

static json_object *json_platform(const kiln_device_list *list,
                                  const kiln_platform_info *p, const size_t *only)
{
  json_object *o = json_object_new_object(), *props = json_object_new_object();
  json_object *devices = json_object_new_array();
  kiln_property prop;
  for (size_t i = 0; i < kiln_platform_property_count(); i++)
    if (kiln_platform_property(p, i, &prop) == KILN_OK)
      json_object_object_add(props, prop.name, json_property(&prop));
  for (size_t i = 0; i < kiln_device_list_count(list); i++) {
    const kiln_device_info *d = kiln_device_list_at(list, i);
    if (kiln_device_platform(d) == p && shown(i, only))
      json_object_array_add(devices, json_device(d, i));
  }
  json_object_object_add(o, "index", json_object_new_int((int)p->index));
  json_object_object_add(o, "properties", props);
  json_object_object_add(o, "devices", devices);
  return o;
}

static int print_json(const kiln_device_list *list, const size_t *only)
{
  json_object *root = json_object_new_object(), *platforms = json_object_new_array();
  for (size_t p = 0; p < kiln_device_list_platform_count(list); p++) {
    const kiln_platform_info *plat = kiln_device_list_platform(list, p);
    if (!only || kiln_device_platform(kiln_device_list_at(list, *only)) == plat)
      json_object_array_add(platforms, json_platform(list, plat, only));
  }
  json_object_object_add(root, "kiln_version", json_object_new_string(kiln_version()));
  json_object_object_add(root, "platforms", platforms);
  json_object_object_add(root, "diagnostics",
                         json_object_new_string(kiln_device_list_diagnostics(list)));
  const char *text = json_object_to_json_string_ext(
    root,
    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
  int ok = text != NULL;
  if (ok)
    printf("%s\n", text);
  json_object_put(root);
  return ok ? 0 : fail("writing the JSON document failed (out of memory?)");
}
#else
static int print_json(const kiln_device_list *list, const size_t *only)
{
  (void)list, (void)only;
  return fail("--json: this kiln was built without json-c; install libjson-c-dev "
              "(Debian, Ubuntu) and rebuild");
}
#endif

/* ---- the command ---------------------------------------------------------------- */

/* The notes go to stderr, one "kiln info: " line each, so that stdout stays
 * the report itself. */
static void print_notes(const kiln_device_list *list)
{
  const char *notes = kiln_device_list_diagnostics(list);
  for (const char *nl; *notes; notes = nl + 1) {
    nl = strchr(notes, '\n');
    if (!nl)
      nl = notes + strlen(notes) - 1;
    fprintf(stderr, "kiln info: %.*s\n", (int)(nl - notes + (*nl != '\n')), notes);
  }
}

static int run_info(int argc, char **argv)
{
  info_args a = {0};
  int status = kiln_cli_parse(&kiln_info_command, &a, argc, argv, NULL);
  if (status >= 0)
    return status;
  if (a.raw + a.list + a.json > 1)
    return kiln_cli_usage_error(&kiln_info_command, a.raw ? "--raw" : "--list",
                                "--raw, --list and --json are layouts: choose one");
  enum mode mode = a.raw ? RAW : a.list ? LIST : a.json ? JSON : HUMAN;
  kiln_device_list *list = NULL;
  kiln_status st = kiln_device_list_create(NULL, &list);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln info: %s (%s): %s\n", kiln_status_string(st),
            kiln_status_name(st), kiln_last_error(NULL));
    return 1;
  }
  size_t one = 0;
  if (a.device && kiln_device_list_select(list, a.device, &one) != KILN_OK) {
    /* The first line says what is wrong; the rest lists the devices, which
     * `kiln info --list` shows better. */
    const char *why = kiln_last_error(NULL);
    fail("%.*s; kiln info --list shows the devices", (int)strcspn(why, "\n"), why);
    kiln_device_list_destroy(list);
    return 1;
  }
  const size_t *only = a.device ? &one : NULL;
  status = 0;
  switch (mode) {
  case HUMAN: print_human(list, only); break;
  case RAW: print_raw(list, only); break;
  case LIST: print_list(list, only); break;
  case JSON: status = print_json(list, only); break;
  }
  print_notes(list);
  kiln_device_list_destroy(list);
  return status;
}
