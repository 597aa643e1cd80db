#!/usr/bin/env bash
# The whole device-side job in one call, on a GPU machine without MLIR
# (cmake, ninja, a C++ compiler, python3 with torch and Triton): checks
# libnormjit's kernels, then benchmarks them against the anchors, inside a
# time budget. Needs `.carry/` from tools/prepare-gpu-carry.sh.
#
#   bash tools/gpu-check.sh [--budget-s 380] [--out DIR] [--quick] [--dry-run]
#                           [--skip step,...] [--attention-s 120] [--decode-s 90]
#                           [--backward-s 120] [--attention-chip sm_90a]
#
# Steps (each logged, each under a time limit that leaves the benchmark at
# least --bench-min-s; a failing step does not stop the others):
#   env         nvidia-smi, nvcc, python, torch and Triton versions (read only)
#   unpack      the static libnormjit (compiler inside) and tools from .carry
#   build-rt    (background) the runtime-only libnormjit built here with cmake
#   gpu-check   normjit-gpu-check: every kernel kind, tuned and heuristic,
#               against a float64 reference, guard bytes, odd sizes, 0 rows
#   tools       normjit-example, norm-tune (tuned bundle), normjit-bench
#   torch       test/GPU/python/test_torch.py: norm_opt vs float64 and torch
#               (with test_torch_ops.py: the torch.library ops, torch.compile)
#   training    test/GPU/python/test_torch_train.py (forward + backward vs
#               float64 and torch autograd), then tools/norm-bench/
#               train_check.py (a tiny decoder, torch's modules vs norm_opt's)
#   memcheck    compute-sanitizer memcheck / racecheck / synccheck /
#   racecheck   initcheck on normjit-gpu-check --quick (the last two only
#   synccheck   when the budget allows)
#   initcheck
#   runtime-only  the runtime-only build serves the tuned bundle
#   bench       tools/norm-bench/norm_bench.py with the time that is left
#               (less --attention-s where the benchmark keeps --bench-min-s)
#   attention   tools/norm-bench/attention_bench.py (prefill attention) with
#               at most --attention-s; skipped when under 60 s are left, or
#               without torch's CUDA or the compiler in libnormjit; with
#               --attention-chip sm_90a (NORMJIT_CHIP) the Hopper kernel
#   decode      tools/norm-bench/decode_bench.py (decode attention) with at
#               most --decode-s; skipped as attention is (under 45 s left)
#   backward    tools/norm-bench/backward_bench.py (the norms' backward for
#               training) with at most --backward-s; skipped as attention is
#               (under 60 s left)
# Writes to $OUT (or --out): summary.txt, checks.json, bench-results.json,
# attention-results.json, decode-results.json, backward-results.json,
# RESULTS.md, tuned.njb, logs.tar.gz. Prints the summary and short tables
# last. Exit status: 0 when every step that ran passed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
budget=380
bench_min=150
bench_max=240
attention_s=120
attention_chip=
attention_min=60
decode_s=90
decode_min=45
backward_s=120
backward_min=60
quick=0
dry_run=0
skip=","
out=${OUT:-}
carry=$root/.carry
while [ $# -gt 0 ]; do
  case $1 in
    --budget-s) budget=$2; shift 2 ;;
    --bench-min-s) bench_min=$2; shift 2 ;;
    --bench-max-s) bench_max=$2; shift 2 ;;
    --attention-s) attention_s=$2; shift 2 ;;
    --decode-s) decode_s=$2; shift 2 ;;
    --backward-s) backward_s=$2; shift 2 ;;
    --attention-chip) attention_chip=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --carry) carry=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --skip) skip=",$2,"; shift 2 ;;
    -h|--help) sed -n '2,43p' "$0"; exit 0 ;;
    *) echo "gpu-check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
out=${out:-$work/out}
mkdir -p "$out" "$work/logs"
logs=$work/logs
summary=$work/summary.txt
: > "$summary"
start=$(date +%s)
failures=0
export PATH=$PATH:/usr/local/cuda/bin
export PYTHONUNBUFFERED=1
export PYTHONPATH=$root/tools/python:$root/tools/norm-bench${PYTHONPATH:+:$PYTHONPATH}
# Every libnormjit cache of this run is fresh: kernels compile and tune here.
export NORMJIT_CACHE_DIR=$work/cache

