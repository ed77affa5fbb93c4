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
