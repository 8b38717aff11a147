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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from tokenmill._core.temperature import temperature_probabilities
from tokenmill.errors import TokenmillError
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.crash import crash_point as _crash_point
from tokenmill.prepare.pipeline import Pipeline, PrepareSummary
from tokenmill.prepare.publish import prune_staging
from tokenmill.prepare.state import STATE_DIR, file_identity, fingerprint
from tokenmill.prepare.tokenizing import piece_lookup
from tokenmill.store.format import token_dtype
from tokenmill.store.layout import SHARED_DICT, dict_name, dropped_path
from tokenmill.store.manifest import file_checksum
from tokenmill.text import open_source
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import Reservoir
from tokenmill.vocab.tokenizer import Tokenizer, load_tokenizer

log = logging.getLogger("tokenmill.prepare")


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


class DirectionPipeline(Pipeline):
    """The single-direction stages of one direction, writing into the shared data_bin.

    Stage records are named ``{direction}.{stage}``; cleaned text and ids live under
    ``.work/*/{direction}/``; the tokenizer and dictionary are the shared ones.
    """

    can_use_tasks = False  # a direction's train is cleaned and encoded in one piece (tasks: single runs)

    def __init__(self, parent: MultilingualPipeline, name: str) -> None:
        super().__init__(parent.config.direction_config(name), force=parent.stages.force, progress=parent.progress)
        self.direction = name
        self.parent = parent
        self.produced = parent.produced  # one run: the parent publishes every direction's outputs
        self.meanings = parent.meanings
        self.summary.stage_seconds = parent.summary.stage_seconds
        self.summary.warnings = parent.summary.warnings

    def _stage(self, name: str, key: str, run: Callable[[], tuple[list[Path], dict[str, Any]]]) -> dict[str, Any]:
        info = super()._stage(f"{self.direction}.{name}", key, run)
        self.keys[name] = key
        return info

    def clean_path(self, split: str, lang: str) -> Path:
        return self.work / "clean" / self.direction / f"{split}.{lang}"

    def ids_prefix(self, split: str, lang: str) -> Path:
        return self.work / "ids" / self.direction / f"{split}.{lang}"

    def dropped_path(self, split: str) -> Path:
        return dropped_path(self.root, split, self.direction)

    def model_path(self, lang: str) -> Path:
        return self.parent.spm_path

    def vocab_fingerprint(self, lang: str, vocab_path: Path) -> str:
        return self.parent.lookup_fingerprint

    def piece_lookup(self, tokenizer: Tokenizer, dictionary: Dictionary) -> np.ndarray:
        return self.parent.lookup  # the same for every direction: built once

    def kept_train_pairs(self) -> int:
        """Training pairs left after cleaning (known once :meth:`clean` ran or was found up to date)."""
        return int(self.summary.splits["train"]["clean"]["kept"]["pairs"])


