"""The Hugging Face ``tokenizers`` backend: a ``tokenizer.json``, encoded by its Rust threads.

Batches go to ``Tokenizer.encode_batch`` (rayon threads) without special tokens. Rayon sizes its
pool once per process, the first time anything runs in parallel: when ``RAYON_NUM_THREADS`` is not
set, the first parallel ``encode_batch`` here sets it to its ``num_threads``; later calls cannot
change the pool. ``num_threads=1`` encodes line by line on the calling thread. The
``TOKENIZERS_PARALLELISM`` variable is honoured as the library does.

As in ``tokenizers`` itself, the text of an added token (``<|endoftext|>``) in a line encodes as that
token's id.

Training (``TrainSettings.kind``): ``bpe`` and ``unigram`` over SentencePiece-style ``▁`` word
marks, ``byte-level-bpe`` as GPT-2 (every byte in the alphabet, no unknown token), ``wordpiece`` as
BERT (``##`` continuations).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tokenizers
from tokenizers import decoders, models, pre_tokenizers, trainers

from tokenmill._core.interruptible import interruptible
from tokenmill.errors import ConfigError
from tokenmill.fsutil import atomic_path
from tokenmill.vocab.tokenizer import SPECIAL_KEYS, TokenizerBase, bad_model, flatten

# Special tokens looked for, in order of preference, when the settings do not name them.
CANDIDATES = {
    "bos": ("<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>", "[CLS]"),
    "eos": ("</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>", "[SEP]"),
    "pad": ("<pad>", "[PAD]", "<|pad|>", "<|padding|>"),
    "unk": ("<unk>", "[UNK]", "<|unk|>"),
    "eod": ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "[SEP]"),
}
KINDS = ("bpe", "byte-level-bpe", "unigram", "wordpiece")
DEFAULT_SPECIALS = {
    "bpe": ["<unk>", "<s>", "</s>", "<pad>"],
    "unigram": ["<unk>", "<s>", "</s>", "<pad>"],
    "byte-level-bpe": ["<|endoftext|>"],
    "wordpiece": ["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"],
}


@dataclasses.dataclass
class HFSettings:
    specials: dict[str, str] = dataclasses.field(default_factory=dict)
    """Token text of ``bos``/``eos``/``pad``/``unk``/``eod`` where the guess is wrong or missing
    (e.g. ``{"eod": "<|im_end|>"}``); the others are found among the usual names."""


@dataclasses.dataclass
class HFTrainSettings:
    kind: str = "byte-level-bpe"
    """bpe | byte-level-bpe | unigram | wordpiece."""
    vocab_size: int = 32000
    """Final size, special tokens and alphabet included."""
    min_frequency: int = 2
    """Pairs seen fewer times are not merged (bpe kinds and wordpiece)."""
    special_tokens: list[str] | None = None
    """Added first, in this order; by default ``<|endoftext|>`` for byte-level BPE, ``<unk> <s> </s>
    <pad>`` for bpe and unigram, ``[UNK] [PAD] [CLS] [SEP] [MASK]`` for wordpiece."""


_threads_set = False


def _limit_threads(num_threads: int) -> None:
    """Size rayon's pool to ``num_threads`` if nothing chose it yet (only the first call counts)."""
    global _threads_set
    if not _threads_set:
        _threads_set = True
        os.environ.setdefault("RAYON_NUM_THREADS", str(num_threads))


