#!/usr/bin/env bash
# A newcomer's first run: install what is needed, build, make a sample model and inspect it (as
# imported and as optimized), then run it on the CPU backend. Usage: scripts/demo.sh [MODEL.onnx]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
# Python tools run in the virtual environment setup.sh made
venv=${INGOT_VENV:-$here/.venv}
export VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH
"$here/scripts/build.sh" "$here/build"
model=${1:-}
if [ -z "$model" ]; then
  # ResNet-50's architecture as shipped inside the onnx package (weights made by ConstantOfShape)
  model=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/light/light_resnet50.onnx'))")
fi
echo "== ingot inspect $model"
"$here/build/ingot" inspect "$model"
echo
echo "== ingot inspect $model --optimized (the graph the engine runs)"
"$here/build/ingot" inspect "$model" --optimized
echo
echo "== ingot run $model (CPU backend, seeded random input)"
"$here/build/ingot" run "$model" --seed 1
