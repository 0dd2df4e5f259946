"""One module per `npu-gate` command; `npu_gate.cli` parses the arguments and imports the one that runs."""
