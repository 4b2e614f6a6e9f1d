"""posenc.torch.patch against the unpatched modules on random weights: timm's
and Segment Anything's SAM attention (windowed with padding, global, odd and
non-square maps, resized tables, qk_norm), timm's BottleneckAttn (both
scale_pos_embed settings, qkv_bias, stride 2, qk_ratio != 1), timm's Swin
window attention (odd and non-square windows, shifted and not, padded maps),
Swin V2's (cosine attention, its continuous position bias) and BEiT
attention (class token, q and v biases, a shared bias), whole timm
models (and each replaced module on its inputs there); fp32 within 1e-5 of
the output's magnitude, bf16 within 2e-2 (on every CPU: bf16 is widened to fp32
where the attention's GEMMs do not run in bf16); refusals; the fallback under autograd and in
training, under torch.jit.trace and for hooks on the submodules posenc does not run;
torch.compile and torch.export of each kind (test_patch_relpos.py: timm's
pos_embed_rel biases)."""
import copy
import functools
import pickle

import pytest
import torch

# Imported, not skipped when missing: the test set-up installs timm and
# segment-anything (scripts/install-deps.sh --test), and a failed install
# must not pass as skipped tests.
import segment_anything.modeling.image_encoder as sam_encoder
import timm
import timm.layers.bottleneck_attn as timm_botnet
import timm.layers.pos_embed_rel as timm_rel
import timm.models.beit as timm_beit
import timm.models.maxxvit as timm_maxxvit
import timm.models.mvitv2 as timm_mvitv2
import timm.models.swin_transformer as timm_swin
import timm.models.swin_transformer_v2 as timm_swinv2
import timm.models.vision_transformer_relpos as timm_relpos
import timm.models.vision_transformer_sam as timm_sam

import posenc
import posenc.torch as posenc_torch
from patch_checks import DTYPES, MapCall, compare


def randomize_position_tables(model):
    """SAM's tables start at zero, which would hide a flipped table."""
    torch.manual_seed(1)
    for name, parameter in model.named_parameters():
        if "rel_pos" in name:
            torch.nn.init.normal_(parameter, std=0.5)
    return model


def randomize_bias_tables(model):
    """Swin's and BEiT's tables (and BEiT's q and v biases) start at zero or
    near it, which would hide a wrong index."""
    torch.manual_seed(2)
    for name, parameter in model.named_parameters():
        if name.endswith(("relative_position_bias_table", "q_bias", "v_bias")):
            torch.nn.init.normal_(parameter)
    return model


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("window", [0, 4])
@pytest.mark.parametrize("block_class", [timm_sam.Block, sam_encoder.Block],
                         ids=["timm", "segment_anything"])
def test_sam_blocks_windowed_and_global(block_class, window, dtype, tolerance):
    torch.manual_seed(0)
    block = block_class(32, 4, use_rel_pos=True, window_size=window, input_size=(7, 9))
    randomize_position_tables(block)
    compare(block, torch.randn(2, 7, 9, 32), dtype, tolerance, expect=["sam_attention"])


@pytest.mark.parametrize("attention_class", [timm_sam.Attention, sam_encoder.Attention],
                         ids=["timm", "segment_anything"])
def test_sam_tables_resized_for_another_map(attention_class):
    """Tables made for 6x6 on a 7x5 map: get_rel_pos interpolates them."""
    torch.manual_seed(0)
    attention = attention_class(32, num_heads=2, use_rel_pos=True, input_size=(6, 6))
    randomize_position_tables(attention)
    compare(attention, torch.randn(1, 7, 5, 32))


@pytest.mark.parametrize("query_map,key_map", [((14, 14), (64, 64)), ((3, 5), (6, 10)),
                                               ((6, 10), (3, 5)), ((8, 8), (6, 6)),
                                               ((4, 7), (4, 7))])
def test_sam_add_decomposed_rel_pos_with_a_key_map(query_map, key_map):
    """posenc.attention with SAM's tables as stored and a key map of another
    size against segment_anything's own add_decomposed_rel_pos (which scales
    the coordinates of the shorter map); tables of the wrong rows refused."""
    torch.manual_seed(0)
    heads, dim = 2, 8
    (qh, qw), (kh, kw) = query_map, key_map
    q = torch.randn(heads, qh * qw, dim)
    k, v = torch.randn(heads, kh * kw, dim), torch.randn(heads, kh * kw, dim)
    rel_h = torch.randn(2 * max(qh, kh) - 1, dim)
    rel_w = torch.randn(2 * max(qw, kw) - 1, dim)
    scores = sam_encoder.add_decomposed_rel_pos((q * 0.3) @ k.transpose(-2, -1), q, rel_h,
                                                rel_w, query_map, key_map)
    expected = scores.softmax(-1) @ v
    options = dict(scale=0.3, table_h=rel_h, table_w=rel_w, bias_uses_scaled_q=False,
                   relative_order="query_minus_key", map_size=query_map, kv_map_size=key_map)
    actual = posenc.attention(q[None], k[None], v[None], **options)[0]
    assert (actual - expected).abs().max().item() <= 1e-5 * expected.abs().max().item()
    with pytest.raises(ValueError, match="table_w"):
        posenc.attention(q[None], k[None], v[None], **dict(options, table_w=rel_w[1:]))
    if key_map != query_map:
        with pytest.raises(ValueError, match="map_size"):
            posenc.attention(q[None], k[None], v[None], **dict(options, map_size=None))


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_timm_sam_without_rel_pos_and_with_qk_norm(dtype, tolerance):
    torch.manual_seed(0)
    compare(timm_sam.Attention(32, num_heads=4, qk_norm=True), torch.randn(2, 3, 5, 32), dtype,
            tolerance)


class _AcrossHeadsCentred(torch.nn.Module):
    """A norm over the first axis, batch and heads in timm's [B * heads, N, d]
    layout."""

    def forward(self, x):
        return x - x.mean(0, keepdim=True)


class _Doubled(torch.nn.Identity):
    """An nn.Identity in type only."""

    def forward(self, x):
        return 2 * x


@pytest.mark.parametrize("q_norm,k_norm", [
    (torch.nn.Identity(), torch.nn.LayerNorm(8)), (_Doubled(), _Doubled()),
    (_AcrossHeadsCentred(), torch.nn.Identity())],
    ids=["k_only", "identity_subclass", "across_heads"])
def test_timm_sam_each_norm_as_timm_calls_it(q_norm, k_norm):
    """q_norm and k_norm are each run unless an nn.Identity itself, on q and
    k laid out as timm gives them."""
    torch.manual_seed(0)
    module = timm_sam.Attention(32, num_heads=4, use_rel_pos=True, input_size=(3, 5))
    randomize_position_tables(module)
    module.q_norm, module.k_norm = q_norm, k_norm
    compare(module, torch.randn(2, 3, 5, 32))


