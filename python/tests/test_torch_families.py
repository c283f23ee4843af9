"""longctx.torch.load of classifier and HIBERT checkpoints against the C models (issue 43, item 5).

Tiny models are trained by the CLI for a step or two (`train --task classify`: bytes and words tokens, [CLS],
mean and max pooling, full, window and mixed attention; `hibert finetune` on a small BBC-layout corpus made here:
with and without head features, word vectors, a document width that needs doc.proj), then every weight is
replaced by random values of a useful size (training's N(0, 0.02^2) start leaves attention nearly uniform,
which would hide a wrong mask or a swapped tensor) and the file rewritten without optimizer moments, as an
export. The C side is the binding (longctx.Model.load: the classifier's predict_proba, the summarizer's
sentence_scores); the module must give the same probabilities and log-probabilities (the logits up to their
shift) and the same sentence scores, max |difference| <= 1e-5, in float64 and float32. Perturbing one mapped
tensor of the loaded module must move the outputs far past the tolerance.

Skipped without torch, the CLI (LONGCTX_CLI) or the library. LONGCTX_TORCH_REPORT=1 prints each case's error.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/ (the package in the build tree)
sys.path.insert(0, HERE)  # torch_cref

try:
    import torch
except ImportError:  # CI machines: no torch, the whole file is skipped
    torch = None

import longctx  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
TOL = 1e-5
SHAPE = ["--layers", "2", "--dim", "16", "--heads", "4", "--ffn", "24", "--threads", "1", "--batch", "4",
         "--warmup", "1", "--eval-every", "0", "--steps", "1"]
TEXTS = ["a good film, very good", "bad, bad, awful", "", "good", "so-so \u00e9t\u00e9 film", "x" * 70,
         "awful film %d" % 3, "very good and not bad at all", "bad", "good film 7, very good"]
WORDS = ("market rates bank shares profit growth team match coach league film award actor music vote party "
         "minister election phone network software users price energy oil firms court judge police report").split()
HSHAPE = ["--sent-layers", "1", "--sent-dim", "16", "--sent-heads", "2", "--sent-ffn", "24", "--doc-layers", "2",
          "--doc-dim", "16", "--doc-heads", "2", "--doc-ffn", "24", "--max-sent-len", "40", "--max-sents", "6",
          "--batch", "2", "--threads", "1", "--warmup", "1", "--steps", "1", "--eval-every", "0"]

tmp = exe = None
errors = {}


def setUpModule():
    global tmp, exe
    path = os.environ.get("LONGCTX_CLI") or os.path.join(REPO, "build", "release", "longctx")
    exe = path if os.access(path, os.X_OK) else None
    tmp = tempfile.mkdtemp(prefix="lc_py_torchfam_")


def tearDownModule():
    shutil.rmtree(tmp, ignore_errors=True)
    if os.environ.get("LONGCTX_TORCH_REPORT") and errors:
        sys.stderr.write("\nlongctx.torch (classifier, HIBERT) vs C, max |diff|:\n")
        for name, err in sorted(errors.items()):
            sys.stderr.write("  %-34s %.2e\n" % (name, err))


def run(*args):
    r = subprocess.run([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode:
        raise AssertionError("longctx %s: exit %d: %s" % (" ".join(args[:2]), r.returncode, r.stderr.decode()[-300:]))
    return r.stdout


def sharpen(path, seed):
    """Rewrites checkpoint path with random weights of a useful size (torch_cref.random_values), its metadata
    kept, without optimizer moments."""
    import longctx.torch as lt
    import torch_cref
    tensors, meta = lt.read_checkpoint(path)
    rng = np.random.default_rng(seed)
    torch_cref.write_safetensors(path, meta, [(name, torch_cref.random_values(name, tuple(t.shape), rng))
                                              for name, t in tensors.items()])


def max_diff(a, b):
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())


@unittest.skipIf(torch is None, "torch is not installed")
class RefusalsWithoutLibrary(unittest.TestCase):
    """Kinds the loader cannot reproduce, and files that do not match their metadata, raise at load time."""

    def test_refusals(self):
        import longctx.torch as lt
        import torch_cref
        path = os.path.join(tmp, "refused.st")
        clf = {"format": "longctx", "format_version": "1", "model": "classify", "n_layer": "1", "d_model": "8",
               "n_head": "2", "d_ff": "8", "norm": "pre", "activation": "gelu", "dropout": "0", "attn": "full",
               "max_len": "8", "tokens": "bytes", "vocab": "256", "n_classes": "2", "d_hidden": "0", "pool": "cls",
               "classify.labels": "longctx-labels 1 2\na\nb\n"}
        hib = {"format": "longctx", "format_version": "1", "model": "hibert", "norm": "pre", "activation": "gelu",
               "max_sent_len": "8", "max_sents": "4"}
        for stack in ("sent.", "doc."):
            hib.update({stack + "n_layer": "1", stack + "d_model": "8", stack + "n_head": "2", stack + "d_ff": "8"})
        for meta, kind in [(dict(clf, attn="routing:clusters=2"), "routing"),
                           (dict(hib, **{"doc.attn": "lsh:buckets=2,chunk=2"}), "lsh")]:
            torch_cref.write_safetensors(path, meta)
            with self.assertRaisesRegex(lt.UnsupportedAttentionError, "attention kind '%s' is not supported" % kind):
                lt.load(path)
        torch_cref.write_safetensors(path, clf, [("wte", np.zeros((258, 8)))])
        with self.assertRaisesRegex(ValueError, "tensor wpe is missing"):
            lt.load(path)
        torch_cref.write_safetensors(path, dict(hib, **{"max_sents": "x"}))
        with self.assertRaises(ValueError):
            lt.load(path)


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if torch is None:
            raise unittest.SkipTest("torch is not installed")
        if not exe:
            raise unittest.SkipTest("no longctx CLI (set LONGCTX_CLI)")
        import torch_cref
        problem = torch_cref.binding_problem()
        if problem:
            raise unittest.SkipTest(problem)
        torch.set_num_threads(1)

    def record(self, name, err):
        errors[name] = max(err, errors.get(name, 0.0))
        self.assertLess(err, TOL, "%s: max |torch - C| = %.3g" % (name, err))


class ClassifierTest(Base):
    @classmethod
    def setUpClass(cls):
        Base.setUpClass()
        rows = ["label\ttext"] + ["%s\t%s" % (("pos", "good film %d, very good" % i) if i % 3 else
                                              ("neg", "bad film %d, awful" % i)) for i in range(24)]
        rows += ["mid\tso-so film %d" % i for i in range(6)]
        cls.data = os.path.join(tmp, "train.tsv")
        with open(cls.data, "w") as f:
            f.write("\n".join(rows) + "\n")

    def train(self, name, *flags):
        """The sharpened checkpoint of a run with flags (made once: tests share it)."""
        path = os.path.join(tmp, name + ".st")
        if not os.path.exists(path):
            run("train", "--task", "classify", "--data", self.data, "--valid", self.data, "--out", path, *SHAPE,
                *flags)
            sharpen(path, len(name))
        return path

    def compare(self, name, path, inputs=TEXTS):
        import longctx.torch as lt
        want = np.array([list(p.values()) for p in longctx.Model.load(path, threads=1).predict_proba(inputs)])
        for dtype in (torch.float64, torch.float32):
            module = lt.load(path, dtype=dtype)
            self.assertIsInstance(module, lt.LongctxClassifier)
            with torch.no_grad():
                logits = module(inputs).double()
            got = torch.softmax(logits, -1).numpy()
            self.assertGreater(float(want.max() - want.min()), 0.5, name)  # the probabilities are far from uniform
            tag = "%s %s" % (name, str(dtype)[-7:])
            self.record(tag + " probs", max_diff(got, want))
            logp = np.log(want)  # float32 sums round to about 1e-7 of the largest log-probability
            scale = 1.0 if dtype == torch.float64 else max(1.0, float(np.abs(logp).max()))
            self.record(tag + " log-probs", max_diff(torch.log_softmax(logits, -1).numpy(), logp) / scale)
        return module, want

    def test_bytes_cls_full(self):
        path = self.train("bytes_cls_full", "--max-len", "48")
        module, want = self.compare("bytes cls full", path)
        self.assertEqual(module.labels, ["mid", "neg", "pos"])
        self.assertEqual(module.predict(TEXTS), longctx.Model.load(path).predict(TEXTS))
        ids = [module.tokenize(t) for t in TEXTS]  # token ids give the texts' logits
        with torch.no_grad():
            self.assertTrue(torch.equal(module(ids), module(TEXTS)))
            self.assertTrue(torch.equal(module([t.encode("utf-8") for t in TEXTS]), module(TEXTS)))

    def mean_window(self):
        return self.train("bytes_mean_window", "--max-len", "40", "--pool", "mean", "--attn", "window:w=3",
                          "--norm", "post", "--activation", "relu", "--hidden", "12")

    def test_bytes_mean_window(self):
        self.compare("bytes mean window post relu", self.mean_window())

    def test_bytes_max_block(self):
        path = self.train("bytes_max_block", "--max-len", "40", "--pool", "max", "--attn", "block:b=8")
        self.compare("bytes max block", path)

    def test_words(self):
        path = self.train("words_mean_window", "--tokens", "words", "--max-len", "6", "--pool", "mean",
                          "--attn", "window:w=1,dil=1/2,global=0/3")
        module, _ = self.compare("words mean window global", path)
        self.assertEqual(module.tokenize("good film zzz"), [module.words[b"good"], module.words[b"film"], 2])
        path = self.train("words_cls_full", "--tokens", "words", "--max-len", "8", "--share-attn", "2")
        self.compare("words cls full attn_share", path)

    def test_bracket_depth(self):
        nested = ["[MAX good ( film [MIN bad ] ) ]", "( [SM awful ] [ [ good ] ] ] ] film", "good", "",
                  "[ [ [ [ [ deep film ] ] ] ] ]"]
        path = self.train("words_depth", "--tokens", "words", "--max-len", "9", "--bracket-depth", "3", "--parens",
                          "drop", "--pool", "mean")
        module, _ = self.compare("words bracket depth", path, nested)
        self.assertEqual(len(module.tokenize(nested[0])), 7)
        with self.assertRaises(TypeError):
            module([[4, 5]])
        path = self.train("bytes_depth", "--max-len", "30", "--bracket-depth", "4", "--attn", "window:w=2")
        self.compare("bytes bracket depth", path, nested + TEXTS)

    def test_mixed_kinds(self):
        path = self.train("bytes_mixed", "--max-len", "40", "--attn",
                          "1xwindow:w=2,global=2+1xblock:b=4+1xstrided:s=3+bigbird:b=3,r=1;compressed:w=2,s=3+3xfull")
        self.compare("bytes mixed kinds", path)

    def test_mis_mapped_weight_is_seen(self):
        import longctx.torch as lt
        path = self.mean_window()
        want = np.array([list(p.values()) for p in longctx.Model.load(path, threads=1).predict_proba(TEXTS)])
        for name in ("wte", "wpe", "blocks.1.attn.global.qkv.weight", "blocks.0.ffn.fc1.bias", "blocks.1.ln2.weight",
                     "cls.dense.weight", "cls.out.bias"):
            module = lt.load(path, dtype=torch.float64)
            p = module.checkpoint_parameters()[name]
            with torch.no_grad():
                p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(5), dtype=p.dtype))
                got = torch.log_softmax(module(TEXTS), -1).numpy()
            self.assertGreater(max_diff(got, np.log(want)), 100 * TOL, name)


class HibertTest(Base):
    @classmethod
    def setUpClass(cls):
        Base.setUpClass()
        root = os.path.join(tmp, "bbc")
        for part in ("articles", "summaries"):
            os.makedirs(os.path.join(root, part, "t"), exist_ok=True)
        cls.texts = []
        for d in range(1, 11):
            sents = [cls.sentence(d, i) for i in range(4 + d % 4)]
            with open(os.path.join(root, "articles", "t", "%03d.txt" % d), "w") as f:
                f.write("Title %d\n\n%s\n" % (d, " ".join(sents)))
            with open(os.path.join(root, "summaries", "t", "%03d.txt" % d), "w") as f:
                f.write(sents[0] + sents[2])
        cls.root = root
        cls.texts = [" ".join(cls.sentence(d, i) for i in range(n)) for d, n in ((3, 5), (12, 8), (20, 2))]
        cls.texts.append("Short one. A much longer sentence that runs past the forty bytes this model reads of it!")

    @staticmethod
    def sentence(d, i):
        w1, w2 = WORDS[(d * 7 + i * 3) % 30], WORDS[(d * 5 + i * 11 + 1) % 30]
        return "The %s of item %d moved the %s by %d points in week %d." % (w1, d, w2, d * 3 + i, i)

    def finetune(self, name, *flags):
        """The sharpened checkpoint of a run with flags (made once: tests share it)."""
        path = os.path.join(tmp, name + ".st")
        if not os.path.exists(path):
            run("hibert", "finetune", "--data", self.root, "--out", path, *HSHAPE, *flags)
            sharpen(path, len(name))
        return path

    def features_model(self):
        return self.finetune("hibert_features", "--head-features", "4", "--sent-words", "50", "--doc-dim", "12",
                             "--doc-attn", "window:w=1,global=1", "--norm", "post")

    def compare(self, name, path):
        import longctx.torch as lt
        c = longctx.Model.load(path, threads=1)
        scores = np.concatenate([[v for _, v in c.sentence_scores(text, title=False)] for text in self.texts])
        self.assertGreater(float(scores.max() - scores.min()), 0.5, name)  # the scores are far from equal
        for dtype in (torch.float64, torch.float32):
            module = lt.load(path, dtype=dtype)
            self.assertIsInstance(module, lt.LongctxHIBERT)
            for text in self.texts:
                pairs = c.sentence_scores(text, title=False)
                with torch.no_grad():
                    got = module([s for s, _ in pairs])
                want = np.array([v for _, v in pairs])
                self.record("%s %s" % (name, str(dtype)[-7:]), max_diff(got.numpy(), want))
        return module

    def test_plain(self):
        m = self.compare("hibert", self.finetune("hibert_plain", "--sent-attn", "window:w=3"))
        self.assertIsNone(m.head_features)
        self.assertEqual(m.config["max_sents"], 6)

    def test_features_words_proj(self):
        path = self.features_model()
        m = self.compare("hibert features words doc.proj", path)
        self.assertEqual(tuple(m.head_features.shape), (1, 4))
        import longctx.torch_families as tf
        sents = [s for s, _ in longctx.Model.load(path).sentence_scores(self.texts[0], title=False)]
        with torch.no_grad():  # given features are the ones used; the C library's by default
            self.assertTrue(torch.equal(m(sents, features=tf.summary_features(sents)), m(sents)))
            self.assertFalse(torch.equal(m(sents, features=torch.zeros(len(sents), 4)), m(sents)))
        with self.assertRaises(ValueError):
            m(sents, features=torch.zeros(len(sents), 2))

    def test_mis_mapped_weight_is_seen(self):
        import longctx.torch as lt
        path = self.features_model()
        pairs = longctx.Model.load(path, threads=1).sentence_scores(self.texts[1], title=False)
        sents, want = [s for s, _ in pairs], np.array([v for _, v in pairs])
        # (a bias added to every sentence vector is invisible here: the word vectors' centring removes it)
        for name in ("sent.wte", "sent.words", "sent.wpe", "sent.blocks.0.attn.qkv.weight", "sent.blocks.0.ln2.weight",
                     "doc.proj.weight", "doc.wpe", "doc.blocks.1.attn.global.qkv.weight", "doc.blocks.1.ffn.fc2.weight",
                     "head.weight", "head.features"):
            module = lt.load(path, dtype=torch.float64)
            p = module.checkpoint_parameters()[name]
            with torch.no_grad():
                p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(5), dtype=p.dtype))
                got = module(sents).numpy()
            self.assertGreater(max_diff(got, want), 100 * TOL, name)


if __name__ == "__main__":
    unittest.main()
