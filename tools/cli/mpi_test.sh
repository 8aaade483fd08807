#!/usr/bin/env bash
# CTest tools.cli.mpi_*: `mpirun -np 2 tapeflow train`, the data-parallel run, on this machine.
#   mpi_test.sh PROGRAM WORK_DIR
# 1. Two ranks with --batch-size 50 end each epoch with the figures of one process with
#    --batch-size 100 (the same examples per step, an uneven last batch included; float rounding
#    apart, bfloat16 rounding with --precision mixed_bfloat16).
# 2. A rank killed with SIGKILL in the middle of an epoch ends the job (mpirun names the rank), and
#    the checkpoint of the last finished epoch resumes the run on two ranks.
# 3. SIGUSR1 to this job's mpirun, which passes it on to its ranks, stops both after the same step
#    with a checkpoint of it, while a second job runs on; resuming ends bitwise where an
#    uninterrupted run ends.
# 4. Ranks started with different models fail at once, naming the variable and the ranks.
# 5. The char-lstm on two ranks with --batch-size 16, interrupted after its first epoch and
#    resumed, prints the figures of one process with --batch-size 32.
# Signals go only to the processes this script started (mpirun's PID, and ranks found among its
# children), never by name. Exits 77 (skipped) when dataset-fashion-mnist is not installed.
set -u
program=$1
work=$2
source "$(dirname "$0")/script_test_common.sh"
require_fashion_mnist
fresh_work_dir "$work"
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# --- 1. Two ranks follow one process with the doubled batch -----------------------------------
# 3051 examples: the last global batch holds 51, which the ranks split 26 / 25.
# "epoch 1/2: train loss L acc A | test loss L acc A | S s": the four figures of each epoch.
figures() { sed -n 's/^epoch \([0-9]*\)\/2: train loss \([0-9.]*\) acc \([0-9.]*\) | test loss \([0-9.]*\) acc \([0-9.]*\).*/\2 \3 \4 \5/p' "$1"; }
# follows NAME TOLERANCE OPTION...: one process with --batch-size 100 and two ranks with 50 agree.
follows() {
  local name=$1 tolerance=$2
  shift 2
  local common=(train --model mlp --epochs 2 --limit 3051 --seed 3 --threads 1 "$@")
  "$program" "${common[@]}" --batch-size 100 --eager >"$work/$name.one.out.log" 2>"$work/$name.one.err.log" ||
    fail "$name: the one-process run failed"
  "${mpirun[@]}" -np 2 "$program" "${common[@]}" --batch-size 50 >"$work/$name.two.out.log" \
    2>"$work/$name.two.err.log" || fail "$name: the two-rank run failed"
  grep -q "batch 50 per rank (100 a step)" "$work/$name.two.out.log" ||
    fail "$name: the header does not state the batch per rank"
  [ "$(grep -c '^epoch' "$work/$name.two.out.log")" -eq 2 ] || fail "$name: rank 1 printed too, or an epoch line is missing"
  paste <(figures "$work/$name.one.out.log") <(figures "$work/$name.two.out.log") >"$work/$name.figures.log"
  [ "$(wc -l <"$work/$name.figures.log")" -eq 2 ] || fail "$name: no epoch figures to compare"
  awk -v t="$tolerance" '{ for (i = 1; i <= 4; ++i) { d = $i - $(i + 4); if (d < -t || d > t) exit 1 } }' \
    "$work/$name.figures.log" || fail "$name: two ranks and one process disagree: $(cat "$work/$name.figures.log")"
}
follows float32 0.0002
follows mixed_bfloat16 0.02 --precision mixed_bfloat16

# --- 2. SIGKILL one rank mid-epoch; the last epoch's checkpoint resumes -------------------------
ckpt=$work/run.ckpt
"${mpirun[@]}" -np 2 "$program" train --model mlp --epochs 3 --limit 20000 --batch-size 50 --threads 1 \
  --checkpoint "$ckpt" >"$work/kill.out.log" 2>"$work/kill.err.log" &
job=$!
for _ in $(seq 1200); do [ -f "$ckpt" ] && break; sleep 0.05; done
[ -f "$ckpt" ] || fail "no checkpoint after the first epoch"
# Rank 1 is the child of this job's mpirun whose environment says so.
victim=""
for pid in $(pgrep -P "$job"); do
  tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$pid
done
[ -n "$victim" ] || fail "rank 1 was not found"
kill -KILL "$victim"
start=$(date +%s)
wait "$job"
rc=$?
[ "$rc" -ne 0 ] || fail "the job exited 0 after a rank was killed"
[ $(($(date +%s) - start)) -le 30 ] || fail "the job took more than 30 s to end after the kill"
grep -q "process rank 1 .*signal 9" "$work/kill.err.log" "$work/kill.out.log" || fail "mpirun did not name rank 1"
"${mpirun[@]}" -np 2 "$program" train --resume --checkpoint "$ckpt" --epochs 3 --threads 1 \
  >"$work/resume.out.log" 2>"$work/resume.err.log" || fail "resuming on two ranks failed"
