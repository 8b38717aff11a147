"""Input formats through the registry: Parquet, Arrow IPC (file and stream) and datasets' save_to_disk
folders read row by row as the line formats are (ranges, chunks, skips), found by content; a format added
from a test by registering one part."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from tokenmill.errors import ConfigError, TokenmillError  # noqa: E402
from tokenmill.text import ReadOptions, open_source  # noqa: E402
from tokenmill.text.sources import FORMATS, OpenRequest, SourceFormat, detect_format, register  # noqa: E402
from tokenmill.text.sources.base import Source  # noqa: E402


def rows(n: int) -> list[dict]:
    return [{"id": i, "text": f"doc {i}\nsecond line\u2028same line", "translation": {"en": f"e{i}", "de": f"d{i}"}}
            for i in range(n)]


def write_parquet(path, n: int = 1000, group: int = 300) -> str:
    pq.write_table(pa.Table.from_pylist(rows(n)), path, row_group_size=group, compression="zstd")
    return str(path)


def all_items(source: Source, **kw) -> list:
    return [x for chunk in source.chunks(**kw) for x in chunk.src]


def test_parquet_rows_ranges_and_chunks_match_a_whole_read(tmp_path):
    files = [write_parquet(tmp_path / "a.parquet", 1000, 300), write_parquet(tmp_path / "b.parquet", 77, 10)]
    source = open_source(files, "parquet", src_key="text", tgt_key=None, options=ReadOptions(chunk_lines=64))
    expected = [r["text"] for r in rows(1000)] + [r["text"] for r in rows(77)]
    assert len(source) == 1077 and source.file_counts == [1000, 77] and source.unit == "row"
    assert all_items(source) == expected
    for k in (1, 2, 3, 7):  # any cut into ranges reads every row once, in order
        got = [x for start, stop in source.ranges(k) for x in all_items(source, start=start, stop=stop)]
        assert got == expected
    chunk = next(source.chunks(299, 305))
    assert chunk.start == 299 and chunk.src == expected[299:305]  # across a row-group boundary
    state = source.index_state()
    assert state[0]["groups"] == [300, 300, 300, 100] and state[1]["rows"] == 77
    again = open_source(files, "parquet", src_key="text", tgt_key=None)
    again.restore_index(state)  # a task process: no footer read to count
    assert all_items(again, start=990, stop=1010) == expected[990:1010]


def test_dotted_keys_reach_struct_fields_for_both_sides(tmp_path):
    path = write_parquet(tmp_path / "t.parquet", 50, 20)
    source = open_source([path], "parquet", src_key="translation.en", tgt_key="translation.de")
    chunk = next(source.chunks())
    assert source.parallel and chunk.src[:2] == ["e0", "e1"] and chunk.tgt[:2] == ["d0", "d1"]


def test_a_missing_column_names_the_file_the_columns_and_the_struct_field(tmp_path):
    path = write_parquet(tmp_path / "t.parquet", 10)
    with pytest.raises(TokenmillError, match=r"no column 'de' \(columns: id, text, translation\); the struct column "
                                             r"'translation' has a field 'de': give the key as translation.de"):
        open_source([path], "parquet", src_key="de", tgt_key=None).scan()
    with pytest.raises(TokenmillError, match="column 'translation' has no field 'fr'"):
        open_source([path], "parquet", src_key="translation.fr", tgt_key=None).scan()


@pytest.mark.parametrize(("column", "where", "problem", "kept"), [
    (["ok"] * 4 + ["a", None, "c"], "row group 1, row 6", "'text' is null", ["ok"] * 4 + ["a", "c"]),
    ([["a"], ["b", "c"]] * 3, "row group 0, row 1", r"'text' is a list \(\"\['a'\]\"\), not a string", []),
    ([1, 2, 3, 4, 5], "row group 0, row 1", "'text' is a int", []),
])
def test_a_bad_value_is_one_error_naming_file_row_group_and_row_or_a_counted_skip(tmp_path, column, where, problem,
                                                                                 kept):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"text": column}), path, row_group_size=4)
    with pytest.raises(TokenmillError, match=rf"bad.parquet: {where}: {problem}.*--on-malformed skip"):
        all_items(open_source([str(path)], "parquet", src_key="text", tgt_key=None))
    skipping = open_source([str(path)], "parquet", src_key="text", tgt_key=None,
                           options=ReadOptions(on_malformed="skip"))
    assert all_items(skipping) == kept
    assert skipping.stats["malformed_skipped"] == len(column) - len(kept) and skipping.stats["read"] == len(column)


def test_arrow_file_and_stream_read_alike(tmp_path):
    table = pa.Table.from_pylist(rows(500))
    with pa.OSFile(str(tmp_path / "f.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=120):
            writer.write_batch(batch)
    with pa.OSFile(str(tmp_path / "s.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=70):
            writer.write_batch(batch)
    expected = [r["text"] for r in rows(500)]
    for name in ("f.arrow", "s.arrow"):
        assert detect_format(str(tmp_path / name)) == "arrow"
        source = open_source([str(tmp_path / name)], "arrow", src_key="text", tgt_key=None)
        assert all_items(source) == expected
        # ranges read backwards: a stream starts over, a file seeks
        assert [x for a, b in reversed(source.ranges(3)) for x in all_items(source, start=a, stop=b)] == (
            expected[333:] + expected[166:333] + expected[:166])


def test_content_decides_over_the_name(tmp_path):
    parquet = write_parquet(tmp_path / "data.jsonl", 5)  # misnamed: the magic says Parquet
    assert detect_format(parquet) == "parquet"
    (tmp_path / "x.jsonl").write_text('{"text": "a"}\n')
    assert detect_format(str(tmp_path / "x.jsonl")) is None  # a text format: the given one stands
    assert detect_format("s3://bucket/part-0001.parquet") == "parquet"  # a URL goes by its name
    assert detect_format(str(tmp_path / "missing")) is None


def test_a_datasets_save_to_disk_folder_is_read_without_datasets(tmp_path):
    datasets = pytest.importorskip("datasets")
    data = datasets.Dataset.from_list(rows(300))
    data.save_to_disk(str(tmp_path / "saved"), num_shards=3)
    assert len(list((tmp_path / "saved").glob("data-*.arrow"))) > 1  # several shards, read in state.json's order
    assert detect_format(str(tmp_path / "saved")) == "hf-dataset"
    source = open_source([str(tmp_path / "saved")], "hf-dataset", src_key="translation.de", tgt_key=None)
    assert all_items(source) == [r["translation"]["de"] for r in rows(300)]
    datasets.DatasetDict({"train": data, "test": data}).save_to_disk(str(tmp_path / "dict"))
    with pytest.raises(TokenmillError, match=r"holds a DatasetDict \(splits: train, test\); give one split's folder"):
        open_source([str(tmp_path / "dict")], "hf-dataset", src_key="text", tgt_key=None)


def cached_dataset(tmp_path, splits: dict[str, int], num_proc: int | None = None) -> Path:
    """The folder ``load_dataset`` of the real datasets library writes in its cache for JSON files of
    ``splits`` (split -> rows, written as two files each, so ``num_proc`` shards a split)."""
    datasets = pytest.importorskip("datasets")
    files: dict[str, list[str]] = {}
    for split, n in splits.items():
        for half in (0, 1):
            path = tmp_path / f"{split}{half}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows(n)[half * n // 2:(half + 1) * n // 2]))
            files.setdefault(split, []).append(str(path))
    datasets.load_dataset("json", data_files=files, cache_dir=str(tmp_path / "cache"), num_proc=num_proc)
    (info,) = (tmp_path / "cache").glob("json/*/*/*/dataset_info.json")
    return info.parent


def test_a_split_in_the_datasets_cache_is_read_without_datasets(tmp_path):
    folder = cached_dataset(tmp_path, {"train": 300}, num_proc=2)
    assert sorted(p.name for p in folder.glob("*.arrow")) == ["json-train-00000-of-00002.arrow",
                                                              "json-train-00001-of-00002.arrow"]
    assert detect_format(str(folder)) == "hf-cache"
    source = open_source([str(folder)], "hf-cache", src_key="translation.de", tgt_key=None)
    assert all_items(source) == [r["translation"]["de"] for r in rows(300)], "the shards in their order"


def test_a_cache_folder_of_several_splits_names_each_splits_files(tmp_path):
    folder = cached_dataset(tmp_path, {"train": 40, "validation": 10})
    with pytest.raises(TokenmillError, match="splits train, validation; give one split's files") as error:
        open_source([str(folder)], "hf-cache", src_key="text", tgt_key=None)
    given = str(error.value).split("validation: '")[1].split("'")[0]
    assert given == str(folder / "json-validation.arrow")
    source = open_source([given], "arrow", src_key="translation.en", tgt_key=None)
    assert all_items(source) == [r["translation"]["en"] for r in rows(10)]


def test_an_unknown_format_lists_the_registered_ones():
    with pytest.raises(ConfigError, match="unknown input format 'csv': choose one of 'text', 'tsv', 'jsonl', 'parq"):
        open_source(["x"], "csv")


def test_a_new_format_is_one_registered_part(tmp_path, monkeypatch):
    """A toy format (one item per comma-separated field) added from here: no core file changes."""

    class CommaSource(Source):
        def _count(self) -> list[int]:
            return [len(open(p).read().split(",")) for p in self.files]

        def _file_blocks(self, i, start, stop, stats):
            yield open(self.files[i]).read().split(",")[start:stop], None

    module = types.ModuleType("toy_comma_format")
    module.open_format = lambda request: CommaSource(request.files, request.options)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_comma_format", module)
    monkeypatch.setitem(FORMATS, "comma", FORMATS["text"])  # restored after the test
    register(SourceFormat("comma", "toy_comma_format", "comma-separated items", magic=(b"CSV:",)))
    (tmp_path / "a.txt").write_text("CSV:,x,y,z")
    assert detect_format(str(tmp_path / "a.txt")) == "comma"
    source = open_source([str(tmp_path / "a.txt")], "comma")
    assert all_items(source, start=1) == ["x", "y", "z"] and isinstance(OpenRequest([]), OpenRequest)


def test_a_parquet_file_that_is_not_whole_is_one_error(tmp_path):
    path = write_parquet(tmp_path / "t.parquet", 100)
    data = open(path, "rb").read()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(TokenmillError, match=r"cut\.parquet: its metadata: cannot read it as parquet after 3 tries"):
        open_source([str(tmp_path / "cut.parquet")], "parquet", src_key="text", tgt_key=None).scan()
    json.dumps(open_source([path], "parquet", src_key="text", tgt_key=None).index_state())  # JSON-able
