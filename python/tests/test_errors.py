"""Errors: posenc's refusals raise posenc.Error with its status and message;
what only the package can see (shapes between tensors, dtypes, outputs)
raises ValueError or TypeError naming the argument; nothing is written.
Non-contiguous inputs give the results of their contiguous copies."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import posenc


def test_library_errors_carry_status_and_message():
    with pytest.raises(posenc.Error) as error:
        posenc.sinusoid_table(4, 8, base=1.0)
    assert error.value.status == 2 and error.value.status_name == "invalid argument"
    assert "base" in str(error.value)
    with pytest.raises(posenc.Error, match="num_buckets") as error:
        posenc.attention(*(torch.randn(1, 1, 6, 4),) * 3, bias="t5", bidirectional=True,
                         table=torch.randn(2, 1))
    assert error.value.status == 2


def test_nothing_written_on_error():
    out = torch.full((1, 1, 6, 4), 7.0)
    q = torch.randn(1, 1, 6, 4)
    with pytest.raises(posenc.Error):
        posenc.attention(q, q, q, scale=float("nan"), out=out)
    assert bool((out == 7.0).all())


def test_package_checks_name_the_argument():
    q = torch.randn(1, 2, 5, 8)
    with pytest.raises(ValueError, match="table: expected 8 columns"):
        posenc.absolute_logits(q, torch.randn(5, 6))
    with pytest.raises(TypeError, match="q: expected float32, got torch.bfloat16"):
        posenc.absolute_logits(q.bfloat16(), torch.randn(5, 8))
    with pytest.raises(ValueError, match=r"out: expected shape \[1, 2, 5, 5\]"):
        posenc.absolute_logits(q, torch.randn(5, 8), out=torch.empty(1, 2, 5, 4))
    with pytest.raises(ValueError, match="out: must be dense"):
        posenc.absolute_logits(q, torch.randn(5, 8), out=torch.empty(1, 2, 5, 10)[..., ::2])
    with pytest.raises(ValueError, match="v: expected shape"):
        posenc.attention(q, q, q[:, :, :4])
    with pytest.raises(TypeError, match="x: expected a torch tensor or a numpy array"):
        posenc.rel_to_abs([[1.0]])
    with pytest.raises(ValueError, match="layout"):
        posenc.sinusoid_table(4, 8, layout="diagonal")


def test_a_dtype_the_result_cannot_have_is_refused_not_ignored():
    """Slopes and position biases are float32; a table given out is of
    out's dtype."""
    out = torch.full((3, 4), 7.0)
    refusals = [
        ("dtype: the result is float32", lambda: posenc.alibi_slopes(4, dtype=torch.bfloat16)),
        ("dtype: the result is float32", lambda: posenc.alibi_slopes(4, dtype="bfloat16")),
        ("dtype: the result is float32", lambda: posenc.position_bias(
            "alibi", heads=2, q_len=3, kv_len=3, bidirectional=True, dtype=torch.bfloat16)),
        ("dtype: torch.bfloat16 is not out's", lambda: posenc.sinusoid_table(
            3, 4, dtype=torch.bfloat16, out=out)),
    ]
    for message, call in refusals:
        with pytest.raises(TypeError, match=message):
            call()
    assert torch.equal(out, torch.full((3, 4), 7.0))
    assert posenc.sinusoid_table(3, 4, dtype=torch.float32, out=out) is out



