"""Checksummed, resumable file downloads using only the standard library.

A download streams into ``<dest>.part`` next to the destination, resumes an existing
``.part`` with an HTTP ``Range`` request when the server honours it, tries every mirror
URL in turn (several rounds, with exponential backoff between rounds), and verifies the
sha256 before moving the file into place with :func:`os.replace`. A file therefore
appears under its final name only once it is complete and has the expected digest.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterable, Sequence

from perceptron_lab.errors import DatasetError

__all__ = ["sha256_file", "download_file", "USER_AGENT"]

USER_AGENT = "perceptron_lab-data-fetch/0.1 (+python-urllib)"
CHUNK_SIZE = 1 << 16

# HTTP statuses after which the same URL is not tried again in later rounds.
_PERMANENT_HTTP = {400, 401, 403, 404, 405, 410, 451}
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            h.update(block)
    return h.hexdigest()


class _TransientError(Exception):
    """A transfer failed in a way that may succeed on a later attempt."""


class _PermanentError(Exception):
    """This URL will not work (e.g. HTTP 404); do not try it again."""


def _as_digests(sha256: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(sha256, str):
        return (sha256.lower(),)
    return tuple(d.lower() for d in sha256)


def _progress_bar(total: int | None, initial: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a declared dependency
        return None
    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        leave=False,
        file=sys.stderr,
    )


def _transfer(url: str, part: Path, timeout: float, progress: bool, desc: str) -> bool:
    """Fetch ``url`` into ``part``, appending to it when the server honours a Range request.

    Returns when the server has sent everything it announced: True if existing bytes of
    ``part`` were kept (a resumed transfer), False if ``part`` now holds a fresh copy.
    Raises ``_TransientError`` for failures worth retrying and ``_PermanentError`` for
    ones that are not.
    """
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and offset:
            # Our partial file is at least as long as the resource: it is either complete
            # (the digest check decides) or stale. Let the caller check it.
            return True
        if exc.code in _PERMANENT_HTTP:
            raise _PermanentError(f"HTTP {exc.code} {exc.reason}") from None
        raise _TransientError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise _TransientError(f"cannot connect: {exc.reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise _TransientError(f"{type(exc).__name__}: {exc}") from None

    with response:
        status = getattr(response, "status", None) or 200
        mode = "wb"
        if offset and status == 206:
            match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if match and int(match.group(1)) == offset:
                mode = "ab"
            else:
                raise _TransientError(
                    f"server answered the range request with an unexpected Content-Range "
                    f"{response.headers.get('Content-Range')!r}"
                )
        elif status != 200 and status != 206:
            raise _TransientError(f"unexpected HTTP status {status}")
        if mode == "wb":
            offset = 0  # no resume: the server sends the whole file

        length = response.headers.get("Content-Length")
        expected = int(length) if length is not None and length.isdigit() else None
        total = offset + expected if expected is not None else None
        received = 0
        bar = _progress_bar(total, offset, desc, progress)
        try:
            with open(part, mode) as out:
                while True:
                    try:
                        block = response.read(CHUNK_SIZE)
                    except (OSError, http.client.HTTPException) as exc:
                        raise _TransientError(
                            f"connection lost after {offset + received} bytes "
                            f"({type(exc).__name__}: {exc})"
                        ) from None
                    if not block:
                        break
                    out.write(block)
                    received += len(block)
                    if bar is not None:
                        bar.update(len(block))
        finally:
            if bar is not None:
                bar.close()
        if expected is not None and received < expected:
            raise _TransientError(
                f"connection closed after {offset + received} of {offset + expected} bytes"
            )
        return mode == "ab"


def download_file(
    urls: str | Sequence[str],
    dest: str | Path,
    sha256: str | Iterable[str],
    *,
    progress: bool = True,
    retries: int = 3,
    backoff: float = 1.0,
    timeout: float = 60.0,
    force: bool = False,
) -> Path:
    """Download ``dest`` from the first working URL and check its sha256.

    ``urls`` are tried in order; a URL that answers 4xx (e.g. 404) is dropped, other
    failures (timeouts, resets, 5xx, truncated transfers) are retried in up to
    ``retries`` rounds over the remaining URLs, sleeping ``backoff * 2**round`` seconds
    between rounds. An interrupted transfer continues from where it stopped.
    ``sha256`` may list several accepted digests. An existing ``dest`` whose digest
    is accepted is left alone unless ``force`` is set.

    The progress bar is shown only when ``progress`` is true and stderr is a terminal.
    Raises :class:`DatasetError` if every URL fails, or if the downloaded bytes have
    the wrong digest (the partial file is then deleted and ``dest`` is untouched).
    """
    dest = Path(dest)
    url_list = [urls] if isinstance(urls, str) else list(urls)
    digests = _as_digests(sha256)
    if not url_list:
        raise DatasetError(f"no download URL is known for {dest.name}")
    if not digests:
        raise DatasetError(f"no sha256 digest is known for {dest.name}; refusing to download it")

    if not force and dest.is_file() and sha256_file(dest) in digests:
        return dest

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(
            f"cannot create folder {dest.parent}: {exc.strerror or exc}. Choose a writable data "
            f"folder with PLAB_DATA=/path or --data-dir /path."
        ) from None
    part = dest.with_name(dest.name + ".part")
    show = bool(progress) and sys.stderr.isatty()

    failures: list[str] = []
    live = list(url_list)
    for attempt in range(max(1, retries)):
        if attempt and backoff > 0:
            time.sleep(backoff * 2 ** (attempt - 1))
        for url in list(live):
            for _ in range(2):  # a second pass only after discarding a stale partial file
                try:
                    resumed = _transfer(url, part, timeout, show, dest.name)
                except _PermanentError as exc:
                    failures.append(f"{url}: {exc}")
                    live.remove(url)
                    break
                except _TransientError as exc:
                    failures.append(f"{url}: {exc}")
                    break
                except socket.timeout:
                    failures.append(f"{url}: timed out after {timeout:g} s")
                    break
                except OSError as exc:  # local write errors: disk full, permissions
                    raise DatasetError(
                        f"cannot write {part}: {exc.strerror or exc}. Choose a writable data "
                        f"folder with PLAB_DATA=/path or --data-dir /path."
                    ) from None
                actual = sha256_file(part)
                if actual in digests:
                    os.replace(part, dest)
                    return dest
                size = part.stat().st_size
                part.unlink(missing_ok=True)
                if resumed:
                    # The kept bytes came from an older, different or broken transfer:
                    # start again from zero rather than give up.
                    failures.append(f"{url}: resumed file failed its checksum; restarting")
                    continue
                raise DatasetError(
                    f"checksum mismatch for {dest.name} downloaded from {url}: "
                    f"expected sha256 {' or '.join(digests)}, got {actual} ({size} bytes). "
                    f"The download was discarded and {dest} was not changed."
                )
        if not live:
            break

    tried = "\n  ".join(failures[-2 * len(url_list):]) if failures else "(no attempt made)"
    raise DatasetError(
        f"could not download {dest.name}; tried:\n  {tried}\n"
        f"Check the network connection and run the command again (partial downloads are "
        f"resumed), or copy the file by hand to {dest}."
    )

