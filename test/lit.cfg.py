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
# The GoogleTest binaries, for suites that run them in another mode.
config.substitutions.append(
    ("%unit_dir", os.path.join(config.norm_obj_root, "test", "Unit")))

llvm_config.with_system_environment(["HOME", "TMPDIR", "CUDA_HOME", "XDG_CACHE_HOME",
                                     "NORM_ROBUSTNESS_SEEDS", "NORM_ROBUSTNESS_RUNS"])
llvm_config.use_default_substitutions()
# lit substitutes `not` and `count` only after a pipe; find them anywhere.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.norm_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["norm-opt", "norm-cpu-check", "mlir-tblgen"],
                                   tool_dirs)
# The include path for running mlir-tblgen on our .td files.
config.substitutions.append(("%norm_tblgen_includes", " ".join(
    "-I " + d for d in [config.norm_src_root] + config.mlir_include_dirs.split(";"))))

# CPU execution of kernels (test/Host): mlir-runner and its print helpers.
llvm_config.add_tool_substitutions(["mlir-runner"], [config.llvm_tools_dir])
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.llvm_tools_dir, "..", "lib", "libmlir_c_runner_utils.so")))

if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
# GPGPU-Sim running the generated PTX on the CPU (norm-cpu-check
# --engine=ptxsim): $NORM_PTXSIM, or ../shared/tools/ptxsim beside the source
# tree, found the way norm-cpu-check finds it; the feature is absent (and the
# suite unsupported) without it, never faked.
ptxsim = os.environ.get("NORM_PTXSIM") or os.path.join(
    config.norm_src_root, "..", "shared", "tools", "ptxsim")
if (config.ptxas and os.path.exists(config.ptxas)
        and os.access(os.path.join(ptxsim, "bin", "ptxsim-run"), os.X_OK)):
    config.available_features.add("ptxsim")
    config.environment["NORM_PTXSIM"] = os.path.abspath(ptxsim)
    config.environment["PTXSIM_PTXAS"] = config.ptxas
if config.norm_sanitize in ("ON", "1", "TRUE"):
    config.available_features.add("sanitizer")
    # Our instrumented inline BumpPtrAllocator code poisons slabs that the
    # uninstrumented libMLIR.so then allocates from: manual poisoning is off.
    # A finding aborts, so that `not` and the robustness check see a crash.
    for var, defaults in (("ASAN_OPTIONS", "allow_user_poisoning=0:abort_on_error=1"),
                          ("UBSAN_OPTIONS", "print_stacktrace=1:abort_on_error=1")):
        config.environment[var] = ":".join(filter(None, [defaults, os.environ.get(var)]))
