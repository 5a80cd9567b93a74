"""The validator's checks of the descriptor's groups: env, sections, data, checks, paddle2onnx, align, run, text
(`Groups`, which checks single values through a `validate_values.Checks` it is given)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tipcgen.core import inputs
from tipcgen.core.errors import DescriptorError
from tipcgen.core.text import quoted, terminal
from tipcgen.descriptor.fields import (
    ALIGN_CHECKPOINTS,
    CHECK_FIELDS,
    DATA_FIELDS,
    DATA_FILE_FIELDS,
    PADDLE2ONNX_FIELDS,
    ROLES,
    RUN_FIELDS,
    TEXT_FIELDS,
    default,
)
from tipcgen.descriptor.schema import (
    DATA_NAME_RE,
    ENV_NAME_RE,
    INPUTS_PATH_RE,
    KEY_RE,
    MAX_STEP_TIMEOUT,
    MD5_RE,
    WHOLE_ENV_RE,
    env_refusal,
)
from tipcgen.descriptor.spec import ChecksSpec, DataFile, DataSpec, Paddle2OnnxSpec, Tolerance
from tipcgen.descriptor.validate_values import Checks
from tipcgen.format import layout, text_style, words
from tipcgen.format.chains import PADDLE2ONNX
from tipcgen.format.config import Line as _ConfigLine

MAX_TEXT_LINE = 100_000  # text.lines: an index past any config (a 5,000-digit one is refused, not parsed)


class Groups:
    """The checks of the descriptor's groups (env, sections, data, checks, ...), each through `values`."""

    def __init__(self, values: Checks) -> None:
        self.values = values

    def layout(self, value: Any) -> str:
        if not isinstance(value, str) or value not in layout.LAYOUTS:
            raise self.values.err("layout", value, " or ".join(layout.LAYOUTS))
        return value


    def env(self, value: Any) -> tuple[tuple[str, str], ...]:
        """env: {NAME: value}: variables the export and inference steps run with (e.g. FLAGS_enable_pir_api: "0")."""
        if value is None:
            return ()
        if not isinstance(value, dict):
            raise self.values.err("env", value, "a mapping of variable name to value, such as {FLAGS_enable_pir_api: \"0\"}")
        out = []
        for name, raw in value.items():
            path = f"env.{name}"
            if not isinstance(name, str) or not ENV_NAME_RE.match(name):
                raise self.values.fail(f"env.{terminal(name)}", f"{quoted(terminal(name))} is not a variable name",
                                "use a name of letters, digits and _, such as FLAGS_enable_pir_api")
            refusal = env_refusal(name)
            if refusal is not None:
                raise self.values.fail(path, f"{name} may not be set here: {refusal}",
                                "remove it from env: (it would let a descriptor run code in every step); "
                                "FLAGS_*, OMP_*, CUDA_* and the like are fine")
            if isinstance(raw, bool):
                raw = "1" if raw else "0"
            if isinstance(raw, (int, float)):
                raw = str(raw)
            out.append((name, self.values.text(raw, path, what="value")))
        return tuple(out)


    def sections(self, value: Any) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.values.err("sections", value, "a list of {name: SECTION, lines: [...]}")
        out = []
        for i, item in enumerate(value):
            path = f"sections[{i}]"
            item = self.values.mapping(item, path, {"name", "lines", "header"})
            # name null: lines after idx 50 that stand before any header (upstream fillers)
            name = None if item.get("name") is None else self.values.text(item["name"], f"{path}.name", what="section name")
            self._section_header(item.get("header"), name, path)
            lines = item.get("lines") or []
            if not isinstance(lines, list):
                raise self.values.err(f"{path}.lines", lines, "a list of config lines")
            out.append((name, tuple(self.values.text(line, f"{path}.lines[{j}]", what="config line") for j, line in enumerate(lines))))
        return tuple(out)

    def _section_header(self, value: Any, name: str | None, path: str) -> None:
        """``header:`` keeps a section's header line as written (``====name===`` with its own padding)."""
        if value is None:
            return
        text = self.values.text(value, f"{path}.header", what="header line")
        if name is None or _ConfigLine(text).header_name != name:
            raise self.values.fail(f"{path}.header", f"{quoted(text)} is not a header line of section {quoted(name)}",
                            f"write it as ==={name}=== with any number of '=' on each side, or leave it out")

    def section_headers(self, value: Any) -> tuple[str | None, ...]:
        """The ``header:`` of every section (``None``: the canonical 27/27 padding)."""
        if not isinstance(value, list):
            return ()
        return tuple(item.get("header") if isinstance(item, dict) else None for item in value)

    def data(self, value: Any) -> DataSpec | None:
        if value is None:
            return None
        value = self.values.mapping(value, "data", DATA_FIELDS)
        data_dir = self.values.text(value.get("dir", default("data.dir")), "data.dir", what="folder")
        if data_dir.startswith("/") or ".." in Path(data_dir).parts:
            raise self.values.fail("data.dir", f"{quoted(data_dir)} is outside the repository", "use a relative path such as ./train_data/<model>")
        env = self.values.text(value.get("whole_env", default("data.whole_env")), "data.whole_env", what="variable name")
        if not WHOLE_ENV_RE.match(env):
            raise self.values.fail("data.whole_env", f"{quoted(env)} is not an environment variable name", "use upper case, digits and _")
        files_raw = value.get("files") or {}
        files_raw = self.values.mapping(files_raw, "data.files", set(files_raw) if isinstance(files_raw, dict) else set())
        files = []
        for name, spec in files_raw.items():
            path = f"data.files.{name}"
            if not DATA_NAME_RE.match(name):
                raise self.values.fail(path, f"{quoted(name)} is not a plain file name", "no folders, spaces or shell characters")
            spec = self.values.mapping(spec, path, DATA_FILE_FIELDS)
            role = spec.get("role", "train")
            if role not in ROLES:
                raise self.values.err(f"{path}.role", role, "train or infer")
            lite = self.values.rel(spec.get("lite"), f"{path}.lite")
            whole = self.values.rel(spec.get("whole"), f"{path}.whole")
            md5 = spec.get("md5")
            if md5 is not None and not (isinstance(md5, str) and MD5_RE.fullmatch(md5)):
                raise self.values.err(f"{path}.md5", md5, "32 lower-case hex digits")
            rows = spec.get("rows")
            if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
                raise self.values.err(f"{path}.rows", rows, "a row count (whole number ≥ 0)")
            if lite is None and whole is None:
                raise self.values.fail(path, "names neither a lite nor a whole source", "give lite: and/or whole:")
            files.append(DataFile(name, role, lite, whole, md5, rows))
        setup_raw = value.get("setup") or []
        if not isinstance(setup_raw, list):
            raise self.values.err("data.setup", setup_raw, "a list of python script calls, each a list [script.py, args...]")
        setup = []
        for i, call in enumerate(setup_raw):
            if not isinstance(call, list) or not call:
                raise self.values.err(f"data.setup[{i}]", call, "a list [script.py, args...]")
            words = tuple(self.values.text(w, f"data.setup[{i}][{j}]", what="argument") for j, w in enumerate(call))
            if not words[0].endswith(".py"):
                raise self.values.fail(f"data.setup[{i}]", f"{quoted(words[0])} is not a python script", "setup runs python scripts only")
            setup.append(words)
        trained = self.values.rel(value.get("trained_model"), "data.trained_model")
        from_lite = value.get("whole_from_lite", default("data.whole_from_lite"))
        if not isinstance(from_lite, bool):
            raise self.values.err("data.whole_from_lite", from_lite, "true or false")
        return DataSpec(data_dir, env, tuple(files), tuple(setup), trained, from_lite)

    def checks(self, value: Any) -> ChecksSpec | None:
        if value is None:
            return None
        value = self.values.mapping(value, "checks", CHECK_FIELDS)
        reference = value.get("reference")
        if reference is not None:
            reference = self.values.text(reference, "checks.reference", what="file name")
            if not DATA_NAME_RE.match(reference):
                raise self.values.fail("checks.reference", f"{quoted(reference)} is not a plain file name", "the export step writes it into its output folder")
        return ChecksSpec(
            reference=reference,
            reference_tolerance=self.values.tolerance(value.get("reference_tolerance"), "checks.reference_tolerance",
                                                      Tolerance(**default("checks.reference_tolerance"))),
            golden=self.values.rel(value.get("golden"), "checks.golden"),
            golden_tolerance=self.values.tolerance(value.get("golden_tolerance"), "checks.golden_tolerance",
                                                      Tolerance(**default("checks.golden_tolerance"))),
            onnx_tolerance=self.values.tolerance(value.get("onnx_tolerance"), "checks.onnx_tolerance",
                                                      Tolerance(**default("checks.onnx_tolerance"))),
            fixed_inputs=self._fixed_inputs(value),
            outputs=self._output_names(value.get("outputs")),
            own_weights=self._own_weights(value.get("own_weights")),
        )

    def _own_weights(self, value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or any(item not in words.OWN_WEIGHTS_KINDS for item in value):
            raise self.values.err("checks.own_weights", value, "a list of the steps that load their own weights on "
                            f"purpose, from {', '.join(words.OWN_WEIGHTS_KINDS)} (the runner passes them no model of the run)")
        return tuple(value)

    def _output_names(self, value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not value:
            raise self.values.err("checks.outputs", value, "a list of the exported model's output names, by position, "
                            "such as [logits, probs]")
        names = tuple(self.values.text(name, f"checks.outputs[{i}]", what="output name") for i, name in enumerate(value))
        bad = next((n for n in names if not DATA_NAME_RE.match(n)), None)
        if bad is not None or len(set(names)) != len(names):
            raise self.values.fail("checks.outputs", f"{quoted(bad)} is not a usable output name" if bad else "names an output twice",
                            "distinct names of letters, digits, '_', '-' and '.', such as [logits, probs]")
        return names

    def _fixed_inputs(self, value: dict) -> str | None:
        if "fixed_inputs" not in value or value["fixed_inputs"] is None:
            return None
        if value["fixed_inputs"] is False:
            return "null"
        path = self.values.rel(value["fixed_inputs"], "checks.fixed_inputs")
        if not INPUTS_PATH_RE.match(path):
            raise self.values.fail("checks.fixed_inputs", f"{quoted(path)} is not a .npz file path",
                            "name a .npz of input arrays (keys: the model's input names), or false to turn the check off")
        return path

    def paddle2onnx(self, value: Any, data: DataSpec | None) -> Paddle2OnnxSpec | None:
        if value is None:
            return None
        value = self.values.mapping(value, PADDLE2ONNX, PADDLE2ONNX_FIELDS)
        model_dir = self.values.rel(value.get("model_dir"), "paddle2onnx.model_dir") or (data.trained_model if data else None)
        if model_dir is None:
            raise DescriptorError(self.values.source, "paddle2onnx.model_dir", "is missing", self.values.lines.get(PADDLE2ONNX),
                                  hint="name the exported model folder, or set data.trained_model")
        save_file = self.values.rel(value.get("save_file"), "paddle2onnx.save_file")
        if save_file is None or not save_file.endswith(".onnx"):
            raise self.values.err("paddle2onnx.save_file", value.get("save_file"), "a relative path ending in .onnx")
        opset = value.get("opset_version", default("paddle2onnx.opset_version"))
        if isinstance(opset, bool) or not isinstance(opset, int) or not 7 <= opset <= 21:
            raise self.values.err("paddle2onnx.opset_version", opset, "an ONNX opset between 7 and 21")
        if "inference" not in value:
            raise DescriptorError(self.values.source, "paddle2onnx.inference", "is missing", self.values.lines.get(PADDLE2ONNX),
                                  hint="name the script that runs the .onnx model with onnxruntime")
        # onnx_flag: null: the script cannot run an ONNX model; the chain's own check (check_inference.py) does.
        flag = "null" if "onnx_flag" in value and value["onnx_flag"] is None else \
            self.values.text(value.get("onnx_flag", default("paddle2onnx.onnx_flag")), "paddle2onnx.onnx_flag", what="flag name")
        if flag != "null" and not KEY_RE.match(flag):
            raise self.values.fail("paddle2onnx.onnx_flag", f"{quoted(flag)} is not a usable flag name", "such as --use_onnx")
        return Paddle2OnnxSpec(model_dir, save_file, opset, self.values.text(value["inference"], "paddle2onnx.inference", what="command"), flag)

    def align(self, value: Any) -> dict[str, float]:
        if value is None:
            return {}
        value = self.values.mapping(value, "align", {"thresholds"})
        thresholds = self.values.mapping(value.get("thresholds") or {}, "align.thresholds", set(ALIGN_CHECKPOINTS))
        out = {}
        for name, number in thresholds.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 <= number < 1e6:
                raise self.values.err(f"align.thresholds.{name}", number, "a threshold: a number ≥ 0, such as 1.0e-6")
            out[name] = float(number)
        return out

    def text(self, value: Any) -> text_style.TextStyle | None:
        """text: the config's lines as written (import keeps them; docs/DESCRIPTOR.md, text)."""
        if value is None:
            return None
        value = self.values.mapping(value, "text", TEXT_FIELDS)
        lines = []
        for index, written in (value.get("lines") or {}).items():
            path = f"text.lines.{index}"
            number = None if isinstance(index, bool) else inputs.whole_number(str(index), MAX_TEXT_LINE)
            if number is None:
                raise self.values.err(path, index, f"a line index: a whole number from 0 to {MAX_TEXT_LINE}")
            if not isinstance(written, str) or not written or "\n" in written or "\r" in written:
                raise self.values.err(path, written, "one line of text")
            lines.append((number, written))
        blanks = value.get("blank_lines") or []
        if not isinstance(blanks, list) or any(isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TEXT_LINE
                                               for n in blanks):
            raise self.values.err("text.blank_lines", blanks, f"a list of line numbers (1 to {MAX_TEXT_LINE})")
        final = value.get("final_newline", default("text.final_newline"))
        if not isinstance(final, bool):
            raise self.values.err("text.final_newline", final, "true or false")
        count = value.get("line_count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or not 1 <= count <= MAX_TEXT_LINE):
            raise self.values.err("text.line_count", count, f"a number of lines (1 to {MAX_TEXT_LINE})")
        return text_style.from_fields(lines, blanks, final, count)

    def run(self, value: Any) -> int:
        if value is None:
            return default("run.step_timeout")
        value = self.values.mapping(value, "run", RUN_FIELDS)
        timeout = value.get("step_timeout", default("run.step_timeout"))
        if isinstance(timeout, bool) or not isinstance(timeout, int) or not 0 < timeout <= MAX_STEP_TIMEOUT:
            raise self.values.err("run.step_timeout", timeout, f"whole seconds between 1 and {MAX_STEP_TIMEOUT}")
        return timeout
