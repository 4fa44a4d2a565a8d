/* consumer.c — a 3 x 3 product through kiln_gemm_host(), checked against
 * loops: what an application linking kiln does first. Exits 0 when the
 * product is right, or when the machine has no OpenCL device. */
#include <stdio.h>

#include <kiln/kiln.h>

int main(void)
{
  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st == KILN_ERR_NO_DEVICE) {
    printf("kiln %s: no OpenCL device here\n", kiln_version());
    return 0;
  }
  if (st != KILN_OK) {
    fprintf(stderr, "kiln_runtime_create: %s\n", kiln_last_error(NULL));
    return 1;
  }
  float a[9], b[9], c[9] = {0};
  for (int i = 0; i < 9; i++)
    a[i] = (float)(i + 1), b[i] = (float)(9 - i);
  kiln_gemm_desc d;
  kiln_gemm_desc_init(&d, KILN_F32, 3, 3, 3);
  st = kiln_gemm_host(rt, &d, a, b, c);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln_gemm_host: %s\n", kiln_last_error(rt));
    kiln_runtime_destroy(rt);
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double want = 0;
      for (int k = 0; k < 3; k++)
        want += (double)a[i * 3 + k] * b[k * 3 + j];
      bad += c[i * 3 + j] != want; /* small integers: exact */
    }
  printf("kiln %s on %s: 3 x 3 product %s\n", kiln_version(),
         kiln_runtime_device(rt)->name, bad ? "WRONG" : "right");
  kiln_runtime_destroy(rt);
  return bad != 0;
}
