#!/usr/bin/env python3
"""A few AdamW steps of a tiny pre-norm decoder, built once from torch.nn
modules and once from norm_opt's, with the same initial weights, data and
seed: the per-step losses and the largest gradient differences side by
side, and exit status 1 beyond the tolerances below.

The decoder: token embedding, `--layers` blocks (hidden 512, 8 query and 2
key/value heads of 64, QK-Norm per head with weights, causal SDPA, a GELU
MLP), each block's norms pre-norm: the first block's attention norm an
RMSNorm, every later norm a fused residual add + RMSNorm (the residual
stream carried between them), then a final add + RMSNorm and the LM head.
torch's side: torch.nn.RMSNorm, the add written out, F.rms_norm per head of
q and k; norm_opt's side: norm_opt.nn.RMSNorm, norm_opt.nn.FusedAddRMSNorm
and norm_opt.qk_norm (through autograd: their backward kernels). The
linear layers, attention and the loss are torch's on both sides.

Tolerances (--dtype bf16 / f32): every step's loss within 2e-2 / 1e-4
relative of torch's; at step 0 (identical weights) every parameter's
gradient within 5e-2 / 1e-3 of torch's, relative to the largest |gradient|
of that parameter. Later steps' gradient differences are printed, not
checked (AdamW's first updates are lr * sign(g): gradients near zero that
differ in sign move the two models apart by 2 lr).

Without CUDA (or without torch) it prints why and "skipped", exit 0.
"""

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("train_check: no torch: skipped")
        return 0
    if not torch.cuda.is_available():
        print("train_check: no CUDA device: skipped")
        return 0
    return run(args, torch)


