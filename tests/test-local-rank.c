/*
 * test-local-rank.c — which device a launcher's node-local rank picks, with
 * no MPI and no device: the order in which env.c reads the launchers'
 * variables, the option winning over them, bad values, the round-robin
 * over the devices of the best-ranked device's kind, and the errors of the
 * selector term local-rank. The device lists are records, as test-rank.c's.
 */
#include "common.h"

#include "base/env.h"
#include "base/util.h"
#include "device/device.h"
#include "device/select.h"

/* The launchers' variables, in the order the rank is taken from them. */
static const char *const launcher_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                            "MPI_LOCALRANKID", "SLURM_LOCALID",
                                            "MV2_COMM_WORLD_LOCAL_RANK"};

static void unset_launchers(void)
{
  for (size_t i = 0; i < COUNT(launcher_vars); i++)
    unsetenv(launcher_vars[i]);
}

static void test_local_rank_env_order(void **state)
{
  (void)state;
  unset_launchers();
  kiln__config cfg;
  assert_kiln_ok(NULL, kiln__config_resolve(NULL, &cfg));
  assert_null(cfg.local_rank_source);
  /* Set from the last to the first: each time the earlier one wins. */
  for (size_t i = COUNT(launcher_vars); i-- > 0;) {
    char value[16];
    snprintf(value, sizeof value, "%zu", 10 + i);
    setenv(launcher_vars[i], value, 1);
    assert_kiln_ok(NULL, kiln__config_resolve(NULL, &cfg));
    assert_string_equal(cfg.local_rank_source, launcher_vars[i]);
    assert_int_equal(cfg.local_rank, 10 + i);
  }
  /* The option wins over every variable. */
  kiln_options opts;
  kiln_options_init(&opts);
  opts.local_rank = 3;
  opts.local_rank_source = "the test";
  assert_kiln_ok(NULL, kiln__config_resolve(&opts, &cfg));
  assert_string_equal(cfg.local_rank_source, "the test");
  assert_int_equal(cfg.local_rank, 3);
  /* The error message lists them in the same order. */
  kiln__str vars = {0};
  kiln__local_rank_vars(&vars);
  assert_string_equal(kiln__str_get(&vars),
                      "LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, "
                      "SLURM_LOCALID, MV2_COMM_WORLD_LOCAL_RANK");
  kiln__str_free(&vars);
  unset_launchers();
}

static void test_local_rank_bad_values(void **state)
{
  (void)state;
  static const char *const bad[] = {"x", "-1", "1.5", "2x", "99999999999"};
  unset_launchers();
  kiln__config cfg;
  for (size_t i = 0; i < COUNT(bad); i++) {
    setenv("SLURM_LOCALID", bad[i], 1);
    assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV, "SLURM_LOCALID='",
                      kiln__config_resolve(NULL, &cfg));
    assert_non_null(strstr(kiln_last_error(NULL), bad[i]));
  }
  setenv("SLURM_LOCALID", "", 1); /* empty counts as unset */
  assert_kiln_ok(NULL, kiln__config_resolve(NULL, &cfg));
  assert_null(cfg.local_rank_source);
  unset_launchers();
}

/* A list of records: each a type, and whether it is a simulator. */
static kiln__device_list make_list(const uint64_t *types, const int *simulator, size_t n)
{
  kiln__device_list list = {0};
  list.items = calloc(n, sizeof *list.items);
  assert_non_null(list.items);
  list.count = n;
  for (size_t i = 0; i < n; i++) {
    kiln_device_info *d = &list.items[i].info;
    d->name = d->vendor = d->platform_name = d->platform_vendor = "";
    d->version = d->driver_version = d->opencl_c_version = d->extensions = "";
    d->platform_version = "";
    d->type = types[i];
    d->device_index = (unsigned)i;
    d->compute_units = 8;
    d->clock_mhz = 1000;
    d->global_mem_bytes = 1ull << 30;
    d->available = d->compiler_available = 1;
    d->is_simulator = simulator[i];
  }
  return list;
}

