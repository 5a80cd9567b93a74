"""Paddle Inference (or onnxruntime) prediction for an exported question-matching model.

    python sample_models/question-matching/infer.py --model_dir=./output/qm \
        --data_file=./train_data/question_matching/infer.tsv --enable_mkldnn=False --cpu_threads=2 \
        --batch_size=1 --precision=fp32 --benchmark=True

The model dir holds what export_model.py writes: inference.json (inference.pdmodel for old
models) + inference.pdiparams, vocab.txt and infer_cfg.json. Tokenizes with tokenizer.py
(pure Python character tokenizer, the same as training); does not import paddlenlp.

Output: one line per example, ``qm_<n>\\t{"label": <0|1>, "logits": [<a>, <b>]}`` (n = 0-based
row number in the data file, header excluded), then ``accuracy: ...`` when the data has labels,
then (--benchmark True) an AutoLog-style block. Exit 0 only when all of it worked.
"""

import os

os.environ.setdefault("GLOG_minloglevel", "2")

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import UserError  # noqa: E402
from tokenizer import CharTokenizer  # noqa: E402

INFER_PREFIX = "inference"
INFER_CFG = "infer_cfg.json"
ONNX_FILE = "model.onnx"
WARMUP = 2  # benchmark: untimed runs of the first batch


def parse_args(argv=None):
    p = common.make_parser("Paddle Inference for the question-matching sample model.")
    b = common.str2bool
    p.add_argument("--model_dir", required=True, help="dir with inference.json + inference.pdiparams, vocab.txt, infer_cfg.json")
    p.add_argument("--data_file", default="./train_data/question_matching/infer.tsv", help="text_a<TAB>text_b[<TAB>label] TSV (labels optional)")
    p.add_argument("--use_gpu", type=b, default=None, help="default False")
    p.add_argument("--device", choices=["cpu", "gpu"], default=None, help="alias of --use_gpu (gpu = True)")
    p.add_argument("--enable_mkldnn", type=b, default=False, help="oneDNN on CPU (False calls disable_mkldnn())")
    p.add_argument("--cpu_threads", type=common.positive_int, default=os.cpu_count() or 1)
    p.add_argument("--batch_size", type=common.positive_int, default=1)
    p.add_argument("--use_tensorrt", type=b, default=False, help="GPU only")
    p.add_argument("--precision", choices=["fp32", "fp16", "int8"], default="fp32",
                   help="fp16/int8 need a GPU (int8: with TensorRT); on CPU inference runs in fp32")
    p.add_argument("--benchmark", type=b, default=False, help="print an AutoLog-style benchmark block")
    p.add_argument("--max_seq_length", type=common.seq_length, default=None, help="default: infer_cfg.json's (48)")
    p.add_argument("--save_log_path", type=common.optional_path, default=None,
                   help="also write the output to this file (a directory: <dir>/infer_question_matching.log)")
    p.add_argument("--output_file", type=common.optional_path, default=None, help="save all logits [N, 2] as .npy")
    p.add_argument("--use_onnx", type=b, default=False, help="run <model_dir>/model.onnx with onnxruntime")
    args = p.parse_args(argv)
    if args.device is not None:
        if args.use_gpu is not None and args.use_gpu != (args.device == "gpu"):
            p.error("--device %s contradicts --use_gpu %s" % (args.device, args.use_gpu))
        args.use_gpu = args.device == "gpu"
    args.use_gpu = bool(args.use_gpu)
    return args


class Out(object):
    """stdout, and the --save_log_path file when given."""

    def __init__(self, path):
        self.lines = []
        self.path = path

    def __call__(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def save(self):
        if not self.path:
            return
        path = self.path
        if os.path.isdir(path) or path.endswith(os.sep):
            path = os.path.join(path, "infer_question_matching.log")
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(self.lines) + "\n")


