#!/usr/bin/env bash
# Builds norm-opt and runs every test: lit regression tests (dialect, passes,
# lowering, PTX, CPU execution of the kernels) and the unit tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# --quick: the inner loop's tier, without the long sweeps (the CPU and
# simulator sweeps over every kernel, the robustness mutations); CI runs
# everything.
filter=()
if [ "${1:-}" = --quick ]; then
  filter=(--filter-out '(cpu-sweep|ptxsim-|robustness\.test)')
fi
bash tools/bootstrap.sh
build=${NORM_BUILD_DIR:-build}
/usr/lib/llvm-22/bin/lit -sv "${filter[@]}" "$build/test" "$build/test/Unit"
