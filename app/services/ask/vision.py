"""Whether a model may be sent pictures, and which names are no model to talk to.

Vision is three-state, as the dashboard shows it: True (its own server said it takes images), False (it said it
does not), None (not known yet: never loaded while llamaherd watched). An image to a model that said no is refused
before anything is sent: the router refuses the whole request over one image part, and the text sent without its
picture would be answered as if the picture had never been mentioned. Unknown is offered, not refused.
"""

from __future__ import annotations

from app.services.ask.images import ImageRefused
from app.services.core.router_types import ModelInfo, ModelState

_SAID = (ModelState.LOADED, ModelState.SLEEPING)


def vision_of(m: ModelInfo | None) -> bool | None:
    """True / False / None (not known). A running child's arrays are its own word; otherwise what it said when
    last seen loaded (`vision_said`); otherwise not known (the router's offline guess is not a measurement)."""
    if m is None:
        return None
    if m.state in _SAID:
        return "image" in m.input_modalities
    return m.vision_said


def refuse_images(model: str, vision: bool | None, images: int) -> None:
    """ImageRefused ("MODEL has no vision") when pictures would go to a model that said it takes none."""
    if images and vision is False:
        raise ImageRefused(f"{model} has no vision: it said it takes no images; nothing was sent")


def is_projector(name: str) -> bool:
    """A projector (mmproj) file is loaded beside its model, never talked to: a server started on it fails."""
    return "mmproj" in name.lower()
