"""A Hugging Face checkpoint directory: config.json plus safetensors file(s).

Tensor files are found, in order of preference, from
``model.safetensors.index.json`` ("weight_map": tensor name -> file name),
a single ``model.safetensors``, or every ``*.safetensors`` in the directory.
Opening a checkpoint reads only the safetensors headers.
"""

from __future__ import annotations

import os

import numpy as np

from . import FdcError
from .safetensors import SafetensorsError, TensorInfo, read_header, read_tensor
from .strict import MAX_JSON_FILE_BYTES, describe, parse_json, read_regular

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


class Checkpoint:
    """The checkpoint in ``directory``; only files of that directory are read.

    Every file (config.json, the index, the shards) must be a regular file
    named directly in the directory: a weight_map entry must be a plain file
    name (no "/", not "." or "..", as the runtime requires). Symbolic links
    the user placed in the directory are followed, as the runtime follows
    them (a Hugging Face cache snapshot links its files to ../../blobs). A
    FIFO, device or directory in place of a file is refused without being
    read.
    """

    def __init__(self, directory: str):
        self.directory = directory
        self.config = _read_json(self._file("config.json"))
        if not isinstance(self.config, dict):
            raise FdcError(f"{directory}/config.json: not a JSON object")
        self.tensors: dict[str, TensorInfo] = {}
        self._file_of: dict[str, str] = {}
        headers = {}
        for name, path in self._tensor_files().items():
            if path not in headers:
                headers[path] = read_header(path)
            info = headers[path].tensors.get(name)
            if info is None:
                raise SafetensorsError(f"{path}: no tensor {describe(name)} (named in {INDEX_FILE})")
            self.tensors[name] = info
            self._file_of[name] = path

    def _file(self, name: str) -> str:
        """The path of the checkpoint's file ``name`` (a plain file name)."""
        return os.path.join(self.directory, name)

    def _tensor_files(self) -> dict[str, str]:
        """Map every tensor name to the file that holds it."""
        index_path = self._file(INDEX_FILE)
        if os.path.lexists(index_path):
            index = _read_json(index_path)
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict):
                raise FdcError(f"{index_path}: missing or malformed \"weight_map\"")
            files = {}
            for name, file in weight_map.items():
                if not isinstance(file, str):
                    raise FdcError(f"{index_path}: weight_map entry {describe(name)} is not "
                                   f"a string")
                path = os.path.join(self.directory, file)
                if not file or "/" in file or "\0" in file or file in (".", ".."):
                    raise FdcError(f"{index_path}: weight_map entry {describe(name)} names "
                                   f"{describe(file)}, which is not a file of the checkpoint")
                files[name] = path
            return files
        single = self._file(SINGLE_FILE)
        if os.path.lexists(single):
            files = [single]
        else:
            try:
                names = os.listdir(self.directory)
            except OSError as e:
                raise FdcError(f"{self.directory}: cannot list: {e.strerror or e}") from None
            files = sorted(self._file(f) for f in names if f.endswith(".safetensors"))
        if not files:
            raise FdcError(f"{self.directory}: no .safetensors files")
        where: dict[str, str] = {}
        for path in files:
            for name in read_header(path).tensors:
                if name in where:
                    raise SafetensorsError(f"tensor {describe(name)} is in both {where[name]} "
                                           f"and {path}")
                where[name] = path
        return where

    def load(self, name: str) -> np.ndarray:
        """Load one tensor (BF16 as float32, see safetensors.read_tensor)."""
        if name not in self.tensors:
            raise FdcError(f"{self.directory}: missing tensor {name!r}")
        return read_tensor(self.tensors[name], self._file_of[name])


def _read_json(path: str):
    """The JSON document in the regular file ``path``, strictly parsed."""
    return parse_json(read_regular(path, MAX_JSON_FILE_BYTES), path)
