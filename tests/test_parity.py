"""Our BERT against transformers' BERT (eager attention): same weights, same numbers."""
import builders
import numpy as np
import pytest
import torch

from bertviz_lab import load
from bertviz_lab.bert.loading.checkpoints import load_model, packaged_default_folder

TOL = 1e-5


def ours_with_everything(model, **inputs):
    capture = ["*hook_pattern", "bert.encoder.layer.*.hook_out", "bert.embeddings.hook_out"]
    with torch.no_grad(), model.hooks(capture=capture) as run:
        out = model(**inputs)
    n = model.config.num_hidden_layers
    attn = [run.cache[f"bert.encoder.layer.{i}.attention.self.hook_pattern"] for i in range(n)]
    hidden = [run.cache["bert.embeddings.hook_out"]] + [run.cache[f"bert.encoder.layer.{i}.hook_out"] for i in range(n)]
    return out, attn, hidden


def assert_close(a, b, what, mask=None):
    a, b = a.float(), b.float()
    if mask is not None:
        a, b = a[mask], b[mask]
    diff = (a - b).abs().max().item()
    assert diff <= TOL, f"{what}: max abs diff {diff:.2e}"


def compare(hf_model, our_model, inputs, real=None):
    with torch.no_grad():
        ref = hf_model(**inputs, output_attentions=True, output_hidden_states=True)
    out, attn, hidden = ours_with_everything(our_model, **inputs)
    assert len(attn) == len(ref.attentions)
    # Padded query rows are undefined noise in both; compare real queries only.
    qmask = real[:, None, :, None].expand_as(attn[0]) if real is not None else None
    for i, (a, r) in enumerate(zip(attn, ref.attentions)):
        assert_close(a, r, f"attention layer {i}", qmask)
    hmask = real[:, :, None].expand_as(hidden[0]) if real is not None else None
    for i, (h, r) in enumerate(zip(hidden, ref.hidden_states)):
        assert_close(h, r, f"hidden state {i}", hmask)
    return ref, out


@pytest.mark.parametrize("size", [dict(hidden=32, layers=2, heads=4, intermediate=64),
                                  dict(hidden=48, layers=3, heads=6, intermediate=96)])
def test_pretraining_parity_single_pair_and_padded_batch(tmp_path, size):
    hf = builders.random_pretraining_model(seed=1, **size)
    folder = builders.save_checkpoint(hf, tmp_path / "ckpt")
    ours, _, _ = load_model(str(folder), device="cpu")
    torch.manual_seed(0)
    vocab = len(builders.VOCAB)
    single = {"input_ids": torch.cat([torch.tensor([[2]]), torch.randint(5, vocab, (1, 9)), torch.tensor([[3]])], 1)}
    ref, out = compare(hf, ours, single)
    assert_close(out.mlm_logits, ref.prediction_logits, "MLM logits")
    assert_close(out.nsp_logits, ref.seq_relationship_logits, "NSP logits")

    ids = torch.randint(5, vocab, (1, 12))
    ids[0, 0], ids[0, 5], ids[0, 11] = 2, 3, 3
    seg = torch.tensor([[0] * 6 + [1] * 6])
    ref, out = compare(hf, ours, {"input_ids": ids, "token_type_ids": seg})
    assert_close(out.mlm_logits, ref.prediction_logits, "MLM logits (pair)")
    assert_close(out.nsp_logits, ref.seq_relationship_logits, "NSP logits (pair)")

    lengths = [12, 7, 4]
    ids = torch.zeros((3, 12), dtype=torch.long)
    mask = torch.zeros((3, 12), dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(5, vocab, (n,))
        ids[row, 0], ids[row, n - 1] = 2, 3
        mask[row, :n] = 1
    seg = torch.zeros_like(ids)
    seg[0, 6:12] = 1
    real = mask.bool()
    ref, out = compare(hf, ours, {"input_ids": ids, "token_type_ids": seg, "attention_mask": mask}, real)
    assert_close(out.mlm_logits, ref.prediction_logits, "MLM logits (batch)", real[:, :, None].expand_as(out.mlm_logits))
    assert_close(out.nsp_logits, ref.seq_relationship_logits, "NSP logits (batch)")
    # Padded keys get exactly zero attention.
    with torch.no_grad(), ours.hooks(capture=["*hook_pattern"]) as run:
        ours(input_ids=ids, token_type_ids=seg, attention_mask=mask)
    pattern = run.cache["bert.encoder.layer.0.attention.self.hook_pattern"]
    assert pattern[2, :, :4, 4:].abs().max().item() == 0.0


def test_uncaptured_fast_path_matches_captured(tiny_lab):
    ids = torch.tensor([[2, 7, 8, 9, 10, 3, 0, 0], [2, 7, 9, 3, 0, 0, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        fast = tiny_lab.model(input_ids=ids, attention_mask=mask)
        with tiny_lab.model.hooks(capture=["*hook_pattern"]):
            slow = tiny_lab.model(input_ids=ids, attention_mask=mask)
    real = mask.bool()[:, :, None].expand_as(fast.last_hidden_state)
    assert_close(fast.last_hidden_state, slow.last_hidden_state, "fast vs explicit attention", real)


def test_packaged_minilm_matches_transformers_bertmodel():
    from transformers import BertModel

    folder = packaged_default_folder()
    hf = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    lab = load("default", device="cpu", mlm_head=None)
    assert (lab.n_layers, lab.n_heads) == (6, 12)
    assert not lab.model.has_mlm_head and not lab.model.has_nsp_head
    enc = lab.encode("The quick brown fox jumps over the lazy dog.", "It was not amused, unbelievably.")
    inputs = {k: v for k, v in lab.batch_tensors([enc]).items()}
    ref, out = compare(hf, lab.model, inputs)
    assert_close(out.last_hidden_state, ref.last_hidden_state, "last hidden")
    assert_close(out.pooled, ref.pooler_output, "pooler")
    # Padded batch on the real weights too.
    encs = [lab.encode("A short one."), lab.encode("A somewhat longer sentence, with a clause or two in it.")]
    inputs = lab.batch_tensors(encs)
    compare(hf, lab.model, inputs, inputs["attention_mask"].bool())


def test_analyze_attention_equals_hf_for_a_sentence(minilm_lab):
    from transformers import BertModel

    hf = BertModel.from_pretrained(str(packaged_default_folder()), attn_implementation="eager").eval()
    result = minilm_lab.analyze("Attention is all you need, they said.")
    ids = torch.tensor([result.token_ids])
    with torch.no_grad():
        ref = torch.stack(hf(input_ids=ids, output_attentions=True).attentions, 1)[0].numpy()
    assert result.attention.dtype == np.float32
    assert result.attention.shape == ref.shape
    np.testing.assert_allclose(result.attention, ref, atol=TOL)
