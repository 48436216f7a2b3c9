#!/usr/bin/env bash
# The encoder table of experiments/speed/RESULTS.md from one run: encoder_backends.py at demo and paper
# size on CPU with 1 and 2 threads and, if a GPU is present, on the GPU (paper size, batch 128,
# float32 / TF32 / bf16 autocast; demo size; paper size at growing batches until one does not
# fit), and indexing_speed.py (one thread), then encoder_report.py renders the markdown.
#
#   bash experiments/speed/encoder_suite.sh OUT_DIR [CPU_CORES [INDEX_CORE]]
#
# CPU_CORES (e.g. "8,9"): run the CPU rows pinned to those cores (taskset), concurrently with the
# GPU rows (pinned to cores 0,1), on a machine with cores to spare; default: one after the other.
# INDEX_CORE (e.g. 10): the indexing benchmark on that core, concurrently. $PYTHON: the
# interpreter (default python).
set -u
out=${1:?usage: encoder_suite.sh OUT_DIR [CPU_CORES]}
cores=${2:-}
index_core=${3:-}
PYTHON=${PYTHON:-python}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{ lscpu | grep -E "^Model name|^CPU\(s\)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; } > "$out/machine.txt" || true
rm -f "$out/cpu.jsonl" "$out/gpu.jsonl" "$out/sweep.jsonl"
bench() { $PYTHON "$here/encoder_backends.py" "$@"; }

cpu_rows() {
  # The input side: fastText subword indexing, cold and warm, and the embedding lookup; on its
  # own core (INDEX_CORE) alongside the encoder rows, else first.
  # The fixture model, then a copy with fastText's default 2M buckets (as cc.en.300.bin).
  indexing() {
    { OMP_NUM_THREADS=1 $1 $PYTHON "$here/indexing_speed.py"
      OMP_NUM_THREADS=1 $1 $PYTHON "$here/indexing_speed.py" --bucket 2000000
    } > "$out/indexing.txt" 2>&1
  }
  if [ -n "$index_core" ]; then
    indexing "taskset -c $index_core" &
  else
    indexing ""
  fi
  # fused_torch_ops: the fused kernel with the C kernels switched off (ELMO_C_CPU_KERNELS=0);
  # fused_torch_mm: its backward products through torch.mm (MKL) instead of oneDNN
  # (ELMO_C_ONEDNN=0); products: the encoder's matrix products alone. Forward + backward (no
  # optimizer update): the encoder's own cost, as issue 17 measures it.
  local rows=reference,fused,fused_torch_ops,fused_torch_mm,allennlp,outside,floor,products
  local update="--update none"
  for threads in 1 2; do
    pin=""
    if [ -n "$cores" ]; then
      pin="taskset -c $(echo "$cores" | cut -d, -f1-"$threads")"
    fi
    OMP_NUM_THREADS=$threads $pin $PYTHON "$here/encoder_backends.py" --threads "$threads" \
      --batch-size 64 --steps 10 --warmup 2 --rows "$rows" $update --json "$out/cpu.jsonl"
    OMP_NUM_THREADS=$threads $pin $PYTHON "$here/encoder_backends.py" --threads "$threads" \
      --size paper --batch-size 16 --steps 6 --warmup 1 --rows "$rows" $update --json "$out/cpu.jsonl"
  done
  wait
}

gpu_rows() {
  local gpu="--device cuda --rows reference,fused,fused_torch_ops,fused_eager,allennlp,outside,floor"
  for precision in fp32 tf32 bf16; do
    bench $gpu --size paper --batch-size 128 --steps 10 --warmup 3 --precision "$precision" \
      --json "$out/gpu.jsonl"
  done
  bench $gpu --size demo --batch-size 64 --steps 10 --warmup 3 --json "$out/gpu.jsonl"
  for batch in 512 2048 4096; do
    bench --device cuda --rows fused,outside,floor --size paper --batch-size "$batch" --steps 5 \
      --warmup 2 --precision tf32 --json "$out/sweep.jsonl" || echo "batch $batch does not fit"
  done
}

has_gpu=$($PYTHON -c "import torch; print(int(torch.cuda.is_available()))")
if [ "$has_gpu" = 1 ] && [ -n "$cores" ]; then
  cpu_rows > "$out/cpu.log" 2>&1 &
  cpu=$!
  taskset -c 0,1 bash -c "$(declare -f bench gpu_rows); here=$(printf %q "$here") \
    out=$(printf %q "$out") PYTHON=$(printf %q "$PYTHON"); gpu_rows" \
    > "$out/gpu.log" 2>&1
  wait $cpu
else
  cpu_rows > "$out/cpu.log" 2>&1
  if [ "$has_gpu" = 1 ]; then gpu_rows > "$out/gpu.log" 2>&1; fi
fi
grep -v -i warn "$out"/*.log | grep -E "tokens/s|fit|elmo_lstm" || true
$PYTHON "$here/encoder_report.py" "$out" > "$out/encoder_table.md"
cat "$out/encoder_table.md"
