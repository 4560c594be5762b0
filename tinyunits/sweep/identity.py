"""A trial's code identity: what its result depends on besides its settings.

A trial's identity is its settings *and its code*. code_identity(fn) hashes the
source of fn and of every function, class and constant of fn's own module that fn
reaches (by the names its code uses, transitively), not the library (tinyunits),
datasets.py or other installed packages, so that changing the library does not make
every stored row stale. Docstrings, comments and layout do not count. Each stored
row keeps the identity of the code that computed it, and run() recomputes a row
whose identity differs from fn's.
"""
import ast
import contextlib
import functools
import hashlib
import inspect
import os
import sys
import sysconfig
import textwrap
import types

from .. import backend, validate


def code_identity(fn) -> str:
    """What a trial's result depends on besides its settings, as 16 hex digits.

    A hash of the source of fn and of everything of fn's own module that fn reaches
    by the names its code uses, transitively: functions, classes (all their methods)
    and module-level constants (numbers, strings, containers, arrays; functions held
    in a constant are followed too). Functions fn holds in a closure or a
    functools.partial are followed into their own modules (of a closure's other
    values only numbers, strings and tuples count: a list it fills is not code; keep
    a module's caches in functools.lru_cache for the same reason). Not followed, only
    named: the library (tinyunits), datasets.py, the standard library and installed
    packages, so that changing the library does not make every stored row stale.
    Sources are compared as syntax trees without docstrings, so comments, layout and
    docstrings do not count. A name looked up at run time (getattr, globals()[...])
    is not seen.
    """
    validate.callables("sweep.code_identity", fn=fn)
    if fn is None:
        validate.fail("sweep.code_identity", "fn", "a function settings -> dict", fn, TypeError)
    parts = set()
    _reach(fn, parts, set())
    return hashlib.sha256("\n\0".join(sorted(parts)).encode()).hexdigest()[:16]


def qualified_name(obj) -> str:
    """`module.qualname` of a function or class (of its class for other objects)."""
    qualname = getattr(obj, "__qualname__", type(obj).__qualname__)
    return f"{getattr(obj, '__module__', None)}.{qualname}"


@functools.lru_cache(maxsize=None)
def _outside(module: str) -> bool:
    """Whether objects of `module` are only named in an identity, never followed."""
    if module is None or module.split(".")[0] in ("tinyunits", "datasets", "builtins"):
        return True
    path = getattr(sys.modules.get(module), "__file__", None)
    if path is None:
        return module != "__main__"  # a module built into Python
    roots = {sysconfig.get_path(p) for p in ("stdlib", "platstdlib", "purelib", "platlib")}
    return any(os.path.abspath(path).startswith(os.path.abspath(r) + os.sep) for r in roots if r)


def _source(obj) -> str:
    """obj's source as a syntax tree without docstrings or positions (layout and
    comments do not count); the text where it does not parse alone (a lambda inside
    a longer expression); its bytecode where there is no source file."""
    try:
        text = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        return _code_text(code) if code is not None else qualified_name(obj)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _code_text(code) -> str:
    consts = [_code_text(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()}|{code.co_names}|{consts}"


def _names(code) -> set:
    """Every global or attribute name a code object (and the code nested in it) uses."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _reach(obj, parts, seen, home=None):
    """Add obj (a function, class or other callable) and what it reaches to parts."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, functools.partial):
        parts.add(f"partial {_fingerprint(obj.args, parts, seen, None)} "
                  f"{_fingerprint(obj.keywords, parts, seen, None)}")
        return _reach(obj.func, parts, seen)
    obj = inspect.unwrap(obj) if callable(obj) else obj
    home = home or getattr(obj, "__module__", None)
    if isinstance(obj, types.MethodType):
        return _reach(obj.__func__, parts, seen, home)
    if isinstance(obj, types.FunctionType):
        parts.add(f"{qualified_name(obj)}: {_source(obj)}")
        for name in sorted(_names(obj.__code__)):
            if name in obj.__globals__:
                _global(name, obj.__globals__[name], parts, seen, home)
        for var, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            with contextlib.suppress(ValueError):  # an empty cell
                value = cell.cell_contents  # code and fixed values; not what a closure collects
                shown = (_fingerprint(value, parts, seen, None) if callable(value)
                         or isinstance(value, (type(None), bool, int, float, str, tuple))
                         else f"instance of {qualified_name(type(value))}")
                parts.add(f"{qualified_name(obj)} closure {var} = {shown}")
    elif isinstance(obj, type):
        parts.add(f"{qualified_name(obj)}: {_source(obj)}")
        for base in obj.__bases__:
            _global(base.__name__, base, parts, seen, home)
        for member in vars(obj).values():
            member = getattr(member, "__func__", getattr(member, "fget", member))
            if isinstance(member, types.FunctionType):
                for name in sorted(_names(member.__code__)):
                    if name in member.__globals__:
                        _global(name, member.__globals__[name], parts, seen, home)
    elif callable(obj) and not isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        parts.add(f"instance of {qualified_name(type(obj))} = {_fingerprint(vars(obj), parts, seen, None)}"
                  if hasattr(obj, "__dict__") else f"instance of {qualified_name(type(obj))}")
        _reach(type(obj), parts, seen)
    else:
        parts.add(qualified_name(obj))


def _global(name, value, parts, seen, home):
    """A module-level name a function of `home` uses: followed if it is home's own."""
    if isinstance(value, types.ModuleType):
        return
    parts.add(f"{home}.{name} = {_fingerprint(value, parts, seen, home)}")


def _fingerprint(value, parts, seen, home) -> str:
    """value as stable text; a function or class is named, and followed (added to parts)
    when it is home's own (home None: when it is not the library's or a package's)."""
    np = backend.host_module()
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}[{', '.join(_fingerprint(v, parts, seen, home) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"set[{', '.join(sorted(_fingerprint(v, parts, seen, home) for v in value))}]"
    if isinstance(value, dict):
        items = sorted((_fingerprint(k, parts, seen, home), _fingerprint(v, parts, seen, home))
                       for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, np.ndarray):
        return (f"array {value.dtype.str} {value.shape} "
                f"{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}")
    if isinstance(value, np.generic):
        return repr(value.item())
    if callable(value) or isinstance(value, type):
        module = getattr(inspect.unwrap(value) if callable(value) else value, "__module__", None)
        if isinstance(value, functools.partial) or (
                module == home if home is not None else not _outside(module)):
            _reach(value, parts, seen)
        return qualified_name(value)
    return f"instance of {qualified_name(type(value))}"


@functools.lru_cache(maxsize=None)
def _cached_identity(fn):
    return code_identity(fn)


def identity_here(fn):
    """fn's identity, computed once per process (when a worker first runs fn, its
    module is the one it imported then), or each time for an unhashable callable."""
    try:
        return _cached_identity(fn)
    except TypeError:
        return code_identity(fn)
