#!/usr/bin/env bash
# One call on the GPU machine for the concurrent groups, each step bounded so that the whole stays under the
# 600 s a call may take. Usage: bench/concurrent_device.sh OUT [all|bench]
#   all:   the GPU tests while the compile caches fill, the predictor's training data and fit, the benchmark with
#          the fitted model, compute-sanitizer over the fused mode;
#   bench: the GPU tests while the benchmark's kernels compile, then the whole benchmark (the shipped model).
set -u
OUT=${1:?usage: $0 OUT [all|bench]}
WHAT=${2:-all}
T0=$(date +%s)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/gpu-tests.log" 2>&1
if [ "$WHAT" = bench ]; then
  python3 -m gemmc.bench concurrent --precompile-only > "$OUT/precompile.log" 2>&1 &
else
  ( python3 -m gemmc.bench concurrent_train measure --compile-only
    python3 -m gemmc.bench concurrent --quick --precompile-only ) > "$OUT/precompile.log" 2>&1 &
fi
PRE=$!
timeout 200 python3 -m pytest -m gpu -q -s -p no:cacheprovider tests/gpu/test_concurrent_gpu.py >> "$OUT/gpu-tests.log" 2>&1
wait $PRE
echo "tests and compiles done at $(( $(date +%s) - T0 )) s" >> "$OUT/precompile.log"
if [ "$WHAT" = bench ]; then
  timeout "$(left 580)" python3 -m gemmc.bench concurrent --out "$OUT" --budget "$(( $(left 580) - 60 ))" > "$OUT/bench.log" 2>&1
  echo "benchmark done at $(( $(date +%s) - T0 )) s" >> "$OUT/precompile.log"
  exit 0
fi
timeout 210 python3 -m gemmc.bench concurrent_train measure --out "$OUT" --budget 100 > "$OUT/train.log" 2>&1
python3 -m gemmc.bench concurrent_train fit "$OUT"/concurrent_train/*.json --write >> "$OUT/train.log" 2>&1 \
  && cp gemmc/concurrent/data/predictor_sm_90.json "$OUT/"
echo "training done at $(( $(date +%s) - T0 )) s" >> "$OUT/precompile.log"
timeout "$(left 535)" python3 -m gemmc.bench concurrent --quick --out "$OUT" --budget "$(( $(left 535) - 70 ))" \
  > "$OUT/bench.log" 2>&1
echo "benchmark done at $(( $(date +%s) - T0 )) s" >> "$OUT/precompile.log"
timeout "$(left 590)" compute-sanitizer --tool memcheck python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/gpu/test_concurrent_gpu.py -k fused >> "$OUT/precompile.log" 2>&1
echo "memcheck done at $(( $(date +%s) - T0 )) s" >> "$OUT/precompile.log"
