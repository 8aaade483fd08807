#!/usr/bin/env bash
# CTest tools.cli.runs_openblas_kernels_for_this_cpu: OpenBLAS 0.3.21 falls back to its generic
# Prescott (SSE3) kernels on CPUs newer than itself; `tapeflow train` then starts itself again with
# OPENBLAS_CORETYPE set (tapeflow/threads.h). Its first line names the kernels it runs: on a CPU
# with AVX2 never Prescott's, and exactly the user's when OPENBLAS_CORETYPE is set.
#   openblas_kernels_test.sh PROGRAM
# Exits 77 (skipped) when dataset-fashion-mnist is not installed.
set -u
program=$1
data=/usr/share/datasets/fashion-mnist
[ -e "$data/train-labels-idx1-ubyte.gz" ] || { echo "dataset-fashion-mnist is not installed"; exit 77; }
header() { env "$@" "$program" train --model mlp --epochs 1 --limit 64 --threads 1 2>/dev/null | head -n 1; }

chosen=$(header -u OPENBLAS_CORETYPE)
echo "$chosen"
[[ $chosen == *", OpenBLAS "* ]] || { echo "FAIL: the first line names no OpenBLAS kernels"; exit 1; }
if grep -qw avx2 /proc/cpuinfo && [[ $chosen == *"OpenBLAS Prescott,"* ]]; then
  echo "FAIL: generic kernels on a CPU with AVX2"
  exit 1
fi
given=$(header OPENBLAS_CORETYPE=Prescott)
echo "$given"
[[ $given == *"OpenBLAS Prescott,"* ]] || { echo "FAIL: OPENBLAS_CORETYPE=Prescott was not kept"; exit 1; }
echo "PASS"
