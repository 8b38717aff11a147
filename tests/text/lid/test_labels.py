"""Language labels: ISO 639-1, ISO 639-3 and NLLB forms brought to ISO 639-3 and compared with a backend's."""

from __future__ import annotations

import pytest

from tokenmill.errors import ConfigError
from tokenmill.text.lid.labels import (
    WantedLanguage,
    accepted_labels,
    macrolanguage,
    parse_language,
    same_language,
    script_spec,
)


@pytest.mark.parametrize(("code", "want"), [
    ("en", WantedLanguage("en", "eng")),
    ("eng", WantedLanguage("eng", "eng")),
    ("eng_Latn", WantedLanguage("eng_Latn", "eng", "Latn")),
    ("zh", WantedLanguage("zh", "zho")),
    ("zho_Hant", WantedLanguage("zho_Hant", "zho", "Hant")),
    ("arb_Arab", WantedLanguage("arb_Arab", "arb", "Arab")),
])
def test_every_form_becomes_iso639_3(code: str, want: WantedLanguage) -> None:
    assert parse_language(code) == want


@pytest.mark.parametrize("code", ["english", "e", "EN", "eng_latn", "eng-Latn", "qq", ""])
def test_a_malformed_or_unknown_code_is_a_config_error(code: str) -> None:
    with pytest.raises(ConfigError, match="ISO 639"):
        parse_language(code)


def test_macrolanguages_relate_members_but_not_siblings() -> None:
    assert macrolanguage("cmn") == "zho" and macrolanguage("arb") == "ara" and macrolanguage("eng") is None
    assert same_language("zho", "cmn") and same_language("cmn", "zho") and same_language("arb", "ara")
    assert not same_language("nob", "nno") and not same_language("eng", "deu")
    assert not same_language("und", "und") and not same_language("zxx", "zxx")


HELIPORT_LIKE = {"cmn": "cmn", "ara": "ara", "nob": "nob", "nno": "nno", "hbs": "hbs", "hbshrv": "hrv",
                 "hbssrp": "srp", "msa": "msa", "msaind": "ind", "und": "und"}
PY3LANGID_LIKE = {"zh": "zho", "ar": "ara", "ms": "msa", "id": "ind", "no": "nor", "nb": "nob"}


def test_accepted_labels_follow_the_backend() -> None:
    assert accepted_labels(HELIPORT_LIKE, "zho", True) == {"cmn"}  # Chinese -> its member Mandarin
    assert accepted_labels(HELIPORT_LIKE, "arb", True) == {"ara"}  # Standard Arabic -> the macrolanguage
    assert accepted_labels(HELIPORT_LIKE, "nor", True) == {"nob", "nno"}
    assert accepted_labels(HELIPORT_LIKE, "nob", True) == {"nob"}
    assert accepted_labels(HELIPORT_LIKE, "hrv", True) == {"hbshrv", "hbs"}  # undecided Serbo-Croatian counts
    assert accepted_labels(HELIPORT_LIKE, "deu", True) == frozenset()
    # a backend whose macrolanguage label is a language of its own keeps them apart (py3langid's id / ms)
    assert accepted_labels(PY3LANGID_LIKE, "ind") == {"id"}
    assert accepted_labels(PY3LANGID_LIKE, "msa") == {"ms"}
    assert accepted_labels(PY3LANGID_LIKE, "cmn") == {"zh"}


def test_script_codes_become_unicode_scripts() -> None:
    assert script_spec("Latn") == "Latn"
    assert script_spec("Hans") == script_spec("Hant") == "Hani"
    assert script_spec("Jpan") == "Hani+Hira+Kana"
