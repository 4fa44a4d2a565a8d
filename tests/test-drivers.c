/*
 * test-drivers.c — kiln finds the OpenCL drivers installed on a machine and
 * the .icd files that name them, without loading any (src/device/drivers.c), and
 * says what to do about one no .icd file names (src/device/drivers_note.c).
 *
 * Each case builds a machine in a folder of its own (the root of
 * kiln__driver_env): libraries that are the first bytes of this very
 * program (an ELF file of this machine's kind, which nothing loads), an
 * /etc/ld.so.cache written here in glibc's format, .icd folders, and
 * LD_LIBRARY_PATH, OCL_ICD_VENDORS and OPENCL_VENDOR_PATH as values. What
 * the search must find follows from where the files were put, on any
 * machine: kiln's own folders are all under the root. No device needed.
 */
#define KILN_EXPERIMENTAL /* kiln_driver_list_* */
#include "common.h"

#include "base/util.h"
#include "device/device.h"
#include "device/drivers.h"

#define NV "libnvidia-opencl.so.1"

typedef struct fixture {
  char root[64];
  kiln__driver_env env;
  kiln_driver_list *list;
} fixture;

static char *path_in(const fixture *fx, const char *rel)
{
  static char buf[4][512];
  static int turn;
  char *p = buf[turn++ % 4];
  snprintf(p, sizeof buf[0], "%s%s", fx->root, rel);
  return p;
}

static void make_parents(const char *path)
{
  char p[512];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; (s = strchr(s, '/')) != NULL; s++) {
    *s = '\0';
    mkdir(p, 0755);
    *s = '/';
  }
}

static void write_file(const char *path, const void *data, size_t len)
{
  make_parents(path);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static void write_text(const char *path, const char *text)
{
  write_file(path, text, strlen(text));
}

/* A library of this machine's kind: the ELF header of this program. With
 * other_class, the same header says 32-bit on a 64-bit machine and the
 * other way round: another architecture's library, as /usr/lib holds on
 * RHEL. */
static void fake_library(const char *path, int other_class)
{
  unsigned char head[64];
  FILE *f = fopen("/proc/self/exe", "rb");
  assert_non_null(f);
  assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
  fclose(f);
  if (other_class)
    head[4] = head[4] == 2 ? 1 : 2;
  write_file(path, head, sizeof head);
}

/* An /etc/ld.so.cache in glibc's format ("glibc-ld.so.cache1.1": 48-byte
 * header, 24-byte entries, strings after them, offsets from the header),
 * after the old format's empty header when old_too, as glibc before 2.32
 * wrote it. */
static void write_ldcache(const char *path, const char *const *pairs, size_t n,
                          int old_too)
{
  unsigned char buf[8192] = {0};
  size_t base = old_too ? 16 : 0, at = base + 48 + n * 24;
  if (old_too)
    memcpy(buf, "ld.so-1.7.0", 11); /* its nlibs, at 12, stays 0 */
  memcpy(buf + base, "glibc-ld.so.cache1.1", 20);
  uint32_t v = (uint32_t)n;
  memcpy(buf + base + 20, &v, 4);
  for (size_t i = 0; i < n; i++) {
    unsigned char *e = buf + base + 48 + i * 24;
    int32_t flags = 0x0303; /* libc6, x86-64: kiln does not read them */
    memcpy(e, &flags, 4);
    for (int k = 0; k < 2; k++) {
      v = (uint32_t)(at - base);
      memcpy(e + 4 + 4 * k, &v, 4);
      size_t len = strlen(pairs[2 * i + k]) + 1;
      assert_true(at + len < sizeof buf);
      memcpy(buf + at, pairs[2 * i + k], len);
      at += len;
    }
  }
  write_file(path, buf, at);
}

static int setup(void **state)
{
  fixture *fx = calloc(1, sizeof *fx);
  if (!fx)
    return -1;
  snprintf(fx->root, sizeof fx->root, "/tmp/kiln-test-drivers-XXXXXX");
  if (!mkdtemp(fx->root)) {
    free(fx);
    return -1;
  }
  fx->env.root = fx->root;
  *state = fx;
  return 0;
}

static int teardown(void **state)
{
  fixture *fx = *state;
  kiln_driver_list_destroy(fx->list);
  kiln_test_remove_tree(fx->root);
  free(fx);
  return 0;
}

static void find(fixture *fx)
{
  kiln_driver_list_destroy(fx->list);
  fx->list = NULL;
  assert_int_equal(kiln__driver_list_find(&fx->env, &fx->list), KILN_OK);
}

/* The one record called name; NULL when there is none. */
static const kiln_driver *record(const fixture *fx, const char *name)
{
  const kiln_driver *found = NULL;
  for (size_t i = 0; i < kiln_driver_list_count(fx->list); i++) {
    const kiln_driver *d = kiln_driver_list_at(fx->list, i);
    if (strcmp(d->name, name) == 0) {
      if (found)
        fail_msg("two records are called %s", name);
      found = d;
    }
  }
  return found;
}

static const kiln_driver *must(const fixture *fx, const char *name)
{
  const kiln_driver *d = record(fx, name);
  if (!d)
    fail_msg("no record for %s", name);
  return d;
}

/* ---- found, registered or not ------------------------------------------- */

static void test_drivers_unregistered_in_vendor_folder(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  write_text(path_in(fx, "/etc/OpenCL/vendors/pocl.icd"), "libpocl.so.2.10.0");
  find(fx);
  const kiln_driver *d = must(fx, "nvidia");
  assert_string_equal(d->vendor, "NVIDIA");
  assert_string_equal(d->library, path_in(fx, "/usr/local/nvidia/lib64/" NV));
  assert_int_equal(d->where, KILN_DRIVER_VENDOR_FOLDER);
  assert_false(d->registered);
  assert_null(d->icd);
  assert_null(d->icd_line);
  assert_true(d->gpu);
  assert_true(d->advised);
  assert_string_equal(d->icd_name, "nvidia.icd");
  const kiln_driver *p = must(fx, "pocl"); /* named, not installed */
  assert_true(p->registered);
  assert_false(p->advised);
  assert_string_equal(p->icd, path_in(fx, "/etc/OpenCL/vendors/pocl.icd"));
  assert_string_equal(p->icd_line, "libpocl.so.2.10.0");
  assert_int_equal(p->where, KILN_DRIVER_NOT_FOUND);
  assert_string_equal(kiln_driver_list_icd_source(fx->list),
                      path_in(fx, "/etc/OpenCL/vendors"));
}

/* The H200 machine's case: on LD_LIBRARY_PATH, named by no .icd file. */
static void test_drivers_unregistered_on_ld_library_path(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/cuda/lib/" NV), 0);
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0); /* found later */
  char ld[600];
  snprintf(ld, sizeof ld, "relative/lib::%s/nowhere:%s/cuda/lib", fx->root, fx->root);
  fx->env.ld_library_path = ld;
  find(fx);
  const kiln_driver *d = must(fx, "nvidia");
  assert_string_equal(d->library, path_in(fx, "/cuda/lib/" NV));
  assert_int_equal(d->where, KILN_DRIVER_LD_LIBRARY_PATH);
  assert_false(d->registered);
  assert_true(d->advised); /* nothing is registered at all */
}

