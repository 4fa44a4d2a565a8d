#!/usr/bin/env python3
"""Writes the seed corpora of kiln's fuzz harnesses into tests/fuzz/corpus/.

The files are committed; run this again only to change them. Each harness's
input format is described at the top of its tests/fuzz/fuzz-<area>.c. The
cache seeds need XXH3-64, taken from Debian's libxxhash0 through ctypes.

    python3 tests/fuzz/make-corpus.py
"""
import ctypes
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def write(harness, name, data):
    folder = os.path.join(OUT, harness)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# ---- .npy files -------------------------------------------------------------

def npy(descr, shape, fortran=False, version=(1, 0), data=None, quote="'",
        order=("descr", "fortran_order", "shape"), pad=True):
    q = quote
    dims = ", ".join(str(d) for d in shape)
    if len(shape) == 1:
        dims += ","
    fields = {
        "descr": f"{q}descr{q}: {q}{descr}{q}",
        "fortran_order": f"{q}fortran_order{q}: {fortran}",
        "shape": f"{q}shape{q}: ({dims})",
    }
    header = "{" + ", ".join(fields[k] for k in order) + ", }"
    lenbytes = 2 if version[0] == 1 else 4
    if pad:
        total = 6 + 2 + lenbytes + len(header) + 1
        header += " " * ((64 - total % 64) % 64)
    header += "\n"
    h = header.encode("utf-8")
    pre = b"\x93NUMPY" + bytes(version)
    pre += struct.pack("<H" if lenbytes == 2 else "<I", len(h))
    if data is None:
        count = 1
        for d in shape:
            count *= d
        size = int("".join(c for c in descr if c.isdigit()))
        data = bytes((i * 7 + 3) & 0xFF for i in range(count * size))
    return pre + h + data


