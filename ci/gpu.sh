#!/usr/bin/env bash
# ci/gpu.sh — kiln on a machine with a GPU, in one command, and one report
# file to send back. From the top of a kiln checkout:
#
#   bash ci/gpu.sh               installs what is missing (Debian's packages
#                                of ci/packages.sh: the ICD loader, clinfo,
#                                the compiler...; the GPU's driver is the
#                                machine's own), builds kiln (build-gpu/),
#                                and runs `kiln info`, `kiln devices`, the
#                                whole test suite with KILN_DEVICE=gpu,
#                                `kiln tune` and `kiln bench --json`
#   bash ci/gpu.sh --fetch DIR   on a connected Debian or Ubuntu machine: the
#                                same packages, with everything they depend
#                                on, as .deb files in DIR, for a GPU machine
#                                without a package registry
#   bash ci/gpu.sh --debs DIR    on that machine: unpacks DIR's .deb files
#                                into a private prefix (never into /), uses
#                                them, and does the rest as above
#
# An OpenCL driver that no .icd file names (NVIDIA's container images keep
# libnvidia-opencl.so.1 with no .icd; so can AMD's and Intel's installers)
# is found by kiln once it is built (`kiln devices --icd-dir`: libkiln knows
# where each vendor's library goes), and named in a private .icd folder
# (OCL_ICD_VENDORS) for this run.
#
# Exit status: 0 when every step ran and passed; 1 when one failed (the
# report says which); 2 for a usage error; 77 when kiln sees no GPU (the
# report says what it saw), unless --allow-cpu.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=ci/packages.sh
. "$src/ci/packages.sh"

usage() {
  cat <<'EOF'
usage: ci/gpu.sh [options]           build, test, tune and benchmark kiln on
                                     this machine's GPU; write one report
       ci/gpu.sh --fetch DIR [--dry-run]
                                     download the .deb files for an offline
                                     machine into DIR (a connected Debian or
                                     Ubuntu machine)
       ci/gpu.sh --debs DIR [--prefix P] [options]
                                     the first form, with DIR's .deb files
                                     unpacked into a private prefix instead
                                     of installed

options:
  --out FILE         the report (default: ./kiln-gpu-report-HOST-DATE.txt)
  --build DIR        the build folder (default: build-gpu in the checkout)
  --no-build         use --build DIR as it is, already built
  --work DIR         logs, the private .icd folder and the kernel cache of
                     this run (default: BUILD/gpu-sh)
  --device SEL       the device, as KILN_DEVICE selects (default: gpu)
  --allow-cpu        when SEL matches no device, run on a CPU device
                     (KILN_DEVICE=cpu) instead of exiting 77
  --no-install       install nothing: use the tools this machine has
  --prefix P         with --debs: where to unpack (default: DIR/root)
  --print-env        set up (the prefix, the .icd folder), print the
                     environment as shell exports, and stop
  --no-driver-search register the drivers the .icd files name, and no
                     other: kiln does not look for drivers that none names
  --suite NAME       run this meson suite alone (repeatable; default: all)
  --test NAME        run this test alone (repeatable; default: all)
  --tune-args ARGS   arguments for `kiln tune` (default: none: every kernel,
                     the default budget)
  --bench-args ARGS  arguments for `kiln bench` (default: none: the whole
                     suite)
  --dry-run          with --fetch: print what would be downloaded
  -h, --help         print this help and exit

Exit status: 0 all passed, 1 a step failed (the report says which), 2 a
usage error, 77 no GPU (and no --allow-cpu). Send back the report file it
names at the end.
EOF
}

say() { echo "gpu.sh: $*"; }
die() { # die STATUS MESSAGE
  echo "gpu.sh: $2" >&2
  exit "$1"
}
usage_error() {
  echo "ci/gpu.sh: $1" >&2
  echo "usage: ci/gpu.sh [--fetch DIR | --debs DIR] [options]; ci/gpu.sh --help for more" >&2
  exit 2
}

