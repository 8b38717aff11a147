"""Real-looking multilingual lines for tokenizer tests: the example corpus plus generated sentences
in several scripts, with digits, punctuation, odd spacing, emoji and rare characters."""

from __future__ import annotations

import random
from pathlib import Path

from tests.peers import REPO

SAMPLE = REPO / "examples" / "sample"

_WORDS = {
    "en": "the a market river children teacher quickly yesterday library window bread morning city".split(),
    "de": "der die Straße Mädchen über schön Brücke Frühstück gemütlich Käse fährt Größe".split(),
    "fr": "le la été élève forêt château où garçon déjà façon crème naïve".split(),
    "ru": "дом кошка быстро читает новости утром школа улица хлеб вечером друзья".split(),
    "el": "καλημέρα θάλασσα σπίτι βιβλίο παιδιά πόλη ήλιος νερό".split(),
    "ar": "البيت المدرسة كتاب الشمس ماء صديق الليل مدينة".split(),
    "hi": "घर पानी किताब बच्चे शहर सूरज दोस्त सुबह".split(),
    "ja": "東京 さくら ラーメン 学校 ありがとう コーヒー 電車 今日は".split(),
    "zh": "北京 学生 图书馆 我们 喜欢 下雨 朋友 早上".split(),
    "ko": "학교 친구 바다 사랑 오늘 커피 도서관 아침".split(),
}
_EXTRAS = ["42", "3.14159", "2024-05-17", "1,000,000", "(!)", "?!", "—", "«quoted»", "#tag", "e-mail@example.org",
           "🙂", "🚀✨", "x²", "½", "ﬁ", "Ⅻ", "naïve", "\u200b", "don't", "we'll"]


def generated_lines(count: int = 400, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    langs = sorted(_WORDS)
    lines = []
    for i in range(count):
        lang = langs[i % len(langs)]
        words = [rng.choice(_WORDS[lang]) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.4:
            words.insert(rng.randrange(len(words) + 1), rng.choice(_EXTRAS))
        if rng.random() < 0.15:
            words.append(rng.choice(_WORDS[rng.choice(langs)]))  # code switching
        sep = rng.choice([" "] * 8 + ["  ", "\t", " \u3000 "])
        line = sep.join(words)
        if lang in ("en", "de", "fr", "ru", "el"):
            line = line[:1].upper() + line[1:] + rng.choice([".", "!", "?", "", "..."])
        lines.append(line)
    return lines


def sample_lines() -> list[str]:
    """Example corpus (English, Chinese) and generated lines in ten languages, plus edge cases."""
    lines = []
    for name in ("train.en", "train.zh"):
        lines.extend(Path(SAMPLE / name).read_text(encoding="utf-8").splitlines())
    return lines + generated_lines() + ["", " ", "   leading and trailing   ", "a", "😀😀😀", "1234567890"]
