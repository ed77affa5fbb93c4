"""The Python binding (fdc.runtime) under misuse (issue 10): arguments are
checked before any C call (nothing wraps or truncates silently, nothing is
allocated for an absurd request), and a model shared between threads or used
from its own callbacks raises clear errors instead of crashing.

The argument checks need no build; the tests that run a model need
build/bin/fdc and build/lib/libfdc_runtime.so (or FDC_BUILD_DIR) and are
skipped without them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from fdc.runtime import (FdcArgumentError, FdcRuntimeError, FdcTypeError, FdcUsageError,
                         Model)

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC = BUILD / "bin" / "fdc"
RUNTIME = BUILD / "lib" / "libfdc_runtime.so"
BUILT = FDC.exists() and RUNTIME.exists()
needs_build = pytest.mark.skipif(not BUILT, reason=f"needs {FDC} and {RUNTIME}")

VOCAB, MAX_CONTEXT = 512, 64


def unloaded_model() -> Model:
    """A Model that passed no C call: its checks run, but a call that got
    past them would fail with 'the model was closed' instead of running."""
    m = Model.__new__(Model)
    m._handle, m._lock, m._owner, m._engines = None, threading.Lock(), None, 0
    m.vocab_size, m.max_context, m.num_slots = VOCAB, MAX_CONTEXT, 1
    return m


# --- integers that used to wrap silently --------------------------------------------

@pytest.mark.parametrize("kwargs, error, message", [
    (dict(eos_id=2**32 + 188), FdcArgumentError,
     "generate: eos_id must be in [-2147483648, 511] (token ids of the vocabulary; negative "
     "or None: no EOS), got 4294967484"),
    (dict(eos_id=512), FdcArgumentError, "generate: eos_id must be in [-2147483648, 511]"),
    (dict(top_k=2**32 + 1), FdcArgumentError,
     "generate: top_k must be in [0, 2147483647], got 4294967297"),
    (dict(top_k=-1), FdcArgumentError, "generate: top_k must be in [0, 2147483647], got -1"),
    (dict(top_k=True), FdcTypeError, "generate: top_k must be an integer, got bool True"),
    (dict(top_k=2.0), FdcTypeError, "generate: top_k must be an integer, got float 2.0"),
    (dict(seed=2**64), FdcArgumentError,
     "generate: seed must be in [0, 18446744073709551615], got 18446744073709551616"),
    (dict(seed=-1), FdcArgumentError, "generate: seed must be in [0, 18446744073709551615]"),
    (dict(temperature=float("nan")), FdcArgumentError,
     "generate: temperature must be finite (as a 32-bit float), got nan"),
    (dict(temperature=1e39), FdcArgumentError,
     "generate: temperature must be finite (as a 32-bit float), got 1e+39"),
    (dict(temperature=10**400), FdcArgumentError, "generate: temperature must be finite"),
    (dict(temperature="0.5"), FdcTypeError,
     "generate: temperature must be a real number, got str '0.5'"),
    (dict(top_p=float("inf")), FdcArgumentError,
     "generate: top_p must be finite (as a 32-bit float), got inf"),
    (dict(max_new_tokens=2.0), FdcTypeError,
     "generate: max_new_tokens must be an integer, got float 2.0"),
    (dict(max_new_tokens=-1), FdcArgumentError,
     "generate: max_new_tokens must be in [0, 9223372036854775807], got -1"),
    (dict(max_new_tokens=2**40), FdcArgumentError,
     "generate: prompt of 2 tokens + max_new_tokens 1099511627776 exceeds max_context 64"),
    (dict(max_new_tokens=2**64 + 4), FdcArgumentError,
     "generate: max_new_tokens must be in [0, 9223372036854775807], got 18446744073709551620"),
    (dict(prompt_ids=[1.7, 2.2]), FdcTypeError,
     "generate: prompt_ids[0] must be an integer, got float 1.7"),
    (dict(prompt_ids=[1, True]), FdcTypeError,
     "generate: prompt_ids[1] must be an integer, got bool True"),
    (dict(prompt_ids=[1, 2**32 + 1]), FdcArgumentError,
     "generate: prompt_ids[1] must be in [-2147483648, 2147483647], got 4294967297"),
    (dict(prompt_ids=np.array([1.7, 2.2])), FdcTypeError,
     "generate: prompt_ids must hold integers, got dtype float64"),
    (dict(prompt_ids=np.array([1, 2**40])), FdcArgumentError,
     "generate: prompt_ids[1] must be in [-2147483648, 2147483647], got 1099511627776"),
    (dict(prompt_ids=np.array([[1, 2]])), FdcArgumentError,
     "generate: prompt_ids must be one-dimensional, got shape (1, 2)"),
    (dict(prompt_ids="12"), FdcTypeError,
     "generate: prompt_ids must be a sequence of token ids, got str"),
    (dict(prompt_ids=list(range(65))), FdcArgumentError,
     "generate: prompt of 65 tokens exceeds max_context 64"),
])
def test_generate_refuses_before_any_c_call(kwargs, error, message):
    args = dict(prompt_ids=[1, 2], max_new_tokens=4)
    args.update(kwargs)
    with pytest.raises(error) as info:
        unloaded_model().generate(**args)
    assert str(info.value).startswith(message), str(info.value)
    # Both kinds are FdcRuntimeErrors and the matching builtin exception.
    assert isinstance(info.value, FdcRuntimeError)
    assert isinstance(info.value, ValueError if error is FdcArgumentError else TypeError)


def test_numpy_integers_and_tiny_floats_are_accepted():
    """What the checks must not refuse: numpy integer scalars and arrays,
    tiny positive floats (1e-45 is a float32 subnormal), eos_id None or < 0.
    The unloaded model then reports that it is closed: the checks passed."""
    m = unloaded_model()
    for kwargs in (dict(prompt_ids=np.array([1, 2], dtype=np.uint16)),
                   dict(prompt_ids=[np.int64(1), np.int32(2)], max_new_tokens=np.int64(3)),
                   dict(temperature=1e-45, top_p=1e-30, top_k=np.uint8(3)),
                   dict(temperature=np.float32(0.7), seed=2**64 - 1, eos_id=-1),
                   dict(eos_id=np.int16(511), max_new_tokens=62)):
        args = dict(prompt_ids=[1, 2], max_new_tokens=4)
        args.update(kwargs)
        with pytest.raises(FdcUsageError, match="Model.generate: the model was closed"):
            m.generate(**args)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(max_context=2**64 + 16), FdcArgumentError,
     "Model: max_context must be in [0, 2147483647] (0: the model's "
     "max_position_embeddings, at most 2048), got 18446744073709551632"),
    (dict(max_context=-1), FdcArgumentError, "Model: max_context must be in [0, "),
    (dict(max_context=2**31), FdcArgumentError, "Model: max_context must be in [0, 2147483647]"),
    (dict(max_context=256.0), FdcTypeError, "Model: max_context must be an integer, got float"),
    (dict(num_slots=2**64 + 3), FdcArgumentError,
     "Model: num_slots must be in [1, 2147483647], got 18446744073709551619"),
    (dict(num_slots=0), FdcArgumentError, "Model: num_slots must be in [1, 2147483647], got 0"),
    (dict(num_slots=False), FdcTypeError, "Model: num_slots must be an integer, got bool"),
    (dict(max_step_rows=-1), FdcArgumentError,
     "Model: max_step_rows must be in [0, 1048576] (0: num_slots; rows one step runs, "
     "prompts read in chunks), got -1"),
    (dict(max_step_rows=2**20 + 1), FdcArgumentError,
     "Model: max_step_rows must be in [0, 1048576]"),
    (dict(library="a\0b.so"), FdcArgumentError, "Model: library contains a NUL byte"),
    (dict(library=3), FdcTypeError, "Model: library must be a path, got int"),
])
def test_model_arguments_are_checked_before_loading(kwargs, error, message):
    args = dict(library="/nonexistent/model.so", weights_dir="/nonexistent")
    args.update(kwargs)
    with pytest.raises(error) as info:
        Model(**args)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize("request_, error, message", [
    (dict(prompt_ids=[1]), FdcTypeError, "generate_batch: request 1: missing 'max_new_tokens'"),
    (dict(max_new_tokens=3), FdcTypeError, "generate_batch: request 1: missing 'prompt_ids'"),
    (dict(prompt_ids=[1], max_new_tokens=3, max_tokens=3), FdcTypeError,
     "generate_batch: request 1: unknown key 'max_tokens'"),
    (dict(prompt_ids=[1], max_new_tokens=3, eos_id=2**32 + 188), FdcArgumentError,
     "generate_batch: request 1: eos_id must be in [-2147483648, 511]"),
    (dict(prompt_ids=[1.5], max_new_tokens=3), FdcTypeError,
     "generate_batch: request 1: prompt_ids[0] must be an integer, got float 1.5"),
    (dict(prompt_ids=[1], max_new_tokens=3, on_token=5), FdcTypeError,
     "generate_batch: request 1: on_token must be callable, got int"),
    ([1, 2], FdcTypeError, "generate_batch: request 1: must be a dict, got list"),
])
def test_generate_batch_refuses_bad_requests_before_any_c_call(request_, error, message):
    good = dict(prompt_ids=[1, 2], max_new_tokens=2)
    with pytest.raises(error) as info:
        unloaded_model().generate_batch([good, request_])
    assert str(info.value).startswith(message), str(info.value)


def test_generate_batch_rejects_an_absurd_length_alone_without_allocating():
    """max_new_tokens = 2**40 used to make numpy allocate 4 TiB: now it is
    rejected alone, as the runtime would reject it, and nothing is allocated
    (every request rejected: no C call at all)."""
    m = unloaded_model()
    results = m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=2**40,
                                     return_logits=True),
                                dict(prompt_ids=list(range(65)), max_new_tokens=0)])
    assert results[0]["finish_reason"] == "rejected" and results[0]["ids"] == []
    assert results[0]["error"] == ("prompt of 2 tokens + max_new_tokens 1099511627776 exceeds "
                                   "max_context 64")
    assert results[0]["logits"].shape == (0, VOCAB)
    assert results[1]["error"] == "prompt of 65 tokens exceeds max_context 64"
    with pytest.raises(FdcTypeError, match="requests must be a sequence of dicts, got dict"):
        m.generate_batch(dict(prompt_ids=[1], max_new_tokens=1))


def test_closed_model_raises():
    m = unloaded_model()
    with pytest.raises(FdcUsageError, match="Model.manifest: the model was closed"):
        m.manifest
    m.close()  # closing twice is fine
    assert m.closed


# --- a real model: callbacks and threads ---------------------------------------------

@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    if not BUILT:
        pytest.skip(f"needs {FDC} and {RUNTIME}")
    os.environ.setdefault("FDC_RUNTIME_LIB", str(RUNTIME))
    from fdc.frontend import model_ir
    from fdc.testing.tiny_checkpoint import make_tiny_checkpoint
    root = tmp_path_factory.mktemp("binding")
    ckpt = root / "tiny"
    make_tiny_checkpoint(str(ckpt))
    (root / "tiny.mlir").write_text(model_ir(str(ckpt)))
    subprocess.run([str(FDC), "compile", str(root / "tiny.mlir"), "--target=host", "-o",
                    str(root / "tiny.so")], check=True, capture_output=True)
    return root / "tiny.so", ckpt


def open_model(tiny_model, **kwargs) -> Model:
    so, ckpt = tiny_model
    return Model(so, ckpt, max_context=MAX_CONTEXT, **kwargs)


@needs_build
def test_close_from_a_callback_raises_and_the_model_survives(tiny_model):
    with open_model(tiny_model) as m:
        seen = []

        def on_token(step, token):
            seen.append(step)
            m.close()

        with pytest.raises(FdcUsageError, match=r"Model.close\(\) called from inside an "
                                                r"on_token callback of the same model"):
            m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=5, on_token=on_token)])
        assert seen == [0]  # no callback after the one that raised
        assert not m.closed
        expected = m.generate([1, 2], 5)
        assert len(expected) == 5


@needs_build
def test_nested_generate_from_a_callback_raises(tiny_model):
    with open_model(tiny_model, num_slots=2) as m:
        def on_token(step, token):
            m.generate([3], 2)

        with pytest.raises(FdcUsageError, match="Model.generate called from inside an on_token "
                                                "callback of the same model"):
            m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=3, on_token=on_token)])
        assert m.generate([1, 2], 3) == m.generate([1, 2], 3)


@needs_build
def test_callback_exceptions_are_re_raised(tiny_model):
    class Stop(Exception):
        pass

    calls = []

    def on_token(step, token):
        calls.append(step)
        if step == 1:
            raise Stop("enough")

    with open_model(tiny_model) as m:
        with pytest.raises(Stop, match="enough"):
            m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=6, on_token=on_token)])
        assert calls == [0, 1]
        # The model is still usable and gives the same tokens as before.
        [result] = m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=6)])
        assert result["ids"] == m.generate([1, 2], 6)


@needs_build
def test_close_from_another_thread_waits_for_the_generation(tiny_model):
    m = open_model(tiny_model)
    started, release = threading.Event(), threading.Event()
    closed_at = []

    last_token_at = []

    def on_token(step, token):
        if step == 0:
            started.set()
            release.wait(10)  # hold the generation until the closer is blocked
        last_token_at[:] = [time.monotonic()]

    def closer():
        started.wait(10)
        m.close()
        closed_at.append(time.monotonic())

    thread = threading.Thread(target=closer)
    thread.start()
    # Run the generation in this thread, releasing the callback after a pause
    # long enough for close() to have been called (and to block).
    threading.Timer(0.5, release.set).start()
    results = m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=4, on_token=on_token)])
    thread.join(10)
    assert not thread.is_alive()
    assert len(results[0]["ids"]) == 4 and results[0]["error"] is None
    # close() returned only after the generation's last token; the return of
    # generate_batch to this thread may come after close() returned, so that
    # is no bound.
    assert closed_at and last_token_at and closed_at[0] >= last_token_at[0]
    assert m.closed
    with pytest.raises(FdcUsageError, match="Model.generate: the model was closed"):
        m.generate([1], 1)


@needs_build
def test_many_threads_share_one_model(tiny_model):
    """Concurrent generate calls are serialised: each gets the same tokens as
    when run alone, and a close() racing with them never crashes."""
    m = open_model(tiny_model)
    alone = m.generate([1, 2, 3], 8)
    errors, outputs = [], []

    def worker():
        try:
            for _ in range(5):
                outputs.append(m.generate([1, 2, 3], 8))
        except FdcUsageError as e:  # closed under it: allowed, nothing else is
            errors.append(str(e))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    m.close()
    for t in threads:
        t.join(30)
    assert all(out == alone for out in outputs)
    assert all(e == "Model.generate: the model was closed" for e in errors)


@needs_build
def test_tiny_temperature_is_accepted_by_the_binding(tiny_model):
    """1e-45 is a positive float32 (a subnormal): the binding passes it on;
    whatever the runtime makes of it, it is not an argument error here."""
    with open_model(tiny_model) as m:
        try:
            ids = m.generate([1, 2], 4, temperature=1e-45, seed=3)
        except FdcRuntimeError as e:
            assert not isinstance(e, (FdcArgumentError, FdcTypeError)), e
        else:
            assert len(ids) == 4 and all(0 <= t < VOCAB for t in ids)


@needs_build
def test_close_from_a_callback_does_not_abort_the_process(tiny_model):
    """The original reproducer (an abort in KVCache::releaseSlot) in a child
    process: it must exit normally, having raised FdcUsageError."""
    so, ckpt = tiny_model
    code = f"""
