/*
 * fuzz-select.c — the KILN_VISIBLE_DEVICES and KILN_DEVICE parsers
 * (kiln__devices_mask, kiln__devices_select) over a list of fake device
 * records, no OpenCL needed, and KILN_MEMORY_LIMIT's (kiln__parse_size).
 *
 * The input: one byte whose low 5 bits say which of the fake devices below
 * are in the list (in their order), then up to three lines: the mask, the
 * selector and the size. A missing line is empty; a NUL ends a line's text
 * early, as it would an environment variable's.
 *
 * Properties, beyond ASan and UBSan finding nothing:
 *  - a refused mask leaves the list as it was; an accepted one keeps a
 *    non-empty subset of it, each device once;
 *  - a selector picks a usable device of the list, and a bare index N picks
 *    device N when that one is usable;
 *  - every refusal is KILN_ERR_INVALID_DEVICE_SELECTOR with a message that
 *    names the setting;
 *  - a size is a byte count or a fraction in (0, 1], never both, and a
 *    whole number with a K/M/G/T suffix is exactly that many bytes.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "base/env.h"
#include "base/util.h"
#include "device/device.h"
#include "device/select.h"

#include "fuzz.h"

#define GIB (1ull << 30)

/* Two platforms' worth of devices of each kind the grammar tells apart:
 * vendors, types, a simulator and a device that is not usable. */
static const kiln_device_info fake[] = {
  {.platform_index = 0,
   .device_index = 0,
   .platform_name = "NVIDIA CUDA",
   .name = "NVIDIA GeForce RTX 4090",
   .vendor = "NVIDIA Corporation",
   .type = KILN_DEVICE_GPU,
   .vendor_family = KILN_VENDOR_NVIDIA,
   .global_mem_bytes = 24 * GIB,
   .peak_gflops = 82600,
   .available = 1,
   .compiler_available = 1,
   .opencl_version = 300},
  {.platform_index = 0,
   .device_index = 1,
   .platform_name = "NVIDIA CUDA",
   .name = "NVIDIA GeForce GTX 1660 SUPER",
   .vendor = "NVIDIA Corporation",
   .type = KILN_DEVICE_GPU,
   .vendor_family = KILN_VENDOR_NVIDIA,
   .global_mem_bytes = 6 * GIB,
   .peak_gflops = 5000,
   .available = 0,
   .compiler_available = 1,
   .opencl_version = 300},
  {.platform_index = 1,
   .device_index = 0,
   .platform_name = "Portable Computing Language",
   .name = "cpu-haswell-Intel(R) Xeon(R) CPU",
   .vendor = "GenuineIntel",
   .type = KILN_DEVICE_CPU,
   .vendor_family = KILN_VENDOR_POCL,
   .integrated = 1,
   .global_mem_bytes = 16 * GIB,
   .peak_gflops = 600,
   .available = 1,
   .compiler_available = 1,
   .opencl_version = 300},
  {.platform_index = 2,
   .device_index = 0,
   .platform_name = "Oclgrind",
   .name = "Oclgrind Simulator",
   .vendor = "University of Bristol",
   .type = KILN_DEVICE_ACCELERATOR,
   .vendor_family = KILN_VENDOR_OCLGRIND,
   .is_simulator = 1,
   .global_mem_bytes = 128 << 20,
   .available = 1,
   .compiler_available = 1,
   .opencl_version = 120},
  {.platform_index = 3,
   .device_index = 0,
   .platform_name = "Intel(R) OpenCL Graphics",
   .name = "Intel(R) UHD Graphics 770",
   .vendor = "Intel(R) Corporation",
   .type = KILN_DEVICE_GPU,
   .vendor_family = KILN_VENDOR_INTEL,
   .integrated = 1,
   .global_mem_bytes = 12 * GIB,
   .peak_gflops = 800,
   .available = 1,
   .compiler_available = 1,
   .opencl_version = 300},
};
#define NFAKE (sizeof fake / sizeof fake[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  return 0;
}

static void make_list(unsigned which, kiln__device_list *list)
{
  memset(list, 0, sizeof *list);
  list->items = calloc(NFAKE, sizeof *list->items);
  FUZZ_CHECK(list->items != NULL);
  for (size_t i = 0; i < NFAKE; i++)
    if (which & (1u << i))
      list->items[list->count++].info = fake[i];
  list->platforms = 4;
}

static int usable(const kiln_device_info *d)
{
  return d->available && d->compiler_available;
}

/* Which fake record a list entry is (its name is its identity). */
static size_t fake_index(const kiln_device_info *d)
{
  for (size_t i = 0; i < NFAKE; i++)
    if (d->name == fake[i].name)
      return i;
  return SIZE_MAX;
}

static void check_refusal(kiln_status st, const char *source)
{
  FUZZ_CHECK(st == KILN_ERR_INVALID_DEVICE_SELECTOR);
  FUZZ_CHECK(strstr(kiln_last_error(NULL), source) != NULL);
}

