#!/usr/bin/env bash
# ci/bundle.sh — kiln, its tests and every shared library they need in one
# relocatable tarball, kiln-VERSION-linux-ARCH.tar.gz, for a GPU machine with
# no package registry, no compiler and no meson (an HPC node, a locked
# container): unpack it anywhere, as any user, and run
# bin/kiln-gpu-check there (docs/gpu.md).
#
#   ci/bundle.sh                  a release build in build-bundle/, then the
#                                 tarball in it
#   ci/bundle.sh --build DIR      the tarball of DIR, built as it is (any
#                                 build type; nothing is compiled)
#   options: --out DIR (where the tarball goes; default: the build folder),
#            --keep (leave the unpacked tree beside it)
#
# What goes in: bin/kiln, lib/libkiln.so*, the test programs and examples,
# the tests' scripts and cl/, and each shared library that ldd resolves for
# any of them, except the C library and the C++ runtime, which the GPU
# machine has (glibc at least as new as the build machine's). Every ELF file
# gets a $ORIGIN run path (patchelf): the bundle's libraries come first
# wherever it lies, and none of its paths is absolute. The test list is
# meson's, with each path made relative to the bundle (tests/tests.json);
# the tests that need what the bundle cannot carry (another platform, a
# system file, the sources) are left out, each named with why in
# tests/left-out.txt.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
die() {
  echo "bundle.sh: $*" >&2
  exit 1
}
usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
}

build="" out="" keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bundle.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

