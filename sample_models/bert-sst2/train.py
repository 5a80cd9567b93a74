"""Train a tiny BERT (random init; modeling.py: paddlenlp's BertForSequenceClassification) on SST-2 style TSV.

    python sample_models/bert-sst2/train.py --device=cpu --output_dir=./output/bert_sst2 \
        --data_file=./train_data/bert_sst2/train.tsv --epochs=1 --batch_size=32

Writes <output_dir>/train.log (also printed; it appears only when training succeeded, see Log)
and <output_dir>/checkpoint/ (model_state.pdparams, config.json, vocab.txt, train_meta.json).
Multi-process: python -m paddle.distributed.launch --host 127.0.0.1 --nproc_per_node 2 train.py ...
(rank 0 writes the log and the checkpoint).
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


def parse_args(argv=None):
    p = common.make_parser("Train the bert-sst2 sample model (tiny BERT, random init).")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--output_dir", required=True, help="train.log and checkpoint/ go here")
    p.add_argument("--epochs", type=common.positive_int, default=1)
    p.add_argument("--batch_size", type=common.positive_int, default=32, help="per process")
    p.add_argument("--data_file", default="./train_data/bert_sst2/train.tsv", help="SST-2 style TSV (<0|1>\\t<sentence>)")
    p.add_argument("--vocab_file", type=common.optional_path, default=None, help="default: <dirname(data_file)>/vocab.txt")
    p.add_argument("--init_from_ckpt", type=common.optional_path, default=None, help="checkpoint dir to start from (null: none)")
    p.add_argument("--auto_cast", choices=["null", "fp32", "amp", "fp16"], default="null",
                   help="amp/fp16: paddle.amp on GPU; on CPU training stays float32 (and the log says so)")
    p.add_argument("--to_static", choices=["True", "False"], default="False",
                   help="True: train through paddle.jit.to_static (the dy2static chain's static training)")
    p.add_argument("--max_steps", type=int, default=-1, help="stop after this many steps (-1: no limit)")
    p.add_argument("--learning_rate", type=common.positive_float, default=1e-3)
    p.add_argument("--warmup_proportion", type=float, default=0.1)
    p.add_argument("--weight_decay", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max_seq_length", type=common.seq_length, default=64)
    p.add_argument("--hidden_size", type=common.positive_int, default=64)
    p.add_argument("--num_layers", type=common.positive_int, default=2)
    p.add_argument("--num_heads", type=common.positive_int, default=2)
    p.add_argument("--intermediate_size", type=common.positive_int, default=256)
    p.add_argument("--log_interval", type=common.positive_int, default=10)
    args = p.parse_args(argv)
    if args.max_steps == 0 or args.max_steps < -1:
        p.error("argument --max_steps: expected -1 or an integer > 0, got %d" % args.max_steps)
    if args.hidden_size % args.num_heads:
        p.error("--hidden_size (%d) must be a multiple of --num_heads (%d)" % (args.hidden_size, args.num_heads))
    if not 0.0 <= args.warmup_proportion < 1.0:
        p.error("argument --warmup_proportion: expected a value in [0, 1)")
    return args


class Log(object):
    """Prints every line; rank 0 also writes it to <output_dir>/train.log.

    The file is written as train.log.partial and renamed to train.log only when training
    succeeded: upstream TIPC runners take the exit code of `cat <output_dir>/train.log` as the
    training status, so a failed run must not leave a train.log (nor a stale one behind)."""

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
    common.require_file(args.data_file, "--data_file")
    ckpt_in = common.resolve_checkpoint(args.init_from_ckpt, "--init_from_ckpt") if args.init_from_ckpt else None
    if ckpt_in:
        vocab_file = os.path.join(ckpt_in, common.VOCAB_FILE)  # the model's embedding rows follow its vocab
        if args.vocab_file and os.path.abspath(args.vocab_file) != os.path.abspath(vocab_file):
            common.require_file(args.vocab_file, "--vocab_file")
            with open(args.vocab_file, "rb") as a, open(vocab_file, "rb") as b:
                if a.read() != b.read():
                    raise UserError("--vocab_file %s differs from the vocab of --init_from_ckpt %s" % (args.vocab_file, ckpt_in))
    else:
        vocab_file = args.vocab_file or os.path.join(os.path.dirname(args.data_file), common.VOCAB_FILE)
        common.require_file(vocab_file, "--vocab_file" if args.vocab_file else "--vocab_file (default <dirname(data_file)>/vocab.txt)")
    if os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise UserError("--output_dir exists and is not a directory: %s" % args.output_dir)
    sentences, labels = common.load_tsv(args.data_file, "--data_file", require_labels=True)

    import numpy as np

    with warnings.catch_warnings():  # import-time noise (ccache, setuptools/distutils)
        warnings.simplefilter("ignore")
        import paddle
        import paddle.distributed as dist
        import paddle.nn.functional as F

        common.set_device(args.device)  # fail fast
        from modeling import BertForSequenceClassification
        from tokenizer import BertTokenizer

    t_import = time.time() - t_start
    world_size = dist.get_world_size()
    if world_size > 1:
        dist.init_parallel_env()
    rank = dist.get_rank()
    if rank == 0:
        os.makedirs(args.output_dir, exist_ok=True)
    log = Log(os.path.join(args.output_dir, "train.log") if rank == 0 else None)
    rc = 1
    try:
        rc = _train(args, log, rank, world_size, vocab_file, ckpt_in, sentences, labels, t_start, t_import,
                    np, paddle, F, BertForSequenceClassification, BertTokenizer)
    finally:
        log.close(success=rc == 0)
    if world_size > 1 and rc == 0:
        # Every rank reaches the end before any leaves, and gloo's connections are closed here, not in a
        # destructor at exit: a rank whose peer had already gone aborted there now and then (SIGABRT after
        # "train done", `paddle.distributed.launch` exit 250), failing a finished training.
        dist.barrier()
        dist.destroy_process_group()
    return rc


def _train(args, log, rank, world_size, vocab_file, ckpt_in, sentences, labels, t_start, t_import,
           np, paddle, F, BertForSequenceClassification, BertTokenizer):
    paddle.seed(args.seed)
    np.random.seed(args.seed)
    log("bert_sst2 train: device=%s, world_size=%d, data_file=%s (%d rows), vocab_file=%s, epochs=%d, "
        "batch_size=%d, learning_rate=%g, max_seq_length=%d, max_steps=%d, seed=%d"
        % (args.device, world_size, args.data_file, len(sentences), vocab_file, args.epochs, args.batch_size,
           args.learning_rate, args.max_seq_length, args.max_steps, args.seed))

    # ---- precision
    amp_level = None
    if args.auto_cast in ("amp", "fp16"):
        if args.device == "gpu":
            amp_level = "O1" if args.auto_cast == "amp" else "O2"
            log("auto_cast=%s: paddle.amp level %s on GPU" % (args.auto_cast, amp_level))
        else:
            log("auto_cast=%s requested; CPU has no AMP, trained in float32" % args.auto_cast)

    # ---- tokenize (tokenizer.py: paddlenlp's BertTokenizer ids)
    t0 = time.time()
    tokenizer = BertTokenizer(vocab_file)
    encoded = [tokenizer.encode(s, args.max_seq_length)[0] for s in sentences]
    lengths = [len(e) for e in encoded]
    label_arr = np.asarray(labels, dtype="int64")
    log("tokenized %d sentences in %.2f s (vocab %d, mean length %.1f)"
        % (len(encoded), time.time() - t0, len(tokenizer.vocab), float(np.mean(lengths))))

    # ---- model
    if ckpt_in:
        model, config = common.load_model(ckpt_in)
        log("init_from_ckpt: %s (model size flags ignored; config from the checkpoint)" % ckpt_in)
    else:
        config = common.new_bert_config(len(tokenizer.vocab), tokenizer.pad_token_id, args.hidden_size,
                                        args.num_layers, args.num_heads, args.intermediate_size)
        model = BertForSequenceClassification(config)
    if config.vocab_size != len(tokenizer.vocab):
        raise UserError("vocab %s has %d tokens but the model has %d" % (vocab_file, len(tokenizer.vocab), config.vocab_size))
    n_params = sum(int(np.prod(p.shape)) for p in model.parameters())
    log("model: hidden_size=%d, num_layers=%d, num_heads=%d, intermediate_size=%d, vocab_size=%d, params=%d"
        % (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size,
           config.vocab_size, n_params))

    batch_sampler_cls = paddle.io.DistributedBatchSampler
    steps_per_epoch = len(batch_sampler_cls(list(range(len(encoded))), args.batch_size, shuffle=False))
    total_steps = steps_per_epoch * args.epochs
    if args.max_steps > 0:
        total_steps = min(total_steps, args.max_steps)
    warmup = int(total_steps * args.warmup_proportion)

    def lr_lambda(step):
        if step < warmup:
            return float(step + 1) / float(max(1, warmup))
        return max(0.0, float(total_steps - step) / float(max(1, total_steps - warmup)))

    scheduler = paddle.optimizer.lr.LambdaDecay(args.learning_rate, lr_lambda)
    decay_names = [p.name for n, p in model.named_parameters() if not any(k in n for k in ("bias", "norm"))]
    optimizer = paddle.optimizer.AdamW(
        learning_rate=scheduler,
        parameters=model.parameters(),
        weight_decay=args.weight_decay,
        apply_decay_param_fun=lambda name: name in decay_names,
        grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0),
    )
    scaler = None
    if amp_level:
        scaler = paddle.amp.GradScaler(init_loss_scaling=2.0 ** 15)
        if amp_level == "O2":
            model, optimizer = paddle.amp.decorate(models=model, optimizers=optimizer, level="O2")
    raw_model = model
    if args.to_static == "True":  # the same layers, run as a static program (raw_model keeps the parameters)
        model = paddle.jit.to_static(model, full_graph=True)
        log("to_static: training through paddle.jit.to_static")
    if world_size > 1:
        model = paddle.DataParallel(model)

    pad_id = tokenizer.pad_token_id
    rng = np.random.RandomState(args.seed)  # same order on every rank
    global_step = 0
    t_train = time.time()
    model.train()
    done = False
    for epoch in range(1, args.epochs + 1):
        order = common.length_grouped_order(lengths, args.batch_size * world_size, rng)
        sampler = batch_sampler_cls(order, args.batch_size, shuffle=False)
        win_reader = win_batch = 0.0
        win_samples = win_steps = 0
        win_loss = []
        t_prev = time.time()
        for positions in sampler:
            ids = [order[p] for p in positions]
            input_ids = paddle.to_tensor(common.pad_batch([encoded[i] for i in ids], pad_id))
            token_type_ids = paddle.zeros_like(input_ids)
            y = paddle.to_tensor(label_arr[ids])
            t_read = time.time()
            if scaler is not None:
                with paddle.amp.auto_cast(level=amp_level):
                    logits = model(input_ids, token_type_ids=token_type_ids)
                    loss = F.cross_entropy(logits, y)
                scaled = scaler.scale(loss)
                scaled.backward()
                scaler.minimize(optimizer, scaled)
            else:
                logits = model(input_ids, token_type_ids=token_type_ids)
                loss = F.cross_entropy(logits, y)
                loss.backward()
                optimizer.step()
            optimizer.clear_grad()
            step_lr = scheduler.get_lr()
            scheduler.step()
            global_step += 1
            win_loss.append(loss.detach())
            t_now = time.time()
            win_reader += t_read - t_prev
            win_batch += t_now - t_prev
            win_samples += len(ids)
            win_steps += 1
            t_prev = t_now
            last = global_step == total_steps
            if global_step % args.log_interval == 0 or last or win_steps == steps_per_epoch:
                loss_val = float(paddle.stack(win_loss).astype("float32").mean())
                ips = win_samples / max(win_batch, 1e-9)  # this process's samples/s; benchmark_train reads `ips:`
                if not np.isfinite(loss_val):
                    log("epoch: %d, global_step: %d, loss is %s: stopping" % (epoch, global_step, loss_val))
                    return 1
                log("epoch: %d, global_step: %d, loss: %.5f, avg_reader_cost: %.5f sec, avg_batch_cost: %.5f sec, "
                    "avg_samples: %.1f, avg_ips: %.1f sequences/sec, ips: %.1f sequences/sec, learning_rate: %.6f"
                    % (epoch, global_step, loss_val, win_reader / win_steps, win_batch / win_steps,
                       win_samples / win_steps, ips, ips, step_lr))
                win_reader = win_batch = 0.0
                win_samples = win_steps = 0
                win_loss = []
                t_prev = time.time()
            if last:
                done = True
                break
        if done:
            break
    train_seconds = time.time() - t_train

    if rank == 0:
        ckpt = os.path.join(args.output_dir, "checkpoint")
        os.makedirs(ckpt, exist_ok=True)
        state = raw_model.state_dict()
        if amp_level == "O2":
            state = {k: v.astype("float32") if v.dtype != paddle.float32 and "float" in str(v.dtype) else v
                     for k, v in state.items()}
        paddle.save(state, os.path.join(ckpt, common.PARAMS_FILE))
        common.save_config(config, os.path.join(ckpt, common.CONFIG_FILE))
        if os.path.abspath(vocab_file) != os.path.abspath(os.path.join(ckpt, common.VOCAB_FILE)):
            shutil.copyfile(vocab_file, os.path.join(ckpt, common.VOCAB_FILE))
        common.write_json(os.path.join(ckpt, common.META_FILE), {
            "model_name": common.MODEL_NAME,
            "max_seq_length": args.max_seq_length,
            "labels": common.LABELS,
            "do_lower_case": True,
            "epochs": args.epochs,
            "global_step": global_step,
            "batch_size": args.batch_size,
            "world_size": world_size,
            "learning_rate": args.learning_rate,
            "seed": args.seed,
            "device": args.device,
            "auto_cast": args.auto_cast,
            "precision": "amp_" + amp_level if amp_level else "fp32",
            "data_file": args.data_file,
            "train_rows": len(sentences),
            "init_from_ckpt": ckpt_in,
            "train_seconds": round(train_seconds, 2),
        })
        log("saved checkpoint to %s" % ckpt)
    if args.device == "gpu":  # benchmark_train's peak memory on a GPU
        log("max_mem_reserved: %.1f MB" % (paddle.device.cuda.max_memory_reserved() / 2**20))
    log("total wall time: %.2f s (imports %.2f s)" % (time.time() - t_start, t_import))
    log("train done: steps=%d, seconds=%.2f" % (global_step, train_seconds))
    return 0


if __name__ == "__main__":
    common.run_main(main)
