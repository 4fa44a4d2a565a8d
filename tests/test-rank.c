/*
 * test-rank.c — how kiln ranks devices: the fields kiln__device_derive()
 * computes from what a driver reports (vendor family, integrated, simulator,
 * OpenCL version, fp32 peak), the order kiln_device_compare() puts devices
 * in, and kiln_device_rank_reasons(). No device needed: the records are of
 * real devices, written from their published figures the way their OpenCL
 * drivers report them.
 */
#include "common.h"

#include "base/util.h"
#include "device/rank.h"
#include "tuning/tuning.h"

#include <math.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define GPU KILN_DEVICE_GPU
#define CPU KILN_DEVICE_CPU

/* One record, in the order clinfo lists the fields: platform name and
 * vendor, device name, vendor and vendor id, version, driver version, type,
 * compute units, max clock (MHz), global memory, max alloc (bytes), native
 * float width, host unified memory, arch major and minor. ROW expands the
 * platform and vendor macros below before ROW_ counts its arguments. */
#define ROW(...) ROW_(__VA_ARGS__)
#define ROW_(pn, pv, n, v, vid, ver, drv, t, cus, mhz, mem, alloc, w, hum, ma, mi)       \
  {                                                                                      \
    .platform_name = pn, .platform_vendor = pv, .platform_version = "", .name = n,       \
    .vendor = v, .vendor_id = vid, .version = ver, .driver_version = drv,                \
    .opencl_c_version = "", .extensions = "", .type = t, .compute_units = cus,           \
    .clock_mhz = mhz, .global_mem_bytes = mem, .max_alloc_bytes = alloc,                 \
    .native_vector_width_float = w, .host_unified_memory = hum, .arch_major = ma,        \
    .arch_minor = mi, .available = 1, .compiler_available = 1                            \
  }

#define NV_CUDA "NVIDIA CUDA", "NVIDIA Corporation"
#define NV_ID "NVIDIA Corporation", 0x10DE
#define AMD_APP "AMD Accelerated Parallel Processing", "Advanced Micro Devices, Inc."
#define AMD_ID "Advanced Micro Devices, Inc.", 0x1002
#define INTEL_GFX "Intel(R) OpenCL Graphics", "Intel(R) Corporation"
#define INTEL_ID "Intel(R) Corporation", 0x8086
#define NEO_MAX_ALLOC 4294959104ull /* Intel NEO: just under 4 GiB */

enum {
  A100_40,
  A100_80,
  RTX_4090,
  GTX_1660S,
  MI250_GCD,
  RX_7900XTX,
  ARC_A770,
  UHD_770,
  APPLE_M2,
  FPGA_EMU,
  POCL_XEON,
  INTEL_CPU,
  OCLGRIND,
  NDEV
};

