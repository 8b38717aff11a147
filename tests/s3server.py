"""A real S3 server for tests and benchmarks: moto's server mode on 127.0.0.1, and a TCP proxy that
counts requests and can drop connections mid-response.

    with S3Server() as s3:                              # moto on a free port of 127.0.0.1, bucket created
        url = s3.upload_dir(local_dir, "data-bin")      # -> "s3://tokenmill-test/data-bin"
        data = tokenmill.open(url, storage_options=s3.storage_options)
        with FlakyProxy(s3.endpoint_url) as proxy:      # the same server through a proxy
            proxy.fail_next(2, after_bytes=1000)        # the next 2 responses are cut after 1000 bytes
            tokenmill.open(url, storage_options=s3.options_via(proxy))

The server only ever listens on 127.0.0.1. Credentials are dummies, set in the environment while the
server runs (and given in ``storage_options``), so nothing reaches a real account. ``s3_server`` is
a pytest fixture (one server per test module).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BUCKET = "tokenmill-test"
HOST = "127.0.0.1"
_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "testing", "AWS_SECURITY_TOKEN": "testing"}
_CLEARED = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
_REQUEST_LINE = re.compile(rb"^([A-Z]+) (\S+) HTTP/1\.[01]$")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class S3Server:
    """moto's S3 server on 127.0.0.1 with one bucket. ``process=True`` runs it as its own process
    (``python -m moto.server``: what a benchmark should measure against), else in a thread (fast start)."""

    def __init__(self, bucket: str = BUCKET, *, process: bool = False) -> None:
        self.bucket = bucket
        self.process = process
        self.port = 0
        self._server: Any = None
        self._child: subprocess.Popen[bytes] | None = None
        self._saved_env: dict[str, str | None] = {}

    @property
    def endpoint_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options for this server (dummy credentials, its endpoint)."""
        return self.options_at(self.endpoint_url)

    def options_at(self, endpoint_url: str, **extra: Any) -> dict[str, Any]:
        """s3fs options that talk to ``endpoint_url`` (the server, or a proxy in front of it)."""
        return {"key": _ENV["AWS_ACCESS_KEY_ID"], "secret": _ENV["AWS_SECRET_ACCESS_KEY"],
                "client_kwargs": {"endpoint_url": endpoint_url, "region_name": _ENV["AWS_DEFAULT_REGION"]}, **extra}

    def options_via(self, proxy: FlakyProxy, *, backend_retries: bool = False) -> dict[str, Any]:
        """Options through ``proxy``; without ``backend_retries`` botocore tries each request once (s3fs's
        own retries are a class attribute: ``monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)``)."""
        if backend_retries:
            return self.options_at(proxy.endpoint_url)
        return self.options_at(proxy.endpoint_url,
                               config_kwargs={"retries": {"total_max_attempts": 1, "mode": "standard"}})

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, aws_access_key_id=_ENV["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=_ENV["AWS_SECRET_ACCESS_KEY"], region_name=_ENV["AWS_DEFAULT_REGION"])

    def __enter__(self) -> S3Server:
        for name in (*_ENV, *_CLEARED):
            self._saved_env[name] = os.environ.get(name)
        os.environ.update(_ENV)
        for name in _CLEARED:
            os.environ.pop(name, None)
        try:
            self._start()
            self.client().create_bucket(Bucket=self.bucket)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        if self.process:
            self.port = free_port()
            self._child = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection((HOST, self.port), timeout=0.5).close()
                    return
                except OSError:
                    if self._child.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"moto server did not start on {self.endpoint_url}") from None
                    time.sleep(0.1)
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
        self._server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
        self._server.start()
        host, self.port = self._server.get_host_and_port()
        assert host == HOST

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._child is not None:
            self._child.terminate()
            self._child.wait(timeout=30)
            self._child = None
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    # ---------------------------------------------------------------- objects
    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key.strip('/')}"

    def upload_dir(self, local: str | os.PathLike[str], prefix: str, *, skip_hidden: bool = True) -> str:
        """Put every file under ``local`` at ``prefix/`` (hidden work folders left out); the directory's URL."""
        client = self.client()
        root = Path(local)
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if path.is_file() and not (skip_hidden and any(part.startswith(".") for part in relative.parts)):
                client.upload_file(str(path), self.bucket, f"{prefix.strip('/')}/{relative.as_posix()}")
        return self.url(prefix)

    def put(self, key: str, body: bytes) -> None:
        self.client().put_object(Bucket=self.bucket, Key=key, Body=body)

    def get(self, key: str) -> bytes:
        return self.client().get_object(Bucket=self.bucket, Key=key)["Body"].read()


