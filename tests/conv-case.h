/*
 * conv-case.h — 2-D convolution cases as table rows, and the reference they
 * are checked against: the cross-correlation kiln.h defines, in double,
 * written from the definition (test-conv.c and test-oclgrind.c).
 */
#ifndef KILN_TESTS_CONV_CASE_H
#define KILN_TESTS_CONV_CASE_H

#include <math.h>
#include <stddef.h>

#include "kiln/kiln.h"

/* Zero strides, dilations and groups are the header's defaults (1). act is
 * a kiln_activation: ReLU (1) is asked for through kiln_conv2d_desc.relu,
 * the others through .activation. */
typedef struct conv_case {
  size_t n, c, h, w, k, r, s, sh, sw, pt, pb, pl, pr, dh, dw, groups;
  int bias, act;
} conv_case;

static inline size_t conv_or1(size_t v)
{
  return v ? v : 1;
}

static inline kiln_conv2d_desc conv_case_desc(const conv_case *cc, kiln_dtype t,
                                              kiln_tensor_layout l)
{
  kiln_conv2d_desc d;
  kiln_conv2d_desc_init(&d, t, cc->n, cc->c, cc->h, cc->w, cc->k, cc->r, cc->s);
  d.layout = l;
  d.stride_h = cc->sh, d.stride_w = cc->sw;
  d.pad_top = cc->pt, d.pad_bottom = cc->pb, d.pad_left = cc->pl, d.pad_right = cc->pr;
  d.dilation_h = cc->dh, d.dilation_w = cc->dw;
  d.groups = cc->groups;
  if (cc->act == KILN_ACTIVATION_RELU)
    d.relu = 1;
  else
    d.activation = (kiln_activation)cc->act;
  return d;
}

/* The output's height p and width q, from the definition. */
static inline void conv_case_output(const kiln_conv2d_desc *d, size_t *p, size_t *q)
{
  *p = (d->h + d->pad_top + d->pad_bottom - conv_or1(d->dilation_h) * (d->r - 1) - 1) /
         conv_or1(d->stride_h) +
       1;
  *q = (d->w + d->pad_left + d->pad_right - conv_or1(d->dilation_w) * (d->s - 1) - 1) /
         conv_or1(d->stride_w) +
       1;
}

/* Offsets of image element (b, ch, i, j) of a tensor of `chans` channels
 * of hh x ww, and of filter element (kk, cc, a, e), by the layout. */
static inline size_t conv_img(const kiln_conv2d_desc *d, size_t chans, size_t hh,
                              size_t ww, size_t b, size_t ch, size_t i, size_t j)
{
  return d->layout == KILN_NCHW ? ((b * chans + ch) * hh + i) * ww + j
                                : ((b * hh + i) * ww + j) * chans + ch;
}

static inline size_t conv_flt(const kiln_conv2d_desc *d, size_t cg, size_t kk, size_t cc,
                              size_t a, size_t e)
{
  return d->layout == KILN_NCHW ? ((kk * cg + cc) * d->r + a) * d->s + e
                                : ((kk * d->r + a) * d->s + e) * cg + cc;
}

/* Cross-correlation, as every deep-learning framework computes it: output
 * (i, j) reads input (i*stride - pad + a*dilation, ...), the filter not
 * flipped. For each output, in y's layout: sum, its value before the
 * activation, and mag, the sum of its terms' magnitudes and the bias's, for
 * error bounds. The activation and the bounds are the caller's. bias NULL:
 * none. */
static inline void conv_case_reference(const kiln_conv2d_desc *d, const double *x,
                                       const double *w, const double *bias, double *sum,
                                       double *mag)
{
  size_t g = conv_or1(d->groups), cg = d->c / g, kg = d->k / g, p, q;
  size_t sh = conv_or1(d->stride_h), sw = conv_or1(d->stride_w);
  size_t dh = conv_or1(d->dilation_h), dw = conv_or1(d->dilation_w);
  conv_case_output(d, &p, &q);
  for (size_t b = 0; b < d->n; b++)
    for (size_t kk = 0; kk < d->k; kk++)
      for (size_t i = 0; i < p; i++)
        for (size_t j = 0; j < q; j++) {
          double s = bias ? bias[kk] : 0, m = fabs(s);
          for (size_t cc = 0; cc < cg; cc++)
            for (size_t a = 0; a < d->r; a++)
              for (size_t e = 0; e < d->s; e++) {
                long long yi = (long long)(i * sh + a * dh) - (long long)d->pad_top;
                long long xj = (long long)(j * sw + e * dw) - (long long)d->pad_left;
                if (yi < 0 || xj < 0 || yi >= (long long)d->h || xj >= (long long)d->w)
                  continue;
                double v = x[conv_img(d, d->c, d->h, d->w, b, kk / kg * cg + cc,
                                      (size_t)yi, (size_t)xj)] *
                           w[conv_flt(d, cg, kk, cc, a, e)];
                s += v;
                m += fabs(v);
              }
          size_t o = conv_img(d, d->k, p, q, b, kk, i, j);
          sum[o] = s;
          mag[o] = m;
        }
}

#endif
