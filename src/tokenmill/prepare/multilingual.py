"""``tokenmill prepare --directions ...``: many language directions into one Open-NLLB style data_bin.

Every direction goes through the single-direction stages (clean, encode, binarize; each
restartable and keyed by its own inputs) with one shared SentencePiece model and one shared
dictionary::

    data_bin/
      spm.model  dict.txt  dict.{lang}.txt   (one dictionary, a copy per language, as fairseq reads it)
      shard000/  train.{src}-{tgt}.{src|tgt}.bin/.idx   valid.* test.*   dict files
      shard001/  train.{src}-{tgt}.* ...            (a direction's train split in up to num_shards parts)
      manifest.json  preprocess.log

SentencePiece trains on a sample in which language l's share of the lines is proportional to
n_l^(1/T) (``spm_temperature``), so a language with 100x fewer lines still has its characters in
the vocabulary. The dictionary is the model's pieces followed by one language token per language
(``__eng_Latn__``). Adding a direction later keeps the model and every existing id (a new
language's token takes the next free id), so a re-run encodes only the new direction.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from tokenmill._core.temperature import temperature_probabilities
from tokenmill.errors import TokenmillError
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.engines import TaskFunction
from tokenmill.prepare.publish import prune_staging
from tokenmill.prepare.run.context import RunContext, SharedVocab
from tokenmill.prepare.run.runner import PhaseDone, check_destination_folder, exclusive, run_stages, warn_no_validation
from tokenmill.prepare.run.summary import PrepareSummary
from tokenmill.prepare.stages import PHASES, Stage, clean_stages, encode_stages, provenance_stages
from tokenmill.prepare.stages.base import Outputs
from tokenmill.prepare.stages.binarize import BinarizeStage
from tokenmill.prepare.stages.cleaned import cleaned_chunks
from tokenmill.prepare.stages.publish import copy_into_shards, publish_run, write_log
from tokenmill.prepare.stages.tokenizer import trained_sentencepiece, warn_small_vocabulary
from tokenmill.prepare.state import STATE_DIR, file_identity, fingerprint
from tokenmill.prepare.tokenizing import piece_lookup, spm_options
from tokenmill.store.format import token_dtype
from tokenmill.store.layout import SHARED_DICT, dict_name
from tokenmill.store.manifest import file_checksum
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import Reservoir
from tokenmill.vocab.tokenizer import load_tokenizer

log = logging.getLogger("tokenmill.prepare")
SPM_MODEL = "spm.model"


@dataclass
class MultilingualSummary(PrepareSummary):
    """Per-direction summaries plus what the directions share."""

    directions: dict[str, PrepareSummary] = field(default_factory=dict)
    languages: dict[str, dict[str, Any]] = field(default_factory=dict)
    """lang -> {"token", "id", "train_lines", "spm_sample_lines"}."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "directions": {name: s.to_dict() for name, s in sorted(self.directions.items())},
            "languages": self.languages,
            "vocab": self.vocab,
        }

    def table(self) -> str:
        header = f"{'direction':<24}{'split':<7}{'pairs':>11}{'src tokens':>13}{'tgt tokens':>13}{'shards':>8}"
        lines = [header]
        for name, summary in sorted(self.directions.items()):
            src, tgt = name.split("-")
            for split, info in summary.ordered():
                langs = info.get("langs", {})
                if src not in langs:
                    continue
                lines.append(
                    f"{name:<24}{split:<7}{langs[src]['sentences']:>11}{langs[src]['tokens']:>13}"
                    f"{langs[tgt]['tokens']:>13}{langs[src].get('shards', 0):>8}"
                )
        lines.append(f"{'language':<16}{'token':<20}{'id':>8}{'train lines':>13}{'spm sample':>12}")
        for lang, row in sorted(self.languages.items()):
            lines.append(
                f"{lang:<16}{row['token']:<20}{row['id']:>8}{row['train_lines']:>13}"
                f"{row.get('spm_sample_lines', 0):>12}"
            )
        return "\n".join(lines)


