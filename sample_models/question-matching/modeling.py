"""The sample's model: paddlenlp 2.8's ``ErnieGramModel`` written out in paddle.nn, under the matcher's head
(pooled [CLS] -> dropout -> linear(2)), and paddlenlp's ``RDropLoss``.

The same layers, built in the same order, with the same parameter names, the same initialization (every
Linear and Embedding weight of the encoder drawn from normal(0, initializer_range) as paddlenlp's
``init_weights`` draws them, children before parents; LayerNorm epsilon 1e-5; the head's Linear keeps
paddle's default init, as it did under paddlenlp) and the same forward (the attention mask from [PAD],
position ids 0..L-1, the pooled [CLS] through tanh). So a checkpoint of either loads in the other, and with
one seed both start from the same parameters and train alike; tests/test_question_matching.py holds this
against paddlenlp itself.

Why not import paddlenlp: its package ``__init__`` imports datasets, pandas, scikit-learn and its Taskflow,
~2.5 s per process, and the chain starts train, eval and export each in a process of its own
(docs/PERFORMANCE.md).

Importing this module imports paddle.
"""

import paddle
import paddle.nn.functional as F
from paddle import nn

MODEL_TYPE = "ernie_gram"

# paddlenlp ErnieGramConfig's defaults for the fields this model reads (config.json may hold more; they are kept).
DEFAULTS = {
    "vocab_size": 18018,
    "embedding_size": 768,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "pad_token_id": 0,
    "rel_pos_size": None,
}


class ErnieGramConfig(object):
    """The fields of paddlenlp's ErnieGramConfig that the model reads, as attributes; the rest of a
    config.json is kept as read."""

    def __init__(self, **fields):
        self.extra = {k: v for k, v in fields.items() if k not in DEFAULTS}
        for key, default in DEFAULTS.items():
            setattr(self, key, fields.get(key, default))

    def to_dict(self):
        """What config.json holds: paddlenlp's ErnieGramConfig(**it) reads it back."""
        d = dict(self.extra)
        d.update({key: getattr(self, key) for key in DEFAULTS})
        d["model_type"] = MODEL_TYPE
        return d


class ErnieGramEmbeddings(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.embedding_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.embedding_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.embedding_size)
        if config.rel_pos_size and config.num_attention_heads:
            self.rel_pos_embeddings = nn.Embedding(config.rel_pos_size, config.num_attention_heads)
        self.layer_norm = nn.LayerNorm(config.embedding_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        # As paddlenlp builds them: from the embeddings' shape (so the exported program is the same, too).
        inputs_embeds = self.word_embeddings(input_ids)
        input_shape = paddle.shape(inputs_embeds)[:-1]
        ones = paddle.ones(input_shape, dtype="int64")
        position_ids = paddle.cumsum(ones, axis=1) - ones
        position_ids.stop_gradient = True
        if token_type_ids is None:
            token_type_ids = paddle.zeros(input_shape, dtype="int64")
        embeddings = inputs_embeds + self.position_embeddings(position_ids) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.layer_norm(embeddings))


class ErnieGramPooler(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class ErnieGramModel(nn.Layer):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.pad_token_id = config.pad_token_id
        self.embeddings = ErnieGramEmbeddings(config)
        layer = nn.TransformerEncoderLayer(
            config.hidden_size, config.num_attention_heads, config.intermediate_size,
            dropout=config.hidden_dropout_prob, activation=config.hidden_act,
            attn_dropout=config.attention_probs_dropout_prob, act_dropout=0)
        self.encoder = nn.TransformerEncoder(layer, config.num_hidden_layers)
        self.pooler = ErnieGramPooler(config)
        _init_weights(self, config)

    def forward(self, input_ids, token_type_ids=None):
        mask = paddle.unsqueeze(
            (input_ids == self.pad_token_id).astype(self.pooler.dense.weight.dtype) * -1e4, axis=[1, 2])
        mask.stop_gradient = True
        sequence = self.encoder(self.embeddings(input_ids, token_type_ids), src_mask=mask)
        return sequence, self.pooler(sequence)


class QuestionMatching(nn.Layer):
    """encoder (ErnieGramModel) -> pooled [CLS] -> dropout -> linear(2)."""

    def __init__(self, ptm, dropout, num_labels=2):
        super().__init__()
        self.ptm = ptm
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(ptm.config.hidden_size, num_labels)

    def forward(self, input_ids, token_type_ids):
        _, cls_embedding = self.ptm(input_ids, token_type_ids=token_type_ids)
        return self.classifier(self.dropout(cls_embedding))


def rdrop_loss(p, q):
    """paddlenlp's RDropLoss(): (KL(q||p) + KL(p||q)) / 2 of two passes' logits, each summed over the batch."""
    p_loss = F.kl_div(F.log_softmax(p, axis=-1), F.softmax(q, axis=-1), reduction="none").sum()
    q_loss = F.kl_div(F.log_softmax(q, axis=-1), F.softmax(p, axis=-1), reduction="none").sum()
    return (p_loss + q_loss) / 2


def _init_weights(layer, config):
    """paddlenlp's init_weights: children before parents, in the order they were built (Layer.apply)."""

    def init(sub):
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            sub.weight.set_value(paddle.tensor.normal(mean=0.0, std=config.initializer_range,
                                                      shape=sub.weight.shape))
        elif isinstance(sub, nn.LayerNorm):
            sub._epsilon = 1e-5

    layer.apply(init)