# ---- options ---------------------------------------------------------------
fetch_dir="" debs_dir="" prefix="" out="" builddir="" workdir="" device=gpu
allow_cpu=0 install=1 build=1 print_env=0 dry_run=0 driver_search=1
suites=() tests=() tune_args=() bench_args=()
args_given=("$@")
while [ $# -gt 0 ]; do
  opt=$1
  case $opt in
    --fetch | --debs | --prefix | --out | --build | --work | --device | --suite | \
      --test | --tune-args | --bench-args)
      if [ $# -lt 2 ] || [ -z "$2" ]; then
        usage_error "$opt needs a value"
      fi
      val=$2
      shift 2
      ;;
    --*=*)
      # --out=FILE as --out FILE
      set -- "${opt%%=*}" "${opt#*=}" "${@:2}"
      continue
      ;;
    *)
      shift
      ;;
  esac
  case $opt in
    --fetch) fetch_dir=$val ;;
    --debs) debs_dir=$val ;;
    --prefix) prefix=$val ;;
    --out) out=$val ;;
    --build) builddir=$val ;;
    --work) workdir=$val ;;
    --device) device=$val ;;
    --suite) suites+=(--suite "$val") ;;
    --test) tests+=("$val") ;;
    --tune-args) read -r -a tune_args <<<"$val" ;;
    --bench-args) read -r -a bench_args <<<"$val" ;;
    --allow-cpu) allow_cpu=1 ;;
    --no-install) install=0 ;;
    --no-build) build=0 ;;
    --print-env) print_env=1 ;;
    --no-driver-search) driver_search=0 ;;
    --dry-run) dry_run=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) usage_error "unknown option '$opt'" ;;
  esac
done
[ -z "$fetch_dir" ] || [ -z "$debs_dir" ] || usage_error "--fetch and --debs are two machines' steps: give one"
[ "$dry_run" -eq 0 ] || [ -n "$fetch_dir" ] || usage_error "--dry-run goes with --fetch"
[ -z "$prefix" ] || [ -n "$debs_dir" ] || usage_error "--prefix goes with --debs"
[ "$build" -eq 1 ] || [ -n "$builddir" ] || usage_error "--no-build needs --build DIR"
# --print-env: the exports alone on stdout (fd 3), the rest on stderr.
if [ "$print_env" -eq 1 ]; then
  exec 3>&1 1>&2
fi
if [ -n "$fetch_dir" ]; then
  for o in "$out" "$builddir" "$workdir" "${suites[*]}" "${tests[*]}" \
    "${tune_args[*]}" "${bench_args[*]}" "${device#gpu}" "${allow_cpu#0}" "${install#1}" \
    "${build#1}" "${print_env#0}" "${driver_search#1}"; do
    [ -z "$o" ] || usage_error "--fetch only downloads: it takes --dry-run alone"
  done
fi

# The Debian architecture and multiarch triplet of this machine.
deb_arch() {
  case $(uname -m) in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    ppc64le) echo ppc64el ;;
    *) uname -m ;;
  esac
}
triplet() {
  case $(deb_arch) in
    amd64) echo x86_64-linux-gnu ;;
    arm64) echo aarch64-linux-gnu ;;
    ppc64el) echo powerpc64le-linux-gnu ;;
    *) echo "$(uname -m)-linux-gnu" ;;
  esac
}

