"""Running the Python command-line modules (the frontend, the tiny checkpoint)
as subprocesses, as a user would."""
import os
import subprocess
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_module(*args) -> subprocess.CompletedProcess:
    """`python -m ARGS...` with the repository's python/ on the path."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-m", *map(str, args)], env=env,
                          capture_output=True, text=True)


def frontend(ckpt, *args) -> subprocess.CompletedProcess:
    return run_module("fdc.frontend", ckpt, *args)


def emit(ckpt, *args) -> str:
    """The frontend's IR for `ckpt`; fails the test on a frontend error."""
    result = frontend(ckpt, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout
