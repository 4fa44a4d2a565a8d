/*
 * test-env.c — environment variables and options: the size parser and how
 * KILN_MEMORY_LIMIT, KILN_PROFILE, KILN_TRACE, options and ignore_env
 * combine. No device needed: the configuration is checked before any
 * OpenCL call.
 */
#include "common.h"

#include "base/env.h"

static void test_env_parse_size_accepts(void **state)
{
  (void)state;
  static const struct {
    const char *text;
    uint64_t bytes;
    double fraction;
  } ok[] = {
    {"1", 1, 0},
    {"1048576", 1048576, 0},
    {"512K", 512ull << 10, 0},
    {"512k", 512ull << 10, 0},
    {"512KiB", 512ull << 10, 0},
    {"64M", 64ull << 20, 0},
    {"64MB", 64ull << 20, 0},
    {"2G", 2ull << 30, 0},
    {"1.5G", 3ull << 29, 0},
    {"0.5K", 512, 0},
    {"1T", 1ull << 40, 0},
    {"16777215T", 16777215ull << 40, 0},
    {"18446744073709551615", UINT64_MAX, 0},
    {"50%", 0, 0.5},
    {"100%", 0, 1.0},
    {"12.5%", 0, 0.125},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t bytes = 99;
    double fraction = 99;
    if (kiln__parse_size(ok[i].text, &bytes, &fraction) != 0)
      fail_msg("'%s' was refused", ok[i].text);
    assert_int_equal(bytes, ok[i].bytes);
    assert_true(fraction == ok[i].fraction);
  }
}

static void test_env_parse_size_refuses(void **state)
{
  (void)state;
  static const char *const bad[] = {
    "",
    "abc",
    "-1",
    "0",
    "0K",
    "0%",
    "101%",
    "1.5.5G",
    "12Q",
    "1 G",
    " 1G",
    "1G ",
    "G",
    ".",
    "%",
    "16777216T",
    /* 2^64 */ "18446744073709551616",
    "99999999999999999999999",
    "1e9",
    "0x10",
    "nan",
    "inf",
    "0.0001",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t bytes = 0;
    double fraction = 0;
    if (kiln__parse_size(bad[i], &bytes, &fraction) == 0)
      fail_msg("'%s' was accepted as %llu bytes, fraction %g", bad[i],
               (unsigned long long)bytes, fraction);
  }
  uint64_t bytes;
  double fraction;
  assert_int_equal(kiln__parse_size(NULL, &bytes, &fraction), -1);
}

static void test_env_memory_limit_from_env(void **state)
{
  (void)state;
  kiln__config cfg;
  setenv("KILN_MEMORY_LIMIT", "256M", 1);
  assert_int_equal(kiln__config_resolve(NULL, &cfg), KILN_OK);
  assert_int_equal(cfg.memory_limit, 256ull << 20);
  assert_string_equal(cfg.memory_source, "KILN_MEMORY_LIMIT");

  /* An option the caller set wins over the environment. */
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_limit = 1000;
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_int_equal(cfg.memory_limit, 1000);
  assert_string_equal(cfg.memory_source, "kiln_options");

  /* ignore_env: the variable is not read at all. */
  kiln_options_init(&opts);
  opts.ignore_env = 1;
  setenv("KILN_MEMORY_LIMIT", "not a size", 1);
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_int_equal(cfg.memory_limit, 0);
  unsetenv("KILN_MEMORY_LIMIT");
}

static void test_env_bad_value_is_named(void **state)
{
  (void)state;
  kiln_runtime *rt = (kiln_runtime *)&rt; /* must be reset to NULL */
  setenv("KILN_MEMORY_LIMIT", "lots", 1);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV, "KILN_MEMORY_LIMIT='lots'",
                    kiln_runtime_create(NULL, &rt));
  assert_null(rt);
  /* The message says what is expected. */
  assert_non_null(strstr(kiln_last_error(NULL), "suffix"));
  setenv("KILN_MEMORY_LIMIT", "150%", 1);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV, "'150%'", kiln_runtime_create(NULL, &rt));
  unsetenv("KILN_MEMORY_LIMIT");
}

/* KILN_PROFILE is 0 or 1 and fills an option left at 0; KILN_TRACE fills
 * kiln_options.trace; ignore_env reads neither. */
static void test_env_profile_and_trace(void **state)
{
  (void)state;
  kiln__config cfg;
  kiln_options opts;
  kiln_options_init(&opts);
  setenv("KILN_PROFILE", "1", 1);
  setenv("KILN_TRACE", "/tmp/t.json", 1);
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_true(cfg.profile);
  assert_string_equal(cfg.trace, "/tmp/t.json");
  assert_string_equal(cfg.trace_source, "KILN_TRACE");
  opts.trace = "mine.json";
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_string_equal(cfg.trace, "mine.json");
  assert_string_equal(cfg.trace_source, "kiln_options.trace");
  setenv("KILN_PROFILE", "0", 1);
  unsetenv("KILN_TRACE");
  kiln_options_init(&opts);
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_false(cfg.profile);
  assert_null(cfg.trace);
  setenv("KILN_PROFILE", "on", 1);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV, "KILN_PROFILE='on' is not 0 or 1",
                    kiln__config_resolve(&opts, &cfg));
  opts.ignore_env = 1;
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_false(cfg.profile);
  unsetenv("KILN_PROFILE");
}

/* KILN_CACHE_SHARED: 0 or 1, and the option wins over a 0. */
static void test_env_cache_shared(void **state)
{
  (void)state;
  kiln__config cfg;
  kiln_options opts;
  kiln_options_init(&opts);
  setenv("KILN_CACHE_SHARED", "1", 1);
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_true(cfg.cache_shared);
  setenv("KILN_CACHE_SHARED", "0", 1);
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_false(cfg.cache_shared);
  opts.cache_shared = 1;
  assert_int_equal(kiln__config_resolve(&opts, &cfg), KILN_OK);
  assert_true(cfg.cache_shared);
  opts.cache_shared = 0;
  setenv("KILN_CACHE_SHARED", "yes", 1);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ENV,
                    "KILN_CACHE_SHARED='yes' is not 0 or 1; expected 1 to accept a "
                    "team cache folder",
                    kiln__config_resolve(&opts, &cfg));
  unsetenv("KILN_CACHE_SHARED");
}

static void test_env_bad_options(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  kiln_options opts;
  kiln_options_init(&opts);
  opts.memory_fraction = 1.5;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "memory_fraction is 1.5",
                    kiln_runtime_create(&opts, &rt));
  opts.memory_fraction = -0.25;
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "memory_fraction",
                    kiln_runtime_create(&opts, &rt));
  assert_null(rt);
  assert_kiln_fails(NULL, KILN_ERR_INVALID_ARGUMENT, "out is NULL",
                    kiln_runtime_create(NULL, NULL));
  kiln_options_init(NULL); /* ignored, no crash */
  kiln_options_init(&opts);
  assert_int_equal(opts.memory_limit, 0);
  assert_true(opts.memory_fraction == 0);
  assert_int_equal(opts.ignore_env, 0);
}

int main(void)
{
  unsetenv("KILN_MEMORY_LIMIT");
  unsetenv("KILN_PROFILE");
  unsetenv("KILN_TRACE");
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_env_parse_size_accepts),
    cmocka_unit_test(test_env_parse_size_refuses),
    cmocka_unit_test(test_env_memory_limit_from_env),
    cmocka_unit_test(test_env_bad_value_is_named),
    cmocka_unit_test(test_env_profile_and_trace),
    cmocka_unit_test(test_env_cache_shared),
    cmocka_unit_test(test_env_bad_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
