"""Stage ``tokenizer``: train the tokenizer on a seeded sample of cleaned train lines, or copy the given model.

The sample is a function of the seed and line numbers (:mod:`~tokenmill.prepare.line_sample`): with train's
clean parts, ``sample.train.{langs}`` tasks (one per part) keep each part's candidates and the coordinator
reads the ``--input-sentence-size`` smallest of all (:mod:`~tokenmill.prepare.sample_tasks`): the lines one
pass over the whole text keeps. A backend that samples by bytes (T2T) reads the parts through their masks.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from tokenmill.errors import ConfigError
from tokenmill.prepare.line_sample import SmallestKeys
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.summary import jsonable
from tokenmill.prepare.run.tasking import fresh_plan, run_tasks, task_record
from tokenmill.prepare.sample_tasks import merged_sample, part_candidates
from tokenmill.prepare.stages.base import Outputs, Stage, TaskedStage
from tokenmill.prepare.stages.clean import clean_parts
from tokenmill.prepare.stages.cleaned import cleaned_chunks, input_files
from tokenmill.prepare.state import file_identity, fingerprint
from tokenmill.prepare.tokenizing import (
    backend_name,
    given_model,
    load_settings,
    samples_by_bytes,
    train_settings,
    warns_small_vocabulary,
)
from tokenmill.vocab.sentencepiece import SentencePieceOptions
from tokenmill.vocab.t2t_backend import t2t_sample, t2t_sample_streams
from tokenmill.vocab.tokenizer import Tokenizer, get_backend, load_tokenizer, stable_name, train_tokenizer

log = logging.getLogger("tokenmill.prepare")

SAMPLE_RULE = "smallest-keys"
"""The training sample's rule (:mod:`~tokenmill.prepare.line_sample`), part of the tokenizer stage's key;
earlier versions drew a sequential reservoir sample (no rule in their key)."""
SAMPLE_STAGE = "sample.train"
"""The tokenizer's sample from the clean parts: stage ``sample.train.{langs}`` (one per model trained)."""
SAMPLE = "sample"


def model_path(ctx: RunContext, lang: str) -> Path:
    """The staged model file of ``lang``'s tokenizer (one shared file with a joint model or many directions)."""
    if ctx.shared is not None:
        return ctx.shared.model
    backend = get_backend(backend_name(ctx.config))
    return ctx.out / stable_name(backend.filename, None if ctx.config.tokenizer.joint_spm else lang)


def tokenizer_for(ctx: RunContext, lang: str) -> Tokenizer:
    """``lang``'s tokenizer, loaded once from the staged model."""
    if lang not in ctx.tokenizers:
        ctx.tokenizers[lang] = load_tokenizer(backend_name(ctx.config), model_path(ctx, lang),
                                              load_settings(ctx.config))
    return ctx.tokenizers[lang]


def warn_small_vocabulary(ctx: RunContext, info: dict[str, Any]) -> None:
    """SentencePiece stops short of --vocab-size when the text has too few distinct pieces: say so."""
    for model, pieces in (info.get("pieces") or {}).items():
        if pieces < ctx.config.tokenizer.vocab_size:
            ctx.summary.warn(
                f"{model} has {pieces} pieces, not the {ctx.config.tokenizer.vocab_size} asked for with --vocab-size: "
                "the training text has too few distinct pieces (a smaller --vocab-size gives the same model)"
            )


def trained_sentencepiece(ctx: RunContext, lines: list[str], model: Path, options: SentencePieceOptions) -> list[Path]:
    """Train one SentencePiece model (showing the elapsed time: it reports no progress) -> its files."""
    with ctx.elapsed(f"training {model.name} on {len(lines):,} lines"):
        tokenizer = train_tokenizer("sentencepiece", lines, options, model)
    return [path for path, _ in tokenizer.model_files()]  # type: ignore[attr-defined]


def _tag(name: str, model: Path) -> str | None:
    return None if model.name == get_backend(name).filename else model.name.split(".")[1]


