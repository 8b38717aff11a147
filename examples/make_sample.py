"""Regenerate the bundled English-Chinese sample corpus in examples/sample/ (deterministic).

The sentences are made up from small templates (subject x activity x time) written for this
project, plus a few deliberately dirty lines in train (a duplicate pair, an empty side,
full-width characters, a line with a U+2028 separator inside) so cleaning has something to do.
Run: python examples/make_sample.py
"""

from __future__ import annotations

import random
from pathlib import Path

SUBJECTS = [
    ("The teacher", "老师"), ("My brother", "我的哥哥"), ("The old man", "那位老人"),
    ("Our neighbor", "我们的邻居"), ("The student", "那个学生"), ("Her mother", "她的妈妈"),
    ("The doctor", "医生"), ("A little girl", "一个小女孩"),
]
ACTIVITIES = [
    ("reads a book", "读一本书"), ("drinks green tea", "喝绿茶"), ("writes a letter", "写一封信"),
    ("cooks noodles", "做面条"), ("buys fresh fruit", "买新鲜的水果"), ("plays the piano", "弹钢琴"),
    ("walks in the park", "在公园散步"), ("watches the news", "看新闻"), ("cleans the kitchen", "打扫厨房"),
    ("learns Chinese", "学中文"),
]
TIMES = [("every morning", "每天早上"), ("in the evening", "晚上"), ("on Sundays", "星期天"),
         ("after work", "下班以后"), ("", "")]
DIRTY = [
    ("The teacher reads a book every morning.", "老师每天早上读一本书。"),  # duplicate of a generated pair
    ("Nobody answered.", ""),  # empty target
    ("Ｔｈｅ ｒｏｏｍ ｈａｓ １２ ｃｈａｉｒｓ．", "房间里有１２把椅子。"),  # full-width forms
    ("Line one\u2028still the same line.", "第一行\u2028仍然是同一行。"),  # U+2028 stays inside the line
    ("  Too   many    spaces here.  ", "这里  空格  太多。"),
]


def sentence(subject, activity, time) -> tuple[str, str]:
    en = f"{subject[0]} {activity[0]}{' ' + time[0] if time[0] else ''}."
    zh = f"{subject[1]}{time[1]}{activity[1]}。"
    return en, zh


def main() -> None:
    pairs = [sentence(s, a, t) for s in SUBJECTS for a in ACTIVITIES for t in TIMES]
    random.Random(1234).shuffle(pairs)
    splits = {"valid": pairs[:30], "test": pairs[30:60], "train": pairs[60:] + DIRTY}
    out = Path(__file__).parent / "sample"
    out.mkdir(exist_ok=True)
    for split, rows in splits.items():
        for side, lang in ((0, "en"), (1, "zh")):
            with open(out / f"{split}.{lang}", "w", encoding="utf-8", newline="\n") as handle:
                handle.writelines(row[side] + "\n" for row in rows)


if __name__ == "__main__":
    main()
