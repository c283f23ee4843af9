"""Tests of the Python binding (python/longctx) against the C library: run with
    LONGCTX_LIB=build/release/liblongctx.so PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests
(tests/py_test.sh does this for the test suite). Tiny models only: the whole file runs in a few seconds."""

import ctypes
import gc
import json
import math
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import weakref

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/ (the package in the build tree)

import longctx  # noqa: E402
from longctx import _lib  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
TINY = {"preset": "tiny", "layers": 2, "dim": 32, "heads": 2, "ffn": 64, "seg_len": 16}
TEXT = (b"First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
        b"First Citizen:\nYou are all resolved rather to die than to famish?\n") * 4

tmp = None


def setUpModule():
    global tmp
    tmp = tempfile.mkdtemp(prefix="lc_py_test_")


def tearDownModule():
    shutil.rmtree(tmp, ignore_errors=True)


def tokens_of(data, B, T, offset=0):
    arr = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    return np.stack([arr[offset + b * T: offset + (b + 1) * T] for b in range(B)])


def cross_entropy(logits, targets):
    """Mean nats per position of float32 logits [..., 256] against int targets, in float64."""
    x = logits.astype(np.float64).reshape(-1, 256)
    t = targets.reshape(-1)
    m = x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
    return float(np.mean(lse - x[np.arange(len(t)), t]))


def cli():
    path = os.environ.get("LONGCTX_CLI") or os.path.join(REPO, "build", "release", "longctx")
    return path if os.access(path, os.X_OK) else None


class ConfigTest(unittest.TestCase):
    def test_create_and_config_dict(self):
        m = longctx.Model.create(TINY, threads=1)
        c = m.config
        self.assertEqual((c["n_layer"], c["d_model"], c["n_head"], c["d_ff"], c["seq_len"]), (2, 32, 2, 64, 16))
        self.assertEqual((c["model"], c["mem_len"], c["norm"], c["tied"]), ("xl", 16, "pre", True))
        self.assertEqual(longctx.Model.create(c, threads=1).config, c)  # the dict builds the same model
        c2 = longctx.Model.create({"preset": "tiny", "seg-len": 24, "--untied": True, "model": "vanilla",
                                   "attn": "window:w=8", "norm": "post"}).config
        self.assertEqual((c2["seq_len"], c2["tied"], c2["mem_len"], c2["attn"], c2["norm"]),
                         (24, False, 0, "window:w=8", "post"))
        self.assertEqual(longctx.Model.create({"preset": "tiny", "objective": "mlm"}).config["model"], "vanilla")
        self.assertEqual(longctx.Model.create({"preset": "tiny", "dropout": 0.1}).config["dropout"], 0.1)

    def test_unknown_key_and_bad_values(self):
        with self.assertRaises(longctx.ArgumentError) as e:
            longctx.Model.create({"layrs": 3})
        self.assertIn("unknown config key 'layrs'", str(e.exception))
        self.assertIn("n_layer", str(e.exception))
        self.assertEqual(e.exception.status, 1)
        with self.assertRaises(longctx.ArgumentError) as e:
            longctx.Model.create({"dim": 30, "heads": 4})
        self.assertIn("divisible", str(e.exception))
        with self.assertRaises(ValueError):  # ArgumentError is a ValueError
            longctx.Model.create({"norm": "middle"})
        with self.assertRaises(longctx.ArgumentError):
            longctx.Model.create({"model": "vanilla", "mem_len": 8})
        with self.assertRaises(longctx.ArgumentError) as e:
            longctx.Model.create({"preset": "huge"})
        self.assertIn("unknown preset", str(e.exception))

    def test_config_fields_are_the_config_and_the_cli_flags(self):
        # one table in C (src/nn/lm_fields.h) describes the fields: Model.config's keys, their flags, choices
        fields = longctx.model._config_fields()
        self.assertEqual([f["name"] for f in fields], list(longctx.Model.create(TINY).config))
        by_name = {f["name"]: f for f in fields}
        self.assertEqual((by_name["norm"]["choices"], by_name["norm"]["flag"], by_name["n_layer"]["flag"]),
                         (["pre", "post"], "--norm", "--layers"))
        self.assertEqual([f["name"] for f in fields if f["xl_only"]], ["mem_len", "clamp_len", "same_length", "shared_uv"])
        self.assertEqual(by_name["vocab"]["flag"], None)
        self.assertEqual(longctx.Model.create(dict(TINY, **{"--layers": 3})).config["n_layer"], 3)  # by its flag
        if cli() is None:
            raise unittest.SkipTest("no longctx CLI (set LONGCTX_CLI)")
        help_ = subprocess.run([cli(), "train", "--help"], capture_output=True, text=True, check=True).stdout
        for f in fields:
            if f["flag"]:
                line = [ln for ln in help_.splitlines() if ln.split()[:1] == [f["flag"]]]
                self.assertEqual(len(line), 1, f["flag"])
                self.assertTrue(line[0].endswith(f["help"]), (line[0], f["help"]))
        self.assertEqual(longctx.Model.create({"preset": "tiny", "model": "vanilla", "mem_len": 0}).config["mem_len"], 0)
        with self.assertRaises(longctx.ArgumentError) as e:
            longctx.Model.create({"model": "vanilla", "same_length": True})
        self.assertIn("config same_length needs model 'xl'", str(e.exception))

    def test_train_options(self):
        m = longctx.Model.create(TINY)
        o = m.train_options
        self.assertEqual((o["steps"], o["batch"], o["lr"], o["seed"]), (2000, 16, 0.002, 1337))
        m.set_train_options(lr=1e-3, **{"min-lr": 1e-5, "warmup": 0})
        self.assertEqual((m.train_options["lr"], m.train_options["min_lr"], m.train_options["warmup"]),
                         (0.001, 1e-5, 0))
        with self.assertRaises(longctx.ArgumentError) as e:
            m.set_train_options(learning_rate=1)
        self.assertIn("unknown training option", str(e.exception))


