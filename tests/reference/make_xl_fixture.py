#!/usr/bin/python3
"""Generate the Transformer-XL parity fixtures tests/fixtures/xl_*.safetensors for longctx.

Same conventions as make_lm_fixture.py: seeded numpy RandomState draws in float64, rounded to
float32 and back (so the files hold exactly the inputs the reference used), reference computed in
float64 (xl_ref), stored as F32 (integers as I32) with st_io.

xl_attn.safetensors: the relative attention core alone (xl_ref.rel_attention), cases "a." and "b.":
  q [B,T,H,D], k, v [B,S,H,D], r [S,H,D] (row d = distance d), u, vb [H,D], dout [B,T,H,D]  (N(0,1))
  scale F32 [1] (1/sqrt(D) rounded to float32; the reference uses exactly this value)
  window I32 [1] (0 = none), mem I32 [1] (= M)
  out [B,T,H,D], lse [B,H,T], dq, dk, dv, dr, du, dvb  (gradients of sum(out * dout))
  case a: B=2 H=2 T=5 M=4 D=3, causal, no window; case b: B=1 H=3 T=7 M=6 D=4, causal, window 5.

xl_<name>.safetensors: a two-segment run of the full model (xl_ref.XL):
  <param>                             every parameter, canonical order (xl_ref.param_names)
  tokens1, targets1, tokens2, targets2  I32 [B,T]: one random byte stream s of 2T+1 bytes per row,
                                      tokens1 = s[0:T], targets1 = s[1:T+1], tokens2 = s[T:2T],
                                      targets2 = s[T+1:2T+1]
  expected.logits1, expected.logits2  F32 [B,T,256]
  expected.loss1, expected.loss2      F32 [1]
  mem1.<i>                            F32 [B, min(mem_len, T), C]: memory of layer i after segment 1
  grad1.<param>, grad2.<param>        gradients of loss1 and of loss2 (segment 2 reads mem1, detached)
Segment 1 runs with empty memory; segment 2 with the (float64) memory returned by segment 1.

Before writing anything the script runs its self-checks (see self_check), then writes each fixture
to a temporary file, reads it back with st_io.read, verifies it exactly, and renames it into place.

Usage (from the repository root):
  /usr/bin/python3 tests/reference/make_xl_fixture.py            # self-checks + write all fixtures
  /usr/bin/python3 tests/reference/make_xl_fixture.py --check    # self-checks only
  /usr/bin/python3 tests/reference/make_xl_fixture.py --only attn   # one fixture (attn|pre_gelu_tied|post_relu_untied)
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture_io  # noqa: E402
import xl_ref  # noqa: E402
from fixture_io import f32  # noqa: E402

MAX_BYTES = 300 * 1024

# name -> (config, batch, seed)
MODEL_FIXTURES = {
    "pre_gelu_tied": (xl_ref.XLConfig(n_layer=2, d_model=16, n_head=2, d_ff=32, seq_len=6, mem_len=5,
                                      clamp_len=0, same_length=False, shared_uv=False, norm="pre",
                                      activation="gelu", tied=True), 2, 20240711),
    "post_relu_untied": (xl_ref.XLConfig(n_layer=2, d_model=12, n_head=3, d_ff=24, seq_len=5, mem_len=7,
                                         clamp_len=3, same_length=True, shared_uv=True, norm="post",
                                         activation="relu", tied=False), 2, 20240712),
}
ATTN_SEED = 20240710
# case -> (B, H, T, M, D, window)
ATTN_CASES = {"a": (2, 2, 5, 4, 3, 0), "b": (1, 3, 7, 6, 4, 5)}


def random_params(cfg, rng):
    """float64 parameters (numpy), rounded to float32 and back. Draws in canonical order:
    matrices N(0, 0.3); biases and u/v N(0, 0.1); LayerNorm weights 1 + N(0, 0.1), biases N(0, 0.1)."""
    out = {}
    for name, shape in xl_ref.param_shapes(cfg).items():
        is_ln = ".ln1." in name or ".ln2." in name or name.startswith("ln_f.")
        is_uv = name in ("u", "v") or name.endswith("attn.u") or name.endswith("attn.v")
        if is_ln and name.endswith(".weight"):
            v = 1.0 + rng.normal(0.0, 0.1, size=shape)
        elif name.endswith(".bias") or is_uv:
            v = rng.normal(0.0, 0.1, size=shape)
        else:  # matrices: wte, qkv, r, proj, fc1, fc2, lm_head
            v = rng.normal(0.0, 0.3, size=shape)
        out[name] = f32(v)
    return out


def byte_streams(rng, B, T):
    s = rng.randint(0, 256, size=(B, 2 * T + 1)).astype(np.int32)
    return s[:, 0:T], s[:, 1:T + 1], s[:, T:2 * T], s[:, T + 1:2 * T + 1]


def make_model(cfg, params):
    model = xl_ref.XL(cfg, dtype=torch.float64)
    model.import_params(params)
    model.train(False)
    return model


def compute_reference(cfg, params, tok1, tgt1, tok2, tgt2, mem1_override=None):
    """float64 two-segment forward/backward. Returns a dict of float64 numpy arrays / floats.
    mem1_override (list of arrays) replaces the memory passed to segment 2 (used for diagnostics)."""
    model = make_model(cfg, params)
    t1 = torch.as_tensor(tok1, dtype=torch.long)
    t2 = torch.as_tensor(tok2, dtype=torch.long)
    logits1, mems1 = model(t1)
    loss1 = model.loss_from_logits(logits1, torch.as_tensor(tgt1))
    model.zero_grad(set_to_none=True)
    loss1.backward()
    grads1 = {k: v.numpy().copy() for k, v in model.export_grads(prefix="").items()}
    model.zero_grad(set_to_none=True)
    assert all(not m.requires_grad for m in mems1)
    mems_in = mems1 if mem1_override is None else [torch.as_tensor(m, dtype=torch.float64) for m in mem1_override]
    logits2, mems2 = model(t2, mems_in)
    loss2 = model.loss_from_logits(logits2, torch.as_tensor(tgt2))
    loss2.backward()
    grads2 = {k: v.numpy().copy() for k, v in model.export_grads(prefix="").items()}
    return {"logits1": logits1.detach().numpy().copy(), "loss1": float(loss1.item()),
            "logits2": logits2.detach().numpy().copy(), "loss2": float(loss2.item()),
            "mems1": [m.numpy().copy() for m in mems1], "mems2": [m.numpy().copy() for m in mems2],
            "grads1": grads1, "grads2": grads2}


def attn_reference(q, k, v, r, u, vb, dout, M, window, scale):
    """float64 out, lse and gradients of sum(out * dout) w.r.t. q, k, v, r, u, vb (numpy in and out)."""
    ins = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (q, k, v, r, u, vb)]
    out, lse = xl_ref.rel_attention(*ins, M, causal=True, same_length_window=window, scale=scale)
    (out * torch.as_tensor(dout)).sum().backward()
    res = {"out": out.detach().numpy().copy(), "lse": lse.detach().numpy().copy()}
    for n, t in zip(("dq", "dk", "dv", "dr", "du", "dvb"), ins):
        res[n] = t.grad.numpy().copy()
    return res


# ---------------------------------------------------------------------------------------------
# Independent formulations used by the self-checks


def _rel_shift(x):
    """The original code's _rel_shift (kimiyoung/transformer-xl, pytorch/mem_transformer.py) on
    x [qlen, klen, ...] whose column c holds relative position klen-1-c: pad a zero column in front,
    reshape to [klen+1, qlen, ...], drop the first row, reshape back. Afterwards x[i, j] holds the
    value for distance (klen-qlen) + i - j wherever that is >= 0 (other entries are garbage)."""
    zero_pad = torch.zeros((x.size(0), 1) + tuple(x.size()[2:]), dtype=x.dtype)
    x_padded = torch.cat([zero_pad, x], dim=1)
    x_padded = x_padded.view((x.size(1) + 1, x.size(0)) + tuple(x.size()[2:]))
    return x_padded[1:].view_as(x)


def original_mask(qlen, mlen, same_length, mem_len):
    """The original code's dec_attn_mask (True = masked), [qlen, klen]."""
    klen = mlen + qlen
    all_ones = torch.ones(qlen, klen)
    if same_length:
        mask_len = klen - mem_len
        mask_shift_len = qlen - mask_len if mask_len > 0 else qlen
        return (torch.triu(all_ones, 1 + mlen) + torch.tril(all_ones, -mask_shift_len)) > 0
    return torch.triu(all_ones, diagonal=1 + mlen) > 0


