/*
 * fuzz-desc.c — the operation descriptor validators: kiln__gemm_check,
 * kiln__reduce_check (+ kiln__reduce_choose), kiln__conv_check and
 * kiln__fft_check, which decide everything kiln_gemm(), kiln_reduce(),
 * kiln_conv2d() and kiln_fft() decide before they enqueue. They read only
 * the device record and the buffers' records, so they run here on a fake
 * runtime and fake buffers (no OpenCL context, no cl_mem).
 *
 * The input, read front to back (fuzz.h: a "size" is 1 byte below 0xe0,
 * else 2, 4 or 8 more, or 0xff and a power of two; a missing byte reads 0):
 *   byte  op: 0 gemm, 1 reduce, 2 conv2d, 3 fft (modulo 4)
 *   byte  device: bit 0 fp64, bit 1 fp16, bit 2 a CPU (else a GPU)
 *   size  the device's largest allocation in bytes (0: 1 GiB)
 *   the descriptor's fields as sizes, in the order read below
 *   per buffer: byte how (modulo 8: 1 NULL, 2 another runtime's, 3 of another
 *         dtype, 4 the same as the previous buffer, else as wanted) and size
 *         its element count (cut to what the device could allocate).
 *
 * Properties, beyond ASan and UBSan finding nothing:
 *  - a request that passes reaches no element outside its buffers, by an
 *    independent computation of what it reads and writes in 128-bit
 *    arithmetic, and only with sizes the kernels' 32-bit arguments carry
 *    exactly;
 *  - it passes only on a device that has what it needs (fp64), and with a
 *    backend that says it can run it;
 *  - a refusal is a negative status with a message in kiln_last_error(rt).
 */
#include <string.h>

#include "base/error.h"
#include "core/buffer.h"
#include "core/runtime.h"
#include "device/device.h"
#include "ops/ops.h"

#include "fuzz.h"

typedef fuzz_u128 u128;

#define LIMIT31 ((u128)1 << 31) /* kiln's kernels index with 32-bit ints */

static kiln__device device;
static kiln_runtime rt, other_rt;
static kiln_buffer slots[4];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  kiln__error_sink_set(&kiln__runtime_errors); /* as a runtime's creation does */
  pthread_mutex_init(&rt.lock, NULL);
  pthread_mutex_init(&other_rt.lock, NULL);
  rt.devices.items = &device;
  rt.devices.count = 1;
  other_rt.devices = rt.devices;
  return 0;
}

static void read_device(fuzz_input *in)
{
  uint8_t flags = fuzz_byte(in);
  uint64_t alloc = fuzz_size(in);
  kiln_device_info *d = &device.info;
  memset(&device, 0, sizeof device);
  d->name = "fuzz device";
  d->platform_name = "fuzz platform";
  d->has_fp64 = flags & 1;
  d->has_fp16 = (flags >> 1) & 1;
  d->type = flags & 4 ? KILN_DEVICE_CPU : KILN_DEVICE_GPU;
  d->vendor_family = flags & 4 ? KILN_VENDOR_POCL : KILN_VENDOR_NVIDIA;
  d->max_alloc_bytes = alloc ? alloc : (uint64_t)1 << 30;
  d->global_mem_bytes = d->max_alloc_bytes * 4;
  d->local_mem_bytes = 64 << 10;
  d->max_work_group_size = 1024;
  d->compute_units = 8;
  d->native_vector_width_float = 8;
  d->available = d->compiler_available = 1;
}

