"""The dashboard screen and everything on it: the machines pane, the model table (keyed diff, cells, activity), the
fleet view, the log panel, the footer and prompt, the keys and the actions they run, and what the dashboard says
about the operator's own actions and failures.

May import: `screens/`, `state/`, `widgets/`, `text/`, and the service layer.
"""