def original_style_attention(q, k, v, r, u, vb, M, window, scale):
    """Time-major attention exactly as in the original RelPartialLearnableMultiHeadAttn: positions
    ordered klen-1..0, BD via _rel_shift, the original mask. q etc. are batch-major as in rel_attention.
    Returns (out [B,T,H,D], lse [B,H,T], BD after the shift [T,S,B,H] unscaled)."""
    T, S = q.shape[1], k.shape[1]
    qt, kt, vt = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)     # [len, B, H, D]
    r_rev = r[:S].flip(0)                                                     # row c = distance S-1-c
    AC = torch.einsum("ibnd,jbnd->ijbn", qt + u, kt)
    BD = _rel_shift(torch.einsum("ibnd,jnd->ijbn", qt + vb, r_rev))
    score = (AC + BD) * scale
    mask = original_mask(T, M, window > 0, window)
    score = score.masked_fill(mask[:, :, None, None], float("-inf"))
    lse = torch.logsumexp(score, dim=1)                                       # [T, B, H]
    prob = torch.softmax(score, dim=1)
    out = torch.einsum("ijbn,jbnd->ibnd", prob, vt)
    return out.transpose(0, 1), lse.permute(1, 2, 0), BD


def original_style_forward(cfg, P, tokens, mems=None):
    """Independent time-major transcription of the original MemTransformerLM._forward with
    RelPartialLearnableDecoderLayer (attn_type 0, div_val 1, no adaptive softmax), plus longctx's
    ln_f for pre-LN. P: name -> float64 tensor. tokens [B,T]; mems: list of [B,M,C] or None.
    Returns (logits [B,T,256], new_mems): n_layer + 1 memories [B, <=mem_len, C] like the original
    (memory i = input of layer i; the last, the final hidden state, is never read)."""
    C, H, D = cfg.d_model, cfg.n_head, cfg.head_dim
    x = tokens.t()
    qlen, bsz = x.shape
    if mems is None:
        mems = [torch.zeros(0, bsz, C, dtype=torch.float64) for _ in range(cfg.n_layer + 1)]
    else:
        mems = [m.transpose(0, 1) for m in mems]
    mlen = mems[0].size(0)
    klen = mlen + qlen
    word_emb = P["wte"][x] * (C ** 0.5)                       # AdaptiveEmbedding: emb_scale = d_proj ** 0.5
    dec_attn_mask = original_mask(qlen, mlen, cfg.same_length, cfg.mem_len)[:, :, None]
    pos_seq = torch.arange(klen - 1, -1, -1.0, dtype=torch.float64)
    if cfg.clamp_len > 0:
        pos_seq.clamp_(max=cfg.clamp_len)
    inv_freq = 1 / (10000 ** (torch.arange(0.0, C, 2.0, dtype=torch.float64) / C))
    sinusoid_inp = torch.ger(pos_seq, inv_freq)
    pos_emb = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)[:, None, :]

    def ln(z, p):
        return F.layer_norm(z, (C,), P[p + ".weight"], P[p + ".bias"], 1e-5)

    core_out = word_emb
    hids = [core_out]
    for i in range(cfg.n_layer):
        p = "blocks.%d." % i
        r_w_bias = P["u"] if cfg.shared_uv else P[p + "attn.u"]
        r_r_bias = P["v"] if cfg.shared_uv else P[p + "attn.v"]
        w = core_out
        cat = torch.cat([mems[i], w], 0)
        w_heads = (ln(cat, p + "ln1") if cfg.norm == "pre" else cat) @ P[p + "attn.qkv.weight"].t()
        r_head_k = pos_emb @ P[p + "attn.r.weight"].t()
        w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        w_head_q = w_head_q[-qlen:]
        w_head_q = w_head_q.reshape(qlen, bsz, H, D)
        w_head_k = w_head_k.reshape(klen, bsz, H, D)
        w_head_v = w_head_v.reshape(klen, bsz, H, D)
        r_head_k = r_head_k.reshape(klen, H, D)
        AC = torch.einsum("ibnd,jbnd->ijbn", w_head_q + r_w_bias, w_head_k)
        BD = _rel_shift(torch.einsum("ibnd,jnd->ijbn", w_head_q + r_r_bias, r_head_k))
        attn_score = (AC + BD) * (1 / (D ** 0.5))
        attn_score = attn_score.masked_fill(dec_attn_mask[:, :, :, None], -float("inf"))
        attn_prob = F.softmax(attn_score, dim=1)
        attn_vec = torch.einsum("ijbn,jbnd->ibnd", attn_prob, w_head_v).reshape(qlen, bsz, C)
        attn_out = attn_vec @ P[p + "attn.proj.weight"].t()
        out = w + attn_out if cfg.norm == "pre" else ln(w + attn_out, p + "ln1")

        def core_net(z):
            z = z @ P[p + "ffn.fc1.weight"].t() + P[p + "ffn.fc1.bias"]
            z = F.gelu(z, approximate="tanh") if cfg.activation == "gelu" else F.relu(z)
            return z @ P[p + "ffn.fc2.weight"].t() + P[p + "ffn.fc2.bias"]

        if cfg.norm == "pre":
            core_out = core_net(ln(out, p + "ln2")) + out
        else:
            core_out = ln(out + core_net(out), p + "ln2")
        hids.append(core_out)
    # _update_mems (ext_len = 0): keeps n_layer + 1 memories; the last one is never read.
    end_idx = mlen + qlen
    beg_idx = max(0, end_idx - cfg.mem_len)
    new_mems = [torch.cat([mems[i], hids[i]], dim=0)[beg_idx:end_idx].detach() for i in range(len(hids))]
    h = core_out
    if cfg.norm == "pre":
        h = ln(h, "ln_f")
    W = P["wte"] if cfg.tied else P["lm_head.weight"]
    logits = (h @ W.t()).transpose(0, 1)
    return logits, [m.transpose(0, 1) for m in new_mems]


