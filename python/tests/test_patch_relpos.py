"""posenc.torch.patch on timm's attention with a pos_embed_rel bias, against
the unpatched modules on random weights: vision_transformer_relpos's
RelPosAttention and maxxvit's AttentionCl and Attention2d, with each of
RelPosBias, RelPosBiasTf and RelPosMlp (both modes, with and without a prefix
token) on non-square windows, both qkv channel orders, qk_norm, a shared
bias, whole vit_relpos, vit_srelpos, MaxViT and CoAtNet models, and what
falls back or is refused."""
import copy
import re
import functools

import pytest
import torch

import timm
import timm.layers.pos_embed_rel as timm_rel
import timm.models.maxxvit as timm_maxxvit
import timm.models.vision_transformer_relpos as timm_relpos

import posenc.torch as posenc_torch
from patch_checks import DTYPES, compare

WINDOW = (3, 4)  # non-square: a transposed or flipped table shows


def rel_pos_class(kind, prefix_tokens=0):
    """A rel_pos_cls as timm's models pass it (num_heads added by the module)."""
    if kind == "bias":
        return functools.partial(timm_rel.RelPosBias, window_size=WINDOW,
                                 prefix_tokens=prefix_tokens)
    if kind == "bias_tf":
        return functools.partial(timm_rel.RelPosBiasTf, window_size=WINDOW)
    mode = kind.split("_")[1]  # mlp_swin, mlp_cr
    return functools.partial(timm_rel.RelPosMlp, window_size=WINDOW, hidden_dim=16, mode=mode,
                             prefix_tokens=prefix_tokens)


def randomized(module):
    """Random tables and MLP weights of a scale that moves the softmax (timm
    starts the tables near zero, which would hide a wrong index), and
    random qkv biases."""
    torch.manual_seed(3)
    for name, parameter in module.named_parameters():
        if "rel_pos" in name or name.endswith("bias"):
            torch.nn.init.normal_(parameter)
    return module


KINDS = ["bias", "bias_tf", "mlp_swin", "mlp_cr"]


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("qk_norm", [False, True])
@pytest.mark.parametrize("kind,prefix", [(k, 0) for k in KINDS] +
                         [("bias", 1), ("mlp_swin", 1), ("mlp_cr", 1)])
