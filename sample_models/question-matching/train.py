"""Train the question-matching sample: a small ERNIE-Gram (paddlenlp's, written out in modeling.py; random
init) point-wise matcher with optional R-Drop, the shape of PaddleNLP's question_matching baseline.

    python sample_models/question-matching/train.py --device=cpu --save_dir=./output/qm \
        --train_set=./train_data/question_matching/train.tsv --dev_set=./train_data/question_matching/dev.tsv \
        --train_batch_size=32 --epochs=3 --eval_step=100 --rdrop_coef=0.1

Every --eval_step steps (and after the last step) the model is evaluated on --dev_set; when dev
accuracy improves, <save_dir>/model_<step>/model_state.pdparams (+ config.json, vocab.txt,
train_meta.json) is saved. At the end the best one is copied to <save_dir>/best_model/ (the
folder TIPC's eval and export steps use). With --rdrop_coef > 0 every batch is forwarded twice
and the loss is cross-entropy + rdrop_coef x paddlenlp's RDropLoss of the two outputs.
Log: <save_dir>/train.log, written only when training succeeded (train.log.partial before).
"""

import os
import shutil
import sys
import time
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import UserError  # noqa: E402
from tokenizer import CharTokenizer  # noqa: E402


def parse_args(argv=None):
    p = common.make_parser("Train the question-matching sample (small ERNIE-Gram, random init, R-Drop).")
    # the baseline's flags
    p.add_argument("--train_set", required=True, help="TSV text_a<TAB>text_b<TAB>label (a header line is skipped)")
    p.add_argument("--dev_set", required=True, help="TSV like --train_set; evaluated every --eval_step steps")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--eval_step", type=common.positive_int, default=100)
    p.add_argument("--save_dir", required=True, help="model_<step>/, best_model/ and train.log go here")
    p.add_argument("--train_batch_size", type=common.positive_int, default=32)
    p.add_argument("--learning_rate", type=common.positive_float, default=1e-3)
    p.add_argument("--epochs", type=common.positive_int, default=3)
    p.add_argument("--max_steps", type=int, default=-1, help="stop after this many steps (-1: no limit)")
    p.add_argument("--max_seq_length", type=common.seq_length, default=48)
    p.add_argument("--rdrop_coef", type=common.nonneg_float, default=0.0, help="0.0: no R-Drop (one forward pass)")
    p.add_argument("--warmup_proportion", type=float, default=0.1)
    p.add_argument("--init_from_ckpt", type=common.optional_path, default=None, help="checkpoint to start from (null: none)")
    p.add_argument("--seed", type=int, default=1000)
    # what TIPC and a small CPU budget need
    p.add_argument("--vocab_file", type=common.optional_path, default=None, help="default: <dirname(train_set)>/vocab.txt")
    p.add_argument("--auto_cast", choices=["null", "fp32", "amp", "fp16"], default="null",
                   help="amp/fp16 use paddle.amp on GPU; on CPU training stays float32 (and the log says so)")
    p.add_argument("--max_train_seconds", type=common.positive_float, default=None,
                   help="stop (after a last evaluation) once training has run this long")
    p.add_argument("--random_swap", type=common.str2bool, default=False,
                   help="True: each step feeds a pair as (text_a, text_b) or (text_b, text_a) at random (same label)")
    p.add_argument("--weight_decay", type=float, default=0.01)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--hidden_size", type=common.positive_int, default=64)
    p.add_argument("--num_layers", type=common.positive_int, default=2)
    p.add_argument("--num_heads", type=common.positive_int, default=2)
    p.add_argument("--intermediate_size", type=common.positive_int, default=128)
    p.add_argument("--eval_batch_size", type=common.positive_int, default=128)
    p.add_argument("--log_interval", type=common.positive_int, default=10)
    args = p.parse_args(argv)
    if args.max_steps == 0 or args.max_steps < -1:
        p.error("argument --max_steps: expected -1 or an integer > 0, got %d" % args.max_steps)
    if args.hidden_size % args.num_heads:
        p.error("--hidden_size (%d) must be a multiple of --num_heads (%d)" % (args.hidden_size, args.num_heads))
    if not 0.0 <= args.warmup_proportion < 1.0:
        p.error("argument --warmup_proportion: expected a value in [0, 1)")
    if not 0.0 <= args.dropout < 1.0:
        p.error("argument --dropout: expected a value in [0, 1)")
    return args


