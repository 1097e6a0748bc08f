"""Screens shown over the dashboard: help, history, a confirmation, the model files screen, the preset editor (its
fields, its review and its write).

May import: `state/`, `widgets/`, `text/`, and the service layer; never the dashboard.
"""