def test_attention_options_are_checked_when_given():
    # A call without a bias, mask or lengths skips their fields: each option
    # given alone must still reach its check.
    q = torch.randn(2, 2, 6, 4)
    out = torch.full((2, 2, 6, 4), 7.0)
    refusals = [
        (ValueError, "bias: say 'absolute' or 'relative_1d'", dict(table=torch.randn(11, 4))),
        (ValueError, "window, class_token.*not of 'none'", dict(window=(2, 3))),
        (ValueError, "window, class_token.*not of 'none'", dict(class_token=True)),
        (ValueError, "window, class_token.*not of 'none'", dict(num_buckets=8)),
        (ValueError, "window, class_token.*not of 'none'", dict(bidirectional=False)),
        (ValueError, "relative_order, kv_map_size", dict(relative_order="query_minus_key")),
        (ValueError, "relative_order, kv_map_size", dict(kv_map_size=(2, 3))),
        (ValueError, "map_size, relative_order", dict(map_size=(2, 3))),
        (ValueError, "map_size, relative_order",
         dict(bias="relative_1d", table=torch.randn(11, 4), map_size=(2, 3))),
        # Sizes that would make the tables' expected shapes negative.
        (ValueError, "max_distance: must be >= 0, got -3",
         dict(bias="relative_1d", table=torch.randn(7, 4), max_distance=-3)),
        (ValueError, "max_distance: must be >= 0, got -3",
         dict(value_table=torch.randn(7, 4), max_distance=-3)),
        (ValueError, r"window: sizes must be >= 1, got \(0, 6\)",
         dict(bias="table_2d", table=torch.randn(11, 2), window=(0, 6))),
        (ValueError, "window: 2 x 2 is 4 tokens, but q's and k's tokens are 6 and 6",
         dict(bias="table_2d", table=torch.randn(9, 2), window=(2, 2))),
        (ValueError, "window: 1 x 6 plus the class token is 7 tokens, but q's and k's tokens are 6",
         dict(bias="table_2d", table=torch.randn(14, 2), window=(1, 6), class_token=True)),
        (ValueError, r"map_size: sizes must be >= 1, got \(-2, -3\)",
         dict(table_h=torch.randn(3, 4), table_w=torch.randn(5, 4), map_size=(-2, -3))),
        (ValueError, "bias: 'rope' is not one of", dict(bias="rope")),
        (ValueError, "table_h, table_w: the relative_2d bias takes both",
         dict(table_w=torch.randn(5, 4))),
        (ValueError, "table_h, table_w: the relative_2d bias takes both",
         dict(bias="relative_2d", table_h=torch.randn(3, 4), map_size=(2, 3))),
        (ValueError, "table_h, table_w: tables of bias 'relative_2d', not 't5'",
         dict(bias="t5", bidirectional=True, table=torch.randn(32, 2),
              table_h=torch.randn(2, 3, 4))),
        (ValueError, "table_h, table_w: tables of bias 'relative_2d', not 'relative_1d'",
         dict(bias="relative_1d", table=torch.randn(11, 4), table_w=torch.randn(5, 4))),
        # Maps against q's and k's 6 tokens, named as given.
        (ValueError, r"table_h, table_w \(their rows imply map_size\): a 3 x 3 map, but q has 6",
         dict(table_h=torch.randn(5, 4), table_w=torch.randn(5, 4))),
        (ValueError, "map_size: a 3 x 3 map, but q has 6 tokens",
         dict(table_h=torch.randn(5, 4), table_w=torch.randn(5, 4), map_size=(3, 3))),
        (ValueError, "kv_map_size: a 1 x 5 map, but k has 6 tokens",
         dict(table_h=torch.randn(3, 4), table_w=torch.randn(9, 4), map_size=(2, 3),
              kv_map_size=(1, 5))),
        # Shaw's values are by 1D distance: with a 2D or bucketed bias the
        # package names value_table, not the library's desc field.
        (ValueError, "value_table: goes with bias 'none', 'absolute' or 'relative_1d', not "
         "'relative_2d'", dict(table_h=torch.randn(3, 4), table_w=torch.randn(5, 4),
                               value_table=torch.randn(11, 4))),
        (ValueError, "value_table: .*not 't5'",
         dict(bias="t5", bidirectional=True, table=torch.randn(32, 2),
              value_table=torch.randn(11, 4))),
        (ValueError, "value_table: .*not 'alibi'",
         dict(bias="alibi", bidirectional=False, value_table=torch.randn(11, 4))),
        (ValueError, "value_table: .*not 'table_1d'",
         dict(bias="table_1d", table=torch.randn(11, 2), value_table=torch.randn(11, 4))),
        (ValueError, "value_table: .*not 'table_2d'",
         dict(bias="table_2d", window=(2, 3), table=torch.randn(15, 2),
              value_table=torch.randn(11, 4))),
        (TypeError, "table_h: must have q's dtype",
         dict(table_h=torch.randn(3, 4).bfloat16(), table_w=torch.randn(5, 4))),
        (ValueError, r"mask: expected \[m, 1 or 2, 1 or 6, 1 or 6\].*got \[1, 1, 6, 5\]",
         dict(mask=torch.zeros(1, 1, 6, 5))),
        (TypeError, "mask: expected float32, bfloat16 or bool, got torch.int32",
         dict(mask=torch.zeros(1, 1, 6, 6, dtype=torch.int32))),
        (TypeError, "mask: expected float32, bfloat16 or bool, got float64",
         dict(mask=np.zeros((6, 6)))),
        (ValueError, "mask: expected 1 to 4 dimensions, got 5",
         dict(mask=torch.zeros(1, 1, 1, 6, 6))),
        (ValueError, "mask: expected 1 to 4 dimensions, got 0",
         dict(mask=np.zeros((), np.float32))),
        # Expanded axes (stride 0, read as one) of sizes torch would refuse.
        (ValueError, r"mask: expected \[m, 1 or 2, 1 or 6, 1 or 6\].*got \[2, 3, 6, 6\]",
         dict(mask=torch.zeros(2, 1, 6, 6).expand(2, 3, 6, 6))),
        (ValueError, r"mask: expected \[m, 1 or 2, 1 or 6, 1 or 6\].*got \[3, 1, 6, 6\]",
         dict(mask=torch.zeros(1, 1, 6, 6).expand(3, 1, 6, 6))),
        (ValueError, r"mask: expected \[m, 1 or 2, 1 or 6, 1 or 6\].*got \[1, 4, 6\]",
         dict(mask=np.broadcast_to(np.zeros((1, 1, 6), np.float32), (1, 4, 6)))),
        (ValueError, "scale: 1e[+]?39 is outside float32's range", dict(scale=1e39)),
        (ValueError, "scale: 3.40282357e[+]?38 is outside", dict(scale=3.40282357e38)),
        (ValueError, r"kv_lengths: expected shape \[2\]",
         dict(kv_lengths=torch.tensor([6], dtype=torch.int32))),
        (TypeError, "all int32 or all int64",
         dict(kv_lengths=torch.tensor([6, 6], dtype=torch.int32),
              q_lengths=torch.tensor([6, 6], dtype=torch.int64))),
    ]
    for error, message, options in refusals:
        with pytest.raises(error, match=message):
            posenc.attention(q, q, q, out=out, **options)
    k = torch.randn(2, 2, 12, 4)
    with pytest.raises(ValueError, match=r"^map_size and kv_map_size: needed for k, whose "
                       r"tokens \(12\) are not the 2 x 3 query map"):
        posenc.attention(q, k, k, table_h=torch.randn(3, 4), table_w=torch.randn(5, 4), out=out)
    with pytest.raises(ValueError, match=r"^kv_map_size: needed for k"):
        posenc.attention(q, k, k, table_h=torch.randn(3, 4), table_w=torch.randn(5, 4),
                         map_size=(2, 3), out=out)
    assert bool((out == 7.0).all())

def test_relative_logits_2d_maps_errors():
    q, rh, rw = torch.randn(1, 2, 6, 4), torch.randn(7, 4), torch.randn(11, 4)
    with pytest.raises(ValueError, match="row_table: 7 rows"):
        posenc.relative_logits_2d_maps(q, rh[:5], rw, (2, 3), (4, 6))
    with pytest.raises(ValueError, match="q: 6 tokens"):
        posenc.relative_logits_2d_maps(q, rh, rw, (2, 4), (4, 6))
    with pytest.raises(ValueError, match="relative_order"):
        posenc.relative_logits_2d_maps(q, rh, rw, (2, 3), (4, 6), relative_order="sideways")
    with pytest.raises(ValueError, match=r"kv_map_size: sizes must be >= 1, got \(0, 6\)"):
        posenc.relative_logits_2d_maps(q, torch.randn(3, 4), rw, (2, 3), (0, 6))


