"""OpenNMT vocabularies read as fairseq dictionaries, and dictionaries written as OpenNMT-tf vocabularies."""

from __future__ import annotations

import pytest

from tokenmill.errors import ConfigError, FormatError
from tokenmill.vocab.dictionary import Dictionary, opennmt_tf_id_table, write_opennmt_tf_vocab

FAIRSEQ_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def test_opennmt_tf_vocabulary_one_token_per_line(tmp_path):
    # what onmt-build-vocab writes: <blank> <s> </s> first, no <unk> (OpenNMT-tf adds it after the last line)
    vocab = write(tmp_path / "vocab.txt", "<blank>\n<s>\n</s>\n▁the\n,\n▁de\n.\n")
    dictionary = Dictionary.load(vocab)
    assert dictionary.format == "opennmt-tf"
    assert dictionary.symbols == [*FAIRSEQ_SPECIALS, "▁the", ",", "▁de", "."]
    assert dictionary.counts[4:] == [1, 1, 1, 1]
    assert dictionary.index("▁de") == 6 and dictionary.index("never") == dictionary.unk_index


def test_specials_are_skipped_wherever_they_stand(tmp_path):
    vocab = write(tmp_path / "vocab.txt", "a\n<unk>\nb\n<pad>\n\nc\n<blank>\n</s>\n<s>\n")
    dictionary = Dictionary.load(vocab)
    assert dictionary.symbols == [*FAIRSEQ_SPECIALS, "a", "b", "c"]  # blank lines skipped too


def test_opennmt_py_vocabulary_with_tab_counts(tmp_path):
    # onmt_build_vocab (OpenNMT-py 3): "token<TAB>count", most frequent first; specials may lead
    vocab = write(tmp_path / "src.vocab", "<unk>\t0\n<blank>\t0\n<s>\t0\n</s>\t0\n▁the\t120\n,\t99\nwith space\t7\n")
    dictionary = Dictionary.load(vocab)
    assert dictionary.format == "opennmt-py"
    assert dictionary.symbols == [*FAIRSEQ_SPECIALS, "▁the", ",", "with space"]
    assert dictionary.counts[4:] == [120, 99, 7]


def test_space_counts_starting_with_an_opennmt_special(tmp_path):
    vocab = write(tmp_path / "vocab.txt", "<blank> 0\n<unk> 0\n<s> 0\n</s> 0\nhello 9\nworld 4\n")
    dictionary = Dictionary.load(vocab)
    assert dictionary.format == "opennmt-counts"
    assert dictionary.symbols == [*FAIRSEQ_SPECIALS, "hello", "world"] and dictionary.counts[4:] == [9, 4]


def test_fairseq_dictionaries_read_as_before(tmp_path):
    plain = Dictionary.load(write(tmp_path / "dict.txt", "hello 3\nworld 2\n"))
    assert plain.format == "fairseq" and plain.symbols == [*FAIRSEQ_SPECIALS, "hello", "world"]
    assert plain.counts[4:] == [3, 2]
    # fairseq's overwrite flag: a repeated token gets a new id (the special <unk> included)
    flag = " #fairseq:overwrite"
    flagged = Dictionary.load(write(tmp_path / "flag.txt", f"<unk> 5{flag}\nhello 3\nhello 1{flag}\n"))
    assert flagged.format == "fairseq"
    assert flagged.symbols == [*FAIRSEQ_SPECIALS, "<unk>", "hello", "hello"] and flagged.index("hello") == 6
    # a fairseq dictionary whose tokens have spaces: the count is after the last one
    spaced = Dictionary.load(write(tmp_path / "spaced.txt", "a b 4\n"))
    assert spaced.symbols[4:] == ["a b"]
    assert Dictionary.load(write(tmp_path / "empty.txt", "\n\n")).symbols == FAIRSEQ_SPECIALS


def test_saving_an_opennmt_vocabulary_gives_a_fairseq_dictionary(tmp_path):
    dictionary = Dictionary.load(write(tmp_path / "vocab.txt", "<blank>\n<s>\n</s>\nx\ny\n"))
    dictionary.save(tmp_path / "dict.txt")
    assert (tmp_path / "dict.txt").read_text(encoding="utf-8") == "x 1\ny 1\n"
    again = Dictionary.load(tmp_path / "dict.txt")
    assert again.format == "fairseq" and again.symbols == dictionary.symbols


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # fairseq: unchanged messages
        ("hello 3\nworld many\n", r"bad:2: expected '<token> <count>', got 'world many'"),
        ("hello 3\nhello 4\n", r"bad:2: duplicate token 'hello'; fairseq needs '#fairseq:overwrite'"),
        ("hello 3\n\nworld\n", r"bad:3: expected '<token> <count>', got 'world'"),
        # one token per line: a later line with a count or a space
        ("<blank>\n<s>\n</s>\nhello\nworld 3\n", r"bad:5: expected one token per line, got 'world 3'; line 1 has no"),
        ("a\nb\na\n", r"bad:3: duplicate token 'a' \(first on line 1\)"),
        # token<TAB>count: a line without a count, or with a word for one
        ("x\t3\ny\n", r"bad:2: expected '<token><TAB><count>' like line 1"),
        ("x\t3\ny\tmany\n", r"bad:2: expected '<token><TAB><count>' like line 1"),
        ("x\t3\nx\t2\n", r"bad:2: duplicate token 'x' \(first on line 1\)"),
        ("<unk> 0\nhello\n", r"bad:2: expected '<token> <count>' like line 1 \(an OpenNMT vocabulary with counts\)"),
    ],
)
def test_bad_vocabularies_name_file_and_line(tmp_path, text, message):
    with pytest.raises(FormatError, match=message) as info:
        Dictionary.load(write(tmp_path / "bad", text))
    assert "\n" not in str(info.value)


