# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "FDC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fdc_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%fdc_src_root", config.fdc_src_root))
config.environment["PYTHONPATH"] = os.path.join(config.fdc_src_root, "python")

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
# `not`, `count` and FileCheck at the start of a RUN line come from PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.use_default_substitutions()

tool_dirs = [config.fdc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["fdc-opt", "fdc"], tool_dirs)

# The CUDA toolkit (libdevice, ptxas) for the cuda-target tests; no GPU needed.
cuda_path = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.path.exists(os.path.join(cuda_path, "nvvm", "libdevice", "libdevice.10.bc")) \
        and os.access(os.path.join(cuda_path, "bin", "ptxas"), os.X_OK):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_path", cuda_path))
    config.substitutions.append(("%ptxas", os.path.join(cuda_path, "bin", "ptxas")))
