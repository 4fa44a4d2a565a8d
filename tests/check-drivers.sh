#!/usr/bin/env bash
# check-drivers.sh <kiln> — an OpenCL driver that no .icd file names, as the
# kiln command meets it: a stand-in libnvidia-opencl.so.1 (the first bytes
# of the kiln program: an ELF file of this machine, which nothing loads) on
# LD_LIBRARY_PATH, and an .icd folder of PoCL alone (OCL_ICD_VENDORS), as
# on the H200 machine of shared/gpu:
#
#   - `kiln devices` and `kiln check` run on the CPU and say so, with the
#     fix; with no platform at all, the error says it too;
#   - `kiln devices --icd-dir DIR` writes DIR (a copy of pocl.icd, an .icd
#     file naming the driver), prints the export line alone on stdout, and
#     after eval the note is gone; a second run is the same; a folder with
#     another .icd file, or under a file, is refused;
#   - a driver the folder names, or none installed: no note of it.
set -uo pipefail
kiln=$1
failures=0
out="" rc=0
run() { # run <args...>: kiln's output and exit status into $out and $rc
  capture "$kiln" "$@"
}
# shellcheck source=tests/expect.sh
. "$(dirname "$0")/expect.sh"
has() { grep -qF -- "$1" <<<"$out"; } # has <text>: $out holds it
lacks() { ! grep -qF -- "$1" <<<"$out"; }
files_in() { (cd "$1" && printf '%s ' *); } # the names, one space after each

pocl_icd=/etc/OpenCL/vendors/pocl.icd
if [ ! -f "$pocl_icd" ]; then
  echo "no PoCL ($pocl_icd)"
  [ -n "${CI:-}" ] && exit 1
  exit 77
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/icd" "$dir/empty" "$dir/nvidia/lib64"
cp "$pocl_icd" "$dir/icd/"
lib=$dir/nvidia/lib64/libnvidia-opencl.so.1
head -c 64 "$kiln" >"$lib"
export OCL_ICD_VENDORS=$dir/icd
export LD_LIBRARY_PATH=$dir/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset KILN_DEVICE KILN_VISIBLE_DEVICES OPENCL_VENDOR_PATH
note="note: NVIDIA's OpenCL driver is installed at $lib but no .icd file names it, so kiln runs on the CPU; fix: \`echo $lib > $dir/icd/nvidia.icd\`"

# ---- the note ------------------------------------------------------------
run devices
expect "devices runs on the CPU" 0 "<- picked"
check "devices names the driver and the fix" has "$note"
run check
expect "check runs" 0 "every result within its bound"
check "check names the driver and the fix" has "$note"
OCL_ICD_VENDORS=$dir/empty run devices
expect "no platform at all: an error" 1 "no OpenCL platform found"
check "which names the driver" has "NVIDIA's OpenCL driver is installed at $lib but no .icd file names it, so kiln has no OpenCL device to run on; fix: \`echo $lib > $dir/empty/nvidia.icd\`"

# ---- --icd-dir -------------------------------------------------------------
icds=$dir/out
exports=$("$kiln" devices --icd-dir "$icds" 2>"$dir/said")
# shellcheck disable=SC2034 # expect() reads it
rc=$?
out=$(cat "$dir/said")
expect "--icd-dir writes the folder" 0 "^$icds/nvidia.icd: names NVIDIA's driver $lib, which no .icd file named \(found on LD_LIBRARY_PATH\)$" \
  "^$icds/pocl.icd: a copy of $dir/icd/pocl.icd"
check "stdout: the export line alone" test "$exports" = "export OCL_ICD_VENDORS=$icds"
check "a copy of the .icd file in use" cmp -s "$pocl_icd" "$icds/pocl.icd"
check "an .icd file naming the driver" test "$(cat "$icds/nvidia.icd")" = "$lib"
check "nothing else" test "$(files_in "$icds")" = "nvidia.icd pocl.icd "
(
  eval "$exports"
  run devices
  expect "after eval, kiln runs" 0 "<- picked"
  check "and the note is gone" lacks "note: NVIDIA's"
  exit "$failures"
) || failures=$((failures + $?))
OCL_ICD_VENDORS=$icds run devices --icd-dir "$icds"
expect "--icd-dir again, on the folder in use: the same" 0 "^export OCL_ICD_VENDORS=$icds$"
check "still the same files" test "$(files_in "$icds")" = "nvidia.icd pocl.icd "
echo /old/libnvidia-opencl.so.1 >"$icds/old-nvidia.icd"
run devices --icd-dir "$icds"
expect "a folder with another .icd file is refused" 1 "already holds old-nvidia.icd"
check "and left as it was" test "$(cat "$icds/old-nvidia.icd")" = /old/libnvidia-opencl.so.1
: >"$dir/plain"
run devices --icd-dir "$dir/plain/icd"
expect "a folder under a file is refused" 1 "'$dir/plain' is not a folder"
run devices --icd-dir
expect "--icd-dir needs its folder" 2 "icd-dir"
spaced="$dir/my icds"
exports=$("$kiln" devices --icd-dir "$spaced" 2>/dev/null)
(
  eval "$exports"
  check "a folder with a space, quoted for the shell" test "$OCL_ICD_VENDORS" = "$spaced"
  exit "$failures"
) || failures=$((failures + $?))

# ---- no note -----------------------------------------------------------------
echo "libnvidia-opencl.so.1" >"$dir/icd/nvidia.icd"
run devices
check "a driver an .icd file names by name: no note" lacks "note: NVIDIA's"
rm "$dir/icd/nvidia.icd" "$lib"
run devices
check "none installed here: no note of it" lacks "$lib"

[ "$failures" -eq 0 ]
