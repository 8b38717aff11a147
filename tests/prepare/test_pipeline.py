"""End-to-end prepare runs on real files: what is written, what is dropped, and restarts."""

from __future__ import annotations

import bz2
import gzip
import json

import numpy as np
import pytest

from tests.prepare.conftest import write_lines
from tokenmill.errors import TokenmillError
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import read_manifest, verify_directory
from tokenmill.vocab import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceEncoder


def words_settings(corpus, tmp_path, **extra) -> dict:
    return {
        "source_lang": "en",
        "target_lang": "de",
        "trainpref": str(corpus / "train"),
        "validpref": str(corpus / "valid"),
        "destdir": str(tmp_path / "bin"),
        "tokenizer": "none",
        **extra,
    }


def decoded(prefix, dictionary_path) -> list[str]:
    dictionary = Dictionary.load(dictionary_path)
    dataset = IndexedDataset(prefix)
    return [dictionary.decode(dataset[i][:-1]) for i in range(len(dataset))]


def test_sample_corpus_end_to_end(sample_settings):
    summary = prepare(build_config(sample_settings), progress=False)
    out = summary.destdir
    assert verify_directory(out) == []
    encoder = SentencePieceEncoder(out / "spm.model")
    dictionary = Dictionary.load(out / "dict.zh.txt")
    zh = IndexedDataset(out / "train.en-zh.zh")
    en = IndexedDataset(out / "train.en-zh.en")
    assert len(zh) == len(en) == summary.splits["train"]["langs"]["zh"]["sentences"]
    # every item ends with </s>; ids decode back to the cleaned text
    assert all(zh[i][-1] == dictionary.eos_index for i in range(len(zh)))
    cleaned = (out / ".work" / "clean" / "train.zh").read_text(encoding="utf-8").split("\n")[:-1]
    pieces = [dictionary.symbols[t] for t in zh[0][:-1]]
    assert encoder.processor.decode_pieces(pieces) == cleaned[0]
    # the dirty lines were handled and counted: one empty side, one duplicate
    clean = summary.splits["train"]["clean"]
    assert clean["filter"]["dropped_empty"] == 1 and clean["dedup"]["duplicates"] == 1
    assert clean["read"]["read"] == 345 and clean["kept"]["pairs"] == 343
    # full-width folded, U+2028 kept inside its line (the pair stays aligned)
    assert "The room has 12 chairs." in (out / ".work" / "clean" / "train.en").read_text(encoding="utf-8")
    manifest = read_manifest(out)
    assert manifest.stores["train.en-zh.zh"]["items"] == 343
    assert manifest.settings["source_lang"] == "en" and "splits" in manifest.summary
    assert (out / "preprocess.log").read_text(encoding="utf-8").startswith("tokenmill prepare: en-zh")


def test_output_order_equals_input_order_and_dictionary_ids_match(corpus, tmp_path):
    summary = prepare(build_config(words_settings(corpus, tmp_path, chunk_lines=7)), progress=False)
    out = summary.destdir
    expected = (corpus / "train.en").read_text(encoding="utf-8").split("\n")[:-1]
    assert decoded(out / "train.en-de.en", out / "dict.en.txt") == expected
    dictionary = Dictionary.load(out / "dict.en.txt")
    assert dictionary.symbols[4] == "x"  # the most frequent word comes first (fairseq's order)
    assert len(dictionary) % 8 == 0


def test_nwords_threshold_and_unknown_rate(corpus, tmp_path):
    summary = prepare(build_config(words_settings(corpus, tmp_path, thresholdsrc=2, nwordstgt=8)), progress=False)
    src_dict = Dictionary.load(summary.destdir / "dict.en.txt")
    assert "s1" not in src_dict and "w1" in src_dict  # s1 occurs once, below the threshold
    tgt_dict = Dictionary.load(summary.destdir / "dict.de.txt")
    assert len(tgt_dict) == 8  # 4 specials + 4 words
    row = summary.splits["train"]["langs"]["en"]
    assert row["unk"] == 40 and row["unk_percent"] == pytest.approx(100 * 40 / row["tokens"], abs=1e-3)


