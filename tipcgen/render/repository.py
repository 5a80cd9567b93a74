"""Descriptor → the files of ``test_tipc/`` (from the Jinja templates), written safely.

Rendering is pure (text in, text out); ``write_tree`` is the only function that touches the
user's files: it writes all files or none, and never overwrites a changed file without force.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import jinja2

from tipcgen import __version__
from tipcgen.configs import existing
from tipcgen.core.errors import TipcgenError
from tipcgen.core.writes import Written, write_tree
from tipcgen.descriptor import Descriptor, samples_dir
from tipcgen.descriptor.answers import (
    Answers,
    base_path,
    descriptor_reference,
    sha256_of,
    target_of,
)
from tipcgen.descriptor.answers import read as read_answers
from tipcgen.descriptor.schema import MAX_STEP_TIMEOUT
from tipcgen.format import chain, chains, families, layout, paths, text_style, words
from tipcgen.render import dy2static_runner, gitignore, hook, ptq_runner, shipped
from tipcgen.render.hook import RenderJob
from tipcgen.render.shipped import tipc_preflight
from tipcgen.render.templating import environment


def render_config(desc: Descriptor, env: jinja2.Environment | None = None) -> str:
    """The config text of a descriptor (train_infer_python.txt)."""
    return text_style.apply(layout_text(desc.layout, {name: value.line for name, value in desc.slots.items()},
                                        desc.sections, desc.section_headers, checks=desc.checks,
                                        benchmark=desc.benchmark, env=env), desc.text,
                            len(layout.slots_of(desc.layout)))


def layout_text(layout_name: str, lines: Mapping[str, str], sections: Sequence[tuple[str | None, Sequence[str]]] = (),
                section_headers: Sequence[str | None] = (), *, checks=None, benchmark=None,
                env: jinja2.Environment | None = None) -> str:
    """The one writer of a layout's lines: ``lines`` maps a kv slot's name to its line (``key:value``,
    or a key alone); a kv slot not given gets ``KEY:null`` (``null:null`` without a default key).
    ``sections`` are the trailing ``(name, lines)``; a ``None`` name writes no header."""
    table = layout.slots_of(layout_name)
    kv = {slot.name: slot for slot in table if slot.kind == "kv"}
    unknown = sorted(set(lines) - set(kv) - {slot.name for slot in layout.TRAIN_INFER_PYTHON if slot.kind == "kv"})
    if unknown:
        raise ValueError(f"not kv slots of the {layout_name} layout: {', '.join(unknown)}")
    given = {name: lines.get(name, f"{slot.key or 'null'}:null") for name, slot in kv.items()}
    if any(not line or "\n" in line for line in given.values()):
        raise ValueError("config lines must be non-empty and must not contain a newline")
    headers = [section_headers[i] if i < len(section_headers) else None for i in range(len(sections))]
    return (env or environment()).get_template("config/train_infer_python.txt.j2").render(
        layout=table, lines=given, sections=sections, checks=checks, benchmark=benchmark, section_headers=headers)


def golden_dir(desc: Descriptor) -> Path | None:
    return desc.base_dir / desc.checks.golden if desc.checks and desc.checks.golden else None


def _golden_files(desc: Descriptor) -> dict[str, bytes]:
    """Committed golden results (next to the descriptor) → test_tipc/results/."""
    folder = golden_dir(desc)
    if folder is None or not folder.is_dir():
        return {}
    return {f"{paths.RESULTS_DIR}/{path.name}": path.read_bytes() for path in sorted(folder.glob("*.txt")) if path.is_file()}


def _layouts_context(descs: Sequence[Descriptor]) -> list[dict]:
    """The layout tables tipc_layouts.json holds: those of the layouts the repository's configs are in (each model's,
    the dy2static runner's 51-line one, and each kept config's as tipc_preflight.py would pick it among them all),
    in families.runner_tables' order. A config of another layout fails the layout check, naming the line it holds
    no anchor on."""
    tables = families.runner_tables()
    used = [d.layout for d in descs] + ([dy2static_runner.LAYOUT] if any(d.dy2static is not None for d in descs) else [])
    wanted = {next(t["name"] for t in tables if name == t["name"] or name in t["also"])
              for name in used or [dy2static_runner.LAYOUT]}
    for text in (config.render() for d in descs for config in d.kept):
        table, held = tipc_preflight.pick(tipc_preflight.non_blank(text)[0], tables)
        if held > 0:
            wanted.add(table["name"])
    return [t for t in tables if t["name"] in wanted]


def _runner_context(descs: Sequence[Descriptor] = ()) -> dict:
    """What the shared scripts are rendered from: the layouts, and each model's own settings."""
    return {
        "modes": words.MODES,
        "legacy_modes": words.LEGACY_MODES,
        "layouts": _layouts_context(descs),
        "default_timeout": Descriptor.step_timeout,
        "max_timeout": MAX_STEP_TIMEOUT,
        "models": [{"name": d.model_name, "timeout": d.step_timeout, "env": d.env, "slot_keys": _slot_keys(d)} for d in descs]
        + ptq_runner.ptq_timeout_arms(descs),  # a PTQ config's model_name that is not its descriptor's
        "paths": paths.runner_context(),
        "fleet_hook": any(d.fleet is not None for d in descs),  # the basic runner sources tipc_fleet.sh
    }


