#!/usr/bin/env bash
# ThreadSanitizer: builds kiln with -Db_sanitize=thread in its own build
# folder (build-tsan) and runs the tests whose threads share kiln's state:
# `threads` (8 threads of every operation on one shared runtime, on one
# runtime each, with runtimes created and destroyed at once; each thread's
# kiln_last_error(); the locale under VkFFT's code generator) and the
# profile tests (threads recording into one runtime), plus the runtime and
# buffer and pool tests, which are cheap, and benchmark mode from 8 threads
# on one runtime (tuning-threads: test-tuning's threaded test alone), and
# device groups (group: a thread per device, 4 threads on one group). Any
# report fails the test it happens in (halt_on_error: the process exits 66
# at the first).
#
# Suppressions: tests/tsan.supp, reports that lie wholly inside a library
# kiln calls (PoCL, LLVM, the ICD loader, clFFT, CLBlast: none of them
# instrumented), each named and justified there. Nothing in kiln's own code
# (src/, and VkFFT's header, which is compiled into kiln) is suppressed.
#
# Run after ci/test.sh, so kiln's and PoCL's kernel caches are warm.
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_TSAN_BUILD_DIR:-build-tsan}

options=(-Db_sanitize=thread -Dwerror=true -Dpython=disabled)
if [ -f "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" "${options[@]}" >/dev/null || exit 1
else
  meson setup "$builddir" "${options[@]}" >/dev/null || exit 1
fi
meson compile -C "$builddir" >/dev/null || { meson compile -C "$builddir"; exit 1; }

# PoCL alone where a test takes the machine's platforms (tests/icd/meson.build).
export OCL_ICD_VENDORS="$(realpath "$builddir")/tests/icd/pocl"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$PWD/tests/tsan.supp"

# GCC 12's TSan maps its shadow memory at fixed addresses; with the
# kernel's address space layout randomisation at many bits
# (vm.mmap_rnd_bits above 28) a library can land there and TSan stops with
# "unexpected memory mapping". Such a kernel gets the tests with ASLR off
# for them alone (setarch -R); elsewhere they run as they are.
run=()
probe=$(KILN_TEST_ROUNDS=0 "$builddir/tests/test-threads" no-such-test 2>&1)
if grep -q "unexpected memory mapping" <<<"$probe"; then
  echo "tsan: this kernel's ASLR overlaps TSan's shadow memory: running with setarch -R"
  run=(setarch "$(uname -m)" -R)
fi

# The tests of threads alone; not the mpi suite: libkiln-mpi starts no
# thread (each rank is a process, its collectives run on the calling
# thread), so there is nothing of kiln's for TSan to see there.
"${run[@]}" meson test -C "$builddir" --no-rebuild --print-errorlogs \
  --timeout-multiplier 3 threads profile-core profile runtime buffer pool \
  tuning-threads fft-memory-threads group
