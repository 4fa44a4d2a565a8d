"""npyfile — .npy files written and read with the standard library only, for
the tests that check kiln's command line against references computed in
Python (the format is small; numpy is not needed)."""
import ast
import struct

# descr -> (struct code, bytes)
CODES = {"<f2": ("e", 2), "<f4": ("f", 4), "<f8": ("d", 8), "<i4": ("i", 4),
         "<i8": ("q", 8)}
# complex descr -> the struct code of each of its two parts (real, imag)
COMPLEX = {"<c8": "f", "<c16": "d"}


def count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def fortran_order(shape, values):
    """The C-order values of an array of `shape`, in Fortran order."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= s
    out = []

    def walk(dim, base):
        if dim < 0:
            out.append(values[base])
            return
        for i in range(shape[dim]):
            walk(dim - 1, base + i * strides[dim])

    walk(len(shape) - 1, 0)
    return out


def _flat(values):
    """complex values as (re, im, re, im, ...)"""
    return [p for v in values for p in (complex(v).real, complex(v).imag)]


def _unflat(parts):
    return [complex(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]


def as_stored(values, descr):
    """values rounded as a file of type descr holds them."""
    if descr in COMPLEX:
        return _unflat(as_stored(_flat(values), "<f4" if descr == "<c8" else "<f8"))
    code, _ = CODES[descr]
    fmt = "<%d%s" % (len(values), code)
    return list(struct.unpack(fmt, struct.pack(fmt, *values)))


def save(path, shape, values, descr="<f4", fortran=False):
    """Writes values (C order) as an array of `shape` (a tuple, () for 0-d)."""
    shape = tuple(shape)
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %r, }" % (
        descr, "True" if fortran else "False", shape)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    if fortran:
        values = fortran_order(shape, values)
    if descr in COMPLEX:
        code, values = COMPLEX[descr], _flat(values)
    else:
        code, _ = CODES[descr]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def load(path):
    """Returns (descr, shape, values in C order) of a C-order file."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", "bad magic"
    hlen = struct.unpack("<H", data[8:10])[0]
    head = ast.literal_eval(data[10:10 + hlen].decode())
    assert not head["fortran_order"], "kiln writes C order"
    descr, shape = head["descr"], tuple(head["shape"])
    if descr in COMPLEX:
        vals = struct.unpack("<%d%s" % (2 * count(shape), COMPLEX[descr]),
                             data[10 + hlen:])
        return descr, shape, _unflat(vals)
    code, _ = CODES[descr]
    vals = struct.unpack("<%d%s" % (count(shape), code), data[10 + hlen:])
    return descr, shape, list(vals)
