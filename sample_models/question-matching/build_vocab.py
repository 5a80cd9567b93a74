"""Build the character vocabulary of the question-matching sample from question-pair TSVs.

    python sample_models/question-matching/build_vocab.py --input ./train_data/question_matching/train.tsv \
        --output ./train_data/question_matching/vocab.txt

``[PAD] [UNK] [CLS] [SEP] [MASK]`` first, then the characters (and ASCII letter/digit runs) of
both questions, most frequent first (ties by code point), those seen at least --min_freq times.
No paddle import.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from tokenizer import SPECIAL, split_chars  # noqa: E402


def parse_args(argv=None):
    p = common.make_parser("Build the character vocab of the question-matching sample.")
    p.add_argument("--input", required=True, action="append", help="question-pair TSV (repeatable)")
    p.add_argument("--output", required=True, help="vocab.txt to write")
    p.add_argument("--min_freq", type=common.positive_int, default=None,
                   help="default: 2 when the inputs hold more than 10,000 rows, else 1")
    p.add_argument("--max_size", type=common.positive_int, default=None, help="keep at most this many tokens")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    counts = collections.Counter()
    n_rows = 0
    for path in args.input:
        pairs, _ = common.load_pairs(path, "--input")
        n_rows += len(pairs)
        for a, b in pairs:
            counts.update(split_chars(a))
            counts.update(split_chars(b))
    min_freq = args.min_freq or (2 if n_rows > 10000 else 1)
    tokens = [t for t, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_freq and t not in SPECIAL]
    if args.max_size:
        tokens = tokens[: max(0, args.max_size - len(SPECIAL))]
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise common.UserError("--output: folder does not exist: %s" % out_dir)
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for t in SPECIAL + tokens:
            f.write(t + "\n")
    os.replace(tmp, args.output)
    print("vocab: %d tokens (%d special, min_freq %d) from %d rows -> %s"
          % (len(SPECIAL) + len(tokens), len(SPECIAL), min_freq, n_rows, args.output))
    return 0


if __name__ == "__main__":
    common.run_main(main)