/* Buffer i (0-3) as the input says: a dtype `want` buffer by default. */
static kiln_buffer *read_buffer(fuzz_input *in, int i, kiln_dtype want)
{
  uint8_t how = fuzz_byte(in) % 8;
  uint64_t count = fuzz_size(in);
  kiln_buffer *b = &slots[i];
  if (how == 1)
    return NULL;
  if (how == 4 && i > 0)
    return &slots[i - 1];
  *b = (kiln_buffer){.rt = how == 2 ? &other_rt : &rt,
                     .dtype = how == 3 ? (kiln_dtype)(want % 7 + 1) : want};
  size_t es = kiln_dtype_size(b->dtype) ? kiln_dtype_size(b->dtype) : 1;
  uint64_t most = device.info.max_alloc_bytes / es; /* kiln_buffer_create's cap */
  b->count = (size_t)(count < most ? count : most);
  b->bytes = b->count * es;
  return b;
}

/* The buffer is the runtime's, of dtype, and holds elements [0, need). */
static void check_holds(const kiln_buffer *b, kiln_dtype dtype, u128 need)
{
  FUZZ_CHECK(b && b->rt == &rt && b->dtype == dtype && need <= b->count);
}

static void check_refused(kiln_status st)
{
  FUZZ_CHECK(st < 0 && rt.error != NULL && rt.error[0] != '\0');
}

static double read_scalar(fuzz_input *in)
{
  static const double values[] = {0, 1, -1, 0.5, 2, 65504, 65520, 1e-8, 1e300};
  return values[fuzz_byte(in) % (sizeof values / sizeof values[0])];
}

/* ---- gemm ------------------------------------------------------------------ */

/* One past the last element of operand op(X) (r x c), as stored. */
static u128 gemm_end(const kiln_gemm_desc *d, size_t r, size_t c, int trans, size_t ld,
                     size_t offset, size_t stride, size_t batch, u128 *extent)
{
  size_t rows = trans ? c : r, cols = trans ? r : c;
  int row_major = d->layout == KILN_ROW_MAJOR;
  size_t need = row_major ? cols : rows, lines = row_major ? rows : cols;
  u128 l = ld ? ld : need;
  FUZZ_CHECK(l >= need);
  *extent = (u128)(lines - 1) * l + need;
  u128 s = stride ? stride : (u128)lines * l;
  return offset + (u128)(batch - 1) * s + *extent;
}

static void fuzz_gemm(fuzz_input *in)
{
  kiln_gemm_desc d = {.struct_size = sizeof(kiln_gemm_desc)};
  d.dtype = (kiln_dtype)fuzz_size(in);
  d.layout = (kiln_layout)fuzz_size(in);
  d.trans_a = (kiln_transpose)fuzz_size(in);
  d.trans_b = (kiln_transpose)fuzz_size(in);
  d.m = fuzz_size(in), d.n = fuzz_size(in), d.k = fuzz_size(in);
  d.lda = fuzz_size(in), d.ldb = fuzz_size(in), d.ldc = fuzz_size(in);
  d.offset_a = fuzz_size(in), d.offset_b = fuzz_size(in), d.offset_c = fuzz_size(in);
  d.batch = fuzz_size(in);
  d.stride_a = fuzz_size(in), d.stride_b = fuzz_size(in), d.stride_c = fuzz_size(in);
  d.backend = (kiln_backend)fuzz_size(in);
  d.alpha = read_scalar(in);
  d.beta = read_scalar(in);
  const kiln_buffer *a = read_buffer(in, 0, d.dtype), *b = read_buffer(in, 1, d.dtype);
  kiln_buffer *c = read_buffer(in, 2, d.dtype);

  kiln__gemm g;
  const kiln__gemm_backend *be = NULL;
  kiln_status st = kiln__gemm_check(&rt, &d, a, b, c, &g, &be);
  if (st != KILN_OK) {
    check_refused(st);
    return;
  }
  FUZZ_CHECK(d.dtype == KILN_F16 || d.dtype == KILN_F32 ||
             (d.dtype == KILN_F64 && device.info.has_fp64));
  FUZZ_CHECK(d.layout <= KILN_COL_MAJOR && d.trans_a <= KILN_TRANS &&
             d.trans_b <= KILN_TRANS);
  FUZZ_CHECK(d.m && d.n && d.k && d.m <= UINT32_MAX && d.n <= UINT32_MAX &&
             d.k <= UINT32_MAX);
  size_t batch = d.batch ? d.batch : 1;
  u128 ea, eb, ec;
  check_holds(a, d.dtype,
              gemm_end(&d, d.m, d.k, d.trans_a == KILN_TRANS, d.lda, d.offset_a,
                       d.stride_a, batch, &ea));
  check_holds(b, d.dtype,
              gemm_end(&d, d.k, d.n, d.trans_b == KILN_TRANS, d.ldb, d.offset_b,
                       d.stride_b, batch, &eb));
  check_holds(c, d.dtype,
              gemm_end(&d, d.m, d.n, 0, d.ldc, d.offset_c, d.stride_c, batch, &ec));
  /* the batch's C matrices do not overlap: each is written once */
  FUZZ_CHECK(batch == 1 || (d.stride_c ? d.stride_c : ec) >= ec);
  FUZZ_CHECK(g.batch == batch && g.k == d.k && g.m * g.n == d.m * d.n);
  FUZZ_CHECK(be != NULL && be->cannot(&rt, &g) == NULL);
}

