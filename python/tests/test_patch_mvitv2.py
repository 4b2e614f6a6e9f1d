"""posenc.torch.patch on timm's MViTv2 attention, mvitv2.MultiScaleAttention,
against the unpatched module on random weights: q pooled or not, keys
pooled by other strides than q (a key map smaller than the query map, the
tables' rows scaled as cal_rel_pos_type scales them), each pooling mode,
with and without residual pooling and relative positions, a map other than
the one the tables were made for, whole mvitv2 models, and the refusal of a
class token."""
import copy
import re

import pytest
import torch

import timm
import timm.models.mvitv2 as timm_mvitv2

import posenc.torch as posenc_torch
from patch_checks import DTYPES, MapCall, assert_close_to, compare


def attention(mode="conv", stride_q=(1, 1), stride_kv=(2, 2), rel_pos_type="spatial",
              residual_pooling=True, size=8):
    torch.manual_seed(0)
    kernel = lambda stride: (3, 3) if stride != (1, 1) else (1, 1)  # noqa: E731
    module = timm_mvitv2.MultiScaleAttention(
        32, 32, (size, size), num_heads=4, mode=mode, kernel_q=kernel(stride_q),
        kernel_kv=kernel(stride_kv), stride_q=stride_q, stride_kv=stride_kv,
        has_cls_token=False, rel_pos_type=rel_pos_type, residual_pooling=residual_pooling)
    for name, parameter in module.named_parameters():
        if name.startswith("rel_pos"):  # timm's std 0.02 would hide a wrong row
            torch.nn.init.normal_(parameter)
    return module


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("stride_q,stride_kv", [((1, 1), (1, 1)), ((1, 1), (2, 2)),
                                                ((2, 2), (2, 2)), ((1, 1), (4, 4)),
                                                ((2, 2), (1, 1))])
@pytest.mark.parametrize("mode", ["conv", "avg", "max"])
def test_pooled_attention(mode, stride_q, stride_kv, dtype, tolerance):
    module = attention(mode, stride_q, stride_kv)
    compare(MapCall(module, [8, 8]), torch.randn(2, 64, 32), dtype, tolerance,
            expect=["mvitv2_attention"])


@pytest.mark.parametrize("rel_pos_type,residual_pooling", [("spatial", False), ("", True),
                                                           ("", False)])
def test_without_residual_pooling_or_relative_positions(rel_pos_type, residual_pooling):
    module = attention(rel_pos_type=rel_pos_type, residual_pooling=residual_pooling)
    compare(MapCall(module, [8, 8]), torch.randn(2, 64, 32), expect=["mvitv2_attention"])


@pytest.mark.parametrize("feat_size", [[7, 5], [6, 8], [3, 3]])
def test_a_map_smaller_than_the_tables_reads_their_first_rows(feat_size):
    """The tables are made for the 8x8 map of __init__; cal_rel_pos_type
    indexes from row 0 on a smaller, odd or non-square map."""
    module = attention(stride_kv=(2, 2))
    compare(MapCall(module, feat_size), torch.randn(2, feat_size[0] * feat_size[1], 32),
            expect=["mvitv2_attention"])


def test_a_map_larger_than_the_tables_gets_timms_error():
    module = attention(stride_kv=(1, 1), size=4).eval()
    x = torch.randn(1, 36, 32)
    with torch.no_grad(), pytest.raises(IndexError) as unpatched:
        module(x, [6, 6])
    posenc_torch.patch(module)
    with torch.no_grad(), pytest.raises(IndexError) as patched:
        module(x, [6, 6])
    assert str(patched.value) == str(unpatched.value)


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_timm_mvitv2_model(dtype, tolerance):
    """mvitv2_tiny at 64 pixels: maps 16x16 down to 2x2, the first block of
    each stage pooling q, the keys pooled to 4x4 and below. Its ten blocks'
    bf16 roundings add up (timm's own bf16 model is 13% off its fp32 one):
    the output within 1e-1 there, each module within 2e-2."""
    torch.manual_seed(0)
    model = timm.create_model("mvitv2_tiny", pretrained=False, img_size=64, num_classes=0)
    for name, parameter in model.named_parameters():
        if "rel_pos" in name:
            torch.nn.init.normal_(parameter, std=0.5)
    replaced = compare(model, torch.randn(2, 3, 64, 64), dtype, tolerance,
                       output_tolerance=1e-1 if dtype else None)
    assert [r.kind for r in replaced] == ["mvitv2_attention"] * 10


def test_a_class_token_is_refused():
    model = timm.create_model("mvitv2_small_cls", pretrained=False, img_size=64)
    with pytest.raises(posenc_torch.PatchError, match="class token"):
        posenc_torch.patch(model)


def test_fallback_under_autograd_gives_timms_result():
    module = attention(stride_q=(2, 2)).eval()
    x = torch.randn(2, 64, 32)
    expected = module(x, [8, 8])[0]
    posenc_torch.patch(module)
    actual = module(x, [8, 8])[0]
    assert_close_to(actual, expected, 0, "the fallback")
    actual.sum().backward()


def test_the_map_and_mixed_dtypes_as_timm_has_them():
    """Without q pooling timm returns the caller's feat_size itself (the
    model passes a torch.Size); tables of another dtype than q get timm's
    result or error (its einsum of q and the table)."""
    module = attention(stride_q=(1, 1)).eval()
    posenc_torch.patch(module)
    feat_size = torch.Size([8, 8])
    with torch.no_grad():
        assert module(torch.randn(2, 64, 32), feat_size)[1] is feat_size
    mixed = attention().eval().bfloat16()
    mixed.rel_pos_h.data = mixed.rel_pos_h.data.float()
    reference = copy.deepcopy(mixed)
    posenc_torch.patch(mixed)
    x = torch.randn(2, 64, 32, dtype=torch.bfloat16)
    with torch.no_grad():
        try:
            expected = reference(x, [8, 8])[0]
        except RuntimeError as error:
            with pytest.raises(RuntimeError, match=re.escape(str(error))):
                mixed(x, [8, 8])
        else:
            assert torch.equal(mixed(x, [8, 8])[0], expected)
