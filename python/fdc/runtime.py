"""ctypes binding of the fdc runtime (libfdc_runtime.so).

The library is found through the environment variable ``FDC_RUNTIME_LIB``, or
at ``build/lib/libfdc_runtime.so`` under the repository root.

    from fdc.runtime import Model
    with Model("model.so", "checkpoint_dir", max_context=256) as m:
        ids = m.generate([1, 2, 3], max_new_tokens=8)
        ids, logits = m.generate([1, 2, 3], 8, return_logits=True)

Arguments are checked before any C call, and a Model may be shared between
threads; see the Model docstring and docs/python.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Sequence

import numpy as np

from . import FdcError


class FdcRuntimeError(FdcError):
    """An error reported by the runtime library."""


FINISH_REASONS = {0: "none", 1: "length", 2: "eos", 3: "context_full",
                  4: "rejected", 5: "error", 6: "cancelled"}


class SamplingParams(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("eos_id", ctypes.c_int32),
                ("seed", ctypes.c_uint64)]


TOKEN_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_int32,
                                  ctypes.POINTER(ctypes.c_float),
                                  ctypes.c_int64)


class ModelOptions(ctypes.Structure):
    _fields_ = [("max_context", ctypes.c_int64), ("num_slots", ctypes.c_int64),
                ("max_step_rows", ctypes.c_int64)]


class Result(ctypes.Structure):
    _fields_ = [("out_len", ctypes.c_int64), ("finish_reason", ctypes.c_int32),
                ("status", ctypes.c_int32), ("error", ctypes.c_char * 256)]


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
    lib.fdc_model_load_with_options.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ModelOptions),
        ctypes.POINTER(ctypes.c_void_p)]
    lib.fdc_model_load_with_options.restype = ctypes.c_void_p
    lib.fdc_model_load_packed.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ModelOptions),
        ctypes.POINTER(ctypes.c_void_p)]
    lib.fdc_model_load_packed.restype = ctypes.c_void_p
    lib.fdc_model_free.argtypes = [ctypes.c_void_p]
    lib.fdc_model_free.restype = None
    for name in ("fdc_model_vocab_size", "fdc_model_max_context",
                 "fdc_model_num_slots", "fdc_model_max_step_rows"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_int64
    lib.fdc_model_set_callback_logits.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.fdc_model_set_callback_logits.restype = ctypes.c_int
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
    lib.fdc_engine_create.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.fdc_engine_create.restype = ctypes.c_void_p
    lib.fdc_engine_submit.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_int64,
        ctypes.c_int64, ctypes.POINTER(SamplingParams), TOKEN_CALLBACK,
        ctypes.c_void_p]
    lib.fdc_engine_submit.restype = ctypes.c_int64
    lib.fdc_engine_cancel.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.fdc_engine_cancel.restype = ctypes.c_int
    for name in ("fdc_engine_wait", "fdc_engine_poll"):
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int64,
                                       ctypes.POINTER(ctypes.c_int32), ctypes.c_int64,
                                       ctypes.POINTER(Result)]
        getattr(lib, name).restype = ctypes.c_int
    lib.fdc_engine_pending.argtypes = [ctypes.c_void_p]
    lib.fdc_engine_pending.restype = ctypes.c_int64
    lib.fdc_engine_free.argtypes = [ctypes.c_void_p]
    lib.fdc_engine_free.restype = None
    lib.fdc_last_error.argtypes = []
    lib.fdc_last_error.restype = ctypes.c_char_p
    lib.fdc_string_free.argtypes = [ctypes.c_void_p]
    lib.fdc_string_free.restype = None
    _lib = lib
    return lib


class FdcArgumentError(FdcRuntimeError, ValueError):
    """An argument of the binding is out of its range (refused before any C call)."""


class FdcTypeError(FdcRuntimeError, TypeError):
    """An argument of the binding has the wrong type (refused before any C call)."""


class FdcUsageError(FdcRuntimeError):
    """The model was used in a way the binding does not allow: closed, or
    re-entered from one of its own on_token callbacks."""


INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
MAX_STEP_ROWS = 2**20  # kMaxStepRows of the runtime
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _integer(where: str, name: str, value, lo: int, hi: int, why: str = "") -> int:
    """``value`` as a Python int in [lo, hi]: a real integer (int or a numpy
    integer scalar), never a bool or a float, never wrapped to fit a C type."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise FdcTypeError(f"{where}{name} must be an integer, got "
                           f"{type(value).__name__} {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise FdcArgumentError(f"{where}{name} must be in [{lo}, {hi}]{why}, got {value}")
    return value


