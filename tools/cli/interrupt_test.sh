#!/usr/bin/env bash
# CTest tools.cli.ctrl_c_*: Ctrl-C (SIGINT) during `tapeflow train`, sent to the real program.
#   interrupt_test.sh PROGRAM WORK_DIR
# 1. One SIGINT: the run finishes its step, saves the checkpoint, prints how to resume and exits
#    with status 130; the printed resume command then finishes the interrupted epoch.
# 2. Two SIGINTs in a row: the program quits at once (status 130, "interrupted again").
# Exits 77 (skipped) when dataset-fashion-mnist is not installed.
set -u
set -m  # job control: background jobs get SIGINT's default disposition, not "ignored"
program=$1
work=$2
source "$(dirname "$0")/script_test_common.sh"
require_fashion_mnist
fresh_work_dir "$work"
ckpt=$work/run.ckpt

# --- 1. One Ctrl-C: save, say how to resume, exit 130 ---------------------------------------
"$program" train --limit 2000 --batch-size 50 --epochs 50 --checkpoint "$ckpt" >"$work/run.out.log" \
  2>"$work/run.err.log" &
pid=$!
wait_for "$work/run.err.log" "ex/s" || fail "training did not start"
interrupt "$pid" "one SIGINT"
grep -q "To resume:" "$work/run.err.log" || fail "no resume instructions on stderr"
resume=$(grep -A1 "To resume:" "$work/run.err.log" | tail -1)
[[ "$resume" == *"tapeflow train --resume --checkpoint $ckpt --epochs 50"* ]] || fail "resume command: $resume"
[ -f "$ckpt" ] || fail "no checkpoint at $ckpt"
# Resume, but only up to the end of the interrupted epoch (the message names it).
stopped=$(sed -n 's/.*interrupted after step [0-9]*\/[0-9]* of epoch \([0-9]*\)\/50.*/\1/p' "$work/run.err.log")
[ -n "$stopped" ] || stopped=$(($(sed -n 's/.*interrupted after epoch \([0-9]*\)\/50.*/\1/p' "$work/run.err.log") + 1))
"$program" train --resume --checkpoint "$ckpt" --epochs "$stopped" >"$work/resume.out.log" 2>"$work/resume.err.log"
rc=$?
[ "$rc" -eq 0 ] || fail "resuming exited with status $rc"
grep -q "resumed from $ckpt after" "$work/resume.out.log" || fail "the resumed run does not say where it resumed"
grep -q "epoch $stopped/$stopped: train loss" "$work/resume.out.log" || fail "the resumed run did not finish epoch $stopped"

# --- 2. Two Ctrl-Cs: quit at once ----------------------------------------------------------
"$program" train --model cnn --limit 3000 --batch-size 1000 --epochs 50 >"$work/twice.out.log" \
  2>"$work/twice.err.log" &
pid=$!
wait_for "$work/twice.err.log" "ex/s" || fail "training did not start"
# Not both at once: a second SIGINT still pending when the first arrives merges with it. A CNN
# step of 1000 examples takes far longer than the pause, so the second comes within the step.
kill -INT "$pid" && sleep 0.1 && interrupt "$pid" "two SIGINTs"
grep -q "interrupted again: quitting" "$work/twice.err.log" || fail "the second SIGINT did not quit at once"
rm -rf "$work"
echo "ok"