elapsed() { echo $(( $(date +%s) - start )); }
# Seconds a step may take: its own limit, less what the benchmark needs.
allowance() {
  local left=$(( budget - $(elapsed) - bench_min ))
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}
record() { # step status detail
  printf '%-13s %-5s %s\n' "$1" "$2" "$3" >> "$summary"
  [ "$2" = FAIL ] && failures=$((failures + 1))
  echo "[$(elapsed) s] $1: $2 $3"
}
skipped() { case $skip in *",$1,"*) return 0 ;; esac; return 1; }

# step NAME LIMIT command...: runs under `timeout`, output to logs/NAME.log.
# Sets $status (the exit status; 124: timed out).
step() {
  local name=$1 limit
  limit=$(allowance "$2")
  shift 2
  if [ $dry_run = 1 ]; then
    echo "[dry-run] $name (limit ${limit} s): $*"
    status=0
    return
  fi
  if [ "$limit" -lt 5 ]; then
    echo "no time left" > "$logs/$name.log"
    status=125
    return
  fi
  echo "[$(elapsed) s] $name (limit ${limit} s) ..."
  if declare -F "$1" > /dev/null; then # a function of this script
    timeout --kill-after=10 "$limit" bash -c "$*" > "$logs/$name.log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" > "$logs/$name.log" 2>&1
  fi
  status=$?
}

# What a log says in one line: its last two lines matching a pattern.
last_match() { grep -E "$2" "$logs/$1.log" 2>/dev/null | tail -2 | paste -sd';' -; }
verdict() { # name status pattern-of-success-detail
  [ $dry_run = 1 ] && return
  local detail
  detail=$(last_match "$1" "$3")
  if [ "$2" != 0 ] && [ -z "$detail" ]; then # the log's last words
    detail=$(grep -v '^\s*$' "$logs/$1.log" 2>/dev/null | tail -1 | cut -c1-200)
  fi
  case $2 in
    0) record "$1" PASS "${detail:-ok}" ;;
    124|137) record "$1" FAIL "timed out; ${detail:-see logs/$1.log}" ;;
    125) record "$1" SKIP "no time left in the budget" ;;
    *) record "$1" FAIL "exit $2; ${detail:-see logs/$1.log}" ;;
  esac
}

echo "gpu-check.sh: budget ${budget} s (benchmark at least ${bench_min} s), work in $work, results to $out"

# env ------------------------------------------------------------------------
env_report() {
  date -u
  nvidia-smi || echo "no nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu --format=csv || true
  nvcc --version || true
  cmake --version | head -1 || true
  c++ --version | head -1 || true
  command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer || true
  python3 - <<'EOF'
import platform
print("python", platform.python_version())
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except Exception as e:
    print("torch: not available:", e)
try:
    import triton
    print("triton", triton.__version__)
except Exception as e:
    print("triton: not available:", e)
EOF
}
export -f env_report
if ! skipped env; then
  step env 30 env_report
  verdict env $status "^torch "
fi

# unpack ---------------------------------------------------------------------
static=$work/normjit-static
static_ok=0
unpack() {
  tar -xJf "$carry/normjit-static.tar.xz" -C "$work" || return 1
  cat "$static/MANIFEST"
  local built now
  built=$(awk '/^source-hash/ {print $2}' "$static/MANIFEST")
  now=$(bash "$root/tools/prepare-gpu-carry.sh" --source-hash)
  [ "$built" = "$now" ] || echo "warning: carry built from sources $built, this tree is $now (rerun tools/prepare-gpu-carry.sh)"
  LD_LIBRARY_PATH=$static/lib "$static/bin/norm-tune" --version
}
export root work logs static carry
export -f env_report unpack
if ! skipped unpack; then
  if [ $dry_run = 0 ] && [ ! -f "$carry/normjit-static.tar.xz" ]; then
    record unpack FAIL "no $carry/normjit-static.tar.xz: run tools/prepare-gpu-carry.sh and carry .carry"
  else
    step unpack 60 unpack
    if [ $dry_run = 1 ] || grep -q "with compiler" "$logs/unpack.log"; then
      static_ok=1
    fi
    verdict unpack $status "^norm-tune: |^warning"
    [ -f "$static/MANIFEST" ] &&
      export NORM_GIT_COMMIT="$(awk '/^commit/ {$1 = ""; print substr($0, 2)}' "$static/MANIFEST")"
  fi
