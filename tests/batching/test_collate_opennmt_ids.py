"""OpenNMT collate with OpenNMT-tf's ids: <blank>=0 pads, <s>=1, </s>=2, <unk> after the vocabulary file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokenmill.batching import BatchConfig
from tokenmill.batching.collate import CollateOptions, collate_fairseq, collate_opennmt
from tokenmill.data.pairs import PairDataset, PairOptions
from tokenmill.errors import ConfigError
from tokenmill.loader import BatchIterator
from tokenmill.store import IndexedWriter
from tokenmill.vocab.dictionary import Dictionary, write_opennmt_tf_vocab

# an OpenNMT-tf vocabulary per side, as onmt-build-vocab writes them (no <unk>: OpenNMT-tf adds it last)
SRC_VOCAB = "<blank>\n<s>\n</s>\n▁the\n▁cat\n▁sat\n▁on\n▁mat\n"
TGT_VOCAB = "<blank>\n<s>\n</s>\n▁die\n▁katze\n▁saß\n▁auf\n▁der\n▁matte\n▁hund\n"
PAIRS = [
    ("▁the ▁cat ▁sat ▁on ▁the ▁mat", "▁die ▁katze ▁saß ▁auf ▁der ▁matte"),
    ("▁the ▁dog", "▁der ▁hund"),  # ▁dog is unknown
    ("▁cat", "▁katze ▁miaut ▁laut"),  # two unknown target words
]


@pytest.fixture
def data(tmp_path):
    """A prepared directory whose dictionaries came from OpenNMT-tf vocabularies (via --srcdict/--tgtdict)."""
    root = tmp_path / "bin"
    root.mkdir()
    for lang, vocab, side in (("en", SRC_VOCAB, 0), ("de", TGT_VOCAB, 1)):
        (tmp_path / f"{lang}.vocab").write_text(vocab, encoding="utf-8")
        dictionary = Dictionary.load(tmp_path / f"{lang}.vocab")
        dictionary.pad_to_multiple(4)  # fillers too: they are symbols like any other
        dictionary.save(root / f"dict.{lang}.txt")
        with IndexedWriter(root / f"train.en-de.{lang}", layout="fairseq", vocab_size=len(dictionary)) as writer:
            for pair in PAIRS:
                writer.add_item(dictionary.encode_tokens(pair[side].split()))
    (root / "manifest.json").write_text(json.dumps({"source_lang": "en", "target_lang": "de"}))
    return root


def vocab_lines(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def as_tokens(ids: np.ndarray, lines: list[str]) -> list[list[str]]:
    """OpenNMT-tf's reading of ids: line i of the vocabulary, <unk> for the id just past the last line."""
    assert int(ids.max()) <= len(lines)
    return [[lines[i] if i < len(lines) else "<unk>" for i in row] for row in ids.tolist()]


def test_collated_ids_read_through_the_written_vocabulary_give_the_tokens(data, tmp_path):
    dataset = PairDataset.from_dir(data, options=PairOptions(remove_eos_from_source=True))
    src_lines = vocab_lines(write_opennmt_tf_vocab(Dictionary.load(data / "dict.en.txt"), tmp_path / "src.txt"))
    tgt_lines = vocab_lines(write_opennmt_tf_vocab(Dictionary.load(data / "dict.de.txt"), tmp_path / "tgt.txt"))
    # the vocabulary handed to OpenNMT-tf is the one the user gave, plus the dictionary's fillers
    assert "\n".join(src_lines[: SRC_VOCAB.count("\n")]) + "\n" == SRC_VOCAB
    assert src_lines[SRC_VOCAB.count("\n") :] == ["madeupword0000", "madeupword0001", "madeupword0002"]

    features, labels = collate_opennmt(dataset, np.array([0, 1, 2]), CollateOptions(ids="opennmt"))
    blank = "<blank>"
    assert as_tokens(features["ids"], src_lines) == [
        ["▁the", "▁cat", "▁sat", "▁on", "▁the", "▁mat"],
        ["▁the", "<unk>", blank, blank, blank, blank],
        ["▁cat", blank, blank, blank, blank, blank],
    ]
    assert as_tokens(labels["ids"], tgt_lines) == [
        ["<s>", "▁die", "▁katze", "▁saß", "▁auf", "▁der", "▁matte"],
        ["<s>", "▁der", "▁hund", blank, blank, blank, blank],
        ["<s>", "▁katze", "<unk>", "<unk>", blank, blank, blank],
    ]
    assert as_tokens(labels["ids_out"], tgt_lines) == [
        ["▁die", "▁katze", "▁saß", "▁auf", "▁der", "▁matte", "</s>"],
        ["▁der", "▁hund", "</s>", blank, blank, blank, blank],
        ["▁katze", "<unk>", "<unk>", "</s>", blank, blank, blank],
    ]
    # the numbers themselves: OpenNMT-tf's convention
    assert features["ids"][1].tolist() == [3, len(src_lines), 0, 0, 0, 0]  # ▁the=3, <unk>=vocab size, <blank>=0
    assert labels["ids"][:, 0].tolist() == [1, 1, 1] and labels["ids_out"][0, -1] == 2
    assert features["length"].tolist() == [6, 2, 1] and labels["length"].tolist() == [7, 3, 4]
    assert features["ids"].dtype == np.int64


