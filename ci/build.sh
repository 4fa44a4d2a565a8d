#!/usr/bin/env bash
# Sets up (or reconfigures) the build directory and compiles. Used by
# ci/test.sh and ci/demo.sh. CI builds with warnings as errors, and both
# kinds of library (meson's default is the shared one alone), which the
# install test checks.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_BUILD_DIR:-build}
if [ -f "$builddir/build.ninja" ]; then
  meson setup --reconfigure "$builddir" -Dwerror=true -Ddefault_library=both >/dev/null
else
  meson setup "$builddir" -Dwerror=true -Ddefault_library=both >/dev/null
fi
meson compile -C "$builddir"
