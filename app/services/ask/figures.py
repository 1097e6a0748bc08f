"""The figures of one answer: time to first token, tokens/s and token counts, the server's own where it sent them
(`usage`, `timings`), measured here where it did not."""

from __future__ import annotations

from dataclasses import dataclass

from app.services.ask.chunks import ChunkFacts


@dataclass(frozen=True)
class AnswerFigures:
    ttft_ms: float | None
    """From sending the request to the first piece of the reply arriving here (the link included)."""
    tokens_per_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    prompt_ms: float | None = None
    """The server's own time to read the prompt."""
    from_server: bool = False
    """Whether tokens/s and the counts are the server's (`timings`/`usage`) or counted here."""

    def line(self) -> str:
        parts = [
            f"first token {self.ttft_ms:.0f} ms" if self.ttft_ms is not None else "no token",
            f"{self.tokens_per_s:.1f} tokens/s" if self.tokens_per_s is not None else "",
            f"prompt {self.prompt_tokens} tokens" if self.prompt_tokens is not None else "",
            f"reply {self.completion_tokens} tokens" if self.completion_tokens is not None else "",
        ]
        return ", ".join(p for p in parts if p) + ("" if self.from_server else " (counted here)")

    def as_json(self) -> dict[str, float | int | None]:
        return {
            "ttft_ms": _r(self.ttft_ms),
            "tokens_per_s": _r(self.tokens_per_s),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class FigureKeeper:
    """What the chunks said so far, and the clock readings of the first and last piece."""

    def __init__(self, sent_at: float) -> None:
        self.sent_at = sent_at
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.pieces = 0
        self.server = ChunkFacts()

    def saw(self, facts: ChunkFacts, at: float) -> None:
        if facts.text:
            self.pieces += 1
            self.first_at = at if self.first_at is None else self.first_at
            self.last_at = at
        s = self.server
        self.server = ChunkFacts(
            prompt_tokens=facts.prompt_tokens if facts.prompt_tokens is not None else s.prompt_tokens,
            completion_tokens=facts.completion_tokens if facts.completion_tokens is not None else s.completion_tokens,
            prompt_ms=facts.prompt_ms if facts.prompt_ms is not None else s.prompt_ms,
            predicted_per_second=(
                facts.predicted_per_second if facts.predicted_per_second is not None else s.predicted_per_second
            ),
        )

    def figures(self) -> AnswerFigures:
        s = self.server
        ttft = None if self.first_at is None else (self.first_at - self.sent_at) * 1000
        rate = s.predicted_per_second
        if rate is None and self.first_at is not None and self.last_at is not None and self.pieces > 1:
            rate = (self.pieces - 1) / max(self.last_at - self.first_at, 1e-6)
        counted = s.completion_tokens if s.completion_tokens is not None else self.pieces
        return AnswerFigures(
            ttft_ms=ttft,
            tokens_per_s=rate,
            prompt_tokens=s.prompt_tokens,
            completion_tokens=counted,
            prompt_ms=s.prompt_ms,
            from_server=s.predicted_per_second is not None and s.completion_tokens is not None,
        )


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 2)