class MultilingualPipeline(Pipeline):
    """One prepare run over all directions of a config with ``directions``."""

    def __init__(self, config: PrepareConfig, *, force: bool = False, progress: bool | None = None) -> None:
        super().__init__(config, force=force, progress=progress)
        self.summary = MultilingualSummary(self.root)
        self.spm_path = self.out / "spm.model"
        self.lookup_fingerprint = ""
        self.lookup = np.empty(0, dtype=np.int64)
        self.pipelines: dict[str, DirectionPipeline] = {}

    @property
    def languages(self) -> list[str]:
        return sorted({lang for name in self.config.directions for lang in name.split("-")})

    def lang_token(self, lang: str) -> str:
        return self.config.lang_token_format.replace("{lang}", lang)

    # ---------------------------------------------------------------- tokenizer
    def _train_lines(self, names: list[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in names:
            kept = self.pipelines[name].kept_train_pairs()
            for lang in name.split("-"):
                counts[lang] = counts.get(lang, 0) + kept
        return counts

    def shared_tokenizer(self) -> None:
        cfg = self.config
        if cfg.spm_model:
            key = fingerprint("tokenizer", file_identity(cfg.spm_model))

            def copy() -> tuple[list[Path], dict[str, Any]]:
                written = load_tokenizer("sentencepiece", cfg.spm_model).save(self.out)  # type: ignore[arg-type]
                return written, {"trained": False, "source": cfg.spm_model, "trained_on": []}

            self._stage("tokenizer", key, copy)
            return
        names = sorted(self.pipelines)
        options = self.spm_options()

        def key_of(basis: list[str]) -> str:
            upstream = {name: self.pipelines[name].keys["clean.train"] for name in basis}
            return fingerprint("tokenizer-multi", upstream, options.as_dict(), cfg.spm_temperature)

        basis = names
        previous = sorted(self._previous_info("tokenizer").get("trained_on") or [])
        if (not cfg.retrain_tokenizer and previous and set(previous) < set(names)
                and self.stages.done("tokenizer", key_of(previous)) is not None):
            basis = previous  # the model made for these directions is intact: new directions are encoded with it
            log.info("keeping spm.model trained on %d directions; new: %s (--retrain-tokenizer to include them)",
                     len(basis), ", ".join(sorted(set(names) - set(basis))))
        info = self._stage("tokenizer", key_of(basis), lambda: self._train_shared(basis))
        self.warn_small_vocabulary(info)

    def _previous_info(self, stage: str) -> dict[str, Any]:
        try:
            record = json.loads((self.root / STATE_DIR / f"{stage}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record.get("info", {}) if isinstance(record, dict) else {}

    def _train_shared(self, names: list[str]) -> tuple[list[Path], dict[str, Any]]:
        cfg = self.config
        options = self.spm_options()
        counts = self._train_lines(names)
        quotas = temperature_quotas(counts, options.input_sentence_size, cfg.spm_temperature)
        sample: list[str] = []
        for lang in sorted(quotas):
            if quotas[lang] == 0:
                continue
            seed = int(xxhash.xxh64_intdigest(f"{cfg.seed}:{lang}".encode()) % (2**32))
            reservoir = Reservoir(quotas[lang], seed)
            for name in names:
                if lang in name.split("-"):
                    for chunk in open_source([str(self.pipelines[name].clean_path("train", lang))]).chunks():
                        reservoir.add(chunk.src)
            sample += reservoir.sample()
        log.info("training spm.model on %d lines: %s", len(sample),
                 ", ".join(f"{lang} {quotas[lang]}/{counts[lang]}" for lang in sorted(quotas)))
        written = self.trained_sentencepiece(sample, self.spm_path, options)
        pieces = {self.spm_path.name: load_tokenizer("sentencepiece", self.spm_path).vocab_size}
        return written, {"trained": True, "trained_on": names, "sample": quotas, "lines": counts, "pieces": pieces}

    # ---------------------------------------------------------------- dictionary
    def shared_dictionary(self) -> Dictionary:
        cfg = self.config
        langs = self.languages
        paths = [self.out / SHARED_DICT, *(self.out / dict_name(lang) for lang in langs)]
        key = fingerprint("dictionary-multi", file_checksum(self.spm_path), [self.lang_token(x) for x in langs],
                          cfg.padding_factor, cfg.user_defined_symbols)
        self._stage("dictionary", key, lambda: self._build_dictionary(paths))
        dictionary = Dictionary.load(self.out / SHARED_DICT)
        self.lookup = piece_lookup(load_tokenizer("sentencepiece", self.spm_path), dictionary)
        self.lookup_fingerprint = fingerprint(
            xxhash.xxh3_128_hexdigest(self.lookup.tobytes()), str(token_dtype(len(dictionary)))
        )
        return dictionary

    def _build_dictionary(self, paths: list[Path]) -> tuple[list[Path], dict[str, Any]]:
        """SentencePiece's pieces, then the language tokens (earlier ones keep their ids), then padding."""
        cfg = self.config
        tokenizer = load_tokenizer("sentencepiece", self.spm_path)
        dictionary = Dictionary()
        for i in range(tokenizer.vocab_size):
            if tokenizer.is_text_piece(i):  # type: ignore[attr-defined]
                dictionary.add_symbol(tokenizer.id_to_token(i), 1)
        for symbol in cfg.user_defined_symbols:
            dictionary.add_symbol(symbol, 1)
        tokens = [self.lang_token(lang) for lang in self.languages]
        previous = self.out / SHARED_DICT
        order: list[str] = []
        if previous.exists():
            old = Dictionary.load(previous)
            base = len(dictionary)
            if old.symbols[:base] == dictionary.symbols:
                order = [s for s in old.symbols[base:] if not s.startswith("madeupword")]
        order += [t for t in tokens if t not in order]
        for token in order:
            dictionary.add_symbol(token, 1)
        dictionary.pad_to_multiple(cfg.padding_factor)
        for path in paths:
            dictionary.save(path)
        return paths, {"size": len(dictionary), "lang_tokens": {t: dictionary.index(t) for t in tokens}}

    # ---------------------------------------------------------------- run
    def _shard_size(self, pipeline: DirectionPipeline) -> int:
        kept = pipeline.kept_train_pairs()
        if kept == 0:
            raise TokenmillError(
                f"direction {pipeline.direction}: no training pairs left after cleaning "
                f"({', '.join(pipeline.config.trainpref)}); check its files and the filters"
            )
        return math.ceil(kept / self.config.num_shards)

    def run(self) -> MultilingualSummary:
        self.check_inputs()
        self.warn_no_validation(sorted(n for n, files in self.config.directions.items() if not files.get("validpref")))
        with self.exclusive():
            for name in sorted(self.config.directions):
                self.pipelines[name] = DirectionPipeline(self, name)
            for name, pipeline in self.pipelines.items():
                try:
                    pipeline.clean()
                except TokenmillError as error:  # a missing file, a bad line: say which direction it is
                    raise type(error)(f"direction {name}: {error}") from None
            self.shared_tokenizer()
            dictionary = self.shared_dictionary()
            _crash_point("multilingual:before-encode")
            trained_on = set(self._previous_info("tokenizer").get("trained_on") or self.pipelines)
            for name, pipeline in self.pipelines.items():
                pipeline.config.shard_size = self._shard_size(pipeline)
                pipeline.encode()
                pipeline.binarize({lang: dictionary for lang in pipeline.config.langs})
                if name not in trained_on:
                    self._warn_unknown(pipeline)
            self.finish_multilingual(dictionary)
        for pipeline in self.pipelines.values():
            self.summary.ran += pipeline.summary.ran
            self.summary.skipped += pipeline.summary.skipped
        return self.summary

    def _warn_unknown(self, pipeline: DirectionPipeline) -> None:
        """A direction added after the model was trained: say so when the model does not cover it."""
        for lang, row in pipeline.summary.splits["train"].get("langs", {}).items():
            if row["unk_percent"] > 0.5:
                log.warning(
                    "direction %s: %.2f%% of %s tokens are <unk>: spm.model was trained before this direction was "
                    "added and does not cover its characters; re-run with --retrain-tokenizer",
                    pipeline.direction, row["unk_percent"], lang,
                )

    def finish_multilingual(self, dictionary: Dictionary) -> None:
        prune_staging(self.out, self.produced)
        dict_files = [self.out / SHARED_DICT, *(self.out / dict_name(lang) for lang in self.languages)]
        shards = self.copy_into_shards(dict_files)
        tokenizer_info = self._previous_info("tokenizer")
        counts = self._train_lines(sorted(self.pipelines))
        self.summary.directions = {name: p.summary for name, p in self.pipelines.items()}
        self.summary.languages = {
            lang: {
                "token": self.lang_token(lang),
                "id": dictionary.index(self.lang_token(lang)),
                "train_lines": counts.get(lang, 0),
                "spm_sample_lines": tokenizer_info.get("sample", {}).get(lang, 0),
            }
            for lang in self.languages
        }
        self.summary.vocab = {
            "dictionary": SHARED_DICT,
            "size": len(dictionary),
            "special": dictionary.special_ids,
            "lang_tokens": {lang: row["id"] for lang, row in self.summary.languages.items()},
            "lang_token_format": self.config.lang_token_format,
            "spm_models": [self.spm_path.name],
            "tokenizer_trained_on": tokenizer_info.get("trained_on", []),
            "tokenizer": "sentencepiece",
        }
        self.write_log(f"tokenmill prepare: {len(self.pipelines)} directions -> {self.root}")
        self.publish({**self.summary.to_dict(), "shards": [p.name for p in shards]})


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
