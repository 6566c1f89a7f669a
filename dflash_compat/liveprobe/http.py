"""A small HTTP client for `probe` (standard library only): one server, a hard deadline per request.

Traffic goes only to the host and port of the URL the user gave: http.client never reads proxy
settings from the environment and never follows redirects. Every failure (refused, timed out, not
JSON) is one ServerError line (exit 2).
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit

from dflash_compat.exceptions import DFlashCompatError
from dflash_compat.files.safe_read import parse_json

__all__ = ["ServerError", "Endpoint", "Response", "Client", "parse_url", "MAX_BODY_BYTES"]

MAX_BODY_BYTES = 64 * 1024 * 1024  # a /metrics page or a completion is far smaller


class ServerError(DFlashCompatError):
    """The server could not be reached, did not answer in time, or answered something unreadable."""


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    base_path: str  # "" or "/prefix" (no trailing slash)

    def url(self, path: str = "") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}{path}"


MAX_URL_CHARS = 2048


def parse_url(url: str) -> Endpoint:
    """`http://host:port[/prefix]`; a trailing `/v1` is the API root's parent, so it is dropped.
    Checked whole before any connection: valid Unicode, no spaces or control characters, at most
    MAX_URL_CHARS, a host that IDNA can encode (labels of 1-63 characters, 253 in all) or an IP
    address; the endpoint holds the ASCII (punycode) host."""
    from dflash_compat.emitters._safe import printable
    from dflash_compat.inputs import check_text

    check_text(url, "URL")
    url = url.strip()
    shown = printable(url if len(url) <= 80 else url[:80] + "...")
    if len(url) > MAX_URL_CHARS:
        raise ServerError(f"URL {shown}: {len(url)} characters, more than the {MAX_URL_CHARS} a URL may have")
    bad = next((c for c in url if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise ServerError(f"URL {shown}: holds a space or control character (U+{ord(bad):04X})")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ServerError(f"URL {shown}: not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServerError(f"{url}: expected an http:// or https:// URL with a host, like http://127.0.0.1:8000")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ServerError(f"{url}: give the server's root URL, without query, fragment or credentials")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    host = _ascii_host(parts.hostname, shown)
    return Endpoint(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path)


def _ascii_host(host: str, shown: str) -> str:
    """An IP address as it is, a host name as IDNA (punycode) ASCII; a name IDNA cannot encode (a label
    over 63 characters, an empty label, a name over 253) is one ServerError line."""
    import ipaddress

    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ServerError(f"URL {shown}: the host is not a valid host name ({exc})") from None
    if len(ascii_host) > 253 or not all(part for part in ascii_host.rstrip(".").split(".")):
        raise ServerError(f"URL {shown}: the host is not a valid host name")
    return ascii_host


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    url: str
    seconds: float

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The answer as JSON, parsed with the same bounds as every file we read (nesting, integer
        width): a hostile server's answer is one ServerError line, never a RecursionError."""
        try:
            return parse_json(self.body.decode("utf-8"), error=ServerError)
        except (ServerError, UnicodeDecodeError):
            head = " ".join(self.text().split())[:60]
            raise ServerError(f"{self.url}: the answer is not JSON (HTTP {self.status}, starts {head!r})") from None


class Client:
    """Requests to one server; each must complete (headers and body) within `timeout` seconds."""

    def __init__(self, url: str, timeout: float) -> None:
        self.endpoint = parse_url(url)
        self.timeout = float(timeout)

    def _connection(self) -> http.client.HTTPConnection:
        e = self.endpoint
        if e.scheme == "https":
            return http.client.HTTPSConnection(e.host, e.port, timeout=self.timeout)
        return http.client.HTTPConnection(e.host, e.port, timeout=self.timeout)

    def request(self, method: str, path: str, payload: Optional[dict] = None) -> Response:
        url = self.endpoint.url(path)
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {"Accept": "application/json, text/plain", "Connection": "close"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        start = time.monotonic()
        conn = self._connection()
        try:
            conn.request(method, self.endpoint.base_path + path, body=body, headers=headers)
            resp = conn.getresponse()
            data = self._read(conn, resp, start, url)
            return Response(resp.status, resp.getheader("Content-Type") or "", data, url, time.monotonic() - start)
        except TimeoutError:
            raise ServerError(f"{url}: timed out: no complete answer within {self.timeout:g} s") from None
        except ConnectionRefusedError:
            raise ServerError(f"{url}: connection refused (is the server running on that port?)") from None
        except (http.client.HTTPException, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            raise ServerError(f"{url}: request failed ({reason})") from None
        finally:
            conn.close()

    def _read(self, conn, resp, start: float, url: str) -> bytes:
        """The body, in chunks, against the request's deadline (a server that trickles bytes forever
        still times out) and a size cap."""
        chunks, size = [], 0
        while True:
            left = self.timeout - (time.monotonic() - start)
            if left <= 0:
                raise TimeoutError()
            if conn.sock is not None:
                conn.sock.settimeout(left)
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise ServerError(f"{url}: the answer is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")
            chunks.append(chunk)

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post_json(self, path: str, payload: dict) -> Any:
        """POST a JSON body; a non-2xx answer is a ServerError carrying the server's own message."""
        resp = self.request("POST", path, payload)
        if not resp.ok:
            raise ServerError(f"{resp.url}: HTTP {resp.status}: {_error_text(resp)}")
        return resp.json()


def _error_text(resp: Response) -> str:
    """The server's error message, on one short line (OpenAI-style {"error": {"message"}} or the text)."""
    try:
        data = parse_json(resp.body.decode("utf-8"), error=ServerError)
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message", err) if isinstance(err, dict) else err
        text = msg if isinstance(msg, str) else json.dumps(msg)
    except (ServerError, UnicodeDecodeError):
        text = resp.text()
    text = " ".join(text.split())
    return text[:200] + ("..." if len(text) > 200 else "")