def test_tsv_jsonl_and_compressed_inputs_give_the_same_stores(corpus, tmp_path):
    src = (corpus / "train.en").read_text(encoding="utf-8").split("\n")[:-1]
    tgt = (corpus / "train.de").read_text(encoding="utf-8").split("\n")[:-1]
    rows = "".join(f"{s}\t{t}\n" for s, t in zip(src, tgt, strict=True))
    (tmp_path / "train.tsv.gz").write_bytes(gzip.compress(rows.encode()))
    rows = "".join(json.dumps({"en": s, "de": t}) + "\n" for s, t in zip(src, tgt, strict=True))
    (tmp_path / "train.jsonl.bz2").write_bytes(bz2.compress(rows.encode()))
    base = {"source_lang": "en", "target_lang": "de", "tokenizer": "none", "leakage": "off"}
    outputs = {}
    for name, settings in {
        "text": {"trainpref": str(corpus / "train")},
        "tsv": {"trainpref": str(tmp_path / "train.tsv.gz"), "input_format": "tsv"},
        "jsonl": {"trainpref": str(tmp_path / "train.jsonl.bz2"), "input_format": "jsonl"},
    }.items():
        out = tmp_path / name
        prepare(build_config({**base, **settings, "destdir": str(out)}), progress=False)
        outputs[name] = [(out / f"train.en-de.{lang}.bin").read_bytes() for lang in ("en", "de")]
    assert outputs["text"] == outputs["tsv"] == outputs["jsonl"]


def test_monolingual_megatron_layout_and_shards(corpus, tmp_path):
    settings = {
        "source_lang": "en",
        "trainpref": str(corpus / "train"),
        "destdir": str(tmp_path / "mono"),
        "tokenizer": "none",
        "layout": "megatron",
        "shard_size": 15,
    }
    summary = prepare(build_config(settings), progress=False)
    out = summary.destdir
    shards = [IndexedDataset(out / f"shard{k:03d}" / "train") for k in range(3)]
    assert [len(s) for s in shards] == [15, 15, 10]
    assert all(s.layout.value == "megatron" for s in shards)
    assert shards[2].document_indices.tolist() == list(range(11))
    assert (out / "shard001" / "dict.txt").read_bytes() == (out / "dict.txt").read_bytes()
    texts = [t for k in range(3) for t in decoded(out / f"shard{k:03d}" / "train", out / "dict.txt")]
    assert texts == (corpus / "train.en").read_text(encoding="utf-8").split("\n")[:-1]
    assert verify_directory(out) == []


def test_rerun_skips_finished_stages_and_redoes_changed_ones(sample_settings):
    first = prepare(build_config(sample_settings), progress=False)
    assert "tokenizer" in first.ran
    again = prepare(build_config(sample_settings), progress=False)
    assert again.ran == []
    changed = prepare(build_config({**sample_settings, "padding_factor": 4}), progress=False)
    assert "dictionary" in changed.ran and "tokenizer" not in changed.ran and "clean.train" not in changed.ran
    forced = prepare(build_config(sample_settings), force=True, progress=False)
    assert "clean.train" in forced.ran and "tokenizer" in forced.ran


def test_existing_spm_model_is_used(sample_settings, tmp_path):
    first = prepare(build_config(sample_settings), progress=False)
    other = {**sample_settings, "destdir": str(tmp_path / "second"), "spm_model": str(first.destdir / "spm.model")}
    second = prepare(build_config(other), progress=False)
    assert (second.destdir / "spm.model").read_bytes() == (first.destdir / "spm.model").read_bytes()
    for name in ("train.en-zh.zh.bin", "dict.zh.txt"):
        assert (second.destdir / name).read_bytes() == (first.destdir / name).read_bytes()


def test_mismatched_line_counts_fail_before_anything_is_written(corpus, tmp_path):
    write_lines(corpus / "train.de", ["only", "three", "lines"])
    settings = words_settings(corpus, tmp_path)
    with pytest.raises(TokenmillError) as info:
        prepare(build_config(settings), progress=False)
    message = str(info.value)
    assert "train.en" in message and "train.de" in message and "40" in message and "3" in message
    out = tmp_path / "bin"
    assert not list(out.glob("*.bin")) and not (out / "manifest.json").exists()


