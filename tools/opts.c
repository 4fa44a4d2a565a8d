/*
 * opts.c — the parser, the help and the usage errors of every kiln command,
 * from its rows (opts.h). Nothing here knows a command: each row says what
 * it takes, its range and its default, and the parser and the help read the
 * same row.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

/* The help's layout: option names in a column of this width, everything
 * wrapped at this one. */
#define NAME_COLUMN 26
#define WIDTH 80

static int is_option(const cli_option *o)
{
  return o->name[0] == '-';
}

static int takes_value(const cli_option *o)
{
  return o->kind != CLI_FLAG && o->kind != CLI_REST;
}

const char *kiln_cli_word(const cli_command *c)
{
  const char *space = strrchr(c->name, ' ');
  return space ? space + 1 : c->name;
}

/* ---- what the rows say ---------------------------------------------------- */

/* A bound as the help writes it: 2^31-1 by name, whole numbers whole. */
static void bound_text(double v, char *buf, size_t size)
{
  if (v == CLI_INT31)
    snprintf(buf, size, "2^31-1");
  else
    snprintf(buf, size, "%g", v);
}

/* The value's name: the row's, or its choices ("nchw|nhwc", "a,b,c"). */
static void value_text(const cli_option *o, char *buf, size_t size)
{
  if (o->value || !o->choices) {
    snprintf(buf, size, "%s", o->value ? o->value : "");
    return;
  }
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; o->choices[i] && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%s",
                           i ? (o->kind == CLI_CHOICES ? "," : "|") : "", o->choices[i]);
}

/* "1, 2 or 4" for the counts a CLI_INTS row allows. */
static void counts_text(unsigned counts, char *buf, size_t size)
{
  size_t at = 0;
  int left = 0;
  for (int n = 1; n <= CLI_MAX_INTS; n++)
    left += (counts >> n) & 1;
  buf[0] = '\0';
  for (int n = 1; n <= CLI_MAX_INTS && at < size; n++)
    if (counts & (1u << n)) {
      left--;
      at += (size_t)snprintf(buf + at, size - at, "%d%s", n,
                             left > 1    ? ", "
                             : left == 1 ? " or "
                                         : "");
    }
}

/* What a value must be, for the help and the errors: "1 to 1000". Empty
 * where the row's value names it all (a file, a choice). */
static void range_text(const cli_option *o, char *buf, size_t size)
{
  char lo[32], hi[32], n[32];
  bound_text(o->min, lo, sizeof lo);
  bound_text(o->max, hi, sizeof hi);
  buf[0] = '\0';
  switch (o->kind) {
  case CLI_INT: snprintf(buf, size, "%s to %s", lo, hi); break;
  case CLI_NUMBER:
    if (isinf(o->min) && isinf(o->max))
      snprintf(buf, size, "any finite number");
    else
      snprintf(buf, size, "%s to %s", lo, hi);
    break;
  case CLI_INTS:
    counts_text(o->counts, n, sizeof n);
    snprintf(buf, size, "%s comma-separated numbers, each %s to %s", n, lo, hi);
    break;
  case CLI_CHOICES: snprintf(buf, size, "any of them, comma-separated"); break;
  default: break;
  }
}

/* The row's whole entry in one line: what it does, its range, its
 * default. */
static void entry_text(const cli_option *o, char *buf, size_t size)
{
  char range[160];
  range_text(o, range, sizeof range);
  int at = snprintf(buf, size, "%s", o->help);
  if (*range && at >= 0 && (size_t)at < size)
    at += snprintf(buf + at, size - at, "; %s", range);
  const char *def = o->def ? o->def : o->def_text;
  if (at >= 0 && (size_t)at < size && (def || o->required))
    snprintf(buf + at, size - at, def ? " (default: %s)" : " (required)", def ? def : "");
}

/* "-l, --list" or "--pad P|PH,PW|T,B,L,R": the row's names and value. */
static void names_text(const cli_option *o, char *buf, size_t size)
{
  char value[160];
  value_text(o, value, sizeof value);
  snprintf(buf, size, "%s%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "",
           o->name, *value ? " " : "", o->bare ? "[" : "", value);
  if (o->bare)
    strncat(buf, "]", size - strlen(buf) - 1);
}

/* The usage line after "usage: ": the rows' arguments, the required
 * options, then the others (by name when there are few). */
