#!/usr/bin/env bash
# The main job: installs what is missing, builds, and shows kiln at work on
# this machine: the OpenCL devices it finds (in brief), which one it picks
# and why, one of each operation on that device with its time and its check
# against a CPU reference, and the profile table of those operations.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${KILN_BUILD_DIR:-build}
kiln=$builddir/tools/kiln
bash ci/deps.sh
bash ci/build.sh >/dev/null
echo "== kiln $("$kiln" version | cut -d' ' -f2): the OpenCL devices of this machine"
"$kiln" info --list
echo
echo "== the first device, in brief (kiln info shows every field of every device)"
# grep reads it all: no SIGPIPE
"$kiln" info --device 0 | grep -E "^  (Device (Name|Type|Version)|Driver Version|Max compute \
units|Max clock|Max work group size|Global memory size|Max memory allocation|Local memory \
size|(Half|Double)-precision)"
echo
echo "== which device kiln picks, and why"
"$kiln" devices
echo
echo "== one of each operation there, checked against the CPU, with the profile"
KILN_PROFILE=1 "$kiln" check
