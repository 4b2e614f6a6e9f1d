"""posenc.torch.attention, the custom op torch.ops.posenc.attention: the
same results as posenc.attention (the same call, bit for bit) for every
option, in either output layout, the same refusals, and with torch 2.4 or
later torch.library.opcheck, torch.compile(fullgraph=True) (static and
dynamic shapes) and torch.export keeping one node of it, also through
transformers_attention."""
import re

import pytest
import torch

import posenc
import posenc.torch as posenc_torch

CUSTOM_OPS = hasattr(torch.library, "custom_op")
needs_custom_ops = pytest.mark.skipif(not CUSTOM_OPS,
                                      reason="torch.library.custom_op came with torch 2.4")


def case(name):
    """(q, k, v, options) of a named case, BHTD unless options say."""
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 7, 8), torch.randn(2, 4, 9, 8), torch.randn(2, 4, 9, 8)
    if name == "plain":
        return q, k, v, {}
    if name == "causal_gqa_value_dim":
        return q, k[:, :2], torch.randn(2, 2, 9, 5), dict(causal=True, query_offset=2,
                                                          scale=0.3)
    if name == "masks_and_lengths":
        mask = torch.rand(2, 1, 7, 9) < 0.8
        return q, k, v, dict(mask=mask, kv_lengths=torch.tensor([9, 4], dtype=torch.int32),
                             q_lengths=torch.tensor([7, 3], dtype=torch.int32))
    if name == "relative_1d_values":
        return q, k, v, dict(bias="relative_1d", table=torch.randn(5, 8), max_distance=2,
                             value_table=torch.randn(5, 8), query_offset=1)
    if name == "relative_2d_key_map":  # a 3x4 query map, a 2x3 key map (SAM's rule)
        q12, k6, v6 = torch.randn(1, 2, 12, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
        return q12, k6, v6, dict(table_h=torch.randn(5, 8), table_w=torch.randn(7, 8),
                                 map_size=(3, 4), kv_map_size=(2, 3),
                                 relative_order="query_minus_key", bias_uses_scaled_q=False)
    if name == "table_2d_class_token_bthd":
        x = torch.randn(3, 7, 2, 8)  # a 2x3 window and a class token, BTHD
        return x, x + 1, x - 1, dict(layout="bthd", bias="table_2d", window=(2, 3),
                                     class_token=True, table=torch.randn(15 + 3, 2))
    if name == "t5_gated":
        return q, k, v, dict(bias="t5", table=torch.randn(32, 4), num_buckets=32,
                             max_distance=20, bidirectional=True,
                             bias_gate=torch.randn(2, 4, 7))
    if name == "alibi_window_sinks":
        return q, k, v, dict(bias="alibi", table=torch.rand(4), bidirectional=False,
                             causal=True, query_offset=2, sliding_window=3,
                             sinks=torch.randn(4))
    if name == "softcap_bf16_out":
        return q, k, v, dict(softcap=5.0, out_dtype=torch.bfloat16)
    if name == "disentangled":
        return q, k, v, dict(bias="disentangled", table=torch.randn(4, 16, 8),
                             key_table=torch.randn(4, 16, 8), num_buckets=8, max_distance=16)
    if name == "relative_query_bias":
        return q, k, v, dict(bias="relative_1d", table=torch.randn(15, 8),
                             relative_query_bias=torch.randn(4, 8))
    raise KeyError(name)


CASES = ["plain", "causal_gqa_value_dim", "masks_and_lengths", "relative_1d_values",
         "relative_2d_key_map", "table_2d_class_token_bthd", "t5_gated", "alibi_window_sinks",
         "softcap_bf16_out", "disentangled", "relative_query_bias"]


def other_layout(layout):
    return "bthd" if layout == "bhtd" else "bhtd"


@pytest.mark.parametrize("name", CASES)
def test_the_same_bits_as_posenc_attention_in_either_output_layout(name):
    q, k, v, options = case(name)
    expected = posenc.attention(q, k, v, **options)
    assert torch.equal(posenc_torch.attention(q, k, v, **options), expected)
    layout = options.get("layout", "bhtd")
    swapped = posenc_torch.attention(q, k, v, out_layout=other_layout(layout), **options)
    assert swapped.is_contiguous() and torch.equal(swapped.transpose(1, 2), expected)


def test_refusals_are_posenc_attentions():
    q, k, v, _ = case("plain")
    for call in (dict(bias="relative_1d", table=torch.randn(3, 8)),
                 dict(sliding_window=-1), dict(layout="btd")):
        with pytest.raises((ValueError, TypeError, posenc.Error)) as expected:
            posenc.attention(q, k, v, **call)
        with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
            posenc_torch.attention(q, k, v, **call)
    q.requires_grad_()
    with pytest.raises(RuntimeError, match="q: requires grad"):
        posenc_torch.attention(q, k, v)
    with torch.no_grad():
        assert torch.equal(posenc_torch.attention(q, k, v), posenc.attention(q, k, v))


@needs_custom_ops
@pytest.mark.parametrize("name,out_layout", [("plain", None), ("masks_and_lengths", "bthd"),
                                             ("relative_2d_key_map", None),
                                             ("table_2d_class_token_bthd", "bhtd"),
                                             ("softcap_bf16_out", None)])
def test_opcheck(name, out_layout, monkeypatch):
    """Its schema, its fake implementation's output against the real one's
    (shape, layout and dtype), its refusal of autograd."""
    q, k, v, options = case(name)
    options["out_layout"] = out_layout
    captured = {}
    real = posenc_torch._ops.attention_op

    def record(*args):  # the op's arguments as posenc.torch.attention passes them
        captured["args"] = args
        return real(*args)

    monkeypatch.setattr(posenc_torch._ops, "attention_op", record)
    monkeypatch.setattr(posenc_torch._ops, "traced", lambda tensors: True)
    posenc_torch.attention(q, k, v, **options)
    torch.library.opcheck(torch.ops.posenc.attention.default, captured["args"])


def test_an_eager_call_skips_the_ops_dispatch(monkeypatch):
    """Plain tensors and parameters, no tracer: the op's code runs without
    torch's dispatch of a Python op."""
    q, k, v, options = case("relative_1d_values")
    options["table"] = torch.nn.Parameter(options["table"], requires_grad=False)
    monkeypatch.setattr(posenc_torch._ops, "attention_op", None)  # would fail if called
    with torch.no_grad():
        assert torch.equal(posenc_torch.attention(q, k, v, **options),
                           posenc.attention(q, k, v, **options))


def test_layouts_are_checked():
    q, k, v, _ = case("plain")
    for options in (dict(out_layout="nonsense"), dict(layout=None), dict(out_layout=3)):
        with pytest.raises(ValueError, match="layout"):
            posenc_torch.attention(q, k, v, **options)


@needs_custom_ops
def test_only_traced_calls_take_the_ops_dispatch():
    """Plain tensors and parameters run the op's code without torch's
    dispatch (some 60-90 us a call); fake tensors, a dispatch mode (a
    tracer's) and torch.jit.trace see the op."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    traced = posenc_torch._ops.traced
    x = torch.randn(2, 3)
    assert not traced([x, torch.nn.Parameter(x)])
    with FakeTensorMode() as mode:
        assert traced([mode.from_tensor(x)])

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    seen = []
    q, k, v, options = case("relative_1d_values")
    with Seen():
        posenc_torch.attention(q, k, v, **options)
    assert torch.ops.posenc.attention.default in seen
    from torch.fx.experimental.proxy_tensor import make_fx
    for pre_dispatch in (False, True):  # a dispatch mode of either stack: the op recorded
        graph = make_fx(lambda q, k, v: posenc_torch.attention(q, k, v, causal=True),
                        pre_dispatch=pre_dispatch)(q, k, v)
        assert torch.ops.posenc.attention.default in [n.target for n in graph.graph.nodes]
        assert torch.equal(graph(q, k, v), posenc.attention(q, k, v, causal=True))
    traced_function = torch.jit.trace(lambda q, k, v: posenc_torch.attention(q, k, v, causal=True),
                                      (q, k, v), check_trace=False)
    assert "posenc::attention" in str(traced_function.graph)


def graph_with_op(function, *inputs, dynamic=False):
    """function compiled with fullgraph=True, its result on inputs, and how
    many posenc attention nodes its graphs hold."""
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    compiled = torch.compile(function, backend=backend, fullgraph=True, dynamic=dynamic)
    result = compiled(*inputs)
    nodes = [node.target for g in graphs for node in g.graph.nodes]
    return compiled, result, nodes.count(torch.ops.posenc.attention.default)


@needs_custom_ops
@pytest.mark.parametrize("name", CASES)
def test_torch_compile_keeps_one_node(name):
    q, k, v, options = case(name)

    def function(q, k, v):
        return posenc_torch.attention(q, k, v, **options) * 2

    _, result, nodes = graph_with_op(function, q, k, v)
    assert nodes == 1
    assert torch.equal(result, posenc.attention(q, k, v, **options) * 2)


@needs_custom_ops
def test_torch_compile_with_dynamic_shapes():
    def function(q, k, v):
        return posenc_torch.attention(q, k, v, causal=True, out_layout="bthd")

    q, k, v, _ = case("plain")
    compiled, result, nodes = graph_with_op(function, q, k, v, dynamic=True)
    assert nodes == 1 and torch.equal(result, function(q, k, v))
    for tokens in (5, 11):
        shorter = [x[:, :, :tokens] for x in (q, k, v)]
        assert torch.equal(compiled(*shorter), function(*shorter))


@needs_custom_ops
def test_torch_export_keeps_one_node():
    class Attention(torch.nn.Module):
        def forward(self, q, k, v, table):
            return posenc_torch.attention(q, k, v, bias="relative_1d", table=table)

    q, k, v, options = case("relative_query_bias")
    program = torch.export.export(Attention(), (q, k, v, options["table"]))
    nodes = [node.target for node in program.graph.nodes]
    assert nodes.count(torch.ops.posenc.attention.default) == 1
    assert torch.equal(program.module()(q, k, v, options["table"]),
                       posenc.attention(q, k, v, bias="relative_1d", table=options["table"]))


@needs_custom_ops
def test_transformers_attention_compiles_to_one_node():
    """As a transformers model under torch.compile calls it: a padding mask
    of [B, 1, Tq, Tk]; its output [B, Tq, H, d] as sdpa_attention_forward
    returns it."""
    q, k, v, _ = case("plain")
    mask = torch.rand(2, 1, 7, 9) < 0.8
    module = torch.nn.Module()

    def function(q, k, v, mask):
        return posenc_torch.transformers_attention(module, q, k, v, mask, scaling=0.5)[0]

    _, result, nodes = graph_with_op(function, q, k, v, mask)
    assert nodes == 1
    assert torch.equal(result, posenc.attention(q, k, v, scale=0.5, mask=mask).transpose(1, 2))