def torch_runs(module, x):
    """False where torch itself cannot run module on x: POSENC_MAX_ISA below
    avx512 caps oneDNN process-wide, and a torch linked to the same libdnnl
    (Debian's) then has no bf16 matmul for the unpatched module."""
    try:
        with torch.no_grad():
            module(x)
        return True
    except RuntimeError:
        return False


def test_timm_sam_qk_norm_of_a_bf16_module_run_in_fp32():
    """The norms run in the module's dtype before q and k take the run's."""
    torch.manual_seed(0)
    module = timm_sam.Attention(32, num_heads=4, qk_norm=True, use_rel_pos=True,
                                input_size=(3, 5))
    randomize_position_tables(module)
    module, x = module.bfloat16().eval(), torch.randn(2, 3, 5, 32).bfloat16()
    if not torch_runs(module, x):
        pytest.skip("torch's bf16 matmul fails under posenc's cap of the oneDNN it shares")
    compare(module, x, torch.float32, 2e-2)


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_timm_samvit_model(dtype, tolerance):
    torch.manual_seed(0)
    model = timm.create_model("samvit_base_patch16", pretrained=False, img_size=112, depth=4,
                              embed_dim=64, num_heads=4, global_attn_indexes=(1, 3),
                              window_size=3, neck_chans=32)
    randomize_position_tables(model)
    replaced = compare(model, torch.randn(1, 3, 112, 112), dtype, tolerance)
    assert [r.name for r in replaced] == [f"blocks.{i}.attn" for i in range(4)]


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("scale_pos_embed", [False, True])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_bottleneck_attention(scale_pos_embed, stride, qkv_bias, dtype, tolerance):
    torch.manual_seed(0)
    module = timm_botnet.BottleneckAttn(24, 32, feat_size=(5, 7), stride=stride, num_heads=4,
                                        qkv_bias=qkv_bias, scale_pos_embed=scale_pos_embed)
    if qkv_bias:
        torch.nn.init.normal_(module.qkv.bias)
    compare(module, torch.randn(2, 24, 5, 7), dtype, tolerance, expect=["bottleneck_attention"])


# qk_ratio 0.5: dim_head_qk = make_divisible(32 * 0.5, 8) // 4 = 4 and
# dim_head_v = 32 // 4 = 8 (and the other way with 1.5: 12 against 8).
@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("qk_ratio", [0.5, 1.5])
@pytest.mark.parametrize("stride,qkv_bias", [(1, False), (2, True)])
def test_bottleneck_attention_qk_ratio(qk_ratio, stride, qkv_bias, dtype, tolerance):
    torch.manual_seed(0)
    module = timm_botnet.BottleneckAttn(24, 32, feat_size=(5, 7), stride=stride, num_heads=4,
                                        qk_ratio=qk_ratio, qkv_bias=qkv_bias)
    assert module.dim_head_qk == (4 if qk_ratio == 0.5 else 12) and module.dim_head_v == 8
    if qkv_bias:
        torch.nn.init.normal_(module.qkv.bias)
    compare(module, torch.randn(2, 24, 5, 7), dtype, tolerance, expect=["bottleneck_attention"])


def test_bottleneck_attention_qkv_that_is_not_a_plain_convolution():
    """posenc runs qkv from its weight and bias: a Conv2d subclass (timm's
    weight-standardized StdConv2d) is refused; hooks given after patching
    (weight_norm's, recomputing the weight) send the call to timm's forward."""
    torch.manual_seed(0)
    module = timm_botnet.BottleneckAttn(16, 32, feat_size=(4, 6), num_heads=2).eval()
    module.qkv = timm.layers.StdConv2d(16, module.qkv.out_channels, 1, bias=False)
    with pytest.raises(posenc_torch.PatchError, match="qkv \\(StdConv2d\\) is not a plain"):
        posenc_torch.patch(module)
    module = timm_botnet.BottleneckAttn(16, 32, feat_size=(4, 6), num_heads=2).eval()
    x = torch.randn(2, 16, 4, 6)
    posenc_torch.patch(module)
    torch.nn.utils.weight_norm(module.qkv)
    with torch.no_grad():
        module.qkv.weight_g.mul_(2.0)
        actual = module(x)
        posenc_torch.unpatch(module)
        expected = module(x)
    assert torch.equal(actual, expected)


def test_botnet26t_model():
    torch.manual_seed(0)
    model = timm.create_model("botnet26t_256", pretrained=False)
    for module in model.modules():  # the zero-initialized last BNs would hide the attention
        if isinstance(module, torch.nn.BatchNorm2d):
            torch.nn.init.uniform_(module.weight, 0.5, 1.5)
    replaced = compare(model, torch.randn(1, 3, 256, 256))
    assert [r.kind for r in replaced] == ["bottleneck_attention"] * 3


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("window,shift", [((3, 3), (0, 0)), ((3, 5), (1, 2)), ((5, 5), (2, 2))])
def test_swin_blocks(window, shift, dtype, tolerance):
    """A 7x10 map: padded to whole windows, shifted (mask [nW, N, N], the
    windows folded into the batch) or not."""
    torch.manual_seed(0)
    block = timm_swin.SwinTransformerBlock(32, input_resolution=(7, 10), num_heads=4,
                                           window_size=window, shift_size=shift)
    assert (block.attn_mask is not None) == any(shift)
    randomize_bias_tables(block)
    compare(block, torch.randn(2, 7, 10, 32), dtype, tolerance, expect=["swin_attention"])


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_timm_swin_model(dtype, tolerance):
    torch.manual_seed(0)
    model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False, img_size=60,
                              window_size=5, embed_dim=32, depths=(2, 2), num_heads=(2, 4))
    randomize_bias_tables(model)
    replaced = compare(model, torch.randn(2, 3, 60, 60), dtype, tolerance)
    assert [r.kind for r in replaced] == ["swin_attention"] * 4