# ---- --fetch: the .deb files for an offline machine ------------------------
# apt resolves the packages against an empty package status of its own, so
# DIR gets everything they depend on, down to the C library, whatever this
# machine has installed; this machine's own state is left as it is.
fetch_debs() {
  local dir=$1
  command -v apt-get >/dev/null 2>&1 ||
    die 1 "--fetch needs apt-get: run it on a connected Debian or Ubuntu machine (of the GPU machine's release where you can)"
  if [ "$dry_run" -eq 0 ]; then
    mkdir -p "$dir" || die 1 "cannot make '$dir'"
    dir=$(cd "$dir" && pwd)
  fi
  local state
  state=$(mktemp -d) || die 1 "cannot make a temporary folder"
  # shellcheck disable=SC2064 # the folder's name is known now
  trap "rm -rf '$state'" EXIT
  : >"$state/status"
  mkdir -p "$state/archives/partial"
  local apt=(apt-get -o "Dir::State::status=$state/status"
    -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o Debug::NoLocking=1
    -o APT::Install-Recommends=false -o APT::Install-Suggests=false)
  if [ "$dry_run" -eq 0 ]; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    say "updating the package lists"
    $sudo apt-get update -qq ||
      say "could not update the package lists (not root, no sudo?): using them as they are"
  fi
  # The packages this release has (an older Ubuntu lacks libvkfft-dev: an
  # optional part of kiln), then the files apt would fetch for them:
  # quoted URI, file name, size, checksum.
  local p wanted=() left_out=() have
  have=" $(kiln_available_packages "${kiln_packages[@]}" | tr '\n' ' ') "
  for p in "${kiln_packages[@]}"; do
    if [[ $have == *" $p "* ]]; then
      wanted+=("$p")
    else
      left_out+=("$p")
      say "$p is not in this release's packages: left out"
    fi
  done
  "${apt[@]}" -o "Dir::Cache::archives=$state/archives" install -qq -y --print-uris \
    "${wanted[@]}" >"$state/uris" ||
    die 1 "apt cannot resolve kiln's packages here (is it Debian or Ubuntu, with its package lists? run apt-get update)"
  local count bytes
  count=$(wc -l <"$state/uris")
  bytes=$(awk '{ s += $3 } END { print s + 0 }' "$state/uris")
  if [ "$dry_run" -eq 1 ]; then
    awk '{ printf "%-60s %10d\n", $2, $3 }' "$state/uris"
    say "would download $count files, $((bytes / 1048576)) MiB, into $dir"
    exit 0
  fi
  say "downloading $count files, $((bytes / 1048576)) MiB, into $dir"
  mkdir -p "$dir/partial"
  "${apt[@]}" -o "Dir::Cache::archives=$dir" install -q -y --download-only \
    "${wanted[@]}" || die 1 "apt could not download every package"
  rm -rf "$dir/partial" "$dir/lock"
  # Only this fetch's files: an earlier fetch's older versions would be
  # unpacked over them.
  local f name
  for f in "$dir"/*.deb; do
    name=${f##*/}
    awk -v n="$name" '$2 == n { found = 1 } END { exit !found }' "$state/uris" ||
      { rm -f "$f" && say "removed $name: not part of this fetch"; }
  done
  while read -r _ name _; do
    [ -f "$dir/$name" ] || die 1 "apt did not leave $name in $dir"
  done <"$state/uris"
  (cd "$dir" && sha256sum -- *.deb >SHA256SUMS) || die 1 "cannot write $dir/SHA256SUMS"
  {
    echo "# kiln ci/gpu.sh --fetch: the .deb files to build, test and benchmark"
    echo "# kiln on a machine without a package registry: ci/gpu.sh --debs DIR"
    echo "fetched: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
    echo "system: $(os_name)"
    echo "architecture: $(deb_arch)"
    echo "kiln: $(kiln_commit)"
    echo "packages: ${wanted[*]}"
    echo "left out: ${left_out[*]:-none} (not in this release)"
    echo "files: $count, $bytes bytes (SHA256SUMS checks them)"
  } >"$dir/MANIFEST"
  say "done: carry $dir to the GPU machine, with this checkout, and run"
  say "  bash ci/gpu.sh --debs $dir"
}

os_name() {
  local name=""
  # shellcheck disable=SC1091 # the machine's own file
  [ -r /etc/os-release ] && name=$(. /etc/os-release && echo "${PRETTY_NAME:-$NAME}")
  echo "${name:-unknown}; $(uname -srm)"
}

kiln_commit() {
  local c
  if c=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
    git -C "$src" diff --quiet HEAD 2>/dev/null || c="$c, with changes not committed"
    echo "commit $c"
  else
    echo "not a git checkout"
  fi
}

# ---- --debs: a private prefix of unpacked .deb files -----------------------
# The C library's own package stays out of the prefix's library path: a
# second libc beside the machine's loader breaks every program started.
# It is unpacked apart, for the linker scripts of libc6-dev alone.
libc_packages=" libc6 libc6-i386 libc-bin "

unpack_one() { # unpack_one DEB DEST
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$1" "$2"
  else
    # Not Debian: a .deb is an ar archive holding data.tar.* (GNU tar
    # finds the compression of a file itself).
    local member tmp rc
    member=$(ar t "$1" | grep '^data\.tar') || return 1
    tmp=$(mktemp) || return 1
    ar p "$1" "$member" >"$tmp" && tar -x -f "$tmp" -C "$2"
    rc=$?
    rm -f "$tmp"
    return $rc
  fi
}

