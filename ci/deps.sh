#!/usr/bin/env bash
# Installs every Debian package kiln needs to build, test and benchmark, and only
# those that are missing. Safe to run again: a machine that has everything makes
# no apt call at all. Runs as root, or through sudo otherwise.
set -euo pipefail

# The lists and the installer: ci/packages.sh (ci/gpu.sh installs the first
# list alone).
# shellcheck source=ci/packages.sh
. "$(dirname "$0")/packages.sh"
kiln_install_missing deps "${kiln_packages[@]}" "${kiln_dev_packages[@]}"
