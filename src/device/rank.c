/*
 * rank.c — what kiln derives from a device record, and how it ranks devices.
 *
 * Everything here is a pure function of kiln_device_info, so the tests rank
 * records of devices this machine does not have, built from their published
 * figures.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"
#include "device/rank.h"

KILN_API const char *kiln_vendor_name(kiln_vendor vendor)
{
  static const char *const names[] = {
    [KILN_VENDOR_OTHER] = "other",       [KILN_VENDOR_NVIDIA] = "nvidia",
    [KILN_VENDOR_AMD] = "amd",           [KILN_VENDOR_INTEL] = "intel",
    [KILN_VENDOR_APPLE] = "apple",       [KILN_VENDOR_ARM] = "arm",
    [KILN_VENDOR_QUALCOMM] = "qualcomm", [KILN_VENDOR_IMAGINATION] = "imagination",
    [KILN_VENDOR_POCL] = "pocl",         [KILN_VENDOR_OCLGRIND] = "oclgrind",
    [KILN_VENDOR_MESA] = "mesa",
  };
  return (unsigned)vendor < KILN__COUNT(names) ? names[vendor] : "other";
}

/* Runtimes that are not their hardware's vendor's, known by their platform:
 * they come first, since PoCL on an Intel CPU reports Intel's vendor id. */
static const struct {
  const char *platform; /* a substring of the platform name or vendor */
  kiln_vendor vendor;
} runtimes[] = {
  {"Oclgrind", KILN_VENDOR_OCLGRIND},
  {"Portable Computing Language", KILN_VENDOR_POCL},
  {"The pocl project", KILN_VENDOR_POCL},
  {"Clover", KILN_VENDOR_MESA},
  {"rusticl", KILN_VENDOR_MESA},
  {"Mesa", KILN_VENDOR_MESA},
};

/* PCI vendor ids, then words of the vendor string (case-insensitive). */
static const struct {
  uint32_t id;
  const char *word;
  kiln_vendor vendor;
} vendors[] = {
  {0x10DE, "NVIDIA", KILN_VENDOR_NVIDIA},
  {0x1002, "Advanced Micro Devices", KILN_VENDOR_AMD},
  {0x1022, "AMD", KILN_VENDOR_AMD},
  {0x8086, "Intel", KILN_VENDOR_INTEL},
  {0x13B5, "ARM", KILN_VENDOR_ARM},
  {0x5143, "Qualcomm", KILN_VENDOR_QUALCOMM},
  {0x1010, "Imagination", KILN_VENDOR_IMAGINATION},
  {0, "Apple", KILN_VENDOR_APPLE},
};

static int contains_nocase(const char *hay, const char *needle)
{
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0)
      return 1;
  return 0;
}

static kiln_vendor vendor_family(const kiln_device_info *d)
{
  for (size_t i = 0; i < KILN__COUNT(runtimes); i++)
    if (strstr(d->platform_name, runtimes[i].platform) ||
        strstr(d->platform_vendor, runtimes[i].platform))
      return runtimes[i].vendor;
  for (size_t i = 0; i < KILN__COUNT(vendors); i++)
    if (vendors[i].id && d->vendor_id == vendors[i].id)
      return vendors[i].vendor;
  for (size_t i = 0; i < KILN__COUNT(vendors); i++)
    if (contains_nocase(d->vendor, vendors[i].word))
      return vendors[i].vendor;
  return KILN_VENDOR_OTHER;
}

/* fp32 lanes in one NVIDIA streaming multiprocessor, by compute capability. */
static unsigned nvidia_lanes(uint32_t major, uint32_t minor)
{
  if (major == 3)
    return 192; /* Kepler */
  if (major == 5)
    return 128; /* Maxwell */
  if (major == 6)
    return minor == 0 ? 64 : 128; /* P100 : consumer Pascal */
  if (major == 7)
    return 64; /* Volta, Turing */
  if (major == 8)
    return minor == 0 ? 64 : 128; /* A100 : consumer Ampere, Ada */
  return 128;                     /* Hopper, Blackwell, and a driver without the query */
}

