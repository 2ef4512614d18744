#!/usr/bin/env bash
# The GPU run of issue 21: tests/test_cuda.py and bench/gpu.py on a machine with a GPU, CuPy and torch with CUDA,
# from this working tree (no install needed), everything written under $OUT (default ./gpu_out).
#
#   tools/gpu_run.sh            # both stages (about 10 minutes at most)
#   tools/gpu_run.sh quick      # environment, the non-op-database tests, the benchmark (at most ~6 minutes)
#   tools/gpu_run.sh opdb       # the op database on cuda, then second derivatives and forward mode (~4 minutes)
#   tools/gpu_run.sh dry        # the same on a CPU through tests/cupy_standin.py (checks this script, not a GPU)
#
# Each step has its own time limit, so a slow one cannot eat the others' time; what it wrote stays (pytest runs with
# -v: each test's result is in the output as it finishes, even if the limit stops the run).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
STAGE="${1:-all}"
BENCH=()
if [ "$STAGE" = dry ]; then
    export EMBER_CUDA_STANDIN=1
    BENCH=(--standin --tiny)
    STAGE=all
fi
PYTEST=(python -m pytest -v -p no:randomly -p no:cacheprovider -o addopts="" --tb=short -rfE)

step() {   # step NAME SECONDS COMMAND...: run with a time limit, output to $OUT/NAME.txt, status appended
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s): $*"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
    local rc=$?
    tail -3 "$OUT/$name.txt"
    echo "exit $rc after $((SECONDS - t0))s" | tee -a "$OUT/$name.txt"
}

if [ "$STAGE" = all ] || [ "$STAGE" = quick ]; then
    {
        date -u
        nvidia-smi 2>&1 | head -15
        python -c "import sys, numpy; print(sys.version); print('numpy', numpy.__version__)"
        python -c "import cupy; print('cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())" 2>&1
        python -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" 2>&1
        python -c "import ember; print('ember', ember.__file__, 'cuda available:', ember.cuda.is_available())" 2>&1
    } > "$OUT/environment.txt" 2>&1
    cat "$OUT/environment.txt"
    step tests_cuda_core 150 "${PYTEST[@]}" tests/test_cuda.py -k "not op_database and not second_derivatives" \
        --junitxml="$OUT/tests_cuda_core.xml"
    step bench_gpu 240 python bench/gpu.py --quick --out "$OUT/bench" "${BENCH[@]}"
fi
if [ "$STAGE" = all ] || [ "$STAGE" = opdb ]; then
    step tests_cuda_opdb 200 "${PYTEST[@]}" tests/test_cuda.py -k op_database_on_cuda \
        --junitxml="$OUT/tests_cuda_opdb.xml"
    step tests_cuda_second_order 100 "${PYTEST[@]}" tests/test_cuda.py -k second_derivatives \
        --junitxml="$OUT/tests_cuda_second_order.xml"
fi
echo "output in $OUT"
