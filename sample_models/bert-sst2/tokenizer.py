"""A small pure-Python BERT tokenizer (basic + WordPiece), no paddle/paddlenlp imports.

It reproduces ``paddlenlp.transformers.BertTokenizer(vocab_file, do_lower_case=True)``
(paddlenlp 2.8.1) for single sentences, ids included:

1. ``PretrainedTokenizer.tokenize``: every character outside the special tokens
   (``[UNK] [SEP] [PAD] [CLS] [MASK]``) is lower-cased one character at a time
   (so a Greek final sigma stays a plain sigma, as in paddlenlp); ``.`` in that
   regex does not match a newline, which is left alone;
2. ``BasicTokenizer.tokenize(never_split=<special tokens>)``: drop NUL / U+FFFD /
   control characters, map whitespace to spaces, put spaces around CJK
   characters, split on whitespace; each token that is not a special token is
   lower-cased, stripped of accents (NFD, drop ``Mn``) and split on punctuation
   *and* symbols (paddlenlp's ``_is_symbol``, which the original BERT lacks);
3. WordPiece (greedy longest match first, ``##`` continuation pieces, words of
   more than 100 characters become ``[UNK]``);
4. ``[CLS] tokens[:max_len - 2] [SEP]``, ``token_type_ids`` all 0.

``build_vocab.py`` uses :func:`basic_tokenize` so that the vocabulary holds the
same words the tokenizer looks up. The tests compare this module's ids with
paddlenlp's on the lite data and on SST-2 dev sentences.
"""

import re
import unicodedata

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
UNK_TOKEN, SEP_TOKEN, PAD_TOKEN, CLS_TOKEN, MASK_TOKEN = "[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"

# paddlenlp's all_special_tokens order; only the set matters here.
_SPECIAL_SET = frozenset(SPECIAL_TOKENS)
_LOWER_RE = re.compile(r"(" + r"|".join(re.escape(t) for t in SPECIAL_TOKENS) + r")|(.+?)")


def _is_whitespace(char):
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char).startswith("C")


def _is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


_EXTRA_SYMBOLS = frozenset([0x00AD, 0x00B2, 0x00BA, 0x3007, 0x00B5, 0x00D8, 0x014B, 0x01B1])


def _is_symbol(char):
    return unicodedata.category(char).startswith("S") or ord(char) in _EXTRA_SYMBOLS


def _is_chinese_char(cp):
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _clean_text(text):
    out = []
    for char in text:
        cp = ord(char)
        if cp == 0 or cp == 0xFFFD or _is_control(char):
            continue
        out.append(" " if _is_whitespace(char) else char)
    return "".join(out)


def _tokenize_chinese_chars(text):
    out = []
    for char in text:
        if _is_chinese_char(ord(char)):
            out.extend((" ", char, " "))
        else:
            out.append(char)
    return "".join(out)


def _strip_accents(text):
    text = unicodedata.normalize("NFD", text)
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


def _split_on_punc(text):
    output = []
    start_new_word = True
    for char in text:
        if _is_punctuation(char) or _is_symbol(char):
            output.append([char])
            start_new_word = True
        else:
            if start_new_word:
                output.append([])
            start_new_word = False
            output[-1].append(char)
    return ["".join(x) for x in output]


def _lower_outside_specials(text):
    if "[" not in text and text.isascii():  # no special token, and ASCII lower-cases alike char by char or whole
        return text.lower()
    return _LOWER_RE.sub(lambda m: m.group(1) or m.group(2).lower(), text)


# ASCII fast path for _clean_text: drop control characters, map \t \n \r to spaces.
_ASCII_CLEAN = {cp: None for cp in list(range(0, 32)) + [127]}
_ASCII_CLEAN.update({ord("\t"): " ", ord("\n"): " ", ord("\r"): " "})
_WORD_CACHE = {}
_WORD_CACHE_MAX = 200000


def _split_word(token):
    """lower + strip accents + split on punctuation/symbols, for one whitespace-free token."""
    pieces = _WORD_CACHE.get(token)
    if pieces is None:
        if token.isascii() and token.isalnum():  # no accent to strip, nothing to split on
            return [token.lower()]
        pieces = _split_on_punc(_strip_accents(token.lower()))
        # " ".join(...).split() in paddlenlp: pieces that hold whitespace after lower/NFD
        pieces = " ".join(pieces).split()
        if len(_WORD_CACHE) < _WORD_CACHE_MAX:
            _WORD_CACHE[token] = pieces
    return pieces


def basic_tokenize(text):
    """Lower-case + basic tokenization (steps 1-2 above): the words WordPiece sees."""
    text = _lower_outside_specials(text)
    if text.isascii():
        text = text.translate(_ASCII_CLEAN)
    else:
        text = _tokenize_chinese_chars(_clean_text(text))
    split_tokens = []
    for token in text.split():
        if token in _SPECIAL_SET:
            split_tokens.append(token)
        else:
            split_tokens.extend(_split_word(token))
    return split_tokens


def load_vocab(vocab_file):
    """token -> id, one token a line (the line number is the id), as paddlenlp reads it."""
    vocab = {}
    with open(vocab_file, "r", encoding="utf-8") as f:
        for index, line in enumerate(f):
            vocab[line.rstrip("\n")] = index
    return vocab


class BertTokenizer(object):
    """Pure-Python equivalent of paddlenlp's ``BertTokenizer(vocab_file)`` (lower case)."""

    def __init__(self, vocab_file, max_input_chars_per_word=100):
        self.vocab = load_vocab(vocab_file)
        for tok in (UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, PAD_TOKEN):
            if tok not in self.vocab:
                raise ValueError("vocabulary %s has no %s token" % (vocab_file, tok))
        self.unk_token_id = self.vocab[UNK_TOKEN]
        self.cls_token_id = self.vocab[CLS_TOKEN]
        self.sep_token_id = self.vocab[SEP_TOKEN]
        self.pad_token_id = self.vocab[PAD_TOKEN]
        self.max_input_chars_per_word = max_input_chars_per_word

    def __len__(self):
        return len(self.vocab)

    def wordpiece(self, word):
        vocab = self.vocab
        if len(word) > self.max_input_chars_per_word:
            return [UNK_TOKEN]
        pieces = []
        start, n = 0, len(word)
        while start < n:
            end = n
            cur = None
            while start < end:
                sub = word[start:end]
                if start > 0:
                    sub = "##" + sub
                if sub in vocab:
                    cur = sub
                    break
                end -= 1
            if cur is None:
                return [UNK_TOKEN]
            pieces.append(cur)
            start = end
        return pieces

    def tokenize(self, text):
        tokens = []
        for word in basic_tokenize(text):
            tokens.extend(self.wordpiece(word))
        return tokens

    def convert_tokens_to_ids(self, tokens):
        unk = self.unk_token_id
        return [self.vocab.get(t, unk) for t in tokens]

    def encode(self, text, max_seq_length=None):
        """Returns ``(input_ids, token_type_ids)`` as lists: [CLS] ... [SEP], truncated."""
        ids = self.convert_tokens_to_ids(self.tokenize(text))
        if max_seq_length is not None:
            ids = ids[: max(max_seq_length - 2, 0)]
        ids = [self.cls_token_id] + ids + [self.sep_token_id]
        return ids, [0] * len(ids)