static void usage_text(const cli_command *c, char *buf, size_t size)
{
  if (c->usage) {
    snprintf(buf, size, "%s", c->usage);
    return;
  }
  size_t at = (size_t)snprintf(buf, size, "%s", c->name), optional = 0;
  for (size_t i = 0; i < c->nopts; i++)
    optional += is_option(&c->opts[i]) && !c->opts[i].required;
  for (int pass = 0; pass < 3; pass++)
    for (size_t i = 0; i < c->nopts && at < size; i++) {
      const cli_option *o = &c->opts[i];
      char names[200];
      if (pass == 0 && !is_option(o))
        at +=
          (size_t)snprintf(buf + at, size - at, o->required ? " %s" : " [%s]", o->name);
      else if (pass > 0 && is_option(o) && o->required == (pass == 1) &&
               (pass == 1 || optional <= 3)) {
        char value[160];
        value_text(o, value, sizeof value);
        snprintf(names, sizeof names, "%s%s%s", o->name, *value ? " " : "", value);
        at += (size_t)snprintf(buf + at, size - at, o->required ? " %s" : " [%s]", names);
      }
    }
  if (optional > 3 && at < size)
    snprintf(buf + at, size - at, " [options]");
}

/* ---- the parser ---------------------------------------------------------- */

static const cli_option *find_option(const cli_command *c, const char *name, size_t len)
{
  for (size_t i = 0; i < c->nopts; i++) {
    const cli_option *o = &c->opts[i];
    if (is_option(o) &&
        ((strlen(o->name) == len && strncmp(o->name, name, len) == 0) ||
         (o->alias && strlen(o->alias) == len && strncmp(o->alias, name, len) == 0)))
      return o;
  }
  return NULL;
}

/* A whole number in [min, max]; 0, or -1. */
static int parse_long(const cli_option *o, const char *s, long *v)
{
  char *end;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (end == s || *end || errno || (double)x < o->min || (double)x > o->max)
    return -1;
  *v = x;
  return 0;
}

/* The index of s (len bytes) among the row's choices, or -1. */
static int choice_index(const cli_option *o, const char *s, size_t len)
{
  for (int i = 0; o->choices[i]; i++)
    if (strlen(o->choices[i]) == len && strncmp(o->choices[i], s, len) == 0)
      return i;
  return -1;
}

/* Splits s at its commas into calls of one(o, part, len, ctx); 0, or -1 at
 * an empty part or when one() says -1. */
static int each_part(const cli_option *o, const char *s,
                     int (*one)(const cli_option *o, const char *p, size_t len,
                                void *ctx),
                     void *ctx)
{
  for (;;) {
    size_t len = strcspn(s, ",");
    if (len == 0 || one(o, s, len, ctx) != 0)
      return -1;
    if (!s[len])
      return 0;
    s += len + 1;
  }
}

static int one_choice(const cli_option *o, const char *p, size_t len, void *ctx)
{
  int k = choice_index(o, p, len);
  if (k < 0)
    return -1;
  *(unsigned *)ctx |= 1u << k;
  return 0;
}

static int one_int(const cli_option *o, const char *p, size_t len, void *ctx)
{
  cli_ints *v = ctx;
  char part[32];
  if (v->n == CLI_MAX_INTS || len >= sizeof part)
    return -1;
  memcpy(part, p, len);
  part[len] = '\0';
  return parse_long(o, part, &v->v[v->n++]);
}

/* Row o's value s into its field of args; 0, or -1 when s is not one. */
static int apply(const cli_option *o, void *args, const char *s)
{
  char *field = (char *)args + o->offset, *end;
  double d;
  unsigned bits = 0;
  cli_ints ints = {.n = 0};
  int k;
  switch (o->kind) {
  case CLI_TEXT: *(const char **)(void *)field = s; return 0;
  case CLI_INT: return parse_long(o, s, (long *)(void *)field);
  case CLI_NUMBER:
    d = strtod(s, &end);
    if (end == s || *end || !isfinite(d) || d < o->min || d > o->max)
      return -1;
    *(double *)(void *)field = d;
    return 0;
  case CLI_CHOICE:
    if ((k = choice_index(o, s, strlen(s))) < 0)
      return -1;
    *(int *)(void *)field = k;
    return 0;
  case CLI_CHOICES:
    if (each_part(o, s, one_choice, &bits) != 0)
      return -1;
    *(unsigned *)(void *)field = bits;
    return 0;
  case CLI_INTS:
    if (each_part(o, s, one_int, &ints) != 0 || !(o->counts & (1u << ints.n)))
      return -1;
    *(cli_ints *)(void *)field = ints;
    return 0;
  default: return -1; /* flags and the rest take no value */
  }
}