class _Connection:
    """One proxied connection: response bytes forwarded so far, and where to cut it (absolute byte)."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client, self.server = client, server
        self.sent = 0
        self.limit: int | None = None


class FlakyProxy:
    """A TCP proxy on 127.0.0.1 in front of ``endpoint_url`` that logs each HTTP request (method, path)
    and, when told, cuts a response after some bytes (the connection is reset, as a dropped link looks
    to the client): for the next ``n`` requests (:meth:`fail_next`) or every one (:meth:`kill`), only
    those whose path contains ``path_contains`` when it is given."""

    def __init__(self, endpoint_url: str) -> None:
        match = re.fullmatch(r"http://([^:/]+):(\d+)/?", endpoint_url)
        if match is None:
            raise ValueError(f"expected http://host:port, got {endpoint_url}")
        self.upstream = (match.group(1), int(match.group(2)))
        self.requests: list[tuple[str, str]] = []
        self.cuts = 0
        self._fail_left = 0
        self._always = False
        self._after = 0
        self._match = ""
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.bind((HOST, 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="flaky-proxy", daemon=True)

    @property
    def endpoint_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def fail_next(self, requests: int, after_bytes: int = 0, path_contains: str = "") -> None:
        """Cut the response of each of the next ``requests`` requests after ``after_bytes`` bytes."""
        with self._lock:
            self._fail_left, self._after, self._match, self._always = requests, after_bytes, path_contains, False

    def kill(self, after_bytes: int = 0, path_contains: str = "") -> None:
        """Cut every response from now on after ``after_bytes`` bytes."""
        with self._lock:
            self._always, self._after, self._match = True, after_bytes, path_contains

    def heal(self) -> None:
        with self._lock:
            self._fail_left, self._always = 0, False

    def paths(self, method: str = "GET") -> list[str]:
        """Paths requested with ``method``, in order (query strings dropped)."""
        with self._lock:
            return [path.split("?")[0] for m, path in self.requests if m == method]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.cuts = 0

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        _close(self._listener)
        with self._lock:
            for sock in list(self._open):
                _close(sock)
        self._thread.join(timeout=5)

    # ---------------------------------------------------------------- plumbing
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                _close(client)
                continue
            conn = _Connection(client, server)
            with self._lock:
                self._open.update((client, server))
            threading.Thread(target=self._requests_pump, args=(conn,), daemon=True).start()
            threading.Thread(target=self._response_pump, args=(conn,), daemon=True).start()

    def _on_request(self, conn: _Connection, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))
            if self._match not in path:
                return
            if self._always or self._fail_left > 0:
                self._fail_left = max(0, self._fail_left - 1)
                conn.limit = conn.sent + self._after  # the previous response is complete: counts are exact

    def _requests_pump(self, conn: _Connection) -> None:
        buffer = bytearray()
        body_left = 0
        try:
            while data := conn.client.recv(1 << 16):
                buffer += data
                while True:  # parse request heads (bodies skipped by Content-Length)
                    if body_left:
                        taken = min(body_left, len(buffer))
                        del buffer[:taken]
                        body_left -= taken
                        if body_left:
                            break
                    end = buffer.find(b"\r\n\r\n")
                    if end < 0:
                        break
                    head = bytes(buffer[:end]).split(b"\r\n")
                    del buffer[: end + 4]
                    match = _REQUEST_LINE.match(head[0])
                    if match:
                        self._on_request(conn, match.group(1).decode(), match.group(2).decode())
                    for line in head[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            body_left = int(value.strip() or 0)
                conn.server.sendall(data)  # after parsing: a cut is armed before the response can start
        except OSError:
            pass
        finally:
            self._drop(conn)

    def _response_pump(self, conn: _Connection) -> None:
        try:
            while data := conn.server.recv(1 << 16):
                with self._lock:
                    room = len(data) if conn.limit is None else max(0, conn.limit - conn.sent)
                    forward = data[:room]
                    conn.sent += len(forward)
                    cut = len(forward) < len(data)
                    self.cuts += cut
                conn.client.sendall(forward)
                if cut:  # reset mid-response, as a dropped connection looks to the client
                    conn.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    break
        except OSError:
            pass
        finally:
            self._drop(conn)

    def _drop(self, conn: _Connection) -> None:
        with self._lock:
            self._open.discard(conn.client)
            self._open.discard(conn.server)
        _close(conn.client)
        _close(conn.server)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    """One moto S3 server (thread, 127.0.0.1) per test module, with the bucket ``tokenmill-test``."""
    with S3Server() as server:
        yield server
