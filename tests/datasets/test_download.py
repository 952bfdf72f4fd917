"""Downloads against a local HTTP server that serves real data files.

The server runs on 127.0.0.1 with an ephemeral port and can 404, drop a connection
halfway, or ignore Range requests, per path.
"""

from __future__ import annotations

import re
import shutil
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from perceptron_lab.datasets import download_file, fetch_dataset, get_entry, load_dataset, sha256_file
from perceptron_lab.datasets import registry
from perceptron_lab.errors import DatasetError

LETTER = ("letter", "letter-recognition.data")
MNIST_LABELS = ("mnist", "train-labels-idx1-ubyte.gz")
MNIST_TEST_LABELS = ("mnist", "t10k-labels-idx1-ubyte.gz")


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        srv = self.server
        rng = self.headers.get("Range")
        with srv.lock:
            srv.requests.append((self.path, rng))
            srv.counts[self.path] = count = srv.counts.get(self.path, 0) + 1
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        modes = srv.modes.get(self.path, ())

        start = 0
        if rng and "ignore-range" not in modes:
            match = re.fullmatch(r"bytes=(\d+)-", rng)
            start = int(match.group(1))
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        payload = body[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if "drop-first" in modes and count == 1:
            # Announce the full length, send half, then hang up.
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, tuple[str, ...]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def serve(self, data_dir: Path, subfolder: str, name: str, prefix: str = "/data") -> str:
        """Serve a real file at ``<prefix>/<subfolder>/<name>``; return its URL."""
        path = f"{prefix}/{subfolder}/{name}"
        self.files[path] = (data_dir / subfolder / name).read_bytes()
        return self.base + path


@pytest.fixture
def server():
    srv = _Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def _sha(dataset: str, name: str) -> str:
    """The registered (canonical) digest of one file of ``dataset``."""
    entry = get_entry(dataset)
    return entry.files[entry.file_names.index(name)].sha256[0]


FAST = dict(progress=False, retries=3, backoff=0, timeout=10)


# --------------------------------------------------------------------------- download_file


def test_successful_download_is_verified(server, data_dir, tmp_path):
    url = server.serve(data_dir, *LETTER)
    dest = tmp_path / "letter" / LETTER[1]
    expected = _sha(*LETTER)
    assert download_file([url], dest, expected, **FAST) == dest
    assert sha256_file(dest) == expected
    assert dest.read_bytes() == (data_dir / "letter" / LETTER[1]).read_bytes()
    assert sorted(p.name for p in dest.parent.iterdir()) == [LETTER[1]]  # no .part left


def test_present_file_with_good_digest_is_skipped(server, data_dir, tmp_path):
    url = server.serve(data_dir, *MNIST_LABELS)
    dest = tmp_path / MNIST_LABELS[1]
    shutil.copy(data_dir / "mnist" / MNIST_LABELS[1], dest)
    download_file([url], dest, _sha(*MNIST_LABELS), **FAST)
    assert server.requests == []
    download_file([url], dest, _sha(*MNIST_LABELS), force=True, **FAST)
    assert len(server.requests) == 1


def test_checksum_mismatch_is_refused_and_nothing_left(server, data_dir, tmp_path):
    url = server.serve(data_dir, *MNIST_LABELS)
    dest = tmp_path / "mnist" / MNIST_LABELS[1]
    wrong = _sha(*MNIST_TEST_LABELS)
    actual = _sha(*MNIST_LABELS)
    with pytest.raises(DatasetError) as info:
        download_file([url], dest, wrong, **FAST)
    message = str(info.value)
    assert MNIST_LABELS[1] in message
    assert f"expected sha256 {wrong}" in message and f"got {actual}" in message
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []
    assert len(server.requests) == 1  # a bad digest is not retried


def test_checksum_mismatch_keeps_previous_file(server, data_dir, tmp_path):
    url = server.serve(data_dir, *MNIST_LABELS)
    dest = tmp_path / MNIST_LABELS[1]
    dest.write_bytes(b"older copy")
    with pytest.raises(DatasetError, match="checksum mismatch"):
        download_file([url], dest, "0" * 64, **FAST)
    assert dest.read_bytes() == b"older copy"
    assert sorted(p.name for p in tmp_path.iterdir()) == [MNIST_LABELS[1]]


def test_interrupted_transfer_is_resumed(server, data_dir, tmp_path):
    url = server.serve(data_dir, *LETTER)
    path = url.removeprefix(server.base)
    server.modes[path] = ("drop-first",)
    size = len(server.files[path])
    dest = tmp_path / LETTER[1]

    download_file([url], dest, _sha(*LETTER), **FAST)

    assert sha256_file(dest) == _sha(*LETTER)
    assert server.requests == [(path, None), (path, f"bytes={size // 2}-")]
    assert not dest.with_name(dest.name + ".part").exists()


def test_partial_file_from_earlier_run_is_resumed(server, data_dir, tmp_path):
    url = server.serve(data_dir, *LETTER)
    path = url.removeprefix(server.base)
    body = server.files[path]
    dest = tmp_path / LETTER[1]
    dest.with_name(dest.name + ".part").write_bytes(body[:100000])

    download_file([url], dest, _sha(*LETTER), **FAST)

    assert dest.read_bytes() == body
    assert server.requests == [(path, "bytes=100000-")]


def test_server_without_range_support_restarts(server, data_dir, tmp_path):
    url = server.serve(data_dir, *LETTER)
    path = url.removeprefix(server.base)
    server.modes[path] = ("ignore-range",)
    dest = tmp_path / LETTER[1]
    dest.with_name(dest.name + ".part").write_bytes(b"x" * 5000)

    download_file([url], dest, _sha(*LETTER), **FAST)

    assert dest.read_bytes() == server.files[path]
    assert len(server.requests) == 1


def test_stale_partial_file_is_discarded(server, data_dir, tmp_path):
    # Leftover bytes that do not belong to this file: the resumed result fails the
    # checksum, so the download starts again from zero and succeeds.
    url = server.serve(data_dir, *LETTER)
    path = url.removeprefix(server.base)
    dest = tmp_path / LETTER[1]
    dest.with_name(dest.name + ".part").write_bytes(b"garbage" * 1000)

    download_file([url], dest, _sha(*LETTER), **FAST)

    assert dest.read_bytes() == server.files[path]
    assert server.requests == [(path, "bytes=7000-"), (path, None)]


def test_partial_file_already_complete(server, data_dir, tmp_path):
    url = server.serve(data_dir, *MNIST_LABELS)
    path = url.removeprefix(server.base)
    dest = tmp_path / MNIST_LABELS[1]
    dest.with_name(dest.name + ".part").write_bytes(server.files[path])
    download_file([url], dest, _sha(*MNIST_LABELS), **FAST)  # server answers 416
    assert dest.read_bytes() == server.files[path]


def test_mirror_fallback_after_404(server, data_dir, tmp_path):
    good = server.serve(data_dir, *MNIST_LABELS)
    bad = server.base + "/gone/" + MNIST_LABELS[1]
    dest = tmp_path / MNIST_LABELS[1]

    download_file([bad, good], dest, _sha(*MNIST_LABELS), **FAST)

    assert sha256_file(dest) == _sha(*MNIST_LABELS)
    assert [p for p, _ in server.requests] == ["/gone/" + MNIST_LABELS[1], good.removeprefix(server.base)]


def test_all_urls_failing_names_each_url(server, tmp_path):
    urls = [server.base + "/a/f.gz", server.base + "/b/f.gz"]
    dest = tmp_path / "f.gz"
    with pytest.raises(DatasetError) as info:
        download_file(urls, dest, "0" * 64, **FAST)
    message = str(info.value)
    assert "could not download f.gz" in message
    assert f"{urls[0]}: HTTP 404" in message and f"{urls[1]}: HTTP 404" in message
    assert len(server.requests) == 2  # 404s are not retried in later rounds
    assert not dest.exists()


def test_unreachable_host_is_retried_then_reported(tmp_path):
    with _Server() as srv:  # bind a port, then close it so connections are refused
        url = srv.base + "/f.gz"
    with pytest.raises(DatasetError, match=r"(?s)could not download f\.gz.*cannot connect: .*cannot connect: "):
        download_file([url], tmp_path / "f.gz", "0" * 64, progress=False, retries=2, backoff=0, timeout=2)


# --------------------------------------------------------------------------- fetch_dataset


def test_fetch_dataset_from_mirror_then_load(server, data_dir, tmp_path):
    for name in get_entry("mnist").file_names:
        server.serve(data_dir, "mnist", name, prefix="/mirror")
    root = tmp_path / "root"

    results = fetch_dataset("mnist", root, progress=False, mirrors=[server.base + "/mirror/"],
                            canonical=False, backoff=0)
    assert [r.action for r in results] == ["downloaded"] * 4
    assert [r.file for r in results] == [root / "mnist" / n for n in get_entry("mnist").file_names]
    ds = load_dataset("mnist", root, verify=True)
    assert ds.X_test.shape == (10000, 784)
    assert np.bincount(ds.y_test)[1] == 1135

    n_requests = len(server.requests)
    again = fetch_dataset("mnist", root, progress=False, mirrors=[server.base + "/mirror"], canonical=False)
    assert [r.action for r in again] == ["present"] * 4
    assert len(server.requests) == n_requests


def test_fetch_replaces_corrupt_copy(server, data_dir, tmp_path):
    server.serve(data_dir, *LETTER, prefix="")
    (tmp_path / "letter").mkdir()
    dest = tmp_path / "letter" / LETTER[1]
    dest.write_text("A,1,2\n")
    (result,) = fetch_dataset("letter", tmp_path, progress=False, mirrors=[server.base], canonical=False)
    assert result.action == "downloaded"
    assert sha256_file(dest) == _sha(*LETTER)


def test_fetch_uses_registry_urls(server, data_dir, tmp_path, monkeypatch):
    good = server.serve(data_dir, *LETTER)
    entry = get_entry("letter")
    patched = replace(entry, files=(replace(entry.files[0], urls=(server.base + "/404", good)),))
    monkeypatch.setitem(registry._REGISTRY, "letter", patched)

    (result,) = fetch_dataset("letter", tmp_path, progress=False, backoff=0)
    assert result.file == tmp_path / "letter" / LETTER[1]
    ds = load_dataset("letter", tmp_path, verify=True)
    assert ds.X_train.shape == (16000, 16)


def test_fetch_mismatch_names_dataset_and_file(server, data_dir, tmp_path, monkeypatch):
    # Serve the wrong bytes under the expected name.
    server.files["/uci/bupa.data"] = (data_dir / "uci" / "promoters.data").read_bytes()
    with pytest.raises(DatasetError) as info:
        fetch_dataset("bupa", tmp_path, progress=False, mirrors=[server.base], canonical=False)
    message = str(info.value)
    assert message.startswith("bupa: checksum mismatch for bupa.data")
    assert get_entry("bupa").files[0].sha256[0] in message
    assert "no published digest" in message  # this file's digest is marked unconfirmed
    assert list((tmp_path / "uci").iterdir()) == []


def test_fetch_into_unwritable_root(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(DatasetError, match=r"cannot create folder .*PLAB_DATA"):
        fetch_dataset("letter", blocker, progress=False, mirrors=["http://127.0.0.1:9"], canonical=False)