grep -q "resumed from $ckpt after epoch 1" "$work/resume.out.log" || fail "the resumed run did not start after epoch 1"
grep -q "^epoch 3/3:" "$work/resume.out.log" || fail "the resumed run did not finish"
# --- 3. SIGUSR1 to one job's mpirun mid-epoch; the other job runs on; resuming ends where an ------
# uninterrupted run ends. The uninterrupted run is the other job, started first and still running.
run=(train --model mlp --epochs 2 --limit 20000 --batch-size 50 --threads 1)
"${mpirun[@]}" -np 2 "$program" "${run[@]}" >"$work/whole.out.log" 2>"$work/whole.err.log" &
other=$!
ckpt=$work/interrupted.ckpt
"${mpirun[@]}" -np 2 "$program" "${run[@]}" --checkpoint "$ckpt" >"$work/int.out.log" 2>"$work/int.err.log" &
job=$!
for _ in $(seq 1200); do grep -q "epoch 2/2 .*ex/s" "$work/int.err.log" && break; sleep 0.05; done
kill -0 "$other" 2>/dev/null || fail "the uninterrupted job ended before the other was stopped (make it longer)"
kill -USR1 "$job" || fail "mpirun was not running"
wait "$job"
rc=$?
[ "$rc" -ne 0 ] || fail "the stopped job exited 0"
grep -q "stop requested (SIGUSR1)" "$work/int.err.log" || fail "the ranks did not receive SIGUSR1"
wait "$other" || fail "the other job, never signalled, failed"
grep -q "stop requested\|interrupted" "$work/whole.err.log" && fail "the other job was stopped too"
grep -q "interrupted after step [0-9]*/200 of epoch 2/2" "$work/int.err.log" || fail "the ranks did not stop mid-epoch"
[ "$(grep -c "interrupted after step" "$work/int.err.log")" -eq 1 ] || fail "not only rank 0 reported the stop"
# Its steps are steps of two ranks' shards: one process refuses to continue them.
"$program" train --resume --checkpoint "$ckpt" --epochs 2 >"$work/int_one.out.log" 2>"$work/int_one.err.log"
[ $? -eq 2 ] || fail "one process resumed a two-rank mid-epoch checkpoint"
grep -q "of a run on 2 ranks, and this run has 1 rank; resume it with \`mpirun -np 2\`" "$work/int_one.err.log" ||
  fail "the refusal does not say how to resume"
"${mpirun[@]}" -np 2 "$program" train --resume --checkpoint "$ckpt" --epochs 2 --threads 1 \
  >"$work/int_resume.out.log" 2>"$work/int_resume.err.log" || fail "resuming the interrupted run failed"
grep -q "resumed from $ckpt after step" "$work/int_resume.out.log" || fail "the run did not resume mid-epoch"
whole=$(grep "^epoch 2/2:" "$work/whole.out.log" | sed 's/ | [0-9.]* s$//')
resumed=$(grep "^epoch 2/2:" "$work/int_resume.out.log" | sed 's/ | [0-9.]* s$//')
[ -n "$whole" ] && [ "$whole" = "$resumed" ] || fail "resumed: '$resumed', uninterrupted: '$whole'"
# --- 4. Mismatched model configurations across ranks ----------------------------------------------
"${mpirun[@]}" -np 1 "$program" train --model mlp --limit 500 --epochs 1 --threads 1 : \
  -np 1 "$program" train --model cnn --limit 500 --epochs 1 --threads 1 >"$work/mixed.out.log" 2>"$work/mixed.err.log" &&
  fail "ranks training different models did not fail"
grep -q "rank 1 has variable 0 'kernel' float32 (3, 3, 1, 32); rank 0 has variable 0 'kernel' float32 (784, 256)" \
  "$work/mixed.err.log" || fail "the mismatch was not named"
# --- 5. A language model on two ranks follows one process with the doubled batch, and resumes --
text=(train --model char-lstm --seed 3 --threads 1)
lm_figures() { sed -n 's/^epoch \([0-9]*\)\/[0-9]*: \(.*\) | [0-9.]* s$/\1 \2/p' "$1"; }
"$program" "${text[@]}" --epochs 2 --batch-size 32 --eager >"$work/lm.one.out.log" 2>"$work/lm.one.err.log" ||
  fail "lm: the one-process run failed"
ckpt=$work/lm.ckpt
"${mpirun[@]}" -np 2 "$program" "${text[@]}" --epochs 1 --batch-size 16 --checkpoint "$ckpt" \
  >"$work/lm.two.out.log" 2>"$work/lm.two.err.log" || fail "lm: the two-rank run failed"
grep -q "batch 16 per rank (32 a step)" "$work/lm.two.out.log" || fail "lm: the header does not state the batch per rank"
"${mpirun[@]}" -np 2 "$program" train --resume --checkpoint "$ckpt" --epochs 2 --threads 1 \
  >"$work/lm.resume.out.log" 2>"$work/lm.resume.err.log" || fail "lm: resuming on two ranks failed"
# Four decimals of every figure, epoch by epoch: float rounding apart, the same training.
one=$(lm_figures "$work/lm.one.out.log")
two=$( (lm_figures "$work/lm.two.out.log"; lm_figures "$work/lm.resume.out.log") )
[ -n "$one" ] && [ "$one" = "$two" ] || fail "lm: two ranks '$two', one process '$one'"
echo "PASS"
