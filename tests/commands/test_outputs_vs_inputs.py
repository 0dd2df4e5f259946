"""No output path may be one of the run's inputs (issue 17, item 7): refused with exit 2 before
anything is written or any model runs, the input's bytes untouched, symlinks resolved."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest

from npu_gate.resources import profile_dir
from tests.helpers.hook_fixtures import tiny_model, write_onnx_contract

Run = Callable[..., Any]


def _bytes(*paths: Path) -> list[bytes]:
    return [p.read_bytes() for p in paths]


def test_inspect_json_onto_the_model(tmp_path: Path, run_cli: Run) -> None:
    model = tmp_path / "a" / "model.onnx"
    write_onnx_contract(model.parent)
    before = model.read_bytes()
    done = run_cli("inspect", model, "--json", model)
    assert done.code == 2
    assert done.err == (f"npu-gate: error: --json {model}: is the model this run reads "
                        "(refusing to overwrite an input)\n")
    assert model.read_bytes() == before


def test_check_json_onto_the_contract_and_log_onto_the_model(tmp_path: Path, run_cli: Run) -> None:
    contract = write_onnx_contract(tmp_path / "a")
    model = tmp_path / "a" / "model.onnx"
    before = _bytes(contract, model)
    done = run_cli("check", tmp_path / "a", "--json", contract, "--log", model, "-q")
    assert done.code == 2
    assert "--json " in done.err and "is the contract this run reads" in done.err
    assert "--log " in done.err and "is the model this run reads" in done.err
    assert len(done.err.splitlines()) == 2
    assert _bytes(contract, model) == before


def test_markdown_onto_the_profile(tmp_path: Path, run_cli: Run) -> None:
    (tmp_path / ".git").mkdir()  # one repository: the contract names files above its folder
    profile = tmp_path / "mine.npu-profile.json"
    shutil.copyfile(profile_dir() / "demo.json", profile)
    contract = write_onnx_contract(tmp_path / "a", profile=str(profile))
    before = profile.read_bytes()
    for command in (["check", contract], ["inspect", tmp_path / "a" / "model.onnx", "--profile", profile]):
        done = run_cli(*command, "--markdown", profile, "-q")
        assert done.code == 2, command
        assert "is the profile this run reads" in done.err
        assert profile.read_bytes() == before


def test_a_symlink_to_the_model_and_the_samples_file(tmp_path: Path, run_cli: Run) -> None:
    import numpy as np

    (tmp_path / ".git").mkdir()  # one repository: the contract names files above its folder
    folder = tmp_path / "a"
    np.savez(tmp_path / "real.npz", x=np.ones([1, 1, 4], np.float32))
    contract = write_onnx_contract(folder, numerics={"samples_file": "../real.npz"})
    (tmp_path / "link.onnx").symlink_to(folder / "model.onnx")
    (tmp_path / "link.npz").symlink_to(tmp_path / "real.npz")
    before = _bytes(folder / "model.onnx", tmp_path / "real.npz")
    done = run_cli("check", contract, "--json", tmp_path / "link.onnx", "--markdown", tmp_path / "link.npz", "-q")
    assert done.code == 2
    assert "is the model this run reads" in done.err
    assert "is the samples file this run reads" in done.err
    assert _bytes(folder / "model.onnx", tmp_path / "real.npz") == before
    assert (tmp_path / "link.onnx").is_symlink()


def test_external_data_and_a_bundle_folder_holding_the_model(tmp_path: Path, run_cli: Run) -> None:
    folder = tmp_path / "a"
    folder.mkdir()
    model = tiny_model()
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    location="weights.bin", size_threshold=0)
    before = _bytes(folder / "model.onnx", folder / "weights.bin")
    done = run_cli("inspect", folder / "model.onnx", "--json", folder / "weights.bin")
    assert done.code == 2
    assert "is external data of the model this run reads" in done.err
    out = tmp_path / "out"
    assert run_cli("inspect", folder / "model.onnx", "--out", out, "-q").code == 0
    done = run_cli("inspect", out / "model.onnx", "--out", out, "-q")
    assert done.code == 2
    assert f"--out {out}: holds the model this run reads" in done.err
    assert (out / "model.onnx").is_file()
    assert _bytes(folder / "model.onnx", folder / "weights.bin") == before


def test_merge_and_diff_refuse_writing_onto_their_inputs(tmp_path: Path, run_cli: Run) -> None:
    contract = write_onnx_contract(tmp_path / "a")
    result = tmp_path / "result.json"
    assert run_cli("check", contract, "--json", result, "-q").code == 0
    before = result.read_bytes()
    assert json.loads(before)
    assert run_cli("merge", result, "--markdown", result, "-q").code == 2
    assert run_cli("diff", result, result, "--json", result, "-q").code == 2
    assert result.read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "link"), reason="no hard links")
def test_a_hard_link_is_the_same_file(tmp_path: Path, run_cli: Run) -> None:
    contract = write_onnx_contract(tmp_path / "a")
    os.link(contract, tmp_path / "other.json")
    before = contract.read_bytes()
    done = run_cli("check", contract, "--json", tmp_path / "other.json", "-q")
    assert done.code == 2
    assert contract.read_bytes() == before


def test_two_outputs_of_one_run_cannot_be_one_file(tmp_path: Path, run_cli: Run) -> None:
    contract = write_onnx_contract(tmp_path / "a")
    out = tmp_path / "out.txt"
    done = run_cli("inspect", tmp_path / "a" / "model.onnx", "--json", out, "--markdown", out, "-q")
    assert done.code == 2
    assert done.err == (f"npu-gate: error: --markdown {out}: is also the --json output (two outputs of one run "
                        "cannot be one file)\n")
    assert not out.exists()
    (tmp_path / "link.txt").symlink_to(out)
    done = run_cli("check", contract, "--json", out, "--log", tmp_path / "link.txt", "-q")
    assert done.code == 2
    assert done.err == (f"npu-gate: error: --log {tmp_path / 'link.txt'}: is also the --json output (two outputs "
                        "of one run cannot be one file)\n")
    assert not out.exists()


def _profile_extending(tmp_path: Path) -> tuple[Path, Path]:
    """mine.json, which extends base.json (a copy of the demo profile)."""
    base = tmp_path / "base.json"
    shutil.copyfile(profile_dir() / "demo.json", base)
    mine = tmp_path / "mine.json"
    doc = json.loads(base.read_text()) | {"name": "mine", "extends": "base.json", "ops": {}}
    mine.write_text(json.dumps(doc), encoding="utf-8")
    return mine, base


def test_an_output_onto_a_base_profile_is_refused(tmp_path: Path, run_cli: Run) -> None:
    (tmp_path / ".git").mkdir()  # one repository: the contract names files above its folder
    mine, base = _profile_extending(tmp_path)
    contract = write_onnx_contract(tmp_path / "a", profile=str(mine))
    before = _bytes(mine, base)
    for command in (["check", contract], ["inspect", tmp_path / "a" / "model.onnx", "--profile", mine]):
        done = run_cli(*command, "--json", base, "-q")
        assert done.code == 2, command
        assert done.err == (f"npu-gate: error: --json {base}: is a base profile (extends) this run reads "
                            "(refusing to overwrite an input)\n")
    assert _bytes(mine, base) == before


def test_profile_diff_refuses_writing_onto_its_profiles(tmp_path: Path, run_cli: Run) -> None:
    mine, base = _profile_extending(tmp_path)
    before = _bytes(mine, base)
    done = run_cli("profile", "diff", "demo", mine, "--json", base, "--markdown", mine)
    assert done.code == 2
    assert done.err.splitlines() == [
        f"npu-gate: error: --json {base}: is a base (extends) of profile B of this diff (refusing to overwrite "
        "an input)",
        f"npu-gate: error: --markdown {mine}: is profile B of this diff (refusing to overwrite an input)"]
    done = run_cli("profile", "diff", mine, "demo", "--json", tmp_path / "d.json", "--markdown", tmp_path / "d.json")
    assert done.code == 2 and "is also the --json output" in done.err
    assert _bytes(mine, base) == before
    assert not (tmp_path / "d.json").exists()


def test_reduce_refuses_writing_onto_its_inputs(tmp_path: Path, run_cli: Run) -> None:
    import numpy as np

    model = tmp_path / "model.onnx"
    model.write_bytes(tiny_model().SerializeToString())
    np.savez(tmp_path / "samples.npz", x=np.ones([1, 1, 4], np.float32))
    before = _bytes(model, tmp_path / "samples.npz")
    done = run_cli("reduce", model, "--check", "false", "--out", model, "-q")
    assert done.code == 2
    assert done.err == (f"npu-gate: error: --out {model}: is the model this run reduces (refusing to overwrite "
                        "an input)\n")
    done = run_cli("reduce", model, "--check", "false", "--log", model, "--out", tmp_path / "r.onnx", "-q")
    assert done.code == 2 and f"--log {model}: is the model this run reduces" in done.err
    done = run_cli("reduce", model, "--check", "run {model} {inputs}", "--inputs", tmp_path / "samples.npz",
                   "--out", tmp_path / "samples.onnx", "-q")
    assert done.code == 2
    assert done.err == (f"npu-gate: error: the inputs written beside --out {tmp_path / 'samples.npz'}: is the "
                        "--inputs samples this run reads (refusing to overwrite an input)\n")
    done = run_cli("reduce", model, "--check", "false", "--out", tmp_path / "r.onnx", "--log", tmp_path / "r.onnx")
    assert done.code == 2 and "is also the --out output" in done.err
    assert _bytes(model, tmp_path / "samples.npz") == before
    assert not (tmp_path / "r.onnx").exists()
