"""Whole preset sections: reading a section into the settings form, applying the form back onto the section's
keys (every spelling of an option, the projector's rules), validating a whole mapping, and the defaults a new
section gets. The single-field table and its checks are in `preset_fields`."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from app.services.core.errors import PresetInputError
from app.services.presets.fields import (
    FALSEY,
    FIELDS,
    FIELDS_BY_KEY,
    MMPROJ_AUTO_NEGATIVE,
    MMPROJ_AUTO_POSITIVE,
    MMPROJ_OFF_KEY,
    OFF,
    TRUTHY,
    PresetField,
    field_for,
    validate_bool,
    validate_key,
    validate_value,
)


def resolve_mmproj(value: str, model_path: str | None) -> str:
    """A projector setting as written: a bare file name means one beside the model's weights; anything with a `/`
    is a path taken as it is (resolved on the serving machine)."""
    if not value or value == OFF or "/" in value:
        return value
    if not model_path or "/" not in model_path:
        raise PresetInputError(
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
        if field is None and normalised and key in (*MMPROJ_AUTO_POSITIVE, *MMPROJ_AUTO_NEGATIVE):
            normalised = validate_bool(PresetField("Projector search", key, "bool"), normalised)
        if normalised:
            out[key] = normalised
    return _settle_mmproj(out)


def _settle_mmproj(mapping: dict[str, str]) -> dict[str, str]:
    mmproj_keys = FIELDS_BY_KEY["mmproj"].keys
    if read_option(mapping, FIELDS_BY_KEY["mmproj"]) != OFF:
        return mapping
    search_keys = (*MMPROJ_AUTO_POSITIVE, *MMPROJ_AUTO_NEGATIVE)
    out = {k: v for k, v in mapping.items() if k not in mmproj_keys and k not in search_keys}
    out[MMPROJ_OFF_KEY] = "true"
    return out


def read_option(section: Mapping[str, str], field: PresetField) -> str | None:
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
    present = [k for k in (*MMPROJ_AUTO_POSITIVE, *MMPROJ_AUTO_NEGATIVE) if k in section]
    if not present:
        return False
    winner = max(present)
    truthy = section[winner].lower() in TRUTHY
    return truthy if winner in MMPROJ_AUTO_NEGATIVE else section[winner].lower() in FALSEY


def read_form(section: Mapping[str, str]) -> dict[str, str]:
    """The form's values for a section's keys: field key → value shown ("" when unset). Any spelling of an
    option is read; a projector beside the model is shown by its bare name, a turned-off one as 'off'."""
    form: dict[str, str] = {}
    for field in FIELDS:
        value = read_option(section, field) or ""
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
            raise PresetInputError(f"{key!r} is not a field of the settings form", key=key)
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
    for key in (*MMPROJ_AUTO_POSITIVE, *MMPROJ_AUTO_NEGATIVE):
        out.pop(key, None)
    if value == OFF:
        out.pop("mmproj", None)
        out[MMPROJ_OFF_KEY] = "true"
    elif value:
        out["mmproj"] = resolve_mmproj(value, read_option(out, FIELDS_BY_KEY["model"]))
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
