# -*- Python -*-
# Runs every GoogleTest binary built under test/Unit (suffix "Tests").
import os

import lit.formats

config.name = "NORM-Unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.norm_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root
