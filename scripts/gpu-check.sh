#!/usr/bin/env bash
# The GPU kit's one command (see scripts/gpu/README.md). Run from the
# repository root on the GPU machine, after `npm run gpu:kit` built the kit
# here and the device call carried it:
#
#   bash scripts/gpu-check.sh [--kit .cache/gpu-kit] [--out DIR] [--budget-s 420] [--smoke] [--no-torch] [-- gpu-check options]
#
# Unpacks the Vulkan loader (only where the machine has none), Node and Dawn
# into a scratch folder, then runs, writing JSON into the output folder:
#   1-3. gpu-check.mjs: parity tests, copy bandwidth, Llama-3.2-1B with f16 and
#        packed quantized weights (Q4_K, Q4_0, Q8_0), prefill/decode of the
#        real-shape models, TTFT of linking algorithms (gpu-check.json);
#   4.   the PyTorch reference on the same GPU, where python3 has torch (torch.json).
# --smoke is the rehearsal subset that CI runs on SwiftShader (four quick bundled
# tests, argmax, llama2c, kv-gather and dispatcher, for the parity stage: the unit
# suite runs the rest unbundled, the attention kernels' 45 s among them). Options after
# `--` go to gpu-check.mjs (e.g. -- --stages parity --models llama-3.2-1b, or
# -- --stages copy,quant for the quantized-weights comparison alone).
set -uo pipefail
KIT=.cache/gpu-kit
OUT=${OUT:-gpu-out}
BUDGET=420
SMOKE=0
TORCH=1
while [ $# -gt 0 ]; do
  case "$1" in
    --kit) KIT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --budget-s) BUDGET=$2; shift 2 ;;
    --smoke) SMOKE=1; shift ;;
    --no-torch) TORCH=0; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    --) shift; break ;;
    *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -f "$KIT/MANIFEST.json" ] || { echo "gpu-check: no kit at $KIT (build it with npm run gpu:kit)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
KIT=$(cd "$KIT" && pwd)
RT=$(mktemp -d "${TMPDIR:-/tmp}/legokv-gpu.XXXXXX")
trap 'rm -rf "$RT"' EXIT
start=$(date +%s)

# The Vulkan loader: Debian's debs, unpacked into / only on a machine with an NVIDIA driver and no loader
# (the device tool's recipe). Never during a rehearsal: that would change this machine's system files.
if command -v nvidia-smi >/dev/null && ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' && ls "$KIT"/gl/*.deb >/dev/null 2>&1; then
  for f in "$KIT"/gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  echo "gpu-check: unpacked the Vulkan loader and EGL from $KIT/gl"
fi
# The NVIDIA driver's ICD and EGL vendor files, where the driver is mounted but not registered.
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
# Without a GPU (the rehearsal), SwiftShader next to Debian's chromium.
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f /usr/lib/chromium/vk_swiftshader_icd.json ]; then
  export VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/lib/chromium
fi

# xz, or Python's lzma where the machine has no xz.
unxz_to() { if command -v xz >/dev/null; then xz -dc "$1" > "$2"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi; }
unxz_to "$KIT/node.xz" "$RT/node" && chmod +x "$RT/node" || { echo "gpu-check: could not unpack node" >&2; exit 1; }
mkdir -p "$RT/webgpu/dist/linux-x64"
cp "$KIT"/webgpu/index.js "$KIT"/webgpu/package.json "$RT/webgpu/"
unxz_to "$KIT/webgpu/dawn.node.xz" "$RT/webgpu/dist/linux-x64/dawn.node" || { echo "gpu-check: could not unpack dawn.node" >&2; exit 1; }
export LEGOKV_WEBGPU_MODULE="$RT/webgpu/index.js"
# Dawn's OpenGL ES backend opens "libEGL.so", which only a -dev package provides: link it to the runtime's libEGL.so.1.
egl=$(ldconfig -p 2>/dev/null | grep -o '/[^ ]*/libEGL.so.1$' | head -1)
if [ -n "$egl" ] && ! ldconfig -p 2>/dev/null | grep -q 'libEGL.so '; then
  mkdir -p "$RT/lib" && ln -s "$egl" "$RT/lib/libEGL.so" && export LD_LIBRARY_PATH="$RT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# The carried tests spawn the generate CLI with process.execPath: put the unpacked node first on PATH too.
export PATH="$RT:$PATH"
echo "gpu-check: node $("$RT/node" --version), unpacked in $(( $(date +%s) - start )) s; kit $(grep -o '"commit": "[^"]*"' "$KIT/MANIFEST.json")"
echo "gpu-check: Vulkan loaders: $(ldconfig -p 2>/dev/null | grep -o 'libvulkan.so.1 .*' | head -2 | tr '\n' ' ')"
echo "gpu-check: Vulkan ICD files: $(ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d 2>/dev/null | tr '\n' ' ') (VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-})"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | sed 's/^/gpu-check: nvidia-smi: /'

if [ "$SMOKE" = 1 ]; then
  ARGS=(--tests engine/argmax.test.mjs,engine/llama2c.test.mjs,engine/kv-gather.test.mjs,engine/dispatcher.test.mjs --matmul-model tiny-llama --models tiny-llama,smollm2-135m --lengths 16 --decode-steps 2
        --quant-model tiny-llama --quant-types f16,q4_0,q8_0 --quant-lengths 16
        --link-models tiny-llama --contexts 256 --chunk-tokens 128 --profile-models tiny-llama --budget-s "$BUDGET")
  TORCH_ARGS=(--models tiny-llama --lengths 16,32 --decode-steps 2 --budget-s 60)
else
  # The PyTorch reference gets its own slice of the budget, after the engine.
  ARGS=(--budget-s $(( BUDGET * 72 / 100 )))
  TORCH_ARGS=(--budget-s $(( BUDGET * 22 / 100 )))
fi
# LEGOKV_NODE_FLAGS: extra flags for node, e.g. "--cpu-prof --cpu-prof-dir=$OUT/prof" (NODE_OPTIONS refuses --cpu-prof).
# shellcheck disable=SC2086
"$RT/node" ${LEGOKV_NODE_FLAGS:-} "$KIT/src/bench/gpu-check.mjs" --out "$OUT" "${ARGS[@]}" "$@" 2>&1 | tee "$OUT/gpu-check.log"
status=${PIPESTATUS[0]}

if [ "$TORCH" = 1 ] && python3 -c 'import torch, transformers' 2>/dev/null; then
  PYTHONUNBUFFERED=1 python3 "$KIT/torch_bench.py" --out "$OUT/torch.json" "${TORCH_ARGS[@]}" 2>&1 | tee "$OUT/torch.log"
elif [ "$TORCH" = 1 ]; then
  echo "gpu-check: python3 has no torch and transformers here: PyTorch reference skipped"
fi
echo "gpu-check: done in $(( $(date +%s) - start )) s, status $status; results in $OUT"
exit "$status"