static size_t pick(const kiln__device_list *list, unsigned rank, kiln__str *why)
{
  kiln__local_rank lr = {rank, "LOCAL_RANK"};
  size_t chosen = SIZE_MAX;
  assert_kiln_ok(NULL, kiln__devices_local_rank(list, &lr, &chosen, why));
  return chosen;
}

static void test_local_rank_round_robin_over_best_type(void **state)
{
  (void)state;
  /* A CPU, two GPUs and a simulated GPU: the ranks spread over the GPUs. */
  const uint64_t types[] = {KILN_DEVICE_CPU, KILN_DEVICE_GPU, KILN_DEVICE_GPU,
                            KILN_DEVICE_GPU};
  const int simulator[] = {0, 0, 0, 1};
  kiln__device_list list = make_list(types, simulator, 4);
  const size_t expected[] = {1, 2, 1, 2, 1};
  for (unsigned r = 0; r < COUNT(expected); r++) {
    kiln__str why = {0};
    assert_int_equal(pick(&list, r, &why), expected[r]);
    const char *text = kiln__str_get(&why);
    assert_non_null(strstr(text, "LOCAL_RANK="));
    /* Ranks 2 and up share a device, and are told so. */
    assert_int_equal(strstr(text, "round-robin") != NULL, r >= 2);
    kiln__str_free(&why);
  }
  /* An unusable GPU is not counted. */
  list.items[2].info.available = 0;
  kiln__str why = {0};
  assert_int_equal(pick(&list, 1, &why), 1);
  kiln__str_free(&why);
  /* Nothing usable: an error, not a pick. */
  for (size_t i = 0; i < list.count; i++)
    list.items[i].info.available = 0;
  kiln__local_rank lr = {0, "LOCAL_RANK"};
  size_t chosen;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "no usable device",
                    kiln__devices_local_rank(&list, &lr, &chosen, &why));
  kiln__str_free(&why);
  free(list.items);
}

static void test_local_rank_keyword(void **state)
{
  (void)state;
  const uint64_t types[] = {KILN_DEVICE_CPU, KILN_DEVICE_CPU, KILN_DEVICE_CPU};
  const int simulator[] = {0, 0, 0};
  kiln__device_list list = make_list(types, simulator, 3);
  kiln__str why = {0};
  size_t chosen;
  /* No rank: the message names every launcher variable. */
  const kiln__local_rank none = {0};
  assert_kiln_fails(NULL, KILN_ERR_INVALID_DEVICE_SELECTOR,
                    "none of LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK",
                    kiln__devices_select_ranked(&list, "local-rank", "KILN_DEVICE", &none,
                                                &chosen, &why));
  assert_kiln_fails(
    NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "'local-rank' needs",
    kiln__devices_select(&list, "LOCAL-RANK", "KILN_DEVICE", &chosen, &why));
  /* With one, the keyword picks as the rank alone would. */
  const kiln__local_rank lr = {4, "OMPI_COMM_WORLD_LOCAL_RANK"};
  assert_kiln_ok(NULL, kiln__devices_select_ranked(&list, "local-rank", "KILN_DEVICE",
                                                   &lr, &chosen, &why));
  assert_int_equal(chosen, 1);
  /* A mask (and a group's selector) is no place for it. */
  assert_kiln_fails(
    NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "'local-rank' is not a device selector",
    kiln__devices_mask(&list, "0,local-rank", "KILN_VISIBLE_DEVICES", &why));
  int member[3];
  assert_kiln_fails(
    NULL, KILN_ERR_INVALID_DEVICE_SELECTOR, "'local-rank' is not a device selector",
    kiln__devices_group(&list, "local-rank", "KILN_DEVICES", member, &why));
  kiln__str_free(&why);
  free(list.items);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_local_rank_env_order),
    cmocka_unit_test(test_local_rank_bad_values),
    cmocka_unit_test(test_local_rank_round_robin_over_best_type),
    cmocka_unit_test(test_local_rank_keyword),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
