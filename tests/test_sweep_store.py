"""tinyunits/sweep/store.py: the SQLite store. load() reads what was stored (an old
store too, without writing), a stale row stays until its new result is stored, a path
that cannot be opened is an error naming it, and the lessons' tables read the rows of
their trial's current code."""
import os
import sqlite3

import pytest

from tinyunits import sweep
from sweep_support import (ROOT, assert_checked_by_name, bad_arguments, legacy_store, square,
                           write_module)

backend_free = pytest.mark.backend_free("the sweep's machinery, no tinyunits op")


def test_load_names_a_missing_store(tmp_path):
    with pytest.raises(FileNotFoundError, match="sweep.load: no store"):
        sweep.load("s", str(tmp_path / "none.sqlite"))


@backend_free
def test_a_stale_row_stays_until_its_new_run_succeeds(tmp_path, monkeypatch):
    store = str(tmp_path / "s.sqlite")
    good = write_module(tmp_path, monkeypatch).trial  # reload replaces the module's names
    sweep.run("keep", good, [{"x": 1}], store=store)
    broken = write_module(tmp_path, monkeypatch, offset="undefined_name")
    with pytest.warns(RuntimeWarning) as caught:
        assert sweep.run("keep", broken.trial, [{"x": 1}], store=store) == [None]
    assert any("NameError" in str(w.message) for w in caught)
    (row,) = sweep.load("keep", store, fn=broken.trial)
    assert row["status"] == "done" and row["result"]["y"] == 2 and row["stale"]
    assert "NameError" in row["error"] and row["attempts"] == 3
    assert sweep.load("keep", store, fn=good)[0]["stale"] is False


@backend_free
def test_a_legacy_store_is_read_migrated_in_place_and_its_rows_are_stale(tmp_path):
    store = str(tmp_path / "old.sqlite")
    trials = [{"x": x} for x in range(3)]
    legacy_store(store, square, trials)
    rows = sweep.load("old", store, fn=square)  # reading changes nothing
    assert [(r["code"], r["stale"]) for r in rows] == [(None, True)] * 3
    assert "code" not in [c[1] for c in sqlite3.connect(store).execute("PRAGMA table_info(trials)")]
    with pytest.warns(RuntimeWarning, match="3 stored trials"):
        results = sweep.run("old", square, trials, store=store)
    assert results == [{"square": x * x} for x in range(3)]
    columns = [c[1] for c in sqlite3.connect(store).execute("PRAGMA table_info(trials)")]
    assert columns[-2:] == ["code", "library"]
    assert all(r["stale"] is False and r["attempts"] == 2 for r in sweep.load("old", store, fn=square))


# --------------------------------------------------------------------------- store paths
def bad_store(tmp_path, kind):
    """A store path that cannot be opened for writing, and the part of the message naming why."""
    if kind == "missing folder":
        return str(tmp_path / "no" / "such" / "s.sqlite"), "does not exist"
    if kind == "a folder":
        return str(tmp_path), "is a folder"
    path = tmp_path / "s.sqlite"
    if kind == "corrupt":
        path.write_bytes(b"SQLite format 3\0" + bytes(range(256)) * 8)
    elif kind == "foreign text":
        path.write_text("name,lr\nhannet,0.05\n" * 200)
    elif kind == "foreign sqlite":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE results (x)")
        db.commit()
        db.close()
    elif kind == "other trials table":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE trials (id INTEGER, value REAL)")
        db.commit()
        db.close()
    elif kind == "read-only file":
        legacy_store(str(path), square, [{"x": 1}])
        path.chmod(0o444)
        return str(path), "is read-only"
    elif kind == "read-only folder":
        folder = tmp_path / "ro"
        folder.mkdir()
        legacy_store(str(folder / "s.sqlite"), square, [{"x": 1}])
        folder.chmod(0o555)
        return str(folder / "s.sqlite"), "read-only folder"
    return str(path), "is not a sweep store"


WRITERS = {
    "run": lambda store: sweep.run("old", square, [{"x": 1}], store=store),
    "adopt": lambda store: sweep.adopt("old", square, store, verify=1),
    "connect": lambda store: sweep.connect(store),
}
KINDS = ["missing folder", "a folder", "corrupt", "foreign text", "foreign sqlite",
         "other trials table", "read-only file", "read-only folder"]


@backend_free
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("caller", sorted(WRITERS))
def test_a_store_that_cannot_be_opened_is_an_error_naming_it(tmp_path, caller, kind):
    path, why = bad_store(tmp_path, kind)
    before = sorted(os.listdir(tmp_path))
    content = open(path, "rb").read() if os.path.isfile(path) else None
    try:
        with pytest.raises((OSError, ValueError)) as raised:
            WRITERS[caller](path)
    finally:
        for folder in (tmp_path / "ro",):
            if folder.exists():
                folder.chmod(0o755)
    message = str(raised.value)
    assert message.startswith(f"sweep.{caller}: ") and repr(path) in message and why in message
    assert not isinstance(raised.value, sqlite3.Error)
    assert sorted(os.listdir(tmp_path)) == before  # nothing created beside it
    if content is not None:
        assert open(path, "rb").read() == content


