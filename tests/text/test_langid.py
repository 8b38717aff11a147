"""Vectorized language ID equals py3langid's own classify, offline, with the model from the wheel."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

py3langid = pytest.importorskip("py3langid")

from tokenmill.text.filters import FilterConfig, PairFilter  # noqa: E402
from tokenmill.text.langid import LanguageIdentifier  # noqa: E402

SENTENCES = [
    "The committee will publish its final report next spring.",
    "Der Ausschuss wird seinen Abschlussbericht im nächsten Frühjahr veröffentlichen.",
    "Le comité publiera son rapport final au printemps prochain.",
    "El comité publicará su informe final la próxima primavera.",
    "Комитет опубликует свой окончательный доклад следующей весной.",
    "委员会将于明年春天发布最终报告。",
    "委員会は来春に最終報告書を公表する予定です。",
    "위원회는 내년 봄에 최종 보고서를 발표할 예정이다.",
    "ستنشر اللجنة تقريرها النهائي في الربيع المقبل.",
    "Η επιτροπή θα δημοσιεύσει την τελική της έκθεση την επόμενη άνοιξη.",
    "समिति अगले वसंत में अपनी अंतिम रिपोर्ट प्रकाशित करेगी।",
    "THE COMMITTEE WILL PUBLISH ITS FINAL REPORT",
    "Il comitato pubblicherà la sua relazione finale la prossima primavera.",
    "A comissão publicará o seu relatório final na próxima primavera.",
    "De commissie publiceert haar eindrapport volgend voorjaar.",
    "Komitet opublikuje swój raport końcowy wiosną przyszłego roku.",
    "12345 67890",
    "ok",
]


def test_labels_equal_py3langid() -> None:
    lines = [f"{s} {i}" if i % 2 else s for i, s in enumerate(SENTENCES * 3)]
    got = LanguageIdentifier().classify(lines)
    want = [py3langid.classify(x)[0] for x in lines]
    assert got.tolist() == want


def test_restricted_candidates_equal_py3langid_restricted() -> None:
    from py3langid.langid import MODEL_FILE
    from py3langid.langid import LanguageIdentifier as PyIdentifier

    ref = PyIdentifier.from_model_file(MODEL_FILE)
    ref.set_languages(["en", "de", "zh"])
    lines = [x for x in SENTENCES if x != "ok"]  # featureless: "und" here, py3langid's first label there
    got = LanguageIdentifier(["en", "de", "zh"]).classify(lines)
    assert got.tolist() == [ref.classify(x)[0] for x in lines]
    assert set(got.tolist()) <= {"en", "de", "zh"}


def test_featureless_line_is_undetermined() -> None:
    assert LanguageIdentifier().classify(["", "ok", "The report is ready."]).tolist() == ["und", "und", "en"]


def test_language_filter_per_side() -> None:
    src = [SENTENCES[0], SENTENCES[1], SENTENCES[0]]
    tgt = [SENTENCES[5], SENTENCES[5], SENTENCES[2]]
    result = PairFilter(FilterConfig(src_lang="en", tgt_lang="zh", lid_backend="py3langid"))(src, tgt)
    assert result.keep.tolist() == [True, False, False]
    assert result.counts["langid"] == 2


def test_model_loads_without_network() -> None:
    code = (
        "import socket\n"
        "def no(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket = no; socket.create_connection = no\n"
        "from tokenmill.text.langid import LanguageIdentifier\n"
        "print(LanguageIdentifier().classify(['Das ist ein kurzer deutscher Satz.'])[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "de"


def test_order_of_lines_does_not_change_labels() -> None:
    ident = LanguageIdentifier()
    perm = np.random.default_rng(0).permutation(len(SENTENCES))
    a = ident.classify(SENTENCES)
    b = ident.classify([SENTENCES[i] for i in perm])
    assert b.tolist() == a[perm].tolist()


def test_numpy_fallback_scores_like_the_sparse_path(monkeypatch) -> None:
    import tokenmill.text.langid as module

    ident = LanguageIdentifier()
    lines = [f"{s} {i}" for i, s in enumerate(SENTENCES)]
    fast = ident.classify(lines)
    monkeypatch.setattr(module, "_sparse", None)
    monkeypatch.setattr(module, "_PAIRS_PER_BLOCK", 64)  # many small blocks
    assert ident.classify(lines).tolist() == fast.tolist()