class Directions:
    """The run's context and one context per direction (``.work/*/{direction}/``, records named
    ``{direction}.{stage}``), sharing the outputs' bookkeeping, the stage times, the warnings and the
    vocabulary (:class:`~tokenmill.prepare.run.context.SharedVocab`) with the run."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.spm_path = ctx.out / SPM_MODEL
        self.shared = SharedVocab(self.spm_path, np.empty(0, dtype=np.int64), "")
        self.dictionary = Dictionary()
        """The shared dictionary, once its stage is met."""
        self.contexts: dict[str, RunContext] = {}
        for name in sorted(ctx.config.directions.files):
            direction = RunContext(ctx.config.direction_config(name), force=ctx.stages.force, progress=ctx.progress,
                                   phase=ctx.phase, execute=ctx.execute, direction=name, root=ctx.root)
            direction.shared = self.shared
            direction.produced = ctx.produced  # one run: the run publishes every direction's outputs
            direction.meanings = ctx.meanings
            direction.summary.stage_seconds = ctx.summary.stage_seconds
            direction.summary.warnings = ctx.summary.warnings
            self.contexts[name] = direction

    @property
    def languages(self) -> list[str]:
        return sorted({lang for name in self.ctx.config.directions.files for lang in name.split("-")})

    def lang_token(self, lang: str) -> str:
        return self.ctx.config.directions.lang_token_format.replace("{lang}", lang)

    def kept_train_pairs(self, name: str) -> int:
        """Training pairs of a direction left after cleaning (known once its clean stage was met)."""
        return int(self.contexts[name].summary.splits["train"]["clean"]["kept"]["pairs"])

    def train_lines(self, names: list[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in names:
            kept = self.kept_train_pairs(name)
            for lang in name.split("-"):
                counts[lang] = counts.get(lang, 0) + kept
        return counts

    def previous_info(self, stage: str) -> dict[str, Any]:
        try:
            record = json.loads((self.ctx.root / STATE_DIR / f"{stage}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record.get("info", {}) if isinstance(record, dict) else {}


class SharedTokenizerStage(Stage):
    """``tokenizer``: one SentencePiece model for every direction, trained on a temperature sample of their
    cleaned train text (or copied from --spm-model). A model trained on fewer directions than the run has is
    kept (new directions are encoded with it) unless --retrain-tokenizer."""

    name = "tokenizer"

    def __init__(self, directions: Directions) -> None:
        self.directions = directions
        self.basis = sorted(directions.contexts)

    def key_of(self, basis: list[str]) -> str:
        cfg = self.directions.ctx.config
        upstream = {name: self.directions.contexts[name].keys["clean.train"] for name in basis}
        return fingerprint("tokenizer-multi", upstream, spm_options(cfg).as_dict(), cfg.directions.spm_temperature)

    def key(self, ctx: RunContext) -> str:
        if ctx.config.tokenizer.spm_model:
            return fingerprint("tokenizer", file_identity(ctx.config.tokenizer.spm_model))
        names = sorted(self.directions.contexts)
        previous = sorted(self.directions.previous_info("tokenizer").get("trained_on") or [])
        if (not ctx.config.directions.retrain_tokenizer and previous and set(previous) < set(names)
                and ctx.done("tokenizer", self.key_of(previous))):
            self.basis = previous  # the model made for these directions is intact: new directions use it
            log.info("keeping spm.model trained on %d directions; new: %s (--retrain-tokenizer to include them)",
                     len(previous), ", ".join(sorted(set(names) - set(previous))))
        return self.key_of(self.basis)

    def run(self, ctx: RunContext) -> Outputs:
        cfg = ctx.config
        if cfg.tokenizer.spm_model:
            written = load_tokenizer("sentencepiece", cfg.tokenizer.spm_model).save(ctx.out)
            return written, {"trained": False, "source": cfg.tokenizer.spm_model, "trained_on": []}
        options = spm_options(cfg)
        counts = self.directions.train_lines(self.basis)
        quotas = temperature_quotas(counts, options.input_sentence_size, cfg.directions.spm_temperature)
        sample: list[str] = []
        for lang in sorted(quotas):
            if quotas[lang] == 0:
                continue
            seed = int(xxhash.xxh64_intdigest(f"{cfg.run.seed}:{lang}".encode()) % (2**32))
            reservoir = Reservoir(quotas[lang], seed)
            for name in self.basis:
                if lang in name.split("-"):
                    for lines in cleaned_chunks(self.directions.contexts[name], "train", lang):
                        reservoir.add(lines)
            sample += reservoir.sample()
        log.info("training spm.model on %d lines: %s", len(sample),
                 ", ".join(f"{lang} {quotas[lang]}/{counts[lang]}" for lang in sorted(quotas)))
        spm_path = self.directions.spm_path
        written = trained_sentencepiece(ctx, sample, spm_path, options)
        pieces = {spm_path.name: load_tokenizer("sentencepiece", spm_path).vocab_size}
        return written, {"trained": True, "trained_on": self.basis, "sample": quotas, "lines": counts,
                         "pieces": pieces}

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        if not ctx.config.tokenizer.spm_model:
            warn_small_vocabulary(ctx, info)


class SharedDictionaryStage(Stage):
    """``dictionary``: SentencePiece's pieces, then the language tokens (earlier ones keep their ids), then
    padding; one file with a copy per language. Its lookup (piece id -> dictionary id) is the directions'."""

    name = "dictionary"

    def __init__(self, directions: Directions) -> None:
        self.directions = directions
        self.dictionary = Dictionary()

    def paths(self, ctx: RunContext) -> list[Path]:
        return [ctx.out / SHARED_DICT, *(ctx.out / dict_name(lang) for lang in self.directions.languages)]

    def key(self, ctx: RunContext) -> str:
        tokens = [self.directions.lang_token(x) for x in self.directions.languages]
        return fingerprint("dictionary-multi", file_checksum(self.directions.spm_path), tokens,
                           ctx.config.dictionary.padding_factor, ctx.config.tokenizer.user_defined_symbols)

    def run(self, ctx: RunContext) -> Outputs:
        cfg = ctx.config
        tokenizer = load_tokenizer("sentencepiece", self.directions.spm_path)
        dictionary = Dictionary()
        for i in range(tokenizer.vocab_size):
            if tokenizer.is_text_piece(i):  # type: ignore[attr-defined]
                dictionary.add_symbol(tokenizer.id_to_token(i), 1)
        for symbol in cfg.tokenizer.user_defined_symbols:
            dictionary.add_symbol(symbol, 1)
        tokens = [self.directions.lang_token(lang) for lang in self.directions.languages]
        previous = ctx.out / SHARED_DICT
        order: list[str] = []
        if previous.exists():
            old = Dictionary.load(previous)
            base = len(dictionary)
            if old.symbols[:base] == dictionary.symbols:
                order = [s for s in old.symbols[base:] if not s.startswith("madeupword")]
        order += [t for t in tokens if t not in order]
        for token in order:
            dictionary.add_symbol(token, 1)
        dictionary.pad_to_multiple(cfg.dictionary.padding_factor)
        paths = self.paths(ctx)
        for path in paths:
            dictionary.save(path)
        return paths, {"size": len(dictionary), "lang_tokens": {t: dictionary.index(t) for t in tokens}}

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        self.dictionary = Dictionary.load(ctx.out / SHARED_DICT)
        shared = self.directions.shared
        shared.lookup = piece_lookup(load_tokenizer("sentencepiece", self.directions.spm_path), self.dictionary)
        shared.fingerprint = fingerprint(xxhash.xxh3_128_hexdigest(shared.lookup.tobytes()),
                                         str(token_dtype(len(self.dictionary))))