/* fp32 lanes per compute unit, as the driver counts compute units. */
static unsigned lanes_per_cu(const kiln_device_info *d)
{
  if (d->type & KILN_DEVICE_CPU) /* a CU is a hardware thread; see below */
    return kiln__vector_lanes_float(d);
  switch (d->vendor_family) {
  case KILN_VENDOR_NVIDIA: return nvidia_lanes(d->arch_major, d->arch_minor);
  case KILN_VENDOR_AMD: return d->arch_major >= 11 ? 128 : 64; /* RDNA3 dual issue */
  case KILN_VENDOR_INTEL: return 8;                            /* a CU is an EU: SIMD8 */
  case KILN_VENDOR_APPLE: return 128;                          /* a CU is a GPU core */
  case KILN_VENDOR_ARM: return 16;
  case KILN_VENDOR_QUALCOMM: return 64;
  case KILN_VENDOR_IMAGINATION: return 32;
  default: return 64;
  }
}

/*
 * The estimated fp32 peak, in GFLOP/s:
 *
 *   peak = compute units x fp32 lanes per compute unit x 2 x clock (GHz)
 *
 * where 2 counts a fused multiply-add as two operations. OpenCL does not
 * report lanes per compute unit, so they come from the vendor family and
 * architecture (lanes_per_cu above). On a CPU a compute unit is a hardware
 * thread with native_vector_width_float lanes; that two FMA pipes per core
 * are shared by two SMT threads cancels out. Simulators count as 0. The
 * figure ranks devices; it is no promise of speed.
 */
static double peak_gflops(const kiln_device_info *d)
{
  if (d->is_simulator)
    return 0;
  return (double)d->compute_units * lanes_per_cu(d) * 2.0 * d->clock_mhz / 1000.0;
}

/* "OpenCL 3.0 CUDA 12.2" -> 300; 0 when the text is not of that form. */
static unsigned parse_opencl_version(const char *v)
{
  unsigned major = 0, minor = 0;
  if (strncmp(v, "OpenCL ", 7) != 0 || !isdigit((unsigned char)v[7]))
    return 0;
  if (sscanf(v + 7, "%u.%u", &major, &minor) != 2 || minor > 9)
    return 0;
  return major * 100 + minor * 10;
}

void kiln__device_derive(kiln_device_info *d)
{
  d->vendor_family = vendor_family(d);
  d->is_simulator = d->vendor_family == KILN_VENDOR_OCLGRIND;
  d->integrated = (d->type & KILN_DEVICE_CPU) ||
                  ((d->type & KILN_DEVICE_GPU) &&
                   (d->host_unified_memory || d->vendor_family == KILN_VENDOR_APPLE));
  d->opencl_version = parse_opencl_version(d->version);
  d->peak_gflops = peak_gflops(d);
}

size_t kiln__loop_limit(const kiln_device_info *d)
{
  /* Measured on Debian 12's Mesa 22.3 (tests/test-reduce.c on rusticl): a
   * chunk of 156256 floats, or two loops of 46880 each, read its first 65536
   * elements only. Keep to half the limit. */
  return d->vendor_family == KILN_VENDOR_MESA && strncmp(d->name, "llvmpipe", 8) == 0
           ? 65535 / 2
           : 0;
}

const char *kiln__driver_cache(const kiln_device_info *d)
{
  /* NVIDIA's driver keeps its own build cache, keyed by the source text
   * (~/.nv/ComputeCache; PyOpenCL turns its binary cache off there for that
   * reason). Not measured on a GPU yet.
   *
   * PoCL keeps one too (POCL_CACHE_DIR), and reading a program's binaries
   * back (CL_PROGRAM_BINARIES) makes PoCL 3.1 compile every kernel of it:
   * for a whole cl/ file that cost more than it saved. With a program a
   * kernel (program.c) it costs nothing measurable, and kiln's cache
   * shortens a warm process, so PoCL keeps kiln's. The figures are in
   * docs/performance.md, "Each driver's own cache" (CPU seconds of
   * `/usr/bin/time kiln run` on a small case, cold and warm, with
   * KILN_CACHE=0 and unset). */
  if (d->vendor_family == KILN_VENDOR_NVIDIA)
    return "NVIDIA's driver keeps its own build cache (~/.nv/ComputeCache)";
  return NULL;
}

/* LLVM's x86 CPU names by the width of their widest float vectors, in bits;
 * the longest matching prefix wins ("skylake-avx512" over "skylake"). */
