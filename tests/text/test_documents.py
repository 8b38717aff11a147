from tokenmill.text.documents import paragraph_documents
from tokenmill.text.readers import Chunk


def chunks_of(lines: list[str], size: int) -> list[Chunk]:
    return [Chunk(i, len(lines[i : i + size]), lines[i : i + size]) for i in range(0, len(lines), size)]


def test_documents_do_not_depend_on_where_chunks_were_cut():
    lines = ["", "a b", "c", "", " ", "d", "", "e", "f", "g"]
    for size in (1, 2, 3, 4, 10):
        got = list(paragraph_documents(chunks_of(lines, size)))
        assert [d for c in got for d in c.src] == ["a b c", "d", "e f g"]
        assert sum(c.n_read for c in got) == len(lines), "every line is counted as read exactly once"
        assert [c.start for c in got] == [sum(len(x.src) for x in got[:i]) for i in range(len(got))]


def test_only_blank_lines_give_no_document():
    got = list(paragraph_documents(chunks_of(["", "  ", ""], 2)))
    assert [d for c in got for d in c.src] == []
    assert sum(c.n_read for c in got) == 3


def test_a_document_never_runs_from_one_file_into_the_next(tmp_path):
    from tokenmill.text import open_source
    from tokenmill.text.documents import documents_by_file

    (tmp_path / "a.txt").write_text("a1\na2\n\nb1\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("c1\n\nd1\n", encoding="utf-8")
    sources = [open_source([str(tmp_path / name)]) for name in ("a.txt", "b.txt")]
    got = list(documents_by_file(sources, chunk_lines=2))
    assert [d for c in got for d in c.src] == ["a1 a2", "b1", "c1", "d1"]
    assert [c.start for c in got] == [sum(len(x.src) for x in got[:i]) for i in range(len(got))]
