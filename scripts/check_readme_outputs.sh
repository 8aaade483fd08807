#!/usr/bin/env bash
# Checks that every README block marked `<!-- output: examples/expected/NAME.txt -->` (the
# marker line right before a ``` block) is exactly that golden file, so the README's printed
# outputs cannot drift from what the programs print (the golden tests check the files).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
readme="$root/README.md"
status=0 checked=0
while IFS= read -r line_no; do
  file="$(sed -n "${line_no}p" "$readme" | sed -E 's/.*<!-- output: ([^ ]+) -->.*/\1/')"
  start=$((line_no + 2))  # the line after the opening ```
  block="$(tail -n +"$start" "$readme" | sed '/^```$/,$d')"
  if [ "$block" != "$(cat "$root/$file")" ]; then
    echo "README.md:$line_no: the block differs from $file:"
    diff <(printf '%s\n' "$block") "$root/$file" || true
    status=1
  fi
  checked=$((checked + 1))
done < <(grep -n '<!-- output: ' "$readme" | cut -d: -f1)
echo "checked $checked README output blocks"
[ "$checked" -gt 0 ] || { echo "no marked blocks found"; exit 1; }
exit $status
