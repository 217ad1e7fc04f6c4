#!/usr/bin/env bash
# The GPU checks (issues 32 and 47) as one run on a machine with a CUDA GPU, about 8 minutes of
# timeouts for a 10-minute call: the CUDA tests (CUDA vs CPU, captured step and captured epoch vs
# eager, counter draws' bits on both), the launch structure, the GPU benchmark of breast_cancer
# under counter draws (the whole epoch captured) and under generators (the captured step), of
# mfeat-fourier, three small paper datasets end to end (a real sweep, compared with the committed
# results), then the paper set's projection there.  Everything it prints goes to
# $OUT/gpu_check.log; the benchmark's figures to $OUT/*.json.
#
#   DEVICE=cpu QUICK=1 WHEELS=none OUT=/tmp/gpu-dry bash bench/gpu_check.sh   # dry run on a CPU
#
# On a lent device machine (see the device tool's README), prepared here first:
#   1. wheels of what its image lacks, for its Python 3.12 (XGBoost as the small CPU build: the
#      CUDA build does not fit the 64 MiB a call may carry; importances then run on its cores,
#      with the fallback's one-line notice):
#        echo /.whl/ >> .git/info/exclude
#        pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#          --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl \
#          xgboost-cpu papermill ipykernel jupyter_client jupyter_core nbformat nbclient jupytext \
#          ipython ipython-pygments-lexers pyzmq tornado traitlets comm debugpy matplotlib-inline \
#          nest-asyncio decorator jedi parso pexpect ptyprocess prompt_toolkit wcwidth stack-data \
#          executing asttokens pure_eval fastjsonschema jsonschema jsonschema-specifications \
#          referencing rpds-py entrypoints tenacity ansicolors mdit-py-plugins platformdirs
#        pip wheel --no-deps liac-arff -w .whl                   # (no binary wheel published)
#   2. the data, as one archive the call carries (remove it afterwards: the copies stay out of
#      the project): echo /.device_data.tgz >> .git/info/exclude;
#        tar czf .device_data.tgz -C ../shared/datasets openml-cc18
#   3. the working tree under 64 MiB: outputs/ holds about 150 MB; move outputs/paper and
#      outputs/authors aside for the call, except outputs/paper/{balance-scale,diabetes,credit-g}
#      (the end-to-end check compares with them, the benchmark re-renders them), then back.
#   4. run: command "bash bench/gpu_check.sh", carry [".whl", ".device_data.tgz"], timeout 600.
set -uo pipefail
OUT=${OUT:-bench/results/gpu-check}
DEVICE=${DEVICE:-cuda}
QUICK=${QUICK:-0}
WHEELS=${WHEELS:-.whl}  # the carried wheels (Python 3.12); "none" in a dry run here
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
work=$(mktemp -d)
if [ -d "$WHEELS" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$work/site" \
        "$WHEELS"/*.whl && export PYTHONPATH="$work/site:$PWD"
fi
if [ -f .device_data.tgz ]; then
    tar xzf .device_data.tgz -C "$work" && export TCC_DATA_DIR="$work/openml-cc18"
fi
TCC_DATA_DIR=$(cd "${TCC_DATA_DIR:-../shared/datasets/openml-cc18}" && pwd) || exit 1
export TCC_DATA_DIR  # absolute: the notebooks' kernels run in other folders
if [ "$QUICK" = 1 ]; then  # the dry run: every step, briefly
    bench_args=(--epochs 2 --warmup-epochs 1)
    projection=(--only balance-scale)
    sweep_epochs=5
else
    bench_args=()
    projection=(--all)
    sweep_epochs=500
fi

step() { echo; echo "== $* ($(date +%T))"; }
{
    step machine
    nvidia-smi || true
    python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, 'cuda', torch.cuda.is_available())"

    step "CUDA tests (CUDA vs CPU, captured step and epoch vs eager, counter draws, GPU-fitted estimator on a CPU)"
    timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_train.py tests/test_estimator.py \
        tests/test_draws.py -k "cuda or gpu"

    step "launch structure: operators and host reads per epoch, 1 vs 8 seeds, generator vs counter draws"
    timeout 60 python3 bench/profile_epoch.py --launches --methods random,class,oracle,class_most

    step "benchmark: breast_cancer on $DEVICE, counter draws (auto) and each member's generator"
    timeout 60 python3 bench/bench_epoch.py --device "$DEVICE" --only breast_cancer "${bench_args[@]}" \
        --json "$OUT/bench_breast_cancer.json"
    timeout 45 python3 bench/bench_epoch.py --device "$DEVICE" --only breast_cancer --draws generator \
        "${bench_args[@]}" --json "$OUT/bench_breast_cancer_generator.json"

    step "benchmark: mfeat-fourier on $DEVICE"
    timeout 60 python3 bench/bench_epoch.py --device "$DEVICE" --only mfeat-fourier "${bench_args[@]}" \
        --json "$OUT/bench_mfeat_fourier.json"

    step "end to end: three paper datasets side by side on $DEVICE, $sweep_epochs epochs"
    python3 - "$work/gpu_check.yaml" "$DEVICE" "$sweep_epochs" <<'EOF'
import sys

import yaml

d = yaml.safe_load(open("params/paper.yaml"))
d["datasets"] = ["balance-scale", "diabetes", "credit-g"]
d["config"].update(device=sys.argv[2], epochs=int(sys.argv[3]))
yaml.safe_dump(d, open(sys.argv[1], "w"))
EOF
    start=$(date +%s)
    timeout 150 python3 -m tcclib "$work/gpu_check.yaml" --outputs "$work/out" --workers 3
    echo "end to end: $(( $(date +%s) - start )) s for the three datasets"

    step "benchmark: the paper set's projection on $DEVICE"
    timeout 120 python3 bench/bench_epoch.py --device "$DEVICE" "${projection[@]}" "${bench_args[@]}" \
        --json "$OUT/bench_all.json"
    step done
} 2>&1 | tee "$OUT/gpu_check.log"
rm -rf "$work"
