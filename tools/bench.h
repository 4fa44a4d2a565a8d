/*
 * bench.h — what the benchmarks of `kiln bench` share (bench.c): the record
 * every operation's bench produces, option parsing, medians, and the table
 * and JSON output. Each operation describes itself in a bench_spec.
 */
#ifndef KILN_TOOLS_BENCH_H
#define KILN_TOOLS_BENCH_H

#include <stddef.h>

#define BENCH_MAX_SIZES 16
#define BENCH_MAX_PEERS 4
#define BENCH_MAX_RECORDS (BENCH_MAX_SIZES * BENCH_MAX_PEERS)

/* One measurement. The JSON record is op, backend, dtype, shape, median_ms,
 * gflops, gbps; a figure that does not apply is NAN here and null there. */
typedef struct bench_record {
  const char *op, *backend, *dtype;
  size_t size;    /* the table's row: n for gemm, bytes for reduce */
  char shape[48]; /* "MxNxK", or the element count */
  double median_ms, gflops, gbps;
  int has_plan;   /* plan_ms measured: JSON adds "plan_ms" */
  double plan_ms; /* the first call minus the median (kiln bench fft) */
} bench_record;

typedef struct bench_records {
  bench_record r[BENCH_MAX_RECORDS];
  size_t n;
} bench_records;

/* What an operation's bench accepts and how it prints. */
typedef struct bench_spec {
  const char *op;                /* "gemm", "reduce" */
  const char *usage;             /* the whole usage line */
  const char *const *peers;      /* columns, in order: backends, then peers */
  int npeers;                    /* that --backend names, or always run */
  int selectable;                /* the first `selectable` peers: --backend */
  const int *built;              /* per peer: compiled into this kiln */
  const char *const *not_built;  /* per peer: why not, for the message */
  const size_t *defaults;        /* --sizes when not given */
  size_t ndefaults;
  int byte_sizes;                /* sizes in bytes, with K, M, G suffixes */
  size_t min_size, max_size, size_multiple;
  const char *sizes_help;        /* completes "--sizes takes " */
  int repeats;                   /* --repeat when not given */
  int gbps;                      /* the table shows gbps, else gflops */
  const char *const (*ratios)[2]; /* columns "a/b" of the table */
  size_t nratios;
  const char *const *labels;     /* set: sizes are rows 1, 2, ... named
                                    labels[size - 1] */
  int best_of;                   /* a ratio's "best": the best figure of the
                                    first best_of peers */
} bench_spec;

typedef struct bench_args {
  size_t sizes[BENCH_MAX_SIZES], nsizes;
  int use[BENCH_MAX_PEERS]; /* per peer */
  int json, repeats;
} bench_args;

double bench_now_ms(void);

/* Parses argv (argv[0] is the op's name) into a. Returns 0, or -1 after one
 * line on stderr. */
int bench_parse(const bench_spec *s, bench_args *a, int argc, char **argv);

/* Runs once(ctx) `repeats` times; *median gets the median of the
 * milliseconds it returns. 0, or -1 when a run returned a negative time. */
int bench_time(double (*once)(void *ctx), void *ctx, int repeats, double *median);

/* A size as the table shows it: its label when the spec names rows; "256M"
 * for bytes that are a whole number of K, M or G (when the spec's sizes are
 * bytes); else the number. */
void bench_size_label(const bench_spec *s, size_t v, char *buf, size_t size);

/* Appends a record; the caller's spec bounds how many there are. */
void bench_add(bench_records *rs, const bench_record *r);

/* The table (sizes down, peers across, then the ratios) on stdout, or with
 * --json the records as a JSON array; a peer without a record at a size
 * shows "-". Returns the exit status. */
int bench_print(const bench_spec *s, const bench_args *a, const bench_records *rs);

/* `kiln bench reduce` (bench_reduce.c). */
int bench_reduce(int argc, char **argv);

/* `kiln bench conv` (bench_conv.c). */
int bench_conv(int argc, char **argv);

/* `kiln bench fft` (bench_fft.c). */
int bench_fft(int argc, char **argv);

/* The sum of x[0..n) by `threads` threads, each over its contiguous chunk
 * with 16 float accumulators (bench_cloop.c, compiled -O2 whatever the
 * build type). 0 threads: one per online core. */
double bench_cloop_sum(const float *x, size_t n, unsigned threads);

#endif /* KILN_TOOLS_BENCH_H */
