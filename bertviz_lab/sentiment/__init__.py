"""The shipped sentiment classifier: SST-2 data as GLUE distributes it, and fine-tuning the embedded
encoder into a ``BertForSequenceClassification`` in resumable legs (``fine_tune.py``)."""
