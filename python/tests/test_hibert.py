"""Tests of the HIBERT family in the Python binding (python/longctx/hibert.py): longctx.Model.load of a
fine-tuned HIBERT checkpoint (the shipped models/hibert-bbc.safetensors) gives a longctx.hibert.Summarizer
whose summaries and sentence scores are the CLI's (`longctx summarize --method hibert`, `--scores`) on three
BBC articles; a pre-training checkpoint without a trained head (a tiny one made by the CLI), a damaged file
and bad texts raise errors naming what is wrong. Skipped without the CLI."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/ (the package in the build tree)

import longctx  # noqa: E402
import longctx.hibert  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
CKPT = os.path.join(REPO, "models", "hibert-bbc.safetensors")
ARTICLES = [os.path.join(REPO, "data", "bbc-news-summary", "articles", name + ".txt")
            for name in ("business/001", "sport/010", "tech/100")]

tmp = None
exe = None


def setUpModule():
    global tmp, exe
    path = os.environ.get("LONGCTX_CLI") or os.path.join(REPO, "build", "release", "longctx")
    exe = path if os.access(path, os.X_OK) else None
    tmp = tempfile.mkdtemp(prefix="lc_py_hibert_")


def tearDownModule():
    shutil.rmtree(tmp, ignore_errors=True)


def run(*args):
    return subprocess.run([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          check=True).stdout.decode("utf-8")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class SummarizerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not exe:
            raise unittest.SkipTest("no longctx CLI (set LONGCTX_CLI)")
        missing = [p for p in [CKPT] + ARTICLES if not os.path.isfile(p)]
        if missing:
            raise unittest.SkipTest("missing %s" % missing[0])
        cls.m = longctx.Model.load(CKPT, threads=1)

    def test_family(self):
        m = self.m
        self.assertIsInstance(m, longctx.hibert.Summarizer)
        self.assertEqual(m.family, "hibert")
        self.assertFalse(m.intruder_head)  # a fine-tuned checkpoint
        self.assertEqual(m.step, 400)  # the best validation step of its fine-tuning (docs/results/summarization.md)
        self.assertGreater(m.num_params, 0)
        self.assertIn("HIBERT summarizer", repr(m))

    def test_summaries_are_the_clis(self):
        for path in ARTICLES:
            text = read(path)
            for k in ((3, 1) if path == ARTICLES[0] else (3,)):
                cli = run("summarize", "--method", "hibert", "--ckpt", CKPT, "--sentences", str(k), "--threads", "1",
                          path).rstrip("\n")
                ours = self.m.summarize(text, sentences=k)
                self.assertEqual(len(ours), k, path)
                self.assertEqual(" ".join(ours), cli, path)
            self.assertEqual(self.m.summarize(text.encode("utf-8")), self.m.summarize(text))  # bytes alike

    def test_scores_are_the_clis(self):
        for path in ARTICLES:
            rows = [line.split("\t", 2) for line in
                    run("summarize", "--ckpt", CKPT, "--scores", "--threads", "1", path).splitlines()]
            pairs = self.m.sentence_scores(read(path))
            self.assertEqual([s for s, _ in pairs], [r[2] for r in rows], path)
            # the CLI prints the same float32 scores as %.9g, which reads back exactly
            self.assertEqual([float("%.9g" % v) for _, v in pairs], [float(r[0]) for r in rows], path)
            order = sorted(range(len(pairs)), key=lambda i: (-pairs[i][1], i))  # best first, ties: earlier
            self.assertEqual(sorted(order[:3]), [i for i, r in enumerate(rows) if r[1] == "1"], path)
            top = set(order[:3])
            self.assertEqual(self.m.summarize(read(path)), [s for i, (s, _) in enumerate(pairs) if i in top])

    def test_title_rule(self):
        path = ARTICLES[0]
        text = read(path)
        title = text.split("\n", 1)[0]
        auto = [s for s, _ in self.m.sentence_scores(text)]
        self.assertNotIn(title, " ".join(auto[:1]))  # the BBC layout: line 1 is a title
        self.assertEqual(auto, [s for s, _ in self.m.sentence_scores(text, title=True)])
        kept = [s for s, _ in self.m.sentence_scores(text, title=False)]
        self.assertTrue(kept[0].startswith(title), kept[0])
        cli = run("summarize", "--ckpt", CKPT, "--no-title", "--threads", "1", path).rstrip("\n")
        self.assertEqual(" ".join(self.m.summarize(text, title=False)), cli)

    def test_bad_texts(self):
        m = self.m
        with self.assertRaises(longctx.FormatError) as e:
            m.summarize("Only one sentence here.")
        self.assertIn("at least 2 sentences", str(e.exception))
        with self.assertRaises(longctx.FormatError):
            m.sentence_scores("   ")
        with self.assertRaises(ValueError):
            m.summarize("A sentence. Another\0 one.")
        with self.assertRaises(TypeError):
            m.summarize(["A sentence.", "Another."])
        with self.assertRaises(TypeError):
            m.summarize("A first one. A second one.", sentences=2.0)
        with self.assertRaises(TypeError):
            m.summarize("A first one. A second one.", title="yes")
        with self.assertRaises(longctx.ArgumentError):
            m.summarize("A first one. A second one.", sentences=0)
        self.assertEqual(m.summarize("A first one. A second one.", sentences=5), ["A first one.", "A second one."])
        self.assertEqual(m.summarize("A first one. A second one.", sentences=2 ** 40), ["A first one.", "A second one."])
        with self.assertRaises(longctx.ArgumentError):
            m.summarize("A first one. A second one.", sentences=-2 ** 40)


class CheckpointErrorTest(unittest.TestCase):
    def test_pretraining_checkpoint_is_refused(self):
        if not exe:
            self.skipTest("no longctx CLI (set LONGCTX_CLI)")
        docs = os.path.join(tmp, "docs")
        os.makedirs(docs, exist_ok=True)
        for d in range(4):
            with open(os.path.join(docs, "d%d.txt" % d), "w") as f:
                f.write(" ".join("The item %d moved by %d points in week %d." % (d, d + i, i) for i in range(4)))
        pre = os.path.join(tmp, "pre.st")
        run("hibert", "pretrain", "--docs", docs, "--out", pre, "--steps", "1", "--batch", "2", "--threads", "1",
            "--sent-layers", "1", "--sent-dim", "16", "--sent-heads", "2", "--sent-ffn", "32", "--doc-layers", "1",
            "--doc-dim", "16", "--doc-heads", "2", "--doc-ffn", "32", "--dec-layers", "1", "--dec-dim", "16",
            "--dec-heads", "2", "--dec-ffn", "32", "--max-sent-len", "64", "--max-sents", "6", "--eval-every", "0")
        with self.assertRaises(longctx.ArgumentError) as e:
            longctx.Model.load(pre)
        self.assertIn(pre, str(e.exception))
        self.assertIn("pre-training checkpoint", str(e.exception))

    def test_damaged_checkpoint_names_the_file(self):
        if not os.path.isfile(CKPT):
            self.skipTest("missing %s" % CKPT)
        cut = os.path.join(tmp, "cut.st")
        with open(CKPT, "rb") as f, open(cut, "wb") as g:
            g.write(f.read(os.path.getsize(CKPT) // 2))
        with self.assertRaises(longctx.FormatError) as e:
            longctx.Model.load(cut)
        self.assertIn(cut, str(e.exception))

    def test_closed(self):
        if not os.path.isfile(CKPT):
            self.skipTest("missing %s" % CKPT)
        with longctx.Model.load(CKPT) as m:
            self.assertEqual(m.family, "hibert")
        with self.assertRaises(longctx.ArgumentError):
            m.summarize("A first one. A second one.")


if __name__ == "__main__":
    unittest.main()