def run_multilingual(config: PrepareConfig, *, force: bool = False, progress: bool | None = None,
                     execute: TaskFunction | None = None, phase: str | None = None) -> MultilingualSummary:
    """One prepare run over all directions of a config with ``directions`` (or one coordinator ``phase`` of
    it: ``plan`` plans every direction's clean tasks, ``tokenizer`` merges them, trains the shared model and
    dictionary and plans every direction's encode tasks, ``merge`` does the rest)."""
    ctx = RunContext(config, force=force, progress=progress, execute=execute, phase=phase)
    summary = MultilingualSummary(ctx.root)
    summary.stage_seconds, summary.warnings = ctx.summary.stage_seconds, ctx.summary.warnings
    ctx.summary = summary
    check_destination_folder(ctx)
    if phase in (None, "merge"):
        warn_no_validation(ctx, sorted(n for n, files in config.directions.files.items()
                                       if not files.get("validpref")))
    try:
        with exclusive(ctx):
            directions = Directions(ctx)
            if _run_directions(directions):
                finish(directions, directions.dictionary)
    except PhaseDone as done:
        log.info("phase %s done: %s", phase, done)
    for direction in directions.contexts.values():
        summary.ran += direction.summary.ran
        summary.skipped += direction.summary.skipped
    return summary


