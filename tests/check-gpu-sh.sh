#!/usr/bin/env bash
# check-gpu-sh.sh <source root> <build root> — ci/gpu.sh, on a machine
# without a GPU, with PoCL alone registered (an .icd folder of its own):
#
#   - usage errors exit 2 with one line and the usage; --help exits 0;
#   - no GPU: exit 77, a line that says so, and a report that says so;
#   - --allow-cpu: the whole script on PoCL, on the built tree (--no-build:
#     a second build would take minutes), with two tests of the suite, a
#     2-second `kiln tune` and `kiln bench launch --quick`: exit 0, and the
#     report has every section, in order, the tests' counts, a tuning record
#     and a `kiln bench --json` document that parse, for the picked device;
#   - a driver no .icd names (a stand-in libnvidia-opencl.so.1 on
#     LD_LIBRARY_PATH, as NVIDIA's CUDA images keep it) gets an .icd of its
#     own through `kiln devices --icd-dir`, and the report says so; one an
#     .icd names does not; --no-driver-search looks for none;
#   - --debs: .deb files made here, unpacked into a private prefix (none of
#     it into /), links, #! lines, pkg-config files and linker scripts
#     pointed into it, libc6 kept apart, the environment (--print-env) that
#     puts it first; a file that does not match SHA256SUMS is refused;
#   - --fetch --dry-run lists the packages and downloads nothing (where apt
#     has package lists).
set -uo pipefail
src=$1 build=$2
gpu_sh=$src/ci/gpu.sh
failures=0
out="" rc=0
run() { # run <args...>: the script's output and exit status into $out and $rc
  capture bash "$gpu_sh" "$@"
}
# shellcheck source=tests/expect.sh
. "$(dirname "$0")/expect.sh"

pocl_icd=/etc/OpenCL/vendors/pocl.icd
if [ ! -f "$pocl_icd" ] || [ ! -x "$build/tools/kiln" ]; then
  echo "no PoCL ($pocl_icd) or no kiln command in $build"
  [ -n "${CI:-}" ] && exit 1
  exit 77
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# PoCL alone, whatever else this machine has, and (--no-driver-search) no
# driver found by path: a machine without a GPU, on any machine.
mkdir -p "$dir/icd"
cp "$pocl_icd" "$dir/icd/"
export OCL_ICD_VENDORS=$dir/icd
unset KILN_DEVICE KILN_VISIBLE_DEVICES OPENCL_VENDOR_PATH
on_build=(--build "$build" --no-build --no-install)

# ---- usage ---------------------------------------------------------------
run --help
expect "--help" 0 "^usage: ci/gpu.sh" "--fetch DIR" "--debs DIR" "--allow-cpu"
run --frobnicate
expect "an unknown option" 2 "^ci/gpu.sh: unknown option '--frobnicate'$" "^usage: "
run --fetch
expect "--fetch without its folder" 2 "^ci/gpu.sh: --fetch needs a value$"
run --fetch "$dir/f" --debs "$dir/d"
expect "--fetch with --debs" 2 "give one"
run --fetch "$dir/f" --out "$dir/r.txt"
expect "--fetch with a run's option" 2 "takes --dry-run alone"
run --dry-run
expect "--dry-run without --fetch" 2 "goes with --fetch"
run --prefix "$dir/p"
expect "--prefix without --debs" 2 "goes with --debs"
run --no-build
expect "--no-build without --build" 2 "needs --build DIR"
run --debs "$dir/nothing-here" --print-env
expect "--debs of a folder that is not there" 1 "is not a folder"

# ---- no GPU --------------------------------------------------------------
report=$dir/report-77.txt
run "${on_build[@]}" --work "$dir/w77" --out "$report" --no-driver-search
expect "no GPU: exit 77, said" 77 "^gpu.sh: no GPU: kiln sees no device for KILN_DEVICE=gpu" \
  "Portable Computing Language"
