"""Readers: compression by magic, strict line splitting, UTF-8 policies, alignment, ranges."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenmill.text.lines as lines_module
import tokenmill.text.readers as readers
from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.text.readers import (
    JsonlSource,
    MonoSource,
    ParallelFiles,
    ReadOptions,
    TsvSource,
    byte_ranges,
    count_lines,
    detect_compression,
    iter_byte_range,
    line_offsets,
    open_source,
    scan_lines,
)
from tokenmill.text.stats import StepStats

# separators that str.splitlines() honours but a parallel corpus must keep inside a line
INNER = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]

COMPRESSORS = {
    "": lambda b: b,
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


def write(path: Path, data: bytes | str) -> Path:
    raw = data.encode() if isinstance(data, str) else data
    path.write_bytes(COMPRESSORS[path.suffix if path.suffix in COMPRESSORS else ""](raw))
    return path


def read_all(source) -> tuple[list[str], list[str] | None]:
    src: list[str] = []
    tgt: list[str] | None = None
    for chunk in source.chunks():
        src += chunk.src
        if chunk.tgt is not None:
            tgt = (tgt or []) + chunk.tgt
    return src, tgt


# ---------------------------------------------------------------------------- compression


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_every_compression_reads_the_same_lines(tmp_path: Path, suffix: str) -> None:
    text = "first line\nzweite Zeile\n第三行\n"
    path = write(tmp_path / f"corpus.txt{suffix}", text)
    assert read_all(MonoSource([path]))[0] == ["first line", "zweite Zeile", "第三行"]
    assert count_lines(path) == 3


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_magic_bytes_win_over_a_missing_extension(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "no_extension"
    path.write_bytes(COMPRESSORS[suffix](b"a\nb\n"))
    assert detect_compression(path) == {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}[suffix]
    assert read_all(MonoSource([path]))[0] == ["a", "b"]


def test_misnamed_plain_file_is_an_error_not_a_guess(tmp_path: Path) -> None:
    path = tmp_path / "plain.gz"
    path.write_bytes(b"not gzip\n")
    with pytest.raises(TokenmillError, match=r"plain\.gz: the name says gzip"):
        MonoSource([path]).scan()


def test_truncated_gzip_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(b"line\n" * 10000)[:-20])
    with pytest.raises(TokenmillError, match=r"cut\.gz: cannot read.*truncated or corrupt"):
        count_lines(path)


def test_multi_frame_zstd_and_multi_member_gzip_are_read_through(tmp_path: Path) -> None:
    z = tmp_path / "two.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(b"a\n") + zstandard.ZstdCompressor().compress(b"b\n"))
    g = tmp_path / "two.gz"
    g.write_bytes(gzip.compress(b"a\n") + gzip.compress(b"b\n"))
    assert read_all(MonoSource([z]))[0] == ["a", "b"]
    assert read_all(MonoSource([g]))[0] == ["a", "b"]


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(TokenmillError, match=r"nope\.txt: no such file"):
        MonoSource([tmp_path / "nope.txt"]).scan()


# ---------------------------------------------------------------------------- line splitting


def test_only_lf_and_crlf_end_lines(tmp_path: Path) -> None:
    inner = "".join(INNER)
    path = write(tmp_path / "x.txt", f"a{inner}b\r\nc\rd\ne")
    lines = read_all(MonoSource([path]))[0]
    assert lines == [f"a{inner}b", "c\rd", "e"]
    assert count_lines(path) == 3
    assert lines != f"a{inner}b\r\nc\rd\ne".splitlines()  # what a naive reader would have done


def test_bom_dropped_at_file_start_only(tmp_path: Path) -> None:
    path = write(tmp_path / "bom.txt", "\ufeffhello\n\ufeffinside\n")
    stats = StepStats("read")
    assert read_all(MonoSource([path]))[0] == ["hello", "\ufeffinside"]
    source = MonoSource([path])
    list(source.chunks(stats=stats))
    assert stats["bom_dropped"] == 1


def test_utf16_file_gets_a_conversion_hint(tmp_path: Path) -> None:
    path = tmp_path / "u16.txt"
    path.write_bytes("hi\n".encode("utf-16"))
    with pytest.raises(TokenmillError, match=r"UTF-16.*iconv"):
        read_all(MonoSource([path]))


def test_empty_file_and_final_line_without_newline(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.txt", "")
    last = write(tmp_path / "last.txt", "a\nb")
    assert count_lines(empty) == 0 and read_all(MonoSource([empty]))[0] == []
    assert count_lines(last) == 2 and read_all(MonoSource([last]))[0] == ["a", "b"]
    blank = write(tmp_path / "blank.txt", "\n\n")
    assert read_all(MonoSource([blank]))[0] == ["", ""]


def test_lines_longer_than_a_block(tmp_path: Path) -> None:
    long = "x" * 5000
    path = write(tmp_path / "long.txt", f"{long}\nshort\n{long}y")
    source = MonoSource([path], ReadOptions(block_bytes=64, chunk_lines=2))
    assert read_all(source)[0] == [long, "short", long + "y"]


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.text(alphabet=st.sampled_from(["a", "é", "中", "\r", "\t", " ", *INNER]), max_size=12), max_size=30
    ),
    final_newline=st.booleans(),
    crlf=st.booleans(),
    block=st.integers(1, 40),
    chunk=st.integers(1, 7),
)
def test_property_reading_inverts_joining(tmp_path_factory, lines, final_newline, crlf, block, chunk) -> None:
    """Any lines without "\\n" (lone "\\r" inside included) come back unchanged, LF or CRLF."""
    lines = [x.rstrip("\r") for x in lines]  # "x\r" + "\n" IS a CRLF line end: not generated
    sep = "\r\n" if crlf else "\n"
    text = sep.join(lines) + (sep if final_newline and lines else "")
    if lines and not final_newline and lines[-1] == "":
        lines = lines[:-1]  # "a\n" + "" is the same file as "a\n"
    path = tmp_path_factory.mktemp("p") / "t.txt"
    path.write_bytes(text.encode())
    source = MonoSource([path], ReadOptions(block_bytes=block, chunk_lines=chunk, index_every=3))
    assert read_all(source)[0] == lines
    assert len(source) == count_lines(path) == len(lines)
    offsets = line_offsets(path)
    assert len(offsets) == len(lines) + 1 and offsets[-1] == len(text.encode())
    assert (np.diff(offsets) > 0).all()


# ---------------------------------------------------------------------------- invalid UTF-8


BAD = b"good one\nbad \xff byte\nthird\n\xc3 also bad\nlast\n"


def test_invalid_utf8_error_names_file_line_and_the_option(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.txt", BAD)
    with pytest.raises(TokenmillError) as err:
        read_all(MonoSource([path]))
    assert f"{path}:2: invalid UTF-8" in str(err.value)
    assert "--on-invalid-utf8 replace" in str(err.value) and "skip" in str(err.value)


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_invalid_utf8_line_number_after_many_blocks(tmp_path: Path, suffix: str) -> None:
    data = b"ok\n" * 1000 + b"\x80\n" + b"ok\n"
    path = write(tmp_path / f"late.txt{suffix}", data)
    with pytest.raises(TokenmillError, match=r"late\.txt(\.gz)?:1001: invalid UTF-8"):
        read_all(MonoSource([path], ReadOptions(block_bytes=100, chunk_lines=7)))
    # from the middle of the file (seeking through the line index), the number is still the file's
    with pytest.raises(TokenmillError, match=r":1001: invalid UTF-8"):
        list(MonoSource([path], ReadOptions(block_bytes=100, index_every=64)).chunks(900, 1002))


def test_invalid_utf8_replace_and_skip_are_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.txt", BAD)
    replaced = MonoSource([path], ReadOptions(on_invalid_utf8="replace"))
    assert read_all(replaced)[0] == ["good one", "bad \ufffd byte", "third", "\ufffd also bad", "last"]
    assert replaced.stats["invalid_utf8_replaced"] == 2
    skipped = MonoSource([path], ReadOptions(on_invalid_utf8="skip"))
    chunks = list(skipped.chunks())
    assert [x for c in chunks for x in c.src] == ["good one", "third", "last"]
    assert skipped.stats["invalid_utf8_skipped"] == 2 and skipped.stats["read"] == 5
    assert sum(c.n_read for c in chunks) == 5


def test_skip_drops_the_whole_pair(tmp_path: Path) -> None:
    src = write(tmp_path / "p.en", b"one\ntw\xffo\nthree\n")
    tgt = write(tmp_path / "p.de", b"eins\nzwei\ndr\xe4i\n")
    source = ParallelFiles([(src, tgt)], ReadOptions(on_invalid_utf8="skip"))
    assert read_all(source) == (["one"], ["eins"])
    assert source.stats["invalid_utf8_skipped"] == 2 and source.stats["yielded"] == 1


def test_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="on_invalid_utf8='ignore'"):
        ReadOptions(on_invalid_utf8="ignore")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- parallel files


def test_parallel_prefixes_with_compressed_side_and_several_files(tmp_path: Path) -> None:
    write(tmp_path / "a.en", "hello\nworld\n")
    write(tmp_path / "a.zh.gz", "你好\n世界\n")
    write(tmp_path / "b.en.zst", "three\n")
    write(tmp_path / "b.zh", "三\n")
    source = ParallelFiles.from_prefixes([tmp_path / "a", tmp_path / "b"], "en", "zh")
    assert len(source) == 3 and source.file_counts == [2, 1]
    assert read_all(source) == (["hello", "world", "three"], ["你好", "世界", "三"])


def test_mismatched_counts_name_both_files_and_counts_before_yielding(tmp_path: Path) -> None:
    src = write(tmp_path / "t.en", "a\nb\nc\n")
    tgt = write(tmp_path / "t.zh", "一\n二\u2028三\n")  # U+2028 is not a line break
    source = ParallelFiles([(src, tgt)])
    chunks = source.chunks()
    with pytest.raises(TokenmillError) as err:
        next(chunks)
    msg = str(err.value)
    assert str(src) in msg and str(tgt) in msg and "has 3 lines" in msg and "has 2" in msg
    assert source.stats["yielded"] == 0


def test_missing_prefix_file_is_explained(tmp_path: Path) -> None:
    write(tmp_path / "x.en", "a\n")
    with pytest.raises(TokenmillError, match=r"x\.fr: no such file"):
        ParallelFiles.from_prefixes(tmp_path / "x", "en", "fr")


def test_chunks_have_requested_size_and_consecutive_starts(tmp_path: Path) -> None:
    n = 103
    src = write(tmp_path / "c.en", "".join(f"s{i}\n" for i in range(n)))
    tgt = write(tmp_path / "c.de.xz", "".join(f"t{i}\n" for i in range(n)))
    source = ParallelFiles([(src, tgt)], ReadOptions(chunk_lines=10, block_bytes=16))
    chunks = list(source.chunks())
    assert [len(c) for c in chunks] == [10] * 10 + [3]
    assert [c.start for c in chunks] == list(range(0, n, 10))
    assert all(s[1:] == t[1:] for c in chunks for s, t in zip(c.src, c.tgt, strict=True))


def test_ranges_cover_everything_once_in_order(tmp_path: Path) -> None:
    n = 1000
    files = [
        (write(tmp_path / f"r{j}.en{sfx}", "".join(f"e{j}-{i}\n" for i in range(n))),
         write(tmp_path / f"r{j}.de", "".join(f"d{j}-{i}\n" for i in range(n))))
        for j, sfx in enumerate(["", ".gz"])
    ]  # fmt: skip
    source = ParallelFiles(files, ReadOptions(index_every=64, block_bytes=256, chunk_lines=50))
    whole = read_all(source)
    parts: tuple[list[str], list[str]] = ([], [])
    for start, stop in source.ranges(7):
        for c in source.chunks(start, stop):
            parts[0].extend(c.src)
            parts[1].extend(c.tgt)
    assert parts == whole and len(whole[0]) == 2 * n
    first = next(source.chunks(1234, 1240))
    assert first.start == 1234 and first.src[0] == "e1-234" and first.tgt[-1] == "d1-239"


def test_scan_lines_sparse_index_matches_full_offsets(tmp_path: Path) -> None:
    path = write(tmp_path / "i.txt", "".join("x" * (i % 7) + "\n" for i in range(500)))
    full = line_offsets(path)
    sparse = scan_lines(path, every=16, block_bytes=50)
    assert sparse.n_lines == 500
    np.testing.assert_array_equal(sparse.offsets[:-1], full[:-1][::16])
    assert sparse.offsets[-1] == full[-1]


def test_byte_ranges_align_to_lines_and_cover_the_file(tmp_path: Path) -> None:
    lines = [f"line {i} " + "y" * (i % 13) for i in range(300)]
    path = write(tmp_path / "b.txt", "\n".join(lines) + "\n")
    ranges = byte_ranges(path, 4)
    assert ranges[0][0] == 0 and ranges[-1][1] == path.stat().st_size
    starts = set(line_offsets(path).tolist())
    assert all(a in starts for a, _ in ranges)
    got = [x for a, b in ranges for block in iter_byte_range(path, a, b) for x in block]
    assert got == lines
    with pytest.raises(TokenmillError, match="cannot be cut into byte ranges"):
        byte_ranges(write(tmp_path / "b.txt.gz", "a\n"), 2)


def test_byte_range_error_without_line_number_names_the_offset(tmp_path: Path) -> None:
    path = write(tmp_path / "b.txt", b"aaaa\nbb\xffb\n")
    with pytest.raises(TokenmillError, match=r"line at byte offset 5: invalid UTF-8"):
        list(iter_byte_range(path, 5, None))
    with pytest.raises(TokenmillError, match=r"b\.txt:2: invalid UTF-8"):
        list(iter_byte_range(path, 5, None, first_line=1))


# ---------------------------------------------------------------------------- TSV and JSONL


def test_tsv_pairs_and_malformed_rows(tmp_path: Path) -> None:
    good = write(tmp_path / "ok.tsv.bz2", "hello\tbonjour\nworld\tmonde\n")
    assert read_all(TsvSource([good])) == (["hello", "world"], ["bonjour", "monde"])
    bad = write(tmp_path / "bad.tsv", "a\tb\nno tab here\nc\td\te\nf\tg\n")
    with pytest.raises(TokenmillError, match=r"bad\.tsv:2: expected 2 tab-separated columns.*found 1.*--on-malformed"):
        read_all(TsvSource([bad]))
    source = TsvSource([bad], ReadOptions(on_malformed="skip"))
    assert read_all(source) == (["a", "f"], ["b", "g"])
    assert source.stats["malformed_skipped"] == 2


def test_jsonl_pairs_custom_keys_and_errors(tmp_path: Path) -> None:
    rows = [{"en": "hi", "de": "hallo\nwelt"}, {"en": "bye", "de": "tschüss", "extra": 1}]
    path = write(tmp_path / "d.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert read_all(JsonlSource([path], "en", "de")) == (["hi", "bye"], ["hallo\nwelt", "tschüss"])
    assert read_all(JsonlSource([path], "en", None)) == (["hi", "bye"], None)
    cases = {
        '{"en": "a", "de": "b"}\n{"en": "a"\n': r"d2\.jsonl:2: invalid JSON",
        '{"en": "a", "de": "b"}\n{"en": "a"}\n': r"d2\.jsonl:2: missing key 'de'",
        '{"en": "a", "de": 3}\n': r"d2\.jsonl:1: value of 'de' is int, not a string",
        "[1, 2]\n": r"d2\.jsonl:1: a JSON list, not an object",
    }
    for text, pattern in cases.items():
        bad = write(tmp_path / "d2.jsonl", text)
        with pytest.raises(TokenmillError, match=pattern):
            read_all(JsonlSource([bad], "en", "de"))
    bad = write(tmp_path / "d3.jsonl", '{"en": "a", "de": "b"}\nnot json\n{"en": "c", "de": "d"}\n')
    source = JsonlSource([bad], "en", "de", ReadOptions(on_malformed="skip"))
    assert read_all(source) == (["a", "c"], ["b", "d"])
    assert source.stats["malformed_skipped"] == 1


def test_open_source_dispatch(tmp_path: Path) -> None:
    a, b = write(tmp_path / "a.en", "x\n"), write(tmp_path / "a.de", "y\n")
    assert isinstance(open_source([a]), MonoSource)
    assert read_all(open_source([a], tgt_files=[b])) == (["x"], ["y"])
    with pytest.raises(ConfigError, match="give them in matching pairs"):
        open_source([a], tgt_files=[b, b])
    with pytest.raises(ConfigError, match="unknown input format"):
        open_source([a], "csv")  # type: ignore[arg-type]


@pytest.mark.parametrize("piece", [4, 16, 1 << 16])
def test_sparse_index_found_piece_by_piece_equals_every_line_start(tmp_path, monkeypatch, piece: int) -> None:
    """scan_lines counts newlines in pieces and searches only the pieces holding a kept line start."""
    monkeypatch.setattr(lines_module, "_PIECE", piece)
    rng = np.random.default_rng(3)
    path = tmp_path / "lines.txt"
    path.write_bytes(b"".join(b"x" * int(n) + b"\n" for n in rng.integers(0, 30, 500)) + b"tail")
    starts = np.concatenate([[0], np.flatnonzero(np.frombuffer(path.read_bytes(), dtype=np.uint8) == 10) + 1])
    for every in (2, 3, 64, 1000):
        for block in (7, 100, 1 << 22):
            index = readers.scan_lines(path, every, block)
            assert index.n_lines == 501
            assert index.offsets.tolist() == [*starts[::every].tolist(), path.stat().st_size]


def test_a_lone_surrogate_escape_in_jsonl_follows_the_invalid_utf8_policy(tmp_path):
    """``"\\ud800"`` is valid JSON but not text: an error naming the line, U+FFFD (counted) or a counted skip."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "bad \\ud800 here"}\n{"text": "also fine"}\n', encoding="utf-8")
    with pytest.raises(TokenmillError, match=r"docs\.jsonl:2: .*lone surrogate"):
        list(JsonlSource([path], "text", None).chunks())
    for policy, expected, counter in (
        ("replace", ["fine", "bad \ufffd here", "also fine"], "invalid_utf8_replaced"),
        ("skip", ["fine", "also fine"], "invalid_utf8_lines"),
    ):
        stats = StepStats("read")
        source = JsonlSource([path], "text", None, ReadOptions(on_invalid_utf8=policy))
        lines = [line for chunk in source.chunks(stats=stats) for line in chunk.src]
        assert lines == expected
        assert stats.counts[counter] == 1
