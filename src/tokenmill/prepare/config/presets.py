"""Settings that stand for others: Megatron's preprocess_data flags (which mean Megatron's defaults) and the
``--clean-preset`` filter sets. Both fill in settings under those given: a given setting always wins."""

from __future__ import annotations

import glob
import os
from typing import Any

from tokenmill.prepare.config.kinds import LANG_CODE_RE
from tokenmill.prepare.config.megatron import refuse_llama2
from tokenmill.prepare.config.values import as_list
from tokenmill.text.filters.registry import LM_RULES

_MEGATRON_TOKENIZERS = {"HuggingFaceTokenizer": "hf", "TikTokenizer": "tiktoken",
                        "SentencePieceTokenizer": "sentencepiece", "GPT2BPETokenizer": "hf"}


def megatron_defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings given with Megatron's flags (``--input``, ``--output-prefix``) mean what preprocess_data does:
    JSONL in, one key per run, the Megatron layout with the tokenizer's own ids, and nothing normalized,
    filtered or deduplicated unless a cleaning setting asks for it (given settings always win)."""
    if not (settings.get("input") or settings.get("output_prefix")):
        return settings
    out = dict(settings)
    keys = as_list(out.get("json_keys"), "--json-keys") or ["text"]
    patterns = as_list(out.get("input"), "--input")
    files = [match for pattern in patterns for match in (sorted(glob.glob(pattern)) or [pattern])]
    defaults: dict[str, Any] = {
        "trainpref": files,
        "input_format": "jsonl",
        "json_keys": keys,
        "source_lang": keys[0] if LANG_CODE_RE.fullmatch(keys[0]) else "text",
        "layout": "megatron",
        "dedup": False,
        "leakage": "off",
        "normalize": {"nfkc": False, "fullwidth": False, "remove_control": False, "collapse_whitespace": False},
        "filters": {"drop_empty": False},
    }
    if out.get("output_prefix"):
        defaults["destdir"] = os.path.dirname(str(out["output_prefix"])) or "."
    refuse_llama2(out.get("tokenizer_type"))
    if out.get("tokenizer_type"):
        defaults["tokenizer"] = _MEGATRON_TOKENIZERS.get(str(out["tokenizer_type"]), out["tokenizer_type"])
    for key, value in defaults.items():
        if key in ("normalize", "filters") and isinstance(out.get(key), dict):
            out[key] = {**value, **out[key]}
        elif out.get(key) in (None, [], "") and value is not None:
            out[key] = value
    return out


CLEAN_PRESETS: dict[str, dict[str, Any]] = {
    "bitext": {
        "not_too_long": 1024, "not_too_short": 3, "length_ratio": 3.0, "no_identical": True, "no_literals": True,
        "no_only_symbols": 0.1, "no_only_numbers": 0.5, "no_urls": True, "no_breadcrumbs": True,
        "no_glued_words": True, "no_repeated_words": 1, "no_unicode_noise": True, "no_space_noise": True,
        "no_paren": True, "no_escaped_unicode": True, "no_bad_encoding": True, "no_titles": True,
        "no_number_inconsistencies": True, "no_script_inconsistencies": True, "terminal_punctuation": -2.0,
        "html_tags": True, "repetition": 2, "common_substring": 0.9,
    },
    "web": dict.fromkeys(LM_RULES, True),
}
"""The filters each ``--clean-preset`` turns on, with their thresholds (bicleaner-hardrules' defaults for its
rules, OpusFilter's for its filters; OpusFilter's numerals filter is left out: no_number_inconsistencies
already drops pairs whose digits differ)."""


def preset_defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings with the filters of ``clean_preset`` and of ``lm_filters`` added under those given (given
    filters always win)."""
    preset = settings.get("clean_preset")
    named = settings.get("lm_filters") or []
    named = named.split(",") if isinstance(named, str) else named
    added = {name: True for name in named if name in LM_RULES}  # an unknown name is reported by validate
    if preset in CLEAN_PRESETS:  # an unknown preset is reported by the type check
        added = {**CLEAN_PRESETS[preset], **added}
    given = settings.get("filters")
    if not added or (given is not None and not isinstance(given, dict)):
        return settings  # not a mapping: reported as such by the filters' check
    return {**settings, "filters": {**added, **(given or {})}}
