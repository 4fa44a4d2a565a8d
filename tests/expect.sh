# shellcheck shell=bash
# expect(), for the shell tests that run a command and check what it said
# (check-gpu-sh.sh, check-tune-clblast.sh): each sets $out and $rc with its
# own run() and counts failures in $failures.
#
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
