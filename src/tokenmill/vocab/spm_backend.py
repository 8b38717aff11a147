"""The SentencePiece backend: a ``.model`` file, encoded by SentencePiece's native threads."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sentencepiece

from tokenmill.vocab.sentencepiece import SentencePieceOptions, train_sentencepiece
from tokenmill.vocab.tokenizer import TokenizerBase, bad_model, flatten


class SentencePieceTokenizer(TokenizerBase):
    """A SentencePiece model. ``eod`` is its ``</s>`` (when it has one)."""

    name = "sentencepiece"
    filename = "spm.model"
    overlaps_batches = True  # the library encodes with the GIL released
    stores_own_ids = False  # fairseq's ids: pieces are words of its dict.txt
    may_stop_short = True
    has_unknown_surfaces = True
    shares_loads = True  # nothing changes after loading: prepare's stages load the same model once, not 3 times
    TrainSettings = SentencePieceOptions

    def __init__(self, path: str | os.PathLike[str], settings: Any = None) -> None:
        super().__init__(path, settings)
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_proto=self.path.read_bytes())
        except (RuntimeError, OSError, TypeError):
            model = self.path.with_suffix(".model")
            if self.path.suffix == ".vocab" and model.is_file():
                detail = f"a .vocab file lists the pieces; the model is {model}"
            else:
                detail = "SentencePiece cannot parse it as a serialized model"
            raise bad_model(self.path, self.name, "SentencePiece model", detail) from None
        self._size = self.processor.get_piece_size()
        if self._size <= 0:  # an empty file parses as a model of nothing, which fails at the first encode
            raise bad_model(self.path, self.name, "SentencePiece model", "it holds no pieces")
        try:  # the library takes pieces of any bytes, then fails turning one into text: check them all once
            self.processor.id_to_piece(list(range(self._size)))
        except UnicodeDecodeError:
            raise bad_model(self.path, self.name, "SentencePiece model", "a piece is not UTF-8 text") from None

    @classmethod
    def _train(cls, lines: list[str], settings: SentencePieceOptions, out_path: Path) -> None:
        train_sentencepiece(lines, out_path, settings)

    def model_files(self) -> list[tuple[Path, str]]:
        files = [(self.path, self.filename)]
        vocab = self.path.with_suffix(".vocab")
        if vocab.is_file():  # spm_train's human-readable piece list, kept beside the model
            files.append((vocab, "spm.vocab"))
        return files

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> dict[str, int]:
        p = self.processor
        ids = {"bos": p.bos_id(), "eos": p.eos_id(), "pad": p.pad_id(), "unk": p.unk_id()}
        ids = {key: value for key, value in ids.items() if value >= 0}
        if "eos" in ids:
            ids["eod"] = ids["eos"]
        return ids

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if not lines:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        # plain int lists, flattened by one C-level iterator (out_type="numpy" builds an array a line)
        return flatten(self.processor.encode(list(lines), num_threads=max(1, num_threads)))

    def encode_pieces(self, line: str) -> list[str]:
        """The piece text of one line, as ``spm_encode --output_format=piece`` prints it (an unknown piece is
        its surface text)."""
        return self.processor.encode(line, out_type=str)

    def encode_pieces_batch(self, lines: Sequence[str], num_threads: int = 1) -> list[list[str]]:
        """:meth:`encode_pieces` of many lines in one call (on ``num_threads`` threads)."""
        return self.processor.encode(list(lines), out_type=str, num_threads=max(1, num_threads))

    def is_text_piece(self, token_id: int) -> bool:
        """Whether an id is a piece of text (not a control symbol or the unknown piece)."""
        return not (self.processor.is_control(token_id) or self.processor.is_unknown(token_id))

    def decode(self, ids: Iterable[int]) -> str:
        return self.processor.decode([int(i) for i in ids])

    def id_to_token(self, token_id: int) -> str:
        return self.processor.id_to_piece(self._check_id(token_id))

    def token_to_id(self, token: str) -> int | None:
        token_id = self.processor.piece_to_id(token)
        if token_id == self.processor.unk_id() and token != self.processor.id_to_piece(token_id):
            return None
        return token_id
