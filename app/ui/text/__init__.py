"""Text as the UI shows it: outside text as plain, visible text (never markup, never a control sequence), the words,
numbers and colours of every state, and every glyph in a Unicode and an ASCII set.

May import: the service layer's `core/`.
"""