def randomize_swinv2(model, dtype=None):
    """Swin V2's logit scales start at ln 10 for every head, its biases at
    zero and a model's post-norms at zero weight (which would hide the
    attention from the output): per-head scales from 2 to 200 (the last
    past its clamp at 100; to 20 in bf16, whose rounding of q s_h moves
    logits of s_h = 100 by up to 0.2, as in timm's own bf16 run), random q
    and v biases, norm weights in [0.5, 1.5]."""
    torch.manual_seed(3)
    largest = 5.3 if dtype is None else 3.0
    for name, parameter in model.named_parameters():
        if name.endswith("logit_scale"):
            with torch.no_grad():
                parameter.copy_(torch.linspace(0.7, largest, parameter.numel())
                                .view_as(parameter))
        elif name.endswith(("q_bias", "v_bias")):
            torch.nn.init.normal_(parameter)
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            torch.nn.init.uniform_(module.weight, 0.5, 1.5)
    return model


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("window,shift", [((3, 3), (0, 0)), ((3, 5), (1, 2)), ((4, 4), (2, 2))])
def test_swinv2_blocks(window, shift, dtype, tolerance):
    """Swin V2's block on a 7x10 map, shifted or not: its cosine attention
    (q and k normalized, a logit scale per head) and the 16 sigmoid of its
    cpb_mlp's table as posenc's TABLE_2D."""
    torch.manual_seed(0)
    block = timm_swinv2.SwinTransformerV2Block(32, input_resolution=(7, 10), num_heads=4,
                                               window_size=window, shift_size=shift)
    randomize_swinv2(block, dtype)
    compare(block, torch.randn(2, 7, 10, 32), dtype, tolerance, expect=["swinv2_attention"])


@pytest.mark.parametrize("qkv_bias", [True, False])
def test_swinv2_qkv_options(qkv_bias):
    """Without q and v biases, and with them added after the projection
    (qkv_bias_separate), as timm's forward does."""
    torch.manual_seed(0)
    attention = randomize_swinv2(timm_swinv2.WindowAttention(32, (3, 4), num_heads=2,
                                                             qkv_bias=qkv_bias))
    attention.qkv_bias_separate = qkv_bias
    compare(attention, torch.randn(3, 12, 32), expect=["swinv2_attention"])


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
def test_timm_swinv2_model(dtype, tolerance):
    torch.manual_seed(0)
    model = timm.create_model("swinv2_tiny_window8_256", pretrained=False, img_size=64,
                              window_size=4, embed_dim=32, depths=(2, 2), num_heads=(2, 4))
    randomize_swinv2(model, dtype)
    replaced = compare(model, torch.randn(2, 3, 64, 64), dtype, tolerance)
    assert [r.kind for r in replaced] == ["swinv2_attention"] * 4


def test_swinv2_model_in_bf16():
    """The model itself in bf16 (its logit scales, table and mask too)."""
    torch.manual_seed(0)
    model = timm.create_model("swinv2_tiny_window8_256", pretrained=False, img_size=64,
                              window_size=4, embed_dim=32, depths=(2, 2), num_heads=(2, 4))
    model = randomize_swinv2(model, torch.bfloat16).bfloat16()
    compare(model, torch.randn(2, 3, 64, 64).bfloat16(), None, 2e-2)


def test_swinv2_falls_back_where_timm_widens_the_scores():
    """A logit scale kept in fp32 in a bf16 module widens timm's scores,
    whose product with the bf16 v it refuses: the patched module gives the
    same error."""
    attention = timm_swinv2.WindowAttention(16, (2, 2), num_heads=2).eval().bfloat16()
    attention.logit_scale = torch.nn.Parameter(attention.logit_scale.float())
    x = torch.randn(2, 4, 16).bfloat16()
    with torch.no_grad(), pytest.raises(RuntimeError) as unpatched:
        attention(x)
    posenc_torch.patch(attention)
    with torch.no_grad(), pytest.raises(RuntimeError) as patched:
        attention(x)
    assert str(patched.value) == str(unpatched.value)


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("qkv_bias_separate", [False, True])
def test_beit_blocks_with_class_token(qkv_bias_separate, dtype, tolerance):
    torch.manual_seed(0)
    block = timm_beit.Block(32, num_heads=4, qkv_bias=True, window_size=(3, 4),
                            init_values=0.5)
    block.attn.qkv_bias_separate = qkv_bias_separate
    randomize_bias_tables(block)
    compare(block, torch.randn(2, 13, 32), dtype, tolerance, expect=["beit_attention"])


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("shared", [False, True])
def test_timm_beit_model(shared, dtype, tolerance):
    """Per-block tables (beit_base's) or the model's shared_rel_pos_bias
    passed to every block (its mask in posenc)."""
    torch.manual_seed(0)
    model = timm.create_model("beit_base_patch16_224", pretrained=False, img_size=48, depth=2,
                              embed_dim=64, num_heads=4, num_classes=0,
                              use_rel_pos_bias=not shared, use_shared_rel_pos_bias=shared)
    randomize_bias_tables(model)
    replaced = compare(model, torch.randn(2, 3, 48, 48), dtype, tolerance)
    assert [r.kind for r in replaced] == ["beit_attention"] * 2


@pytest.mark.parametrize("shape", [(13,), (13, 13), (4, 13, 13), (2, 4, 13, 13), (13, 1),
                                   (4, 13, 1)])
def test_beit_shared_bias_broadcast_as_timm_adds_it(shape):
    torch.manual_seed(0)
    module = randomize_bias_tables(timm_beit.Attention(32, num_heads=4, qkv_bias=True,
                                                       window_size=(3, 4))).eval()
    x, shared = torch.randn(2, 13, 32), torch.randn(shape)
    with torch.no_grad():
        expected = module(x, shared_rel_pos_bias=shared)
        posenc_torch.patch(module)
        actual = module(x, shared_rel_pos_bias=shared)
    assert (actual - expected).abs().max().item() <= 1e-5 * expected.abs().max().item()


def test_refuses_what_it_cannot_reproduce_and_patches_nothing():
    model = torch.nn.Sequential(
        timm_sam.Attention(32, num_heads=2),
        timm_sam.Attention(32, num_heads=2, rope=torch.nn.Identity()),
        timm_swin.WindowAttention(32, num_heads=2, window_size=3),
        timm_beit.Attention(32, num_heads=2, window_size=(2, 2)),
        timm_swinv2.WindowAttention(32, (3, 3), num_heads=2))
    model[2].relative_position_index[0, 1] += 1
    model[3].relative_position_bias_table = torch.nn.Parameter(torch.zeros(9, 2))
    model[4].relative_position_index[2, 1] += 1
    with pytest.raises(posenc_torch.PatchError) as refused:
        posenc_torch.patch(model)
    message = str(refused.value)
    assert "1: sam_attention: rotary embeddings" in message
    assert "2: swin_attention: relative_position_index is not the standard one of a 3x3" \
        in message
    assert "3: beit_attention: relative_position_bias_table [9, 2] is not [12, heads]" in message
    assert "4: swinv2_attention: relative_position_index is not the standard one of a 3x3" \
        in message
    assert [name for name, _ in refused.value.refused] == ["1", "2", "3", "4"]
    assert not any(posenc_torch.is_patched(m) for m in model.modules())


