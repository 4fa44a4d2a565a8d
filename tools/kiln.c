/*
 * kiln — the command line: device report, version.
 *
 * The library never prints; this program does, and turns every kiln_status
 * into one clear line on stderr and a non-zero exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

static int usage(FILE *out)
{
  fprintf(out,
          "usage: kiln <command> [options]\n"
          "\n"
          "commands:\n"
          "  info       list the OpenCL devices kiln finds, and the one it picks\n"
          "  devices    rank the devices, and say which one kiln picks and why\n"
          "  version    print kiln's version\n"
          "  help       print this help\n");
  return out == stdout ? 0 : 2;
}

static int fail(const char *what, kiln_status st, const kiln_runtime *rt)
{
  fprintf(stderr, "kiln %s: %s (%s)\n%s\n", what, kiln_status_string(st),
          kiln_status_name(st), kiln_last_error(rt));
  return 1;
}

static const char *type_name(uint64_t type)
{
  if (type & KILN_DEVICE_GPU)
    return "GPU";
  if (type & KILN_DEVICE_CPU)
    return "CPU";
  if (type & KILN_DEVICE_ACCELERATOR)
    return "accelerator";
  return "custom";
}

static void print_device(const kiln_device_info *d, int chosen)
{
  printf("%s [%u:%u] %s\n", chosen ? "*" : " ", d->platform_index,
         d->device_index, d->name);
  printf("      platform       %s (%s)\n", d->platform_name, d->platform_version);
  printf("      type           %s, %s\n", type_name(d->type),
         d->available ? "available" : "not available");
  printf("      version        %s, driver %s\n", d->version, d->driver_version);
  printf("      compute units  %u at %u MHz\n", d->compute_units, d->clock_mhz);
  printf("      global memory  %.1f MiB (largest allocation %.1f MiB)\n",
         (double)d->global_mem_bytes / 1048576.0,
         (double)d->max_alloc_bytes / 1048576.0);
  printf("      local memory   %.1f KiB\n", (double)d->local_mem_bytes / 1024.0);
  printf("      fp64 %s, fp16 %s\n", d->has_fp64 ? "yes" : "no",
         d->has_fp16 ? "yes" : "no");
  printf("      kiln's view    %s, %s%s, ~%.0f GFLOP/s fp32 (estimate)\n",
         kiln_vendor_name(d->vendor_family), d->integrated ? "integrated" : "discrete",
         d->is_simulator ? ", simulator" : "", d->peak_gflops);
}

static int cmd_info(void)
{
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return fail("info", st, NULL);
  const kiln_device_info *picked = kiln_runtime_device(rt);
  size_t n = kiln_runtime_device_count(rt);
  printf("%zu OpenCL device%s (* = kiln's pick)\n", n, n == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    print_device(d, d == picked);
  }
  const char *notes = kiln_runtime_diagnostics(rt);
  if (*notes)
    printf("notes:\n%s", notes);
  kiln_runtime_destroy(rt);
  return 0;
}

/* The devices in kiln's order, best first, with the keys that put them
 * there, the pick, and what KILN_DEVICE or KILN_VISIBLE_DEVICES changed. */
static int cmd_devices(void)
{
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st != KILN_OK)
    return fail("devices", st, NULL);
  size_t n = kiln_runtime_device_count(rt);
  const kiln_device_info **order = calloc(n ? n : 1, sizeof *order);
  if (!order) {
    kiln_runtime_destroy(rt);
    fprintf(stderr, "kiln devices: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    /* insertion sort: a handful of devices */
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    size_t j = i;
    for (; j > 0 && kiln_device_compare(d, order[j - 1]) < 0; j--)
      order[j] = order[j - 1];
    order[j] = d;
  }
  const kiln_device_info *picked = kiln_runtime_device(rt);
  printf("rank  P:D   %-40s  why (the ranking keys, in order)\n", "device");
  for (size_t r = 0; r < n; r++) {
    char why[160];
    printf("%-4zu  %u:%-3u %-40.40s  %s%s\n", r + 1, order[r]->platform_index,
           order[r]->device_index, order[r]->name,
           kiln_device_rank_reasons(order[r], why, sizeof why),
           order[r] == picked ? "  <- picked" : "");
  }
  const char *selection = kiln_runtime_selection(rt);
  printf("\npicked %u:%u %s\n%s", picked->platform_index, picked->device_index,
         picked->name,
         *selection ? selection
                    : "KILN_DEVICE and KILN_VISIBLE_DEVICES are not set: the best "
                      "ranked device is picked\n");
  free(order);
  kiln_runtime_destroy(rt);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2)
    return usage(stderr);
  const char *cmd = argv[1];
  if (strcmp(cmd, "info") == 0)
    return cmd_info();
  if (strcmp(cmd, "devices") == 0)
    return cmd_devices();
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    printf("kiln %s\n", kiln_version());
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
    return usage(stdout);
  fprintf(stderr, "kiln: unknown command '%s'\n", cmd);
  return usage(stderr);
}
