"""Shared helpers for the bert-sst2 scripts.

Importing this module is cheap: it imports neither paddle nor the model (modeling.py; the model
helpers import them inside the functions), so build_vocab.py and infer.py can use it. No script of
the sample imports paddlenlp: modeling.py and tokenizer.py are its BERT and BertTokenizer, written out.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("GLOG_minloglevel", "2")

MODEL_NAME = "bert_sst2"
LABELS = ["negative", "positive"]
CONFIG_FILE = "config.json"  # modeling.BertConfig.to_dict() (paddlenlp's BertConfig reads it too)
PARAMS_FILE = "model_state.pdparams"
VOCAB_FILE = "vocab.txt"
META_FILE = "train_meta.json"  # max_seq_length, labels, how it was trained
NULL_VALUES = ("", "null", "none")


class UserError(Exception):
    """An error the user caused (bad flag value, missing file): message + exit 2, no traceback."""


def str2bool(value):
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("true", "t", "yes", "y", "1"):
        return True
    if v in ("false", "f", "no", "n", "0"):
        return False
    raise argparse.ArgumentTypeError("expected True or False, got %r" % value)


def optional_path(value):
    """A path flag where null/None/empty means 'not given'."""
    if value is None or str(value).strip().lower() in NULL_VALUES:
        return None
    return value


def positive_int(value):
    try:
        v = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer, got %r" % value)
    if v <= 0:
        raise argparse.ArgumentTypeError("expected an integer > 0, got %r" % value)
    return v


def seq_length(value):
    v = positive_int(value)
    if v < 3 or v > 512:
        raise argparse.ArgumentTypeError("max_seq_length must be in [3, 512], got %r" % value)
    return v


def positive_float(value):
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got %r" % value)
    if not v > 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got %r" % value)
    return v


def make_parser(description):
    # allow_abbrev=False: a misspelt flag is an error, not silently matched to a longer one.
    return argparse.ArgumentParser(description=description, allow_abbrev=False)


def run_main(main):
    """Run main(); a UserError becomes one line on stderr and exit status 2."""
    try:
        rc = main()
    except UserError as e:
        sys.stderr.write("error: %s\n" % e)
        sys.stderr.flush()
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    sys.exit(rc or 0)


def require_file(path, flag):
    if not path:
        raise UserError("%s is required" % flag)
    if not os.path.isfile(path):
        raise UserError("%s: file not found: %s" % (flag, path))
    return path


# ---------------------------------------------------------------- data
HEADER_NAMES_UNLABELED_ID = ("index", "id", "qid")
HEADER_NAMES_TEXT = ("sentence", "text", "content", "text_a", "sentence1")


def load_tsv(path, flag="--data_file", require_labels=False):
    """Read an SST-2 style TSV: ``<0|1>\\t<sentence>`` a line.

    * The first line is a header, and skipped, when its first field is not an integer
      (``label\\tsentence``, ``label\\tcontent``, ...); the header text itself is not used,
      except that ``index``/``id``/``qid`` as the first header field marks the GLUE
      test layout (``<id>\\t<sentence>``, unlabeled). A one-column file is unlabeled;
      its first line is a header only if it reads sentence/text/content/text_a.
    * Empty lines are skipped; example numbers count data rows only (0-based).

    Returns ``(sentences, labels)``; ``labels`` is None when no row has a label.
    """
    require_file(path, flag)
    sentences, labels = [], []
    id_layout = False
    first = True
    try:
        with open(path, "r", encoding="utf-8", newline="\n") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                fields = line.split("\t", 1)
                if first:
                    first = False
                    head = fields[0].strip()
                    if len(fields) == 1:
                        if head.lower() in HEADER_NAMES_TEXT:
                            continue
                    elif not _is_int(head):
                        id_layout = head.lower() in HEADER_NAMES_UNLABELED_ID
                        continue
                if len(fields) == 1:
                    sentences.append(fields[0])
                    labels.append(None)
                    continue
                if id_layout:
                    sentences.append(fields[1])
                    labels.append(None)
                    continue
                lab = fields[0].strip()
                if lab not in ("0", "1"):
                    raise UserError("%s %s, line %d: label must be 0 or 1, got %r" % (flag, path, lineno, lab[:20]))
                sentences.append(fields[1])
                labels.append(int(lab))
    except UnicodeDecodeError as e:
        raise UserError("%s %s: not UTF-8 text (%s)" % (flag, path, e))
    if not sentences:
        raise UserError("%s %s: no data rows" % (flag, path))
    n_labeled = sum(1 for x in labels if x is not None)
    if n_labeled == 0:
        labels = None
    elif n_labeled != len(labels):
        raise UserError("%s %s: some rows have a label and some do not" % (flag, path))
    if require_labels and labels is None:
        raise UserError("%s %s: rows need a label (<0|1>\\t<sentence>)" % (flag, path))
    return sentences, labels


def _is_int(s):
    try:
        int(s)
        return True
    except ValueError:
        return False


def length_grouped_order(lengths, batch_size, rng, pool_batches=100):
    """Indices shuffled, then sorted by length inside pools of ``pool_batches`` batches,
    cut into batches, and the batches shuffled: batches of similar lengths (less padding)
    in random order. Returns a flat list; consecutive ``batch_size`` chunks are batches."""
    n = len(lengths)
    idx = rng.permutation(n).tolist()
    pool = batch_size * pool_batches
    batches = []
    for s in range(0, n, pool):
        chunk = sorted(idx[s : s + pool], key=lambda i: lengths[i])
        batches.extend(chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size))
    # keep the one short batch (if any) last so only it is partial
    full = [b for b in batches if len(b) == batch_size]
    short = [b for b in batches if len(b) != batch_size]
    order = rng.permutation(len(full)).tolist()
    flat = []
    for i in order:
        flat.extend(full[i])
    for b in short:
        flat.extend(b)
    return flat


def pad_batch(seqs, pad_id):
    """List of id lists -> int64 array [batch, max_len] padded with pad_id."""
    import numpy as np

    max_len = max(len(s) for s in seqs)
    out = np.full((len(seqs), max_len), pad_id, dtype="int64")
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


def accuracy_line(correct, total):
    return "accuracy: %.4f (%d/%d)" % (correct / total if total else 0.0, correct, total)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path, what):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise UserError("cannot read %s %s: %s" % (what, path, e))


# ---------------------------------------------------------------- checkpoints / model
def resolve_checkpoint(path, flag):
    """The checkpoint dir (holding model_state.pdparams); DIR/checkpoint is accepted too."""
    if not path:
        raise UserError("%s is required" % flag)
    if not os.path.isdir(path):
        raise UserError("%s: checkpoint directory not found: %s" % (flag, path))
    for cand in (path, os.path.join(path, "checkpoint")):
        if os.path.isfile(os.path.join(cand, PARAMS_FILE)):
            break
    else:
        raise UserError("%s: no %s in %s (expected a checkpoint directory written by train.py)" % (flag, PARAMS_FILE, path))
    for name in (CONFIG_FILE, VOCAB_FILE):
        if not os.path.isfile(os.path.join(cand, name)):
            raise UserError("%s: checkpoint %s has no %s" % (flag, cand, name))
    return cand


def checkpoint_meta(ckpt_dir):
    meta_path = os.path.join(ckpt_dir, META_FILE)
    meta = read_json(meta_path, "checkpoint metadata") if os.path.isfile(meta_path) else {}
    meta.setdefault("max_seq_length", 64)
    meta.setdefault("labels", LABELS)
    return meta


def new_bert_config(vocab_size, pad_token_id, hidden_size, num_layers, num_heads, intermediate_size, dropout=0.1):
    from modeling import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        pad_token_id=pad_token_id,
        num_labels=len(LABELS),
        id2label={i: name for i, name in enumerate(LABELS)},
        label2id={name: i for i, name in enumerate(LABELS)},
    )


def encode_sentences(vocab_file, sentences, max_len):
    """Token ids ([CLS] ... [SEP], at most max_len) of each sentence, and the [PAD] id (tokenizer.py)."""
    from tokenizer import BertTokenizer

    tokenizer = BertTokenizer(vocab_file)
    return [tokenizer.encode(s, max_len)[0] for s in sentences], tokenizer.pad_token_id


def save_config(config, path):
    d = config.to_dict()
    write_json(path, d)


def load_model(ckpt_dir):
    """BertForSequenceClassification (modeling.py) from a checkpoint dir (config.json + model_state.pdparams)."""
    import paddle
    from modeling import BertConfig, BertForSequenceClassification

    cfg = read_json(os.path.join(ckpt_dir, CONFIG_FILE), "model config")
    config = BertConfig(**cfg)
    model = BertForSequenceClassification(config)
    state = paddle.load(os.path.join(ckpt_dir, PARAMS_FILE))
    missing, unexpected = model.set_state_dict(state)
    if missing or unexpected:
        raise UserError(
            "checkpoint %s does not fit its config: missing %s, unexpected %s" % (ckpt_dir, list(missing)[:5], list(unexpected)[:5])
        )
    return model, config


def set_device(device, flag="--device"):
    import paddle

    if device == "gpu":
        if not paddle.device.is_compiled_with_cuda():
            raise UserError("%s gpu: this paddle build has no CUDA support (use --device cpu)" % flag)
        if paddle.device.cuda.device_count() < 1:
            raise UserError("%s gpu: no CUDA device visible (use --device cpu)" % flag)
    paddle.set_device(device)


def predict_logits(model, encoded, batch_size, pad_id):
    """Dygraph logits [N, 2] (float32 numpy) for lists of input ids, in input order.
    Batches are formed from length-sorted examples (less padding; [PAD] is masked)."""
    import numpy as np
    import paddle

    model.eval()
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    out = np.zeros((len(encoded), len(LABELS)), dtype="float32")
    with paddle.no_grad():
        for s in range(0, len(order), batch_size):
            ids = order[s : s + batch_size]
            input_ids = paddle.to_tensor(pad_batch([encoded[i] for i in ids], pad_id))
            logits = model(input_ids, token_type_ids=paddle.zeros_like(input_ids))
            out[ids] = logits.numpy().astype("float32")
    return out
