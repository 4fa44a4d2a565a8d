"""Elementwise expressions (kiln_elementwise) the way CuPy's ElementwiseKernel
is used: the operands are given by name, their declaration is read from
what they are, and the kernel is built once per combination of types.

    y = rt.elementwise("y = a * x + b", x=x, a=2.0, b=1.0)
    saxpy = rt.elementwise_kernel("y = a * x + y")   # reusable
    saxpy(x=x, y=y, a=np.float32(3))                  # y updated in place

The names assigned in the expression are its outputs; one not given is
allocated with the inputs' shape and numpy's result type of the input
arrays. Arrays are numpy or device arrays: with a device array among them
the outputs are device arrays (numpy inputs are copied to the device), else
numpy arrays. Scalars broadcast: a Python float goes as a float (a double
beside float64 arrays), a Python int as an int (a long beside int64 arrays
or when it does not fit), a numpy scalar as its own type.
"""
import re

import numpy as np

from ._kiln import DeviceArray, InvalidArgumentError, InvalidDtypeError

# numpy's dtypes as kiln_elementwise declares buffers of them.
_BUFFER_TYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long",
    np.dtype(np.float16): "half",
    np.dtype(np.complex64): "float2",
    np.dtype(np.complex128): "double2",
}
# numpy scalars' types as kiln_elementwise declares scalars of them.
_SCALAR_TYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float16): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "uint",
    np.dtype(np.int64): "long",
    np.dtype(np.uint64): "ulong",
    np.dtype(np.bool_): "int",
}
_INTEGER = {"int", "uint", "long", "ulong"}

# A statement's target: `name =`, `name[...] =` or `name op=` (not `==`),
# at the start, after ; { } or an if's condition, or after else.
_ASSIGNED = re.compile(
    r"(?:^|[;{})]|\belse\b)\s*([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:<<|>>|[-+*/%&|^])?=(?!=)")


def _outputs(expr):
    names = []
    for m in _ASSIGNED.finditer(expr):
        if m.group(1) not in names:
            names.append(m.group(1))
    if not names:
        raise InvalidArgumentError(
            "elementwise: '%s' assigns to no name; expected an expression such as "
            "'y = a * x + b', whose outputs are the names it assigns" % expr)
    return names


def _scalar_type(name, v, wide_float, wide_int):
    if isinstance(v, np.generic):
        t = _SCALAR_TYPES.get(np.asarray(v).dtype)
        if t is None:
            raise InvalidDtypeError(
                "elementwise: scalar %s is numpy's %s; kiln's scalars are float32, "
                "float64, int32, uint32, int64 and uint64" % (name, np.asarray(v).dtype))
        return t
    if isinstance(v, bool):
        return "int"
    if isinstance(v, int):
        if not wide_int and -2**31 <= v < 2**31:
            return "int"
        return "long" if -2**63 <= v < 2**63 else "ulong"
    if isinstance(v, float):
        return "double" if wide_float else "float"
    raise TypeError("elementwise: operand %s is a %s; expected a numpy or device array, "
                    "a Python int or float, or a numpy scalar" % (name, type(v).__name__))


