"""The README's Python examples run as written ("Training with a plan"), on a plan made
here for 8 GPUs, as GPU 0, with a tiny model standing in for the user's."""
import os
import re

import pytest

from conftest import ROOT, run_vlplan

if os.environ.get("VLPLAN_REQUIRE_TORCH"):
    import torch
else:
    torch = pytest.importorskip("torch")


def readme_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text[text.index("## Training with a plan"):]
    section = section[:section.index("\n## ", 3)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


class TinyLM(torch.nn.Module):
    """Embedding and head: the summed next-token loss of each packed sequence."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 8)
        self.head = torch.nn.Linear(8, 100)

    def forward(self, tokens, labels=None, position_ids=None, cu_seqlens_q=None,
                cu_seqlens_kv=None, **kw):
        assert cu_seqlens_q.dtype == torch.int32 and cu_seqlens_kv.dtype == torch.int32
        logits = self.head(self.emb(tokens))
        if labels is None:                  # next token within each packed sequence
            labels = torch.full_like(tokens, -100)
            cu = cu_seqlens_q.tolist()
            for a, b in zip(cu, cu[1:]):
                labels[a:b - 1] = tokens[a + 1:b]
        return torch.nn.functional.cross_entropy(logits, labels, ignore_index=-100,
                                                 reduction="sum")


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = readme_blocks()
    assert len(blocks) == 2
    data = tmp_path / "data.jsonl"
    lengths = [(f"doc-{i}", 5 + (i * 37) % 300) for i in range(120)]      # string ids
    data.write_text("".join(f'{{"id":"{sid}","len":{n}}}\n' for sid, n in lengths))
    run_vlplan("plan", "-q", "-s", "pack", "-o", str(tmp_path / "plan.jsonl"),
               "--set", "cluster.gpus=8", "--set", "training.max_seq_len=1024",
               "--set", "training.global_tokens=8192", str(data))
    gen = torch.Generator().manual_seed(0)
    token_dataset = [torch.randint(100, (n,), generator=gen) for _, n in lengths]
    by_id = {sid: token_dataset[i] for i, (sid, _) in enumerate(lengths)}
    model = TinyLM()
    steps = []

    class Optimizer(torch.optim.SGD):
        def step(self, closure=None):
            steps.append(sum(float(p.grad.abs().sum()) for p in model.parameters()
                             if p.grad is not None))
            return super().step(closure)

    ns = {"model": model, "optimizer": Optimizer(model.parameters(), lr=0.01),
          "token_dataset": token_dataset,
          "tokens_of": lambda mb: torch.cat([by_id[i][o:o + n] for i, o, n in
                                             zip(mb.ids, mb.offsets, mb.lengths)])}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "8")
    import vlplan
    iters = len(vlplan.Plan(str(tmp_path / "plan.jsonl")))
    for block in blocks:
        steps.clear()
        exec(compile(block, "README.md", "exec"), ns)
        assert len(steps) == iters and all(s > 0 for s in steps), steps
