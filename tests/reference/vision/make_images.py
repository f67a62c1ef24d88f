#!/usr/bin/env python3
# Writes the vision references' test images (8-bit RGB PNGs, no alpha) deterministically with
# the standard library only: smooth gradients with hard-edged shapes, so resampling filters see
# both. usage: make_images.py OUT_DIR
import math, struct, sys, zlib

def png(path, w, h, pixel):
    raw = bytearray()
    for y in range(h):
        row = bytearray()
        for x in range(w):
            row.extend(pixel(x, y))
        raw.append(1)  # filter: sub (each byte minus the one a pixel left), small for gradients
        raw.extend((row[i] - (row[i - 3] if i >= 3 else 0)) & 255 for i in range(len(row)))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b""))

def scene(w, h):
    def pixel(x, y):
        r = int(255 * x / (w - 1))
        g = int(255 * y / (h - 1))
        b = int(127 + 100 * math.cos(y * 0.05))
        if (x - w * 0.3) ** 2 + (y - h * 0.4) ** 2 < (min(w, h) * 0.2) ** 2:
            r, g, b = 250, 240, 20  # a disc
        if w * 0.55 < x < w * 0.85 and h * 0.6 < y < h * 0.9:
            r, g, b = 10, 30, 200  # a box
        if (x // 8 + y // 8) % 2 == 0 and y < h // 6:
            r, g, b = 255 - r, 255 - g, 255 - b  # a checkered band
        return (r, g, b)
    return pixel

out = sys.argv[1]
png(f"{out}/wide-300x200.png", 300, 200, scene(300, 200))  # shrunk, letterboxed top and bottom
png(f"{out}/tall-90x130.png", 90, 130, scene(90, 130))     # enlarged, letterboxed left and right
