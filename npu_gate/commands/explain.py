"""`npu-gate explain`: the documentation of a rule, constraint or profile limit id."""

from __future__ import annotations

import argparse

from npu_gate.errors import EXIT_PASS, GateError


def run(args: argparse.Namespace) -> int:
    from npu_gate.rules import RETIRED, RULES

    r = RULES.get(args.id)
    if r is None:
        if args.id in RETIRED:
            raise GateError(f"{args.id}: retired in {RETIRED[args.id]}")
        return _explain_constraint(args.id)
    from npu_gate.findings.catalog import doc_text

    print(f"{r.id} ({r.severity if r.finding else 'stops the run, exit 2'})\n\n{r.summary}\n\n{doc_text(r.id)}")
    return EXIT_PASS


def _explain_constraint(ref: str) -> int:
    from npu_gate.profile.limits import LIMIT_IDS
    from npu_gate.profile.spec import load_profile
    from npu_gate.render.profile_pages import LIMIT_WORDS, describe_limit, explain_constraint, find_constraints

    limit = {v: k for k, v in LIMIT_IDS.items()}.get(ref.rsplit(":", 1)[-1])
    # PROFILE:limit-... is that profile's limit: one it does not set is unknown there, as a
    # constraint id it does not have is (a profile name that is not one is an error).
    scoped = load_profile(ref.rsplit(":", 1)[0], where="explain") if limit and ":" in ref else None
    if limit is not None and (scoped is None or limit in scoped.limits):
        effect = ("A model whose opset is outside it gets one finding without a node: the target's converter is "
                  "expected to refuse the model." if limit == "opset" else
                  "A node that breaks it runs on CPU; the finding names the tensor, the value seen and the limit.")
        print(f"{ref} (profile limit `limits.{limit}`, rule profile-limit)\n\n"
              f"Limits {LIMIT_WORDS[limit]} for every op of a profile. {effect}")
        if scoped is not None:
            print(f"\nIn profile {scoped.name} ({scoped.evidence}): {describe_limit(limit, scoped.limits[limit])}.")
        return EXIT_PASS
    found = [] if limit is not None else find_constraints(ref)
    if not found:
        raise GateError(f"{ref}: unknown rule or constraint id{_did_you_mean(ref)} (see `npu-gate rules` "
                        "and `npu-gate profile show NAME`)")
    print("\n\n---\n\n".join(explain_constraint(p, key, c) for p, key, c in found))
    return EXIT_PASS



def _did_you_mean(ref: str) -> str:
    """The nearest ids to ``ref``: rules and the built-in profiles' constraint and limit ids for
    ``ID``; that profile's constraint and limit ids for ``PROFILE:ID`` (suggested as such)."""
    from npu_gate.profile.limits import LIMIT_IDS
    from npu_gate.profile.spec import load_profile
    from npu_gate.resources import builtin_profile_names
    from npu_gate.rules import RULES
    from npu_gate.suggest import did_you_mean

    scope, colon, cid = ref.rpartition(":")
    profiles = [load_profile(scope, where="explain")] if colon else [load_profile(n) for n in builtin_profile_names()]
    ids = {c["id"] for p in profiles for spec in p.ops.values() for c in spec.get("constraints", [])}
    if colon:
        ids |= {v for k, v in LIMIT_IDS.items() if any(k in p.limits for p in profiles)}
        return did_you_mean(cid, ids, prefix=f"{scope}:")
    return did_you_mean(ref, ids | set(LIMIT_IDS.values()) | set(RULES))
