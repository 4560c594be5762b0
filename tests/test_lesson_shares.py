"""tools/lesson_shares.py and the counting behind it (_lesson.bookkeeping): what a lesson
prints, by kind, and the idea lines of its file."""
import io
import os
import pathlib
import subprocess
import sys
import textwrap
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lessons"))
sys.path.insert(0, str(ROOT / "tools"))
import _lesson  # noqa: E402
import lesson_shares  # noqa: E402

FAKE = textwrap.dedent('''\
    from _lesson import bookkeeping
    print("abc")
    with bookkeeping("rule"):
        print("rule!")
    with bookkeeping("store"):
        print("s" * 9)
        with bookkeeping("closing"):
            print("c")
        print("ss")
    ''')


def test_a_lessons_printed_characters_are_counted_by_kind(tmp_path, capsys):
    lesson = tmp_path / "99_fake.py"  # outside lessons/: the tool puts _lesson on the path
    lesson.write_text(FAKE)
    run = lesson_shares.printed(lesson, "tiny")
    assert run["returncode"] == 0, run["stderr"]
    # newlines count; after the inner closing block the store's kind is back
    assert run["counts"] == {"experiment": 4, "rule": 6, "store": 13, "closing": 2}
    assert lesson_shares.bookkeeping_share(run["counts"]) == pytest.approx(21 / 25)
    assert lesson_shares.main([str(lesson), "--mode", "tiny"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    # idea lines: the five prints; the import and the three with-headers are bookkeeping
    assert row[:9] == ["99_fake.py", "25", "6", "13", "2", "84.0", "%", "5/9", "56"]


def test_a_lessons_worker_processes_do_not_count_into_the_file(tmp_path):
    """A --full lesson's sweep workers import _lesson too; were the variable still set, each
    would write its own (empty) counts to the file at its exit, maybe after the lesson's."""
    lesson = tmp_path / "97_workers.py"
    lesson.write_text("import os, _lesson\nprint(_lesson.SHARES in os.environ)\n")
    run = lesson_shares.printed(lesson, "tiny")
    assert run["returncode"] == 0, run["stderr"]
    assert run["counts"]["experiment"] == len("False\n")


def test_a_lesson_that_fails_is_reported_and_fails_the_tool(tmp_path, capsys):
    lesson = tmp_path / "98_broken.py"
    lesson.write_text("import _lesson\nprint('half')\nraise SystemExit('the lesson broke')\n")
    assert lesson_shares.main([str(lesson), "--mode", "tiny"]) == 1
    out = capsys.readouterr().out
    assert "98_broken.py" in out and "FAILED (exit 1)" in out and "the lesson broke" in out


def test_without_the_variable_stdout_is_left_alone(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != _lesson.SHARES}
    run = subprocess.run([sys.executable, "-c", "import sys, _lesson; "
                          "print(type(sys.stdout).__name__, hasattr(sys.stdout, 'lesson_kind'))"],
                         cwd=ROOT / "lessons", env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["TextIOWrapper", "False"]
    with _lesson.bookkeeping("rule"):  # counts nothing, changes nothing
        pass
    with pytest.raises(ValueError, match="bookkeeping: kind must be one of"):
        with _lesson.bookkeeping("prose"):
            pass


def _counting(monkeypatch):
    """stdout counting by kind, in this process -> the stream (its text: .stream.getvalue()).
    Set inside the test: pytest's capture sets sys.stdout anew after a fixture's set-up."""
    stream = _lesson._CountingStdout(io.StringIO())
    monkeypatch.setattr(sys, "stdout", stream)
    return stream


def test_a_verdict_line_is_experiment_and_show_tags_its_rules_and_table(monkeypatch):
    counted = _counting(monkeypatch)
    results = _lesson.Results("paper", claims={"a": ("1", "{measured}"), "b": ("2", "{measured}")})
    results.add("a", "0.5", False, rule="RULE-ONE", measured="half", n=3, mean=0.5, se=0.1,
                source="store")
    with _lesson.bookkeeping("store"):  # a verdict line is the experiment wherever it is
        results.add("b", "2", True, rule="RULE-ONE", measured="all")
    verdict_lines = counted.stream.getvalue()
    assert counted.lesson_counts["experiment"] == len(verdict_lines)
    results.show()
    shown = counted.stream.getvalue()[len(verdict_lines):]
    assert counted.lesson_counts["rule"] == len("rule 1: RULE-ONE\n")
    assert counted.lesson_counts["closing"] == len(shown) - len("rule 1: RULE-ONE\n")
    assert counted.lesson_counts["experiment"] == len(verdict_lines)  # show() adds none
    assert counted.lesson_counts["store"] == 0


def test_the_stores_rows_count_as_store(tmp_path, monkeypatch):
    counted = _counting(monkeypatch)
    monkeypatch.setattr(_lesson, "STORE", str(tmp_path / "absent.sqlite"))
    module = types.SimpleNamespace(TRIAL=lambda s: {}, SWEEP="toy",
                                   paper_trials=lambda: [dict(x=1), dict(x=2)])
    _lesson.stored(module, "toy", lambda s: "all", lambda r: r["y"])
    assert counted.lesson_counts["store"] == len(counted.stream.getvalue()) > 0


IDEA_TEXT = '''\
"""A fake lesson.
Its idea.
"""
# %%
import math
from _lesson import figure, start
args, SIZE, S, res = start("99_fake", "Fake", None)
# the idea, in prose
n = S["n"]
xs = [math.sin(i) for i in range(n)]
for x in xs:
    res.add("claim", x,
            x > 0)
if SIZE == "tiny":
    xs = xs[:2]
else:
    xs = xs[:3]
fig = sum(xs)
figure(fig, "a.png")

def mean(v):
    start = 0
    return sum(v[start:]) / len(v)
T = trials.SIZES["quick"]
print(T["n"])
with _lesson.bookkeeping("rule"): print("a rule")
'''


def test_idea_lines_by_the_documented_rule():
    # idea: the docstring (3), the prose comment, the list, the for header, the if's body,
    # else and its body, fig, def mean and its body (a local `start` is no call of start());
    # bookkeeping: the cell marker, the imports, start(), the sizes alias S, res.add over
    # two lines, the if header on SIZE, figure(), T bound from SIZES and used, and a
    # one-line with bookkeeping
    assert lesson_shares.idea_lines(IDEA_TEXT) == (13, 25)