def test_fallback_under_autograd_and_training():
    torch.manual_seed(0)
    attention = randomize_position_tables(
        timm_sam.Attention(32, num_heads=2, use_rel_pos=True, input_size=(3, 5)))
    reference = copy.deepcopy(attention)
    x = torch.randn(1, 3, 5, 32)
    posenc_torch.patch(attention)
    out = attention(x)  # parameters require grad: the original forward
    assert out.grad_fn is not None
    torch.testing.assert_close(out, reference(x), rtol=0, atol=0)
    out.sum().backward()
    assert attention.rel_pos_h.grad is not None
    attention.train()
    with torch.no_grad():
        torch.testing.assert_close(attention(x), reference.train()(x), rtol=0, atol=0)
        attention.eval()
        assert attention(x).grad_fn is None


def test_swin_fallback_under_autograd_passes_the_mask():
    torch.manual_seed(0)
    block = randomize_bias_tables(timm_swin.SwinTransformerBlock(
        32, input_resolution=(6, 6), num_heads=2, window_size=3, shift_size=1)).eval()
    reference = copy.deepcopy(block)
    posenc_torch.patch(block)
    x = torch.randn(1, 6, 6, 32, requires_grad=True)
    torch.testing.assert_close(block(x), reference(x), rtol=0, atol=0)
    assert block(x).grad_fn is not None


def test_unpatch_restores_the_original_forward():
    attention = timm_sam.Attention(32, num_heads=2)
    posenc_torch.patch(attention)
    assert posenc_torch.patch(attention) == []  # patched once
    assert posenc_torch.unpatch(attention) == 1
    assert "forward" not in vars(attention)


def test_inputs_of_other_tokens_than_the_window_get_timms_error():
    swin = timm_swin.WindowAttention(16, num_heads=2, window_size=(3, 4)).eval()
    beit = timm_beit.Attention(16, num_heads=2, window_size=(3, 3)).eval()
    for module, x in ((swin, torch.randn(2, 6, 16)), (beit, torch.randn(2, 6, 16))):
        with torch.no_grad(), pytest.raises(RuntimeError) as unpatched:
            module(x)
        posenc_torch.patch(module)
        with torch.no_grad(), pytest.raises(RuntimeError) as patched:
            module(x)
        posenc_torch.unpatch(module)
        assert type(patched.value) is type(unpatched.value)
        assert str(patched.value) == str(unpatched.value)


def test_a_swin_mask_wider_than_the_input_gets_timms_error():
    """An fp32 mask in a bf16 Swin block: timm's scores become fp32, and
    their product with the bf16 v fails; so does the patched module's."""
    swin = timm_swin.WindowAttention(16, num_heads=2, window_size=(2, 2)).eval().bfloat16()
    x, mask = torch.randn(4, 4, 16).bfloat16(), torch.zeros(2, 4, 4)
    with torch.no_grad(), pytest.raises(RuntimeError) as unpatched:
        swin(x, mask)
    posenc_torch.patch(swin)
    with torch.no_grad(), pytest.raises(RuntimeError) as patched:
        swin(x, mask)
    assert str(patched.value) == str(unpatched.value)
    with torch.no_grad():  # a mask of the input's dtype is posenc's
        swin(x, mask.bfloat16())


def test_entry_points_take_modules_only():
    for entry in (posenc_torch.patch, posenc_torch.unpatch, posenc_torch.known_modules):
        with pytest.raises(TypeError, match="^model: expected a torch.nn.Module, got NoneType"):
            entry(None)


def test_unpatch_refuses_a_wrapper_set_after_patch_and_unpatches_nothing():
    """Deleting the instance's forward would drop the wrapper (accelerate's
    hooks are one), keeping it would keep posenc: refused, as it is."""
    model = torch.nn.Sequential(timm_sam.Attention(32, num_heads=2),
                                timm_sam.Attention(32, num_heads=2))
    posenc_torch.patch(model)
    patched = model[1].forward

    def wrapper(x):
        return patched(x)

    model[1].forward = wrapper
    with pytest.raises(posenc_torch.PatchError, match="1: its forward was replaced"):
        posenc_torch.unpatch(model)
    assert posenc_torch.is_patched(model[0]) and posenc_torch.is_patched(model[1])
    assert model[1].forward is wrapper
    model[1].forward = patched
    assert posenc_torch.unpatch(model) == 2


def test_forward_mode_ad_and_torch_func_transforms_fall_back():
    """A tangent on the input or on a parameter, and a transform's batched
    tensors (without storage), get timm's forward: posenc would drop the
    tangent, and cannot read the batched tensors. timm's explicit path:
    torch 2.15's CPU flash attention, its fused one, has no forward AD."""
    forward_ad = torch.autograd.forward_ad
    torch.manual_seed(0)
    attention = _explicit(randomize_position_tables(timm_sam.Attention(
        32, num_heads=2, use_rel_pos=True, input_size=(3, 5)))).requires_grad_(False)
    reference = copy.deepcopy(attention)
    posenc_torch.patch(attention)
    x, tangent = torch.randn(1, 3, 5, 32), torch.randn(1, 3, 5, 32)
    for module in (reference, attention):
        with forward_ad.dual_level():
            out = forward_ad.unpack_dual(module(forward_ad.make_dual(x, tangent)))
        module.jvp = out.tangent
    assert attention.jvp is not None
    torch.testing.assert_close(attention.jvp, reference.jvp, rtol=0, atol=0)
    functional_call = getattr(getattr(torch, "func", None), "functional_call", None) or \
        torch.nn.utils.stateless.functional_call
    weight = attention.qkv.weight
    for module in (reference, attention):  # a tangent on a parameter only
        with forward_ad.dual_level():
            dual = forward_ad.make_dual(weight, torch.ones_like(weight))
            out = functional_call(module, {"qkv.weight": dual}, (x,))
            module.jvp = forward_ad.unpack_dual(out).tangent
    assert attention.jvp is not None
    torch.testing.assert_close(attention.jvp, reference.jvp, rtol=0, atol=0)
    vmap = getattr(torch, "vmap", None) or pytest.importorskip("functorch").vmap
    xs = torch.randn(2, 1, 3, 5, 32)
    torch.testing.assert_close(vmap(attention)(xs), torch.stack([reference(x) for x in xs]))


