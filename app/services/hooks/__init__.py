"""Hooks: the operator's own commands, run when the fleet changes in a way that matters (a model failed or stopped
answering, a machine became unreachable or came back, a router exited), optionally only once the state has held
for a while (`sustain`), bounded in time and in how many run at once, never blocking whoever follows the fleet.

What happened is worked out from the fleet's events (triggers.py, pure); running is runner.py. The dashboard and
the headless `llamaherd watch` both hold a HookRunner.

May import: core (never fleet, never the UI).
"""
