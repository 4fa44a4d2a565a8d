/*
 * blas.c — OpenBLAS loaded at its first call (blas.h says why). The
 * library the build found (KILN_OPENBLAS_DIR, from its pkg-config file)
 * first, then the loader's search path.
 */
#include "kiln_config.h"

#if HAVE_OPENBLAS
#  include "blas.h"

#  include <dlfcn.h>
#  include <pthread.h>
#  include <stdio.h>
#  include <stdlib.h>

typedef void (*sgemm_fn)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int, int, int,
                         float, const float *, int, const float *, int, float, float *,
                         int);

static sgemm_fn sgemm;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void)
{
  static const char *const names[] = {KILN_OPENBLAS_DIR "/libopenblas.so.0",
                                      "libopenblas.so.0", "libopenblas.so"};
  for (size_t i = 0; !sgemm && i < sizeof names / sizeof *names; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib && !(sgemm = (sgemm_fn)(size_t)dlsym(lib, "cblas_sgemm")))
      dlclose(lib);
  }
}

void kiln_cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m,
                      int n, int k, float alpha, const float *a, int lda, const float *b,
                      int ldb, float beta, float *c, int ldc)
{
  pthread_once(&loaded, load);
  if (!sgemm) { /* the build found it: a machine that has lost it since */
    fprintf(stderr,
            "kiln: OpenBLAS, which kiln was built with, cannot be loaded (%s/"
            "libopenblas.so.0 nor libopenblas.so.0 on the loader's path): "
            "reinstall it, or rebuild kiln with -Dopenblas=disabled\n",
            KILN_OPENBLAS_DIR);
    exit(1);
  }
  sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif
