"""longctx.Model.load of a seq2seq checkpoint (python/longctx/seq2seq.py): a model trained by the CLI
(`longctx train --task seq2seq`, a few steps of string reversal) loads with family "seq2seq", and its
generate() gives, for every source, what `longctx predict` prints; its export loads too; a source longer
than the model reads raises ArgumentError; a closed model raises. Skipped without the CLI (LONGCTX_CLI)."""
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import longctx
from longctx.errors import ArgumentError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli():
    path = os.environ.get("LONGCTX_CLI") or os.path.join(REPO, "build", "release", "longctx")
    return path if os.access(path, os.X_OK) else None


class Seq2SeqTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exe = cli()
        if not cls.exe:
            raise unittest.SkipTest("no longctx CLI (set LONGCTX_CLI)")
        cls.tmp = tempfile.mkdtemp(prefix="lc_py_s2s_")
        rng = random.Random(5)
        rows = []
        for _ in range(200):
            s = "".join(rng.choice("abcd") for _ in range(rng.randint(1, 6)))
            rows.append((s, s[::-1]))
        cls.sources = [s for s, _ in rows[:20]]
        for name, part in (("train.tsv", rows), ("valid.tsv", rows[:20])):
            with open(os.path.join(cls.tmp, name), "w") as f:
                f.write("Source\tTarget\n" + "".join("%s\t%s\n" % r for r in part))
        cls.ckpt = os.path.join(cls.tmp, "s.ckpt")
        subprocess.run([cls.exe, "train", "--task", "seq2seq", "--data", os.path.join(cls.tmp, "train.tsv"), "--valid",
                        os.path.join(cls.tmp, "valid.tsv"), "--out", cls.ckpt, "--layers", "1", "--dim", "16",
                        "--heads", "2", "--ffn", "32", "--steps", "40", "--eval-every", "0", "--lr", "0.003",
                        "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        out = subprocess.run([cls.exe, "predict", "--ckpt", cls.ckpt, "--tsv", os.path.join(cls.tmp, "valid.tsv"),
                              "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
        cls.predicted = out.decode().split("\n")[:-1]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_generate_is_the_cli_prediction(self):
        with longctx.Model.load(self.ckpt, threads=1) as m:
            self.assertEqual(m.family, "seq2seq")
            self.assertEqual(m.step, 40)
            self.assertEqual((m.max_src_len, m.max_tgt_len), (6, 6))
            self.assertEqual(len(self.predicted), len(self.sources))
            self.assertEqual([m.generate(s) for s in self.sources], self.predicted)
            self.assertEqual(m.generate_bytes(self.sources[0].encode()), self.predicted[0].encode())

    def test_export_loads(self):
        out = os.path.join(self.tmp, "e.ckpt")
        longctx.export(self.ckpt, out)
        m = longctx.load(out)
        self.assertEqual(m.family, "seq2seq")
        self.assertEqual(m.generate(self.sources[1]), self.predicted[1])

    def test_refusals(self):
        m = longctx.Model.load(self.ckpt)
        with self.assertRaisesRegex(ArgumentError, "source 1 has 7 bytes, the model reads at most 6"):
            m.generate("abcdabc")
        m.close()
        with self.assertRaises(ArgumentError):
            m.generate("ab")


if __name__ == "__main__":
    unittest.main()
