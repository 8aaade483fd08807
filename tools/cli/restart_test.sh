#!/usr/bin/env bash
# CTest tools.cli.runs_openblas_kernels_for_this_cpu and tools.cli.openmp_waits_passively: what
# `tapeflow` starts itself again with, read from the first line of `tapeflow train`, which names
# both (tools/cli/main.cpp calls tf::restart_with_runtime_defaults; the libraries read these
# variables only when they are loaded).
#   restart_test.sh PROGRAM openblas   OpenBLAS 0.3.21 falls back to its generic Prescott (SSE3)
#                                      kernels on CPUs newer than itself; the program then sets
#                                      OPENBLAS_CORETYPE (tapeflow/threads.h): never Prescott's on
#                                      a CPU with AVX2, and exactly the user's when set.
#   restart_test.sh PROGRAM openmp     OpenMP's idle threads wait passively unless the user set
#                                      OMP_WAIT_POLICY, whose value is kept.
# Exits 77 (skipped) when dataset-fashion-mnist is not installed.
set -u
program=$1
source "$(dirname "$0")/script_test_common.sh"
require_fashion_mnist
header() { env "$@" "$program" train --model mlp --epochs 1 --limit 64 --threads 1 2>/dev/null | head -n 1; }
expect() {  # LINE GLOB_PATTERN FAILURE_MESSAGE
  echo "$1"
  [[ $1 == $2 ]] || { echo "FAIL: $3"; exit 1; }
}

case $2 in
  openblas)
    chosen=$(header -u OPENBLAS_CORETYPE)
    expect "$chosen" "*, OpenBLAS *" "the first line names no OpenBLAS kernels"
    if grep -qw avx2 /proc/cpuinfo && [[ $chosen == *"OpenBLAS Prescott,"* ]]; then
      echo "FAIL: generic kernels on a CPU with AVX2"
      exit 1
    fi
    expect "$(header OPENBLAS_CORETYPE=Prescott)" "*OpenBLAS Prescott,*" "OPENBLAS_CORETYPE=Prescott was not kept"
    ;;
  openmp)
    expect "$(header -u OMP_WAIT_POLICY)" "*, OpenMP wait policy PASSIVE" "not passive by default"
    expect "$(header OMP_WAIT_POLICY=ACTIVE)" "*, OpenMP wait policy ACTIVE" "OMP_WAIT_POLICY=ACTIVE was not kept"
    ;;
  *)
    echo "usage: restart_test.sh PROGRAM openblas|openmp"
    exit 2
    ;;
esac
echo "PASS"
