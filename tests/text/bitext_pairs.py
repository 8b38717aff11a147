"""Real English-X pairs for the bitext-rule tests, made offline: the msgid/msgstr pairs of the system's
gettext catalogs (``/usr/share/locale/<lang>/LC_MESSAGES/*.mo``, real translations of real program
messages), plus planted noisy pairs of the kinds the rules exist for (URLs, differing numbers, mojibake,
glued or repeated words, breadcrumbs, escapes, HTML, title-case menus, copies)."""

from __future__ import annotations

import gettext
from pathlib import Path

LOCALE = Path("/usr/share/locale")

PLANTED = [
    ("See https://www.example.com/page for details.", "Siehe https://www.example.com/page für Details."),
    ("Visit example.org today", "Besuchen Sie heute die Seite"),
    ("The meeting is at 10:30 on 12 May.", "Das Treffen ist am 13. Mai um 11:30."),
    ("Version 2.4.1 was released in 2019.", "Version 2.4.1 wurde 2019 veröffentlicht."),
    ("It costs 45 euros.", "Es kostet 54 Euro."),
    ("This is Ã¼ber broken text", "Das ist Ã¼ber kaputter Text"),
    ("CafÃ© au lait", "Milchkaffee mit Schaum"),
    ("Open the FileManagerWindow now", "Öffne jetzt das Dateifenster"),
    ("the the the the the the the same words", "die gleichen Wörter immer wieder"),
    ("Home > Products > Shoes | Sale | New", "Start > Produkte > Schuhe | Angebot | Neu"),
    ("Home » Shop » Cart", "Start » Laden » Warenkorb"),
    ("Escaped \\u00e9 text here", "Maskierter \\u00e9 Text hier"),
    ("Click <b>here</b> to continue", "Klicken Sie <b>hier</b>, um fortzufahren"),
    ("Line one<br/>line two", "Zeile eins<br/>Zeile zwei"),
    ("a < b and c > d holds", "a < b und c > d gilt"),
    ("Main Menu Settings", "Hauptmenü Einstellungen"),
    ("About Us Contact Page", "Über Uns Kontakt Seite"),
    ("Hello world", "Hello world"),
    ("Hello, World!", "hello world"),
    ("{{template}} value %s", "{{Vorlage}} Wert %s"),
    ("Re: your message", "AW: Ihre Nachricht"),
    ("*** WARNING ***", "*** WARNUNG ***"),
    ("1234 5678 9012", "1234 5678 9012"),
    ("!!! ??? ...", "!!! ??? ..."),
    ("h e l l o   w o r l d", "h a l l o   w e l t"),
    ("Some (unbalanced text", "Ein (unausgeglichener Text"),
    ("List: a) one b) two", "Liste: a) eins b) zwei"),
    ("[[[[x]]]] too many", "[[[[x]]]] zu viele"),
    ("Mixed Латиница text", "Gemischter Text"),
    ("Mixed 漢字 text", "Gemischter Text"),
    ("hahahahahahaha that was funny", "hahahahahahaha das war lustig"),
    ("Go go go go go go go now", "Los los los los los los jetzt"),
    ("Is this the end? Yes! It is.", "Ist das das Ende"),
    ("Short", "Eine sehr viel längere Übersetzung dieses einen kurzen Wortes"),
    ("A sentence of a normal length here.", "Ein Satz normaler Länge hier."),
    ("Ünïcödé wörds with äccents", "Wörter mit Akzenten äöü"),
    ("þýðir íslenska orð", "isländische Wörter"),
    ("Price: 0.99 $ only", "Preis: nur 0,99 $"),
    ("x" * 1100, "y" * 1100),
    ("Tab\tseparated words here", "Tabulator\tgetrennte Wörter hier"),
    ("I <3 you, x <a", "Ich <3 dich, x <a"),
    ("<!-- note --> and <x y=\">\">", "<!-- Notiz --> und < b>"),
    ("Press <A> or <a1> then <ä>", "Drücke <A> oder <a1>, dann <ä>"),
]


def catalog_pairs(lang: str = "de", limit: int = 4000) -> list[tuple[str, str]]:
    """Up to ``limit`` (English, ``lang``) pairs from the gettext catalogs, newlines made spaces, in a fixed
    order (files sorted); pairs with an empty side left out."""
    pairs: list[tuple[str, str]] = []
    for path in sorted((LOCALE / lang / "LC_MESSAGES").glob("*.mo")):
        try:
            with open(path, "rb") as handle:
                catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError):  # a catalog in a legacy encoding: left out
            continue
        for key, value in catalog.items():
            if not isinstance(key, str) or not key or not isinstance(value, str):
                continue
            src, tgt = " ".join(key.split()), " ".join(value.split())
            if src and tgt:
                pairs.append((src, tgt))
            if len(pairs) >= limit:
                return pairs
    return pairs


__all__ = ["PLANTED", "catalog_pairs"]
