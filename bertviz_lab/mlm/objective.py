"""BERT's pretraining objective (Devlin et al. 2019; the seed material's MLM/NSP article):
dynamic masking, the masked-LM loss over the chosen positions only, next-sentence pairs and
the NSP loss. Used to train the embedded model's MLM head (see train_mlm.py)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE = -100  # label of positions the MLM loss skips


def choose_positions(
    special: torch.Tensor,  # (batch, pos) bool: [CLS], [SEP], [PAD] ... never chosen
    generator: torch.Generator,
    probability: float = 0.15,
    word_ids: torch.Tensor | None = None,  # (batch, pos) long, -1 for specials: whole-word masking
) -> torch.Tensor:
    """Each non-special position (or whole word) is chosen independently with ``probability``."""
    if word_ids is None:
        draw = torch.rand(special.shape, generator=generator, device=special.device)
        return (draw < probability) & ~special
    n_words = int(word_ids.max().item()) + 1 if word_ids.numel() else 0
    draw = torch.rand((word_ids.shape[0], max(n_words, 1)), generator=generator, device=special.device)
    chosen_word = draw < probability  # (batch, words)
    safe = word_ids.clamp(min=0)
    chosen = torch.gather(chosen_word, 1, safe) & (word_ids >= 0)
    return chosen & ~special


def mask_tokens(
    input_ids: torch.Tensor,  # (batch, pos)
    special: torch.Tensor,  # (batch, pos) bool
    mask_id: int,
    vocab_size: int,
    generator: torch.Generator,
    probability: float = 0.15,
    word_ids: torch.Tensor | None = None,
    random_token_low: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's 80/10/10 rule. Returns (masked inputs, labels with IGNORE off the chosen positions)."""
    chosen = choose_positions(special, generator, probability, word_ids)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    action = torch.rand(input_ids.shape, generator=generator, device=input_ids.device)
    to_mask = chosen & (action < 0.8)
    to_random = chosen & (action >= 0.8) & (action < 0.9)
    randoms = torch.randint(random_token_low, vocab_size, input_ids.shape, generator=generator,
                            device=input_ids.device)
    inputs = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    inputs = torch.where(to_random, randoms, inputs)
    return inputs, labels


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the chosen positions only.

    ``logits`` is either (batch, pos, vocab) or already gathered at the chosen positions
    (n_chosen, vocab), as the model returns with ``mlm_positions=labels != IGNORE``.
    """
    if logits.dim() == 3:
        chosen = labels != IGNORE
        return F.cross_entropy(logits[chosen], labels[chosen])
    return F.cross_entropy(logits, labels[labels != IGNORE])


def nsp_loss(logits: torch.Tensor, is_random: torch.Tensor) -> torch.Tensor:
    """``logits`` (batch, 2): index 0 = "B follows A", 1 = "B is random" (Hugging Face's order)."""
    return F.cross_entropy(logits, is_random.long())