def test_patching_again_takes_the_new_dtype():
    torch.manual_seed(0)
    attention = randomize_position_tables(
        timm_sam.Attention(32, num_heads=2, use_rel_pos=True, input_size=(3, 5))).eval()
    in_bf16 = copy.deepcopy(attention)
    posenc_torch.patch(in_bf16, dtype=torch.bfloat16)
    posenc_torch.patch(attention)
    x = torch.randn(2, 3, 5, 32)
    with torch.no_grad():
        in_f32 = attention(x)
        assert posenc_torch.patch(attention, dtype=torch.bfloat16) == [
            posenc_torch.PatchedModule("", "sam_attention")]
        assert posenc_torch.patch(attention, dtype=torch.bfloat16) == []
        torch.testing.assert_close(attention(x), in_bf16(x), rtol=0, atol=0)
        assert not torch.equal(attention(x), in_f32)

    # A wrapper set since is refused, as one set before patching is.
    patched = attention.forward
    attention.forward = lambda x: patched(x)
    with pytest.raises(posenc_torch.PatchError, match="a forward of its own"):
        posenc_torch.patch(attention)


def test_a_module_on_the_meta_device_is_refused_by_name():
    window = timm_swin.WindowAttention(32, num_heads=2, window_size=(3, 5)).to("meta")
    with pytest.raises(posenc_torch.PatchError, match="on the meta device"):
        posenc_torch.patch(window)


def test_refuses_a_forward_of_the_instance_own():
    """A wrapper set on the instance (accelerate's hooks are one) would be
    skipped by posenc's forward: refused, and left as it is."""
    attention = timm_sam.Attention(32, num_heads=2)

    def wrapper(x):
        return type(attention).forward(attention, x)

    attention.forward = wrapper
    with pytest.raises(posenc_torch.PatchError, match="a forward of its own"):
        posenc_torch.patch(attention)
    assert attention.forward is wrapper and not posenc_torch.is_patched(attention)


def test_inputs_posenc_does_not_take_fall_back():
    """float64 (and anything but float32 and bfloat16): the original
    forward, exactly, for every kind."""
    torch.manual_seed(0)
    cases = [
        (randomize_position_tables(timm_sam.Attention(32, num_heads=2, use_rel_pos=True,
                                                      input_size=(3, 5))),
         torch.randn(1, 3, 5, 32)),
        (timm_botnet.BottleneckAttn(16, 32, feat_size=(4, 6), num_heads=2),
         torch.randn(2, 16, 4, 6)),
        (randomize_bias_tables(timm_swin.WindowAttention(32, num_heads=2, window_size=3)),
         torch.randn(2, 9, 32)),
    ]
    for module, x in cases:
        module = module.double().eval()
        reference = copy.deepcopy(module)
        posenc_torch.patch(module)
        with torch.no_grad():
            torch.testing.assert_close(module(x.double()), reference(x.double()), rtol=0,
                                       atol=0)


def test_masks_posenc_does_not_add_as_timm_does_fall_back():
    """timm adds Swin's mask and BEiT's shared_rel_pos_bias to the scores,
    a bool one as 0 and 1 (not as torch's attn_mask reads it), and Swin's
    of another shape than SwinTransformerBlock's [nW, N, N] by its own
    broadcasting: the original forward, exactly."""
    torch.manual_seed(0)
    swin = randomize_bias_tables(timm_swin.WindowAttention(16, num_heads=2,
                                                           window_size=(3, 4))).eval()
    beit = randomize_bias_tables(timm_beit.Attention(16, num_heads=2, qkv_bias=True,
                                                     window_size=(3, 3))).eval()
    cases = [(swin, torch.randn(4, 12, 16), "mask", torch.rand(2, 12, 12) < 0.7),
             (swin, torch.randn(4, 12, 16), "mask", torch.randn(1, 2, 12, 12)),
             (beit, torch.randn(2, 10, 16), "shared_rel_pos_bias", torch.rand(2, 10, 10) < 0.7)]
    for module, x, name, mask in cases:
        reference = copy.deepcopy(module)
        posenc_torch.patch(module)
        with torch.no_grad():
            torch.testing.assert_close(module(x, **{name: mask}), reference(x, **{name: mask}),
                                       rtol=0, atol=0)
        posenc_torch.unpatch(module)


def _refusal(module, x):
    with torch.no_grad(), pytest.raises(RuntimeError) as refused:
        module(x)
    return str(refused.value)


def test_bottleneck_inputs_timm_refuses_are_refused():
    """posenc runs the qkv convolution itself: a bf16 input to an fp32 block,
    which timm's convolution refuses, is not run in the input's dtype; an
    empty batch, which timm's reshape refuses, does not return empty. Both
    get timm's own refusal, whose wording depends on torch and the CPU."""
    module = timm_botnet.BottleneckAttn(8, 16, feat_size=(4, 5), num_heads=2).eval()
    for x in (torch.randn(2, 8, 4, 5).bfloat16(), torch.randn(0, 8, 4, 5)):
        timm_says = _refusal(module, x)
        posenc_torch.patch(module)
        assert _refusal(module, x) == timm_says
        posenc_torch.unpatch(module)


def test_beit_shared_bias_that_torch_would_not_broadcast_is_timm_refusal():
    """A batch of 2 biases for 4 inputs: timm's addition refuses it, where
    posenc's mask would read item b's as b % 2."""
    module = timm_beit.Attention(16, num_heads=2, qkv_bias=True, window_size=(3, 3)).eval()
    posenc_torch.patch(module)
    with torch.no_grad(), pytest.raises(RuntimeError, match="must match the size"):
        module(torch.randn(4, 10, 16), shared_rel_pos_bias=torch.randn(2, 2, 10, 10))


def test_autocast_and_global_forward_hooks_fall_back():
    """Under torch.autocast timm's layers run in its dtype, and global
    forward hooks run on the BoTNet block's qkv convolution (which posenc
    runs itself): the original forward, exactly."""
    torch.manual_seed(0)
    module = timm_botnet.BottleneckAttn(8, 16, feat_size=(4, 5), num_heads=2).eval()
    reference = copy.deepcopy(module)
    posenc_torch.patch(module)
    x = torch.randn(2, 8, 4, 5)
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            actual, expected = module(x), reference(x)
        assert actual.dtype == torch.bfloat16
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
        hook = torch.nn.modules.module.register_module_forward_hook(
            lambda m, inputs, out: out * 1.5 if isinstance(m, torch.nn.Conv2d) else None)
        try:
            actual, expected = module(x), reference(x)
        finally:
            hook.remove()
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)


@pytest.mark.skipif(not hasattr(torch.nn.functional, "scaled_dot_product_attention"),
                    reason="timm's fused path needs torch 2")
