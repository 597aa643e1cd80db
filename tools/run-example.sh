#!/usr/bin/env bash
# Builds norm-opt and compiles the bundled example, a transformer decoder
# block with pre-norm residual adds, QK-Norm and a final norm, from the norm
# dialect to fused kernels and PTX (sm_90), with the kernels' metadata.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/bootstrap.sh
build=${NORM_BUILD_DIR:-build}
example=test/examples/decoder-block.mlir
out=$build/examples
mkdir -p "$out"

echo "== norm-opt $example --norm-fuse   (the fused kernel ops)"
"$build/bin/norm-opt" "$example" --norm-fuse | grep -E "norm\.(fused_row|qk_norm_prologue|column_stats|attention)" \
  | sed -E 's/ : tensor.*//; s/^ +/  /'

echo "== norm-opt $example --norm-to-ptx -o $out/decoder-block.ptx"
"$build/bin/norm-opt" "$example" --norm-to-ptx -o "$out/decoder-block.ptx"
python3 - "$out/decoder-block.json" <<'PY'
import json, sys
kernels = json.load(open(sys.argv[1]))
print(f"{len(kernels)} kernels (each vector kernel with its scalar fallback):")
for k in kernels:
    print(f"  {k['name']}: block {k['block_threads']}, grid {k['grid']}, "
          f"{len(k['params'])} params")
PY
if command -v ptxas >/dev/null || [ -x /usr/local/cuda/bin/ptxas ]; then
  ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
  "$ptxas" -arch=sm_90 "$out/decoder-block.ptx" -o "$out/decoder-block.cubin"
  echo "== ptxas -arch=sm_90: ok ($out/decoder-block.cubin)"
fi
echo "PTX: $out/decoder-block.ptx  metadata: $out/decoder-block.json"
