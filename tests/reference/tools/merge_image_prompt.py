#!/usr/bin/env python3
"""Writes a vision prompt case (tests/reference/vision/*.json): the make-model parameters that
regenerate its files and the picture, followed by what record_image_prompt printed.
Usage: merge_image_prompt.py CASE.json RECORDED.json [MODEL.json]
MODEL.json: {"model": {...}, "image": "..."} for the case (the make-model parameters, the sha256
of the text model and projector, the picture); without it, gemma3-prompt.json's."""
import json
import sys

case_path, recorded_path = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:
    case = json.load(open(sys.argv[3]))
else:
    case = {
        "model": {
            "arch": "gemma3",
            "shape": "test-swa",
            "type": "F16",
            "seed": 40,
            "vocab": "tests/reference/families/spm-1k-vocab.gguf",
            "projector_shape": "test:1",
            "sha256": "4220b3f097c3c3cdaca41e0ce54e434f9a8cf1f8d54beb8b86df19ec407d142a",
            "projector_sha256": "edbac89766e0b8b7d511cd43105192fed1a28055033b9441098c7eea57bd9d54",
        },
        "image": "wide-300x200.png",
    }
case.update(json.load(open(recorded_path)))
case["llama_cpp"] = {
    "commit": "de3ff815ea7d559ee917f063901b8986f038abc6",
    "backend": "CPU",
    "tool": "tests/reference/tools/record_image_prompt.cpp (libmtmd: mtmd_tokenize, "
    "mtmd_encode_chunk, mtmd_helper_eval_chunks; its image preprocessor classes for the pixels; "
    "flash attention off, 2 threads)",
}
with open(case_path, "w") as f:
    json.dump(case, f, indent=1)
    f.write("\n")
