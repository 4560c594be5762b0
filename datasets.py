"""Every data set the tinyunits lessons use: real-file loaders and exact synthetic generators.

Everything here returns host NumPy arrays (never CuPy); move them to the device
with the backend when training. Images come as float32 (N, C, H, W), class labels
as int64, regression targets as float32 of shape (N,).

Where real files are looked for
-------------------------------
Each data set lives in a folder of its own (``mnist/``, ``fashion-mnist/``,
``cifar-10-batches-py/``, ``sgemm/``). A loader takes the first of these
directories that holds every file it needs:

1. the ``root`` argument: ``root/<folder>``, then ``root`` itself (a ``root`` that
   does not exist is an error, never a fall-back to the places below);
2. ``$TINYUNITS_DATA/<folder>``;
3. the user cache ``~/.cache/tinyunits/<folder>`` (``$XDG_CACHE_HOME/tinyunits``
   when that variable is set);
4. system paths: Debian's package ``dataset-fashion-mnist`` installs the real
   Fashion-MNIST in ``/usr/share/datasets/fashion-mnist``. ``TINYUNITS_NO_SYSTEM_DATA=1``
   hides them, so a machine with the package can play one without it (the tests
   of ``make test``'s data step do).

When none does, the loader raises :class:`DatasetNotFoundError` naming the missing
files, every directory it looked in, and the ways to get them (the command that
fetches them, and the Debian package where there is one)::

    python datasets.py download mnist | fashion-mnist | cifar10 | sgemm
        [--root DIR] [--no-verify] [--quiet]

``python datasets.py ensure NAME`` (what ``make test`` runs before the suite)
does nothing when a loader would find the files, downloads them otherwise, and
when that fails prints one message naming both ways to get them and exits 1.
``TINYUNITS_DATA_MIRROR=URL`` fetches every file by its name from the folder URL
instead of its official address (a course server on a network without the
internet); the pinned SHA-256 decides as for the official files.

Downloading is pooch's (https://www.fatiando.org/pooch): it fetches over HTTP(S)
or FTP into ``root/<folder>`` (or ``$TINYUNITS_DATA/<folder>``, or the cache),
streams each file to a temporary file in that folder, checks its SHA-256 against
the value pinned in ``_SPECS`` and only then moves it into place, so a folder
never holds a half-written or unverified file; it draws the progress bar (tqdm)
and takes the named members out of the CIFAR-10 and SGEMM archives. What stays
here is what is particular to tinyunits: where files are looked for, the pinned
hashes, the mirror, and the message naming the ways to get the files. A file
with no pinned SHA-256 (SGEMM) is refused unless ``--no-verify`` is given; a
pinned one is always checked.

Installed with pip, this file is the module ``tinyunits_datasets`` (run it as
``python -m tinyunits_datasets``): ``datasets`` is Hugging Face's package, which
one of the two would shadow (see setup.py). In a checkout it stays ``datasets.py``,
the name the lessons import.

Normalisations
--------------
* MNIST, Fashion-MNIST, CIFAR-10: uint8 pixels p become ``p / 255`` in [0, 1]
  (``normalize="unit"``) or ``(p / 255 - 0.5) / 0.5`` in [-1, 1]
  (``normalize="standard"``, the two-argument paper's MNIST setting).
* SGEMM: log2 of the ten power-of-two inputs and of the response, then every
  input column standardised with the mean and standard deviation of the
  training split; the response stays in log2 milliseconds.
* Synthetic sets: as each generator's docstring states.

Files are validated as they are read (IDX magic numbers and sizes, gzip
integrity, label ranges, CSV columns, pickle contents); a bad file raises
:class:`DatasetError` (a ``ValueError``) naming the file and the problem.
"""

import argparse
import dataclasses
import gzip
import math
import numbers
import os
import pickle
import struct
import sys
import tarfile
import tempfile
import urllib.parse
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import numpy as np
import pooch

# How a user runs this file: the script in a checkout, the module once installed (setup.py).
_COMMAND = ("python datasets.py" if __spec__ is None or __spec__.name == "datasets"
            else f"python -m {__spec__.name}")


class DatasetError(ValueError):
    """A data file is malformed, corrupt or fails verification; the message names the file."""


class DatasetNotFoundError(FileNotFoundError):
    """The files of a data set are in none of the searched directories."""


# --------------------------------------------------------------------------------------
# Where files are, and where they come from


@dataclasses.dataclass(frozen=True)
class _Remote:
    """One file to download; for an archive, ``members`` are the paths inside it of the files to
    take out (each lands in the data set's folder under its base name)."""

    url: str
    sha256: str | None
    members: tuple = ()


@dataclasses.dataclass(frozen=True)
class _Spec:
    """A real data set: its folder, the files its loader needs and where to fetch them."""

    name: str
    folder: str
    files: tuple
    remotes: tuple
    gzip_ok: bool = False
    system_dirs: tuple = ()
    package: str | None = None  # the Debian package that fills system_dirs


_IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
_CIFAR_FILES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)