def loop_terms(q, k, r, u, vb, M):
    """Unscaled content and position terms AC, BD [B,H,T,S] by explicit per-element dot products:
    AC[b,h,i,j] = (q_i + u_h) . k_j, BD[b,h,i,j] = (q_i + vb_h) . r[M+i-j]; NaN where j > M+i."""
    B, T, H, D = q.shape
    S = k.shape[1]
    ac = np.full((B, H, T, S), np.nan)
    bd = np.full((B, H, T, S), np.nan)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                for j in range(M + i + 1):
                    ac[b, h, i, j] = np.dot(q[b, i, h] + u[h], k[b, j, h])
                    bd[b, h, i, j] = np.dot(q[b, i, h] + vb[h], r[M + i - j, h])
    return ac, bd


# ---------------------------------------------------------------------------------------------
# Self-checks


def rand(rng, *shape):
    return torch.as_tensor(rng.normal(0.0, 1.0, size=shape), dtype=torch.float64)


def check_attention_gradcheck():
    rng = np.random.RandomState(1)
    for (B, H, T, M, D, W) in [(1, 2, 3, 2, 2, 0), (2, 2, 4, 3, 2, 3), (1, 1, 3, 0, 3, 0), (1, 2, 4, 0, 2, 2)]:
        S = M + T
        ins = tuple(rand(rng, *s).requires_grad_(True)
                    for s in [(B, T, H, D), (B, S, H, D), (B, S, H, D), (S, H, D), (H, D), (H, D)])

        def f(*xs):
            return xl_ref.rel_attention(*xs, M, causal=True, same_length_window=W)

        assert torch.autograd.gradcheck(f, ins, eps=1e-6, atol=1e-8, rtol=1e-6)
        print("  gradcheck rel_attention ok: B=%d H=%d T=%d M=%d D=%d window=%d (q, k, v, r, u, vb; out and lse)"
              % (B, H, T, M, D, W))


