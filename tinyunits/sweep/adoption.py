"""adopt(): give stored rows fn's code identity, once fn is seen to compute them again.

Rows stored before identities were kept have none, and a change that leaves a trial's
numbers alone (a renamed helper) gives it a new one: either way run() would compute the
rows again. adopt() recomputes a few of them here and, only if every one comes out the
same bit for bit, stamps all of the sweep's rows with fn's identity.
"""
import json

from .. import validate
from .attempt import attempt
from .codec import trial_key
from .identity import identity_here
from .store import open_store, validated_name


def adopt(name, fn, store="sweeps.sqlite", verify=3):
    """Give the finished rows of sweep `name` that lack fn's code identity (rows stored
    before identities were kept, or by code since changed) that identity, after
    checking that fn still computes them.

    verify: how many of them to compute again, in this process (an int k: k rows spread
    evenly from the one that took least time when stored to the median one, so that
    runs of some length are among them), or the settings dicts of the ones. Only
    if every one comes out equal to its stored result, bit for bit, are all the rows
    stamped; otherwise nothing changes. -> {"checked": [{"settings", "equal",
    "seconds", "differences"}], "stamped": rows stamped, "code": the identity}.
    """
    where = "sweep.adopt"
    validated_name(where, name)
    validate.callables(where, fn=fn)
    if fn is None:
        validate.fail(where, "fn", "a function settings -> dict", fn, TypeError)
    if isinstance(verify, bool) or not (validate.is_int(verify) and verify >= 1
                                        or isinstance(verify, list) and verify
                                        and all(isinstance(v, dict) for v in verify)):
        validate.fail(where, "verify", "an int >= 1 or a non-empty list of settings dicts",
                      verify, TypeError)
    code = identity_here(fn)
    db = open_store(store, where, write=True)
    try:
        rows = db.execute("SELECT key, settings, result, seconds FROM trials WHERE sweep = ? "
                          "AND status = 'done' AND code IS NOT ? ORDER BY seconds, key",
                          (name, code)).fetchall()
        if isinstance(verify, int):
            spread = {round(i * (len(rows) // 2) / max(verify - 1, 1)) for i in range(verify)}
            picked = [rows[i] for i in sorted(spread)] if rows else []
        else:
            by_key = {row[0]: row for row in rows}
            missing = [v for v in verify if trial_key(v) not in by_key]
            if missing:
                raise ValueError(f"{where}: {len(missing)} of the settings to verify are not "
                                 f"finished rows of {name!r} without fn's identity, e.g. "
                                 f"{missing[0]!r}")
            picked = [by_key[trial_key(v)] for v in verify]
        checked = []
        for _, settings, stored, _ in picked:
            result, error, seconds, *_ = attempt(fn, json.loads(settings))
            differences = ([f"the trial failed: {error.strip().splitlines()[-1]}"] if error
                           else _differences(json.loads(stored), json.loads(result)))
            checked.append(dict(settings=json.loads(settings), equal=not differences,
                                seconds=seconds, differences=differences))
        stamped = 0
        if checked and all(c["equal"] for c in checked):
            stamped = db.execute("UPDATE trials SET code = ? WHERE sweep = ? AND status = "
                                 "'done' AND code IS NOT ?", (code, name, code)).rowcount
    finally:
        db.close()
    return dict(checked=checked, stamped=stamped, code=code)


def _differences(old, new, where="result"):
    """Where two stored (encoded) results differ, down to the value."""
    if isinstance(old, dict) and isinstance(new, dict):
        if set(old) != set(new):
            return [f"{where}: keys {sorted(old)} became {sorted(new)}"]
        return [d for k in old for d in _differences(old[k], new[k], f"{where}[{k!r}]")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new))
                for d in _differences(a, b, f"{where}[{i}]")]
    same = old == new and type(old) is type(new)
    return [] if same else [f"{where}: {str(old)[:60]} became {str(new)[:60]}"]
