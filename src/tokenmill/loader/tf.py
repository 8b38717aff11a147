"""tf.data adapter (``pip install tokenmill[tf]``): our batches as a ``tf.data.Dataset``, resumable exactly.

:class:`TFBatches` wraps a :class:`~tokenmill.loader.BatchIterator` and serves the same batches,
in the same order, in one of three layouts (:data:`~tokenmill.loader.layouts.LAYOUTS`): ``ours``
(the iterator's own collate), ``fairseq`` (fairseq's batch dict) or ``opennmt`` (OpenNMT-tf's
``(features, labels)`` with ``ids``, ``ids_out``, ``length``). ``element_spec`` is exact: the
dtypes and ranks of every key, ``None`` where a size changes from batch to batch.

Ranks: the iterator's ``rank`` and ``world_size``, or, under a ``tf.distribute`` strategy
(:meth:`TFBatches.distribute`), the replicas of each input pipeline from its ``InputContext``: a
pipeline feeding L replicas yields, step after step, the batches of its L ranks in replica order,
which is the order ``distribute_datasets_from_function`` hands elements to replicas.

Resume: :class:`TFBatches` is a ``tf.train.experimental.PythonState``, so
``tf.train.Checkpoint(data=adapter)`` saves our iterator state (a small JSON) inside the checkpoint
and ``restore`` puts it back; the next :meth:`TFBatches.dataset` continues there. tf.data reads
ahead, so the position saved is that of the last batch the *training loop* took: counted by
``for batch in adapter`` (eager), or computed from ``counter`` (e.g. ``optimizer.iterations``,
one step per batch) when the dataset is consumed inside a ``tf.function`` or ``model.fit``.

Importing this module imports TensorFlow; the rest of tokenmill never does.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tokenmill._core.optional import require
from tokenmill.batching.collate import COLLATERS, CollateOptions
from tokenmill.batching.multi_collate import MultiCollate
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.loader.iterator import BatchIterator
from tokenmill.loader.layouts import advance, batch_maker, check_layout

tf = require("tensorflow", extra="tf", needed_by="tokenmill.loader.tf")

Spec = Any
"""A nested structure (dicts, tuples) of ``tf.TensorSpec``."""
GROUP = 8
"""Batches collated per call into Python by the ``from_generator`` path (each crossing costs ~0.4 ms)."""


# ---------------------------------------------------------------- element specs
def _dtype(options: CollateOptions) -> tf.DType:
    return tf.as_dtype(np.dtype(options.dtype))


def _sides(dataset: Any) -> tuple[bool, bool, bool]:
    """(has source, has target, has alignments) of a pair or multi-pair dataset."""
    src = dataset.src_sizes is not None
    tgt = dataset.tgt_sizes is not None
    return src, tgt, src and tgt and getattr(dataset, "align", None) is not None


def fairseq_spec(dataset: Any, options: CollateOptions) -> dict[str, Any]:
    """fairseq's batch dict: ``id``, ``nsentences``, ``ntokens``, ``net_input``, ``target`` (+ alignments)."""
    src, tgt, align = _sides(dataset)
    tokens = tf.TensorSpec([None, None], _dtype(options))
    vector = tf.TensorSpec([None], tf.int64)
    scalar = tf.TensorSpec([], tf.int64)
    spec: dict[str, Any] = {"id": vector, "nsentences": scalar, "ntokens": scalar}
    net_input: dict[str, Any] = {}
    if src:
        net_input.update(src_tokens=tokens, src_lengths=vector)
    if tgt and options.input_feeding:
        net_input["prev_output_tokens"] = tokens
    spec["net_input"] = net_input
    if tgt:
        spec["target"] = tokens
    if align:
        spec["alignments"] = tf.TensorSpec([None, 2], tf.int64)
        spec["align_weights"] = tf.TensorSpec([None], tf.float32)
    if isinstance(dataset, MultiPairDataset):
        spec["direction"] = vector
    return spec