static void test_drivers_registered_by_name(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/lib64/" NV), 0);
  write_text(path_in(fx, "/etc/OpenCL/vendors/nvidia.icd"), NV "\n");
  find(fx);
  assert_int_equal(kiln_driver_list_count(fx->list), 1);
  const kiln_driver *d = must(fx, "nvidia");
  assert_true(d->registered);
  assert_false(d->advised);
  assert_string_equal(d->library, path_in(fx, "/usr/lib64/" NV));
  assert_int_equal(d->where, KILN_DRIVER_SYSTEM_FOLDER);
  assert_string_equal(d->icd, path_in(fx, "/etc/OpenCL/vendors/nvidia.icd"));
  assert_string_equal(d->icd_line, NV);
}

/* Found through the loader's cache, in both of glibc's layouts; a cache
 * entry of another name, or for a file that is not there, is not taken. */
static void test_drivers_loader_cache(void **state)
{
  fixture *fx = *state;
  char lib[512], gone[512];
  snprintf(lib, sizeof lib, "%s/drivers/%s", fx->root, NV);
  snprintf(gone, sizeof gone, "%s/gone/libamdocl64.so", fx->root);
  fake_library(lib, 0);
  const char *pairs[] = {"libnvidia-opencl.so", lib, NV, lib, "libamdocl64.so", gone};
  for (int old_too = 0; old_too < 2; old_too++) {
    write_ldcache(path_in(fx, "/etc/ld.so.cache"), pairs, 3, old_too);
    find(fx);
    const kiln_driver *d = must(fx, "nvidia");
    assert_string_equal(d->library, lib);
    assert_int_equal(d->where, KILN_DRIVER_LOADER_CACHE);
    assert_null(record(fx, "amd"));
  }
}

