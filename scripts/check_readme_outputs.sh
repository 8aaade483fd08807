#!/usr/bin/env bash
# Checks that every block of README.md and docs/guide/*.md marked (a line of its own)
# `<!-- output: examples/expected/NAME.txt -->` (the marker line right before a ``` block) is
# exactly that golden file, so the printed outputs the documentation shows cannot drift from what
# the programs print (the golden tests check the files). Fails if no page has such a block.
# (Blocks marked `<!-- output -->` belong to a page's own C++ blocks: scripts/check_doc_blocks.py.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
status=0 checked=0
for page in "$root/README.md" "$root"/docs/guide/*.md; do
  [ -f "$page" ] || continue
  name="${page#"$root"/}"
  while IFS= read -r line_no; do
    file="$(sed -n "${line_no}p" "$page" | sed -E 's/.*<!-- output: ([^ ]+) -->.*/\1/')"
    start=$((line_no + 2))  # the line after the opening ```
    block="$(tail -n +"$start" "$page" | sed '/^```$/,$d')"
    if [ "$block" != "$(cat "$root/$file")" ]; then
      echo "$name:$line_no: the block differs from $file:"
      diff <(printf '%s\n' "$block") "$root/$file" || true
      status=1
    fi
    checked=$((checked + 1))
  done < <(grep -n '^<!-- output: [^ ]* -->$' "$page" | cut -d: -f1)
done
echo "checked $checked marked output blocks"
[ "$checked" -gt 0 ] || { echo "no marked blocks found"; exit 1; }
exit $status