/* ---- reduce ---------------------------------------------------------------- */

static void fuzz_reduce(fuzz_input *in)
{
  kiln_reduce_desc d = {.struct_size = sizeof(kiln_reduce_desc)};
  d.op = (kiln_reduce_op)fuzz_size(in);
  d.dtype = (kiln_dtype)fuzz_size(in);
  d.ndim = (unsigned)fuzz_size(in);
  for (unsigned i = 0; i < 8; i++)
    d.shape[i] = fuzz_size(in);
  uint64_t axis = fuzz_size(in);
  /* 0-7: that axis; 8-15: -8 to -1, from the end; 0xdf: every element */
  d.axis = axis == 0xdf ? KILN_AXIS_ALL
           : axis < 16  ? (int32_t)axis - (axis >= 8 ? 16 : 0)
                        : (int32_t)(uint32_t)axis;
  d.offset = fuzz_size(in);
  d.backend = (kiln_backend)fuzz_size(in);
  kiln_dtype out_type = kiln_reduce_out_dtype(d.op, d.dtype);
  const kiln_buffer *src = read_buffer(in, 0, d.dtype);
  kiln_buffer *dst = read_buffer(in, 1, out_type);

  kiln__reduce r;
  size_t count = 0, outputs = 0;
  kiln_status st = kiln__reduce_check(&rt, &d, src, dst, &r, &count, &outputs);
  if (st != KILN_OK) {
    check_refused(st);
    return;
  }
  FUZZ_CHECK(out_type != 0 && d.ndim >= 1 && d.ndim <= 8);
  FUZZ_CHECK(device.info.has_fp64 || (d.dtype != KILN_F64 && out_type != KILN_F64));
  int all = d.axis == KILN_AXIS_ALL;
  int axis_at = all ? -1 : d.axis < 0 ? d.axis + (int)d.ndim : d.axis;
  FUZZ_CHECK(all || (axis_at >= 0 && axis_at < (int)d.ndim));
  u128 elements = 1, results = 1;
  for (unsigned i = 0; i < d.ndim; i++) {
    elements *= d.shape[i];
    if (!all && (int)i != axis_at)
      results *= d.shape[i];
    if (elements > SIZE_MAX) /* keep the products from wrapping u128 */
      elements = (u128)SIZE_MAX + 1;
    if (results > SIZE_MAX)
      results = (u128)SIZE_MAX + 1;
  }
  FUZZ_CHECK(count == elements && outputs == results);
  FUZZ_CHECK((u128)r.outer * r.len * r.inner == elements);
  FUZZ_CHECK(r.out_type == out_type && r.in_type == d.dtype);
  check_holds(src, d.dtype, (u128)d.offset + elements);
  check_holds(dst, out_type, results);
  if (outputs == 0 || r.len == 0)
    return; /* kiln_reduce() enqueues nothing, or fills the identity */
  const kiln__reduce_backend *be = NULL;
  st = kiln__reduce_choose(&rt, d.backend, &r, &be);
  if (st != KILN_OK)
    check_refused(st);
  else
    FUZZ_CHECK(be && be->cannot(&rt, &r) == NULL);
}