def run(args, torch) -> int:
    import torch.nn.functional as F
    from torch import nn

    import norm_opt
    import norm_opt.nn

    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    loss_tol, grad_tol = {"bf16": (2e-2, 5e-2), "f32": (1e-4, 1e-3)}[
        args.dtype]
    hidden, heads, kv_heads, head_dim, eps = 512, 8, 2, 64, 1e-6
    width = (heads + 2 * kv_heads) * head_dim

    class TorchRMSNorm(nn.Module):
        """torch.nn.RMSNorm where this torch has it, else its formula."""

        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            return F.rms_norm(x, (hidden,), self.weight, eps) if hasattr(
                F, "rms_norm") else (x.float() * torch.rsqrt(
                    x.float().pow(2).mean(-1, keepdim=True) + eps)).to(
                        x.dtype) * self.weight

    class TorchAddRMSNorm(TorchRMSNorm):
        def forward(self, x, residual):
            residual = residual + x
            return super().forward(residual), residual

    def torch_qk_norm(qkv, qw, kw):
        lead = qkv.shape[:-1]
        q = qkv[..., :heads * head_dim].reshape(*lead, heads, head_dim)
        k = qkv[..., heads * head_dim:(heads + kv_heads) * head_dim].reshape(
            *lead, kv_heads, head_dim)
        norm = (lambda x, w: F.rms_norm(x, (head_dim,), w, eps)) if hasattr(
            F, "rms_norm") else (lambda x, w: (x.float() * torch.rsqrt(
                x.float().pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w)
        return norm(q, qw), norm(k, kw)

    def norm_opt_qk_norm(qkv, qw, kw):
        return norm_opt.qk_norm(qkv, heads, kv_heads, qw, kw, eps)

    def make_norm(ours, first):
        if ours:
            return (norm_opt.nn.RMSNorm(hidden, eps=eps) if first else
                    norm_opt.nn.FusedAddRMSNorm(hidden, eps=eps))
        return TorchRMSNorm() if first else TorchAddRMSNorm()

    class Block(nn.Module):
        def __init__(self, ours, first):
            super().__init__()
            self.first = first
            self.attn_norm = make_norm(ours, first)
            self.qkv = nn.Linear(hidden, width, bias=False)
            self.q_norm = nn.Parameter(torch.ones(head_dim))
            self.k_norm = nn.Parameter(torch.ones(head_dim))
            self.out = nn.Linear(heads * head_dim, hidden, bias=False)
            self.mlp_norm = make_norm(ours, False)
            self.up = nn.Linear(hidden, 4 * hidden, bias=False)
            self.down = nn.Linear(4 * hidden, hidden, bias=False)
            self.qk_norm = norm_opt_qk_norm if ours else torch_qk_norm

        def forward(self, x, residual):
            if self.first:
                residual, h = x, self.attn_norm(x)
            else:
                h, residual = self.attn_norm(x, residual)
            b, s, _ = h.shape
            qkv = self.qkv(h)
            q, k = self.qk_norm(qkv, self.q_norm, self.k_norm)
            v = qkv[..., (heads + kv_heads) * head_dim:].reshape(
                b, s, kv_heads, head_dim)
            group = heads // kv_heads
            attn = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2).repeat_interleave(
                    group, 1), v.transpose(1, 2).repeat_interleave(group, 1),
                is_causal=True)
            x = self.out(attn.transpose(1, 2).reshape(b, s, heads * head_dim))
            h, residual = self.mlp_norm(x, residual)
            return self.down(F.gelu(self.up(h))), residual

    class Decoder(nn.Module):
        def __init__(self, ours):
            super().__init__()
            self.embed = nn.Embedding(args.vocab, hidden)
            self.blocks = nn.ModuleList(Block(ours, i == 0)
                                        for i in range(args.layers))
            self.final_norm = make_norm(ours, False)
            self.head = nn.Linear(hidden, args.vocab, bias=False)

        def forward(self, tokens):
            x, residual = self.embed(tokens), None
            for block in self.blocks:
                x, residual = block(x, residual)
            h, _ = self.final_norm(x, residual)
            return self.head(h)

    torch.manual_seed(args.seed)
    reference = Decoder(ours=False).to("cuda", dtype)
    with torch.no_grad():  # norms' weights away from 1: they matter
        for name, p in reference.named_parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    model = Decoder(ours=True).to("cuda", dtype)
    model.load_state_dict(reference.state_dict())
    tokens = torch.randint(0, args.vocab, (args.steps, args.batch,
                                           args.seq + 1), device="cuda")
    optimizers = [torch.optim.AdamW(m.parameters(), lr=args.lr)
                  for m in (reference, model)]
    names = [name for name, _ in reference.named_parameters()]
    failures = []
    print(f"train_check: {args.layers} layers, hidden {hidden}, "
          f"{args.dtype}, {args.steps} AdamW steps of {args.batch} x "
          f"{args.seq} tokens")
    print(f"{'step':>4} {'torch loss':>12} {'norm_opt loss':>14} "
          f"{'rel diff':>10} {'max grad diff':>14}  (parameter)")
    for step in range(args.steps):
        inputs, targets = tokens[step, :, :-1], tokens[step, :, 1:]
        losses = []
        for m, optimizer in zip((reference, model), optimizers):
            optimizer.zero_grad(set_to_none=True)
            logits = m(inputs)
            loss = F.cross_entropy(logits.float().flatten(0, 1),
                                   targets.flatten())
            loss.backward()
            losses.append(loss.item())
        worst, worst_name = 0.0, ""
        for name, p, q in zip(names, reference.parameters(),
                              model.parameters()):
            if p.grad is None or q.grad is None:
                failures.append(f"step {step}: {name} has no gradient on "
                                f"{'torch' if p.grad is None else 'norm_opt'}"
                                "'s side")
                continue
            scale = p.grad.float().abs().max().item() or 1.0
            diff = (p.grad.float() - q.grad.float()).abs().max().item() / scale
            if not diff <= worst:  # NaN counts as the worst
                worst, worst_name = diff, name
            if step == 0 and not diff <= grad_tol:
                failures.append(f"step 0: {name}'s gradient differs by "
                                f"{diff:.3g} of its largest (tolerance "
                                f"{grad_tol})")
        rel = abs(losses[1] - losses[0]) / max(abs(losses[0]), 1e-12)
        print(f"{step:>4} {losses[0]:>12.6f} {losses[1]:>14.6f} {rel:>10.3g} "
              f"{worst:>14.3g}  ({worst_name})")
        if not rel <= loss_tol:
            failures.append(f"step {step}: loss {losses[1]} vs torch's "
                            f"{losses[0]} (relative {rel:.3g}, tolerance "
                            f"{loss_tol})")
        for optimizer in optimizers:
            optimizer.step()
    if failures:
        print("train_check: FAILED")
        for failure in failures:
            print("  " + failure)
        return 1
    print(f"train_check: OK (losses within {loss_tol} relative, step 0's "
          f"gradients within {grad_tol} of each parameter's largest)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