static const struct real_device {
  const char *label;
  kiln_device_info info;
  kiln_vendor family;
  int integrated;
  unsigned opencl_version;
  double peak; /* GFLOP/s fp32 expected within tol (relative); tol < 0: none */
  double tol;
} devices[NDEV] = {
  /* One device a row, as its sources give it: */
  /* clang-format off */
  /* NVIDIA A100 datasheet (SXM4 40GB, 80GB): 108 SMs, 1410 MHz boost, 19.5
   * TFLOPS fp32; CC 8.0 (CUDA Programming Guide). Memory as CUDA reports it;
   * NVIDIA's OpenCL allows a quarter of it per allocation. */
  [A100_40] = {"A100 40GB", ROW(NV_CUDA, "NVIDIA A100-SXM4-40GB", NV_ID,
    "OpenCL 3.0 CUDA", "535.104.05", GPU, 108, 1410, 40536 * MIB,
    10134 * MIB, 1, 0, 8, 0), KILN_VENDOR_NVIDIA, 0, 300, 19500, .1},
  [A100_80] = {"A100 80GB", ROW(NV_CUDA, "NVIDIA A100-SXM4-80GB", NV_ID,
    "OpenCL 3.0 CUDA", "535.104.05", GPU, 108, 1410, 81154 * MIB,
    20288 * MIB, 1, 0, 8, 0), KILN_VENDOR_NVIDIA, 0, 300, 19500, .1},
  /* NVIDIA RTX 4090 spec page / Ada whitepaper: 128 SMs, 2520 MHz boost,
   * 82.6 TFLOPS fp32, 24 GB GDDR6X; CC 8.9. */
  [RTX_4090] = {"RTX 4090", ROW(NV_CUDA, "NVIDIA GeForce RTX 4090", NV_ID,
    "OpenCL 3.0 CUDA", "550.54.14", GPU, 128, 2520, 24564 * MIB, 6141 * MIB,
    1, 0, 8, 9), KILN_VENDOR_NVIDIA, 0, 300, 82600, .1},
  /* NVIDIA GTX 1660 SUPER spec page: 22 SMs (1408 cores), 1785 MHz boost,
   * ~5.0 TFLOPS fp32, 6 GB GDDR6; CC 7.5 (TU116). */
  [GTX_1660S] = {"GTX 1660 Super", ROW(NV_CUDA,
    "NVIDIA GeForce GTX 1660 SUPER", NV_ID, "OpenCL 3.0 CUDA", "535.154.05",
    GPU, 22, 1785, 5936 * MIB, 1484 * MIB, 1, 0, 7, 5),
    KILN_VENDOR_NVIDIA, 0, 300, 5000, .1},
  /* AMD Instinct MI250 spec sheet: 208 CUs at 1700 MHz peak, 45.3 TFLOPS
   * fp32 vector, 128 GB HBM2e; ROCm shows each GCD as a device of 104 CUs and
   * 64 GiB; gfx90a = GFX IP 9.0 (ROCm "GPU hardware specifications"). */
  [MI250_GCD] = {"MI250 GCD", ROW(AMD_APP, "gfx90a:sramecc+:xnack-", AMD_ID,
    "OpenCL 2.0 ", "3614.0 (HSA1.1,LC)", GPU, 104, 1700, 65520 * MIB,
    55692 * MIB, 1, 0, 9, 0), KILN_VENDOR_AMD, 0, 200, 22650, .1},
  /* AMD RX 7900 XTX spec page: 96 CUs, 2500 MHz boost, 61.4 TFLOPS fp32
   * (dual issue), 24 GB GDDR6; gfx1100 = GFX IP 11.0. */
  [RX_7900XTX] = {"RX 7900 XTX", ROW(AMD_APP, "gfx1100", AMD_ID,
    "OpenCL 2.0 ", "3614.0 (HSA1.1,LC)", GPU, 96, 2500, 24560 * MIB,
    20876 * MIB, 1, 0, 11, 0), KILN_VENDOR_AMD, 0, 200, 61400, .1},
  /* Intel Arc A770 16GB (ark.intel.com): 32 Xe-cores = 512 EUs, 2400 MHz as
   * the NEO driver reports, 19.7 TFLOPS fp32. */
  [ARC_A770] = {"Arc A770", ROW(INTEL_GFX, "Intel(R) Arc(TM) A770 Graphics",
    INTEL_ID, "OpenCL 3.0 NEO ", "23.52.28202.26", GPU, 512, 2400,
    15473 * MIB, NEO_MAX_ALLOC, 1, 0, 0, 0), KILN_VENDOR_INTEL, 0, 300, 19700,
    .1},
  /* Intel UHD Graphics 770 of an i9-12900K (ark.intel.com): 32 EUs, 1550 MHz
   * max dynamic, ~0.79 TFLOPS fp32; shares the host's 32 GB. */
  [UHD_770] = {"UHD 770", ROW(INTEL_GFX, "Intel(R) UHD Graphics 770",
    INTEL_ID, "OpenCL 3.0 NEO ", "23.52.28202.26", GPU, 32, 1550,
    25466 * MIB, NEO_MAX_ALLOC, 1, 1, 0, 0), KILN_VENDOR_INTEL, 1, 300, 794,
    .1},
  /* Apple M2 (apple.com, June 2022): 10-core GPU, 3.6 TFLOPS fp32 at its
   * 1398 MHz GPU clock; a 16 GB Mac, of which the driver offers 2/3. */
  [APPLE_M2] = {"Apple M2", ROW("Apple", "Apple", "Apple M2", "Apple",
    0x1027F00, "OpenCL 1.2 ", "1.2 1.0", GPU, 10, 1398, 10922 * MIB,
    2730 * MIB, 1, 1, 0, 0), KILN_VENDOR_APPLE, 1, 120, 3600, .1},
  /* Intel FPGA Emulation Platform (oneAPI) on the same i9-12900K: an
   * ACCELERATOR run by the CPU, Altera's PCI id. The spec gives no lanes for
   * accelerators, so its peak is not checked. */
  [FPGA_EMU] = {"FPGA emulator", ROW(
    "Intel(R) FPGA Emulation Platform for OpenCL(TM)", "Intel(R) Corporation",
    "Intel(R) FPGA Emulation Device", "Intel(R) Corporation", 0x1172,
    "OpenCL 1.2 ", "2023.16.7.0.21_160000", KILN_DEVICE_ACCELERATOR, 24, 3200,
    31904 * MIB, 7976 * MIB, 8, 1, 0, 0), KILN_VENDOR_INTEL, 0, 120, 0, -1},
  /* PoCL 4 on 2x Xeon Platinum 8380 (ark.intel.com: 40 cores / 80 threads
   * each, 3.4 GHz turbo, AVX-512: float width 16), 512 GB; PoCL up to 4.x
   * reports the CPU's PCI vendor id. Peak by the spec's CPU formula: 160
   * threads x 16 x 2 x 3400 MHz (no vendor figure counts that way). */
  [POCL_XEON] = {"PoCL Xeon", ROW("Portable Computing Language",
    "The pocl project",
    "cpu-icelake-server-Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz",
    "GenuineIntel", 0x8086,
    "OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-icelake-server", "4.0",
    CPU, 160, 3400, 503 * GIB, 251 * GIB, 16, 1, 0, 0),
    KILN_VENDOR_POCL, 1, 300, 17408, 1e-6},
  /* Intel CPU Runtime for OpenCL (oneAPI 2023.2) on an i9-12900K
   * (ark.intel.com: 24 threads, 3.2 GHz P-core base, AVX2: width 8). */
  [INTEL_CPU] = {"Intel CPU", ROW("Intel(R) OpenCL", "Intel(R) Corporation",
    "12th Gen Intel(R) Core(TM) i9-12900K", INTEL_ID, "OpenCL 3.0 (Build 0)",
    "2023.16.7.0.21_160000", CPU, 24, 3200, 31904 * MIB, 7976 * MIB, 8, 1, 0,
    0), KILN_VENDOR_INTEL, 1, 300, 1228.8, 1e-6},
  /* Oclgrind 21.10 (src/runtime/runtime.cpp): type CPU|GPU|ACCELERATOR|
   * DEFAULT, vendor id 0x0042, 1 CU at 1 MHz, 128 MiB, host unified false. */
  [OCLGRIND] = {"Oclgrind", ROW("Oclgrind", "University of Bristol",
    "Oclgrind Simulator", "University of Bristol", 0x0042,
    "OpenCL 1.2 (Oclgrind 21.10)", "Oclgrind 21.10",
    CPU | GPU | KILN_DEVICE_ACCELERATOR | KILN_DEVICE_DEFAULT, 1, 1,
    128 * MIB, 128 * MIB, 1, 0, 0, 0), KILN_VENDOR_OCLGRIND, 1, 120, 0, 0},
  /* clang-format on */
};