deb_package() { # deb_package DEB: its package name
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -f "$1" Package
  else
    local name=${1##*/}
    echo "${name%%_*}"
  fi
}

unpack_debs() {
  local dir=$1
  [ -d "$dir" ] || die 1 "--debs: '$dir' is not a folder"
  dir=$(cd "$dir" && pwd)
  [ -f "$dir/SHA256SUMS" ] ||
    die 1 "--debs: $dir has no SHA256SUMS: make the folder with ci/gpu.sh --fetch DIR"
  prefix=${prefix:-$dir/root}
  case $prefix in
    *'|'* | *' '*) die 1 "--prefix: '$prefix' has a space or '|'; choose another" ;;
  esac
  mkdir -p "$prefix" || die 1 "cannot make '$prefix'"
  prefix=$(cd "$prefix" && pwd)
  local stamp=$prefix/.gpu-sh-unpacked
  if [ -f "$stamp" ] && cmp -s "$stamp" "$dir/SHA256SUMS"; then
    say "using $prefix (unpacked before from $dir)"
    return 0
  fi
  (cd "$dir" && sha256sum --quiet -c SHA256SUMS) ||
    die 1 "--debs: a file of $dir does not match its SHA256SUMS (copied whole?)"
  local arch deb n=0
  arch=$(deb_arch)
  say "unpacking $dir's .deb files into $prefix"
  while read -r _ deb; do
    case $deb in
      *_"$arch".deb | *_all.deb) ;;
      *) die 1 "--debs: $deb is not for this machine's architecture ($arch)" ;;
    esac
    local pkg dest=$prefix
    pkg=$(deb_package "$dir/$deb") || die 1 "--debs: cannot read $deb"
    [[ $libc_packages != *" $pkg "* ]] || dest=$prefix/libc
    mkdir -p "$dest"
    unpack_one "$dir/$deb" "$dest" || die 1 "--debs: cannot unpack $deb"
    n=$((n + 1))
  done <"$dir/SHA256SUMS"
  relocate_prefix
  cp "$dir/SHA256SUMS" "$stamp"
  say "unpacked $n packages"
}