def check_attention_shift_trick():
    """rel_attention == explicit per-element definition == the original's shift-trick formulation."""
    rng = np.random.RandomState(2)
    cases = list(ATTN_CASES.values()) + [(2, 2, 6, 0, 3, 0), (2, 2, 4, 9, 2, 6), (1, 2, 5, 3, 2, 1)]
    for (B, H, T, M, D, W) in cases:
        S = M + T
        q, k, v = rand(rng, B, T, H, D), rand(rng, B, S, H, D), rand(rng, B, S, H, D)
        r, u, vb = rand(rng, S, H, D), rand(rng, H, D), rand(rng, H, D)
        scale = 1.0 / math.sqrt(D)
        out, lse = xl_ref.rel_attention(q, k, v, r, u, vb, M, True, W, scale)
        out_o, lse_o, bd_shift = original_style_attention(q, k, v, r, u, vb, M, W, scale)
        # BD of the shift trick on causal-visible entries vs the direct definition.
        ac_def, bd_def = loop_terms(q.numpy(), k.numpy(), r.numpy(), u.numpy(), vb.numpy(), M)
        bd_s = bd_shift.permute(2, 3, 0, 1).numpy()                          # [B,H,T,S]
        vis = ~np.isnan(bd_def)
        e_bd = np.abs(bd_s[vis] - bd_def[vis]).max()
        # Full scores by loops vs the softmax result: lse over visible (and windowed) entries.
        sc = (ac_def + bd_def) * scale
        vmask = xl_ref.visible_mask(T, M, True, W).numpy()
        sc = np.where(vmask[None, None], sc, -np.inf)
        mx = sc.max(-1, keepdims=True)
        lse_loop = (mx + np.log(np.exp(sc - mx).sum(-1, keepdims=True)))[..., 0]
        p = np.exp(sc - lse_loop[..., None])
        out_loop = np.einsum("bhij,bjhd->bihd", p, v.numpy())
        e1 = max((out - out_o).abs().max().item(), (lse - lse_o).abs().max().item())
        e2 = max(np.abs(out.numpy() - out_loop).max(), np.abs(lse.numpy() - lse_loop).max())
        assert e_bd < 1e-12 and e1 < 1e-12 and e2 < 1e-12, (e_bd, e1, e2)
        print("  rel_attention == shift trick == loops: B=%d H=%d T=%d M=%d D=%d window=%d (BD %.1e, out/lse %.1e, %.1e)"
              % (B, H, T, M, D, W, e_bd, e1, e2))


