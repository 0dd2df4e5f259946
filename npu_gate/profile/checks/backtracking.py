"""Whether a regular expression can make Python's ``re`` backtrack for a very long time.

A profile's ``matches`` patterns come from a file of the pull request, and ``re`` cannot be
interrupted once it runs (it holds the interpreter), so a pattern that backtracks exponentially
(``([a-z,>-]*)*!``) would hang the gate. The profile loader refuses such patterns (``problem``),
before any model is read.

The test is made on the pattern's position automaton (Glushkov's construction): one state per
character class the pattern holds (``[a-z]``, ``,``, ``\\d``...), an edge from a state to each one
that can come right after it, an edge counted twice when the pattern gives two ways to take it.
A pattern is accepted when it reads each text in one way only: no two paths of the automaton
leave one state on the same text and meet in one state again (found by walking two copies of the
automaton side by side on common characters). Then, on any text, at most one path reaches each
state, so a backtracking matcher tries at most (text length) x (states)² steps, milliseconds
for ``matches.MAX_TEXT`` characters. What it refuses is what makes backtracking slow: nested
quantifiers (``(a+)+``: exponential), adjacent ones that read the same characters (``a*a*``,
``\\w*_\\w*``: a power of the length), overlapping alternatives (``(ab|a.)``, ``(a|a)*``: a power
of two per repetition). A repeat of a part that can match nothing (``(a?)*``, ``([a-z,>-]*)*``) is
refused too: ``re`` may end it with an empty repetition, a second way the automaton does not show.

What the automaton cannot say exactly is over-approximated, so that the test refuses more, never
less: a backreference ``\\1`` reads as a copy of its group, a bounded repeat above ``EXACT``
(``{1,50}``) as an unbounded one, ``\\d``/``\\w``/``\\s`` and case-insensitive letters as also every
non-ASCII character, a lookaround's body as a pattern of its own, an atomic group or a possessive
quantifier as a plain one. Verbose patterns (``(?x)``) are refused: their spaces and comments are
not read. The walks are bounded (``BUDGET`` steps, ``MAX_POSITIONS`` states); a pattern that needs
more is refused as too complex to check.

The tokenizer is this module's own (``re``'s parser is private); it reads patterns ``re.compile``
has already accepted.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_PATTERN = 256  # characters of a pattern (the built-in profiles' longest: 45)
EXACT = 4  # a repeat {m,n} with n up to this is expanded exactly; above it, as unbounded
MAX_POSITIONS = 400  # states of a pattern's automaton (backreferences and repeats copy their body)
BUDGET = 300_000  # steps the side-by-side walks may try, for one pattern

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, inclusive code point ranges

_TOP = 0x10FFFF
_HIGH = ((128, _TOP),)  # every non-ASCII character: \d, \w, \s and folded letters include them all
_ANY: Ranges = ((0, _TOP),)
_DIGIT: Ranges = ((48, 57),)
_WORD: Ranges = ((48, 57), (65, 90), (95, 95), (97, 122))
_SPACE: Ranges = ((9, 13), (28, 32))
_LETTERS: Ranges = ((65, 90), (97, 122))
_QUANTIFIER = re.compile(r"\{(\d*)(,(\d*))?\}")
_ESCAPES = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "a": 7}
_CLASSES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}


AMBIGUOUS = ("can match one text in more than one way (nested or adjacent quantifiers such as (a+)+, a*a* "
             "or [a-z]?[a-z]?[a-z], or overlapping alternatives such as (ab|a.)), which makes re try "
             "exponentially many ways on a text that does not match")


EMPTY_REPEAT = ("repeats a part that can match nothing (such as (a?)*, (a*)+ or (a|)*), which gives re more "
                "than one way to end the repetition; repeat what must match instead ((a)*)")


class Unsafe(Exception):
    """The pattern may backtrack catastrophically (or cannot be checked): the message says why."""


# The pattern as a tree.
@dataclass(frozen=True)
class Chars:
    ranges: Ranges


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    branches: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    body: Node
    low: int
    high: int | None  # None: unbounded


Node = Chars | Seq | Alt | Repeat
EMPTY = Seq(())  # anchors, lookarounds, comments: they read no character


@functools.lru_cache(maxsize=512)  # the built-in profiles' patterns, checked at each load
def problem(pattern: str) -> str | None:
    """Why ``pattern`` (one ``re.compile`` accepts) is refused, or None when it is safe."""
    if len(pattern) > MAX_PATTERN:
        return f"is {len(pattern)} characters long, over the {MAX_PATTERN} allowed"
    try:
        reader = _Reader(pattern)
        roots = [reader.whole(), *reader.lookarounds]
        budget = [BUDGET]
        for root in roots:
            _check(_Automaton.of(root, reader.ignorecase), budget)
    except Unsafe as e:
        return str(e)
    return None


def _union(*sets: Ranges) -> Ranges:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(r for s in sets for r in s):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return tuple(merged)


def _complement(ranges: Ranges) -> Ranges:
    out, start = [], 0
    for low, high in _union(ranges):
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _TOP:
        out.append((start, _TOP))
    return tuple(out)


def _meet(a: Ranges, b: Ranges) -> Ranges:
    """The characters in both."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if low <= high:
            out.append((low, high))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _fold(ranges: Ranges) -> Ranges:
    """Case-insensitive: a set with a letter (or any non-ASCII character) gets every letter."""
    return _union(ranges, _LETTERS, _HIGH) if _meet(ranges, _union(_LETTERS, _HIGH)) else ranges