class Log(object):
    """Prints every line; rank 0 also writes <save_dir>/train.log.partial, renamed to train.log
    only when training succeeded (upstream runners `cat train.log` as the training status)."""

    def __init__(self, path):
        self.path = path
        self.f = None
        if path:
            if os.path.lexists(path):
                os.remove(path)
            self.f = open(path + ".partial", "w", encoding="utf-8")

    def __call__(self, msg):
        print(msg, flush=True)
        if self.f:
            self.f.write(msg + "\n")
            self.f.flush()

    def close(self, success=False):
        if self.f:
            self.f.close()
            self.f = None
            if success:
                os.replace(self.path + ".partial", self.path)


def main(argv=None):
    args = parse_args(argv)
    t_start = time.time()
    common.require_file(args.train_set, "--train_set")
    common.require_file(args.dev_set, "--dev_set")
    ckpt_in = common.resolve_checkpoint(args.init_from_ckpt, "--init_from_ckpt") if args.init_from_ckpt else None
    if ckpt_in:
        vocab_file = os.path.join(ckpt_in, common.VOCAB_FILE)  # the embedding rows follow the checkpoint's vocab
    else:
        vocab_file = args.vocab_file or os.path.join(os.path.dirname(args.train_set), common.VOCAB_FILE)
        common.require_file(vocab_file, "--vocab_file" if args.vocab_file else
                            "--vocab_file (default <dirname(train_set)>/vocab.txt, written by build_vocab.py)")
    if os.path.exists(args.save_dir) and not os.path.isdir(args.save_dir):
        raise UserError("--save_dir exists and is not a directory: %s" % args.save_dir)
    train_pairs, train_labels = common.load_pairs(args.train_set, "--train_set", require_labels=True)
    dev_pairs, dev_labels = common.load_pairs(args.dev_set, "--dev_set", require_labels=True)
    try:
        tokenizer = CharTokenizer(vocab_file)
    except ValueError as e:
        raise UserError(str(e))

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
        import paddle.distributed as dist

        common.set_device(args.device)

    t_import = time.time() - t_start
    world_size = dist.get_world_size()
    if world_size > 1:
        dist.init_parallel_env()
    rank = dist.get_rank()
    if rank == 0:
        os.makedirs(args.save_dir, exist_ok=True)
    log = Log(os.path.join(args.save_dir, "train.log") if rank == 0 else None)
    rc = 1
    try:
        rc = _train(args, log, rank, world_size, vocab_file, ckpt_in, tokenizer, train_pairs, train_labels,
                    dev_pairs, dev_labels, t_start, t_import, np, paddle)
    finally:
        log.close(success=rc == 0)
    if world_size > 1 and rc == 0:
        # As bert-sst2's train.py: all ranks end together and gloo is closed here, not in a destructor at exit.
        dist.barrier()
        dist.destroy_process_group()
    return rc


def _save(model, config, args, vocab_file, path, extra):
    import paddle

    os.makedirs(path, exist_ok=True)
    paddle.save(model.state_dict(), os.path.join(path, common.PARAMS_FILE))
    common.save_config(config, args.dropout, os.path.join(path, common.CONFIG_FILE))
    shutil.copyfile(vocab_file, os.path.join(path, common.VOCAB_FILE))
    meta = {"model_name": common.MODEL_NAME, "max_seq_length": args.max_seq_length, "labels": common.LABELS,
            "train_set": args.train_set, "dev_set": args.dev_set, "rdrop_coef": args.rdrop_coef,
            "train_batch_size": args.train_batch_size, "learning_rate": args.learning_rate, "seed": args.seed,
            "device": args.device}
    meta.update(extra)
    common.write_json(os.path.join(path, common.META_FILE), meta)


