/*
 * bench.h — what the benchmarks of `kiln bench` share: the record every
 * group produces, medians and records (bench_record.c), the tables, JSON,
 * CSV and plot (bench_out.c), --compare (bench_compare.c); the command's
 * own files (bench.c, bench_run.c, bench_untuned.c) share bench_cmd.h.
 * Each group (gemm, conv, reduce, fft, launch, overhead, streams,
 * bandwidth, compile) describes itself in a bench_spec and runs through a
 * bench_group.
 */
#ifndef KILN_TOOLS_BENCH_H
#define KILN_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* kiln/kiln.h's, repeated so that bench_cloop.c needs no kiln header */
typedef struct kiln_runtime kiln_runtime;

#define BENCH_MAX_SIZES 16
#define BENCH_MAX_PEERS 5
#define BENCH_MAX_RECORDS 256 /* the whole suite's */

/* What a group's figure is, and its unit: throughput (higher is better) or
 * a time (lower is better). */
typedef enum bench_figure {
  BENCH_GFLOPS, /* GFLOP/s: the record's gflops */
  BENCH_GBPS,   /* GB/s: gbps */
  BENCH_US,     /* microseconds: median_ms * 1000 */
  BENCH_MS,     /* milliseconds: median_ms */
} bench_figure;

typedef struct bench_spec bench_spec;

/* One measurement. The JSON record is group, case, size, backend, median,
 * unit, repeats, checked, then op, dtype, shape, median_ms, gflops, gbps
 * (and plan_ms and allocs where measured); a figure that does not apply is NAN here
 * and null there. */
typedef struct bench_record {
  const char *op, *backend, *dtype; /* dtype: NULL where none applies */
  size_t size;                      /* the table's row: n for gemm, bytes for reduce */
  char shape[48];                   /* "MxNxK", or the element count */
  double median_ms, gflops, gbps;
  int has_plan;              /* plan_ms measured: JSON adds "plan_ms" */
  double plan_ms;            /* the first call minus the median (kiln bench fft) */
  int has_allocs;            /* allocs counted: JSON adds "allocs" */
  unsigned long long allocs; /* device allocations (pool misses) the timed
                                calls made (kiln bench overhead) */
  int reference;             /* this peer is the reference the others are checked
                     against, so it is not checked itself */
  int repeats;               /* the runs the median is of; 0: the group's --repeat */
  const bench_spec *spec;    /* the group's; set by bench_add() */
} bench_record;

/* The run the records are of: what --json records beside them, and what
 * --compare says of the two runs it compares. */
typedef struct bench_run {
  const char *device, *driver, *platform; /* the device's, as OpenCL names them */
  const char *kiln;                       /* kiln_version() */
  char time[32];                          /* when it started: ISO 8601, UTC */
} bench_run;

typedef struct bench_records {
  bench_record r[BENCH_MAX_RECORDS];
  size_t n;
  const bench_spec *spec; /* the group being measured, for bench_add() */
  int repeats;            /* its --repeat */
  bench_run run;
} bench_records;

/* The tables of a group's spec, named <prefix>_peers, _built, _not_built,
 * _defaults, _quick and _ratios, with the lengths the compiler counts: a
 * length typed by hand drifts from its table. `built` and `not_built` must
 * have one entry per peer. */
#define BENCH_COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define BENCH_TABLES(prefix)                                                             \
  .peers = prefix##_peers, .npeers = (int)BENCH_COUNT(prefix##_peers),                   \
  .built = prefix##_built, .not_built = prefix##_not_built,                              \
  .defaults = prefix##_defaults, .ndefaults = BENCH_COUNT(prefix##_defaults),            \
  .quick = prefix##_quick, .nquick = BENCH_COUNT(prefix##_quick),                        \
  .ratios = prefix##_ratios, .nratios = BENCH_COUNT(prefix##_ratios)

