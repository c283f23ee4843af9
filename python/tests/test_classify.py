"""Tests of the classifier family in the Python binding (python/longctx/classify.py): longctx.Model.load of a
checkpoint of `longctx train --task classify` gives a longctx.Classifier whose predictions and probabilities
are the CLI's (`longctx predict`, `predict --probs`), for a bytes and a words model. Tiny models trained by
the CLI in a few seconds; skipped without it."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/ (the package in the build tree)

import longctx  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SHAPE = ["--layers", "1", "--dim", "16", "--heads", "2", "--ffn", "32", "--threads", "1", "--batch", "4",
         "--warmup", "2", "--eval-every", "0"]
TEXTS = ["a good film, very good", "bad, bad, awful", "", "good", "so-so \u00e9t\u00e9", "x" * 300,
         "awful film", "very good and not bad", "bad"]

tmp = None
exe = None


def setUpModule():
    global tmp, exe
    path = os.environ.get("LONGCTX_CLI") or os.path.join(REPO, "build", "release", "longctx")
    exe = path if os.access(path, os.X_OK) else None
    tmp = tempfile.mkdtemp(prefix="lc_py_classify_")


def tearDownModule():
    shutil.rmtree(tmp, ignore_errors=True)


def run(*args):
    return subprocess.run([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout


class ClassifierTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not exe:
            raise unittest.SkipTest("no longctx CLI (set LONGCTX_CLI)")
        rows = ["label\ttext"] + ["%s\t%s" % (("pos", "good film %d, very good" % i) if i % 3 else
                                              ("neg", "bad film %d, awful" % i)) for i in range(60)]
        rows += ["mid\tso-so film %d" % i for i in range(10)]
        cls.data = os.path.join(tmp, "train.tsv")
        with open(cls.data, "w") as f:
            f.write("\n".join(rows) + "\n")
        cls.bytes_ckpt = os.path.join(tmp, "bytes.st")
        run("train", "--task", "classify", "--data", cls.data, "--valid", cls.data, "--out", cls.bytes_ckpt,
            "--steps", "12", "--max-len", "64", *SHAPE)
        cls.words_ckpt = os.path.join(tmp, "words.st")
        run("train", "--task", "classify", "--data", cls.data, "--valid", cls.data, "--out", cls.words_ckpt,
            "--steps", "8", "--tokens", "words", "--max-len", "32", "--pool", "mean", *SHAPE)
        cls.mlm_ckpt = os.path.join(tmp, "mlm.st")
        run("train", "--task", "classify", "--data", cls.data, "--valid", cls.data, "--out", cls.mlm_ckpt,
            "--steps", "2", "--objective", "mlm", "--max-len", "32", *SHAPE)
        cls.inputs = os.path.join(tmp, "inputs.txt")
        with open(cls.inputs, "wb") as f:
            f.write(b"".join(t.encode("utf-8") + b"\n" for t in TEXTS))

    def test_family_and_labels(self):
        m = longctx.Model.load(self.bytes_ckpt)
        self.assertIsInstance(m, longctx.Classifier)
        self.assertEqual(m.family, "classify")
        self.assertEqual(m.labels, ["mid", "neg", "pos"])  # the training file's label set, sorted
        self.assertEqual(m.step, 12)
        self.assertGreater(m.num_params, 0)
        self.assertEqual(longctx.Model.family, "lm")
        m.close()
        with self.assertRaises(longctx.ArgumentError):
            m.predict(["a"])

    def test_predictions_are_the_clis(self):
        for ckpt in (self.bytes_ckpt, self.words_ckpt):
            cli_labels = run("predict", "--ckpt", ckpt, "--threads", "1", self.inputs).decode().splitlines()
            cli_probs = [json.loads(line) for line in
                         run("predict", "--ckpt", ckpt, "--threads", "1", "--probs", self.inputs).decode().splitlines()]
            m = longctx.Model.load(ckpt, threads=1)
            self.assertEqual(m.predict(TEXTS), cli_labels)
            probs = m.predict_proba(TEXTS)
            self.assertEqual(len(probs), len(TEXTS))
            for ours, theirs in zip(probs, cli_probs):
                self.assertEqual(list(ours), list(theirs["probs"]))  # the labels, in the model's order
                # the CLI prints 9 significant digits of the same doubles
                self.assertEqual([float("%.9g" % p) for p in ours.values()], list(theirs["probs"].values()))
                self.assertAlmostEqual(sum(ours.values()), 1.0, places=12)
                self.assertEqual(max(ours, key=ours.get), theirs["label"])
            self.assertEqual(m.predict([t.encode("utf-8") for t in TEXTS]), cli_labels)  # bytes alike
            self.assertEqual(m.predict([]), [])

    def test_bad_inputs(self):
        m = longctx.Model.load(self.bytes_ckpt, threads=1)
        with self.assertRaises(TypeError):
            m.predict("one string, not a list")
        with self.assertRaises(TypeError):
            m.predict([3])
        mlm = longctx.Model.load(self.mlm_ckpt)
        self.assertEqual(mlm.family, "classify")
        with self.assertRaises(longctx.ArgumentError) as e:
            mlm.predict(["a"])
        self.assertIn("masked-token pre-training", str(e.exception))


if __name__ == "__main__":
    unittest.main()