class ModelTest(unittest.TestCase):
    def setUp(self):
        self.m = longctx.Model.create(TINY, seed=5, max_batch=2, threads=1)

    def test_save_load_round_trip(self):
        m = self.m
        m.set_train_options(warmup=0, steps=50)
        x = tokens_of(TEXT, 2, 17)
        m.train_step(x[:, :-1], x[:, 1:])
        path = os.path.join(tmp, "rt.ckpt")
        m.save(path)
        r = longctx.Model.load(path, threads=1)
        self.assertEqual(r.config, m.config)
        self.assertEqual(r.step, 1)
        self.assertEqual(r.train_options, m.train_options)
        a, b = m.parameters(), r.parameters()
        self.assertEqual(list(a), list(b))
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
        y = tokens_of(TEXT, 1, 16, 40)
        np.testing.assert_array_equal(m.logits(y), r.logits(y))

    def test_export_drops_the_moments(self):
        m = self.m
        x = tokens_of(TEXT, 2, 17)
        m.train_step(x[:, :-1], x[:, 1:])
        full, light = os.path.join(tmp, "full.ckpt"), os.path.join(tmp, "light.ckpt")
        m.save(full)
        info = longctx.export(full, light)
        n = len(m.parameters())
        self.assertEqual(info["dropped"], 2 * n)
        self.assertEqual(info["bytes_out"], os.path.getsize(light))
        self.assertLess(2 * info["bytes_out"], info["bytes_in"])
        r = longctx.Model.load(light, threads=1)
        self.assertEqual(r.step, 1)
        a, b = m.parameters(), r.parameters()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
        y = tokens_of(TEXT, 1, 16, 40)
        np.testing.assert_array_equal(m.logits(y), r.logits(y))
        with self.assertRaises(longctx.IOFailure) as e:
            longctx.export(os.path.join(tmp, "missing.ckpt"), light)
        self.assertIn("missing.ckpt", str(e.exception))

    def test_parameters_are_views(self):
        m = self.m
        p = m.parameters()
        self.assertEqual(sum(v.size for v in p.values()), m.num_params)
        self.assertEqual(list(p)[0], "wte")
        self.assertEqual(p["wte"].shape, (256, 32))
        self.assertEqual(p["wte"].dtype, np.float32)
        self.assertFalse(p["wte"].flags.owndata)
        x = tokens_of(TEXT, 1, 16)
        before = m.logits(x)
        p["wte"][x[0, 3]] += 0.5  # through the view, into the C buffer
        after = m.logits(x)
        self.assertFalse(np.array_equal(before, after))
        # causal: earlier positions unchanged, but for the logit of that byte (the tied output projection)
        np.testing.assert_array_equal(np.delete(before[0, :3], x[0, 3], axis=-1),
                                      np.delete(after[0, :3], x[0, 3], axis=-1))
        self.assertTrue(np.shares_memory(p["wte"], m.parameters()["wte"]) or
                        m.parameters()["wte"].__array_interface__["data"][0] == p["wte"].__array_interface__["data"][0])
        view = m.parameters()["ln_f.weight"]
        del m, self.m, p
        self.assertTrue(np.all(view == 1.0))  # the view keeps the model alive
        routed = longctx.Model.create({"preset": "tiny", "model": "vanilla", "attn": "2xfull+2xrouting:clusters=2"})
        self.assertGreater(len(routed.tensors()), len(routed.parameters()))  # the k-means centroids: state

    def test_logits_agree_with_train_step_loss(self):
        # two paths through C: the inference forward's logits, and lc_train_step's loss before its update
        for kind in ("xl", "vanilla"):
            m = longctx.Model.create(dict(TINY, model=kind), seed=2, max_batch=2, threads=1)
            x = tokens_of(TEXT, 2, 17, 5)
            logits = m.logits(x[:, :-1])
            self.assertEqual(logits.shape, (2, 16, 256))
            self.assertEqual(logits.dtype, np.float32)
            want = cross_entropy(logits, x[:, 1:])
            got = m.train_step(x[:, :-1], x[:, 1:])
            self.assertAlmostEqual(got, want, delta=1e-5 * want)

    def test_logits_1d_and_larger_batches(self):
        x = tokens_of(TEXT, 1, 16)
        np.testing.assert_array_equal(self.m.logits(x[0]), self.m.logits(x)[0])
        big = tokens_of(TEXT, 4, 30)  # more rows and tokens than planned: re-planned
        self.assertEqual(self.m.logits(big).shape, (4, 30, 256))
        self.assertEqual(self.m.capacity[:2], (4, 30))

    def test_xl_memory_keep_continues_the_stream(self):
        m = self.m  # xl, seq_len 16, mem_len 16
        x = tokens_of(TEXT, 2, 32)
        whole = m.logits(x)  # one segment of 32 (re-planned)
        first = m.logits(x[:, :16])
        self.assertEqual(m.memory_rows, 16)
        second = m.logits(x[:, 16:], memory="keep")
        np.testing.assert_allclose(first, whole[:, :16], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(second, whole[:, 16:], rtol=1e-4, atol=1e-4)
        fresh = m.logits(x[:, 16:])  # memory=None: no context
        self.assertGreater(np.abs(fresh - second).max(), 1e-3)
        with self.assertRaises(longctx.ArgumentError):
            m.logits(x[:1, 16:], memory="keep")  # 1 stream against a memory of 2
        with self.assertRaises(longctx.ArgumentError):
            m.logits(x, memory="sometimes")

    def test_eval(self):
        m = self.m
        data = TEXT[:17]
        x = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        want = cross_entropy(m.logits(x[:-1]), x[1:]) / math.log(2)
        self.assertAlmostEqual(m.eval(text=data), want, delta=1e-5 * want)
        self.assertAlmostEqual(m.eval(text=data.decode()), want, delta=1e-5 * want)  # a str: its UTF-8 bytes
        path = os.path.join(tmp, "eval.txt")
        with open(path, "wb") as f:
            f.write(TEXT)
        d = m.eval(path, split="all", details=True)
        self.assertAlmostEqual(d["bpc"], m.eval(text=TEXT), delta=1e-9)
        self.assertEqual(d["tokens"], len(TEXT) - 1)
        self.assertTrue(math.isnan(d["accuracy"]))
        self.assertLess(m.eval(path, split="valid"), 9)
        with self.assertRaises(FileNotFoundError):
            m.eval(pathlib.Path(tmp, "missing.txt"))
        with self.assertRaises(longctx.ArgumentError):
            m.eval(path, split="dev")

    def test_eval_takes_a_path_or_a_text_never_a_guess(self):
        m = self.m
        with self.assertRaises(FileNotFoundError) as e:
            m.eval("nope.txt")  # a typo used to be scored as the 8 bytes "nope.txt"
        self.assertEqual(e.exception.filename, "nope.txt")
        with self.assertRaises(TypeError):
            m.eval(b"some bytes")  # bytes are text=, not a path
        with self.assertRaises(TypeError):
            m.eval()
        with self.assertRaises(TypeError):
            m.eval(os.path.join(tmp, "eval.txt"), text="both")
        with self.assertRaises(TypeError):
            m.eval(text=5)
        self.assertTrue(math.isfinite(m.eval(text="nope.txt")))  # explicit: the text itself

    def test_eval_batch_is_bounded_by_the_data(self):
        m = longctx.Model.create(dict(TINY, model="vanilla"), seed=5, max_batch=2, threads=1)
        m.eval(text=TEXT[:100], batch=1 << 20)  # 7 segments of 16: no plan for a million
        self.assertLessEqual(m.capacity[0], 7)

    def test_train_step_lowers_the_loss(self):
        m = self.m
        m.set_train_options(warmup=0, lr=3e-3, steps=100)
        x = tokens_of(TEXT, 2, 17)
        losses = [m.train_step(x[:, :-1], x[:, 1:]) for _ in range(15)]
        self.assertLess(losses[-1], losses[0] - 1.0)
        self.assertEqual(m.step, 15)
        g = m.gradients()["wte"]
        self.assertGreater(float(np.abs(g).max()), 0)
        targets = x[:, 1:].copy()
        targets[:] = -1
        with self.assertRaises(longctx.ArgumentError):
            m.train_step(x[:, :-1], targets)  # nothing scored


class GenerateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        m = longctx.Model.create(TINY, seed=9, max_batch=2, threads=1)
        m.set_train_options(warmup=0, lr=5e-3, steps=100)
        x = tokens_of(TEXT, 2, 17)
        for _ in range(10):
            m.train_step(x[:, :-1], x[:, 1:])
        cls.path = os.path.join(tmp, "gen.ckpt")
        m.save(cls.path)

    def test_seeded_and_deterministic(self):
        m = longctx.Model.load(self.path, threads=1)
        a = b"".join(m.generate(b"First", 60, temperature=0.8, top_k=20, seed=4))
        b = b"".join(m.generate(b"First", 60, temperature=0.8, top_k=20, seed=4))
        c = b"".join(m.generate(b"First", 60, temperature=0.8, top_k=20, seed=5))
        self.assertEqual(len(a), 60)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        chunks = list(m.generate("First", 60, temperature=0.8, top_k=20, seed=4, chunk=7))
        self.assertTrue(all(isinstance(s, str) for s in chunks))
        self.assertEqual("".join(chunks), a.decode("utf-8", "replace"))
        greedy = list(m.generate(b"", 5, temperature=0))
        self.assertEqual([len(x) for x in greedy], [1] * 5)
        it = m.generate(b"ab", 1000)
        next(it)
        it.close()  # an abandoned iterator frees its generator; the model is usable again
        self.assertEqual(m.logits([[1, 2]]).shape, (1, 2, 256))

    def test_same_bytes_as_the_cli(self):
        exe = cli()
        if not exe:
            self.skipTest("no longctx CLI (set LONGCTX_CLI)")
        for model_args in (["--temperature", "0.9", "--top-k", "30"], ["--temperature", "0"]):
            out = subprocess.run([exe, "sample", "--ckpt", self.path, "--prompt", "First Citizen:", "--tokens", "80",
                                  "--seed", "77", "--threads", "1"] + model_args, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, check=True).stdout
            m = longctx.Model.load(self.path, threads=1)
            ours = b"".join(m.generate(b"First Citizen:", 80, temperature=float(model_args[1]),
                                       top_k=int(model_args[3]) if len(model_args) > 2 else 0, seed=77))
            self.assertEqual(out, b"First Citizen:" + ours + b"\n")

    def test_wrong_types_raise_type_error(self):
        m = longctx.Model.load(self.path, threads=1)
        for args, kw in (((5, 3), {}), ((None,), {}), (("a", "3"), {}), (("a", 3.0), {}), (("a", 3), {"seed": 1.5}),
                         (("a", 3), {"top_k": "2"}), (("a", 3), {"temperature": "hot"}), (("a", True), {})):
            with self.assertRaises(TypeError, msg="generate%r %r" % (args, kw)):
                m.generate(*args, **kw)
        self.assertEqual(len(b"".join(m.generate(b"a", np.int64(3)))), 3)  # numpy integers are ints

    def test_closing_the_model_under_an_open_iterator_raises(self):
        m = longctx.Model.load(self.path, threads=1)
        it = m.generate(b"First", 50)
        next(it)
        m.__del__()  # freed the C model under the iterator: the next byte read freed memory
        with self.assertRaises(longctx.ArgumentError) as e:
            next(it)
        self.assertIn("closed", str(e.exception))
        m = longctx.Model.load(self.path, threads=1)
        it = m.generate(b"First", 50)
        first = next(it)
        del m  # the iterator keeps what it needs
        gc.collect()
        self.assertEqual(len(first + b"".join(it)), 50)

    def test_mlm_cannot_generate(self):
        m = longctx.Model.create({"preset": "tiny", "objective": "mlm"})
        with self.assertRaises(longctx.ArgumentError) as e:
            next(m.generate("x", 3))
        self.assertIn("masked-LM", str(e.exception))


class TrainTest(unittest.TestCase):
    def setUp(self):
        self.data = os.path.join(tmp, "train.txt")
        with open(self.data, "wb") as f:
            f.write(TEXT * 3)

    def test_train_with_callback(self):
        m = longctx.Model.create(TINY, seed=3, max_batch=2, threads=1)
        seen = []
        hist = m.train(self.data, callback=seen.append, steps=8, batch=4, warmup=0, eval_every=4, eval_bytes=64)
        self.assertEqual([p["step"] for p in hist], list(range(1, 9)))
        self.assertEqual(seen, hist)
        self.assertTrue(all(math.isfinite(p["loss"]) for p in hist))
        self.assertTrue(math.isfinite(hist[3]["valid_bpc"]) and math.isnan(hist[2]["valid_bpc"]))
        self.assertEqual(m.step, 8)
        self.assertEqual(m.train_options["batch"], 4)
        path = os.path.join(tmp, "trained.ckpt")
        m.save(path)
        self.assertEqual(longctx.Model.load(path).step, 8)

    def test_callback_stops_and_raises(self):
        m = longctx.Model.create(TINY, seed=3, max_batch=2, threads=1)
        hist = m.train(self.data, callback=lambda p: p["step"] == 3, steps=10, batch=2, eval_every=0, eval_bytes=64)
        self.assertEqual(len(hist), 3)
        self.assertEqual(m.step, 3)

        def boom(p):
            raise RuntimeError("stop here")
        with self.assertRaises(RuntimeError):
            m.train(self.data, callback=boom, steps=10)
        self.assertEqual(m.step, 4)  # the step before the callback was done
        with self.assertRaises(longctx.IOFailure):
            m.train(os.path.join(tmp, "none.txt"), steps=20)

    def test_a_batch_the_data_cannot_feed_fails_before_allocating(self):
        m = longctx.Model.create(TINY, seed=3, max_batch=2, threads=1)
        before = m.capacity
        t0 = time.perf_counter()
        with self.assertRaises(longctx.ArgumentError) as e:
            m.train(self.data, steps=1, batch=2048)
        self.assertIn("too few for 2048 streams", str(e.exception))
        self.assertEqual(m.capacity, before)  # the model was not re-planned (allocated) for 2048 streams first
        with self.assertRaises(longctx.ArgumentError) as e:
            m.train(self.data, steps=1, batch=65536)  # used to take minutes and 16 GB
        self.assertIn("too few for 65536 streams", str(e.exception))
        self.assertLess(time.perf_counter() - t0, 10)
        self.assertEqual(m.capacity, before)
        hist = m.train(self.data, steps=1, batch=4, warmup=0, eval_every=0, eval_bytes=64)  # a batch that fits
        self.assertEqual(len(hist), 1)
        self.assertEqual(m.capacity[0], 4)


class ClosedTest(unittest.TestCase):
    CALLS = {
        "config": lambda m: m.config, "train_options": lambda m: m.train_options,
        "num_params": lambda m: m.num_params, "step": lambda m: m.step, "threads": lambda m: m.threads,
        "capacity": lambda m: m.capacity, "memory_rows": lambda m: m.memory_rows,
        "set_threads": lambda m: m.set_threads(1), "resize": lambda m: m.resize(2, 16, 16),
        "reset_memory": lambda m: m.reset_memory(), "set_train_options": lambda m: m.set_train_options(lr=1e-3),
        "parameters": lambda m: m.parameters(), "tensors": lambda m: m.tensors(), "gradients": lambda m: m.gradients(),
        "logits": lambda m: m.logits([[1, 2]]), "eval": lambda m: m.eval(text=TEXT),
        "generate": lambda m: m.generate("a", 2), "train_step": lambda m: m.train_step([[1, 2]], [[2, 3]]),
        "train": lambda m: m.train(os.path.join(tmp, "closed.txt"), steps=1, batch=1),
        "save": lambda m: m.save(os.path.join(tmp, "closed.ckpt")),
    }

    def test_every_call_after_close_or_del_raises(self):
        with open(os.path.join(tmp, "closed.txt"), "wb") as f:
            f.write(TEXT)
        for how in ("close", "__del__", "with"):
            for name, fn in self.CALLS.items():
                m = longctx.Model.create(TINY, seed=1, max_batch=2, threads=1)
                if how == "with":
                    with m as same:
                        self.assertIs(same, m)
                else:
                    getattr(m, how)()
                self.assertTrue(m.closed)
                with self.assertRaises(longctx.ArgumentError, msg="%s after %s" % (name, how)) as e:
                    fn(m)
                self.assertIn("closed", str(e.exception))
                m.close()  # again: nothing happens
        self.assertFalse(os.path.exists(os.path.join(tmp, "closed.ckpt")))
        self.assertEqual(repr(m), "<longctx.Model (closed)>")

    def test_views_outlive_close(self):
        m = longctx.Model.create(TINY, seed=1, threads=1)
        view = m.parameters()["ln_f.weight"]
        c_model = weakref.ref(m.__dict__["_owner"])  # what owns the C model
        m.close()
        self.assertIsNotNone(c_model())  # the buffers stay until the last view is gone
        self.assertTrue(np.all(view == 1.0))
        del view
        gc.collect()
        self.assertIsNone(c_model())  # then the C model is freed


class HostileArgumentTest(unittest.TestCase):
    def test_wide_tokens_do_not_wrap(self):
        m = longctx.Model.create(TINY, seed=1, threads=1)
        for bad in (2 ** 32 + 65, -(2 ** 32) + 65, 2 ** 63 - 1):
            with self.assertRaises(longctx.ArgumentError, msg=str(bad)) as e:
                m.logits(np.array([[65, bad]], dtype=np.int64))
            self.assertIn(str(bad), str(e.exception))
            with self.assertRaises(longctx.ArgumentError):
                m.train_step(np.array([[65, 66]]), np.array([[66, bad]], dtype=np.int64))
        with self.assertRaises(longctx.ArgumentError):
            m.logits(np.array([[65, 2 ** 64 - 1]], dtype=np.uint64))
        self.assertEqual(m.logits(np.array([[65, 66]], dtype=np.int64)).shape, (1, 2, 256))

    def test_paths_with_a_nul_raise(self):
        m = longctx.Model.create(TINY, seed=1, threads=1)
        real = os.path.join(tmp, "nul.ckpt")
        m.save(real)
        cut = real + "\0.bak"  # C would read it as `real`
        for fn in (lambda: longctx.Model.load(cut), lambda: m.save(cut), lambda: m.eval(cut),
                   lambda: m.train(cut, steps=1), lambda: longctx.export(real, cut), lambda: longctx.export(cut, real),
                   lambda: m.set_train_options(lr_scale="wte=0\0junk"), lambda: longctx.Model.create({"attn": "full\0x"})):
            with self.assertRaises(ValueError):
                fn()
        with self.assertRaises(TypeError):
            longctx.Model.load(3)

    def test_other_families_say_which_are_supported(self):
        # every family longctx writes has a class now (hibert: python/tests/test_hibert.py); a family the
        # package does not know is refused, naming it and the language models
        path = os.path.join(tmp, "mystery.safetensors")
        head = json.dumps({"__metadata__": {"format": "longctx", "model": "mystery"}}).encode()
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head)
        with self.assertRaises(longctx.FormatError) as e:
            longctx.Model.load(path)
        msg = str(e.exception)
        self.assertIn("a mystery checkpoint", msg)
        self.assertIn("language models only (model = xl or vanilla)", msg)


