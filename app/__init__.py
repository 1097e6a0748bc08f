"""llamaherd: a terminal dashboard for llama-server routers."""