class HFTokenizer(TokenizerBase):
    """A ``tokenizer.json``."""

    name = "hf"
    filename = "tokenizer.json"
    overlaps_batches = True  # the library encodes with the GIL released
    shares_loads = True  # nothing changes after loading; a 128k tokenizer.json takes a second to load
    Settings = HFSettings
    TrainSettings = HFTrainSettings

    def __init__(self, path: str | os.PathLike[str], settings: Any = None) -> None:
        super().__init__(path, settings)
        what = "Hugging Face tokenizer.json"
        try:
            text = self.path.read_bytes().decode("utf-8")
            spec = json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:  # RecursionError: nested too deep
            raise bad_model(self.path, self.name, what, f"not JSON: {error}") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
            raise bad_model(self.path, self.name, what, "JSON without a 'model' section")
        try:
            self.tokenizer = tokenizers.Tokenizer.from_str(text)
        except Exception as error:  # the library raises plain Exception for every parse problem
            raise bad_model(self.path, self.name, what, error) from None
        vocab = self.tokenizer.get_vocab(with_added_tokens=True)
        self._size = max(self.tokenizer.get_vocab_size(with_added_tokens=True), max(vocab.values(), default=-1) + 1)
        self._specials = self._find_specials(spec["model"])
        self._encode_many = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)

    def _find_specials(self, model: dict) -> dict[str, int]:
        named = dict(self.settings.specials)
        unknown = sorted(set(named) - set(SPECIAL_KEYS))
        if unknown:
            raise ConfigError(f"hf tokenizer specials: unknown key {unknown[0]!r}; use {', '.join(SPECIAL_KEYS)}")
        ids: dict[str, int] = {}
        for key, token in named.items():
            token_id = self.tokenizer.token_to_id(token)
            if token_id is None:
                raise ConfigError(f"{self.path} has no token {token!r} (given as the {key} token); check the spelling")
            ids[key] = token_id
        unk = model.get("unk_token")
        if "unk" not in ids and unk is None and isinstance(model.get("unk_id"), int):  # Unigram
            ids["unk"] = model["unk_id"]
        for key in SPECIAL_KEYS:
            if key in ids:
                continue
            for token in ((unk,) if key == "unk" and unk else ()) + CANDIDATES[key]:
                token_id = self.tokenizer.token_to_id(token)
                if token_id is not None:
                    ids[key] = token_id
                    break
        return {key: ids[key] for key in SPECIAL_KEYS if key in ids}

    @classmethod
    def from_gpt2_files(cls, vocab_file: str | os.PathLike[str], merge_file: str | os.PathLike[str],
                        out_path: str | os.PathLike[str]) -> HFTokenizer:
        """GPT-2's ``vocab.json`` + ``merges.txt`` (Megatron's GPT2BPETokenizer) as a byte-level BPE
        ``tokenizer.json`` at ``out_path``: GPT-2's split pattern, no prefix space, ``<|endoftext|>`` special."""
        try:
            model = models.BPE.from_file(str(vocab_file), str(merge_file))
        except Exception as error:  # the library raises plain Exception for unreadable files
            raise ConfigError(
                f"--vocab-file {vocab_file} / --merge-file {merge_file}: not GPT-2 vocab.json and merges.txt "
                f"({' '.join(str(error).split())[:160]})"
            ) from None
        tokenizer = tokenizers.Tokenizer(model)
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        if tokenizer.token_to_id("<|endoftext|>") is not None:
            tokenizer.add_special_tokens(["<|endoftext|>"])
        with atomic_path(out_path) as tmp:
            tokenizer.save(str(tmp))
        return cls.load(out_path)

    @classmethod
    def _train(cls, lines: list[str], settings: HFTrainSettings, out_path: Path) -> None:
        if settings.kind not in KINDS:
            raise ConfigError(f"hf tokenizer kind must be one of {', '.join(KINDS)}, not {settings.kind!r}")
        specials = list(DEFAULT_SPECIALS[settings.kind] if settings.special_tokens is None else settings.special_tokens)
        unk = next((t for t in specials if t in CANDIDATES["unk"]), None)
        common = dict(vocab_size=settings.vocab_size, special_tokens=specials, show_progress=False)
        if settings.kind == "byte-level-bpe":
            tokenizer = tokenizers.Tokenizer(models.BPE())
            tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tokenizer.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(
                min_frequency=settings.min_frequency, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), **common
            )
        elif settings.kind == "bpe":
            tokenizer = tokenizers.Tokenizer(models.BPE(unk_token=unk))
            tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
            tokenizer.decoder = decoders.Metaspace()
            trainer = trainers.BpeTrainer(min_frequency=settings.min_frequency, **common)
        elif settings.kind == "unigram":
            tokenizer = tokenizers.Tokenizer(models.Unigram())
            tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
            tokenizer.decoder = decoders.Metaspace()
            trainer = trainers.UnigramTrainer(unk_token=unk, **common)
        else:
            if unk is None:
                raise ConfigError("an hf wordpiece tokenizer needs an unknown token ([UNK]) among its special_tokens")
            tokenizer = tokenizers.Tokenizer(models.WordPiece(unk_token=unk))
            tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            tokenizer.decoder = decoders.WordPiece()
            trainer = trainers.WordPieceTrainer(min_frequency=settings.min_frequency, **common)
        try:
            interruptible(tokenizer.train_from_iterator, lines, trainer=trainer, length=len(lines))  # Ctrl-C-able
        except Exception as error:
            raise ConfigError(f"hf {settings.kind} training failed: {' '.join(str(error).split())}") from None
        with atomic_path(out_path) as tmp:
            tokenizer.save(str(tmp))

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> dict[str, int]:
        return dict(self._specials)

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if not lines:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        if num_threads <= 1:
            encode = self.tokenizer.encode
            return flatten([encode(line, add_special_tokens=False).ids for line in lines])
        _limit_threads(num_threads)
        return flatten([e.ids for e in self._encode_many(list(lines), add_special_tokens=False)])

    def decode(self, ids: Iterable[int]) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def id_to_token(self, token_id: int) -> str:
        token = self.tokenizer.id_to_token(self._check_id(token_id))
        if token is None:
            raise IndexError(f"id {token_id} is unused in {self.path}")
        return token

    def token_to_id(self, token: str) -> int | None:
        return self.tokenizer.token_to_id(token)