def test_invalid_utf8_error_names_file_and_line_or_is_skipped_and_counted(corpus, tmp_path):
    raw = (corpus / "train.de").read_bytes().split(b"\n")
    raw[6] = b"t6 \xff\xfe broken"
    (corpus / "train.de").write_bytes(b"\n".join(raw))
    with pytest.raises(TokenmillError, match=r"train\.de.*line 7|train\.de:7"):
        prepare(build_config(words_settings(corpus, tmp_path)), progress=False)
    summary = prepare(build_config(words_settings(corpus, tmp_path, on_invalid_utf8="skip")), progress=False)
    assert summary.splits["train"]["clean"]["read"]["invalid_utf8_skipped"] == 1
    en = decoded(summary.destdir / "train.en-de.en", summary.destdir / "dict.en.txt")
    de = decoded(summary.destdir / "train.en-de.de", summary.destdir / "dict.de.txt")
    assert len(en) == len(de) == 39 and "s6 w1 w0 x" not in en
    assert all(s.split()[0][1:] == t.split()[0][1:] for s, t in zip(en, de, strict=True)), "pairs stay aligned"


def test_leakage_removes_training_pairs_seen_in_valid(corpus, tmp_path):
    write_lines(corpus / "valid.en", ["s3 w3 w0 x"])
    write_lines(corpus / "valid.de", ["t3 v3 y"])
    summary = prepare(build_config(words_settings(corpus, tmp_path)), progress=False)
    assert summary.splits["train"]["clean"]["leakage"]["leaked"] == 1
    assert "s3 w3 w0 x" not in decoded(summary.destdir / "train.en-de.en", summary.destdir / "dict.en.txt")
    assert len(IndexedDataset(summary.destdir / "valid.en-de.en")) == 1


def test_joined_dictionary_is_shared(corpus, tmp_path):
    summary = prepare(build_config(words_settings(corpus, tmp_path, joined_dictionary=True)), progress=False)
    en, de = (summary.destdir / "dict.en.txt").read_bytes(), (summary.destdir / "dict.de.txt").read_bytes()
    assert en == de and b"s1 " in en and b"t1 " in en
    tokens = IndexedDataset(summary.destdir / "train.en-de.de")
    assert np.all(tokens[0][:-1] != Dictionary.unk_index)


def test_cleaning_on_worker_processes_equals_one_process(sample_settings, tmp_path, monkeypatch):
    from tokenmill.prepare.stages import clean

    monkeypatch.setattr(clean, "PARALLEL_CLEAN_MIN_LINES", 0)
    settings = {**sample_settings, "tokenizer": "none", "chunk_lines": 40}
    one = prepare(build_config({**settings, "workers": 1, "destdir": str(tmp_path / "one")}), progress=False)
    two = prepare(build_config({**settings, "workers": 2, "destdir": str(tmp_path / "two")}), progress=False)
    assert one.splits == two.splits  # the same counters per cleaning step
    for name in ("train.en-zh.en.bin", "train.en-zh.zh.bin", "train.en-zh.zh.idx", "dict.en.txt"):
        assert (one.destdir / name).read_bytes() == (two.destdir / name).read_bytes(), name


def test_t2t_subword_tokenizer_end_to_end(sample_settings):
    from tokenmill.vocab.t2t_subword import SubwordTextEncoder

    settings = {**sample_settings, "tokenizer": "t2t-subword", "approx_vocab_size": 300, "joined_dictionary": False}
    summary = prepare(build_config(settings), progress=False)
    out = summary.destdir
    encoder = SubwordTextEncoder.load(out / "vocab.subwords")
    zh = IndexedDataset(out / "train.en-zh.zh")
    cleaned = (out / ".work" / "clean" / "train.zh").read_text(encoding="utf-8").split("\n")[:-1]
    assert zh[0][-1] == 1, "T2T's <EOS>=1 ends every item"
    assert zh[0][:-1].tolist() == encoder.encode(cleaned[0])
    assert encoder.decode(zh[5][:-1].tolist()) == cleaned[5]
    assert not (out / "dict.zh.txt").exists()
    assert read_manifest(out).vocab["special"] == {"pad": 0, "eos": 1, "eod": 1}
    assert verify_directory(out) == []

    # The vocabulary serves another run as --tokenizer-model, as T2T's SubwordTextEncoder(filename) does:
    # nothing is built, and the same text gives the same stores.
    again = {**settings, "destdir": str(out.parent / "reused"), "tokenizer_model": str(out / "vocab.subwords")}
    reused = prepare(build_config(again), progress=False).destdir
    assert read_manifest(reused).vocab["special"] == {"pad": 0, "eos": 1, "eod": 1}
    for name in ("vocab.subwords", "train.en-zh.zh.bin", "train.en-zh.zh.idx", "train.en-zh.en.bin"):
        assert (reused / name).read_bytes() == (out / name).read_bytes(), name


