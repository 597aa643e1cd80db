#!/usr/bin/env bash
# Installs what the build needs (Debian 12: LLVM/MLIR 22, lit, GoogleTest),
# then configures and builds norm-opt in $NORM_BUILD_DIR (default: build/).
# Sourced by run-example.sh and run-tests.sh; safe to run again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libzstd-dev
          zlib1g-dev libgtest-dev cmake ninja-build g++ ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "norm-opt needs: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "== installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# A compiler cache, so that a clean clone on a machine that built the project
# before can rebuild from it (paths relative to the clone, so any clone may
# hit; the saving is not measured yet); a fresh machine builds from nothing.
# NORM_CCACHE=0 turns it off.
launcher=()
if [ "${NORM_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi

build=${NORM_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit "${launcher[@]}" \
    ${NORM_CMAKE_ARGS:-} >/dev/null
fi
echo "== building in $build"
ninja -C "$build" ${NORM_NINJA_ARGS:-} all