def find_model(model_dir, use_onnx):
    if not os.path.isdir(model_dir):
        raise UserError("--model_dir: directory not found: %s" % model_dir)
    vocab = os.path.join(model_dir, common.VOCAB_FILE)
    if not os.path.isfile(vocab):
        raise UserError("--model_dir: no %s in %s (export_model.py copies it next to the model)" % (common.VOCAB_FILE, model_dir))
    if use_onnx:
        onnx_path = os.path.join(model_dir, ONNX_FILE)
        if not os.path.isfile(onnx_path):
            raise UserError("--use_onnx True: no %s in %s (convert inference.json with paddle2onnx first)" % (ONNX_FILE, model_dir))
        return onnx_path, None, vocab
    params = os.path.join(model_dir, INFER_PREFIX + ".pdiparams")
    for ext in (".json", ".pdmodel"):
        program = os.path.join(model_dir, INFER_PREFIX + ext)
        if os.path.isfile(program):
            break
    else:
        raise UserError("--model_dir: no %s.json or %s.pdmodel in %s (run export_model.py)" % (INFER_PREFIX, INFER_PREFIX, model_dir))
    if not os.path.isfile(params):
        raise UserError("--model_dir: no %s.pdiparams in %s" % (INFER_PREFIX, model_dir))
    return program, params, vocab