def test_fused_path_scale_is_sdpa_default():
    """timm's fused path (fused_attn) scales by head_dim^-1/2 whatever
    module.scale says; the explicit path reads module.scale."""
    torch.manual_seed(0)
    cases = [(timm_sam.Attention(16, num_heads=2, use_rel_pos=True, input_size=(3, 4)),
              torch.randn(2, 3, 4, 16)),
             (timm_swin.WindowAttention(16, num_heads=2, window_size=(3, 4)),
              torch.randn(2, 12, 16)),
             (timm_beit.Attention(16, num_heads=2, window_size=(3, 3)), torch.randn(2, 10, 16))]
    for module, x in cases:
        module = randomize_bias_tables(randomize_position_tables(module)).eval()
        module.scale = 0.1
        for fused in (True, False):
            module.fused_attn = fused
            reference = copy.deepcopy(module)
            posenc_torch.patch(module)
            with torch.no_grad():
                torch.testing.assert_close(module(x), reference(x), rtol=1e-5, atol=1e-5)
            posenc_torch.unpatch(module)


def test_patched_models_copy_pickle_and_save(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        randomize_position_tables(timm_sam.Attention(32, num_heads=2, use_rel_pos=True,
                                                     input_size=(3, 5))),
        torch.nn.Identity()).eval()
    posenc_torch.patch(model)
    x = torch.randn(1, 3, 5, 32)
    with torch.no_grad():
        expected = model(x)
        torch.save(model, tmp_path / "model.pt")
        # (A whole module, not weights: torch 2.6 and later load weights only by default.)
        loaded = torch.load(tmp_path / "model.pt", weights_only=False)
        for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)), loaded):
            assert posenc_torch.is_patched(twin[0])
            # the copy's forward runs on the copy's own weights
            assert twin[0].forward.args[0] is twin[0]
            torch.testing.assert_close(twin(x), expected, rtol=0, atol=0)
            # (the copy's marker names its own forward: patch takes it again)
            assert len(posenc_torch.patch(twin, dtype=torch.bfloat16)) == 1
            assert posenc_torch.unpatch(twin) == 1
            torch.testing.assert_close(twin(x), expected, rtol=1e-5, atol=1e-5)


def test_posenc_follows_torch_threads(monkeypatch):
    threads = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            assert posenc.default_context().num_threads == count
    finally:
        torch.set_num_threads(threads)
    # Past posenc's maximum, which torch takes (its pool made at once, slowly).
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2000)
    assert posenc.default_context().num_threads == 1024


@pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                    reason="torch.library.custom_op came with torch 2.4")
def test_the_custom_ops_fake_shapes_are_the_real_ones():
    """torch.compile sizes the ops' outputs by their fake implementations:
    v's head size, not q's, where they differ."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    inputs = {"q": torch.randn(1, 6, 2, 8), "v": torch.randn(1, 6, 2, 5),
              "table_h": torch.randn(3, 8), "table_w": torch.randn(5, 8),
              "table": torch.randn(5 * 3, 2)}  # a 2x3 map or window
    calls = [
        lambda q, v, **_: torch.ops.posenc.attention_2d(q, q, v, None, None, 0.3, True,
                                                        torch.float32),
        lambda q, v, table_h, table_w, **_: torch.ops.posenc.attention_2d(
            q, q, v, table_h, table_w, 0.3, True, torch.bfloat16),
        lambda q, v, table, **_: torch.ops.posenc.attention_table_2d(
            q, q, v, table, [2, 3], False, None, 0.3, torch.float32),
    ]
    for call in calls:
        real = call(**inputs)
        with FakeTensorMode() as mode:
            fake = call(**{name: mode.from_tensor(x) for name, x in inputs.items()})
        assert (fake.shape, fake.dtype) == (real.shape, real.dtype)


def compile_case(kind):
    """A module of kind in eval mode, its input and keyword arguments, and
    the custom op its patched forward calls."""
    torch.manual_seed(0)
    kwargs = {}
    if kind == "sam":
        module = randomize_position_tables(
            timm_sam.Attention(32, num_heads=2, use_rel_pos=True, input_size=(3, 5)))
        x, op = torch.randn(1, 3, 5, 32), torch.ops.posenc.attention_2d.default
    elif kind == "botnet":
        module = timm_botnet.BottleneckAttn(16, 32, feat_size=(4, 6), num_heads=2)
        x, op = torch.randn(2, 16, 4, 6), torch.ops.posenc.bottleneck.default
    elif kind in ("swin", "swinv2"):
        module = randomize_bias_tables(timm_swin.WindowAttention(32, num_heads=2,
                                                                 window_size=(3, 5))) \
            if kind == "swin" else randomize_swinv2(timm_swinv2.WindowAttention(32, (3, 5), 2))
        x, op = torch.randn(4, 15, 32), torch.ops.posenc.attention_table_2d.default
        kwargs["mask"] = torch.where(torch.rand(2, 15, 15) < 0.3, -100.0, 0.0)
    elif kind == "mvitv2":  # q and the keys pooled to 4x4 and 2x2
        module = MapCall(timm_mvitv2.MultiScaleAttention(
            32, 32, (8, 8), num_heads=4, kernel_q=(3, 3), kernel_kv=(3, 3), stride_q=(2, 2),
            stride_kv=(4, 4), has_cls_token=False), [8, 8])
        randomize_position_tables(module)
        x, op = torch.randn(2, 64, 32), torch.ops.posenc.attention_2d.default
    else:  # timm's pos_embed_rel biases: an MLP's table, MaxViT's flipped one
        rel_pos = {"relpos_mlp": timm_rel.RelPosMlp, "maxvit_tf": timm_rel.RelPosBiasTf,
                   "coatnet": timm_rel.RelPosBias}[kind]
        rel_pos_cls = functools.partial(rel_pos, window_size=(3, 5))
        module, x = {
            "relpos_mlp": (timm_relpos.RelPosAttention(32, num_heads=4, rel_pos_cls=rel_pos_cls),
                           torch.randn(2, 15, 32)),
            "maxvit_tf": (timm_maxxvit.AttentionCl(32, dim_head=8, head_first=False,
                                                   rel_pos_cls=rel_pos_cls),
                          torch.randn(4, 3, 5, 32)),
            "coatnet": (timm_maxxvit.Attention2d(32, dim_head=8, rel_pos_cls=rel_pos_cls),
                        torch.randn(2, 32, 3, 5))}[kind]
        for name, parameter in module.named_parameters():
            if "rel_pos" in name:
                torch.nn.init.normal_(parameter)
        op = torch.ops.posenc.attention_table_2d.default
    return module.eval(), x, kwargs, op


COMPILE_KINDS = ["sam", "botnet", "swin", "swinv2", "relpos_mlp", "maxvit_tf", "coatnet",
                 "mvitv2"]


def compiled_with_graphs(module):
    """torch.compile(module, fullgraph=True) and the graphs it makes."""
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    return torch.compile(module, backend=backend, fullgraph=True), graphs


@pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                    reason="torch.library.custom_op came with torch 2.4")
@pytest.mark.parametrize("kind", COMPILE_KINDS)
def test_torch_compile_keeps_the_custom_ops_in_its_graph(kind):
    """fullgraph=True: a graph break (Dynamo meeting the ctypes call) fails."""
    module, x, kwargs, op = compile_case(kind)
    with torch.no_grad():
        expected = module(x, **kwargs)
        posenc_torch.patch(module)
    compiled, graphs = compiled_with_graphs(module)
    with torch.no_grad():
        actual = compiled(x, **kwargs)
    assert [node.target for g in graphs for node in g.graph.nodes].count(op) == 1
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                    reason="torch.library.custom_op came with torch 2.4")
@pytest.mark.parametrize("kind", COMPILE_KINDS)
def test_torch_compile_traces_the_fallback(kind):
    """With grad on the patched forward runs the module's own, which
    fullgraph=True traces (the bound method's __get__ broke the graph)."""
    module, x, kwargs, op = compile_case(kind)
    expected = module(x, **kwargs)
    posenc_torch.patch(module)
    compiled, graphs = compiled_with_graphs(module)
    actual = compiled(x, **kwargs)
    assert [node.target for g in graphs for node in g.graph.nodes].count(op) == 0
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
    actual.sum().backward()


@pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                    reason="torch.library.custom_op came with torch 2.4")
@pytest.mark.parametrize("strict", [False, True], ids=["non_strict", "strict"])
@pytest.mark.parametrize("kind", COMPILE_KINDS)
def test_torch_export_keeps_the_custom_ops(kind, strict):
    """Under torch.no_grad. torch 2.15's is_fx_tracing is true under export's
    default, non-strict tracing, where the patched forward ran timm's ops."""
    module, x, kwargs, op = compile_case(kind)
    with torch.no_grad():
        expected = module(x, **kwargs)
        posenc_torch.patch(module)
        program = torch.export.export(module, (x,), kwargs, strict=strict)
        actual = program.module()(x, **kwargs)
    assert [node.target for node in program.graph.nodes].count(op) == 1
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