def test_word_alignments_follow_their_pairs_through_cleaning(corpus, tmp_path):
    src = (corpus / "train.en").read_text(encoding="utf-8").split("\n")[:-1]
    # alignment i: "0-0 1-<i % 3>"; pairs 4 and 9 duplicate pair 1 and are dropped by dedup
    src[4] = src[9] = src[1]
    tgt = (corpus / "train.de").read_text(encoding="utf-8").split("\n")[:-1]
    tgt[4] = tgt[9] = tgt[1]
    write_lines(corpus / "train.en", src)
    write_lines(corpus / "train.de", tgt)
    write_lines(corpus / "train.align", [f"0-0 1-{i % 3}" for i in range(40)])
    write_lines(corpus / "valid.align", ["0-0", ""])
    settings = words_settings(corpus, tmp_path, align_suffix="align", shard_size=20)
    summary = prepare(build_config(settings), progress=False)
    out = summary.destdir
    kept = [i for i in range(40) if i not in (4, 9)]
    stored = [a for k in (0, 1) for a in _items(out / f"shard{k:03d}" / "train.align.en-de")]
    assert stored == [[0, 0, 1, i % 3] for i in kept]
    shard = out / "shard000"
    assert len(IndexedDataset(shard / "train.align.en-de")) == len(IndexedDataset(shard / "train.en-de.en"))
    assert _items(out / "shard000" / "valid.align.en-de") == [[0, 0], []]

    from tokenmill.data.pairs import PairDataset

    dataset = PairDataset.from_dir(out, "train", shard=0, alignments=True)
    assert dataset.align is not None and len(dataset.align) == 20


def _items(prefix):
    dataset = IndexedDataset(prefix)
    return [dataset[i].tolist() for i in range(len(dataset))]


def test_alignment_file_with_a_wrong_line_count_or_format_is_an_error(corpus, tmp_path):
    write_lines(corpus / "train.align", ["0-0"] * 39)
    with pytest.raises(TokenmillError, match="39 alignment lines for 40 sentence pairs"):
        prepare(build_config(words_settings(corpus, tmp_path, align_suffix="align", validpref=None)), progress=False)
    write_lines(corpus / "train.align", ["0-0"] * 7 + ["0:1"] + ["0-0"] * 32)
    with pytest.raises(TokenmillError, match="line 8 of the cleaned alignments"):
        prepare(build_config(words_settings(corpus, tmp_path, align_suffix="align", validpref=None)), progress=False)
    with pytest.raises(TokenmillError, match="--align-suffix needs --tokenizer none"):
        build_config({**words_settings(corpus, tmp_path, align_suffix="align"), "tokenizer": "sentencepiece"})


@pytest.mark.megatron
def test_monolingual_jsonl_documents_in_the_megatron_layout_read_by_megatron_core(tmp_path):
    from tests.peers import run_peer

    docs = [f"document number {i} has {'some ' * (i % 4)}words" for i in range(12)]
    rows = "".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(docs))
    (tmp_path / "corpus.jsonl.gz").write_bytes(gzip.compress(rows.encode()))
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "corpus.jsonl.gz"), "input_format": "jsonl",
                "tokenizer": "none", "layout": "megatron", "destdir": str(tmp_path / "lm"), "dedup": False}
    summary = prepare(build_config(settings), progress=False)
    prefix = summary.destdir / "train"
    assert decoded(prefix, summary.destdir / "dict.txt") == [" ".join(d.split()) for d in docs]
    seen = run_peer("megatron", """
from megatron.core.datasets.indexed_dataset import IndexedDataset
ds = IndexedDataset(PAYLOAD)
print("RESULT:" + json.dumps({"docs": ds.document_indices.tolist(), "first": ds[0].tolist(), "n": len(ds)}))
""", str(prefix))
    ours = IndexedDataset(prefix)
    assert seen == {"docs": list(range(13)), "first": ours[0].tolist(), "n": 12}
    assert ours[0][-1] == Dictionary.eos_index, "every document ends with </s> (the end-of-document token)"


