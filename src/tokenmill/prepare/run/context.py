"""The run context: what every stage of one prepare run works on.

The settings (validated once, never changed during the run), the :class:`~.folder.WorkFolder` that owns
every path, the stage records (:class:`~tokenmill.prepare.state.StageStore`), the summary, progress, and the
little the stages hand each other at run time (the keys of the stages met so far, train's clean and
encoded parts when those stages ran as tasks, what the staged outputs are). A task process builds one
(``phase`` ``task``) and runs one stage's task with it; a direction of a many-direction run has its own,
sharing the outputs' bookkeeping and the vocabulary with the run's.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from tokenmill.prepare.clean_parts import CleanParts
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.engines import EnginePart, TaskFunction, engine_part
from tokenmill.prepare.heap import release_heap
from tokenmill.prepare.object_storage import StagedInputs, work_folder
from tokenmill.prepare.run.folder import WorkFolder
from tokenmill.prepare.run.summary import PrepareSummary
from tokenmill.prepare.state import StageStore
from tokenmill.store.remote import is_url
from tokenmill.text import ReadOptions
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.tokenizer import Tokenizer

log = logging.getLogger("tokenmill.prepare")
StageRun = Callable[[], tuple[list[Path], dict[str, Any]]]
"""A stage's work: its outputs (paths under the run's folder) and its info (kept in its record)."""


@dataclass
class SharedVocab:
    """What a direction of a many-direction run takes from the run: the one model, the one dictionary's
    lookup (tokenizer id -> dictionary id) and the fingerprint that stands for both in binarize's key."""

    model: Path
    lookup: np.ndarray
    fingerprint: str


class RunContext:
    """One prepare run's settings, folder, records, summary and hand-overs (see the module's docstring)."""

    direct_input = True
    """Whether the clean stage may hand the input itself to the encode stage (False: always through a
    cleaned copy, as tests compare)."""

    def __init__(
        self, config: PrepareConfig, *, force: bool = False, progress: bool | None = None, phase: str | None = None,
        execute: TaskFunction | None = None, direction: str | None = None, root: Path | None = None,
    ) -> None:
        self.config = config = config.validate()  # the checked settings (a new object)
        self.url = config.inputs.destdir if is_url(config.inputs.destdir) else None
        """--destdir as a URL: the run works in a local folder and publishes there at the end."""
        if root is None:
            root = work_folder(config.inputs.destdir) if self.url else Path(config.inputs.destdir)
        self.folder = WorkFolder(root, direction)
        self.stages = StageStore(root, force=force)
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.phase = phase
        """The step of a run cut for a scheduler (:data:`~tokenmill.prepare.stages.PHASES`), or None."""
        self.execute = execute
        """The function an engine runs a task with (the runner's), None where tasks are not run from here."""
        self.engine: EnginePart = engine_part(config.engine.name)
        self.summary = PrepareSummary(root)
        self.read_options = ReadOptions(
            on_invalid_utf8=config.inputs.on_invalid_utf8,  # type: ignore[arg-type]
            on_malformed=config.inputs.on_malformed,  # type: ignore[arg-type]
            chunk_lines=config.run.chunk_lines,
        )
        self.inputs = StagedInputs(self.folder.inputs, config.engine.storage_options)
        self.keys: dict[str, str] = {}
        """Stage -> its key, for the stages met so far (later stages' keys include them)."""
        self.produced: set[Path] = set()
        """Staged outputs of the stages of this run (ran or up to date): what the directory will hold."""
        self.meanings: dict[str, dict[str, Any]] = {}
        """Staged store prefix -> what its ids mean (vocabulary file, size, end-of-item id)."""
        self.tokenizers: dict[str, Tokenizer] = {}
        self.parts: CleanParts | None = None
        """Train's cleaned text as the clean tasks' parts, once a tasked ``clean.train`` is recorded."""
        self.id_parts: dict[str, list[Path]] = {}
        """lang -> the folders of train's encoded parts, when its encode stage was cut into tasks (then no joined
        id store is written: the dictionary and binarize work from the parts)."""
        self.dictionaries: dict[str, Dictionary] = {}
        """lang -> its fairseq dictionary, once the dictionary stage is met (none when stores hold the
        tokenizer's own ids)."""
        self.task_table: dict[str, list[dict[str, Any]]] = {}
        """stage -> one row per task (lines, seconds, attempts, host) for the summary and the manifest."""
        self.merge_seconds: dict[str, float] = {}
        """stage -> seconds its coordinator spent joining the tasks' parts (dedup included)."""
        self.shared: SharedVocab | None = None
        """A direction's share of a many-direction run's vocabulary (None: a run of its own)."""

    @property
    def root(self) -> Path:
        return self.folder.root

    @property
    def work(self) -> Path:
        return self.folder.work

    @property
    def out(self) -> Path:
        return self.folder.out

    @property
    def prefix(self) -> str:
        """What stage records are named with in front (``{direction}.`` for a direction)."""
        return f"{self.folder.direction}." if self.folder.direction else ""

    # ---------------------------------------------------------------- stages
    def record(self, name: str, key: str, run: StageRun) -> dict[str, Any]:
        """Run stage ``name`` unless its record says it is done with ``key`` (and its outputs are intact);
        either way its outputs count as this run's and its info is returned."""
        full = self.prefix + name
        record = self.stages.done(full, key)
        if record is None:
            log.info("stage %s: running", full)
            started = time.perf_counter()
            outputs, info = run()
            release_heap()  # the stage's freed temporaries leave the coordinator's resident memory
            crash_point(f"{full}:before-record")
            record = self.stages.finish(full, key, outputs, info, seconds=time.perf_counter() - started)
            crash_point(full)
            self.summary.ran.append(full)
        else:
            log.info("stage %s: up to date, skipped", full)
            self.summary.skipped.append(full)
        self.summary.stage_seconds[full] = record.get("seconds", 0.0)
        self.produced.update(self.root / relative for relative in record["outputs"])
        self.keys[name] = key
        return record["info"]

    def done(self, name: str, key: str) -> bool:
        return self.stages.done(self.prefix + name, key) is not None

    def split_info(self, split: str) -> dict[str, Any]:
        """The summary's entry of ``split`` (made when first asked for)."""
        return self.summary.splits.setdefault(split, {})

    # ---------------------------------------------------------------- outputs
    def stage_file(self, path: Path) -> Path:
        """Count a file written outside the stages (log, dictionary copies) as this run's output."""
        self.produced.add(path)
        return path

    def register_store(self, prefix: Path, meaning: dict[str, Any]) -> None:
        """Record what the ids of a staged store mean (checked by ``tokenmill verify``)."""
        self.meanings[prefix.relative_to(self.out).as_posix()] = meaning

    # ---------------------------------------------------------------- progress
    def bar(self, total: int | None, desc: str) -> tqdm:
        return tqdm(total=total, desc=desc, unit=" lines", unit_scale=True, disable=not self.progress, leave=False)

    @contextmanager
    def elapsed(self, desc: str) -> Iterator[None]:
        """A progress line counting seconds while a long call without its own progress runs."""
        bar = tqdm(desc=desc, unit="s", bar_format="{desc}: {elapsed}", disable=not self.progress, leave=False)
        done = threading.Event()

        def tick() -> None:
            while not done.wait(0.5):
                bar.refresh()

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            bar.close()
