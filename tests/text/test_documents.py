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