def test_same_tokens_as_the_fairseq_ids(data):
    """Only the numbering changes: lengths, shapes and the tokens behind the ids are those of ids="fairseq"."""
    dataset = PairDataset.from_dir(data)
    options = CollateOptions(tokens=True, pad_to_multiple=4)
    plain_f, plain_l = collate_opennmt(dataset, np.array([2, 0]), options)
    onmt_f, onmt_l = collate_opennmt(dataset, np.array([2, 0]), CollateOptions(tokens=True, pad_to_multiple=4,
                                                                                ids="opennmt"))
    for plain, onmt in ((plain_f, onmt_f), (plain_l, onmt_l)):
        assert plain.keys() == onmt.keys()
        for key in plain:
            assert plain[key].shape == onmt[key].shape, key
        assert plain["tokens"].tolist() == onmt["tokens"].tolist()
        assert plain["length"].tolist() == onmt["length"].tolist()
    size = len(Dictionary.load(data / "dict.de.txt"))
    mapping = {0: 1, 1: 0, 2: 2, 3: size - 1}
    expected = np.vectorize(lambda i: mapping.get(i, i - 1))(plain_l["ids_out"])
    assert onmt_l["ids_out"].tolist() == expected.tolist()
    assert onmt_f["ids"][1, -1] == 0 and onmt_f["ids"][1, 6] == 2  # source keeps its </s> (=2), then <blank>


def test_options_that_add_tokens_map_them_too(data):
    dataset = PairDataset.from_dir(data, options=PairOptions(append_bos=True))
    features, _ = collate_opennmt(dataset, np.array([1]), CollateOptions(ids="opennmt"))
    assert features["ids"].tolist() == [[1, 3, 11, 2]]  # <s> ▁the <unk> </s> (source vocab: 8 lines + 3 fillers)


def test_through_the_batch_iterator(data):
    dataset = PairDataset.from_dir(data, options=PairOptions(remove_eos_from_source=True))
    iterator = BatchIterator(dataset, BatchConfig(mode="opennmt", max_tokens=64, shuffle=False), collate="opennmt",
                             collate_options=CollateOptions(ids="opennmt"), cache=False)
    batches = list(iterator)
    assert batches and all((labels["ids"][:, 0] == 1).all() for _, labels in batches)
    assert sorted(int(n) for features, _ in batches for n in features["length"]) == [1, 2, 6]


def test_misuse_is_a_clear_error(data):
    with pytest.raises(ConfigError, match="collate ids 'tf' is unknown; choose one of fairseq, opennmt"):
        CollateOptions(ids="tf")
    dataset = PairDataset.from_dir(data)
    with pytest.raises(ConfigError, match="are for the OpenNMT collate"):
        collate_fairseq(dataset, np.array([0]), CollateOptions(ids="opennmt"))
    bare = PairDataset(dataset.src, dataset.tgt)  # no directory: no dictionaries to number by
    with pytest.raises(ConfigError, match="OpenNMT ids need the source dictionary"):
        collate_opennmt(bare, np.array([0]), CollateOptions(ids="opennmt"))
