"""Repeated attention calls (posenc/_call_plans.py): a call with the
signature of two earlier calls reuses their desc, reads its own tensors,
and checks what each tensor is now as the first calls did."""
import threading

import numpy as np
import pytest
import torch

import posenc
import reference
from checks import close
from posenc import _attention, _call_plans

SCALE = 8 ** -0.5


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def expected(q, k, v, **options):
    group = q.shape[1] // k.shape[1]
    return reference.attention(q.numpy(), np.repeat(k.numpy(), group, axis=1),
                               np.repeat(v.numpy(), group, axis=1), SCALE, **options)


def kept_descs_only(monkeypatch):
    """From here on a call that goes the full way fails."""
    monkeypatch.setattr(_attention, "_plan", None)



def test_a_parameter_as_sinks_is_kept(monkeypatch):
    """gpt-oss's sinks as the model holds them, an nn.Parameter (under
    no_grad): its calls reuse the kept desc and read each call's values."""
    q, k, v = randn(1, 4, 1, 8), randn(1, 2, 9, 8), randn(1, 2, 9, 8)
    sinks = torch.nn.Parameter(randn(4))
    with torch.no_grad():
        for repeat in range(4):
            if repeat == 2:
                kept_descs_only(monkeypatch)
            sinks.add_(0.5)
            got = posenc.attention(q, k, v, causal=True, query_offset=8, sinks=sinks)
            logits = np.concatenate([np.einsum("bhqd,bhkd->bhqk", q.numpy(), np.repeat(
                k.numpy(), 2, axis=1)) * SCALE, sinks.numpy()[None, :, None, None]], axis=-1)
            weights = np.exp(logits - logits.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
            close(got, weights[..., :-1] @ np.repeat(v.numpy(), 2, axis=1))

def test_repeats_read_their_own_tensors(monkeypatch):
    before = len(_attention._PLANS)
    out = torch.empty(2, 4, 3, 8)
    for repeat in range(4):
        # Kept at a signature's second call: made out, given out.
        assert len(_attention._PLANS) == before + 2 * (repeat >= 2)
        if repeat == 2:
            kept_descs_only(monkeypatch)
        q, k, v = randn(2, 4, 3, 8), randn(2, 2, 11, 8), randn(2, 2, 11, 8)
        close(posenc.attention(q, k, v, causal=True, query_offset=8),
              expected(q, k, v, causal=True, offset=8))
        assert posenc.attention(q, k, v, causal=True, query_offset=8, out=out) is out
        close(out, expected(q, k, v, causal=True, offset=8))


def test_each_field_from_its_own_argument():
    """Kept while k and v were one tensor, reused when they are two."""
    q, kv = randn(1, 2, 4, 8), randn(1, 2, 6, 8)
    for _ in range(2):
        close(posenc.attention(q, kv, kv), expected(q, kv, kv))
    k, v = randn(1, 2, 6, 8), randn(1, 2, 6, 8)
    close(posenc.attention(q, k, v), expected(q, k, v))


def test_mask_and_lengths_read_on_each_call(monkeypatch):
    q, k, v = randn(2, 2, 3, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    for repeat, lengths in enumerate(([5, 2], [1, 4], [3, 0])):
        if repeat == 2:
            kept_descs_only(monkeypatch)
        kv_lengths = torch.tensor(lengths, dtype=torch.int64)
        mask = torch.where(torch.rand(2, 1, 3, 5) < 0.3, -torch.inf, 0.0)
        mask[..., 0] = 0
        got = posenc.attention(q, k, v, mask=mask, kv_lengths=kv_lengths)
        past = np.arange(5)[None, :] >= np.array(lengths)[:, None]
        full = mask.numpy() + np.where(past, -np.inf, 0)[:, None, None, :]
        close(got, expected(q, k, v, mask=full))


def test_query_lengths_and_offsets_read_on_each_call(monkeypatch):
    q, k, v = randn(2, 2, 3, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    for repeat, (lengths, offsets) in enumerate((([3, 1], [2, 0]), ([2, 3], [0, 1]),
                                                 ([1, 2], [1, 2]))):
        if repeat == 2:
            kept_descs_only(monkeypatch)
        got = posenc.attention(q, k, v, causal=True, q_lengths=torch.tensor(lengths),
                               query_offsets=torch.tensor(offsets))
        for b in range(2):
            want = expected(q[b:b + 1], k[b:b + 1], v[b:b + 1], causal=True, offset=offsets[b])
            want[:, :, lengths[b]:] = 0
            close(got[b:b + 1], want)


def test_a_bool_mask_is_made_additive_on_each_call():
    q, k, v = randn(1, 2, 3, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)
    before = len(_attention._PLANS)
    for seed in range(2):
        keep = torch.rand(1, 1, 3, 5, generator=torch.Generator().manual_seed(seed)) < 0.7
        keep[..., 0] = True
        close(posenc.attention(q, k, v, mask=keep),
              expected(q, k, v, mask=np.where(keep.numpy(), 0.0, -np.inf)))
    assert len(_attention._PLANS) == before  # the additive mask is a copy: not kept


def test_a_repeat_checks_each_tensor_as_it_is_now():
    q, k, v = randn(1, 2, 4, 8), randn(1, 2, 4, 8), randn(1, 2, 4, 8)
    out = torch.empty(1, 2, 4, 8)
    posenc.attention(q, k, v, out=out)
    posenc.attention(q, k, v, out=out)
    version = out._version
    posenc.attention(q, k, v, out=out)
    assert out._version > version  # written as by an in-place op
    with pytest.raises(RuntimeError, match="k: requires grad"):
        posenc.attention(q, k.clone().requires_grad_(), v, out=out)
    negated = torch._neg_view(k)  # a lazy negation: read as the values it shows
    close(posenc.attention(q, negated, v), expected(q, -k, v))
    with pytest.raises(ValueError, match="out: .*negative bit"):
        posenc.attention(q, k, v, out=torch._neg_view(out))
    with torch.inference_mode():
        inference = torch.empty(1, 2, 4, 8)
        posenc.attention(q, k, v, out=inference)
        close(inference, expected(q, k, v))
    with pytest.raises(RuntimeError, match="out: .*inference tensor"):
        posenc.attention(q, k, v, out=inference)
    import torch.autograd.forward_ad as fwad
    with fwad.dual_level():
        dual = fwad.make_dual(q, torch.ones_like(q))
        with pytest.raises(RuntimeError, match="q: has a forward-mode tangent"):
            posenc.attention(dual, k, v)


def test_a_result_made_under_a_grad_transform_is_refused_as_the_first_calls_refuse_it():
    """torch.func's grad wraps the result torch.empty makes, without storage
    posenc could write."""
    grad = getattr(getattr(torch, "func", None), "grad", None) or \
        pytest.importorskip("functorch").grad
    q, k, v = randn(1, 2, 3, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)
    for _ in range(2):
        posenc.attention(q, k, v)
    with pytest.raises(TypeError, match="^out: torch made a result without memory"):
        grad(lambda x: posenc.attention(q, k, v).sum() + x)(torch.ones(()))


def test_at_most_the_capacity_kept():
    q = randn(1, 1, 2, 8)
    first = None
    for kv_len in range(1, _call_plans._CAPACITY + 10):
        k, v = randn(1, 1, kv_len, 8), randn(1, 1, kv_len, 8)
        for _ in range(2):
            close(posenc.attention(q, k, v), expected(q, k, v))
        first = first or (k, v)
    assert len(_attention._PLANS) == _call_plans._CAPACITY
    close(posenc.attention(q, *first), expected(q, *first))  # dropped: the full way again


def test_threads_share_a_plan():
    q, k, v = randn(1, 2, 5, 8), randn(1, 2, 7, 8), randn(1, 2, 7, 8)
    posenc.attention(q, k, v)
    posenc.attention(q, k, v)
    inputs = [(randn(1, 2, 5, 8), randn(1, 2, 7, 8), randn(1, 2, 7, 8)) for _ in range(4)]
    results = [None] * 4

    def run(i):
        results[i] = [posenc.attention(*inputs[i]) for _ in range(20)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (q, k, v), outs in zip(inputs, results):
        for out in outs:
            close(out, expected(q, k, v))
