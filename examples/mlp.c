/*
 * mlp.c — inference of a 2-layer perceptron over a batch, the way an
 * application embeds kiln: weights resident on the device, the inputs
 * standardised by a kiln_elementwise kernel, each layer a kiln_gemm whose
 * epilogue adds the bias (and applies ReLU) as it stores, the predicted
 * class a kiln_reduce argmax along each row. The logits and the classes
 * are checked against the same network computed on the host in double.
 * `kiln bench mlp` times the same network against OpenBLAS.
 *
 *   build: with kiln (meson builds it as examples/mlp)
 *   run:   ./mlp            exit 0 when the device agrees with the host
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <kiln/kiln.h>

enum { BATCH = 256, IN = 784, HIDDEN = 512, OUT = 10 };
#define MEAN 0.25 /* the inputs' mean and 1 / standard deviation */
#define SCALE 2.0

/* Deterministic weights and inputs in [-0.5, 0.5). */
static void fill(float *v, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    v[i] = (float)((i * 2654435761u + seed * 40503u) % 1000) / 1000.0f - 0.5f;
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    if ((call) != KILN_OK) {                                                             \
      fprintf(stderr, "mlp: %s: %s\n", #call, kiln_last_error(rt));                      \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

int main(void)
{
  kiln_runtime *rt = NULL;
  if (kiln_runtime_create(NULL, &rt) != KILN_OK) {
    fprintf(stderr, "mlp: %s\n", kiln_last_error(NULL));
    return 1;
  }
  static float x[BATCH * IN], w1[IN * HIDDEN], b1[HIDDEN], w2[HIDDEN * OUT], b2[OUT],
    logits[BATCH * OUT];
  static int64_t cls[BATCH];
  fill(x, BATCH * IN, 1), fill(w1, IN * HIDDEN, 2), fill(b1, HIDDEN, 3);
  fill(w2, HIDDEN * OUT, 4), fill(b2, OUT, 5);

  kiln_buffer *dx, *dw1, *db1, *dh, *dw2, *db2, *dy, *dc;
  CHECK(kiln_buffer_create(rt, KILN_F32, BATCH * IN, 0, &dx));
  CHECK(kiln_buffer_create(rt, KILN_F32, IN * HIDDEN, 0, &dw1));
  CHECK(kiln_buffer_create(rt, KILN_F32, HIDDEN, 0, &db1));
  CHECK(kiln_buffer_create(rt, KILN_F32, BATCH * HIDDEN, 0, &dh));
  CHECK(kiln_buffer_create(rt, KILN_F32, HIDDEN * OUT, 0, &dw2));
  CHECK(kiln_buffer_create(rt, KILN_F32, OUT, 0, &db2));
  CHECK(kiln_buffer_create(rt, KILN_F32, BATCH * OUT, 0, &dy));
  CHECK(kiln_buffer_create(rt, KILN_I64, BATCH, 0, &dc));
  CHECK(kiln_buffer_write(dw1, 0, IN * HIDDEN, w1));
  CHECK(kiln_buffer_write(db1, 0, HIDDEN, b1));
  CHECK(kiln_buffer_write(dw2, 0, HIDDEN * OUT, w2));
  CHECK(kiln_buffer_write(db2, 0, OUT, b2));

  /* x = (x - MEAN) * SCALE, then h = relu(x w1 + b1), y = h w2 + b2: the
   * bias of column j is b[j], added by the GEMM as it stores C */
  kiln_elementwise *standardise;
  CHECK(kiln_elementwise_create(rt, "float *x, float mean, float scale",
                                "x = (x - mean) * scale", &standardise));
  kiln_gemm_desc l1, l2;
  kiln_gemm_desc_init(&l1, KILN_F32, BATCH, HIDDEN, IN);
  l1.bias = KILN_BIAS_COL, l1.bias_buffer = db1, l1.activation = KILN_ACTIVATION_RELU;
  kiln_gemm_desc_init(&l2, KILN_F32, BATCH, OUT, HIDDEN);
  l2.bias = KILN_BIAS_COL, l2.bias_buffer = db2;
  kiln_reduce_desc am;
  kiln_reduce_desc_init(&am, KILN_REDUCE_ARGMAX, KILN_F32, BATCH);
  am.ndim = 2, am.shape[1] = OUT, am.axis = -1;

  CHECK(kiln_buffer_write(dx, 0, BATCH * IN, x));
  CHECK(kiln_elementwise_run(standardise, BATCH * IN, dx, MEAN, SCALE));
  CHECK(kiln_gemm(rt, &l1, dx, dw1, dh));
  CHECK(kiln_gemm(rt, &l2, dh, dw2, dy));
  CHECK(kiln_reduce(rt, &am, dy, dc));
  CHECK(kiln_buffer_read(dy, 0, BATCH * OUT, logits));
  CHECK(kiln_buffer_read(dc, 0, BATCH, cls));

  /* The host's answer, in double. */
  static double h[HIDDEN];
  double worst = 0;
  int agree = 0;
  for (int r = 0; r < BATCH; r++) {
    for (int j = 0; j < HIDDEN; j++) {
      double s = b1[j];
      for (int k = 0; k < IN; k++)
        s += ((double)x[r * IN + k] - MEAN) * SCALE * w1[k * HIDDEN + j];
      h[j] = s > 0 ? s : 0;
    }
    int best = 0;
    double best_v = -INFINITY;
    for (int j = 0; j < OUT; j++) {
      double s = b2[j];
      for (int k = 0; k < HIDDEN; k++)
        s += h[k] * w2[k * OUT + j];
      worst = fmax(worst, fabs(s - logits[r * OUT + j]) / (1 + fabs(s)));
      if (s > best_v)
        best = j, best_v = s;
    }
    agree += cls[r] == best;
  }
  printf("mlp on %s: batch %d, %d-%d-%d: classes agree on %d of %d, largest logit "
         "error %.2g\n",
         kiln_runtime_device(rt)->name, BATCH, IN, HIDDEN, OUT, agree, BATCH, worst);
  kiln_elementwise_destroy(standardise);
  kiln_buffer *all[] = {dx, dw1, db1, dh, dw2, db2, dy, dc};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    kiln_buffer_destroy(all[i]);
  kiln_runtime_destroy(rt);
  /* float32 sums of 784 and 512 products of values below 0.5: 1e-4 is
   * ~30 units of float's rounding on the larger sums. A class may differ
   * where two logits tie within that. */
  return worst < 1e-4 && agree >= BATCH - 2 ? 0 : 1;
}
