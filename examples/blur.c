/*
 * blur.c — a Gaussian blur of a PNG image with kiln_conv2d. The image's
 * channels (gray or RGB, with or without alpha; alpha is blurred like the
 * others) go to the device as float planes, 1 x C x H x W, and one
 * depthwise convolution (groups = channels) blurs each plane by itself with
 * the same Gaussian filter. Zero padding by the filter's radius keeps the
 * size, but the zeros would darken the edges: so a plane of ones is blurred
 * alongside, giving at each pixel the weight of the filter that lies inside
 * the image, and each blurred value is divided by it. Checked against the
 * same blur computed in double precision on the host; written as 8-bit PNG.
 *
 *   run: ./blur IN.png OUT.png [SIGMA]   (in pixels, 2 by default)
 */
#include <float.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/kiln.h>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if ((call) != KILN_OK) {                                                             \
      fprintf(stderr, "blur: %s: %s\n", #call, kiln_last_error(rt));                     \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

/* Plane ch of in (h x w) blurred at (y, x) with the filter g[i] * g[j], in
 * double and directly: only the taps inside the image, over their weight. */
static double reference(const float *in, size_t h, size_t w, size_t ch, const double *g,
                        long r, size_t y, size_t x)
{
  double sum = 0, weight = 0;
  for (long i = -r; i <= r; i++)
    for (long j = -r; j <= r; j++) {
      long yy = (long)y + i, xx = (long)x + j;
      if (yy < 0 || xx < 0 || yy >= (long)h || xx >= (long)w)
        continue;
      sum += g[i + r] * g[j + r] * in[(ch * h + (size_t)yy) * w + (size_t)xx];
      weight += g[i + r] * g[j + r];
    }
  return sum / weight;
}

int main(int argc, char **argv)
{
  double sigma = argc > 3 ? atof(argv[3]) : 2.0;
  if (argc < 3 || argc > 4 || !(sigma >= 0.1 && sigma <= 15)) {
    fprintf(stderr, "usage: blur IN.png OUT.png [SIGMA]   (0.1 to 15 pixels)\n");
    return 2;
  }
  png_image img = {.version = PNG_IMAGE_VERSION};
  if (!png_image_begin_read_from_file(&img, argv[1])) {
    fprintf(stderr, "blur: %s: %s\n", argv[1], img.message);
    return 1;
  }
  img.format &= PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA; /* 8-bit, no palette */
  size_t h = img.height, w = img.width, hw = h * w;
  size_t c = PNG_IMAGE_SAMPLE_CHANNELS(img.format), planes = c + 1; /* + the ones */
  long r = (long)ceil(3 * sigma), n = 2 * r + 1;                    /* filter n x n */
  unsigned char *pixels = malloc(PNG_IMAGE_SIZE(img));
  float *in = malloc(planes * hw * sizeof(float)),
        *out = malloc(planes * hw * sizeof(float));
  float *filter = malloc(planes * (size_t)(n * n) * sizeof(float));
  double *g = malloc((size_t)n * sizeof(double)), gsum = 0;
  if (!pixels || !in || !out || !filter || !g) {
    fprintf(stderr, "blur: %s: %zu x %zu pixels: out of memory\n", argv[1], w, h);
    return 1;
  }
  if (!png_image_finish_read(&img, NULL, pixels, 0, NULL)) {
    fprintf(stderr, "blur: %s: %s\n", argv[1], img.message);
    return 1;
  }
  for (size_t ch = 0; ch < planes; ch++) /* interleaved bytes to planes */
    for (size_t i = 0; i < hw; i++)
      in[ch * hw + i] = ch < c ? pixels[i * c + ch] : 1.0f;
  for (long i = 0; i < n; i++)
    gsum += g[i] = exp(-(double)((i - r) * (i - r)) / (2 * sigma * sigma));
  for (size_t ch = 0; ch < planes; ch++) /* the same filter for every plane */
    for (long i = 0; i < n * n; i++)
      filter[ch * (size_t)(n * n) + (size_t)i] =
        (float)(g[i / n] * g[i % n] / gsum / gsum);

  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(NULL, &rt) != KILN_OK) {
    fprintf(stderr, "blur: %s\n", kiln_last_error(NULL));
    return 1;
  }
  kiln_conv2d_desc desc; /* NCHW: 1 image of `planes` channels, `planes` filters */
  kiln_conv2d_desc_init(&desc, KILN_F32, 1, planes, h, w, planes, (size_t)n, (size_t)n);
  desc.groups = planes; /* depthwise: each plane with its own filter */
  desc.pad_top = desc.pad_bottom = desc.pad_left = desc.pad_right = (size_t)r;
  kiln_buffer *x, *weights, *y;
  CHECK(kiln_buffer_create(rt, KILN_F32, planes * hw, 0, &x));
  CHECK(kiln_buffer_create(rt, KILN_F32, planes * (size_t)(n * n), 0, &weights));
  CHECK(kiln_buffer_create(rt, KILN_F32, planes * hw, 0, &y));
  CHECK(kiln_buffer_write(x, 0, planes * hw, in));
  CHECK(kiln_buffer_write(weights, 0, planes * (size_t)(n * n), filter));
  CHECK(kiln_conv2d(rt, &desc, x, weights, NULL, y));
  CHECK(kiln_buffer_read(y, 0, planes * hw, out)); /* blocking: waits for the blur */

  /* Each value is a ratio of two float sums of n*n products (weights that
   * add up to 1, pixels <= 255), each within n*n units of rounding of its
   * exact value, plus the weights' own rounding; a large image is sampled. */
  double tol = 255.0 * (double)(n * n + 2) * FLT_EPSILON, worst = 0;
  size_t step = 1 + hw * c * (size_t)(n * n) / 200000000, checked = 0, bad = 0;
  for (size_t ch = 0; ch < c; ch++)
    for (size_t i = 0; i < hw; i++) {
      float v = out[ch * hw + i] / out[c * hw + i];
      if (i % step == 0) {
        double d = fabs(v - reference(in, h, w, ch, g, r, i / w, i % w));
        worst = fmax(worst, d), bad += !(d <= tol), checked++; /* NaN: bad */
      }
      pixels[i * c + ch] = (unsigned char)lrintf(fminf(fmaxf(v, 0.0f), 255.0f));
    }
  int ok = png_image_write_to_file(&img, argv[2], 0, pixels, 0, NULL);
  if (!ok)
    fprintf(stderr, "blur: %s: %s\n", argv[2], img.message);
  printf("blur on %s: %s, %zu x %zu, channels: %zu, sigma %g (a %ld x %ld filter): "
         "%zu values against the host's, largest difference %.2g levels (at most "
         "%.2g), %zu beyond%s%s\n",
         kiln_runtime_device(rt)->name, argv[1], w, h, c, sigma, n, n, checked, worst,
         tol, bad, ok ? "; wrote " : "", ok ? argv[2] : "");
  kiln_buffer_destroy(x), kiln_buffer_destroy(weights), kiln_buffer_destroy(y);
  kiln_runtime_destroy(rt);
  free(pixels), free(in), free(out), free(filter), free(g);
  return ok && bad == 0 ? 0 : 1;
}
