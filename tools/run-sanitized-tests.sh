#!/usr/bin/env bash
# Builds norm-opt, its libraries and the unit tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DNORM_SANITIZE=ON) in build-asan/, then runs
# the whole lit suite (regression, robustness and unit tests) under them.
#
# libMLIR.so is not instrumented: ASan and UBSan check our code and the MLIR
# code it inlines; LeakSanitizer checks the whole process. test/lit.cfg.py
# sets the sanitizer options the suite needs (see there) and adds the lit
# feature `sanitizer`.
#
# Measured on the 2-core build machine, shared (load about 5): configure and
# build from scratch 190 s, the suite 80-90 s (most of it the robustness
# check), 4.6 min in all; later runs rebuild only what changed.
# NORM_ROBUSTNESS_RUNS / NORM_ROBUSTNESS_SEEDS scale the robustness check
# (0 = every mutant / seed: about 3300 runs per pipeline, 17 min for parsing
# and --canonicalize here).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export NORM_BUILD_DIR=${NORM_BUILD_DIR:-build-asan}
export NORM_CMAKE_ARGS="${NORM_CMAKE_ARGS:-} -DNORM_SANITIZE=ON"
export NORM_NINJA_ARGS=${NORM_NINJA_ARGS:--j2}
build=$NORM_BUILD_DIR

# bootstrap.sh configures only a fresh folder; an existing one is switched on.
if [ -f "$build/CMakeCache.txt" ]; then
  cmake "$build" -DNORM_SANITIZE=ON >/dev/null
fi
start=$SECONDS
bash tools/bootstrap.sh
grep -q '^NORM_SANITIZE:BOOL=ON$' "$build/CMakeCache.txt" || {
  echo "error: $build is not configured with NORM_SANITIZE=ON" >&2
  exit 1
}
built=$SECONDS
echo "== build: $((built - start)) s"
status=0
/usr/lib/llvm-22/bin/lit -sv "$build/test" "$build/test/Unit" || status=$?
echo "== sanitized tests: $((SECONDS - built)) s"
exit $status
