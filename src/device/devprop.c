/*
 * devprop.c — the property tables built from device_props.def, and how each
 * value is written: raw exactly as `clinfo --raw` prints it (so the two can
 * be compared field by field), and human as clinfo's default report does.
 *
 * Formatting happens once, when a device is found, so the library, `kiln
 * info` and its JSON all show the same text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/devprop.h"

/* ---- the tables ------------------------------------------------------------ */

#define KILN_DEVICE_PROP(param, label, kind, field, required, needs, since, show, unit)  \
  {param,    #param, label, kind, offsetof(kiln__device, field),                         \
   required, needs,  since, show, unit},
#define KILN_DEVICE_SHOW(param, label, kind, needs, since, show, unit)                   \
  {param, #param, label, kind, KILN__NO_FIELD, 0, needs, since, show, unit},
#define KILN_PLATFORM_PROP(param, label, kind, field, required, needs, since, show, unit)
#define KILN_PLATFORM_SHOW(param, label, kind, needs, since, show, unit)
const kiln__row kiln__device_rows[] = {
#include "device/device_props.def"
};
#undef KILN_DEVICE_PROP
#undef KILN_DEVICE_SHOW
#undef KILN_PLATFORM_PROP
#undef KILN_PLATFORM_SHOW

#define KILN_DEVICE_PROP(param, label, kind, field, required, needs, since, show, unit)
#define KILN_DEVICE_SHOW(param, label, kind, needs, since, show, unit)
#define KILN_PLATFORM_PROP(param, label, kind, field, required, needs, since, show,      \
                           unit)                                                         \
  {param,    #param, label, kind, offsetof(kiln__platform, field),                       \
   required, needs,  since, show, unit},