def test_blank_line_documents_with_a_distinct_end_of_document_token_read_by_megatron_core(tmp_path):
    from tests.peers import run_peer

    text = "\n\nfirst document line one\nline two of it\n\n\n  \nsecond document\n\nthird one\nends here\n"
    (tmp_path / "books.en").write_text(text, encoding="utf-8")
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "books"), "tokenizer": "none",
                "layout": "megatron", "destdir": str(tmp_path / "lm"), "documents": "blank-line",
                "append_eod": True, "eod_symbol": "<|endoftext|>", "chunk_lines": 3}
    summary = prepare(build_config(settings), progress=False)
    out = summary.destdir
    dictionary = Dictionary.load(out / "dict.txt")
    eod = dictionary.index("<|endoftext|>")
    assert eod > Dictionary.unk_index, "the end-of-document symbol has an id of its own"
    ours = IndexedDataset(out / "train")
    docs = [dictionary.decode(ours[i]) for i in range(len(ours))]
    assert docs == [
        "first document line one line two of it <|endoftext|>",
        "second document <|endoftext|>",
        "third one ends here <|endoftext|>",
    ], "blocks split by blank lines (chunk borders ignored), each ending with the EOD token instead of </s>"
    seen = run_peer("megatron", """
from megatron.core.datasets.indexed_dataset import IndexedDataset
ds = IndexedDataset(PAYLOAD)
print("RESULT:" + json.dumps({"docs": ds.document_indices.tolist(), "last": [int(ds[i][-1]) for i in range(len(ds))]}))
""", str(out / "train"))
    assert seen == {"docs": [0, 1, 2, 3], "last": [eod, eod, eod]}


def test_append_eod_needs_the_symbol_in_a_given_dictionary(tmp_path):
    (tmp_path / "lm.en").write_text("a b\nc d\n", encoding="utf-8")
    (tmp_path / "dict.txt").write_text("a 1\nb 1\nc 1\nd 1\n", encoding="utf-8")
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "lm"), "tokenizer": "none", "append_eod": True,
                "eod_symbol": "<eod>", "srcdict": str(tmp_path / "dict.txt"), "destdir": str(tmp_path / "out")}
    with pytest.raises(TokenmillError, match="<eod> is not in the dictionary"):
        prepare(build_config(settings), progress=False)
    with pytest.raises(TokenmillError, match="--documents blank-line is for monolingual"):
        build_config({**settings, "target_lang": "de", "documents": "blank-line", "append_eod": False})


def test_a_rerun_with_bigger_shards_removes_the_shards_it_no_longer_writes(corpus, tmp_path):
    settings = {"source_lang": "en", "trainpref": str(corpus / "train"), "destdir": str(tmp_path / "mono"),
                "tokenizer": "none", "shard_size": 15}
    out = prepare(build_config(settings), progress=False).destdir
    assert (out / "shard002" / "train.idx").exists()
    prepare(build_config({**settings, "shard_size": 20}), progress=False)
    assert sorted(p.name for p in out.glob("shard*")) == ["shard000", "shard001"]
    prepare(build_config({**settings, "shard_size": 0}), progress=False)
    assert list(out.glob("shard*")) == [] and (out / "train.idx").exists()
    assert verify_directory(out) == []


def test_long_documents_reach_the_tokenizer_in_bounded_batches():
    from tokenmill.prepare.stages.encode import text_batches

    rng = np.random.default_rng(0)
    lines = ["x" * int(n) for n in rng.integers(0, 3000, 500)]
    batches = list(text_batches(lines, 10_000))
    assert [line for batch in batches for line in batch] == lines, "every line once, in order"
    assert all(sum(map(len, b)) <= 10_000 or len(b) == 1 for b in batches)
    assert len(batches) > 50 and list(text_batches(lines[:3], 10_000)) == [lines[:3]]


WORDY = [
    "the cat sat on the mat", "", "a <unk> and a </s> in the text", "the   mat  was red", "<s> cat cat cat",
    "zebra", "the dog", "dog  dog the", "und die katze", "der hund",
]


