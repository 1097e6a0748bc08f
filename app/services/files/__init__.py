"""Model files on a machine: scanning its `models_dirs` for `*.gguf`, reading GGUF headers, and which file is which
model (shards, projectors, draft heads) with the preset section each would get.

May import: `presets/` and everything below it.
"""
