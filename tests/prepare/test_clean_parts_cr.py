"""A lone ``\\r`` stays inside a cleaned line (only ``\\n`` ends one) when the clean-up keeps control
characters: the clean tasks' parts must then be read back with the cleaned file's line boundaries."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import assert_same_output, settings_for
from tokenmill.prepare.clean_parts import CleanParts, save_gone
from tokenmill.prepare.part_merge import LineIndexer


def test_raw_lines_of_the_parts_end_only_at_newlines(tmp_path: Path) -> None:
    lines = [b"a\rb", b"c", b"d\r\re", b"\r", b"f"]
    data = b"".join(line + b"\n" for line in lines)
    folder = tmp_path / "00000"
    folder.mkdir()
    (folder / "en.txt").write_bytes(data)
    index = LineIndexer(16)
    index.add_block(data)
    (folder / "en.index.json").write_text(json.dumps(index.state(folder / "en.txt")))
    save_gone(folder, np.array([1], dtype=np.int64))
    parts = CleanParts([folder], quoted=False, chunk_lines=7)
    want = [line for i, line in enumerate(io.BytesIO(data)) if i != 1]  # a binary file's lines, less the gone one
    assert list(parts.raw_lines("en")) == want
    assert parts.raw_size("en") == sum(map(len, want))


def test_a_tasked_t2t_run_over_lines_holding_cr_is_the_plain_run(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", pairs=600)
    path = corpus / "train.en"
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(line.replace(b" ", b"\r", 1) if i % 3 == 0 else line for i, line in enumerate(lines)))
    t2t = {"tokenizer": "t2t-subword", "joint_spm": True, "vocab_size": 300, "file_byte_budget": 2000,
           "normalize": {"collapse_whitespace": False, "remove_control": False}}
    tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **t2t), progress=False)
    assert b"\r" in (tmp_path / "plain" / ".work" / "clean" / "train.en").read_bytes()
    tokenmill.prepare(settings_for(corpus, tmp_path / "tasks", tasks=3, **t2t), progress=False)
    assert_same_output(tmp_path / "plain", tmp_path / "tasks")
