"""The gate's stages; ``npu_gate.pipeline`` runs them in order, as lists of ``Stage`` objects.

Every stage has one shape (``stages/run.py``): it is given the ``Run`` (contract, settings, result
so far, work folder, artifacts, the child process of the contract's code, timings), says whether it
``applies`` and does its part in ``run``. No stage imports the orchestrator.
"""