def npy_corpus():
    write("npy", "f4-c-2x3.npy", npy("<f4", (2, 3)))
    write("npy", "f8-fortran-3x2.npy", npy("<f8", (3, 2), fortran=True))
    write("npy", "f2-fortran-2x3x2.npy", npy("<f2", (2, 3, 2), fortran=True))
    write("npy", "c8-1d.npy", npy("<c8", (4,)))
    write("npy", "c16-2x2.npy", npy("<c16", (2, 2)))
    write("npy", "i4-scalar.npy", npy("<i4", ()))
    write("npy", "i8-empty-0x3.npy", npy("<i8", (0, 3)))
    write("npy", "f4-v2.npy", npy("<f4", (3,), version=(2, 0)))
    write("npy", "f4-v3-fortran.npy", npy("<f4", (2, 2), fortran=True, version=(3, 0)))
    write("npy", "f4-pipe-double-quotes.npy", npy("|f4", (2,), quote='"'))
    write("npy", "f8-no-order-mark.npy", npy("f8", (1, 1, 1)))
    write("npy", "f4-keys-reversed.npy",
          npy("<f4", (2, 1), order=("shape", "fortran_order", "descr")))
    write("npy", "f4-no-padding.npy", npy("<f4", (1,), pad=False))
    write("npy", "f4-8d.npy", npy("<f4", (1, 2, 1, 2, 1, 1, 2, 1), fortran=True))
    write("npy", "big-endian.npy", npy(">f4", (2,)))
    write("npy", "truncated.npy", npy("<f8", (4,))[:-5])
    # the dict alone, for the header parser's direct run
    write("npy", "dict-only.txt", b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")


# ---- selectors --------------------------------------------------------------

def select_corpus():
    seeds = {
        "gpu-cpu": (0x1F, "gpu,cpu", "0", "512M"),
        "pd": (0x1F, "1:0, 0:0", "0:0", "1.5G"),
        "vendor": (0x1F, "nvidia,pocl,oclgrind", "pocl", "50%"),
        "name": (0x1F, "name=GeForce", "name=rtx", "4096"),
        "index": (0x0F, "3,1", "1", "2TiB"),
        "simulator": (0x08, "oclgrind", "accelerator", "100%"),
        "unusable": (0x02, "nvidia", "0", "0.5k"),
        "none": (0x00, "gpu", "cpu", "1 G"),
        "bad": (0x1F, "gpu,,", "intel:3", "-5"),
        "spaces": (0x15, "  intel , cpu ", " 2 ", "8kb"),
    }
    for name, (which, mask, selector, size) in seeds.items():
        text = "\n".join((mask, selector, size)).encode()
        write("select", name, bytes([which]) + text)


# ---- cache entries ----------------------------------------------------------

KEY = b"kiln fuzz key 16"  # fuzz-cache.c's key


def xxh3_64(data):
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def entry(payload, key=KEY, version=1, length=None, checksum=None):
    return (b"KILNBIN\n" + struct.pack("<II", version, 0) + key +
            struct.pack("<QQ", len(payload) if length is None else length,
                        xxh3_64(payload) if checksum is None else checksum) +
            payload)


def cache_corpus():
    binary = bytes(range(256)) * 2
    write("cache", "valid.bin", entry(b"\x7fELF program binary"))
    write("cache", "valid-512.bin", entry(binary))
    write("cache", "other-key.bin", entry(binary, key=b"another key 16 b"))
    write("cache", "version-2.bin", entry(binary, version=2))
    write("cache", "length-lies.bin", entry(binary, length=1 << 40))
    write("cache", "bad-checksum.bin", entry(binary, checksum=0))
    write("cache", "truncated.bin", entry(binary)[:100])
    write("cache", "header-only.bin", entry(b"")[:48])


# ---- operation descriptors --------------------------------------------------

def size(v):
    """fuzz.h's coding of a size."""
    if v < 0xE0:
        return bytes([v])
    if v < 1 << 16:
        return b"\xe0" + struct.pack("<H", v)
    if v < 1 << 32:
        return b"\xf0" + struct.pack("<I", v)
    return b"\xf8" + struct.pack("<Q", v)


def pow2(k, less_one=False):
    """fuzz.h's short coding of 2^k (less 1): sizes near where products
    overflow, for the mutator to move about."""
    return bytes([0xFF, k | (64 if less_one else 0)])


def sizes(*vs):
    return b"".join(size(v) for v in vs)


def buffers(*counts):
    """Buffers as wanted (how 0), of the given counts."""
    return b"".join(b"\x00" + size(c) for c in counts)


F16, F32, F64, C32, C64, I32, I64 = range(1, 8)
FP64_CPU, GPU_FP16 = 0x5, 0x2


def desc_corpus():
    # gemm: dtype layout ta tb m n k lda ldb ldc offa offb offc batch
    #       stra strb strc backend, alpha, beta (indices), buffers a b c
    gemm = lambda dev, fields, alpha, beta, bufs: (
        bytes([0, dev]) + size(0) + sizes(*fields) + bytes([alpha, beta]) + bufs)
    write("desc", "gemm-f32", gemm(FP64_CPU, (F32, 0, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0,
                                              1, 0, 0, 0, 0), 1, 0,
                                   buffers(24, 30, 20)))
    write("desc", "gemm-f64-colmajor-trans-batch",
          gemm(FP64_CPU, (F64, 1, 1, 1, 3, 2, 4, 5, 3, 4, 1, 0, 2, 3, 0, 0, 0, 1),
               3, 1, buffers(100, 100, 100)))
    write("desc", "gemm-f16-clblast", gemm(GPU_FP16, (F16, 0, 0, 1, 8, 8, 8, 0, 0, 0,
                                                      0, 0, 0, 2, 0, 0, 0, 2), 5, 0,
                                           buffers(128, 128, 128)))
    write("desc", "gemm-too-small", gemm(0, (F32, 0, 0, 0, 4, 4, 4, 0, 0, 0, 0, 0, 0,
                                             1, 0, 0, 0, 0), 1, 0, buffers(16, 16, 15)))
    # reduce (ops from 1, KILN_REDUCE_SUM): op dtype ndim shape[8] axis offset backend, buffers in out
    reduce = lambda dev, fields, bufs: bytes([1, dev]) + size(0) + sizes(*fields) + bufs
    write("desc", "reduce-sum-all", reduce(FP64_CPU, (1, F32, 1, 10, 0, 0, 0, 0, 0, 0, 0,
                                                      0xDF, 0, 0), buffers(10, 1)))
    write("desc", "reduce-argmax-axis", reduce(FP64_CPU, (6, F64, 3, 2, 3, 4, 0, 0, 0, 0,
                                                          0, 1, 2, 1), buffers(26, 8)))
    write("desc", "reduce-mean-last", reduce(FP64_CPU, (2, I32, 2, 3, 5, 0, 0, 0, 0, 0, 0, 15, 0,
                                                 0), buffers(15, 3)))
    write("desc", "reduce-norm-clblast", reduce(FP64_CPU, (7, F32, 1, 64, 0, 0, 0, 0, 0,
                                                           0, 0, 0xDF, 0, 2),
                                                buffers(64, 1)))
    write("desc", "reduce-empty", reduce(0, (1, F32, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                                         buffers(0, 4)))
    write("desc", "reduce-huge-view",
          bytes([1, FP64_CPU]) + size(0) + sizes(1, F32, 2) + pow2(40) + pow2(20) +
          sizes(0, 0, 0, 0, 0, 0, 0, 0, 0) + b"\x00" + pow2(20) + b"\x00" + pow2(20))
    # conv: dtype layout n c h w k r s sh sw pt pb pl pr dh dw groups, relu byte,
    #       backend, buffers x w bias y
    conv = lambda dev, fields, relu, backend, bufs: (
        bytes([2, dev]) + size(0) + sizes(*fields) + bytes([relu]) + size(backend) + bufs)
    write("desc", "conv-nchw", conv(FP64_CPU, (F32, 0, 1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1), 0, 0,
                                    buffers(192, 108, 4, 256)))
    write("desc", "conv-nhwc-strided-dilated",
          conv(FP64_CPU, (F64, 1, 2, 4, 9, 7, 4, 3, 2, 2, 1, 0, 2, 1, 0, 2, 1, 2), 1, 3,
               buffers(504, 48, 4, 224)))
    write("desc", "conv-depthwise", conv(0, (F16, 0, 1, 8, 5, 5, 8, 3, 3, 0, 0, 1, 1, 1,
                                             1, 0, 0, 8), 0, 4,
                                         b"\x00" + size(200) + b"\x00" + size(72) +
                                         b"\x01\x00" + b"\x00" + size(200)))
    write("desc", "conv-huge-dilation",
          bytes([2, FP64_CPU]) + size(0) + sizes(F32, 0, 1, 1, 64, 64, 1, 2, 2, 1, 1) +
          pow2(40) + sizes(0, 1, 1) + pow2(40) + sizes(1, 1) + b"\x00" + size(0) +
          buffers(4096, 4, 0) + b"\x00" + pow2(20))
    # fft: kind dtype ndim shape[3] batch, inverse byte, norm backend, buffers in out
    fft = lambda dev, fields, inverse, tail, bufs: (
        bytes([3, dev]) + size(0) + sizes(*fields) + bytes([inverse]) + sizes(*tail) +
        bufs)
    write("desc", "fft-c2c-pow2", fft(FP64_CPU, (0, F32, 1, 1024, 0, 0, 2), 0, (0, 0),
                                      buffers(2048, 2048)))
    write("desc", "fft-r2c-2d", fft(FP64_CPU, (1, F64, 2, 6, 10, 0, 1), 0, (1, 0),
                                    buffers(60, 36)))
    write("desc", "fft-c2r-3d", fft(0, (2, F32, 3, 4, 3, 5, 2), 1, (2, 6),
                                    buffers(72, 120)))
    write("desc", "fft-huge-batch", fft(0, (0, F32, 2, 1 << 20, 1 << 20, 0, 0), 0, (0, 0),
                                        b"\x00" + pow2(40) + b"\x00" + pow2(40)))
    write("desc", "gemm-huge-ld",
          bytes([0, FP64_CPU]) + size(0) + sizes(F32, 0, 0, 0, 2, 2, 2) + pow2(40) +
          sizes(0, 0, 0, 0, 0, 2) + pow2(41) + sizes(0, 0, 0) + bytes([1, 0]) +
          b"\x00" + pow2(42) + buffers(4, 8))
    write("desc", "fft-same-buffer", fft(0, (0, F32, 1, 8, 0, 0, 1), 1, (0, 0),
                                         b"\x00" + size(8) + b"\x04\x00"))


if __name__ == "__main__":
    for harness in ("npy", "select", "cache", "desc"):
        shutil.rmtree(os.path.join(OUT, harness), ignore_errors=True)
    npy_corpus()
    select_corpus()
    cache_corpus()
    desc_corpus()
