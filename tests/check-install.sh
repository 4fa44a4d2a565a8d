#!/usr/bin/env bash
# check-install.sh <build dir> <source dir>
#
# Installs kiln into a staging folder (meson install --destdir), checks that
# the kiln command, its man page and its bash completion are there, then builds a
# small program against the staged headers and libraries using nothing but
# `pkg-config kiln`, first against libkiln.so and then against libkiln.a, and
# runs both. Catches headers, libraries or pkg-config flags missing from the
# installation. The program is written to a temporary folder, outside the
# source and build trees, so nothing there can leak into its include path.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 <build dir> <source dir>" >&2
  exit 2
fi
build_dir=$1
source_dir=$2
cc_prog=${CC:-cc}
pkg_config=${PKG_CONFIG:-pkg-config}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[ -d "$build_dir" ] || fail "no build folder at $build_dir"
[ -f "$source_dir/include/kiln/kiln.h" ] ||
  fail "$source_dir does not look like kiln's source folder"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage

echo "== meson install -C $build_dir --destdir $stage"
meson install -C "$build_dir" --destdir "$stage" --quiet

# ---- what was staged --------------------------------------------------------
pc_file=$(find "$stage" -path '*/pkgconfig/kiln.pc' -type f | head -n 1)
[ -n "$pc_file" ] || fail "no pkgconfig/kiln.pc under $stage"
pc_dir=$(dirname "$pc_file")
lib_dir=$(dirname "$pc_dir")
echo "staged kiln.pc: $pc_file"

[ -e "$lib_dir/libkiln.so" ] || fail "no libkiln.so in $lib_dir"
[ -f "$lib_dir/libkiln.a" ] || fail "no libkiln.a in $lib_dir"
echo "staged libraries: $lib_dir/libkiln.so, $lib_dir/libkiln.a"

kiln_h=$(find "$stage" -path '*/include/kiln/kiln.h' -type f | head -n 1)
[ -n "$kiln_h" ] || fail "no include/kiln/kiln.h under $stage"
inc_dir=$(dirname "$(dirname "$kiln_h")")
for h in kiln/kiln.h kiln/kiln_cl.h kiln/version.h; do
  [ -f "$inc_dir/$h" ] || fail "no $h in $inc_dir"
done
echo "staged headers: $inc_dir/kiln/{kiln.h,kiln_cl.h,version.h}"

# the kiln command, its man page (made from its help) and its bash completion,
# where bash-completion loads it (pkg-config's completionsdir, under the prefix)
for f in bin/kiln share/man/man1/kiln.1 share/bash-completion/completions/kiln; do
  [ -n "$(find "$stage" -path "*/$f" -type f | head -n 1)" ] || fail "no $f under $stage"
done
echo "staged: bin/kiln, share/man/man1/kiln.1, share/bash-completion/completions/kiln"

# ---- pkg-config, pointed at the stage only ----------------------------------
export PKG_CONFIG_PATH=$pc_dir
export PKG_CONFIG_SYSROOT_DIR=$stage

pc_flags() {
  "$pkg_config" "$@" kiln || fail "$pkg_config $* kiln failed"
}
shared_flags=$(pc_flags --cflags --libs)
static_flags=$(pc_flags --static --cflags --libs)
echo "pkg-config --cflags --libs kiln: $shared_flags"
echo "pkg-config --static --cflags --libs kiln: $static_flags"
case " $shared_flags " in
  *" -I$stage/"*) ;;
  *) fail "pkg-config's -I flags do not point into $stage" ;;
esac
case " $shared_flags " in
  *" -L$stage/"*) ;;
  *) fail "pkg-config's -L flags do not point into $stage" ;;
esac

# ---- the program ------------------------------------------------------------
cat > "$tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <string.h>

#include <kiln/kiln.h>
#include <kiln/kiln_cl.h> /* must compile from the installed headers too */