/* Best first, from the keys: discrete GPUs by peak (A770 19661 > A100
 * 19492; the two A100s tie on peak and the 80GB has more memory), integrated
 * GPUs by peak, the accelerator, CPUs by peak, the simulator last. */
static const int expected_order[NDEV] = {
  RTX_4090, RX_7900XTX, MI250_GCD, ARC_A770,  A100_80,   A100_40,  GTX_1660S,
  APPLE_M2, UHD_770,    FPGA_EMU,  POCL_XEON, INTEL_CPU, OCLGRIND,
};

/* Derives a copy; the derived fields start as garbage so that derive must
 * write every one of them. */
static kiln_device_info derived(const kiln_device_info *reported)
{
  kiln_device_info d = *reported;
  d.vendor_family = KILN_VENDOR_MESA;
  d.integrated = d.is_simulator = 7;
  d.opencl_version = 999;
  d.peak_gflops = -1;
  kiln__device_derive(&d);
  return d;
}

static void load_all(kiln_device_info out[NDEV])
{
  for (int i = 0; i < NDEV; i++)
    out[i] = derived(&devices[i].info);
}

static int sign(int x)
{
  return (x > 0) - (x < 0);
}

static int cmp_ptr(const void *a, const void *b)
{
  return kiln_device_compare(*(const kiln_device_info *const *)a,
                             *(const kiln_device_info *const *)b);
}

/* A fixed-seed 64-bit LCG (Knuth's MMIX constants): the same shuffles on
 * every run and every libc. */

static void test_rank_derive_real_devices(void **state)
{
  (void)state;
  for (int i = 0; i < NDEV; i++) {
    const struct real_device *r = &devices[i];
    kiln_device_info d = derived(&r->info);
    kiln_device_info z = r->info; /* and from zeroed derived fields */
    kiln__device_derive(&z);
    int sim = r->family == KILN_VENDOR_OCLGRIND;
    if (d.vendor_family != r->family)
      fail_msg("%s: vendor_family %s, expected %s", r->label,
               kiln_vendor_name(d.vendor_family), kiln_vendor_name(r->family));
    if ((d.integrated != 0) != r->integrated || (z.integrated != 0) != r->integrated)
      fail_msg("%s: integrated %d (%d from zero), expected %d", r->label, d.integrated,
               z.integrated, r->integrated);
    if ((d.is_simulator != 0) != sim || (z.is_simulator != 0) != sim)
      fail_msg("%s: is_simulator %d (%d from zero), expected %d", r->label,
               d.is_simulator, z.is_simulator, sim);
    if (d.opencl_version != r->opencl_version)
      fail_msg("%s: opencl_version %u from '%s', expected %u", r->label, d.opencl_version,
               d.version, r->opencl_version);
    if (r->tol >= 0 && !(fabs(d.peak_gflops - r->peak) <= r->tol * r->peak))
      fail_msg("%s: peak %.1f GFLOP/s, expected %.1f within %g%%", r->label,
               d.peak_gflops, r->peak, r->tol * 100);
  }
}

