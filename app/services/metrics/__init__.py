"""The fleet as Prometheus metrics (`llamaherd serve`'s `/metrics`): what the Fleet already holds (each machine's
view and model list) and what its events said last (host stats, activity figures, failures counted), rendered in
Prometheus' text format on a scrape. A scrape asks no router anything.

May import: `activity/` and everything below it (never `fleet`: it is handed a Fleet through a Protocol; never
`hub/` or `ask/`, beside it; never the UI or textual).
"""
