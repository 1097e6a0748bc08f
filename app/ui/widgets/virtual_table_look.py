"""How a VirtualTable looks: DataTable's (its DEFAULT_CSS, the parts a row-cursor table without zebra stripes uses)
and the styles a cell is drawn with."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style

COMPONENT_CLASSES = frozenset(
    {
        "vtable--cursor",
        "vtable--hover",
        "vtable--header",
        "vtable--header-cursor",
        "vtable--header-hover",
        "vtable--marked",
    }
)

LOOK = """
    VirtualTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;

        &:focus {
            background-tint: $foreground 5%;
            & > .vtable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .vtable--header {
                background-tint: $foreground 5%;
            }
        }
        & > .vtable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .vtable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .vtable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .vtable--header-cursor {
            background: $accent-darken-1;
            color: $foreground;
        }
        & > .vtable--header-hover {
            background: $accent 30%;
        }
        & > .vtable--hover {
            background: $block-hover-background;
        }
        & > .vtable--marked {
            background: $secondary 35%;
            text-style: bold;
        }
    }
    """


def cell_styles(
    get: Callable[[str], Style], header: bool, hover: bool, cursor: bool, css_foreground: bool = True
) -> tuple[Style, Style]:
    """DataTable's _get_styles_to_render_cell for a row cursor: the component style, and the foreground that wins
    over a cell's own when the cursor is on it. `get` is the widget's get_component_rich_style."""
    component = Style()
    if hover:
        component += get("vtable--hover")
        if header:
            component += get("vtable--header-hover")
    if cursor:
        component += get("vtable--cursor")
        if header:
            component += get("vtable--header-cursor")
    post = Style.from_color(color=component.color) if css_foreground else Style.null()
    return component, post
