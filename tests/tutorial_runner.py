"""A model of the runner of the 32-line tutorial template, for tests.

The runner is `tutorials/mobilenetv3_prod/Step6/test_tipc/test_train_inference_python.sh` and its
`common_func.sh` in PaddlePaddle/models (Apache-2.0); SPEC §1.6 lists the lines it reads. Modelled
as written there: it reads the non-blank lines among the first 32 physical lines, takes a value
between the first and second ':', builds every command as one string of `key=value` words
(`func_set_params` drops a `null` key and a null or empty value) and runs it with `eval`. What it
does that a stricter runner would not, this model does too:

* the train device line (idx 4) and the `--data-path` line (idx 10) are read but never passed;
* inference after training gets no data flag (`train_infer_img_dir` is never set);
* the train and export output folder is `./log/<model>/<MODE>/<trainer>_gpus_<gpu>`, and eval and
  export get `<that folder>/<train_model_name>` under the idx-8 and idx-20 keys;
* `status_check` resets `model_name` (its 4th argument is never passed), so every status line
  reads `Run successfully with command -  - <cmd>!` (coloured), and the exit code says nothing.

Only the CPU branches (gpu_list `-1`, inference `False`/`cpu`) are modelled.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from upstream_runner import _key, _value  # both templates split a line the same way

LINES = 32


def _params(line: str, mode: str) -> str:
    for item in _value(line).split("|"):
        if item.split("=")[0] == mode:
            return item.split("=")[1] if "=" in item else ""
    return ""


def _flag(key: str, value: str) -> str:
    if key == "null" or value in ("null", " ", ""):
        return " "
    return f"{key}={value}"


def run_tutorial(repo: Path, config: str, mode: str, env: dict | None = None) -> list[str]:
    """Run the chain the template's way from `repo`; returns the lines of its results_python.log."""
    physical = (repo / config).read_text().split("\n")[:LINES]
    lines = [line for line in physical if line]
    python = _value(lines[2])
    log_path = f"./log/{_value(lines[1])}/{mode}"
    (repo / log_path).mkdir(parents=True, exist_ok=True)
    status_log = repo / log_path / "results_python.log"
    full_env = dict(os.environ, **(env or {}))

    def run(cmd: str) -> int:
        return subprocess.run(["bash", "-c", cmd], cwd=repo, env=full_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

    def check(rc: int, cmd: str) -> None:
        word = "Run successfully" if rc == 0 else "Run failed"
        with status_log.open("a") as f:
            f.write(f"\033[33m {word} with command -  - {cmd}!  \033[0m\n")

    def inference(model_dir: str, img_dir: str, train_type: str) -> None:
        for use_gpu in _value(lines[27]).split("|"):
            assert use_gpu in ("False", "cpu"), "this model covers the CPU branch only"
            for batch_size in _value(lines[28]).split("|"):
                log = f"{log_path}/{train_type}_python_infer_cpu_batchsize_{batch_size}.log"
                cmd = (f"{python} {_value(lines[26])} {_key(lines[27])}={use_gpu} {_flag(_key(lines[29]), model_dir)} "
                       f"{_flag(_key(lines[28]), batch_size)} {_flag(_key(lines[30]), img_dir)} "
                       f"{_flag(_key(lines[31]), _value(lines[31]))} > {log} 2>&1 ")
                check(run(cmd), cmd)

    if mode == "whole_infer":
        save_infer_dir = _value(lines[19])
        if _value(lines[24]) != "null":
            cmd = (f"{python} {_value(lines[24])} {_flag(_key(lines[20]), _value(lines[23]))} "
                   f"{_flag(_key(lines[19]), save_infer_dir)}")
            check(run(cmd), cmd)
        inference(save_infer_dir, _value(lines[30]), "norm_train")
    else:
        for gpu in _value(lines[3]).split("|"):
            assert gpu == "-1", "this model covers the CPU branch only"
            for trainer in _value(lines[12]).split("|"):
                if _value(lines[13]) == "null":
                    continue
                save_log = f"{log_path}/{trainer}_gpus_{gpu}"
                cmd = (f"{python} {_value(lines[13])} {_flag(_key(lines[6]), save_log)} "
                       f"{_flag(_key(lines[5]), _params(lines[5], mode))} {_flag(_key(lines[8]), _value(lines[8]))} "
                       f"{_flag(_key(lines[7]), _params(lines[7], mode))}")
                check(run(cmd), cmd)
                checkpoint = f"{save_log}/{_value(lines[9])}"
                if _value(lines[16]) != "null":
                    cmd = f"{python} {_value(lines[16])} {_flag(_key(lines[8]), checkpoint)}"
                    check(run(cmd), cmd)
                if _value(lines[21]) != "null":
                    cmd = (f"{python} {_value(lines[21])} {_flag(_key(lines[20]), checkpoint)} "
                           f"{_flag(_key(lines[19]), save_log)}")
                    check(run(cmd), cmd)
                    inference(save_log, "", trainer)
    return status_log.read_text().splitlines() if status_log.exists() else []


if __name__ == "__main__":  # bash test_tipc/test_train_inference_python.sh CONFIG MODE, as the template is called
    for line in run_tutorial(Path.cwd(), sys.argv[1], sys.argv[2]):
        print(line)