def _real(where: str, name: str, value) -> float:
    """``value`` as a finite float that is also finite as a C float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise FdcTypeError(f"{where}{name} must be a real number, got "
                           f"{type(value).__name__} {value!r}")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x) or abs(x) > FLOAT32_MAX:
        raise FdcArgumentError(f"{where}{name} must be finite (as a 32-bit float), got {value!r}")
    return x


def _params(where: str, vocab_size: int, temperature=0.0, top_k=0, top_p=1.0, seed=0,
            eos_id=None) -> SamplingParams:
    """The C sampling parameters, every field checked for type and C range.

    The runtime checks the meaning (temperature >= 0, top_p in (0, 1]) and
    reports it per request; here nothing may wrap or be truncated silently.
    """
    if eos_id is None:
        eos = -1
    else:
        eos = _integer(where, "eos_id", eos_id, INT32_MIN, vocab_size - 1,
                       " (token ids of the vocabulary; negative or None: no EOS)")
        eos = max(eos, -1)
    return SamplingParams(_real(where, "temperature", temperature),
                          _integer(where, "top_k", top_k, 0, INT32_MAX),
                          _real(where, "top_p", top_p), eos,
                          _integer(where, "seed", seed, 0, UINT64_MAX))


def _int32_array(where: str, ids) -> np.ndarray:
    """The prompt as a contiguous int32 array; every element must be a real
    integer that fits int32 (a float like 1.7 is refused, not truncated)."""
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1:
            raise FdcArgumentError(f"{where}prompt_ids must be one-dimensional, got shape "
                                   f"{ids.shape}")
        if ids.dtype.kind not in "iu":
            raise FdcTypeError(f"{where}prompt_ids must hold integers, got dtype {ids.dtype}")
        if ids.size and (int(ids.min()) < INT32_MIN or int(ids.max()) > INT32_MAX):
            bad, value = next((i, t) for i, t in enumerate(ids.tolist())
                              if not INT32_MIN <= t <= INT32_MAX)
            raise FdcArgumentError(f"{where}prompt_ids[{bad}] must be in [{INT32_MIN}, "
                                   f"{INT32_MAX}], got {value}")
        return np.ascontiguousarray(ids, dtype=np.int32)
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise FdcTypeError(f"{where}prompt_ids must be a sequence of token ids, got "
                           f"{type(ids).__name__}")
    ids = [_integer(where, f"prompt_ids[{i}]", token, INT32_MIN, INT32_MAX)
           for i, token in enumerate(ids)]
    return np.array(ids, dtype=np.int32)


def _path(name: str, value) -> bytes:
    try:
        path = os.fsencode(value)
    except TypeError:
        raise FdcTypeError(f"Model: {name} must be a path, got {type(value).__name__}") from None
    if b"\0" in path:
        raise FdcArgumentError(f"Model: {name} contains a NUL byte: {value!r}")
    return path


def _ptr(array: np.ndarray, ctype):
    return array.ctypes.data_as(ctypes.POINTER(ctype))


_REQUEST_KEYS = ("prompt_ids", "max_new_tokens", "temperature", "top_k", "top_p", "seed",
                 "eos_id", "return_logits", "on_token")


class Model:
    """A model library loaded with its weights and a KV cache.

    ``packed_weights`` names a packed-weights file that ``fdc pack`` wrote
    for this library: its int4 and tiled_csl weights are copied from it
    (checked against the library) instead of packed from the checkpoint.

    Arguments are checked before any C call: integers must be ``int`` (or
    numpy integer scalars; never ``bool`` or ``float``) within the range of
    their C type and their meaning, floats must be finite; a bad argument
    raises ``FdcTypeError`` (a ``TypeError``) or ``FdcArgumentError`` (a
    ``ValueError``) naming it; both are ``FdcRuntimeError`` subclasses.

    Thread safety: a ``Model`` may be shared between threads. Every call into
    the runtime holds the model's lock, so calls from several threads run one
    at a time; ``close()`` from another thread waits until the generation in
    progress has returned, and a call after ``close()`` raises
    ``FdcUsageError``. From inside an ``on_token`` callback, using the same
    model (``close()``, ``generate``, ``generate_batch``, ``manifest``)
    raises ``FdcUsageError`` instead of re-entering the runtime; an
    exception raised by a callback stops further callbacks of that call, the
    generation runs to its end (the C API cannot stop it), and the exception
    is re-raised from ``generate_batch``.
    """

    def __init__(self, library: str | os.PathLike, weights_dir: str | os.PathLike,
                 max_context: int = 0, num_slots: int = 1, max_step_rows: int = 0,
                 packed_weights: str | os.PathLike | None = None):
        self._handle = None
        self._lock = threading.Lock()
        self._owner = None  # ident of the thread inside a runtime call
        # Threads inside a generate_batch on_token callback: the runtime's
        # loop thread, not the caller's (which waits in the C call).
        self._callback_threads: set[int] = set()
        self._engines = 0  # engines open on this model
        self._engines_lock = threading.Lock()
        library_b, weights_b = _path("library", library), _path("weights_dir", weights_dir)
        packed_b = None if packed_weights is None else _path("packed_weights", packed_weights)
        max_context = _integer("Model: ", "max_context", max_context, 0, INT32_MAX,
                               " (0: the model's max_position_embeddings, at most 2048)")
        num_slots = _integer("Model: ", "num_slots", num_slots, 1, INT32_MAX)
        max_step_rows = _integer("Model: ", "max_step_rows", max_step_rows, 0, MAX_STEP_ROWS,
                                 " (0: num_slots; rows one step runs, prompts read in "
                                 "chunks)")
        self._lib = _load_library()
        error = ctypes.c_void_p()
        options = ModelOptions(max_context, num_slots, max_step_rows)
        handle = self._lib.fdc_model_load_packed(library_b, weights_b, packed_b,
                                                 ctypes.byref(options), ctypes.byref(error))
        if not handle:
            message = ctypes.string_at(error.value).decode(errors="replace") \
                if error.value else "unknown error"
            self._lib.fdc_string_free(error)
            raise FdcRuntimeError(message)
        self._handle = handle
        self.vocab_size = self._lib.fdc_model_vocab_size(handle)
        self.max_context = self._lib.fdc_model_max_context(handle)
        self.num_slots = self._lib.fdc_model_num_slots(handle)
        self.max_step_rows = self._lib.fdc_model_max_step_rows(handle)
        # Python's on_token callbacks never see logits: the steps need not
        # bring them back (return_logits still does).
        self._lib.fdc_model_set_callback_logits(handle, 0)

    def _in_callback(self) -> bool:
        ident = threading.get_ident()
        return ident == self._owner or ident in getattr(self, "_callback_threads", ())

    @contextlib.contextmanager
    def _using(self, what: str):
        """Hold the model's lock for one runtime call and yield the handle."""
        if self._in_callback():
            raise FdcUsageError(f"{what} called from inside an on_token callback of the same "
                                f"model; the runtime cannot be re-entered")
        with self._lock:
            if not self._handle:
                raise FdcUsageError(f"{what}: the model was closed")
            self._owner = threading.get_ident()
            try:
                yield self._handle
            finally:
                self._owner = None

    @property
    def manifest(self) -> str:
        """The model library's manifest JSON."""
        with self._using("Model.manifest") as handle:
            return self._lib.fdc_model_manifest(handle).decode()

    def _check_length(self, prompt: np.ndarray, max_new_tokens: int) -> str | None:
        """The runtime's context check, done before allocating the outputs."""
        if prompt.size > self.max_context:
            return f"prompt of {prompt.size} tokens exceeds max_context {self.max_context}"
        if max_new_tokens > self.max_context - prompt.size:
            return (f"prompt of {prompt.size} tokens + max_new_tokens {max_new_tokens} "
                    f"exceeds max_context {self.max_context}")
        return None

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int = 0, eos_id: int | None = None,
                 return_logits: bool = False):
        """Generates up to max_new_tokens ids after prompt_ids.

        Returns the list of generated ids, or (ids, logits) with logits a
        float32 array [len(ids), vocab_size] when return_logits is true.
        """
        where = "generate: "
        prompt = _int32_array(where, prompt_ids)
        max_new_tokens = _integer(where, "max_new_tokens", max_new_tokens, 0, INT64_MAX)
        params = _params(where, self.vocab_size, temperature, top_k, top_p, seed, eos_id)
        problem = self._check_length(prompt, max_new_tokens)
        if problem:
            raise FdcArgumentError(where + problem)
        ids = np.zeros(max(max_new_tokens, 1), dtype=np.int32)
        logits = (np.zeros((max(max_new_tokens, 1), self.vocab_size),
                           dtype=np.float32) if return_logits else None)
        count = ctypes.c_int64(0)
        with self._using("Model.generate") as handle:
            rc = self._lib.fdc_generate(
                handle, _ptr(prompt, ctypes.c_int32), prompt.size, max_new_tokens,
                ctypes.byref(params), _ptr(ids, ctypes.c_int32),
                ctypes.byref(count),
                _ptr(logits, ctypes.c_float) if logits is not None else None)
            if rc != 0:
                raise FdcRuntimeError(self._lib.fdc_last_error().decode(errors="replace"))
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
        token) as each token is generated, on the runtime's engine thread
        (this thread waits in the call meanwhile). Returns one dict per request: ``ids``,
        ``finish_reason``, ``error`` (None on success) and, if asked,
        ``logits``.

        A request whose values the runtime refuses (a token outside the
        vocabulary, top_p outside (0, 1], more tokens than max_context) is
        rejected alone (finish_reason "rejected", ``error`` says why) while
        the others run; a missing key, an unknown key, or a value of the wrong
        type or beyond its C type raises for the whole call, naming the
        request. If an ``on_token`` callback raises, no further callbacks are
        made, the call runs to its end and then re-raises that exception.
        """
        if isinstance(requests, (dict, str, bytes)) or not hasattr(requests, "__iter__"):
            raise FdcTypeError("generate_batch: requests must be a sequence of dicts, got "
                               f"{type(requests).__name__}")
        requests = list(requests)
        failure: list[BaseException] = []  # the first exception a callback raised
        prepared = []  # (spec index, prompt, max_new, params, return_logits, on_token)
        results: list[dict | None] = [None] * len(requests)
        for i, spec in enumerate(requests):
            where = f"generate_batch: request {i}: "
            if not isinstance(spec, Mapping):
                raise FdcTypeError(f"{where}must be a dict, got {type(spec).__name__}")
            unknown = [k for k in spec if k not in _REQUEST_KEYS]
            if unknown:
                raise FdcTypeError(f"{where}unknown key {unknown[0]!r} (known: "
                                   f"{', '.join(_REQUEST_KEYS)})")
            for key in ("prompt_ids", "max_new_tokens"):
                if key not in spec:
                    raise FdcTypeError(f"{where}missing {key!r}")
            prompt = _int32_array(where, spec["prompt_ids"])
            max_new = _integer(where, "max_new_tokens", spec["max_new_tokens"], 0, INT64_MAX)
            params = _params(where, self.vocab_size, spec.get("temperature", 0.0),
                             spec.get("top_k", 0), spec.get("top_p", 1.0),
                             spec.get("seed", 0), spec.get("eos_id"))
            on_token = spec.get("on_token")
            if on_token is not None and not callable(on_token):
                raise FdcTypeError(f"{where}on_token must be callable, got "
                                   f"{type(on_token).__name__}")
            problem = self._check_length(prompt, max_new)
            if problem:  # what the runtime would say, before allocating for it
                results[i] = {"ids": [], "finish_reason": "rejected", "error": problem}
                if spec.get("return_logits"):
                    results[i]["logits"] = np.zeros((0, self.vocab_size), np.float32)
                continue
            prepared.append((i, prompt, max_new, params, bool(spec.get("return_logits")),
                             on_token))

        array = (Request * len(prepared))()
        keep, callbacks = [], []  # alive until the call returns
        for request, (_, prompt, max_new, params, want_logits, on_token) in zip(array, prepared):
            ids = np.zeros(max(max_new, 1), dtype=np.int32)
            logits = (np.zeros((max(max_new, 1), self.vocab_size), dtype=np.float32)
                      if want_logits else None)
            keep.append((prompt, ids, logits))
            request.prompt = _ptr(prompt, ctypes.c_int32)
            request.prompt_len = prompt.size
            request.max_new_tokens = max_new
            request.params = params
            request.out_ids = _ptr(ids, ctypes.c_int32)
            if logits is not None:
                request.out_logits = _ptr(logits, ctypes.c_float)
            if on_token is not None:
                def call(_user, step, token, _logits, _vocab, fn=on_token):
                    if failure:
                        return
                    ident = threading.get_ident()
                    self._callback_threads.add(ident)
                    try:
                        fn(step, token)
                    except BaseException as e:  # noqa: B036 - re-raised after the call
                        failure.append(e)
                    finally:
                        self._callback_threads.discard(ident)
                callback = TOKEN_CALLBACK(call)
                callbacks.append(callback)
                request.callback = callback
        if prepared:
            with self._using("Model.generate_batch") as handle:
                if self._lib.fdc_generate_batch(handle, array, len(prepared)) < 0:
                    raise FdcRuntimeError(self._lib.fdc_last_error().decode(errors="replace"))
        if failure:
            raise failure[0]
        for request, (i, *_), (_, ids, logits) in zip(array, prepared, keep):
            n = request.out_len
            result = {"ids": ids[:n].tolist(),
                      "finish_reason": FINISH_REASONS.get(request.finish_reason, "?"),
                      "error": (request.error.decode(errors="replace")
                                if request.status else None)}
            if logits is not None:
                result["logits"] = logits[:n].copy()
            results[i] = result
        return results

    def engine(self, max_step_tokens: int = 0) -> "Engine":
        """An asynchronous engine on this model (see ``Engine``); the model is
        the engine's until it is closed."""
        max_step_tokens = _integer("Model.engine: ", "max_step_tokens", max_step_tokens, 0,
                                   INT64_MAX, " (0: the model's max_step_rows)")
        with self._using("Model.engine") as handle:
            engine = self._lib.fdc_engine_create(handle, max_step_tokens)
            if not engine:
                raise FdcRuntimeError(self._lib.fdc_last_error().decode(errors="replace"))
            with self._engines_lock:
                self._engines += 1
        return Engine(self, engine)

    def _engine_closed(self) -> None:
        with self._engines_lock:
            self._engines -= 1

    def close(self) -> None:
        """Releases the model. Waits for a generation running in another
        thread; raises FdcUsageError from inside one of its own callbacks or
        while an engine on it is open."""
        if self._in_callback():
            raise FdcUsageError("Model.close() called from inside an on_token callback of "
                                "the same model; close it after generate_batch returns")
        with self._lock:
            if self._engines:
                raise FdcUsageError("Model.close(): an engine on this model is open; close "
                                    "the engine first")
            if self._handle:
                self._lib.fdc_model_free(self._handle)
                self._handle = None

    @property
    def closed(self) -> bool:
        return not self._handle

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) and getattr(self, "_lock", None):
            try:
                self.close()
            except Exception:
                pass


