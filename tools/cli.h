/*
 * cli.h — the commands of the kiln program that live in their own files.
 * Each takes the arguments after the command's name (argv[0] is the
 * command) and returns the process's exit status.
 */
#ifndef KILN_TOOLS_CLI_H
#define KILN_TOOLS_CLI_H

/* `kiln info [--raw | --list | --json] [--device SEL]` (info.c). */
int kiln_cmd_info(int argc, char **argv);

/* `kiln cache [--clear]`, `kiln kernels [--time]` and
 * `kiln build FILE.cl [OPTIONS...]` (cache.c). */
int kiln_cmd_cache(int argc, char **argv);
int kiln_cmd_kernels(int argc, char **argv);
int kiln_cmd_build(int argc, char **argv);

/* `kiln bench gemm|reduce|conv [--sizes ...] [--backend ...] [--repeat R]
 * [--json]` (bench.c, bench_reduce.c, bench_conv.c). */
int kiln_cmd_bench(int argc, char **argv);

/* `kiln run gemm A.npy B.npy -o C.npy [options]`,
 * `kiln run reduce --op OP [--axis N] X.npy -o Y.npy` and
 * `kiln run conv2d X.npy W.npy -o Y.npy [options]` (run.c). */
int kiln_cmd_run(int argc, char **argv);

#endif /* KILN_TOOLS_CLI_H */
