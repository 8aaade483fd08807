#!/usr/bin/env bash
# Golden test of one seed program: runs it and compares what it prints with the seed's output.
#
#   run_golden.sh PROGRAM EXPECTED_DIR
#
# EXPECTED_DIR/NAME.txt     stdout, byte for byte: whitespace counts (NumPy's real spacing, e.g.
#                           "[  4. 108.]"; the seeds' web text collapsed runs of whitespace and
#                           newlines, the expected files restore what Python really prints).
# EXPECTED_DIR/NAME.regex   instead of .txt, for a program that prints randomly drawn values: one
#                           extended regular expression per output line, matched against the whole
#                           line; lines starting with '#' are comments.
# EXPECTED_DIR/NAME.stderr  optional: stderr, byte for byte (e.g. the integer-dtype WARNING).
# The program must exit with status 0: seed programs check the properties the seed states and
# exit non-zero when one fails.
set -u
prog=$1
dir=$2
name=$(basename "$prog")
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

"$prog" >"$out" 2>"$err"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL $name: exited with status $rc; stderr:"
  cat "$err"
  exit 1
fi

if [ -f "$dir/$name.txt" ]; then
  if ! diff -u "$dir/$name.txt" "$out"; then
    echo "FAIL $name: stdout differs from $dir/$name.txt (- expected, + got)"
    exit 1
  fi
elif [ -f "$dir/$name.regex" ]; then
  mapfile -t patterns < <(grep -v '^#' "$dir/$name.regex")
  mapfile -t lines <"$out"
  if [ "${#patterns[@]}" -ne "${#lines[@]}" ]; then
    echo "FAIL $name: printed ${#lines[@]} lines, $dir/$name.regex expects ${#patterns[@]}:"
    cat "$out"
    exit 1
  fi
  for i in "${!patterns[@]}"; do
    if ! [[ ${lines[$i]} =~ ^${patterns[$i]}$ ]]; then
      echo "FAIL $name: line $((i + 1)) does not match"
      echo "  got:     ${lines[$i]}"
      echo "  pattern: ${patterns[$i]}"
      exit 1
    fi
  done
else
  echo "FAIL $name: no $dir/$name.txt or $dir/$name.regex"
  exit 1
fi

if [ -f "$dir/$name.stderr" ] && ! diff -u "$dir/$name.stderr" "$err"; then
  echo "FAIL $name: stderr differs from $dir/$name.stderr (- expected, + got)"
  exit 1
fi
cat "$out"
