"""BERT (Devlin et al. 2018) built from a Hugging Face config: BertModel, BertForMaskedLM,
BertForSequenceClassification, with `transformers`' module names so the state_dict keys are
the checkpoint's.

    input_ids (N, L), token_type_ids (N, L) = 0, attention_mask (N, L) 1 = token, 0 = padding
      -> embeddings: word + position + token type -> LayerNorm -> dropout
      -> encoder.layer[i]: self-attention (query, key, value, output.dense) + residual +
         LayerNorm (post-norm), then intermediate.dense -> act -> output.dense + residual +
         LayerNorm
      -> pooler: dense -> tanh on the first ([CLS]) position

Heads: the masked-LM head (transform: dense -> act -> LayerNorm, then the decoder tied to the
word embedding plus ``cls.predictions.bias``) returns logits (N, L, vocab); the
sequence classifier (dropout -> classifier on the pooled [CLS]) returns logits (N, num_labels).
BertModel returns ``BaseModelOutput(last_hidden_state, pooler_output)``.
"""
from collections import namedtuple

from .. import creation, nn
from ._layers import (HubModel, activation, attend, check_heads, merge_heads, padding_keep,
                      split_heads)

__all__ = ["BertModel", "BertForMaskedLM", "BertForSequenceClassification", "BaseModelOutput"]

BaseModelOutput = namedtuple("BaseModelOutput", ["last_hidden_state", "pooler_output"])

BERT_DEFAULTS = {
    "model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
    "layer_norm_eps": 1e-12, "pad_token_id": 0, "classifier_dropout": None,
    "tie_word_embeddings": True, "position_embedding_type": "absolute", "is_decoder": False,
    "add_cross_attention": False,
}


def _check_supported(config):
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise NotImplementedError(f"BERT: position_embedding_type="
                                  f"{config.position_embedding_type!r} is not supported (only "
                                  f"'absolute')")
    if config.get("is_decoder") or config.get("add_cross_attention"):
        raise NotImplementedError("BERT: is_decoder / add_cross_attention models are not "
                                  "supported (encoder only)")


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.max_positions = config.max_position_embeddings

    def forward(self, input_ids, token_type_ids=None):
        n, length = input_ids.shape
        if length > self.max_positions:
            raise ValueError(f"BertModel: sequence length {length} exceeds "
                             f"max_position_embeddings={self.max_positions}")
        if token_type_ids is None:
            token_type_ids = creation.zeros(n, length, dtype=input_ids.dtype)
        positions = creation.arange(length).unsqueeze(0)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.hidden_size
        check_heads(width, config.num_attention_heads, "BERT")
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x, keep):
        q, k, v = (split_heads(f(x), self.num_heads) for f in (self.query, self.key, self.value))
        return merge_heads(attend(q, k, v, keep, self.dropout_p, self.training))


class BertSelfOutput(nn.Module):
    """dense -> dropout -> LayerNorm(+ residual): after attention (and, as BertOutput, after
    the feed-forward)."""
    def __init__(self, config, inner):
        super().__init__()
        self.dense = nn.Linear(inner, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config, config.hidden_size)

    def forward(self, x, keep):
        return self.output(self.self(x, keep), x)


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = activation(config.hidden_act, "BERT")

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertSelfOutput(config, config.intermediate_size)

    def forward(self, x, keep):
        x = self.attention(x, keep)
        return self.output(self.intermediate(x), x)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, x, keep):
        for layer in self.layer:
            x = layer(x, keep)
        return x


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden):
        return self.activation(self.dense(hidden[:, 0]))


class BertModel(HubModel):
    """The BERT encoder. forward(input_ids, attention_mask=None, token_type_ids=None) ->
    BaseModelOutput(last_hidden_state (N, L, E), pooler_output (N, E) or None)."""
    model_type = "bert"
    defaults = BERT_DEFAULTS
    base_model_prefix = "bert"

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        _check_supported(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        if input_ids.dim() != 2 or input_ids.dtype.is_floating_point:
            raise ValueError(f"BertModel: expected integer input_ids of shape (N, L), got "
                             f"{input_ids.dtype} of shape {tuple(input_ids.shape)}")
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids),
                              padding_keep(attention_mask))
        return BaseModelOutput(hidden, self.pooler(hidden) if self.pooler is not None else None)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = activation(config.hidden_act, "BERT")
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.transform_act_fn(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(creation.zeros(config.vocab_size))

    def forward(self, x):
        return self.decoder(self.transform(x)) + self.bias


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, x):
        return self.predictions(x)


class BertForMaskedLM(HubModel):
    """BERT with the masked-LM head: forward(input_ids, attention_mask=None,
    token_type_ids=None) -> logits (N, L, vocab_size)."""
    model_type = "bert"
    defaults = BERT_DEFAULTS
    base_model_prefix = "bert"
    _hf_ignored = ("cls.predictions.decoder.bias",)   # older files repeat cls.predictions.bias

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self._init_weights()
        if config.get("tie_word_embeddings", True):
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
            self._hf_tied = ("cls.predictions.decoder.weight",)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        return self.cls(self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state)


class BertForSequenceClassification(HubModel):
    """BERT with a classifier on the pooled [CLS] position: forward(input_ids,
    attention_mask=None, token_type_ids=None) -> logits (N, num_labels)."""
    model_type = "bert"
    defaults = BERT_DEFAULTS
    base_model_prefix = "bert"

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        p = config.get("classifier_dropout")
        self.dropout = nn.Dropout(config.hidden_dropout_prob if p is None else p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self._init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        pooled = self.bert(input_ids, attention_mask, token_type_ids).pooler_output
        return self.classifier(self.dropout(pooled))