def test_tables_are_checked_against_the_sizes_posenc_reads():
    """The C ABI reads a table by the sizes the other arguments imply: a
    table of other rows, columns or heads is refused before the call
    (a longer one would be read off-centre, a shorter one past its end)."""
    q = torch.randn(1, 2, 6, 4)  # 6 tokens: a 2 x 3 map, or T = 6
    out = torch.full((1, 2, 6, 4), 7.0)
    refusals = [
        (r"table: expected 11 rows \(query_offset \+ queries \+ keys - 1\), got 12",
         lambda: posenc.relative_logits_1d(q, torch.randn(12, 4), keys=6)),
        (r"table: expected 5 rows \(2 clip \+ 1\), got 7",
         lambda: posenc.relative_logits_1d(q, torch.randn(7, 4), keys=6, clip=2)),
        ("table: 4 rows, fewer than", lambda: posenc.relative_logits_1d(q, torch.randn(4, 4))),
        ("keys: must be >= 0, got -1",
         lambda: posenc.relative_logits_1d(q, torch.randn(5, 4), keys=-1, clip=2, out=out)),
        ("row_table: expected 2.2-1 = 3 rows, got 5", lambda: posenc.relative_logits_2d(
            q, torch.randn(5, 4), torch.randn(5, 4), 2, 3)),
        ("column_table: expected 2.3-1 = 5 rows, got 3",
         lambda: posenc.relative_logits_2d_decomposed(q, torch.randn(3, 4), torch.randn(3, 4),
                                                      2, 3)),
        (r"table: expected \[6, 4\] or \[2, 6, 4\] \(kv_len\)",
         lambda: posenc.attention(q, q, q, bias="absolute", table=torch.randn(7, 4), out=out)),
        (r"table: expected \[5, 4\].*\(2 max_distance \+ 1\), got \[7, 4\]",
         lambda: posenc.attention(q, q, q, bias="relative_1d", max_distance=2,
                                  table=torch.randn(7, 4), out=out)),
        (r"table: expected \[13, 4\].*\(max\(query offset, 0\) \+ q_len \+ kv_len - 1\)",
         lambda: posenc.attention(q, q, q, bias="relative_1d", query_offset=2,
                                  table=torch.randn(11, 4), out=out)),
        (r"table: expected \[14, 4\]", lambda: posenc.attention(
            q, q, q, bias="relative_1d", table=torch.randn(11, 4), out=out,
            query_offsets=torch.tensor([3], dtype=torch.int32))),
        (r"value_table: expected \[11, 4\]", lambda: posenc.attention(
            q, q, q, bias="relative_1d", table=torch.randn(11, 4),
            value_table=torch.randn(11, 3), out=out)),
        (r"table_w: expected \[5, 4\] or \[2, 5, 4\].*got \[3, 5, 4\]",
         lambda: posenc.attention(q, q, q, table_h=torch.randn(2, 3, 4),
                                  table_w=torch.randn(3, 5, 4), map_size=(2, 3), out=out)),
        (r"table_h: expected \[3, 4\]", lambda: posenc.attention(
            q, q, q, table_h=torch.randn(3, 3),
            table_w=torch.randn(5, 4), out=out)),
        ("table_h, table_w: all shared", lambda: posenc.attention(
            q, q, q, table_h=torch.randn(3, 4), table_w=torch.randn(2, 5, 4), out=out)),
    ]
    for message, call in refusals:
        with pytest.raises(ValueError, match=message):
            call()
    assert bool((out == 7.0).all())
    fmap, w = torch.randn(1, 8, 2, 3), torch.randn(2 * 3 * 4, 8)
    for message, rel_h, rel_w in (
            (r"rel_h: expected \[3, 4\]", torch.randn(5, 4), torch.randn(5, 4)),
            (r"rel_w: expected \[5, 4\]", torch.randn(3, 4), torch.randn(5, 6)),
            (r"rel_w: expected \[5, 4\] or \[2, 5, 4\]", torch.randn(2, 3, 4),
             torch.randn(4, 5, 4)),
            ("rel_w: shared or per head", torch.randn(2, 3, 4), torch.randn(5, 4))):
        with pytest.raises(ValueError, match=message):
            posenc.bottleneck_mhsa(fmap, w, rel_h, rel_w, heads=2)


def _integer_arguments():
    """(name, call(value)) for the integer arguments that reach the C ABI
    as given: each call succeeds with a small value."""
    x, q = np.ones((1, 2, 1, 8), np.float32), np.ones((1, 1, 2, 8), np.float32)
    t5 = np.ones((32, 2), np.float32)
    capacity = posenc.primitive_cache_capacity()
    alibi = dict(heads=1, q_len=1, kv_len=3, bidirectional=False)
    return [
        ("sinusoid_table start", lambda v: posenc.sinusoid_table(2, 4, start=v)),
        ("add_sinusoid offset", lambda v: posenc.add_sinusoid(x[0], offset=v)),
        ("add_learned offset", lambda v: posenc.add_learned(x[0], np.ones((9, 8), np.float32),
                                                            offset=v)),
        ("concat_sinusoid offset", lambda v: posenc.concat_sinusoid(x[0], 4, offset=v)),
        ("relative_logits_1d query_offset",
         lambda v: posenc.relative_logits_1d(q, np.ones((3, 8), np.float32), keys=2,
                                             query_offset=v, clip=1)),
        ("relative_logits_1d clip",
         lambda v: posenc.relative_logits_1d(q, np.ones((11, 8), np.float32), keys=2, clip=v)),
        ("position_bias query_offset", lambda v: posenc.position_bias("alibi", query_offset=v,
                                                                      **alibi)),
        ("position_bias max_distance",
         lambda v: posenc.position_bias("t5", t5, q_len=1, kv_len=3, bidirectional=True,
                                        max_distance=v + 20)),
        ("attention query_offset", lambda v: posenc.attention(q, q, q, causal=True,
                                                              query_offset=v)),
        ("attention map_size",
         lambda v: posenc.attention(q, q, q, table_h=np.ones((3, 8), np.float32),
                                    table_w=np.ones((1, 8), np.float32), map_size=(v - 3, 1))),
        ("attention kv_map_size",
         lambda v: posenc.attention(q, q, q, table_h=np.ones((3, 8), np.float32),
                                    table_w=np.ones((1, 8), np.float32), map_size=(2, 1),
                                    kv_map_size=(v - 3, 1))),
        ("rope offset", lambda v: posenc.rope(x, posenc.rope_config(8), offset=v)),
        ("rope_config rotary_dim", lambda v: posenc.rope_config(v + 8 - v % 2)),
        ("rope_config original_max_positions",
         lambda v: posenc.rope_config(8, scaling="yarn", factor=2.0,
                                      original_max_positions=v + 1)),
        ("RopeCache max_positions", lambda v: posenc.RopeCache(posenc.rope_config(8), v + 1)),
        ("Context num_threads", lambda v: posenc.Context(num_threads=v)),
        ("set_primitive_cache_capacity capacity",
         lambda v: (posenc.set_primitive_cache_capacity(v),
                    posenc.set_primitive_cache_capacity(capacity))),
    ]


@pytest.mark.parametrize("name,call", _integer_arguments(), ids=lambda a: a if isinstance(a, str)
                         else "")
def test_integers_beyond_int64_are_refused_not_wrapped(name, call):
    """ctypes keeps the low 64 (or 32) bits of a larger int: 2^64 + 5 would
    run as 5."""
    call(5)
    for value in (2**64 + 5, -2**64 + 5, 2**70):
        with pytest.raises(OverflowError, match=name.split()[-1]):
            call(value)


