"""A fresh machine (issue 23, class 8): `make test` fetches the real data before the suite,
and where it cannot, stops at once with one message naming the ways to get it.

The machine without Debian's dataset-fashion-mnist is played, on a machine with it,
by TINYUNITS_NO_SYSTEM_DATA=1 (the system copy hidden), the user's data folders in
tmp_path, and downloads sent by TINYUNITS_DATA_MIRROR to a server on 127.0.0.1, or
to a closed port there (unreachable, refused at once). No test sends traffic
anywhere but the loopback interface. The download from the official addresses is
the same code with another URL; it cannot run here (no internet).
"""
import dataclasses
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import datasets
from test_datasets import (IDX_NAMES, closed_port_url, isolated_env,  # noqa: F401 (fixtures)
                           loopback_server, make_idx_set, sha256)

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
WAYS = ("sudo apt-get install dataset-fashion-mnist", "python datasets.py download fashion-mnist",
        "TINYUNITS_DATA=DIR")


@pytest.fixture
def fresh(monkeypatch):
    """This machine as one without the Debian package (the autouse isolated_env of
    test_datasets already points the cache into tmp_path and drops TINYUNITS_DATA)."""
    monkeypatch.setenv("TINYUNITS_NO_SYSTEM_DATA", "1")


def fake_fashion_mirror(www, monkeypatch):
    """Serve a small Fashion-MNIST from www and pin its SHA-256 in place of the real ones."""
    arrays = make_idx_set(www)
    remotes = tuple(dataclasses.replace(r, sha256=sha256((www / (n + ".gz")).read_bytes()))
                    for r, n in zip(datasets._SPECS["fashion-mnist"].remotes, IDX_NAMES))
    monkeypatch.setitem(datasets._SPECS, "fashion-mnist",
                        dataclasses.replace(datasets._SPECS["fashion-mnist"], remotes=remotes))
    return arrays


# ------------------------------------------------------------------ hiding the system copy
def test_the_system_copy_can_be_hidden(monkeypatch, fresh):
    spec = datasets._SPECS["fashion-mnist"]
    assert SYSTEM_DIR not in datasets._search_dirs(spec, None)
    with pytest.raises(datasets.DatasetNotFoundError) as err:
        datasets.load_fashion_mnist()
    assert all(way in str(err.value) for way in WAYS), str(err.value)
    monkeypatch.setenv("TINYUNITS_NO_SYSTEM_DATA", "0")
    assert SYSTEM_DIR in datasets._search_dirs(spec, None)


def test_a_bad_hiding_value_is_refused(monkeypatch):
    monkeypatch.setenv("TINYUNITS_NO_SYSTEM_DATA", "yes")
    with pytest.raises(ValueError, match="TINYUNITS_NO_SYSTEM_DATA must be '1'"):
        datasets.load_fashion_mnist()


