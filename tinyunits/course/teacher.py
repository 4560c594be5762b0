"""The teacher's side of grade-all: which folders are submissions, what became of each
exercise (its status), the feedback files, and the per-exercise summary and plot.

A status says why an exercise has the points it has, which the score alone does not.
The grader sets it (grade.Result.outcome) from what it knows itself, never from what
the graded code printed:

    graded          the student's code ran and was judged (pass or fail)
    not attempted   its region still holds the stub (or raises NotImplementedError)
    no region       its file or its region's marker lines are missing or broken: nothing
                    of it could be read
    import error    the library with this region in does not import (a syntax error in
                    the region, say): no case could run
    time-out        it ran past its time limit
    not a copy      the folder holds no tinyunits/ to grade
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

from .exercises import BY_NAME

GRADED, NOT_ATTEMPTED, NO_REGION, IMPORT_ERROR, TIME_OUT, NOT_A_COPY = (
    "graded", "not attempted", "no region", "import error", "time-out", "not a copy")
STATUSES = (GRADED, NOT_ATTEMPTED, NO_REGION, IMPORT_ERROR, TIME_OUT, NOT_A_COPY)


def submission_folders(submissions) -> tuple:
    """(folders, files) of `submissions`, each sorted: the folders are the submissions,
    the files are what cannot be one (an unpacked zip, say). ValueError, saying what is
    wrong, for a path that is not a folder or holds no folder at all."""
    path = pathlib.Path(submissions)
    if not path.exists():
        raise ValueError(f"grade-all: {path} does not exist; give the folder that holds "
                         "one folder per student")
    if not path.is_dir():
        raise ValueError(f"grade-all: {path} is a file, not a folder of submissions")
    if (path / "tinyunits").is_dir():
        raise ValueError(f"grade-all: {path} is one copy (it holds tinyunits/): grade it with "
                         "`grade`, or give the folder that holds one copy per student")
    entries = sorted(path.iterdir())
    folders = [p for p in entries if p.is_dir()]
    if not folders:
        raise ValueError(f"grade-all: {path} holds no submission folder ({len(entries)} "
                         "files, no folder); each student's copy is one folder in it")
    return folders, [p for p in entries if not p.is_dir()]


def write_feedback(folder: pathlib.Path, student: str, text: str) -> pathlib.Path:
    """The student's feedback file in folder: the text `grade` prints for their copy."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{student}.txt"
    path.write_text(text + "\n", encoding="utf-8")
    return path


@dataclass
class Summary:
    """Per exercise, over the students graded: how many passed, and each status's count;
    and the entries of the submissions folder that were not graded (files)."""
    names: list
    skipped: list = field(default_factory=list)
    students: int = 0
    passed: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)

    def add(self, results, statuses):
        self.students += 1
        for r, s in zip(results, statuses):
            self.passed[r.name] = self.passed.get(r.name, 0) + (r.score == r.max_score)
            self.counts.setdefault(r.name, dict.fromkeys(STATUSES, 0))[s] += 1

    def rate(self, name) -> float:
        return self.passed.get(name, 0) / self.students if self.students else 0.0

    def text(self) -> str:
        """One line per exercise: its pass rate, then how many of each status."""
        shown = [s for s in STATUSES if any(c[s] for c in self.counts.values()) or s == GRADED]
        head = f"{'exercise':<20}{'points':>7}{'passed':>14}" + "".join(f"{s:>15}" for s in shown)
        lines = [f"per exercise, {self.students} students:", head]
        for name in self.names:
            counts = self.counts.get(name, dict.fromkeys(STATUSES, 0))
            passed = f"{self.passed.get(name, 0)} ({self.rate(name):.0%})"
            lines.append(f"{name:<20}{BY_NAME[name].points:>7}{passed:>14}"
                         + "".join(f"{counts[s]:>15}" for s in shown))
        return "\n".join(lines)

    def plot(self, path):
        """A bar per exercise: the share of students in each outcome, passed first."""
        from matplotlib.figure import Figure  # no pyplot: no display, no global state
        fig = Figure(figsize=(max(6.0, 0.45 * len(self.names) + 2), 4.5), layout="constrained")
        ax = fig.add_subplot()
        n = max(self.students, 1)
        x = range(len(self.names))
        parts = [("passed", [self.passed.get(k, 0) for k in self.names], "tab:green")]
        parts.append(("graded, failed", [self.counts.get(k, {}).get(GRADED, 0)
                                         - self.passed.get(k, 0) for k in self.names], "tab:red"))
        parts += [(s, [self.counts.get(k, {}).get(s, 0) for k in self.names], colour)
                  for s, colour in ((NOT_ATTEMPTED, "tab:gray"), (NO_REGION, "tab:brown"),
                                    (IMPORT_ERROR, "tab:purple"), (TIME_OUT, "tab:orange"),
                                    (NOT_A_COPY, "black"))]
        bottom = [0.0] * len(self.names)
        for label, counts, colour in parts:
            if any(counts):
                share = [c / n for c in counts]
                ax.bar(x, share, bottom=bottom, label=label, color=colour)
                bottom = [b + s for b, s in zip(bottom, share)]
        ax.set_xticks(list(x), self.names, rotation=60, ha="right")
        ax.set_ylabel(f"share of the {self.students} students")
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_title("grade-all: each exercise's outcome")
        fig.savefig(path)