class TokenizerStage(Stage):
    """``tokenizer`` (see the module's docstring); not in the stage list of whitespace-tokenized runs."""

    name = "tokenizer"

    def models(self, ctx: RunContext) -> list[Path]:
        return sorted({model_path(ctx, lang) for lang in ctx.config.langs})

    def key(self, ctx: RunContext) -> str:
        cfg = ctx.config
        name = backend_name(cfg)
        if cfg.megatron.vocab_file and cfg.megatron.merge_file:  # Megatron's GPT2BPETokenizer: vocab.json + merges.txt
            megatron = cfg.megatron
            return fingerprint("tokenizer-gpt2", file_identity(megatron.vocab_file), file_identity(megatron.merge_file))
        given = given_model(cfg)
        if given:
            return fingerprint("tokenizer", name, file_identity(given), load_settings(cfg),
                               [str(m) for m in self.models(ctx)])
        return self.train_key(ctx, name, train_settings(cfg))

    @staticmethod
    def train_key(ctx: RunContext, name: str, settings: Any) -> str:
        """The key of a trained tokenizer: the cleaned text, the settings and the sample (its size, seed and
        rule: :data:`SAMPLE_RULE`, so a model an earlier version trained on its reservoir sample is trained
        again rather than kept, and a folder's output does not depend on the version that began it)."""
        cfg = ctx.config
        sample_key = ((cfg.tokenizer.t2t.file_byte_budget,) if samples_by_bytes(cfg)
                      else (cfg.tokenizer.input_sentence_size, cfg.run.seed, SAMPLE_RULE))
        return fingerprint("tokenizer", name, ctx.keys["clean.train"], jsonable(settings), cfg.tokenizer.joint_spm,
                           sample_key)

    def run(self, ctx: RunContext) -> Outputs:
        cfg = ctx.config
        name = backend_name(cfg)
        if cfg.megatron.vocab_file and cfg.megatron.merge_file:
            model = self.models(ctx)[0]
            get_backend("hf").from_gpt2_files(cfg.megatron.vocab_file, cfg.megatron.merge_file, model)  # type: ignore[attr-defined]
            return [model], {"trained": False, "source": [cfg.megatron.vocab_file, cfg.megatron.merge_file]}
        given = given_model(cfg)
        if given:
            return self._copy(ctx, name, given)
        return self._train(ctx, name, train_settings(cfg))

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        if info.get("trained") and warns_small_vocabulary(ctx.config):
            warn_small_vocabulary(ctx, info)
        ctx.tokenizers.clear()

    def _copy(self, ctx: RunContext, name: str, given: str) -> Outputs:
        tokenizer = load_tokenizer(name, given, load_settings(ctx.config))
        written: list[Path] = []
        for model in self.models(ctx):
            written += tokenizer.save(ctx.out, _tag(name, model))
        return written, {"trained": False, "source": given, "vocab_size": tokenizer.vocab_size}

    def _train(self, ctx: RunContext, name: str, settings: Any) -> Outputs:
        cfg = ctx.config
        groups = {model_path(ctx, lang): (cfg.langs if cfg.tokenizer.joint_spm else [lang]) for lang in cfg.langs}
        written: list[Path] = []
        sizes = {}
        for model, langs in groups.items():
            sample = training_sample(ctx, langs)
            if not sample:
                raise empty_training_text(ctx, name)
            with ctx.elapsed(f"training {model.name} on {len(sample):,} lines"):  # no progress of its own
                made = train_tokenizer(name, sample, settings, model)
            written += [path for path, _ in made.model_files()]  # type: ignore[attr-defined]  # SentencePiece: 2
            trained = load_tokenizer(name, model, load_settings(cfg))
            written += [path for path in trained.save(ctx.out, _tag(name, model)) if path not in written]
            sizes[model.name] = trained.vocab_size
        sampled = {m.name: langs for m, langs in groups.items()}
        return written, {"trained": True, "sampled_from": sampled, "pieces": sizes}


def empty_training_text(ctx: RunContext, backend: str) -> ConfigError:
    """No line to train ``backend`` on: name the train files, and what cleaning dropped if they held any."""
    files, tgt_files = input_files(ctx, "train")
    named = ", ".join([*files, *(tgt_files or [])])
    steps = ctx.summary.splits.get("train", {}).get("clean", {})
    read = steps.get("read", {}).get("read", 0)
    if not read:
        return ConfigError(f"no training lines for the {backend} tokenizer: the train files hold no text ({named}); "
                           "check --trainpref (or --input) and the files")
    dropped = [f"{step} {key} {value}" for step, counts in steps.items() for key, value in counts.items()
               if value and (key.startswith("dropped") or key in ("duplicates", "leaked"))]
    why = ", ".join(dropped) or "see the counts above"
    return ConfigError(f"no training lines for the {backend} tokenizer: cleaning dropped all {read} read from "
                       f"{named} ({why}); loosen the filters or check the files")


