# -*- Python -*-
# Runs every GoogleTest binary built under test/Unit (suffix "Tests").
import os

import lit.formats

config.name = "NORM-Unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.norm_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root

# Sanitized builds: see ../lit.cfg.py.
if config.norm_sanitize in ("ON", "1", "TRUE"):
    config.environment["ASAN_OPTIONS"] = ":".join(
        filter(None, ["allow_user_poisoning=0:abort_on_error=1",
                      os.environ.get("ASAN_OPTIONS")]))