def test_rope_positions_are_batch_by_tokens():
    x = torch.randn(4, 6, 2, 8)  # bthd: batch 4, tokens 6
    config = posenc.rope_config(8)
    for shape in ((1, 6), (4, 2), (6, 4)):
        with pytest.raises(ValueError, match=r"positions: expected shape \[4, 6\]"):
            posenc.rope(x, config, positions=torch.zeros(shape, dtype=torch.int64))
        with pytest.raises(ValueError, match=r"positions: expected shape \[4, 6\]"):
            posenc.rope_qk(x, x, config, positions=torch.zeros(shape, dtype=torch.int64))


def test_outputs_and_workspaces_must_be_writable_memory_of_their_size():
    table = np.zeros((4, 8), np.float32)
    table.flags.writeable = False
    with pytest.raises(ValueError, match="out: read-only array"):
        posenc.sinusoid_table(4, 8, out=table)
    x = np.ones((1, 4, 8), np.float32)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="out: read-only array"):
        posenc.add_sinusoid(x, out=x)
    assert (x == 1).all() and (table == 0).all()
    q = torch.randn(1, 2, 6, 4)
    size = posenc.attention_workspace_size(q, q, q)
    with pytest.raises(ValueError, match="out: read-only array"):
        posenc.attention(q.numpy(), q.numpy(), q.numpy(), out=np.broadcast_to(
            np.zeros(4, np.float32), (1, 2, 6, 4)))
    # A broadcast view holds far fewer bytes than numel * element size.
    for workspace in (torch.zeros(1, dtype=torch.uint8).expand(size),
                      np.broadcast_to(np.zeros(1, np.uint8), (size,))):
        with pytest.raises(ValueError, match="workspace: must be a contiguous"):
            posenc.attention(q, q, q, workspace=workspace)
    with pytest.raises(TypeError, match="workspace: expected a bytearray"):
        posenc.attention(q, q, q, workspace=memoryview(bytearray(size)))
    for option in ("bogus", "sizing"):  # (sizing: the private planner's own)
        with pytest.raises(TypeError, match=f"^attention_workspace_size: '{option}' is not an "
                           "option of attention"):
            posenc.attention_workspace_size(q, q, q, **{option: True})
    # posenc's scratch floats over an array's object pointers crashed its release.
    for workspace in (np.empty(size, dtype=object), np.zeros(size, [("a", "f4"), ("o", "O")])):
        with pytest.raises(TypeError, match="^workspace: an array of .* holds Python objects"):
            posenc.attention(q, q, q, workspace=workspace)
    torch.testing.assert_close(posenc.attention(q, q, q, workspace=bytearray(size)),
                               posenc.attention(q, q, q), rtol=0, atol=0)


def test_non_contiguous_inputs():
    q = torch.randn(1, 5, 3, 8).transpose(1, 2)  # [1, 3, 5, 8], not contiguous
    table = torch.randn(16, 8)[::2]
    assert not q.is_contiguous() and not table.is_contiguous()
    torch.testing.assert_close(posenc.absolute_logits(q, table),
                               posenc.absolute_logits(q.contiguous(), table.contiguous()),
                               rtol=0, atol=0)
    x = np.random.default_rng(0).standard_normal((4, 6, 2), dtype=np.float32).transpose(2, 0, 1)
    np.testing.assert_array_equal(posenc.add_sinusoid(x), posenc.add_sinusoid(x.copy()))
    # Every other token of a longer cache: read in place (STRIDED), whose GEMMs
    # (other leading dimensions) may round differently from the dense copy's.
    k = torch.randn(1, 3, 10, 8)[:, :, ::2]
    torch.testing.assert_close(posenc.attention(q, k, k), posenc.attention(
        q.contiguous(), k.contiguous(), k.contiguous()), rtol=1e-5, atol=1e-6)
    # Inputs the strided layout cannot read as they are, copied: head_dim of
    # stride 2, token rows 4 elements apart (overlapping rows of 8), negative
    # strides (numpy).
    spread = torch.randn(1, 3, 5, 16)[..., ::2]
    overlapping = torch.randn(56).as_strided((1, 3, 5, 8), (0, 16, 4, 1))
    for name, x in (("q", spread), ("k", overlapping), ("v", overlapping)):
        inputs = {**dict(q=q, k=k, v=k), name: x}
        dense = {key: value.contiguous() for key, value in inputs.items()}
        torch.testing.assert_close(posenc.attention(**inputs), posenc.attention(**dense),
                                   rtol=1e-5, atol=1e-6)
    flipped = np.random.default_rng(1).standard_normal((1, 3, 5, 8), dtype=np.float32)[:, ::-1]
    np.testing.assert_allclose(posenc.attention(flipped, flipped, flipped),
                               posenc.attention(*[np.ascontiguousarray(flipped)] * 3),
                               rtol=1e-5, atol=1e-6)
    # A negative stride on an axis of one element places nothing: read in
    # place, q's and out's alike.
    rng = np.random.default_rng(2)
    one_batch = rng.standard_normal((1, 3, 5, 8), dtype=np.float32)[::-1]
    cache = rng.standard_normal((1, 3, 12, 8), dtype=np.float32)[:, :, ::2]
    out = np.zeros((1, 3, 5, 2), np.float32)[..., ::-1][..., :1]  # head_dim 1 of stride -1
    np.testing.assert_allclose(
        posenc.attention(one_batch, cache, cache[..., :1], out=out),
        posenc.attention(*[np.ascontiguousarray(x) for x in (one_batch, cache, cache[..., :1])]),
        rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="out: head_dim must have stride 1"):
        posenc.attention(q, k, k, out=torch.empty(1, 3, 5, 16)[..., ::2])
    with pytest.raises(ValueError, match="no axis of more than one element a negative"):
        posenc.attention(one_batch, cache, cache, out=np.zeros((1, 3, 5, 8), np.float32)[:, ::-1])


