#!/usr/bin/env bash
# The main job: installs what is missing, builds, and shows kiln at work on
# this machine: the OpenCL devices it finds, and which one it picks and why.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_BUILD_DIR:-build}
bash ci/deps.sh
bash ci/build.sh >/dev/null
echo "== kiln $("$builddir/tools/kiln" version | cut -d' ' -f2): devices"
"$builddir/tools/kiln" info --list
echo
echo "== the first device, as clinfo would report it (kiln info shows them all)"
"$builddir/tools/kiln" info --device 0 | sed -n 1,30p  # sed reads it all: no SIGPIPE
echo
echo "== which device kiln picks, and why"
"$builddir/tools/kiln" devices
