#!/usr/bin/env bash
# Fails if a C++ file of the repository differs from the repo's .clang-format (Debian 12's
# clang-format 14). With --fix, reformats the files instead. Data tables that clang-format would
# explode (one designated field per line) are fenced with `// clang-format off` / `on`.
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h')
else
  mapfile -t files < <(find src include tests tools bench examples fuzz -name '*.cpp' -o -name '*.h' | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/check_format.$$; then
  grep -o '^[^:]*\.\(cpp\|h\)' /tmp/check_format.$$ | sort -u | sed 's/^/  not formatted: /'
  rm -f /tmp/check_format.$$
  echo "check_format: run scripts/check_format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9.]*' | head -1))"
  exit 1
fi
rm -f /tmp/check_format.$$
echo "check_format: ${#files[@]} files match .clang-format"