def check_mask_matches_original():
    """visible_mask(window = mem_len) is the complement of the original dec_attn_mask (same_length) for
    every T, M <= mem_len and mem_len in a range, and of the causal mask without same_length."""
    n = 0
    for mem_len in range(1, 11):
        for M in range(0, mem_len + 1):
            for T in range(1, 10):
                ours = xl_ref.visible_mask(T, M, True, mem_len)
                assert torch.equal(ours, ~original_mask(T, M, True, mem_len)), (T, M, mem_len)
                assert torch.equal(xl_ref.visible_mask(T, M, True, 0), ~original_mask(T, M, False, mem_len))
                n += 1
    print("  mask == original dec_attn_mask (same_length 0/1) for %d (T, M, mem_len) triples" % n)


TINY = [xl_ref.XLConfig(n_layer=2, d_model=4, n_head=2, d_ff=6, seq_len=3, mem_len=2, clamp_len=0,
                        same_length=False, shared_uv=False, norm="pre", activation="gelu", tied=True),
        xl_ref.XLConfig(n_layer=2, d_model=6, n_head=3, d_ff=5, seq_len=3, mem_len=4, clamp_len=2,
                        same_length=True, shared_uv=True, norm="post", activation="relu", tied=False)]


def check_model_gradcheck():
    """gradcheck of the segment-1 loss and of the segment-2 loss (memory from segment 1, held fixed)
    w.r.t. every parameter of tiny float64 models."""
    from torch.nn.utils import stateless
    for n, cfg in enumerate(TINY):
        rng = np.random.RandomState(11 + n)
        model = make_model(cfg, random_params(cfg, rng))
        names = xl_ref.param_names(cfg)
        tok1, tgt1, tok2, tgt2 = [torch.as_tensor(a, dtype=torch.long) for a in byte_streams(rng, 2, cfg.seq_len)]
        with torch.no_grad():
            _, mems1 = model(tok1)
        for seg, (tok, tgt, mems) in enumerate([(tok1, tgt1, None), (tok2, tgt2, mems1)], 1):
            inputs = tuple(p.detach().clone().requires_grad_(True) for p in model.export_params().values())

            def f(*ps):
                logits, _ = stateless.functional_call(model, dict(zip(names, ps)), (tok, mems))
                return F.cross_entropy(logits.reshape(-1, 256), tgt.reshape(-1))

            assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)
            print("  gradcheck model loss%d ok: %s/%s/%s shared_uv=%d clamp=%d same_length=%d, M=%d, %d parameters"
                  % (seg, cfg.norm, cfg.activation, "tied" if cfg.tied else "untied", cfg.shared_uv,
                     cfg.clamp_len, cfg.same_length, 0 if mems is None else mems[0].shape[1], len(inputs)))