#define KILN_PLATFORM_SHOW(param, label, kind, needs, since, show, unit)                 \
  {param, #param, label, kind, KILN__NO_FIELD, 0, needs, since, show, unit},
const kiln__row kiln__platform_rows[] = {
#include "device/device_props.def"
};
#undef KILN_DEVICE_PROP
#undef KILN_DEVICE_SHOW
#undef KILN_PLATFORM_PROP
#undef KILN_PLATFORM_SHOW

const size_t kiln__device_row_count = KILN__COUNT(kiln__device_rows);
const size_t kiln__platform_row_count = KILN__COUNT(kiln__platform_rows);

/* ---- names of bits and enum values ------------------------------------------ */

typedef struct value_name {
  uint64_t value;
  const char *raw;   /* the CL name */
  const char *human; /* a few words */
} value_name;

#define NAME(v, human)                                                                   \
  {                                                                                      \
    v, #v, human                                                                         \
  }

/* clinfo lists device types from the highest bit down. */
static const value_name device_types[] = {
  NAME(CL_DEVICE_TYPE_CUSTOM, "Custom"),
  NAME(CL_DEVICE_TYPE_ACCELERATOR, "Accelerator"),
  NAME(CL_DEVICE_TYPE_GPU, "GPU"),
  NAME(CL_DEVICE_TYPE_CPU, "CPU"),
  NAME(CL_DEVICE_TYPE_DEFAULT, "Default"),
};
#define FP_CONFIG_NAMES                                                                  \
  NAME(CL_FP_DENORM, "denormals"), NAME(CL_FP_INF_NAN, "infinity and NaN"),              \
    NAME(CL_FP_ROUND_TO_NEAREST, "round to nearest"),                                    \
    NAME(CL_FP_ROUND_TO_ZERO, "round to zero"),                                          \
    NAME(CL_FP_ROUND_TO_INF, "round to infinity"),                                       \
    NAME(CL_FP_FMA, "fused multiply-add"),                                               \
    NAME(CL_FP_SOFT_FLOAT, "emulated in software")
static const value_name fp_single_configs[] = {
  FP_CONFIG_NAMES,
  NAME(CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, "correctly rounded divide and sqrt"),
};
/* OpenCL defines the correctly-rounded bit for single precision only; a
 * driver that sets it for double (PoCL does) gets it ignored, as clinfo
 * ignores it. A name without text is known but not shown. */
static const value_name fp_configs[] = {
  FP_CONFIG_NAMES,
  {CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, NULL, NULL},
};
static const value_name queue_props[] = {
  NAME(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, "out-of-order execution"),
  NAME(CL_QUEUE_PROFILING_ENABLE, "profiling"),
};
static const value_name exec_caps[] = {
  NAME(CL_EXEC_KERNEL, "OpenCL kernels"),
  NAME(CL_EXEC_NATIVE_KERNEL, "native kernels"),
};
static const value_name svm_caps[] = {
  NAME(CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, "coarse-grained buffer"),
  NAME(CL_DEVICE_SVM_FINE_GRAIN_BUFFER, "fine-grained buffer"),
  NAME(CL_DEVICE_SVM_FINE_GRAIN_SYSTEM, "fine-grained system"),
  NAME(CL_DEVICE_SVM_ATOMICS, "atomics"),
};
static const value_name atomic_caps[] = {
  NAME(CL_DEVICE_ATOMIC_ORDER_RELAXED, "relaxed"),
  NAME(CL_DEVICE_ATOMIC_ORDER_ACQ_REL, "acquire/release"),
  NAME(CL_DEVICE_ATOMIC_ORDER_SEQ_CST, "sequentially consistent"),
  NAME(CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM, "work-item scope"),
  NAME(CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP, "work-group scope"),
  NAME(CL_DEVICE_ATOMIC_SCOPE_DEVICE, "device scope"),
  NAME(CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES, "all-devices scope"),
};
static const value_name enqueue_caps[] = {
  NAME(CL_DEVICE_QUEUE_SUPPORTED, "supported"),
  NAME(CL_DEVICE_QUEUE_REPLACEABLE_DEFAULT, "replaceable default queue"),
};
static const value_name affinity_domains[] = {
  NAME(CL_DEVICE_AFFINITY_DOMAIN_NUMA, "NUMA"),
  NAME(CL_DEVICE_AFFINITY_DOMAIN_L4_CACHE, "L4 cache"),
  NAME(CL_DEVICE_AFFINITY_DOMAIN_L3_CACHE, "L3 cache"),
  NAME(CL_DEVICE_AFFINITY_DOMAIN_L2_CACHE, "L2 cache"),
  NAME(CL_DEVICE_AFFINITY_DOMAIN_L1_CACHE, "L1 cache"),
  NAME(CL_DEVICE_AFFINITY_DOMAIN_NEXT_PARTITIONABLE, "next partitionable"),
};
static const value_name command_buffer_caps[] = {
  NAME(CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR, "kernel printf"),
  NAME(CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR, "device-side enqueue"),
  NAME(CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR, "simultaneous use"),
  NAME(CL_COMMAND_BUFFER_CAPABILITY_OUT_OF_ORDER_KHR, "out of order"),
};
static const value_name cache_types[] = {
  NAME(CL_NONE, "None"),
  NAME(CL_READ_ONLY_CACHE, "Read-only"),
  NAME(CL_READ_WRITE_CACHE, "Read/write"),
};
static const value_name local_mem_types[] = {
  NAME(CL_NONE, "None"),
  NAME(CL_LOCAL, "Local"),
  NAME(CL_GLOBAL, "Global"),
};
static const value_name partition_types[] = {
  NAME(CL_NONE, "None"),
  NAME(CL_DEVICE_PARTITION_EQUALLY, "equally"),
  NAME(CL_DEVICE_PARTITION_BY_COUNTS, "by counts"),
  NAME(CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN, "by affinity domain"),
};

/* ---- how each `show` writes its value ---------------------------------------- */

typedef enum style {
  TEXT,
  DEC,
  HEX,
  MEM,
  YESNO,
  VERSION,
  NAMEVERS,
  LIST,
  ALIGN,
  BITFIELD,
  ENUM,
  ENUMS
} style;

static const struct {
  style style;
  const value_name *names;
  size_t count;
} shows[AS_COUNT_] = {
  [AS_TEXT] = {TEXT, NULL, 0},
  [AS_DEC] = {DEC, NULL, 0},
  [AS_HEX] = {HEX, NULL, 0},
  [AS_MEM] = {MEM, NULL, 0},
  [AS_BOOL] = {YESNO, NULL, 0},
  [AS_VERSION] = {VERSION, NULL, 0},
  [AS_NAMEVER] = {NAMEVERS, NULL, 0},
  [AS_SIZES] = {LIST, NULL, 0},
  [AS_ALIGN] = {ALIGN, NULL, 0},
  [AS_DEVTYPE] = {BITFIELD, device_types, KILN__COUNT(device_types)},
  [AS_FP] = {BITFIELD, fp_configs, KILN__COUNT(fp_configs)},
  [AS_FP_SINGLE] = {BITFIELD, fp_single_configs, KILN__COUNT(fp_single_configs)},
  [AS_QUEUE] = {BITFIELD, queue_props, KILN__COUNT(queue_props)},
  [AS_EXEC] = {BITFIELD, exec_caps, KILN__COUNT(exec_caps)},
  [AS_SVM] = {BITFIELD, svm_caps, KILN__COUNT(svm_caps)},
  [AS_ATOMIC] = {BITFIELD, atomic_caps, KILN__COUNT(atomic_caps)},
  [AS_ENQUEUE] = {BITFIELD, enqueue_caps, KILN__COUNT(enqueue_caps)},
  [AS_AFFINITY] = {BITFIELD, affinity_domains, KILN__COUNT(affinity_domains)},
  [AS_CMDBUF] = {BITFIELD, command_buffer_caps, KILN__COUNT(command_buffer_caps)},
  [AS_CACHE] = {ENUM, cache_types, KILN__COUNT(cache_types)},
  [AS_LMEM] = {ENUM, local_mem_types, KILN__COUNT(local_mem_types)},
  [AS_PARTITION] = {ENUMS, partition_types, KILN__COUNT(partition_types)},
};

typedef unsigned long long ull;

/* A scalar of any kind, widened. */
static uint64_t scalar(kiln__kind kind, const void *v)
{
  switch (kind) {
  case U32: return *(const cl_uint *)v;
  case BOOL: return *(const cl_bool *)v;
  case SIZE: return *(const size_t *)v;
  case U64:
  case BITS: return *(const cl_ulong *)v;
  default: return 0;
  }
}

static void append_mem(kiln__str *s, uint64_t bytes)
{
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)bytes;
  size_t u = 0;
  /* clinfo's rule: divide while above 1024, so 1048576 reads "1024KiB". */
  while (v > 1024 && u + 1 < KILN__COUNT(units)) {
    v /= 1024;
    u++;
  }
  kiln__str_appendf(s, " (%.4g%s)", v, units[u]);
}

