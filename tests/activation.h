/*
 * activation.h — the epilogues' activations (kiln_activation) in double,
 * from their definitions, and how far a device's result may lie from them:
 * the reference of test-gemm.c, test-conv.c and test-oclgrind.c.
 */
#ifndef KILN_TESTS_ACTIVATION_H
#define KILN_TESTS_ACTIVATION_H

#include <math.h>

#include "kiln/kiln.h"

static inline double kiln_test_activate(kiln_activation act, double x)
{
  switch (act) {
  case KILN_ACTIVATION_RELU: return x > 0 ? x : 0;
  case KILN_ACTIVATION_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case KILN_ACTIVATION_SIGMOID: return 1 / (1 + exp(-x));
  case KILN_ACTIVATION_TANH: return tanh(x);
  default: return x;
  }
}

/* The bound on |act(x') - act(x)| where x' is x computed within err, in
 * precision u (2^-24 for float): every activation's slope is at most 1.13
 * (GELU's largest), and OpenCL's erf, exp and tanh are within 16 ulps;
 * the cancellation in 1 + erf(x / sqrt 2) for negative x costs up to that
 * many ulps of x, hence the |x| term. */
static inline double kiln_test_activation_bound(kiln_activation act, double x, double err,
                                                double u)
{
  if (act == KILN_ACTIVATION_NONE)
    return err;
  return 1.13 * err + 32 * u * (fabs(kiln_test_activate(act, x)) + fabs(x));
}

#endif
