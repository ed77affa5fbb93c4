"""A Hugging Face checkpoint directory: config.json plus safetensors file(s).

Tensor files are found, in order of preference, from
``model.safetensors.index.json`` ("weight_map": tensor name -> file name),
a single ``model.safetensors``, or every ``*.safetensors`` in the directory.
Opening a checkpoint reads only the safetensors headers.
"""

from __future__ import annotations

import json
import os

import numpy as np

from . import FdcError
from .safetensors import SafetensorsError, TensorInfo, read_header, read_tensor

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


class Checkpoint:
    def __init__(self, directory: str):
        self.directory = directory
        self.config = _read_json(os.path.join(directory, "config.json"))
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
                raise SafetensorsError(f"{path}: no tensor {name!r} (named in {INDEX_FILE})")
            self.tensors[name] = info
            self._file_of[name] = path

    def _tensor_files(self) -> dict[str, str]:
        """Map every tensor name to the file that holds it."""
        index_path = os.path.join(self.directory, INDEX_FILE)
        if os.path.exists(index_path):
            index = _read_json(index_path)
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict) or not all(
                    isinstance(v, str) for v in weight_map.values()):
                raise FdcError(f"{index_path}: missing or malformed \"weight_map\"")
            return {name: os.path.join(self.directory, file) for name, file in weight_map.items()}
        single = os.path.join(self.directory, SINGLE_FILE)
        files = [single] if os.path.exists(single) else sorted(
            os.path.join(self.directory, f) for f in os.listdir(self.directory)
            if f.endswith(".safetensors"))
        if not files:
            raise FdcError(f"{self.directory}: no .safetensors files")
        where: dict[str, str] = {}
        for path in files:
            for name in read_header(path).tensors:
                if name in where:
                    raise SafetensorsError(f"tensor {name!r} is in both {where[name]} and {path}")
                where[name] = path
        return where

    def load(self, name: str) -> np.ndarray:
        """Load one tensor (BF16 as float32, see safetensors.read_tensor)."""
        if name not in self.tensors:
            raise FdcError(f"{self.directory}: missing tensor {name!r}")
        return read_tensor(self.tensors[name], self._file_of[name])


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise FdcError(f"{path}: cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FdcError(f"{path}: not valid JSON: {e}") from None
