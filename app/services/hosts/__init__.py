"""Acting on a machine, whichever way it is reached: the Transport contract, this machine as a Transport
(subprocesses, psutil, files), the pure parsers of /proc and nvidia-smi, process identity and process trees, each
model's memory from its router's children (child_memory.py), the constant shell scripts (run by ssh and by the
router lifecycle), and why a write failed.

May import: `core/`. The ssh Transport lives in `ssh/`, above this.
"""
