# Sourced by the CLI's shell tests (tools/cli/*_test.sh): the set-up they share.
#   require_fashion_mnist     exits 77 (CTest's skip) when dataset-fashion-mnist is not installed
#   fresh_work_dir DIR        an empty DIR for the test's files
#   fail MESSAGE...           prints FAIL: MESSAGE and every $work/*.log, then exits 1
#   wait_for FILE PATTERN     waits (60 s at most: the machine may be busy) until FILE has a line
#                             matching PATTERN; status 1 if it never does
#   interrupt PID WHAT        sends SIGINT to PID (a job this test started), waits for it, and
#                             fails unless it exited with 130 (WHAT: the signals sent, for the message)
require_fashion_mnist() {
  [ -e /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz ] ||
    { echo "dataset-fashion-mnist is not installed"; exit 77; }
}
fresh_work_dir() {
  rm -rf "$1" && mkdir -p "$1"
}
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1
}
wait_for() {
  for _ in $(seq 1200); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
interrupt() {
  kill -INT "$1"
  wait "$1"
  local rc=$?
  [ "$rc" -eq 130 ] || fail "exit status $rc after $2, expected 130"
}
