"""--tasks 1 with an input not cut into tasks yet (--align-suffix): the run says it goes without tasks."""

from __future__ import annotations

import tokenmill
from tests.prepare.tasks_corpus import write_corpus
from tests.prepare.test_tasks import settings_for


def test_tasks_1_with_alignments_warns_that_it_runs_without_tasks(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", pairs=120)
    for split, pairs in (("train", 120), ("valid", 40), ("test", 40)):
        (corpus / f"{split}.align").write_text("".join(f"0-0 1-{i % 3}\n" for i in range(pairs)))
    words = {"align_suffix": "align", "tokenizer": "none", "filters": {}}
    plain = tokenmill.prepare(settings_for(corpus, tmp_path / "plain", **words), progress=False)
    assert not any("not cut into tasks" in w for w in plain.warnings)
    one = tokenmill.prepare(settings_for(corpus, tmp_path / "one", tasks=1, **words), progress=False)
    assert one.tasks == {}
    assert any(w.startswith("--align-suffix is not cut into tasks yet: --tasks 1") for w in one.warnings)