def test_opennmt_vocabulary_as_srcdict_and_tgtdict(tmp_path):
    from tokenmill.prepare import build_config, prepare
    from tokenmill.store import IndexedDataset

    raw = tmp_path / "raw"
    raw.mkdir()
    write(raw / "train.en", "the cat sat\na dog ran\n")
    write(raw / "train.de", "die katze\nein hund lief\n")
    write(tmp_path / "src.vocab", "<blank>\n<s>\n</s>\nthe\ncat\nsat\na\ndog\n")  # "ran" is unknown
    write(tmp_path / "tgt.vocab", "<unk>\t0\n<blank>\t0\n<s>\t0\n</s>\t0\nkatze\t5\ndie\t4\nein\t3\nhund\t2\nlief\t1\n")
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(raw / "train"), "tokenizer": "none",
                "srcdict": str(tmp_path / "src.vocab"), "tgtdict": str(tmp_path / "tgt.vocab"),
                "destdir": str(tmp_path / "bin")}
    prepare(build_config(settings), progress=False)
    out = tmp_path / "bin"
    assert (out / "dict.en.txt").read_text(encoding="utf-8") == "the 1\ncat 1\nsat 1\na 1\ndog 1\n"
    assert (out / "dict.de.txt").read_text(encoding="utf-8") == "katze 5\ndie 4\nein 3\nhund 2\nlief 1\n"
    en = IndexedDataset(out / "train.en-de.en")
    de = IndexedDataset(out / "train.en-de.de")
    assert [en[i].tolist() for i in range(2)] == [[4, 5, 6, 2], [7, 8, 3, 2]]
    assert [de[i].tolist() for i in range(2)] == [[5, 4, 2], [6, 7, 8, 2]]


def test_a_bad_opennmt_vocabulary_is_one_config_error_naming_the_flag(tmp_path):
    from tokenmill.prepare import build_config

    write(tmp_path / "t.en", "a\n")
    write(tmp_path / "t.de", "b\n")
    write(tmp_path / "vocab.txt", "<blank>\n<s>\nx y\n")
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(tmp_path / "t"),
                "srcdict": str(tmp_path / "vocab.txt"), "destdir": str(tmp_path / "bin")}
    with pytest.raises(ConfigError, match=r"--srcdict: .*vocab\.txt:3: expected one token per line"):
        build_config(settings)


# ----------------------------------------------------------------------------- writing OpenNMT-tf vocabularies
def test_opennmt_tf_vocabulary_round_trip(tmp_path):
    original = "<blank>\n<s>\n</s>\n▁the\n,\n▁de\n.\n"
    dictionary = Dictionary.load(write(tmp_path / "vocab.txt", original))
    written = write_opennmt_tf_vocab(dictionary, tmp_path / "back.txt")
    assert written.read_text(encoding="utf-8") == original  # OpenNMT-tf -> fairseq -> OpenNMT-tf: the same file


def test_id_table_follows_the_written_file(tmp_path):
    dictionary = Dictionary.from_counts({"b": 3, "a": 5, "c": 1}, padding_factor=8)  # a b c + madeupword0000
    lines = write_opennmt_tf_vocab(dictionary, tmp_path / "v.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert lines == ["<blank>", "<s>", "</s>", "a", "b", "c", "madeupword0000"]
    table = opennmt_tf_id_table(len(dictionary))
    assert table.tolist() == [1, 0, 2, 7, 3, 4, 5, 6]
    for fairseq_id, symbol in enumerate(dictionary.symbols):
        opennmt_id = int(table[fairseq_id])
        expected = {"<pad>": "<blank>"}.get(symbol, symbol)
        # <unk> is the id just past the file's last line (OpenNMT-tf's out-of-vocabulary bucket)
        assert (lines[opennmt_id] if opennmt_id < len(lines) else "<unk>") == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x 3\n<s> 1 #fairseq:overwrite\n", r"symbol '<s>' \(id 5\) is an OpenNMT-tf special token"),
        ("x 3\nx 1 #fairseq:overwrite\n", r"symbol 'x' \(id 5\) is listed twice"),
        ("x 3\n<blank> 2\n", r"symbol '<blank>' \(id 5\) is an OpenNMT-tf special token"),
    ],
)
def test_symbols_opennmt_tf_cannot_hold_are_refused(tmp_path, text, message):
    dictionary = Dictionary.load(write(tmp_path / "dict.txt", text))
    with pytest.raises(FormatError, match=message):
        write_opennmt_tf_vocab(dictionary, tmp_path / "v.txt")
    assert not (tmp_path / "v.txt").exists()
