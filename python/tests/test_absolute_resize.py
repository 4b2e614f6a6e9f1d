"""posenc.resize_absolute_table_2d against the resizes models run: timm's
resample_abs_pos_embed, DINOv2's interpolate_pos_encoding (torch's
interpolate with a scale factor) and transformers' ViT (bicubic, no
antialias), and its argument checks."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import posenc
from checks import close

GRIDS = [((14, 14), (32, 32)), ((14, 14), (7, 9)), ((16, 16), (37, 23)), ((24, 24), (24, 24)),
         ((5, 9), (11, 4)), ((1, 1), (3, 2)), ((37, 37), (5, 2))]


@pytest.mark.parametrize("old_size, new_size", GRIDS)
@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
@pytest.mark.parametrize("antialias", [True, False])
def test_is_timms_resample_abs_pos_embed(old_size, new_size, interpolation, antialias):
    resample_abs_pos_embed = pytest.importorskip("timm.layers").resample_abs_pos_embed
    generator = torch.Generator().manual_seed(old_size[0] * 100 + new_size[1])
    for prefix in (0, 1, 5):
        pos_embed = torch.randn(1, prefix + old_size[0] * old_size[1], 24, generator=generator)
        expected = resample_abs_pos_embed(pos_embed, new_size, old_size, num_prefix_tokens=prefix,
                                          interpolation=interpolation, antialias=antialias)
        out = posenc.resize_absolute_table_2d(pos_embed, new_size, old_size, prefix_tokens=prefix,
                                              interpolation=interpolation, antialias=antialias)
        assert out.shape == expected.shape
        close(out, expected.numpy())


def grid_interpolate(table, prefix, old_size, **interpolate):
    """torch's interpolate of a table's grid in float64, the prefix kept: the
    definition's values without torch's float32 coordinates (which stray by
    up to about 1e-5 of the values)."""
    dim = table.shape[-1]
    grid = table[prefix:].double().reshape(1, *old_size, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, **interpolate)
    return torch.cat([table[:prefix].double(), grid.permute(0, 2, 3, 1).reshape(-1, dim)])


@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
@pytest.mark.parametrize("antialias", [False, True])
def test_within_rounding_of_torch_in_float64(interpolation, antialias):
    generator = torch.Generator().manual_seed(9)
    for old_size, new_size in GRIDS + [((40, 3), (2, 37)), ((2, 39), (40, 5))]:
        table = torch.randn(2 + old_size[0] * old_size[1], 7, generator=generator)
        out = posenc.resize_absolute_table_2d(table, new_size, old_size, prefix_tokens=2,
                                              interpolation=interpolation, antialias=antialias)
        expected = grid_interpolate(table, 2, old_size, size=new_size, mode=interpolation,
                                    antialias=antialias)
        close(out, expected.numpy(), rtol=2e-7)


def test_an_axis_that_keeps_its_size_under_a_scale():
    """Height 4 with scale 1.2 stays 4: torch's bilinear kernel reads each
    row with weights 1 and 0 (any version), its antialiased one (from torch 2)
    copies the axis, its bicubic one resamples it by 1/1.2."""
    table = torch.randn(16, 3, generator=torch.Generator().manual_seed(5))
    resize = lambda **options: posenc.resize_absolute_table_2d(
        table, scale_factor=(1.2, 2.0), old_size=(4, 4), prefix_tokens=0, **options)
    for mode in ["bilinear", "bicubic"]:
        close(resize(interpolation=mode, antialias=False),
              grid_interpolate(table, 0, (4, 4), scale_factor=(1.2, 2.0), mode=mode).numpy(),
              rtol=2e-7)
    for mode in ["bilinear", "bicubic"]:  # width 4 to 8 by 2.0 is by size too
        close(resize(interpolation=mode, antialias=True),
              grid_interpolate(table, 0, (4, 4), size=(4, 8), mode=mode,
                               antialias=True).numpy(), rtol=2e-7)
    assert not np.allclose(resize(antialias=False).numpy(),
                           grid_interpolate(table, 0, (4, 4), size=(4, 8), mode="bicubic").numpy())


def test_non_finite_entries_reach_what_torch_reaches():
    """Every tap multiplies its input, weight 0 included (inf * 0 is NaN), at
    the borders' clamped indices too, as torch's kernels read them."""
    inf, nan = float("inf"), float("nan")
    generator = torch.Generator().manual_seed(6)
    for mode, grids in [("bicubic", [(3, 3, 5, 4), (3, 3, 3, 3), (4, 4, 2, 2), (5, 4, 3, 9)]),
                        ("bilinear", [(3, 3, 3, 3), (4, 4, 2, 2), (2, 2, 2, 3), (5, 4, 3, 9)])]:
        for h, w, nh, nw in grids:
            table = torch.randn(h * w, 2, generator=generator)
            table[0, 0], table[-1, 1], table[h * w // 2, 0] = inf, -inf, nan
            out = posenc.resize_absolute_table_2d(table, (nh, nw), (h, w), prefix_tokens=0,
                                                  interpolation=mode, antialias=False)
            expected = grid_interpolate(table, 0, (h, w), size=(nh, nw), mode=mode).float()
            for kind in (torch.isnan, torch.isposinf, torch.isneginf):
                assert torch.equal(kind(out), kind(expected)), (mode, h, w, nh, nw)


def dinov2_interpolate(pos_embed, new_height, new_width, antialias):
    """facebookresearch/dinov2's interpolate_pos_encoding (interpolate_offset
    0.1): the class token kept, the M x M grid bicubic by scale factors."""
    m = math.isqrt(pos_embed.shape[1] - 1)
    grid = pos_embed[:, 1:].reshape(1, m, m, -1).permute(0, 3, 1, 2)
    scale = ((new_height + 0.1) / m, (new_width + 0.1) / m)
    grid = F.interpolate(grid, scale_factor=scale, mode="bicubic", antialias=antialias)
    assert grid.shape[-2:] == (new_height, new_width)
    return torch.cat([pos_embed[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, grid.shape[1])],
                     dim=1)


@pytest.mark.parametrize("antialias", [False, True])
def test_is_dinov2_with_its_scale_factor(antialias):
    pos_embed = torch.randn(1, 1 + 37 * 37, 32, generator=torch.Generator().manual_seed(3))
    for new_height, new_width in [(20, 30), (74, 74), (1, 9)]:
        scale = ((new_height + 0.1) / 37, (new_width + 0.1) / 37)
        out = posenc.resize_absolute_table_2d(pos_embed, scale_factor=scale, antialias=antialias)
        close(out, dinov2_interpolate(pos_embed, new_height, new_width, antialias).numpy())
        by_size = posenc.resize_absolute_table_2d(pos_embed, (new_height, new_width),
                                                  antialias=antialias)
        assert not torch.equal(out, by_size)  # the scale moves the source coordinates


def test_is_transformers_vit_interpolation():
    """transformers' ViTEmbeddings.interpolate_pos_encoding: the class token,
    then the grid bicubic to the new size, align_corners=False, no antialias."""
    pos_embed = torch.randn(1, 1 + 14 * 14, 48, generator=torch.Generator().manual_seed(4))
    grid = pos_embed[:, 1:].reshape(1, 14, 14, 48).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(20, 27), mode="bicubic", align_corners=False)
    expected = torch.cat([pos_embed[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, 48)], dim=1)
    out = posenc.resize_absolute_table_2d(pos_embed, (20, 27), antialias=False)
    close(out, expected.numpy())


def test_numpy_tables_and_out():
    table = np.random.default_rng(0).standard_normal((1 + 6 * 4, 5)).astype(np.float32)
    expected = posenc.resize_absolute_table_2d(torch.from_numpy(table), (3, 8), (6, 4))
    out = np.empty((1 + 3 * 8, 5), np.float32)
    result = posenc.resize_absolute_table_2d(table, (3, 8), (6, 4), out=out)
    assert result is out
    np.testing.assert_array_equal(out, expected.numpy())
    np.testing.assert_array_equal(out[0], table[0])


def test_checks_name_the_argument():
    table = torch.randn(1 + 16, 4)
    with pytest.raises(ValueError, match="give one of new_size and scale_factor"):
        posenc.resize_absolute_table_2d(table)
    with pytest.raises(ValueError, match="give one of new_size and scale_factor"):
        posenc.resize_absolute_table_2d(table, (5, 5), scale_factor=2)
    with pytest.raises(ValueError, match="old_size: the table's 15 cells are no square"):
        posenc.resize_absolute_table_2d(table, (5, 5), prefix_tokens=2)
    with pytest.raises(ValueError, match="old_size: 2 x 4 is not the table's 16 cells"):
        posenc.resize_absolute_table_2d(table, (5, 5), (2, 4))
    with pytest.raises(ValueError, match="prefix_tokens: 17 leaves no grid"):
        posenc.resize_absolute_table_2d(table, (5, 5), prefix_tokens=17)
    with pytest.raises(ValueError, match="scale_factor: must be positive"):
        posenc.resize_absolute_table_2d(table, scale_factor=(2, -1))
    with pytest.raises(ValueError, match="scale_factor: 0.1 leaves no cells"):
        posenc.resize_absolute_table_2d(table, scale_factor=0.1)
    with pytest.raises(ValueError, match="new_size: sizes must be >= 1"):
        posenc.resize_absolute_table_2d(table, (0, 5))
    with pytest.raises(ValueError, match="interpolation: 'nearest' is not one of"):
        posenc.resize_absolute_table_2d(table, (5, 5), interpolation="nearest")
    with pytest.raises(TypeError, match="antialias"):
        posenc.resize_absolute_table_2d(table, (5, 5), antialias="no")
    with pytest.raises(TypeError, match="table: expected float32"):
        posenc.resize_absolute_table_2d(table.bfloat16(), (5, 5))
    with pytest.raises(ValueError, match="table: expected \\[N, D\\] or \\[1, N, D\\]"):
        posenc.resize_absolute_table_2d(torch.randn(2, 17, 4), (5, 5))
    with pytest.raises(ValueError, match="out: expected shape"):
        posenc.resize_absolute_table_2d(table, (5, 5), out=torch.empty(25, 4))
