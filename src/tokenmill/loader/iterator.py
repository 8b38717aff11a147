"""An epoch iterator over one rank's batches whose state is a handful of integers.

The position is (epoch, step): the next batch is step ``step`` of ``epoch`` in that epoch's plan.
``state_dict()`` records it with the fingerprints of data and settings; ``load_state_dict()``
jumps straight there (the plan is mapped from the cache or recomputed — nothing is replayed) and
the stream continues with exactly the batches an uninterrupted run would have produced. A state
saved with other data, settings or world size is refused with a message naming the difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np

from tokenmill.batching import mixes
from tokenmill.batching.abilities import (
    ChangesMix,
    CountsSamples,
    Elastic,
    MadeForWorld,
    MixInData,
    NamesSettings,
    Scheduled,
)
from tokenmill.batching.collate import COLLATERS, CollateOptions
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.gpt_mix import gpt_planner
from tokenmill.batching.gpt_plan import GPTBatchConfig, GPTSource, collate_gpt
from tokenmill.batching.plan import Planner
from tokenmill.batching.select import AllKept
from tokenmill.batching.select import plan_sizes as plan_sizes  # re-exported
from tokenmill.cache import CacheLike, array_cache
from tokenmill.data.pairs import PairDataset
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.loader import blend_state, data_identity, ledger
from tokenmill.loader.state_shape import check_state_shape
from tokenmill.loader.step_bases import StepBases

STATE_FORMAT = "tokenmill.batches"
STATE_VERSION = 1
_MIX_HINT = " (pass allow_mix_change=True, --allow-mix-change, to resume under the new mix)"

Collate = Callable[[PairDataset, Any], Any]


class PlanLike(Protocol):
    """What the iterator needs of an epoch's plan: its length and each (step, rank)'s batch."""

    @property
    def num_steps(self) -> int: ...

    def indices(self, step: int, rank: int) -> Any: ...


class PlannerLike(Protocol):
    """What the iterator needs of a planner: the plan of any epoch, and an identity for resumes.

    :class:`~tokenmill.batching.plan.Planner` is the default; packed rows and sampled mixtures of
    several datasets bring their own (the batch a plan returns is whatever their collate takes).
    """

    @property
    def fingerprint(self) -> str: ...

    def plan(self, epoch: int) -> PlanLike: ...


class BatchIterator:
    """Collated batches of rank ``rank`` of ``world_size``, epoch after epoch, resumable exactly.

    ``collate``: ``"fairseq"`` (batch dicts), ``"opennmt"`` ((features, labels)), ``None`` (the
    sample ids of each batch), or a callable ``(dataset, ids) -> batch``. ``update_freq`` > 1
    yields lists of that many consecutive batches (the last of an epoch may be shorter).
    ``planner``: another planner (packed rows, a sampled mix of datasets) instead of the default
    one over ``dataset``'s lengths; its fingerprint is what a resumed state must match.
    ``infinite`` runs epoch after epoch; otherwise one ``for`` loop covers the rest of the current
    epoch and the next loop starts the next epoch. ``cache``: True for the default array cache
    (``$TOKENMILL_CACHE/arrays`` or ``~/.cache/tokenmill/arrays``), False for none, or a folder
    (:mod:`tokenmill.cache`).
    """

    def __init__(
        self,
        dataset: PairDataset,
        config: BatchConfig | GPTBatchConfig | None = None,
        *,
        rank: int = 0,
        world_size: int = 1,
        collate: str | Collate | None = "fairseq",
        collate_options: CollateOptions | None = None,
        update_freq: int = 1,
        infinite: bool = False,
        cache: CacheLike = True,
        epoch: int = 1,
        planner: PlannerLike | None = None,
    ) -> None:
        if world_size < 1 or not 0 <= rank < world_size:
            raise ConfigError(f"rank must be in [0, world_size); got rank={rank}, world_size={world_size}")
        if update_freq < 1:
            raise ConfigError(f"update_freq must be >= 1, got {update_freq}")
        if isinstance(collate, str) and collate not in COLLATERS:
            raise ConfigError(f"collate {collate!r} is unknown; choose {sorted(COLLATERS)}, None or a function")
        self.dataset = dataset
        self.config = config or BatchConfig()
        self.rank = rank
        self.world_size = world_size
        self.collate_name = collate
        self.collate_options = collate_options or CollateOptions(
            pad_to_multiple=getattr(self.config, "pad_to_multiple", 1)
        )
        self.update_freq = update_freq
        self.infinite = infinite
        self.cache = array_cache(cache)
        planned_for = planner.world_size if isinstance(planner, MadeForWorld) else world_size
        if planned_for != world_size:
            raise ConfigError(
                f"the planner was made for world_size={planned_for} but the iterator is for world_size={world_size}; "
                "make both with the same number of ranks"
            )
        self._made_planner = planner is None
        self.planner: PlannerLike = planner or Planner(
            AllKept.over(dataset), self.config, world_size=world_size, cache=self.cache
        )
        self.epoch = epoch
        self.step = 0
        self.consumed = 0
        self.segments: list[tuple[int, int]] = []
        """Earlier parts of epoch ``segments_epoch`` run at other world sizes: (world size, steps) each
        (elastic resume); that epoch follows the plan of what they left, for this world size."""
        self.segments_epoch = epoch
        self._totals: ledger.Totals | None = None
        """Ledger totals of the epochs before ``_totals.epoch`` (from a state; None: count from epoch 1)."""
        self._bases = StepBases(epoch, 0)
        """The global step each epoch begins at (for a mix that follows the step)."""

    # ---------------------------------------------------------------- plans and batches
    def plan(self, epoch: int | None = None) -> PlanLike:
        """The plan of ``epoch`` (default: the current one; after an elastic resume, the rest of it)."""
        epoch = self.epoch if epoch is None else epoch
        if isinstance(self.planner, Scheduled):
            return self.planner.plan_scheduled(epoch, self._segments_of(epoch), self._bases.at(epoch, self._steps_of))
        if self.segments and epoch == self.segments_epoch and isinstance(self.planner, Elastic):
            return self.planner.plan_after(epoch, self.segments)
        return self.planner.plan(epoch)

    def _steps_of(self, epoch: int) -> int:
        """Steps ``epoch`` runs in all (its earlier parts and this world size's rest)."""
        return sum(int(s[1]) for s in self._segments_of(epoch)) + self.plan(epoch).num_steps

    def num_steps(self, epoch: int | None = None) -> int:
        """Batches this rank runs in ``epoch``."""
        return self.plan(epoch).num_steps

    def __len__(self) -> int:
        """Items one pass over the current epoch yields (batches, or groups with update_freq)."""
        return -(-self.num_steps() // self.update_freq)

    def indices_at(self, epoch: int, step: int) -> Any:
        """Sample ids of this rank's batch at (epoch, step)."""
        return self.plan(epoch).indices(step, self.rank)

    def collate(self, indices: Any) -> Any:
        """Turn sample ids into a batch with this iterator's collate setting."""
        name = self.collate_name
        if name is None:  # the plan's own batch: sample ids, or a PackedBatch of rows
            return np.asarray(indices) if isinstance(indices, list | tuple | np.ndarray) else indices
        if isinstance(name, str):
            return COLLATERS[name](self.dataset, indices, self.collate_options)
        return name(self.dataset, indices)

    def batch_at(self, epoch: int, step: int) -> Any:
        """This rank's collated batch at (epoch, step): random access, no iteration state involved."""
        return self.collate(self.indices_at(epoch, step))

    # ---------------------------------------------------------------- position
    def seek(self, epoch: int, step: int) -> None:
        """Set the position; ``step`` equal to the epoch's length means the start of the next epoch."""
        steps = self.num_steps(epoch)
        if not 0 <= step <= steps:
            raise TokenmillError(f"step {step} is outside epoch {epoch}, which has {steps} steps on this rank")
        if step == steps:
            epoch, step = epoch + 1, 0
        self.epoch, self.step = epoch, step

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` from its first batch."""
        if isinstance(self.planner, Scheduled):
            self._bases.at(epoch, self._steps_of)  # while the epochs before still have their parts
        self.epoch, self.step, self.segments = epoch, 0, []

    def end_of_epoch(self) -> bool:
        """Whether the current epoch has no batch left."""
        return self.step >= self.num_steps()

    def positions(self, epoch: int, step: int, *, stride: int = 1, offset: int = 0) -> Iterator[tuple[int, int]]:
        """Positions of the stream from (epoch, step): every ``stride``-th one starting ``offset`` in.

        Not infinite: stops at the end of ``epoch``. DataLoader worker w of k reads
        ``positions(..., stride=k, offset=w)``; their round-robin merge is the whole stream.
        """
        first_epoch = epoch
        step += offset
        while True:
            steps = self.num_steps(epoch)
            while step >= steps:
                step -= steps
                epoch += 1
                if not self.infinite and epoch > first_epoch:
                    return
                steps = self.num_steps(epoch)
            yield epoch, step
            step += stride

    def __iter__(self) -> Iterator[Any]:
        while True:
            plan = self.plan()
            while self.step < plan.num_steps:
                if self.update_freq == 1:
                    batch = self.collate(plan.indices(self.step, self.rank))
                    self.step += 1
                    self.consumed += 1
                    yield batch
                else:
                    stop = min(self.step + self.update_freq, plan.num_steps)
                    group = [self.collate(plan.indices(t, self.rank)) for t in range(self.step, stop)]
                    self.consumed += stop - self.step
                    self.step = stop
                    yield group
            self.epoch, self.step = self.epoch + 1, 0
            if not self.infinite:
                return

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """The position plus what it is only valid for (JSON-able; a few hundred bytes).

        After the last batch of an epoch the position is the start of the next epoch. Once an epoch
        that ran in several parts is over, the totals of the consumption ledger up to the current
        epoch are recorded (its parts are no longer part of the position)."""
        epoch, step = self.epoch, self.step
        if step >= self.num_steps(epoch):
            epoch, step = epoch + 1, 0
        segments = self.segments if epoch == self.segments_epoch else []
        extra: dict[str, Any] = {}
        if isinstance(self.planner, CountsSamples):  # GPT: Megatron's global position, for the record
            extra["consumed_samples"] = int(self.planner.consumed_samples(epoch, segments, step))
        if ledger.supported(self.planner) and (
            (self.segments and self.segments_epoch < epoch)  # an epoch in parts is over
            or (isinstance(self.planner, Scheduled) and (self._totals or ledger.Totals()).epoch < epoch)
        ):  # (a schedule's epochs depend on the steps before: their totals travel with the state)
            self._totals = ledger.advance(self.planner, self._totals or ledger.Totals(), epoch, self._served)
        if isinstance(self.planner, Scheduled):
            extra["step_base"] = self._bases.at(epoch, self._steps_of)
        if self._totals is not None:
            extra["ledger"] = self._totals.to_dict(ledger.sources(self.planner))  # type: ignore[arg-type]
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "epoch": epoch,
            "step": step,
            "consumed": self.consumed,
            "world_size": self.world_size,
            "segments": mixes.stored(segments),
            "data": self.dataset.fingerprint(),
            "config": self.settings(),
            "fingerprint": self.planner.fingerprint,
            **data_identity.recorded(self.dataset),
            **extra,
        }

    def settings(self) -> dict[str, Any]:
        """Every setting the batches depend on, by name (the planner's cut and selection when it names
        them, else the iterator's config): a resume compares them field by field."""
        named = self.planner.plan_settings if isinstance(self.planner, NamesSettings) else None
        if named:
            return dict(named)
        return dict(getattr(self.config, "plan_identity", self.config.to_dict)())

    def load_state_dict(self, state: dict[str, Any], *, allow_mix_change: bool = False) -> None:
        """Resume at a saved position, refusing a state saved for other data or settings.

        A state saved at another world size resumes elastically: the rest of its epoch is planned
        again for this world size (each remaining sample once, equal steps on every rank) and the
        next epochs follow this world size's plan. With ``allow_mix_change`` a state saved under
        another mix (a sampled mix's weights, temperature, directions switched on or off; a Megatron
        blend's weights or members) resumes too: the rest of its epoch is this mix's draw less what
        was served (:mod:`tokenmill.batching.mixes`), and the change is recorded as a segment."""
        _check_format(state)
        state = blend_state.upgrade(state, self.planner)
        saved_world = int(state.get("world_size") or 0)
        saved_mix, changed_mix = self._check(state, saved_world, allow_mix_change)
        epoch, step = int(state["epoch"]), int(state["step"])
        segments: list[Any] = [tuple(x) for x in state.get("segments") or []]
        if changed_mix:
            segments = list(mixes.relative(segments, saved_mix, self.settings().get("selection")))
        if (saved_world != self.world_size or changed_mix) and (step or segments):
            segments, step = [*segments, (saved_world, step, saved_mix if changed_mix else None)], 0
        segments = [(w, n) if len(x) == 2 or x[2] is None else (w, n, x[2]) for x in segments for w, n in [x[:2]]]
        self._totals = self._saved_totals(state, epoch, saved_world, saved_mix if changed_mix else None)
        self._bases = StepBases(epoch, int(state.get("step_base", 0)))
        self.epoch, self.segments, self.segments_epoch = epoch, segments, epoch
        self.seek(epoch, step)
        self.consumed = int(state.get("consumed", 0))

    def _saved_totals(self, state: dict[str, Any], epoch: int, saved_world: int,
                      changed_from: dict[str, Any] | None) -> ledger.Totals | None:
        """The ledger totals of the epochs before ``epoch`` (those of a changed mix ran under the saved one)."""
        if not ledger.supported(self.planner):
            return None
        totals = None
        if state.get("ledger") is not None:
            totals = ledger.Totals.from_dict(state["ledger"], ledger.sources(self.planner),
                                             fixed=ledger.fixed_sources(self.planner))
        if changed_from is not None:  # epochs before this one ran under the saved mix: count them now
            before = self.planner.for_mix(changed_from).for_world(saved_world)  # type: ignore[attr-defined]
            totals = ledger.advance(self.planner, totals or ledger.Totals(), epoch,
                                    lambda e, step: ledger.served(before, e, [], step))
        return totals

    def _check(self, state: dict[str, Any], saved_world: int, allow_mix_change: bool) -> tuple[Any, bool]:
        """Refuse a state this iterator cannot resume, naming why; returns (the saved mix, whether it changed)."""
        if not allow_mix_change:
            data_identity.refuse_swapped_members(state, self.dataset)
        saved_config = self._saved_config(state)
        saved_flat, now = _flat(saved_config), _flat(self.settings())
        changed = [k for k in sorted(set(now) | set(saved_flat)) if saved_flat.get(k) != now.get(k)]
        can_change = isinstance(self.planner, ChangesMix) and all(k.startswith("selection.") for k in changed)
        changed_mix = bool(changed) and can_change and allow_mix_change
        saved_mix = saved_config.get("selection")
        problems = self._data_problems(state, saved_mix if changed_mix else None)
        if changed and not changed_mix:
            hint = _MIX_HINT if can_change else ""
            named = "; ".join(f"{k}: {saved_flat.get(k)!r} -> {now.get(k)!r}" for k in changed)
            problems.append(f"batching settings changed ({named}){hint}")
        if saved_world != self.world_size and not _elastic(self.planner):
            problems.append(
                f"world_size changed: {saved_world} -> {self.world_size} (this planner cannot re-plan an epoch)"
            )
        if not problems and state.get("fingerprint") != self._saved_planner(saved_world, changed_mix,
                                                                             saved_mix).fingerprint:
            problems.append("the plan fingerprint differs (a different tokenmill plan version?)")
        if problems:
            raise TokenmillError(
                "cannot resume: " + "; ".join(problems) + ". Resuming would silently change the batches; "
                "restore the original data/settings, or start the data iterator afresh (without its saved state)"
            )
        return saved_mix, changed_mix

    def _saved_planner(self, saved_world: int, changed_mix: bool, saved_mix: Any) -> Any:
        """The planner the state was saved by: this one at the saved world size (and mix, if it changed)."""
        planned = self.planner.for_mix(saved_mix) if changed_mix else self.planner  # type: ignore[attr-defined]
        if _elastic(self.planner) and saved_world >= 1:
            planned = planned.for_world(saved_world)  # type: ignore[attr-defined]
        return planned

    def _saved_config(self, state: dict[str, Any]) -> dict[str, Any]:
        """The settings a state records. A blend's state saved before blends recorded their mix has none:
        when its data are this blend's, it ran this mix."""
        config = dict(state.get("config") or {})
        if isinstance(self.planner, MixInData) and "selection" not in config and \
                state.get("data") == self.dataset.fingerprint():
            config["selection"] = self.settings().get("selection")
        return config

    def _data_problems(self, state: dict[str, Any], changed_from: dict[str, Any] | None) -> list[str]:
        """Whether the state's data are these (or, for a blend whose mix changed, the saved blend's)."""
        expected = self.dataset.fingerprint()
        if changed_from is not None and isinstance(self.planner, MixInData):
            expected = self.planner.data_fingerprint(changed_from)
        if state.get("data") == expected:
            return data_identity.content_problems(state, self.dataset)
        return ["the data differ from the checkpoint's (sentence lengths or per-item options of "
                f"{self.dataset.describe()} changed)"]

    # ---------------------------------------------------------------- consumption ledger
    def _segments_of(self, epoch: int) -> list[Any]:
        return self.segments if epoch == self.segments_epoch else []

    def _served(self, epoch: int, step: int | None) -> Any:
        """Dataset ids served in ``epoch`` before ``step`` (None: all of it), from the plans."""
        if isinstance(self.planner, Scheduled):
            return self.plan(epoch).served(step)
        return ledger.served(self.planner, epoch, self._segments_of(epoch), step)

    def ledger(self) -> dict[str, Any]:
        """Per source, samples and tokens served in the current epoch and in total, at the current position
        (from the plans: nothing is counted while iterating). ``ledger.describe`` prints it."""
        epoch, step = self.epoch, self.step
        if step >= self.num_steps(epoch):
            epoch, step = epoch + 1, 0
        totals = ledger.advance(self.planner, self._totals or ledger.Totals(), epoch, self._served)
        return ledger.table(self.planner, totals, epoch, step, self._served)

    # ---------------------------------------------------------------- pickling (DataLoader workers)
    def __getstate__(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "config": self.config,
            "rank": self.rank,
            "world_size": self.world_size,
            "collate": self.collate_name,
            "collate_options": self.collate_options,
            "update_freq": self.update_freq,
            "infinite": self.infinite,
            "cache": self.cache.state(),
            "planner": None if self._made_planner else self.planner,  # the iterator's own one is rebuilt
            "position": (self.epoch, self.step, self.consumed),
            "bases": self._bases.known,
            "segments": (self.segments_epoch, self.segments),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["dataset"],
            BatchConfig.from_dict(config) if isinstance(config := state["config"], dict) else config,
            rank=state["rank"],
            world_size=state["world_size"],
            collate=state["collate"],
            collate_options=state["collate_options"],
            update_freq=state["update_freq"],
            infinite=state["infinite"],
            cache=state["cache"],
            planner=state.get("planner"),
        )
        self.epoch, self.step, self.consumed = state["position"]
        self._bases.known = dict(state.get("bases") or {self.epoch: 0})
        self.segments_epoch, segments = state.get("segments") or (self.epoch, [])
        self.segments = list(segments)


def _elastic(planner: Any) -> bool:
    """Whether ``planner`` re-plans the rest of an epoch for another world size."""
    return isinstance(planner, Elastic | Scheduled)


def _check_format(state: Any) -> None:
    """Refuse what is not an iterator state of this version, or is malformed."""
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise TokenmillError('not a tokenmill batch iterator state (no "format": "tokenmill.batches")')
    if state.get("version") != STATE_VERSION:
        raise TokenmillError(
            f"iterator state version {state.get('version')!r} is not supported (this is {STATE_VERSION})"
        )
    check_state_shape(state)


def _flat(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as ``{"a.b": value}`` (so a changed field is named, not the dict holding it)."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def gpt_batches(
    source: GPTSource,
    config: GPTBatchConfig,
    *,
    rank: int = 0,
    world_size: int = 1,
    consumed_samples: int | None = None,
    infinite: bool = False,
) -> BatchIterator:
    """Micro batches of rank ``rank`` over a GPT dataset or blend in Megatron's consumed-samples order.

    Each item is one micro batch of this rank (``micro_batch_size`` rows); a training step takes
    ``global_batch_size / (micro_batch_size * world_size)`` of them. ``consumed_samples`` starts
    where a Megatron run with that many consumed samples goes on (from its checkpoint's
    ``consumed_train_samples``). ``state_dict``/``load_state_dict`` resume exactly, also at another
    world size."""
    if not isinstance(config, GPTBatchConfig):
        raise ConfigError(
            f"GPT samples are batched by a GPTBatchConfig(global_batch_size=..., micro_batch_size=...), "
            f"got {type(config).__name__}"
        )
    planner = gpt_planner(source, config, world_size=world_size)
    iterator = BatchIterator(
        source,  # type: ignore[arg-type]
        config,
        rank=rank,
        world_size=world_size,
        collate=collate_gpt,  # type: ignore[arg-type]
        infinite=infinite,
        cache=False,
        planner=planner,
    )
    if consumed_samples:
        iterator.seek(*planner.start_at(int(consumed_samples)))
    return iterator
