#!/usr/bin/env bash
# Builds, on this machine (no GPU needed), what a GPU machine without MLIR
# needs to check and benchmark libnormjit: `.carry/` at the repository root,
# the folder the device tool's `carry` takes along (git ignores it).
#
#   .carry/normjit-static.tar.xz   normjit-static/
#       lib/libnormjit.so          libnormjit with the compiler, MLIR and LLVM
#                                  linked in (libstdc++ and glibc dynamic;
#                                  exports the C API: for the Python layer)
#       lib/libnormjit-runtime.so  the same with its C++ API, for the tools
#       bin/norm-tune normjit-bench normjit-example normjit-gpu-check
#       bundles/*.njb              heuristic bundles of every benchmark
#                                  kernel (PTX), for a runtime-only fallback
#       MANIFEST                   commit, source hash, sizes, checksums
#   .carry/README                  what this is
#
# The device side is tools/gpu-check.sh. Usage:
#   tools/prepare-gpu-carry.sh [--build-dir DIR] [--jobs N] [--dry-run]
#   tools/prepare-gpu-carry.sh --check     # only check an existing .carry/
#   tools/prepare-gpu-carry.sh --source-hash   # the hash of the sources
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
build=build-static
jobs=2
dry_run=0
check_only=0
source_hash_only=0
carry=$root/.carry
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --check) check_only=1; shift ;;
    --source-hash) source_hash_only=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "prepare-gpu-carry.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# The sources the carried binaries are built from; gpu-check.sh asks for the