def check_original_style_model():
    """The module equals an independent time-major transcription of the original code (shift trick,
    original mask, _update_mems) on the fixture configs and the tiny ones, over 3 segments."""
    cfgs = [(name, c, B) for name, (c, B, _) in MODEL_FIXTURES.items()] + [("tiny%d" % i, c, 2) for i, c in enumerate(TINY)]
    for name, cfg, B in cfgs:
        rng = np.random.RandomState(21)
        P = random_params(cfg, rng)
        model = make_model(cfg, P)
        Pt = {k: torch.as_tensor(v) for k, v in P.items()}
        mems_a = mems_b = None
        err = 0.0
        for seg in range(3):
            tok = torch.as_tensor(rng.randint(0, 256, size=(B, cfg.seq_len)), dtype=torch.long)
            la, mems_a = model(tok, mems_a)
            lb, mems_b = original_style_forward(cfg, Pt, tok, mems_b)
            err = max(err, (la - lb).abs().max().item())
            assert len(mems_a) == cfg.n_layer and len(mems_b) == cfg.n_layer + 1
        for ma, mb in zip(mems_a, mems_b):
                assert ma.shape == mb.shape and ma.shape[1] == min(cfg.mem_len, (seg + 1) * cfg.seq_len)
                err = max(err, (ma - mb).abs().max().item())
        assert err < 1e-12, (name, err)
        print("  model == original-code transcription (%s, 3 segments): logits/mems err %.1e" % (name, err))


def check_recurrence():
    """A 12-token sequence in one segment (mem_len 12) gives the same logits as two segments of 6
    with memory, and the same memory afterwards."""
    n = 0
    for norm in ("pre", "post"):
        for clamp in (0, 3):
            for same in (False, True):
                for shared in (False, True):
                    cfg = xl_ref.XLConfig(n_layer=2, d_model=8, n_head=2, d_ff=12, seq_len=6, mem_len=12,
                                          clamp_len=clamp, same_length=same, shared_uv=shared, norm=norm,
                                          activation="gelu" if norm == "pre" else "relu", tied=norm == "pre")
                    rng = np.random.RandomState(31 + n)
                    model = make_model(cfg, random_params(cfg, rng))
                    tok = torch.as_tensor(rng.randint(0, 256, size=(2, 12)), dtype=torch.long)
                    full, mems_full = model(tok)
                    l1, m1 = model(tok[:, :6])
                    l2, m2 = model(tok[:, 6:], m1)
                    e = (torch.cat([l1, l2], 1) - full).abs().max().item()
                    em = max((a - b).abs().max().item() for a, b in zip(m2, mems_full))
                    assert e < 1e-12 and em < 1e-12, (cfg, e, em)
                    n += 1
    print("  recurrence exact: 12 tokens in one segment == 2 x 6 with memory (%d configs: pre/post, clamp 0/3,"
          " same_length 0/1, shared_uv 0/1), max err %.1e" % (n, e))


def check_dropout_identity():
    cfg = xl_ref.XLConfig(n_layer=1, d_model=8, n_head=2, d_ff=8, seq_len=4, mem_len=3, dropout=0.0)
    m = xl_ref.XL(cfg, dtype=torch.float64)
    tok = torch.randint(0, 256, (2, 4))
    m.train(True)
    a, _ = m(tok)
    m.train(False)
    b, _ = m(tok)
    assert torch.equal(a, b)


def self_check():
    print("self-check:")
    check_attention_gradcheck()
    check_attention_shift_trick()
    check_mask_matches_original()
    check_model_gradcheck()
    check_original_style_model()
    check_recurrence()
    check_dropout_identity()