/* What a group accepts and how it prints. */
struct bench_spec {
  const char *op;               /* "gemm", "reduce": the group's name */
  const char *summary;          /* one line: what the group measures */
  const char *sizes_value;      /* --sizes' value in the help: "N,...", "CASE,..." */
  const char *const *peers;     /* columns, in order: backends, then peers */
  int npeers;                   /* that --backend names, or always run */
  int selectable;               /* the first `selectable` peers: --backend */
  const int *built;             /* per peer: compiled into this kiln */
  const char *const *not_built; /* per peer: why not, for the message */
  const size_t *defaults;       /* --sizes when not given */
  size_t ndefaults;
  const size_t *quick; /* --sizes with --quick */
  size_t nquick;
  int byte_sizes; /* sizes in bytes, with K, M, G suffixes */
  size_t min_size, max_size, size_multiple;
  const char *sizes_help; /* completes "--sizes takes " */
  int repeats;            /* --repeat when not given */
  bench_figure figure;
  const char *const (*ratios)[2]; /* columns "a/b" of the table: how many
                                     times faster a is than b */
  size_t nratios;
  const char *const *labels; /* set: sizes are rows 1, 2, ... named
                                    labels[size - 1] */
  int host_peers;            /* the last host_peers peers run on the host
                                    CPU without kiln (OpenBLAS, FFTW, memcpy,
                                    a C loop): no tuning record reaches them,
                                    so --untuned's ratio of theirs is noise */
  int tuned_peers;           /* where not 0, a tuning record reaches the
                                    first tuned_peers peers only (FFT: kiln's
                                    own, not VkFFT's or clFFT's): the others
                                    are noise to --untuned too */
  int untouched;             /* no tuning record reaches any figure of the
                                    group (launches, copies): every row of
                                    it is noise to --untuned, as the host
                                    peers are */
  const char *const *reach;  /* per peer (or, with reach_by_case, per
                                    row), the parts of a tuning record its
                                    figures run with, as space-separated
                                    paths: "gemm.f32", "conv.col_kib",
                                    "choices" (AUTO's recorded picks); ""
                                    for none. --untuned reads a row whose
                                    parts the record holds at the rules'
                                    values as noise. NULL: the whole record */
  int reach_by_case;         /* reach is per row (labels), not per peer */
  int best_of;               /* a ratio's "best": the best figure of the
                                    first best_of peers */
  const size_t *xs;          /* with labels: row i's size as a number for
                                    JSON, CSV and the plot (fft: points);
                                    NULL: the row's number */
  const char *const *series; /* with labels: row i's line in the plot
                                    beside the backend (fft: "1-D"); NULL */
  const char *axis;          /* the plot's size axis ("bytes"); NULL:
                                    the group is not plotted */
  const char *note;          /* printed under the table; NULL */
};

typedef struct bench_args {
  size_t sizes[BENCH_MAX_SIZES], nsizes;
  int use[BENCH_MAX_PEERS]; /* per peer */
  int repeats;
  int quick;   /* --quick: the specs' quick sizes, few repeats */
  int untuned; /* --untuned: again without the tuning record, and compared */
  int json;    /* --json without a file: JSON on stdout */
  const char *json_path, *csv_path, *plot_path;
  const char *compare; /* --compare OLD.json, or NULL */
  double tolerance;    /* --tolerance, a fraction: 0.1 for 10% */
  const char *devices; /* --devices: the devices group's selector, or NULL */
} bench_args;

/* A group: its spec, and how it measures. */
typedef struct bench_group {
  const bench_spec *spec;
  /* Says on stderr what it measures, then checks and times every size of
   * a->sizes for every peer a->use names, adding records to out with
   * bench_add(). 0, or -1 after a line on stderr. */
  int (*run)(kiln_runtime *rt, const bench_args *a, bench_records *out);
} bench_group;

double bench_now_ms(void);

/* The median of n timings (sorted in place). */
double bench_median(double *ms, int n);

/* Runs once(ctx) `repeats` times; *median gets the median of the
 * milliseconds it returns. 0, or -1 when a run returned a negative time. */
int bench_time(double (*once)(void *ctx), void *ctx, int repeats, double *median);

/* n floats in [-0.5, 0.5) from a linear congruence started at seed, malloc'd;
 * NULL when out of memory. */
float *bench_values(size_t n, uint64_t seed);

/* bench_time() of a peer that runs through kiln: when a run fails, ends the
 * peer's progress line on stderr with " FAILED (" kiln_last_error(rt) ")". */
int bench_time_kiln(kiln_runtime *rt, double (*once)(void *ctx), void *ctx, int repeats,
                    double *median);

/* A group's run for groups measured one size at a time: measure(rt, a,
 * size, out) for each size of a->sizes in order, until one fails. 0, or -1
 * as soon as a measure() returned -1. */
