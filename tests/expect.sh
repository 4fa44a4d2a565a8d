# shellcheck shell=bash
# What the shell tests that run a command and check what it said share
# (check-drivers.sh, check-gpu-sh.sh, check-tune-clblast.sh): capture()
# sets $out and $rc; expect(), refuse() and check() print a line each and
# count failures in $failures.

# capture <command...>: the command's output (both streams) into $out and
# its exit status into $rc.
capture() {
  out=$("$@" 2>&1)
  rc=$?
}

# expect <description> <exit> <pattern in $out>...: ok when the exit status
# is <exit> and every extended regular expression matches $out; else prints
# the output and counts a failure.
expect() {
  local what=$1 want=$2
  shift 2
  local ok=1 pattern
  [ "$rc" -eq "$want" ] || ok=0
  for pattern in "$@"; do
    grep -qE -- "$pattern" <<<"$out" || ok=0
  done
  if [ "$ok" -eq 0 ]; then
    echo "FAIL: $what: exit $rc (expected $want), output:"
    # shellcheck disable=SC2001 # a prefix on each line
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}

# refuse <description> <pattern>: ok when the extended regular expression
# does not match $out.
refuse() {
  if grep -qE -- "$2" <<<"$out"; then
    echo "FAIL: $1"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}

# check <description> <command...>: ok when the command succeeds.
check() {
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAIL: $what"
    failures=$((failures + 1))
  fi
}