# hash there and warns when the tree has moved on.
source_hash() {
  (cd "$root" && find CMakeLists.txt dialects passes compiler runtime \
      tools/norm-tune tools/normjit-bench tools/normjit-example \
      test/Runtime/GpuCheck.cpp -type f \( -name '*.cpp' -o -name '*.h' \
      -o -name '*.td' -o -name '*.cmake' -o -name CMakeLists.txt \) -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}
if [ $source_hash_only = 1 ]; then
  source_hash
  exit
fi

# What the device machine has (Ubuntu 24.04): glibc 2.39, gcc 13's libstdc++.
max_glibc=2.39
max_glibcxx=3.4.32
limit_mib=64            # the device tool's limit: working tree + carry
targets="normjit norm-tune normjit-bench normjit-example normjit-gpu-check"
# Every benchmark kernel (tools/norm-bench/norm_bench.py: OPS x DTYPES x
# HIDDEN, eps 1e-6) as norm-tune options.
bench_hidden=$(python3 -c "import sys; sys.path.insert(0, 'tools/norm-bench'); \
import norm_bench as b; print(','.join(map(str, b.HIDDEN)))")
qk_head_dim=$(python3 -c "import sys; sys.path.insert(0, 'tools/norm-bench'); \
import norm_bench as b; print(b.QK_HEAD_DIM, ','.join(map(str, b.QK_HEADS)))")
bundle_ops=(
  "rms:--op rms --hidden $bench_hidden"
  "add_rms:--op rms --addend --residual-out --hidden $bench_hidden"
  "layer:--op layer --bias --hidden $bench_hidden"
  "qk:--op qk --hidden ${qk_head_dim% *} --heads ${qk_head_dim#* }"
  "add_layer:--op layer --bias --addend --residual-out --hidden $bench_hidden"
)


run() {
  echo "+ $*"
  [ $dry_run = 1 ] || "$@"
}

# The highest symbol version of `prefix` a binary needs.
max_version() {
  objdump -T "$1" | grep -o "$2_[0-9.]*" | sed "s/$2_//" | sort -V | tail -1
}

# Fails when a staged binary would not load on the device machine.
check_portable() {
  local file=$1 status=0 glibc glibcxx deps
  glibc=$(max_version "$file" GLIBC)
  glibcxx=$(max_version "$file" GLIBCXX)
  if [ -n "$glibc" ] && [ "$(printf '%s\n%s\n' "$glibc" $max_glibc | sort -V | tail -1)" != $max_glibc ]; then
    echo "error: $file needs GLIBC_$glibc, the device has $max_glibc" >&2; status=1
  fi
  if [ -n "$glibcxx" ] && [ "$(printf '%s\n%s\n' "$glibcxx" $max_glibcxx | sort -V | tail -1)" != $max_glibcxx ]; then
    echo "error: $file needs GLIBCXX_$glibcxx, the device has $max_glibcxx" >&2; status=1
  fi
  deps=$(objdump -p "$file" | awk '/NEEDED/ {print $2}' |
         grep -Ev '^(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt|libnormjit-runtime)\.so|^ld-linux-x86-64\.so' || true)
  if [ -n "$deps" ]; then
    echo "error: $file needs libraries the device lacks: $deps" >&2; status=1
  fi
  echo "  $(basename "$file"): GLIBC_${glibc:-none} GLIBCXX_${glibcxx:-none}, $(du -h "$file" | cut -f1)"
  return $status
}

# The working tree that travels beside the carry (tracked and untracked,
# not ignored files).
tree_kib() {
  git ls-files -z --cached --others --exclude-standard 2>/dev/null |
    xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1
}

check_carry() {
  local archive=$carry/normjit-static.tar.xz
  [ -f "$archive" ] || { echo "error: no $archive: run tools/prepare-gpu-carry.sh" >&2; return 1; }
  local carry_kib tree total
  carry_kib=$(du -ck "$carry" | tail -1 | cut -f1)
  tree=$(tree_kib)
  total=$(( (carry_kib + tree) / 1024 ))
  echo "carry $(( carry_kib / 1024 )) MiB + working tree $(( tree / 1024 )) MiB = $total MiB of $limit_mib"
  if [ $total -ge $limit_mib ]; then
    echo "error: over the device tool's $limit_mib MiB" >&2; return 1
  fi
  tar -xOJf "$archive" normjit-static/MANIFEST | sed 's/^/  /'
  local built now
  built=$(tar -xOJf "$archive" normjit-static/MANIFEST | awk '/^source-hash/ {print $2}')
  now=$(source_hash)
  if [ "$built" != "$now" ]; then
    echo "warning: the carry was built from sources $built, the tree is at $now: rerun" >&2
    return 1
  fi
  echo "carry is current (sources $now)"
}

if [ $check_only = 1 ]; then
  check_carry
  exit
fi

# 1. The static build.
if [ ! -f "$build/CMakeCache.txt" ] || ! grep -q '^NORM_STATIC:BOOL=ON' "$build/CMakeCache.txt"; then
  run cmake -G Ninja -S . -B "$build" -DNORM_STATIC=ON -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
# shellcheck disable=SC2086
run ninja -C "$build" -j "$jobs" $targets

# 2. Stage, strip, check.
stage=$carry/stage/normjit-static
run rm -rf "$carry/stage" "$carry/normjit-static.tar.xz"
run mkdir -p "$stage/bin" "$stage/lib" "$stage/bundles"
run cp "$build/runtime/libnormjit.so" "$build/runtime/libnormjit-runtime.so" "$stage/lib/"
for tool in norm-tune normjit-bench normjit-example; do
  run cp "$build/bin/$tool" "$stage/bin/"
done
run cp "$build/test/Runtime/normjit-gpu-check" "$stage/bin/"
run strip --strip-unneeded "$stage"/lib/*.so "$stage"/bin/*
if [ $dry_run = 0 ]; then
  echo "portability (device: glibc $max_glibc, GLIBCXX $max_glibcxx):"
  status=0
  for file in "$stage"/lib/*.so "$stage"/bin/*; do
    check_portable "$file" || status=1
  done
  [ $status = 0 ] || exit 1
  LD_LIBRARY_PATH=$stage/lib "$stage/bin/norm-tune" --version | grep -q "with compiler" ||
    { echo "error: the staged norm-tune has no compiler" >&2; exit 1; }
fi

# 3. Heuristic bundles of every benchmark kernel, for a runtime-only
# libnormjit on the device should the static one not load there.
for entry in "${bundle_ops[@]}"; do
  name=${entry%%:*}
  for dtype in bf16 f16; do
    # shellcheck disable=SC2086
    run env LD_LIBRARY_PATH="$stage/lib" "$stage/bin/norm-tune" --heuristic \
        --chip sm_90 ${entry#*:} --dtype $dtype --bundle "$stage/bundles/$name-$dtype.njb"
  done
done

# 4. The manifest and the archive.
if [ $dry_run = 0 ]; then
  {
    echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
    echo "source-hash $(source_hash)"
    echo "built $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "compiler $(LD_LIBRARY_PATH=$stage/lib "$stage/bin/norm-tune" --version | sed 's/^norm-tune: //')"
    (cd "$stage" && find bin lib bundles -type f | LC_ALL=C sort | xargs sha256sum |
       awk '{print "file " $2 " " substr($1, 1, 16)}')
  } > "$stage/MANIFEST"
fi
echo "+ tar -C $carry/stage -cf - normjit-static | xz -T0 -6 > $carry/normjit-static.tar.xz"
if [ $dry_run = 0 ]; then
  tar -C "$carry/stage" -cf - normjit-static | xz -T0 -6 > "$carry/normjit-static.tar.xz"
  rm -rf "$carry/stage"
  cat > "$carry/README" <<'EOF'
Built by tools/prepare-gpu-carry.sh (not in git): the static libnormjit and
tools that tools/gpu-check.sh runs on a GPU machine without MLIR. Name
`.carry` in the device tool's `carry` list.
EOF
  check_carry
fi