class ElementwiseKernel:
    """ElementwiseKernel(runtime, expr): an expression over named operands
    (kiln_elementwise); call it with the operands by name. Each combination
    of operand types builds one kernel, kept for the next call."""

    def __init__(self, runtime, expr):
        if not isinstance(expr, str):
            raise TypeError("elementwise: expr must be a str")
        self.runtime = runtime
        self.expr = expr
        self.outputs = _outputs(expr)
        self._built = {}

    def __repr__(self):
        return "kiln.ElementwiseKernel(%r)" % self.expr

    def _kernel(self, decl):
        k = self._built.get(decl)
        if k is None:
            k = self.runtime._elementwise(decl, self.expr)
            self._built[decl] = k
        return k

    def __call__(self, **operands):
        rt = self.runtime
        arrays = {k: v for k, v in operands.items()
                  if isinstance(v, DeviceArray) or
                  isinstance(v, (np.ndarray, list, tuple))}
        if not arrays:
            raise InvalidArgumentError(
                "elementwise: no array among the operands %s; expected at least one "
                "numpy or device array" % sorted(operands))
        on_device = any(isinstance(v, DeviceArray) for v in arrays.values())
        host = {k: np.asarray(v) for k, v in arrays.items() if not isinstance(v, DeviceArray)}
        dtypes = {k: (v.dtype if isinstance(v, DeviceArray) else host[k].dtype)
                  for k, v in arrays.items()}
        shapes = {k: tuple(v.shape) for k, v in arrays.items()}
        inputs = [k for k in arrays if k not in self.outputs]
        indexed = "[" in self.expr
        if not indexed and len(set(shapes.values())) > 1:
            raise InvalidArgumentError(
                "elementwise: the arrays have different shapes (%s); expected one shape "
                "(scalars broadcast)" %
                ", ".join("%s %s" % (k, s) for k, s in shapes.items()))
        ref = inputs[0] if inputs else next(iter(arrays))
        shape = shapes[ref]
        # Outputs not given: numpy's result type of the input arrays.
        missing = [o for o in self.outputs if o not in operands]
        if missing:
            if not inputs:
                raise InvalidArgumentError(
                    "elementwise: output %s is not given and no input array gives its "
                    "shape" % missing[0])
            out_dtype = np.result_type(*[dtypes[k] for k in inputs])
        for o in self.outputs:
            if o in operands and o not in arrays:
                raise InvalidArgumentError(
                    "elementwise: output %s must be an array, as the expression assigns "
                    "it; got a %s" % (o, type(operands[o]).__name__))
        order = list(self.outputs) + [k for k in operands if k not in self.outputs]
        all_dtypes = list(dtypes.values()) + ([out_dtype] if missing else [])
        wide_float = any(d in (np.float64, np.complex128) for d in all_dtypes)
        wide_int = any(d == np.int64 for d in all_dtypes)
        decl, values, dev = [], [], {}
        for name in order:
            if name in missing:
                d = out_dtype
            elif name in arrays:
                d = dtypes[name]
            else:
                t = _scalar_type(name, operands[name], wide_float, wide_int)
                v = operands[name]
                decl.append("%s %s" % (t, name))
                values.append(int(v) if t in _INTEGER else float(v))
                continue
            t = _BUFFER_TYPES.get(np.dtype(d))
            if t is None:
                raise InvalidDtypeError(
                    "elementwise: %s is numpy's %s; kiln_elementwise takes arrays of "
                    "float16, float32, float64, complex64, complex128, int32 and int64 "
                    "(convert with astype first)" % (name, np.dtype(d)))
            const = "" if name in self.outputs else "const "
            decl.append("%s%s *%s" % (const, t, name))
            if name in missing:
                dev[name] = rt._empty(shape, d)  # no host copy
            elif isinstance(arrays[name], DeviceArray):
                dev[name] = arrays[name]
            else:
                dev[name] = rt.array(host[name])
            values.append(dev[name])
        n = int(np.prod(shapes[self.outputs[0]] if self.outputs[0] in shapes else shape,
                        dtype=np.int64))
        self._kernel(", ".join(decl)).run(n, tuple(values))
        result = []
        for o in self.outputs:
            given = operands.get(o)
            if isinstance(given, DeviceArray):
                result.append(given)
            elif on_device and o in missing:
                result.append(dev[o])
            elif isinstance(given, np.ndarray):
                given[...] = dev[o].numpy()  # written into the caller's array
                result.append(given)
            else:
                result.append(dev[o].numpy())
        return result[0] if len(result) == 1 else tuple(result)


def elementwise(self, expr, **operands):
    """elementwise(expr, **operands): runs the expression once (see
    kiln.ElementwiseKernel); for repeated calls keep
    rt.elementwise_kernel(expr), which builds each kernel once."""
    return ElementwiseKernel(self, expr)(**operands)


def elementwise_kernel(self, expr):
    """elementwise_kernel(expr) -> ElementwiseKernel: reusable across calls."""
    return ElementwiseKernel(self, expr)