class ErrorTest(unittest.TestCase):
    def test_status_codes_become_exceptions_with_the_message(self):
        with self.assertRaises(longctx.IOFailure) as e:
            longctx.Model.load(os.path.join(tmp, "absent.ckpt"))
        self.assertIsInstance(e.exception, OSError)
        self.assertIsInstance(e.exception, longctx.LongctxError)
        self.assertIn("absent.ckpt", e.exception.message)
        bad = os.path.join(tmp, "bad.ckpt")
        with open(bad, "wb") as f:
            f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
        with self.assertRaises(longctx.FormatError) as e:
            longctx.Model.load(bad)
        self.assertIn("bad.ckpt", str(e.exception))
        m = longctx.Model.create(TINY, threads=1)
        with self.assertRaises(longctx.ArgumentError) as e:
            m.logits([[1, 300]])
        self.assertIn("token 300 outside 0..255", str(e.exception))
        self.assertEqual(_lib.last_error(), str(e.exception))  # lc_last_error() after the failed call
        with self.assertRaises(longctx.ArgumentError):
            m.logits(np.zeros((1, 3), dtype=np.float32))
        m.logits([[1, 2]])
        self.assertEqual(_lib.last_error(), "")  # a success clears it

    def test_library_lookup_order(self):
        places = [w for w, _ in _lib.candidates()]
        self.assertEqual(places[-3:], ["next to the package", "the build tree", "the system (ctypes.util.find_library)"])
        self.assertTrue(os.path.isfile(longctx.library_path()))
        old = os.environ.get("LONGCTX_LIB")
        os.environ["LONGCTX_LIB"] = os.path.join(tmp, "nope.so")
        try:
            with self.assertRaises(longctx.LongctxError) as e:
                _lib._locate()
            self.assertIn("nope.so", str(e.exception))
        finally:
            if old is None:
                del os.environ["LONGCTX_LIB"]
            else:
                os.environ["LONGCTX_LIB"] = old
        self.assertIsInstance(_lib.lib(), ctypes.CDLL)
        self.assertNotIsInstance(_lib.lib(), ctypes.PyDLL)


class GilTest(unittest.TestCase):
    def test_other_threads_run_during_a_c_call(self):
        m = longctx.Model.create(dict(TINY, model="vanilla"), threads=1)
        data = TEXT * 40
        count = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                count[0] += 1

        t = threading.Thread(target=spin)
        t.start()
        try:
            time.sleep(0.01)
            best = 0
            for _ in range(3):
                before = count[0]
                t0 = time.perf_counter()
                m.eval(text=data)  # one C call of some tens of milliseconds
                elapsed = time.perf_counter() - t0
                best = max(best, count[0] - before)
                if best > 1000:
                    break
        finally:
            stop.set()
            t.join()
        self.assertGreater(best, 1000, "the spinning thread barely ran during %.3f s in C" % elapsed)


if __name__ == "__main__":
    unittest.main()
