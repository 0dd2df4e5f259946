# Names vulture reports as unused that are used, by something vulture cannot see.
# Read by vulture only (`[tool.vulture]` in pyproject.toml lists this file with the code); never imported.
#
# `make test` runs vulture at 80 % confidence. Everything below is reported only at 60 %; listing it
# keeps the deeper run readable too:
#     vulture --min-confidence 60 --exclude npu_gate/result/types.py
# (result/types.py holds the JSON result's TypedDicts: every key is written for the JSON's readers).
# ruff: noqa

# Loaded by name from the compiler registry (npu_gate/profile/compilers.py: "module:Class").
EthosUCompiler
FakeCompiler
QnnCompiler
RknnCompiler

# Called by the machinery that owns the protocol: the import system (a meta path finder's
# loader), onnxruntime's quantizer (a CalibrationDataReader).
_.create_module
_.get_next
_.rewind

# Set for the library that reads them: onnxruntime.SessionOptions, tempfile, protobuf, the module system.
_.intra_op_num_threads
_.graph_optimization_level
_.log_severity_level
_.log_verbosity_level
_.tempdir
_.raw_data
_.__path__

# The result's placement and status values, read by the tests that hold the schemas to them.
ACTUALS
STATUSES
