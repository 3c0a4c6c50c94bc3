#!/bin/bash
# One call on the GPU machine for the hopper family: bring-up cases, the GPU tests, the benchmark, ncu on 8192^3
# (gemmc and cuBLAS), the SASS of the compiled kernels, and compute-sanitizer memcheck; everything under $OUT.
# Run from the repository root: bash bench/experiments/hopper_device.sh
set -o pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > $OUT/smoke.log 2>&1
[ -z "$NO_SMOKE" ] && timeout 120 python3 bench/experiments/hopper_smoke.py 2>&1 | tee -a $OUT/smoke.log
[ -z "$NO_BENCH" ] && timeout 210 python3 bench/half.py ${HALF_ARGS:-} --out $OUT 2>&1 | tee $OUT/bench.log
# SASS of the 8192^3 bf16 kernel (the standalone file built by nvcc: cuobjdump reads its object file)
python3 -c "import gemmc; print(gemmc.compile_string('kernel k { dtype bf16 gemm 8192 x 8192 x 8192 }')['k'].standalone)" > /tmp/k.cu
nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -c /tmp/k.cu -o /tmp/k.o -Xptxas -v > $OUT/sass.txt 2>&1
cuobjdump -sass /tmp/k.o > /tmp/k.sass 2>&1
grep -oE "HGMMA[.A-Z0-9x]*|UTMALDG[.A-Z0-9]*|SYNCS[.A-Z0-9]*|STG[.A-Z0-9]*|LDG[.A-Z0-9]*|LDL|STL|MEMBAR[.A-Z]*|USETMAXREG[.A-Z]*|WARPGROUP[.A-Z]*|BAR[.A-Z]*" /tmp/k.sass | sort | uniq -c >> $OUT/sass.txt
cat /tmp/k.sass >> $OUT/sass.txt
timeout 180 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_hopper_gpu.py 2>&1 | tee $OUT/gpu-tests.log
[ -z "$NO_BENCH" ] && timeout 50 ncu --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
  python3 bench/half.py --profile 8192 > $OUT/ncu.txt 2>&1
timeout 60 compute-sanitizer --tool memcheck python3 -m pytest -q -p no:cacheprovider tests/gpu/test_hopper_gpu.py \
  -k "${MEMCHECK:-test_odd_sizes and rrr and not f32 or misaligned or every_tile}" 2>&1 | tail -40 > $OUT/memcheck.log
