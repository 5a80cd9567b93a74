"""Build a word-level BERT vocabulary (vocab.txt) from SST-2 style TSV files.

    python sample_models/bert-sst2/build_vocab.py --input train.tsv [--input dev.tsv] \
        --output vocab.txt [--min_freq N]

Words come from the same lower-casing + basic tokenization as
paddlenlp's BertTokenizer(do_lower_case=True) (see tokenizer.py). The file starts with
``[PAD] [UNK] [CLS] [SEP] [MASK]`` (ids 0-4), then the words by falling frequency
(ties alphabetical). There are no ``##`` pieces: a word missing from the vocabulary
becomes [UNK].

--min_freq: a word must occur at least this often. Default: 2 when the inputs hold more
than 10,000 rows together (full SST-2 train: ~14k words instead of ~25k, and the rare
words the model cannot learn anyway go to [UNK], which it then learns), else 1 (small
data: keep every word). Does not import paddle.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from tokenizer import SPECIAL_TOKENS, basic_tokenize  # noqa: E402

LARGE_INPUT_ROWS = 10000


def parse_args(argv=None):
    p = common.make_parser("Build vocab.txt for the bert-sst2 sample model.")
    p.add_argument("--input", action="append", required=True, metavar="TSV", help="SST-2 style TSV; repeat for more files")
    p.add_argument("--output", required=True, metavar="VOCAB_TXT", help="vocab file to write")
    p.add_argument(
        "--min_freq",
        type=common.positive_int,
        default=None,
        help="minimum word count (default: 2 if the inputs hold > %d rows, else 1)" % LARGE_INPUT_ROWS,
    )
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    counter = collections.Counter()
    rows = 0
    for path in args.input:
        sentences, _ = common.load_tsv(path, flag="--input")
        rows += len(sentences)
        for s in sentences:
            counter.update(basic_tokenize(s))
    min_freq = args.min_freq if args.min_freq is not None else (2 if rows > LARGE_INPUT_ROWS else 1)
    words = [w for w, c in counter.items() if c >= min_freq and w not in SPECIAL_TOKENS]
    words.sort(key=lambda w: (-counter[w], w))
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise common.UserError("--output: directory does not exist: %s" % out_dir)
    try:
        with open(args.output, "w", encoding="utf-8", newline="\n") as f:
            for tok in SPECIAL_TOKENS + words:
                f.write(tok + "\n")
    except OSError as e:
        raise common.UserError("--output: cannot write %s: %s" % (args.output, e))
    print(
        "vocab: %d tokens (%d special + %d words, min_freq=%d, %d distinct words in %d rows) -> %s"
        % (len(SPECIAL_TOKENS) + len(words), len(SPECIAL_TOKENS), len(words), min_freq, len(counter), rows, args.output)
    )
    return 0


if __name__ == "__main__":
    common.run_main(main)
