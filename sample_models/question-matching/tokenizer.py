"""Character tokenizer for Chinese question pairs (pure Python: infer.py needs no paddlenlp).

A vocab file has one token a line: ``[PAD] [UNK] [CLS] [SEP] [MASK]`` first, then characters.
Text is NFKC-normalised (full-width ASCII -> half-width), ASCII lower-cased, and split into
characters; whitespace is dropped; a run of ASCII letters or digits is one token when the vocab
has it, else its characters. A pair is ``[CLS] a [SEP] b [SEP]`` with token type 0 for
``[CLS] a [SEP]`` and 1 for ``b [SEP]``; the longer question is cut first to fit max_seq_length.
"""

import unicodedata

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def normalize(text):
    return unicodedata.normalize("NFKC", text).lower()


def split_chars(text):
    """Characters of the normalised text, ASCII alphanumeric runs kept together, whitespace dropped."""
    out = []
    run = ""
    for ch in normalize(text):
        if ch.isascii() and ch.isalnum():
            run += ch
            continue
        if run:
            out.append(run)
            run = ""
        if not ch.isspace():
            out.append(ch)
    if run:
        out.append(run)
    return out


class CharTokenizer(object):
    def __init__(self, vocab_file):
        tokens = []
        with open(vocab_file, "r", encoding="utf-8") as f:
            for line in f:
                tok = line.rstrip("\r\n")
                if tok:
                    tokens.append(tok)
        if tokens[: len(SPECIAL)] != SPECIAL:
            raise ValueError("vocab %s must start with %s" % (vocab_file, " ".join(SPECIAL)))
        if len(set(tokens)) != len(tokens):
            raise ValueError("vocab %s has repeated tokens" % vocab_file)
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.pad_token_id = 0
        self.unk_token_id = 1
        self.cls_token_id = 2
        self.sep_token_id = 3

    def __len__(self):
        return len(self.vocab)

    def tokenize(self, text):
        out = []
        for piece in split_chars(text):
            if len(piece) > 1 and piece not in self.vocab:
                out.extend(piece)
            else:
                out.append(piece)
        return out

    def ids(self, text):
        unk = self.unk_token_id
        return [self.vocab.get(t, unk) for t in self.tokenize(text)]

    def encode_pair(self, text_a, text_b, max_seq_length):
        """(input_ids, token_type_ids) of ``[CLS] a [SEP] b [SEP]``, at most max_seq_length long."""
        a, b = self.ids(text_a), self.ids(text_b)
        room = max_seq_length - 3
        while len(a) + len(b) > room:
            if len(a) >= len(b):
                a.pop()
            else:
                b.pop()
        input_ids = [self.cls_token_id] + a + [self.sep_token_id] + b + [self.sep_token_id]
        token_type_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        return input_ids, token_type_ids