def _train(args, log, rank, world_size, vocab_file, ckpt_in, tokenizer, train_pairs, train_labels,
           dev_pairs, dev_labels, t_start, t_import, np, paddle):
    paddle.seed(args.seed)
    np.random.seed(args.seed)
    log("question_matching train: device=%s, world_size=%d, train_set=%s (%d rows), dev_set=%s (%d rows), "
        "vocab_file=%s, epochs=%d, train_batch_size=%d, learning_rate=%g, max_seq_length=%d, max_steps=%d, "
        "eval_step=%d, rdrop_coef=%g, random_swap=%s, seed=%d"
        % (args.device, world_size, args.train_set, len(train_pairs), args.dev_set, len(dev_pairs), vocab_file,
           args.epochs, args.train_batch_size, args.learning_rate, args.max_seq_length, args.max_steps,
           args.eval_step, args.rdrop_coef, args.random_swap, args.seed))
    amp_level = None
    if args.auto_cast in ("amp", "fp16"):
        if args.device == "gpu":
            amp_level = "O1"
            log("auto_cast=%s: paddle.amp level O1 on GPU" % args.auto_cast)
        else:
            log("auto_cast=%s requested; CPU has no AMP, trained in float32" % args.auto_cast)
    if args.rdrop_coef > 0:
        log("rdrop: two forward passes per batch, loss = cross-entropy + %g x RDropLoss (symmetric KL)" % args.rdrop_coef)
    else:
        log("rdrop: off (rdrop_coef 0), one forward pass per batch")

    t0 = time.time()
    encoded = common.encode_all(tokenizer, train_pairs, args.max_seq_length)
    swapped = common.encode_all(tokenizer, [(b, a) for a, b in train_pairs], args.max_seq_length) if args.random_swap else None
    swap_rng = np.random.RandomState(args.seed + 1)
    dev_encoded = common.encode_all(tokenizer, dev_pairs, args.max_seq_length)
    lengths = [len(e[0]) for e in encoded]
    label_arr = np.asarray(train_labels, dtype="int64")
    dev_label_arr = np.asarray(dev_labels, dtype="int64")
    log("tokenized %d + %d pairs in %.2f s (vocab %d, mean length %.1f)"
        % (len(encoded), len(dev_encoded), time.time() - t0, len(tokenizer), float(np.mean(lengths))))

    if ckpt_in:
        model, config, _ = common.load_model(ckpt_in)
        log("init_from_ckpt: %s (model size flags ignored; config from the checkpoint)" % ckpt_in)
    else:
        config = common.new_config(len(tokenizer), tokenizer.pad_token_id, args.hidden_size, args.num_layers,
                                   args.num_heads, args.intermediate_size, max(64, args.max_seq_length), args.dropout)
        model = common.build_model(config, args.dropout)
    if config.vocab_size != len(tokenizer):
        raise UserError("vocab %s has %d tokens but the model has %d" % (vocab_file, len(tokenizer), config.vocab_size))
    if config.max_position_embeddings < args.max_seq_length:
        raise UserError("--max_seq_length %d exceeds the checkpoint's max_position_embeddings %d"
                        % (args.max_seq_length, config.max_position_embeddings))
    n_params = sum(int(np.prod(p.shape)) for p in model.parameters())
    log("model: ErnieGram hidden_size=%d, num_layers=%d, num_heads=%d, intermediate_size=%d, vocab_size=%d, params=%d"
        % (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size,
           config.vocab_size, n_params))

    sampler_cls = paddle.io.DistributedBatchSampler
    steps_per_epoch = len(sampler_cls(list(range(len(encoded))), args.train_batch_size, shuffle=False))
    total_steps = steps_per_epoch * args.epochs
    if args.max_steps > 0:
        total_steps = min(total_steps, args.max_steps)
    warmup = int(total_steps * args.warmup_proportion)

    def lr_lambda(step):  # linear warmup, then linear decay to 0 (paddlenlp's LinearDecayWithWarmup)
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total_steps - step) / float(max(1, total_steps - warmup)))

    scheduler = paddle.optimizer.lr.LambdaDecay(args.learning_rate, lr_lambda)
    decay_names = [p.name for n, p in model.named_parameters() if not any(k in n for k in ("bias", "norm"))]
    optimizer = paddle.optimizer.AdamW(learning_rate=scheduler, parameters=model.parameters(),
                                       weight_decay=args.weight_decay,
                                       apply_decay_param_fun=lambda name: name in decay_names,
                                       grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0))
    scaler = paddle.amp.GradScaler(init_loss_scaling=2.0 ** 15) if amp_level else None
    raw_model = model
    if world_size > 1:
        model = paddle.DataParallel(model)

    pad_id = tokenizer.pad_token_id
    best_acc, best_step, best_dir = -1.0, 0, None
    evals = []

    def evaluate(step):
        nonlocal best_acc, best_step, best_dir
        t_eval = time.time()
        logits = common.predict_logits(raw_model, dev_encoded, args.eval_batch_size, pad_id)
        model.train()
        acc = float((logits.argmax(axis=1) == dev_label_arr).mean())
        evals.append((step, acc))
        improved = acc > best_acc
        log("eval: global_step: %d, dev_accuracy: %.4f (%d rows, %.2f s)%s"
            % (step, acc, len(dev_label_arr), time.time() - t_eval, ", best so far: saving" if improved else
               ", best %.4f at step %d" % (best_acc, best_step)))
        if improved:
            best_acc, best_step = acc, step
            if rank == 0:
                best_dir = os.path.join(args.save_dir, "model_%d" % step)
                _save(raw_model, config, args, vocab_file, best_dir, {"global_step": step, "dev_accuracy": acc})
                log("saved model_%d/%s (dev accuracy %.4f)" % (step, common.PARAMS_FILE, acc))

    rng = np.random.RandomState(args.seed)
    global_step = 0
    t_train = time.time()
    model.train()
    done = False
    stop_reason = "all epochs"
    for epoch in range(1, args.epochs + 1):
        order = common.length_grouped_order(lengths, args.train_batch_size * world_size, rng)
        sampler = sampler_cls(order, args.train_batch_size, shuffle=False)
        win_reader = win_batch = 0.0
        win_samples = win_steps = 0
        win_loss, win_kl = [], []
        t_prev = time.time()
        for positions in sampler:
            ids = [order[p] for p in positions]
            if swapped is not None:  # the same question pair, in either order
                batch = [swapped[i] if s else encoded[i] for i, s in zip(ids, swap_rng.rand(len(ids)) < 0.5)]
            else:
                batch = [encoded[i] for i in ids]
            input_ids = paddle.to_tensor(common.pad_batch([e[0] for e in batch], pad_id))
            token_type_ids = paddle.to_tensor(common.pad_batch([e[1] for e in batch], 0))
            y = paddle.to_tensor(label_arr[ids])
            t_read = time.time()
            with paddle.amp.auto_cast(enable=amp_level is not None, level=amp_level or "O1"):
                logits1 = model(input_ids, token_type_ids)
                logits2 = model(input_ids, token_type_ids) if args.rdrop_coef > 0 else None  # R-Drop: second pass
                loss, _, kl = common.matching_loss(logits1, y, logits2, args.rdrop_coef)
            if scaler is not None:
                scaled = scaler.scale(loss)
                scaled.backward()
                scaler.minimize(optimizer, scaled)
            else:
                loss.backward()
                optimizer.step()
            optimizer.clear_grad()
            step_lr = scheduler.get_lr()
            scheduler.step()
            global_step += 1
            win_loss.append(float(loss))
            if kl is not None:
                win_kl.append(float(kl))
            t_now = time.time()
            win_reader += t_read - t_prev
            win_batch += t_now - t_prev
            win_samples += len(ids)
            win_steps += 1
            t_prev = t_now
            last = global_step == total_steps
            over_time = args.max_train_seconds is not None and time.time() - t_train >= args.max_train_seconds
            if global_step % args.log_interval == 0 or last or over_time or win_steps == steps_per_epoch:
                loss_val = float(np.mean(win_loss))
                if not np.isfinite(loss_val):
                    log("epoch: %d, global_step: %d, loss is %s: stopping" % (epoch, global_step, loss_val))
                    return 1
                kl_text = ", kl_loss: %.5f" % float(np.mean(win_kl)) if win_kl else ""
                log("epoch: %d, global_step: %d, loss: %.5f%s, avg_reader_cost: %.5f sec, avg_batch_cost: %.5f sec, "
                    "avg_samples: %.1f, avg_ips: %.1f sequences/sec, learning_rate: %.6f"
                    % (epoch, global_step, loss_val, kl_text, win_reader / win_steps, win_batch / win_steps,
                       win_samples / win_steps, win_samples / max(win_batch, 1e-9), step_lr))
                win_reader = win_batch = 0.0
                win_samples = win_steps = 0
                win_loss, win_kl = [], []
            if global_step % args.eval_step == 0 or last or over_time:
                evaluate(global_step)
            t_prev = time.time()
            if last or over_time:
                if over_time and not last:
                    stop_reason = "--max_train_seconds %g reached" % args.max_train_seconds
                elif args.max_steps > 0 and global_step == args.max_steps:
                    stop_reason = "--max_steps %d reached" % args.max_steps
                done = True
                break
        if done:
            break
    train_seconds = time.time() - t_train
    if rank == 0:
        best = os.path.join(args.save_dir, "best_model")
        if os.path.isdir(best):
            shutil.rmtree(best)
        shutil.copytree(best_dir, best)
        common.write_json(os.path.join(best, common.META_FILE), dict(
            common.read_json(os.path.join(best_dir, common.META_FILE), "checkpoint metadata"),
            best_of=[{"global_step": s, "dev_accuracy": a} for s, a in evals], train_seconds=round(train_seconds, 2),
            total_steps=global_step))
        log("best_model: model_%d (dev accuracy %.4f) copied to %s" % (best_step, best_acc, best))
    log("stopped after %d steps: %s" % (global_step, stop_reason))
    log("total wall time: %.2f s (imports %.2f s)" % (time.time() - t_start, t_import))
    log("train done: steps=%d, seconds=%.2f, best dev accuracy %.4f at step %d" % (global_step, train_seconds, best_acc, best_step))
    return 0


if __name__ == "__main__":
    common.run_main(main)
