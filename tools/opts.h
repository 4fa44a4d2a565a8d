/*
 * opts.h — the commands of the kiln program as data (opts.c). A command is
 * a cli_command: the words that run it, one line for lists, its arguments
 * and options as rows of cli_option, a paragraph and an example. The
 * parser, the help (`kiln CMD --help`, `kiln help CMD`), the usage errors
 * and, through the help, the man page and the bash completion all come
 * from those rows, as clinfo's report comes from its dinfo_traits: what a
 * command accepts and what its help says cannot drift apart.
 */
#ifndef KILN_TOOLS_OPTS_H
#define KILN_TOOLS_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an option's value is, and the type of the field it goes into. */
typedef enum cli_kind {
  CLI_FLAG,    /* no value: int, 1 when given */
  CLI_TEXT,    /* const char *: the value as given (a file, a selector) */
  CLI_INT,     /* long: a whole number from min to max */
  CLI_NUMBER,  /* double: a finite number from min to max */
  CLI_CHOICE,  /* int: the value's index in choices */
  CLI_CHOICES, /* unsigned: bit i for choices[i]; names comma-separated */
  CLI_INTS,    /* cli_ints: comma-separated whole numbers from min to max,
                  as many as counts allows */
  CLI_REST,    /* int: the index in argv of the first argument it leaves to
                  the command, every one after it included */
} cli_kind;

#define CLI_MAX_INTS 4

typedef struct cli_ints {
  long v[CLI_MAX_INTS];
  int n;
} cli_ints;

/* The offset of field f of T, which must be of `type`: a row whose kind
 * does not match its field does not compile (comparison of distinct
 * pointer types, an error with -Werror). */
#define CLI_AT(T, f, type) (offsetof(T, f) + 0 * sizeof((type *)0 == &((T *)0)->f))
#define CLI_FLAG_AT(T, f) .kind = CLI_FLAG, .offset = CLI_AT(T, f, int)
#define CLI_TEXT_AT(T, f) .kind = CLI_TEXT, .offset = CLI_AT(T, f, const char *)
#define CLI_INT_AT(T, f) .kind = CLI_INT, .offset = CLI_AT(T, f, long)
#define CLI_NUMBER_AT(T, f) .kind = CLI_NUMBER, .offset = CLI_AT(T, f, double)
#define CLI_CHOICE_AT(T, f) .kind = CLI_CHOICE, .offset = CLI_AT(T, f, int)
#define CLI_CHOICES_AT(T, f) .kind = CLI_CHOICES, .offset = CLI_AT(T, f, unsigned)
#define CLI_INTS_AT(T, f) .kind = CLI_INTS, .offset = CLI_AT(T, f, cli_ints)
#define CLI_REST_AT(T, f) .kind = CLI_REST, .offset = CLI_AT(T, f, int)

/* 2^31 - 1, the largest size kiln's kernels index; the help writes it so. */
#define CLI_INT31 2147483647.0

/* One argument or option of a command. A row whose name starts with '-' is
 * an option; the others are the arguments, taken in their order. */
typedef struct cli_option {
  /* "--pad", or an argument's name: "X.npy" */
  const char *name;
  /* a short form ("-l"), or NULL */
  const char *alias;
  /* what it takes, and where it goes: set with CLI_<KIND>_AT(T, field) */
  cli_kind kind;
  size_t offset;
  /* the value's name in the help ("FILE", "S|SH,SW"); NULL for a CLI_CHOICE
   * or CLI_CHOICES: its choices */
  const char *value;
  /* what it does: one sentence, which the help wraps */
  const char *help;
  /* the default: parsed as if given before the command line, and shown in
   * the help; NULL: none */
  const char *def;
  /* where def is NULL: what happens without it, for the help's "(default:
   * ...)": "none", "A's" */
  const char *def_text;
  /* the command refuses to run without it */
  int required;
  /* CLI_INT, CLI_NUMBER, CLI_INTS: the range */
  double min, max;
  /* CLI_CHOICE, CLI_CHOICES: the names, NULL-terminated */
  const char *const *choices;
  /* CLI_INTS: bit n set when n numbers may be given */
  unsigned counts;
  /* CLI_TEXT: the value when none follows (kiln bench --json alone: "-",
   * stdout); NULL: a value is needed */
  const char *bare;
} cli_option;

typedef struct cli_command cli_command;

struct cli_command {
  const char *name;       /* the words that run it: "kiln run conv2d" */
  const char *summary;    /* one line, for the list of commands */
  const cli_option *opts; /* its rows, arguments first */
  size_t nopts;
  const char *usage;   /* the usage line after "usage: "; NULL: made from
                              the rows */
  const char *about;   /* paragraphs after the options, or NULL */
  const char *example; /* one command a line */
  /* The commands of its own that its next word names ("kiln run": gemm,
   * reduce, ...): sub(i) is the i-th, NULL past the last. NULL: none. */
  const cli_command *(*sub)(size_t i);
  /* Runs it on argv, argv[0] its last word; returns the exit status. */
  int (*run)(int argc, char **argv);
};

/* The rows of a static array, with the count the compiler makes. */
#define CLI_ROWS(rows) .opts = rows, .nopts = sizeof rows / sizeof rows[0]

/* Parses argv (argv[0]: the command's last word) into the struct at args by
 * c's rows, after setting the rows' defaults. Returns -1 to go on; else the
 * exit status, after the help on stdout for -h or --help (0) or one line on
 * stderr for a usage error (2). *given, when not NULL, gets bit i for each
 * row i that the command line gave. */
int kiln_cli_parse(const cli_command *c, void *args, int argc, char **argv,
                   uint64_t *given);

/* Whether kiln_cli_parse()'s given has the bit of c's row `name`. */
int kiln_cli_given(const cli_command *c, uint64_t given, const char *name);

/* c's help on out: usage, arguments, options (each with its range and
 * default), its commands, the paragraph and the example. */
void kiln_cli_help(const cli_command *c, FILE *out);

/* A usage error of c, as one line on stderr: "kiln run conv2d: " the
 * message, then the line of the help that applies: option's (its name, as
 * in the rows), or the usage when option is NULL. Returns 2. */
int kiln_cli_usage_error(const cli_command *c, const char *option, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Runs the command that argv names: c itself, or the one of its sub
 * commands that argv[1] names, and so on (kiln.c's main). */
int kiln_cli_dispatch(const cli_command *c, int argc, char **argv);

/* The command that the words name under c ("run", "gemm"), or NULL. */
const cli_command *kiln_cli_find(const cli_command *c, int nwords, char **words);

/* The last word of c's name: "conv2d" of "kiln run conv2d". */
const char *kiln_cli_word(const cli_command *c);

#endif /* KILN_TOOLS_OPTS_H */