check "no GPU: the report says so" grep -q "^result:   NO GPU" "$report"
check "no GPU: the report has kiln's view" grep -q "^==== kiln devices ====" "$report"

# ---- the whole script on PoCL (--allow-cpu) --------------------------------
report=$dir/report.txt
run "${on_build[@]}" --work "$dir/w" --out "$report" --allow-cpu --no-driver-search \
  --test status --test runtime --tune-args "--only reduce --budget 2" \
  --bench-args "launch --quick"
expect "--allow-cpu: every step runs" 0 "--allow-cpu: running on the CPU" \
  "^gpu.sh: ok$" "^gpu.sh: the report: $report$"
check "the report's sections, in order" python3 - "$report" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
heads = re.findall(r"^==== (.*) ====$", text, re.M)
want = ["OpenCL drivers", "kiln --version", "kiln info", "kiln devices", "tests",
        "kiln tune", "kiln tune --export -", "kiln bench", "kiln bench --json", "end"]
got = [h for h in heads if h.split(" (")[0] in want]
got = [h.split(" (")[0] for h in got]
if got != want:
    sys.exit(f"sections {got}, expected {want}")
for line in ("result:   ok", "build:    not run", "devices:  ok", "tune:     ok",
             "bench:    ok"):
    if f"\n{line}\n" not in text:
        sys.exit(f"no line '{line}'")
if not re.search(r"^tests:    ok: 2 passed, 0 failed, 0 skipped$", text, re.M):
    sys.exit("no tests line with 2 passed")
if not re.search(r"^device:   KILN_DEVICE=cpu: picked \d+:\d+ .*--allow-cpu", text, re.M):
    sys.exit("the device line does not say the CPU was picked for want of a GPU")
def between(head, next_head):
    return text.split(f"==== {head} ====\n", 1)[1].split(f"\n==== {next_head}", 1)[0]
if not between("kiln --version", "kiln info").startswith("kiln "):
    sys.exit("no kiln --version")
record = json.loads(between("kiln tune --export -", "kiln bench"))
bench = json.loads(between("kiln bench --json", "end"))
picked = re.search(r"^picked \d+:\d+ (.*)$", text, re.M).group(1)
if bench["device"] != picked or record["device"] != picked:
    sys.exit(f"bench ran on {bench['device']}, tune on {record['device']}, kiln picked {picked}")
groups = {r["group"] for r in bench["records"]}
if groups != {"launch"} or not all(r["checked"] for r in bench["records"]):
    sys.exit(f"bench records: {bench['records']}")
PY
has_record() { compgen -G "$1/tuning-*.json" >/dev/null; }
check "the tuning record stays in the run's cache, not the user's" has_record "$dir/w/cache"

# ---- drivers no .icd names -------------------------------------------------
# The stand-in is the first bytes of the kiln program: an ELF file of this
# machine, as kiln wants a driver to be; nothing loads it.
mkdir -p "$dir/nvidia/lib64"
lib=$dir/nvidia/lib64/libnvidia-opencl.so.1
head -c 64 "$build/tools/kiln" >"$lib"
nv_path=$dir/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LD_LIBRARY_PATH=$nv_path run "${on_build[@]}" --work "$dir/wnv" --print-env
vendors=$dir/wnv/vendors
expect "--print-env prints the .icd folder" 0 "^export OCL_ICD_VENDORS=$vendors$"
check "NVIDIA's driver without an .icd gets one" grep -qx "$lib" "$vendors/nvidia.icd"
check "the machine's .icd files are kept" cmp -s "$pocl_icd" "$vendors/pocl.icd"
check "what was found is noted for the report" grep -qF \
  "$vendors/nvidia.icd: names NVIDIA's driver $lib, which no .icd file named (found on LD_LIBRARY_PATH)" \
  "$dir/wnv/drivers.txt"
