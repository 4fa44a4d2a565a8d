/*
 * test-select.c — KILN_DEVICE, KILN_VISIBLE_DEVICES and their kiln_options
 * equivalents, on the real platforms: PoCL with two devices
 * (POCL_DEVICES="pthread pthread") and, when meson found it, Oclgrind
 * and rusticl (tests/icd). Expectations are computed from the unmasked list,
 * since the ICD loader decides the platform order. On a machine's own
 * devices (one GPU) each test checks what holds there, then skips what
 * needs PoCL's two devices, saying so (common.h's kiln_test_require()).
 */
#include "common.h"

typedef struct machine {
  unsigned pocl; /* PoCL's platform index */
  int has_oclgrind;
  unsigned oclgrind; /* Oclgrind's platform index */
  size_t count;      /* devices in all */
  size_t others;     /* devices of none of the tests' platforms: a developer's GPU */
  unsigned best_p, best_d; /* the ranking's pick */
  unsigned other_p,
    other_d; /* another real device, the best's platform first; or the best */
} machine;

static machine look(void)
{
  machine m = {0};
  kiln_options opts;
  kiln_options_init(&opts);
  opts.ignore_env = 1;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  m.count = kiln_runtime_device_count(rt);
  const kiln_device_info *best = kiln_runtime_device(rt), *other = best;
  for (size_t i = 0; i < m.count; i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    int better = other == best || (other->platform_index != best->platform_index &&
                                   d->platform_index == best->platform_index);
    if (d != best && !d->is_simulator && better)
      other = d;
  }
  m.best_p = best->platform_index, m.best_d = best->device_index;
  m.other_p = other->platform_index, m.other_d = other->device_index;
  for (size_t i = 0; i < m.count; i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    if (d->vendor_family == KILN_VENDOR_POCL)
      m.pocl = d->platform_index;
    if (d->is_simulator) {
      m.has_oclgrind = 1;
      m.oclgrind = d->platform_index;
    }
    int llvmpipe = d->vendor_family == KILN_VENDOR_MESA && (d->type & KILN_DEVICE_CPU);
    m.others += d->vendor_family != KILN_VENDOR_POCL && !d->is_simulator && !llvmpipe;
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  return m;
}

/* Creates a runtime with the options and environment given, expecting it to
 * pick platform p's device d. */
static void expect_pick(const kiln_options *opts, unsigned p, unsigned d)
{
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(opts, &rt));
  const kiln_device_info *got = kiln_runtime_device(rt);
  if (got->platform_index != p || got->device_index != d)
    fail_msg("picked %u:%u (%s), expected %u:%u; %s", got->platform_index,
             got->device_index, got->name, p, d, kiln_runtime_selection(rt));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
}

static void expect_env_pick(const char *device, const char *visible, unsigned p,
                            unsigned d)
{
  setenv("KILN_DEVICE", device ? device : "", 1);
  setenv("KILN_VISIBLE_DEVICES", visible ? visible : "", 1);
  expect_pick(NULL, p, d);
  unsetenv("KILN_DEVICE");
  unsetenv("KILN_VISIBLE_DEVICES");
}

static void test_select_default_is_best_ranked(void **state)
{
  (void)state;
  machine m = look();
  expect_env_pick(NULL, NULL, m.best_p, m.best_d);
  expect_env_pick("", "", m.best_p, m.best_d); /* empty counts as unset */
  kiln_test_require(kiln_test_meson_devices(), KILN_TEST_MESON_DEVICES);
  /* Two identical PoCL devices: the lower device index; never Oclgrind. */
  expect_env_pick(NULL, NULL, m.pocl, 0);
}