/* A value that row o refused; its help line says what it takes. */
static int bad_value(const cli_command *c, const cli_option *o, const char *s)
{
  return kiln_cli_usage_error(c, o->name, "%s '%s' is not a value it takes", o->name, s);
}

/* The defaults of c's rows into args. */
static void set_defaults(const cli_command *c, void *args)
{
  for (size_t i = 0; i < c->nopts; i++) {
    const cli_option *o = &c->opts[i];
    int ok = !o->def || apply(o, args, o->def) == 0;
    assert(ok && "a row's default is a value it accepts");
    (void)ok;
  }
}

/* The option argv[*i] (an option's name, "--name=value" too); -1 to go on,
 * else the exit status. *stop is set by a CLI_REST row. */
static int parse_option(const cli_command *c, void *args, int argc, char **argv, int *i,
                        uint64_t *given, int *stop)
{
  const char *a = argv[*i], *eq = a[1] == '-' ? strchr(a, '=') : NULL;
  if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
    kiln_cli_help(c, stdout);
    return 0;
  }
  const cli_option *o = find_option(c, a, eq ? (size_t)(eq - a) : strlen(a));
  if (!o)
    return kiln_cli_usage_error(c, NULL, "unknown option '%s'", a);
  *given |= (uint64_t)1 << (o - c->opts);
  char *field = (char *)args + o->offset;
  if (!takes_value(o)) {
    if (eq)
      return kiln_cli_usage_error(c, o->name, "%s takes no value", o->name);
    if (o->kind == CLI_REST) {
      *(int *)(void *)field = *i + 1;
      *stop = 1;
    } else {
      *(int *)(void *)field = 1;
    }
    return -1;
  }
  const char *next = *i + 1 < argc ? argv[*i + 1] : NULL, *v = eq ? eq + 1 : next;
  if (!eq && o->bare && (!next || (next[0] == '-' && next[1])))
    v = o->bare; /* an optional value, absent */
  else if (!eq)
    (*i)++;
  if (!v)
    return kiln_cli_usage_error(c, o->name, "%s needs a value", o->name);
  return apply(o, args, v) == 0 ? -1 : bad_value(c, o, v);
}

int kiln_cli_parse(const cli_command *c, void *args, int argc, char **argv,
                   uint64_t *given)
{
  uint64_t seen = 0;
  size_t operand = 0; /* the next argument row to fill */
  int options = 1, stop = 0;
  assert(c->nopts <= 64 && "given has a bit per row");
  set_defaults(c, args);
  for (int i = 1; i < argc && !stop; i++) {
    const char *a = argv[i];
    if (options && strcmp(a, "--") == 0) {
      options = 0; /* what follows is arguments, whatever it looks like */
    } else if (options && a[0] == '-' && a[1]) {
      int rc = parse_option(c, args, argc, argv, &i, &seen, &stop);
      if (rc >= 0)
        return rc;
    } else {
      while (operand < c->nopts && is_option(&c->opts[operand]))
        operand++;
      if (operand == c->nopts)
        return kiln_cli_usage_error(c, NULL, "unexpected argument '%s'", a);
      const cli_option *o = &c->opts[operand++];
      seen |= (uint64_t)1 << (o - c->opts);
      if (o->kind != CLI_REST) {
        apply(o, args, a); /* arguments are text */
        while (operand < c->nopts && is_option(&c->opts[operand]))
          operand++;
        if (operand == c->nopts || c->opts[operand].kind != CLI_REST)
          continue;
        o = &c->opts[operand]; /* the rest starts after this argument */
        seen |= (uint64_t)1 << operand;
        i++;
      }
      *(int *)(void *)((char *)args + o->offset) = i;
      stop = 1;
    }
  }
  for (size_t i = 0; i < c->nopts; i++)
    if (c->opts[i].required && !(seen & ((uint64_t)1 << i)))
      return kiln_cli_usage_error(c, NULL, "missing %s", c->opts[i].name);
  if (given)
    *given = seen;
  return -1;
}

int kiln_cli_given(const cli_command *c, uint64_t given, const char *name)
{
  const cli_option *o = find_option(c, name, strlen(name));
  assert(o && "a row of the command");
  return (given >> (o - c->opts)) & 1;
}

