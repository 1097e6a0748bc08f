"""`:` commands, as in k9s: a verb and its names (`load qwen3-8b on gpu-a gpu-b`, `stop gpu-a`, `machine gpu-b`),
parsed against the machines and models the dashboard knows, and completed word by word with Tab. An alias of
`[aliases]` (config_aliases.py) stands for its command's words, and any words typed after it follow them.

Pure: the screen gives the names and runs what `parse` returns; a mistake is a CommandError whose words are shown
as they are (names are made visible by the caller, never read as markup).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from app.command_verbs import BARE_VERBS, MACHINE_VERBS, USAGE, VERBS, verbs_begun_by
from app.services.core.natural_order import natural_sorted


class CommandError(ValueError):
    """A command that cannot run as typed; the message says why and what would."""


@dataclass(frozen=True)
class Command:
    verb: str
    name: str | None = None
    """The model (or repo) for a model verb; None otherwise."""
    machines: tuple[str, ...] = ()
    """The machines it acts on, in the order given (never empty for a verb that acts on machines)."""


@dataclass(frozen=True)
class Names:
    """What the dashboard knows, for parsing and completing: machines in order, each one's model ids and aliases."""

    machines: Sequence[str]
    models: Mapping[str, Collection[str]]
    selected: str
    aliases: Mapping[str, str] = field(default_factory=dict)
    """[aliases]: a word -> the command it stands for."""

    def alias(self, word: str) -> str | None:
        """The alias `word` is (typed in either case), or None."""
        if word in self.aliases:
            return word
        low = word.lower()
        return next((a for a in self.aliases if a.lower() == low), None)

    def expanded(self, words: list[str]) -> list[str]:
        """The words with a first word that is an alias replaced by its command's words (once: never recursive)."""
        name = self.alias(words[0]) if words else None
        return [*self.aliases[name].split(), *words[1:]] if name else words

    def with_model(self, model: str) -> list[str]:
        return [m for m in self.machines if model in self.models.get(m, ())]

    def all_models(self) -> list[str]:
        return natural_sorted(list({mid for ids in self.models.values() for mid in ids}))


def verb_of(word: str) -> str:
    """The verb a word names: itself, or the one verb it begins (`lo` is load, `st` is start or stop: refused)."""
    found = verbs_begun_by(word)
    if len(found) == 1:
        return found[0]
    if found:
        raise CommandError(f"{word!r} could be {', '.join(found)}: type more of it")
    raise CommandError(f"no command {word!r}; commands: {', '.join(VERBS)}")


def parse(text: str, names: Names) -> Command:
    typed = text.split()
    if not typed:
        raise CommandError(f"a command: {', '.join(VERBS)}")
    alias = names.alias(typed[0])
    try:
        return _parse(names.expanded(typed), names)
    except CommandError as e:
        if alias is None:
            raise
        raise CommandError(f"{e} (alias {alias} = {names.aliases[alias]!r})") from None


def _parse(words: list[str], names: Names) -> Command:
    verb = verb_of(words[0])
    args = words[1:]
    if verb in BARE_VERBS:
        if args:
            raise CommandError(f"{verb} takes nothing more (usage: {USAGE[verb]})")
        return Command(verb)
    if verb in MACHINE_VERBS:
        machines = _machines(args, names)
        if verb == "machine" and len(args) != 1:
            raise CommandError(f"usage: {USAGE[verb]}")
        return Command(verb, machines=machines or (names.selected,))
    if not args:
        raise CommandError(f"usage: {USAGE[verb]}")
    name, rest = args[0], args[1:]
    if rest and rest[0].lower() != "on":
        raise CommandError(f"after {name!r}, `on MACHINE...` or nothing (usage: {USAGE[verb]})")
    machines = _machines(rest[1:], names) if rest else ()
    if rest and not machines:
        raise CommandError(f"`on` names no machine (usage: {USAGE[verb]})")
    if verb == "ask" and len(machines) > 1:
        raise CommandError("ask one machine at a time")
    if not machines:
        machines = _machines_with(verb, name, names)
    if verb != "pull":
        for m in machines:
            if name not in names.models.get(m, ()):
                raise CommandError(f"{m} has no model {name!r}")
    return Command(verb, name=name, machines=machines)


def _machines(words: Sequence[str], names: Names) -> tuple[str, ...]:
    unknown = [w for w in words if w not in names.machines]
    if unknown:
        raise CommandError(f"no machine {unknown[0]!r} (machines: {', '.join(names.machines)})")
    return tuple(dict.fromkeys(words))


def _machines_with(verb: str, name: str, names: Names) -> tuple[str, ...]:
    """Without `on`: the selected machine when it has the model (or for a pull), else the one machine that has it."""
    if verb == "pull" or name in names.models.get(names.selected, ()):
        return (names.selected,)
    having = names.with_model(name)
    if len(having) == 1:
        return (having[0],)
    if not having:
        raise CommandError(f"no machine has a model {name!r}")
    raise CommandError(f"{name} is on {', '.join(having)}: say which with `on MACHINE`")


def candidates(text: str, names: Names) -> list[str]:
    """What the word being typed (the last one) may become, in the order they are offered."""
    words = text.split(" ")
    last, before = words[-1], [w for w in words[:-1] if w]
    before = names.expanded(before)
    if not before:
        pool: list[str] = [*VERBS, *natural_sorted(list(names.aliases))]
    else:
        try:
            verb = verb_of(before[0])
        except CommandError:
            return []
        args = before[1:]
        if verb in BARE_VERBS:
            pool = []
        elif verb in MACHINE_VERBS:
            pool = [] if verb == "machine" and args else list(names.machines)
        elif not args:
            pool = [] if verb == "pull" else names.all_models()
        elif len(args) == 1:
            pool = ["on"]
        else:
            pool = [m for m in names.machines if verb == "pull" or args[0] in names.models.get(m, ())]
        pool = [p for p in pool if p not in args]
    low = last.lower()
    return [p for p in pool if p.lower().startswith(low) and p != last]


def complete(text: str, names: Names) -> str | None:
    """`text` with its last word completed to the first candidate (None: nothing to offer)."""
    found = candidates(text, names)
    if not found:
        return None
    head = text[: len(text) - len(text.split(" ")[-1])]
    return head + found[0]
