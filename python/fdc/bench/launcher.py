"""Running a model library's step with this process's own kernel launches.

``ModelLibrary`` opens a library built by ``fdc compile`` (any target) with
ctypes: its manifest, kernel images and ``fdc_model_step``. The step is the
library's host code; for a GPU library it launches kernels through the
``FdcDeviceApi`` callback of its arguments (fdc_model_abi.h). Here that
callback is Python: ``LaunchRecorder`` records the launches (no GPU needed),
``CudaLauncher`` issues them with cuLaunchKernel on torch's current stream,
so that torch can capture them in a CUDA graph, and can run a chosen subset
of the kernels (the one being measured). A library whose manifest says
``dependent_launch`` (its kernels wait for the kernel before them at their
start) is launched as the runtime launches it: cuLaunchKernelEx with
programmatic stream serialization, unless ``FDC_DEPENDENT_LAUNCH=0``.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass

ABI_VERSION = 3

_FIELDS = ("batch", "num_slots", "max_context", "weights", "kv_cache",
           "tokens", "positions", "slots", "temperature", "top_k", "top_p",
           "uniform", "logits", "next_tokens", "scratch", "device",
           "collective")

LAUNCH_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                             ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                             ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                             ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p))


class DeviceApi(ctypes.Structure):
    _fields_ = [("context", ctypes.c_void_p), ("launch", LAUNCH_FN)]


class StepArgs(ctypes.Structure):
    """FdcStepArgs: 17 fields of 8 bytes; pointers are plain integers
    (`collective` stays 0: the benchmarks run libraries of one rank)."""
    _fields_ = [(name, ctypes.c_int64 if i < 3 else ctypes.c_uint64)
                for i, name in enumerate(_FIELDS)]


class LibraryError(RuntimeError):
    pass


class ModelLibrary:
    """A model library opened for its manifest, images and step function."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as err:
            raise LibraryError(f"{self.path}: cannot open the model library: {err}")
        version = self._symbol("fdc_abi_version", ctypes.c_uint32).value
        if version != ABI_VERSION:
            raise LibraryError(f"{self.path}: ABI version {version}, this reader "
                               f"knows {ABI_VERSION}")
        self.target = self._string("fdc_target")
        self.manifest = json.loads(self._string("fdc_manifest"))
        self.kernels = [k["name"] for k in self.manifest.get("kernels", [])]
        self._step = self._lib.fdc_model_step
        self._step.argtypes = [ctypes.POINTER(StepArgs)]
        self._step.restype = None

    def _symbol(self, name: str, ctype):
        try:
            return ctype.in_dll(self._lib, name)
        except ValueError:
            raise LibraryError(f"{self.path}: symbol {name} is missing")

    def _string(self, name: str) -> str:
        address = ctypes.addressof(self._symbol(name, ctypes.c_char))
        return ctypes.string_at(address).decode()

    def cubin(self, arch: str) -> bytes | None:
        """The cubin for `arch` ("sm_90"), or None when the library has none."""
        try:
            size = self._symbol(f"fdc_cubin_{arch}_size", ctypes.c_uint64).value
        except LibraryError:
            return None
        image = self._symbol(f"fdc_cubin_{arch}", ctypes.c_uint8)
        return ctypes.string_at(ctypes.addressof(image), size)

    def ptx(self) -> bytes:
        return self._string("fdc_ptx").encode() + b"\0"

    def weight(self, name: str) -> dict:
        for entry in self.manifest["weights"]:
            if entry["name"] == name:
                return entry
        raise LibraryError(f"{self.path}: no weight named {name!r}")

    @property
    def weights_bytes(self) -> int:
        return int(self.manifest["weights_bytes"])

    def scratch_bytes(self, batch: int) -> int:
        scratch = self.manifest.get("scratch", {})
        return int(scratch.get("fixed_bytes", 0)) + \
            batch * int(scratch.get("bytes_per_sequence", 0))

    def kv_cache_bytes(self, num_slots: int, max_context: int) -> int:
        kv = self.manifest["kv_cache"]
        return (num_slots * kv["layers"] * 2 * kv["kv_heads"] * max_context
                * kv["row_bytes"])

    def step(self, args: StepArgs) -> None:
        self._step(ctypes.byref(args))


def step_args(**values) -> StepArgs:
    """StepArgs with the given fields; the others 0."""
    unknown = set(values) - set(_FIELDS)
    if unknown:
        raise ValueError(f"unknown FdcStepArgs fields: {sorted(unknown)}")
    return StepArgs(**{k: int(v) for k, v in values.items()})


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int


class _DeviceCallback:
    """Owns the FdcDeviceApi handed to the step; subclasses implement
    `_launch` and return 0 or a non-zero error."""

    def __init__(self):
        self._callback = LAUNCH_FN(self._trampoline)
        self.api = DeviceApi(None, self._callback)
        self.error: str | None = None

    def _trampoline(self, _context, name, gx, gy, gz, bx, by, bz, shared, params):
        try:
            return self._launch(name.decode(), (gx, gy, gz), (bx, by, bz),
                                shared, params)
        except Exception as err:  # an exception must not cross into C
            self.error = f"{type(err).__name__}: {err}"
            return 1

    def run(self, library: ModelLibrary, args: StepArgs) -> None:
        args.device = ctypes.addressof(self.api)
        self.error = None
        library.step(args)
        if self.error:
            raise LibraryError(f"{library.path}: {self.error}")

    def _launch(self, name, grid, block, shared, params) -> int:
        raise NotImplementedError


class LaunchRecorder(_DeviceCallback):
    """Records the launches of a step instead of running them."""

    def __init__(self):
        super().__init__()
        self.launches: list[Launch] = []

    def _launch(self, name, grid, block, shared, params) -> int:
        self.launches.append(Launch(name, grid, block, shared))
        return 0


