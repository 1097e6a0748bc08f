"""Service layer: async I/O with routers, machines and files. Never imports textual."""
