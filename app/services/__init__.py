"""Service layer: async I/O with routers, machines and files. Never imports textual (a test and an import-linter
contract check it).

`fleet.py` is the one object the UI and the CLI hold. Below it, a folder per concern; a folder imports only from the
folders below it (the "Services by concern" contract in pyproject.toml), and folders on one line never import each
other:

    fleet.py                      every configured machine, one event stream, awaitable commands
    history/ | fit/ | activity/   what changed and why; will it fit; what a loaded model is doing
    files/                        model files on a machine: GGUF headers, which file is which model
    presets/                      the router's preset INI: fields, text-preserving edits, locked writes
    machine/                      one machine: its transport, its router, the followers that keep it live
    lifecycle/ | logs/ | ssh/     start/adopt/stop a router; its log lines; another machine over ssh
    router/ | hosts/              a router's HTTP API and event stream; acting on a machine (the Transport)
    core/                         typed values, errors, bounds, safe text, waits: what every folder uses
"""
