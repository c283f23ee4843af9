"""longctx.torch.load against the C model (issue 14, item 3).

For every attention kind whose pattern a checkpoint fixes (and the model options around them), a random
checkpoint is made with the binding (longctx.Model.create, parameters() randomized, save), loaded into
PyTorch with longctx.torch.load, and its logits compared with the C model's (longctx.Model.load(...)
.logits) on random bytes: max |torch - C| / max |C| <= 1e-5, with the module in float64 and in float32.
Transformer-XL models are compared over consecutive segments (the memory carried by both sides) and
from the memory saved in the checkpoint. lsh and routing checkpoints must raise
UnsupportedAttentionError naming the kind.

Run from the repository root, after building the shared library (make):

    PYTHONPATH=python python3 -m unittest python/tests/test_torch_loader.py

(LONGCTX_LIB=/path/to/liblongctx.so to use another build; -v lists the cases.) Skipped when torch is not
installed (CI), and the C comparisons when the binding cannot load liblongctx.so. Set
LONGCTX_TORCH_REPORT=1 to print each case's measured error.
"""
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # torch_cref beside this file

import torch_cref  # noqa: E402

try:
    import torch
except ImportError:  # CI machines: no torch, the whole file is skipped
    torch = None

TOL = 1e-5
VANILLA = {"model": "vanilla", "layers": 2, "dim": 24, "heads": 6, "ffn": 32, "seg_len": 20}
XL = {"model": "xl", "layers": 2, "dim": 16, "heads": 4, "ffn": 32, "seg_len": 12, "mem_len": 10}
MLM = dict(VANILLA, objective="mlm")


def _lm_metadata(attn):
    return {"format": "longctx", "format_version": "1", "model": "vanilla", "vocab": "256", "n_layer": "2",
            "d_model": "16", "n_head": "4", "d_ff": "32", "seq_len": "16", "norm": "pre", "activation": "gelu",
            "tied": "1", "dropout": "0", "attn": attn, "step": "0", "seed": "1"}


