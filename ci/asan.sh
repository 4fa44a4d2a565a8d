#!/usr/bin/env bash
# The whole test suite again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer, LeakSanitizer on, in its own build folder
# (build-asan). Run by ci/test.sh after the plain suite, so PoCL's kernel
# cache (~/.cache/pocl) is warm and the slow LLVM compiles are not repeated.
# Any sanitizer report fails the test it happens in: UBSan halts on its first
# report, LeakSanitizer makes the process exit non-zero.
#
# With -Dfault_injection=true: the faults test (tests/test-faults.c) makes
# each OpenCL allocation, enqueue, build and map of every operation fail in
# turn, and LeakSanitizer checks that nothing leaks on those paths.
#
# Suppressions: tests/lsan.supp, leaks inside PoCL and clFFT only, each
# justified there. The install suite is left out: it links a program against
# the staged library with plain pkg-config flags, which an instrumented
# libkiln cannot satisfy (it would need the sanitizers' runtimes too); so is
# the Oclgrind suite (below).
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_ASAN_BUILD_DIR:-build-asan}

# The Python module is left out: an instrumented extension cannot load into
# an interpreter without ASan's runtime first, and its host code is libkiln's.
options=(-Db_sanitize=address,undefined -Db_lundef=false -Dfault_injection=true -Dwerror=true
  -Dpython=disabled)
if [ -f "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" "${options[@]}" >/dev/null || exit 1
else
  meson setup "$builddir" "${options[@]}" >/dev/null || exit 1
fi
meson compile -C "$builddir" >/dev/null || { meson compile -C "$builddir"; exit 1; }

# fast_unwind_on_malloc=0: PoCL and LLVM have no frame pointers, and the
# suppressions match frames inside them (tests/lsan.supp says why).
# verify_asan_link_order=0: two tests load the instrumented libkiln.so into an
# uninstrumented python3 through ctypes; ASan then starts late, which is
# enough for what those tests call.
# new_delete_type_mismatch=0: clFFT 2.12's FFTRepo::deletePlan frees a plan
# with a delete of another size than its new (inside clFFT; the memory is
# freed, which LeakSanitizer still checks).
# intercept_tls_get_addr=0: GCC 12's sanitizer runtime takes a dynamic TLS
# block (PoCL's and LLVM's threads have them) that malloc placed 16 bytes
# past a page boundary for one with a glibc 2.19 header, reads a start and a
# size from the 16 bytes before it, and LeakSanitizer's tracer then crashed
# scanning that range ("Tracer caught signal 11", about 1 run in 7 of
# test-threads; verbosity=2 shows "glibc >=2.19 suspected" with a size of
# 32 GiB). Off, those blocks are ordinary heap blocks reached from each
# thread's descriptor, and are still scanned.
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:malloc_context_size=64:verify_asan_link_order=0:new_delete_type_mismatch=0:intercept_tls_get_addr=0
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# PoCL alone where a test takes the machine's platforms (tests/icd/meson.build
# says why: Mesa's Clover aborts ASan as it loads); the tests of several
# platforms name their own folders.
export OCL_ICD_VENDORS="$(realpath "$builddir")/tests/icd/pocl"
# Instrumented code is 2-3 times slower, host references included; Oclgrind
# under ASan about 13 times (its test took 45 s plain, 579 s here), so the
# Oclgrind suite (oclgrind, and its uninitialised-value run) is the plain
# build's alone: what it checks is the kernels, which ASan cannot see, and
# the host code that launches them runs under ASan on PoCL in every other
# device test. The help suite (cli-help: ~1,400 command lines through the
# parser, 22 s plain) took 139 s here, mostly process start-up; the parser
# runs under ASan in every other test of the kiln command. The compilers
# suite (warnings, rusticl-check: kiln's kernels through PoCL's, Oclgrind's
# and Mesa's compilers from source, two minutes) checks the compilers' output,
# not host code, which the device tests run under ASan. The gpu suite
# (gpu-sh: ci/gpu.sh against PoCL) is a shell script's test; the kiln
# commands it runs are each under ASan in other tests. The rusticl suite (the
# operations' tests on llvmpipe) needs Mesa's platforms, which this run
# leaves out; its host code is the PoCL runs'. The mpi suite runs here: each
# rank mpirun starts inherits these variables, and tests/lsan.supp covers
# what Open MPI itself leaks at MPI_Init and MPI_Finalize.
meson test -C "$builddir" --no-rebuild --print-errorlogs --no-suite install \
  --no-suite oclgrind --no-suite help --no-suite compilers --no-suite rusticl --no-suite gpu --no-suite python \
  --timeout-multiplier 4
