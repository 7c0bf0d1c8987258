"""A plan file read as a stream of validated iterations.

A file (a path) is checked whole before anything is yielded: every record's structure, the
footer's counts and its SHA-256 over the preceding bytes, so a truncated, corrupted or
edited plan fails before the first micro-batch reaches a GPU.  Memory holds one line at a
time.  A pipe cannot be read twice: each record is checked before it is yielded (the
first structural problem stops the stream with its file:line), and the checksum when the
footer arrives -- a truncated pipe is reported at its end, which a trainer reading from a
pipe must be ready for.
"""
import hashlib
import json

from . import records
from .stream import PlanError, byte_lines, is_rereadable, source_name


class _Pass:
    """One pass over the lines: parses, checks and hashes; yields iterations."""

    def __init__(self, src, name):
        self.src, self.name = src, name
        self.header = None
        self.footer = None
        self.count = 0
        self.tokens = 0
        self.samples = 0
        self.digest = hashlib.sha256()
        self.skipped = False    # iterations hashed but not parsed: no token totals
        self.epoch = 0          # of the last iteration read

    def _parse(self, raw, line):
        try:
            rec = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise PlanError(f"{self.name}:{line}: not JSON ({e})") from None
        except RecursionError:
            raise PlanError(f"{self.name}:{line}: nested too deeply to be a plan record") \
                from None
        if not isinstance(rec, dict):
            raise PlanError(f"{self.name}:{line}: not a JSON object")
        return rec

    def run(self, start=0, parse_skipped=True):
        """Yield every Iteration numbered >= start, then check the footer."""
        line = 0
        uneven = False
        for raw in byte_lines(self.src):
            line += 1
            if self.footer is not None:
                if raw.strip():
                    raise PlanError(f"{self.name}:{line}: data after the footer")
                continue
            if line == 1:
                self.header = records.header(self._parse(raw, line), self.name, line)
                uneven = "uneven_mbs" in self.header.get("caps", [])
                self.digest.update(raw)
                continue
            if not raw.strip():
                raise PlanError(f"{self.name}:{line}: empty line")
            if not parse_skipped and self.count < start and raw.startswith(b'{"type":"iter"'):
                self.digest.update(raw)   # checked by the first pass; only hashed again
                self.count += 1
                self.skipped = True
                continue
            rec = self._parse(raw, line)
            kind = rec.get("type")
            if kind == "footer":
                self.footer = rec
                self._check_footer(line)
                continue
            if kind != "iter":
                raise PlanError(f"{self.name}:{line}: record type {kind!r}, expected "
                                '"iter" or "footer"')
            self.digest.update(raw)
            it = records.iteration(rec, self.name, line, self.count, uneven, self.header)
            if it.epoch < self.epoch:
                raise PlanError(f"{self.name}:{line}: iteration {it.it} is of epoch {it.epoch}, "
                                f"after one of epoch {self.epoch} (epochs run in order)")
            self.epoch = it.epoch
            self.count += 1
            self.tokens += it.tokens
            self.samples += it.samples or 0
            if it.it >= start:
                yield it
        if line == 0:
            raise PlanError(f"{self.name}: empty (no header)")
        self._check_end(line)

    def _check_footer(self, line):
        f, n = self.footer, self.count
        where = f"{self.name}:{line}: footer"
        w = records.Where(self.name, line)
        w.parts.append("footer")
        records.check_footer(f, w)
        if f.get("iterations", n) != n:
            raise PlanError(f"{where} says {f['iterations']} iterations, the file has {n} "
                            "(truncated or edited plan)")
        if "tokens" in f and not self.skipped and f["tokens"] != self.tokens:
            raise PlanError(f"{where} says {f['tokens']} tokens, the iterations hold "
                            f"{self.tokens}")
        sha = f.get("sha256")
        if sha is not None and sha != self.digest.hexdigest():
            raise PlanError(f"{where}: SHA-256 mismatch: the plan was truncated, corrupted "
                            "or edited after it was written")

    def _check_end(self, line):
        if self.footer is None and "vlplan" in self.header:
            raise PlanError(f"{self.name}:{line}: no footer after iteration {self.count - 1}: "
                            "the plan is truncated (a plan written by vlplan ends with one)")
        hn = self.header.get("iterations")
        if hn is not None and hn != self.count:
            raise PlanError(f"{self.name}: header says {hn} iterations, the file has "
                            f"{self.count} (truncated or edited plan)")


class Plan:
    """A plan file, a pipe or a binary file object (plain or zstd).

    ``Plan(path)`` validates the whole file at once (verify=False skips that); its
    ``header``, ``footer`` and ``len()`` are then known.  ``iterations(start)`` yields
    validated Iteration objects from iteration ``start`` on.  From a pipe, iterations()
    can run once, and the footer is known only at its end."""

    def __init__(self, source, verify=True):
        self.source = source
        self.name = source_name(source)
        self.rereadable = is_rereadable(source)
        self.footer = None
        self._count = None
        self._stream = None
        if self.rereadable and verify:
            p = _Pass(source, self.name)
            for _ in p.run():
                pass
            self.header, self.footer, self._count = p.header, p.footer, p.count
            self._digest = p.digest.hexdigest()
        else:
            self._stream = _Pass(source, self.name)
            self._gen = self._stream.run()
            self._first = next(self._gen, None)   # reads and checks the header
            self.header = self._stream.header
            self._digest = None

    def __len__(self):
        if self._count is not None:
            return self._count
        n = self.header.get("iterations")
        if n is None:
            raise TypeError(f"{self.name}: the number of iterations is not known before the "
                            "stream ends (the header does not say)")
        return n

    @property
    def world_size(self):
        """GPUs of the configuration the plan was made for (header config), or None."""
        cfg = self.header.get("config") or {}
        return (cfg.get("cluster") or {}).get("gpus")

    def iterations(self, start=0):
        if self._stream is not None:
            yield from self._stream_iterations(start)
            return
        p = _Pass(self.source, self.name)
        yield from p.run(start, parse_skipped=self._digest is None)
        self.footer = p.footer
        if self._digest is not None and p.digest.hexdigest() != self._digest:
            raise PlanError(f"{self.name}: the file changed while it was read")

    def _stream_iterations(self, start):
        if self._gen is None:
            raise PlanError(f"{self.name}: a stream can be read only once")
        gen, first = self._gen, self._first
        self._gen = None
        if first is not None and first.it >= start:
            yield first
        for it in gen:
            if it.it >= start:
                yield it
        self.footer = self._stream.footer
        self._count = self._stream.count
