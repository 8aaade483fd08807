#!/usr/bin/env bash
# Builds the documentation site (Doxygen, docs/Doxyfile): the API reference from the public
# headers, with the guides and the other Markdown pages of docs/, into build/docs/html, and prints
# the path of its index.html (scripts/check_docs_site.py then checks it in headless Chromium).
# Fails on any Doxygen warning: an undocumented public declaration, a broken \ref or link, an
# unknown command. Idempotent: each run starts from an empty build/docs.
#   scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v doxygen >/dev/null || { echo "docs: doxygen is missing; run scripts/setup.sh" >&2; exit 1; }
out=build/docs
log="$out/warnings.log"  # WARN_LOGFILE in docs/Doxyfile
rm -rf "$out"
mkdir -p "$out"
status=0
doxygen docs/Doxyfile || status=$?
# WARN_AS_ERROR = FAIL_ON_WARNINGS makes doxygen exit non-zero on a warning; the log check also
# catches a warning that some doxygen version forgets to count.
if [ "$status" -ne 0 ] || [ -s "$log" ]; then
  cat "$log" >&2
  echo "docs: $(grep -c . "$log" || true) doxygen warning(s), listed above (doxygen exit status $status)" >&2
  exit 1
fi
echo "docs: $PWD/$out/html/index.html"
