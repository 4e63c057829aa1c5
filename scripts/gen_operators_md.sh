#!/usr/bin/env bash
# Regenerates docs/operators.md from the op registry: `kilnrt ops --markdown` of the build in $KILNRT_BUILD_DIR
# (default ./build). Usage: scripts/gen_operators_md.sh [path/to/kilnrt]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="${1:-${KILNRT_BUILD_DIR:-$root/build}/kilnrt}"
"$cli" ops --markdown > "$root/docs/operators.md"
echo "wrote $root/docs/operators.md ($(grep -c '^| [A-Z]' "$root/docs/operators.md") schemas)"
