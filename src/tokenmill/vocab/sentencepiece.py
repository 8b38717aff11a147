"""SentencePiece training on a streamed reservoir sample, and batched encoding to flat id arrays.

Training never loads the corpus: :class:`Reservoir` keeps a uniform sample of at most
``input_sentence_size`` lines while chunks stream past (vectorized Algorithm R, seeded), and the
trainer reads that sample from memory. Encoding hands whole batches to SentencePiece's native
threads and returns ``(flat ids, lengths)`` ready for :class:`~tokenmill.store.IndexedWriter`.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from itertools import chain
from pathlib import Path

import numpy as np
import sentencepiece

from tokenmill._core.interruptible import interruptible
from tokenmill.errors import ConfigError
from tokenmill.fsutil import atomic_write

NORMALIZATION_RULES = ("nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity")
# Trainer options tokenmill owns: the sentences come from memory and the reservoir does the sampling.
_OWN_OPTIONS = frozenset(
    {"input", "input_format", "model_prefix", "sentence_iterator", "sentence_reader", "model_writer",
     "input_sentence_size", "minloglevel"}
)


class Reservoir:
    """A seeded uniform sample of at most ``capacity`` lines from a stream of chunks.

    Each chunk is handled with a few numpy calls (Algorithm R vectorized: line ``t`` draws
    ``j ~ U[0, t]`` and replaces slot ``j`` when ``j < capacity``; later lines win ties), so the
    sample is a pure function of the stream and the seed.
    """

    def __init__(self, capacity: int, seed: int = 0) -> None:
        if capacity <= 0:
            raise ConfigError(f"input_sentence_size must be positive, got {capacity}")
        self.capacity = capacity
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._lines: list[str | None] = [None] * capacity
        self._positions = np.full(capacity, -1, dtype=np.int64)
        self.seen = 0

    def add(self, lines: Sequence[str]) -> None:
        n = len(lines)
        if n == 0:
            return
        positions = np.arange(self.seen, self.seen + n, dtype=np.int64)
        slots = self._rng.integers(0, positions + 1)  # one draw per line, inclusive upper bound
        fill = positions < self.capacity
        slots[fill] = positions[fill]  # the first `capacity` lines fill the reservoir in order
        keep = np.flatnonzero(slots < self.capacity)
        # when several lines in this chunk hit the same slot, the last one wins (as sequential R)
        reversed_slots = slots[keep][::-1]
        _, first_in_reversed = np.unique(reversed_slots, return_index=True)
        winners = keep[::-1][first_in_reversed]
        for index in winners.tolist():
            self._lines[slots[index]] = lines[index]
        self._positions[slots[winners]] = positions[winners]
        self.seen += n

    def sample(self) -> list[str]:
        """The kept lines in stream order."""
        filled = np.flatnonzero(self._positions >= 0)
        order = filled[np.argsort(self._positions[filled], kind="stable")]
        return [self._lines[i] for i in order.tolist()]  # type: ignore[misc]


@dataclass
class SentencePieceOptions:
    """Trainer settings, named as in ``spm_train`` so flags and configs carry over."""

    vocab_size: int = 8000
    """Size of the SentencePiece vocabulary (its own specials included)."""
    model_type: str = "unigram"
    """unigram | bpe | char | word."""
    character_coverage: float = 0.9995
    """Share of characters covered; 1.0 for small alphabets, ~0.9995 for CJK."""
    input_sentence_size: int = 1_000_000
    """Lines in the reservoir sample the model is trained on (drawn while streaming)."""
    user_defined_symbols: list[str] = field(default_factory=list)
    """Pieces never split (language tags such as __en__)."""
    byte_fallback: bool = False
    """Encode unknown characters as UTF-8 byte pieces instead of <unk>."""
    max_sentence_length: int = 4192
    """Longer sample lines are skipped by the trainer (bytes)."""
    num_threads: int = 1
    """Trainer threads. The model is the restart boundary, so results need not match across counts."""
    seed: int = 0
    """Seed of the reservoir sample."""
    normalization_rule_name: str = "nmt_nfkc"
    """nmt_nfkc | nfkc | nmt_nfkc_cf | nfkc_cf | identity (``_cf``: also case-folded)."""
    split_digits: bool = False
    """Split every digit into a piece of its own."""
    control_symbols: list[str] = field(default_factory=list)
    """Reserved ids that never come out of encoding text (``<sep>``, ``<cls>``...)."""
    shuffle_input_sentence: bool = False
    """spm_train's switch, passed as given. It has no effect here: the trainer is handed the whole
    reservoir sample (its own ``input_sentence_size`` is 0), so it never samples or shuffles."""
    hard_vocab_limit: bool = False
    """Fail instead of shrinking when ``vocab_size`` cannot be reached (spm's default is true)."""
    extra_options: dict[str, str | int | float | bool] = field(default_factory=dict)
    """Any other ``spm_train`` option by its name (``split_by_whitespace``, ``max_sentencepiece_length``,
    ``pad_id``...); names SentencePiece does not know are a ConfigError."""

    def validate(self) -> None:
        if self.model_type not in {"unigram", "bpe", "char", "word"}:
            raise ConfigError(f"--model-type must be unigram, bpe, char or word, not {self.model_type!r}")
        if not 0 < self.character_coverage <= 1:
            raise ConfigError(f"--character-coverage must be in (0, 1], got {self.character_coverage}")
        if self.vocab_size < 8:
            raise ConfigError(f"--vocab-size must be at least 8, got {self.vocab_size}")
        if self.normalization_rule_name not in NORMALIZATION_RULES:
            raise ConfigError(
                f"--normalization-rule-name must be one of {', '.join(NORMALIZATION_RULES)}, "
                f"not {self.normalization_rule_name!r}"
            )
        for name, value in self.extra_options.items():
            if name in _OWN_OPTIONS or name in _FIELDS:
                raise ConfigError(
                    f"SentencePiece option {name!r} cannot be passed through extra_options: "
                    + ("tokenmill sets it itself" if name in _OWN_OPTIONS else f"set the {name} setting instead")
                )
            if not isinstance(value, str | int | float | bool):
                raise ConfigError(
                    f"SentencePiece option {name!r} needs a string, number or boolean, not {type(value).__name__}"
                )

    def trainer_options(self) -> dict[str, object]:
        """Keyword arguments for ``SentencePieceTrainer.train`` (besides the sentences and the writer)."""
        options: dict[str, object] = dict(
            vocab_size=self.vocab_size,
            model_type=self.model_type,
            character_coverage=self.character_coverage,
            user_defined_symbols=list(self.user_defined_symbols),
            byte_fallback=self.byte_fallback,
            max_sentence_length=self.max_sentence_length,
            num_threads=self.num_threads,
            input_sentence_size=0,
            shuffle_input_sentence=self.shuffle_input_sentence,
            hard_vocab_limit=self.hard_vocab_limit,
            minloglevel=2,
        )
        # Passed only when set, so default options give the trainer exactly the arguments they always did.
        if self.normalization_rule_name != "nmt_nfkc":
            options["normalization_rule_name"] = self.normalization_rule_name
        if self.split_digits:
            options["split_digits"] = True
        if self.control_symbols:
            options["control_symbols"] = list(self.control_symbols)
        for name, value in self.extra_options.items():
            options[name] = ("true" if value else "false") if isinstance(value, bool) else value
        return options

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


_FIELDS = frozenset(f.name for f in fields(SentencePieceOptions)) - {"input_sentence_size", "seed"}


def train_sentencepiece(
    lines: Sequence[str], model_path: str | os.PathLike[str], options: SentencePieceOptions
) -> Path:
    """Train on ``lines`` (already sampled) and write ``model_path`` (+ ``.vocab``) atomically."""
    options.validate()
    if not lines:
        raise ConfigError("no training lines left for SentencePiece (all filtered out, or empty input)")
    model = io.BytesIO()
    try:
        interruptible(  # minutes of C++: Ctrl-C must not wait for it
            sentencepiece.SentencePieceTrainer.train,
            sentence_iterator=iter(lines), model_writer=model, **options.trainer_options(),
        )
    except (RuntimeError, ValueError) as error:
        raise _training_error(error, options) from None
    path = Path(model_path)
    with atomic_write(path, "wb") as handle:
        handle.write(model.getvalue())
    encoder = SentencePieceEncoder(path)
    with atomic_write(path.with_suffix(".vocab")) as handle:
        for i in range(encoder.vocab_size):
            handle.write(f"{encoder.processor.id_to_piece(i)}\t{encoder.processor.get_score(i):g}\n")
    return path


def _training_error(error: Exception, options: SentencePieceOptions) -> ConfigError:
    """One line naming the option SentencePiece rejected, where it can be told."""
    message = " ".join(str(error).split())
    unknown = re.search(r'unknown field name "([^"]+)"', message)
    if unknown:
        return ConfigError(
            f"SentencePiece has no trainer option {unknown.group(1)!r} (from extra_options); "
            "use a name spm_train --help lists"
        )
    too_high = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", message)
    if too_high:
        asked, most = too_high.groups()
        return ConfigError(
            f"--vocab-size {asked} cannot be reached with --hard-vocab-limit: the training text gives at most {most} "
            f"pieces (use --vocab-size {most} or less, or --no-hard-vocab-limit for a smaller model and a warning)"
        )
    value = re.search(r'cannot parse "([^"]*)"', message)
    if value:
        names = [n for n, v in options.trainer_options().items() if str(v) == value.group(1)]
        if names:
            return ConfigError(f"SentencePiece cannot use {value.group(1)!r} for option {names[0]!r}: {message}")
    return ConfigError(f"SentencePiece training failed: {message}")


class SentencePieceEncoder:
    """A loaded ``.model``: batched encoding to flat int32 ids, piece strings for dictionaries."""

    def __init__(self, model_path: str | os.PathLike[str]) -> None:
        path = Path(model_path)
        if not path.is_file():
            raise ConfigError(f"SentencePiece model {path} does not exist")
        self.path = path
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
        except (RuntimeError, OSError) as error:
            raise ConfigError(f"{path} is not a SentencePiece model: {error}") from None

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def pieces(self) -> list[str]:
        return [self.processor.id_to_piece(i) for i in range(self.vocab_size)]

    def encode_flat(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Ids of all ``lines`` concatenated (int32) and the length of each line (int64)."""
        if not lines:
            return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64)
        # Plain int lists flattened by one C-level iterator: cheaper than out_type="numpy", whose
        # wrapper builds one numpy array per line in Python.
        encoded = self.processor.encode(list(lines), num_threads=num_threads)
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        flat = np.fromiter(chain.from_iterable(encoded), dtype=np.int32, count=int(lengths.sum()))
        return flat, lengths


def iter_sample_lines(chunks: Iterable[Sequence[str]], options: SentencePieceOptions) -> list[str]:
    """Draw the training sample from a stream of chunks."""
    reservoir = Reservoir(options.input_sentence_size, options.seed)
    for chunk in chunks:
        reservoir.add(chunk)
    return reservoir.sample()
