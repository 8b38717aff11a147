"""Write the 5-direction example corpus (deterministic): English into five scripts, sizes 100x apart.

The sentences are made up from small templates written for this project (subject x activity x
year), in German (Latin script), Russian (Cyrillic), Chinese (Han), Arabic and Hindi
(Devanagari). Directions and training sizes::

    eng_Latn-deu_Latn 20000   eng_Latn-rus_Cyrl 6000   eng_Latn-zho_Hans 2000
    eng_Latn-arb_Arab   600   eng_Latn-hin_Deva  200

plus 50 valid and 50 test pairs each, and a few dirty lines (an exact duplicate, an empty side).
Files are Open-NLLB style: ``{out}/train.{src}-{tgt}.{lang}``.
Run: python examples/make_multilingual_sample.py [OUT]   (default runs/multilingual-raw)
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

SUBJECTS = {
    "eng_Latn": ["The teacher", "My brother", "The old man", "Our neighbor", "The student", "Her mother",
                 "The doctor", "A little girl"],
    "deu_Latn": ["Der Lehrer", "Mein Bruder", "Der alte Mann", "Unser Nachbar", "Der Student", "Ihre Mutter",
                 "Die Ärztin", "Ein kleines Mädchen"],
    "rus_Cyrl": ["Учитель", "Мой брат", "Старик", "Наш сосед", "Студент", "Её мать", "Врач", "Маленькая девочка"],
    "zho_Hans": ["老师", "我的哥哥", "那位老人", "我们的邻居", "那个学生", "她的妈妈", "医生", "一个小女孩"],
    "arb_Arab": ["المعلم", "أخي", "الرجل العجوز", "جارنا", "الطالب", "أمها", "الطبيب", "فتاة صغيرة"],
    "hin_Deva": ["शिक्षक", "मेरा भाई", "बूढ़ा आदमी", "हमारा पड़ोसी", "छात्र", "उसकी माँ", "डॉक्टर", "एक छोटी लड़की"],
}
ACTIVITIES = {
    "eng_Latn": ["read a book", "drank green tea", "wrote a letter", "cooked noodles", "bought fresh fruit",
                 "played the piano", "walked in the park", "watched the news", "cleaned the kitchen",
                 "learned Chinese"],
    "deu_Latn": ["las ein Buch", "trank grünen Tee", "schrieb einen Brief", "kochte Nudeln", "kaufte frisches Obst",
                 "spielte Klavier", "ging im Park spazieren", "sah die Nachrichten", "putzte die Küche",
                 "lernte Chinesisch"],
    "rus_Cyrl": ["читал книгу", "пил зелёный чай", "писал письмо", "варил лапшу", "покупал свежие фрукты",
                 "играл на пианино", "гулял в парке", "смотрел новости", "убирал кухню", "учил китайский"],
    "zho_Hans": ["读了一本书", "喝了绿茶", "写了一封信", "做了面条", "买了新鲜的水果", "弹了钢琴", "在公园散步",
                 "看了新闻", "打扫了厨房", "学了中文"],
    "arb_Arab": ["قرأ كتابا", "شرب الشاي الأخضر", "كتب رسالة", "طبخ المعكرونة", "اشترى فاكهة طازجة",
                 "عزف على البيانو", "مشى في الحديقة", "شاهد الأخبار", "نظف المطبخ", "تعلم الصينية"],
    "hin_Deva": ["किताब पढ़ी", "हरी चाय पी", "एक पत्र लिखा", "नूडल्स बनाए", "ताज़े फल खरीदे", "पियानो बजाया",
                 "पार्क में टहला", "समाचार देखे", "रसोई साफ़ की", "चीनी सीखी"],
}
TIMES = {
    "eng_Latn": ["every morning", "in the evening", "on Sunday", "after work", "yesterday"],
    "deu_Latn": ["jeden Morgen", "am Abend", "am Sonntag", "nach der Arbeit", "gestern"],
    "rus_Cyrl": ["каждое утро", "вечером", "в воскресенье", "после работы", "вчера"],
    "zho_Hans": ["每天早上", "晚上", "星期天", "下班以后", "昨天"],
    "arb_Arab": ["كل صباح", "في المساء", "يوم الأحد", "بعد العمل", "أمس"],
    "hin_Deva": ["हर सुबह", "शाम को", "रविवार को", "काम के बाद", "कल"],
}
DIRECTIONS = {"deu_Latn": 20000, "rus_Cyrl": 6000, "zho_Hans": 2000, "arb_Arab": 600, "hin_Deva": 200}
HELDOUT = 50


def sentence(lang: str, s: int, a: int, t: int, year: int) -> str:
    subject, activity, time = SUBJECTS[lang][s], ACTIVITIES[lang][a], TIMES[lang][t]
    if lang == "eng_Latn":
        return f"In {year}, {subject.lower() if s else subject} {activity} {time}."
    if lang == "deu_Latn":
        return f"{subject} {activity} {time} im Jahr {year}."
    if lang == "rus_Cyrl":
        return f"В {year} году {subject.lower() if s else subject} {time} {activity}."
    if lang == "zho_Hans":
        return f"{year}年，{subject}{time}{activity}。"
    if lang == "arb_Arab":
        return f"في عام {year}، {activity} {subject} {time}."
    return f"{year} में {subject} ने {time} {activity}।"


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/multilingual-raw")
    out.mkdir(parents=True, exist_ok=True)
    combos = [(s, a, t, y) for s in range(8) for a in range(10) for t in range(5) for y in range(1950, 2030)]
    for index, (tgt, size) in enumerate(DIRECTIONS.items()):
        rng = random.Random(1000 + index)
        chosen = rng.sample(combos, size + 2 * HELDOUT)
        splits = {"valid": chosen[:HELDOUT], "test": chosen[HELDOUT : 2 * HELDOUT], "train": chosen[2 * HELDOUT :]}
        name = f"eng_Latn-{tgt}"
        for split, rows in splits.items():
            pairs = [(sentence("eng_Latn", *c), sentence(tgt, *c)) for c in rows]
            if split == "train":
                pairs += [pairs[0], (pairs[1][0], "")]  # an exact duplicate and an empty target: cleaned away
            for side, lang in ((0, "eng_Latn"), (1, tgt)):
                with open(out / f"{split}.{name}.{lang}", "w", encoding="utf-8", newline="\n") as handle:
                    handle.writelines(pair[side] + "\n" for pair in pairs)
    print(f"wrote {len(DIRECTIONS)} directions to {out}")


if __name__ == "__main__":
    main()
