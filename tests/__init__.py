"""The test suite, one folder per layer of npu_gate (see docs/development.md)."""