fi
export NORMJIT_LIBRARY=$static/lib/libnormjit.so
tools_env=(env LD_LIBRARY_PATH="$static/lib")

# build-rt (background) --------------------------------------------------------
build_rt=$work/build-rt
build_pid=
if ! skipped build-rt; then
  if [ $dry_run = 1 ]; then
    echo "[dry-run] build-rt (background): cmake -DNORM_RUNTIME_ONLY=ON; ninja normjit normjit-example"
  else
    (cmake -G Ninja -S "$root" -B "$build_rt" -DNORM_RUNTIME_ONLY=ON \
        -DCMAKE_BUILD_TYPE=Release && nice ninja -C "$build_rt" -j 6 normjit normjit-example) \
      > "$logs/build-rt.log" 2>&1 &
    build_pid=$!
  fi
fi

# gpu-check --------------------------------------------------------------------
if ! skipped gpu-check && [ $static_ok = 1 ]; then
  args=()
  [ $quick = 1 ] && args=(--quick)
  step gpu-check 150 "${tools_env[@]}" "$static/bin/normjit-gpu-check" "${args[@]}"
  verdict gpu-check $status "cases passed"
fi

# tools --------------------------------------------------------------------------
# The RUN lines of test/Runtime/{example,norm-tune,bench}.test.
run_tools() {
  set -e
  export LD_LIBRARY_PATH=$static/lib
  "$static/bin/normjit-example" --hidden 4096 --rows 64
  "$static/bin/normjit-example" --hidden 769 --rows 5 --no-tune
  "$static/bin/norm-tune" -v --hidden 2048,4096,7168,8192 --addend \
      --residual-out --cache-dir "$work/tune-cache" --bundle "$work/tuned.njb"
  "$static/bin/normjit-bench" --hidden 4096 --variants 8 --launches 2048
  echo "tools: all passed"
}
export -f run_tools
if ! skipped tools && [ $static_ok = 1 ]; then
  step tools 90 run_tools
  verdict tools $status "tools: all passed|launch overhead"
fi

# torch ----------------------------------------------------------------------------
if ! skipped torch && [ $static_ok = 1 ]; then
  step torch 150 env NORM_REQUIRE_GPU=1 python3 "$root/test/GPU/python/test_torch.py" -v
  verdict torch $status "^(Ran |OK|FAILED)"
fi

# training: the torch ops' forward and backward against float64, then a
# tiny decoder trained with torch's modules and with norm_opt's.
run_training() {
  env NORM_REQUIRE_GPU=1 python3 "$root/test/GPU/python/test_torch_train.py" -v &&
    python3 "$root/tools/norm-bench/train_check.py"
}
export -f run_training
if ! skipped training && [ $static_ok = 1 ]; then
  step training 120 run_training
  verdict training $status "^(Ran |OK|FAILED)|^train_check"
fi

# sanitizers -------------------------------------------------------------------------
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1 || true)
for tool in memcheck racecheck synccheck initcheck; do
  skipped $tool && continue
  [ $static_ok = 1 ] || continue
  if [ -z "$sanitizer" ] && [ $dry_run = 0 ]; then
    record $tool SKIP "no compute-sanitizer"
    continue
  fi
  # The last two only when the budget has room to spare.
  case $tool in
    synccheck|initcheck)
      if [ $dry_run = 0 ] && [ $(( budget - $(elapsed) - bench_min )) -lt 120 ]; then
        record $tool SKIP "budget"
        continue
      fi ;;
  esac
  step $tool 75 "${tools_env[@]}" "${sanitizer:-compute-sanitizer}" --tool $tool \
      --error-exitcode 99 --print-limit 20 "$static/bin/normjit-gpu-check" --quick
  verdict $tool $status "ERROR SUMMARY|cases passed"
done