/* A cache that is cut short, counts more entries than it holds, or points
 * outside itself finds nothing and breaks nothing. */
static void test_drivers_loader_cache_damaged(void **state)
{
  fixture *fx = *state;
  char lib[512];
  snprintf(lib, sizeof lib, "%s/drivers/%s", fx->root, NV);
  fake_library(lib, 0);
  const char *pairs[] = {NV, lib};
  write_ldcache(path_in(fx, "/etc/ld.so.cache"), pairs, 1, 0);
  FILE *f = fopen(path_in(fx, "/etc/ld.so.cache"), "rb");
  unsigned char buf[4096];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  const struct {
    size_t at, len;
    uint32_t value;
  } damage[] = {
    {20, 4, 1000000},          /* nlibs */
    {48 + 4, 4, 0x7ffffff0u},  /* the key's offset */
    {48 + 8, 4, (uint32_t)-1}, /* the path's offset */
    {0, 1, 'X'},               /* the magic */
  };
  for (size_t i = 0; i < COUNT(damage); i++) {
    unsigned char bad[4096];
    memcpy(bad, buf, len);
    memcpy(bad + damage[i].at, &damage[i].value, damage[i].len);
    write_file(path_in(fx, "/etc/ld.so.cache"), bad, len);
    find(fx);
    assert_null(record(fx, "nvidia"));
  }
  for (size_t cut = 0; cut < len; cut += 7) {
    write_file(path_in(fx, "/etc/ld.so.cache"), buf, cut);
    find(fx);
    assert_null(record(fx, "nvidia"));
  }
}

/* Earlier places win: LD_LIBRARY_PATH, then the cache, the system
 * folders, the vendor's. */
static void test_drivers_search_order(void **state)
{
  fixture *fx = *state;
  char ld[512], cached[512];
  snprintf(ld, sizeof ld, "%s/ld", fx->root);
  snprintf(cached, sizeof cached, "%s/cached/%s", fx->root, NV);
  fake_library(cached, 0);
  fake_library(path_in(fx, "/usr/lib64/" NV), 0);
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  const char *pairs[] = {NV, cached};
  write_ldcache(path_in(fx, "/etc/ld.so.cache"), pairs, 1, 0);
  find(fx);
  assert_int_equal(must(fx, "nvidia")->where, KILN_DRIVER_LOADER_CACHE);
  fake_library(path_in(fx, "/ld/" NV), 0);
  fx->env.ld_library_path = ld;
  find(fx);
  assert_int_equal(must(fx, "nvidia")->where, KILN_DRIVER_LD_LIBRARY_PATH);
  assert_string_equal(must(fx, "nvidia")->library, path_in(fx, "/ld/" NV));
}

/* ---- where the ICD loader reads ------------------------------------------ */

/* OCL_ICD_VENDORS, a folder, replaces /etc/OpenCL/vendors: its .icd files
 * register, the default folder's no longer do. */
static void test_drivers_ocl_icd_vendors_folder(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  write_text(path_in(fx, "/etc/OpenCL/vendors/nvidia.icd"), NV);
  char mine[512];
  snprintf(mine, sizeof mine, "%s/mine", fx->root);
  write_text(path_in(fx, "/mine/pocl.icd"), "libpocl.so.2");
  fx->env.icd_vendors = mine;
  find(fx);
  assert_false(must(fx, "nvidia")->registered); /* /etc's .icd is not read */
  assert_true(must(fx, "nvidia")->advised);
  char source[600];
  snprintf(source, sizeof source, "OCL_ICD_VENDORS=%s", mine);
  assert_string_equal(kiln_driver_list_icd_source(fx->list), source);

  write_text(path_in(fx, "/mine/gpu.icd"), path_in(fx, "/usr/local/nvidia/lib64/" NV));
  find(fx);
  const kiln_driver *d = must(fx, "nvidia");
  assert_true(d->registered);
  assert_string_equal(d->icd, path_in(fx, "/mine/gpu.icd"));
  assert_string_equal(d->icd_name, "gpu.icd");
  assert_int_equal(d->where, KILN_DRIVER_ICD_PATH);
  /* in name order, as the folder's files */
  assert_string_equal(kiln_driver_list_at(fx->list, 0)->icd_name, "gpu.icd");
  assert_string_equal(kiln_driver_list_at(fx->list, 1)->icd_name, "pocl.icd");
}

