#!/usr/bin/env bash
# CTest tools.cli.ctrl_c_during_a_language_model_keeps_the_last_epoch: Ctrl-C (SIGINT) sent to the
# real program while `tapeflow train --model char-lstm` trains on a text the test writes.
#   interrupt_text_test.sh PROGRAM WORK_DIR
# One SIGINT: the run stops after its step, exits with status 130 and says which epoch the
# checkpoint holds and how to resume; the printed command resumes, and `sample` reads the result.
set -u
set -m  # job control: background jobs get SIGINT's default disposition, not "ignored"
program=$1
work=$2
source "$(dirname "$0")/script_test_common.sh"
fresh_work_dir "$work"
ckpt=$work/lm.ckpt
text=$work/sentences.txt

for i in $(seq 400); do echo "sentence $((i % 7)) of the text, line $((i % 13))."; done >"$text"
"$program" train --model char-lstm --text "$text" --sequence-length 16 --batch-size 8 --epochs 50 \
  --checkpoint "$ckpt" >"$work/run.out.log" 2>"$work/run.err.log" &
pid=$!
wait_for "$work/run.out.log" "^epoch 1/50: " || fail "the first epoch did not end"
interrupt "$pid" "one SIGINT"
message=$(grep "interrupted during epoch" "$work/run.err.log") || fail "no message saying where it stopped"
held=$(sed -n "s/.*the checkpoint '.*' holds epoch \([0-9]*\)\..*/\1/p" <<<"$message")
[ -n "$held" ] && [ "$held" -ge 1 ] || fail "the message does not say which epoch the checkpoint holds: $message"
resume=$(grep -A1 "To resume:" "$work/run.err.log" | tail -1)
[[ "$resume" == *"tapeflow train --resume --checkpoint $ckpt --epochs 50 --text $text" ]] ||
  fail "resume command: $resume"
# The printed command (no --model: the checkpoint says which), up to one epoch past the checkpoint's.
next=$((held + 1))
read -r -a args <<<"${resume#*tapeflow }"
args=("${args[@]/#50/$next}")
"$program" "${args[@]}" >"$work/resume.out.log" 2>"$work/resume.err.log" || fail "resuming exited with status $?"
grep -q "resumed from $ckpt after epoch $held" "$work/resume.out.log" || fail "the resumed run does not say where it resumed"
grep -q "^epoch $next/$next: " "$work/resume.out.log" || fail "the resumed run did not train epoch $next"
"$program" sample "$ckpt" --prompt "sentence " --length 20 >"$work/sample.out.log" 2>"$work/sample.err.log" ||
  fail "sample exited with status $?"
grep -q "^sentence " "$work/sample.out.log" || fail "the sample does not continue the prompt"
echo "ok: interrupted with epoch $held saved, resumed to epoch $next, sampled"