def test_fx_symbolic_trace_records_the_modules_own_ops():
    """Under torch.no_grad a patched submodule's forward met fx's proxies,
    and failed on posenc's checks; it now runs the module's own forward.
    (fx traces the root's class forward, so the module sits in a model.)"""
    torch.manual_seed(0)
    model = torch.nn.Sequential(randomize_bias_tables(
        timm_swin.WindowAttention(32, num_heads=2, window_size=(3, 5)))).eval()
    x = torch.randn(4, 15, 32)
    with torch.no_grad():
        try:
            torch.fx.symbolic_trace(model)
        except torch.fx.proxy.TraceError:  # torch 1.13 cannot trace timm's forward
            pytest.skip("torch.fx cannot trace the unpatched module")
        expected = model(x)
        posenc_torch.patch(model)
        traced = torch.fx.symbolic_trace(model)
        torch.testing.assert_close(traced(x), expected, rtol=0, atol=0)
    assert "posenc" not in traced.code


def _explicit(module):
    """module on timm's explicit path (its softmax and attn_drop called), as
    timm's AttentionExtract sets it."""
    if hasattr(module, "fused_attn"):
        module.fused_attn = False
    return module.eval()


SKIPPED_SUBMODULES = [
    (lambda: randomize_bias_tables(timm_swin.WindowAttention(16, num_heads=2, window_size=3)),
     (2, 9, 16), ("softmax", "attn_drop")),
    (lambda: randomize_swinv2(timm_swinv2.WindowAttention(16, (3, 3), num_heads=2)),
     (2, 9, 16), ("softmax", "attn_drop")),
    (lambda: randomize_bias_tables(timm_beit.Attention(16, num_heads=2, qkv_bias=True,
                                                       window_size=(3, 3))),
     (2, 10, 16), ("attn_drop",)),
    (lambda: randomize_position_tables(timm_sam.Attention(16, num_heads=2, use_rel_pos=True,
                                                          input_size=(3, 4))),
     (2, 3, 4, 16), ("attn_drop", "q_norm", "k_norm")),
    (lambda: randomize_position_tables(timm_sam.Attention(16, num_heads=2, use_rel_pos=True,
                                                          qk_norm=True, input_size=(3, 4))),
     (2, 3, 4, 16), ("q_norm", "k_norm")),
    (lambda: timm_botnet.BottleneckAttn(8, 16, feat_size=(4, 6), stride=2, num_heads=2),
     (2, 8, 4, 6), ("pos_embed", "pool")),
    (lambda: timm_relpos.RelPosAttention(16, num_heads=2, rel_pos_cls=functools.partial(
        timm_rel.RelPosMlp, window_size=(3, 3), hidden_dim=8, mode="swin")),
     (2, 9, 16), ("rel_pos", "rel_pos.bias_act", "attn_drop")),
    (lambda: timm_maxxvit.AttentionCl(16, dim_head=8, rel_pos_cls=functools.partial(
        timm_rel.RelPosBiasTf, window_size=(3, 3))), (2, 3, 3, 16), ("rel_pos", "attn_drop")),
    (lambda: timm_maxxvit.Attention2d(16, dim_head=8, rel_pos_cls=functools.partial(
        timm_rel.RelPosBias, window_size=(3, 3))), (2, 16, 3, 3), ("rel_pos", "attn_drop")),
]


@pytest.mark.parametrize("make,shape,skipped", SKIPPED_SUBMODULES,
                         ids=["swin", "swinv2", "beit", "sam", "sam_qk_norm", "botnet", "relpos",
                              "maxvit", "coatnet"])
def test_hooks_on_submodules_posenc_does_not_run_fall_back(make, shape, skipped):
    """timm's forward gives these submodules what posenc's fused attention
    never makes (the probabilities) or runs inside it: while one has a
    forward hook, or while global forward hooks are registered, the call
    runs the original forward, and each hook sees what it sees unpatched."""
    torch.manual_seed(0)
    module = _explicit(make())
    reference = copy.deepcopy(module)
    posenc_torch.patch(module)
    x = torch.randn(*shape)
    for name in skipped:
        seen, seen_unpatched = [], []
        handles = [functools.reduce(getattr, name.split("."), m).register_forward_hook(
            lambda _m, _inputs, out, record=record: record.append(out))
            for m, record in ((module, seen), (reference, seen_unpatched))]
        try:
            with torch.no_grad():
                actual, expected = module(x), reference(x)
        finally:
            for handle in handles:
                handle.remove()
        assert len(seen) == len(seen_unpatched) == 1, name
        torch.testing.assert_close(seen[0], seen_unpatched[0], rtol=0, atol=0)
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    calls = []
    hook = torch.nn.modules.module.register_module_forward_hook(
        lambda m, _inputs, _out: calls.append(type(m).__name__))
    try:
        with torch.no_grad():
            actual = module(x)
            unpatched_calls = calls[:]
            calls.clear()
            expected = reference(x)
    finally:
        hook.remove()
    assert unpatched_calls == calls
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


