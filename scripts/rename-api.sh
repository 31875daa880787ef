#!/usr/bin/env bash
# Applies scripts/rename-api.sed (the issue 18 API renames) to every tracked C,
# header, Markdown, shell, Python and CMake file. Idempotent: run it again
# after merging a branch that still uses an old name.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z -- '*.c' '*.h' '*.h.in' '*.md' '*.sh' '*.py' '*.cmake' '*.cmake.in' 'CMakeLists.txt' '*/CMakeLists.txt' \
  | xargs -0 sed -E -i -f scripts/rename-api.sed
