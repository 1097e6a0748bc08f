"""Textual user interface. `app.py` (HerdApp: the data and the one worker reading fleet events), `run.py` (the
entry point for the CLI), `palette.py` (ctrl+p), `live.py` (fold events, paint at most every flush),
`malloc_trim.py` and `gc_pauses.py` (memory given back, the collector's passes kept short); below them a folder
per concern, each importing only from the folders below it (the "UI by concern" contract in pyproject.toml):

    dashboard/          the dashboard screen: machines pane, model table, fleet view, log panel, keys, actions
    screens/            the screens over it: help, history, model files, preset editor, confirmations
    state/              what the UI knows and asks: HerdState (pure), the Fleet and app Protocols
    widgets/            generic widgets: the virtual table, sticky sizes, scroll extent, table rows
    text/ | patches/    outside text shown safely, formats, glyphs; the patches to Textual's and Rich's internals
"""