import sys
from fdc.runtime import Model, FdcUsageError
m = Model({str(so)!r}, {str(ckpt)!r}, max_context=64)
try:
    m.generate_batch([dict(prompt_ids=[1, 2], max_new_tokens=3,
                           on_token=lambda s, t: m.close())])
except FdcUsageError as e:
    print("refused:", e)
m.close()
"""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), FDC_RUNTIME_LIB=str(RUNTIME))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused: Model.close() called from inside an on_token "
                                  "callback of the same model")


# --- the asynchronous engine ------------------------------------------------------

def resident_kib() -> int:
    """The process's resident memory now (not its peak), in KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


@needs_build
def test_engine_close_while_another_thread_waits(tiny_model):
    with open_model(tiny_model, num_slots=1) as m:
        engine = m.engine()
        long_one = engine.submit([1], 60)
        behind = engine.submit([2], 2)  # waits for the only slot
        outcome = []

        def waiter():
            try:
                outcome.append(engine.wait(behind))
            except FdcUsageError as e:
                outcome.append(str(e))
        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.01)
        engine.close()
        t.join(timeout=10)
        assert not t.is_alive()
        # Either it finished before the close, or the wait saw the close.
        assert outcome and (isinstance(outcome[0], dict)
                            or "the engine was closed" in outcome[0]), outcome
        del long_one
        assert m.generate([1], 1)  # the model is free again

