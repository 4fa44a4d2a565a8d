#!/usr/bin/env bash
# Sets up (or reconfigures) the build directory and compiles. Used by
# ci/test.sh and ci/demo.sh. CI builds with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_BUILD_DIR:-build}
if [ -f "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" -Dwerror=true >/dev/null
else
  meson setup "$builddir" -Dwerror=true >/dev/null
fi
meson compile -C "$builddir"