/* cl_version packs major (10 bits), minor (10) and patch (12). The hex is
 * right-aligned in `width` columns, so that lists line up. */
static void append_version(kiln__str *s, cl_version v, int width)
{
  kiln__str_appendf(s, "%#*x (%u.%u.%u)", width, (unsigned)v, (unsigned)(v >> 22),
                    (unsigned)((v >> 12) & 0x3ff), (unsigned)(v & 0xfff));
}

/* The names of the set bits in table order, then any unknown bits in hex;
 * an empty field is "" raw and "None" human. */
static void append_bits(kiln__str *raw, kiln__str *human, uint64_t bits,
                        const value_name *names, size_t n)
{
  uint64_t known = 0;
  const char *sep = "";
  for (size_t i = 0; i < n; i++) {
    known |= names[i].value;
    if (names[i].raw && (bits & names[i].value) == names[i].value) {
      kiln__str_appendf(raw, "%s%s", *sep ? " | " : "", names[i].raw);
      kiln__str_appendf(human, "%s%s", sep, names[i].human);
      sep = ", ";
    }
  }
  if (bits & ~known) {
    kiln__str_appendf(raw, "%s%#llx", *sep ? " | " : "", (ull)(bits & ~known));
    kiln__str_appendf(human, "%s%#llx", sep, (ull)(bits & ~known));
  }
  if (!bits)
    kiln__str_appendf(human, "None");
}

static void append_enum(kiln__str *raw, kiln__str *human, uint64_t v,
                        const value_name *names, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (names[i].value == v) {
      kiln__str_appendf(raw, "%s", names[i].raw);
      kiln__str_appendf(human, "%s", names[i].human);
      return;
    }
  kiln__str_appendf(raw, "%#llx", (ull)v);
  kiln__str_appendf(human, "unknown (%#llx)", (ull)v);
}

/* "name:0x400000 ..." raw; one "name  0x400000 (1.0.0)" line each, human. */
static void append_namevers(kiln__str *raw, kiln__str *human, const void *value,
                            size_t size)
{
  const cl_name_version *nv = value;
  size_t n = size / sizeof *nv, width = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = strnlen(nv[i].name, sizeof nv[i].name);
    width = len > width ? len : width;
  }
  for (size_t i = 0; i < n; i++) {
    int len = (int)strnlen(nv[i].name, sizeof nv[i].name);
    kiln__str_appendf(raw, "%s%.*s:%#x", i ? " " : "", len, nv[i].name,
                      (unsigned)nv[i].version);
    kiln__str_appendf(human, "%s%.*s%*s", i ? "\n" : "", len, nv[i].name,
                      (int)(width - (size_t)len + 2), "");
    append_version(human, nv[i].version, 8);
  }
}