class CudaError(RuntimeError):
    pass


# CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (cuda.h).
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union
    (programmaticStreamSerializationAllowed is its first int)."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", ctypes.c_int), ("value_rest", ctypes.c_char * 60)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)),
                ("num_attrs", ctypes.c_uint)]


def dependent_launch_config() -> tuple[LaunchConfig, LaunchAttribute]:
    """A launch config with programmatic stream serialization allowed; the
    caller fills in the grid, block, shared bytes and stream (and keeps the
    attribute alive with the config)."""
    attribute = LaunchAttribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
    config = LaunchConfig(attrs=ctypes.pointer(attribute), num_attrs=1)
    return config, attribute


def wants_dependent_launch(library: "ModelLibrary") -> bool:
    """Whether `library`'s kernels are to be launched as dependent launches:
    its manifest says so and FDC_DEPENDENT_LAUNCH is not 0."""
    return (bool(library.manifest.get("dependent_launch"))
            and os.environ.get("FDC_DEPENDENT_LAUNCH") != "0")


class _Driver:
    """The few CUDA driver calls the launcher needs, through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL(os.environ.get("FDC_CUDA_DRIVER", "libcuda.so.1"))
        p, u = ctypes.c_void_p, ctypes.c_uint
        self.lib.cuModuleLoadData.argtypes = [ctypes.POINTER(p), ctypes.c_char_p]
        self.lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(p), p,
                                                 ctypes.c_char_p]
        self.lib.cuLaunchKernel.argtypes = [p, u, u, u, u, u, u, u, p,
                                            ctypes.POINTER(p), ctypes.POINTER(p)]
        self.lib.cuLaunchKernelEx.argtypes = [ctypes.POINTER(LaunchConfig), p,
                                              ctypes.POINTER(p),
                                              ctypes.POINTER(p)]
        self.lib.cuGetErrorName.argtypes = [ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int),
                                                  ctypes.c_int, ctypes.c_int]
        self.lib.cuCtxGetDevice.argtypes = [ctypes.POINTER(ctypes.c_int)]
        self.lib.cuFuncSetAttribute.argtypes = [p, ctypes.c_int, ctypes.c_int]

    def check(self, result: int, what: str) -> None:
        if result != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise CudaError(f"{what}: {(name.value or b'?').decode()} ({result})")

    def arch(self) -> str:
        device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        for attr, out in ((75, major), (76, minor)):  # compute capability
            self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(out), attr,
                                                     device.value),
                       "cuDeviceGetAttribute")
        return f"sm_{major.value}{minor.value}"


class CudaLauncher(_DeviceCallback):
    """Launches a GPU library's kernels on torch's current CUDA stream.

    The calling thread must have a current CUDA context (any torch CUDA
    tensor makes torch's primary context current). ``only``: names of the
    kernels to run (None: all); the others are skipped, their outputs are
    whatever the caller put in the buffers."""

    def __init__(self, library: ModelLibrary, stream=None):
        super().__init__()
        import torch

        torch.cuda.init()
        torch.empty(1, device="cuda")  # makes the primary context current
        self.driver = _Driver()
        arch = self.driver.arch()
        image = library.cubin(arch)
        self.image_kind = "cubin" if image is not None else "ptx (JIT)"
        module = ctypes.c_void_p()
        self.driver.check(self.driver.lib.cuModuleLoadData(
            ctypes.byref(module), image if image is not None else library.ptx()),
            f"cuModuleLoadData({library.path}, {arch})")
        self.functions = {}
        for name in library.kernels:
            function = ctypes.c_void_p()
            self.driver.check(self.driver.lib.cuModuleGetFunction(
                ctypes.byref(function), module, name.encode()),
                f"cuModuleGetFunction({name})")
            self.functions[name] = function
        self.library = library
        # As the runtime launches them (sm_90 and later have the launch).
        self.dependent = (wants_dependent_launch(library)
                          and int(arch[3:].rstrip("a")) >= 90)
        self._config, self._attribute = dependent_launch_config()
        # Dynamic shared memory each kernel is opted in to (above 48 KiB a
        # kernel must be, as the runtime's CUDA backend does).
        self.shared_limit: dict[str, int] = {}
        self.only: set[str] | None = None
        self.launched: list[str] = []
        self._torch = torch

    def _launch(self, name, grid, block, shared, params) -> int:
        if self.only is not None and name not in self.only:
            return 0
        function = self.functions.get(name)
        if function is None:
            raise CudaError(f"kernel {name} is not in the library's manifest")
        if shared > self.shared_limit.get(name, 48 * 1024):
            max_dynamic_shared_size_bytes = 8  # CUfunction_attribute
            self.driver.check(self.driver.lib.cuFuncSetAttribute(
                function, max_dynamic_shared_size_bytes, shared),
                f"cuFuncSetAttribute({name}, {shared} bytes of shared memory)")
            self.shared_limit[name] = shared
        stream = ctypes.c_void_p(self._torch.cuda.current_stream().cuda_stream)
        if self.dependent:
            config = self._config
            config.grid[:] = grid
            config.block[:] = block
            config.shared = shared
            config.stream = stream
            self.driver.check(self.driver.lib.cuLaunchKernelEx(
                ctypes.byref(config), function, params, None),
                f"cuLaunchKernelEx({name})")
        else:
            self.driver.check(self.driver.lib.cuLaunchKernel(
                function, *grid, *block, shared, stream, params, None),
                f"cuLaunchKernel({name})")
        self.launched.append(name)
        return 0

    def step(self, args: StepArgs, only: set[str] | None = None) -> None:
        """Enqueues the step's kernels (those in `only`, or all)."""
        self.only = only
        self.launched = []
        self.run(self.library, args)
