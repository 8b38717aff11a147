"""Blank-line separated documents: consecutive non-blank lines become one item.

Plain-text LM corpora often hold one document per paragraph block (Wikipedia dumps, books).
Megatron's preprocess_data stores a document's text as one item unless sentences are split;
:func:`paragraph_documents` gives the same unit from such files: the lines of a block joined by a
space, blocks split by one or more blank (or whitespace-only) lines, across chunk boundaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from tokenmill.text.readers import Chunk, Source


def paragraph_documents(chunks: Iterable[Chunk], joiner: str = " ", start: int = 0) -> Iterator[Chunk]:
    """Chunks of documents from chunks of lines (of ONE file); ``n_read`` still counts the lines consumed.

    A document still open at the end of a chunk is carried into the next one, so documents never
    depend on where chunks were cut; the end of the input ends the last one. Item numbers
    (``start``) count documents, from ``start``.
    """
    open_lines: list[str] = []
    documents_out = start
    pending_read = 0
    for chunk in chunks:
        documents: list[str] = []
        for line in chunk.src:
            if line.strip():
                open_lines.append(line.strip())
            elif open_lines:
                documents.append(joiner.join(open_lines))
                open_lines = []
        pending_read += chunk.n_read
        if documents:
            yield Chunk(documents_out, pending_read, documents)
            documents_out += len(documents)
            pending_read = 0
    if open_lines or pending_read:
        last = [joiner.join(open_lines)] if open_lines else []
        yield Chunk(documents_out, pending_read, last)


def documents_by_file(sources: Sequence[Source], chunk_lines: int) -> Iterator[Chunk]:
    """:func:`paragraph_documents` of each source (one per file) in turn: the end of a file ends its
    last document, which never runs on into the next file."""
    done = 0
    for source in sources:
        for chunk in paragraph_documents(source.chunks(chunk_lines=chunk_lines), start=done):
            done += len(chunk)
            yield chunk