@unittest.skipIf(torch is None, "torch is not installed")
class SpecWithoutLibrary(unittest.TestCase):
    """What needs neither the C library nor real weights: refusals at load time."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lc_torch_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_unsupported_kinds_raise_naming_the_kind(self):
        import longctx.torch as lt
        for attn, kind in [("lsh:buckets=4,chunk=4", "lsh"), ("2xfull+2xrouting:clusters=2", "routing"),
                           ("full;lsh", "lsh"), ("mykind:x=1", "mykind")]:
            with self.subTest(attn=attn):
                path = os.path.join(self.dir, "k.ckpt")
                torch_cref.write_safetensors(path, _lm_metadata(attn))
                with self.assertRaises(lt.UnsupportedAttentionError) as cm:
                    lt.load(path)
                self.assertIsInstance(cm.exception, NotImplementedError)
                self.assertIn("'%s'" % kind, str(cm.exception))

    def test_not_a_language_model(self):
        import longctx.torch as lt
        path = os.path.join(self.dir, "h.ckpt")
        torch_cref.write_safetensors(path, dict(_lm_metadata("full"), model="seq2seq"))
        with self.assertRaisesRegex(ValueError, "seq2seq checkpoint, not a language model .*classify or hibert"):
            lt.load(path)
        torch_cref.write_safetensors(path, dict(_lm_metadata("full"), model="hibert"))
        with self.assertRaisesRegex(ValueError, "metadata key max_sent_len is missing"):
            lt.load(path)
        torch_cref.write_safetensors(path, {"format": "other"})
        with self.assertRaisesRegex(ValueError, "not a longctx checkpoint"):
            lt.load(path)

    def test_missing_tensor(self):
        import longctx.torch as lt
        path = os.path.join(self.dir, "m.ckpt")
        torch_cref.write_safetensors(path, _lm_metadata("full"), [("wte", np.zeros((256, 16)))])
        with self.assertRaisesRegex(ValueError, "tensor wpe is missing"):
            lt.load(path)


@unittest.skipIf(torch is None, "torch is not installed")
class AgainstC(unittest.TestCase):
    """The module's logits against the C model's, kind by kind."""
    errors = {}  # case -> worst relative error over dtypes, lengths and segments

    @classmethod
    def setUpClass(cls):
        import torch_cref
        problem = torch_cref.binding_problem()
        if problem:
            raise unittest.SkipTest(problem)
        cls.cref = torch_cref
        cls.dir = tempfile.mkdtemp(prefix="lc_torch_")
        torch.set_num_threads(1)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)
        if os.environ.get("LONGCTX_TORCH_REPORT") and cls.errors:
            sys.stderr.write("\nlongctx.torch vs C, max |diff| / max |logit|:\n")
            for name, err in sorted(cls.errors.items()):
                sys.stderr.write("  %-34s %.2e\n" % (name, err))

    def _record(self, name, err):
        AgainstC.errors[name] = max(err, AgainstC.errors.get(name, 0.0))

    def check(self, name, config, lengths=None, segments=1, batch=2, seed=1, mask_tokens=False, chunk=None):
        """Checkpoint of `config`; for each length (vanilla) or over `segments` consecutive segments (XL),
        the torch module's logits in float64 and float32 against the C model's. chunk: scores per query
        chunk of the module (small: many chunks, as long sequences would have)."""
        import longctx.torch as lt
        if chunk:
            saved = lt._CHUNK_SCORES
            lt._CHUNK_SCORES = chunk
            self.addCleanup(setattr, lt, "_CHUNK_SCORES", saved)
        path = os.path.join(self.dir, name.replace(" ", "_") + ".ckpt")
        c = self.cref.make_checkpoint(path, config, seed=seed, batch=batch)
        rng = np.random.default_rng(seed + 7)
        xl = c["model"] == "xl"
        runs = []  # lists of consecutive segments
        if xl:  # segments: a count of full segments, or a list of segment lengths
            sizes = segments if isinstance(segments, list) else [c["seq_len"]] * segments
            runs.append([rng.integers(0, 256, size=(batch, T)) for T in sizes])
        else:
            for T in lengths or [c["seq_len"]]:
                top = 257 if mask_tokens else 256
                runs.append([rng.integers(0, top, size=(batch, T))])
        for segs in runs:
            want = self.cref.c_logits(path, segs)
            for dtype in (torch.float64, torch.float32):
                module = lt.load(path, dtype=dtype)
                memory = None
                for i, (seg, ref) in enumerate(zip(segs, want)):
                    with torch.no_grad():
                        out = module(torch.as_tensor(seg), memory) if xl else module(torch.as_tensor(seg))
                    if xl:
                        out, memory = out
                        self.assertEqual(len(memory), c["n_layer"])
                        seen = sum(x.shape[1] for x in segs[:i + 1])
                        self.assertEqual(memory[0].shape[1], min(c["mem_len"], seen))
                    got = out.double().numpy()
                    self.assertEqual(got.shape, ref.shape)
                    err = float(np.abs(got - ref).max() / np.abs(ref).max())
                    self._record(name, err)
                    self.assertLess(err, TOL, "%s: T=%d segment %d %s: relative error %.3g"
                                    % (name, seg.shape[1], i, dtype, err))
        return path

    # ---- vanilla causal decoder, one kind per test
    def test_full(self):
        self.check("full", dict(VANILLA, attn="full"), lengths=[20, 7])

    def test_window(self):
        self.check("window", dict(VANILLA, attn="window:w=3"), lengths=[20, 5])
        self.check("window dilated", dict(VANILLA, attn="window:w=2,dil=1/2/3"), lengths=[20])

    def test_window_global(self):
        self.check("window global", dict(VANILLA, attn="window:w=2,global=2"), lengths=[20, 1])
        self.check("window global listed", dict(VANILLA, attn="window:w=2,dil=2,global=0/7/13"), lengths=[20, 9])

    def test_block(self):
        self.check("block", dict(VANILLA, attn="block:b=6"), lengths=[20, 13])

    def test_strided(self):
        self.check("strided", dict(VANILLA, attn="strided:s=3"), lengths=[20])

    def test_compressed(self):
        self.check("compressed", dict(VANILLA, attn="compressed:w=2,s=3"), lengths=[20, 10])

    def test_bigbird(self):
        cfg = dict(VANILLA, seg_len=40, attn="bigbird:b=3,r=2")
        self.check("bigbird itc", cfg, lengths=[40, 23])  # the plan depends on the length: both
        self.check("bigbird itc seed", dict(cfg, attn="bigbird:b=4,r=1,seed=5"), lengths=[40])
        # layer 1 uses layer 0's module, and so its random blocks (the seed is the owner's)
        self.check("bigbird attn_share", dict(cfg, attn="2xbigbird:b=3,r=1+bigbird:b=2,r=2", share_attn=2))

    def test_bigbird_etc(self):
        self.check("bigbird etc", dict(VANILLA, seg_len=30, attn="bigbird:variant=etc,g=2,b=3,r=1",
                                       extra_tokens=2), lengths=[30, 12])

    def test_mixed_groups_and_layers(self):
        self.check("mixed", dict(VANILLA, layers=3, attn="2xfull+3xwindow:w=2,dil=1/2+block:b=4;"
                                 "strided:s=4+2xcompressed:w=3,s=2;bigbird:b=3,r=1"), lengths=[20])

    # ---- model options
    def test_options(self):
        self.check("qk_share attn_share", dict(VANILLA, layers=4, attn="window:w=3", share_qk=3, share_attn=2))
        self.check("post relu untied", dict(VANILLA, attn="2xfull+block:b=4", norm="post", activation="relu",
                                            untied=1, ffn_chunk=7))
        self.check("reversible", dict(VANILLA, layers=3, attn="strided:s=3;compressed:w=2,s=3;full",
                                      reversible=1))
        self.check("extra tokens global", dict(VANILLA, attn="window:w=2,global=3", extra_tokens=3))

    # ---- masked-LM encoder (bidirectional)
    def test_mlm(self):
        self.check("mlm full", dict(MLM, attn="full"), mask_tokens=True)
        self.check("mlm kinds", dict(MLM, attn="2xwindow:w=2,dil=1/2+2xblock:b=5+1xstrided:s=3+compressed:w=2,s=4"),
                   lengths=[20, 11], mask_tokens=True)
        self.check("mlm window global", dict(MLM, attn="window:w=2,global=0/9"), mask_tokens=True)
        self.check("mlm bigbird", dict(MLM, seg_len=30, attn="bigbird:b=3,r=2"), lengths=[30, 16])

    def test_linformer(self):
        self.check("linformer", dict(MLM, attn="linformer:k=5"), lengths=[20, 8])
        self.check("linformer shares", dict(MLM, layers=3, attn="linformer:k=7,share=none;linformer:k=3,share=kv;"
                                                                 "4xlinformer:k=4+window:w=2"), lengths=[20])
        self.check("linformer attn_share", dict(MLM, layers=2, attn="linformer:k=4", share_attn=2))
        self.check("linformer extra tokens", dict(MLM, attn="linformer:k=6", extra_tokens=2), lengths=[20, 9])

    # ---- Transformer-XL: relative positions, memory over consecutive segments
    def test_xl(self):
        self.check("xl full", dict(XL, attn="full"), segments=3)
        self.check("xl window", dict(XL, attn="window:w=3,dil=1/2"), segments=3)
        self.check("xl block", dict(XL, attn="block:b=5"), segments=3)
        self.check("xl strided", dict(XL, attn="strided:s=3"), segments=3)
        self.check("xl mixed", dict(XL, attn="2xfull+window:w=4,dil=2+1xblock:b=6"), segments=3)

    def test_xl_options(self):
        self.check("xl same_length clamp", dict(XL, same_length=1, clamp_len=7, shared_uv=1, norm="post",
                                                activation="relu", untied=1), segments=3)
        self.check("xl qk_share attn_share", dict(XL, layers=4, share_qk=2, share_attn=2,
                                                  attn="window:w=5;strided:s=2;window:w=5;full"), segments=3)
        self.check("xl short memory", dict(XL, mem_len=5), segments=3)

    def test_xl_short_segments(self):
        """Generation-like calls (a byte or a few at a time against the memory: the C model's decode path)."""
        for attn in ("full", "window:w=3,dil=1/2", "block:b=4", "strided:s=3", "2xfull+window:w=2+1xblock:b=3"):
            self.check("xl short segments " + attn.split(":")[0], dict(XL, attn=attn), segments=[5, 1, 1, 3, 12, 1])
        self.check("xl short segments same_length", dict(XL, same_length=1, clamp_len=4), segments=[4, 1, 2, 12, 1])

    def test_query_chunks(self):
        self.check("chunks vanilla", dict(VANILLA, attn="2xwindow:w=2,global=0/5+2xcompressed:w=2,s=3+1xbigbird:b=3,r=1"
                                                       "+block:b=4"), chunk=700)
        self.check("chunks mlm", dict(MLM, attn="2xwindow:w=2,global=2+2xcompressed:w=2,s=3+1xstrided:s=2+full"),
                   chunk=700)
        self.check("chunks xl", dict(XL, attn="2xfull+window:w=3+1xblock:b=4"), segments=2, chunk=300)

    def test_xl_saved_memory(self):
        import longctx.torch as lt
        path = os.path.join(self.dir, "xl_saved.ckpt")
        self.cref.make_checkpoint(path, dict(XL, attn="window:w=4"), seed=4, memory_segments=2)
        module = lt.load(path, dtype=torch.float64)
        self.assertEqual([tuple(m.shape) for m in module.saved_memory], [(2, 10, 16)] * 2)
        seg = np.random.default_rng(9).integers(0, 256, size=(2, 12))
        want = self.cref.c_logits(path, [seg], saved_memory=True)[0]
        with torch.no_grad():
            got, _ = module(torch.as_tensor(seg), module.saved_memory)
        err = float(np.abs(got.numpy() - want).max() / np.abs(want).max())
        self._record("xl saved memory", err)
        self.assertLess(err, TOL)

    def test_comparison_discriminates(self):
        """The random checkpoints make the patterns matter: another BigBird plan (option seed), or a
        sparse kind computed as full attention, is far outside the tolerance."""
        import longctx.torch as lt
        cases = [("bigbird:b=3,r=2", lambda g: g["opts"].update(seed=g["opts"]["seed"] + 1)),
                 ("bigbird:variant=etc,g=2,b=3,r=1", lambda g: g["opts"].update(seed=7)),
                 ("window:w=3,dil=1/2", lambda g: g.update(kind="full")),
                 ("compressed:w=2,s=3", lambda g: g.update(kind="full")),
                 ("strided:s=3", lambda g: g.update(kind="full"))]
        for attn, mutate in cases:
            with self.subTest(attn=attn):
                path = os.path.join(self.dir, "disc.ckpt")
                self.cref.make_checkpoint(path, dict(VANILLA, seg_len=40, attn=attn))
                seg = np.random.default_rng(3).integers(0, 256, size=(2, 40))
                want = self.cref.c_logits(path, [seg])[0]
                module = lt.load(path, dtype=torch.float64)
                for blk in module.blocks:
                    for g in blk.groups:
                        mutate(g)
                    blk._bigbird_cache.clear()
                with torch.no_grad():
                    got = module(torch.as_tensor(seg)).numpy()
                self.assertGreater(float(np.abs(got - want).max() / np.abs(want).max()), 1e-2)

    # ---- refusals with real checkpoints, and gradients
    def test_lsh_routing_raise(self):
        import longctx.torch as lt
        for attn, kind in [("lsh:buckets=4,chunk=5", "lsh"), ("routing:clusters=2", "routing"),
                           ("3xfull+3xrouting:clusters=2;full", "routing")]:
            with self.subTest(attn=attn):
                path = os.path.join(self.dir, kind + ".ckpt")
                self.cref.make_checkpoint(path, dict(VANILLA, attn=attn))
                with self.assertRaisesRegex(lt.UnsupportedAttentionError, "attention kind '%s' is not supported"
                                            % kind):
                    lt.load(path)

    def test_trainable(self):
        import longctx.torch as lt
        path = os.path.join(self.dir, "grad.ckpt")
        self.cref.make_checkpoint(path, dict(VANILLA, attn="window:w=3,global=1", share_qk=2))
        module = lt.load(path).train()
        tok = torch.randint(0, 256, (2, 16))
        loss = torch.nn.functional.cross_entropy(module(tok)[:, :-1].reshape(-1, 256), tok[:, 1:].reshape(-1))
        loss.backward()
        for name, p in module.named_parameters():
            self.assertIsNotNone(p.grad, name)
            self.assertTrue(bool(torch.isfinite(p.grad).all()), name)


if __name__ == "__main__":
    unittest.main()
