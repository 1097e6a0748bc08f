"""A real OpenSSH sshd on 127.0.0.1 for tests and benchmarks.

The fixtures are enabled for the whole suite by `pytest_plugins` in tests/conftest.py, so
each session starts one server of each kind, shared by every module.

Each server runs as the current user with its own generated host key, client key, authorized_keys and
sshd_config, on a free port. `fake_bin` is first on the PATH of every ssh session, so a test can put a fake
`nvidia-smi` there (and must remove it again).
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from app.services.ssh.transport import SshTransport
from tests.helpers.needs import missing
from tests.helpers.wait import eventually

SSHD = os.environ.get("SSHD", "/usr/sbin/sshd")
HOW_TO_GET = "Debian/Ubuntu: apt-get install openssh-server"


class SshdUnavailable(RuntimeError):
    pass


@dataclass
class SshServer:
    host: str
    port: int
    user: str
    client_key: str
    known_hosts: str
    host_key_line: str
    workdir: Path
    log_path: Path
    fake_bin: Path
    sftp: bool
    proc: subprocess.Popen[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ssh_config(self, alias: str) -> str:
        """An ~/.ssh/config block that reaches this server as `alias`."""
        return (
            f"Host {alias}\n  HostName {self.host}\n  Port {self.port}\n  User {self.user}\n"
            f"  IdentityFile {self.client_key}\n  IdentitiesOnly yes\n"
        )

    def connection_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener)."""
        try:
            return [c.pid for c in psutil.Process(self.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def cut_connections(self) -> int:
        """Cut every current client connection at the server, as a dropped link would. Returns how many
        processes were killed. The listener stays up, so clients can connect again."""
        try:
            victims = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return 0
        for p in victims:
            try:
                p.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                continue
        psutil.wait_procs(victims, timeout=3)
        return len(victims)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def ssh_transport(server: SshServer, **kw: object) -> SshTransport:
    """An SshTransport to this server as its test client (this machine's ~/.ssh/config has no say)."""
    opts: dict[str, object] = {
        "port": server.port,
        "user": server.user,
        "identity_file": server.client_key,
        "known_hosts": server.known_hosts,
        "ssh_config": os.devnull,
    }
    opts.update(kw)
    return SshTransport("box", server.host, **opts)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def _wait_listening(proc: subprocess.Popen[bytes], port: int, deadline: float, host: str = "127.0.0.1") -> bool:
    def listening() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5) as s:
                # OpenSSH speaks first: its banner proves it is our sshd, not something else on the port.
                s.settimeout(2)
                return s.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    return eventually(lambda: proc.poll() is not None or listening(), deadline - time.monotonic()) and (
        proc.poll() is None
    )


def start_sshd(
    workdir: Path,
    *,
    sftp: bool = True,
    listen: str = "127.0.0.1",
    prefix: tuple[str, ...] = (),
    extra: tuple[str, ...] = (),
) -> SshServer:
    """Start sshd in workdir (keys, config, log). Raises SshdUnavailable when sshd is not installed.

    `listen` and `prefix` put it elsewhere: e.g. on a veth address inside a network namespace the test made,
    with prefix ("ip", "netns", "exec", NAME). `extra`: more sshd_config lines (a bench standing in for many hosts
    raises MaxStartups, whose default of 10 drops connections beyond the tenth made at once)."""
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None:
        raise SshdUnavailable(f"OpenSSH sshd is not installed ({SSHD}; {HOW_TO_GET})")
    workdir.mkdir(parents=True, exist_ok=True)
    user = getpass.getuser()
    host_key = workdir / "ssh_host_ed25519_key"
    client_key = workdir / "client_key"
    _keygen(host_key, "llamaherd-test-host")
    _keygen(client_key, "llamaherd-test-client")
    authorized = workdir / "authorized_keys"
    authorized.write_text(Path(f"{client_key}.pub").read_text())
    os.chmod(authorized, 0o600)
    fake_bin = workdir / "bin"
    fake_bin.mkdir(exist_ok=True)
    (workdir / "home").mkdir(exist_ok=True)
    if os.geteuid() == 0:
        # sshd refuses to start as root without its privilege separation directory; Debian's service
        # creates it at boot, which a container never ran.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    host_pub = Path(f"{host_key}.pub").read_text().split()
    last_err = ""
    for _attempt in range(5):
        port = _free_port()
        config = workdir / "sshd_config"
        lines = [
            f"ListenAddress {listen}",
            f"Port {port}",
            f"HostKey {host_key}",
            f"PidFile {workdir / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitRootLogin prohibit-password",
            "AllowTcpForwarding yes",
            "LogLevel VERBOSE",
            # The "remote" keeps its state in the fixture's directory, not in the real $HOME/.local/state.
            f"SetEnv PATH={fake_bin}:{os.environ.get('PATH', '/usr/local/bin:/usr/bin:/bin')} "
            f"XDG_STATE_HOME={workdir / 'remote-state'} "
            # The "remote" user gets a home of its own: every remote command starts the login shell, and this
            # machine's root .bashrc runs `pyenv init`, whose rehash takes a lock that a cut connection can leave
            # behind (then every later command waited on it). A separate $HOME also catches local/remote mix-ups.
            f"HOME={workdir / 'home'}",
        ]
        if sftp:
            lines.append("Subsystem sftp internal-sftp")
        lines += extra
        config.write_text("\n".join(lines) + "\n")
        log_path = workdir / "sshd.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [*prefix, SSHD, "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        if _wait_listening(proc, port, time.monotonic() + 10, listen):
            known = workdir / "known_hosts"
            line = f"[{listen}]:{port} {host_pub[0]} {host_pub[1]}"
            known.write_text(line + "\n")
            os.chmod(known, 0o600)
            return SshServer(
                host=listen,
                port=port,
                user=user,
                client_key=str(client_key),
                known_hosts=str(known),
                host_key_line=line,
                workdir=workdir,
                log_path=log_path,
                fake_bin=fake_bin,
                sftp=sftp,
                proc=proc,
            )
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)
        last_err = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"sshd did not start:\n{last_err}")


def _start_or_skip(workdir: Path, *, sftp: bool) -> SshServer:
    try:
        return start_sshd(workdir, sftp=sftp)
    except SshdUnavailable as e:
        missing(str(e))


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real sshd with the SFTP subsystem."""
    server = _start_or_skip(tmp_path_factory.mktemp("sshd"), sftp=True)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def sshd_nosftp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real sshd without any SFTP subsystem (commands and forwards only)."""
    server = _start_or_skip(tmp_path_factory.mktemp("sshd-nosftp"), sftp=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sftp", "nosftp"])
def any_sshd(request: pytest.FixtureRequest) -> SshServer:
    """Each test that takes it runs twice: against the sshd with SFTP, then the one without."""
    server: SshServer = request.getfixturevalue("sshd" if request.param == "sftp" else "sshd_nosftp")
    return server
