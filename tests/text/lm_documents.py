"""Real-looking LM documents for the quality-filter tests, made offline: stretches of the prose, markdown and
reStructuredText files that installed Python packages ship (READMEs, changelogs, licences, docs) and of the
system's ``/usr/share/doc``, cut into documents of a few to a hundred lines, plus planted bad documents of
the kinds Gopher, C4 and FineWeb exist for (boilerplate, repeated lines, lists, lorem ipsum, code, hashes)."""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

ROOTS = (Path(sysconfig.get_paths()["purelib"]), Path("/usr/share/doc"))
SUFFIXES = (".md", ".rst", ".txt")
PER_FILE = 3
"""About this many documents at most from one file (so that no package's docs dominate)."""

_SENTENCE = ("The committee reviewed the proposal and agreed that the plan should go ahead with the changes that "
             "were discussed at the meeting. ")
PLANTED = [
    "",
    "Short text.",
    "lorem ipsum dolor sit amet, consectetur adipiscing elit.\n" + _SENTENCE * 12,
    ("Please enable JavaScript to view this page.\n" + _SENTENCE * 10),
    ("function f() { return 1; }\n" + _SENTENCE * 10),
    "\n".join(["- item number one of the list", "- item number two of the list"] * 40),
    "\n".join(["• an entry that goes on and on..."] * 30),
    "\n".join(["Home", "About", "Contact", "Login", "Sign up"] * 20),
    ("Buy now! Buy now! Buy now! " * 60).strip(),
    "\n".join(["This line is repeated many times in the document."] * 25),
    "\n\n".join(["This paragraph is repeated.\nIt has two lines of text in it."] * 12),
    " ".join(["#tag #news #today #photo the and of"] * 30),
    ("This site uses cookies. Read our privacy policy.\n" * 3 + _SENTENCE * 8),
    "1234 5678 9012 3456 7890 " * 40,
    ("the be to of and that have with " * 10 + "\n") * 5,
    "supercalifragilisticexpialidocious antidisestablishmentarianism " * 40,
    "a b c d e f g h i j " * 30,
    ("Wait for it...\n" * 8 + _SENTENCE * 6),
    "\n".join(f"Line {i} of a short list" for i in range(80)),
    _SENTENCE * 30,
    ("The results are shown in the table [1] and discussed in the text [edit]. " * 8 + "\n") * 3,
    "\n".join([_SENTENCE.strip()] * 2 + ["Click here", "Next page", "Share this"] * 6),
    ("It's what they'd've wanted, isn't it? Don't you think so? We'll see. " * 12),
    ("Prices rose 3.5% in the U.S. and e.g. in the U.K. by $4.20 per unit (approx.) last year. " * 10),
]


def _texts(limit_files: int) -> list[tuple[str, str]]:
    files: list[Path] = []
    for root in ROOTS:
        if root.is_dir():
            files += [p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    files.sort(key=lambda p: hashlib.blake2b(str(p).encode(), digest_size=8).digest())  # packages mixed
    out = []
    for path in files[:limit_files]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(text) >= 400:
            out.append((str(path), text))
    return out


def real_documents(count: int = 3000, limit_files: int = 20_000) -> list[str]:
    """Up to ``count`` documents: consecutive lines of the files found, 5-120 lines each (the length picked by
    a hash of the file name and position, so the set is the same on every run of one machine)."""
    docs: list[str] = []
    for name, text in _texts(limit_files):
        lines = text.split("\n")
        at = 0
        while at < len(lines) and len(docs) < count:
            seed = int.from_bytes(hashlib.blake2b(f"{name}:{at}".encode(), digest_size=4).digest(), "little")
            size = 5 + seed % 116
            doc = "\n".join(lines[at: at + size]).strip("\n")
            if doc.strip():
                docs.append(doc)
            at += size
            if at >= PER_FILE * 60:
                break
        if len(docs) >= count:
            break
    return docs


def documents(count: int = 3000) -> list[str]:
    """The real documents and the planted ones."""
    return real_documents(count) + PLANTED