static void test_rank_vendor_family_rules(void **state)
{
  (void)state;
  static const struct {
    const char *platform, *platform_vendor, *vendor;
    uint32_t vendor_id;
    kiln_vendor want;
  } cases[] = {
    /* The platform first, whatever the vendor id says. PoCL 5+ reports its
     * Khronos vendor id 0x10006, older PoCL the CPU's. */
    {"Oclgrind", "University of Bristol", "University of Bristol", 0x0042,
     KILN_VENDOR_OCLGRIND},
    {"Portable Computing Language", "The pocl project", "GenuineIntel", 0x8086,
     KILN_VENDOR_POCL},
    {"Portable Computing Language", "The pocl project", "GenuineIntel", 0x10006,
     KILN_VENDOR_POCL},
    {"PoCL remote", "The pocl project", "NVIDIA Corporation", 0x10DE, KILN_VENDOR_POCL},
    {"Clover", "Mesa", "AMD", 0x1002, KILN_VENDOR_MESA},
    {"rusticl", "Mesa/X.org", "AMD", 0x1002, KILN_VENDOR_MESA},
    {"rusticl", "Mesa/X.org", "Intel", 0x8086, KILN_VENDOR_MESA},
    /* Then the vendor id. */
    {"NVIDIA CUDA", "", "", 0x10DE, KILN_VENDOR_NVIDIA},
    {"AMD Accelerated Parallel Processing", "", "", 0x1002, KILN_VENDOR_AMD},
    {"AMD Accelerated Parallel Processing", "", "", 0x1022, KILN_VENDOR_AMD},
    {"Intel(R) OpenCL", "", "", 0x8086, KILN_VENDOR_INTEL},
    {"ARM Platform", "", "", 0x13B5, KILN_VENDOR_ARM},
    {"QUALCOMM Snapdragon(TM)", "", "", 0x5143, KILN_VENDOR_QUALCOMM},
    {"PowerVR", "", "", 0x1010, KILN_VENDOR_IMAGINATION},
    /* Then the vendor string, in any case. */
    {"", "", "NVIDIA Corporation", 0, KILN_VENDOR_NVIDIA},
    {"", "", "nvidia", 0, KILN_VENDOR_NVIDIA},
    {"", "", "Advanced Micro Devices, Inc.", 0, KILN_VENDOR_AMD},
    {"", "", "AuthenticAMD", 0, KILN_VENDOR_AMD},
    {"", "", "Intel(R) Corporation", 0, KILN_VENDOR_INTEL},
    {"", "", "GenuineIntel", 0, KILN_VENDOR_INTEL},
    {"Apple", "Apple", "Apple", 0x1027F00, KILN_VENDOR_APPLE},
    {"", "", "ARM", 0, KILN_VENDOR_ARM},
    {"", "", "arm", 0, KILN_VENDOR_ARM},
    {"", "", "Qualcomm", 0, KILN_VENDOR_QUALCOMM},
    {"", "", "Imagination Technologies", 0, KILN_VENDOR_IMAGINATION},
    /* Nothing known. */
    {"Xilinx", "Xilinx", "Xilinx", 0x10EE, KILN_VENDOR_OTHER},
    {"University of Bristol", "", "University of Bristol", 0x0042, KILN_VENDOR_OTHER},
    {"", "", "", 0, KILN_VENDOR_OTHER},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_device_info info =
      ROW(cases[i].platform, cases[i].platform_vendor, "", cases[i].vendor,
          cases[i].vendor_id, "", "", GPU, 1, 1000, 0, 0, 1, 0, 0, 0);
    kiln_device_info d = derived(&info);
    if (d.vendor_family != cases[i].want)
      fail_msg("platform '%s' / '%s', vendor '%s', id 0x%X: %s, expected %s",
               cases[i].platform, cases[i].platform_vendor, cases[i].vendor,
               (unsigned)cases[i].vendor_id, kiln_vendor_name(d.vendor_family),
               kiln_vendor_name(cases[i].want));
    assert_int_equal(d.is_simulator != 0, cases[i].want == KILN_VENDOR_OCLGRIND);
  }
}