# Makes the unpacked files refer to the prefix, not to /: links that name
# an absolute path the prefix has, Python scripts' #! lines (meson's, which
# ninja runs by its path), pkg-config files, and the linker scripts of
# libc6-dev (libc.so names libc.so.6 and libc_nonshared.a by full path).
relocate_prefix() {
  local link target f word new
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    [[ $target == /* ]] && [ -e "$prefix$target" ] && ln -sfn "$prefix$target" "$link"
  done < <(find "$prefix" -type l -print0)
  while IFS= read -r -d '' f; do
    head -n 1 "$f" | grep -q '^#! */usr/bin/python3' &&
      sed -i "1s|^#! */usr/bin/python3|#!$prefix/usr/bin/python3|" "$f"
  done < <(find "$prefix/usr/bin" "$prefix/bin" -maxdepth 1 -type f -print0 2>/dev/null)
  while IFS= read -r -d '' f; do
    sed -i -e "s|^\([A-Za-z_][A-Za-z0-9_]*\)=/usr|\1=$prefix/usr|" \
      -e "s|-I/usr/|-I$prefix/usr/|g" -e "s|-L/usr/|-L$prefix/usr/|g" "$f"
  done < <(find "$prefix" -name '*.pc' -type f -print0)
  while IFS= read -r -d '' f; do
    head -c 200 "$f" | grep -q 'GNU ld script' || continue
    # shellcheck disable=SC2013 # paths, one word each
    for word in $(grep -oE '/[A-Za-z0-9_.+-][A-Za-z0-9_./+-]*' "$f" | sort -u); do
      if [ -e "$prefix$word" ]; then
        new=$prefix$word
      elif [ -e "$word" ]; then
        continue # the machine's own, as a program will run with it
      elif [ -e "$prefix/libc$word" ]; then
        new=$prefix/libc$word
      else
        continue
      fi
      sed -i "s|\([ (]\)$word\([ )]\)|\1$new\2|g" "$f"
    done
  done < <(find "$prefix" -name '*.so' -type f -size -4k -print0)
}

# The environment that puts the prefix first: programs, libraries for the
# loader and the linker, headers, pkg-config files, Python's modules.
prefix_env() {
  local t lib_dirs pc_dirs d
  t=$(triplet)
  lib_dirs="$prefix/usr/lib/$t:$prefix/lib/$t:$prefix/usr/lib"
  # Libraries Debian reaches through alternatives (OpenBLAS's libblas.so.3):
  # the folders under the triplet's that hold shared libraries.
  while IFS= read -r d; do
    lib_dirs="$lib_dirs:$d"
  done < <(find "$prefix/usr/lib/$t" -mindepth 2 -maxdepth 2 -name 'lib*.so*' \
    -printf '%h\n' 2>/dev/null | sort -u)
  pc_dirs=$(find "$prefix" -type d -name pkgconfig | sort | paste -sd: -)
  export PATH="$prefix/usr/bin:$prefix/bin:$PATH"
  export LD_LIBRARY_PATH="$lib_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LIBRARY_PATH="$lib_dirs${LIBRARY_PATH:+:$LIBRARY_PATH}"
  # -isystem, as the system's own headers are
  export C_INCLUDE_PATH="$prefix/usr/include/$t:$prefix/usr/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}"
  export PKG_CONFIG_PATH="$pc_dirs${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export PYTHONPATH="$prefix/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
  # meson takes `cc` first, which is an alternative the packages do not
  # make: the prefix's compiler, not an older one of the machine's.
  if [ -x "$prefix/usr/bin/gcc" ]; then
    export CC=gcc
  fi
  env_names+=(PATH LD_LIBRARY_PATH LIBRARY_PATH C_INCLUDE_PATH PKG_CONFIG_PATH PYTHONPATH)
  [ -z "${CC:-}" ] || env_names+=(CC)
}

# ---- the OpenCL drivers ----------------------------------------------------
# Makes the .icd folder of this run (OCL_ICD_VENDORS): the .icd files the
# ICD loader would read (OCL_ICD_VENDORS's, else /etc/OpenCL/vendors) and
# the prefix's. What it copied goes to $work/drivers.txt for the report.
make_vendors() {
  local vendors=$work/vendors notes=$work/drivers.txt f src_dir
  rm -rf "$vendors"
  mkdir -p "$vendors" || die 1 "cannot make $vendors"
  : >"$notes"
  local sources=()
  if [ -n "${OCL_ICD_VENDORS:-}" ] && [ -d "$OCL_ICD_VENDORS" ]; then
    sources+=("$OCL_ICD_VENDORS")
  elif [ -n "${OCL_ICD_VENDORS:-}" ] && [ -f "$OCL_ICD_VENDORS" ]; then
    cp "$OCL_ICD_VENDORS" "$vendors/"
    echo "OCL_ICD_VENDORS names one .icd file: $OCL_ICD_VENDORS" >>"$notes"
  else
    sources+=(/etc/OpenCL/vendors)
  fi
  [ -z "$prefix" ] || sources+=("$prefix/etc/OpenCL/vendors")
  for src_dir in "${sources[@]}"; do
    for f in "$src_dir"/*.icd; do
      [ -f "$f" ] || continue
      local name=${f##*/}
      [ ! -e "$vendors/$name" ] || name="debs-$name"
      cp "$f" "$vendors/$name"
      echo "$f: $(head -n 1 "$f")" >>"$notes"
    done
  done
  export OCL_ICD_VENDORS=$vendors
  env_names+=(OCL_ICD_VENDORS)
}

# Drivers that no .icd file names: kiln looks for each vendor's library
# where the dynamic loader and the vendors' installers put it, adds an .icd
# file for each to the run's folder, and prints the exports that apply it
# (LD_LIBRARY_PATH too for a driver outside the loader's path). Needs the
# built kiln.
register_drivers() {
  local notes=$work/drivers.txt exports said=$work/drivers-kiln.txt
  if [ "$driver_search" -eq 0 ]; then
    echo "--no-driver-search: no driver that no .icd file names was looked for" >>"$notes"
    return 0
  fi
  if [ ! -x "$kiln" ]; then
    echo "kiln is not built: drivers that no .icd file names were not looked for" >>"$notes"
    return 0
  fi
  if ! exports=$("$kiln" devices --icd-dir "$OCL_ICD_VENDORS" 2>"$said"); then
    say "kiln devices --icd-dir failed: $(tail -n 1 "$said")"
    cat "$said" >>"$notes"
    return 0
  fi
  # what it added, not the copies of the folder's own files
  grep -vF ": a copy of $OCL_ICD_VENDORS/" "$said" >>"$notes"
  eval "$exports"
  [[ $exports != *"export LD_LIBRARY_PATH="* ]] || env_names+=(LD_LIBRARY_PATH)
  [ -s "$notes" ] || echo "no .icd file and no vendor driver found" >>"$notes"
}

# ---- the steps ------------------------------------------------------------
# Each step's output is a file in $work; its exit status is kept for the
# summary. A step that fails does not stop the ones after it.
declare -A step_rc=()
run_step() { # run_step NAME COMMAND...: output to $work/NAME.txt
  local name=$1
  shift
  "$@" >"$work/$name.txt" 2>&1
  step_rc[$name]=$?
  return "${step_rc[$name]}"
}

install_packages() {
  if [ -n "$debs_dir" ] || [ "$install" -eq 0 ]; then
    return 0
  fi
  if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
    kiln_install_missing --available gpu.sh "${kiln_packages[@]}" ||
      die 1 "could not install kiln's packages; without a package registry, use --debs (ci/gpu.sh --help)"
    packages_from="Debian's, installed where missing (ci/packages.sh)"
  else
    packages_from="as this machine has them (not Debian: nothing installed)"
    say "not a Debian machine: nothing installed; fetch the packages on one with"
    say "  ci/gpu.sh --fetch DIR, and run ci/gpu.sh --debs DIR here"
  fi
}

need_tools() {
  local t missing=() version
  for t in meson ninja python3; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  command -v "${CC:-cc}" >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || missing+=(a C compiler)
  [ ${#missing[@]} -eq 0 ] ||
    die 1 "${missing[*]} not found: install them, or use --debs (ci/gpu.sh --help)"
  # kiln's meson.build asks for meson 1.0 (Ubuntu 22.04 has 0.61).
  [ "$build" -eq 1 ] || return 0
  version=$(meson --version 2>/dev/null)
  [ "${version%%.*}" -ge 1 ] 2>/dev/null ||
    die 1 "meson ${version:-?} is older than kiln needs (1.0): python3 -m pip install --user meson, then run this again"
}

# Both kinds of library, as ci/build.sh builds them (the install test checks
# both); optimised, for the benchmark, with asserts on.
build_kiln() {
  [ "$build" -eq 1 ] || return 0
  say "building kiln in $builddir (log: $work/build.txt)"
  local options=(-Dbuildtype=debugoptimized -Ddefault_library=both)
  {
    if [ -f "$builddir/build.ninja" ]; then
      meson setup --reconfigure "$builddir" "$src" "${options[@]}"
    else
      meson setup "$builddir" "$src" "${options[@]}"
    fi && meson compile -C "$builddir"
  } >"$work/build.txt" 2>&1
  step_rc[build]=$?
  return "${step_rc[build]}"
}

# The device tests run with meson's .icd folder of PoCL and Oclgrind
# (tests/icd), which has no GPU: the GPU's .icd files go in beside them for
# this run, so that KILN_DEVICE finds the GPU there too.
# Only those this run copied go again: the suite's own gpu-sh test runs
# this script inside the suite.
test_icds_added=()
gpu_into_test_icds() {
  local icds=$builddir/tests/icd f
  [ -f "$icds/pocl.icd" ] || return 0
  for f in "$OCL_ICD_VENDORS"/*.icd; do
    [ -f "$f" ] || continue
    grep -qiE 'pocl|oclgrind' "$f" && continue
    cp "$f" "$icds/gpu-sh-${f##*/}" && test_icds_added+=("$icds/gpu-sh-${f##*/}")
  done
}
gpu_out_of_test_icds() {
  [ ${#test_icds_added[@]} -eq 0 ] || rm -f "${test_icds_added[@]}"
}

run_tests() {
  say "running the test suite with KILN_DEVICE=$device (log: $work/tests.txt)"
  trap gpu_out_of_test_icds EXIT
  [ "$device_matched" -eq 0 ] || gpu_into_test_icds
  # A log name of this run's own (the suite's gpu-sh test runs this script
  # in the same build folder), moved to $work afterwards.
  local log=gpu-sh-$$
  KILN_DEVICE=$device run_step tests meson test -C "$builddir" --no-rebuild \
    --print-errorlogs --logbase "$log" "${suites[@]}" "${tests[@]}"
  gpu_out_of_test_icds
  mv -f "$builddir/meson-logs/$log.json" "$work/tests-log.json" 2>/dev/null
  mv -f "$builddir/meson-logs/$log.txt" "$work/tests-log.txt" 2>/dev/null
  rm -f "$builddir/meson-logs/$log.junit.xml"
  # One line of counts, then each test that did not pass with the end of
  # its output, from meson's own log.
  python3 - "$work/tests-log.json" >"$work/tests-summary.txt" 2>&1 <<'PY'
import json, sys
counts, bad = {}, []
try:
    with open(sys.argv[1]) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                counts[r["result"]] = counts.get(r["result"], 0) + 1
                if r["result"] not in ("OK", "EXPECTEDFAIL", "SKIP"):
                    bad.append(r)
except OSError as e:
    print(f"no test log: {e}")
    sys.exit(1)
ok = counts.pop("OK", 0) + counts.pop("EXPECTEDFAIL", 0)
skipped = counts.pop("SKIP", 0)
failed = sum(counts.values())
print(f"{ok} passed, {failed} failed, {skipped} skipped")
for r in bad:
    print(f"\n--- {r['name']}: {r['result']} (exit {r.get('returncode')}, "
          f"{r.get('duration', 0):.1f} s); the end of its output:")
    lines = (r.get("stdout") or "").splitlines() + (r.get("stderr") or "").splitlines()
    print("\n".join(lines[-60:]))
PY
}

run_tune() {
  say "kiln tune ${tune_args[*]} (log: $work/tune.txt)"
  run_step tune "$kiln" tune "${tune_args[@]}"
  run_step tune-record "$kiln" tune --export -
}

run_bench() {
  say "kiln bench ${bench_args[*]} --json (log: $work/bench.txt)"
  rm -f "$work/bench.json"
  run_step bench "$kiln" bench "${bench_args[@]}" --json "$work/bench.json"
}

# ---- the report ------------------------------------------------------------
section() { # section TITLE [FILE]: a banner, then FILE (or nothing)
  printf '\n==== %s ====\n' "$1"
  [ $# -lt 2 ] || cat "$2" 2>/dev/null || echo "(no output)"
}

step_line() { # step_line NAME: "ok", "failed (exit N)" or "not run"
  local rc=${step_rc[$1]-}
  if [ -z "$rc" ]; then
    echo "not run"
  elif [ "$rc" -eq 0 ]; then
    echo ok
  else
    echo "failed (exit $rc)"
  fi
}

write_report() { # write_report RESULT
  local tests_line picked
  tests_line=$(head -n 1 "$work/tests-summary.txt" 2>/dev/null)
  picked=$(grep -m 1 '^picked ' "$work/devices.txt" 2>/dev/null)
  {
    echo "kiln GPU report (ci/gpu.sh)"
    echo "result:   $1"
    echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host:     $(uname -n)"
    echo "system:   $(os_name)"
    echo "kiln:     $(kiln_commit)"
    echo "command:  ci/gpu.sh$(printf ' %q' "${args_given[@]}")"
    echo "packages: $packages_from"
    echo "device:   KILN_DEVICE=$device${picked:+: $picked}$device_note"
    echo "build:    $(step_line build)"
    echo "devices:  $(step_line devices)"
    echo "tests:    $(step_line tests)${tests_line:+: $tests_line}"
    echo "tune:     $(step_line tune)"
    echo "bench:    $(step_line bench)"
    section "OpenCL drivers (OCL_ICD_VENDORS=$OCL_ICD_VENDORS)" "$work/drivers.txt"
    if command -v nvidia-smi >/dev/null 2>&1; then
      section "nvidia-smi"
      nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
        --format=csv 2>&1
    fi
    if command -v clinfo >/dev/null 2>&1; then
      section "clinfo -l"
      clinfo -l 2>&1
    fi
    [ "${step_rc[build]:-0}" -eq 0 ] || section "build (the end of its log)" <(tail -n 80 "$work/build.txt")
    [ -z "${step_rc[version]-}" ] || section "kiln --version" "$work/version.txt"
    [ -z "${step_rc[info]-}" ] || section "kiln info" "$work/info.txt"
    [ -z "${step_rc[devices]-}" ] || section "kiln devices" "$work/devices.txt"
    if [ -n "${step_rc[tests]-}" ]; then
      section "tests" "$work/tests-summary.txt"
    fi
    if [ -n "${step_rc[tune]-}" ]; then
      section "kiln tune" "$work/tune.txt"
      section "kiln tune --export -" "$work/tune-record.txt"
    fi
    if [ -n "${step_rc[bench]-}" ]; then
      section "kiln bench" "$work/bench.txt"
      section "kiln bench --json" "$work/bench.json"
    fi
    section "end"
  } >"$out"
}

# ---- main ------------------------------------------------------------------
if [ -n "$fetch_dir" ]; then
  fetch_debs "$fetch_dir"
  exit 0
fi

builddir=${builddir:-$src/build-gpu}
mkdir -p "$builddir" || die 1 "cannot make '$builddir'"
builddir=$(cd "$builddir" && pwd)
work=${workdir:-$builddir/gpu-sh}
mkdir -p "$work" || die 1 "cannot make '$work'"
work=$(cd "$work" && pwd)
# An earlier run's outputs would pass for this one's.
rm -f "$work"/*.txt "$work/bench.json" "$work/tests-log.json"
env_names=()

packages_from="as this machine has them (--no-install)"
if [ -n "$debs_dir" ]; then
  unpack_debs "$debs_dir"
  prefix_env
  packages_from="--debs $debs_dir, unpacked in $prefix ($(sed -n 's/^system: //p' "$debs_dir/MANIFEST" 2>/dev/null))"
elif [ "$print_env" -eq 0 ]; then
  install_packages
fi
make_vendors
kiln=$builddir/tools/kiln

if [ "$print_env" -eq 1 ]; then
  register_drivers
  for name in $(printf '%s\n' "${env_names[@]}" | sort -u); do
    [ -z "${!name-}" ] || printf 'export %s=%q\n' "$name" "${!name}" >&3
  done
  exit 0
fi

need_tools
if [ -z "$out" ]; then
  out=$PWD/kiln-gpu-report-$(uname -n)-$(date -u +%Y%m%dT%H%M%SZ).txt
fi
touch "$out" 2>/dev/null || die 1 "cannot write the report '$out'"
out=$(cd "$(dirname "$out")" && pwd)/${out##*/}
device_note="" device_matched=0
# The kernel cache and the tuning record of this run, apart from the user's.
export KILN_CACHE_DIR=$work/cache

if ! build_kiln; then
  write_report "FAILED: kiln did not build"
  say "kiln did not build: see $work/build.txt; the report: $out"
  exit 1
fi
[ -x "$kiln" ] || die 1 "no kiln command in $builddir (built with tools disabled, or not built: --no-build)"
register_drivers
run_step version "$kiln" --version
run_step info "$kiln" info
if KILN_DEVICE=$device run_step devices "$kiln" devices; then
  device_matched=1
  [ "$device" = gpu ] || device_note=" (chosen with --device)"
elif [ "$allow_cpu" -eq 1 ]; then
  device_note=" (NO GPU: KILN_DEVICE=$device matched none; --allow-cpu ran on cpu)"
  say "kiln sees no device for KILN_DEVICE=$device; --allow-cpu: running on the CPU"
  device=cpu
  KILN_DEVICE=$device run_step devices "$kiln" devices
else
  write_report "NO GPU: kiln sees no device for KILN_DEVICE=$device"
  say "no GPU: kiln sees no device for KILN_DEVICE=$device. What it sees:"
  "$kiln" info --list 2>&1 | sed 's/^/  /'
  say "the drivers looked for, and kiln's view: $out"
  exit 77
fi
export KILN_DEVICE=$device

run_tests
run_tune
run_bench

failed=()
for s in version info devices tests tune tune-record bench; do
  [ "${step_rc[$s]:-0}" -eq 0 ] || failed+=("$s")
done
if [ ${#failed[@]} -eq 0 ]; then
  result="ok"
else
  result="FAILED: ${failed[*]}"
fi
write_report "$result"
say "$result"
say "the report: $out"
say "please send this one file back (an issue, or mail to the maintainers)"
[ ${#failed[@]} -eq 0 ]