static const struct {
  const char *cpu;
  unsigned bits;
} x86_cpu_bits[] = {
  {"skylake-avx512", 512},
  {"cascadelake", 512},
  {"cooperlake", 512},
  {"cannonlake", 512},
  {"icelake", 512},
  {"tigerlake", 512},
  {"rocketlake", 512},
  {"sapphirerapids", 512},
  {"emeraldrapids", 512},
  {"graniterapids", 512},
  {"diamondrapids", 512},
  {"knl", 512},
  {"knm", 512},
  {"znver4", 512},
  {"znver5", 512},
  {"x86-64-v4", 512},
  {"haswell", 256},
  {"broadwell", 256},
  {"skylake", 256},
  {"alderlake", 256},
  {"raptorlake", 256},
  {"meteorlake", 256},
  {"arrowlake", 256},
  {"lunarlake", 256},
  {"gracemont", 256},
  {"sierraforest", 256},
  {"grandridge", 256},
  {"znver1", 256},
  {"znver2", 256},
  {"znver3", 256},
  {"bdver", 256},
  {"btver2", 256},
  {"sandybridge", 256},
  {"ivybridge", 256},
  {"corei7-avx", 256},
  {"core-avx", 256},
  {"x86-64-v3", 256},
  {"x86-64-v2", 128},
  {"x86-64", 128},
  {"nehalem", 128},
  {"westmere", 128},
  {"corei7", 128},
  {"core2", 128},
  {"penryn", 128},
  {"silvermont", 128},
  {"goldmont", 128},
  {"tremont", 128},
  {"btver1", 128},
};

/* The CPU PoCL compiles for, from its device name ("pthread-haswell-AMD
 * EPYC", "cpu-znver3-..."): the text after the driver's prefix. */
static const char *pocl_cpu_name(const kiln_device_info *d)
{
  static const char *const prefixes[] = {"pthread-", "basic-", "cpu-", "cpu-minimal-"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
    size_t n = strlen(prefixes[i]);
    if (strncmp(d->name, prefixes[i], n) == 0)
      return d->name + n;
  }
  return NULL;
}

unsigned kiln__vector_lanes_float(const kiln_device_info *d)
{
  unsigned w = d->native_vector_width_float ? d->native_vector_width_float : 1;
  /* PoCL 3.1 (Debian 12) reports 16 float lanes (native and preferred) for
   * every x86 target it compiles for: `POCL_KERNELLIB_NAME=avx2
   * POCL_LLVM_CPU_NAME=haswell clinfo` on an AVX-512 machine says
   * "pthread-haswell-..." and 16, and so did a real AVX2 machine, where
   * kernels shaped for 16 lanes ran at half the speed of 8 and clang warned
   * that float16 arguments change the ABI. Its target CPU is in the device
   * name: its registers decide. */
  const char *cpu = d->vendor_family == KILN_VENDOR_POCL ? pocl_cpu_name(d) : NULL;
  size_t best = 0;
  unsigned bits = 0;
  for (size_t i = 0; cpu && i < sizeof x86_cpu_bits / sizeof *x86_cpu_bits; i++) {
    size_t n = strlen(x86_cpu_bits[i].cpu);
    if (n > best && strncmp(cpu, x86_cpu_bits[i].cpu, n) == 0) {
      best = n;
      bits = x86_cpu_bits[i].bits;
    }
  }
  return bits && bits / 32 < w ? bits / 32 : w;
}

int kiln__keeps_sub_buffers(const kiln_device_info *d)
{
  /* NVIDIA's driver 580.159.04 on an H200 (OpenCL 3.0 CUDA 13.0) dies with
   * SIGSEGV inside clReleaseMemObject() of a sub-buffer whose parent is
   * alive: ../shared/gpu/h200-2026-11-28/views-gdb.txt (test_buffer_views,
   * kiln__view_destroy) and subbuf.c there, which crashes in plain OpenCL
   * with clFinish() first or not, the parent a bigger block or not. Which
   * order it survives is not known yet: tools/probe-subbuf.c tries each. */
  return d->vendor_family == KILN_VENDOR_NVIDIA;
}

