"""A network namespace joined to this one by a veth pair, whose link can be made to drop every packet.

This kernel has no netem (nor tc classifiers); a token bucket (`tc qdisc ... tbf`) with a one-byte burst drops
everything it is given, silently: no RST, no ICMP, as when a cable is pulled somewhere between two routers.
Everything made here is removed on exit (the namespace takes its veth end and the pair with it).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass


class NetnsUnavailable(RuntimeError):
    pass


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {r.stderr.strip() or r.returncode}")


def _out(*args: str) -> str:
    r = subprocess.run(args, capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(args)}: {r.stderr.strip() or r.returncode}")
    return r.stdout


def _tc(*args: str) -> None:
    r = subprocess.run(args, capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise NetnsUnavailable(f"{' '.join(args)}: {r.stderr.strip() or r.returncode}")


@dataclass
class Link:
    ns: str
    host_if: str
    ns_if: str
    host_ip: str
    ns_ip: str

    @property
    def prefix(self) -> tuple[str, ...]:
        """Prepend to a command to run it inside the namespace."""
        return ("ip", "netns", "exec", self.ns)

    def blackhole(self) -> None:
        """Drop every packet both ways from now on, beyond this machine's own network stack.

        Dropping on this side's egress too (a tbf on our veth end) was no silent loss: TCP saw its own sends
        fail and gave up by itself after ~8 s ("Connection timed out"), whatever the keepalives. So the far
        side does all the dropping: its egress goes through a tbf that passes nothing, and its address is
        taken away, so what reaches it is for nobody and is dropped without a word (no forwarding, no ICMP).
        Our neighbour entry for it is pinned first, so nothing here notices a missing ARP answer either."""
        mac = _out("ip", "netns", "exec", self.ns, "cat", f"/sys/class/net/{self.ns_if}/address").strip()
        _ip("neigh", "replace", self.ns_ip, "lladdr", mac, "dev", self.host_if, "nud", "permanent")
        _tc(*self.prefix, "tc", "qdisc", "replace", "dev", self.ns_if, "root", "tbf", "rate", "1kbit",
            "burst", "1", "latency", "1ms")  # fmt: skip
        _ip("netns", "exec", self.ns, "ip", "addr", "del", f"{self.ns_ip}/30", "dev", self.ns_if)
        self._holed = True

    def restore(self) -> None:
        if not getattr(self, "_holed", False):
            return
        self._holed = False
        with contextlib.suppress(NetnsUnavailable):
            _ip("netns", "exec", self.ns, "ip", "addr", "add", f"{self.ns_ip}/30", "dev", self.ns_if)
        with contextlib.suppress(NetnsUnavailable):
            _tc(*self.prefix, "tc", "qdisc", "del", "dev", self.ns_if, "root")
        with contextlib.suppress(NetnsUnavailable):
            _ip("neigh", "del", self.ns_ip, "dev", self.host_if)


def why_not() -> str | None:
    """Why a namespace cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` (iproute2) is not installed"
    return None


@contextlib.contextmanager
def link() -> Iterator[Link]:
    """A fresh namespace and veth pair (10.213.N.1 here, .2 there); removed on exit."""
    reason = why_not()
    if reason:
        raise NetnsUnavailable(reason)
    tag = f"{os.getpid() % 10000}{random.randrange(100)}"
    n = random.randrange(1, 250)
    ln = Link(ns=f"lh{tag}", host_if=f"lhh{tag}", ns_if=f"lhn{tag}", host_ip=f"10.213.{n}.1", ns_ip=f"10.213.{n}.2")
    made_ns = made_if = False
    try:
        _ip("netns", "add", ln.ns)
        made_ns = True
        _ip("link", "add", ln.host_if, "type", "veth", "peer", "name", ln.ns_if)
        made_if = True
        _ip("link", "set", ln.ns_if, "netns", ln.ns)
        _ip("addr", "add", f"{ln.host_ip}/30", "dev", ln.host_if)
        _ip("link", "set", ln.host_if, "up")
        _ip("netns", "exec", ln.ns, "ip", "addr", "add", f"{ln.ns_ip}/30", "dev", ln.ns_if)
        _ip("netns", "exec", ln.ns, "ip", "link", "set", ln.ns_if, "up")
        _ip("netns", "exec", ln.ns, "ip", "link", "set", "lo", "up")
        yield ln
    finally:
        if made_if:
            with contextlib.suppress(NetnsUnavailable):
                _ip("link", "del", ln.host_if)  # takes its peer with it
        if made_ns:
            with contextlib.suppress(NetnsUnavailable):
                _ip("netns", "del", ln.ns)
