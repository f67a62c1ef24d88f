#!/usr/bin/env python3
"""Writes corpus/gguf/ollama-mistral3-tower.gguf: a tiny Mistral 3 file in Ollama's single-file
layout (text keys, 13 tokens, token_embd, a one-layer Pixtral tower 8 wide with 2 heads under
Ollama's names), and corpus/gguf/ollama-gemma4-tower.gguf: a tiny Gemma 4 one (a one-layer gemma4v
tower 8 wide whose clamp bounds are only packed in v.clamp_data, an audio tensor), for fuzz_gguf's
inline-tower extraction (engine/gguf/inline_projector.h) to start from files it reads. Run from
tests/fuzz: python3 make_inline_tower_seeds.py"""
import struct

U32, F32, STRING, ARRAY = 4, 6, 8, 9


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, value):
    out = s(key) + struct.pack("<I", kind)
    if kind == U32:
        return out + struct.pack("<I", value)
    if kind == F32:
        return out + struct.pack("<f", value)
    if kind == STRING:
        return out + s(value)
    return out + struct.pack("<IQ", STRING, len(value)) + b"".join(s(v) for v in value)


def write(path, keys, tensors):
    infos, data = b"", b""
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        infos += s(name) + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", d) for d in shape)
        infos += struct.pack("<IQ", 0, len(data))  # F32
        if name == "v.clamp_data":  # (1 layer x 7 linears + the projection) x [-2, 2, -3, 3]
            data += b"".join(struct.pack("<4f", -2.0, 2.0, -3.0, 3.0) for _ in range(n // 4))
        else:
            data += b"".join(struct.pack("<f", (i % 7) * 0.25 - 0.5) for i in range(n))
        data += b"\0" * (-len(data) % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(keys)) + b"".join(keys) + infos
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head + data)


keys = [
    kv("general.architecture", STRING, "mistral3"),
    kv("mistral3.embedding_length", U32, 4),
    kv("mistral3.block_count", U32, 1),
    kv("mistral3.rope.scaling.beta_fast", F32, 32.0),
    kv("tokenizer.ggml.tokens", ARRAY, [f"t{i}" for i in range(12)] + ["[IMG_BREAK]"]),
    kv("mistral3.vision.block_count", U32, 1),
    kv("mistral3.vision.embedding_length", U32, 8),
    kv("mistral3.vision.feed_forward_length", U32, 8),
    kv("mistral3.vision.attention.head_count", U32, 2),
    kv("mistral3.vision.attention.key_length", U32, 4),
    kv("mistral3.vision.image_size", U32, 28),
    kv("mistral3.vision.patch_size", U32, 2),
    kv("mistral3.spatial_merge_size", U32, 2),
]
tensors = [("token_embd.weight", [4, 13]), ("v.patch_conv.weight", [2, 2, 3, 8]),
           ("v.encoder_norm.weight", [8]), ("v.blk.0.attn_q.weight", [8, 8]),
           ("v.blk.0.attn_k.weight", [8, 8]), ("v.blk.0.attn_output.weight", [8, 8]),
           ("mm.patch_merger.merging_layer.weight", [32, 8]), ("mm.linear_1.weight", [8, 4])]
write("corpus/gguf/ollama-mistral3-tower.gguf", keys, tensors)

keys = [
    kv("general.architecture", STRING, "gemma4"),
    kv("gemma4.embedding_length", U32, 4),
    kv("gemma4.block_count", U32, 1),
    kv("gemma4.vision.block_count", U32, 1),
    kv("gemma4.vision.embedding_length", U32, 8),
    kv("gemma4.vision.feed_forward_length", U32, 8),
    kv("gemma4.vision.attention.head_count", U32, 2),
    kv("gemma4.vision.patch_size", U32, 2),
    kv("gemma4.vision.num_channels", U32, 3),
    kv("gemma4.vision.projector.scale_factor", U32, 3),
    kv("gemma4.audio.block_count", U32, 1),
]
tensors = [("token_embd.weight", [4, 13]), ("v.patch_embd.weight", [2, 2, 3, 8]),
           ("v.position_embd.weight", [8, 4, 2]), ("v.blk.0.ln1.weight", [8]),
           ("v.blk.0.attn_q.weight", [8, 8]), ("v.blk.0.out_scale.weight", [1]),
           ("mm.input_projection.weight", [8, 4]), ("v.clamp_data", [32]),
           ("a.blk.0.per_dim_scale.weight", [4]), ("mm.a.input_projection.weight", [8, 4])]
write("corpus/gguf/ollama-gemma4-tower.gguf", keys, tensors)
