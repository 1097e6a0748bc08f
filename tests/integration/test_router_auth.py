"""Routers llamaherd starts require an API key: another Unix user on the serving machine gets 401 (issue 10).

The other user is real: created with useradd for this module and removed after. Its requests are plain curl
runs (runuser), against the router and a loaded model's own child port, locally and on the "remote" machine
reached through the test sshd (which is this machine). llamaherd itself keeps working with the key it reads
from the serving machine, and the key shows up nowhere it should not: argv (`ps`), command output, logs.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from app.services.hosts.local import LocalTransport
from tests.helpers.herd import Herd, local_config
from tests.helpers.needs import in_ci
from tests.helpers.router import free_port, preset_text
from tests.helpers.sshd import SshServer
from tests.integration.test_lifecycle_ssh import ssh_machine, toml_for

COMPLETION = {"model": "alpha", "prompt": "Hello", "n_predict": 4}


# ---- the other user ----


@pytest.fixture(scope="module")
def other_user(needs_root: None) -> Iterator[str]:
    why = ""  # root is needs_root's to check
    if not (shutil.which("useradd") and shutil.which("userdel") and shutil.which("runuser")):
        why = "useradd, userdel and runuser are needed"
    elif not shutil.which("curl"):
        why = "curl is needed"
    if why:
        if in_ci():
            pytest.fail(f"{why} (required in CI)")
        pytest.skip(why)
    name = f"herdx{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=30)


def curl_code(user: str | None, method: str, url: str, body: dict[str, object] | None = None,
              key: str | None = None) -> int:  # fmt: skip
    argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, "--max-time", "20"]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    if key is not None:
        argv += ["-H", f"Authorization: Bearer {key}"]
    r = as_user(user, *argv, url) if user else subprocess.run([*argv, url], capture_output=True, text=True, timeout=30)
    return int(r.stdout or 0)


def refused_everything(user: str, base: str) -> dict[str, int]:
    return {
        "GET /models": curl_code(user, "GET", f"{base}/models"),
        "POST /models/load": curl_code(user, "POST", f"{base}/models/load", {"model": "beta"}),
        "POST /models/unload": curl_code(user, "POST", f"{base}/models/unload", {"model": "alpha"}),
        "POST /v1/completions": curl_code(user, "POST", f"{base}/v1/completions", COMPLETION),
    }


def child_port(log: str, model: str) -> int:
    found = re.findall(rf"spawning server instance with name={re.escape(model)} on port (\d+)", Path(log).read_text())
    assert found, f"no spawn line for {model} in {log}"
    return int(found[-1])


def files_under(root: Path) -> Iterator[Path]:
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            yield Path(dirpath) / n


def assert_private_state(state_dir: Path, router: str) -> None:
    base = state_dir / "llamaherd"
    for d in (base, base / "routers", base / "routers" / router):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in ("record.json", "api.key", "router.log"):
        assert stat.S_IMODE((base / "routers" / router / f).stat().st_mode) == 0o600, f


# ---- local ----


def test_another_user_gets_401_from_router_and_child_and_the_key_leaks_nowhere(herd: Herd, other_user: str) -> None:
    outputs: list[str] = []

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        r = herd.run(*args)
        outputs.append(r.stdout + r.stderr)
        return r

    r = run("start", "here")
    assert r.returncode == 0, r.stderr
    rec = herd.record()
    assert rec is not None and rec["requires_key"] is True
    base = f"http://127.0.0.1:{rec['port']}"
    k = herd.run("key", "here")
    assert k.returncode == 0 and k.stderr == ""
    key = k.stdout.strip()
    assert k.stdout == key + "\n" and len(key) >= 40  # the key and nothing else
    assert (herd.state_home / "llamaherd/routers/default/api.key").read_text().strip() == key

    # llamaherd loads and unloads as before; the other user is refused everything but /health
    r = run("load", "here", "alpha", "--wait")
    assert r.returncode == 0 and "alpha: loaded" in r.stdout, r.stderr
    assert refused_everything(other_user, base) == dict.fromkeys(
        ("GET /models", "POST /models/load", "POST /models/unload", "POST /v1/completions"), 401
    )
    assert curl_code(other_user, "GET", f"{base}/health") == 200  # public by design: liveness only
    # the loaded model's own port refuses too: the child inherited LLAMA_API_KEY from the router's environment
    child = f"http://127.0.0.1:{child_port(str(rec['log']), 'alpha')}"
    assert curl_code(other_user, "GET", f"{child}/v1/models") == 401
    assert curl_code(other_user, "POST", f"{child}/v1/completions", COMPLETION) == 401
    # ... and the operator's key works on both, through the router's proxy and directly
    assert curl_code(None, "POST", f"{base}/v1/completions", COMPLETION, key=key) == 200
    assert curl_code(None, "POST", f"{child}/v1/completions", COMPLETION, key=key) == 200
    # nothing the other user can read holds the key
    assert as_user(other_user, "cat", str(herd.state_home / "llamaherd/routers/default/api.key")).returncode != 0
    assert as_user(other_user, "cat", f"/proc/{rec['pid']}/environ").returncode != 0
    ps_other = as_user(other_user, "ps", "aeuxww")  # `e` would show environments it may read
    assert ps_other.returncode == 0 and "llama-server" in ps_other.stdout and key not in ps_other.stdout
    assert "alpha" in {m["id"] for m in json.loads(run("models", "here", "--json").stdout)}
    r = run("unload", "here", "alpha")
    assert r.returncode == 0, r.stderr

    # every headless command's output
    st = run("status")
    assert st.returncode == 0 and "API key required" in st.stdout and "open: no API key" not in st.stdout
    st = run("status", "--json")
    assert json.loads(st.stdout)[0]["api_key"] == "required"
    for args in (("models", "here"), ("logs", "here", "-n", "2000"), ("logs", "here", "--model", "alpha"),
                 ("preset", "show", "here"), ("start", "here")):  # fmt: skip
        assert run(*args).returncode == 0, args
    ev = herd.popen("events", "here")
    assert ev.stdout is not None
    first = ev.stdout.readline()  # the connect line, then the full list
    second = ev.stdout.readline()
    ev.send_signal(signal.SIGINT)
    out, errs = ev.communicate(timeout=10)
    outputs.append(first + second + out + errs)
    assert '"state":"connected"' in first and "alpha" in second
    for text in outputs:
        assert key not in text
    # argv of every process on the machine (root's view), the logs and every file llamaherd wrote but the key file
    ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True, check=True).stdout
    assert "llama-server" in ps and key not in ps
    for p in psutil.process_iter(["cmdline"]):
        assert key not in " ".join(p.info["cmdline"] or [])
    for f in [*files_under(herd.state_home), herd.config]:
        if f.name != "api.key":
            assert key not in f.read_text(errors="replace"), f
    assert_private_state(herd.state_home, "default")


def test_api_key_env_is_honoured_on_start(herd: Herd, tiny_models: dict[str, Path]) -> None:
    preset = herd.root / "models.ini"
    herd.write_config(local_config("here", preset, api_key_env="HERD_SHARED_KEY"))
    # not set here: a clear refusal, and nothing started
    r = herd.run("start", "here")
    assert r.returncode == 1 and "HERD_SHARED_KEY" in r.stderr and "not set" in r.stderr
    assert herd.router_pids() == []
    shared = "shared-" + secrets.token_urlsafe(24)
    herd.extra_env["HERD_SHARED_KEY"] = shared
    r = herd.run("start", "here")
    assert r.returncode == 0, r.stderr
    rec = herd.record()
    assert rec is not None
    base = f"http://127.0.0.1:{rec['port']}"
    assert curl_code(None, "GET", f"{base}/models") == 401
    assert curl_code(None, "GET", f"{base}/models", key=shared) == 200
    assert herd.run("key", "here").stdout == shared + "\n"
    r = herd.run("load", "here", "alpha", "--wait")
    assert r.returncode == 0, r.stderr
    # a colleague without the variable still adopts it: the key is read from the serving machine
    herd.extra_env.pop("HERD_SHARED_KEY")
    r = herd.run("models", "here")
    assert r.returncode == 0 and "alpha" in r.stdout, r.stderr
    # a key the router cannot take is refused before anything is started
    assert herd.run("stop", "here").returncode == 0
    herd.extra_env["HERD_SHARED_KEY"] = "two,keys-" + "x" * 20
    r = herd.run("start", "here")
    assert r.returncode == 1 and "not usable" in r.stderr and "two,keys" not in r.stderr


def test_a_router_started_without_a_key_is_adopted_and_shown_open(herd: Herd, llama_server: str) -> None:
    # A router as an older llamaherd left it: no key, and a record without "requires_key".
    port = free_port()
    d = herd.state_home / "llamaherd" / "routers" / "default"
    d.mkdir(parents=True)
    log = d / "router.log"
    preset = herd.root / "models.ini"
    argv = [llama_server, "--host", "127.0.0.1", "--port", str(port), "--models-preset", str(preset),
            "--models-max", "1"]  # fmt: skip
    with open(log, "ab") as f:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=f, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        old = {"pid": proc.pid, "start_time": round(psutil.Process(proc.pid).create_time(), 2), "port": port,
               "program": llama_server, "preset": str(preset), "log": str(log), "state": "running",
               "started_at": time.time(), "argv": argv, "models_max": 1}  # fmt: skip
        (d / "record.json").write_text(json.dumps(old))
        st = herd.run("status")
        assert st.returncode == 0 and "running" in st.stdout
        assert "open: no API key" in st.stdout and "x then s" in st.stdout
        assert json.loads(herd.run("status", "--json").stdout)[0]["api_key"] == "none"
        r = herd.run("models", "here")  # adopted and driven as before
        assert r.returncode == 0 and "alpha" in r.stdout, r.stderr
        k = herd.run("key", "here")
        assert k.returncode == 1 and k.stdout == "" and "no API key" in k.stderr
        # the fix: stop, then start; the new router requires a key
        assert herd.run("stop", "here").returncode == 0
        proc.wait(15)
        r = herd.run("start", "here")
        assert r.returncode == 0, r.stderr
        rec = herd.record()
        assert rec is not None and rec["requires_key"] is True
        assert curl_code(None, "GET", f"http://127.0.0.1:{rec['port']}/models") == 401
        assert "open: no API key" not in herd.run("status").stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


async def test_spawn_takes_an_environment_value_from_a_file_never_from_argv(tmp_path: Path) -> None:
    secret = secrets.token_urlsafe(32)
    key_file = tmp_path / "k"
    key_file.write_text(secret + "\n")
    out = tmp_path / "out"
    t = LocalTransport()
    pid = await t.spawn_detached(
        ["sh", "-c", 'printf %s "$HERD_K" >"$1.tmp" && mv "$1.tmp" "$1"; sleep 2', "sh", str(out)],
        log_path=str(tmp_path / "log"),
        env_files={"HERD_K": str(key_file)},
    )
    try:
        deadline = time.monotonic() + 5
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert out.read_text() == secret
        assert secret not in " ".join(psutil.Process(pid).cmdline())
    finally:
        os.kill(pid, signal.SIGKILL)


# ---- over ssh (the "remote" is this machine, through the test sshd) ----


@pytest.fixture
def remote(tmp_path: Path, tiny_models: dict[str, Path], sshd: SshServer, llama_server: str) -> Iterator[Herd]:
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml")
    h.machine = ssh_machine(sshd, "far", tmp_path, llama_server)  # type: ignore[attr-defined]
    h.write_config(toml_for(h.machine))  # type: ignore[attr-defined]
    yield h
    h.stop_all()


def test_over_ssh_another_user_gets_401_and_llamaherd_works(remote: Herd, sshd: SshServer, other_user: str) -> None:
    outputs: list[str] = []

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        r = remote.run(*args)
        outputs.append(r.stdout + r.stderr)
        return r

    assert run("start", "far").returncode == 0, outputs[-1]
    router = remote.machine.router  # type: ignore[attr-defined]
    state = sshd.workdir / "remote-state"
    rec = json.loads((state / "llamaherd" / "routers" / router / "record.json").read_text())
    assert rec["requires_key"] is True
    base = f"http://127.0.0.1:{rec['port']}"
    k = remote.run("key", "far")
    key = k.stdout.strip()
    assert k.returncode == 0 and k.stdout == key + "\n"
    assert (state / "llamaherd" / "routers" / router / "api.key").read_text().strip() == key
    r = run("load", "far", "alpha", "--wait")
    assert r.returncode == 0 and "alpha: loaded" in r.stdout, r.stderr
    assert refused_everything(other_user, base) == dict.fromkeys(
        ("GET /models", "POST /models/load", "POST /models/unload", "POST /v1/completions"), 401
    )
    child = f"http://127.0.0.1:{child_port(rec['log'], 'alpha')}"
    assert curl_code(other_user, "POST", f"{child}/v1/completions", COMPLETION) == 401
    assert curl_code(None, "POST", f"{base}/v1/completions", COMPLETION, key=key) == 200
    for args in (("unload", "far", "alpha"), ("models", "far", "--json"), ("status",), ("status", "--json"),
                 ("logs", "far", "-n", "2000")):  # fmt: skip
        assert run(*args).returncode == 0, (args, outputs[-1])
    assert json.loads(outputs[-2])[0]["api_key"] == "required"
    for text in outputs:
        assert key not in text
    ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True, check=True).stdout
    assert key not in ps
    for f in [*files_under(state), *files_under(remote.state_home), remote.config]:
        if f.name != "api.key":
            assert key not in f.read_text(errors="replace"), f
    assert_private_state(state, router)


async def test_port_forward_listens_on_loopback_only(sshd: SshServer) -> None:
    from app.services.ssh.transport import SshTransport

    t = SshTransport("far", sshd.host, port=sshd.port, user=sshd.user, identity_file=sshd.client_key,
                     known_hosts=sshd.known_hosts)  # fmt: skip
    try:
        local = await t.forward_port(free_port())
        mine = [c for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN and c.laddr.port == local]
        assert mine and all(c.laddr.ip == "127.0.0.1" for c in mine)
    finally:
        await t.close()
