"""Tests for datasets.py: real-file loaders on files written here, downloads from
file:// and a loopback HTTP server, the synthetic generators checked against
their definitions written out independently, and every argument of every public
function against NaN, infinities, zero, negatives and wrong types (and the values
at the edge of what is allowed, which must give finite data)."""

import dataclasses
import functools
import gzip
import hashlib
import http.server
import io
import math
import os
import pickle
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402

FASHION_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """No test sees the user's TINYUNITS_DATA or cache."""
    monkeypatch.delenv("TINYUNITS_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


# ------------------------------------------------------------------ file writers

def idx_bytes(array):
    """IDX encoding of a uint8 array, written from the format description."""
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim])
    header += b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()


def write_file(path, content, gz):
    """Write bytes, gzipped (and named .gz) when asked; return the path."""
    path = Path(str(path) + ".gz") if gz else Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(content) if gz else content)
    return path


def make_idx_set(directory, gz=True, n_train=6, n_test=4, seed=0):
    """Write a small MNIST-format set; return the arrays written."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for name, array in arrays.items():
        write_file(Path(directory) / name, idx_bytes(array), gz)
    return arrays


def cifar_pickle(batch):
    """Pickle a batch the way the official python batches reference NumPy.

    Protocol 3 stores bytes without helper globals; NumPy 2 names its array
    rebuilder numpy._core.multiarray, the official files numpy.core.multiarray.
    """
    return pickle.dumps(batch, protocol=3).replace(
        b"cnumpy._core.multiarray\n_reconstruct\n", b"cnumpy.core.multiarray\n_reconstruct\n")


def make_cifar_set(directory, n=4, seed=0):
    """Write data_batch_1..5 and test_batch; return {name: (data, labels)}."""
    rng = np.random.default_rng(seed)
    written = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, n)]
        batch = {b"batch_label": b"test", b"labels": labels, b"data": data,
                 b"filenames": [b"x.png"] * n}
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / name).write_bytes(cifar_pickle(batch))
        written[name] = (data, labels)
    return written


SGEMM_HEADER = ("MWG,NWG,KWG,MDIMC,NDIMC,MDIMA,NDIMB,KWI,VWM,VWN,STRM,STRN,SA,SB,"
                "Run1 (ms),Run2 (ms),Run3 (ms),Run4 (ms)")


def make_sgemm_rows(n=200, seed=0):
    """Valid rows: powers of two, binaries, and runs whose mean is unique per row."""
    rng = np.random.default_rng(seed)
    powers = 2.0 ** rng.integers(1, 8, (n, 10))
    binary = rng.integers(0, 2, (n, 4)).astype(float)
    base = 10.0 + np.arange(n) * 1.5 + rng.random(n)
    runs = base[:, None] + np.array([-0.2, 0.1, 0.0, 0.3])
    return np.concatenate([powers, binary, runs], axis=1)


def write_sgemm(directory, rows, header=SGEMM_HEADER):
    """Write sgemm_product.csv in the UCI layout."""
    path = Path(directory) / "sgemm_product.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [header] + [",".join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def sha256(data):
    """Hex SHA-256 of bytes."""
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------ MNIST / Fashion-MNIST

@pytest.mark.parametrize("gz", [True, False])
def test_load_mnist_reads_idx_files(tmp_path, gz):
    arrays = make_idx_set(tmp_path / "mnist", gz=gz)
    x_train, y_train, x_test, y_test = datasets.load_mnist(root=tmp_path)
    assert x_train.shape == (6, 1, 28, 28) and x_test.shape == (4, 1, 28, 28)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    np.testing.assert_allclose(x_train[:, 0], arrays["train-images-idx3-ubyte"] / 255.0,
                               rtol=1e-6)
    np.testing.assert_array_equal(y_test, arrays["t10k-labels-idx1-ubyte"])
    x_std = datasets.load_mnist(root=tmp_path, normalize="standard")[2]
    np.testing.assert_allclose(x_std[:, 0], arrays["t10k-images-idx3-ubyte"] / 127.5 - 1.0,
                               atol=1e-6)


def test_unknown_normalisation_is_refused(tmp_path):
    make_idx_set(tmp_path / "mnist")
    with pytest.raises(ValueError, match="normalize"):
        datasets.load_mnist(root=tmp_path, normalize="zscore")


def test_search_order_root_then_env_then_cache(tmp_path, monkeypatch):
    root, env, cache = tmp_path / "root", tmp_path / "env", tmp_path / "xdg-cache" / "tinyunits"
    cached = make_idx_set(cache / "mnist", seed=1)
    np.testing.assert_array_equal(datasets.load_mnist()[1], cached["train-labels-idx1-ubyte"])
    from_env = make_idx_set(env / "mnist", seed=2)
    monkeypatch.setenv("TINYUNITS_DATA", str(env))
    np.testing.assert_array_equal(datasets.load_mnist()[1], from_env["train-labels-idx1-ubyte"])
    in_root = make_idx_set(root, seed=3)  # files directly in root are accepted too
    np.testing.assert_array_equal(datasets.load_mnist(root=root)[1],
                                  in_root["train-labels-idx1-ubyte"])


@pytest.mark.parametrize("name, loader", [
    ("mnist", datasets.load_mnist),
    ("fashion-mnist", datasets.load_fashion_mnist),
    ("cifar10", datasets.load_cifar10),
    ("sgemm", datasets.load_sgemm),
])
def test_missing_files_message_says_what_where_and_how(tmp_path, monkeypatch, name, loader):
    # Hide the Debian copy so that Fashion-MNIST is missing too.
    monkeypatch.setitem(datasets._SPECS, name,
                        dataclasses.replace(datasets._SPECS[name], system_dirs=()))
    (tmp_path / "data").mkdir()
    with pytest.raises(datasets.DatasetNotFoundError) as err:
        loader(root=tmp_path / "data")
    message = str(err.value)
    spec = datasets._SPECS[name]
    assert all(f in message for f in spec.files)
    assert str(tmp_path / "data" / spec.folder) in message
    assert f"python datasets.py download {name}" in message


def corrupt_cases():
    """(name, file to replace, bytes of the bad file) for the IDX validation tests."""
    good_images = idx_bytes(np.zeros((6, 28, 28), np.uint8))
    gz = gzip.compress(good_images)
    bad_crc = gz[:-8] + bytes([gz[-8] ^ 0xFF]) + gz[-7:]
    labels_12 = idx_bytes(np.array([0, 1, 2, 3, 4, 12], np.uint8))
    return [
        ("bad magic", "train-images-idx3-ubyte", b"\x00\x00\x08\x02" + good_images[4:]),
        ("wrong item shape", "train-images-idx3-ubyte", idx_bytes(np.zeros((6, 27, 28), np.uint8))),
        ("truncated data", "train-images-idx3-ubyte", good_images[:-100]),
        ("trailing bytes", "train-images-idx3-ubyte", good_images + b"\x00"),
        ("header cut short", "train-images-idx3-ubyte", good_images[:7]),
        ("truncated gzip", "train-images-idx3-ubyte.gz", gz[: len(gz) // 2]),
        ("gzip crc", "train-images-idx3-ubyte.gz", bad_crc),
        ("label out of range", "train-labels-idx1-ubyte", labels_12),
        ("label count", "train-labels-idx1-ubyte", idx_bytes(np.zeros(5, np.uint8))),
    ]


@pytest.mark.parametrize("case, filename, content", corrupt_cases(),
                         ids=[c[0] for c in corrupt_cases()])
def test_bad_idx_file_raises_naming_the_file(tmp_path, case, filename, content):
    make_idx_set(tmp_path / "mnist", gz=False)
    # A .gz copy takes precedence over the plain file of the same name.
    (tmp_path / "mnist" / filename).write_bytes(content)
    with pytest.raises(datasets.DatasetError) as err:
        datasets.load_mnist(root=tmp_path)
    assert filename in str(err.value)


def test_real_fashion_mnist_from_debian_package():
    if not all((FASHION_SYSTEM_DIR / (n + ".gz")).is_file() for n in IDX_NAMES):
        pytest.skip(f"Debian package dataset-fashion-mnist is not installed "
                    f"(no IDX files in {FASHION_SYSTEM_DIR})")
    x_train, y_train, x_test, y_test = datasets.load_fashion_mnist()
    assert x_train.shape == (60000, 1, 28, 28) and x_test.shape == (10000, 1, 28, 28)
    assert y_train.dtype == np.int64 and set(np.unique(y_test)) == set(range(10))
    # Fashion-MNIST is balanced: 6000 training and 1000 test images per class.
    assert (np.bincount(y_train) == 6000).all() and (np.bincount(y_test) == 1000).all()
    assert 0.0 == x_train.min() and x_train.max() == 1.0


# ------------------------------------------------------------------ CIFAR-10

def test_load_cifar10_reads_python_batches(tmp_path):
    written = make_cifar_set(tmp_path / "cifar-10-batches-py")
    x_train, y_train, x_test, y_test = datasets.load_cifar10(root=tmp_path)
    assert x_train.shape == (20, 3, 32, 32) and x_test.shape == (4, 3, 32, 32)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    data, labels = written["data_batch_2"]
    # A row holds 1024 red, then 1024 green, then 1024 blue values, each row-major.
    for c, r, k in [(0, 0, 0), (1, 5, 7), (2, 31, 30)]:
        assert x_train[4 + 1, c, r, k] == pytest.approx(data[1, c * 1024 + r * 32 + k] / 255)
    assert list(y_train[4:8]) == labels
    assert list(y_test) == written["test_batch"][1]


class Evil:
    """Unpickling this object would run a shell command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_malicious_cifar_pickle_is_refused(tmp_path):
    make_cifar_set(tmp_path / "cifar-10-batches-py")
    marker = tmp_path / "pwned"
    payload = {b"data": np.zeros((1, 3072), np.uint8), b"labels": [Evil(marker)]}
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").write_bytes(cifar_pickle(payload))
    with pytest.raises(datasets.DatasetError, match=r"data_batch_3.*system"):
        datasets.load_cifar10(root=tmp_path)
    assert not marker.exists()