def _run_directions(directions: Directions) -> bool:
    """Every direction's clean stages, the shared tokenizer and dictionary, every direction's encode and
    binarize stages; False when a ``--phase`` run ended at a phase boundary (each direction's tasks of the
    next phase are planned)."""
    ctx = directions.ctx
    planned = False
    for name, direction in directions.contexts.items():
        try:
            planned |= not run_stages(direction, clean_stages(direction.config))
        except TokenmillError as error:  # a missing file, a bad line: say which direction it is
            raise type(error)(f"direction {name}: {error}") from None
    if planned:
        return False
    SharedTokenizerStage(directions).execute(ctx)
    dictionary_stage = SharedDictionaryStage(directions)
    dictionary_stage.execute(ctx)
    directions.dictionary = dictionary_stage.dictionary
    crash_point("multilingual:before-encode")
    if ctx.phase not in (None, PHASES[-1]):  # the tokenizer phase ends with every direction's encode tasks planned
        for name in directions.contexts:
            encode_direction(directions, name, dictionary_stage.dictionary, plan=True)
        return False
    trained_on = set(directions.previous_info("tokenizer").get("trained_on") or directions.contexts)
    for name, direction in directions.contexts.items():
        encode_direction(directions, name, dictionary_stage.dictionary)
        if name not in trained_on:
            _warn_unknown(name, direction)
    return True


def encode_direction(directions: Directions, name: str, dictionary: Dictionary, *, plan: bool = False) -> None:
    """A direction's encode stages (with piece filters, ``pieces.{split}`` too) and binarize stages, train cut
    into ``num_shards`` shards of equal pair count (counted after the piece filters). With ``plan``: only
    the encode stages up to the ``--phase`` run's boundary (the train split's tasks planned)."""
    direction = directions.contexts[name]
    kept = directions.kept_train_pairs(name)
    if kept == 0:
        raise TokenmillError(
            f"direction {name}: no training pairs left after cleaning "
            f"({', '.join(direction.config.inputs.trainpref)}); check its files and the filters"
        )
    splits, langs = list(direction.config.split_prefixes()), direction.config.langs
    direction.dictionaries = dict.fromkeys(langs, dictionary)
    if plan:
        run_stages(direction, encode_stages(direction.config))
        return
    for stage in encode_stages(direction.config):
        stage.execute(direction)
    kept = direction.summary.splits["train"].get("clean", {}).get("pieces", {}).get("kept", kept)
    if kept == 0:
        raise TokenmillError(f"direction {name}: the piece filters (--filter-max-tokens, --filter-min-tokens, "
                             "--filter-max-ratio) dropped every training pair; loosen them")
    shard_size = math.ceil(kept / directions.ctx.config.directions.num_shards)
    direction.config = replace(direction.config, output=replace(direction.config.output, shard_size=shard_size))
    for stage in [*(BinarizeStage(s, lang) for s in splits for lang in langs),
                  *provenance_stages(direction.config)]:
        stage.execute(direction)


