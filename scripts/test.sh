#!/usr/bin/env bash
# The test command: installs what is missing, builds Quiver twice from
# scratch-safe build directories and runs every test, real peers included.
#   1. gcc, optimised, warnings as errors: all tests.
#   2. clang with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer:
#      all tests again, the fuzz corpus replay and a bounded fuzz run.
#   3. clang-format over the sources.
# Usage: scripts/test.sh [--quick]   (--quick: skip the sanitizer build)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
jobs="${QUIVER_JOBS:-$(nproc)}"

section() { printf '\n\033[1m== %s ==\033[0m\n' "$*"; }

section "setup"
scripts/setup.sh

section "format check"
mapfile -t sources < <(git ls-files '*.cc' '*.h' | grep -v '^third_party/')
if ((${#sources[@]})); then
  clang-format --dry-run --Werror "${sources[@]}"
fi

run_build() {
  local dir="$1"; shift
  section "build $dir"
  cmake -S . -B "$dir" -G Ninja -DQUIVER_WERROR=ON "$@" >/dev/null
  ninja -C "$dir" -j "$jobs"
  section "test $dir"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900)
}

run_build build/release -DCMAKE_BUILD_TYPE=Release
if ((quick == 0)); then
  # The chaos soak runs 60 s in the release build; 20 s more under the
  # sanitizers keeps the whole command within its time.
  # -O1 and line tables only, as the sanitizers' own docs advise: reports
  # keep their file:line stacks, and the build takes a third less time.
  QUIVER_CHAOS_SECONDS=20 CC=clang CXX=clang++ run_build build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DQUIVER_SANITIZE=ON -DQUIVER_FUZZ=ON -DQUIVER_BUILD_BENCH=OFF
fi
section "all tests passed"
