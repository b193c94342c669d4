"""Hugging Face folders: load time and generation latency of a small GPT-2, ours against
`transformers` (PyTorch), both on one thread.

    python bench/hub.py [--size tiny|small] [--prompt 16] [--new 32] [--rounds 5] [--json out]

A random GPT2LMHeadModel is built by `transformers` and saved to a temporary folder; then,
interleaved (utils/timing.median_ms):

* load:        from_pretrained(folder) -> a model in eval mode (config + safetensors + build);
* first token: the prompt's forward and the argmax of its last position (what a user waits
               for before the first token appears);
* generate:    `--new` greedy tokens with the key/value cache (ours also without it), as
               milliseconds per token.

The generated tokens are compared (greedy decoding must agree) before anything is timed.
Sizes: tiny = 2 layers x 64 wide, vocab 1000; small = 6 layers x 256 wide, vocab 8000.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SIZES = {"tiny": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=1000),
         "small": dict(n_embd=256, n_layer=6, n_head=8, vocab_size=8000)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()

    import torch
    import transformers
    import minitorch_edge as mte
    from minitorch_edge import hub
    from minitorch_edge.utils.timing import median_ms
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()

    size = SIZES[args.size]
    config = transformers.GPT2Config(n_positions=args.prompt + args.new + 8, bos_token_id=0,
                                     eos_token_id=0, **size)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="mte_bench_hub_") as folder:
        transformers.GPT2LMHeadModel(config).eval().save_pretrained(folder)
        weights = os.path.getsize(os.path.join(folder, "model.safetensors"))
        theirs = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
        ours = hub.from_pretrained(folder)
        prompt = np.random.default_rng(0).integers(1, size["vocab_size"], (1, args.prompt))
        p_t, p_m = torch.tensor(prompt), mte.tensor(prompt)
        kw = dict(max_new_tokens=args.new, do_sample=False, eos_token_id=None,
                  pad_token_id=0, attention_mask=torch.ones_like(p_t))
        with torch.no_grad():
            expected = theirs.generate(p_t, **kw).numpy()
        got = ours.generate(p_m, max_new_tokens=args.new).numpy()
        agree = bool(np.array_equal(got, expected))

        def first_theirs():
            with torch.no_grad():
                return theirs(p_t).logits[:, -1].argmax(-1)

        def first_ours():
            with mte.no_grad():
                return ours(p_m)[:, -1].argmax(-1)

        def gen_theirs():
            with torch.no_grad():
                theirs.generate(p_t, **kw)

        load = median_ms({"transformers": lambda: transformers.GPT2LMHeadModel
                          .from_pretrained(folder),
                          "minitorch_edge": lambda: hub.from_pretrained(folder)},
                         rounds=args.rounds)
        first = median_ms({"transformers": first_theirs, "minitorch_edge": first_ours},
                          rounds=args.rounds)
        gen = median_ms({"transformers": gen_theirs,
                         "minitorch_edge": lambda: ours.generate(p_m, max_new_tokens=args.new),
                         "minitorch_edge, no cache": lambda: ours.generate(
                             p_m, max_new_tokens=args.new, use_cache=False)},
                        rounds=args.rounds)
    params = sum(p.numel() for p in ours.parameters())
    print(f"GPT-2 {args.size}: {size['n_layer']} layers x {size['n_embd']}, vocab "
          f"{size['vocab_size']}, {params:,} parameters, model.safetensors {weights:,} bytes; "
          f"prompt {args.prompt}, {args.new} new tokens; greedy tokens agree: {agree}")
    print(f"{'':26s} {'load ms':>9s} {'first token ms':>15s} {'ms / new token':>15s}")
    for name in gen:
        print(f"{name:26s} {load.get(name, float('nan')):9.2f} "
              f"{first.get(name, float('nan')):15.2f} {gen[name] / args.new:15.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": args.size, "params": params, "agree": agree, "load_ms": load,
                       "first_token_ms": first,
                       "per_token_ms": {k: v / args.new for k, v in gen.items()}}, f, indent=2)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
