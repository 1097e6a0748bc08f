"""Getting a model onto a machine: a Hugging Face-compatible hub searched from here (repos, GGUF files grouped by
quant, each file's header read with a Range request for a fit verdict), pulls driven through the router's own
download child (POST /models, followed over its event stream and checked against what really landed), and removal
of cached models (DELETE /models).

May import: fit, files, machine, lifecycle, router, hosts, core (never fleet, never the UI).
"""
