#!/usr/bin/env python3
"""check-blur.py <blur> <photo.png>

Checks examples/blur.c from outside, with a PNG reader and writer of its
own (zlib and numpy, no imaging library): it blurs the photo CI uses and
small images made here (gray, gray with alpha, RGBA, one row, a filter
larger than the image), decodes each PNG the example writes and compares
it with the same blur computed in numpy in double precision: each pixel's
taps inside the image over their weight (zero padding, renormalised), done
as two 1-D passes where the example does one 2-D convolution. Each 8-bit
value must be the reference rounded: within half a level, plus the float
error the example itself allows (255 (n^2 + 2) FLT_EPSILON for an n x n
filter). The output must have the input's size and channels, and for the
photo, less high-frequency energy. Bad arguments must fail with a message
and no output. Exits 77 (skipped) without numpy, or without the photo
outside CI (ci/deps.sh installs it).
"""
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
except ImportError:
    print("numpy is not importable: skipped")
    sys.exit(77)

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # PNG colour type: samples per pixel
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)


def read_png(path):
    """8-bit, non-interlaced gray, gray+alpha, RGB or RGBA: an h x w x c array."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"{path}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h, depth, ctype, _, _, interlace = header
    if depth != 8 or ctype not in CHANNELS or interlace:
        raise ValueError(f"{path}: depth {depth}, colour type {ctype}, interlace "
                         f"{interlace}: this reader takes 8-bit, 0/2/4/6, none")
    c = CHANNELS[ctype]
    raw = zlib.decompress(idat)
    stride = w * c
    out = np.zeros((h, stride), dtype=np.int64)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(h):
        kind = raw[y * (stride + 1)]
        row = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if kind == 2:
            row = (row + prev) & 255
        elif kind in (1, 3, 4):  # these depend on the row's own earlier bytes
            row = row.copy()
            for i in range(stride):
                a = row[i - c] if i >= c else 0
                b, d = prev[i], prev[i - c] if i >= c else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - d
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - d)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else d
                row[i] = (row[i] + pred) & 255
        elif kind != 0:
            raise ValueError(f"{path}: row {y} has filter {kind}")
        out[y], prev = row, row
    return out.reshape(h, w, c)


def write_png(path, pixels):
    h, w, c = pixels.shape
    ctype = {v: k for k, v in CHANNELS.items()}[c]
    rows = b"".join(b"\0" + pixels[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(
            ">IIBBBBB", w, h, 8, ctype, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def reference(pixels, sigma):
    """The renormalised Gaussian blur in double, one axis at a time."""
    h, w, c = pixels.shape
    r = math.ceil(3 * sigma)
    g = np.exp(-np.arange(-r, r + 1, dtype=np.float64) ** 2 / (2 * sigma * sigma))

    def blur(a):  # zero-padded, along both axes
        p = np.pad(a, ((r, r), (r, r)))
        rows = sum(g[i] * p[i:i + h, :] for i in range(2 * r + 1))
        return sum(g[j] * rows[:, j:j + w] for j in range(2 * r + 1))
    weight = blur(np.ones((h, w)))
    return np.stack([blur(pixels[:, :, k].astype(np.float64)) / weight
                     for k in range(c)], axis=2), 2 * r + 1


def run(blur, args):
    return subprocess.run([blur] + args, capture_output=True, text=True, timeout=240)


def blur_case(blur, tmp, name, src, sigma):
    out = os.path.join(tmp, name + "-blurred.png")
    p = run(blur, [src, out] + ([str(sigma)] if sigma is not None else []))
    print(p.stdout.strip())
    check(p.returncode == 0, f"{name}: exit {p.returncode} {p.stderr.strip()}")
    if p.returncode != 0:
        return
    before, after = read_png(src), read_png(out)
    check(after.shape == before.shape, f"{name}: shape {after.shape}, input's "
          f"{before.shape}")
    if after.shape != before.shape:
        return
    ref, n = reference(before, 2.0 if sigma is None else sigma)
    bound = 0.5 + 255 * (n * n + 2) * 2.0 ** -23
    worst = float(np.abs(after - ref).max())
    check(worst <= bound, f"{name}: largest difference from numpy's blur {worst:.4f} "
          f"levels (at most {bound:.4f})")
    return before, after


def energy(img):  # of the differences between neighbours
    a = img.astype(np.float64)
    return float((np.diff(a, axis=0) ** 2).sum() + (np.diff(a, axis=1) ** 2).sum())


def main():
    blur, photo = sys.argv[1], sys.argv[2]
    if not os.path.exists(photo):
        print(f"{photo} is missing (ci/deps.sh installs it)")
        sys.exit(1 if os.environ.get("CI") else 77)
    rng = np.random.default_rng(18)
    with tempfile.TemporaryDirectory() as tmp:
        pair = blur_case(blur, tmp, "photo", photo, None)
        if pair:
            e0, e1 = energy(pair[0]), energy(pair[1])
            check(e1 < 0.5 * e0, f"photo: neighbour-difference energy {e1:.3g}, "
                  f"input's {e0:.3g}")
        blur_case(blur, tmp, "photo-sigma-0.7", photo, 0.7)
        shapes = {"gray": (29, 41, 1), "gray-alpha": (17, 13, 2),
                  "rgba": (23, 37, 4), "one-row": (1, 50, 3), "tiny": (3, 5, 2)}
        for name, shape in shapes.items():
            src = os.path.join(tmp, name + ".png")
            pixels = rng.integers(0, 256, shape)
            if shape[2] in (2, 4):  # a hard-edged alpha, as a cut-out has
                pixels[:, : shape[1] // 2, -1] = 0
            write_png(src, pixels)
            blur_case(blur, tmp, name, src, 3.0 if name == "tiny" else 1.5)

        out = os.path.join(tmp, "none.png")
        for args, what in [([os.path.join(tmp, "missing.png"), out], "a missing input"),
                           ([photo, out, "0"], "sigma 0"),
                           ([photo, out, "16"], "sigma 16"),
                           ([photo], "no output path")]:
            p = run(blur, args)
            check(p.returncode != 0 and p.stderr.strip() != "" and not
                  os.path.exists(out), f"{what}: exit {p.returncode}, "
                  f"stderr {p.stderr.strip()!r}")
        p = run(blur, [photo, os.path.join(tmp, "no-such-dir", "out.png")])
        check(p.returncode != 0 and p.stderr.strip() != "",
              f"an unwritable output: exit {p.returncode}, stderr {p.stderr.strip()!r}")
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


main()