/* OCL_ICD_VENDORS as one .icd file (a path, or a name in the vendors
 * folder, OPENCL_VENDOR_PATH's when set), or as a library itself. */
static void test_drivers_ocl_icd_vendors_file_or_library(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  write_text(path_in(fx, "/one/only.icd"), "libfoo-opencl.so.3");
  char file[512];
  snprintf(file, sizeof file, "%s/one/only.icd", fx->root);
  fx->env.icd_vendors = file;
  find(fx);
  const kiln_driver *d = must(fx, "only"); /* unknown to kiln's table */
  assert_string_equal(d->vendor, "");
  assert_true(d->registered);
  assert_false(d->gpu);
  assert_string_equal(d->icd, file);
  assert_true(must(fx, "nvidia")->advised);

  char vp[512];
  snprintf(vp, sizeof vp, "%s/vp", fx->root);
  write_text(path_in(fx, "/vp/nv.icd"), NV);
  fx->env.vendor_path = vp;
  fx->env.icd_vendors = "nv.icd";
  find(fx);
  assert_true(must(fx, "nvidia")->registered);
  assert_string_equal(must(fx, "nvidia")->icd, path_in(fx, "/vp/nv.icd"));

  fx->env.icd_vendors = NULL; /* OPENCL_VENDOR_PATH alone: the folder */
  find(fx);
  assert_true(must(fx, "nvidia")->registered);

  fx->env.icd_vendors = "libpocl.so.2";
  find(fx);
  const kiln_driver *p = must(fx, "pocl");
  assert_true(p->registered);
  assert_null(p->icd);
  assert_string_equal(p->icd_line, "libpocl.so.2");
  assert_string_equal(p->icd_name, "pocl.icd");
  assert_false(must(fx, "nvidia")->registered);
}

/* ---- missing -------------------------------------------------------------- */

/* Nothing installed: no record. Another architecture's library, an empty
 * file, a folder of the library's name: not drivers of this process. */
static void test_drivers_missing(void **state)
{
  fixture *fx = *state;
  find(fx);
  assert_int_equal(kiln_driver_list_count(fx->list), 0);
  fake_library(path_in(fx, "/usr/lib/" NV), 1);
  write_text(path_in(fx, "/usr/lib64/" NV), "");
  mkdir(path_in(fx, "/usr/local/nvidia"), 0755);
  mkdir(path_in(fx, "/usr/local/nvidia/lib64"), 0755);
  mkdir(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0755);
  write_text(path_in(fx, "/opt/rocm/lib/libamdocl64.so"), "#!/bin/sh\n# not ELF\n");
  find(fx);
  assert_int_equal(kiln_driver_list_count(fx->list), 0);
}

/* A CPU runtime no .icd names is advised only where nothing is registered:
 * one left out of an .icd folder is most often left out on purpose. */
static void test_drivers_cpu_runtime_advised_alone(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/lib64/libRusticlOpenCL.so.1"), 0);
  find(fx);
  assert_true(must(fx, "rusticl")->advised);
  assert_false(must(fx, "rusticl")->gpu);
  write_text(path_in(fx, "/etc/OpenCL/vendors/pocl.icd"), "libpocl.so.2");
  find(fx);
  assert_false(must(fx, "rusticl")->advised);
  assert_false(must(fx, "rusticl")->registered);
}

/* ---- the notes ------------------------------------------------------------ */

static void note(fixture *fx, const kiln__device_list *devices,
                 const kiln_device_info *picked, int writable, char *out, size_t cap)
{
  kiln__str s = {0};
  kiln__drivers_note_list(&s, fx->list, devices, picked, writable);
  assert_false(s.failed);
  snprintf(out, cap, "%s", kiln__str_get(&s));
  kiln__str_free(&s);
}

static void expect_in(const char *text, const char *want)
{
  if (!strstr(text, want))
    fail_msg("expected '%s' in:\n%s", want, text);
}