# ------------------------------------------------------------------------------ ensure
def test_ensure_takes_the_files_where_a_loader_finds_them(tmp_path, monkeypatch, fresh):
    make_idx_set(tmp_path / "data" / "fashion-mnist")
    monkeypatch.setenv("TINYUNITS_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("TINYUNITS_DATA_MIRROR", closed_port_url())  # a download would fail
    assert datasets.ensure("fashion-mnist") == tmp_path / "data" / "fashion-mnist"


def test_ensure_downloads_verifies_and_shows_progress(tmp_path, monkeypatch, fresh, capsys,
                                                       loopback_server):
    www, url = loopback_server
    arrays = fake_fashion_mirror(www, monkeypatch)
    monkeypatch.setenv("TINYUNITS_DATA_MIRROR", url)
    dest = datasets.ensure("fashion-mnist", progress=True)
    assert dest == tmp_path / "xdg-cache" / "tinyunits" / "fashion-mnist"
    assert capsys.readouterr().err.count("100%|") == len(IDX_NAMES)  # a full bar per file
    np.testing.assert_array_equal(datasets.load_fashion_mnist()[1],
                                  arrays["train-labels-idx1-ubyte"])
    monkeypatch.setenv("TINYUNITS_DATA_MIRROR", closed_port_url())  # the second time: no fetch
    assert datasets.ensure("fashion-mnist") == dest


def test_ensure_unreachable_says_every_way_in_one_message(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("TINYUNITS_DATA_MIRROR", closed_port_url())
    started = time.monotonic()
    with pytest.raises(datasets.DatasetNotFoundError) as err:
        datasets.ensure("fashion-mnist")
    assert time.monotonic() - started < 10
    message = str(err.value)
    assert "download failed" in message and "Connection refused" in message
    assert all(way in message for way in WAYS), message
    assert not list((tmp_path / "xdg-cache").rglob("*.gz"))


def test_ensure_refuses_files_that_do_not_match_the_pinned_hashes(tmp_path, monkeypatch, fresh,
                                                                  loopback_server):
    www, url = loopback_server
    make_idx_set(www)  # served under the real names, but not the real files
    monkeypatch.setenv("TINYUNITS_DATA_MIRROR", url)
    with pytest.raises(datasets.DatasetNotFoundError, match="does not match the known hash") as err:
        datasets.ensure("fashion-mnist")
    assert all(way in str(err.value) for way in WAYS)
    assert not [p for p in (tmp_path / "xdg-cache").rglob("*") if p.is_file()]


def test_ensure_names_a_data_set_it_does_not_know(capsys):
    with pytest.raises(ValueError, match="ensure: name must be one of"):
        datasets.ensure("fashion")
    with pytest.raises(SystemExit):
        datasets.main(["ensure", "fashion"])
    assert "invalid choice: 'fashion'" in capsys.readouterr().err


# ------------------------------------------------------------------ make test's data step
def run_make(tmp_path, env, target="test"):
    """`make -o install <target>` with a python that runs datasets.py for real but only
    logs the pytest runs: (returncode, make's output, the log of what python ran)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    log = tmp_path / "ran.log"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\n"
                    f"echo \"$*\" >> {log}\n"
                    f"if [ \"$1\" = -m ]; then exit 0; fi\n"  # pytest: logged, not run
                    f"exec {sys.executable} \"$@\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")} | env
    done = subprocess.run(["make", "-C", str(ROOT), "-o", "install", target, f"PY={fake}"],
                          env=env, capture_output=True, text=True, timeout=120)
    ran = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stdout + done.stderr, ran


def _env(tmp_path, **extra):
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home"),
            "TINYUNITS_DATA": "", "TINYUNITS_NO_SYSTEM_DATA": "1", **extra}


def test_make_test_stops_before_the_suite_when_the_data_cannot_be_had(tmp_path):
    started = time.monotonic()
    code, output, ran = run_make(tmp_path, _env(tmp_path, TINYUNITS_DATA_MIRROR=closed_port_url()))
    assert code != 0
    assert time.monotonic() - started < 30
    assert ran == ["datasets.py ensure fashion-mnist"]  # and no pytest run after it
    assert output.count("error: fashion-mnist") == 1 and all(way in output for way in WAYS)


def test_make_test_fetches_nothing_and_runs_both_suites_when_the_data_is_there(tmp_path):
    make_idx_set(tmp_path / "data" / "fashion-mnist")
    env = _env(tmp_path, TINYUNITS_DATA=str(tmp_path / "data"),
               TINYUNITS_DATA_MIRROR=closed_port_url())
    code, output, ran = run_make(tmp_path, env)
    assert code == 0, output
    assert ran == ["datasets.py ensure fashion-mnist", "-m pytest -q", "-m pytest -q"]
    assert f"fashion-mnist: files are in {tmp_path / 'data' / 'fashion-mnist'}" in output


@pytest.mark.skipif(not all((SYSTEM_DIR / (n + ".gz")).is_file() for n in IDX_NAMES),
                    reason="Debian's dataset-fashion-mnist is not installed")
def test_make_data_takes_the_debian_copy_when_it_is_installed(tmp_path):
    env = _env(tmp_path, TINYUNITS_NO_SYSTEM_DATA="", TINYUNITS_DATA_MIRROR=closed_port_url())
    code, output, ran = run_make(tmp_path, env, target="data")
    assert code == 0 and f"fashion-mnist: files are in {SYSTEM_DIR}" in output, output


def test_make_tour_needs_no_real_data():
    dry = subprocess.run(["make", "-C", str(ROOT), "-n", "-o", "install", "tour"],
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and "datasets.py" not in dry.stdout
    assert "gradcheck" in dry.stdout and "lessons/00_engine.py" in dry.stdout
    lesson = (ROOT / "lessons" / "00_engine.py").read_text()
    assert "load_" not in lesson  # its data are generated (datasets.spirals)


@pytest.mark.parametrize("mirror", ["http://127.0.0.1:9/files", "http://127.0.0.1:9/files/"])
def test_a_mirror_serves_every_file_under_its_own_name(monkeypatch, mirror):
    remotes = [r for spec in datasets._SPECS.values() for r in spec.remotes]
    monkeypatch.setenv("TINYUNITS_DATA_MIRROR", mirror)
    for remote in remotes:
        name = remote.url.rsplit("/", 1)[1]
        assert datasets._mirrored(remote.url) == "http://127.0.0.1:9/files/" + name
    monkeypatch.delenv("TINYUNITS_DATA_MIRROR")
    assert [datasets._mirrored(r.url) for r in remotes] == [r.url for r in remotes]
