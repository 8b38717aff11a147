"""What ``prepare --help`` and the config reference say of each setting: the sections' titles, the help of the
nested groups' fields, and which local paths a process started elsewhere must see absolute."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from tokenmill.prepare.config.catalog import SECTION_TYPES, SETTINGS
from tokenmill.store.remote import is_url

NESTED_HELP: dict[str, dict[str, str]] = {
    "normalize": {
        "nfkc": "Unicode NFKC; SentencePiece's nmt_nfkc rule does this too.",
        "fullwidth": "Full-width ASCII forms and U+3000 to half-width (seed script's q2b).",
        "remove_control": "Delete control chars and U+FEFF; whitespace-like controls -> space.",
        "collapse_whitespace": "Whitespace runs -> one space, strip both ends.",
    },
    "filters": {
        "drop_empty": "Drop pairs with an empty side.",
        "min_chars": "Per side, characters (code points); 0 = no minimum.",
        "max_chars": "Per side; default: no maximum.",
        "min_tokens": "Per side, tokens: the tokenizer's pieces, counted after encoding (whitespace tokens with "
                      "--tokenizer none); 0 = no minimum.",
        "max_tokens": "Per side, tokens counted as --filter-min-tokens does; default: no maximum.",
        "max_ratio": "Longer side / shorter side, e.g. 9 (Moses); default: off.",
        "ratio_unit": "What max_ratio compares: tokens (counted as --filter-min-tokens does) or chars.",
        "drop_identical": "Drop pairs whose source equals the target.",
        "max_nonletter": "Max share of non-letters among non-space chars, e.g. 0.5.",
        "src_script": 'Unicode script(s) of the source, e.g. "Latin", "Han+Hiragana".',
        "tgt_script": "Same for the target.",
        "min_script_fraction": "Share of letters that must be in the expected script.",
        "src_lang": 'Expected language of the source: ISO 639-1 ("en"), ISO 639-3 ("eng") or NLLB\'s "eng_Latn" (the '
                    'script checked against the letters); see --filter-lid-backend.',
        "tgt_lang": "Expected language of the target.",
        "langid_candidates": "Restrict language-ID to these languages (py3langid backend only); default: all.",
    },
}
"""``--help`` of the nested settings' flags (``--nfkc``, ``--filter-min-tokens``), by group and field: their
classes live in :mod:`tokenmill.text`, which knows nothing of flags."""
SECTIONS: dict[str, str] = {
    next(s.key for s in SETTINGS if s.section == name): kind.TITLE for name, kind in SECTION_TYPES.items()
}
"""The sections of ``prepare --help`` (the sections of :class:`PrepareConfig`), by the key that opens each: a
setting is in the section last opened at or above it, in key order."""


def field_help(group: str | None, item: dataclasses.Field) -> str:  # type: ignore[type-arg]
    """The help text of a config field: for a field of a nested group (``normalize``, ``filters``) the group's
    entry in :data:`NESTED_HELP`, else the field's own ``metadata["help"]`` (the bitext rules of
    :mod:`tokenmill.text.filters` carry theirs); ``""`` when there is none."""
    nested = NESTED_HELP.get(group, {}).get(item.name) if group is not None else None
    return nested or str(item.metadata.get("help", ""))


def field_sections() -> dict[str, str]:
    """Each setting's section title, by its flat key."""
    return {setting.key: SECTION_TYPES[setting.section].TITLE for setting in SETTINGS}


_PATH_SETTINGS = ("destdir", "tokenizer_model", "spm_model", "srcdict", "tgtdict", "vocab_file", "merge_file")
_PATH_LIST_SETTINGS = ("trainpref", "validpref", "testpref", "input", "decontaminate")


def absolute_paths(settings: dict[str, Any]) -> dict[str, Any]:
    """Flat settings with every local path made absolute (URLs stay as they are): what a process started in
    another directory (a Slurm job, a Ray worker) needs to find the same files."""
    out = dict(settings)

    def absolute(path: str) -> str:
        return path if is_url(path) else os.path.abspath(path)

    for name in _PATH_SETTINGS:
        if out.get(name):
            out[name] = absolute(out[name])
    for name in _PATH_LIST_SETTINGS:
        if out.get(name):
            out[name] = [absolute(p) for p in out[name]]
    return out
