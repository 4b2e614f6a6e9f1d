"""timm's qkv projection with separate q and v biases (BEiT's and Swin V2's
attention): qkv a bias-free nn.Linear, q_bias and v_bias parameters and a
zero k_bias buffer, added by F.linear, or after the projection with
qkv_bias_separate; none without q_bias. Run as timm writes it, so that hooks
on qkv see what they would."""
import torch
import torch.nn.functional as F


def qkv_with_biases(module, x):
    """module's qkv projection of x, its biases added as timm adds them."""
    if module.q_bias is None:
        return module.qkv(x)
    qkv_bias = torch.cat((module.q_bias, module.k_bias, module.v_bias))
    if module.qkv_bias_separate:
        qkv = module.qkv(x)
        qkv += qkv_bias
        return qkv
    return F.linear(x, weight=module.qkv.weight, bias=qkv_bias)
