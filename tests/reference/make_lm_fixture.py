#!/usr/bin/python3
"""Generate the parity fixtures tests/fixtures/lm_<name>.safetensors for longctx's vanilla LM.

Each fixture holds seeded random weights (not the training init: matrices N(0, 0.3), biases
N(0, 0.1), LayerNorm weights 1 + N(0, 0.1) and biases N(0, 0.1)), drawn in float64 and rounded to
float32, so the C side (fp32) sees exactly the weights the reference used. The forward pass,
loss and gradients are computed in float64 with lm_ref.LM and stored as F32:

  <param name>         F32  every parameter, canonical order (lm_ref.param_names)
  tokens, targets      I32  [B, T], independent uniform bytes
  expected.logits      F32  [B, T, 256]
  expected.loss        F32  [1]  mean cross-entropy over all B*T positions
  grad.<param name>    F32  gradient of expected.loss

Before writing anything the script runs its self-checks (gradcheck on tiny float64 models of both
variants, attention head layout against torch's multi-head attention, an independent numpy forward),
then writes each fixture to a temporary file, reads it back with st_io.read, verifies it, and
renames it into place.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_lm_fixture.py            # self-check + write fixtures
  /usr/bin/python3 tests/reference/make_lm_fixture.py --check    # self-check only
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lm_ref  # noqa: E402
import fixture_io  # noqa: E402

MAX_BYTES = 300 * 1024

# name -> (config, batch, seed)
FIXTURES = {
    "pre_gelu_tied": (lm_ref.LMConfig(n_layer=2, d_model=16, n_head=2, d_ff=40, seq_len=8,
                                      norm="pre", activation="gelu", tied=True), 2, 20240601),
    "post_relu_untied": (lm_ref.LMConfig(n_layer=2, d_model=12, n_head=3, d_ff=24, seq_len=7,
                                         norm="post", activation="relu", tied=False), 3, 20240602),
}


def random_params(cfg, rng):
    """float64 parameters (numpy), rounded to float32 and back. Draws in canonical order."""
    out = {}
    for name, shape in lm_ref.param_shapes(cfg).items():
        is_ln = ".ln1." in name or ".ln2." in name or name.startswith("ln_f.")
        if is_ln and name.endswith(".weight"):
            v = 1.0 + rng.normal(0.0, 0.1, size=shape)
        elif name.endswith(".bias"):
            v = rng.normal(0.0, 0.1, size=shape)
        else:  # matrices: wte, wpe, lm_head, qkv, proj, fc1, fc2
            v = rng.normal(0.0, 0.3, size=shape)
        out[name] = v.astype(np.float32).astype(np.float64)
    return out


def compute_reference(cfg, params, tokens, targets):
    """float64 forward/backward. Returns (logits, loss, grads) as float64 numpy."""
    model = lm_ref.LM(cfg, attn_impl="math", dtype=torch.float64)
    model.import_params(params)
    model.train(False)
    tok = torch.as_tensor(tokens, dtype=torch.long)
    tgt = torch.as_tensor(targets, dtype=torch.long)
    logits = model(tok)
    loss = model.loss(tok, tgt, logits=logits)
    model.zero_grad(set_to_none=True)
    loss.backward()
    grads = {k[len("grad."):]: v.numpy().copy() for k, v in model.export_grads().items()}
    return logits.detach().numpy().copy(), float(loss.item()), grads


# ---------------------------------------------------------------------------------------------
# Self-checks


def numpy_forward(cfg, P, tokens):
    """Independent float64 numpy implementation of the definition (no torch), returns logits."""
    B, T = tokens.shape
    C, H = cfg.d_model, cfg.n_head
    D = C // H

    def ln(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * w + b

    def act(z):
        if cfg.activation == "relu":
            return np.maximum(z, 0.0)
        return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))

    def attn(a, p):
        qkv = a @ P[p + "attn.qkv.weight"].T + P[p + "attn.qkv.bias"]
        y = np.zeros((B, T, C))
        for b in range(B):
            for j in range(H):
                q = qkv[b, :, j * D:(j + 1) * D]
                k = qkv[b, :, C + j * D:C + (j + 1) * D]
                v = qkv[b, :, 2 * C + j * D:2 * C + (j + 1) * D]
                for t in range(T):
                    s = k[:t + 1] @ q[t] / math.sqrt(D)
                    e = np.exp(s - s.max())
                    y[b, t, j * D:(j + 1) * D] = (e / e.sum()) @ v[:t + 1]
        return y @ P[p + "attn.proj.weight"].T + P[p + "attn.proj.bias"]

    def ffn(a, p):
        z = act(a @ P[p + "ffn.fc1.weight"].T + P[p + "ffn.fc1.bias"])
        return z @ P[p + "ffn.fc2.weight"].T + P[p + "ffn.fc2.bias"]

    h = P["wte"][tokens] + P["wpe"][:T]
    for i in range(cfg.n_layer):
        p = "blocks.%d." % i
        L1 = lambda x: ln(x, P[p + "ln1.weight"], P[p + "ln1.bias"])  # noqa: E731
        L2 = lambda x: ln(x, P[p + "ln2.weight"], P[p + "ln2.bias"])  # noqa: E731
        if cfg.norm == "pre":
            h = h + attn(L1(h), p)
            h = h + ffn(L2(h), p)
        else:
            h = L1(h + attn(h, p))
            h = L2(h + ffn(h, p))
    if cfg.norm == "pre":
        h = ln(h, P["ln_f.weight"], P["ln_f.bias"])
    W = P["wte"] if cfg.tied else P["lm_head.weight"]
    return h @ W.T


def numpy_loss(logits, targets):
    z = logits.reshape(-1, logits.shape[-1])
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]
    return float(np.mean(lse - z[np.arange(z.shape[0]), targets.reshape(-1)]))


def check_gradcheck():
    """torch.autograd.gradcheck of the mean loss w.r.t. every parameter, tiny float64 models."""
    from torch.nn.utils import stateless
    tiny = [lm_ref.LMConfig(n_layer=2, d_model=4, n_head=2, d_ff=6, seq_len=3, norm="pre",
                            activation="gelu", tied=True),
            lm_ref.LMConfig(n_layer=2, d_model=6, n_head=3, d_ff=5, seq_len=3, norm="post",
                            activation="relu", tied=False)]
    for k, cfg in enumerate(tiny):
        rng = np.random.RandomState(7 + k)
        model = lm_ref.LM(cfg, attn_impl="math", dtype=torch.float64)
        model.import_params(random_params(cfg, rng))
        names = lm_ref.param_names(cfg)
        tok = torch.as_tensor(rng.randint(0, 256, size=(2, cfg.seq_len)), dtype=torch.long)
        tgt = torch.as_tensor(rng.randint(0, 256, size=(2, cfg.seq_len)), dtype=torch.long)
        inputs = tuple(p.detach().clone().requires_grad_(True) for p in model.export_params().values())

        def f(*ps):
            out = stateless.functional_call(model, dict(zip(names, ps)), (tok,))
            return F.cross_entropy(out.reshape(-1, 256), tgt.reshape(-1))

        ok = torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)
        assert ok
        print("  gradcheck ok: %s/%s/%s, %d parameters (%d scalars)"
              % (cfg.norm, cfg.activation, "tied" if cfg.tied else "untied", len(inputs),
                 sum(p.numel() for p in inputs)))


def check_attention_layout():
    """Our attention (head j = columns j*D..(j+1)*D of q, k and v) equals torch's multi-head attention
    with in_proj = Wqkv and a causal mask."""
    cfg = lm_ref.LMConfig(n_layer=1, d_model=12, n_head=3, d_ff=8, seq_len=5)
    torch.manual_seed(0)
    att = lm_ref.CausalSelfAttention(cfg, "math").double()
    with torch.no_grad():
        for p in att.parameters():
            p.normal_(0, 0.5)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    ours = att(x)
    xt = x.transpose(0, 1)  # [T, B, C]
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    ref, _ = F.multi_head_attention_forward(
        xt, xt, xt, 12, 3, att.qkv.weight, att.qkv.bias, None, None, False, 0.0,
        att.proj.weight, att.proj.bias, training=False, need_weights=False, attn_mask=mask)
    err = (ours - ref.transpose(0, 1)).abs().max().item()
    assert err < 1e-12, err
    print("  attention layout matches F.multi_head_attention_forward (max err %.1e)" % err)


def check_numpy_forward():
    for name, (cfg, B, seed) in FIXTURES.items():
        rng = np.random.RandomState(seed + 1000)
        P = random_params(cfg, rng)
        tok = rng.randint(0, 256, size=(B, cfg.seq_len))
        tgt = rng.randint(0, 256, size=(B, cfg.seq_len))
        logits, loss, _ = compute_reference(cfg, P, tok, tgt)
        ref = numpy_forward(cfg, P, tok)
        err = np.abs(logits - ref).max()
        lerr = abs(loss - numpy_loss(ref, tgt))
        assert err < 1e-10 and lerr < 1e-12, (name, err, lerr)
        print("  numpy forward matches (%s): logits err %.1e, loss err %.1e" % (name, err, lerr))


def check_dropout_identity():
    """With dropout 0 train and eval modes agree; with dropout > 0, eval mode is deterministic."""
    cfg = lm_ref.LMConfig(n_layer=1, d_model=8, n_head=2, d_ff=8, seq_len=4, dropout=0.0)
    m = lm_ref.LM(cfg, dtype=torch.float64)
    tok = torch.randint(0, 256, (2, 4))
    m.train(True)
    a = m(tok)
    m.train(False)
    assert torch.equal(a, m(tok))


def self_check():
    print("self-check:")
    check_gradcheck()
    check_attention_layout()
    check_numpy_forward()
    check_dropout_identity()


# ---------------------------------------------------------------------------------------------


def build_fixture(name):
    cfg, B, seed = FIXTURES[name]
    rng = np.random.RandomState(seed)
    params = random_params(cfg, rng)
    tokens = rng.randint(0, 256, size=(B, cfg.seq_len)).astype(np.int32)
    targets = rng.randint(0, 256, size=(B, cfg.seq_len)).astype(np.int32)
    logits, loss, grads = compute_reference(cfg, params, tokens, targets)
    tensors = [(n, "F32", params[n]) for n in lm_ref.param_names(cfg)]
    tensors += [("tokens", "I32", tokens), ("targets", "I32", targets),
                ("expected.logits", "F32", logits), ("expected.loss", "F32", np.array([loss]))]
    tensors += [("grad." + n, "F32", grads[n]) for n in lm_ref.param_names(cfg)]
    meta = {"n_layer": str(cfg.n_layer), "d_model": str(cfg.d_model), "n_head": str(cfg.n_head),
            "d_ff": str(cfg.d_ff), "seq_len": str(cfg.seq_len), "batch": str(B), "norm": cfg.norm,
            "activation": cfg.activation, "tied": "1" if cfg.tied else "0", "vocab": "256",
            "model": "vanilla", "dropout": "0",
            "generator": "tests/reference/make_lm_fixture.py seed=%d torch %s" % (seed, torch.__version__)}
    return cfg, B, tensors, meta, loss


def verify_file(path, cfg, B, tensors, meta):
    """Read back and compare with what was meant to be written; recompute from the file's contents."""
    got, gmeta = fixture_io.read_back(path, tensors, meta)
    # The weights in the file are exactly the weights the reference used (float32-representable):
    fcfg = lm_ref.config_from_metadata(gmeta)
    assert fcfg == cfg
    P = {n: got[n].astype(np.float64) for n in lm_ref.param_names(cfg)}
    logits, loss, grads = compute_reference(cfg, P, got["tokens"], got["targets"])
    assert np.float32(loss) == got["expected.loss"][0]
    assert np.array_equal(logits.astype(np.float32), got["expected.logits"])
    for n in lm_ref.param_names(cfg):
        assert np.array_equal(grads[n].astype(np.float32), got["grad." + n]), n
    # Informative: how far an fp32 computation lands from the fp64 reference.
    m32 = lm_ref.LM(cfg, dtype=torch.float32)
    m32.import_params(got)
    tok = torch.as_tensor(got["tokens"], dtype=torch.long)
    tgt = torch.as_tensor(got["targets"], dtype=torch.long)
    l32 = m32.loss(tok, tgt)
    l32.backward()
    gerr = max(np.abs(p.grad.numpy() - got["grad." + n]).max() / (np.abs(got["grad." + n]).max() + 1e-30)
               for n, p in m32.named_parameters())
    return loss, abs(l32.item() - loss), gerr


def main():
    args = fixture_io.start(__doc__, self_check, FIXTURES)
    if args is None:
        return
    for name in args.names:
        cfg, B, tensors, meta, loss = build_fixture(name)
        path = os.path.join(args.out_dir, "lm_%s.safetensors" % name)
        size, (loss, l32err, g32err) = fixture_io.write_checked(
            path, tensors, meta, lambda p: verify_file(p, cfg, B, tensors, meta), MAX_BYTES)
        print("wrote %s: %d bytes, loss %.9g (float32 %r); fp32 recompute: |dloss| %.2e, max rel grad err %.2e"
              % (fixture_io.relpath(path), size, loss, float(np.float32(loss)), l32err, g32err))


if __name__ == "__main__":
    main()