# runtime-only -----------------------------------------------------------------------
# Waits for the background build (at most `allowance` seconds); 0 when it
# succeeded.
wait_build_rt() {
  local limit
  limit=$(allowance "$1")
  while kill -0 "$build_pid" 2>/dev/null && [ "$limit" -gt 0 ]; do
    sleep 1
    limit=$((limit - 1))
  done
  kill -0 "$build_pid" 2>/dev/null && { kill "$build_pid"; return 124; }
  wait "$build_pid"
}
runtime_only() {
  if ldd "$build_rt/runtime/libnormjit.so" | grep -Ei 'llvm|mlir'; then
    echo "error: the runtime-only libnormjit links LLVM"
    return 1
  fi
  [ -f "$work/tuned.njb" ] || { echo "no tuned bundle (the tools step failed)"; return 1; }
  NORMJIT_CACHE_DIR=$work/empty-cache LD_LIBRARY_PATH=$build_rt/runtime \
    "$build_rt/bin/normjit-example" --hidden 7168 --rows 100 --bundle "$work/tuned.njb"
}
export build_rt
export -f runtime_only
if ! skipped runtime-only && [ -n "$build_pid" ]; then
  wait_build_rt 90
  status=$?
  build_rt_status=$status
  if [ $status = 0 ]; then
    step runtime-only 30 runtime_only
    verdict runtime-only $status "PASS|error|no tuned"
  else
    tail -5 "$logs/build-rt.log" > "$logs/runtime-only.log"
    verdict runtime-only $status "error|Error"
  fi
elif [ $dry_run = 1 ]; then
  echo "[dry-run] runtime-only: wait for build-rt, serve the tuned bundle"
fi

# The checks so far, for RESULTS.md.
python3 - "$summary" > "$work/checks.json" <<'EOF'
import json, sys
checks = {}
for line in open(sys.argv[1]):
    name, status, *detail = line.rstrip("\n").split(None, 2)
    checks[name] = f"{status} {detail[0] if detail else ''}".strip()
json.dump(checks, sys.stdout, indent=1)
EOF

# bench --------------------------------------------------------------------------------
if ! skipped attention && [ "$attention_s" -gt 0 ]; then
  run_attention=1
else
  run_attention=0
fi
if ! skipped decode && [ "$decode_s" -gt 0 ]; then
  run_decode=1
else
  run_decode=0
fi
if ! skipped backward && [ "$backward_s" -gt 0 ]; then
  run_backward=1
else
  run_backward=0