@needs_build
def test_engine_streams_cancels_and_frees_the_model(tiny_model):
    with open_model(tiny_model, num_slots=2) as m:
        alone = m.generate([1, 2, 3], 6)
        with m.engine() as engine:
            with pytest.raises(FdcRuntimeError, match="already generating"):
                m.generate([1], 1)
            with pytest.raises(FdcUsageError, match="an engine on this model is open"):
                m.close()
            streamed = []
            a = engine.submit([1, 2, 3], 6, on_token=lambda step, token:
                              streamed.append((step, token)))
            b = engine.submit([4, 5], 40)
            assert engine.cancel(b)
            result = engine.wait(a)
            assert result == {"ids": alone, "finish_reason": "length", "error": None}
            assert streamed == list(enumerate(alone))
            cancelled = engine.wait(b)
            assert cancelled["finish_reason"] == "cancelled"
            assert len(cancelled["ids"]) < 40
            with pytest.raises(FdcRuntimeError, match="each result is returned once"):
                engine.wait(a)
            assert not engine.cancel(a)
            with pytest.raises(FdcRuntimeError,
                               match="fdc_engine_submit: prompt token 0 is 512"):
                engine.submit([512], 1)

            def fails(step, token):
                raise KeyError("from the callback")
            c = engine.submit([7], 30, on_token=fails)
            with pytest.raises(KeyError, match="from the callback"):
                engine.wait(c)  # the request was cancelled at the failure
            assert engine.pending == 0

            # From a callback: submit and poll work, wait and close raise.
            seen = {}

            def reenter(step, token):
                if step == 0:
                    for name, call in (("wait", lambda: engine.wait(1)),
                                       ("close", engine.close)):
                        try:
                            call()
                        except FdcUsageError as e:
                            seen[name] = str(e)
                    seen["submitted"] = engine.submit([3], 1)
            d = engine.submit([2], 2, on_token=reenter)
            assert engine.wait(d)["finish_reason"] == "length"
            assert seen["wait"].startswith("Engine.wait called from inside an on_token "
                                           "callback of the same engine")
            assert seen["close"].startswith("Engine.close called from inside")
            assert engine.wait(seen["submitted"])["finish_reason"] == "length"
        with pytest.raises(FdcUsageError, match="the engine was closed"):
            engine.submit([1], 1)
        # The model is free again.
        assert m.generate([1, 2, 3], 6) == alone