/* ---- conv2d ---------------------------------------------------------------- */

/* The output side, exactly; 0 when there is none. */
static u128 conv_side(size_t in, size_t pad_a, size_t pad_b, size_t f, size_t dil,
                      size_t stride, u128 *padded)
{
  *padded = (u128)in + pad_a + pad_b;
  u128 span = (u128)(dil ? dil : 1) * (f - 1) + 1;
  return f == 0 || span > *padded ? 0 : (*padded - span) / (stride ? stride : 1) + 1;
}

static void fuzz_conv(fuzz_input *in)
{
  kiln_conv2d_desc d = {.struct_size = sizeof(kiln_conv2d_desc)};
  d.dtype = (kiln_dtype)fuzz_size(in);
  d.layout = (kiln_tensor_layout)fuzz_size(in);
  d.n = fuzz_size(in), d.c = fuzz_size(in), d.h = fuzz_size(in), d.w = fuzz_size(in);
  d.k = fuzz_size(in), d.r = fuzz_size(in), d.s = fuzz_size(in);
  d.stride_h = fuzz_size(in), d.stride_w = fuzz_size(in);
  d.pad_top = fuzz_size(in), d.pad_bottom = fuzz_size(in);
  d.pad_left = fuzz_size(in), d.pad_right = fuzz_size(in);
  d.dilation_h = fuzz_size(in), d.dilation_w = fuzz_size(in);
  d.groups = fuzz_size(in);
  d.relu = fuzz_byte(in) & 1;
  d.backend = (kiln_backend)fuzz_size(in);
  const kiln_buffer *x = read_buffer(in, 0, d.dtype), *w = read_buffer(in, 1, d.dtype);
  const kiln_buffer *bias = read_buffer(in, 2, d.dtype);
  kiln_buffer *y = read_buffer(in, 3, d.dtype);

  /* kiln_conv2d_output() agrees with the full check on the sizes */
  size_t op = 0, oq = 0;
  kiln_status out_st = kiln_conv2d_output(&d, &op, &oq);

  kiln__conv cv;
  const kiln__conv_backend *be = NULL;
  kiln_status st = kiln__conv_check(&rt, &d, x, w, bias, y, &cv, &be);
  if (st != KILN_OK) {
    check_refused(st);
    return;
  }
  FUZZ_CHECK(out_st == KILN_OK && op == cv.p && oq == cv.q);
  FUZZ_CHECK(d.dtype == KILN_F16 || d.dtype == KILN_F32 ||
             (d.dtype == KILN_F64 && device.info.has_fp64));
  FUZZ_CHECK(d.layout <= KILN_NHWC);
  size_t groups = d.groups ? d.groups : 1;
  FUZZ_CHECK(d.n && d.c && d.h && d.w && d.k && d.r && d.s);
  FUZZ_CHECK(d.c % groups == 0 && d.k % groups == 0);
  u128 ph, pw;
  u128 p = conv_side(d.h, d.pad_top, d.pad_bottom, d.r, d.dilation_h, d.stride_h, &ph);
  u128 q = conv_side(d.w, d.pad_left, d.pad_right, d.s, d.dilation_w, d.stride_w, &pw);
  FUZZ_CHECK(p >= 1 && q >= 1 && p == cv.p && q == cv.q);
  /* The kernels compute an input row as (int)(pi * sh + ri * dh) - (int)pt
   * in 32 bits: exact while the padded input stays below 2^31. */
  FUZZ_CHECK(ph < LIMIT31 && pw < LIMIT31);
  size_t dims[] = {d.n, d.c, d.h, d.w, d.k, d.r, d.s};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    FUZZ_CHECK(dims[i] < LIMIT31);
  check_holds(x, d.dtype, (u128)d.n * d.c * d.h * d.w);
  check_holds(w, d.dtype, (u128)d.k * (d.c / groups) * d.r * d.s);
  if (bias)
    check_holds(bias, d.dtype, d.k);
  check_holds(y, d.dtype, (u128)d.n * d.k * p * q);
  FUZZ_CHECK(be != NULL && be->cannot(&rt, &cv) == NULL);
}