def _warn_unknown(name: str, direction: RunContext) -> None:
    """A direction added after the model was trained: warn (in the log, the printed summary and the
    manifest; the direction's summary shares the run's warnings) when the model does not cover it."""
    for lang, row in direction.summary.splits["train"].get("langs", {}).items():
        if row["unk_percent"] > 0.5:
            direction.summary.warn(
                f"direction {name}: {row['unk_percent']:.2f}% of {lang} tokens are <unk>: spm.model was trained "
                "before this direction was added and does not cover its characters; re-run with --retrain-tokenizer"
            )


def finish(directions: Directions, dictionary: Dictionary) -> None:
    """The many-direction run's publish step: dictionary copies in every shard, log, manifest."""
    ctx, summary = directions.ctx, directions.ctx.summary
    assert isinstance(summary, MultilingualSummary)
    for name, direction in directions.contexts.items():  # the manifest's task table: each direction's, by name
        ctx.task_table.update({f"{name}.{stage}": rows for stage, rows in direction.task_table.items()})
        ctx.merge_seconds.update({f"{name}.{stage}": s for stage, s in direction.merge_seconds.items()})
    prune_staging(ctx.out, ctx.produced)
    dict_files = [ctx.out / SHARED_DICT, *(ctx.out / dict_name(lang) for lang in directions.languages)]
    shards = copy_into_shards(ctx, dict_files)
    tokenizer_info = directions.previous_info("tokenizer")
    counts = directions.train_lines(sorted(directions.contexts))
    summary.directions = {name: d.summary for name, d in directions.contexts.items()}
    summary.languages = {
        lang: {
            "token": directions.lang_token(lang),
            "id": dictionary.index(directions.lang_token(lang)),
            "train_lines": counts.get(lang, 0),
            "spm_sample_lines": tokenizer_info.get("sample", {}).get(lang, 0),
        }
        for lang in directions.languages
    }
    summary.vocab = {
        "dictionary": SHARED_DICT,
        "size": len(dictionary),
        "special": dictionary.special_ids,
        "lang_tokens": {lang: row["id"] for lang, row in summary.languages.items()},
        "lang_token_format": ctx.config.directions.lang_token_format,
        "spm_models": [directions.spm_path.name],
        "tokenizer_trained_on": tokenizer_info.get("trained_on", []),
        "tokenizer": "sentencepiece",
    }
    write_log(ctx, f"tokenmill prepare: {len(directions.contexts)} directions -> {ctx.root}")
    publish_run(ctx, {**summary.to_dict(), "shards": [p.name for p in shards]})


def temperature_quotas(lines: dict[str, int], budget: int, temperature: float) -> dict[str, int]:
    """Lines of each language in a tokenizer sample of at most ``budget`` lines.

    Shares follow p_l ∝ n_l^(1/T) (the training mix's temperature rule); a language that would
    get more than it has gives all of its lines and the rest of the budget is shared among the
    others by the same rule (so the sample is as large as the budget allows).
    """
    names = sorted(name for name, n in lines.items() if n > 0)
    quotas = dict.fromkeys(lines, 0)
    if not names:
        return quotas
    sizes = np.array([lines[name] for name in names], dtype=np.int64)
    if int(sizes.sum()) <= budget:
        return {**quotas, **{name: int(n) for name, n in zip(names, sizes, strict=True)}}
    probabilities = temperature_probabilities(sizes, temperature)
    open_ = np.ones(len(names), dtype=bool)
    take = np.zeros(len(names), dtype=np.int64)
    left = budget
    while open_.any() and left > 0:
        share = probabilities * open_ / probabilities[open_].sum() * left
        full = open_ & (share >= sizes - take)
        if full.any():  # these languages give everything; share the rest again
            left -= int((sizes - take)[full].sum())
            take[full] = sizes[full]
            open_ &= ~full
            continue
        take[open_] += np.floor(share[open_]).astype(np.int64)
        break
    return {**quotas, **{name: int(t) for name, t in zip(names, take, strict=True)}}
