"""`npu-gate profile check|show|docs|calibrate|diff`: check, show, document, measure and compare
target profiles."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from npu_gate.commands.common import profile_inputs, refuse_overwriting_inputs, write_output
from npu_gate.errors import EXIT_FAIL, EXIT_PASS, GateError
from npu_gate.escape import visible

if TYPE_CHECKING:
    from npu_gate.profile.spec import Profile


def run(args: argparse.Namespace) -> int:
    from npu_gate.profile.spec import load_profile
    from npu_gate.render import profile_pages as profile_docs
    from npu_gate.resources import builtin_profile_names, profile_dir

    if args.profile_command == "check":
        from npu_gate.graph.source import usable_path
        from npu_gate.profile.lint import check_file

        path = Path(args.file)
        if not usable_path(args.file) or not path.is_file():  # a name too long for the file system too
            raise GateError(f"{args.file}: file not found")
        errors, warnings, deferred = check_file(path)
        for line in warnings:
            print(f"npu-gate: warning: {visible(line)}", file=sys.stderr)
        for line in errors:
            print(f"npu-gate: error: {visible(line)}", file=sys.stderr)
        if errors:
            later = ("; the other checks (constraint ids and subjects, references, `extends`) run once the "
                     "schema errors are fixed") if deferred else ""
            print(f"{args.file}: {len(errors)} error(s){later}")
            return EXIT_FAIL
        p = load_profile(str(path))
        count = sum(len(s.get("constraints", [])) for s in p.ops.values())
        base = f"; extends {' -> '.join(p.extends)}" if p.extends else ""
        print(f"{args.file}: ok: profile {p.name} ({p.evidence}), {len(p.ops)} ops, "
              f"{count} constraints{base}")
        return EXIT_PASS
    if args.profile_command == "calibrate":
        return _profile_calibrate(args)
    if args.profile_command == "diff":
        a = load_profile(args.a, Path.cwd(), where="profile diff")
        b = load_profile(args.b, Path.cwd(), where="profile diff")
        refuse_overwriting_inputs(
            [*profile_inputs(a, "profile A of this diff", "a base (extends) of profile A of this diff"),
             *profile_inputs(b, "profile B of this diff", "a base (extends) of profile B of this diff")],
            [("--json", args.json), ("--markdown", args.markdown)])
        d = _write_profile_diff(a, b, Path(args.json) if args.json else None,
                                Path(args.markdown) if args.markdown else None)
        return EXIT_PASS if d["identical"] else EXIT_FAIL
    if args.profile_command == "show":
        p = load_profile(args.name, Path.cwd(), where="profile show")
        if args.format == "json":
            print(json.dumps(p.document(), indent=2))
        elif args.format == "text":
            sys.stdout.write("".join(visible(line) + "\n" for line in
                                     profile_docs.render_text(p, _origin(p)).splitlines()))
        else:
            # A built-in's files (its calibration record) are inside the installed package, not
            # under the current folder: named as text. A profile file's resolve from here.
            page_dir = None if p.origin == "builtin" else "."
            page = profile_docs.render_markdown(p, _origin(p), page_dir=page_dir, page=False)
            # a profile file's text may hold escape sequences: shown as text, line by line
            sys.stdout.write("".join(visible(line) + "\n" for line in page.splitlines()))
        return EXIT_PASS
    out = Path(args.out)
    stale = []
    for name in builtin_profile_names():
        p = load_profile(name)
        origin = _origin(p)
        # Link the profile's files (its calibration record) only from within npu_gate's own
        # checkout, where origin's folder is the installed one; elsewhere the link would be broken.
        reachable = Path(origin).parent.resolve() == profile_dir().resolve()
        text = profile_docs.render_markdown(p, origin, page_dir=str(out) if reachable else None)
        target = out / f"{name}.md"
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(target))
        else:
            write_output(str(target), text)
            print(f"wrote {target}")
    for page in stale:
        print(f"npu-gate: error: {page} is missing or out of date; run `npu-gate profile docs`",
              file=sys.stderr)
    return EXIT_FAIL if stale else EXIT_PASS


def _profile_calibrate(args: argparse.Namespace) -> int:
    from npu_gate import calibrate
    from npu_gate.profile.spec import load_profile

    out = Path(args.out)
    record_path = out.with_name(out.stem + ".calibration.json")
    # A typo in a profile named on the command line fails before the sweep runs.
    against = load_profile(args.diff_against, Path.cwd(), where="--diff-against") if args.diff_against else None
    if args.from_record:
        record = calibrate.load_record(Path(args.from_record))
        measured_for = record["compiler"].get("target")
        if args.target is not None and args.target != measured_for:
            raise GateError(f"--target {args.target}: {args.from_record} was measured for {measured_for}")
        # The profile and its record go together: the record is written beside --out, named after it.
        beside = Path(args.from_record).resolve() == record_path.resolve()
        record = {**record, "name": args.name or (record["name"] if beside else out.stem),
                  "record_name": record_path.name}
    else:
        if args.target is None:
            raise GateError("--target: required to measure (the compiler's target, e.g. rk3588); "
                            "only --from-record takes it from the record")
        from npu_gate.probe import get_compiler

        compiler = get_compiler(args.compiler)
        if args.extends:
            load_profile(args.extends, Path.cwd(), where="--extends")
        candidates = calibrate.candidates_from(
            load_profile(args.patterns_from, Path.cwd(), where="--patterns-from") if args.patterns_from else None)
        families = calibrate.SWEEPS[args.sweep]()
        for mode in sorted({p.quantize for f in families for p in f.points if p.quantize}):
            compiler.check_quant_mode(mode, f"--sweep {args.sweep}: its points build with --quantize")

        def progress(point: dict[str, object]) -> None:
            if point["status"] != "ok":
                print(f"  {point['point']}: {point['status']}: {point.get('error')}", file=sys.stderr)

        measured = calibrate.measure(
            compiler, args.target, compiler.python(Path(args.venv or f".venv-{compiler.name}")), families,
            batch=not args.no_batch, timeout=args.timeout, keep=Path(args.keep_work) if args.keep_work else None,
            progress=progress)
        record = calibrate.record_document(
            measured, name=args.name or out.stem, record_name=record_path.name, sweep=args.sweep,
            command=_calibrate_command(args), extends=args.extends, patterns_from=args.patterns_from,
            candidates=candidates)
    doc, derived = calibrate.derive_profile(record, schema=calibrate.schema_reference(out))
    record["verdicts"] = derived.verdicts
    write_output(str(out), json.dumps(doc, indent=2) + "\n")
    # --from-record derives the verdicts again and keeps the points as measured.
    write_output(str(record_path), calibrate.record_json(record))
    for key, v in derived.verdicts.items():
        if v["verdict"] in ("unexplained", "contradicted"):
            print(f"npu-gate: warning: {key}: {v['verdict']}; points against it: "
                  f"{', '.join(v.get('contradicted_by', []))}", file=sys.stderr)
    t = record["timings"]
    if args.from_record:
        c = record["compiler"]
        print(f"derived from {args.from_record}: {t['points']} points measured with {c.get('name')} "
              f"{c.get('version')} {c.get('target')}; no compiler ran")
    else:
        print(f"{t['points']} points in {t['total_s']} s ({t['mode']}, median {t['median_point_s']} s per point, "
              f"{t['processes']} compiler process(es))")
    print(f"wrote {out} ({len(doc['ops'])} ops, {len(doc.get('patterns', []))} patterns) and {record_path}")
    if against is not None:
        _write_profile_diff(against, load_profile(str(out)), out.with_name(out.stem + ".diff.json"),
                            out.with_name(out.stem + ".diff.md"))
    return EXIT_PASS


def _calibrate_command(args: argparse.Namespace) -> str:
    """The command that reproduces a calibration (without the machine-specific --venv)."""
    parts = ["npu-gate profile calibrate", f"--compiler {args.compiler}", f"--target {args.target}",
             f"--sweep {args.sweep}"]
    for flag in ("name", "extends", "patterns_from"):
        if getattr(args, flag):
            parts.append(f"--{flag.replace('_', '-')} {getattr(args, flag)}")
    return " ".join([*parts, f"--out {args.out}"])


def _write_profile_diff(a: Profile, b: Profile, json_path: Path | None, md_path: Path | None) -> dict[str, object]:
    from npu_gate.calibrate.diff import diff_profiles, render_markdown, render_text

    d = diff_profiles(a, b, _measured_ops(b))
    sys.stdout.write(render_text(d))
    if json_path is not None:
        write_output(str(json_path), json.dumps(d, indent=2) + "\n")
    if md_path is not None:
        write_output(str(md_path), render_markdown(d))
    return d


def _measured_ops(profile: Profile) -> set[str] | None:
    """The ops the calibration record beside a calibrated profile that extends nothing measured
    (None otherwise, or when there is no readable record)."""
    if profile.evidence != "measured" or profile.extends:
        return None
    origin = Path(_origin(profile))
    if profile.origin == "builtin":
        from npu_gate.resources import profile_dir

        origin = profile_dir() / origin.name
    from npu_gate.validation import read_document

    try:  # the strict reader: a 100,000-deep or NaN-filled file is no record, not a crash
        record = read_document(origin.with_name(origin.stem + ".calibration.json"), "calibration record")
        return set(record["verdicts"])
    except (ValueError, KeyError, TypeError):
        return None


def _origin(profile: Profile) -> str:
    return f"npu_gate/profiles/{profile.name}.json" if profile.origin == "builtin" else profile.origin
