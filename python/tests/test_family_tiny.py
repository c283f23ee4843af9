"""A model family from outside the package (tests/test_family_tiny.c, built here as a shared object against the
package's library) registers itself in the library's family table; longctx.Model.load of its checkpoint then
returns a generic longctx.family.FamilyModel whose .family is "tiny" and whose .config comes from the family's
field table through the binding calls (lc_family_field_about, lc_family_model_get), with run fields set by name
and bad values refused. Skipped without gcc or the source tree's headers."""
import ctypes
import os
import shutil
import subprocess
import tempfile
import unittest

import longctx
from longctx import _lib
from longctx.errors import ArgumentError
from longctx.family import FamilyModel, families, fields

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(REPO, "tests", "test_family_tiny.c")


class TinyFamilyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        gcc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("gcc")
        if not gcc or not os.path.exists(SOURCE):
            raise unittest.SkipTest("no gcc or no tests/test_family_tiny.c")
        cls.tmp = tempfile.mkdtemp(prefix="lc_py_tiny_")
        so = os.path.join(cls.tmp, "libtiny.so")
        library = _lib.library_path()  # the package's library, loaded first
        cmd = [gcc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE", "-O1", "-fPIC", "-shared",
               "-DLC_TINY_FAMILY_ONLY", "-I" + os.path.join(REPO, "include"), "-I" + os.path.join(REPO, "src"),
               SOURCE, library, "-o", so]
        subprocess.run(cmd, check=True)
        cls.tiny = ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)  # resolves the lc_ names in the loaded library
        cls.tiny.lc_tiny_family_train.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p]
        if "tiny" not in families():
            assert cls.tiny.lc_tiny_family_register() == 0, _lib.last_error()
        train = os.path.join(cls.tmp, "train.tsv")
        with open(train, "w") as f:
            for i in range(120):
                f.write("%d\t%s\n" % (i % 2, ("abcdefghijklm" if i % 2 == 0 else "nopqrstuvwxyz")[i % 7:]))
        cls.ckpt = os.path.join(cls.tmp, "tiny.ckpt")
        st = cls.tiny.lc_tiny_family_train(train.encode(), b"from python", 20, cls.ckpt.encode())
        assert st == 0, _lib.last_error()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_table_lists_it_after_the_built_in_families(self):
        self.assertEqual(families()[:4], ["lm", "classify", "hibert", "seq2seq"])
        self.assertIn("tiny", families())
        pool = [f for f in fields("tiny") if f["name"] == "pool"][0]
        self.assertEqual(pool, {"name": "pool", "kind": "str", "flag": "--pool", "choices": ["mean", "sum"],
                                "help": "mean (default: counts over the length) or sum", "default": "mean"})
        self.assertEqual([f["name"] for f in fields("tiny")],
                         ["classes", "shape.buckets", "pool", "init_scale", "note", "temperature"])
        with self.assertRaises(KeyError):
            fields("nope")

    def test_model_load_returns_a_generic_model_with_its_config(self):
        m = longctx.Model.load(self.ckpt)
        self.assertIsInstance(m, FamilyModel)
        self.assertEqual(m.family, "tiny")
        self.assertEqual(m.config, {"classes": 2, "shape.buckets": 32, "pool": "mean", "init_scale": 0.1,
                                    "note": "from python", "temperature": 1.0})
        m.set("temperature", 2.5)
        self.assertEqual(m.get("temperature"), 2.5)
        self.assertEqual(m.get("--buckets"), 32)
        with self.assertRaisesRegex(ArgumentError, r"^config temperature: '0' is not a number in 0.01..100$"):
            m.set("temperature", 0)
        with self.assertRaisesRegex(ArgumentError, "shape.buckets is the shape of a loaded tiny model"):
            m.set("buckets", 8)
        self.assertEqual(m.config["temperature"], 2.5)
        acc = m.evaluate(os.path.join(self.tmp, "train.tsv"))
        self.assertEqual(list(acc), ["accuracy"])
        self.assertGreaterEqual(acc["accuracy"], 0.9)
        again = os.path.join(self.tmp, "again.ckpt")
        m.save(again)
        self.assertEqual(longctx.Model.load(again).config["temperature"], 2.5)
        m.close()
        with self.assertRaises(ArgumentError):
            m.config

    def test_the_language_model_row_describes_its_fields(self):
        lm = {f["name"]: f for f in fields("lm")}
        self.assertEqual(lm["model"]["default"], "xl")
        self.assertEqual(lm["n_layer"]["flag"], "--layers")
        self.assertEqual(lm["norm"]["choices"], ["pre", "post"])


if __name__ == "__main__":
    unittest.main()