def opennmt_spec(dataset: Any, options: CollateOptions) -> Any:
    """OpenNMT-tf's ``(features, labels)``; ``features`` alone when the data have no target side."""
    src, tgt, align = _sides(dataset)
    tokens = tf.TensorSpec([None, None], _dtype(options))
    length = tf.TensorSpec([None], tf.int32)
    strings = tf.TensorSpec([None, None], tf.string)
    features: dict[str, Any] = {}
    if src:
        features.update(length=length, ids=tokens)
        if options.tokens:
            features["tokens"] = strings
    if isinstance(dataset, MultiPairDataset):
        features["direction"] = tf.TensorSpec([None], tf.int64)
    if not tgt:
        return features
    labels: dict[str, Any] = {"length": length, "ids": tokens, "ids_out": tokens}
    if options.tokens:
        labels["tokens"] = strings
    if align:
        labels["alignment"] = tf.TensorSpec([None, None, None], tf.float32)
    return features, labels


def infer_spec(value: Any) -> Spec:
    """The spec of batches shaped like ``value``: its keys, dtypes and ranks, every size None."""
    if isinstance(value, dict):
        return {k: infer_spec(v) for k, v in value.items() if v is not None}
    if isinstance(value, tuple | list):
        return tuple(infer_spec(v) for v in value if v is not None)
    array = np.asarray(value)
    dtype = tf.string if array.dtype.kind in "OUS" else tf.as_dtype(array.dtype)
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        dtype = tf.int64
    return tf.TensorSpec([None] * array.ndim, dtype)


def spec_for(batches: BatchIterator, layout: str, sample: Callable[[], Any]) -> Spec:
    """The exact element spec of ``layout`` over ``batches``; ``sample()`` gives a batch to infer
    it from when the collate is one tokenmill does not know in advance (packed rows, your own)."""
    name: Any = layout
    if layout == "ours":
        name = batches.collate_name
        if isinstance(name, MultiCollate):
            name = name.name
    if name in COLLATERS:
        options = batches.collate_options
        if isinstance(batches.collate_name, MultiCollate) and batches.collate_name.options is not None:
            options = batches.collate_name.options
        return fairseq_spec(batches.dataset, options) if name == "fairseq" else opennmt_spec(batches.dataset, options)
    return infer_spec(sample())


def conform(value: Any, spec: Spec) -> Any:
    """``value`` in exactly the structure and dtypes of ``spec`` (a missing part: an empty array)."""
    if isinstance(spec, dict):
        if isinstance(value, tuple):  # OpenNMT without target: (features, None) -> features
            value = value[0]
        get = value.get if isinstance(value, dict) else (lambda _key: None)
        return {k: conform(get(k), s) for k, s in spec.items()}
    if isinstance(spec, tuple):
        return tuple(conform(v, s) for v, s in zip(value, spec, strict=False))
    if value is None:
        return np.zeros([0] * len(spec.shape), dtype=spec.dtype.as_numpy_dtype)
    if spec.dtype == tf.string:
        return np.asarray(value, dtype=object)
    return np.asarray(value, dtype=spec.dtype.as_numpy_dtype)


def pack_leaves(leaves: list[np.ndarray], position: tuple[int, int]) -> np.ndarray:
    """Integer leaves and their position as one int64 buffer: ``epoch, step``, every leaf's dims,
    then every leaf's values (tf.data moves one tensor from Python per element: cheaper than many)."""
    header = [position[0], position[1], *(d for leaf in leaves for d in leaf.shape)]
    return np.concatenate([np.asarray(header, dtype=np.int64), *(leaf.reshape(-1) for leaf in leaves)], dtype=np.int64)


def _read(counter: Any) -> int:
    value = counter() if callable(counter) else counter
    return int(np.asarray(value))


