"""What every lesson shares: the checkout on sys.path and the same command line.

    from _lesson import setup
    args, SIZE = setup("03_tmaf", "Lesson 3: trainable matrix activations",
                       full="the paper's sample counts, more epochs")

SIZE is "tiny" (seconds: the test suite's smoke run), "quick" (the default, a
few minutes on 2 cores) or "full" (the paper's settings); figures go to args.out.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # datasets.py and tinyunits from this checkout


def setup(name: str, description: str, full: str = "the paper's settings"):
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="default: a few minutes on 2 cores")
    mode.add_argument("--full", action="store_true", help=full)
    mode.add_argument("--tiny", action="store_true", help="seconds; the test suite's smoke run")
    parser.add_argument("--out", default=os.path.join(ROOT, "figures", name))
    args, _ = parser.parse_known_args()  # known: a notebook kernel passes its own flags
    os.makedirs(args.out, exist_ok=True)
    return args, "tiny" if args.tiny else "full" if args.full else "quick"


def host(t):
    """A host NumPy copy of a Tensor or a backend array (explicit on every backend)."""
    import tinyunits as tu
    return t.numpy() if isinstance(t, tu.Tensor) else tu.backend.to_host(t)