report=$dir/report-nv.txt
LD_LIBRARY_PATH=$nv_path run "${on_build[@]}" --work "$dir/wnv" --out "$report" \
  --allow-cpu --test status --tune-args "--only reduce --budget 1" --bench-args "launch --quick"
check "the report's drivers section names it" grep -qF \
  "$vendors/nvidia.icd: names NVIDIA's driver $lib" "$report"
LD_LIBRARY_PATH=$nv_path run "${on_build[@]}" --work "$dir/wnv" --print-env --no-driver-search
check "--no-driver-search: none looked for" test ! -e "$vendors/nvidia.icd"
echo "libnvidia-opencl.so.1" >"$dir/icd/nvidia.icd"
LD_LIBRARY_PATH=$nv_path run "${on_build[@]}" --work "$dir/wnv" --print-env
check "a driver an .icd names gets no second one" \
  test "$(cat "$vendors/nvidia.icd")" = libnvidia-opencl.so.1 -a ! -e "$vendors/nvidia-kiln.icd"
rm "$dir/icd/nvidia.icd"

# ---- --debs ----------------------------------------------------------------
if command -v dpkg-deb >/dev/null 2>&1; then
  t=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
  pkg=$dir/pkg/kiln-fake
  mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/lib/$t/pkgconfig" \
    "$pkg/usr/include" "$pkg/etc/OpenCL/vendors"
  printf 'Package: kiln-fake\nVersion: 1.0\nArchitecture: all\nMaintainer: kiln tests <kiln@invalid>\nDescription: a stand-in\n' \
    >"$pkg/DEBIAN/control"
  printf '#!/usr/bin/python3\nprint("kiln-fake")\n' >"$pkg/usr/bin/kiln-fake-tool"
  chmod 755 "$pkg/usr/bin/kiln-fake-tool"
  ln -s /usr/bin/kiln-fake-tool "$pkg/usr/bin/kiln-fake-link"
  # shellcheck disable=SC2016 # pkg-config's own ${variables}
  printf 'prefix=/usr\nlibdir=${prefix}/lib/%s\nincludedir=/usr/include\n\nName: kilnfake\nDescription: a stand-in\nVersion: 1.0\nCflags: -I${includedir}/kilnfake\nLibs: -L${libdir} -lkilnfake\n' \
    "$t" >"$pkg/usr/lib/$t/pkgconfig/kilnfake.pc"
  : >"$pkg/usr/lib/$t/libkilnfake_nonshared.a"
  printf '/* GNU ld script */\nGROUP ( /lib/%s/libkilnfake-c.so.6 /usr/lib/%s/libkilnfake_nonshared.a )\n' \
    "$t" "$t" >"$pkg/usr/lib/$t/libkilnfake.so"
  echo libkilnfake-icd.so >"$pkg/etc/OpenCL/vendors/kilnfake.icd"
  # a C library of its own: kept apart from the prefix's library path
  libc=$dir/pkg/libc6
  mkdir -p "$libc/DEBIAN" "$libc/lib/$t"
  printf 'Package: libc6\nVersion: 99.0\nArchitecture: all\nMaintainer: kiln tests <kiln@invalid>\nDescription: a stand-in\n' \
    >"$libc/DEBIAN/control"
  : >"$libc/lib/$t/libkilnfake-c.so.6"
  mkdir -p "$dir/debs"
  if ! dpkg-deb --root-owner-group -b "$pkg" "$dir/debs/kiln-fake_1.0_all.deb" >/dev/null ||
    ! dpkg-deb --root-owner-group -b "$libc" "$dir/debs/libc6_99.0_all.deb" >/dev/null; then
    echo "FAIL: dpkg-deb could not make the stand-in packages"
    exit 1
  fi
  (cd "$dir/debs" && sha256sum -- *.deb >SHA256SUMS)
  echo "system: the test's" >"$dir/debs/MANIFEST"

  p=$dir/prefix
  run --debs "$dir/debs" --prefix "$p" "${on_build[@]}" --work "$dir/wd" --print-env
  expect "--debs unpacks into the prefix" 0 "unpacking .* into $p$" "unpacked 2 packages" \
    "^export PATH=$p/usr/bin:" "^export PKG_CONFIG_PATH=" "^export C_INCLUDE_PATH=$p/usr/include"
  check "nothing of it goes into /" test ! -e /usr/bin/kiln-fake-tool
  check "libc6 is kept apart" test -f "$p/libc/lib/$t/libkilnfake-c.so.6" -a ! -e "$p/lib/$t"
  check "an absolute link points into the prefix" \
    test "$(readlink "$p/usr/bin/kiln-fake-link")" = "$p/usr/bin/kiln-fake-tool"
  check "a Python script's #! names the prefix's python3" \
    test "$(head -n 1 "$p/usr/bin/kiln-fake-tool")" = "#!$p/usr/bin/python3"
  check "the linker script names the prefix's files" grep -qF \
    "GROUP ( $p/libc/lib/$t/libkilnfake-c.so.6 $p/usr/lib/$t/libkilnfake_nonshared.a )" \
    "$p/usr/lib/$t/libkilnfake.so"
  check "the prefix's .icd files are in the run's folder" \
    test -f "$dir/wd/vendors/kilnfake.icd" -a -f "$dir/wd/vendors/pocl.icd"
  # the exports alone on stdout: a shell can take them as they are
  env_out=$(bash "$gpu_sh" --debs "$dir/debs" --prefix "$p" "${on_build[@]}" \
    --work "$dir/wd" --print-env 2>/dev/null)
  (
    eval "$env_out"
    check "PATH: the prefix's programs first" \
      test "$(command -v kiln-fake-tool)" = "$p/usr/bin/kiln-fake-tool"
    check "PKG_CONFIG_PATH: the prefix's .pc files, pointed into it" \
      test "$(pkg-config --cflags kilnfake | tr -d " ")" = "-I$p/usr/include/kilnfake"
    check "LD_LIBRARY_PATH: the prefix's libraries first, libc6's not" \
      test "${LD_LIBRARY_PATH#"$p/usr/lib/$t:"}" != "$LD_LIBRARY_PATH" \
      -a "${LD_LIBRARY_PATH#*"$p/libc"}" = "$LD_LIBRARY_PATH"
    check "OCL_ICD_VENDORS: the run's .icd folder" test "$OCL_ICD_VENDORS" = "$dir/wd/vendors"
    exit "$failures"
  ) || failures=$((failures + $?))
  run --debs "$dir/debs" --prefix "$p" "${on_build[@]}" --work "$dir/wd" --print-env
  expect "--debs again unpacks nothing" 0 "using $p \(unpacked before"
  rm -rf "$p"
  printf 'x' >>"$dir/debs/kiln-fake_1.0_all.deb"
  run --debs "$dir/debs" --prefix "$p" "${on_build[@]}" --work "$dir/wd" --print-env
  expect "--debs refuses a file that does not match SHA256SUMS" 1 "does not match its SHA256SUMS"
  check "and unpacks nothing" test ! -e "$p/usr"
else
  echo "ok: --debs not checked (no dpkg-deb to make .deb files with)"
fi

# ---- --fetch --dry-run -------------------------------------------------------
if [[ $(apt-cache policy gcc 2>/dev/null) == *"Candidate: "[0-9]* ]]; then
  run --fetch "$dir/fetched" --dry-run
  expect "--fetch --dry-run lists the packages" 0 "^gcc-[0-9]+_.*\.deb +[0-9]+$" \
    "^gpu.sh: would download [0-9]+ files, [0-9]+ MiB, into $dir/fetched$"
  check "and downloads nothing" test ! -e "$dir/fetched"
else
  echo "ok: --fetch --dry-run not checked (apt has no package lists here)"
fi

[ "$failures" -eq 0 ]
