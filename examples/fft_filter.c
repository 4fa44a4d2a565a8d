/*
 * fft_filter.c — a low-pass filter through the FFT: a signal made of a slow
 * wave and fast noise goes to the frequency domain (kiln_fft, R2C), the
 * bins above the cut-off are cleared by one kiln_elementwise pass, and the
 * inverse (C2R) gives the slow wave back. Checked against the slow wave
 * itself, which the filter must reproduce to float rounding.
 *
 *   run: ./fft_filter
 */
#include <math.h>
#include <stdio.h>

#include <kiln/kiln.h>

enum { N = 4096, CUT = 64 }; /* the wave has 5 cycles, the noise >= 300 */

#define TAU 6.283185307179586

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if ((call) != KILN_OK) {                                                             \
      fprintf(stderr, "fft_filter: %s: %s\n", #call, kiln_last_error(rt));               \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

int main(void)
{
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(NULL, &rt) != KILN_OK) {
    fprintf(stderr, "fft_filter: %s\n", kiln_last_error(NULL));
    return 1;
  }
  static float signal[N], out[N];
  for (int t = 0; t < N; t++) {
    double wave = sin(TAU * 5 * t / N);
    double noise = 0.3 * sin(TAU * 300 * t / N) + 0.2 * cos(TAU * 1111 * t / N + 1);
    signal[t] = (float)(wave + noise);
  }
  kiln_buffer *x, *spectrum, *y;
  CHECK(kiln_buffer_create(rt, KILN_F32, N, 0, &x));
  CHECK(kiln_buffer_create(rt, KILN_C32, N / 2 + 1, 0, &spectrum));
  CHECK(kiln_buffer_create(rt, KILN_F32, N, 0, &y));
  CHECK(kiln_buffer_write(x, 0, N, signal));

  kiln_fft_desc forward, inverse;
  kiln_fft_desc_init(&forward, KILN_F32, N);
  forward.kind = KILN_FFT_R2C;
  inverse = forward;
  inverse.kind = KILN_FFT_C2R; /* scaled by 1/N: numpy's irfft */
  kiln_elementwise *low_pass;
  CHECK(kiln_elementwise_create(rt, "float2 *s, ulong cut",
                                "if (i >= cut) s[i] = (float2)(0.0f, 0.0f)", &low_pass));

  CHECK(kiln_fft(rt, &forward, x, spectrum));
  CHECK(kiln_elementwise_run(low_pass, N / 2 + 1, spectrum, (uint64_t)CUT));
  CHECK(kiln_fft(rt, &inverse, spectrum, y));
  CHECK(kiln_buffer_read(y, 0, N, out));

  double worst = 0, noise_in = 0;
  for (int t = 0; t < N; t++) {
    double wave = sin(TAU * 5 * t / N);
    worst = fmax(worst, fabs(out[t] - wave));
    noise_in = fmax(noise_in, fabs(signal[t] - wave));
  }
  printf("fft_filter on %s: %d points, bins from %d cleared: the wave's largest error "
         "%.2g (the noise was %.2g)\n",
         kiln_runtime_device(rt)->name, N, CUT, worst, noise_in);
  kiln_elementwise_destroy(low_pass);
  kiln_buffer_destroy(x), kiln_buffer_destroy(spectrum), kiln_buffer_destroy(y);
  kiln_runtime_destroy(rt);
  /* float transforms of 4096 points: rounding ~ log2(N) * 6e-8 * |x|sum */
  return worst < 1e-4 ? 0 : 1;
}