@pytest.mark.parametrize("payload, problem", [
    ({b"data": np.array([1, "a"], dtype=object), b"labels": [0]}, "Python objects"),
    ({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, "3072"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, "0..9"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, "labels"),
    ([1, 2, 3], "dict"),
])
def test_bad_cifar_batch_raises(tmp_path, payload, problem):
    make_cifar_set(tmp_path / "cifar-10-batches-py")
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(cifar_pickle(payload))
    with pytest.raises(datasets.DatasetError, match=problem) as err:
        datasets.load_cifar10(root=tmp_path)
    assert "test_batch" in str(err.value)


# ------------------------------------------------------------------ SGEMM

def test_load_sgemm_transforms_splits_and_standardises(tmp_path):
    rows = make_sgemm_rows()
    write_sgemm(tmp_path / "sgemm", rows)
    parts = datasets.load_sgemm(root=tmp_path, seed=0)
    x_train, y_train, x_val, y_val, x_test, y_test = parts
    assert [len(a) for a in parts] == [140, 140, 30, 30, 30, 30]
    assert all(a.dtype == np.float32 for a in parts)
    assert x_train.shape[1] == 14 and y_train.ndim == 1

    # Each target identifies its row: the runs' means are distinct by construction.
    target = np.log2(rows[:, 14:].mean(axis=1))
    y_all = np.concatenate([y_train, y_val, y_test])
    row_of = np.array([np.argmin(np.abs(target - v)) for v in y_all])
    assert sorted(row_of) == list(range(200))
    np.testing.assert_allclose(y_all, target[row_of], rtol=1e-6)

    # Inputs: log2 of the ten power-of-two columns, then standardised with train stats.
    raw = rows[row_of, :14].copy()
    raw[:, :10] = np.log2(raw[:, :10])
    train_raw = raw[:140]
    mean, std = train_raw.mean(axis=0), train_raw.std(axis=0)
    x_all = np.concatenate([x_train, x_val, x_test])
    np.testing.assert_allclose(x_all, (raw - mean) / std, atol=1e-5)
    np.testing.assert_allclose(x_train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(x_train.std(axis=0), 1, atol=1e-5)

    again = datasets.load_sgemm(root=tmp_path, seed=0)
    other = datasets.load_sgemm(root=tmp_path, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    assert not np.array_equal(parts[1], other[1])


@pytest.mark.parametrize("edit, problem", [
    (lambda h, r: (h.replace(",SB", ""), r[:, [*range(13), *range(14, 18)]]), "SB"),
    (lambda h, r: (h, np.where(np.arange(18) == 2, 0.0, r)), "KWG"),
    (lambda h, r: (h, np.where(np.arange(18) == 12, 2.0, r)), "SA"),
    (lambda h, r: (h, np.where(np.arange(18) == 15, -1.0, r)), "Run2"),
])
def test_bad_sgemm_csv_raises(tmp_path, edit, problem):
    header, rows = edit(SGEMM_HEADER, make_sgemm_rows(20))
    path = write_sgemm(tmp_path / "sgemm", rows, header)
    with pytest.raises(datasets.DatasetError, match=problem) as err:
        datasets.load_sgemm(root=tmp_path)
    assert str(path) in str(err.value)


def test_non_numeric_sgemm_row_raises(tmp_path):
    path = write_sgemm(tmp_path / "sgemm", make_sgemm_rows(5))
    path.write_text(path.read_text() + "16,16,16,8,8,8,8,2,1,1,0,0,0,0,abc,1,1,1\n")
    with pytest.raises(datasets.DatasetError, match="sgemm_product.csv"):
        datasets.load_sgemm(root=tmp_path)


# ------------------------------------------------------------------ downloading

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Static file handler that keeps the test output clean."""

    def log_message(self, *args):
        pass


@pytest.fixture
def loopback_server(tmp_path):
    """Serve tmp_path/www on 127.0.0.1 for the duration of one test."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(QuietHandler, directory=str(www))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def closed_port_url():
    """http://127.0.0.1:<port>/ with nothing listening: a connection is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


def test_fetch_installs_verified_file_with_a_progress_bar(tmp_path, loopback_server, capsys):
    www, base = loopback_server
    (www / "src.bin").write_bytes(b"official bytes" * 1000)
    dest = tmp_path / "out" / "file.bin"
    datasets._fetch(base + "src.bin", dest, sha256((www / "src.bin").read_bytes()), progress=True)
    assert dest.read_bytes() == (www / "src.bin").read_bytes()
    assert os.listdir(dest.parent) == ["file.bin"]  # no temp file left behind
    assert "14.0k/14.0k" in capsys.readouterr().err  # the bar counted every byte


def test_fetch_refuses_checksum_mismatch_and_keeps_nothing(tmp_path, loopback_server):
    www, base = loopback_server
    (www / "src.bin").write_bytes(b"tampered")
    dest = tmp_path / "out" / "file.bin"
    with pytest.raises(datasets.DatasetError, match="does not match the known hash") as err:
        datasets._fetch(base + "src.bin", dest, sha256(b"official"))
    assert base + "src.bin" in str(err.value) and sha256(b"tampered") in str(err.value)
    assert os.listdir(dest.parent) == []


def test_processes_fetching_one_file_at_once_all_end_with_it_whole(tmp_path, loopback_server):
    """Four processes (two lessons started together, say) fetch the same file into one
    cache at once: each returns, the file is the verified one, no temporary is left."""
    www, base = loopback_server
    (www / "src.bin").write_bytes(os.urandom(2 ** 21))
    dest = tmp_path / "out" / "file.bin"
    code = (f"import datasets; datasets._fetch({base + 'src.bin'!r}, "
            f"__import__('pathlib').Path({str(dest)!r}), {sha256((www / 'src.bin').read_bytes())!r})")
    env = {**os.environ, "PYTHONPATH": str(Path(datasets.__file__).parent)}
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
            for _ in range(4)]
    for run in runs:
        assert run.wait(timeout=120) == 0, run.stderr.read().decode()
    assert dest.read_bytes() == (www / "src.bin").read_bytes()
    assert os.listdir(dest.parent) == ["file.bin"]


def test_fetch_replaces_a_cached_file_that_fails_its_hash(tmp_path, loopback_server):
    www, base = loopback_server
    (www / "src.bin").write_bytes(b"official")
    dest = tmp_path / "out" / "file.bin"
    dest.parent.mkdir()
    dest.write_bytes(b"truncated")
    datasets._fetch(base + "src.bin", dest, sha256(b"official"))
    assert dest.read_bytes() == b"official"


def test_fetch_without_pinned_hash_needs_no_verify(tmp_path, loopback_server, capsys):
    www, base = loopback_server
    (www / "src.bin").write_bytes(b"unpinned")
    dest = tmp_path / "out" / "file.bin"
    with pytest.raises(datasets.DatasetError, match="--no-verify"):
        datasets._fetch(base + "src.bin", dest, None)
    assert not dest.exists()
    datasets._fetch(base + "src.bin", dest, None, no_verify=True)
    assert dest.read_bytes() == b"unpinned"
    assert f"UNVERIFIED (sha256 {sha256(b'unpinned')})" in capsys.readouterr().err


def test_fetch_unreachable_url_says_where_to_put_the_file(tmp_path):
    url = closed_port_url() + "x.gz"
    with pytest.raises(OSError, match="copy the file by hand") as err:
        datasets._fetch(url, tmp_path / "out" / "x.gz", "0" * 64)
    assert url in str(err.value) and "Connection refused" in str(err.value)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def serve_pinned(monkeypatch, name, www, base, archive, members, pin=True):
    """Point data set ``name`` at ``archive``, moved into www, with its SHA-256 pinned."""
    served = www / archive.name
    archive.rename(served)
    remote = datasets._Remote(base + served.name, sha256(served.read_bytes()) if pin else None,
                              members)
    monkeypatch.setitem(datasets._SPECS, name,
                        dataclasses.replace(datasets._SPECS[name], remotes=(remote,)))


def test_download_mnist_over_loopback_http_then_load(tmp_path, monkeypatch, loopback_server):
    www, base = loopback_server
    arrays = make_idx_set(www)
    remotes = tuple(datasets._Remote(base + n + ".gz", sha256((www / (n + ".gz")).read_bytes()))
                    for n in IDX_NAMES)
    monkeypatch.setitem(datasets._SPECS, "mnist",
                        dataclasses.replace(datasets._SPECS["mnist"], remotes=remotes))
    dest = datasets.download("mnist", root=tmp_path / "data", progress=True)
    assert dest == tmp_path / "data" / "mnist"
    labels = datasets.load_mnist(root=tmp_path / "data")[1]
    np.testing.assert_array_equal(labels, arrays["train-labels-idx1-ubyte"])


def test_download_cifar_archive_extracts_only_batches(tmp_path, monkeypatch, loopback_server):
    written = make_cifar_set(tmp_path / "staging" / "cifar-10-batches-py")
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "staging" / "cifar-10-batches-py", arcname="cifar-10-batches-py")
        evil = tarfile.TarInfo("../../escaped.txt")
        evil.size = 4
        tar.addfile(evil, io.BytesIO(b"oops"))
    # The official members: the archive above is laid out as the real one is.
    serve_pinned(monkeypatch, "cifar10", *loopback_server, archive,
                 datasets._SPECS["cifar10"].remotes[0].members)
    dest = datasets.download("cifar10", root=tmp_path / "data")
    # the batches only: no archive, no unpacking folder, nothing escaped
    assert sorted(os.listdir(dest)) == sorted(datasets._SPECS["cifar10"].files)
    assert not list(tmp_path.rglob("escaped.txt"))
    assert list(datasets.load_cifar10(root=tmp_path / "data")[3]) == written["test_batch"][1]


def test_download_sgemm_zip_and_command_line(tmp_path, monkeypatch, capsys, loopback_server):
    csv = write_sgemm(tmp_path / "staging", make_sgemm_rows(40))
    archive = tmp_path / "sgemm.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(csv, "sgemm_product.csv")
        zf.writestr("Readme.txt", "readme")
    serve_pinned(monkeypatch, "sgemm", *loopback_server, archive, ("sgemm_product.csv",),
                 pin=False)
    root = str(tmp_path / "data")
    assert datasets.main(["download", "sgemm", "--root", root, "--quiet"]) == 1
    assert "--no-verify" in capsys.readouterr().err
    assert datasets.main(["download", "sgemm", "--root", root, "--quiet", "--no-verify"]) == 0
    assert os.listdir(tmp_path / "data" / "sgemm") == ["sgemm_product.csv"]
    assert len(datasets.load_sgemm(root=root)[0]) == 28


def test_download_archive_missing_member_raises(tmp_path, monkeypatch, loopback_server):
    archive = tmp_path / "empty.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("Readme.txt", "readme")
    serve_pinned(monkeypatch, "sgemm", *loopback_server, archive, ("sgemm_product.csv",))
    with pytest.raises(datasets.DatasetError, match="lacks sgemm_product.csv"):
        datasets.download("sgemm", root=tmp_path / "data")


def test_every_pinned_hash_is_a_sha256_hex_digest():
    for spec in datasets._SPECS.values():
        for remote in spec.remotes:
            if remote.sha256 is not None:
                assert len(remote.sha256) == 64 and int(remote.sha256, 16) >= 0


# ------------------------------------------------------------------ checkerboard

@pytest.mark.parametrize("corner", [0, 1])
def test_checkerboard_grid_matches_definition_cell_by_cell(corner):
    coords, labels = datasets.checkerboard_grid(corner)
    np.testing.assert_allclose(coords, np.linspace(-1, 1, 81), atol=1e-7)
    for i in range(81):
        for j in range(81):
            if 4 <= i < 76 and 4 <= j < 76:
                row_cell, col_cell = (i - 4) // 6, (j - 4) // 6
                expected = corner if (row_cell + col_cell) % 2 == 0 else 1 - corner
            else:
                expected = 0
            assert labels[i, j] == expected, (i, j)
    assert labels.sum() == 72 * 36
    assert labels[4, 4] == corner and labels[4, 10] == 1 - corner


def test_checkerboard_default_is_the_authors_colouring_and_corner_is_checked():
    # yyy32/HanNet builds the board as np.kron([[0, 1] * 6, [1, 0] * 6] * 6, ones((6, 6)))
    authors = np.kron([[0, 1] * 6, [1, 0] * 6] * 6, np.ones((6, 6), dtype=np.int64))
    _, labels = datasets.checkerboard_grid()
    np.testing.assert_array_equal(labels[4:76, 4:76], authors)
    with pytest.raises(ValueError, match="corner"):
        datasets.checkerboard_grid(corner=2)


def test_checkerboard_split_covers_grid_with_right_labels():
    x_train, y_train, x_test, y_test = datasets.checkerboard(seed=3)
    assert x_train.shape == (1640, 2) and x_test.shape == (4921, 2)
    assert y_train.shape == (1640, 2) and y_train.dtype == np.float32
    coords, labels = datasets.checkerboard_grid()
    points = np.concatenate([x_train, x_test])
    i = np.rint((points[:, 0] + 1) * 40).astype(int)
    j = np.rint((points[:, 1] + 1) * 40).astype(int)
    assert len(set(zip(i, j))) == 6561
    y = np.concatenate([y_train, y_test])
    np.testing.assert_array_equal(y[:, 0], y[:, 1])
    np.testing.assert_array_equal(y[:, 0], labels[i, j])


def test_checkerboard_flips_only_the_asked_fraction_of_train_labels():
    clean = datasets.checkerboard(seed=5)
    noisy = datasets.checkerboard(flip=0.1, seed=5)
    np.testing.assert_array_equal(clean[0], noisy[0])
    np.testing.assert_array_equal(clean[3], noisy[3])
    assert (clean[1][:, 0] != noisy[1][:, 0]).sum() == 164
    with pytest.raises(ValueError):
        datasets.checkerboard(flip=1.5)


# ------------------------------------------------------------------ focusing blobs

@pytest.mark.parametrize("side, first_informative", [("left", 20), ("both", 10)])
def test_focus_blobs_layout_and_informative_columns(side, first_informative):
    x_train, y_train, x_test, y_test, informative = datasets.focus_blobs(
        n_samples=1000, noise_side=side, seed=1, flip_y=0)
    assert x_train.shape == (700, 40) and x_test.shape == (300, 40)
    assert y_train.dtype == np.int64 and x_train.dtype == np.float32
    assert list(np.flatnonzero(informative)) == list(range(first_informative,
                                                           first_informative + 20))
    np.testing.assert_allclose(x_train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(x_train.std(axis=0), 1, atol=1e-4)
    assert np.bincount(np.concatenate([y_train, y_test])).tolist() == [500, 500]
    # Noise columns, uniform before standardising, are flat: kurtosis 1.8, not 3.
    kurtosis = (x_train ** 4).mean(axis=0)
    assert np.all(np.abs(kurtosis[~informative] - 1.8) < 0.3)
    # The classes differ in the informative columns, not in the noise columns.
    centroids = [x_train[y_train == c][:, informative].mean(axis=0) for c in (0, 1)]
    assert np.abs(centroids[0] - centroids[1]).max() > np.abs(
        x_train[y_train == 0][:, ~informative].mean(axis=0)
        - x_train[y_train == 1][:, ~informative].mean(axis=0)).max()


def test_focus_blobs_flips_a_share_of_labels_and_nothing_else():
    clean = datasets.focus_blobs(n_samples=4000, seed=3, flip_y=0)
    noisy = datasets.focus_blobs(n_samples=4000, seed=3, flip_y=0.2)
    for a, b in zip(clean[::2], noisy[::2]):  # x_train, x_test, informative
        np.testing.assert_array_equal(a, b)
    labels_clean = np.concatenate([clean[1], clean[3]])
    labels_noisy = np.concatenate([noisy[1], noisy[3]])
    # A flipped row gets a random class, the same one half the time: ~10 % change.
    changed = np.mean(labels_clean != labels_noisy)
    assert 0.08 < changed < 0.12
    with pytest.raises(ValueError, match="flip_y"):
        datasets.focus_blobs(flip_y=1.5)


def test_focus_blobs_clusters_have_their_own_covariance():
    """make_classification maps each blob by its own random matrix: its informative
    columns are correlated, and differently in the two blobs of a class."""
    x, y, _, _, informative = datasets.focus_blobs(n_samples=16000, seed=2, class_sep=50,
                                                   flip_y=0)
    blobs = x[y == 0][:, informative]  # the two blobs of class 0, 100 apart on some axes
    axis = np.argmax(blobs.var(axis=0))
    halves = [blobs[blobs[:, axis] < np.median(blobs[:, axis])],
              blobs[blobs[:, axis] >= np.median(blobs[:, axis])]]
    correlations = [np.corrcoef(h, rowvar=False) for h in halves]
    off_diagonal = ~np.eye(informative.sum(), dtype=bool)
    # N(0, I) blobs would give |r| ~ 0.03 for 2800 rows; A_k^T A_k gives |r| ~ 0.2.
    assert all(np.abs(c[off_diagonal]).mean() > 0.1 for c in correlations)
    assert np.abs(correlations[0] - correlations[1])[off_diagonal].max() > 0.5


# ------------------------------------------------------------------ random smooth map

def test_random_smooth_map_is_the_gaussian_blur_of_the_seeded_map():
    coords, z = datasets.smooth_map_grid(seed=7)
    grid = np.linspace(-5, 5, 101)
    noise = np.random.default_rng(7).uniform(-1, 1, size=(101, 101))
    kernel = np.exp(-(grid[:, None] ** 2 + grid[None, :] ** 2) / (2 * (1 / 3) ** 2))
    kernel /= kernel.sum()
    for i, j in [(0, 0), (50, 50), (3, 97), (100, 42)]:
        direct = sum(noise[p, q] * kernel[i - p + 50, j - q + 50]
                     for p in range(101) for q in range(101)
                     if abs(i - p) <= 50 and abs(j - q) <= 50)
        assert z[i, j] == pytest.approx(direct, abs=1e-6)
    X, targets = datasets.random_smooth_map(seed=7)
    assert X.shape == (10201, 2) and targets.shape == (10201,)
    assert tuple(X[3 * 101 + 97]) == (coords[3], coords[97])
    assert targets[3 * 101 + 97] == z[3, 97]


# ------------------------------------------------------------------ TMAF targets

def test_tmaf_targets_follow_their_stated_formulas():
    x, y = datasets.tmaf_smooth_target(n=500, seed=2)
    assert x.shape == (500, 2) and y.shape == (500,) and x.min() >= 0 and x.max() < 1
    np.testing.assert_allclose(y, np.sin(np.pi * x[:, 0]) * np.sin(np.pi * x[:, 1]), atol=1e-5)
    x, y = datasets.tmaf_oscillatory_target(n=500, seed=2)
    assert x.shape == (500, 1) and y.shape == (500,)
    t = x[:, 0].astype(np.float64)
    np.testing.assert_allclose(y, np.sin(2 * np.pi * t) + 0.5 * np.sin(20 * np.pi * t),
                               atol=1e-5)
    assert len(datasets.tmaf_oscillatory_target()[0]) == 20000


# ------------------------------------------------------------------ DAC toys

def relu(v):
    return np.maximum(v, 0)


def test_dac_figure7a_not_linearly_separable_but_one_dac_unit_separates():
    X, y = datasets.dac_figure7("a")
    (a, b, c) = X.astype(np.float64)
    (u1, u2), (v1, v2) = b - a, c - a
    assert u1 * v2 - u2 * v1 == 0  # collinear ...
    assert y[1] != y[0] and y[0] == y[2]  # ... with the middle point of the other class
    activated = relu(X + np.array([-0.5, 0.5]))  # the leftmost point now in quadrant II
    score = activated @ np.array([-2.0, 1.5])
    assert ((score > 1.0) == (y == 1)).all()


def test_dac_figure7b_caption_network_separates_the_square():
    X, y = datasets.dac_figure7("b")
    x1, x2 = X[:, 0].astype(np.float64), X[:, 1].astype(np.float64)
    g = relu(1 + x1) + relu(1 + x2) - 2 * relu(x1) - 2 * relu(x2) - 1
    assert ((g > 0) == (y == 1)).all()
    assert not np.any(np.abs(x1) + np.abs(x2) == 1)  # no point on the square's edge
    assert y.sum() > 0 and (y == 0).sum() > 0


@pytest.mark.parametrize("k", [1, 2, 5])
def test_random_pl_function_has_k_pieces_and_is_a_dac_unit(k):
    f = datasets.random_pl_function(k, seed=k, n=2001)
    assert len(f.slopes) == k and len(f.breakpoints) == k - 1
    assert len(f.weight) == k and len(f.bias) == k
    x = f.x.astype(np.float64)
    direct = sum(f.weight[j] * relu(f.bias[j] + x) for j in range(k))
    np.testing.assert_allclose(f.y, direct, rtol=1e-5, atol=1e-5)
    edges = np.concatenate([[x[0]], f.breakpoints, [x[-1]]])
    for m in range(k):  # the slope inside each piece, from two interior points
        left, right = edges[m] + 0.3 * (edges[m + 1] - edges[m]), edges[m] + 0.7 * (
            edges[m + 1] - edges[m])
        assert (f(right) - f(left)) / (right - left) == pytest.approx(f.slopes[m])
    assert np.all(np.diff(f.slopes) != 0)


# ------------------------------------------------------------------ moons and spirals

def test_two_moons_lie_on_their_circles_without_noise():
    X, y = datasets.two_moons(n=101, noise=0.0, seed=0)
    assert X.shape == (101, 2) and X.dtype == np.float32 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [51, 50]
    np.testing.assert_allclose(np.hypot(*X[y == 0].T), 1, atol=1e-6)
    np.testing.assert_allclose(np.hypot(X[y == 1, 0] - 1, X[y == 1, 1] - 0.5), 1, atol=1e-6)


def test_spirals_arms_without_noise():
    X, y = datasets.spirals(n=301, n_classes=3, noise=0.0, seed=0)
    assert X.shape == (301, 2) and np.bincount(y).tolist() == [101, 100, 100]
    r = np.hypot(X[:, 0], X[:, 1])
    assert r.max() <= 1 + 1e-6
    angle = np.arctan2(X[:, 0], X[:, 1])  # the points are (r sin a, r cos a)
    expected = 4 * r + 2 * np.pi * y / 3
    wrapped = np.angle(np.exp(1j * (angle - expected)))
    assert np.all(np.abs(wrapped[r > 1e-3]) < 1e-4)


# ------------------------------------------------------------------ seeding

@pytest.mark.parametrize("make", [
    lambda s: datasets.checkerboard(flip=0.2, seed=s),
    lambda s: datasets.focus_blobs(n_samples=200, seed=s),
    lambda s: datasets.random_smooth_map(seed=s),
    lambda s: datasets.tmaf_smooth_target(n=100, seed=s),
    lambda s: datasets.tmaf_oscillatory_target(n=100, seed=s),
    lambda s: dataclasses.astuple(datasets.random_pl_function(4, seed=s)),
    lambda s: datasets.two_moons(n=50, seed=s),
    lambda s: datasets.spirals(n=50, seed=s),
])
def test_seeded_generators_repeat_and_differ(make):
    first, again, other = make(11), make(11), make(12)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


# ------------------------------------------------------------------ batching

def test_batches_cover_every_row_once_with_partial_last_batch():
    X, y = np.arange(23)[:, None] * 10, np.arange(23)
    shuffled = list(datasets.batches(X, y, 5, seed=4))
    assert [len(yb) for _, yb in shuffled] == [5, 5, 5, 5, 3]
    seen = np.concatenate([yb for _, yb in shuffled])
    assert sorted(seen) == list(range(23)) and list(seen) != list(range(23))
    assert all((xb[:, 0] == yb * 10).all() for xb, yb in shuffled)
    again = np.concatenate([yb for _, yb in datasets.batches(X, y, 5, seed=4)])
    np.testing.assert_array_equal(seen, again)
    ordered = np.concatenate([yb for _, yb in datasets.batches(X, y, 5, shuffle=False)])
    np.testing.assert_array_equal(ordered, np.arange(23))
    with pytest.raises(ValueError):
        next(datasets.batches(X, y[:-1], 5))


def test_train_val_split_partitions_the_rows():
    X, y = np.arange(50)[:, None] * 2, np.arange(50)
    x_tr, y_tr, x_val, y_val = datasets.train_val_split(X, y, 0.2, seed=1)
    assert len(y_val) == 10 and len(y_tr) == 40
    assert sorted(np.concatenate([y_tr, y_val])) == list(range(50))
    assert (x_tr[:, 0] == 2 * y_tr).all() and (x_val[:, 0] == 2 * y_val).all()
    np.testing.assert_array_equal(y_val, datasets.train_val_split(X, y, 0.2, seed=1)[3])
    with pytest.raises(ValueError):
        datasets.train_val_split(X, y, 1.0)


# ------------------------------------------------------------------ every argument, against bad values and at its edges

@pytest.fixture
def deadline():
    """Fail (instead of hang) when the block runs past `seconds`."""
    def expired(*_):
        raise TimeoutError("still running: an endless loop?")
    old = signal.signal(signal.SIGALRM, expired)

    def start(seconds):
        signal.alarm(seconds)
    yield start
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def test_focus_blobs_with_no_class_separation_is_refused_not_an_endless_loop(deadline):
    deadline(10)
    with pytest.raises(ValueError, match="focus_blobs: class_sep must be a finite number > 0, "
                                         "got 0"):
        datasets.focus_blobs(class_sep=0)


def test_spirals_with_nan_spin_is_refused_not_nan_points():
    with pytest.raises(ValueError, match="spirals: spin must be a finite number, got nan"):
        datasets.spirals(spin=math.nan)


X, Y = np.zeros((8, 2), np.float32), np.arange(8)


def _call(fn, **kwargs):
    """fn(**kwargs), with generators run through (batches)."""
    out = fn(**kwargs)
    return list(out) if fn is datasets.batches else out


def _count(low):
    bad = [(low - 1, ValueError), (2.5, TypeError), ("3", TypeError), (None, TypeError),
           (True, TypeError), (math.nan, TypeError), (math.inf, TypeError)]
    return bad + ([(-3, ValueError)] if low - 1 > -3 else [])


SEED = [(-1, ValueError), (1.5, TypeError), ("0", TypeError), (None, TypeError),
        (True, TypeError), (math.nan, TypeError)]


FLAG = [("yes", TypeError), (1, TypeError), (None, TypeError)]


CORNER = [(2, ValueError), (-1, ValueError), (0.0, TypeError), (True, TypeError),
          ("0", TypeError), (None, TypeError), (math.nan, TypeError)]


def _real(low=None, high=None, low_open=False):
    bad = [(math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
           ("0.1", TypeError), (None, TypeError), (True, TypeError), ([0.1], TypeError)]
    if low is not None:
        bad += [(low - 1, ValueError)] + ([(low, ValueError)] if low_open else [])
    if high is not None:
        bad += [(high + 0.5, ValueError)]
    return bad


def _choice(good):
    return [("no-such-choice", ValueError), (3, ValueError), (None, ValueError),
            (good.upper() if good.upper() != good else good + "x", ValueError)]


# (function, good arguments, {argument: [(bad value, error), ...]})
ARGUMENTS = [
    (datasets.two_moons, dict(n=20, noise=0.1, seed=0),
     dict(n=_count(2), noise=_real(low=0), seed=SEED)),
    (datasets.spirals, dict(n=30, n_classes=3, noise=0.1, seed=0, spin=4.0),
     dict(n=_count(3), n_classes=_count(1), noise=_real(low=0), seed=SEED, spin=_real())),
    (datasets.checkerboard_grid, dict(corner=0), dict(corner=CORNER)),
    (datasets.checkerboard, dict(flip=0.1, seed=0, corner=1),
     dict(flip=_real(0, 1), seed=SEED, corner=CORNER)),
    (datasets.focus_blobs, dict(n_samples=40, n_informative=4, n_noise=3, noise_side="left",
                                seed=0, class_sep=1.0, flip_y=0.01),
     dict(n_samples=_count(4), n_informative=_count(2), n_noise=_count(0),
          noise_side=_choice("left"), seed=SEED, class_sep=_real(low=0, low_open=True),
          flip_y=_real(0, 1))),
    (datasets.smooth_map_grid, dict(seed=0), dict(seed=SEED)),
    (datasets.random_smooth_map, dict(seed=0), dict(seed=SEED)),
    (datasets.tmaf_smooth_target, dict(n=10, seed=0, dim=2),
     dict(n=_count(1), seed=SEED, dim=_count(1))),
    (datasets.tmaf_oscillatory_target, dict(n=10, seed=0), dict(n=_count(1), seed=SEED)),
    (datasets.tmaf_smooth_fn, dict(x=np.zeros((3, 2))),
     dict(x=[(np.zeros(3), ValueError), (np.zeros((2, 2, 2)), ValueError),
             ([["a", "b"]], TypeError), (None, ValueError)])),
    (datasets.tmaf_oscillatory_fn, dict(x=np.zeros((3, 1))),
     dict(x=[(np.zeros(3), ValueError), (np.zeros((3, 2)), ValueError),
             ([["a"]], TypeError)])),
    (datasets.dac_figure7, dict(which="a"), dict(which=_choice("a"))),
    (datasets.random_pl_function, dict(k=3, seed=0, n=11, interval=(-1.0, 1.0)),
     dict(k=_count(1), seed=SEED, n=_count(2),
          interval=[((1.0, 0.0), ValueError), ((0.0, 0.0), ValueError),
                    ((0.0, math.nan), ValueError), ((-math.inf, 0.0), ValueError),
                    ((-1e300, 1e300), ValueError), ((0.0,), TypeError), ("ab", TypeError),
                    (None, TypeError), ((0.0, "1"), TypeError), ((True, 2.0), TypeError)])),
    (datasets.batches, dict(X=X, y=Y, batch_size=3, shuffle=True, seed=None),
     dict(batch_size=_count(1), shuffle=FLAG, seed=SEED[:3] + SEED[4:],  # None: fresh entropy
          y=[(Y[:5], ValueError), (list(Y), TypeError)], X=[(X.tolist(), TypeError)])),
    (datasets.train_val_split, dict(X=X, y=Y, val_fraction=0.25, seed=0),
     dict(val_fraction=_real(0, 1, low_open=True) + [(1.0, ValueError), (0.01, ValueError),
                                                    (0.99, ValueError)],
          seed=SEED, y=[(Y[:5], ValueError)])),
    (datasets.load_mnist, dict(normalize="unit"),
     dict(normalize=_choice("unit"), root=[(3, TypeError), ([], TypeError)])),
    (datasets.load_fashion_mnist, dict(normalize="unit"),
     dict(normalize=_choice("unit"), root=[(3, TypeError)])),
    (datasets.load_cifar10, dict(normalize="unit"),
     dict(normalize=_choice("unit"), root=[(3, TypeError)])),
    (datasets.load_sgemm, dict(seed=0), dict(seed=SEED, root=[(3, TypeError)])),
    (datasets.download, dict(name="mnist", root=None, no_verify=False, progress=False),
     dict(name=_choice("mnist"), root=[(3, TypeError)], no_verify=FLAG,
          progress=[("yes", TypeError), (1, TypeError)])),
]


def _bad_cases():
    for fn, good, arguments in ARGUMENTS:
        for name, bad in arguments.items():
            for value, error in bad:
                yield pytest.param(fn, good, name, value, error,
                                   id=f"{fn.__name__}-{name}={value!r}"[:90])


@pytest.mark.filterwarnings("ignore:overflow encountered")  # before the refusal, from NumPy
@pytest.mark.parametrize("fn, good, name, value, error", list(_bad_cases()))
def test_every_bad_argument_is_refused_by_name(fn, good, name, value, error, deadline):
    deadline(10)  # a bad argument may loop forever (focus_blobs did, for class_sep=0)
    with pytest.raises(error, match=f"^{fn.__name__}: {name} must be .*, got "):
        _call(fn, **{**good, name: value})


# (function, arguments at the edge of what is allowed): finite data, never NaN
ALLOWED = [
    (datasets.two_moons, dict(n=2, noise=0.0)),
    (datasets.two_moons, dict(noise=np.float32(3.5), seed=np.int64(2 ** 40))),
    (datasets.spirals, dict(n=1, n_classes=1, noise=0.0, spin=0.0)),
    (datasets.spirals, dict(spin=-12.5)),
    (datasets.spirals, dict(noise=1e30)),
    (datasets.checkerboard, dict(flip=0.0)),
    (datasets.checkerboard, dict(flip=1, corner=np.int64(1))),
    (datasets.focus_blobs, dict(n_samples=4, n_informative=2, n_noise=0, noise_side="both",
                                flip_y=1.0)),
    (datasets.focus_blobs, dict(n_samples=40, class_sep=1e-6, flip_y=0)),
    (datasets.focus_blobs, dict(n_samples=40, class_sep=1e150)),
    (datasets.random_pl_function, dict(k=1, n=2, interval=(-1e30, 1e30))),
    (datasets.random_pl_function, dict(k=4, interval=[0, 1])),
    (datasets.tmaf_smooth_target, dict(n=1, dim=1)),
    (datasets.tmaf_oscillatory_target, dict(n=1)),
    (datasets.tmaf_smooth_fn, dict(x=[[0.5, 0.25]])),
    (datasets.dac_figure7, dict(which="b")),
    (datasets.train_val_split, dict(X=X[:2], y=Y[:2], val_fraction=0.5)),
    (datasets.batches, dict(X=X, y=Y, batch_size=100, shuffle=False)),
]


@pytest.mark.parametrize("fn, kwargs", ALLOWED, ids=[f"{f.__name__}-{k}"[:80] for f, k in ALLOWED])
def test_every_allowed_edge_value_gives_finite_data(fn, kwargs):
    out = _call(fn, **kwargs)
    if isinstance(out, datasets.PiecewiseLinear):
        out = [out.x, out.y, out.weight, out.bias]
    arrays = [out] if isinstance(out, np.ndarray) else [
        a for part in out for a in (part if isinstance(part, tuple) else [part])]  # batches
    for a in arrays:
        assert a.size and (a.dtype.kind not in "fc" or np.isfinite(a).all())


@pytest.mark.parametrize("loader", [datasets.load_mnist, datasets.load_fashion_mnist,
                                    datasets.load_cifar10, datasets.load_sgemm])
def test_data_root_that_does_not_exist_is_an_error(tmp_path, loader):
    with pytest.raises(datasets.DatasetNotFoundError, match="root must be an existing directory"):
        loader(root=tmp_path / "typo")


@pytest.mark.parametrize("call, error, words", [
    (lambda: datasets.two_moons(n=0), ValueError, "two_moons: n"),
    (lambda: datasets.two_moons(n=2.5), TypeError, "two_moons: n"),
    (lambda: datasets.two_moons(noise=-1), ValueError, "two_moons: noise"),
    (lambda: datasets.two_moons(noise=math.nan), ValueError, "two_moons: noise"),
    (lambda: datasets.spirals(n_classes=0), ValueError, "spirals: n_classes"),
    (lambda: datasets.spirals(n=2, n_classes=3), ValueError, "spirals: n"),
    (lambda: datasets.tmaf_smooth_target(n=0), ValueError, "tmaf_smooth_target: n"),
    (lambda: datasets.tmaf_smooth_target(dim=0), ValueError, "tmaf_smooth_target: dim"),
    (lambda: datasets.tmaf_oscillatory_target(n=-1), ValueError, "tmaf_oscillatory_target: n"),
    (lambda: datasets.random_pl_function(0), ValueError, "random_pl_function: k"),
    (lambda: datasets.random_pl_function(2, n=1), ValueError, "random_pl_function: n"),
    (lambda: datasets.random_pl_function(2, interval=(1, 0)), ValueError, "interval"),
    (lambda: list(datasets.batches(np.zeros(3), np.zeros(3), 0)), ValueError,
     "batches: batch_size"),
    (lambda: list(datasets.batches(np.zeros(3), np.zeros(2), 1)), ValueError, "rows"),
    (lambda: datasets.load_mnist(normalize="z"), ValueError, "normalize"),
    (lambda: datasets.load_mnist(root=3), TypeError, "root"),
])
def test_dataset_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_datasets_cli_says_what_is_wrong(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert datasets.main(["download", "mnist", "--root", str(a_file)]) == 1
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        datasets.main(["download", "no-such-set"])
    assert exit_.value.code == 2
    assert "invalid choice: 'no-such-set'" in capsys.readouterr().err
