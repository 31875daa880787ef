#!/usr/bin/env bash
# Applies the project's C style (.clang-format) to every tracked C file:
#   scripts/format.sh           reformat in place
#   scripts/format.sh --check   list the files that differ; exit 1 if any does
# Pinned to clang-format-14 (Debian 12's), because another version lays out
# the same configuration differently.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "format.sh: clang-format-14 is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
      echo "format.sh: $f differs from .clang-format (run scripts/format.sh)" >&2
      bad=1
    fi
  done
  [ "$bad" -eq 0 ] && echo "format.sh: ${#files[@]} files match .clang-format"
  exit "$bad"
fi
printf '%s\0' "${files[@]}" | xargs -0 "$cf" --style=file -i