def training_sample(ctx: RunContext, langs: list[str]) -> list[str]:
    """The lines a tokenizer learns from: a byte-budget sample of each cleaned file (T2T), else the
    --input-sentence-size cleaned lines whose line numbers (over ``langs``' files one after another) have
    the smallest hashes seeded by --seed: the same lines however the cleaned text is cut into parts."""
    cfg = ctx.config
    parts = ctx.parts
    if samples_by_bytes(cfg):
        if parts is None:
            return t2t_sample([ctx.folder.clean_path("train", lang) for lang in langs],
                              cfg.tokenizer.t2t.file_byte_budget)
        streams = [(f"{lang} (clean parts)", parts.raw_size(lang), parts.raw_lines(lang)) for lang in langs]
        return t2t_sample_streams(streams, cfg.tokenizer.t2t.file_byte_budget)
    if parts is not None:  # candidates per part in tasks, the smallest keys merged here
        merged = SampleStage.from_parts(ctx, langs, cfg.tokenizer.input_sentence_size, cfg.run.seed)
        if merged is not None:
            return merged
        log.warning("the sample tasks found fewer lines under their key limit than the sample holds; drawing "
                    "it in one pass over the clean parts (the same lines)")
    sample = SmallestKeys(cfg.tokenizer.input_sentence_size, cfg.run.seed)
    for lang in langs:
        for lines in cleaned_chunks(ctx, "train", lang):
            sample.add(lines)
    log.info("sampled %d of %d lines", min(sample.seen, sample.capacity), sample.seen)
    return sample.sample()


class SampleStage(TaskedStage):
    """``sample.train.{langs}``: task i keeps clean part i's candidates for the tokenizer's sample."""

    def __init__(self, name: str) -> None:
        self.name = name

    @staticmethod
    def from_parts(ctx: RunContext, langs: list[str], capacity: int, seed: int) -> list[str] | None:
        """The tokenizer's sample of ``langs`` (one model) from the clean parts: one task per part writes its
        candidates, the coordinator reads the ``capacity`` with the smallest keys; None when the parts' key
        limit left too few (the caller then draws it in one pass)."""
        parts = ctx.parts
        assert parts is not None
        stage = f"{SAMPLE_STAGE}.{'+'.join(langs)}"
        tasks = ctx.folder.task_set(stage, fingerprint(ctx.keys["clean.train"], langs, capacity, seed))
        if fresh_plan(ctx, tasks):
            kept = parts.kept_lines()
            bases = [0, *(sum(kept[: i + 1]) for i in range(len(kept) - 1))]
            tasks.write_plan(len(kept), langs=langs, bases=bases, kept=kept, total=int(sum(kept)),
                             capacity=capacity, seed=seed)
        run_tasks(ctx, tasks, in_phase=True)
        started = time.perf_counter()
        population = len(langs) * int(tasks.plan()["total"])
        sample = merged_sample([tasks.folder(i) for i in range(tasks.count)], SAMPLE, capacity, population)
        ctx.merge_seconds[stage] = round(time.perf_counter() - started, 3)
        tasks.remove()  # the sample is in memory now; a run stopped while training draws it again
        return sample

    def run_task(self, ctx: RunContext, index: int, workers: int) -> dict[str, Any]:
        tasks = ctx.folder.planned_tasks(self.name)
        details = tasks.plan()
        parts = clean_parts(ctx, int(details["tasks"]))

        def body(folder: Path, attempt: int) -> dict[str, Any]:
            started = time.perf_counter()
            found = part_candidates(parts, index, details["langs"], int(details["bases"][index]),
                                    int(details["total"]), int(details["capacity"]), int(details["seed"]), folder,
                                    SAMPLE)
            return task_record(started, int(details["kept"][index]) * len(details["langs"]), attempt,
                               candidates=found)

        return tasks.run_once(index, body)
