"""Runs a command with its stderr merged into stdout, then prints
"exit code: N", so a test can check the exact exit status.

    exit_code.py COMMAND [ARGS...]
"""

import subprocess
import sys

sys.stdout.flush()
code = subprocess.run(sys.argv[1:], stderr=subprocess.STDOUT).returncode
print(f"exit code: {code}")
