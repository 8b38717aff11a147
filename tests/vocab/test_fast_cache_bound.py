"""The fast encoder is loaded afresh after a bounded number of characters (its pretoken caches grow with every
distinct word and are never trimmed): the ids are the same as one long-lived encoder's."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.vocab.fast_corpus import held_out_documents
from tests.vocab.multilingual import sample_lines
from tokenmill._core.ordered import ordered_map
from tokenmill.vocab.tokenizer import train_tokenizer

gigatoken = pytest.importorskip("gigatoken")

from tokenmill.vocab.fast_gigatoken import batch_encoder  # noqa: E402  (needs gigatoken)


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> bytes:
    """A small byte-level BPE ``tokenizer.json`` trained on the sample lines."""
    path = tmp_path_factory.mktemp("bpe") / "tokenizer.json"
    return train_tokenizer("hf", sample_lines(), {"kind": "byte-level-bpe", "vocab_size": 1200}, path).path.read_bytes()


def counting_loader(spec: bytes, seconds: float = 0.0) -> tuple[list[int], object]:
    """A loader of ``spec`` that records each load (and takes ``seconds`` doing it), and its record."""
    loads: list[int] = []

    def load():
        loads.append(1)
        time.sleep(seconds)
        return gigatoken.Tokenizer.from_json(spec)

    return loads, load


def test_a_fresh_load_every_few_characters_gives_the_same_ids(spec):
    loads, load = counting_loader(spec)
    documents = held_out_documents(3000)
    batches = [documents[i : i + 250] for i in range(0, len(documents), 250)]
    fresh = batch_encoder(load, fresh_after=20_000)
    kept = batch_encoder(lambda: gigatoken.Tokenizer.from_json(spec))
    for batch in batches:
        got, expected = fresh(batch, 2), kept(batch, 1)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    chars = sum(map(len, documents))
    assert chars > 5 * 20_000 and len(loads) > 5  # loaded again after every ~20k characters
    assert len(loads) <= len(batches)


def test_batches_on_several_threads_give_the_same_ids_across_fresh_loads(spec):
    """prepare runs one batch per thread, ``--workers`` at once: batches encoded on three threads while the
    encoder is loaded afresh again and again (each load slow, so other threads' batches arrive meanwhile) get
    the ids of one long-lived encoder, in order, and each swap loads once."""
    loads, load = counting_loader(spec, seconds=0.02)
    documents = held_out_documents(3000)
    batches = [documents[i : i + 100] for i in range(0, len(documents), 100)]
    fresh = batch_encoder(load, fresh_after=20_000)
    kept = batch_encoder(lambda: gigatoken.Tokenizer.from_json(spec))
    got = list(ordered_map(lambda batch: fresh(batch, 1), batches, 3))
    for (flat, lengths), batch in zip(got, batches, strict=True):
        expected = kept(batch, 1)
        assert np.array_equal(flat, expected[0]) and np.array_equal(lengths, expected[1])
    chars = sum(map(len, documents))
    assert 5 < len(loads) <= chars // 20_000 + 1  # loaded afresh many times, never twice for one swap
