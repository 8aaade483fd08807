#!/usr/bin/env bash
# CTest tools.cli.export_killed_while_writing_leaves_no_temporary_file: `tapeflow train --export`
# killed while it writes the function file leaves neither the file nor a `*.tmp.<pid>` beside it.
#   export_kill_test.sh PROGRAM WORK_DIR
# The kill comes from the kernel, at a known moment: the program's file size limit (ulimit -f,
# in KiB) is below the MLP's export (about 1 MiB), so the write that crosses it raises SIGXFSZ,
# whose default action ends the process. Exits 77 (skipped) when dataset-fashion-mnist is not
# installed.
set -u
program=$1
work=$2
source "$(dirname "$0")/script_test_common.sh"
require_fashion_mnist
fresh_work_dir "$work"
fail() {
  echo "FAIL: $*"
  ls -la "$work"
  cat "$work/err.log"
  exit 1
}

(ulimit -f 256 && exec "$program" train --limit 64 --epochs 1 --export "$work/model.tfn") >"$work/out.log" \
  2>"$work/err.log"
rc=$?
[ "$rc" -eq $((128 + $(kill -l XFSZ))) ] || fail "exit status $rc, expected death by SIGXFSZ"
grep -q "^epoch 1/1: train loss" "$work/out.log" || fail "the run did not reach its export"
[ ! -e "$work/model.tfn" ] || fail "a function file was written"
leftovers=$(find "$work" -name 'model.tfn.tmp.*')
[ -z "$leftovers" ] || fail "the killed export left $leftovers"
rm -rf "$work"
echo "ok"
