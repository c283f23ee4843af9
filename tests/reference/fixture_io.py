"""What the make_*_fixture.py scripts share: float32 rounding of reference inputs, the command line, the
exact read-back check of a written fixture and the checked, atomic write. The safetensors format itself
is st_io.py's.

A script's main() is
    args = fixture_io.start(__doc__, self_check, names)  # None with --check
    for each fixture (args.names): fixture_io.write_checked(path, tensors, meta, verify, max_bytes)
where verify(tmp_path) starts with fixture_io.read_back(tmp_path, tensors, meta).
"""
import argparse
import os

import numpy as np
import torch

import st_io  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES_DIR = os.path.join(REPO, "tests", "fixtures")


def f32(x):
    """float64 numpy array holding float32-representable values."""
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def start(doc, self_check, names=None):
    """Parses the fixture scripts' command line: --out-dir DIR (default tests/fixtures), --check (self-checks
    only, write nothing) and, when the script writes several fixtures `names`, --only NAME (repeatable).
    Then runs self_check() with torch on one thread. Returns None with --check; else the arguments, out_dir created and, with names,
    args.names: the fixtures to write (the --only ones, else all, in the order given)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=FIXTURES_DIR)
    ap.add_argument("--check", action="store_true", help="run the self-checks only, write nothing")
    if names is not None:
        ap.add_argument("--only", choices=sorted(names), action="append", help="write only this fixture (repeatable)")
    args = ap.parse_args()
    torch.set_num_threads(1)  # float64 sums in one fixed order
    self_check()
    if args.check:
        return None
    os.makedirs(args.out_dir, exist_ok=True)
    if names is not None:
        args.names = args.only or list(names)
    return args


def read_back(path, tensors, meta):
    """Reads the fixture at path and checks it holds exactly `meta` and `tensors` (a list of (name, "F32" |
    "I32", values)): names in that order in the header and in the data, dtypes, shapes and values as
    written, and the data starting 8-byte aligned. Returns (name -> numpy array, metadata)."""
    got, gmeta = st_io.read(path)
    assert gmeta == meta, (gmeta, meta)
    assert list(got.keys()) == [n for n, _, _ in tensors], "header order differs"
    assert st_io.header_order(path) == [n for n, _, _ in tensors], "data order differs"
    for n, dt, v in tensors:
        want = np.asarray(v).astype(np.float32 if dt == "F32" else np.int32)
        assert got[n].dtype == want.dtype and got[n].shape == want.shape, n
        assert np.array_equal(got[n], want), n
    with open(path, "rb") as f:
        hlen = int.from_bytes(f.read(8), "little")
    assert (8 + hlen) % 8 == 0
    return got, gmeta


def float64_params(got, names):
    """The tensors `names` of a read-back fixture as float64 arrays."""
    return {n: got[n].astype(np.float64) for n in names}


def split_runs(flat, lens):
    """flat cut into consecutive runs of the lengths lens."""
    runs, a = [], 0
    for n in lens:
        runs.append(flat[a:a + n])
        a += n
    return runs


def write_fixtures(args, build, verify, file_pattern, max_bytes, report):
    """main() of a script with several fixtures: for each of args.names, build(name) gives (cfg, tensors, meta,
    result); written checked as args.out_dir/(file_pattern % name) with verify(path, cfg, tensors, meta), then
    report(path relative to the repository, size, result) printed."""
    for name in args.names:
        cfg, tensors, meta, result = build(name)
        path = os.path.join(args.out_dir, file_pattern % name)
        size, _ = write_checked(path, tensors, meta, lambda q: verify(q, cfg, tensors, meta), max_bytes)
        print(report(relpath(path), size, result))


def write_checked(path, tensors, meta, verify, max_bytes):
    """Writes the fixture to path + ".tmp", runs verify(tmp_path) on it and checks its size against max_bytes,
    then renames it to path, so a fixture that fails its checks never replaces a good one (the temporary
    file is removed). Returns (size in bytes, what verify returned)."""
    tmp = path + ".tmp"
    st_io.write(tmp, tensors, meta)
    try:
        result = verify(tmp)
        size = os.path.getsize(tmp)
        assert size <= max_bytes, "%s is %d bytes" % (path, size)
    except BaseException:
        os.remove(tmp)
        raise
    os.replace(tmp, path)
    return size, result


def relpath(path):
    """path relative to the repository root, for the scripts' "wrote ..." lines."""
    return os.path.relpath(path, REPO)