class PaddleEngine(object):
    name = "paddle_inference"

    def __init__(self, args, program, params, precision, max_len, say):
        import warnings

        with warnings.catch_warnings():  # import-time noise (ccache)
            warnings.simplefilter("ignore")
            import paddle
            from paddle import inference as paddle_infer

        self.paddle = paddle
        self.pi = paddle_infer
        if args.use_gpu and (not paddle.is_compiled_with_cuda() or paddle.device.cuda.device_count() < 1):
            raise UserError("--use_gpu True: this paddle build has no CUDA support or no GPU is visible "
                            "(paddle %s, compiled with CUDA: %s); use --use_gpu False"
                            % (paddle.__version__, paddle.is_compiled_with_cuda()))
        config = paddle_infer.Config(program, params)
        self.memory_optim = False
        if args.use_gpu:
            prec_map = {"fp32": paddle_infer.PrecisionType.Float32, "fp16": paddle_infer.PrecisionType.Half,
                        "int8": paddle_infer.PrecisionType.Int8}
            if args.use_tensorrt:
                config.enable_use_gpu(500, 0)
                config.enable_tensorrt_engine(workspace_size=1 << 30, max_batch_size=args.batch_size,
                                              min_subgraph_size=5, precision_mode=prec_map[precision],
                                              use_static=False, use_calib_mode=precision == "int8")
                shapes_min = {"input_ids": [1, 1], "token_type_ids": [1, 1]}
                shapes_max = {"input_ids": [args.batch_size, max_len], "token_type_ids": [args.batch_size, max_len]}
                shapes_opt = {"input_ids": [args.batch_size, max(1, max_len // 2)],
                              "token_type_ids": [args.batch_size, max(1, max_len // 2)]}
                config.set_trt_dynamic_shape_info(shapes_min, shapes_max, shapes_opt)
            elif precision == "fp16":
                config.enable_use_gpu(500, 0, paddle_infer.PrecisionType.Half)
            else:
                config.enable_use_gpu(500, 0)
        else:
            config.disable_gpu()
            config.set_cpu_math_library_num_threads(args.cpu_threads)
            if args.enable_mkldnn:
                config.enable_mkldnn()
                config.set_mkldnn_cache_capacity(10)  # dynamic shapes: bound the oneDNN cache
            else:
                config.disable_mkldnn()  # on by default in 3.x: must be turned off explicitly
        config.switch_ir_optim(True)
        if program.endswith(".pdmodel"):  # memory_optim breaks PIR (.json) models in 3.3.1
            config.enable_memory_optim()
            self.memory_optim = True
        config.disable_glog_info()
        self.config = config
        self.predictor = paddle_infer.create_predictor(config)
        self.input_names = self.predictor.get_input_names()
        missing = {"input_ids", "token_type_ids"} - set(self.input_names)
        if missing:
            raise UserError("--model_dir: model inputs %s lack %s" % (self.input_names, sorted(missing)))
        self.output = self.predictor.get_output_handle(self.predictor.get_output_names()[0])

    def run(self, input_ids, token_type_ids):
        feeds = {"input_ids": input_ids, "token_type_ids": token_type_ids}
        for name in self.input_names:
            self.predictor.get_input_handle(name).copy_from_cpu(feeds[name])
        self.predictor.run()
        return self.output.copy_to_cpu()

    def conf_info(self, args):
        c = self.config
        return [
            ("runtime_device", "gpu" if args.use_gpu else "cpu"),
            ("inference_engine", "paddle_inference %s" % self.paddle.__version__),
            ("ir_optim", c.ir_optim()),
            ("enable_memory_optim", self.memory_optim),
            ("enable_tensorrt", c.tensorrt_engine_enabled()),
            ("enable_mkldnn", c.mkldnn_enabled()),
            ("cpu_math_library_num_threads", c.cpu_math_library_num_threads()),
        ]

    def versions(self):
        v = self.paddle.version
        cuda = v.cuda() if self.paddle.is_compiled_with_cuda() else None
        cudnn = v.cudnn() if self.paddle.is_compiled_with_cuda() else None
        return self.paddle.__version__, v.commit, cuda, cudnn


class OnnxEngine(object):
    name = "onnxruntime"

    def __init__(self, args, onnx_path, say):
        import onnxruntime as ort

        self.ort = ort
        providers = ["CPUExecutionProvider"]
        if args.use_gpu:
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise UserError("--use_gpu True --use_onnx True: onnxruntime %s has no CUDAExecutionProvider "
                                "(providers: %s)" % (ort.__version__, ort.get_available_providers()))
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.intra_op_num_threads = args.cpu_threads
        self.sess = ort.InferenceSession(onnx_path, sess_options=so, providers=providers)
        self.input_names = [i.name for i in self.sess.get_inputs()]
        missing = set(self.input_names) - {"input_ids", "token_type_ids"}
        if missing:
            raise UserError("--model_dir: %s has unexpected inputs %s" % (onnx_path, sorted(missing)))

    def run(self, input_ids, token_type_ids):
        feeds = {"input_ids": input_ids, "token_type_ids": token_type_ids}
        return self.sess.run(None, {n: feeds[n] for n in self.input_names})[0]

    def conf_info(self, args):
        return [
            ("runtime_device", "gpu" if args.use_gpu else "cpu"),
            ("inference_engine", "onnxruntime %s" % self.ort.__version__),
            ("ir_optim", True),
            ("enable_memory_optim", False),
            ("enable_tensorrt", False),
            ("enable_mkldnn", False),
            ("cpu_math_library_num_threads", args.cpu_threads),
        ]

    def versions(self):
        try:
            from importlib.metadata import version

            pv = version("paddlepaddle")
        except Exception:
            pv = None
        return pv, None, None, None


def os_version():
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    import platform

    return platform.platform()


def peak_rss_mb():
    try:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        return kb / 1024.0 if sys.platform != "darwin" else kb / (1024.0 * 1024.0)
    except Exception:
        return None


def benchmark_block(engine, args, precision, n_examples, times, total_s):
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    pv, commit, cuda, cudnn = engine.versions()
    lines = ["---------------------- Env info ----------------------",
             " OS_version: %s" % os_version(),
             " CUDA_version: %s" % cuda,
             " CUDNN_version: %s" % cudnn,
             " drivier_version: %s" % None,
             "---------------------- Paddle info ----------------------",
             " paddle_version: %s" % pv,
             " paddle_commit: %s" % commit,
             " log_api_version: 1.0",
             "----------------------- Conf info -----------------------"]
    lines += [" %s: %s" % kv for kv in engine.conf_info(args)]
    mean = lambda xs: round(1000.0 * sum(xs) / len(xs), 4) if xs else 0.0  # noqa: E731
    rss = peak_rss_mb()
    lines += ["----------------------- Model info ----------------------",
              " model_name: %s" % common.MODEL_NAME,
              " precision: %s" % precision,
              "----------------------- Data info -----------------------",
              " batch_size: %d" % args.batch_size,
              " input_shape: dynamic",
              " data_num: %d" % n_examples,
              "----------------------- Perf info -----------------------",
              " cpu_rss(MB): %s, gpu_rss(MB): None, gpu_util: None%%" % (round(rss, 4) if rss is not None else None),
              " total time spent(s): %.4f" % total_s,
              " preprocess_time(ms): %s, inference_time(ms): %s, postprocess_time(ms): %s"
              % (mean(times[0]), mean(times[1]), mean(times[2]))]
    return ["[%s] %s INFO: %s" % (stamp, common.MODEL_NAME, line) for line in lines]


def fmt(v):
    return float("%.8g" % float(v))


def main(argv=None):
    args = parse_args(argv)
    out = Out(args.save_log_path)
    program, params, vocab = find_model(args.model_dir, args.use_onnx)
    sentences, labels = common.load_pairs(args.data_file, "--data_file")
    cfg_path = os.path.join(args.model_dir, INFER_CFG)
    cfg = common.read_json(cfg_path, "inference config") if os.path.isfile(cfg_path) else {}
    max_len = args.max_seq_length or int(cfg.get("max_seq_length", 48))
    try:
        tok = CharTokenizer(vocab)
    except ValueError as e:
        raise UserError("--model_dir: %s" % e)

    precision = args.precision
    if not args.use_gpu:
        if args.use_tensorrt:
            out("note: --use_tensorrt True ignored: TensorRT needs a GPU")
        if precision != "fp32":
            out("note: --precision %s requested; CPU inference runs in fp32" % precision)
            precision = "fp32"
    elif precision == "int8" and not args.use_tensorrt:
        out("note: --precision int8 needs --use_tensorrt True on GPU; running fp32")
        precision = "fp32"
    if args.use_onnx and precision != "fp32":
        out("note: --precision %s ignored with --use_onnx; running fp32" % precision)
        precision = "fp32"

    import numpy as np

    if args.use_onnx:
        engine = OnnxEngine(args, program, out)
    else:
        engine = PaddleEngine(args, program, params, precision, max_len, out)
    conf = dict(engine.conf_info(args))
    out("infer config: engine=%s, model=%s, device=%s, enable_mkldnn=%s, cpu_threads=%s, precision=%s, "
        "batch_size=%d, max_seq_length=%d, data_file=%s (%d rows)"
        % (engine.name, program, conf["runtime_device"], conf["enable_mkldnn"], conf["cpu_math_library_num_threads"],
           precision, args.batch_size, max_len, args.data_file, len(sentences)))

    def preprocess(batch):
        encoded = [tok.encode_pair(a, b, max_len) for a, b in batch]
        return common.pad_batch([e[0] for e in encoded], tok.pad_token_id), common.pad_batch([e[1] for e in encoded], 0)

    if args.benchmark:
        first = preprocess(sentences[: args.batch_size])
        for _ in range(WARMUP):
            engine.run(*first)

    all_logits = []
    times = ([], [], [])
    t_total = time.time()
    for s in range(0, len(sentences), args.batch_size):
        t0 = time.time()
        input_ids, token_type_ids = preprocess(sentences[s : s + args.batch_size])
        t1 = time.time()
        logits = np.asarray(engine.run(input_ids, token_type_ids), dtype="float32")
        t2 = time.time()
        if logits.shape != (input_ids.shape[0], len(common.LABELS)):
            raise RuntimeError("unexpected output shape %s for batch %s" % (logits.shape, input_ids.shape))
        preds = logits.argmax(axis=1)
        for j in range(logits.shape[0]):
            out("qm_%d\t%s" % (s + j, json.dumps({"label": int(preds[j]), "logits": [fmt(v) for v in logits[j]]})))
        all_logits.append(logits)
        t3 = time.time()
        times[0].append(t1 - t0)
        times[1].append(t2 - t1)
        times[2].append(t3 - t2)
    total_s = time.time() - t_total
    logits = np.concatenate(all_logits, axis=0)
    if labels is not None:
        correct = int((logits.argmax(axis=1) == np.asarray(labels)).sum())
        out(common.accuracy_line(correct, len(labels)))
    if args.output_file:
        d = os.path.dirname(os.path.abspath(args.output_file))
        os.makedirs(d, exist_ok=True)
        with open(args.output_file, "wb") as f:
            np.save(f, logits)
    if args.benchmark:
        for line in benchmark_block(engine, args, precision, len(sentences), times, total_s):
            out(line)
    out.save()
    return 0


if __name__ == "__main__":
    common.run_main(main)
