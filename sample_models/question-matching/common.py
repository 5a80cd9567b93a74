"""Shared helpers for the question-matching scripts.

Importing this module is cheap: it imports neither paddle nor the model (modeling.py; the model
helpers import it inside the functions), so build_vocab.py, predict.py's argument checks and infer.py
can use it. No script of the sample imports paddlenlp: modeling.py is its ErnieGramModel and
RDropLoss, written out.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("GLOG_minloglevel", "2")

MODEL_NAME = "question_matching"
LABELS = ["different", "same"]  # 0: the two questions ask different things, 1: the same thing
CONFIG_FILE = "config.json"  # modeling.ErnieGramConfig.to_dict() (paddlenlp's reads it too) + the classifier's dropout
PARAMS_FILE = "model_state.pdparams"
VOCAB_FILE = "vocab.txt"
META_FILE = "train_meta.json"
NULL_VALUES = ("", "null", "none")
HEADER_FIRST = ("text_a", "query", "query1", "sentence1", "question1", "q1")


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
    if v < 5 or v > 512:
        raise argparse.ArgumentTypeError("max_seq_length must be in [5, 512], got %r" % value)
    return v


def positive_float(value):
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got %r" % value)
    if not v > 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got %r" % value)
    return v


def nonneg_float(value):
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got %r" % value)
    if not v >= 0:
        raise argparse.ArgumentTypeError("expected a number >= 0, got %r" % value)
    return v


def make_parser(description):
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
def load_pairs(path, flag, require_labels=False, extra_columns=False):
    """Read a question-pair TSV: ``text_a<TAB>text_b[<TAB>label[<TAB>...]]`` a line.

    The first line is a header, and skipped, when it reads ``text_a`` (or query/sentence1/...)
    in its first field or its third field is not 0/1. Empty lines are skipped. Returns
    ``(pairs, labels)`` (``labels`` None for a two-column file), plus the remaining columns of
    each row with ``extra_columns=True``.
    """
    require_file(path, flag)
    pairs, labels, extras = [], [], []
    first = True
    try:
        with open(path, "r", encoding="utf-8", newline="\n") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                fields = line.split("\t")
                if first:
                    first = False
                    if fields[0].strip().lower() in HEADER_FIRST or (len(fields) >= 3 and fields[2].strip().lower() == "label"):
                        continue
                if len(fields) < 2:
                    raise UserError("%s %s, line %d: expected two tab-separated questions (text_a<TAB>text_b), got one field"
                                    % (flag, path, lineno))
                pairs.append((fields[0], fields[1]))
                if len(fields) >= 3:
                    lab = fields[2].strip()
                    if lab not in ("0", "1"):
                        raise UserError("%s %s, line %d: label (third field) must be 0 or 1, got %r" % (flag, path, lineno, lab[:20]))
                    labels.append(int(lab))
                else:
                    labels.append(None)
                extras.append(fields[3:])
    except UnicodeDecodeError as e:
        raise UserError("%s %s: not UTF-8 text (%s)" % (flag, path, e))
    if not pairs:
        raise UserError("%s %s: no data rows" % (flag, path))
    n_labeled = sum(1 for x in labels if x is not None)
    if n_labeled == 0:
        labels = None
    elif n_labeled != len(labels):
        raise UserError("%s %s: some rows have a label and some do not" % (flag, path))
    if require_labels and labels is None:
        raise UserError("%s %s: rows need a label (text_a<TAB>text_b<TAB><0|1>)" % (flag, path))
    if extra_columns:
        return pairs, labels, extras
    return pairs, labels


def length_grouped_order(lengths, batch_size, rng, pool_batches=100):
    """Indices shuffled, sorted by length inside pools of ``pool_batches`` batches, cut into
    batches, batches shuffled (the one short batch last). A flat list of indices."""
    n = len(lengths)
    idx = rng.permutation(n).tolist()
    pool = batch_size * pool_batches
    batches = []
    for s in range(0, n, pool):
        chunk = sorted(idx[s : s + pool], key=lambda i: lengths[i])
        batches.extend(chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size))
    full = [b for b in batches if len(b) == batch_size]
    short = [b for b in batches if len(b) != batch_size]
    flat = []
    for i in rng.permutation(len(full)).tolist():
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


def encode_all(tokenizer, pairs, max_len):
    """[(input_ids, token_type_ids)] for a list of (text_a, text_b)."""
    return [tokenizer.encode_pair(a, b, max_len) for a, b in pairs]


def accuracy_line(correct, total):
    return "accuracy: %.4f (%d/%d)" % (correct / total if total else 0.0, correct, total)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
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
    """The checkpoint dir holding model_state.pdparams + config.json + vocab.txt.

    Accepted: the dir itself, the model_state.pdparams file in it (the baseline's
    ``--params_path .../model_<step>/model_state.pdparams``), or a train.py save_dir (its best_model/)."""
    if not path:
        raise UserError("%s is required" % flag)
    if os.path.isfile(path) and os.path.basename(path) == PARAMS_FILE:
        path = os.path.dirname(path) or "."
    if not os.path.isdir(path):
        raise UserError("%s: checkpoint not found: %s" % (flag, path))
    for cand in (path, os.path.join(path, "best_model")):
        if os.path.isfile(os.path.join(cand, PARAMS_FILE)):
            break
    else:
        raise UserError("%s: no %s in %s (expected a model_<step>/ or best_model/ folder written by train.py)"
                        % (flag, PARAMS_FILE, path))
    for name in (CONFIG_FILE, VOCAB_FILE):
        if not os.path.isfile(os.path.join(cand, name)):
            raise UserError("%s: checkpoint %s has no %s" % (flag, cand, name))
    return cand


def checkpoint_meta(ckpt_dir):
    meta_path = os.path.join(ckpt_dir, META_FILE)
    meta = read_json(meta_path, "checkpoint metadata") if os.path.isfile(meta_path) else {}
    meta.setdefault("max_seq_length", 48)
    meta.setdefault("labels", LABELS)
    return meta


def new_config(vocab_size, pad_token_id, hidden_size, num_layers, num_heads, intermediate_size,
               max_position_embeddings, dropout=0.1):
    """A small ErnieGramConfig (random init). embedding_size must be set with hidden_size."""
    from modeling import ErnieGramConfig

    return ErnieGramConfig(
        vocab_size=vocab_size,
        embedding_size=hidden_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        max_position_embeddings=max_position_embeddings,
        type_vocab_size=2,
        initializer_range=0.02,
        pad_token_id=pad_token_id,
    )


def build_model(config, dropout=0.1):
    """encoder (modeling.ErnieGramModel: paddlenlp's) -> pooled CLS -> dropout -> linear(2)."""
    from modeling import ErnieGramModel, QuestionMatching

    return QuestionMatching(ErnieGramModel(config), dropout, len(LABELS))


def matching_loss(logits1, labels, logits2=None, rdrop_coef=0.0):
    """The baseline's training loss: cross-entropy of the first pass + rdrop_coef x R-Drop KL of the two passes.
    Returns (loss, ce, kl); kl is None for one pass."""
    import paddle.nn.functional as F
    from modeling import rdrop_loss

    ce = F.cross_entropy(logits1, labels)
    if logits2 is None or rdrop_coef <= 0:
        return ce, ce, None
    kl = rdrop_loss(logits1, logits2)
    return ce + rdrop_coef * kl, ce, kl


def save_config(config, dropout, path):
    d = config.to_dict()
    d["classifier_dropout"] = dropout
    write_json(path, d)


def load_model(ckpt_dir):
    """The model from a checkpoint dir (config.json + model_state.pdparams)."""
    import paddle
    from modeling import ErnieGramConfig

    cfg = read_json(os.path.join(ckpt_dir, CONFIG_FILE), "model config")
    dropout = float(cfg.pop("classifier_dropout", 0.1))
    config = ErnieGramConfig(**cfg)
    model = build_model(config, dropout)
    state = paddle.load(os.path.join(ckpt_dir, PARAMS_FILE))
    missing, unexpected = model.set_state_dict(state)
    if missing or unexpected:
        raise UserError("checkpoint %s does not fit its config: missing %s, unexpected %s"
                        % (ckpt_dir, list(missing)[:5], list(unexpected)[:5]))
    return model, config, dropout


def set_device(device, flag="--device"):
    import paddle

    if device == "gpu":
        if not paddle.device.is_compiled_with_cuda():
            raise UserError("%s gpu: this paddle build has no CUDA support (use --device cpu)" % flag)
        if paddle.device.cuda.device_count() < 1:
            raise UserError("%s gpu: no CUDA device visible (use --device cpu)" % flag)
    paddle.set_device(device)


def predict_logits(model, encoded, batch_size, pad_id):
    """Dygraph logits [N, 2] (float32 numpy) for [(input_ids, token_type_ids)], in input order."""
    import numpy as np
    import paddle

    model.eval()
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    out = np.zeros((len(encoded), len(LABELS)), dtype="float32")
    with paddle.no_grad():
        for s in range(0, len(order), batch_size):
            ids = order[s : s + batch_size]
            input_ids = paddle.to_tensor(pad_batch([encoded[i][0] for i in ids], pad_id))
            token_type_ids = paddle.to_tensor(pad_batch([encoded[i][1] for i in ids], 0))
            out[ids] = model(input_ids, token_type_ids).numpy().astype("float32")
    return out
