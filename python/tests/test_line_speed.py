"""Splitting lines is linear in the line's length: a 100 MB plan line must not take the
seconds (7.4 s measured before) that joining every chunk to the growing rest costs."""
import io
import time

from vlplan.stream import _split, byte_lines


def split_seconds(n):
    data = b"x" * n + b"\nshort\n"
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        got = [len(line) for line in _split(io.BytesIO(data), "x")]
        best = min(best, time.perf_counter() - t)
    assert got == [n + 1, 6]
    return best


def test_a_long_line_splits_in_linear_time():
    small, big = split_seconds(8 << 20), split_seconds(64 << 20)
    # linear: about 8 times; the quadratic join was 30 to 60 times
    assert big < 16 * small + 0.05, f"8 MB: {small:.3f} s, 64 MB: {big:.3f} s"


def test_lines_at_chunk_boundaries(tmp_path):
    mb = 1 << 20
    for data in [b"", b"a", b"a\n", b"\n\n", b"ab\ncd", b"x" * mb + b"\ny",
                 b"x" * (mb - 1) + b"\n" + b"z" * (2 * mb), b"\n" * 3 + b"x" * (3 * mb)]:
        parts = data.split(b"\n")
        want = [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        assert list(_split(io.BytesIO(data), "x")) == want
        path = tmp_path / "f"
        path.write_bytes(data)
        assert list(byte_lines(str(path))) == want
