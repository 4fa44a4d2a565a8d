/*
 * test-rules.c — AUTO's rules for a GPU-shaped device (issue 39): what
 * conv's, FFT's and GEMM's rules pick for each case of `kiln bench`, as
 * docs/performance.md derives them from an H200's figures, and the
 * choices that are structural on any GPU (a depthwise layer never goes
 * through im2col). The rules are pure functions of the request and of the
 * device's shape, so most cases need no device; the last runs the real
 * choice on the device of the run in a GPU's shape (KILN_TEST_SHAPE=gpu,
 * set by meson), as the H200 would take it. No timing decides anything.
 */
#define KILN_EXPERIMENTAL
#include "common.h"

#include "kiln_config.h"
#include "ops/ops.h"
#include "tuning/tuning.h"

/* `kiln bench conv`'s layers (bench_conv.c): 3x3, 1x1, 7x7/2, dw3x3,
 * 1x1 NHWC. */
static kiln_conv2d_desc layer(int which)
{
  static const struct {
    size_t n, c, hw, k, rs, stride, groups;
    int nhwc;
  } l[] = {{8, 64, 56, 64, 3, 1, 1, 0},
           {8, 256, 56, 64, 1, 1, 1, 0},
           {8, 3, 224, 64, 7, 2, 1, 0},
           {8, 128, 56, 128, 3, 1, 128, 0},
           {256, 784, 1, 512, 1, 1, 1, 1}};
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, KILN_F32, l[which].n, l[which].c, l[which].hw, l[which].hw,
                        l[which].k, l[which].rs, l[which].rs);
  d.stride_h = d.stride_w = l[which].stride;
  d.groups = l[which].groups;
  d.layout = l[which].nhwc ? KILN_NHWC : KILN_NCHW;
  return d;
}

enum { L3X3, L1X1, L7X7S2, LDW3X3, L1X1NHWC };

static void test_conv_gpu_bench_layers(void **state)
{
  (void)state;
  /* With CLBlast's convgemm able to run the layer (it has no groups). */
  static const kiln_backend with[] = {KILN_BACKEND_CLBLAST, KILN_BACKEND_IM2COL,
                                      KILN_BACKEND_CLBLAST, KILN_BACKEND_DIRECT,
                                      KILN_BACKEND_IM2COL};
  /* Without CLBlast: the direct backend's implicit GEMM for the 3x3 and
   * 7x7/2 layers, its depthwise kernel for dw3x3. */
  static const kiln_backend without[] = {KILN_BACKEND_DIRECT, KILN_BACKEND_IM2COL,
                                         KILN_BACKEND_DIRECT, KILN_BACKEND_DIRECT,
                                         KILN_BACKEND_IM2COL};
  for (int i = L3X3; i <= L1X1NHWC; i++) {
    kiln_conv2d_desc d = layer(i);
    assert_int_equal(kiln__conv_rule(&d, 1, d.groups == 1), with[i]);
    assert_int_equal(kiln__conv_rule(&d, 1, 0), without[i]);
  }
}

/* On a GPU a depthwise layer goes to the direct kernel at every filter
 * size, stride and channel count, CLBlast or not: im2col's matrix there is
 * one row per group. */
static void test_conv_gpu_depthwise_never_im2col(void **state)
{
  (void)state;
  static const size_t sizes[] = {1, 3, 5, 7, 9, 11};
  for (size_t r = 0; r < COUNT(sizes); r++)
    for (size_t stride = 1; stride <= 2; stride++)
      for (size_t c = 8; c <= 1024; c *= 4)
        for (int clblast = 0; clblast <= 1; clblast++) {
          kiln_conv2d_desc d;
          kiln_conv2d_desc_init(&d, KILN_F32, 1, c, 32, 32, c, sizes[r], sizes[r]);
          d.groups = c;
          d.stride_h = d.stride_w = stride;
          assert_int_equal(kiln__conv_rule(&d, 1, clblast), KILN_BACKEND_DIRECT);
          /* and the direct backend runs them with the depthwise kernel,
           * multiplier 2 too, which the CPU shape never takes */
          assert_true(kiln__conv_depthwise_kernel(&d, 1));
          assert_false(kiln__conv_depthwise_kernel(&d, 0));
          d.k = 2 * c;
          assert_true(kiln__conv_depthwise_kernel(&d, 1));
        }
}

