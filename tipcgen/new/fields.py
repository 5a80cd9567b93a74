"""``tipcgen new``'s mapping table: which script flag names fill which descriptor field, and the
fields the user may set with ``--flag``/``--value``."""
from __future__ import annotations

import re

from tipcgen.core.errors import TipcgenError
from tipcgen.format import chain

# Descriptor field → the flag names that fill it, best first (compared as script_help.loose does: without
# dashes and underscores, in lower case, so --batch-size, --batchSize and --batchsize are batch_size).
_FLAG_NAMES: dict[str, tuple[str, ...]] = {
    "train.device": ("device", "use_gpu", "place", "use_cuda", "cuda"),
    "train.autocast": ("auto_cast", "autocast", "amp_level", "use_amp", "amp", "precision"),
    "train.epochs": ("epochs", "epoch_num", "num_epochs", "epoch", "max_epochs", "num_train_epochs", "n_epochs",
                     "num_epoch", "max_epoch", "max_steps", "max_iters", "total_iters", "iters", "iter", "max_iter",
                     "num_iters", "num_iter", "n_iters", "niter", "total_steps", "num_steps", "train_steps",
                     "num_train_steps", "train_iters", "max_iteration", "iterations", "total_iter"),
    "train.output_dir": ("output_dir", "save_dir", "output", "save_path", "checkpoint_dir", "output_path",
                         "save_model_dir", "model_save_dir", "out_dir", "log_dir", "save_folder", "ckpt_dir",
                         "checkpoints_dir", "save_model_path", "work_dir", "exp_dir"),
    "train.batch_size": ("batch_size", "train_batch_size", "per_device_train_batch_size", "bs"),
    "train.pretrained": ("init_from_ckpt", "pretrained", "pretrained_model", "pretrained_model_path",
                         "init_checkpoint", "params_path", "checkpoint", "resume", "weights", "model_path", "load"),
    # model_path: PaddleSeg's val.py; load: PaddleGAN's tools/main.py --load and export_model.py --load
    "train.extra": ("data_file", "data", "data_dir", "data_path", "train_data", "train_file",
                    "train_set", "image_dir", "dataset_dir", "input_file", "data_root", "dataset_root",
                    "dataset_path", "train_dir", "img_dir", "img_path", "image_path", "images_dir"),
    "eval.extra": ("data_file", "data", "data_dir", "data_path", "eval_data", "dev_file", "eval_file",
                   "dev_set", "image_dir", "dataset_dir", "input_file", "data_root", "dataset_root",
                   "dataset_path", "val_dir", "eval_dir", "img_dir", "img_path", "image_path"),
    "export.output_dir": ("output_path", "save_inference_dir", "save_dir", "output_dir", "export_dir",
                          "output", "inference_dir", "save_path"),
    "export.weights": ("params_path", "init_from_ckpt", "pretrained", "pretrained_model", "model_path",
                       "checkpoint", "weights", "ckpt", "resume", "load"),
    "inference.use_gpu": ("use_gpu", "device"),
    "inference.enable_mkldnn": ("enable_mkldnn", "use_mkldnn", "enable_onednn", "use_onednn"),
    "inference.cpu_threads": ("cpu_threads", "cpu_num_threads", "num_threads", "threads",
                              "cpu_math_library_num_threads"),
    "inference.batch_size": ("batch_size", "infer_batch_size"),
    "inference.use_tensorrt": ("use_tensorrt", "use_trt", "enable_tensorrt"),
    "inference.precision": ("precision", "run_mode", "infer_precision"),
    "inference.model_dir": ("model_dir", "inference_model_dir", "model_path", "infer_model_dir",
                            "model", "det_model_dir", "rec_model_dir", "cls_model_dir", "seg_model_dir"),  # never --model_file: a file (inference.pdmodel), the runner passes a folder
    "inference.data": ("data_file", "data", "image_dir", "input_file", "infer_data", "infer_file",
                       "data_dir", "input", "text_file", "data_path", "img_path", "image_path", "img_dir",
                       "images_dir", "image_file", "img_file", "infer_dir", "test_dir", "input_dir"),
    "inference.benchmark": ("benchmark",),
}
# a switch that runs another mode instead of training (--evaluate-only, --test_only, --eval-only): a gate of it is
# never opened for the lite training (it would test and return, never train)
MODE_SWITCH = re.compile(r"(^|_)only($|_)", re.IGNORECASE)
_ROLE_OF_STEP = {"train": "train", "eval": "eval", "export": "export", "infer": "infer", "whole_infer": "infer"}
# Descriptor field → (the step whose script takes the flag, per the description; its flag names).
CANDIDATES: dict[str, tuple[str, tuple[str, ...]]] = {
    fld: (_ROLE_OF_STEP[chain.step_of_field(fld)], names) for fld, names in _FLAG_NAMES.items()}
VALUE_FIELDS = (*CANDIDATES, "train.infer_data")
STEP_COUNTERS = ("max_steps", "max_iters", "total_iters", "iters", "num_steps", "num_iters", "iter", "max_iter",
                 "num_iter", "n_iters", "niter", "total_steps", "train_steps", "num_train_steps", "train_iters",
                 "max_iteration", "iterations", "total_iter")


def check_fields(pairs: dict[str, str], option: str) -> dict[str, str]:
    """--flag / --value FIELD=...: every FIELD must be one that tipcgen new fills."""
    import difflib

    allowed = tuple(CANDIDATES) if option == "--flag" else VALUE_FIELDS
    for name in pairs:
        if name not in allowed:
            close = difflib.get_close_matches(name, allowed, n=1)
            raise TipcgenError(f"{option} {name}=...: {name} is not a field tipcgen new fills",
                               (f"did you mean {close[0]}? " if close else "") + "fields: " + ", ".join(allowed))
    return pairs