int kiln__blocking_returns_early(const kiln_device_info *d)
{
  /* Mesa 22.3's rusticl (Debian 12) waits in clFinish() and in a blocking
   * command for the last command its queue has not yet handed to its
   * worker thread, and for nothing when there is none. So clFinish() after
   * a clFlush() (kiln's markers flush) returns at once, and a blocking read
   * returns before its data when another thread flushed the queue between
   * the read's enqueue and its wait: 8 threads, each filling its buffer and
   * reading it back blocking on one shared queue while a ninth flushes it,
   * read stale data in 23 of 1600 reads, and in 0 of 1600 waiting for the
   * read's event instead (clWaitForEvents waits for the event itself).
   * Through kiln: a whole GEMM result from another call's data in
   * test_eight_threads_one_runtime (python/tests), and
   * test_threads_blocking_reads (tests/test-threads.c). Later Mesa waits
   * for the queue's last command; one event per blocking call costs
   * nothing measurable, so every rusticl gets the workaround. */
  return d->platform_name && strcmp(d->platform_name, "rusticl") == 0;
}

/* The kinds of device, best first. */
enum device_class {
  CLASS_DISCRETE_GPU = 4,
  CLASS_INTEGRATED_GPU = 3,
  CLASS_ACCELERATOR = 2,
  CLASS_CPU = 1,
  CLASS_OTHER = 0
};

static enum device_class device_class(const kiln_device_info *d)
{
  if (d->type & KILN_DEVICE_GPU)
    return d->integrated ? CLASS_INTEGRATED_GPU : CLASS_DISCRETE_GPU;
  if (d->type & KILN_DEVICE_ACCELERATOR)
    return CLASS_ACCELERATOR;
  if (d->type & KILN_DEVICE_CPU)
    return CLASS_CPU;
  return CLASS_OTHER;
}

static int usable(const kiln_device_info *d)
{
  return d->available && d->compiler_available;
}

/* Compares "bigger wins" keys: negative when a's is bigger. */
#define BIGGER_FIRST(x, y) ((x) > (y) ? -1 : (x) < (y) ? 1 : 0)

/* The keys and their order are documented at kiln_device_compare() in
 * kiln.h; keep the two in step. */
KILN_API int kiln_device_compare(const kiln_device_info *a, const kiln_device_info *b)
{
  int c;
  if ((c = BIGGER_FIRST(usable(a), usable(b))) != 0 ||
      (c = BIGGER_FIRST(!a->is_simulator, !b->is_simulator)) != 0 ||
      (c = BIGGER_FIRST(device_class(a), device_class(b))) != 0 ||
      (c = BIGGER_FIRST(a->peak_gflops, b->peak_gflops)) != 0 ||
      (c = BIGGER_FIRST(a->global_mem_bytes, b->global_mem_bytes)) != 0 ||
      (c = BIGGER_FIRST(a->opencl_version, b->opencl_version)) != 0)
    return c;
  if ((c = strcmp(a->name, b->name)) != 0 ||
      (c = strcmp(a->platform_name, b->platform_name)) != 0 ||
      (c = strcmp(a->driver_version, b->driver_version)) != 0)
    return c < 0 ? -1 : 1;
  if (a->device_index != b->device_index)
    return a->device_index < b->device_index ? -1 : 1;
  return a->platform_index < b->platform_index   ? -1
         : a->platform_index > b->platform_index ? 1
                                                 : 0;
}

KILN_API const char *kiln_device_rank_reasons(const kiln_device_info *d, char *buf,
                                              size_t size)
{
  static const char *const classes[] = {
    [CLASS_DISCRETE_GPU] = "discrete GPU", [CLASS_INTEGRATED_GPU] = "integrated GPU",
    [CLASS_ACCELERATOR] = "accelerator",   [CLASS_CPU] = "CPU",
    [CLASS_OTHER] = "other device",
  };
  char mem[32];
  const char *why = !d->available            ? "not available, "
                    : !d->compiler_available ? "no compiler, "
                    : d->is_simulator        ? "simulator, "
                                             : "";
  snprintf(buf, size, "%s%s, ~%.0f GFLOP/s fp32, %s, OpenCL %u.%u", why,
           classes[device_class(d)], d->peak_gflops,
           kiln__format_bytes(d->global_mem_bytes, mem, sizeof mem),
           d->opencl_version / 100, d->opencl_version / 10 % 10);
  return buf;
}
