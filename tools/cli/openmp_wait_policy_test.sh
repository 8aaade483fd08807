#!/usr/bin/env bash
# CTest tools.cli.openmp_waits_passively: `tapeflow` runs with OpenMP's passive wait policy unless
# the user set OMP_WAIT_POLICY (main.cpp starts itself again with it: libgomp reads the variable
# only when it is loaded), and keeps the user's. The run header names the policy in effect.
#   openmp_wait_policy_test.sh PROGRAM
# Exits 77 (skipped) when dataset-fashion-mnist is not installed.
set -u
program=$1
data=/usr/share/datasets/fashion-mnist
[ -e "$data/train-labels-idx1-ubyte.gz" ] || { echo "dataset-fashion-mnist is not installed"; exit 77; }
header() { env "$@" "$program" train --model mlp --epochs 1 --limit 64 --threads 1 2>/dev/null | head -n 1; }

chosen=$(header -u OMP_WAIT_POLICY)
echo "$chosen"
[[ $chosen == *", OpenMP wait policy PASSIVE" ]] || { echo "FAIL: not passive by default"; exit 1; }
given=$(header OMP_WAIT_POLICY=ACTIVE)
echo "$given"
[[ $given == *", OpenMP wait policy ACTIVE" ]] || { echo "FAIL: OMP_WAIT_POLICY=ACTIVE was not kept"; exit 1; }
echo "PASS"