static void fuzz_mask(kiln__device_list *list, const char *mask)
{
  kiln__device_list before = *list;
  kiln__device saved[NFAKE];
  memcpy(saved, list->items, list->count * sizeof *saved);
  kiln__str why = {0};
  kiln_status st = kiln__devices_mask(list, mask, "KILN_VISIBLE_DEVICES", &why);
  if (st != KILN_OK) {
    check_refusal(st, "KILN_VISIBLE_DEVICES");
    FUZZ_CHECK(list->count == before.count);
    FUZZ_CHECK(memcmp(saved, list->items, list->count * sizeof *saved) == 0);
  } else {
    unsigned seen = 0;
    FUZZ_CHECK(list->count >= 1 && list->count <= before.count);
    for (size_t i = 0; i < list->count; i++) {
      size_t f = fake_index(&list->items[i].info);
      FUZZ_CHECK(f < NFAKE && !(seen & (1u << f)));
      seen |= 1u << f;
    }
    FUZZ_CHECK(why.len > 0);
  }
  kiln__str_free(&why);
}

/* The selector as a bare index ("  3 "), or SIZE_MAX when it is not one. */
static size_t bare_index(const char *s)
{
  while (isspace((unsigned char)*s))
    s++;
  if (!isdigit((unsigned char)*s))
    return SIZE_MAX;
  size_t v = 0;
  for (; isdigit((unsigned char)*s); s++)
    if (v > 1000)
      return SIZE_MAX;
    else
      v = v * 10 + (size_t)(*s - '0');
  while (isspace((unsigned char)*s))
    s++;
  return *s ? SIZE_MAX : v;
}

static void fuzz_select(const kiln__device_list *list, const char *selector)
{
  size_t chosen = 12345;
  kiln__str why = {0};
  kiln_status st = kiln__devices_select(list, selector, "KILN_DEVICE", &chosen, &why);
  size_t n = bare_index(selector);
  if (st != KILN_OK) {
    check_refusal(st, "KILN_DEVICE");
    FUZZ_CHECK(n >= list->count || !usable(&list->items[n].info));
  } else {
    FUZZ_CHECK(chosen < list->count && usable(&list->items[chosen].info));
    FUZZ_CHECK(n == SIZE_MAX || n == chosen);
    FUZZ_CHECK(why.len > 0);
  }
  kiln__str_free(&why);
  size_t best = kiln__devices_best(list);
  FUZZ_CHECK(best == SIZE_MAX || (best < list->count && usable(&list->items[best].info)));
}

/* The shift of a size's unit: "" or "b" is bytes; k, m, g or t, alone or
 * followed by "b" or "ib", is that power of 1024; any case. -1 for anything
 * else. Written from the grammar, not from the parser's table. */
static int unit_shift(const char *unit)
{
  static const char letters[] = "kmgt";
  const char *l = *unit ? strchr(letters, tolower((unsigned char)*unit)) : NULL;
  const char *rest = l ? unit + 1 : unit;
  if (*rest == '\0' || strcasecmp(rest, "b") == 0 || (l && strcasecmp(rest, "ib") == 0))
    return l ? 10 * (int)(l - letters + 1) : 0;
  return -1;
}

/* "123", "4k", "5 MiB"... as a whole number of bytes, or -1. */
static int whole_size(const char *s, fuzz_u128 *bytes)
{
  fuzz_u128 v = 0;
  const char *p = s;
  for (; isdigit((unsigned char)*p); p++)
    if (v < ((fuzz_u128)1 << 80)) /* stays above 2^64, and fits a shift */
      v = v * 10 + (unsigned)(*p - '0');
  int shift = unit_shift(p);
  if (p == s || shift < 0)
    return -1;
  *bytes = v << shift;
  return 0;
}

static void fuzz_size_text(const char *s)
{
  uint64_t bytes = 1;
  double fraction = 1;
  int rc = kiln__parse_size(s, &bytes, &fraction);
  fuzz_u128 want;
  if (rc != 0) {
    FUZZ_CHECK(rc == -1 && bytes == 0 && fraction == 0);
  } else {
    FUZZ_CHECK((bytes != 0) != (fraction != 0));
    FUZZ_CHECK(fraction == 0 || (fraction > 0 && fraction <= 1));
  }
  if (whole_size(s, &want) == 0) {
    int fits = want >= 1 && want <= UINT64_MAX;
    FUZZ_CHECK(fits ? rc == 0 && bytes == (uint64_t)want : rc == -1);
  }
}

/* The next line of the input as a string (malloc'd). */
static char *next_line(fuzz_input *in)
{
  const uint8_t *nl = memchr(in->p, '\n', in->left);
  size_t len = nl ? (size_t)(nl - in->p) : in->left;
  char *s = malloc(len + 1);
  FUZZ_CHECK(s != NULL);
  memcpy(s, in->p, len);
  s[len] = '\0';
  in->p += len + (nl != NULL);
  in->left -= len + (nl != NULL);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_input in = {data, size};
  unsigned which = fuzz_byte(&in) & ((1u << NFAKE) - 1);
  char *mask = next_line(&in), *selector = next_line(&in), *limit = next_line(&in);
  kiln__device_list list;

  /* The selector on the whole list, then on what the mask leaves, as
   * kiln_runtime_create() applies them. */
  make_list(which, &list);
  fuzz_select(&list, selector);
  fuzz_mask(&list, mask);
  fuzz_select(&list, selector);
  kiln__devices_free(&list);

  fuzz_size_text(limit);
  free(mask);
  free(selector);
  free(limit);
  return 0;
}
