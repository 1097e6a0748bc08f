"""What every other folder of the service layer uses, and which imports nothing of them: the typed values that cross
from a worker to the UI (router types, host values, log lines, fleet events), typed errors, the bounds on outside
input, the one text sanitiser, shared values, bounded waits and backoff, and the operator's presence for a scenario.

May import: the standard library and `app.errors` only.
"""
