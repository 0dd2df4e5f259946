"""What the contract's keys do, with expectations worked out by hand: input ranges and
samples, the numeric comparison, waivers, input order and shapes, YAML contracts."""

from __future__ import annotations

import numpy as np

from npu_gate.contract import InputSpec
from npu_gate.samples import make_samples


def test_bool_and_integer_samples_stay_in_the_range():
    specs = [InputSpec("t", [64], "bool", None, (1, 1)), InputSpec("f", [64], "bool", None, (0, 0)),
             InputSpec("u", [64], "uint8", None, (250, 255)), InputSpec("i", [64], "int64", None, (0.5, 1.5))]
    sample = make_samples(specs, 1, 0)[0]
    assert sample["t"].all() and not sample["f"].any()
    assert sample["u"].min() >= 250 and sample["u"].dtype == np.uint8
    assert set(sample["i"].tolist()) == {1}
