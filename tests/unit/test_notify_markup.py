"""Every toast the UI raises passes markup=False: what it says holds outside text (model names, paths, errors,
a router's words), which Textual would otherwise parse as Rich markup ("[/x]" raised MarkupError; "[b]" restyled)."""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "app" / "ui"


def test_every_notify_call_in_the_ui_passes_markup_false() -> None:
    found: list[str] = []
    for path in sorted(UI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "notify"):
                continue
            markup = next((k.value for k in node.keywords if k.arg == "markup"), None)
            if not (isinstance(markup, ast.Constant) and markup.value is False):
                found.append(f"{path.relative_to(UI)}:{node.lineno}")
    assert found == []
