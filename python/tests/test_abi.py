"""The ctypes mirrors against the C headers: a C program compiled here prints
every struct's size, every field's offset and every enum constant, and each
must equal the mirror's (a field missed, added or mistyped changes an offset
or the size)."""
import ctypes
import os
import shutil
import subprocess

import pytest

from posenc import _abi

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include")
ENUM_PREFIXES = {
    "ISA": "POSENC_ISA_", "SINCOS_LAYOUT": "POSENC_SINCOS_",
    "INTERPOLATION": "POSENC_INTERPOLATION_", "ATTENTION_LAYOUT": "POSENC_LAYOUT_",
    "ATTENTION_BIAS": "POSENC_BIAS_", "INDEX_TYPE": "POSENC_INDEX_",
    "RELATIVE_ORDER": "POSENC_RELATIVE_", "POSITION_BIAS_KIND": "POSENC_POSITION_BIAS_",
    "ROPE_PAIRING": "POSENC_ROPE_", "ROPE_LAYOUT": "POSENC_ROPE_",
    "ROPE_SCALING": "POSENC_ROPE_SCALING_", "ROPE_POSITIONS": "POSENC_ROPE_POSITIONS_",
}


def expected_lines():
    """(C expression, value the mirror says) for every size, offset, enum."""
    for c_name, mirror in _abi.STRUCTS.items():
        yield f"sizeof({c_name})", ctypes.sizeof(mirror)
        for field, _ in mirror._fields_:
            yield f"offsetof({c_name}, {field})", getattr(mirror, field).offset
    for table, prefix in ENUM_PREFIXES.items():
        for name, value in getattr(_abi, table).items():
            yield prefix + name.upper(), value
    yield "POSENC_F32", _abi.F32
    yield "POSENC_BF16", _abi.BF16
    yield "POSENC_ERROR_UNSUPPORTED", _abi.UNSUPPORTED
    yield "POSENC_ROPE_MAX_ROTARY_DIM", _abi.ROPE_MAX_ROTARY_DIM
    yield "POSENC_MAX_THREADS", _abi.MAX_THREADS


def test_structs_and_enums_match_the_headers(tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler to read the headers with")
    lines = list(expected_lines())
    source = tmp_path / "layout.c"
    source.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <posenc/posenc.h>\n"
                      "int main(void) {\n" +
                      "".join(f'  printf("%lld\\n", (long long)({e}));\n' for e, _ in lines) +
                      "  return 0;\n}\n")
    program = tmp_path / "layout"
    subprocess.run([compiler, "-std=c99", "-I", INCLUDE, str(source), "-o", str(program)],
                   check=True)
    printed = subprocess.run([str(program)], check=True, capture_output=True,
                             text=True).stdout.split()
    mismatches = [f"{e}: C {c}, ctypes {value}" for (e, value), c in zip(lines, printed)
                  if int(c) != value]
    assert len(printed) == len(lines)
    assert not mismatches, "\n".join(mismatches)


def test_the_library_is_of_the_mirrors_version():
    """The package loads only a libposenc of the minor version its mirrors
    and its own version are of (0.5's and 0.6's RopeConfig have fields 0.4's and 0.5's lack)."""
    import posenc
    from posenc._lib import abi_mismatch, lib
    assert tuple(posenc.version().split(".")[:2]) == _abi.ABI_VERSION
    assert tuple(posenc.__version__.split(".")[:2]) == _abi.ABI_VERSION
    assert abi_mismatch(lib) is None

    class Older:
        @staticmethod
        def posenc_version():
            return b"0.4.0"

    assert abi_mismatch(Older()) == \
        f"version 0.4.0, where this package takes {'.'.join(_abi.ABI_VERSION)}.x"
    assert abi_mismatch(object()) == "no posenc_version: not libposenc"
