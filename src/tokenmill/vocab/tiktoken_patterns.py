"""The split patterns and special tokens of the public tiktoken encodings, without importing tiktoken (the
fast encoder names its pre-split scheme by them)."""

from __future__ import annotations

ENDOFTEXT = "<|endoftext|>"
_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
PRESETS: dict[str, tuple[str, dict[str, int]]] = {
    "gpt2": (_R50K, {ENDOFTEXT: 50256}),
    "r50k_base": (_R50K, {ENDOFTEXT: 50256}),
    "p50k_base": (_R50K, {ENDOFTEXT: 50256}),
    "cl100k_base": (
        CL100K_PATTERN,
        {ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
         "<|endofprompt|>": 100276},
    ),
    "o200k_base": (_O200K, {ENDOFTEXT: 199999, "<|endofprompt|>": 200018}),
}
"""Split patterns and special tokens of the public encodings (their ranks files are the user's)."""
SCHEME_OF_PRESET = {"gpt2": "gpt2", "r50k_base": "gpt2", "p50k_base": "gpt2", "cl100k_base": "gpt4",
                    "o200k_base": "o200k"}
"""gigatoken's name for each preset's split pattern."""