DROPPING = [
    (lambda: timm_swin.WindowAttention(16, num_heads=2, window_size=3, attn_drop=0.5),
     (2, 9, 16)),
    (lambda: timm_swinv2.WindowAttention(16, (3, 3), num_heads=2, attn_drop=0.5), (2, 9, 16)),
    (lambda: timm_beit.Attention(16, num_heads=2, window_size=(3, 3), attn_drop=0.5),
     (2, 10, 16)),
    (lambda: timm_sam.Attention(16, num_heads=2, use_rel_pos=True, input_size=(3, 4),
                                attn_drop=0.5), (2, 3, 4, 16)),
    (lambda: timm_relpos.RelPosAttention(16, num_heads=2, attn_drop=0.5), (2, 9, 16)),
    (lambda: timm_maxxvit.AttentionCl(16, dim_head=8, attn_drop=0.5), (2, 3, 3, 16)),
    (lambda: timm_maxxvit.Attention2d(16, dim_head=8, attn_drop=0.5), (2, 16, 3, 3)),
]


@pytest.mark.parametrize("make,shape", DROPPING, ids=["swin", "swinv2", "beit", "sam", "relpos",
                                                      "maxvit", "coatnet"])
def test_an_attn_drop_in_training_mode_falls_back(make, shape):
    """Monte Carlo dropout: the module in eval mode, its attn_drop in
    training mode drops attention probabilities, which posenc never makes."""
    torch.manual_seed(0)
    module = _explicit(make())
    module.attn_drop.train()
    reference = copy.deepcopy(module)
    posenc_torch.patch(module)
    x = torch.randn(*shape)
    with torch.no_grad():
        for _ in range(2):
            torch.manual_seed(1)
            actual = module(x)
            torch.manual_seed(1)
            torch.testing.assert_close(actual, reference(x), rtol=0, atol=0)
        assert not torch.equal(module(x), module(x))
        module.attn_drop.p = 0.0  # drops nothing: as unpatched, without a seed
        reference.attn_drop.p = 0.0
        torch.testing.assert_close(module(x), reference(x))


def test_skipped_submodules_that_could_compute_are_refused():
    """The submodules the patched forward does not run must compute nothing
    in eval mode (Dropout, Identity, a softmax over the keys, timm's own
    positional logits and 2x2 pool): others are refused by name."""
    swin_softmax = timm_swin.WindowAttention(16, num_heads=2, window_size=3)
    swin_softmax.softmax = torch.nn.Softmax(dim=2)
    swin_drop = timm_swin.WindowAttention(16, num_heads=2, window_size=3)
    swin_drop.attn_drop = torch.nn.Tanh()
    beit = timm_beit.Attention(16, num_heads=2, window_size=(2, 2))
    beit.attn_drop = torch.nn.AlphaDropout(0.1)
    sam = timm_sam.Attention(16, num_heads=2)
    sam.attn_drop = torch.nn.ReLU()
    botnet_pool = timm_botnet.BottleneckAttn(8, 16, feat_size=(4, 6), stride=2, num_heads=2)
    botnet_pool.pool = torch.nn.MaxPool2d(2)
    botnet_pos = timm_botnet.BottleneckAttn(8, 16, feat_size=(4, 6), num_heads=2)
    botnet_pos.pos_embed = torch.nn.Identity()
    swinv2_softmax = timm_swinv2.WindowAttention(16, (3, 3), num_heads=2)
    swinv2_softmax.softmax = torch.nn.Softmax(dim=1)
    swinv2_drop = timm_swinv2.WindowAttention(16, (3, 3), num_heads=2)
    swinv2_drop.attn_drop = torch.nn.Sigmoid()
    model = torch.nn.Sequential(swin_softmax, swin_drop, beit, sam, botnet_pool, botnet_pos,
                                swinv2_softmax, swinv2_drop,
                                timm_swin.WindowAttention(16, num_heads=2, window_size=3))
    with pytest.raises(posenc_torch.PatchError) as refused:
        posenc_torch.patch(model)
    message = str(refused.value)
    assert "0: swin_attention: softmax (Softmax) is not an nn.Softmax over the keys" in message
    assert "1: swin_attention: attn_drop (Tanh) is not an nn.Dropout" in message
    assert "2: beit_attention: attn_drop (AlphaDropout) is not an nn.Dropout" in message
    assert "3: sam_attention: attn_drop (ReLU) is not an nn.Dropout" in message
    assert "4: bottleneck_attention: pool (MaxPool2d) is neither" in message
    assert "5: bottleneck_attention: pos_embed (Identity) is not timm's PosEmbedRel" in message
    assert "6: swinv2_attention: softmax (Softmax) is not an nn.Softmax over the keys" in message
    assert "7: swinv2_attention: attn_drop (Sigmoid) is not an nn.Dropout" in message
    assert [name for name, _ in refused.value.refused] == ["0", "1", "2", "3", "4", "5", "6",
                                                           "7"]
    assert not any(posenc_torch.is_patched(m) for m in model.modules())


def test_traced_patched_module_records_timm_ops():
    """torch.jit.trace (and torch.onnx.export, which traces) records the
    original forward's ops: without custom ops (torch before 2.4) posenc's
    call would be invisible to it, and the trace would keep only the
    allocation of its output."""
    torch.manual_seed(0)
    module = randomize_bias_tables(timm_swin.WindowAttention(16, num_heads=2, window_size=3))
    reference = copy.deepcopy(module.eval())
    posenc_torch.patch(module)
    x, other = torch.randn(2, 9, 16), torch.randn(2, 9, 16)
    with torch.no_grad():
        traced = torch.jit.trace(module, x, check_trace=False)
        torch.testing.assert_close(traced(other), reference(other), rtol=0, atol=0)
        torch.testing.assert_close(module(other), reference(other), rtol=1e-5, atol=1e-5)


def test_unpatch_after_removing_a_wrapper_that_deleted_forward():
    """The wrapper refused by unpatch, removed by `del`, leaves no forward of
    the instance: unpatch then restores the class's."""
    attention = timm_sam.Attention(32, num_heads=2)
    posenc_torch.patch(attention)
    attention.forward = lambda x: x
    with pytest.raises(posenc_torch.PatchError, match="remove it first"):
        posenc_torch.unpatch(attention)
    del attention.forward
    assert posenc_torch.unpatch(attention) == 1
    assert not posenc_torch.is_patched(attention) and "forward" not in vars(attention)
