"""A network namespace behind a router namespace, for network partition tests.

The namespace is joined to the root one through a second namespace that routes between them
(two veth pairs), so packets between the two are lost in the middle of the network, as in a
real partition: the senders' TCP stacks see nothing (a drop on the sender's own interface
would be reported back to TCP, which then gives up on a connection within seconds).

A process started inside (:attr:`NetworkNamespace.wrap` before its argv) reaches loopback
services of the root namespace at their usual addresses and ports: a TCP forwarder inside the
namespace listens on each ``127.x:port`` and sends over the routed link to a forwarder in the
root namespace, which sends on to the real service. Only the forwarders' connections cross
the link, so :meth:`NetworkNamespace.partition` cuts the process off from every service at
once: the router drops every packet between the two (blackhole routes), nothing is refused
or reset, and connections just hang. :meth:`NetworkNamespace.heal` removes those routes;
hung connections then carry on (at their TCP's next retransmission).

Run as ``python -m tests.integration.distributed.netns LISTEN=TARGET ...`` (each a
``host:port``; port 0 in LISTEN picks a free one) this module is the forwarder: it prints
the ports it listens on as one JSON line, then forwards until its standard input closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[3]
SUBNET = ipaddress.IPv4Network("10.213.0.0/16")  # a private range, only ever on our own veths
_STARTUP = 15.0  # seconds a forwarder may take to listen


class NetnsError(RuntimeError):
    """A namespace, link or forwarder could not be set up."""


def unavailable() -> str | None:
    """Why network namespaces cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "ss"):
        if shutil.which(tool) is None:
            return f"`{tool}` (iproute2) is not installed"
    return None


