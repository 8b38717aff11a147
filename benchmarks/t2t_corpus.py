"""Real-looking English + Chinese text for the T2T subword benchmark (deterministic, seeded).

English: ~170 real function words at the top of the ranking, then a synthetic lexicon of words
made of consonant-vowel syllables with English-like suffixes (-ing, -ed, -s, -tion, -ly, ...);
word frequencies follow Zipf (rank^-1.05).  Sentences of 6-34 words, capitalized, with commas,
numbers (years, decimals, percentages), hyphenated compounds, possessives and quotes.

Chinese: ~560 common characters typed here in rough frequency order, then more CJK ideographs
(U+4E00..) in a seeded order; characters are Zipf-ranked.  A lexicon of 1-4 character words is
drawn from them (2-character words most common), word frequencies Zipf again.  Sentences have
clauses of 2-9 words separated by ，or 、, end with 。？！, and sometimes carry numbers (2019年,
3.5%) or Latin acronyms (GDP) -- no spaces, as in real Chinese text.

Lines are English or Chinese with probability 1/2 each, 1-3 sentences per line.
"""

from __future__ import annotations

import numpy as np

FUNCTION_WORDS = (
    "the of and to a in is that for it as was with be by on not he I this are or his from at which but "
    "have an had they you were their one all we can her has there been if more when will would who so "
    "no she other its may these also two what about than into only some could them time new first then "
    "after any over most up people out such those year years made between many did where should while "
    "because under very through well before must being three both each since during again against much "
    "how our my me your him us just even because same last long great little own old right big high "
    "different small large next early young important few public bad able said says state world work "
    "government company system program question number night point home water room mother area money "
    "story fact month lot study book eye job word business issue side kind head house service friend"
).split()

COMMON_HANZI = (
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所"
    "去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知使"
    "点等二业本现实全部新样同高长开内力理外两些意最月加第结问政什机社常东问展给动被制数力物己问山间关经重战"
    "保体利条员身门美地期海回明话电反农革文形信民提建入度北工平队先果产化水代教此量基果走解民西别向正反利四"
    "传她特路次想总色把各口记设合由受相合处已少非真通今起感声接任应南物指持表情金万至治活原何美且群交象认战"
    "书计光程党强该运住义气题望报即常术影局领安共领导放少改改利米直统区风手接很目思华白资流才取资式车快深济"
    "满江图收步权观切况清世界音近历器拉需容示支科论称包究识服百决再团叫眼更干格达千系县号满边商请便火往规约"
    "件写职联线整始类老乡广城证务造备增告失失片准习件位值型复离根越份段石效争调场校半连则尔注料级石李复布斯"
)


