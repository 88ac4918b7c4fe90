#!/usr/bin/env bash
# The device checks of paper scale (stacked runs) in one call on a lent GPU; everything it writes goes under $OUT.
#
#   mkdir -p data/gpu && cp -r /usr/share/datasets/fashion-mnist data/gpu/    (on the development machine, once)
#   run: bash benchmarks/gpu_paper_scale.sh      (timeout_s 570; carry data/gpu: the tree has pflnb and the benchmarks)
#
# 1. stacked = sequential on CUDA in float64 (tests/test_runner_stacked.py, the gpu mark), beside the batched runner's
#    own CUDA test: the stacked path is the batched one with run × client rows;
# 2. several runs per GPU (benchmarks/gpu_share.py): the measured footprint of a worker running one run and a stack of
#    10 of FedPG's Fashion-MNIST paper config, the workers that fit, and 8 short runs with one worker against "auto";
# 3. launch overhead (benchmarks/launch_overhead.py): the stacked step at 1,000 down to 10 rows eager, under
#    torch.compile and replayed from a CUDA graph, each with its determinism (same bits twice in one process, the
#    difference from eager), the eager step checked against plain SGD steps;
# 4. the roofline on CUDA (benchmarks/roofline.py): FLOPs per run, FLOP/s and the fraction of the device's float32
#    peak for the sequential, client-batched and stacked paths, FedPG's Fashion-MNIST paper config first (the ≤ 12 s
#    per run target), then the cpu-profile configs; each row is written to $OUT/roofline_gpu.json as it finishes, so
#    a call cut short still brings back what it measured.
# Fashion-MNIST comes from data/gpu/fashion-mnist/ (the Debian package's IDX files, carried) or $PFLNB_DATA. The
# machine's own torch is used; pflnb runs from the tree (its other needs: numpy, scipy, pandas, tqdm, threadpoolctl).
set -uo pipefail
OUT=${OUT:-results/gpu}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" CUBLAS_WORKSPACE_CONFIG=:4096:8 PFLNB_PROGRESS=0 MPLBACKEND=Agg
if [ -z "${PFLNB_DATA:-}" ] && [ -d data/gpu ]; then export PFLNB_DATA="$PWD/data/gpu"; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/device.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/device.txt"

start=$(date +%s)
PFLNB_PROFILE=smoke timeout 140 python -m pytest -q -p no:cacheprovider -m gpu \
  tests/test_runner_stacked.py tests/test_gpu_share.py tests/test_launch_overhead.py \
  "tests/test_runner_batched.py::test_batched_equals_sequential_on_cuda_float64" \
  2>&1 | tail -15 | tee "$OUT/gpu_tests.txt"
echo "tests: $(( $(date +%s) - start )) s"

timeout 110 python benchmarks/gpu_share.py --configs fedpg/fmnist-paper --stack 10 --runs 8 --rounds 10 \
  --json "$OUT/gpu_share.json" 2>&1 | tail -8

timeout 90 python benchmarks/launch_overhead.py --device cuda --rows 1000 250 100 10 --steps 50 \
  --json "$OUT/launch_overhead.json" 2>&1 | tail -6

timeout 195 python benchmarks/roofline.py --device cuda --rounds 3 --stack 25 \
  --configs fedpg/fmnist-paper fedavg/fmnist-paper fedpg/fmnist-cpu fedavg/feature-shift-cpu \
  --json "$OUT/roofline_gpu.json" --out "$OUT/roofline_gpu.md" 2>&1 | tail -30
echo "total: $(( $(date +%s) - start )) s"
