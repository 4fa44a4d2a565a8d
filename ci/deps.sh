#!/usr/bin/env bash
# Installs every Debian package kiln needs to build, test and benchmark, and only
# those that are missing. Safe to run again: a machine that has everything makes
# no apt call at all. Runs as root, or through sudo otherwise.
set -euo pipefail

packages=(
  # toolchain
  gcc pkgconf meson ninja-build
  # OpenCL: the ICD loader, headers, and the real platforms of CPU-only machines:
  # PoCL, Oclgrind, and Mesa's rusticl (llvmpipe: a second compiler stack, no fp64)
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd oclgrind clinfo
  mesa-opencl-icd
  # optional backends and the benchmark's CPU peer (meson features, auto)
  libclblast-dev libclfft-dev libvkfft-dev libopenblas-dev libfftw3-dev
  # kiln tune --clblast runs CLBlast's own GEMM tuners (optional at run time)
  clblast-utils
  # kiln info --json (meson feature json, auto)
  libjson-c-dev
  # kiln run reads members of .npz files (meson feature zip, auto)
  libzip-dev
  # where meson installs kiln's bash completion (pkg-config's completionsdir)
  bash-completion
  # the kernel cache's key and checksums (XXH3)
  libxxhash-dev
  # tests; clang-format checks the house style (tests/check-format.sh); numpy
  # for the checks against numpy (tests/meson.build finds the python3 it is for)
  libcmocka-dev valgrind clang-format python3-numpy
  # ci/fuzz.sh: clang with libFuzzer and the sanitizers' runtimes
  clang libclang-rt-14-dev
  # kiln bench --plot draws with gnuplot, run as a program (optional at run time)
  gnuplot-nox
  # examples/blur.c: libpng, and the photo it blurs in CI (gift's testdata/src.png:
  # 180 x 120 RGB, cherries; the package is 1 MB of Go source and test images)
  libpng-dev golang-github-disintegration-gift-dev
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