class Engine:
    """Flover's temporal fusion over one model (``Model.engine()``): a loop
    thread in the runtime runs one fused step for every running request, and
    requests submitted from any thread join at the next step; they leave
    when they finish or are cancelled. A request that finds every KV-cache
    slot taken waits, in order, for one to free.

    ``submit`` checks its arguments as ``Model.generate`` does and returns a
    request id at once; ``on_token(step, token)`` is called on the engine's
    thread for every generated token (an exception it raises cancels the
    request and is re-raised by ``wait``/``poll`` for it). ``wait(id)``
    blocks until the request finished and ``poll(id)`` returns None while it
    runs; both return ``{"ids", "finish_reason", "error"}`` once per request
    (keep waiting for what you submit: the runtime holds each result until
    it is taken). ``cancel(id)`` asks to end a running request ("cancelled",
    with its tokens so far, unless the step running now finishes it).
    ``close()`` cancels what is left and frees the model; the engine is also
    a context manager. From inside an ``on_token`` callback, ``submit``,
    ``cancel`` and ``poll`` work; ``wait`` and ``close`` raise
    ``FdcUsageError``.
    """

    def __init__(self, model: Model, handle):
        self._model, self._handle = model, handle
        self._lib = model._lib
        # Held around every C call on the handle (none of which blocks), so
        # close() never frees the engine under another call.
        self._lock = threading.Lock()
        self._callbacks: dict[int, tuple] = {}  # id -> (callback, failure list)
        self._max_new: dict[int, int] = {}
        self._loop_thread = None  # ident of the runtime's loop thread

    def _live(self, what: str):
        if not self._handle:
            raise FdcUsageError(f"{what}: the engine was closed")
        return self._handle

    def _not_from_callback(self, what: str):
        if self._loop_thread == threading.get_ident():
            raise FdcUsageError(f"{what} called from inside an on_token callback of the "
                                "same engine; it would never return")

    def submit(self, prompt_ids: Sequence[int], max_new_tokens: int,
               temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
               seed: int = 0, eos_id: int | None = None, on_token=None) -> int:
        where = "Engine.submit: "
        prompt = _int32_array(where, prompt_ids)
        max_new_tokens = _integer(where, "max_new_tokens", max_new_tokens, 0, INT64_MAX)
        params = _params(where, self._model.vocab_size, temperature, top_k, top_p, seed,
                         eos_id)
        if on_token is not None and not callable(on_token):
            raise FdcTypeError(f"{where}on_token must be callable, got "
                               f"{type(on_token).__name__}")
        problem = self._model._check_length(prompt, max_new_tokens)
        if problem:
            raise FdcArgumentError(where + problem)
        failure: list[BaseException] = []
        request = [0]  # its id, once submit returned
        lib, engine = self._lib, self

        def call(_user, step, token, _logits, _vocab):
            # Only a callback runs Python on the loop thread.
            engine._loop_thread = threading.get_ident()
            if failure:
                return
            try:
                on_token(step, token)
            except BaseException as e:  # noqa: B036 - re-raised by wait/poll
                failure.append(e)
                if request[0]:
                    lib.fdc_engine_cancel(handle, request[0])
        callback = TOKEN_CALLBACK(call) if on_token is not None else TOKEN_CALLBACK()
        with self._lock:
            handle = self._live("Engine.submit")
            request_id = self._lib.fdc_engine_submit(
                handle, _ptr(prompt, ctypes.c_int32), prompt.size, max_new_tokens,
                ctypes.byref(params), callback, None)
            if request_id < 0:
                raise FdcRuntimeError(self._lib.fdc_last_error().decode(errors="replace"))
            request[0] = request_id
            self._callbacks[request_id] = (callback, failure)
            self._max_new[request_id] = max_new_tokens
        return request_id

    def cancel(self, request_id: int) -> bool:
        """True if the request was running and its cancellation is asked."""
        request_id = _integer("Engine.cancel: ", "request_id", request_id, 1, INT64_MAX)
        with self._lock:
            return self._lib.fdc_engine_cancel(self._live("Engine.cancel"), request_id) == 0

    def poll(self, request_id: int) -> dict | None:
        request_id = _integer("Engine.poll: ", "request_id", request_id, 1, INT64_MAX)
        capacity = max(self._max_new.get(request_id, 0), 1)
        ids = np.zeros(capacity, dtype=np.int32)
        result = Result()
        with self._lock:
            rc = self._lib.fdc_engine_poll(self._live("Engine.poll"), request_id,
                                           _ptr(ids, ctypes.c_int32), capacity,
                                           ctypes.byref(result))
            if rc < 0:
                raise FdcRuntimeError(self._lib.fdc_last_error().decode(errors="replace"))
            if rc == 1:
                return None
            _, failure = self._callbacks.pop(request_id, (None, []))
            self._max_new.pop(request_id, None)
        if failure:
            raise failure[0]
        return {"ids": ids[:result.out_len].tolist(),
                "finish_reason": FINISH_REASONS.get(result.finish_reason, "?"),
                "error": result.error.decode(errors="replace") if result.status else None}

    def wait(self, request_id: int) -> dict:
        """Polls until the request finished (a blocking C wait could outlive
        a close() from another thread)."""
        self._not_from_callback("Engine.wait")
        delay = 2e-5
        while True:
            result = self.poll(request_id)
            if result is not None:
                return result
            time.sleep(delay)
            delay = min(delay * 2, 2e-3)

    @property
    def pending(self) -> int:
        """Requests submitted and not yet finished."""
        with self._lock:
            return self._lib.fdc_engine_pending(self._live("Engine.pending"))

    def close(self) -> None:
        self._not_from_callback("Engine.close")
        with self._lock:
            handle, self._handle = self._handle, None
        if not handle:
            return
        # Outside the lock: the loop thread's last callbacks may still take
        # it (and find the engine closed).
        self._lib.fdc_engine_free(handle)
        self._model._engine_closed()
        self._callbacks.clear()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if self._loop_thread != threading.get_ident():
                self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