# ---------------------------------------------------------------------------------------------
# Fixtures


def generator_string(seed):
    return "tests/reference/make_xl_fixture.py seed=%d torch %s numpy %s" % (seed, torch.__version__, np.__version__)


def build_attn_fixture():
    rng = np.random.RandomState(ATTN_SEED)
    tensors = []
    meta = {"model": "xl_attn", "cases": ",".join(ATTN_CASES), "dropout": "0", "generator": generator_string(ATTN_SEED)}
    for c, (B, H, T, M, D, W) in ATTN_CASES.items():
        S = M + T
        x = {n: f32(rng.normal(0.0, 1.0, size=shape)) for n, shape in
             [("q", (B, T, H, D)), ("k", (B, S, H, D)), ("v", (B, S, H, D)), ("r", (S, H, D)),
              ("u", (H, D)), ("vb", (H, D)), ("dout", (B, T, H, D))]}
        scale = float(np.float32(1.0 / math.sqrt(D)))
        res = attn_reference(x["q"], x["k"], x["v"], x["r"], x["u"], x["vb"], x["dout"], M, W, scale)
        p = c + "."
        tensors += [(p + n, "F32", x[n]) for n in ("q", "k", "v", "r", "u", "vb", "dout")]
        tensors += [(p + "scale", "F32", np.array([scale])), (p + "window", "I32", np.array([W])),
                    (p + "mem", "I32", np.array([M]))]
        tensors += [(p + n, "F32", res[n]) for n in ("out", "lse", "dq", "dk", "dv", "dr", "du", "dvb")]
        meta.update({p + "batch": str(B), p + "n_head": str(H), p + "seq_len": str(T), p + "mem": str(M),
                     p + "head_dim": str(D), p + "window": str(W), p + "causal": "1"})
    return tensors, meta


def verify_attn_file(path, tensors, meta):
    got, gmeta = fixture_io.read_back(path, tensors, meta)
    summary = []
    for c in ATTN_CASES:
        p = c + "."
        g = {n: got[p + n].astype(np.float64) for n in ("q", "k", "v", "r", "u", "vb", "dout")}
        M, W, scale = int(got[p + "mem"][0]), int(got[p + "window"][0]), float(got[p + "scale"][0])
        res = attn_reference(g["q"], g["k"], g["v"], g["r"], g["u"], g["vb"], g["dout"], M, W, scale)
        for n, val in res.items():
            assert np.array_equal(val.astype(np.float32), got[p + n]), (p + n)
        # fp32 recompute (informative)
        ins = [torch.tensor(got[p + n], requires_grad=True) for n in ("q", "k", "v", "r", "u", "vb")]
        out, lse = xl_ref.rel_attention(*ins, M, True, W, scale)
        (out * torch.as_tensor(got[p + "dout"])).sum().backward()
        e = max(np.abs(t.grad.numpy() - got[p + n]).max() / np.abs(got[p + n]).max()
                for t, n in zip(ins, ("dq", "dk", "dv", "dr", "du", "dvb")))
        summary.append("%s: |out| max %.3f, fp32 out err %.1e, rel grad err %.1e"
                       % (c, np.abs(res["out"]).max(), np.abs(out.detach().numpy() - got[p + "out"]).max(), e))
    return "; ".join(summary)


def build_model_fixture(name):
    cfg, B, seed = MODEL_FIXTURES[name]
    rng = np.random.RandomState(seed)
    params = random_params(cfg, rng)
    tok1, tgt1, tok2, tgt2 = byte_streams(rng, B, cfg.seq_len)
    assert np.array_equal(tok2[:, 0], tgt1[:, -1]) and np.array_equal(tok1[:, 1:], tgt1[:, :-1])
    ref = compute_reference(cfg, params, tok1, tgt1, tok2, tgt2)
    names = xl_ref.param_names(cfg)
    tensors = [(n, "F32", params[n]) for n in names]
    tensors += [("tokens1", "I32", tok1), ("targets1", "I32", tgt1), ("tokens2", "I32", tok2), ("targets2", "I32", tgt2),
                ("expected.logits1", "F32", ref["logits1"]), ("expected.logits2", "F32", ref["logits2"]),
                ("expected.loss1", "F32", np.array([ref["loss1"]])), ("expected.loss2", "F32", np.array([ref["loss2"]]))]
    tensors += [("mem1.%d" % i, "F32", m) for i, m in enumerate(ref["mems1"])]
    tensors += [("grad1." + n, "F32", ref["grads1"][n]) for n in names]
    tensors += [("grad2." + n, "F32", ref["grads2"][n]) for n in names]
    meta = cfg.metadata(B)
    meta["generator"] = generator_string(seed)
    return cfg, B, tensors, meta, ref