for t in patchelf ldd python3 tar; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found (patchelf: Debian's package patchelf, ci/packages.sh)"
done

if [ -z "$build" ]; then
  # -Dmpi=disabled: libkiln-mpi would pull in Open MPI, which a GPU
  # machine has its own of; the bundle checks libkiln.
  build=$src/build-bundle
  options=(-Dbuildtype=release -Ddefault_library=both -Dtests=enabled -Dtools=enabled
    -Dmpi=disabled)
  if [ -f "$build/build.ninja" ]; then
    meson setup --reconfigure "$build" "$src" "${options[@]}" >/dev/null
  else
    meson setup "$build" "$src" "${options[@]}" >/dev/null
  fi
  meson compile -C "$build"
fi
build=$(cd "$build" && pwd)
[ -x "$build/tools/kiln" ] || die "no kiln command in $build: build it first (meson compile -C $build)"
[ -f "$build/meson-info/intro-tests.json" ] || die "no meson test list in $build/meson-info"
out=$(mkdir -p "${out:-$build}" && cd "${out:-$build}" && pwd)

version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' \
  "$build/meson-info/intro-projectinfo.json")
name=kiln-$version-linux-$(uname -m)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/lib" "$root/tests" "$root/examples" "$root/cl"

# ---- kiln's own files --------------------------------------------------------
cp "$build/tools/kiln" "$root/bin/"
find "$build/src" -maxdepth 1 -name "libkiln.so*" ! -type d -exec cp -P {} "$root/lib/" \;
install -m 755 "$src/tools/kiln-gpu-check.py" "$root/bin/kiln-gpu-check"
cp "$src"/cl/*.cl "$root/cl/"
cp "$src"/tests/*.py "$src"/tests/*.sh "$root/tests/"
# The test list: tests/tests.json and tests/left-out.txt; the programs and
# folders of the build that the kept tests name are copied as it goes.
python3 - "$build" "$src" "$root" <<'PY'
import json, os, shutil, sys

build, src, root = sys.argv[1:4]
# Suites of other platforms (PoCL's second device, Oclgrind, rusticl), of
# the build machine (install, mpi) or of scripts that need the sources.
OTHER = {"rusticl", "oclgrind", "uninit", "compilers", "gpu", "mpi", "install"}
# Where each part of the build tree goes in the bundle.
PLACES = [("tools/kiln", "bin/kiln"), ("src/", "lib/"), ("tests/", "tests/"),
          ("examples/", "examples/")]
SRC_PLACES = [("tests/", "tests/"), ("cl/", "cl/")]
RUNNERS = {"python3", "python", "bash", "sh"}


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def place(path, why, copies):
    """The bundle's name for PATH ('@BUNDLE@/...' or '@WORK@/...'); adds to
    COPIES what the bundle needs of the build for it, and raises
    ValueError(why not) when the bundle cannot carry it. A relative path
    that is in the build is the build's: meson runs each test there."""
    if not os.path.isabs(path) and os.path.exists(os.path.join(build, path)):
        path = os.path.join(build, path)
    if not os.path.isabs(path):
        return path
    path = os.path.normpath(path)
    for base, places in ((build, PLACES), (src, SRC_PLACES)):
        if not path.startswith(base + "/"):
            continue
        rel = path[len(base) + 1:]
        whose = "the build" if base == build else "the sources"
        for a, b in places:
            if rel == a or (a.endswith("/") and rel.startswith(a)):
                dest = b + rel[len(a):]
                break
        else:
            raise ValueError(f"{why} {rel} of {whose}")
        if base == src:
            if not os.path.exists(os.path.join(root, dest)):
                raise ValueError(f"{why} {rel} of {whose}")
            return "@BUNDLE@/" + dest
        if os.path.isfile(path):
            copies.append((path, dest))
            return "@BUNDLE@/" + dest
        # A folder of programs (the stand-in CLBlast tuners) goes in; any
        # other folder (a kernel cache, an output folder) is the run's own.
        progs = [e for e in os.scandir(path) if e.is_file() and is_elf(e.path)] \
            if os.path.isdir(path) else []
        copies += [(e.path, dest + "/" + e.name) for e in progs]
        return ("@BUNDLE@/" if progs else "@WORK@/") + dest
    if os.path.basename(path) in RUNNERS:
        return os.path.basename(path)
    raise ValueError(f"{why} {path} of the build machine")


kept, left = [], []
for t in json.load(open(os.path.join(build, "meson-info", "intro-tests.json"))):
    name, suites = t["name"], set(t.get("suite") or [])
    suites = {s.split(":")[-1] for s in suites}
    other = sorted(suites & OTHER)
    if other:
        left.append((name, "suite " + ", ".join(other)))
        continue
    if not suites & {"device", "examples"}:
        left.append((name, "no device: suite " + ", ".join(sorted(suites))))
        continue
    copies = []
    try:
        cmd = [place(c, "needs", copies) for c in t["cmd"]]
        env = {}
        for k, v in (t.get("env") or {}).items():
            if k in ("OCL_ICD_VENDORS", "POCL_DEVICES", "RUSTICL_ENABLE", "KILN_CACHE_DIR",
                     "LD_LIBRARY_PATH"):
                continue  # kiln-gpu-check sets these for the run; run paths find lib/
            env[k] = place(v, "its environment names", copies) if v.startswith("/") else v
    except ValueError as e:
        left.append((name, str(e)))
        continue
    for frm, dest in copies:
        os.makedirs(os.path.dirname(os.path.join(root, dest)), exist_ok=True)
        shutil.copy2(frm, os.path.join(root, dest))
    kept.append({"name": name, "suites": sorted(suites), "cmd": cmd, "env": env,
                 "timeout": t.get("timeout") or 30, "parallel": t.get("is_parallel", True),
                 "protocol": t.get("protocol", "exitcode")})
with open(os.path.join(root, "tests", "tests.json"), "w") as f:
    json.dump(kept, f, indent=1)
with open(os.path.join(root, "tests", "left-out.txt"), "w") as f:
    f.write("# meson's tests that this bundle leaves out, and why\n")
    for name, why in left:
        f.write(f"{name}: {why}\n")
print(f"bundle.sh: {len(kept)} tests in the bundle's list, {len(left)} left out "
      "(tests/left-out.txt)")
PY

# ---- the shared libraries ------------------------------------------------------
# shellcheck source=ci/system-libs.sh
. "$src/ci/system-libs.sh"
elves() { # every ELF file under the bundle but its libraries
  find "$root/bin" "$root/tests" "$root/examples" -type f -print0 |
    while IFS= read -r -d '' f; do
      [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
    done
}
copy_needed() { # copy_needed FILE...: ldd's libraries of each, into lib/
  local f soname path
  for f in "$@"; do
    while read -r soname _ path _; do
      [ -n "$path" ] || continue
      system_lib "$soname" && continue
      [ "$path" = "not" ] && die "$f: $soname not found"
      [ -e "$root/lib/$soname" ] || cp -L "$path" "$root/lib/$soname"
    done < <(LD_LIBRARY_PATH=$root/lib ldd "$f" | awk '$2 == "=>" { print $1, $2, $3 }')
  done
}
mapfile -t programs < <(elves)
# The copies' run paths are the build's (relative to it: \$ORIGIN/../src),
# so libkiln is looked for in lib/ first.
copy_needed "${programs[@]}"
copy_needed "$root"/lib/*.so*

# ---- run paths -------------------------------------------------------------------
# Debug sections out of kiln's own files (a debugoptimized build's are most
# of its size), then $ORIGIN run paths; strip before patchelf, whose
# rewritten files strip can break.
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "${programs[@]}" "$root"/lib/libkiln.so.*.*
fi
for f in "${programs[@]}"; do
  rel=$(realpath --relative-to="$(dirname "$f")" "$root/lib")
  patchelf --set-rpath "\$ORIGIN/$rel" "$f"
done
for f in "$root"/lib/*.so*; do
  [ -L "$f" ] || patchelf --set-rpath "\$ORIGIN" "$f"
done

# ---- what it is --------------------------------------------------------------------
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (with uncommitted changes)"
fi
{
  echo "kiln $version, commit $commit, $(uname -m)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null)"
  echo "build type $(python3 -c 'import json,sys; print([o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "buildtype"][0])' "$build/meson-info/intro-buildoptions.json")"
  echo "needs glibc $(ldd --version | awk 'NR == 1 { print $NF }') or newer, python3 for bin/kiln-gpu-check"
  echo
  echo "bin/kiln-gpu-check --help   checks kiln on this machine's GPU and writes one report"
  echo "bin/kiln --help             the kiln command"
  echo
  echo "libraries (lib/):"
  for f in "$root"/lib/*; do
    [ -L "$f" ] || echo "  ${f##*/}"
  done
} >"$root/BUNDLE.txt"

chmod -R u+rwX,go+rX-w "$root"
tarball=$out/$name.tar.gz
tar -czf "$tarball" -C "$stage" --owner=0 --group=0 --numeric-owner "$name"
if [ "$keep" -eq 1 ]; then
  rm -rf "${out:?}/$name"
  mv "$root" "$out/"
fi
echo "bundle.sh: $tarball ($(du -k "$tarball" | awk '{ printf "%.1f MB", $1 * 1024 / 1e6 }'))"