/* The depthwise kernel takes the bench's layer, and leaves to the direct
 * kernel what is not depthwise or whose input tile outgrows its local
 * memory (a dilation of 40 stages 88 x 144 inputs). */
static void test_conv_gpu_depthwise_kernel(void **state)
{
  (void)state;
  kiln_conv2d_desc d = layer(LDW3X3);
  assert_true(kiln__conv_depthwise_kernel(&d, 1));
  d.layout = KILN_NHWC;
  assert_true(kiln__conv_depthwise_kernel(&d, 1));
  d.dilation_h = d.dilation_w = 40;
  assert_false(kiln__conv_depthwise_kernel(&d, 1));
  d = layer(LDW3X3);
  d.groups = 64; /* two channels a group */
  assert_false(kiln__conv_depthwise_kernel(&d, 1));
  d = layer(L3X3);
  assert_false(kiln__conv_depthwise_kernel(&d, 1));
}

/* The implicit GEMM takes the bench's 3x3 and 7x7/2 layers on a GPU, in
 * both layouts, and leaves depthwise layers, thin depths (under its
 * slice of 16) and few output channels a group to the others. */
static void test_conv_gpu_implicit_gemm(void **state)
{
  (void)state;
  static const int takes[] = {L3X3, L7X7S2};
  for (size_t i = 0; i < COUNT(takes); i++) {
    kiln_conv2d_desc d = layer(takes[i]);
    assert_true(kiln__conv_implicit_gemm(&d, 1));
    assert_false(kiln__conv_implicit_gemm(&d, 0));
    d.layout = KILN_NHWC;
    assert_true(kiln__conv_implicit_gemm(&d, 1));
  }
  kiln_conv2d_desc d = layer(LDW3X3);
  assert_false(kiln__conv_implicit_gemm(&d, 1));
  d.groups = 16; /* 8 channels and outputs a group: a depth of 72 */
  assert_true(kiln__conv_implicit_gemm(&d, 1));
  d = layer(L1X1);
  d.c = 64, d.groups = 8; /* a 1x1 filter over 8 channels: a depth of 8 */
  assert_false(kiln__conv_implicit_gemm(&d, 1));
  d = layer(L3X3);
  d.k = 2 * 4, d.groups = 2; /* 4 output channels a group */
  assert_false(kiln__conv_implicit_gemm(&d, 1));
}

/* A CPU's rule is the one PoCL's figures set: im2col where a group's
 * reduction is long, direct where it is short. */
static void test_conv_cpu_rule(void **state)
{
  (void)state;
  kiln_conv2d_desc d = layer(L3X3);
  assert_int_equal(kiln__conv_rule(&d, 0, 1), KILN_BACKEND_IM2COL);
  d = layer(LDW3X3);
  assert_int_equal(kiln__conv_rule(&d, 0, 0), KILN_BACKEND_DIRECT);
  d = layer(L7X7S2);
  assert_int_equal(kiln__conv_rule(&d, 0, 1), KILN_BACKEND_IM2COL);
}

static void order_of(size_t n0, size_t n1, int gpu, kiln_backend out[3])
{
  kiln_fft_desc d;
  kiln_fft_desc_init(&d, KILN_F32, n0);
  if (n1) {
    d.ndim = 2;
    d.shape[1] = n1;
  }
  kiln__fft_rule(&d, gpu, out);
}

/* `kiln bench fft`'s cases: on a GPU VkFFT first at every one; then clFFT,
 * but for the 1-D length of 2^20, where kiln's passes ran ahead of it. */