def test_relpos_attention(kind, prefix, qk_norm, dtype, tolerance):
    torch.manual_seed(0)
    module = randomized(timm_relpos.RelPosAttention(
        32, num_heads=4, qkv_bias=True, qk_norm=qk_norm,
        rel_pos_cls=rel_pos_class(kind, prefix)))
    tokens = WINDOW[0] * WINDOW[1] + prefix
    compare(module, torch.randn(3, tokens, 32), dtype, tolerance, expect=["relpos_attention"])


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("head_first", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_maxxvit_channels_last_attention(kind, head_first, dtype, tolerance):
    """MaxViT's windows and grids [B * partitions, ph, pw, C]."""
    torch.manual_seed(0)
    module = randomized(timm_maxxvit.AttentionCl(32, dim_head=8, head_first=head_first,
                                                 rel_pos_cls=rel_pos_class(kind)))
    compare(module, torch.randn(5, *WINDOW, 32), dtype, tolerance, expect=["maxxvit_attention"])


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("head_first", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_maxxvit_nchw_attention(kind, head_first, dtype, tolerance):
    """CoAtNet's attention over an NCHW map."""
    torch.manual_seed(0)
    module = randomized(timm_maxxvit.Attention2d(32, 48, dim_head=8, head_first=head_first,
                                                 rel_pos_cls=rel_pos_class(kind)))
    compare(module, torch.randn(2, 32, *WINDOW), dtype, tolerance,
            expect=["maxxvit_attention_2d"])


@pytest.mark.parametrize("shape", [(1, 4, 12, 12), (2, 4, 12, 12), (4, 12, 12), (12, 12),
                                   (4, 12, 1)])
@pytest.mark.parametrize("module_class", ["relpos", "channels_last", "nchw"])
def test_shared_bias_without_rel_pos_broadcast_as_timm_adds_it(module_class, shape):
    """vit_srelpos's model-wide bias, passed to each block as shared_rel_pos
    (posenc's mask, read in place)."""
    torch.manual_seed(0)
    module, x = {
        "relpos": (timm_relpos.RelPosAttention(32, num_heads=4, qkv_bias=True),
                   torch.randn(2, 12, 32)),
        "channels_last": (timm_maxxvit.AttentionCl(32, dim_head=8), torch.randn(2, 3, 4, 32)),
        "nchw": (timm_maxxvit.Attention2d(32, dim_head=8), torch.randn(2, 32, 3, 4))}[
        module_class]
    module = randomized(module).eval()
    shared = torch.randn(shape)
    with torch.no_grad():
        expected = module(x, shared_rel_pos=shared)
        posenc_torch.patch(module)
        actual = module(x, shared_rel_pos=shared)
    assert (actual - expected).abs().max().item() <= 1e-5 * expected.abs().max().item()


def test_plain_attention_without_any_bias():
    torch.manual_seed(0)
    compare(randomized(timm_maxxvit.AttentionCl(32, dim_head=8)), torch.randn(3, 5, 7, 32),
            expect=["maxxvit_attention"])


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("name,options", [
    ("vit_relpos_small_patch16_224", {}),
    ("vit_relpos_medium_patch16_cls_224", {}),
    ("vit_relpos_small_patch16_224", {"rel_pos_type": "bias", "class_token": True}),
    ("vit_relpos_small_patch16_224", {"rel_pos_type": "mlp_swin"}),
    ("vit_srelpos_small_patch16_224", {}),
])
def test_timm_vit_relpos_models(name, options, dtype, tolerance):
    """Without timm's LayerScale of 1e-6 on the attention branch, which
    would leave the model's output within 1e-5 of it without attention."""
    torch.manual_seed(0)
    model = randomized(timm.create_model(name, pretrained=False, img_size=48, depth=2,
                                         embed_dim=64, num_heads=4, num_classes=0,
                                         init_values=None, **options))
    replaced = compare(model, torch.randn(2, 3, 48, 48), dtype, tolerance)
    assert [r.kind for r in replaced] == ["relpos_attention"] * 2


@pytest.mark.parametrize("dtype,tolerance", DTYPES)
@pytest.mark.parametrize("name,kind", [("maxvit_rmlp_pico_rw_256", "maxxvit_attention"),
                                       ("maxvit_tiny_tf_224", "maxxvit_attention"),
                                       ("coatnet_0_rw_224", "maxxvit_attention_2d"),
                                       ("coatnet_rmlp_nano_rw_224", "maxxvit_attention_2d")])
def test_timm_maxvit_and_coatnet_models(name, kind, dtype, tolerance):
    """Windows and grids of 2x2 at 64 pixels (MaxViT), the whole 4x4 and 2x2
    maps (CoAtNet's last stages)."""
    torch.manual_seed(0)
    model = randomized(timm.create_model(name, pretrained=False, img_size=64, num_classes=0))
    replaced = compare(model, torch.randn(2, 3, 64, 64), dtype, tolerance)
    assert replaced and {r.kind for r in replaced} == {kind}


def test_refuses_what_it_cannot_reproduce():
    class OwnBias(timm_rel.RelPosBias):
        pass

    odd_index = timm_relpos.RelPosAttention(32, num_heads=2, rel_pos_cls=rel_pos_class("bias"))
    odd_index.rel_pos.relative_position_index[0] = 1
    odd_lookup = timm_maxxvit.AttentionCl(32, dim_head=8, rel_pos_cls=rel_pos_class("bias_tf"))
    odd_lookup.rel_pos.width_lookup[0, 0] = 0
    odd_act = timm_maxxvit.AttentionCl(32, dim_head=8, rel_pos_cls=rel_pos_class("mlp_swin"))
    odd_act.rel_pos.bias_act = torch.nn.Tanh()
    other_heads = timm_maxxvit.AttentionCl(32, dim_head=8)
    other_heads.rel_pos = timm_rel.RelPosBias(WINDOW, num_heads=2)
    own_forward = timm_maxxvit.AttentionCl(32, dim_head=8, rel_pos_cls=rel_pos_class("bias"))
    own_forward.rel_pos.forward = lambda attn, shared_rel_pos=None: attn
    own_get_bias = timm_maxxvit.AttentionCl(32, dim_head=8, rel_pos_cls=rel_pos_class("bias"))
    own_get_bias.rel_pos.get_bias = lambda: 0
    short_table = timm_relpos.RelPosAttention(32, num_heads=2,
                                              rel_pos_cls=rel_pos_class("bias"))
    short_table.rel_pos.relative_position_bias_table = torch.nn.Parameter(torch.zeros(34, 2))
    odd_coords = timm_maxxvit.AttentionCl(32, dim_head=8, rel_pos_cls=rel_pos_class("mlp_cr"))
    odd_coords.rel_pos.rel_coords_log = torch.zeros(3, 3, 2)
    odd_mlp_index = timm_maxxvit.AttentionCl(32, dim_head=8,
                                             rel_pos_cls=rel_pos_class("mlp_swin"))
    odd_mlp_index.rel_pos.relative_position_index[5] = 0
    two_prefixes = timm_relpos.RelPosAttention(32, num_heads=2,
                                               rel_pos_cls=rel_pos_class("mlp_cr", 2))
    meta = timm_maxxvit.AttentionCl(32, dim_head=8,
                                    rel_pos_cls=rel_pos_class("bias_tf")).to("meta")
    narrow_heads = timm_maxxvit.Attention2d(48, dim_head=32)  # 48 channels: one head of 32
    modules = {
        "rel_pos (OwnBias)": timm_relpos.RelPosAttention(
            32, num_heads=2, rel_pos_cls=functools.partial(OwnBias, window_size=WINDOW)),
        "relative_position_index is not the standard one": odd_index,
        "width_lookup is not the one-hot lookup": odd_lookup,
        "bias_act (Tanh)": odd_act,
        "rel_pos has 2 heads, the module 4": other_heads,
        "without a forward or get_bias of its own": own_forward,
        "without a forward or get_bias of its own ": own_get_bias,
        "relative_position_bias_table [34, 2] is not the table": short_table,
        "rel_coords_log is not of its window": odd_coords,
        "relative_position_index is not the standard one ": odd_mlp_index,
        "rel_pos has 2 prefix tokens": two_prefixes,
        "meta device": meta,
        "qkv gives 144 channels, not 3 x 1 heads x 32": narrow_heads}
    for reason, module in modules.items():
        forward = module.forward
        with pytest.raises(posenc_torch.PatchError, match=re.escape(reason.strip())):
            posenc_torch.patch(module)
        assert module.forward == forward


def test_calls_timm_must_run_fall_back_exactly():
    """Tokens other than the window's (timm's error), a shared bias of
    another dtype than x's or of one axis (SDPA refuses them, the explicit
    sum widens or broadcasts) or with another batch: the original
    forward."""
    torch.manual_seed(0)
    windowed = randomized(timm_relpos.RelPosAttention(32, num_heads=4,
                                                      rel_pos_cls=rel_pos_class("bias"))).eval()
    reference = copy.deepcopy(windowed)
    posenc_torch.patch(windowed)
    with torch.no_grad(), pytest.raises(RuntimeError) as patched:
        windowed(torch.randn(2, 13, 32))
    with torch.no_grad(), pytest.raises(RuntimeError) as unpatched:
        reference(torch.randn(2, 13, 32))
    assert str(patched.value) == str(unpatched.value)
    shared = randomized(timm_relpos.RelPosAttention(32, num_heads=4)).eval()
    reference = copy.deepcopy(shared)
    posenc_torch.patch(shared)
    x = torch.randn(2, 12, 32)
    for mask in (torch.randn(1, 4, 12, 12, dtype=torch.float64),
                 torch.randn(1, 4, 12, 12, dtype=torch.bfloat16), torch.randn(12),
                 torch.randn(3, 4, 12, 12), torch.randn(2, 12, 12), torch.randn(1, 2, 12, 12)):
        assert_same_outcome(shared, reference, x, shared_rel_pos=mask)
    # An empty batch: maxxvit's view refuses it, RelPosAttention's reshape not.
    for module, x in ((windowed, torch.randn(0, 12, 32)),
                      (timm_maxxvit.AttentionCl(32, dim_head=8), torch.randn(0, 3, 4, 32)),
                      (timm_maxxvit.Attention2d(32, dim_head=8), torch.randn(0, 32, 3, 4))):
        module.eval()
        reference = copy.deepcopy(module)
        posenc_torch.unpatch(reference)
        posenc_torch.patch(module)
        assert_same_outcome(module, reference, x)


def assert_same_outcome(module, reference, *args, **kwargs):
    """module(...) gives reference(...)'s result, bit for bit, or its error."""
    with torch.no_grad():
        try:
            expected = reference(*args, **kwargs)
        except (RuntimeError, IndexError) as error:
            with pytest.raises(type(error), match=re.escape(str(error))):
                module(*args, **kwargs)
            return
        torch.testing.assert_close(module(*args, **kwargs), expected, rtol=0, atol=0)


def test_what_patch_cannot_see_later_falls_back():
    """A rel_pos swapped for another class after patch (timm's forward runs
    it), and a bias table of another dtype than the input (timm's explicit
    sum widens its scores, which its product with v refuses)."""
    class OwnBias(timm_rel.RelPosBias):
        def get_bias(self):
            return 2 * super().get_bias()

    torch.manual_seed(0)
    module = randomized(timm_maxxvit.AttentionCl(32, dim_head=8,
                                                 rel_pos_cls=rel_pos_class("bias"))).eval()
    posenc_torch.patch(module)
    module.rel_pos = OwnBias(WINDOW, num_heads=4)
    reference = copy.deepcopy(module)
    posenc_torch.unpatch(reference)
    x = torch.randn(2, *WINDOW, 32)
    with torch.no_grad():
        torch.testing.assert_close(module(x), reference(x), rtol=0, atol=0)
    mixed = randomized(timm_maxxvit.AttentionCl(32, dim_head=8,
                                                rel_pos_cls=rel_pos_class("bias"))).eval()
    mixed = mixed.bfloat16()
    mixed.rel_pos.float()
    reference = copy.deepcopy(mixed)
    posenc_torch.patch(mixed)
    assert_same_outcome(mixed, reference, x.bfloat16())


def test_explicit_path_reads_the_modules_scale():
    """timm's explicit path multiplies q by module.scale, its fused path
    takes SDPA's default head_dim^-1/2 (original_scale)."""
    torch.manual_seed(0)
    module = randomized(timm_relpos.RelPosAttention(32, num_heads=4,
                                                    rel_pos_cls=rel_pos_class("bias"))).eval()
    module.fused_attn, module.scale = False, 0.7
    compare(module, torch.randn(2, 12, 32), expect=["relpos_attention"])


@pytest.mark.parametrize("hooked", ["rel_pos", "rel_pos.bias_act"])
def test_hooks_on_rel_pos_run_the_original_forward(hooked):
    """timm's explicit path adds the bias through rel_pos's forward (its
    fused path through get_bias), and RelPosMlp's bias_act sees the gathered
    bias there, posenc's table here: with hooks on either, timm's forward,
    and each hook sees what it sees unpatched."""
    torch.manual_seed(0)
    module = randomized(timm_maxxvit.AttentionCl(32, dim_head=8,
                                                 rel_pos_cls=rel_pos_class("mlp_swin"))).eval()
    module.fused_attn = False  # rel_pos's forward runs on this path
    reference = copy.deepcopy(module)
    posenc_torch.patch(module)
    seen = {}

    def recording(name):
        def hook(_module, _inputs, out):
            seen[name] = out.shape
        return hook

    for name, m in (("patched", module), ("unpatched", reference)):
        submodule = m.rel_pos if hooked == "rel_pos" else m.rel_pos.bias_act
        submodule.register_forward_hook(recording(name))
    x = torch.randn(2, *WINDOW, 32)
    with torch.no_grad():
        torch.testing.assert_close(module(x), reference(x), rtol=0, atol=0)
    assert seen["patched"] == seen["unpatched"]