/* Arrays of size_t ("4096 4096 4096" / "4096x4096x4096") and of partition
 * properties ("CL_DEVICE_PARTITION_EQUALLY | ..." / "equally, ..."). */
static void append_array(kiln__str *raw, kiln__str *human, const kiln__row *row,
                         const void *value, size_t size)
{
  int sizes = row->kind == SIZES;
  size_t elem = sizes ? sizeof(size_t) : sizeof(cl_device_partition_property);
  size_t n = size / elem;
  for (size_t i = 0; i < n; i++) {
    if (sizes) {
      ull v = ((const size_t *)value)[i];
      kiln__str_appendf(raw, "%s%llu", i ? " " : "", v);
      kiln__str_appendf(human, "%s%llu", i ? "x" : "", v);
      continue;
    }
    kiln__str_appendf(raw, "%s", i ? " | " : "");
    kiln__str_appendf(human, "%s", i ? ", " : "");
    append_enum(raw, human, (uint64_t)((const cl_device_partition_property *)value)[i],
                shows[row->show].names, shows[row->show].count);
  }
  if (sizes && n)
    kiln__str_appendf(human, "%s", row->unit);
  if (!sizes && !n)
    kiln__str_appendf(human, "None");
}

/* The numbers: one scalar, raw and human. */
static void append_number(kiln__str *raw, kiln__str *human, const kiln__row *row,
                          uint64_t v)
{
  switch (shows[row->show].style) {
  case HEX:
    kiln__str_appendf(raw, "%#llx", (ull)v);
    kiln__str_appendf(human, "%#llx", (ull)v);
    break;
  case YESNO:
    kiln__str_appendf(raw, "%s", v ? "CL_TRUE" : "CL_FALSE");
    kiln__str_appendf(human, "%s", v ? "Yes" : "No");
    break;
  case VERSION:
    kiln__str_appendf(raw, "%#x", (unsigned)v);
    append_version(human, (cl_version)v, 0);
    break;
  case ALIGN: /* CL_DEVICE_MEM_BASE_ADDR_ALIGN is in bits */
    kiln__str_appendf(raw, "%llu", (ull)v);
    kiln__str_appendf(human, "%llu bits (%llu bytes)", (ull)v, (ull)(v / 8));
    break;
  default: /* DEC, MEM */
    kiln__str_appendf(raw, "%llu", (ull)v);
    kiln__str_appendf(human, "%llu%s", (ull)v, row->unit);
    if (shows[row->show].style == MEM && v > 1024)
      append_mem(human, v);
    break;
  }
}

/* Hands over a built string; "" when nothing was appended. NULL when out of
 * memory. */
static char *take(kiln__str *s)
{
  if (s->failed) {
    kiln__str_free(s);
    return NULL;
  }
  char *text = s->data ? s->data : strdup("");
  memset(s, 0, sizeof *s);
  return text;
}

int kiln__prop_format(const kiln__row *row, const void *value, size_t size,
                      kiln__prop *prop)
{
  kiln__str raw = {0}, human = {0};
  switch (shows[row->show].style) {
  case TEXT:
    kiln__str_appendf(&raw, "%s", (const char *)value);
    kiln__str_appendf(&human, "%s", (const char *)value);
    break;
  case NAMEVERS: append_namevers(&raw, &human, value, size); break;
  case LIST:
  case ENUMS: append_array(&raw, &human, row, value, size); break;
  case BITFIELD:
    append_bits(&raw, &human, scalar(row->kind, value), shows[row->show].names,
                shows[row->show].count);
    break;
  case ENUM:
    append_enum(&raw, &human, scalar(row->kind, value), shows[row->show].names,
                shows[row->show].count);
    break;
  default: append_number(&raw, &human, row, scalar(row->kind, value)); break;
  }
  prop->raw = take(&raw);
  prop->human = take(&human);
  if (prop->raw && prop->human)
    return 0;
  free(prop->raw);
  free(prop->human);
  prop->raw = prop->human = NULL;
  return -1;
}

void kiln__props_free(kiln__prop *props, size_t n)
{
  if (!props)
    return;
  for (size_t i = 0; i < n; i++) {
    free(props[i].raw);
    free(props[i].human);
    free(props[i].why);
  }
  free(props);
}