static void test_fft_gpu_order(void **state)
{
  (void)state;
  static const size_t cases[][2] = {
    {1 << 12, 0}, {1 << 16, 0}, {1 << 20, 0}, {256, 256}, {1024, 1024}};
  for (size_t i = 0; i < COUNT(cases); i++) {
    kiln_backend o[3];
    order_of(cases[i][0], cases[i][1], 1, o);
    int long_1d = i == 2;
    assert_int_equal(o[0], KILN_BACKEND_VKFFT);
    assert_int_equal(o[1], long_1d ? KILN_BACKEND_KILN : KILN_BACKEND_CLFFT);
    assert_int_equal(o[2], long_1d ? KILN_BACKEND_CLFFT : KILN_BACKEND_KILN);
    order_of(cases[i][0], cases[i][1], 0, o);
    assert_int_equal(o[0], KILN_BACKEND_KILN);
    assert_int_equal(o[1], KILN_BACKEND_VKFFT);
    assert_int_equal(o[2], KILN_BACKEND_CLFFT);
  }
}

/* The real choices, on the run's device in a GPU's shape: GEMM goes to
 * CLBlast where it is built in; a depthwise layer whose reduction is long
 * enough for the CPU's rule to take im2col (9x9 taps) goes to the direct
 * kernel; a 3x3 layer to CLBlast, or without it to the direct kernel. */
static void test_gpu_shape_choices(void **state)
{
  (void)state;
  kiln_runtime *rt = NULL;
  assert_int_equal(kiln_runtime_create(NULL, &rt), KILN_OK);
  if (!kiln__gpu_shape(rt)) {
    kiln_runtime_destroy(rt);
    skip(); /* run without meson's KILN_TEST_SHAPE=gpu */
  }
  kiln_gemm_desc g;
  kiln_gemm_desc_init(&g, KILN_F32, 1024, 1024, 1024);
  assert_int_equal(kiln_gemm_backend_for(rt, &g),
                   HAVE_CLBLAST ? KILN_BACKEND_CLBLAST : KILN_BACKEND_KILN);
  static const struct {
    size_t c, rs, groups;
    kiln_backend want;
  } cases[] = {{16, 9, 16, KILN_BACKEND_DIRECT},
               {16, 3, 16, KILN_BACKEND_DIRECT},
               {16, 3, 1, HAVE_CLBLAST ? KILN_BACKEND_CLBLAST : KILN_BACKEND_DIRECT}};
  for (size_t i = 0; i < COUNT(cases); i++) {
    kiln_conv2d_desc d;
    size_t c = cases[i].c, rs = cases[i].rs;
    kiln_conv2d_desc_init(&d, KILN_F32, 1, c, 16, 16, c, rs, rs);
    d.groups = cases[i].groups;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = (rs - 1) / 2;
    kiln_buffer *x = NULL, *w = NULL, *y = NULL;
    assert_int_equal(kiln_buffer_create(rt, KILN_F32, c * 16 * 16, 0, &x), KILN_OK);
    assert_int_equal(kiln_buffer_create(rt, KILN_F32, c * c / d.groups * rs * rs, 0, &w),
                     KILN_OK);
    assert_int_equal(kiln_buffer_create(rt, KILN_F32, c * 16 * 16, 0, &y), KILN_OK);
    kiln__conv cv;
    const kiln__conv_backend *be = NULL;
    assert_int_equal(kiln__conv_check(rt, &d, x, w, NULL, y, &cv, &be), KILN_OK);
    assert_int_equal(be->id, cases[i].want);
    kiln_buffer_destroy(x);
    kiln_buffer_destroy(w);
    kiln_buffer_destroy(y);
  }
  kiln_runtime_destroy(rt);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_conv_gpu_bench_layers),
    cmocka_unit_test(test_conv_gpu_depthwise_never_im2col),
    cmocka_unit_test(test_conv_gpu_depthwise_kernel),
    cmocka_unit_test(test_conv_gpu_implicit_gemm),
    cmocka_unit_test(test_conv_cpu_rule),
    cmocka_unit_test(test_fft_gpu_order),
    cmocka_unit_test(test_gpu_shape_choices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
