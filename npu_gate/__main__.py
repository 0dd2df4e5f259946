from __future__ import annotations

import sys

from npu_gate.cli import main

sys.exit(main())
