"""Convert the Paddle BERT's weights (paddlenlp names) to the Hugging Face BERT (torch) names.

    python convert_weights.py --paddle out/init/paddle_init.npz --output out/init/torch_init.npz

The guide's torch2paddle.py turned around: every name is mapped by one rule, the 2-D weights of
Linear layers are transposed (Paddle stores [in, out], torch [out, in]); embeddings and LayerNorm
are copied as they are. Every tensor must be mapped exactly once, or the script stops. numpy only.
"""
from __future__ import annotations

import argparse
import re
import sys

import numpy as np

# (paddlenlp name pattern, Hugging Face name, kind); kind "linear" weights are transposed.
_LAYER = r"bert\.encoder\.layers\.(\d+)\."
_RULES: list[tuple[str, str, str]] = [
    (r"bert\.embeddings\.(word|position|token_type)_embeddings\.weight", r"bert.embeddings.\1_embeddings.weight",
     "embedding"),
    (r"bert\.embeddings\.layer_norm\.(weight|bias)", r"bert.embeddings.LayerNorm.\1", "norm"),
    (_LAYER + r"self_attn\.q_proj\.(weight|bias)", r"bert.encoder.layer.\1.attention.self.query.\2", "linear"),
    (_LAYER + r"self_attn\.k_proj\.(weight|bias)", r"bert.encoder.layer.\1.attention.self.key.\2", "linear"),
    (_LAYER + r"self_attn\.v_proj\.(weight|bias)", r"bert.encoder.layer.\1.attention.self.value.\2", "linear"),
    (_LAYER + r"self_attn\.out_proj\.(weight|bias)", r"bert.encoder.layer.\1.attention.output.dense.\2", "linear"),
    (_LAYER + r"norm1\.(weight|bias)", r"bert.encoder.layer.\1.attention.output.LayerNorm.\2", "norm"),
    (_LAYER + r"linear1\.(weight|bias)", r"bert.encoder.layer.\1.intermediate.dense.\2", "linear"),
    (_LAYER + r"linear2\.(weight|bias)", r"bert.encoder.layer.\1.output.dense.\2", "linear"),
    (_LAYER + r"norm2\.(weight|bias)", r"bert.encoder.layer.\1.output.LayerNorm.\2", "norm"),
    (r"bert\.pooler\.dense\.(weight|bias)", r"bert.pooler.dense.\1", "linear"),
    (r"classifier\.(weight|bias)", r"classifier.\1", "linear"),
]
RULES = [(re.compile(pattern + r"\Z"), target, kind) for pattern, target, kind in _RULES]


class ConversionError(Exception):
    """A name that no rule or several rules map, or two names mapped to one."""


def map_name(paddle_name: str) -> tuple[str, bool]:
    """(Hugging Face name, transpose?) for one paddlenlp parameter name."""
    hits = [(rule.sub(target, paddle_name), kind) for rule, target, kind in RULES if rule.match(paddle_name)]
    if len(hits) != 1:
        raise ConversionError(f"{paddle_name}: matched by {len(hits)} rules (expected exactly 1)")
    name, kind = hits[0]
    return name, kind == "linear" and paddle_name.endswith(".weight")


def convert(paddle_state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The Hugging Face state dict: names mapped, Linear weights transposed, each tensor used once."""
    out: dict[str, np.ndarray] = {}
    for name, value in paddle_state.items():
        target, transpose = map_name(name)
        if target in out:
            raise ConversionError(f"{name}: maps to {target}, which another tensor already filled")
        if transpose and value.ndim != 2:
            raise ConversionError(f"{name}: a Linear weight should be 2-D, got shape {value.shape}")
        out[target] = np.ascontiguousarray(value.T) if transpose else value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--paddle", required=True, help=".npz of the Paddle state dict (paddle_side.py writes it)")
    parser.add_argument("--output", required=True, help=".npz of the Hugging Face state dict to write")
    args = parser.parse_args(argv)
    with np.load(args.paddle) as archive:
        state = {name: archive[name] for name in archive.files}
    try:
        converted = convert(state)
    except ConversionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    np.savez(args.output, **converted)
    transposed = sum(1 for name in state if map_name(name)[1])
    print(f"converted {len(converted)} tensors ({transposed} Linear weights transposed) -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
