"""The Vision Transformer (Dosovitskiy et al. 2020) built from a Hugging Face config: ViTModel
and ViTForImageClassification, with `transformers`' module names.

    pixel_values (N, C, H, W)
      -> patch_embeddings.projection: Conv2d(C, E, patch, stride=patch) -> (N, P, E) patches
      -> [cls_token; patches] + position_embeddings -> dropout
      -> encoder.layer[i] (pre-norm): x + attention(layernorm_before(x)), then
         x + output.dense(act(intermediate.dense(layernorm_after(x))))
      -> layernorm

ViTModel returns ``BaseModelOutput(last_hidden_state, pooler_output)`` (the pooler: dense ->
tanh on the [CLS] position); ViTForImageClassification returns logits (N, num_labels) from
the classifier on the [CLS] position. Images must have the config's image_size (the position
embeddings are not interpolated).
"""
from .. import nn
from ..ops.join import cat
from ._layers import HubModel, activation, attend, check_heads, merge_heads, split_heads
from .bert import BaseModelOutput

__all__ = ["ViTModel", "ViTForImageClassification"]

VIT_DEFAULTS = {
    "model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02,
    "layer_norm_eps": 1e-12, "image_size": 224, "patch_size": 16, "num_channels": 3,
    "qkv_bias": True, "encoder_stride": 16, "pooler_act": "tanh",
}


def _pair(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v, v)


class ViTPatchEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.image_size, patch = _pair(config.image_size), _pair(config.patch_size)
        self.num_channels = config.num_channels
        self.num_patches = (self.image_size[0] // patch[0]) * (self.image_size[1] // patch[1])
        self.projection = nn.Conv2d(config.num_channels, config.hidden_size, patch, stride=patch)

    def forward(self, pixels):
        if pixels.dim() != 4 or tuple(pixels.shape[1:]) != (self.num_channels,
                                                            *self.image_size):
            raise ValueError(f"ViT: expected pixel_values of shape (N, {self.num_channels}, "
                             f"{self.image_size[0]}, {self.image_size[1]}), got "
                             f"{tuple(pixels.shape)}")
        return self.projection(pixels).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        from .. import creation
        self.cls_token = nn.Parameter(creation.zeros(1, 1, config.hidden_size))
        self.patch_embeddings = ViTPatchEmbeddings(config)
        self.position_embeddings = nn.Parameter(
            creation.zeros(1, self.patch_embeddings.num_patches + 1, config.hidden_size))
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        nn.init.trunc_normal_(self.cls_token, std=config.initializer_range)
        nn.init.trunc_normal_(self.position_embeddings, std=config.initializer_range)

    def forward(self, pixels):
        x = self.patch_embeddings(pixels)
        x = cat([self.cls_token.expand(x.shape[0], 1, x.shape[-1]), x], 1)
        return self.dropout(x + self.position_embeddings)


class ViTSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.hidden_size
        check_heads(width, config.num_attention_heads, "ViT")
        self.num_heads = config.num_attention_heads
        bias = config.get("qkv_bias", True)
        self.query = nn.Linear(width, width, bias=bias)
        self.key = nn.Linear(width, width, bias=bias)
        self.value = nn.Linear(width, width, bias=bias)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x):
        q, k, v = (split_heads(f(x), self.num_heads) for f in (self.query, self.key, self.value))
        return merge_heads(attend(q, k, v, None, self.dropout_p, self.training))


class ViTDenseOut(nn.Module):
    """dense -> dropout (the residual is added by the layer: ViT is pre-norm)."""
    def __init__(self, config, inner):
        super().__init__()
        self.dense = nn.Linear(inner, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        return self.dropout(self.dense(x))


class ViTAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = ViTSelfAttention(config)
        self.output = ViTDenseOut(config, config.hidden_size)

    def forward(self, x):
        return self.output(self.attention(x))


class ViTIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = activation(config.hidden_act, "ViT")

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class ViTLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = ViTAttention(config)
        self.layernorm_after = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = ViTIntermediate(config)
        self.output = ViTDenseOut(config, config.intermediate_size)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        return x + self.output(self.intermediate(self.layernorm_after(x)))


class ViTEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class ViTPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size,
                               config.get("pooler_output_size") or config.hidden_size)
        self.activation = activation(config.get("pooler_act", "tanh"), "ViT")

    def forward(self, hidden):
        return self.activation(self.dense(hidden[:, 0]))


class ViTModel(HubModel):
    """The ViT encoder. forward(pixel_values) -> BaseModelOutput(last_hidden_state (N, P+1, E),
    pooler_output (N, E) or None)."""
    model_type = "vit"
    defaults = VIT_DEFAULTS
    base_model_prefix = "vit"

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = ViTEmbeddings(config)
        self.encoder = ViTEncoder(config)
        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.pooler = ViTPooler(config) if add_pooling_layer else None
        self._init_weights()

    def forward(self, pixel_values):
        hidden = self.layernorm(self.encoder(self.embeddings(pixel_values)))
        return BaseModelOutput(hidden, self.pooler(hidden) if self.pooler is not None else None)


class ViTForImageClassification(HubModel):
    """ViT with a classifier on the [CLS] position: forward(pixel_values) -> logits
    (N, num_labels)."""
    model_type = "vit"
    defaults = VIT_DEFAULTS
    base_model_prefix = "vit"

    def __init__(self, config):
        super().__init__(config)
        self.vit = ViTModel(config, add_pooling_layer=False)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self._init_weights()

    def forward(self, pixel_values):
        return self.classifier(self.vit(pixel_values).last_hidden_state[:, 0])
