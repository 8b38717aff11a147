"""Stage ``dictionary``: fairseq ``dict.{lang}.txt`` from train's token counts (or the given dict files).

The counts are the encode stage's (its bincount of the work ids, or the encode tasks' summed), less the
tokens of the items the piece filters dropped; else one pass over the ids. Runs that store the tokenizer's
own ids have no dictionary: the stage is then the vocabulary's summary only (no record).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.prepare.encoded_parts import item_token_counts, summed_counts
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.sequential import npy_blocks
from tokenmill.prepare.stages.base import Outputs, Stage
from tokenmill.prepare.stages.encoded import encoded_blocks, keep_file, split_words, unknown_surfaces
from tokenmill.prepare.stages.tokenizer import model_path, tokenizer_for
from tokenmill.prepare.state import file_identity, fingerprint
from tokenmill.prepare.tokenizing import backend_name, splits_words, stores_tokenizer_ids
from tokenmill.vocab.dictionary import Dictionary

log = logging.getLogger("tokenmill.prepare")
MASK_ITEMS = 1 << 22  # piece-filter mask entries read at a time when taking dropped items out of kept counts


def distinct_eod(ctx: RunContext) -> bool:
    """Whether --append-eod asks for a token of its own (not fairseq's </s>)."""
    return ctx.config.inputs.append_eod and ctx.config.inputs.eod_symbol != "</s>"


def appends_eod(ctx: RunContext) -> bool:
    return ctx.config.inputs.append_eod or (ctx.config.monolingual and not ctx.config.megatron.output_prefix)


def end_token(ctx: RunContext, dictionary: Dictionary | None, lang: str) -> int | None:
    """The id every stored item ends with: fairseq's </s> or the EOD symbol in the dictionary; the
    tokenizer's own end-of-document (LM) or end-of-sentence token; None with Megatron's flags and
    no --append-eod (preprocess_data appends nothing then)."""
    cfg = ctx.config
    if dictionary is not None:
        return dictionary.index(cfg.inputs.eod_symbol if cfg.inputs.append_eod else "</s>")
    if cfg.megatron.output_prefix and not cfg.inputs.append_eod:
        return None
    special = tokenizer_for(ctx, lang).special_ids
    order = ("eod", "eos") if appends_eod(ctx) else ("eos", "eod")
    found = next((special[k] for k in order if k in special), None)
    if found is None:
        raise ConfigError(
            f"{model_path(ctx, lang).name} has no end-of-sentence or end-of-document token to end items with; "
            "name one with --tokenizer-options eod_token=... (tiktoken) or specials (hf)"
        )
    return found


class DictionaryStage(Stage):
    """``dictionary`` (see the module's docstring); its dictionaries go to ``ctx.dictionaries``."""

    name = "dictionary"

    def given(self, ctx: RunContext) -> dict[str, str | None]:
        cfg, langs = ctx.config, ctx.config.langs
        if cfg.dictionary.joined_dictionary:
            return dict.fromkeys(langs, cfg.dictionary.srcdict or cfg.dictionary.tgtdict)
        return {langs[0]: cfg.dictionary.srcdict, **({langs[1]: cfg.dictionary.tgtdict} if len(langs) > 1 else {})}

    def key(self, ctx: RunContext) -> str:
        cfg, langs = ctx.config, ctx.config.langs
        upstream = [ctx.keys.get(f"encode.train.{lang}", ctx.keys["clean.train"]) for lang in langs]
        upstream.append(ctx.keys.get("pieces.train"))
        given_ids = {lang: file_identity(p) if p else None for lang, p in self.given(ctx).items()}
        dicts = cfg.dictionary
        limits = (dicts.nwordssrc, dicts.nwordstgt, dicts.thresholdsrc, dicts.thresholdtgt, dicts.padding_factor)
        return fingerprint("dictionary", upstream, given_ids, limits, dicts.joined_dictionary,
                           cfg.tokenizer.user_defined_symbols, cfg.tokenizer.name,
                           *([cfg.inputs.eod_symbol] if distinct_eod(ctx) else []))

    def execute(self, ctx: RunContext) -> dict[str, Any]:
        if stores_tokenizer_ids(ctx.config):  # the tokenizer's own ids are stored: no dictionary remap
            self._tokenizer_vocab(ctx)
            return {}
        return super().execute(ctx)

    def _tokenizer_vocab(self, ctx: RunContext) -> None:
        langs = ctx.config.langs
        tokenizers = {lang: tokenizer_for(ctx, lang) for lang in langs}
        first = tokenizers[langs[0]]
        ctx.summary.vocab = {
            "tokenizer": backend_name(ctx.config),
            "models": {lang: model_path(ctx, lang).name for lang in langs},
            "size": {lang: t.vocab_size for lang, t in tokenizers.items()},
            "special": first.special_ids,
        }
        eod = end_token(ctx, None, langs[0])
        if eod is not None and appends_eod(ctx):
            ctx.summary.vocab["eod"] = {"symbol": first.id_to_token(eod), "id": eod}
        ctx.dictionaries = {}

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        cfg, langs = ctx.config, ctx.config.langs
        paths = {lang: ctx.folder.dict_path(None if cfg.monolingual else lang) for lang in langs}
        ctx.dictionaries = {lang: Dictionary.load(path) for lang, path in paths.items()}
        ctx.summary.vocab = {
            "dictionaries": {lang: {"file": paths[lang].name, "size": len(d)} for lang, d in ctx.dictionaries.items()},
            "special": Dictionary().special_ids,
            "tokenizer": cfg.tokenizer.name,
            "spm_models": (
                sorted({model_path(ctx, lang).name for lang in langs}) if cfg.tokenizer.name == "sentencepiece" else []
            ),
        }
        if cfg.inputs.append_eod:
            eod = ctx.dictionaries[langs[0]].index(cfg.inputs.eod_symbol)
            ctx.summary.vocab["eod"] = {"symbol": cfg.inputs.eod_symbol, "id": eod}

    def run(self, ctx: RunContext) -> Outputs:
        cfg, langs = ctx.config, ctx.config.langs
        given = self.given(ctx)
        limits = {langs[0]: (cfg.dictionary.nwordssrc, cfg.dictionary.thresholdsrc)}
        if len(langs) > 1:
            limits[langs[1]] = (cfg.dictionary.nwordstgt, cfg.dictionary.thresholdtgt)
        extra = list(cfg.tokenizer.user_defined_symbols) + ([cfg.inputs.eod_symbol] if distinct_eod(ctx) else [])
        built: dict[str, Dictionary] = {}
        if cfg.dictionary.joined_dictionary and not any(given.values()):
            total: Counter[str] = Counter()
            for lang in langs:
                total.update(token_counts(ctx, lang))
            shared = Dictionary.from_counts(total, threshold=cfg.dictionary.thresholdsrc,
                                            nwords=cfg.dictionary.nwordssrc,
                                            padding_factor=cfg.dictionary.padding_factor, extra_symbols=extra)
            built = dict.fromkeys(langs, shared)
        else:
            for lang in langs:
                if given.get(lang):
                    built[lang] = Dictionary.load(given[lang])  # type: ignore[arg-type]
                else:
                    nwords, threshold = limits[lang]
                    built[lang] = Dictionary.from_counts(token_counts(ctx, lang), threshold=threshold, nwords=nwords,
                                                         padding_factor=cfg.dictionary.padding_factor,
                                                         extra_symbols=extra)
        if distinct_eod(ctx) and cfg.inputs.eod_symbol not in built[langs[0]]:
            raise ConfigError(
                f"--eod-symbol {cfg.inputs.eod_symbol} is not in the dictionary {given.get(langs[0])}; add it there "
                "(a line '<symbol> 1') or leave --append-eod off"
            )
        paths = {lang: ctx.folder.dict_path(None if cfg.monolingual else lang) for lang in langs}
        for lang, dictionary in built.items():
            dictionary.save(paths[lang])
        return list(paths.values()), {lang: len(d) for lang, d in built.items()}


def token_counts(ctx: RunContext, lang: str) -> Counter[str]:
    """Token counts of the training side ``lang``: pieces (and unknown surfaces) of the tokenizer, or
    words of whitespace-tokenized text."""
    if splits_words(ctx.config):
        words = split_words(ctx, "train", lang)
        array = work_id_counts(ctx, lang, len(words))
        return Counter({words[i]: int(array[i]) for i in np.flatnonzero(array).tolist()})
    tokenizer = tokenizer_for(ctx, lang)
    if lang in ctx.id_parts:  # the encode tasks' bincounts, summed (no pass over the ids)
        array, found = summed_counts(ctx.id_parts[lang], tokenizer.vocab_size, keep_file(ctx, "train"))
    else:
        surfaces = unknown_surfaces(ctx, "train", lang)
        array = work_id_counts(ctx, lang, tokenizer.vocab_size + len(surfaces))
        found = {surface: int(array[work_id]) for surface, (work_id, _) in surfaces.items()}
    skip = set(tokenizer.special_ids.values())
    text_piece = getattr(tokenizer, "is_text_piece", lambda i: i not in skip)
    counts = Counter({
        tokenizer.id_to_token(i): int(array[i])
        for i in np.flatnonzero(array[: tokenizer.vocab_size]).tolist()
        if text_piece(i)
    })
    for surface, count in found.items():
        if count:
            counts[surface] += count
    return counts


def work_id_counts(ctx: RunContext, lang: str, size: int) -> np.ndarray:
    """Occurrences of each of train's ``size`` work ids of side ``lang`` in the kept items: the counts the
    encode stage kept as it wrote the ids (worker processes), less the tokens of the items the piece filters
    dropped; else one pass over the ids."""
    counted = ctx.folder.counts_path("train", lang)
    keep = keep_file(ctx, "train")
    stored = stored_counts(counted, size) if counted in ctx.produced else None  # this run's encode stage
    array = np.zeros(size, dtype=np.int64)
    if stored is None:
        for block, _ in encoded_blocks(ctx, "train", lang):
            array += np.bincount(block, minlength=size)
        return array
    array[: len(stored)] = stored
    if keep is not None:  # the mask a block at a time: memory does not grow with the items
        start = 0
        for kept in npy_blocks(keep, MASK_ITEMS):
            array -= item_token_counts(ctx.folder.ids_prefix("train", lang), start + np.flatnonzero(~kept), size)
            start += len(kept)
    return array


def stored_counts(path: Path, size: int) -> np.ndarray | None:
    """The encode stage's counts file, or None (with a warning) when it cannot be read as at most ``size``
    integer counts: the dictionary is then counted from the ids themselves, which gives the same result."""
    try:
        stored = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        log.warning("%s cannot be read (%s); counting the ids again", path, error)
        return None
    if stored.ndim != 1 or len(stored) > size or not np.issubdtype(stored.dtype, np.integer):
        log.warning("%s holds %s counts of %s, not at most %d integers; counting the ids again",
                    path, stored.shape, stored.dtype, size)
        return None
    return stored
