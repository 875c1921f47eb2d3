"""Parity per family: our hooked encoder against ``transformers`` on random weights, family by family.

For each family a small ``*ForMaskedLM`` with random weights (every bias and LayerNorm moved off its
initial value, so nothing cancels by construction) is built by transformers with eager attention,
converted with ``model_from_transformers`` (strict loading), and both run the same random token ids
(one sequence of 48 tokens, one of 160 where relative positions fall into far buckets). The figures are the
largest absolute differences over every layer's hidden state (embeddings included), every layer's and
head's attention probabilities, and the MLM logits. The tests assert each below 1e-5
(tests/test_parity.py, test_families.py, test_position_families.py); this prints the numbers.

    python benchmarks/parity.py [--write]
"""
from __future__ import annotations

import time

import torch
from sections import markdown_table, run_recorded

from bertviz_lab.bert.encoder.hook_table import hook_name
from bertviz_lab.bert.loading.checkpoints import model_from_transformers

SMALL = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=200, vocab_size=120)


def configs() -> dict[str, object]:
    """family -> a transformers ForMaskedLM with random weights."""
    import transformers as tf

    out = {
        "bert": tf.BertForMaskedLM(tf.BertConfig(**SMALL)),
        "roberta": tf.RobertaForMaskedLM(tf.RobertaConfig(**{**SMALL, "max_position_embeddings": 203}, pad_token_id=1)),
        "distilbert": tf.DistilBertForMaskedLM(tf.DistilBertConfig(
            dim=64, n_layers=3, n_heads=4, hidden_dim=128, max_position_embeddings=200, vocab_size=120)),
        "electra (generator)": tf.ElectraForMaskedLM(tf.ElectraConfig(**SMALL, embedding_size=32)),
        "albert (shared layers)": tf.AlbertForMaskedLM(tf.AlbertConfig(**SMALL, embedding_size=32)),
        "mpnet (relative bias)": tf.MPNetForMaskedLM(tf.MPNetConfig(**{**SMALL, "max_position_embeddings": 203},
                                                                   pad_token_id=1)),
    }
    deberta = getattr(tf, "DebertaV2ForMaskedLM", None)
    if deberta is not None and _supports("deberta-v2"):
        out["deberta-v2 (disentangled)"] = deberta(tf.DebertaV2Config(
            **SMALL, relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=16, max_relative_positions=-1,
            norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False))
    modernbert = getattr(tf, "ModernBertForMaskedLM", None)
    if modernbert is not None and _supports("modernbert"):  # global layers 1 and 4, local 2-3 (window ±4)
        out["modernbert (rotary, local/global)"] = modernbert(tf.ModernBertConfig(
            vocab_size=120, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=96,
            local_attention=8, global_attn_every_n_layers=3, max_position_embeddings=200, pad_token_id=0,
            bos_token_id=2, cls_token_id=2, eos_token_id=3, sep_token_id=3))
    return out


def _supports(model_type: str) -> bool:
    from bertviz_lab.bert.loading.families import FAMILIES

    return model_type in FAMILIES


def roughen(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def differences(hf, length: int, seed: int) -> tuple[float, float, float]:
    ours = model_from_transformers(hf)
    n_layers = ours.config.num_hidden_layers
    ids = torch.randint(5, 120, (1, length), generator=torch.Generator().manual_seed(seed))  # (1, pos)
    names = [hook_name("embeddings")] + [hook_name("out", i) for i in range(n_layers)]
    if getattr(ours.config, "rotary", False):  # transformers' last hidden state is after ModernBERT's final norm
        names[-1] = hook_name("final_norm")
    patterns = [hook_name("pattern", i) for i in range(n_layers)]
    with torch.no_grad(), ours.hooks(capture=names + patterns) as run:
        out = ours(input_ids=ids)
        ref = hf(input_ids=ids, output_attentions=True, output_hidden_states=True)
    pairs = list(zip(names[1:], ref.hidden_states[-n_layers:]))  # every layer's output
    if run.cache[names[0]].shape == ref.hidden_states[0].shape:  # the embeddings (ELECTRA's and ALBERT's
        pairs.append((names[0], ref.hidden_states[0]))  # are compared after their projection, in layer 1)
    hidden = max(float((run.cache[a] - b).abs().max()) for a, b in pairs)
    attention = max(float((run.cache[a] - b).abs().max()) for a, b in zip(patterns, ref.attentions))
    return hidden, attention, float((out.mlm_logits - ref.logits).abs().max())


def main() -> None:
    start = time.perf_counter()
    rows = []
    for seed, (family, hf) in enumerate(configs().items()):
        hf = roughen(hf, seed).float()
        hf.config._attn_implementation = "eager"
        for length in (48, 160):
            h, a, m = differences(hf, length, seed)
            rows.append([family, length, f"{h:.1e}", f"{a:.1e}", f"{m:.1e}", "yes" if max(h, a, m) <= 1e-5 else "NO"])
    print(markdown_table(["family", "tokens", "hidden states", "attention", "MLM logits", "<= 1e-5"], rows))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    run_recorded("parity-per-family", "Parity per family against transformers (max abs difference, random weights)",
                 __doc__, main)
