"""A tokenizer backend is a registered part: one added from this module (no edit to tokenmill) prepares a corpus
end to end, and ``tokenmill.batches`` serves what it stored."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tokenmill.vocab.tokenizer import BACKENDS, TokenizerBase, flatten, register_backend

SPECIALS = ("<pad>", "</s>", "<unk>")
"""The toy vocabulary's first ids: pad 0, eos 1, unk 2; then one id per character of the model file."""


class CharTokenizer(TokenizerBase):
    """The toy backend: one id per character, from a model file listing the characters, one per line."""

    name = "test-chars"
    filename = "chars.txt"

    def __init__(self, path: str | Path, settings: object = None) -> None:
        super().__init__(path, settings)
        chars = self.path.read_text(encoding="utf-8").split("\n")
        self.symbols = [*SPECIALS, *(c for c in chars if c)]
        self.ids = {symbol: i for i, symbol in enumerate(self.symbols)}

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    @property
    def special_ids(self) -> dict[str, int]:
        return {"pad": 0, "eos": 1, "unk": 2, "eod": 1}

    def encode_batch(self, lines: Sequence[str], num_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        return flatten([[self.ids.get(c, 2) for c in line] for line in lines])

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.symbols[i] for i in ids if i >= len(SPECIALS))

    def id_to_token(self, token_id: int) -> str:
        return self.symbols[self._check_id(token_id)]

    def token_to_id(self, token: str) -> int | None:
        return self.ids.get(token)


@pytest.fixture(autouse=True, scope="module")
def registered() -> Iterator[None]:
    """The toy backend, registered for this module's tests only (other tests see the built-in registry)."""
    register_backend("test-chars", f"{__name__}:CharTokenizer", "a list of characters, one per line")
    yield
    del BACKENDS["test-chars"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), pairs=300)


def test_a_registered_tokenizer_prepares_and_batches(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TOKENMILL_CACHE", str(tmp_path / "cache"))
    text = "".join((corpus / f"train.{lang}").read_text(encoding="utf-8") for lang in ("en", "zh"))
    model = tmp_path / "chars.txt"
    model.write_text("\n".join(sorted(set(text) - {"\n"})) + "\n", encoding="utf-8")
    destdir = tmp_path / "bin"
    summary = tokenmill.prepare(
        {"source_lang": "en", "target_lang": "zh", "trainpref": str(corpus / "train"),
         "validpref": str(corpus / "valid"), "destdir": str(destdir), "tokenizer": "test-chars",
         "tokenizer_model": str(model), "workers": 1},
        progress=False,
    )
    assert summary.splits["train"]["langs"]["en"]["sentences"] > 0
    manifest = json.loads((destdir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["vocab"]["tokenizer"] == "test-chars"

    data = tokenmill.open(destdir)
    tokenizer = CharTokenizer(model)
    pairs = set(zip(*((corpus / f"train.{lang}").read_text(encoding="utf-8").split("\n") for lang in ("en", "zh")),
                    strict=True))
    eos = tokenizer.special_ids["eos"]
    for i in range(len(data)):
        item = data[i]
        assert item["source"][-1] == eos and item["target"][-1] == eos, "the core appends the backend's end token"
        decoded = (tokenizer.decode(item["source"][:-1]), tokenizer.decode(item["target"][:-1]))
        assert decoded in pairs, "stores hold the toy backend's own ids of a training pair"
    assert len(data) == summary.splits["train"]["langs"]["en"]["sentences"]

    longest = int(max(data.src_sizes.max(), data.tgt_sizes.max()))  # a budget every pair fits: none dropped
    served = list(tokenmill.batches(data, tokenmill.BatchConfig(max_tokens=longest), collate=None))
    ids = np.concatenate([np.asarray(batch) for batch in served])
    assert sorted(ids.tolist()) == list(range(len(data))), "every stored pair is served once"


def test_the_registry_holds_the_toy_backend() -> None:
    assert BACKENDS["test-chars"].resolve() is CharTokenizer