static void test_drivers_note(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/cuda/" NV), 0);
  write_text(path_in(fx, "/etc/OpenCL/vendors/pocl.icd"), "libpocl.so.2");
  char ld[512];
  snprintf(ld, sizeof ld, "%s/cuda", fx->root);
  fx->env.ld_library_path = ld;
  find(fx);
  kiln__device_list devices = {.platforms = 1};
  kiln_device_info cpu = {.type = KILN_DEVICE_CPU}, gpu = {.type = KILN_DEVICE_GPU};
  char text[4096], want[2048];
  const char *lib = path_in(fx, "/cuda/" NV), *etc = path_in(fx, "/etc/OpenCL/vendors");

  note(fx, &devices, &cpu, 1, text, sizeof text);
  snprintf(want, sizeof want,
           "NVIDIA's OpenCL driver is installed at %s but no .icd file names it, so "
           "kiln runs on the CPU; fix: `echo %s > %s/nvidia.icd`\n",
           lib, lib, etc);
  assert_string_equal(text, want);

  /* Not root: the system folder as root, or a folder of one's own. */
  note(fx, &devices, &gpu, 0, text, sizeof text);
  expect_in(text, "so kiln cannot use it; fix: as root, `echo ");
  snprintf(want, sizeof want,
           "; or, without root, `mkdir -p $HOME/.local/share/kiln/vendors && cp "
           "%s/*.icd $HOME/.local/share/kiln/vendors/ && echo %s > "
           "$HOME/.local/share/kiln/vendors/nvidia.icd` and `export "
           "OCL_ICD_VENDORS=$HOME/.local/share/kiln/vendors`",
           etc, lib);
  expect_in(text, want);

  note(fx, &devices, NULL, 1, text, sizeof text);
  expect_in(text, "so kiln has no OpenCL device to run on; fix:");

  /* Its platform is there all the same (loaded some other way): no note. */
  kiln__platform nvidia = {.info = {.name = "NVIDIA CUDA"}};
  kiln__device_list with_it = {
    .platforms = 1, .platform_items = &nvidia, .platform_count = 1};
  note(fx, &with_it, &cpu, 1, text, sizeof text);
  assert_string_equal(text, "");
}

/* Where the loader would not find it by name, the folder goes on
 * LD_LIBRARY_PATH too; a path with a space is quoted. */
static void test_drivers_note_vendor_folder_and_quoting(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  find(fx);
  kiln__device_list devices = {0};
  kiln_device_info cpu = {.type = KILN_DEVICE_CPU};
  char text[4096], want[1024];
  note(fx, &devices, &cpu, 1, text, sizeof text);
  snprintf(want, sizeof want,
           "; and put its folder on the loader's path for the libraries beside it: "
           "`export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`\n",
           path_in(fx, "/usr/local/nvidia/lib64"));
  expect_in(text, want);

  char spaced[512];
  snprintf(spaced, sizeof spaced, "%s/my icd's", fx->root);
  mkdir(spaced, 0755);
  fx->env.icd_vendors = spaced;
  find(fx);
  note(fx, &devices, &cpu, 1, text, sizeof text);
  snprintf(want, sizeof want, " > '%s/my icd'\\''s'/nvidia.icd`", fx->root);
  expect_in(text, want);
}

/* ---- the folder for OCL_ICD_VENDORS -------------------------------------- */

static void expect_file(const char *path, const char *text)
{
  char buf[1024] = {0};
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("no file %s", path);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  if (strcmp(buf, text) != 0)
    fail_msg("%s holds '%s'; expected '%s'", path, buf, text);
}

static void test_drivers_write_icd_dir(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  fake_library(path_in(fx, "/usr/lib64/libRusticlOpenCL.so.1"), 0); /* not advised */
  write_text(path_in(fx, "/etc/OpenCL/vendors/pocl.icd"), "libpocl.so.2.10.0");
  write_text(path_in(fx, "/etc/OpenCL/vendors/custom.icd"), "/opt/x/libx.so\n# note\n");
  write_text(path_in(fx, "/etc/OpenCL/vendors/README"), "not an .icd file");
  find(fx);
  char out[512];
  snprintf(out, sizeof out, "%s/home/u/icd", fx->root);
  for (int again = 0; again < 2; again++) { /* the second time: the same */
    assert_int_equal(kiln_driver_list_write_icd_dir(fx->list, out), KILN_OK);
    expect_file(path_in(fx, "/home/u/icd/pocl.icd"), "libpocl.so.2.10.0");
    expect_file(path_in(fx, "/home/u/icd/custom.icd"), "/opt/x/libx.so\n# note\n");
    char line[600];
    snprintf(line, sizeof line, "%s\n", path_in(fx, "/usr/local/nvidia/lib64/" NV));
    expect_file(path_in(fx, "/home/u/icd/nvidia.icd"), line);
    assert_int_equal(access(path_in(fx, "/home/u/icd/rusticl.icd"), F_OK), -1);
    assert_int_equal(access(path_in(fx, "/home/u/icd/README"), F_OK), -1);
  }
  /* The folder in use, as a target: it gains the driver's file. */
  assert_int_equal(
    kiln_driver_list_write_icd_dir(fx->list, path_in(fx, "/etc/OpenCL/vendors")),
    KILN_OK);
  expect_file(path_in(fx, "/etc/OpenCL/vendors/pocl.icd"), "libpocl.so.2.10.0");
  find(fx);
  assert_true(must(fx, "nvidia")->registered);

  /* An .icd file the list would not write is refused, and left. */
  write_text(path_in(fx, "/home/u/icd/old-nvidia.icd"), "/old/" NV);
  assert_int_equal(kiln_driver_list_write_icd_dir(fx->list, out),
                   KILN_ERR_INVALID_ARGUMENT);
  expect_in(kiln_last_error(NULL), "already holds old-nvidia.icd");
  expect_file(path_in(fx, "/home/u/icd/old-nvidia.icd"), "/old/" NV);

  /* A file where the folder should be. */
  write_text(path_in(fx, "/plain"), "");
  assert_int_equal(kiln_driver_list_write_icd_dir(fx->list, path_in(fx, "/plain/icd")),
                   KILN_ERR_IO);
  expect_in(kiln_last_error(NULL), "/plain");
}

