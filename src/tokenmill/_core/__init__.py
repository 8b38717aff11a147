"""Small pure functions that more than one stage needs (below text, vocab, store, prepare and data)."""
