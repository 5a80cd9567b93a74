"""The sample's model: paddlenlp 2.8's ``BertForSequenceClassification``, written out in paddle.nn.

The same layers, built in the same order, with the same parameter names, the same initialization
(every Linear and Embedding weight drawn from normal(0, initializer_range) as paddlenlp's
``init_weights`` draws them, LayerNorm epsilon ``layer_norm_eps``) and the same forward (the attention
mask from [PAD], position ids 0..L-1, the pooled [CLS] through tanh, dropout, the classifier). So a
checkpoint of either loads in the other, and with one seed both start from the same parameters and
train alike; tests/model_scripts/test_sample_model.py holds this against paddlenlp itself.

Why not import paddlenlp: its package ``__init__`` imports datasets, pandas, scikit-learn and its
Taskflow, 2.6 s per process on the reference machine, longer than the lite training itself, and the
chain starts train, eval and export each in a process of its own (docs/PERFORMANCE.md).

Importing this module imports paddle.
"""

import paddle
from paddle import nn

MODEL_TYPE = "bert"
ARCHITECTURE = "BertForSequenceClassification"

# paddlenlp BertConfig's defaults for the fields this model reads (config.json may hold more; they are kept).
DEFAULTS = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 16,
    "initializer_range": 0.02,
    "pad_token_id": 0,
    "layer_norm_eps": 1e-12,
    "pool_act": "tanh",
    "classifier_dropout": None,
}


class BertConfig(object):
    """The fields of paddlenlp's BertConfig that the model reads, as attributes; the rest of a config.json
    is kept as read. ``num_labels`` comes from ``id2label`` (as in paddlenlp), else 2."""

    def __init__(self, **fields):
        self.extra = {k: v for k, v in fields.items() if k not in DEFAULTS and k not in ("num_labels",)}
        for key, default in DEFAULTS.items():
            setattr(self, key, fields.get(key, default))
        id2label = fields.get("id2label")
        self.num_labels = len(id2label) if id2label else int(fields.get("num_labels", 2))

    def to_dict(self):
        """What config.json holds: paddlenlp's BertConfig(**it) reads it back."""
        d = dict(self.extra)
        d.update({key: getattr(self, key) for key in DEFAULTS})
        d.update({"model_type": MODEL_TYPE, "architectures": [ARCHITECTURE]})
        if not d.get("id2label"):
            d["num_labels"] = self.num_labels
        return d


class BertEmbeddings(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        ones = paddle.ones_like(input_ids, dtype="int64")
        position_ids = paddle.cumsum(ones, axis=-1) - ones
        position_ids.stop_gradient = True
        if token_type_ids is None:
            token_type_ids = paddle.zeros_like(input_ids, dtype="int64")
        embeddings = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
                      + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.layer_norm(embeddings))


class BertPooler(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()
        self.pool_act = config.pool_act

    def forward(self, hidden_states):
        pooled = self.dense(hidden_states[:, 0])
        return self.activation(pooled) if self.pool_act == "tanh" else pooled


class BertModel(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.pad_token_id = config.pad_token_id
        self.embeddings = BertEmbeddings(config)
        layer = nn.TransformerEncoderLayer(
            config.hidden_size, config.num_attention_heads, config.intermediate_size,
            dropout=config.hidden_dropout_prob, activation=config.hidden_act,
            attn_dropout=config.attention_probs_dropout_prob, act_dropout=0)
        self.encoder = nn.TransformerEncoder(layer, config.num_hidden_layers)
        self.pooler = BertPooler(config)
        _init_weights(self, config)

    def forward(self, input_ids, token_type_ids=None):
        mask = paddle.unsqueeze(
            (input_ids == self.pad_token_id).astype(self.pooler.dense.weight.dtype) * -1e4, axis=[1, 2])
        sequence = self.encoder(self.embeddings(input_ids, token_type_ids), src_mask=mask)
        return sequence, self.pooler(sequence)


class BertForSequenceClassification(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.bert = BertModel(config)
        self.num_labels = config.num_labels
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        _init_weights(self.classifier, config)

    def forward(self, input_ids, token_type_ids=None):
        _, pooled = self.bert(input_ids, token_type_ids=token_type_ids)
        return self.classifier(self.dropout(pooled))


def _init_weights(layer, config):
    """paddlenlp's init_weights: children before parents, in the order they were built (Layer.apply)."""

    def init(sub):
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            sub.weight.set_value(paddle.tensor.normal(mean=0.0, std=config.initializer_range,
                                                      shape=sub.weight.shape))
        elif isinstance(sub, nn.LayerNorm):
            sub._epsilon = config.layer_norm_eps

    layer.apply(init)