def _ip(*args: str, namespace: str | None = None, check: bool = True) -> str:
    argv = ["ip", *(("-n", namespace) if namespace else ()), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise NetnsError(f"`{' '.join(argv)}` failed: {done.stderr.strip()}")
    return done.stdout


def _free_links(count: int) -> list[ipaddress.IPv4Network]:
    """``count`` random /30 networks in :data:`SUBNET` that no interface here uses."""
    used = [
        ipaddress.ip_interface(entry["local"] + "/" + str(entry["prefixlen"])).network
        for link in json.loads(_ip("-j", "-4", "addr", "show") or "[]")
        for entry in link.get("addr_info", [])
    ]
    found: list[ipaddress.IPv4Network] = []
    for _ in range(100):
        block = ipaddress.IPv4Network(
            (int(SUBNET.network_address) + 4 * secrets.randbelow(16384), 30)
        )
        if not any(block.overlaps(other) for other in [*used, *found]):
            found.append(block)
            if len(found) == count:
                return found
    raise NetnsError(f"no free /30 left in {SUBNET}")


class NetworkNamespace:
    """A namespace routed to the root one through a router namespace, with forwarders to
    ``targets``.

    Use as a context manager: on exit (also after a failure) the forwarders and every
    process still inside the namespaces are killed, and the namespaces and links removed.

    Args:
        targets: the ``(127.x address, port)`` services to reach from inside.
        logs: a directory for the forwarders' output.
    """

    def __init__(self, targets: Sequence[tuple[str, int]], *, logs: Path) -> None:
        token = secrets.token_hex(4)
        self.name = f"topicrawl-it-{token}"
        self.router = f"{self.name}-router"
        # Interface names have at most 15 characters.
        self.host_veth, self.router_host_veth = f"trp{token}a", f"trp{token}b"
        self.router_inner_veth, self.inner_veth = f"trp{token}c", f"trp{token}d"
        self.host_address = self.inner_address = ""
        self.partitioned = False
        self._targets = list(dict.fromkeys(targets))
        self._logs = logs
        self._forwarders: list[subprocess.Popen[bytes]] = []
        self._namespaces: list[str] = []

    @property
    def wrap(self) -> list[str]:
        """The argv prefix that runs a command inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def __enter__(self) -> NetworkNamespace:
        try:
            self._create()
            self._forward()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the link

    def partition(self) -> None:
        """Drop every packet between the namespace and the root one, until :meth:`heal`."""
        for address in (self.host_address, self.inner_address):
            _ip("route", "add", "blackhole", f"{address}/32", namespace=self.router)
        self.partitioned = True

    def heal(self) -> None:
        """Let packets through again."""
        for address in (self.host_address, self.inner_address):
            _ip("route", "del", "blackhole", f"{address}/32", namespace=self.router)
        self.partitioned = False

    def _create(self) -> None:
        outer, inner = _free_links(2)
        self.host_address, router_outer = (str(a) for a in outer.hosts())
        router_inner, self.inner_address = (str(a) for a in inner.hosts())
        for namespace in (self.name, self.router):
            _ip("netns", "add", namespace)
            self._namespaces.append(namespace)
            _ip("link", "set", "lo", "up", namespace=namespace)
        _ip("link", "add", self.host_veth, "type", "veth", "peer", "name", self.router_host_veth)
        _ip("link", "add", self.inner_veth, "type", "veth", "peer", "name", self.router_inner_veth)
        _ip("link", "set", self.inner_veth, "netns", self.name)
        _ip("link", "set", self.router_host_veth, "netns", self.router)
        _ip("link", "set", self.router_inner_veth, "netns", self.router)
        for device, address, namespace in (
            (self.host_veth, f"{self.host_address}/30", None),
            (self.router_host_veth, f"{router_outer}/30", self.router),
            (self.router_inner_veth, f"{router_inner}/30", self.router),
            (self.inner_veth, f"{self.inner_address}/30", self.name),
        ):
            _ip("addr", "add", address, "dev", device, namespace=namespace)
            _ip("link", "set", device, "up", namespace=namespace)
        _ip("route", "add", str(inner), "via", router_outer)
        _ip("route", "add", str(outer), "via", router_inner, namespace=self.name)
        forward = "echo 1 > /proc/sys/net/ipv4/ip_forward"
        subprocess.run(
            ["ip", "netns", "exec", self.router, "sh", "-c", forward],
            check=True,
            capture_output=True,
            timeout=30,
        )

    # -- the forwarders

    def _forward(self) -> None:
        outer = [f"{self.host_address}:0={host}:{port}" for host, port in self._targets]
        ports = self._start_forwarder("forward-root", [], outer)
        inner = [
            f"{host}:{port}={self.host_address}:{relay}"
            for (host, port), relay in zip(self._targets, ports, strict=True)
        ]
        self._start_forwarder("forward-netns", self.wrap, inner)

    def _start_forwarder(self, name: str, wrap: list[str], rules: list[str]) -> list[int]:
        argv = [*wrap, sys.executable, "-m", "tests.integration.distributed.netns", *rules]
        with (self._logs / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self._forwarders.append(proc)
        assert proc.stdout is not None
        line = _read_line(proc.stdout, _STARTUP)
        if not line:
            raise NetnsError(
                f"{name} did not start (exit {proc.poll()}): "
                + (self._logs / f"{name}.log").read_text(errors="replace")[-2000:]
            )
        ports: list[int] = json.loads(line)["ports"]
        return ports

    def client_ports(self, target: tuple[str, int]) -> set[int]:
        """The local ports of the connections carrying traffic from inside to ``target``, as
        the service sees them (e.g. ``client_port`` in PostgreSQL's ``pg_stat_activity``)."""
        host, port = target
        relay = self._forwarders[0].pid
        listing = subprocess.run(
            ["ss", "-Htnp", "state", "established", "dst", f"{host}:{port}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return {
            int(line.split()[2].rsplit(":", 1)[1])
            for line in listing.splitlines()
            if f"pid={relay}," in line
        }

    # -- teardown

    def close(self) -> None:
        """Kill the forwarders and whatever runs inside, remove the namespaces and links.

        Raises:
            NetnsError: something could not be removed (after trying everything else).
        """
        for proc in self._forwarders:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
        self._forwarders.clear()
        left: list[str] = []
        while self._namespaces:
            namespace = self._namespaces.pop()
            left += self._kill_inside(namespace)
            _ip("netns", "del", namespace, check=False)
        # A pair goes with its namespace (once nothing holds it); remove any left here.
        links = (self.host_veth, self.router_host_veth, self.router_inner_veth, self.inner_veth)
        deadline = time.monotonic() + 10
        while here := [link for link in links if Path("/sys/class/net", link).exists()]:
            if time.monotonic() > deadline:
                for link in here:
                    _ip("link", "del", link, check=False)
                left += [f"link {link}" for link in here if Path("/sys/class/net", link).exists()]
                break
            time.sleep(0.05)
        if left:
            raise NetnsError(f"could not remove {', '.join(left)} of {self.name}")

    @staticmethod
    def _kill_inside(namespace: str) -> list[str]:
        """Kill every process still in ``namespace`` (all of them started by this test); the
        ones that would not die."""
        deadline = time.monotonic() + 10
        while pids := _ip("netns", "pids", namespace, check=False).split():
            if time.monotonic() > deadline:
                return [f"process {pid}" for pid in pids]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.05)
        return []


def _read_line(stream: IO[bytes], timeout: float) -> bytes:
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else b""


# -- the forwarder process


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


async def _relay(
    target: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(*target)
    except OSError:
        writer.close()
        return
    for end in (writer, upstream_writer):
        _keepalive(end.get_extra_info("socket"))
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


def _keepalive(sock: socket.socket) -> None:
    """Probe a connection idle for a minute (longer than any partition a test makes).

    A connection the far side closed during a partition is otherwise never noticed: the
    closing side's kernel gives up resending its FIN within the partition (an orphaned socket
    with tcp_orphan_retries 0 retries once or so) and sends no reset, so after the heal this
    side waits forever, and so does the process behind it (one whose database session the
    server ended mid-partition waited for the answer to its write until the test gave up).
    A probe after the heal is answered with a reset, and the connection is closed on.
    """
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    sink.close()


async def _serve(rules: list[str]) -> None:
    servers = []
    for rule in rules:
        listen, _, target = rule.partition("=")
        host, port = _address(listen)
        relay = functools.partial(_relay, _address(target))
        servers.append(await asyncio.start_server(relay, host, port, reuse_address=True))
    ports = [server.sockets[0].getsockname()[1] for server in servers]
    print(json.dumps({"ports": ports}), flush=True)
    # Run until the test closes our standard input (or dies): no forwarder outlives it.
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    threading.Thread(
        target=lambda: (sys.stdin.buffer.read(), loop.call_soon_threadsafe(done.set)),
        daemon=True,
    ).start()
    await done.wait()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1:]))
