"""Masked-word prediction: BERT's pretraining objective, head training, evaluation, corpus, model card."""