def test_numpy_alone():
    """The package imports and runs without torch."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.modules['torch'] = None; import posenc; "
            "t = posenc.sinusoid_table(3, 4); assert t.dtype.name == 'float32'; "
            "assert posenc.default_context().num_threads == 0; print('ok')")
    result = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(here, ".."),
                            capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


def test_core_functions():
    assert posenc.isa_available("baseline")
    assert posenc.best_isa() in ("baseline", "avx2", "avx512", "neon")
    with pytest.raises(ValueError, match="isa"):
        posenc.isa_available("sse9")
    capacity = posenc.primitive_cache_capacity()
    posenc.set_primitive_cache_capacity(capacity + 1)
    assert posenc.primitive_cache_capacity() == capacity + 1
    posenc.set_primitive_cache_capacity(capacity)
    with pytest.raises(posenc.Error, match="capacity"):
        posenc.set_primitive_cache_capacity(0)
    posenc.attention(*np.ones((3, 1, 4, 300, 64), np.float32))  # GEMM shapes in the cache
    size, evictions = posenc.primitive_cache_size(), posenc.primitive_cache_evictions()
    assert 1 <= size <= capacity
    try:
        posenc.set_primitive_cache_capacity(1)  # drops all but one
        assert posenc.primitive_cache_size() == 1
        assert posenc.primitive_cache_evictions() == evictions + size - 1
    finally:
        posenc.set_primitive_cache_capacity(capacity)
    context = posenc.Context(num_threads=1, isa="baseline")
    assert context.isa == "baseline" and context.num_threads == 1
    np.testing.assert_allclose(posenc.sinusoid_table(5, 8, context=context),
                               posenc.sinusoid_table(5, 8), rtol=0, atol=1e-6)


def test_release_thread_memory_keeps_results():
    """After the thread's kept workspace and GEMM buffers are freed, the
    next calls make them again and give the same bits."""
    q, k, v = (torch.randn(2, 3, 70, 16) for _ in range(3))
    table = torch.randn(2 * 70 - 1, 16)
    before = posenc.attention(q, k, v, bias="relative_1d", table=table, causal=True)
    posenc.release_thread_memory()
    for _ in range(2):
        again = posenc.attention(q, k, v, bias="relative_1d", table=table, causal=True)
        assert torch.equal(again, before)


def test_gradients_are_refused_not_dropped():
    """posenc records nothing for autograd: a tensor requiring grad is
    refused while grad mode is on (its gradient would silently miss posenc's
    share), taken under no_grad; an out= written under no_grad bumps torch's
    version counter, so a backward through values saved before is refused."""
    q = torch.randn(1, 1, 4, 8, requires_grad=True)
    with pytest.raises(RuntimeError, match="q: requires grad"):
        posenc.attention(q, q.detach(), q.detach())
    with pytest.raises(RuntimeError, match="table: requires grad"):
        posenc.position_bias("t5", torch.randn(32, 2, requires_grad=True), q_len=4,
                             bidirectional=True)
    with torch.no_grad():
        posenc.attention(q, q, q)
    leaf = torch.zeros(1, 1, 4, 8, requires_grad=True)
    with pytest.raises(RuntimeError, match="out: requires grad"):
        posenc.attention(q.detach(), q.detach(), q.detach(), out=leaf)
    assert bool((leaf == 0).all())

    a = torch.randn(1, 4, 2, 8, requires_grad=True)
    y = a.exp()  # saves y for its backward
    with torch.no_grad():
        posenc.rope(y, posenc.rope_config(8), out=y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

    with torch.inference_mode():
        inference = torch.zeros(1, 4, 2, 8)
    with pytest.raises(RuntimeError, match="out: .*inference tensor"):
        posenc.rope(torch.randn(1, 4, 2, 8), posenc.rope_config(8), out=inference)

    # A torch workspace is written as an output is.
    q = torch.randn(1, 2, 6, 4)
    size = posenc.attention_workspace_size(q, q, q) // 4
    with pytest.raises(RuntimeError, match="workspace: requires grad"):
        posenc.attention(q, q, q, workspace=torch.ones(size, requires_grad=True))
    w = torch.ones(size, requires_grad=True)
    y = (w * w).sum()  # saves w for its backward
    with torch.no_grad():
        posenc.attention(q, q, q, workspace=w)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    with torch.inference_mode():
        inference = torch.zeros(size)
    with pytest.raises(RuntimeError, match="workspace: .*inference tensor"):
        posenc.attention(q, q, q, workspace=inference)


def test_forward_mode_tangents_and_transform_tensors_are_refused_by_name():
    """A dual tensor's tangent would be dropped (the result has none), and a
    torch.func transform's tensors have no storage to read: both refused,
    naming the argument, and nothing written."""
    forward_ad = torch.autograd.forward_ad
    q, out = torch.randn(1, 2, 5, 8), torch.zeros(1, 2, 5, 8)
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(q, torch.ones_like(q))
        with pytest.raises(RuntimeError, match="k: has a forward-mode tangent"):
            posenc.attention(q, dual, q, out=out)
        with pytest.raises(RuntimeError, match="x: has a forward-mode tangent"):
            posenc.add_sinusoid(dual.view(1, 10, 8))
    assert bool((out == 0).all())
    vmap = getattr(torch, "vmap", None) or pytest.importorskip("functorch").vmap
    with pytest.raises(TypeError, match="q: a tensor without storage"):
        vmap(lambda x: posenc.attention(x, q, q, out=out))(torch.randn(3, 1, 2, 5, 8))
    with pytest.raises(TypeError, match="x: a tensor without storage"):
        vmap(posenc.add_sinusoid)(torch.randn(3, 1, 10, 8))
    assert bool((out == 0).all())


def test_tensors_with_elements_out_of_memory_are_refused():
    """A tensor with elements that holds them in no memory of its own
    (data_ptr 0 or none: a __torch_dispatch__ wrapper subclass, an efficient
    zero tensor) is refused by name; posenc read a dummy buffer for it."""
    class Wrapper(torch.Tensor):
        @staticmethod
        def __new__(cls, inner):
            return torch.Tensor._make_wrapper_subclass(cls, inner.shape, strides=inner.stride(),
                                                       dtype=inner.dtype, device=inner.device)

        def __init__(self, inner):
            self.inner = inner

        __torch_function__ = torch._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(x):
                return x.inner if isinstance(x, Wrapper) else x
            return func(*map(unwrap, args), **{k: unwrap(v) for k, v in (kwargs or {}).items()})

    def without_memory(*shape):
        kinds = [Wrapper(torch.randn(*shape))]
        if hasattr(torch, "_efficientzerotensor"):
            kinds.append(torch._efficientzerotensor(shape))
        return kinds

    q, out = torch.randn(1, 2, 5, 8), torch.zeros(1, 2, 5, 8)
    for k in without_memory(1, 2, 5, 8):
        with pytest.raises(TypeError, match="k: a tensor without storage"):
            posenc.attention(q, k, q, out=out)
    for x in without_memory(1, 10, 8):
        with pytest.raises(TypeError, match="x: a tensor without storage"):
            posenc.add_sinusoid(x)
    assert bool((out == 0).all())


def test_scalar_arguments_are_checked_and_named():
    """Scalars of the wrong kind are a TypeError naming the argument (not
    ctypes' 'argument 4: wrong type'); a yes/no option takes a bool."""
    q = torch.randn(1, 2, 6, 4)
    fmap, w = torch.randn(1, 8, 3, 3), torch.randn(24, 8)
    rel = torch.randn(5, 4)
    calls = [
        ("q_len", lambda: posenc.position_bias("alibi", heads=4, q_len=5.0, bidirectional=True)),
        ("window", lambda: posenc.position_bias("table_2d", torch.randn(9, 2), window=(2.0, 2))),
        ("window", lambda: posenc.position_bias("table_2d", torch.randn(9, 2), window=2)),
        ("bidirectional", lambda: posenc.position_bias("alibi", heads=2, q_len=3,
                                                       bidirectional="no")),
        ("base", lambda: posenc.sinusoid_table(5, 8, base="x")),
        ("length", lambda: posenc.sinusoid_table(5.0, 8)),
        ("base", lambda: posenc.add_sinusoid(torch.randn(1, 2, 4), base=None)),
        ("height", lambda: posenc.relative_logits_2d(torch.randn(1, 1, 9, 4), rel, rel, 3.0, 3)),
        ("map_size", lambda: posenc.relative_logits_2d_maps(torch.randn(1, 1, 9, 4), rel, rel,
                                                            (3.0, 3))),
        ("heads", lambda: posenc.bottleneck_mhsa(fmap, w, rel, rel, heads=2.0)),
        ("scale", lambda: posenc.attention(q, q, q, scale="0.5")),
        ("causal", lambda: posenc.attention(q, q, q, causal="yes")),
        ("factor", lambda: posenc.rope_config(4, factor="2")),
        ("context", lambda: posenc.attention(q, q, q, context=2)),
        ("context", lambda: posenc.set_default_context(4)),
        ("num_buckets", lambda: posenc.position_bias("t5", torch.randn(32, 2), q_len=3,
                                                     bidirectional=True, num_buckets="32")),
        ("max_distance", lambda: posenc.position_bias("table_1d", torch.randn(2, 5), q_len=3,
                                                      max_distance=2.0)),
        ("max_distance", lambda: posenc.attention(q, q, q, bias="table_1d",
                                                  table=torch.randn(2, 5), max_distance="2")),
        # The cache where the config goes (the second positional argument), and the
        # other way round.
        ("config", lambda: posenc.rope(q, posenc.RopeCache(posenc.rope_config(4), 8))),
        ("cache", lambda: posenc.rope(q, cache=posenc.rope_config(4))),
        ("config", lambda: posenc.RopeCache({"rotary_dim": 4}, 8)),
        ("config", lambda: posenc.inverse_frequencies({"rotary_dim": 4})),
        ("out", lambda: posenc.relative_logits_2d_decomposed(torch.randn(1, 1, 9, 4), rel,
                                                             rel, 3, 3,
                                                             out=torch.zeros(1, 1, 9, 3))),
        ("out", lambda: posenc.relative_logits_2d_maps(torch.randn(1, 1, 9, 4), rel, rel,
                                                       (3, 3), out=[torch.zeros(1, 1, 9, 3)])),
        ("q", lambda: posenc.attention(q.to_sparse(), q, q)),
        ("query_offsets", lambda: posenc.attention(q, q, q, bias="relative_1d",
                                                   table=torch.randn(11, 4), query_offsets=[0])),
    ]
    for name, call in calls:
        with pytest.raises(TypeError, match=f"^{name}: "):
            call()
    with pytest.raises(ValueError, match="heads: must be at least 1"):
        posenc.bottleneck_mhsa(fmap, w, rel, rel, heads=0)
    with pytest.raises(TypeError, match="^rel_h: must have fmap's dtype"):
        posenc.bottleneck_mhsa(fmap.bfloat16(), w.bfloat16(), rel, rel, heads=2)
    with pytest.raises(ValueError, match="^clip: must be >= 0"):
        posenc.relative_logits_1d(q, torch.randn(7, 4), keys=6, clip=-1)
    with pytest.raises(ValueError, match="^query_offsets: expected 1 dimensions"):
        posenc.attention(q, q, q, bias="relative_1d", table=torch.randn(11, 4),
                         query_offsets=torch.tensor(0))
    # rotary_dim out of range is posenc's refusal, before a buffer of its size.
    for rotary_dim in (-2, 2**40):
        with pytest.raises(posenc.Error, match="rotary_dim"):
            posenc.inverse_frequencies(posenc.rope_config(rotary_dim))
    with pytest.raises(ValueError, match="q: a head size of 0"):
        posenc.attention(q[..., :0], q[..., :0], q)
    with pytest.raises(ValueError, match="layout: None"):
        posenc.attention(q, q, q, layout=None)
    assert torch.equal(posenc.attention(q, q, q, causal=np.True_),
                       posenc.attention(q, q, q, causal=True))


def test_a_mask_not_on_the_cpu_or_not_strided_is_refused_by_name():
    """As q, k and v are, before it is looked at (a bool mask made additive)."""
    q = torch.randn(1, 1, 3, 4)
    keep = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    for mask in (keep.to("meta"), torch.zeros(1, 1, 3, 3, device="meta")):
        with pytest.raises(ValueError, match="^mask: posenc runs on the CPU"):
            posenc.attention(q, q, q, mask=mask)
    for mask in (keep.to_sparse(), torch.zeros(1, 1, 3, 3).to_sparse(),
                 torch.zeros(1, 1, 3, 3).to_mkldnn()):
        with pytest.raises(TypeError, match="^mask: expected a strided"):
            posenc.attention(q, q, q, mask=mask)


def test_values_out_of_reach_name_their_argument():
    """Reals beyond a double, results beyond memory, sizes below 1: each
    names what the caller passed, not an allocator's or ctypes' words."""
    q = torch.randn(1, 2, 6, 4)
    for name, call in [
            ("base", lambda: posenc.sinusoid_table(4, 4, base=10**400)),
            ("scale", lambda: posenc.attention(q, q, q, scale=10**400)),
            ("factor", lambda: posenc.rope_config(8, factor=10**400))]:
        with pytest.raises(OverflowError, match=f"^{name}: beyond a double's range"):
            call()
    # Results of more bytes than int64 counts, then of more than memory holds.
    for call in [lambda: posenc.alibi_slopes(2**61),
                 lambda: posenc.sinusoid_table_2d(2**32, 2**32, 4),
                 lambda: posenc.concat_sinusoid(torch.randn(2, 5, 4), 2**63 - 4),
                 lambda: posenc.resize_relative_table(torch.randn(5, 4), 2**62),
                 lambda: posenc.resize_absolute_table_2d(torch.randn(5, 4), (2**31, 2**31)),
                 lambda: posenc.relative_logits_1d(q, torch.randn(11, 4), clip=5, keys=2**62)]:
        with pytest.raises(ValueError, match=r"^out: a result of shape \[.*\] \(\d+ bytes\) "
                           "is larger than any memory"):
            call()
    # Dense copies likewise: of an input expanded past int64's bytes; an empty
    # result whose other axes' strides pass int64.
    with pytest.raises(ValueError, match=r"^x: a dense copy of shape \[1048576, 1048576, "
                       r"1048576, 4\] \(\d+ bytes\) is larger than any memory"):
        posenc.rope(torch.zeros(1, 1, 1, 4).expand(2**20, 2**20, 2**20, 4), posenc.rope_config(4))
    # (torch 1.13 makes it, and posenc refuses its tokens.)
    with pytest.raises((ValueError, posenc.Error),
                       match=r"^out: a result of shape \[0, 4611686018427387904, "
                       r"4611686018427387904\] \(0 bytes\) has strides past int64|"
                       r"tokens must be <= 2\^53 \(got 4611686018427387904\)"):
        posenc.add_sinusoid(torch.empty_strided((0, 2**62, 2**62), (0, 0, 0)))
    # 2^60 bytes: past any 64-bit CPU's address space, overcommitted or not.
    for dtype in (None, torch.float32):
        with pytest.raises(MemoryError, match=r"^out: a result of shape \[288230376151711744\] "
                           r"\(1152921504606846976 bytes\) could not be allocated"):
            posenc.alibi_slopes(2**58, dtype=dtype)
    with pytest.raises(ValueError, match="^height: must be >= 1, got -2"):
        posenc.relative_logits_2d(q, torch.randn(3, 4), torch.randn(5, 4), -2, -3)
    with pytest.raises(ValueError, match="^width: must be >= 1, got 0"):
        posenc.relative_logits_2d_decomposed(q[:, :, :0], torch.randn(1, 4), torch.randn(1, 4),
                                             1, 0)
    with pytest.raises(ValueError, match=r"^fmap: height and width must be >= 1, "
                       r"got \[1, 8, 0, 4\]"):
        posenc.bottleneck_mhsa(torch.randn(1, 8, 0, 4), torch.randn(24, 8), torch.randn(0, 4),
                               torch.randn(7, 4), 2)
    with pytest.raises(ValueError, match="^num_buckets: must be >= 0, got -1"):
        posenc.attention(q, q, q, bias="t5", table=torch.randn(2, 2), num_buckets=-1,
                         bidirectional=True)
    with pytest.raises(ValueError, match="^window: 2 x 3 is 6 tokens, but q_len and kv_len "
                       "are 5 and 5"):
        posenc.position_bias("table_2d", torch.randn(15, 2), window=(2, 3), q_len=5)
    with pytest.raises(ValueError, match="^window: 2 x 3 is 6 tokens, but q_len and kv_len "
                       "are 6 and 7"):
        posenc.position_bias("table_2d", torch.randn(15, 2), window=(2, 3), kv_len=7)


def test_arrays_not_made_name_themselves(monkeypatch):
    """A cache's tables the allocator cannot make are named; a RuntimeError
    of torch's that is not its allocator's goes on as it is, not called an
    allocation failure."""
    def no_memory(*args, **kwargs):
        raise MemoryError("no memory")

    cache = posenc.RopeCache(posenc.rope_config(8), 16)
    with monkeypatch.context() as patched:
        patched.setattr(np, "empty", no_memory)
        with pytest.raises(MemoryError, match=r"^tables: cos of shape \[16, 4\] \(256 bytes\) "
                           "could not be allocated: no memory"):
            cache.tables()

    class Uncopyable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is torch.Tensor.contiguous:
                raise RuntimeError("not today")
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.randn(1, 4, 2, 8).transpose(1, 2).as_subclass(Uncopyable)
    with pytest.raises(RuntimeError, match="^not today$"):
        posenc.rope(x, posenc.rope_config(8))
    # torch's allocator refusing the copy (2^60 bytes: past any 64-bit CPU's
    # address space) is a MemoryError.
    with pytest.raises(MemoryError, match=r"^x: a dense copy of shape \[268435456, 268435456, 1, "
                       r"4\] \(1152921504606846976 bytes\) could not be allocated"):
        posenc.rope(torch.zeros(1, 1, 1, 4).expand(2**28, 2**28, 1, 4), posenc.rope_config(4))


def test_workspace_size_makes_no_copies():
    """Sizing reads shapes and strides only: inputs of a layout the call
    would copy (token rows closer than a row) are sized as their copies
    are, without being copied."""
    rows = torch.zeros(4).expand(1, 1, 1000, 4)
    assert posenc.attention_workspace_size(rows, rows, rows) == \
        posenc.attention_workspace_size(*(rows.contiguous(),) * 3)
    huge = torch.zeros(4).expand(1, 1, 2**36, 4)  # a copy would be 1 TiB
    posenc.attention_workspace_size(huge, huge, huge)


def test_results_torch_makes_without_memory_are_refused():
    """Under torch's fake tensor mode torch.empty makes no memory: posenc
    must not write a result there."""
    fake_tensor = pytest.importorskip("torch._subclasses.fake_tensor")
    with fake_tensor.FakeTensorMode():
        with pytest.raises(TypeError, match="^out: torch made a result without memory"):
            posenc.alibi_slopes(8, dtype=torch.float32)


def test_errors_pickle():
    """posenc.Error survives pickling (multiprocessing returns it so)."""
    import pickle
    with pytest.raises(posenc.Error) as error:
        posenc.sinusoid_table(4, 8, base=1.0)
    copy = pickle.loads(pickle.dumps(error.value))
    assert (type(copy), copy.status, str(copy)) == (posenc.Error, 2, str(error.value))


def test_a_call_keeps_its_context_alive():
    """The handle a call passes holds its Context: a default context
    replaced by another thread during the call is not destroyed under it."""
    import gc
    import weakref
    from posenc._lib import lib
    from posenc.context import handle
    context = posenc.Context(1)
    alive = weakref.ref(context)
    pointer = handle(context)
    del context
    gc.collect()
    assert alive() is not None
    assert lib.posenc_context_num_threads(pointer) == 1


def test_contexts_and_rope_caches_copy_and_pickle():
    """A copy is the same immutable object (copying the C pointer would
    destroy it twice); a pickled one is made again from its arguments."""
    import copy
    import gc
    import pickle
    config = posenc.rope_config(8)
    cache, context = posenc.RopeCache(config, 16), posenc.Context(num_threads=1, isa="baseline")
    x = torch.randn(2, 5, 3, 8)
    want = posenc.rope(x, cache=cache, context=context)
    copies = [copy.copy(cache), copy.deepcopy(cache), copy.copy(context), copy.deepcopy(context)]
    assert copies == [cache, cache, context, context]
    module = torch.nn.Module()
    module.cache = cache
    assert copy.deepcopy(module).cache is cache
    cache2, context2 = pickle.loads(pickle.dumps((cache, context)))
    assert cache2 is not cache and cache2.max_positions == 16
    # Pickled by the public names, which outlast the package's file names.
    assert type(cache).__module__ == "posenc" and posenc.RopeCache is type(cache)
    assert (context2.num_threads, context2.isa) == (1, "baseline")
    # "auto" is pickled as asked, not as the path it chose here: a process
    # under a lower cap loads it.
    program = ("import pickle, sys, posenc; c = pickle.loads(sys.stdin.buffer.read()); "
               "print(c.isa)")
    loaded = subprocess.run([sys.executable, "-c", program], input=pickle.dumps(posenc.Context()),
                            cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                            capture_output=True, env=dict(os.environ, POSENC_MAX_ISA="baseline"))
    assert loaded.returncode == 0, loaded.stderr.decode()
    assert loaded.stdout.decode().strip() in ("baseline", "neon")
    del cache, context, copies, module
    gc.collect()
    assert torch.equal(posenc.rope(x, cache=cache2, context=context2), want)
    # A config pickled by 0.4, whose struct ended before
    # fractional_correction_range, loads with it 0 (0.4's rounded range).
    config = posenc.rope_config(8, scaling="yarn", factor=2.0, original_max_positions=16,
                                fractional_correction_range=True)
    unpickle, (kind, (fields, data)) = config.__reduce__()
    older = pickle.loads(pickle.dumps(unpickle(kind, (fields, data[:112]))))
    assert (older.scaling, older.factor, older.fractional_correction_range) == (3, 2.0, 0)


def test_lazily_negated_tensors_are_read_negated_and_not_written():
    """A tensor with torch's negative bit (a complex tensor's conj().imag, a
    neg view) holds the values before the negation: posenc reads it as torch
    does, negated, and refuses to write one in place."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 6, 8) for _ in range(3))
    negated = torch._neg_view(q)
    assert negated.is_neg() and negated.is_contiguous()
    torch.testing.assert_close(posenc.attention(negated, k, v), posenc.attention(-q, k, v),
                               rtol=0, atol=0)
    imaginary = torch.randn(1, 2, 6, 8, dtype=torch.complex64).conj().imag
    assert imaginary.is_neg()
    torch.testing.assert_close(posenc.attention(imaginary, k, v),
                               posenc.attention(imaginary.clone(), k, v), rtol=0, atol=0)
    x = torch.randn(2, 3, 4)
    out = torch._neg_view(torch.full((2, 3, 4), 7.0))
    with pytest.raises(ValueError, match="out: a tensor with torch's negative bit"):
        posenc.add_sinusoid(x, out=out)
    assert bool((out == -7.0).all())


def test_a_bytearray_workspace_is_held_through_the_call():
    """A bytearray's buffer stays exported while posenc writes it: another
    thread resizing it (and freeing the memory) during the call is refused
    by Python instead."""
    from posenc import _tensor
    workspace = bytearray(64)
    _, size, pinned = _tensor.workspace_buffer(workspace)
    assert size == 64
    with pytest.raises(BufferError):
        workspace.extend(b"more")
    del pinned
    workspace.extend(b"more")


@pytest.mark.skipif(not hasattr(torch, "set_default_device"),
                    reason="torch's default device came with torch 2.0")
def test_results_are_made_on_the_cpu_whatever_the_default_device():
    q = torch.randn(1, 2, 6, 8)
    mask = torch.rand(1, 1, 6, 6) > 0.3
    mask[..., 0] = True
    expected = posenc.attention(q, q, q, mask=mask)
    with torch.device("meta"):
        actual = posenc.attention(q, q, q, mask=mask)
        table = posenc.sinusoid_table(4, 8, dtype=torch.float32)
    assert actual.device.type == "cpu" and table.device.type == "cpu"
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def test_dtype_mismatches_are_type_errors_naming_the_argument():
    fmap, w = torch.randn(1, 8, 2, 3), torch.randn(2 * 3 * 4, 8)
    rel_h, rel_w = torch.randn(3, 4), torch.randn(5, 4)
    with pytest.raises(TypeError, match="qkv_bias: must have fmap's dtype"):
        posenc.bottleneck_mhsa(fmap, w, rel_h, rel_w, heads=2, qkv_bias=torch.randn(24).bfloat16())
    with pytest.raises(ValueError, match=r"qkv_bias: expected \[24\], got \[23\]"):
        posenc.bottleneck_mhsa(fmap, w, rel_h, rel_w, heads=2, qkv_bias=torch.randn(23))
    q = torch.randn(1, 3, 2, 8)
    with pytest.raises(TypeError, match="k: must have q's dtype"):
        posenc.rope_qk(q, q.bfloat16(), config=posenc.rope_config(8))
    with pytest.raises(ValueError, match="k: batch, tokens and head_dim must be q's"):
        posenc.rope_qk(q, torch.randn(1, 4, 2, 8), config=posenc.rope_config(8))
    x = np.ones((1, 1, 4, 8), np.float32)
    with pytest.raises(TypeError, match="out_dtype: bfloat16 results need torch"):
        posenc.attention(x, x, x, out_dtype="bfloat16")
    with pytest.raises(TypeError, match=r"out: its dtype is not the result's \(q's, as out_dtype"):
        posenc.attention(q.bfloat16(), q.bfloat16(), q.bfloat16(), out=torch.zeros(1, 3, 2, 8))
    with pytest.raises(TypeError, match=r"out: its dtype is not the result's \(out_dtype\)"):
        posenc.attention(q, q, q, out=torch.zeros(1, 3, 2, 8), out_dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="dtype: bfloat16 results need torch"):
        posenc.sinusoid_table(4, 8, dtype="bfloat16")
    with pytest.raises(ValueError, match="heads: must be >= 0, got -1"):
        posenc.position_bias("alibi", heads=-1, q_len=2, kv_len=2, bidirectional=True)
