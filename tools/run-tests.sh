#!/usr/bin/env bash
# Builds norm-opt and runs every test: lit regression tests (dialect, passes,
# lowering, PTX, CPU execution of the kernels) and the unit tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/bootstrap.sh
build=${NORM_BUILD_DIR:-build}
/usr/lib/llvm-22/bin/lit -sv "$build/test" "$build/test/Unit"
