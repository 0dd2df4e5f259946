"""Driver scripts run by a compiler's own venv Python (never imported by npu_gate)."""
