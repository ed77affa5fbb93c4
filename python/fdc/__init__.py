"""Python side of fdc: checkpoint I/O, the model-IR frontend and numpy references."""


class FdcError(Exception):
    """A user-facing error: the CLI prints its message and exits with code 1."""
