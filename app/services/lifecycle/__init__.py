"""A managed router's life on its machine: start, adopt, stop; the record that lets the next run find it; its API key;
looking at it without changing anything; finding the `llama-server` binary; and whether it is truly alive.

May import: `router/`, `hosts/` and `core/`.
"""