def _zipf_weights(n: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    return w / w.sum()


class CorpusGenerator:
    """Seeded generator of mixed English/Chinese lines."""

    def __init__(self, seed: int = 0, en_lexicon: int = 60000, zh_lexicon: int = 40000) -> None:
        self.rng = rng = np.random.default_rng(seed)
        self.en_words = self._english_lexicon(en_lexicon)
        self.en_p = _zipf_weights(len(self.en_words), 1.05)
        chars = list(dict.fromkeys(COMMON_HANZI))
        tail = np.arange(0x4E00, 0x9FA6)
        rng.shuffle(tail)
        seen = set(chars)
        chars += [chr(c) for c in tail[:4000] if chr(c) not in seen][: 3500 - len(chars)]
        self.hanzi = np.array(chars)
        char_p = _zipf_weights(len(chars), 0.85)
        lengths = rng.choice([1, 2, 3, 4], size=zh_lexicon, p=[0.28, 0.57, 0.10, 0.05])
        drawn = rng.choice(self.hanzi, size=int(lengths.sum()), p=char_p).tolist()
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends[:-1]]
        words = list(dict.fromkeys("".join(drawn[a:b]) for a, b in zip(starts, ends, strict=False)))
        # Words made of common characters tend to be the common words.
        char_rank = {c: i for i, c in enumerate(chars)}
        score = [0.3 * sum(np.log1p(char_rank[c]) for c in w) / len(w) + 4.0 * rng.random() for w in words]
        self.zh_words = [words[i] for i in np.argsort(score)]
        self.zh_p = _zipf_weights(len(self.zh_words), 0.9)

    def _english_lexicon(self, size: int) -> list[str]:
        rng = self.rng
        onsets = (
            "b c d f g h j k l m n p r s t v w y z bl br ch cl cr dr fl fr gl gr pl pr sc sh sk sl sp st th tr wh"
        ).split()
        vowels = "a e i o u a e i o ea ee oo ou ai ie io".split()
        codas = ["", "", "", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "nt", "st", "ck", "ng", "ll"]
        suffixes = ["", "", "", "", "s", "ed", "ing", "er", "ly", "tion", "ment", "ness", "al", "ity", "ous", "ive"]
        n = 2 * size
        n_syl = rng.choice([1, 1, 2, 2, 2, 3], size=n)
        parts = [rng.integers(0, len(x), size=(n, 3)) for x in (onsets, vowels, codas)]
        suffix = rng.integers(0, len(suffixes), size=n)
        words = list(FUNCTION_WORDS)
        seen = set(words)
        for i in range(n):
            w = (
                "".join(
                    onsets[parts[0][i, k]] + vowels[parts[1][i, k]] + codas[parts[2][i, k]] for k in range(n_syl[i])
                )
                + suffixes[suffix[i]]
            )
            if w not in seen:
                seen.add(w)
                words.append(w)
                if len(words) == size:
                    break
        return words

    def _english_sentence(self, words: list[str], rng: np.random.Generator) -> str:
        out = []
        for i, w in enumerate(words):
            r = rng.random()
            if r < 0.012:
                w = str(int(rng.integers(1900, 2030)))
            elif r < 0.018:
                w = f"{rng.integers(1, 100)}.{rng.integers(0, 10)}%"
            elif r < 0.024:
                w = f"{w}-{words[(i + 1) % len(words)]}"
            elif r < 0.03:
                w = w + "'s"
            elif r < 0.034:
                w = f'"{w}"'
            elif r < 0.036:
                w = f"({w})"
            out.append(w)
            if i + 1 < len(words) and rng.random() < 0.08:
                out[-1] += ","
        out[0] = out[0][:1].upper() + out[0][1:]
        return " ".join(out) + str(rng.choice([".", ".", ".", ".", "?", "!", ";"]))

    def _chinese_sentence(self, words: list[str], rng: np.random.Generator) -> str:
        out = []
        clause = int(rng.integers(2, 10))
        for i, w in enumerate(words):
            r = rng.random()
            if r < 0.01:
                w = f"{rng.integers(1949, 2030)}年"
            elif r < 0.015:
                w = f"{rng.integers(1, 100)}.{rng.integers(0, 10)}%"
            elif r < 0.018:
                w = str(rng.choice(["GDP", "WTO", "CEO", "APEC", "NBA", "iPhone", "AI"]))
            elif r < 0.021:
                w = f"“{w}”"
            out.append(w)
            clause -= 1
            if clause == 0 and i + 1 < len(words):
                out.append("、" if rng.random() < 0.15 else "，")
                clause = int(rng.integers(2, 10))
        return "".join(out) + str(rng.choice(["。", "。", "。", "？", "！"]))

    def lines(self, n_chars: int) -> list[str]:
        """Lines until about ``n_chars`` characters."""
        rng = self.rng
        result: list[str] = []
        total = 0
        batch = 4096
        while total < n_chars:
            en_idx = rng.choice(len(self.en_words), size=batch * 110, p=self.en_p)
            zh_idx = rng.choice(len(self.zh_words), size=batch * 110, p=self.zh_p)
            e = z = 0
            for _ in range(batch):
                sentences = []
                chinese = rng.random() < 0.5
                for _ in range(int(rng.integers(1, 4))):
                    n = int(rng.integers(6, 35))
                    if chinese:
                        sentences.append(self._chinese_sentence([self.zh_words[k] for k in zh_idx[z : z + n]], rng))
                        z += n
                    else:
                        sentences.append(self._english_sentence([self.en_words[k] for k in en_idx[e : e + n]], rng))
                        e += n
                line = ("" if chinese else " ").join(sentences)
                result.append(line)
                total += len(line) + 1
                if total >= n_chars:
                    break
        return result


def write_corpus(path: str, n_chars: int, seed: int = 0) -> int:
    """Write about ``n_chars`` characters of mixed lines to ``path``; returns the byte size."""
    lines = CorpusGenerator(seed).lines(n_chars)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)
    return len(data)
