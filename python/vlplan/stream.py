"""Byte lines of a plan or manifest: a file, a pipe or a binary file object, plain or zstd.

Compressed input is decompressed by the ``zstandard`` module when it is installed, else by
the ``zstd`` program; neither present is a clear error, not a garbled parse.
"""
import os
import shutil
import subprocess
import sys
import threading

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20


class PlanError(ValueError):
    """A plan (or manifest) that cannot be used: names the file, the line and what is wrong."""


def source_name(src):
    """A name for messages: the path, "-" for standard input, or the object's name."""
    if isinstance(src, (str, bytes, os.PathLike)):
        return os.fsdecode(src)
    return getattr(src, "name", "<stream>")


def is_rereadable(src):
    """Whether src can be read twice (a path other than "-")."""
    return isinstance(src, (str, bytes, os.PathLike)) and os.fsdecode(src) != "-"


def _peek4(f):
    """The first four bytes of f without consuming them (buffered readers peek)."""
    if hasattr(f, "peek"):
        return f.peek(4)[:4]
    return b""


def _feed(src, dst):
    """Copy src into dst (a subprocess's stdin), then close dst."""
    try:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                break
            dst.write(chunk)
    except (BrokenPipeError, ValueError):
        pass
    finally:
        try:
            dst.close()
        except OSError:
            pass


class _ZstdProcess:
    """`zstd -dc` fed by a thread; read() its output, close() checks its exit status."""

    def __init__(self, raw, name):
        exe = shutil.which("zstd")
        if exe is None:
            raise PlanError(f"{name}: zstd-compressed, and neither the zstandard module nor "
                            "the zstd program is installed")
        self.name = name
        self.proc = subprocess.Popen([exe, "-dcq"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.thread = threading.Thread(target=_feed, args=(raw, self.proc.stdin), daemon=True)
        self.thread.start()
        self.eof = False

    def read(self, n):
        data = self.proc.stdout.read(n)
        self.eof = self.eof or not data
        return data

    def close(self):
        # A reader that stopped early (a loop's break) closes the pipe under zstd, which
        # then dies of SIGPIPE: that is the reader's choice, not a failure to report.
        stopped_early = not self.eof
        if stopped_early:
            self.proc.kill()
        self.proc.stdout.close()
        err = self.proc.stderr.read().decode(errors="replace").strip()
        self.proc.stderr.close()
        rc = self.proc.wait()
        self.thread.join()
        if rc != 0 and not stopped_early:
            raise PlanError(f"{self.name}: zstd failed: {err or 'exit status %d' % rc}")


def _decompressor(raw, name):
    try:
        import zstandard
    except ImportError:
        return _ZstdProcess(raw, name)
    dctx = zstandard.ZstdDecompressor()
    try:
        return dctx.stream_reader(raw, read_across_frames=True)
    except TypeError:  # older zstandard: one frame, which is what vlplan writes
        return dctx.stream_reader(raw)


def _open(src):
    """(binary reader, things to close) for src."""
    if isinstance(src, (str, bytes, os.PathLike)):
        path = os.fsdecode(src)
        if path == "-":
            return sys.stdin.buffer, []
        try:
            f = open(path, "rb")
        except OSError as e:
            raise PlanError(f"{path}: cannot open: {e.strerror}") from None
        return f, [f]
    return src, []


def byte_lines(src):
    """Yield the lines of src (bytes, each with its newline but the last maybe without)."""
    raw, owned = _open(src)
    name = source_name(src)
    reader = raw
    try:
        if _peek4(raw) == ZSTD_MAGIC:
            reader = _decompressor(raw, name)
            owned.insert(0, reader)
        yield from _split(reader, name)
    except OSError as e:
        raise PlanError(f"{name}: read error: {e}") from None
    except Exception as e:  # zstandard's ZstdError: a corrupt frame
        if type(e).__name__ == "ZstdError":
            raise PlanError(f"{name}: corrupt zstd data: {e}") from None
        raise
    finally:
        for f in owned:
            f.close()


def _split(reader, name):
    pending = []    # pieces of the line not yet ended: joined once, so a long line is linear
    while True:
        chunk = reader.read(_CHUNK)
        if not chunk:
            break
        if isinstance(chunk, str):
            raise PlanError(f"{name}: opened in text mode; open it with 'rb'")
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        lines = chunk.split(b"\n")
        pending += [lines[0], b"\n"]
        yield b"".join(pending)
        for line in lines[1:-1]:
            yield line + b"\n"
        pending = [lines[-1]] if lines[-1] else []
    rest = b"".join(pending)
    if rest:
        yield rest