def _one_of(c: str, chars: str) -> bool:
    """Whether ``c`` (one character, or "" at the end of the pattern) is one of ``chars``."""
    return c != "" and c in chars


def _class(letter: str) -> Ranges:
    """``\\d``, ``\\w``, ``\\s`` and their complements (``\\D``...), each with every non-ASCII character."""
    ascii_part = _CLASSES[letter.lower()]
    if letter.isupper():
        ascii_part = _meet(_complement(ascii_part), ((0, 127),))
    return _union(ascii_part, _HIGH)


class _Reader:
    """A tokenizer of a pattern ``re`` accepted, into the tree the automaton is built from."""

    def __init__(self, pattern: str) -> None:
        self.text, self.at = pattern, 0
        self.groups: dict[int, Node] = {}  # closed groups, for backreferences
        self.names: dict[str, int] = {}
        self.count = 0
        self.ignorecase = False
        self.lookarounds: list[Node] = []

    def peek(self, ahead: int = 0) -> str:
        i = self.at + ahead
        return self.text[i] if i < len(self.text) else ""

    def take(self, n: int = 1) -> str:
        s = self.text[self.at:self.at + n]
        self.at += n
        return s

    def upto(self, end: str) -> str:
        i = self.text.index(end, self.at)
        s, self.at = self.text[self.at:i], i + 1
        return s

    def whole(self) -> Node:
        node = self.alternatives()
        if self.at != len(self.text):  # an unbalanced ")": re would not have compiled it
            raise Unsafe(f"is not understood at position {self.at}")
        return node

    def alternatives(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Alt(tuple(branches))

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            while True:
                bounds = self.quantifier()
                if bounds is None:
                    break
                atom = Repeat(atom, *bounds)
                if self.peek() in ("?", "+"):  # lazy or possessive: the same paths, in another order
                    self.take()
            items.append(atom)
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def quantifier(self) -> tuple[int, int | None] | None:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.take()
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        m = _QUANTIFIER.match(self.text, self.at) if c == "{" else None
        if m is None or m.group(0) == "{}":
            return None  # a literal "{"
        self.at = m.end()
        low = int(m.group(1) or 0)
        high = m.group(3) if m.group(2) else m.group(1)
        return low, (int(high) if high else None)

    def atom(self) -> Node:
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return Chars(self.char_class())
        if c == ".":
            return Chars(_ANY)
        if c in ("^", "$"):
            return EMPTY
        if c == "\\":
            return self.escape()
        return Chars(((ord(c), ord(c)),))

    def close(self) -> None:
        if self.take() != ")":
            raise Unsafe(f"is not understood at position {self.at - 1}")

    def body(self) -> Node:
        node = self.alternatives()
        self.close()
        return node

    def group(self) -> Node:
        if self.peek() != "?":
            return self.capture(None)
        self.take()
        c = self.take()
        if c == ":" or c == ">":  # non-capturing, atomic (read as a plain group: it may only backtrack less)
            return self.body()
        if c == "#":
            self.upto(")")
            return EMPTY
        if c == "<":  # (?<=...), (?<!...)
            c = self.take()
        if c in ("=", "!"):  # a lookaround: checked as a pattern of its own, it reads nothing here
            self.lookarounds.append(self.body())
            return EMPTY
        if c == "P":  # (?P<name>...), (?P=name)
            if self.take() == "<":
                return self.capture(self.upto(">"))
            return self.backreference(self.upto(")"))
        if c == "(":  # (?(group)yes|no): either branch
            self.upto(")")
            return self.body()
        flags = c  # (?aiLmsux) for the whole pattern, (?aiLmsux-imsx:...) for a group
        while _one_of(self.peek(), "aiLmsux-"):
            flags += self.take()
        added = flags.split("-")[0]
        if "x" in added:
            raise Unsafe("is verbose ((?x)), which the backtracking check does not read; write it without")
        self.ignorecase = self.ignorecase or "i" in added
        if self.take() == ")":
            return EMPTY
        return self.body()

    def capture(self, name: str | None) -> Node:
        self.count += 1
        number = self.count
        if name is not None:
            self.names[name] = number
        node = self.body()
        self.groups[number] = node
        return node

    def backreference(self, ref: str) -> Node:
        number = int(ref) if ref.isdigit() else self.names.get(ref, -1)
        if number not in self.groups:
            raise Unsafe(f"has a backreference {ref} to no group before it")
        return self.groups[number]

    def escape(self) -> Node:
        c = self.peek()
        octal = all(_one_of(self.peek(i), "01234567") for i in range(3))  # \123: a character
        if c.isdigit() and c != "0" and not octal:  # \1 to \99: a backreference
            ref = self.take()
            if self.peek().isdigit():
                ref += self.take()
            return self.backreference(ref)
        if _one_of(c, "AZbB"):
            self.take()
            return EMPTY
        if _one_of(c, "dDsSwW"):
            self.take()
            return Chars(_class(c))
        code = self.char_escape()
        return Chars(((code, code),))

    def char_escape(self) -> int:
        """The character of an escape (after its backslash) that stands for one character."""
        c = self.take()
        if c in _ESCAPES:
            return _ESCAPES[c]
        if c in ("x", "u", "U"):
            return int(self.take({"x": 2, "u": 4, "U": 8}[c]), 16)
        if c == "N":
            self.take()  # "{"
            return ord(unicodedata.lookup(self.upto("}")))
        if c in "01234567":
            digits = c
            while len(digits) < 3 and _one_of(self.peek(), "01234567"):
                digits += self.take()
            return int(digits, 8)
        return ord(c)

    def char_class(self) -> Ranges:
        negated = self.peek() == "^"
        if negated:
            self.take()
        sets: list[Ranges] = []
        first = True
        while first or self.peek() != "]":
            first = False
            c = self.take()
            if c == "\\" and _one_of(self.peek(), "dDsSwW"):
                sets.append(_class(self.take()))
                continue
            low = self.class_char(c)
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.take()
                high = self.class_char(self.take())
                sets.append(((low, high),))
            else:
                sets.append(((low, low),))
        self.take()  # "]"
        ranges = _union(*sets)
        return _complement(ranges) if negated else ranges

    def class_char(self, c: str) -> int:
        if c != "\\":
            return ord(c)
        if self.peek() == "b":
            self.take()
            return 8
        return self.char_escape()


@dataclass
class _Automaton:
    """Glushkov's position automaton: state 0 the start, each other state one character class;
    ``edges[p]`` the states that can follow ``p``, once per way the pattern gives to go there."""

    chars: list[Ranges] = field(default_factory=lambda: [()])
    edges: list[list[int]] = field(default_factory=lambda: [[]])
    ignorecase: bool = False

    @classmethod
    def of(cls, root: Node, ignorecase: bool) -> _Automaton:
        automaton = cls(ignorecase=ignorecase)
        _, first, _ = automaton.build(root)
        automaton.edges[0] = first
        return automaton

    def build(self, node: Node) -> tuple[bool, list[int], list[int]]:
        """(can read no character, the states it can start with, the states it can end on)."""
        if isinstance(node, Chars):
            if len(self.chars) > MAX_POSITIONS:
                raise Unsafe(f"is too complex to check for backtracking (over {MAX_POSITIONS} character positions)")
            self.chars.append(_fold(node.ranges) if self.ignorecase else node.ranges)
            self.edges.append([])
            p = len(self.chars) - 1
            return False, [p], [p]
        if isinstance(node, Alt):
            parts = [self.build(b) for b in node.branches]
            return (any(e for e, _, _ in parts), [p for _, f, _ in parts for p in f],
                    [p for _, _, last in parts for p in last])
        if isinstance(node, Seq):
            return self.chain(list(node.items))
        return self.repeat(node)

    def chain(self, items: list[Node]) -> tuple[bool, list[int], list[int]]:
        empty, first, last = True, list[int](), list[int]()
        for item in items:
            e, f, l_ = self.build(item)
            for p in last:
                self.edges[p].extend(f)
            first = first + f if empty else first
            last = last + l_ if e else l_
            empty = empty and e
        return empty, first, last

    def repeat(self, node: Repeat) -> tuple[bool, list[int], list[int]]:
        low, high = node.low, node.high
        if (high is None or high > 1) and _nullable(node.body):
            # re may end any repetition with an empty one: a second way out, which the automaton
            # does not show (in (([a-z]?)*,)+ it doubles the ways at every comma)
            raise Unsafe(EMPTY_REPEAT)
        if high is not None and (high <= EXACT or low == high):
            # m copies, then n - m optional ones nested (x{1,3}: x(x(x)?)?), one way to read each count
            more: Node = EMPTY
            for _ in range(high - low):
                more = Alt((Seq((node.body, more)), EMPTY))
            return self.chain([node.body] * low + [more])
        # unbounded (or bounded above EXACT): at most one required copy, then body*
        empty, first, last = self.chain([node.body] * min(low, 1))
        _, f, l_ = self.build(node.body)
        for p in l_:
            self.edges[p].extend(f)  # the loop back
        for p in last:
            self.edges[p].extend(f)
        return (empty, first + f if empty else first, last + l_)

    def steps(self, states: tuple[int, ...], budget: list[int]) -> list[tuple[tuple[int, ...], Ranges]]:
        """The states the copies can go to together, each copy along one of its edges, on a common
        character (``budget``: the steps left to try, lowered by those tried here)."""
        out: list[tuple[tuple[int, ...], Ranges]] = [((), _ANY)]
        for s in states:
            _spend(budget, len(out) * len(self.edges[s]))
            out = [((*done, t), common) for done, chars in out for t in self.edges[s]
                   if (common := _meet(chars, self.chars[t]))]
        return out


def _nullable(node: Node) -> bool:
    """Whether ``node`` can match the empty text."""
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(_nullable(n) for n in node.items)
    if isinstance(node, Alt):
        return any(_nullable(n) for n in node.branches)
    return node.low == 0 or _nullable(node.body)


def _spend(budget: list[int], steps: int) -> None:
    budget[0] -= steps
    if budget[0] < 0:
        raise Unsafe("is too complex to check for backtracking (simplify it)")


def _walk(automaton: _Automaton, starts: Sequence[tuple[int, int]], budget: list[int]) -> bool:
    """Whether two copies of the automaton, from any of ``starts``, can be in one state together
    again after reading the same text."""
    seen, todo = set(starts), list(starts)
    while todo:
        a, b = todo.pop()
        if a == b:
            return True
        for (c, d), _ in automaton.steps((a, b), budget):
            if (c, d) not in seen:
                seen.add((c, d))
                todo.append((c, d))
    return False


def _check(automaton: _Automaton, budget: list[int]) -> None:
    for s in range(len(automaton.chars)):
        # from state s (0: the start), two copies part: to two states, or to one along two edges
        edges = automaton.edges[s]
        parted = [(a, b) for (a, b), _ in automaton.steps((s, s), budget) if a != b or edges.count(a) > 1]
        if _walk(automaton, [(a, b) for a, b in parted if a != b], budget) or any(a == b for a, b in parted):
            raise Unsafe(AMBIGUOUS)
