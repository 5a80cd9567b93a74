"""A model of the upstream PaddleOCR runner's semantics (SPEC §1.1, §2.3-§2.5, §10), for tests.

It reads the config by fixed line index, takes values between the first and second ':', builds
each command as one string of `key=value` words, runs it through bash word splitting as `eval`
does, and takes the train status from `cat <save_dir>/train.log` (upstream's bug, kept on purpose).
Only the CPU branches used by a `--devices cpu` config are modelled.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path


def _key(line: str) -> str:
    return line.split(":")[0]


def _value(line: str) -> str:
    parts = line.split(":")
    return parts[1] if len(parts) > 1 else ""


def _params(line: str, mode: str) -> str:
    for item in _value(line).split("|"):
        if item.split("=")[0] == mode:
            return item.split("=", 1)[1]
    return ""


def _flag(key: str, value: str) -> str:
    if key == "null" or value in ("null", "", " "):
        return " "
    return f"{key}={value}"


def run_upstream(repo: Path, config: str, mode: str, env: dict | None = None) -> list[str]:
    """Run the chain the upstream way; returns the lines of results_python.log."""
    lines = [line for line in (repo / config).read_text().split("\n") if line]
    python = _value(lines[2])
    log_path = f"./test_tipc/output/{_value(lines[1])}/{mode}"
    os.makedirs(repo / log_path, exist_ok=True)
    status: list[str] = []
    full_env = dict(os.environ, **(env or {}))

    def run(cmd: str, cwd_log: str | None = None) -> int:
        return subprocess.run(["bash", "-c", cmd], cwd=repo, env=full_env).returncode

    def check(rc: int, cmd: str, log: str) -> None:
        word = "Run successfully" if rc == 0 else "Run failed"
        status.append(f"{word} with command - {_value(lines[1])} - {cmd} - {log}")

    for gpu in _value(lines[3]).split("|"):
        assert gpu == "-1", "this model covers the CPU branch only"
        for autocast in _value(lines[5]).split("|"):
            save_log = f"{log_path}/{_value(lines[14]).split('|')[0]}_gpus_{gpu}_autocast_{autocast}"
            cmd = " ".join([python, _value(lines[15]), _flag(_key(lines[4]), _value(lines[4])), _flag(_key(lines[7]), save_log),
                            _flag(_key(lines[6]), _params(lines[6], mode)), _flag(_key(lines[9]), _value(lines[9])),
                            _flag(_key(lines[5]), autocast), _flag(_key(lines[8]), _params(lines[8], mode)),
                            _flag(_key(lines[12]), _value(lines[12]))])
            run(cmd)
            check(run(f"cat {save_log}/train.log >> {save_log}.log"), cmd, f"{save_log}.log")
            checkpoint = f"{save_log}/{_value(lines[10])}"
            eval_log = f"{save_log}_nodes_1_eval.log"
            cmd = " ".join([python, _value(lines[23]), _flag(_key(lines[9]), checkpoint),
                            _flag(_key(lines[4]), _value(lines[4])), _flag(_key(lines[24]), _value(lines[24])),
                            f"> {eval_log} 2>&1"])
            check(run(cmd), cmd, eval_log)
            export_log = f"{save_log}_nodes_1_export.log"
            cmd = " ".join([python, _value(lines[29]), _flag(_key(lines[28]), checkpoint), _flag(_key(lines[27]), save_log),
                            f"> {export_log} 2>&1"])
            check(run(cmd), cmd, export_log)
            for use_gpu in _value(lines[40]).split("|"):
                assert use_gpu in ("False", "cpu")
                for mkldnn in _value(lines[41]).split("|"):
                    for threads in _value(lines[42]).split("|"):
                        for bs in _value(lines[43]).split("|"):
                            for precision in _value(lines[45]).split("|"):
                                if mkldnn == "False" and precision == "fp16":
                                    continue
                                log = (f"{log_path}/python_infer_cpu_gpus_{gpu}_usemkldnn_{mkldnn}_threads_{threads}"
                                       f"_precision_{precision}_batchsize_{bs}.log")
                                cmd = " ".join([python, _value(lines[39]), f"{_key(lines[40])}={use_gpu}",
                                                _flag(_key(lines[41]), mkldnn), _flag(_key(lines[42]), threads),
                                                _flag(_key(lines[46]), save_log), _flag(_key(lines[43]), bs), " ",
                                                _flag(_key(lines[47]), _value(lines[11])),
                                                _flag(_key(lines[49]), _value(lines[49])), _flag(_key(lines[45]), precision),
                                                _flag(_key(lines[50]), _value(lines[50])), f"> {log} 2>&1"])
                                check(run(cmd), cmd, log)
    (repo / log_path / "results_python.log").write_text("\n".join(status) + "\n")
    return status
