"""How long an ssh machine takes to come up: SshTransport.connect() against a real OpenSSH sshd on 127.0.0.1
(the fixture server of tests/helpers/sshd.py), then one small command over the open connection.

The connect figure is TCP + key exchange + public-key auth + host-key check (no network latency: loopback).
The command figure includes the remote user's login shell starting (its ~/.bashrc), which dominates.

Run: python -m bench.ssh_connect [N]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from app.services.ssh.transport import SshTransport
from bench.common import figures
from tests.helpers.sshd import SshdUnavailable, start_sshd


async def main(n: int) -> None:
    try:
        server = start_sshd(Path(tempfile.mkdtemp(prefix="llamaherd-bench-sshd-")))
    except SshdUnavailable as e:
        raise SystemExit(str(e)) from None
    connects: list[float] = []
    commands: list[float] = []
    try:
        for _ in range(n):
            t = SshTransport(
                "bench",
                server.host,
                port=server.port,
                user=server.user,
                identity_file=server.client_key,
                known_hosts=server.known_hosts,
                ssh_config="/dev/null",
            )
            try:
                t0 = time.perf_counter()
                await t.connect()
                t1 = time.perf_counter()
                res = await t.run(["true"])
                t2 = time.perf_counter()
                assert res.ok, res
            finally:
                await t.close()
            connects.append((t1 - t0) * 1000)
            commands.append((t2 - t1) * 1000)
    finally:
        server.stop()
    print(figures("ssh connect (SshTransport.connect)", connects))
    print(figures("first command on the connection (run ['true'])", commands))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