/* ---- the help ------------------------------------------------------------- */

/* text wrapped at WIDTH, its first line after `used` columns already
 * written, the others indented by `indent`. */
static void print_wrapped(FILE *out, size_t used, size_t indent, const char *text)
{
  size_t col = used;
  int start = 1; /* no space before a line's first word */
  for (const char *p = text; *p;) {
    size_t len = strcspn(p, " ");
    if (!start && col + 1 + len > WIDTH) {
      fprintf(out, "\n%*s", (int)indent, "");
      col = indent;
      start = 1;
    }
    if (!start) {
      fputc(' ', out);
      col++;
    }
    fprintf(out, "%.*s", (int)len, p);
    col += len;
    start = 0;
    p += len;
    while (*p == ' ')
      p++;
  }
  fputc('\n', out);
}

/* One row of a two-column list: name, then its text from NAME_COLUMN. */
static void print_item(FILE *out, const char *name, const char *text)
{
  int n = fprintf(out, "  %s", name);
  if (n + 2 > NAME_COLUMN) {
    fputc('\n', out);
    n = 0;
  }
  fprintf(out, "%*s", NAME_COLUMN - n, "");
  print_wrapped(out, NAME_COLUMN, NAME_COLUMN, text);
}

void kiln_cli_help(const cli_command *c, FILE *out)
{
  char buf[1024], names[256];
  usage_text(c, buf, sizeof buf);
  fputs("usage: ", out);
  if (c->usage) /* laid out by hand */
    fprintf(out, "%s\n", buf);
  else
    print_wrapped(out, strlen("usage: "), strlen("usage: ") + strlen(c->name) + 1, buf);
  fputc('\n', out);
  print_wrapped(out, 0, 0, c->summary);
  for (int pass = 0; pass < 2; pass++) {
    int first = 1;
    if (pass)
      fprintf(out, "\noptions:\n");
    for (size_t i = 0; i < c->nopts; i++) {
      const cli_option *o = &c->opts[i];
      if (is_option(o) != pass)
        continue;
      if (first && !pass)
        fprintf(out, "\narguments:\n");
      first = 0;
      names_text(o, names, sizeof names);
      entry_text(o, buf, sizeof buf);
      print_item(out, names, buf);
    }
  }
  print_item(out, "-h, --help", "print this help and exit");
  const cli_command *s = c->sub ? c->sub(0) : NULL;
  if (s)
    fprintf(out, "\ncommands (%s COMMAND --help, for each):\n", c->name);
  for (size_t i = 0; s; s = c->sub(++i))
    print_item(out, kiln_cli_word(s), s->summary);
  if (c->about) {
    fputc('\n', out);
    fputs(c->about, out);
    fputc('\n', out);
  }
  fprintf(out, "\nexample%s:\n", strchr(c->example, '\n') ? "s" : "");
  for (const char *p = c->example; *p;) {
    size_t len = strcspn(p, "\n");
    fprintf(out, "  %.*s\n", (int)len, p);
    p += len + (p[len] == '\n');
  }
}

int kiln_cli_usage_error(const cli_command *c, const char *option, const char *fmt, ...)
{
  char msg[512], line[1024], names[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const cli_option *o = option ? find_option(c, option, strlen(option)) : NULL;
  if (o) {
    names_text(o, names, sizeof names);
    entry_text(o, line, sizeof line);
    fprintf(stderr, "%s: %s; %s: %s\n", c->name, msg, names, line);
  } else {
    usage_text(c, line, sizeof line);
    fprintf(stderr, "%s: %s; usage: %.*s (%s --help says more)\n", c->name, msg,
            (int)strcspn(line, "\n"), line, c->name);
  }
  return 2;
}

/* ---- commands of commands ------------------------------------------------- */

const cli_command *kiln_cli_find(const cli_command *c, int nwords, char **words)
{
  for (int w = 0; w < nwords && c; w++) {
    const cli_command *s = NULL;
    for (size_t i = 0; c->sub && (s = c->sub(i)) && strcmp(kiln_cli_word(s), words[w]);)
      i++;
    c = s;
  }
  return c;
}

int kiln_cli_dispatch(const cli_command *c, int argc, char **argv)
{
  const cli_command *s = argc > 1 ? kiln_cli_find(c, 1, argv + 1) : NULL;
  return s ? kiln_cli_dispatch(s, argc - 1, argv + 1) : c->run(argc, argv);
}
