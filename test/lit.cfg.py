# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "NORM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "Unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.norm_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%norm_src_root", config.norm_src_root))

llvm_config.with_system_environment(["HOME", "TMPDIR", "CUDA_HOME", "XDG_CACHE_HOME"])
llvm_config.use_default_substitutions()
# `not` and `count` at the start of a RUN line.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.norm_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["norm-opt", "norm-cpu-check"], tool_dirs)

# CPU execution of kernels (test/Host): mlir-runner and its print helpers.
llvm_config.add_tool_substitutions(["mlir-runner"], [config.llvm_tools_dir])
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.llvm_tools_dir, "..", "lib", "libmlir_c_runner_utils.so")))

if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
if config.norm_sanitize in ("ON", "1", "TRUE"):
    config.available_features.add("sanitizer")
