"""One machine: its transport, its router (managed or attached) and the followers (events, log, host stats) that keep
its view live; the one schedule of host-stats rounds.

Below every concern that works on a machine (presets, files, fit, history, activity), so none of them forms a cycle
with it. May import: `lifecycle/`, `logs/`, `ssh/`, `router/`, `hosts/`, `core/`.
"""
