#!/usr/bin/env bash
# clang-format every C source of the project. `scripts/format.sh --check` only reports (CI uses it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' | grep -v '^tests/fuzz/regressions/' || true)
[ -n "$files" ] || exit 0
if [ "${1:-}" = "--check" ]; then
  if ! clang-format --dry-run --Werror $files 2>/tmp/ingot-format.log; then
    echo "format-check: these files need scripts/format.sh:"
    grep -oE '^[^:]+\.(c|h|cu|cuh)' /tmp/ingot-format.log | sort -u | sed 's/^/  /'
    exit 1
  fi
  echo "format-check: $(echo "$files" | wc -l) files clean"
else
  clang-format -i $files
fi