def verify_model_file(path, cfg, B, tensors, meta):
    """Read back, compare exactly, recompute from the file's own contents; returns a summary string."""
    got, gmeta = fixture_io.read_back(path, tensors, meta)
    fcfg = xl_ref.config_from_metadata(gmeta)
    assert fcfg == cfg, (fcfg, cfg)
    names = xl_ref.param_names(cfg)
    P = {n: got[n].astype(np.float64) for n in names}
    ref = compute_reference(cfg, P, got["tokens1"], got["targets1"], got["tokens2"], got["targets2"])
    for s in ("1", "2"):
        assert np.float32(ref["loss" + s]) == got["expected.loss" + s][0]
        assert np.array_equal(ref["logits" + s].astype(np.float32), got["expected.logits" + s])
        for n in names:
            assert np.array_equal(ref["grads" + s][n].astype(np.float32), got["grad%s.%s" % (s, n)]), n
    for i in range(cfg.n_layer):
        assert got["mem1.%d" % i].shape == (B, min(cfg.mem_len, cfg.seq_len), cfg.d_model)
        assert np.array_equal(ref["mems1"][i].astype(np.float32), got["mem1.%d" % i])
    # Informative: segment 2 started from the stored (F32-rounded) mem1 instead of the float64 memory.
    alt = compute_reference(cfg, P, got["tokens1"], got["targets1"], got["tokens2"], got["targets2"],
                            mem1_override=[got["mem1.%d" % i] for i in range(cfg.n_layer)])
    d_mem = np.abs(alt["logits2"] - ref["logits2"]).max()
    # Informative: a float32 PyTorch run of both segments vs the float64 reference.
    m32 = xl_ref.XL(cfg, dtype=torch.float32)
    m32.import_params(got)
    errs = []
    mems = None
    for s in ("1", "2"):
        m32.zero_grad(set_to_none=True)
        logits, mems = m32(torch.as_tensor(got["tokens" + s], dtype=torch.long), mems)
        loss = m32.loss_from_logits(logits, torch.as_tensor(got["targets" + s]))
        loss.backward()
        gerr = max(np.abs(g.numpy() - got["grad%s.%s" % (s, n)]).max() / (np.abs(got["grad%s.%s" % (s, n)]).max() + 1e-30)
                   for n, g in m32.export_grads(prefix="").items())
        errs.append("seg%s |dloss| %.1e rel grad %.1e" % (s, abs(loss.item() - ref["loss" + s]), gerr))
    return ref, "fp32 run: %s; logits2 from F32 mem1 differ by %.1e" % (", ".join(errs), d_mem)


def main():
    args = fixture_io.start(__doc__, self_check, ["attn"] + list(MODEL_FIXTURES))
    if args is None:
        return
    for name in args.names:
        path = os.path.join(args.out_dir, "xl_%s.safetensors" % name)
        if name == "attn":
            tensors, meta = build_attn_fixture()
            size, summary = fixture_io.write_checked(path, tensors, meta, lambda p: verify_attn_file(p, tensors, meta),
                                                     MAX_BYTES)
            print("wrote %s: %d bytes; %s" % (fixture_io.relpath(path), size, summary))
            continue
        cfg, B, tensors, meta, ref = build_model_fixture(name)
        size, (ref2, summary) = fixture_io.write_checked(path, tensors, meta,
                                                         lambda p: verify_model_file(p, cfg, B, tensors, meta), MAX_BYTES)
        print("wrote %s: %d bytes, loss1 %.9g (F32 %r), loss2 %.9g (F32 %r); %s"
              % (fixture_io.relpath(path), size, ref["loss1"], float(np.float32(ref["loss1"])),
                 ref["loss2"], float(np.float32(ref["loss2"])), summary))


if __name__ == "__main__":
    main()
