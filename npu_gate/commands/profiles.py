"""`npu-gate profiles`: list the built-in target profiles."""

from __future__ import annotations

from npu_gate.errors import EXIT_PASS


def run() -> int:
    from npu_gate.profile.spec import load_profile
    from npu_gate.resources import builtin_profile_names

    profiles = [load_profile(name) for name in builtin_profile_names()]
    width = max(len(p.name) for p in profiles)
    for p in profiles:
        print(f"{p.name:<{width}} {p.evidence:<22} {len(p.ops):>3} ops  {p.description}")
    return EXIT_PASS
