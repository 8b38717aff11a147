"""A Parquet row group is streamed in batches (memory bounded by a batch, not by the file's row groups); a read
that fails after some batches were given resumes at the first row not yet given: every row once."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from tokenmill.errors import TokenmillError  # noqa: E402
from tokenmill.text import ReadOptions  # noqa: E402
from tokenmill.text.chunks import byte_bounded_lines  # noqa: E402
from tokenmill.text.sources import parquet, table  # noqa: E402

ROWS = [f"document {i} " + "word " * (i % 13) for i in range(1000)]


def _source(tmp_path, monkeypatch, failures: int) -> tuple[parquet.ParquetSource, list[int]]:
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"text": ROWS}), path, row_group_size=400)
    monkeypatch.setattr(table, "GROUP_BATCH_ROWS", 64)
    monkeypatch.setattr(table, "RETRY_WAIT_S", 0.0)
    cuts = [failures]
    batches_read: list[int] = []

    class Flaky(parquet.ParquetTable):
        def iter_group(self, group, columns, rows):
            for k, batch in enumerate(super().iter_group(group, columns, rows)):
                if group == 1 and k == 3 and cuts[0] > 0:  # the link drops after three batches of group 1
                    cuts[0] -= 1
                    raise OSError("connection reset")
                batches_read.append(len(batch))
                yield batch

    source = parquet.ParquetSource([str(path)], ["text"], lambda p: Flaky(p, lambda q: open(q, "rb")),
                                   ReadOptions(chunk_lines=50))
    return source, batches_read


def test_rows_are_read_in_batches_and_a_dropped_read_resumes_where_it_stopped(tmp_path, monkeypatch):
    source, batches = _source(tmp_path, monkeypatch, failures=1)
    assert [d for chunk in source.chunks() for d in chunk.src] == ROWS
    assert max(batches) == 64 and sum(batches) == len(ROWS) + 3 * 64  # group 1's first batches read twice
    source, _ = _source(tmp_path, monkeypatch, failures=1)
    assert [d for chunk in source.chunks(430, 700) for d in chunk.src] == ROWS[430:700]


def test_a_read_that_keeps_failing_is_one_error_naming_the_row_group(tmp_path, monkeypatch):
    source, _ = _source(tmp_path, monkeypatch, failures=10)
    with pytest.raises(TokenmillError, match=r"docs\.parquet: row group 1: cannot read it as parquet after 3 tries"):
        list(source.chunks())



def test_chunks_are_sized_by_the_text_a_compressed_file_holds(tmp_path):
    """Chunks are cut by bytes of text (long documents: fewer rows a chunk); a zstd Parquet file holds
    many times its size in text, so its decoded size, not its size on disk, sizes them."""
    docs = [("the same words again " * 19) + str(i) for i in range(20000)]  # ~400 B each, compress well
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"text": docs}), path, row_group_size=5000, compression="zstd")
    source = parquet.ParquetSource([str(path)], ["text"], lambda p: parquet.ParquetTable(p, lambda q: open(q, "rb")))
    text = sum(len(d.encode()) for d in docs)
    assert path.stat().st_size * 5 < text <= source.text_bytes() < text * 1.2  # offsets on top of the text
    by_text = byte_bounded_lines(65536, source.scan(), source.text_bytes(), chunk_bytes=2 << 20)
    by_file = byte_bounded_lines(65536, source.scan(), path.stat().st_size, chunk_bytes=2 << 20)
    assert 4000 <= by_text <= 5300 and by_file > 5 * by_text  # ~2 MB of text a chunk, not ~10 MB
    assert [d for chunk in source.chunks(chunk_lines=by_text) for d in chunk.src] == docs
