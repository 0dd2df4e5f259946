"""A stand-in compiler for tests of the probe machinery (npu_gate.probe.fake).

Usage: python -u fake_driver.py REQUEST.json RESPONSE.json   (one model)
       python -u fake_driver.py --batch FD                    (many models, see _protocol.py)

It reads the graph from the request and behaves like a small compiler: Constant nodes disappear silently, a Relu or Clip
right after a Conv is fused into it (no row of its own, like RKNN's ConvRelu), ops in
``cpu_ops`` run on CPU, everything else on the NPU. It prints through Python and through
file descriptor 1 directly (as C code does), with colour codes and ``\\r`` progress frames.
Request switches make it fail, raise, suggest a rule to disable, crash (SIGSEGV) or hang; so do
node names: a node named ``crash_me`` or ``hang_me`` crashes or hangs the build.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from typing import Any

from _protocol import Save, main


def build(request: dict[str, Any], save: Save) -> None:
    save(tmpdir=tempfile.gettempdir(), cwd=os.getcwd(), pythonpath=os.environ.get("PYTHONPATH"), pid=os.getpid())
    if request["target"] != "fake1":
        save(status="failed", stage="config", error=f"config: unknown target {request['target']}")
        return
    save(stage="load")
    graph = request["graph"]  # the parent read the model: this stand-in stays free of imports
    names = {n["name"] for n in graph}
    if request.get("hang") or "hang_me" in names:
        time.sleep(3600)
    print("I fake-compiler version: 0.1")
    print("\x1b[1;33mW\x1b[0m progress \r 50% \r 100%", flush=True)
    save(stage="build")
    if request.get("crash") or "crash_me" in names:
        os.write(1, b"fatal: about to crash\n")
        os.kill(os.getpid(), signal.SIGSEGV)
    if request.get("raise"):  # an exception whose message wraps a traceback, as compilers' do
        raise RuntimeError(request["raise"])
    rule = request.get("fail_rule")
    if rule and rule not in request.get("disable_rules", []):
        print(f"W You can add disable_rules=['{rule}'] in config() to temporarily disable the error rule!")
        save(status="failed", error=f"build: rule {rule} raised")
        return
    if request.get("fail"):
        print(f"E build: {request['fail']}")
        save(status="failed", error=f"build: {request['fail']}")
        return

    cpu_ops = set(request.get("cpu_ops", ["Erf"]))
    producer = {o: n for n in graph for o in n["outputs"]}
    nodes = [n for n in graph if n["op_type"] != "Constant"]
    fused = {n["name"] for n in nodes if n["op_type"] in ("Relu", "Clip") and n["inputs"][0] in producer
             and producer[n["inputs"][0]]["op_type"] == "Conv"}
    edges = {n["name"]: [producer[i]["name"] for i in n["inputs"]
                         if i in producer and producer[i]["op_type"] != "Constant"] for n in nodes}
    row_id = 0
    for n in nodes:
        if n["name"] in fused:
            continue
        op = n["op_type"] + ("Relu" if any(n["name"] in edges.get(f, []) for f in fused) else "")
        target = "CPU" if n["op_type"] in cpu_ops else "NPU"
        os.write(1, f"ROW {row_id} {op} {target} {n['name']}\n".encode())  # below Python's buffers
        row_id += 1
    save(status="ok", stage="done", build_s=0.001, graph=edges)


if __name__ == "__main__":
    sys.exit(main(build, {"status": "running", "stage": "config", "version": "0.1", "error": None}))