/* ---- fft ------------------------------------------------------------------- */

static void fuzz_fft(fuzz_input *in)
{
  kiln_fft_desc d = {.struct_size = sizeof(kiln_fft_desc)};
  d.kind = (kiln_fft_kind)fuzz_size(in);
  d.dtype = (kiln_dtype)fuzz_size(in);
  d.ndim = (unsigned)fuzz_size(in);
  for (unsigned i = 0; i < 3; i++)
    d.shape[i] = fuzz_size(in);
  d.batch = fuzz_size(in);
  d.inverse = fuzz_byte(in) & 1;
  d.norm = (kiln_fft_norm)fuzz_size(in);
  d.backend = (kiln_backend)fuzz_size(in);
  kiln_dtype real = d.dtype, cplx = d.dtype == KILN_F64 ? KILN_C64 : KILN_C32;
  kiln_dtype in_type = d.kind == KILN_FFT_R2C ? real : cplx;
  kiln_dtype out_type = d.kind == KILN_FFT_C2R ? real : cplx;
  const kiln_buffer *src = read_buffer(in, 0, in_type);
  kiln_buffer *dst = read_buffer(in, 1, out_type);

  kiln__fft f;
  const kiln__fft_backend *be[3] = {NULL, NULL, NULL};
  unsigned n = 0;
  kiln_status st = kiln__fft_check(&rt, &d, src, dst, &f, be, &n);
  if (st != KILN_OK) {
    check_refused(st);
    FUZZ_CHECK(n == 0);
    return;
  }
  FUZZ_CHECK(d.kind <= KILN_FFT_C2R && d.norm <= KILN_FFT_NORM_FORWARD);
  FUZZ_CHECK(d.dtype == KILN_F32 || (d.dtype == KILN_F64 && device.info.has_fp64));
  FUZZ_CHECK(d.ndim >= 1 && d.ndim <= 3);
  u128 full = d.batch ? d.batch : 1, half = full;
  for (unsigned i = 0; i < d.ndim; i++) {
    FUZZ_CHECK(d.shape[i] >= 1);
    full *= d.shape[i];
    half *= i + 1 == d.ndim ? d.shape[i] / 2 + 1 : d.shape[i];
    FUZZ_CHECK(full <= SIZE_MAX); /* then half, at most full + batch, fits too */
  }
  u128 in_count = d.kind == KILN_FFT_C2R ? half : full;
  u128 out_count = d.kind == KILN_FFT_R2C ? half : full;
  FUZZ_CHECK(f.in_count == in_count && f.out_count == out_count);
  check_holds(src, in_type, in_count);
  check_holds(dst, out_type, out_count);
  FUZZ_CHECK(src != dst);
  FUZZ_CHECK(n >= 1 && n <= 3);
  for (unsigned i = 0; i < n; i++)
    FUZZ_CHECK(be[i] != NULL && be[i]->cannot(&rt, &f) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static void (*const ops[4])(fuzz_input *) = {fuzz_gemm, fuzz_reduce, fuzz_conv,
                                               fuzz_fft};
  fuzz_input in = {data, size};
  uint8_t op = fuzz_byte(&in) % 4;
  read_device(&in);
  ops[op](&in);
  free(rt.error);
  rt.error = NULL;
  free(other_rt.error);
  other_rt.error = NULL;
  return 0;
}
