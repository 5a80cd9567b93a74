"""The validator's checks of the descriptor's groups: env, sections, data, checks, paddle2onnx, align, run, text
(`Groups`, which checks single values through a `validate_values.Checks` it is given)."""
from __future__ import annotations

from typing import Any

from tipcgen.core import inputs
from tipcgen.core.errors import DescriptorError
from tipcgen.core.text import quoted, terminal
from tipcgen.descriptor.fields import (
    default,
)
from tipcgen.descriptor.schema import (
    DATA_NAME_RE,
    ENV_NAME_RE,
    KEY_RE,
    MAX_TEXT_LINE,
    env_refusal,
)
from tipcgen.descriptor.spec import ChecksSpec, DataFile, DataSpec, Paddle2OnnxSpec, Tolerance
from tipcgen.descriptor.validate_values import Checks
from tipcgen.format import text_style
from tipcgen.format.chains import PADDLE2ONNX
from tipcgen.format.config import Line as _ConfigLine



class Groups:
    """The checks of the descriptor's groups (env, sections, data, checks, ...), each through `values`."""

    def __init__(self, values: Checks) -> None:
        self.values = values

    def env(self, value: Any) -> tuple[tuple[str, str], ...]:
        """env: {NAME: value}: variables the export and inference steps run with (e.g. FLAGS_enable_pir_api: "0")."""
        if value is None:
            return ()
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
        out = []
        for i, item in enumerate(value):
            path = f"sections[{i}]"
            # name null: lines after idx 50 that stand before any header (upstream fillers)
            name = None if item.get("name") is None else self.values.text(item["name"], f"{path}.name", what="section name")
            self._section_header(item.get("header"), name, path)
            lines = item.get("lines") or []
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
        data_dir = self.values.text(value.get("dir", default("data.dir")), "data.dir", what="folder")
        env = self.values.text(value.get("whole_env", default("data.whole_env")), "data.whole_env", what="variable name")
        files_raw = value.get("files") or {}
        files = []
        for name, spec in files_raw.items():
            path = f"data.files.{name}"
            if not DATA_NAME_RE.match(name):
                raise self.values.fail(path, f"{quoted(name)} is not a plain file name", "no folders, spaces or shell characters")
            role = spec.get("role", default("data.files.<name>.role"))
            lite = self.values.rel(spec.get("lite"), f"{path}.lite")
            whole = self.values.rel(spec.get("whole"), f"{path}.whole")
            md5, rows = spec.get("md5"), spec.get("rows")
            if lite is None and whole is None:
                raise self.values.fail(path, "names neither a lite nor a whole source", "give lite: and/or whole:")
            files.append(DataFile(name, role, lite, whole, md5, rows))
        setup = []
        for i, call in enumerate(value.get("setup") or []):
            words = tuple(self.values.text(w, f"data.setup[{i}][{j}]", what="argument") for j, w in enumerate(call))
            if not words[0].endswith(".py"):
                raise self.values.fail(f"data.setup[{i}]", f"{quoted(words[0])} is not a python script", "setup runs python scripts only")
            setup.append(words)
        trained = self.values.rel(value.get("trained_model"), "data.trained_model")
        from_lite = value.get("whole_from_lite", default("data.whole_from_lite"))
        return DataSpec(data_dir, env, tuple(files), tuple(setup), trained, from_lite)

    def checks(self, value: Any) -> ChecksSpec | None:
        if value is None:
            return None
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
        return tuple(value or ())

    def _output_names(self, value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
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
        return self.values.rel(value["fixed_inputs"], "checks.fixed_inputs")

    def paddle2onnx(self, value: Any, data: DataSpec | None) -> Paddle2OnnxSpec | None:
        if value is None:
            return None
        model_dir = self.values.rel(value.get("model_dir"), "paddle2onnx.model_dir") or (data.trained_model if data else None)
        if model_dir is None:
            raise DescriptorError(self.values.source, "paddle2onnx.model_dir", "is missing", self.values.lines.get(PADDLE2ONNX),
                                  hint="name the exported model folder, or set data.trained_model")
        save_file = self.values.rel(value.get("save_file"), "paddle2onnx.save_file")
        if save_file is None:
            raise DescriptorError(self.values.source, "paddle2onnx.save_file", "is missing", self.values.lines.get(PADDLE2ONNX),
                                  hint="name the .onnx file to write, a relative path ending in .onnx")
        opset = value.get("opset_version", default("paddle2onnx.opset_version"))
        # onnx_flag: null: the script cannot run an ONNX model; the chain's own check (check_inference.py) does.
        flag = "null" if "onnx_flag" in value and value["onnx_flag"] is None else \
            self.values.text(value.get("onnx_flag", default("paddle2onnx.onnx_flag")), "paddle2onnx.onnx_flag", what="flag name")
        if flag != "null" and not KEY_RE.match(flag):
            raise self.values.fail("paddle2onnx.onnx_flag", f"{quoted(flag)} is not a usable flag name", "such as --use_onnx")
        return Paddle2OnnxSpec(model_dir, save_file, opset, self.values.text(value["inference"], "paddle2onnx.inference", what="command"), flag)

    def align(self, value: Any) -> dict[str, float]:
        if value is None:
            return {}
        return {name: float(number) for name, number in (value.get("thresholds") or {}).items()}

    def text(self, value: Any) -> text_style.TextStyle | None:
        """text: the config's lines as written (import keeps them; docs/DESCRIPTOR.md, text)."""
        if value is None:
            return None
        lines = []
        for index, written in (value.get("lines") or {}).items():  # digits and one line of text: the schema's
            path = f"text.lines.{index}"
            number = inputs.whole_number(str(index), MAX_TEXT_LINE)
            if number is None:
                raise self.values.err(path, index, f"a line index: a whole number from 0 to {MAX_TEXT_LINE}")
            if "\n" in written or "\r" in written:
                raise self.values.err(path, written, "one line of text")
            lines.append((number, written))
        final = value.get("final_newline", default("text.final_newline"))
        return text_style.from_fields(lines, value.get("blank_lines") or [], final, value.get("line_count"))

    def run(self, value: Any) -> int:
        if value is None:
            return default("run.step_timeout")
        return int(value.get("step_timeout", default("run.step_timeout")))
