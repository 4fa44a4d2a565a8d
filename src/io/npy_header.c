/*
 * npy_header.c — the header of numpy's .npy files: the Python dict literal
 * that describes the array, parsed for kiln_npy_load() and written for
 * kiln_npy_save(). npy.c does the file's I/O.
 *
 * The header is the repr() of a dict with the keys 'descr', 'fortran_order'
 * and 'shape', e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (2,
 * 3), }", padded with spaces and a newline. Format 3.0 differs from 2.0 only
 * in that it is UTF-8 rather than latin-1, which changes nothing for the
 * ASCII grammar below.
 *
 * numpy reads it with ast.literal_eval(). kiln parses it by hand, as strictly
 * as the subset of Python that numpy writes, except where numpy is lenient in
 * ways real files rely on: any key order, any whitespace between tokens,
 * either quote, a trailing comma, no final newline, padding of any length.
 * What numpy refuses is refused too (other keys, a shape that is not a tuple,
 * (3) without its comma, True spelt 1); kiln also refuses a key given twice,
 * which literal_eval would silently resolve to the last.
 */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/util.h"
#include "io/npy.h"

#define ALIGN 64         /* numpy's ARRAY_ALIGN: where the data starts */
#define GROWTH_DIGITS 21 /* numpy's GROWTH_AXIS_MAX_DIGITS */