@needs_build
def test_engine_soak_with_random_arrivals_and_cancellations(tiny_model):
    """2,000 short requests submitted from four threads at random times, a
    fifth of them cancelled at random times, into 8 slots with prompts read
    in chunks (24 rows a step): every request finishes with the right reason
    and, checked against single runs for a sample, the right ids; the model
    and the process's memory come back to where they started."""
    import random

    with open_model(tiny_model, num_slots=8, max_step_rows=24) as m:
        with m.engine() as engine:  # warm up what one engine allocates
            engine.wait(engine.submit([1], 1))
        rss_before = resident_kib()
        submitted = []  # (id, prompt, max_new, cancelled)
        lock = threading.Lock()
        start = time.time()
        with m.engine() as engine:
            def client(seed):
                rng = random.Random(seed)
                for _ in range(500):
                    prompt = [rng.randrange(VOCAB) for _ in range(rng.randint(1, 8))]
                    max_new = rng.randint(1, 8)
                    request_id = engine.submit(prompt, max_new)
                    cancel = rng.random() < 0.2
                    if cancel:
                        time.sleep(rng.random() * 1e-3)
                        engine.cancel(request_id)  # may find it finished already
                    with lock:
                        submitted.append((request_id, prompt, max_new, cancel))
                    time.sleep(rng.random() * 2e-4)

            threads = [threading.Thread(target=client, args=(seed,)) for seed in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            results = {request_id: engine.wait(request_id)
                       for request_id, *_ in submitted}
            assert engine.pending == 0
        seconds = time.time() - start
        assert len(results) == 2000
        reasons = {}
        for request_id, prompt, max_new, cancel in submitted:
            result = results[request_id]
            assert result["error"] is None
            reasons[result["finish_reason"]] = reasons.get(result["finish_reason"], 0) + 1
            if result["finish_reason"] == "cancelled":
                assert cancel and len(result["ids"]) <= max_new
            else:
                assert result["finish_reason"] == "length", result
                assert len(result["ids"]) == max_new
        assert reasons.get("cancelled", 0) > 0
        # Single runs of a sample give the same ids (a cancelled request's are
        # a prefix of them); greedy f32 on the host is exact.
        for request_id, prompt, max_new, cancel in random.Random(7).sample(submitted, 40):
            ids = results[request_id]["ids"]
            assert m.generate(prompt, max_new)[:len(ids)] == ids
        # Every slot is free: as many requests as slots run at once again.
        with m.engine() as engine:
            ids = [engine.submit([i], 2) for i in range(8)]
            assert all(engine.wait(i)["finish_reason"] == "length" for i in ids)
        assert resident_kib() - rss_before < 64 * 1024, (rss_before, resident_kib())
        assert seconds < 120