/* integrated = a CPU, or a GPU with host unified memory, or Apple. */
static void test_rank_integrated_rule(void **state)
{
  (void)state;
  static const struct {
    int dev;
    uint64_t type; /* 0: as reported */
    int unified, want;
    const char *what;
  } cases[] = {
    {RTX_4090, 0, 0, 0, "discrete GPU"},
    {RTX_4090, 0, 1, 1, "GPU with host unified memory"},
    {INTEL_CPU, 0, 0, 1, "CPU whose driver leaves the flag false"},
    {APPLE_M2, 0, 0, 1, "Apple GPU whose driver leaves the flag false"},
    {OCLGRIND, GPU, 0, 0, "Oclgrind as a GPU alone"},
    {FPGA_EMU, 0, 1, 0, "accelerator with host unified memory"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_device_info info = devices[cases[i].dev].info;
    if (cases[i].type)
      info.type = cases[i].type;
    info.host_unified_memory = cases[i].unified;
    kiln_device_info d = derived(&info);
    if ((d.integrated != 0) != cases[i].want)
      fail_msg("%s: integrated %d, expected %d", cases[i].what, d.integrated,
               cases[i].want);
  }
}

static void test_rank_opencl_version_parse(void **state)
{
  (void)state;
  static const struct {
    const char *version;
    unsigned want;
  } cases[] = {
    {"OpenCL 3.0 CUDA", 300},
    {"OpenCL 2.0 ", 200},
    {"OpenCL 1.2 ", 120},
    {"OpenCL 3.0 NEO ", 300},
    {"OpenCL 1.1 Mesa 23.2.1", 110},
    {"OpenCL 2.1 AMD-APP (3614.0)", 210},
    {"OpenCL 1.0", 100},
    {"OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-haswell", 300},
    {"OpenCL 1.2 (Oclgrind 21.10)", 120},
    {"OpenCL 3.0 (Build 0)", 300},
    {"", 0},
    {"OpenCL", 0},
    {"OpenCL ", 0},
    {"OpenCL x.y", 0},
    {"OpenCL C 1.2", 0},
    {"CUDA 12.2", 0},
    {"3.0", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_device_info info = devices[A100_40].info;
    info.version = cases[i].version;
    kiln_device_info d = derived(&info);
    if (d.opencl_version != cases[i].want)
      fail_msg("'%s' gave %u, expected %u", cases[i].version, d.opencl_version,
               cases[i].want);
  }
}

static void test_rank_peak_lanes_per_vendor(void **state)
{
  (void)state;
  /* A real device of each architecture (CUs and clocks from the vendors'
   * spec pages) and the lanes per compute unit the spec gives it. */
  static const struct {
    const char *what, *platform, *vendor;
    uint32_t vendor_id, type, cus, mhz, width, major, minor, lanes;
  } cases[] = {
#define NV_GPU "NVIDIA CUDA", "NVIDIA Corporation", 0x10DE, GPU
#define AMD_GPU "AMD Accelerated Parallel Processing", "AMD", 0x1002, GPU
    {"Tesla K40 (3.5)", NV_GPU, 15, 875, 1, 3, 5, 192},
    {"GTX 980 (5.2)", NV_GPU, 16, 1216, 1, 5, 2, 128},
    {"Tesla P100 (6.0)", NV_GPU, 56, 1480, 1, 6, 0, 64},
    {"GTX 1080 (6.1)", NV_GPU, 20, 1733, 1, 6, 1, 128},
    {"Jetson TX2 (6.2)", NV_GPU, 2, 1300, 1, 6, 2, 128},
    {"Tesla V100 (7.0)", NV_GPU, 80, 1530, 1, 7, 0, 64},
    {"Tesla T4 (7.5)", NV_GPU, 40, 1590, 1, 7, 5, 64},
    {"RTX 3090 (8.6)", NV_GPU, 82, 1695, 1, 8, 6, 128},
    {"H100 SXM (9.0)", NV_GPU, 132, 1980, 1, 9, 0, 128},
    {"NVIDIA without a CC", NV_GPU, 128, 2520, 1, 0, 0, 128},
    {"RX 6900 XT (gfx1030)", AMD_GPU, 80, 2250, 1, 10, 3, 64},
    {"RX 9070 XT (gfx1201)", AMD_GPU, 64, 2970, 1, 12, 0, 128},
    {"AMD without a GFX IP", AMD_GPU, 60, 1800, 1, 0, 0, 64},
#undef NV_GPU
#undef AMD_GPU
    {"Iris Xe, 96 EUs", "Intel(R) OpenCL Graphics", "Intel(R) Corporation", 0x8086, GPU,
     96, 1300, 1, 0, 0, 8},
    {"Apple M1 Max", "Apple", "Apple", 0x1027F00, GPU, 32, 1296, 1, 0, 0, 128},
    {"Mali-G710 MC10", "ARM Platform", "ARM", 0x13B5, GPU, 10, 850, 4, 0, 0, 16},
    {"Adreno 740", "QUALCOMM Snapdragon(TM)", "QUALCOMM", 0x5143, GPU, 6, 680, 1, 0, 0,
     64},
    {"PowerVR BXM-8-256", "PowerVR", "Imagination Technologies", 0x1010, GPU, 1, 950, 1,
     0, 0, 32},
    {"rusticl on RX 7900 XTX", "rusticl", "AMD", 0x1002, GPU, 96, 2500, 1, 11, 0, 64},
    {"Moore Threads MTT S80", "MUSA", "Moore Threads", 0x1ED5, GPU, 32, 1800, 1, 0, 0,
     64},
    /* Any CPU: the native float width, at least 1. */
    {"AMD APP on a Ryzen 9 7950X", "AMD Accelerated Parallel Processing", "AuthenticAMD",
     0x1002, CPU, 32, 5700, 16, 0, 0, 16},
    {"PoCL on a Cortex-A76, width 0", "Portable Computing Language", "ARM", 0x13B5, CPU,
     4, 2400, 0, 0, 0, 1},
  /* PoCL reports 16 whatever it compiles for; its target's registers count. */
#define POCL "Portable Computing Language", "GenuineIntel", 0x8086, CPU
    {"pthread-haswell-Intel(R) Xeon(R) CPU E5-2680 v3", POCL, 24, 2500, 16, 0, 0, 8},
    {"pthread-skylake-avx512-Intel(R) Xeon(R) Gold 6154", POCL, 36, 3000, 16, 0, 0, 16},
    {"pthread-skylake-Intel(R) Core(TM) i7-6700", POCL, 8, 3400, 16, 0, 0, 8},
    {"cpu-znver3-AMD EPYC 7763", POCL, 128, 2450, 16, 0, 0, 8},
    {"cpu-znver4-AMD Ryzen 9 7950X", POCL, 32, 4500, 16, 0, 0, 16},
    {"basic-x86-64-v2-QEMU Virtual CPU", POCL, 2, 2000, 16, 0, 0, 4},
    {"pthread-haswell-..., width 4", POCL, 2, 2000, 4, 0, 0, 4},
    {"pthread-a-cpu-llvm-names-later", POCL, 2, 2000, 16, 0, 0, 16},
#undef POCL
    /* Another platform's name is no PoCL target. */
    {"pthread-haswell on Intel's CPU runtime", "Intel(R) OpenCL", "Intel(R) Corporation",
     0x8086, CPU, 8, 3000, 8, 0, 0, 8},
    /* Simulators: no peak, however many units they claim. */
    {"Oclgrind, 8 CUs", "Oclgrind", "University of Bristol", 0x0042, GPU, 8, 1000, 1, 0,
     0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_device_info info =
      ROW(cases[i].platform, "", cases[i].what, cases[i].vendor, cases[i].vendor_id,
          "OpenCL 3.0 ", "", cases[i].type, cases[i].cus, cases[i].mhz, 0, 0,
          cases[i].width, 0, cases[i].major, cases[i].minor);
    kiln_device_info d = derived(&info);
    double want = (double)cases[i].cus * cases[i].lanes * 2 * cases[i].mhz;
    want /= 1000;
    if (!(fabs(d.peak_gflops - want) <= 1e-9 * want))
      fail_msg("%s: peak %.2f GFLOP/s, expected %.2f (%u lanes per CU)", cases[i].what,
               d.peak_gflops, want, (unsigned)cases[i].lanes);
  }
}

/* The CPU rules shape GEMM's register tile by the target's vectors: 16
 * lanes and 8 rows where there are 32 registers (AVX-512), 8 lanes and 6
 * rows in AVX2's 16; the reduction's options say the same lanes, and f64
 * takes half. Whatever the driver reports as its native width. */
static void test_rank_cpu_rules_follow_the_target(void **state)
{
  (void)state;
  static const struct {
    const char *name;
    unsigned vw, tm, lanes;
  } cases[] = {
    {"pthread-skylake-avx512-Intel(R) Xeon(R) Gold 6154", 16, 8, 16},
    {"pthread-haswell-Intel(R) Xeon(R) CPU E5-2680 v3", 8, 6, 8},
    {"cpu-znver3-AMD EPYC 7763", 8, 6, 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_device_info info =
      ROW("Portable Computing Language", "", cases[i].name, "GenuineIntel", 0x8086,
          "OpenCL 3.0 ", "", CPU, 4, 3000, 8 * GIB, 2 * GIB, 16, 1, 0, 0);
    info.global_mem_cache_bytes = 32 * MIB;
    info.max_work_group_size = 4096;
    kiln__device_derive(&info);
    kiln__tuning t;
    kiln__tuning_defaults(&info, &t);
    const kiln__gemm_tuning *f32 = &t.gemm[KILN__GEMM_F32],
                            *f64 = &t.gemm[KILN__GEMM_F64];
    if (f32->vw != cases[i].vw || f32->tm != cases[i].tm || f64->vw != cases[i].vw / 2)
      fail_msg("%s: gemm f32 vw %u tm %u, f64 vw %u; expected %u, %u, %u", cases[i].name,
               f32->vw, f32->tm, f64->vw, cases[i].vw, cases[i].tm, cases[i].vw / 2);
    kiln__str opts = {0};
    kiln__builtin_options(&info, &t, "reduce", &opts);
    char want[64];
    snprintf(want, sizeof want, "-DKILN_REDUCE_LANES=%u ", cases[i].lanes);
    if (!opts.data || !strstr(opts.data, want))
      fail_msg("%s: reduce's options '%s' lack '%s'", cases[i].name,
               opts.data ? opts.data : "", want);
    kiln__str_free(&opts);
  }
}

static void test_rank_winners_of_mixtures(void **state)
{
  (void)state;
#define BIT(x) (1u << (x))
  static const struct {
    const char *what;
    uint32_t members;
    int winner;
  } mixes[] = {
    {"everything", BIT(NDEV) - 1, RTX_4090},
    {"iGPU + PoCL (class beats peak)", BIT(UHD_770) | BIT(POCL_XEON), UHD_770},
    {"Arc + its host's iGPU", BIT(ARC_A770) | BIT(UHD_770), ARC_A770},
    {"MI250 GCD + A100 (peak)", BIT(MI250_GCD) | BIT(A100_40), MI250_GCD},
    {"Arc A770 + A100 (peak)", BIT(ARC_A770) | BIT(A100_40), ARC_A770},
    {"A100 80GB + 40GB (memory)", BIT(A100_40) | BIT(A100_80), A100_80},
    {"4090 + 7900 XTX", BIT(RTX_4090) | BIT(RX_7900XTX), RTX_4090},
    {"1660 Super + M2 + UHD 770 (discrete)",
     BIT(GTX_1660S) | BIT(APPLE_M2) | BIT(UHD_770), GTX_1660S},
    {"M2 + Oclgrind", BIT(APPLE_M2) | BIT(OCLGRIND), APPLE_M2},
    {"PoCL + Oclgrind", BIT(POCL_XEON) | BIT(OCLGRIND), POCL_XEON},
    {"two CPU runtimes (peak)", BIT(POCL_XEON) | BIT(INTEL_CPU), POCL_XEON},
    {"oneAPI on a desktop", BIT(UHD_770) | BIT(FPGA_EMU) | BIT(INTEL_CPU), UHD_770},
    {"FPGA emulator + CPUs (class)", BIT(FPGA_EMU) | BIT(INTEL_CPU) | BIT(POCL_XEON),
     FPGA_EMU},
    {"Oclgrind alone", BIT(OCLGRIND), OCLGRIND},
  };
#undef BIT
  kiln_device_info all[NDEV];
  load_all(all);
  for (size_t m = 0; m < sizeof mixes / sizeof mixes[0]; m++) {
    int best = -1;
    for (int i = 0; i < NDEV; i++)
      if ((mixes[m].members >> i & 1) &&
          (best < 0 || kiln_device_compare(&all[i], &all[best]) < 0))
        best = i;
    if (best != mixes[m].winner)
      fail_msg("%s: %s won, expected %s", mixes[m].what, devices[best].label,
               devices[mixes[m].winner].label);
    for (int i = 0; i < NDEV; i++)
      if ((mixes[m].members >> i & 1) && i != best &&
          kiln_device_compare(&all[best], &all[i]) >= 0)
        fail_msg("%s: %s does not rank before %s", mixes[m].what, devices[best].label,
                 devices[i].label);
  }
}

/* Sorts the records in the order given and checks the result. */
static void check_sorted(const kiln_device_info *all, const int *order, const char *how)
{
  const kiln_device_info *p[NDEV];
  for (int i = 0; i < NDEV; i++)
    p[i] = &all[order[i]];
  qsort(p, NDEV, sizeof p[0], cmp_ptr);
  for (int i = 0; i < NDEV; i++)
    if (p[i] != &all[expected_order[i]])
      fail_msg("%s: place %d is %s, expected %s", how, i + 1, devices[p[i] - all].label,
               devices[expected_order[i]].label);
}

static void test_rank_full_order(void **state)
{
  (void)state;
  kiln_device_info all[NDEV];
  load_all(all);
  int order[NDEV];
  for (int i = 0; i < NDEV; i++)
    order[i] = i;
  check_sorted(all, order, "table order");
}

static void test_rank_order_ignores_input_order(void **state)
{
  (void)state;
  kiln_device_info all[NDEV];
  load_all(all);
  int order[NDEV];
  char how[64];
  uint64_t seed = 20240601;
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < NDEV; i++) /* round 0: reversed */
      order[i] = NDEV - 1 - i;
    for (int i = NDEV - 1; round > 0 && i > 0; i--) { /* Fisher-Yates */
      int j = (int)((uint32_t)(kiln_test_random(&seed) >> 22) % (uint32_t)(i + 1));
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    /* Nor does where the ICD loader lists the platforms matter. */
    for (int i = 0; i < NDEV; i++)
      all[i].platform_index = round & 1 ? (unsigned)(NDEV - i) : 0;
    snprintf(how, sizeof how, "shuffle %d", round);
    check_sorted(all, order, how);
  }
}

/* Fails unless `low` ranks below every device of the table but `skip`. */
static void check_below_all(const kiln_device_info *all, const kiln_device_info *low,
                            int skip, const char *what)
{
  for (int i = 0; i < NDEV; i++)
    if (i != skip && (kiln_device_compare(&all[i], low) >= 0 ||
                      kiln_device_compare(low, &all[i]) <= 0))
      fail_msg("%s does not rank below %s", what, devices[i].label);
}

static void test_rank_simulator_last(void **state)
{
  (void)state;
  kiln_device_info all[NDEV];
  load_all(all);
  check_below_all(all, &all[OCLGRIND], OCLGRIND, "Oclgrind (every type bit)");
  kiln_device_info gpu_only = devices[OCLGRIND].info;
  gpu_only.type = GPU;
  gpu_only = derived(&gpu_only);
  check_below_all(all, &gpu_only, OCLGRIND, "Oclgrind as a GPU alone");
}

static void test_rank_unusable_below_pocl(void **state)
{
  (void)state;
  kiln_device_info all[NDEV];
  load_all(all);
  /* Usable is the first key, before "not a simulator": even Oclgrind wins. */
  kiln_device_info off = all[RTX_4090], nocc = all[RTX_4090];
  off.available = 0;
  nocc.compiler_available = 0;
  check_below_all(all, &off, -1, "an unavailable RTX 4090");
  check_below_all(all, &nocc, -1, "an RTX 4090 without a compiler");
}

static void test_rank_later_keys_and_tie_breaks(void **state)
{
  (void)state;
  /* The two GCDs of one MI250: identical but for device_index. */
  kiln_device_info gcd0 = derived(&devices[MI250_GCD].info), gcd1 = gcd0;
  gcd1.device_index = 1;
  assert_true(kiln_device_compare(&gcd0, &gcd1) < 0);
  assert_true(kiln_device_compare(&gcd1, &gcd0) > 0);
  kiln_device_info copy = gcd0; /* another address: equal, no pointer key */
  assert_int_equal(kiln_device_compare(&gcd0, &copy), 0);

  /* The same 1660 Super under a driver that reports OpenCL 1.2: same peak
   * and memory, so the OpenCL version decides. */
  kiln_device_info cl30 = derived(&devices[GTX_1660S].info);
  kiln_device_info cl12 = devices[GTX_1660S].info;
  cl12.version = "OpenCL 1.2 CUDA";
  cl12.driver_version = "460.91.03";
  cl12 = derived(&cl12);
  assert_int_equal(cl12.opencl_version, 120);
  assert_true(kiln_device_compare(&cl30, &cl12) < 0);
  assert_true(kiln_device_compare(&cl12, &cl30) > 0);

  /* Records equal but for one string or platform_index are ordered one way
   * or the other, consistently. */
  kiln_device_info base = derived(&devices[RTX_4090].info);
  kiln_device_info v[4] = {base, base, base, base};
  v[0].name = "NVIDIA GeForce RTX 4090 D";
  v[1].platform_name = "NVIDIA CUDA (second ICD)";
  v[2].driver_version = "555.42.02";
  v[3].platform_index = 1;
  for (int i = 0; i < 4; i++) {
    v[i] = derived(&v[i]);
    int ab = kiln_device_compare(&base, &v[i]);
    int ba = kiln_device_compare(&v[i], &base);
    if (ab == 0 || sign(ab) != -sign(ba))
      fail_msg("tie-break %d: cmp %d one way, %d the other", i, ab, ba);
  }
}

static void test_rank_antisymmetric_and_transitive(void **state)
{
  (void)state;
  enum { N = NDEV + 4 };
  kiln_device_info s[N];
  load_all(s);
  s[NDEV] = s[MI250_GCD]; /* the second GCD */
  s[NDEV].device_index = 1;
  s[NDEV + 1] = s[NDEV + 2] = s[RTX_4090];
  s[NDEV + 1].available = 0;
  s[NDEV + 2].compiler_available = 0;
  s[NDEV + 2].device_index = 1;
  s[NDEV + 3] = devices[OCLGRIND].info;
  s[NDEV + 3].type = GPU;
  s[NDEV + 3] = derived(&s[NDEV + 3]);
  int c[N][N];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      c[i][j] = sign(kiln_device_compare(&s[i], &s[j]));
  for (int i = 0; i < N; i++) {
    if (c[i][i] != 0)
      fail_msg("record %d does not compare equal to itself", i);
    for (int j = 0; j < N; j++) {
      if (c[i][j] != -c[j][i])
        fail_msg("records %d, %d: cmp %d one way, %d the other", i, j, c[i][j], c[j][i]);
      for (int k = 0; k < N; k++)
        if (c[i][j] < 0 && c[j][k] < 0 && c[i][k] >= 0)
          fail_msg("records %d < %d < %d, but not %d < %d", i, j, k, i, k);
    }
  }
}

static void test_rank_reasons(void **state)
{
  (void)state;
  kiln_device_info all[NDEV];
  load_all(all);
  static const struct {
    int dev, available, compiler;
    const char *needle;
  } cases[] = {
    {RTX_4090, 1, 1, "discrete GPU"},  {A100_40, 1, 1, "discrete GPU"},
    {UHD_770, 1, 1, "integrated GPU"}, {APPLE_M2, 1, 1, "integrated GPU"},
    {POCL_XEON, 1, 1, "CPU"},          {INTEL_CPU, 1, 1, "CPU"},
    {OCLGRIND, 1, 1, "simulator"},     {RTX_4090, 0, 1, "not available"},
    {RTX_4090, 1, 0, "no compiler"}, /* kiln.h names this prefix too */
  };
  char buf[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_device_info d = all[cases[i].dev];
    d.available = cases[i].available;
    d.compiler_available = cases[i].compiler;
    assert_ptr_equal(kiln_device_rank_reasons(&d, buf, sizeof buf), buf);
    if (!strstr(buf, cases[i].needle))
      fail_msg("%s (available %d, compiler %d): '%s' does not mention '%s'",
               devices[cases[i].dev].label, cases[i].available, cases[i].compiler, buf,
               cases[i].needle);
  }
  /* A tiny buffer is cut short, NUL-terminated, and not overrun. */
  static const size_t sizes[] = {8, 1};
  for (size_t s = 0; s < 2; s++) {
    char small[32];
    memset(small, 'X', sizeof small);
    const char *r = kiln_device_rank_reasons(&all[RTX_4090], small, sizes[s]);
    assert_ptr_equal(r, small);
    assert_non_null(memchr(small, '\0', sizes[s]));
    for (size_t i = sizes[s]; i < sizeof small; i++)
      if (small[i] != 'X')
        fail_msg("size %zu: byte %zu was written", sizes[s], i);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rank_derive_real_devices),
    cmocka_unit_test(test_rank_vendor_family_rules),
    cmocka_unit_test(test_rank_integrated_rule),
    cmocka_unit_test(test_rank_opencl_version_parse),
    cmocka_unit_test(test_rank_peak_lanes_per_vendor),
    cmocka_unit_test(test_rank_winners_of_mixtures),
    cmocka_unit_test(test_rank_full_order),
    cmocka_unit_test(test_rank_order_ignores_input_order),
    cmocka_unit_test(test_rank_simulator_last),
    cmocka_unit_test(test_rank_unusable_below_pocl),
    cmocka_unit_test(test_rank_later_keys_and_tie_breaks),
    cmocka_unit_test(test_rank_antisymmetric_and_transitive),
    cmocka_unit_test(test_rank_reasons),
    cmocka_unit_test(test_rank_cpu_rules_follow_the_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
