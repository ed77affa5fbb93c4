"""ctypes binding of the fdc runtime (libfdc_runtime.so).

The library is found through the environment variable ``FDC_RUNTIME_LIB``, or
at ``build/lib/libfdc_runtime.so`` under the repository root.

    from fdc.runtime import Model
    with Model("model.so", "checkpoint_dir", max_context=256) as m:
        ids = m.generate([1, 2, 3], max_new_tokens=8)
        ids, logits = m.generate([1, 2, 3], 8, return_logits=True)
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from . import FdcError


class FdcRuntimeError(FdcError):
    """An error reported by the runtime library."""


FINISH_REASONS = {0: "none", 1: "length", 2: "eos", 3: "context_full",
                  4: "rejected", 5: "error"}


class SamplingParams(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("eos_id", ctypes.c_int32),
                ("seed", ctypes.c_uint64)]


TOKEN_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_int32,
                                  ctypes.POINTER(ctypes.c_float),
                                  ctypes.c_int64)


class Request(ctypes.Structure):
    _fields_ = [("prompt", ctypes.POINTER(ctypes.c_int32)),
                ("prompt_len", ctypes.c_int64),
                ("max_new_tokens", ctypes.c_int64),
                ("params", SamplingParams),
                ("out_ids", ctypes.POINTER(ctypes.c_int32)),
                ("out_logits", ctypes.POINTER(ctypes.c_float)),
                ("callback", TOKEN_CALLBACK),
                ("user_data", ctypes.c_void_p),
                ("out_len", ctypes.c_int64),
                ("finish_reason", ctypes.c_int32),
                ("status", ctypes.c_int32),
                ("error", ctypes.c_char * 256)]


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def library_path() -> Path:
    env = os.environ.get("FDC_RUNTIME_LIB")
    if env:
        return Path(env)
    return _repo_root() / "build" / "lib" / "libfdc_runtime.so"


_lib = None


def _load_library() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not path.exists():
        raise FdcRuntimeError(
            f"fdc runtime library not found at {path}; build it or set "
            "FDC_RUNTIME_LIB")
    lib = ctypes.CDLL(str(path))
    lib.fdc_model_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_int64, ctypes.c_int64,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.fdc_model_load.restype = ctypes.c_void_p
    lib.fdc_model_free.argtypes = [ctypes.c_void_p]
    lib.fdc_model_free.restype = None
    for name in ("fdc_model_vocab_size", "fdc_model_max_context",
                 "fdc_model_num_slots"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_int64
    lib.fdc_model_manifest.argtypes = [ctypes.c_void_p]
    lib.fdc_model_manifest.restype = ctypes.c_char_p
    lib.fdc_generate.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int64,
        ctypes.c_int64, ctypes.POINTER(SamplingParams),
        ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_float)]
    lib.fdc_generate.restype = ctypes.c_int
    lib.fdc_generate_batch.argtypes = [ctypes.c_void_p,
                                       ctypes.POINTER(Request), ctypes.c_int64]
    lib.fdc_generate_batch.restype = ctypes.c_int64
    lib.fdc_last_error.argtypes = []
    lib.fdc_last_error.restype = ctypes.c_char_p
    lib.fdc_string_free.argtypes = [ctypes.c_void_p]
    lib.fdc_string_free.restype = None
    _lib = lib
    return lib


def _params(temperature: float, top_k: int, top_p: float, seed: int,
            eos_id: int | None) -> SamplingParams:
    return SamplingParams(float(temperature), int(top_k), float(top_p),
                          -1 if eos_id is None else int(eos_id), int(seed))


def _int32_array(ids: Sequence[int]) -> np.ndarray:
    array = np.asarray(ids, dtype=np.int64)
    if array.ndim != 1:
        raise FdcRuntimeError("prompt_ids must be a flat sequence of token ids")
    if array.size and (array.min() < -2**31 or array.max() >= 2**31):
        raise FdcRuntimeError("prompt token id out of int32 range")
    return np.ascontiguousarray(array, dtype=np.int32)


def _ptr(array: np.ndarray, ctype):
    return array.ctypes.data_as(ctypes.POINTER(ctype))


class Model:
    """A model library loaded with its weights and a KV cache."""

    def __init__(self, library: str | os.PathLike, weights_dir: str | os.PathLike,
                 max_context: int = 0, num_slots: int = 1):
        self._lib = _load_library()
        error = ctypes.c_void_p()
        handle = self._lib.fdc_model_load(os.fsencode(library),
                                          os.fsencode(weights_dir),
                                          int(max_context), int(num_slots),
                                          ctypes.byref(error))
        if not handle:
            message = ctypes.string_at(error.value).decode(errors="replace") \
                if error.value else "unknown error"
            self._lib.fdc_string_free(error)
            raise FdcRuntimeError(message)
        self._handle = handle
        self.vocab_size = self._lib.fdc_model_vocab_size(handle)
        self.max_context = self._lib.fdc_model_max_context(handle)
        self.num_slots = self._lib.fdc_model_num_slots(handle)

    @property
    def manifest(self) -> str:
        """The model library's manifest JSON."""
        return self._lib.fdc_model_manifest(self._require()).decode()

    def _require(self):
        if not self._handle:
            raise FdcRuntimeError("the model was closed")
        return self._handle

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int = 0, eos_id: int | None = None,
                 return_logits: bool = False):
        """Generates up to max_new_tokens ids after prompt_ids.

        Returns the list of generated ids, or (ids, logits) with logits a
        float32 array [len(ids), vocab_size] when return_logits is true.
        """
        handle = self._require()
        prompt = _int32_array(prompt_ids)
        max_new_tokens = int(max_new_tokens)
        if max_new_tokens < 0:
            raise FdcRuntimeError("max_new_tokens must be >= 0")
        ids = np.zeros(max(max_new_tokens, 1), dtype=np.int32)
        logits = (np.zeros((max(max_new_tokens, 1), self.vocab_size),
                           dtype=np.float32) if return_logits else None)
        count = ctypes.c_int64(0)
        params = _params(temperature, top_k, top_p, seed, eos_id)
        rc = self._lib.fdc_generate(
            handle, _ptr(prompt, ctypes.c_int32), prompt.size, max_new_tokens,
            ctypes.byref(params), _ptr(ids, ctypes.c_int32),
            ctypes.byref(count),
            _ptr(logits, ctypes.c_float) if logits is not None else None)
        if rc != 0:
            raise FdcRuntimeError(self._lib.fdc_last_error().decode(
                errors="replace"))
        n = count.value
        out = ids[:n].tolist()
        if return_logits:
            return out, logits[:n].copy()
        return out

    def generate_batch(self, requests: Sequence[dict]):
        """Runs several requests together through the batching engine.

        Each request is a dict with ``prompt_ids``, ``max_new_tokens`` and
        optionally ``temperature``, ``top_k``, ``top_p``, ``seed``, ``eos_id``,
        ``return_logits``, and ``on_token``: a function called with (step,
        token) as each token is generated. Returns one dict per request: ``ids``,
        ``finish_reason``, ``error`` (None on success) and, if asked,
        ``logits``.
        """
        handle = self._require()
        array = (Request * len(requests))()
        keep, callbacks = [], []  # alive until the call returns
        for request, spec in zip(array, requests):
            prompt = _int32_array(spec["prompt_ids"])
            max_new = int(spec["max_new_tokens"])
            ids = np.zeros(max(max_new, 1), dtype=np.int32)
            logits = (np.zeros((max(max_new, 1), self.vocab_size),
                               dtype=np.float32)
                      if spec.get("return_logits") else None)
            keep.append((prompt, ids, logits))
            request.prompt = _ptr(prompt, ctypes.c_int32)
            request.prompt_len = prompt.size
            request.max_new_tokens = max_new
            request.params = _params(spec.get("temperature", 0.0),
                                     spec.get("top_k", 0),
                                     spec.get("top_p", 1.0),
                                     spec.get("seed", 0), spec.get("eos_id"))
            request.out_ids = _ptr(ids, ctypes.c_int32)
            if logits is not None:
                request.out_logits = _ptr(logits, ctypes.c_float)
            on_token = spec.get("on_token")
            if on_token is not None:
                callback = TOKEN_CALLBACK(
                    lambda _user, step, token, _logits, _vocab, fn=on_token:
                    fn(step, token))
                callbacks.append(callback)
                request.callback = callback
        if self._lib.fdc_generate_batch(handle, array, len(requests)) < 0:
            raise FdcRuntimeError(self._lib.fdc_last_error().decode(
                errors="replace"))
        results = []
        for request, (_, ids, logits) in zip(array, keep):
            n = request.out_len
            result = {"ids": ids[:n].tolist(),
                      "finish_reason": FINISH_REASONS.get(request.finish_reason,
                                                          "?"),
                      "error": (request.error.decode(errors="replace")
                                if request.status else None)}
            if logits is not None:
                result["logits"] = logits[:n].copy()
            results.append(result)
        return results

    def close(self) -> None:
        if getattr(self, "_handle", None):
            self._lib.fdc_model_free(self._handle)
            self._handle = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