int bench_each_size(kiln_runtime *rt, const bench_args *a, bench_records *out,
                    int (*measure)(kiln_runtime *rt, const bench_args *a, size_t size,
                                   bench_records *out));

/* A size as the table shows it: its label when the spec names rows; "256M"
 * for bytes that are a whole number of K, M or G (when the spec's sizes are
 * bytes); else the number. */
void bench_size_label(const bench_spec *s, size_t v, char *buf, size_t size);

/* Appends a record of the group out->spec; at most BENCH_MAX_RECORDS. */
void bench_add(bench_records *rs, const bench_record *r);

/* The figure of a record in its group's unit, that unit ("GFLOP/s"), and
 * the decimals the tables show it with. */
double bench_value(const bench_record *r);
const char *bench_unit(const bench_spec *s);
int bench_digits(const bench_spec *s);

/* How many times faster record r is than the peer its group's first
 * matching ratio names at the same size; NAN when there is none. *peer
 * gets the peer's name. */
double bench_peer_ratio(const bench_records *rs, const bench_record *r,
                        const char **peer);

/* Higher is faster, whatever the unit. */
double bench_speed(const bench_record *r);

/* The index of `backend` among s's peers; s->npeers when it is none. */
int bench_peer_index(const bench_spec *s, const char *backend);

/* The record of `backend` at a size of group s in rs, or NULL. */
const bench_record *bench_find(const bench_records *rs, const bench_spec *s, size_t size,
                               const char *backend);

/* The speed of `backend` at a size, or for "best" the best of the spec's
 * first best_of peers; 0 when there is no such record. */
double bench_speed_at(const bench_records *rs, const bench_spec *s, size_t size,
                      const char *backend);

/* The results: with s, that group's table (sizes down, peers across, then
 * the ratios); without, one row per record of the whole suite. JSON on
 * stdout instead with a->json; then the files of --json, --csv and --plot.
 * Returns the exit status: 0, or 1 when a file could not be written. */
int bench_print(const bench_spec *s, const bench_args *a, const bench_records *rs);

/* bench_out.c: the suite's table on stdout, and the files. */
void bench_print_suite(const bench_records *rs);
int bench_write_json(const bench_records *rs, const char *path); /* NULL: stdout */
int bench_write_csv(const bench_records *rs, const char *path);
int bench_plot(const bench_records *rs, const char *path);
/* The files of --json FILE, --csv and --plot; 0, or 1 when one could not be
 * written. */
int bench_write_files(const bench_args *a, const bench_records *rs);

/* bench_compare.c: --compare OLD.json, the cases of an earlier --json run
 * against this one's. */
typedef struct bench_old bench_old;

/* Reads OLD.json (what --json writes; a bare array of records, as kiln
 * wrote before it recorded the run, too) into *out. 0, or -1 after a line
 * on stderr. */
int bench_old_load(const char *path, bench_old **out);
void bench_old_free(bench_old *old);

/* a's sizes and peers for group s: the cases old has of it (peers not built
 * in this kiln are left out, with a line on stderr). The number of cases;
 * 0 when old has none of the group. */
size_t bench_old_cases(const bench_old *old, const bench_spec *s, bench_args *a);

/* Every case of old beside the same case of rs: old, new, how many times
 * faster, and SLOWER where new takes more than (1 + tolerance) times old's
 * time. Returns how many are slower. */
size_t bench_compare(const bench_old *old, const bench_records *rs, double tolerance);

/* The groups, in the suite's order (bench_gemm.c, bench_conv.c,
 * bench_reduce.c, bench_fft.c, bench_launch.c, bench_bandwidth.c,
 * bench_overhead.c, bench_bandwidth.c, bench_compile.c, bench_mlp.c). */
extern const bench_group bench_gemm_group, bench_conv_group, bench_reduce_group,
  bench_fft_group, bench_launch_group, bench_overhead_group, bench_bandwidth_group,
  bench_compile_group, bench_streams_group, bench_mlp_group, bench_devices_group;

/* The sum of x[0..n) by `threads` threads, each over its contiguous chunk
 * with 16 float accumulators (bench_cloop.c, compiled -O2 whatever the
 * build type). 0 threads: one per online core. */
double bench_cloop_sum(const float *x, size_t n, unsigned threads);

#endif /* KILN_TOOLS_BENCH_H */
