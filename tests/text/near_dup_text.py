"""Held-out real English text with planted near-duplicates, for the near-dedup tests (made offline).

The documents are the docstrings of the Python standard library's own source files (read with ``ast``,
nothing imported): real prose about many subjects, none of it written for these tests. Short ones are left
out, and so are the stdlib's own near-duplicates (``bisect_left`` and ``bisect_right`` say almost the same): a docstring
whose 5-gram Jaccard similarity with one already taken reaches 0.3, so that every near-duplicate in the
corpus is a planted one. A third of them end in a "Last updated" date line, as web pages do. Planted
near-duplicates copy an earlier document with one change of the kinds web duplicates show: a few random
character edits, the date changed, whitespace changed, or a boilerplate line added.
"""

from __future__ import annotations

import ast
import functools
import random
import sysconfig
from pathlib import Path

from tokenmill.text.minhash import words_of

MONTHS = "January February March April May June July August September October November December".split()
BOILERPLATE = ["Share this page on social media.", "All rights reserved.", "Subscribe to our newsletter for more.",
               "Posted in Documentation | Leave a comment", "Cookies help us deliver our services."]
KINDS = ("characters", "date", "whitespace", "boilerplate")


@functools.lru_cache(maxsize=4)
def docstrings(limit: int, min_words: int = 50) -> tuple[str, ...]:
    """Up to ``limit`` distinct docstrings of at least ``min_words`` words, whitespace collapsed, in file order."""
    found: list[str] = []
    taken: list[set[tuple[str, ...]]] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                text = " ".join((ast.get_docstring(node) or "").split())
                grams = _shingles(text)
                if len(text.split()) >= min_words and not any(_jaccard(grams, other) >= 0.3 for other in taken):
                    taken.append(grams)
                    found.append(text)
                    if len(found) == limit:
                        return tuple(found)
    return tuple(found)


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = words_of(text)
    return {tuple(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b)


def _date(rng: random.Random) -> str:
    return f"Last updated: {rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(1995, 2024)}"


def near_copy(rng: random.Random, text: str, kind: str) -> str:
    """A near-duplicate of ``text`` with one change of ``kind``."""
    if kind == "characters":
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            chars[rng.randrange(len(chars))] = rng.choice("abcdefghijklmnopqrstuvwxyz")
        return "".join(chars)
    if kind == "date":
        head, _, _ = text.rpartition(" Last updated:")
        return f"{head or text} {_date(rng)}"
    if kind == "whitespace":
        return text.replace(" ", "  ", 5).replace(". ", ".\t", 2) + " "
    return f"{rng.choice(BOILERPLATE)} {text}" if rng.random() < 0.5 else f"{text} {rng.choice(BOILERPLATE)}"


def planted_corpus(
    originals: int = 600, copies: int = 200, seed: int = 11
) -> tuple[list[str], dict[int, int], dict[int, str]]:
    """(documents, {position of a planted near-duplicate: position of its original}, {position of a planted
    near-duplicate: its kind of change}); each copy comes later in the list than its original."""
    rng = random.Random(seed)
    docs = [d + f" {_date(rng)}" if rng.random() < 1 / 3 else d for d in docstrings(originals)]
    entries: list[tuple[str, int | None, str]] = [(doc, None, "") for doc in docs]  # (text, original, kind)
    where = list(range(len(docs)))  # entry index -> original id (copies: -1)
    for i in range(copies):
        source = rng.randrange(len(docs))
        kind = KINDS[i % len(KINDS)]
        at = rng.randint(where.index(source) + 1, len(entries))
        entries.insert(at, (near_copy(rng, docs[source], kind), source, kind))
        where.insert(at, -1)
    position_of = {who: position for position, who in enumerate(where) if who >= 0}
    planted = {at: position_of[source] for at, (_, source, _) in enumerate(entries) if source is not None}
    kinds = {at: kind for at, (_, source, kind) in enumerate(entries) if source is not None}
    return [text for text, _, _ in entries], planted, kinds
