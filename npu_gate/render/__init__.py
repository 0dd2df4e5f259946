"""Renderers: pure functions from a GateResult to text. They never change the verdict."""
