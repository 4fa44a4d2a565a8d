# shellcheck shell=bash disable=SC2034 # the lists are for the scripts that source this
# The Debian packages kiln needs, in two lists, and the function that
# installs those missing; sourced by ci/deps.sh (which installs both lists)
# and ci/gpu.sh (which installs the first alone, or fetches it as .deb files
# for an offline machine).
#
# kiln_packages: what a machine needs to build kiln, run its whole test
# suite and `kiln tune` and `kiln bench`: a GPU machine's set.
kiln_packages=(
  # toolchain
  gcc pkgconf meson ninja-build
  # OpenCL: the ICD loader, headers, and the real platforms of CPU-only machines
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd oclgrind clinfo
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
  # tests; numpy for the checks against numpy (tests/meson.build finds the
  # python3 it is for)
  libcmocka-dev python3-numpy
  # the Python module (meson feature python, auto: python/) and its tests
  python3-dev python3-pytest
  # ci/bundle.sh gives the bundle's files $ORIGIN run paths (the bundle test)
  patchelf
  # examples/blur.c reads and writes its image with libpng (optional)
  libpng-dev
  # libkiln-mpi, its examples and the mpi test suite (meson feature mpi, auto):
  # Open MPI's headers and library, and its mpirun
  libopenmpi-dev openmpi-bin
)

# kiln_dev_packages: what CI and development machines add: the checkers
# and the fuzzers' compiler.
kiln_dev_packages=(
  # valgrind runs the core suite; clang-format checks the house style
  # (tests/check-format.sh)
  valgrind clang-format
  # ci/fuzz.sh: clang with libFuzzer and the sanitizers' runtimes
  clang libclang-rt-14-dev
  # kiln bench --plot draws with gnuplot, run as a program (optional at run time)
  gnuplot-nox
  # Mesa's rusticl (llvmpipe): the tests' third platform, a second compiler
  # stack without fp64 (tests/icd); not a GPU machine's, whose own driver is
  # what it tests
  mesa-opencl-icd
  # the photo examples/blur.c blurs in CI (gift's testdata/src.png: 180 x 120
  # RGB, cherries; the package is 1 MB of Go source and test images)
  golang-github-disintegration-gift-dev
  # `pip install .` of the Python module builds through meson-python
  python3-mesonpy
)

# kiln_install_missing [--available] LABEL PACKAGE...: installs the packages
# that are not installed, through sudo when not root. A machine that has
# them all makes no apt call at all. --available leaves out, naming them,
# those this release does not have (an older Ubuntu lacks libvkfft-dev):
# each is an optional part of kiln, which builds without it.
kiln_install_missing() {
  local available=0
  if [ "$1" = --available ]; then
    available=1
    shift
  fi
  local label=$1 p status sudo=""
  shift
  local missing=()
  for p in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "$label: all $# packages present"
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
  if [ "$available" -eq 1 ]; then
    local have
    have=" $(kiln_available_packages "${missing[@]}" | tr '\n' ' ') "
    local keep=()
    for p in "${missing[@]}"; do
      if [[ $have == *" $p "* ]]; then
        keep+=("$p")
      else
        echo "$label: $p is not in this release's packages: left out"
      fi
    done
    missing=("${keep[@]}")
    [ ${#missing[@]} -gt 0 ] || return 0
  fi
  echo "$label: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# kiln_available_packages PACKAGE...: those of the packages apt has a
# version of, one a line.
kiln_available_packages() {
  apt-cache policy "$@" 2>/dev/null |
    awk '/^[^ ]/ { p = $1; sub(/:$/, "", p) }
         /^  Candidate:/ && $2 != "(none)" { print p }'
}
