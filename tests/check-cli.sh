#!/usr/bin/env bash
# check-cli.sh <kiln> — the kiln command's general behaviour: help, version,
# `kiln devices`, and one clear line plus a non-zero exit for what is wrong.
set -uo pipefail
kiln=$1
failures=0
check() { # check <description> <expected exit> <pattern in output> <args...>
  local what=$1 want=$2 pattern=$3
  shift 3
  local out rc
  out=$("$kiln" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $what: exit $rc (expected $want), output:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}

check "help" 0 "devices +rank the devices" help
check "no command" 2 "usage: kiln" 
check "unknown command" 2 "unknown command 'frobnicate'" frobnicate
check "version" 0 "^kiln [0-9]+\.[0-9]+\.[0-9]+$" version
check "devices ranks and picks" 0 "<- picked" devices
check "devices says why" 0 "^picked [0-9]+:[0-9]+ " devices
KILN_DEVICE=name=pthread check "devices shows the selector" 0 "KILN_DEVICE='name=pthread': 'name=pthread' picks" devices
KILN_DEVICE=bogus check "a bad selector" 1 "'bogus' is not a device selector" devices
KILN_MEMORY_LIMIT=lots check "a bad environment value" 1 "KILN_MEMORY_LIMIT='lots'" devices

[ "$failures" -eq 0 ]
