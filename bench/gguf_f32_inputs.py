#!/usr/bin/env python3
"""Rewrites a GGUF so that its token-type and position embeddings are F32, as llama.cpp's
converter (convert_hf_to_gguf.py) always stores them. `vkllm dev make-model --arch bert` writes
them in the file's type; llama.cpp's CPU backend cannot add an F16 row to F32 activations and
aborts (binary_op: unsupported types), so the embedding comparison (scripts/device-bench embed)
runs both engines on this rewritten file. A file with nothing to convert is copied unchanged.

usage: gguf_f32_inputs.py IN.gguf OUT.gguf
"""
import shutil
import struct
import sys

F32, F16 = 0, 1
CONVERT = ("token_types.weight", "position_embd.weight")
# Sizes of GGUF's scalar metadata types (8 = string and 9 = array are variable).
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def skip_value(self, t):
        if t == 8:
            self.string()
        elif t == 9:
            item, n = self.take("I"), self.take("Q")
            if item in SCALAR:
                self.pos += SCALAR[item] * n
            else:
                for _ in range(n):
                    self.skip_value(item)
        else:
            self.pos += SCALAR[t]


def main(src, dst):
    with open(src, "rb") as f:
        data = f.read()
    r = Reader(data)
    magic, version, n_tensors, n_kv = r.take("4sIQQ")
    if magic != b"GGUF":
        sys.exit(f"{src}: not a GGUF file")
    align = 32
    for _ in range(n_kv):
        key, t = r.string(), r.take("I")
        if key == "general.alignment" and t == 4:
            align = r.take("I")
        else:
            r.skip_value(t)
    kv_end = r.pos
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        ttype, offset = r.take("I"), r.take("Q")
        tensors.append([name, dims, ttype, offset])
    base = (r.pos + align - 1) // align * align
    if not any(t[0] in CONVERT and t[2] == F16 for t in tensors):
        shutil.copyfile(src, dst)
        return
    # Each tensor's bytes: the next tensor's offset (or the file's end) bounds it.
    order = sorted(range(n_tensors), key=lambda i: tensors[i][3])
    blobs = {}
    for k, i in enumerate(order):
        start = base + tensors[i][3]
        end = base + tensors[order[k + 1]][3] if k + 1 < len(order) else len(data)
        blobs[i] = data[start:end]
    for i, t in enumerate(tensors):
        if t[0] in CONVERT and t[2] == F16:
            count = 1
            for d in t[1]:
                count *= d
            halves = struct.unpack_from(f"<{count}e", blobs[i])
            blobs[i] = struct.pack(f"<{count}f", *halves)
            t[2] = F32
    head = bytearray(data[:kv_end])
    body = bytearray()
    for i, t in enumerate(tensors):
        body += blobs[i]
        body += bytes((-len(body)) % align)
    offset = 0
    for i, t in enumerate(tensors):
        name = t[0].encode()
        head += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(t[1]))
        head += b"".join(struct.pack("<Q", d) for d in t[1])
        head += struct.pack("<IQ", t[2], offset)
        offset += len(blobs[i]) + (-(offset + len(blobs[i]))) % align
    head += bytes((-len(head)) % align)
    with open(dst, "wb") as f:
        f.write(head)
        f.write(body)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(sys.argv[1], sys.argv[2])