/* The dtypes kiln reads, as the typestring numpy writes without its '<'. */
static const struct {
  const char *code;
  kiln_dtype dtype;
} dtypes[] = {
  {"f2", KILN_F16},  {"f4", KILN_F32}, {"f8", KILN_F64}, {"c8", KILN_C32},
  {"c16", KILN_C64}, {"i4", KILN_I32}, {"i8", KILN_I64},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

static const char *dtype_code(kiln_dtype dtype)
{
  for (size_t i = 0; i < NDTYPES; i++)
    if (dtypes[i].dtype == dtype)
      return dtypes[i].code;
  return NULL;
}

/* "()", "(3,)", "(2, 3)": as Python's repr() of the tuple. */
void kiln__npy_shape_repr(kiln__str *s, unsigned ndim, const size_t *shape)
{
  kiln__str_appendf(s, "(");
  for (unsigned i = 0; i < ndim; i++)
    kiln__str_appendf(s, "%s%zu", i ? ", " : "", shape[i]);
  kiln__str_appendf(s, "%s)", ndim == 1 ? "," : "");
}

/* The element count, 1 for ndim 0; -1 when it overflows size_t. A zero
 * dimension makes 0 whatever the others, as numpy has it. */
int kiln__npy_shape_count(unsigned ndim, const size_t *shape, size_t *count)
{
  size_t n = 1;
  for (unsigned i = 0; i < ndim; i++)
    if (shape[i] == 0) {
      *count = 0;
      return 0;
    }
  for (unsigned i = 0; i < ndim; i++)
    if (kiln__mul_overflow(n, shape[i], &n))
      return -1;
  *count = n;
  return 0;
}

/* ---- the header's dict --------------------------------------------------- */

typedef struct parser {
  const char *name; /* the file, for messages */
  const unsigned char *text;
  size_t len, pos;
} parser;

static kiln_status parse_fail(const parser *p, const char *fmt, ...) KILN__PRINTF(2, 3);

/* "bad header at byte N: <what>; the header is \"{'descr': ...}\"", with
 * the header escaped, without its padding, and cut at 160 bytes. */
static kiln_status parse_fail(const parser *p, const char *fmt, ...)
{
  kiln__str m = {0};
  va_list ap;
  kiln__str_appendf(&m, "kiln_npy_load: '%s': bad header at byte %zu: ", p->name, p->pos);
  va_start(ap, fmt);
  kiln__str_vappendf(&m, fmt, ap);
  va_end(ap);
  kiln__str_appendf(&m, "; the header is \"");
  size_t end = p->len, shown;
  while (end > 0 && (p->text[end - 1] == ' ' || p->text[end - 1] == '\n'))
    end--; /* the padding says nothing */
  shown = end < 160 ? end : 160;
  for (size_t i = 0; i < shown; i++) {
    unsigned char c = p->text[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
      kiln__str_appendf(&m, "%c", c);
    else
      kiln__str_appendf(&m, c == '\n' ? "\\n" : "\\x%02x", c);
  }
  kiln__str_appendf(&m, "\"%s", shown < end ? "..." : "");
  kiln_status st = kiln__fail(NULL, KILN_ERR_FORMAT, "%s", kiln__str_get(&m));
  kiln__str_free(&m);
  return st;
}

/* What is at the parser's position, for "found ..." */
static const char *found(const parser *p, char buf[16])
{
  if (p->pos >= p->len)
    return "the end of the header";
  unsigned char c = p->text[p->pos];
  snprintf(buf, 16, c >= 0x21 && c < 0x7f ? "'%c'" : "byte 0x%02x", c);
  return buf;
}

/* A byte that continues a Python name, so "Trueish" is not True. */
static int is_name_char(int c)
{
  return c == '_' || c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
         (c >= 'A' && c <= 'Z');
}

static int peek(const parser *p)
{
  return p->pos < p->len ? p->text[p->pos] : -1;
}

/* Python's whitespace between tokens inside brackets. */
static void skip_ws(parser *p)
{
  while (p->pos < p->len && p->text[p->pos] && strchr(" \t\n\r\f", p->text[p->pos]))
    p->pos++;
}

static kiln_status expect(parser *p, int c, const char *what)
{
  char buf[16];
  if (peek(p) != c)
    return parse_fail(p, "expected %s, found %s", what, found(p, buf));
  p->pos++;
  return KILN_OK;
}

/* A quoted string without escapes, into out (cap bytes with the NUL). */
static kiln_status parse_string(parser *p, char *out, size_t cap, const char *what)
{
  char buf[16];
  int q = peek(p);
  if (q != '\'' && q != '"')
    return parse_fail(p, "expected %s, found %s", what, found(p, buf));
  size_t start = ++p->pos, n = 0;
  while (p->pos < p->len && p->text[p->pos] != q) {
    unsigned char c = p->text[p->pos];
    if (c == '\n' || c == '\r')
      return parse_fail(p, "a string that is not closed before the line ends");
    if (c == '\\')
      return parse_fail(p, "an escape in a string; kiln reads strings without them");
    if (++n >= cap)
      return parse_fail(p, "a string longer than %zu bytes", cap - 1);
    p->pos++;
  }
  if (p->pos >= p->len)
    return parse_fail(p, "a string that is not closed");
  memcpy(out, p->text + start, n);
  out[n] = '\0';
  p->pos++;
  return KILN_OK;
}

static kiln_status parse_descr(parser *p, kiln_array *a)
{
  char s[64];
  if (peek(p) == '[')
    return parse_fail(p, "structured dtypes (a list of fields) are not supported; "
                         "expected a string such as '<f4'");
  kiln_status st = parse_string(p, s, sizeof s, "a dtype string such as '<f4'");
  if (st != KILN_OK)
    return st;
  /* '|' and '=' mean the writer's own order, and kiln's hosts are
   * little-endian; numpy also reads a typestring without an order mark. */
  const char *code = s[0] && strchr("<|=", s[0]) ? s + 1 : s;
  for (size_t i = 0; i < NDTYPES; i++)
    if (strcmp(code, dtypes[i].code) == 0) {
      a->dtype = dtypes[i].dtype;
      return KILN_OK;
    }
  if (s[0] == '>')
    return kiln__fail(NULL, KILN_ERR_FORMAT,
                      "kiln_npy_load: '%s': big-endian dtype '%s' is not supported; "
                      "kiln reads little-endian data (numpy: a.astype('<%s'))",
                      p->name, s, s + 1);
  kiln__str m = {0};
  for (size_t i = 0; i < NDTYPES; i++)
    kiln__str_appendf(&m, "%s'<%s' (%s)", i ? ", " : "", dtypes[i].code,
                      kiln_dtype_name(dtypes[i].dtype));
  st = kiln__fail(NULL, KILN_ERR_FORMAT,
                  "kiln_npy_load: '%s': dtype '%s' is not supported; kiln reads %s",
                  p->name, s, kiln__str_get(&m));
  kiln__str_free(&m);
  return st;
}

static kiln_status parse_order(parser *p, kiln_array *a)
{
  static const char *const words[] = {"False", "True"};
  for (int v = 0; v < 2; v++) {
    size_t n = strlen(words[v]);
    if (p->len - p->pos >= n && memcmp(p->text + p->pos, words[v], n) == 0) {
      if (p->pos + n < p->len && is_name_char(p->text[p->pos + n]))
        break;
      p->pos += n;
      a->fortran_order = v;
      return KILN_OK;
    }
  }
  char buf[16];
  return parse_fail(p, "expected True or False for 'fortran_order', found %s",
                    found(p, buf));
}

/* One dimension: a decimal without sign or leading zeros, as repr() writes. */
static kiln_status parse_dim(parser *p, size_t *out)
{
  char buf[16];
  size_t v = 0, start = p->pos;
  if (peek(p) == '-')
    return parse_fail(p, "a negative dimension");
  while (peek(p) >= '0' && peek(p) <= '9') {
    if (kiln__mul_overflow(v, 10, &v) ||
        kiln__add_overflow(v, (size_t)(p->text[p->pos] - '0'), &v))
      return parse_fail(p, "a dimension larger than size_t can hold");
    p->pos++;
  }
  if (p->pos == start)
    return parse_fail(p, "expected a dimension (a decimal integer), found %s",
                      found(p, buf));
  if (p->pos - start > 1 && p->text[start] == '0')
    return parse_fail(p, "a dimension with a leading zero");
  *out = v;
  return KILN_OK;
}

static kiln_status parse_shape(parser *p, kiln_array *a)
{
  kiln_status st = expect(p, '(', "a tuple such as (2, 3) for 'shape'");
  int comma = 0;
  for (skip_ws(p); st == KILN_OK && peek(p) != ')';) {
    if (a->ndim == KILN_ARRAY_MAX_DIMS)
      return parse_fail(p,
                        "a shape of more than %d dimensions; kiln reads at "
                        "most %d",
                        KILN_ARRAY_MAX_DIMS, KILN_ARRAY_MAX_DIMS);
    st = parse_dim(p, &a->shape[a->ndim++]);
    skip_ws(p);
    comma = peek(p) == ',';
    if (st == KILN_OK && comma) {
      p->pos++;
      skip_ws(p);
    } else if (st == KILN_OK && peek(p) != ')') {
      char buf[16];
      return parse_fail(p, "expected ',' or ')' in the shape, found %s", found(p, buf));
    }
  }
  if (st == KILN_OK && a->ndim == 1 && !comma)
    return parse_fail(p, "(N) is a number, not a tuple: a 1-d shape is written (N,)");
  return st == KILN_OK ? expect(p, ')', "')'") : st;
}

static const struct {
  const char *name;
  kiln_status (*parse)(parser *p, kiln_array *a);
} keys[] = {
  {"descr", parse_descr},
  {"fortran_order", parse_order},
  {"shape", parse_shape},
};
#define NKEYS (sizeof keys / sizeof keys[0])
#define KEY_LIST "'descr', 'fortran_order' and 'shape'"

/* The dict, into a's dtype, ndim, shape and fortran_order. */
static kiln_status parse_dict(parser *p, kiln_array *a)
{
  int seen[NKEYS] = {0};
  skip_ws(p);
  kiln_status st = expect(p, '{', "a Python dict literal starting with '{'");
  for (skip_ws(p); st == KILN_OK && peek(p) != '}'; skip_ws(p)) {
    char key[32];
    size_t k = 0, at = p->pos;
    st = parse_string(p, key, sizeof key, "a key string such as 'shape', or '}'");
    while (st == KILN_OK && k < NKEYS && strcmp(key, keys[k].name) != 0)
      k++;
    if (st == KILN_OK && (k == NKEYS || seen[k]++)) {
      p->pos = at; /* point at the key, not past it */
      return k == NKEYS ? parse_fail(p, "unknown key '%s'; expected only " KEY_LIST, key)
                        : parse_fail(p, "the key '%s' appears twice", key);
    }
    if (st == KILN_OK) {
      skip_ws(p);
      st = expect(p, ':', "':' after the key");
    }
    if (st == KILN_OK) {
      skip_ws(p);
      st = keys[k].parse(p, a);
    }
    skip_ws(p);
    if (st == KILN_OK && peek(p) == ',')
      p->pos++;
    else if (st == KILN_OK && peek(p) != '}')
      st = expect(p, '}', "',' or '}' after a value");
  }
  if (st == KILN_OK)
    st = expect(p, '}', "'}'");
  skip_ws(p);
  if (st == KILN_OK && p->pos < p->len)
    return parse_fail(p, "text after the dict's closing '}'; expected only padding");
  for (size_t k = 0; st == KILN_OK && k < NKEYS; k++)
    if (!seen[k])
      return parse_fail(p, "no key '%s'; expected the keys " KEY_LIST, keys[k].name);
  return st;
}

kiln_status kiln__npy_parse_header(const char *name, const unsigned char *text,
                                   size_t len, kiln_array *out)
{
  parser p = {.name = name, .text = text, .len = len};
  memset(out, 0, sizeof *out);
  return parse_dict(&p, out);
}

/* The header current numpy writes for the array, byte for byte (numpy 2.4 by
 * tests/check-npy-numpy.py; older versions leave no room to grow the axis):
 * the preamble into pre, the dict padded with spaces and a newline into h,
 * so that the data starts at a multiple of 64 bytes. */
kiln_status kiln__npy_build_header(const kiln_array *a, unsigned char pre[12],
                                   size_t *prelen, kiln__str *h)
{
  kiln__str_appendf(h, "{'descr': '<%s', 'fortran_order': %s, 'shape': ",
                    dtype_code(a->dtype), a->fortran_order ? "True" : "False");
  kiln__npy_shape_repr(h, a->ndim, a->shape);
  kiln__str_appendf(h, ", }");
  if (a->ndim > 0) { /* numpy leaves room to rewrite the growing axis in place */
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%zu",
                     a->shape[a->fortran_order ? a->ndim - 1 : 0]);
    kiln__str_appendf(h, "%*s", GROWTH_DIGITS - n, "");
  }
  size_t lenbytes = 2, hlen = h->len + 1; /* with the newline */
  size_t pad = ALIGN - (KILN__NPY_MAGIC_LEN + 2 + lenbytes + hlen) % ALIGN;
  if (hlen + pad > 0xffff) { /* version 2.0: a 4-byte length */
    lenbytes = 4;
    pad = ALIGN - (KILN__NPY_MAGIC_LEN + 2 + lenbytes + hlen) % ALIGN;
  }
  kiln__str_appendf(h, "%*s\n", (int)pad, "");
  if (h->failed)
    return kiln__fail(NULL, KILN_ERR_OUT_OF_HOST_MEMORY,
                      "kiln_npy_save: out of host memory for the header");
  memcpy(pre, KILN__NPY_MAGIC, KILN__NPY_MAGIC_LEN);
  pre[6] = lenbytes == 2 ? 1 : 2;
  pre[7] = 0;
  for (size_t i = 0; i < lenbytes; i++)
    pre[8 + i] = (unsigned char)((hlen + pad) >> (8 * i));
  *prelen = 8 + lenbytes;
  return KILN_OK;
}
