#!/usr/bin/env bash
# Builds norm-opt and compiles the bundled example, a transformer decoder
# block, from the norm dialect to fused kernels and PTX.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/bootstrap.sh
build=${NORM_BUILD_DIR:-build}
example=test/examples/decoder-block.mlir
echo "== $build/bin/norm-opt $example --norm-fuse"
"$build/bin/norm-opt" "$example" --norm-fuse
