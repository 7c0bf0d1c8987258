"""A compressed plan read without the zstandard module (through the zstd program):
stopping early is quiet, a missing decoder is one PlanError."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from vlplan import stream
from vlplan.stream import PlanError


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd not installed")
def test_loop_stopped_early_prints_nothing(tmp_path):
    # more lines than a pipe holds, so zstd is still writing when the reader stops
    big = tmp_path / "lines.jsonl"
    big.write_bytes(b"".join(b'{"n":%d}\n' % i for i in range(400000)))
    z = tmp_path / "lines.jsonl.zst"
    subprocess.run(["zstd", "-q", "-o", str(z), str(big)], check=True)
    code = ("import sys; sys.modules['zstandard'] = None\n"   # the zstd program's path
            "from vlplan.stream import byte_lines\n"
            f"for line in byte_lines({str(z)!r}):\n"
            "    break\n"
            "import gc; gc.collect()\n"
            "print('stopped')\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "stopped\n"
    assert r.stderr == "", r.stderr


def test_no_decoder_is_one_plan_error(pack_plan, tmp_path, monkeypatch):
    z = tmp_path / "plan.jsonl.zst"
    z.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 16)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setattr(stream.shutil, "which", lambda name: None)
    with pytest.raises(PlanError, match="neither the zstandard module nor the zstd program"):
        list(stream.byte_lines(str(z)))