def _slot_keys(desc: Descriptor) -> list[tuple[int, str]]:
    """The key of every key:value slot of a model as rendered (a null slot has no key to check)."""
    return [(slot.index, desc.slots[slot.name].key) for slot in layout.slots_of(desc.layout)
            if slot.kind == "kv" and desc.slots[slot.name].key != "null"
            and slot.name not in layout.RUNNER_UNPASSED[desc.layout]]


def _slot(desc: Descriptor, fld: str):
    """A descriptor's slot value by descriptor field (code names slots by field: see chain.py)."""
    return desc.slots[chain.name_of(fld)]


def _docs_context(desc: Descriptor) -> dict:
    def shown(fld: str) -> str:
        return (_slot(desc, f"inference.{fld}").value or "").replace("|", "/")

    gpus = desc.list_value("gpu_list")
    return {
        "model_name": desc.model_name,
        "description": desc.description,
        "descriptor_name": Path(desc.source).name,
        "modes": words.MODES,
        "gpu_list": _slot(desc, "gpu_list").value,
        "multi_device": any("," in g and ";" not in g for g in gpus),
        "multi_node": any(";" in g for g in gpus),
        "whole_env": desc.data.whole_env if desc.data else "",
        "infer": {"batch_size": shown("batch_size"), "trt": shown("use_tensorrt"),
                  "mkldnn": shown("enable_mkldnn"), "threads": shown("cpu_threads")},
    }


def render_files(desc: Descriptor) -> dict[str, str | bytes]:
    """Every generated file of test_tipc/ for one model, by path relative to the repository root."""
    return render_repository([desc])


def _models(descs: Sequence[Descriptor]) -> list[Descriptor]:
    """The models of a repository, by name; two descriptors of one model_name are an error."""
    by_name: dict[str, Descriptor] = {}
    for desc in descs:
        if desc.model_name in by_name:
            raise TipcgenError(f"{by_name[desc.model_name].source} and {desc.source} both describe model_name "
                               f"{desc.model_name}", "give each model its own model_name (it names test_tipc/configs/<model_name>/)")
        by_name[desc.model_name] = desc
    return [by_name[name] for name in sorted(by_name)]


def render_repository(descs: Sequence[Descriptor]) -> dict[str, str | bytes]:
    """Every generated file of test_tipc/ for the models of one repository: each model's configs, and
    one runner, common_func.sh, tipc_steps.sh and prepare.sh for all of them (docs: the first model's); then
    each chain's files from its render hook (render/hook.py, the chain's record names it) and the shipped
    scripts of each chain whose runner it rendered; the configs the descriptors keep, each where it was."""
    env = environment()
    models = _models(descs)
    runner = _runner_context(models)
    docs = _docs_context(descs[0])
    files: dict[str, str | bytes] = {}
    for desc in models:
        files[paths.config_rel(desc.model_name)] = render_config(desc, env)
    prepare = [{"name": d.model_name, "data": d.data,
                "whole_files": sorted({f.whole for f in d.data.files if f.whole} if d.data else ())} for d in models]
    files.update({
        paths.COMMON_FUNC: env.get_template("runner/common_func.sh.j2").render(**runner),
        paths.STEPS_SH: env.get_template("runner/tipc_steps.sh.j2").render(**runner),
        paths.LAYOUTS_JSON: env.get_template("runner/tipc_layouts.json.j2").render(**runner),
        paths.BASIC_RUNNER: env.get_template("runner/test_train_inference_python.sh.j2").render(**runner),
        paths.PREPARE_SH: env.get_template("runner/prepare.sh.j2").render(
            models=prepare, any_data=any(d.data for d in models), unpack_script=paths.UNPACK_ARCHIVE,
            any_trained=any(d.data and d.data.trained_model for d in models)),
        paths.README: env.get_template("docs/README.md.j2").render(**docs),
        paths.CHAIN_DOC: env.get_template("docs/test_train_inference_python.md.j2").render(**docs),
    })
    shipped_scripts = [paths.TIPC_PREFLIGHT, paths.CHECK_INFERENCE, paths.TIPC_COMPARE]
    if any(d.checks is not None for d in models):
        shipped_scripts.append(paths.COMPARE_RESULTS)
    if any(d.data for d in models):  # prepare.sh's unpacker of lite data archives
        shipped_scripts.append(paths.UNPACK_ARCHIVE)
    kept = kept_files(models)  # configs kept line by line (kept:), each where it was: a hook reads them too
    job = RenderJob(models, env, runner, MappingProxyType({**files, **kept}), render_config)
    for record in chains.CHAINS:
        produced = hook.files_of(record, job)
        files.update(produced)
        if paths.RUNNERS[record.name] in produced:
            shipped_scripts += [name for name in record.shipped if name not in shipped_scripts]
    files.update(kept)
    for name in shipped_scripts:  # real modules of tipcgen/render/shipped/, copied with a header line
        files[paths.shipped_rel(name)] = env.get_template("runner/shipped.py.j2").render(name=name, source=shipped.source(name))
    return files