int main(void)
{
  printf("kiln_version() = %s (headers say %s)\n", kiln_version(),
         KILN_VERSION_STRING);
  if (kiln_version_number() != KILN_VERSION_NUMBER) {
    fprintf(stderr, "kiln_version_number() = %u, KILN_VERSION_NUMBER = %u\n",
            kiln_version_number(), (unsigned)KILN_VERSION_NUMBER);
    return 1;
  }
  const char *name = kiln_status_name(KILN_ERR_OUT_OF_MEMORY);
  if (name == NULL || strcmp(name, "ERR_OUT_OF_MEMORY") != 0) {
    fprintf(stderr, "kiln_status_name(KILN_ERR_OUT_OF_MEMORY) = %s\n",
            name ? name : "(null)");
    return 1;
  }

  kiln_runtime *rt = NULL;
  kiln_status st = kiln_runtime_create(NULL, &rt);
  if (st == KILN_ERR_NO_DEVICE) {
    printf("no OpenCL device (fine here): %s\n", kiln_last_error(NULL));
    return 0;
  }
  if (st != KILN_OK) {
    fprintf(stderr, "kiln_runtime_create: %s: %s\n", kiln_status_name(st),
            kiln_last_error(NULL));
    return 1;
  }
  const kiln_device_info *dev = kiln_runtime_device(rt);
  printf("runtime created on %s\n", dev && dev->name ? dev->name : "(null)");
  if (kiln_runtime_cl_queue(rt) == NULL) {
    fprintf(stderr, "kiln_runtime_cl_queue() returned NULL\n");
    return 1;
  }
  st = kiln_runtime_destroy(rt);
  if (st != KILN_OK) {
    fprintf(stderr, "kiln_runtime_destroy: %s: %s\n", kiln_status_name(st),
            kiln_last_error(NULL));
    return 1;
  }
  printf("runtime destroyed\n");
  return 0;
}
EOF

warn_flags=(-std=c11 -Wall -Wextra -Werror)

# ---- against libkiln.so -----------------------------------------------------
read -r -a flags <<< "$shared_flags"
echo "== $cc_prog prog.c ${warn_flags[*]} ${flags[*]} -o prog-shared"
"$cc_prog" "${warn_flags[@]}" "$tmp/prog.c" "${flags[@]}" -o "$tmp/prog-shared" ||
  fail "building against the staged libkiln.so"

# The program must load the staged library, not some other installed kiln.
resolved=$(LD_LIBRARY_PATH=$lib_dir ldd "$tmp/prog-shared" |
  awk '$1 ~ /^libkiln\.so/ { print $3 }')
case "$resolved" in
  "$stage"/*) echo "prog-shared loads $resolved" ;;
  *) fail "prog-shared loads libkiln from '${resolved:-nowhere}', not from $stage" ;;
esac
echo "== LD_LIBRARY_PATH=$lib_dir prog-shared"
LD_LIBRARY_PATH=$lib_dir "$tmp/prog-shared" || fail "prog-shared failed"

# ---- against libkiln.a ------------------------------------------------------
# -lkiln alone would pick libkiln.so from the same folder: wrap it in
# -Bstatic/-Bdynamic so kiln comes from libkiln.a and the rest (OpenCL,
# pthread, libm, libc) stays dynamic.
read -r -a sflags <<< "$static_flags"
link=()
for f in "${sflags[@]}"; do
  if [ "$f" = "-lkiln" ]; then
    link+=("-Wl,-Bstatic" "-lkiln" "-Wl,-Bdynamic")
  else
    link+=("$f")
  fi
done
echo "== $cc_prog prog.c ${warn_flags[*]} ${link[*]} -o prog-static"
"$cc_prog" "${warn_flags[@]}" "$tmp/prog.c" "${link[@]}" -o "$tmp/prog-static" ||
  fail "building against the staged libkiln.a"

if readelf -d "$tmp/prog-static" | grep -q 'NEEDED.*libkiln'; then
  fail "prog-static still needs libkiln.so"
fi
echo "== prog-static (no LD_LIBRARY_PATH; kiln linked in)"
env -u LD_LIBRARY_PATH "$tmp/prog-static" || fail "prog-static failed"

echo "OK: the staged installation builds and runs, shared and static"