static void test_select_each_term_kind(void **state)
{
  (void)state;
  machine m = look();
  char pd[32];
  /* On any machine: P:D picks that device, and N counts the visible
   * devices in listing order. */
  snprintf(pd, sizeof pd, "%u:%u", m.other_p, m.other_d);
  expect_env_pick(pd, NULL, m.other_p, m.other_d);
  kiln_options opts;
  kiln_options_init(&opts);
  opts.ignore_env = 1;
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(&opts, &rt));
  for (size_t i = 0; i < m.count; i++) {
    const kiln_device_info *d = kiln_runtime_device_at(rt, i);
    char n[32];
    snprintf(n, sizeof n, "%zu", i);
    expect_env_pick(n, NULL, d->platform_index, d->device_index);
  }
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_test_require(kiln_test_meson_devices(), KILN_TEST_MESON_DEVICES);
  snprintf(pd, sizeof pd, "%u:1", m.pocl);
  expect_env_pick(pd, NULL, m.pocl, 1);
  expect_env_pick("pocl", NULL, m.pocl, 0);
  expect_env_pick("POCL", NULL, m.pocl, 0);
  expect_env_pick("cpu", NULL, m.pocl, 0);
  expect_env_pick("name=pthread", NULL, m.pocl, 0);
  expect_env_pick(" nvidia , amd,intel , cpu ", NULL, m.pocl, 0);
  if (m.has_oclgrind) {
    /* Asked for by name, the simulator is picked. */
    expect_env_pick("oclgrind", NULL, m.oclgrind, 0);
    expect_env_pick("name=oclgrind", NULL, m.oclgrind, 0);
  }
}

static void test_select_options_win_over_env(void **state)
{
  (void)state;
  machine m = look();
  kiln_options opts;
  kiln_options_init(&opts);
  char pd[32];
  /* On PoCL's two devices 0 is the first, so the option's pick shows. */
  snprintf(pd, sizeof pd, "%u:%u", m.other_p, m.other_d);
  opts.device = pd;
  setenv("KILN_DEVICE", "0", 1);
  expect_pick(&opts, m.other_p, m.other_d);
  /* ignore_env: KILN_DEVICE is not even parsed. */
  setenv("KILN_DEVICE", "no such thing", 1);
  kiln_options_init(&opts);
  opts.ignore_env = 1;
  expect_pick(&opts, m.best_p, m.best_d);
  unsetenv("KILN_DEVICE");
}

static void expect_refused(const char *device, const char *visible, const char *needle)
{
  if (device)
    setenv("KILN_DEVICE", device, 1);
  if (visible)
    setenv("KILN_VISIBLE_DEVICES", visible, 1);
  kiln_runtime *rt = (kiln_runtime *)&rt;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, needle,
                    kiln_runtime_create(NULL, &rt));
  assert_null(rt);
  /* The message lists the devices, so the user can pick one. */
  const char *msg = kiln_last_error(NULL);
  if (!strstr(msg, "the devices are:\n  0  "))
    fail_msg("the message lists no devices: %s", msg);
  unsetenv("KILN_DEVICE");
  unsetenv("KILN_VISIBLE_DEVICES");
}