/* The unregistered driver's file takes another name where an .icd file
 * in use already has its own. */
static void test_drivers_icd_name_taken(void **state)
{
  fixture *fx = *state;
  fake_library(path_in(fx, "/usr/local/nvidia/lib64/" NV), 0);
  write_text(path_in(fx, "/etc/OpenCL/vendors/nvidia.icd"), "/somewhere/libother.so");
  find(fx);
  assert_int_equal(kiln_driver_list_count(fx->list), 2);
  const kiln_driver *named = kiln_driver_list_at(fx->list, 0),
                    *d = kiln_driver_list_at(fx->list, 1);
  assert_true(named->registered);
  assert_string_equal(named->vendor, ""); /* not a library kiln knows */
  assert_string_equal(named->icd_name, "nvidia.icd");
  assert_string_equal(d->vendor, "NVIDIA");
  assert_false(d->registered);
  assert_string_equal(d->icd_name, "nvidia-kiln.icd");
}

/* ---- the public calls ------------------------------------------------------ */

static void test_drivers_api(void **state)
{
  (void)state;
  kiln_driver_list *list = NULL;
  assert_int_equal(kiln_driver_list_create(NULL, NULL), KILN_ERR_INVALID_ARGUMENT);
  assert_int_equal(kiln_driver_list_count(NULL), 0);
  assert_null(kiln_driver_list_at(NULL, 0));
  assert_null(kiln_driver_list_icd_source(NULL));
  assert_int_equal(kiln_driver_list_destroy(NULL), KILN_OK);
  assert_int_equal(kiln_driver_list_write_icd_dir(NULL, "/tmp"),
                   KILN_ERR_INVALID_ARGUMENT);
  /* This machine's: whatever it has, each library found is a file. */
  assert_int_equal(kiln_driver_list_create(NULL, &list), KILN_OK);
  assert_non_null(kiln_driver_list_icd_source(list));
  for (size_t i = 0; i < kiln_driver_list_count(list); i++) {
    const kiln_driver *d = kiln_driver_list_at(list, i);
    assert_true(d->registered || d->where != KILN_DRIVER_NOT_FOUND);
    assert_true(!d->advised || !d->registered);
    if (d->where != KILN_DRIVER_NOT_FOUND) {
      assert_int_equal(d->library[0], '/');
      assert_int_equal(access(d->library, R_OK), 0);
    }
  }
  assert_null(kiln_driver_list_at(list, kiln_driver_list_count(list)));
  kiln_driver_list_destroy(list);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
    T(test_drivers_unregistered_in_vendor_folder),
    T(test_drivers_unregistered_on_ld_library_path),
    T(test_drivers_registered_by_name),
    T(test_drivers_loader_cache),
    T(test_drivers_loader_cache_damaged),
    T(test_drivers_search_order),
    T(test_drivers_ocl_icd_vendors_folder),
    T(test_drivers_ocl_icd_vendors_file_or_library),
    T(test_drivers_missing),
    T(test_drivers_cpu_runtime_advised_alone),
    T(test_drivers_note),
    T(test_drivers_note_vendor_folder_and_quoting),
    T(test_drivers_write_icd_dir),
    T(test_drivers_icd_name_taken),
    cmocka_unit_test(test_drivers_api),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
