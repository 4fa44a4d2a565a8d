#!/usr/bin/env bash
# Sets up (or reconfigures) the build directory and compiles. Used by
# ci/test.sh and ci/demo.sh. CI builds with warnings as errors, and both
# kinds of library (meson's default is the shared one alone), which the
# install test checks.
#
# An existing build directory is reconfigured only when it needs it: its
# options differ, or packages were installed since it was configured (a
# new dependency to find; dpkg's status file says when). A reconfigure
# regenerates the build twice, about 10 s on 2 cores even when nothing
# changed; ninja regenerates it by itself when a meson.build file changes.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_BUILD_DIR:-build}
options=(-Dwerror=true -Ddefault_library=both)
current() {
  meson introspect "$builddir" --buildoptions 2>/dev/null | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o.get("werror"), o.get("default_library"))' 2>/dev/null || true
}
status=/var/lib/dpkg/status
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" "${options[@]}" >/dev/null
elif [ "$(current)" != "True both" ] || [ ! -f "$status" ] ||
  [ "$status" -nt "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" "${options[@]}" >/dev/null
fi
meson compile -C "$builddir"