# SHA-256 values are those published in tensorflow/datasets
# (tensorflow_datasets/url_checksums/mnist.txt, fashion_mnist.txt, cifar10.csv).
# No published SHA-256 of the UCI SGEMM archive was found, so it stays None.
_MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
_FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_SPECS = {
    spec.name: spec
    for spec in (
        _Spec(
            "mnist",
            "mnist",
            _IDX_FILES,
            (
                _Remote(_MNIST_URL + "train-images-idx3-ubyte.gz",
                        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
                _Remote(_MNIST_URL + "train-labels-idx1-ubyte.gz",
                        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
                _Remote(_MNIST_URL + "t10k-images-idx3-ubyte.gz",
                        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
                _Remote(_MNIST_URL + "t10k-labels-idx1-ubyte.gz",
                        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"),
            ),
            gzip_ok=True,
        ),
        _Spec(
            "fashion-mnist",
            "fashion-mnist",
            _IDX_FILES,
            (
                _Remote(_FASHION_URL + "train-images-idx3-ubyte.gz",
                        "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"),
                _Remote(_FASHION_URL + "train-labels-idx1-ubyte.gz",
                        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845"),
                _Remote(_FASHION_URL + "t10k-images-idx3-ubyte.gz",
                        "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073"),
                _Remote(_FASHION_URL + "t10k-labels-idx1-ubyte.gz",
                        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5"),
            ),
            gzip_ok=True,
            system_dirs=("/usr/share/datasets/fashion-mnist",),
            package="dataset-fashion-mnist",
        ),
        _Spec(
            "cifar10",
            "cifar-10-batches-py",
            _CIFAR_FILES,
            (
                _Remote("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                        "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
                        tuple("cifar-10-batches-py/" + f for f in _CIFAR_FILES)),
            ),
        ),
        _Spec(
            "sgemm",
            "sgemm",
            ("sgemm_product.csv",),
            (
                _Remote("https://archive.ics.uci.edu/static/public/440/"
                        "sgemm+gpu+kernel+performance.zip", None, ("sgemm_product.csv",)),
            ),
        ),
    )
}


def _need(ok, where, name, expected, got, error=ValueError):
    """The library's one error form: "<callable>: <argument> must be <expected>, got <...>"."""
    if not ok:
        raise error(f"{where}: {name} must be {expected}, got {got!r}")


def _count(where, name, value, low=1):
    """An int >= low (bool refused), checked before any array is made."""
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    _need(is_int, where, name, f"an int >= {low}", value, TypeError)
    _need(value >= low, where, name, f"an int >= {low}", value)


def _real(where, name, value, low=None, high=None, low_open=False):
    """A finite real number (bool refused) >= low (> low if low_open) and <= high."""
    above = "" if low is None else f" {'>' if low_open else '>='} {low}"
    below = "" if high is None else f" and <= {high}" if above else f" <= {high}"
    expected = f"a finite number{above}{below}"
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    _need(is_real, where, name, expected, value, TypeError)
    in_range = ((low is None or (value > low if low_open else value >= low))
                and (high is None or value <= high))
    _need(math.isfinite(value) and in_range, where, name, expected, value)
    return float(value)


def _seed(where, seed):
    """A seed for numpy.random.default_rng: an int >= 0 (None would not repeat)."""
    _count(where, "seed", seed, low=0)


def _choice(where, name, value, choices):
    _need(isinstance(value, str) and value in choices, where, name,
          f"one of {', '.join(map(repr, choices))}", value)


def _flag(where, name, value):
    _need(isinstance(value, bool), where, name, "True or False", value, TypeError)


def _fits_float32(where, name, value, *arrays):
    """Refuse data that a huge ``name`` pushed past float32's range (inf, or NaN from it)."""
    _need(all(np.isfinite(a).all() for a in arrays), where, name,
          "small enough for the data to fit in float32", value)


def _spec(name, where="download"):
    """The spec of data set ``name``, or a ValueError listing the known names."""
    _need(name in _SPECS, where, "name", f"one of {', '.join(sorted(_SPECS))}", name)
    return _SPECS[name]


def _cache_dir():
    """The user cache directory, read from the environment at call time.

    Not pooch.os_cache: that is ~/Library/Caches on macOS and AppData on Windows,
    and the README names one place for every system.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tinyunits"


def _download_dir(spec, root):
    """The folder ``download`` writes into: root, else $TINYUNITS_DATA, else the cache."""
    base = root or os.environ.get("TINYUNITS_DATA") or _cache_dir()
    return Path(base) / spec.folder


def _search_dirs(spec, root):
    """Candidate directories in search order (see the module docstring)."""
    dirs = []
    if root is not None:
        dirs += [Path(root) / spec.folder, Path(root)]
    if os.environ.get("TINYUNITS_DATA"):
        dirs.append(Path(os.environ["TINYUNITS_DATA"]) / spec.folder)
    dirs.append(_cache_dir() / spec.folder)
    hide = os.environ.get("TINYUNITS_NO_SYSTEM_DATA", "")
    _need(hide in ("", "0", "1"), "datasets", "TINYUNITS_NO_SYSTEM_DATA",
          "'1' (hide the system copies), '0' or unset", hide)
    if hide != "1":
        dirs += [Path(d) for d in spec.system_dirs]
    return dirs


def _file_in(directory, name, gzip_ok):
    """The path of ``name`` (or ``name.gz`` when allowed) in ``directory``, or None."""
    for candidate in ((name + ".gz", name) if gzip_ok else (name,)):
        path = directory / candidate
        if path.is_file():
            return path
    return None


def _check_root(where, root):
    _need(root is None or isinstance(root, (str, os.PathLike)), where, "root",
          "None or a directory path", root, TypeError)


def _locate(spec, root, where):
    """Map each needed file name to its path in the first complete directory, or raise."""
    _check_root(where, root)
    if root is not None and not Path(root).is_dir():  # a typo must not fall back silently
        raise DatasetNotFoundError(f"{spec.name}: root must be an existing directory, "
                                   f"got {os.fspath(root)!r}; fetch the files into it with:\n"
                                   f"  {_COMMAND} download {spec.name} --root {root}")
    searched = []
    for directory in _search_dirs(spec, root):
        found = {name: _file_in(directory, name, spec.gzip_ok) for name in spec.files}
        missing = [name for name, path in found.items() if path is None]
        if not missing:
            return found
        searched.append(f"  {directory}: "
                        + ("no such directory" if not directory.is_dir()
                           else "missing " + ", ".join(missing)))
    shown = [name + "[.gz]" if spec.gzip_ok else name for name in spec.files]
    raise DatasetNotFoundError(f"{spec.name}: cannot find the files {', '.join(shown)}.\n"
                               "Looked in:\n" + "\n".join(searched) + "\n" + _ways(spec, root))


def _ways(spec, root):
    """How to get the files of ``spec``: the Debian package if any, the download, the folders."""
    flag = f" --root {root}" if root is not None else ""
    ways = [f"  fetch them (checked against pinned SHA-256): {_COMMAND} download "
            f"{spec.name}{flag}",
            f"  or copy them from elsewhere into {_download_dir(spec, root)} (or into "
            f"<DIR>/{spec.folder} and pass root=DIR or set TINYUNITS_DATA=DIR)"]
    if spec.package is not None:
        ways.insert(0, f"  install the Debian package: sudo apt-get install {spec.package} "
                       f"(it fills {', '.join(spec.system_dirs)})")
    return "Get them one of these ways:\n" + "\n".join(ways)


# --------------------------------------------------------------------------------------
# Downloading


def _fetch(url, dest, sha256, *, no_verify=False, progress=False):
    """Download ``url`` to the file ``dest`` with pooch, installed only once its SHA-256 matches.

    With ``sha256=None`` the file cannot be verified and is refused unless
    ``no_verify`` is true; its digest is then printed so that it can be pinned.
    """
    dest = Path(dest)
    if sha256 is None and not no_verify:
        raise DatasetError(
            f"{url}: no SHA-256 is pinned for this file, so it cannot be verified; refusing to "
            "install it. Rerun with --no-verify to accept it unverified.")
    known_hash = None if sha256 is None else "sha256:" + sha256
    try:
        pooch.retrieve(url, known_hash, fname=dest.name, path=dest.parent, progressbar=progress)
    except ValueError as exc:  # pooch: a hash mismatch, or a URL scheme it cannot fetch
        raise DatasetError(f"{url}: {exc}") from exc
    except OSError as exc:  # requests' errors are OSErrors
        raise OSError(f"could not fetch {url}: {exc}. Without network access, copy the file "
                      f"by hand into {dest.parent}") from exc
    if sha256 is None:
        print(f"warning: installed {dest} UNVERIFIED (sha256 {pooch.file_hash(str(dest))})",
              file=sys.stderr)


def _unpack(archive, members, dest_dir):
    """Move ``members`` (paths inside the archive) out of a verified archive into ``dest_dir``.

    pooch extracts only the members named, so no other path stored in the
    archive (absolute, ``..``) is ever written; each lands in ``dest_dir`` under
    its base name, and the archive is deleted.
    """
    unpacker = pooch.Unzip if archive.suffix == ".zip" else pooch.Untar
    with tempfile.TemporaryDirectory(dir=dest_dir, prefix=".unpack-") as tmp:
        try:
            unpacker(members=list(members), extract_dir=tmp)(str(archive), "download", None)
        except (tarfile.TarError, zipfile.BadZipFile) as exc:
            raise DatasetError(f"{archive}: not a readable archive ({exc})") from exc
        missing = [m for m in members if not Path(tmp, m).is_file()]
        if missing:
            raise DatasetError(f"{archive}: the archive lacks {', '.join(missing)}")
        for member in members:
            os.replace(Path(tmp, member), Path(dest_dir) / PurePosixPath(member).name)
    archive.unlink()


def _file_name(url):
    """The last path segment of ``url``: the name a download is stored under."""
    return PurePosixPath(urllib.parse.urlparse(url).path).name


def _mirrored(url):
    """``url``, or the file of that name under $TINYUNITS_DATA_MIRROR when it is set."""
    mirror = os.environ.get("TINYUNITS_DATA_MIRROR")
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + _file_name(url)


def download(name, root=None, *, no_verify=False, progress=None):
    """Fetch the official files of data set ``name`` and return the folder holding them.

    Files already present are kept. Archives (CIFAR-10, SGEMM) are verified,
    unpacked and then deleted. ``progress=None`` shows a bar only on a terminal.
    ``no_verify`` accepts files that have no pinned SHA-256; pinned ones are
    always checked.
    """
    spec = _spec(name)
    _check_root("download", root)
    _flag("download", "no_verify", no_verify)
    _need(progress is None or isinstance(progress, bool), "download", "progress",
          "None, True or False", progress, TypeError)
    dest = _download_dir(spec, root)
    if progress is None:
        progress = sys.stderr.isatty()
    for remote in spec.remotes:
        fetched = dest / _file_name(remote.url)
        wanted = [PurePosixPath(m).name for m in remote.members] or [fetched.name]
        if all((dest / w).is_file() for w in wanted):
            continue
        _fetch(_mirrored(remote.url), fetched, remote.sha256, no_verify=no_verify,
               progress=progress)
        if remote.members:
            _unpack(fetched, remote.members, dest)
    return dest


def ensure(name, root=None, *, progress=None):
    """The folder holding data set ``name``: where the loaders find it, else downloaded.

    ``make test`` runs this first (``python datasets.py ensure fashion-mnist``), so
    a machine without the data fetches it, with a progress bar, before any test
    needs it. When the files are nowhere and the download fails, raises
    :class:`DatasetNotFoundError` with one message: why it failed and every way to
    get the files.
    """
    spec = _spec(name, "ensure")
    try:
        return next(iter(_locate(spec, root, "ensure").values())).parent
    except DatasetNotFoundError:
        pass
    try:
        return download(name, root, progress=progress)
    except (ValueError, OSError) as exc:  # DatasetError is a ValueError
        raise DatasetNotFoundError(f"{name}: not on this machine, and the download failed:\n"
                                   f"  {exc}\n{_ways(spec, root)}") from exc


# --------------------------------------------------------------------------------------
# Image files: IDX (MNIST, Fashion-MNIST) and CIFAR-10 python batches


def _read_bytes(path):
    """The content of ``path``, gunzipped when it starts with the gzip magic bytes."""
    raw = Path(path).read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{path}: corrupt or truncated gzip data ({exc})") from exc


def _read_idx(path, ndim, item_shape):
    """Parse an IDX file of unsigned bytes with ``ndim`` dimensions and items of ``item_shape``."""
    raw = _read_bytes(path)
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetError(f"{path}: {len(raw)} bytes, too short for an IDX header "
                           f"of {ndim} dimensions ({header} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    expected = 0x0800 | ndim  # type code 0x08 = unsigned byte
    if magic != expected:
        raise DatasetError(f"{path}: IDX magic number 0x{magic:08x}, expected 0x{expected:08x} "
                           f"(unsigned bytes, {ndim} dimension(s))")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    if dims[1:] != item_shape:
        raise DatasetError(f"{path}: items of shape {dims[1:]}, expected {item_shape}")
    size = math.prod(dims)
    if len(raw) - header != size:
        raise DatasetError(f"{path}: header announces shape {dims} = {size} bytes of data, "
                           f"the file holds {len(raw) - header}")
    return np.frombuffer(raw, np.uint8, offset=header).reshape(dims)


def _check_labels(labels, n_images, n_classes, where):
    """Labels as int64, after checking their count and range."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != n_images:
        raise DatasetError(f"{where}: {labels.shape} labels for {n_images} images")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise DatasetError(f"{where}: labels range over [{labels.min()}, {labels.max()}], "
                           f"expected 0..{n_classes - 1}")
    return labels.astype(np.int64)


def _to_float(images, normalize):
    """uint8 images to float32: [0, 1] for "unit", (x - 0.5) / 0.5 for "standard"."""
    x = images.astype(np.float32) / np.float32(255)
    return (x - np.float32(0.5)) / np.float32(0.5) if normalize == "standard" else x


def _load_idx_set(name, root, normalize):
    """(x_train, y_train, x_test, y_test) of an MNIST-format data set."""
    where = f"load_{name.replace('-', '_')}"
    _choice(where, "normalize", normalize, ("unit", "standard"))
    paths = _locate(_spec(name), root, where)
    out = []
    for split in ("train", "t10k"):
        images = _read_idx(paths[f"{split}-images-idx3-ubyte"], 3, (28, 28))
        labels_path = paths[f"{split}-labels-idx1-ubyte"]
        labels = _check_labels(_read_idx(labels_path, 1, ()), len(images), 10, labels_path)
        out += [_to_float(images[:, None], normalize), labels]
    return tuple(out)


def load_mnist(root=None, normalize="unit"):
    """MNIST from its IDX files (gzipped or not).

    Returns (x_train, y_train, x_test, y_test): x float32 (N, 1, 28, 28), in [0, 1]
    for ``normalize="unit"`` or [-1, 1] for ``"standard"``; y int64 in 0..9.
    60000 training and 10000 test images.
    """
    return _load_idx_set("mnist", root, normalize)


def load_fashion_mnist(root=None, normalize="unit"):
    """Fashion-MNIST from its IDX files; same layout and conventions as :func:`load_mnist`."""
    return _load_idx_set("fashion-mnist", root, normalize)


def _plain_dtype(*args):
    """numpy.dtype for the unpickler, refusing dtypes that hold Python objects."""
    dtype = np.dtype(*args)
    if dtype.hasobject:
        raise pickle.UnpicklingError(f"dtype {dtype} holds Python objects")
    return dtype


# The admitted globals; None: found as pickle finds it (numpy's array rebuilder is a
# private name of numpy's, which NumPy itself maps from its old module path)
_PICKLE_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): None,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _plain_dtype,
}


class _PlainDataUnpickler(pickle.Unpickler):
    """Unpickler that builds only plain data: dict, list, tuple, str, bytes, numbers and
    NumPy arrays of plain dtypes.

    The official CIFAR-10 batches pickle their images as NumPy arrays, so exactly
    three globals are admitted: numpy.core.multiarray._reconstruct, numpy.ndarray
    and numpy.dtype (the latter refusing object dtypes). Any other global
    (os.system, builtins.eval, ...) is refused before it is looked up, so
    loading a batch can never run code.
    """

    def find_class(self, module, name):
        """Resolve only the admitted globals."""
        if (module, name) not in _PICKLE_GLOBALS:
            raise pickle.UnpicklingError(
                f"refused global {module}.{name}: only plain data and NumPy arrays are allowed")
        return _PICKLE_GLOBALS[(module, name)] or super().find_class(module, name)


def _read_cifar_batch(path):
    """(images uint8 (N, 3, 32, 32), labels int64) of one CIFAR-10 python batch."""
    try:
        with open(path, "rb") as f:
            batch = _PlainDataUnpickler(f, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            IndexError, KeyError) as exc:
        raise DatasetError(f"{path}: not a valid CIFAR-10 batch ({exc})") from exc
    if not isinstance(batch, dict):
        raise DatasetError(f"{path}: expected a dict, found {type(batch).__name__}")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    data, labels = batch.get("data"), batch.get("labels")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != 3 * 32 * 32:
        found = (f"{data.dtype} array of shape {data.shape}" if isinstance(data, np.ndarray)
                 else type(data).__name__)
        raise DatasetError(f"{path}: 'data' must be a uint8 array of shape (N, 3072), "
                           f"found {found}")
    if not isinstance(labels, list) or not all(isinstance(v, int) for v in labels):
        raise DatasetError(f"{path}: 'labels' must be a list of ints")
    return data.reshape(-1, 3, 32, 32), _check_labels(labels, len(data), 10, path)


def load_cifar10(root=None, normalize="unit"):
    """CIFAR-10 from the python batches of the official archive (cifar-10-python.tar.gz).

    The batches are pickles; they are read by a restricted unpickler that admits
    only plain data and NumPy array reconstruction (numpy.core.multiarray._reconstruct,
    numpy.ndarray, numpy.dtype) and refuses every other global, so a tampered
    file cannot run code. Returns (x_train, y_train, x_test, y_test): x float32
    (N, 3, 32, 32) normalised as in :func:`load_mnist`, y int64 in 0..9
    (50000 training images from data_batch_1..5, 10000 test from test_batch).
    """
    _choice("load_cifar10", "normalize", normalize, ("unit", "standard"))
    paths = _locate(_spec("cifar10"), root, "load_cifar10")
    train = [_read_cifar_batch(paths[name]) for name in _CIFAR_FILES[:-1]]
    x_test, y_test = _read_cifar_batch(paths["test_batch"])
    return (_to_float(np.concatenate([x for x, _ in train]), normalize),
            np.concatenate([y for _, y in train]),
            _to_float(x_test, normalize), y_test)


# --------------------------------------------------------------------------------------
# SGEMM GPU kernel performance (UCI)

_SGEMM_INPUTS = ("MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI", "VWM", "VWN",
                 "STRM", "STRN", "SA", "SB")
_SGEMM_RUNS = ("Run1 (ms)", "Run2 (ms)", "Run3 (ms)", "Run4 (ms)")
_SGEMM_POWERS_OF_TWO = 10  # the first ten inputs; the last four are binary


def _read_sgemm_csv(path):
    """The numeric table of sgemm_product.csv after checking its columns and values."""
    with open(path, encoding="utf-8", newline="") as f:
        columns = [c.strip() for c in f.readline().strip().split(",")]
    expected = list(_SGEMM_INPUTS + _SGEMM_RUNS)
    if columns != expected:
        missing = [c for c in expected if c not in columns]
        extra = [c for c in columns if c not in expected]
        raise DatasetError(f"{path}: header columns {columns}, expected {expected}"
                           f" (missing {missing}, unexpected {extra})")
    try:
        table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise DatasetError(f"{path}: unreadable data row ({exc})") from exc
    if len(table) == 0:
        raise DatasetError(f"{path}: no data rows")
    n_inputs = len(_SGEMM_INPUTS)
    logged = [*range(_SGEMM_POWERS_OF_TWO), *range(n_inputs, len(expected))]
    binary = list(range(_SGEMM_POWERS_OF_TWO, n_inputs))
    checks = (
        ("non-finite values", range(len(expected)), lambda v: ~np.isfinite(v)),
        ("values <= 0 (log2 needs positive values)", logged, lambda v: v <= 0),
        ("values other than 0 and 1", binary, lambda v: (v != 0) & (v != 1)),
    )
    for problem, cols, is_bad in checks:
        bad = [expected[c] for c in cols if is_bad(table[:, c]).any()]
        if bad:
            raise DatasetError(f"{path}: {problem} in column(s) {bad}")
    return table


def load_sgemm(root=None, seed=0):
    """The UCI "SGEMM GPU kernel performance" regression set, prepared as in the DAC paper.

    Reads sgemm_product.csv (14 kernel parameters, then Run1..Run4 in ms).
    Target: log2 of the mean of the four runs (the paper says only "one replica
    each"; averaging the four is our choice). Inputs: log2 of the ten
    power-of-two parameters, the four binary ones as they are; then every input
    column is standardised with the mean and standard deviation of the training
    split. The rows are split 70 % / 15 % / 15 % (train / validation / test) by a
    permutation from ``numpy.random.default_rng(seed)``.

    Returns (x_train, y_train, x_val, y_val, x_test, y_test), float32, x (N, 14), y (N,).
    """
    _seed("load_sgemm", seed)
    table = _read_sgemm_csv(_locate(_spec("sgemm"), root, "load_sgemm")["sgemm_product.csv"])
    n_inputs = len(_SGEMM_INPUTS)
    x = table[:, :n_inputs].copy()
    x[:, :_SGEMM_POWERS_OF_TWO] = np.log2(x[:, :_SGEMM_POWERS_OF_TWO])
    y = np.log2(table[:, n_inputs:].mean(axis=1))
    order = np.random.default_rng(seed).permutation(len(table))
    n_train, n_val = round(0.70 * len(table)), round(0.15 * len(table))
    parts = np.split(order, [n_train, n_train + n_val])
    mean, std = _train_statistics(x[parts[0]])
    split = []
    for idx in parts:
        split += [((x[idx] - mean) / std).astype(np.float32), y[idx].astype(np.float32)]
    return tuple(split)


def _train_statistics(x_train):
    """Per-column mean and standard deviation; constant columns get std 1 to avoid 0/0."""
    mean, std = x_train.mean(axis=0), x_train.std(axis=0)
    return mean, np.where(std > 0, std, 1.0)


# --------------------------------------------------------------------------------------
# HanNet checkerboard

_BOARD_POINTS = 81        # grid points per axis, linspace(-1, 1, 81)
_BOARD_START = 4          # the board fills T[4:76, 4:76]: 12 x 12 cells of 6 x 6 points
_BOARD_CELL = 6
_BOARD_END = _BOARD_START + 12 * _BOARD_CELL
_BOARD_TRAIN = 1640       # 25 % of 6561, as in the paper


def _corner(where, corner):
    _need(isinstance(corner, (int, np.integer)) and not isinstance(corner, bool), where,
          "corner", "0 or 1", corner, TypeError)
    _need(corner in (0, 1), where, "corner", "0 or 1", corner)


def checkerboard_grid(corner=0):
    """The HanNet checkerboard as a grid: (coords (81,) float32, labels (81, 81) int64).

    ``labels[i, j]`` is the label of the point (coords[i], coords[j]), with
    coords = linspace(-1, 1, 81). Inside T[4:76, 4:76] the grid is cut into
    12 x 12 cells of 6 x 6 points; cell (I, J) = ((i - 4) // 6, (j - 4) // 6) is
    labelled ``corner`` when I + J is even and ``1 - corner`` otherwise; the
    border (rows and columns 0..3 and 76..80) is 0. Either way that is 72 cells of
    ones (2592 points) and 3969 zeros. The paper fixes the board but not which
    colour comes first; the default corner=0 is how the authors' code builds it
    (np.kron of [[0, 1, ...], [1, 0, ...]] in yyy32/HanNet, utl.problem).
    """
    _corner("checkerboard_grid", corner)
    coords = np.linspace(-1, 1, _BOARD_POINTS).astype(np.float32)
    idx = np.arange(_BOARD_POINTS)
    inside = (idx >= _BOARD_START) & (idx < _BOARD_END)
    cell = (idx - _BOARD_START) // _BOARD_CELL
    labels = ((cell[:, None] + cell[None, :] + corner) % 2 == 1) & inside[:, None] & inside[None, :]
    return coords, labels.astype(np.int64)


def checkerboard(flip=0.0, seed=0, corner=0):
    """The HanNet checkerboard data set: all 6561 grid points, split 1640 train / 4921 test.

    Points are (coords[i], coords[j]) of :func:`checkerboard_grid`, in row-major
    order before the split; the split is a permutation from
    ``numpy.random.default_rng(seed)``: its first 1640 points train, the rest test.
    This is not the authors' split: theirs is a fixed file in their repository (no
    licence, so not shipped), and seed 0's split shares 403 of its 1640 training
    points (docs/papers/hannet.md says what that costs). ``flip`` is the fraction of TRAINING labels to invert (round(flip * 1640)
    points drawn without replacement from the same generator, after the split);
    test labels stay clean. Each label is duplicated into two columns, as the
    paper's nets have two outputs. ``corner`` picks the colouring, as in
    :func:`checkerboard_grid`.

    Returns (x_train, y_train, x_test, y_test): x float32 (N, 2), y float32 (N, 2).
    """
    _real("checkerboard", "flip", flip, 0, 1)
    _seed("checkerboard", seed)
    _corner("checkerboard", corner)
    coords, labels = checkerboard_grid(corner)
    xx, yy = np.meshgrid(coords, coords, indexing="ij")
    points = np.stack([xx.ravel(), yy.ravel()], axis=1)
    targets = labels.ravel().astype(np.float32)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(points))
    train, test = order[:_BOARD_TRAIN], order[_BOARD_TRAIN:]
    y_train = targets[train]
    flipped = rng.choice(_BOARD_TRAIN, size=round(flip * _BOARD_TRAIN), replace=False)
    y_train[flipped] = 1.0 - y_train[flipped]
    return (points[train], np.repeat(y_train[:, None], 2, axis=1),
            points[test], np.repeat(targets[test][:, None], 2, axis=1))


# --------------------------------------------------------------------------------------
# Focusing neuron: Gaussian blobs among noise columns


def focus_blobs(n_samples=2000, n_informative=20, n_noise=20, noise_side="left", seed=0,
                class_sep=1.0, flip_y=0.01):
    """The focusing-neuron "learning to focus" set: 2 classes of Gaussian blobs among noise.

    The informative features are drawn as the author's code draws them, with
    sklearn's ``make_classification`` (its defaults, no redundant features):
    4 clusters, 2 per class, each ``n_samples // 4`` points (the first
    ``n_samples % 4`` clusters get one more). Cluster k is N(0, I) mapped by its
    own random matrix A_k ~ U[-1, 1]^(n_informative x n_informative) (so each
    blob has its own covariance A_k^T A_k) and shifted to a centre c_k, a
    distinct random vertex of the hypercube {-class_sep, +class_sep}^n_informative.
    Clusters 0 and 1 are class 0, clusters 2 and 3 class 1; a ``flip_y`` share
    of the rows then get a random label (either class, as sklearn does).
    Noise: ``n_noise`` columns U[0, 1) (the author's code; the paper's text says
    N(0, 1)), all on the left (``noise_side="left"``) or ``n_noise // 2`` on the
    left and the rest on the right (``"both"``). Rows are shuffled, split 70 %
    train / 30 % test, and every column is standardised with the training mean
    and standard deviation. All randomness comes from
    ``numpy.random.default_rng(seed)``.

    Returns (x_train, y_train, x_test, y_test, informative): x float32, y int64,
    informative a bool mask over the n_informative + n_noise columns.
    """
    where = "focus_blobs"
    _count(where, "n_samples", n_samples, low=4)  # one point per cluster at least
    _count(where, "n_informative", n_informative, low=2)  # 4 distinct vertices need 2 axes
    _count(where, "n_noise", n_noise, low=0)
    _choice(where, "noise_side", noise_side, ("left", "both"))
    _seed(where, seed)
    _real(where, "class_sep", class_sep, low=0, low_open=True)  # 0: one vertex, no 4 distinct
    _real(where, "flip_y", flip_y, 0, 1)
    rng = np.random.default_rng(seed)
    centres = rng.choice([-class_sep, class_sep], size=(4, n_informative))
    while len(np.unique(centres, axis=0)) < 4:  # four distinct vertices; rare redraw
        centres = rng.choice([-class_sep, class_sep], size=(4, n_informative))
    cluster = np.arange(n_samples) % 4
    informative_x = rng.standard_normal((n_samples, n_informative))
    for k in range(4):
        mixing = rng.uniform(-1, 1, size=(n_informative, n_informative))
        informative_x[cluster == k] = informative_x[cluster == k] @ mixing + centres[k]
    noise = rng.random((n_samples, n_noise))
    n_left = n_noise if noise_side == "left" else n_noise // 2
    x = np.concatenate([noise[:, :n_left], informative_x, noise[:, n_left:]], axis=1)
    informative = np.zeros(x.shape[1], dtype=bool)
    informative[n_left:n_left + n_informative] = True
    order = rng.permutation(n_samples)
    labels = (cluster >= 2).astype(np.int64)
    # Flipped last, so the same seed gives the same x whatever flip_y is.
    flipped = rng.random(n_samples) < flip_y
    labels[flipped] = rng.integers(0, 2, size=int(flipped.sum()))
    n_train = round(0.7 * n_samples)
    train, test = order[:n_train], order[n_train:]
    mean, std = _train_statistics(x[train])
    x_train, x_test = (((x[rows] - mean) / std).astype(np.float32) for rows in (train, test))
    _fits_float32(where, "class_sep", class_sep, x_train, x_test, std)  # std inf: all 0
    return x_train, labels[train], x_test, labels[test], informative


# --------------------------------------------------------------------------------------
# Two-argument activations: the session-I random smooth map

_MAP_POINTS = 101
_MAP_EXTENT = 5.0
_MAP_SIGMA = 1.0 / 3.0


def smooth_map_grid(seed=0):
    """The session-I target of the two-argument paper as a grid: (coords (101,), z (101, 101)).

    coords = linspace(-5, 5, 101) (spacing 0.1). A map M = default_rng(seed).uniform(-1, 1,
    size=(101, 101)) is convolved ('same' size, zero padding outside the grid)
    with the Gaussian exp(-(u^2 + v^2) / (2 sigma^2)), sigma = 1/3, sampled at the
    grid offsets u, v in coords and normalised to sum 1:
        z[i, j] = sum_{p, q} M[p, q] * K[i - p + 50, j - q + 50].
    The Gaussian is separable, so this is two 1-D convolutions. ``z[i, j]`` is the
    value at (coords[i], coords[j]). The values are small (std about 0.05) because the
    kernel averages some 70 independent draws; they are not rescaled.
    """
    _seed("smooth_map_grid", seed)
    coords = np.linspace(-_MAP_EXTENT, _MAP_EXTENT, _MAP_POINTS)
    kernel = np.exp(-coords ** 2 / (2 * _MAP_SIGMA ** 2))
    kernel /= kernel.sum()
    noise = np.random.default_rng(seed).uniform(-1, 1, size=(_MAP_POINTS, _MAP_POINTS))
    rows = np.array([np.convolve(r, kernel, mode="same") for r in noise])
    z = np.array([np.convolve(c, kernel, mode="same") for c in rows.T]).T
    return coords.astype(np.float32), z.astype(np.float32)


def random_smooth_map(seed=0):
    """The session-I pretraining set: X float32 (10201, 2) grid points, z float32 (10201,).

    Row k = i * 101 + j holds the point (coords[i], coords[j]) and target z[i, j]
    of :func:`smooth_map_grid` (use that function for the 101 x 101 grid).
    """
    _seed("random_smooth_map", seed)
    coords, z = smooth_map_grid(seed)
    xx, yy = np.meshgrid(coords, coords, indexing="ij")
    return np.stack([xx.ravel(), yy.ravel()], axis=1), z.ravel()


# --------------------------------------------------------------------------------------
# TMAF regression targets (the paper's own formulas are lost; these are ours)


def _points(where, x, dim=None):
    """x as a float64 array (n, d), d = dim when given."""
    try:
        x = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        _need(False, where, "x", "numbers", x, TypeError)
    shape = "(n, d)" if dim is None else f"(n, {dim})"
    _need(x.ndim == 2 and (dim is None or x.shape[1] == dim), where, "x", f"of shape {shape}",
          f"shape {x.shape}")
    return x


def tmaf_smooth_fn(x):
    """The smooth TMAF target f(x) = prod_d sin(pi * x_d) for x of shape (n, d)."""
    return np.prod(np.sin(np.pi * _points("tmaf_smooth_fn", x)), axis=1)


def tmaf_oscillatory_fn(x):
    """The oscillatory TMAF target f(x) = sin(2 pi x) + 0.5 sin(20 pi x) for x of shape (n, 1)."""
    x = _points("tmaf_oscillatory_fn", x, dim=1)[:, 0]
    return np.sin(2 * np.pi * x) + 0.5 * np.sin(20 * np.pi * x)


def tmaf_smooth_target(n=20000, seed=0, dim=2):
    """Samples of the smooth TMAF target f(x) = prod_d sin(pi x_d) on the hypercube [0, 1]^dim.

    x ~ U[0, 1)^dim from ``numpy.random.default_rng(seed)``. The paper's formula
    is lost; this one is smooth, zero on the boundary, with a single bump of
    height 1 at the centre. Returns x float32 (n, dim), y float32 (n,).
    """
    _count("tmaf_smooth_target", "n", n)
    _seed("tmaf_smooth_target", seed)
    _count("tmaf_smooth_target", "dim", dim)
    x = np.random.default_rng(seed).random((n, dim))
    return x.astype(np.float32), tmaf_smooth_fn(x).astype(np.float32)


def tmaf_oscillatory_target(n=20000, seed=0):
    """Samples of the two-frequency TMAF target f(x) = sin(2 pi x) + 0.5 sin(20 pi x) on [0, 1).

    One slow period plus ten fast ones of half the amplitude: a ReLU network of
    modest size fits the slow sine and misses the fast one, as the paper reports
    for its (lost) formula. x ~ U[0, 1) from ``numpy.random.default_rng(seed)``.
    Returns x float32 (n, 1), y float32 (n,).
    """
    _count("tmaf_oscillatory_target", "n", n)
    _seed("tmaf_oscillatory_target", seed)
    x = np.random.default_rng(seed).random((n, 1))
    return x.astype(np.float32), tmaf_oscillatory_fn(x).astype(np.float32)


# --------------------------------------------------------------------------------------
# DAC toys: Figure 7 and Theorem C.1


def dac_figure7(which="a"):
    """The point sets of the DAC paper's Figure 7 as (X float32 (n, 2), y int64 (n,)).

    The paper gives no coordinates; these sets are built to match its caption.

    "a": three collinear points, (0, 0) and (2, 2) white (label 0), (1, 1) black
    (label 1): not linearly separable, since the middle of three collinear points
    lies between the other two. One DAC unit separates them: the biases (-0.5, 0.5)
    move the leftmost point into the second quadrant, ReLU projects it onto the
    vertical axis, and w = (-2, 1.5) gives 0.75, 1.25, 0.75, so the threshold 1
    singles out the black point.

    "b": the points of a 0.25-spaced grid on [-2, 2]^2, label 1 inside the
    square |x1| + |x2| < 1 and 0 outside it (the figure draws them red and blue,
    its caption's text says blue and green); the 16 grid points on its edge are
    left out: 25 points inside and 248 outside. The caption's net
    g(f(x)) = phi(1 + x1) + phi(1 + x2) - 2 phi(x1) - 2 phi(x2) - 1 is positive
    exactly on the points inside. (It is 0, not negative as the caption says, on
    the half-axes x1 <= -1, x2 = 0 and x2 <= -1, x1 = 0, which hold label-0 points
    here: separate with g > 0.)
    """
    _choice("dac_figure7", "which", which, ("a", "b"))
    if which == "a":
        return (np.array([[0, 0], [1, 1], [2, 2]], dtype=np.float32),
                np.array([0, 1, 0], dtype=np.int64))
    ticks = np.arange(-8, 9)  # quarter units, so the edge test is exact in integers
    a, b = np.meshgrid(ticks, ticks, indexing="ij")
    a, b = a.ravel(), b.ravel()
    l1 = np.abs(a) + np.abs(b)
    keep = l1 != 4
    points = np.stack([a[keep], b[keep]], axis=1) / 4.0
    return points.astype(np.float32), (l1[keep] < 4).astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)  # arrays have no single truth value
class PiecewiseLinear:
    """A continuous piecewise-linear function written as one DAC unit with replicated input.

    f(x) = sum_j weight[j] * relu(bias[j] + x) (Theorem C.1's f_{k,w,b}). On the
    sampled interval it has exactly k linear pieces: slope ``slopes[m]`` between
    consecutive ``breakpoints`` (the k - 1 kinks inside the interval). ``x`` and
    ``y`` are the sampled grid (float32); calling the object evaluates f anywhere.
    """

    x: np.ndarray
    y: np.ndarray
    breakpoints: np.ndarray
    slopes: np.ndarray
    weight: np.ndarray
    bias: np.ndarray

    def __call__(self, x):
        """f at the points ``x`` (any shape), in float64."""
        x = np.asarray(x, dtype=np.float64)
        return np.maximum(self.bias + x[..., None], 0.0) @ self.weight


def random_pl_function(k, seed=0, n=1001, interval=(-1.0, 1.0)):
    """A random continuous piecewise-linear function with exactly k pieces on ``interval``.

    Drawn from ``numpy.random.default_rng(seed)`` in the DAC form of Theorem C.1,
    so a DAC unit with k replicated inputs represents it exactly:
    f(x) = sum_{j=1..k} w_j relu(x - t_j), bias b_j = -t_j.
    t_1 = lo - U(0, 1) lies left of the interval (it sets the first piece's
    offset); t_2 < ... < t_k are one per equal sub-interval of (lo, hi), uniform
    in its middle 80 %, so pieces are never vanishingly short; w_j = +-U(0.5, 2)
    with random signs, so consecutive slopes always differ. Returns a
    :class:`PiecewiseLinear` sampled at n points of linspace(lo, hi, n).
    """
    where = "random_pl_function"
    _count(where, "k", k)
    _seed(where, seed)
    _count(where, "n", n, low=2)
    pair = isinstance(interval, (tuple, list)) and len(interval) == 2
    _need(pair and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in interval),
          where, "interval", "a pair (lo, hi) of numbers", interval, TypeError)
    lo, hi = interval
    _need(math.isfinite(lo) and math.isfinite(hi) and lo < hi, where, "interval",
          "finite (lo, hi) with lo < hi", interval)
    rng = np.random.default_rng(seed)
    width = (hi - lo) / max(k - 1, 1)
    inner = lo + width * (np.arange(k - 1) + 0.1 + 0.8 * rng.random(k - 1))
    knots = np.concatenate([[lo - rng.random()], inner])
    weight = rng.choice([-1.0, 1.0], size=k) * rng.uniform(0.5, 2.0, size=k)
    fn = PiecewiseLinear(np.empty(0), np.empty(0), inner, np.cumsum(weight), weight, -knots)
    x = np.linspace(lo, hi, n)
    sampled = dataclasses.replace(fn, x=x.astype(np.float32), y=fn(x).astype(np.float32))
    _fits_float32(where, "interval", interval, sampled.x, sampled.y)
    return sampled


# --------------------------------------------------------------------------------------
# Engine-lesson toys


def two_moons(n=200, noise=0.1, seed=0):
    """Two interleaved half circles: X float32 (n, 2), y int64 (n,).

    Class 0: (cos t, sin t), class 1: (1 - cos t, 0.5 - sin t), t evenly spaced
    in [0, pi]; class 0 gets n - n // 2 points, class 1 n // 2. Gaussian noise of
    standard deviation ``noise`` is added, rows are shuffled; all randomness
    from ``numpy.random.default_rng(seed)``.
    """
    _count("two_moons", "n", n, low=2)
    _real("two_moons", "noise", noise, low=0)
    _seed("two_moons", seed)
    n_inner = n // 2
    t_outer = np.linspace(0, np.pi, n - n_inner)
    t_inner = np.linspace(0, np.pi, n_inner)
    x = np.concatenate([np.stack([np.cos(t_outer), np.sin(t_outer)], axis=1),
                        np.stack([1 - np.cos(t_inner), 0.5 - np.sin(t_inner)], axis=1)])
    y = np.repeat(np.array([0, 1], dtype=np.int64), [n - n_inner, n_inner])
    return _noisy_shuffled("two_moons", x, y, noise, seed)


def spirals(n=300, n_classes=2, noise=0.1, seed=0, spin=4.0):
    """Interleaved spiral arms, one per class: X float32 (n, 2), y int64 (n,).

    Class c has n // n_classes points (the first n % n_classes classes one more) at
    radius r evenly spaced in [0, 1] and angle spin r + 2 pi c / n_classes (an arm
    turns spin / 2 pi times from centre to rim), i.e.
    (r sin a, r cos a); Gaussian noise of standard deviation ``noise`` is added,
    rows are shuffled; all randomness from ``numpy.random.default_rng(seed)``.
    """
    _count("spirals", "n_classes", n_classes)
    _count("spirals", "n", n, low=n_classes)
    _real("spirals", "noise", noise, low=0)
    _seed("spirals", seed)
    _real("spirals", "spin", spin)  # any sign: the arms turn the other way
    counts = [n // n_classes + (c < n % n_classes) for c in range(n_classes)]
    radius = np.concatenate([np.linspace(0, 1, m) for m in counts])
    y = np.repeat(np.arange(n_classes, dtype=np.int64), counts)
    angle = spin * radius + 2 * np.pi * y / n_classes
    return _noisy_shuffled("spirals", radius[:, None] * np.stack([np.sin(angle), np.cos(angle)],
                                                                 axis=1), y, noise, seed)


def _noisy_shuffled(where, x, y, noise, seed):
    """Add N(0, noise^2) to x and shuffle the rows, both from default_rng(seed)."""
    rng = np.random.default_rng(seed)
    x = x + noise * rng.standard_normal(x.shape)
    order = rng.permutation(len(x))
    x = x[order].astype(np.float32)
    _fits_float32(where, "noise", noise, x)
    return x, y[order]


# --------------------------------------------------------------------------------------
# Batching


def _check_pair(where, X, y):
    """Refuse what is not a pair of arrays with one row of y per row of X."""
    for name, a in (("X", X), ("y", y)):
        _need(isinstance(a, np.ndarray) and a.ndim >= 1, where, name,
              "a NumPy array with a row axis",
              f"shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__, TypeError)
    _need(len(X) == len(y), where, "y", f"one row per row of X ({len(X)})", f"{len(y)} rows")


def batches(X, y, batch_size, shuffle=True, seed=None):
    """Yield (xb, yb) mini-batches covering every row once; the last may be smaller.

    With ``shuffle`` the rows are visited in the order of
    ``numpy.random.default_rng(seed).permutation`` (seed None: fresh entropy).
    """
    _check_pair("batches", X, y)
    _count("batches", "batch_size", batch_size)
    _flag("batches", "shuffle", shuffle)
    if seed is not None:
        _seed("batches", seed)
    order = np.random.default_rng(seed).permutation(len(X)) if shuffle else np.arange(len(X))
    for start in range(0, len(X), batch_size):
        idx = order[start:start + batch_size]
        yield X[idx], y[idx]


def train_val_split(X, y, val_fraction, seed=0):
    """Split rows at random into (X_train, y_train, X_val, y_val).

    round(val_fraction * N) rows go to validation, chosen by
    ``numpy.random.default_rng(seed).permutation``.
    """
    where = "train_val_split"
    _check_pair(where, X, y)
    _real(where, "val_fraction", val_fraction, low=0, high=1, low_open=True)
    _seed(where, seed)
    n_val = round(val_fraction * len(X))
    _need(0 < n_val < len(X), where, "val_fraction", f"a share that leaves both parts of "
          f"{len(X)} rows non-empty", f"{val_fraction} ({n_val} validation rows)")
    order = np.random.default_rng(seed).permutation(len(X))
    val, train = order[:n_val], order[n_val:]
    return X[train], y[train], X[val], y[val]


# --------------------------------------------------------------------------------------
# Command line


def main(argv=None):
    """``python datasets.py download|ensure NAME [--root DIR] [--no-verify] [--quiet]``."""
    parser = argparse.ArgumentParser(prog=_COMMAND,
                                     description="Fetch the real data sets tinyunits uses.")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("download", help="download, verify and install a data set")
    need = commands.add_parser("ensure", help="download a data set unless a loader finds it")
    for command in (fetch, need):
        command.add_argument("name", choices=sorted(_SPECS))
        command.add_argument("--root", help="data directory (default: $TINYUNITS_DATA, else "
                                            f"{_cache_dir()})")
        command.add_argument("--quiet", action="store_true", help="no progress bar")
    fetch.add_argument("--no-verify", action="store_true",
                       help="accept files that have no pinned SHA-256 (pinned ones are always "
                            "checked)")
    args = parser.parse_args(argv)
    progress = False if args.quiet else None
    try:
        if args.command == "download":
            dest = download(args.name, args.root, no_verify=args.no_verify, progress=progress)
        else:
            dest = ensure(args.name, args.root, progress=progress)
    except (ValueError, OSError) as exc:  # DatasetError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.name}: files are in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