def kept_files(models: Sequence[Descriptor]) -> dict[str, str]:
    """The configs the descriptors keep line by line (``kept:``), byte for byte at test_tipc/configs/<file>; one
    at a model's basic config path replaces the rendered one (a layout tipcgen has no fields for)."""
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for desc in models:
        for kept in desc.kept:
            if kept.rel in owner:
                raise TipcgenError(f"{owner[kept.rel]} and {desc.source} both keep {kept.rel}",
                                   "keep each config in one model's descriptor")
            owner[kept.rel] = desc.source
            out[kept.rel] = kept.render()
    return out


def sample_files(desc: Descriptor) -> dict[str, bytes]:
    """A built-in sample's own project files, so that its scripts exist where its config says."""
    root = samples_dir()
    try:
        sample = desc.base_dir.resolve().relative_to(root.resolve())
    except ValueError:
        return {}
    out = {}
    for path in sorted((root / sample).rglob("*")):
        rel = path.relative_to(root / sample)
        if path.is_file() and "__pycache__" not in rel.parts and not any(p.startswith(".") for p in rel.parts):
            out[f"sample_models/{sample.as_posix()}/{rel.as_posix()}"] = path.read_bytes()
    return out


def rendered_models(models: Sequence[tuple[Descriptor, str]]) -> dict[str, str | bytes]:
    """Everything init writes for the models of a repository (each with its devices option) besides
    its bookkeeping: test_tipc/, golden results, a sample's own files."""
    descs = [desc.for_cpu_only() if devices == "cpu" else desc for desc, devices in models]
    files: dict[str, str | bytes] = dict(render_repository(descs))
    for desc in descs:
        files.update(_golden_files(desc))
        files.update(sample_files(desc))
    return files


def bookkeeping(answers: Answers, base: Mapping[str, str | bytes]) -> dict[str, str | bytes]:
    """The answers file and the merge base (.tipcgen/base/<path>) for the given rendered files."""
    out: dict[str, str | bytes] = {paths.ANSWERS: environment().get_template("answers/tipcgen-answers.yml.j2").render(a=answers)}
    out.update({base_path(rel): content for rel, content in base.items()})
    return out


def answers_for(models: Sequence[tuple[Descriptor, str]], out_dir: Path, files: dict[str, str | bytes]) -> Answers:
    entries = [(descriptor_reference(desc, out_dir), sha256_of(Path(desc.source)), devices) for desc, devices in models]
    (reference, sha256, devices), others = entries[0], tuple(entries[1:])
    return Answers(__version__, reference, sha256, devices, tuple(sorted(files)), others)


def recorded_models(out_dir: Path, force: bool = False, on_note: Callable[[str], None] = lambda line: None,
                    named: Sequence[Descriptor] = ()) -> list[tuple[Descriptor, str]]:
    """The models init rendered into out_dir before (with their devices option), from the answers file.
    A recorded descriptor file that is one of ``named`` (init's own arguments) is taken as named, not read
    again (one outside the repository is read from the answers file only as init rendered it)."""
    by_path = {os.path.normpath(Path(d.source).absolute()): d for d in named if Path(d.source).is_file()}
    if not (out_dir / paths.ANSWERS).is_file():
        return []
    from tipcgen import descriptor

    try:
        answers = read_answers(out_dir)
    except TipcgenError as exc:
        if not force:
            raise TipcgenError(f"{exc.message}; nothing was written",
                               "restore it from version control, or render only the models named here with --force") from None
        on_note(f"renders only the models named: {out_dir / paths.ANSWERS} cannot be read ({exc.message})")
        return []
    out = []
    for reference, sha256, devices in answers.models:
        given = by_path.get(os.path.normpath((out_dir / reference).absolute()))
        if given is not None:
            out.append((given, devices))
            continue
        try:
            out.append((descriptor.load(target_of(reference, out_dir, sha256)), devices))
        except TipcgenError as exc:
            if not force:
                raise TipcgenError(f"{out_dir / paths.ANSWERS}: the descriptor {reference} of a model rendered here "
                                   f"cannot be loaded ({exc.message}); nothing was written",
                                   "restore it (the runner, common_func.sh and prepare.sh serve every model of the "
                                   "repository), or drop that model with --force") from None
            on_note(f"drops the model of {reference}: its descriptor cannot be loaded ({exc.message})")
    return out


