"""Screens shown over the dashboard: help, history, a confirmation, the model files screen, the preset editor (its
fields, its review and its write), the model detail pane (a screen, or a widget the dashboard docks), the form that
adds a machine.

May import: `state/`, `widgets/`, `text/`, and the service layer; never the dashboard.
"""