@pytest.mark.parametrize("extra", [
    {}, {"joined_dictionary": True}, {"nwordssrc": 9, "thresholdtgt": 2}, {"srcdict": "GIVEN"},
])
def test_whitespace_ids_are_the_dictionarys_ids_of_each_word(tmp_path, extra):
    """Whitespace text is split once (work ids per split, in order of first appearance): the dictionaries
    and ids equal fairseq's rules applied to the words themselves, on train and on a valid split with
    words train never saw, specials written as text included."""
    from collections import Counter

    train_src = WORDY * 3 + ["the end"]
    train_tgt = [line[::-1] for line in train_src]
    valid_src, valid_tgt = ["a unseen word", "the cat", ""], ["x y", "", "tac eht"]
    (tmp_path / "raw").mkdir()
    write_lines(tmp_path / "raw" / "train.en", train_src)
    write_lines(tmp_path / "raw" / "train.de", train_tgt)
    write_lines(tmp_path / "raw" / "valid.en", valid_src)
    write_lines(tmp_path / "raw" / "valid.de", valid_tgt)
    if extra.get("srcdict"):
        given = Dictionary.from_counts(Counter(["cat", "the", "mat", "dog", "the"]), padding_factor=1)
        given.save(tmp_path / "given.txt")
        extra = {"srcdict": str(tmp_path / "given.txt")}
    settings = {"source_lang": "en", "target_lang": "de", "trainpref": str(tmp_path / "raw" / "train"),
                "validpref": str(tmp_path / "raw" / "valid"), "destdir": str(tmp_path / "out"), "tokenizer": "none",
                "normalize": {"collapse_whitespace": False}, "filters": {"drop_empty": False}, "dedup": False,
                "leakage": "off", **extra}
    prepare(build_config(settings), progress=False)
    out = tmp_path / "out"
    train = {"en": train_src, "de": train_tgt}
    counts = {lang: Counter(word for line in lines for word in line.split()) for lang, lines in train.items()}
    if extra.get("joined_dictionary"):
        counts = dict.fromkeys(counts, counts["en"] + counts["de"])
    limits = {"en": (extra.get("nwordssrc", -1), -1), "de": (-1, extra.get("thresholdtgt", -1))}
    for lang, lines in train.items():
        nwords, threshold = limits[lang]
        expected = Dictionary.from_counts(counts[lang], nwords=nwords, threshold=threshold)
        if lang == "en" and extra.get("srcdict"):
            expected = Dictionary.load(tmp_path / "given.txt")
        dictionary = Dictionary.load(out / f"dict.{lang}.txt")
        assert dictionary.symbols == expected.symbols and dictionary.counts == expected.counts
        for split, split_lines in (("train", lines), ("valid", valid_src if lang == "en" else valid_tgt)):
            store = IndexedDataset(out / f"{split}.en-de.{lang}")
            ids = [store[i].tolist() for i in range(len(store))]
            assert ids == [[dictionary.index(w) for w in line.split()] + [dictionary.eos_index]
                           for line in split_lines]
    assert verify_directory(out) == []


def test_whitespace_text_kept_as_read_goes_straight_from_the_input(tmp_path):
    write_lines(tmp_path / "train.txt", WORDY)
    settings = {"source_lang": "txt", "trainpref": str(tmp_path / "train"), "destdir": str(tmp_path / "out"),
                "tokenizer": "none", "normalize": {"nfkc": False, "fullwidth": False, "remove_control": False,
                                                   "collapse_whitespace": False},
                "filters": {"drop_empty": False}, "dedup": False, "leakage": "off"}
    summary = prepare(build_config(settings), progress=False)
    assert not (tmp_path / "out" / ".work" / "clean" / "train.txt").exists()
    assert summary.splits["train"]["clean"]["kept"] == {"lines": len(WORDY)}
    dictionary = Dictionary.load(tmp_path / "out" / "dict.txt")
    store = IndexedDataset(tmp_path / "out" / "train")
    assert [dictionary.decode(store[i][:-1]) for i in range(len(store))] == [" ".join(x.split()) for x in WORDY]


@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.int64])
def test_end_tokens_go_after_every_item_in_the_stores_dtype(dtype):
    from tokenmill.prepare.encoded_parts import ended, with_end_token

    rng = np.random.default_rng(5)
    for items in (0, 1, 7, 300):
        lengths = rng.integers(0, 6, items)
        lengths[: min(items, 2)] = 0  # empty items get the end token alone
        flat = rng.integers(0, 60_000, int(lengths.sum())).astype(np.int32)
        out = with_end_token(flat, lengths, 2, np.dtype(dtype))
        assert out.dtype == dtype and out.tolist() == np.insert(flat, np.cumsum(lengths), 2).tolist()
        # Megatron's rule: an item without ids gets no end token (it becomes a document without a sequence)
        out, sizes = ended(flat, lengths, 2, np.dtype(dtype), empty_documents=True)
        filled = lengths > 0
        assert sizes.tolist() == (lengths + filled).tolist()
        assert out.tolist() == np.insert(flat, np.cumsum(lengths)[filled], 2).tolist()
    with pytest.raises(ValueError, match="token ids span"):
        with_end_token(np.array([5, 70_000], dtype=np.int32), np.array([2]), 2, np.dtype(np.uint16))