def merged_models(recorded: Sequence[tuple[Descriptor, str]], new: Sequence[Descriptor],
                  devices: str) -> list[tuple[Descriptor, str]]:
    """The repository's models after init: the recorded ones in order, each new one in its place by
    model_name (a re-render) or after them."""
    models = list(recorded)
    for desc in new:
        at = next((i for i, (old, _) in enumerate(models) if old.model_name == desc.model_name), None)
        if at is None:
            models.append((desc, devices))
        else:
            models[at] = (desc, devices)
    return models


def own_files(out_dir: Path) -> set[str]:
    """The files tipcgen rendered into out_dir last time that nobody changed since (each equals its
    merge base): a new render replaces them without --force."""
    try:
        files = read_answers(out_dir).files if (out_dir / paths.ANSWERS).is_file() else ()
    except TipcgenError:
        return set()  # (init --force past a damaged answers file) nothing counts as tipcgen's
    own = set()
    for rel in files:
        current, base = out_dir / rel, out_dir / base_path(rel)
        if current.is_file() and not current.is_symlink() and base.is_file() and current.read_bytes() == base.read_bytes():
            own.add(rel)
    return own


def _gitignore(desc: Descriptor, out_dir: Path, current: str | None = None) -> dict[str, str]:
    """The repository's .gitignore (or ``current``, its text as already extended for another model)
    with the chain's working folders appended, when any is missing."""
    path = out_dir / paths.GITIGNORE
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return {}  # not a plain file: not ours to rewrite
    if current is None and path.is_file():
        try:
            current = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return {}  # left as it is rather than rewritten with replaced characters
    text = gitignore.merged(current, gitignore.entries(desc))
    return {} if text is None else {paths.GITIGNORE: text}


def init(descs: Descriptor | Sequence[Descriptor], out_dir: Path, force: bool = False, devices: str = "all",
         on_note: Callable[[str], None] = lambda line: None, submission: bool = False) -> list[Written]:
    """Render test_tipc/ for the given descriptors beside the models rendered there before (one runner,
    common_func.sh and prepare.sh for all), and record what it rendered from (.tipcgen-answers.yml,
    .tipcgen/base/) so that tipcgen update can merge later. A file tipcgen rendered there last time and
    nobody edited since is replaced without force."""
    new = [descs] if isinstance(descs, Descriptor) else list(descs)
    recorded = [] if submission else recorded_models(out_dir, force, on_note, new)
    models = merged_models(recorded, new, devices)
    files = rendered_models(models)
    record: dict[str, str | bytes] = {}
    if submission:  # the repository keeps its runner, common_func.sh and prepare.sh (tipcgen.submission)
        from tipcgen.configs import submission as submission_mode

        files = submission_mode.submission_files(files, out_dir, paths.config_rel(new[0].model_name))
        record = {paths.SUBMISSION_RECORD: files.pop(paths.SUBMISSION_RECORD)}  # bookkeeping, not a rendered file
        for rel in submission_mode.authors_docs(files, out_dir, own_files(out_dir)):  # the authors' docs: kept, named
            if force:
                on_note(f"replaces {rel}, the repository's own (--force; the old file is kept under .tipcgen/backup/)")
            else:
                del files[rel]
                on_note(f"kept {rel}, the repository's own: tipcgen's version was not written (--force would "
                        "replace it, keeping the old file under .tipcgen/backup/)")
    own = own_files(out_dir)
    for line in existing.check({rel: content for rel, content in files.items() if rel not in own}, out_dir, force):
        on_note(line)
    book = {**bookkeeping(answers_for(models, out_dir, files), files), **record}
    ignore: dict[str, str] = {}
    for desc, _ in models:
        ignore = _gitignore(desc, out_dir, ignore.get(paths.GITIGNORE)) or ignore
    written = write_tree({**files, **book, **ignore}, out_dir, force, owned=set(book) | set(ignore) | own)
    return [w for w in written if not w.path.startswith(paths.BASE + "/")]

