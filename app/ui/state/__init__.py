"""What the UI knows and asks, without a widget: HerdState folded from fleet events (pure), the Fleet Protocol the UI
holds, and the app Protocol the screens ask of HerdApp.

May import: `widgets/`, `text/`, and the service layer.
"""
