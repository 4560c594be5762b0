"""`python -m tests.benchmarks` is the same as `python tests/benchmarks/run.py`."""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(__file__), "run.py"), run_name="__main__")