@backend_free
@pytest.mark.parametrize("kind", KINDS)
def test_load_reads_what_it_can_and_names_a_store_it_cannot(tmp_path, kind):
    path, why = bad_store(tmp_path, kind)
    try:
        if kind.startswith("read-only"):  # reading needs no write access
            assert [r["result"] for r in sweep.load("old", path)] == [{"square": 1}]
            return
        with pytest.raises((OSError, ValueError)) as raised:
            sweep.load("old", path)
    finally:
        if (tmp_path / "ro").exists():
            (tmp_path / "ro").chmod(0o755)
    message = str(raised.value)
    assert message.startswith("sweep.load: ") and repr(path) in message
    assert not isinstance(raised.value, sqlite3.Error)


@backend_free
@pytest.mark.parametrize("argument, value, error, message",
                         bad_arguments({"name", "store", "fn"}))
def test_load_checks_its_arguments_by_name(tmp_path, argument, value, error, message):
    call = lambda **k: sweep.load(**({"name": "s"} | k))  # noqa: E731
    assert_checked_by_name(tmp_path, "load", call, argument, value, error, message)


# --------------------------------------------------------------------------- the lessons' tables
def stored_settings(settings):
    """Stands in for a trial: its result is part of its settings."""
    return settings["result"]


def settings_result(settings):
    """stored_settings by other code: rows it stored are stale for stored_settings."""
    return dict(settings["result"])


def test_lesson_tables_are_built_from_the_store(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(ROOT)
    from lessons.trials import focusing, hannet
    for module in (focusing, hannet):  # the tables read rows of their TRIAL's code
        monkeypatch.setattr(module, "TRIAL", stored_settings)
    store = str(tmp_path / "s.sqlite")
    stale = [dict(net="hannet", lr=0.05, seed=9, steps=10, result=dict(test_acc=0.1, diverged=True))]
    sweep.run(hannet.SWEEP, settings_result, stale, store=store)  # by other code: left out, said so
    accs = [0.9, 0.5, 1.0, 0.7]
    grid = ([dict(net="hannet", lr=0.05, seed=i, steps=10,
                  result=dict(test_acc=a, diverged=a < 0.6)) for i, a in enumerate(accs)]
            + [dict(net="fcnet", lr=0.25, seed=0, steps=10, result=dict(test_acc=0.5, diverged=True))]
            + [dict(net="hannet", lr=0.1, seed=i, steps=10, result=dict(test_acc=a, diverged=False))
               for i, a in enumerate([0.95, 0.6, 0.8])])  # seed 3 lacks lr 0.1: not in "best"
    outside = [dict(net="hannet", lr=0.5, seed=0, steps=10, result=dict(test_acc=0.2, diverged=True))]
    sweep.run(hannet.SWEEP, stored_settings, grid + outside, store=store)
    monkeypatch.setattr(hannet, "paper_trials", lambda: grid + stale)  # `outside`: not shown
    lines = hannet.table(store).splitlines()
    assert lines[0].split()[:7] == ["net", "lr", "n", "median", "min", "max", "diverged"]
    assert lines[1].split() == ["fcnet", "0.25", "1", "50.0%", "50.0%", "50.0%", "1"]
    assert lines[2].split() == ["hannet", "0.05", "4", "80.0%", "50.0%", "100.0%", "1"]
    assert lines[3].split()[:3] == ["hannet", "0.1", "3"]
    # each seed's best lr: 0.95, 0.6 (a diverged 0.5 at lr 0.05 loses to it), 1.0
    assert lines[4].split() == ["hannet", "best", "3", "95.0%", "60.0%", "100.0%", "0"]
    assert lines[5].startswith("STALE, not shown: 1 stored rows computed by other code")
    assert "`python -m lessons.trials hannet --adopt 3`" in lines[5]
    assert len(lines) == 6  # fcnet has one lr: no best row
    sweep.run(focusing.SWEEP, stored_settings, [
        dict(trial=i, result=dict(noisy=i < 3, focus=f, dense=d))
        for i, (f, d) in enumerate([(0.9, 0.8), (0.7, 0.8), (1.0, 0.6), (0.5, 0.6)])], store=store)
    lines = focusing.table(store).splitlines()
    assert lines[1].split() == ["noisy", "3", "86.7%", "73.3%", "+13.33", "pts", "2", "of", "3"]
    assert lines[2].split() == ["clean", "1", "50.0%", "60.0%", "-10.00", "pts", "0", "of", "1"]


def fails_without_a_result(settings):
    """stored_settings that fails on a trial with no result (the store records it failed)."""
    if settings["result"] is None:
        raise ValueError("no result")
    return settings["result"]


def test_trials_status_counts_the_given_trials_by_state(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(ROOT)
    from lessons.trials.__main__ import status
    store = str(tmp_path / "s.sqlite")
    trials = [dict(seed=i, result=None if i == 3 else dict(x=i)) for i in range(6)]
    assert status("s", stored_settings, trials, store).split()[1:9] == [
        "6", "trials", "0", "done", "0", "stale", "0", "failed"]  # no store yet: nothing held
    sweep.run("s", settings_result, trials[:1], store=store)  # stale for stored_settings
    with pytest.warns(RuntimeWarning):
        sweep.run("s", fails_without_a_result, trials[1:4], store=store)
    sweep.run("s", stored_settings, [dict(seed=9, result=dict(x=9))], store=store)  # not asked
    line = status("s", fails_without_a_result, trials, store)
    assert line.split()[:11] == ["s", "6", "trials", "2", "done", "1", "stale", "1", "failed",
                                 "4", "to"]