# ---------------------------------------------------------------- the adapter
class TFBatches(tf.train.experimental.PythonState):
    """One rank's (or one input pipeline's) batches as a ``tf.data.Dataset``, checkpointable exactly.

    ``layout``: ``ours``, ``fairseq`` or ``opennmt``. ``counter``: something whose value counts the
    training steps done (``optimizer.iterations``, a ``tf.Variable``, or a function returning an
    int); give it when the dataset is consumed inside ``tf.function``/``model.fit``, where the
    adapter cannot see batches being taken. ``num_parallel_calls``: None builds the dataset with
    ``from_generator`` (one thread collates :data:`GROUP` batches per call into Python); a number or
    ``tf.data.AUTOTUNE`` collates batches in parallel through ``map`` (order kept). Batches of integer
    arrays cross from Python as one int64 buffer each, cut into the batch's tensors in the graph.
    ``prefetch``: batches read ahead (0: none).
    ``element_spec``: your own spec for a collate tokenmill cannot describe (default: inferred).
    """

    def __init__(
        self,
        batches: BatchIterator,
        layout: str = "ours",
        *,
        counter: Any = None,
        num_parallel_calls: int | None = None,
        prefetch: int = tf.data.AUTOTUNE,
        element_spec: Spec | None = None,
    ) -> None:
        self.batches = batches
        self.layout = check_layout(layout)
        self.counter = counter
        self.num_parallel_calls = num_parallel_calls
        self.prefetch = prefetch
        self._batch_at = batch_maker(batches, layout)
        self._element_spec = element_spec or spec_for(
            batches, layout, lambda: self._batch_at(batches.epoch, batches.step, batches.rank)
        )
        self._start: tuple[int, int, int, int] | None = None
        """(epoch, step, consumed, counter value) when the latest counted dataset was made."""
        self._untracked = False

    # ---------------------------------------------------------------- what it yields
    @property
    def element_spec(self) -> Spec:
        """The ``tf.TensorSpec`` structure of one batch (what ``dataset().element_spec`` is)."""
        return self._element_spec

    def __len__(self) -> int:
        """Batches of the current epoch on this rank."""
        return self.batches.num_steps()

    def ranks_for(self, input_context: tf.distribute.InputContext | None = None) -> list[int]:
        """The ranks one input pipeline serves, interleaved step by step (without a context: the iterator's)."""
        if input_context is None:
            return [self.batches.rank]
        world, pipelines = input_context.num_replicas_in_sync, input_context.num_input_pipelines
        if world != self.batches.world_size:
            raise ConfigError(
                f"the strategy has {world} replicas but the batches were planned for world_size="
                f"{self.batches.world_size}; make the BatchIterator with world_size=strategy.num_replicas_in_sync"
            )
        if world % pipelines:
            raise ConfigError(f"{world} replicas do not split evenly over {pipelines} input pipelines")
        local = world // pipelines
        first = input_context.input_pipeline_id * local
        return list(range(first, first + local))

    def dataset(
        self, input_context: tf.distribute.InputContext | None = None, *, with_position: bool = False
    ) -> tf.data.Dataset:
        """The batches from the current position on: the rest of the epoch, or forever when the
        iterator is ``infinite``. With ``with_position`` each element is ``((epoch, step), batch)``.

        A dataset is the stream from where the adapter stood when it was made: make it after
        restoring a checkpoint, and again for each epoch of a finite iterator.
        """
        self._sync()
        b = self.batches
        if self.counter is not None:
            self._start = (b.epoch, b.step, b.consumed, _read(self.counter))
        elif not with_position:
            self._untracked = True
        return self._build(self.ranks_for(input_context), (b.epoch, b.step), with_position)

    def distribute(
        self, strategy: tf.distribute.Strategy, options: tf.distribute.InputOptions | None = None
    ) -> tf.distribute.DistributedDataset:
        """``strategy.distribute_datasets_from_function`` over :meth:`dataset`: replica r gets rank r's batches."""
        if strategy.num_replicas_in_sync != self.batches.world_size:
            raise ConfigError(
                f"the strategy has {strategy.num_replicas_in_sync} replicas but the batches were planned for "
                f"world_size={self.batches.world_size}; make the BatchIterator with "
                "world_size=strategy.num_replicas_in_sync"
            )
        return strategy.distribute_datasets_from_function(self.dataset, options)

    # The four ways batches cross into the graph (grouped integer buffers, one buffer per batch in parallel, a
    # generator, parallel leaves) share the closures over spec, ranks and start position: 82 lines.
    def _build(self, ranks: list[int], start: tuple[int, int], with_position: bool) -> tf.data.Dataset:
        spec = self._element_spec
        flat_spec = tf.nest.flatten(spec)
        batches, batch_at = self.batches, self._batch_at
        epoch, step = start
        one_buffer = all(s.dtype.is_integer or s.dtype == tf.bool for s in flat_spec)

        def positions() -> Iterator[tuple[int, int, int]]:
            for e, s in batches.positions(epoch, step):
                for rank in ranks:
                    yield e, s, rank

        def collate_flat(e: int, s: int, rank: int) -> list[np.ndarray]:
            return tf.nest.flatten(conform(batch_at(e, s, rank), spec))

        if one_buffer:  # every leaf an integer: one int64 tensor crosses from Python, split in the graph

            def collate_buffer(where: np.ndarray) -> np.ndarray:
                e, s, rank = (int(x) for x in where)
                return pack_leaves(collate_flat(e, s, rank), (e, s))

            def to_batch(buffer: tf.Tensor) -> Any:
                return self._unpack(buffer, with_position)

            if self.num_parallel_calls is None:  # and GROUP batches per crossing

                def groups() -> Iterator[np.ndarray]:
                    where = positions()
                    while chunk := list(itertools.islice(where, GROUP)):
                        parts = [collate_buffer(np.asarray(p)) for p in chunk]
                        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
                        np.cumsum([len(x) for x in parts], out=offsets[1:])
                        yield np.concatenate([[len(parts)], offsets, *parts], dtype=np.int64)

                def split_group(group: tf.Tensor) -> tf.data.Dataset:
                    count = group[0]
                    offsets = group[1 : count + 2] + count + 2
                    return tf.data.Dataset.range(count).map(lambda i: to_batch(group[offsets[i] : offsets[i + 1]]))

                grouped = tf.data.Dataset.from_generator(groups, output_signature=tf.TensorSpec([None], tf.int64))
                data = grouped.flat_map(split_group)
            else:
                where = tf.data.Dataset.from_generator(
                    lambda: (np.array(p, dtype=np.int64) for p in positions()),
                    output_signature=tf.TensorSpec([3], tf.int64),
                )

                def collate_in_graph(where: tf.Tensor) -> Any:
                    buffer = tf.numpy_function(collate_buffer, [where], tf.int64, stateful=False)
                    buffer.set_shape([None])
                    return to_batch(buffer)

                data = where.map(collate_in_graph, num_parallel_calls=self.num_parallel_calls, deterministic=True)
        elif self.num_parallel_calls is None:

            def generate() -> Iterator[Any]:
                for e, s, rank in positions():
                    batch = tf.nest.pack_sequence_as(spec, collate_flat(e, s, rank))
                    yield (np.array([e, s], dtype=np.int64), batch) if with_position else batch

            signature = (tf.TensorSpec([2], tf.int64), spec) if with_position else spec
            data = tf.data.Dataset.from_generator(generate, output_signature=signature)
        else:

            def collate_leaves(where: np.ndarray) -> list[np.ndarray]:
                return collate_flat(*(int(x) for x in where))

            def to_leaves(where: tf.Tensor) -> Any:
                flat = tf.numpy_function(collate_leaves, [where], [s.dtype for s in flat_spec], stateful=False)
                for tensor, s in zip(flat, flat_spec, strict=True):
                    tensor.set_shape(s.shape)
                batch = tf.nest.pack_sequence_as(spec, flat)
                return (where[:2], batch) if with_position else batch

            where = tf.data.Dataset.from_generator(
                lambda: (np.array(p, dtype=np.int64) for p in positions()),
                output_signature=tf.TensorSpec([3], tf.int64),
            )
            data = where.map(to_leaves, num_parallel_calls=self.num_parallel_calls, deterministic=True)
        if self.prefetch:
            data = data.prefetch(self.prefetch)
        return data

    def _unpack(self, buffer: tf.Tensor, with_position: bool) -> Any:
        """The batch (and position) inside one buffer of :func:`pack_leaves`; ranks are static, so the
        header's layout is known when the graph is built."""
        flat_spec = tf.nest.flatten(self._element_spec)
        header = 2 + sum(len(s.shape) for s in flat_spec)
        at, cursor = 2, tf.constant(header, tf.int64)
        leaves = []
        for s in flat_spec:
            rank = len(s.shape)
            dims = buffer[at : at + rank]
            at += rank
            size = tf.reduce_prod(dims) if rank else tf.constant(1, tf.int64)
            leaf = tf.reshape(buffer[cursor : cursor + size], dims)
            cursor += size
            leaf = tf.cast(leaf, s.dtype) if s.dtype != tf.int64 else leaf
            leaf.set_shape(s.shape)
            leaves.append(leaf)
        batch = tf.nest.pack_sequence_as(self._element_spec, leaves)
        return (buffer[:2], batch) if with_position else batch

    def __iter__(self) -> Iterator[Any]:
        """Eager iteration over the rest of the epoch (forever when infinite), tracking each batch
        handed out, so a checkpoint saved between two batches resumes at the next one."""
        b = self.batches
        self._sync()
        self._start, self._untracked = None, False
        start_epoch = b.epoch
        for position, batch in self._build([b.rank], (b.epoch, b.step), True):
            epoch, step = (int(x) for x in position.numpy())
            b.seek(epoch, step + 1)
            b.consumed += 1
            yield batch
        if not b.infinite and b.epoch == start_epoch:
            b.set_epoch(start_epoch + 1)

    # ---------------------------------------------------------------- state
    def _sync(self) -> None:
        """Move the iterator to where the counter says the training loop is."""
        if self._start is None or self.counter is None:
            return
        epoch, step, consumed, base = self._start
        done = _read(self.counter) - base
        epoch, step = advance(self.batches, epoch, step, done)
        self.batches.seek(epoch, step)
        self.batches.consumed = consumed + done

    def state_dict(self) -> dict[str, Any]:
        """Position after the last batch the training loop took (see :meth:`BatchIterator.state_dict`)."""
        if self._untracked:
            raise TokenmillError(
                "cannot tell how many batches the training loop took from a dataset made without counter: "
                "iterate with `for batch in adapter`, or give TFBatches(..., counter=optimizer.iterations)"
            )
        self._sync()
        return self.batches.state_dict()

    def load_state_dict(self, state: dict[str, Any], *, allow_mix_change: bool = False) -> None:
        """Resume there (``allow_mix_change``: under another mix); make the dataset afterwards."""
        self.batches.load_state_dict(state, allow_mix_change=allow_mix_change)
        self._start, self._untracked = None, False  # the counter is read when the next dataset is made

    def serialize(self) -> bytes:
        """What ``tf.train.Checkpoint`` stores for us: the iterator state as JSON."""
        return json.dumps(self.state_dict(), sort_keys=True).encode("utf-8")

    def deserialize(self, string_value: Any) -> None:
        """Called by ``Checkpoint.restore``."""
        raw = string_value.numpy() if hasattr(string_value, "numpy") else string_value
        text = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        try:
            state = json.loads(text)
        except ValueError as error:
            raise TokenmillError(f"the checkpoint's tokenmill state is not JSON ({error})") from None
        self.load_state_dict(state)