fi
if ! skipped bench; then
  left=$(( budget - $(elapsed) - 15 ))
  # The torch benchmarks' shares (prefill, decode, then backward), each where
  # this one keeps its minimum.
  if [ $run_attention = 1 ] && [ $(( left - attention_s )) -ge "$bench_min" ]; then
    left=$(( left - attention_s ))
  fi
  if [ $run_decode = 1 ] && [ $(( left - decode_s )) -ge "$bench_min" ]; then
    left=$(( left - decode_s ))
  fi
  if [ $run_backward = 1 ] && [ $(( left - backward_s )) -ge "$bench_min" ]; then
    left=$(( left - backward_s ))
  fi
  bench_budget=$(( left < bench_max ? left : bench_max ))
  bench_args=(--out "$out/bench-results.json" --markdown "$out/RESULTS.md"
              --checks "$work/checks.json" --budget-s "$bench_budget"
              --cache-dir "$work/bench-cache")
  if [ $quick = 1 ] || [ "$bench_budget" -lt 100 ]; then
    bench_args+=(--quick)
  fi
  if [ $static_ok = 0 ] && [ $dry_run = 0 ]; then
    # Fallback: the runtime-only library and the carried heuristic bundles.
    if [ "${build_rt_status:-1}" = 0 ]; then
      export NORMJIT_LIBRARY=$build_rt/runtime/libnormjit.so
      for bundle in "$static"/bundles/*.njb; do bench_args+=(--bundle "$bundle"); done
      bench_args+=(--no-tuner-check)
    fi
  fi
  if [ $dry_run = 1 ]; then
    echo "[dry-run] bench (budget ${bench_budget} s): python3 tools/norm-bench/norm_bench.py ${bench_args[*]}"
    python3 "$root/tools/norm-bench/norm_bench.py" --dry-run "${bench_args[@]}" | sed -n 1p
    status=0
  else
    echo "[$(elapsed) s] bench (budget ${bench_budget} s) ..."
    timeout --kill-after=10 $((bench_budget + 45)) python3 "$root/tools/norm-bench/norm_bench.py" \
      "${bench_args[@]}" > "$logs/bench.log" 2>&1
    status=$?
  fi
  verdict bench $status "points on|stopped at"
fi

# attention, decode, backward --------------------------------------------------------
# torch_bench NAME SCRIPT SHARE MINIMUM SUCCESS-PATTERN: a torch benchmark of
# kernels built here (attention, backward: they need the compiler) with at
# most SHARE seconds, skipped under MINIMUM; results to
# $out/NAME-results.json.
torch_bench() {
  local name=$1 script=$2 share=$3 minimum=$4 pattern=$5 left budget_s
  # NORMJIT_CHIP for the attention benchmark (--attention-chip).
  local chip=
  [ "$name" = attention ] && chip=$attention_chip
  left=$(( budget - $(elapsed) - 15 ))
  budget_s=$(( left < share ? left : share ))
  local args=(--out "$out/$name-results.json" --budget-s "$budget_s"
              --cache-dir "$work/$name-cache")
  [ $quick = 1 ] && args+=(--quick)
  if [ $dry_run = 1 ]; then
    echo "[dry-run] $name (budget ${budget_s} s): ${chip:+NORMJIT_CHIP=$chip }python3 tools/norm-bench/$script ${args[*]}"
    python3 "$root/tools/norm-bench/$script" --dry-run "${args[@]}" | sed -n 1p
  elif [ $static_ok = 0 ]; then
    record "$name" SKIP "no libnormjit with the compiler (its kernels are built here)"
  elif [ "$budget_s" -lt "$minimum" ]; then
    record "$name" SKIP "no time left in the budget (${budget_s} s)"
  elif ! python3 -c "import sys, torch, norm_opt; sys.exit(not torch.cuda.is_available())" \
      > "$logs/$name.log" 2>&1; then
    record "$name" SKIP "no torch with CUDA or no norm_opt (logs/$name.log)"
  else
    echo "[$(elapsed) s] $name (budget ${budget_s} s) ..."
    NORMJIT_CHIP=$chip timeout --kill-after=10 $((budget_s + 60)) \
      python3 "$root/tools/norm-bench/$script" "${args[@]}" >> "$logs/$name.log" 2>&1
    status=$?
    verdict "$name" $status "$pattern"
  fi
}
if [ $run_attention = 1 ]; then
  torch_bench attention attention_bench.py "$attention_s" "$attention_min" \
    "kernels within tolerance|no slower than sdpa|stopped at"
fi
if [ $run_decode = 1 ]; then
  torch_bench decode decode_bench.py "$decode_s" "$decode_min" \
    "faster than eager|of copy bandwidth|stopped at"
fi
if [ $run_backward = 1 ]; then
  torch_bench backward backward_bench.py "$backward_s" "$backward_min" \
    "kernels within tolerance|faster than triton|stopped at"
fi

# Results ------------------------------------------------------------------------------
if [ $dry_run = 0 ]; then
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
    > "$logs/env-after.log" 2>&1 || true
  cp "$summary" "$out/summary.txt"
  cp "$work/checks.json" "$out/checks.json"
  [ -f "$work/tuned.njb" ] && cp "$work/tuned.njb" "$out/tuned.njb"
  tar -C "$work" -czf "$out/logs.tar.gz" logs
  echo
  echo "=== logs (tails) ==="
  for log in gpu-check torch memcheck racecheck bench attention decode backward; do
    [ -f "$logs/$log.log" ] && grep -qE "FAIL|ERROR|Error|error" "$logs/$log.log" &&
      { echo "--- $log"; grep -E "FAIL|ERROR|Error|error" "$logs/$log.log" | head -4 | cut -c1-160; }
  done
  echo
  # RESULTS.md again, with the attention sections; the short tables.
  report_args=()
  [ -f "$out/bench-results.json" ] && report_args+=("$out/bench-results.json")
  [ -f "$out/attention-results.json" ] &&
    report_args+=(--attention "$out/attention-results.json")
  [ -f "$out/decode-results.json" ] &&
    report_args+=(--decode "$out/decode-results.json")
  [ -f "$out/backward-results.json" ] &&
    report_args+=(--backward "$out/backward-results.json")
  if [ ${#report_args[@]} -gt 0 ]; then
    python3 "$root/tools/norm-bench/report.py" "${report_args[@]}" --short \
      --checks "$work/checks.json" --markdown "$out/RESULTS.md" || true
  fi
fi
if [ $dry_run = 1 ]; then
  rm -rf "$work"
  exit 0
fi
echo
echo "=== summary (elapsed $(elapsed) s of ${budget}) ==="
cat "$summary"
echo "files in $out: $(cd "$out" && ls | tr '\n' ' ')"
[ $failures = 0 ]