static void test_select_refuses_what_does_not_parse(void **state)
{
  (void)state;
  static const char *const bad[] = {"bogus",    "1:", ":1",   "1:2:3", "name=", "-1",
                                    "gpu,,cpu", ",",  "cpu,", "0x1",   "1.5",   "name"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_refused(bad[i], NULL, "is not a device selector");
  /* A bad term is an error even when another term would match. */
  expect_refused("cpu,bogus", NULL, "'bogus' is not a device selector");
  expect_refused(NULL, "cpu,bogus", "KILN_VISIBLE_DEVICES='cpu,bogus'");
}

static void test_select_refuses_what_matches_nothing(void **state)
{
  (void)state;
  kiln_test_require(!look().others && kiln_test_meson_devices(),
                    "no GPU or other device beyond the tests' platforms ('gpu' and "
                    "'nvidia' must match nothing), and " KILN_TEST_MESON_DEVICES);
  expect_refused("nvidia", NULL, "KILN_DEVICE='nvidia' matches no usable device");
  expect_refused("99", NULL, "KILN_DEVICE='99' matches no usable device");
  expect_refused("7:0", NULL, "matches no usable device");
  expect_refused("name=RTX 4090", NULL, "matches no usable device");
  /* A type never matches the simulator: Oclgrind says GPU, but "gpu" is not
   * a request for a simulator. */
  expect_refused("gpu", NULL, "KILN_DEVICE='gpu' matches no usable device");
  expect_refused(NULL, "amd", "KILN_VISIBLE_DEVICES='amd': 'amd' matches no device");
  expect_refused(NULL, "pocl,42", "'42' matches no device");
  /* The selector applies to the visible devices only. */
  expect_refused("cpu", "oclgrind", "KILN_DEVICE='cpu' matches no usable device");
}

static void test_select_visible_devices_mask_and_renumber(void **state)
{
  (void)state;
  machine m = look();
  /* On any machine: one device made visible is the only one, numbered 0. */
  char one[32];
  snprintf(one, sizeof one, "%u:%u", m.other_p, m.other_d);
  setenv("KILN_VISIBLE_DEVICES", one, 1);
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  assert_int_equal(kiln_runtime_device_count(rt), 1);
  assert_int_equal(kiln_runtime_device_at(rt, 0)->platform_index, m.other_p);
  assert_int_equal(kiln_runtime_device_at(rt, 0)->device_index, m.other_d);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  expect_env_pick("0", one, m.other_p, m.other_d);
  unsetenv("KILN_VISIBLE_DEVICES");
  kiln_test_require(kiln_test_meson_devices(), KILN_TEST_MESON_DEVICES);
  setenv("KILN_VISIBLE_DEVICES", "pocl", 1);
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  assert_int_equal(kiln_runtime_device_count(rt), 2);
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(kiln_runtime_device_at(rt, i)->vendor_family, KILN_VENDOR_POCL);
    assert_int_equal(kiln_runtime_device_at(rt, i)->device_index, i);
  }
  if (m.has_oclgrind)
    assert_non_null(strstr(kiln_runtime_selection(rt), "hides"));
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));

  /* The order of the terms is the new numbering: N then counts in it. */
  char mask[64];
  snprintf(mask, sizeof mask, "%u:1,%u:0", m.pocl, m.pocl);
  setenv("KILN_VISIBLE_DEVICES", mask, 1);
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  assert_int_equal(kiln_runtime_device_count(rt), 2);
  assert_int_equal(kiln_runtime_device_at(rt, 0)->device_index, 1);
  assert_int_equal(kiln_runtime_device_at(rt, 1)->device_index, 0);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  expect_env_pick("0", mask, m.pocl, 1);
  expect_env_pick("1", mask, m.pocl, 0);
  /* A device named twice is visible once. */
  expect_env_pick(NULL, "cpu,pocl", m.pocl, 0);

  if (m.has_oclgrind) {
    /* Only the simulator is visible: it is all there is, so it is used. */
    expect_env_pick(NULL, "oclgrind", m.oclgrind, 0);
  }
  unsetenv("KILN_VISIBLE_DEVICES");
}

static void test_select_explains_itself(void **state)
{
  (void)state;
  machine m = look();
  char pd[48];
  /* "name=" of no device, then the other device: the second term picks. */
  snprintf(pd, sizeof pd, "name=no such device,%u:%u", m.other_p, m.other_d);
  setenv("KILN_DEVICE", pd, 1);
  kiln_runtime *rt = NULL;
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  const char *why = kiln_runtime_selection(rt);
  char want[96];
  snprintf(want, sizeof want, "'%u:%u' picks %u:%u", m.other_p, m.other_d, m.other_p,
           m.other_d);
  if (!strstr(why, want))
    fail_msg("the selection does not say \"%s\": %s", want, why);
  /* where the pick is not the ranking's, that is said too */
  int differs = m.other_p != m.best_p || m.other_d != m.best_d;
  assert_int_equal(strstr(why, "the ranking alone would pick") != NULL, differs);
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  unsetenv("KILN_DEVICE");
  assert_kiln_ok(NULL, kiln_runtime_create(NULL, &rt));
  assert_string_equal(kiln_runtime_selection(rt), "");
  assert_kiln_ok(NULL, kiln_runtime_destroy(rt));
  kiln_test_require(differs, "a second device (PoCL's two devices)");
}

int main(void)
{
  unsetenv("KILN_DEVICE");
  unsetenv("KILN_VISIBLE_DEVICES");
  kiln_test_require_device();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_select_default_is_best_ranked),
    cmocka_unit_test(test_select_each_term_kind),
    cmocka_unit_test(test_select_options_win_over_env),
    cmocka_unit_test(test_select_refuses_what_does_not_parse),
    cmocka_unit_test(test_select_refuses_what_matches_nothing),
    cmocka_unit_test(test_select_visible_devices_mask_and_renumber),
    cmocka_unit_test(test_select_explains_itself),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
