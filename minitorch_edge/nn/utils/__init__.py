"""nn.utils: helpers that act on a model's parameters and gradients rather than on data, and the
padding/packing of variable-length sequences for the recurrent layers.

clip_grad.py           clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_
convert_parameters.py  parameters_to_vector, vector_to_parameters
rnn.py                 PackedSequence, pad_sequence, pack_padded_sequence, pad_packed_sequence,
                       pack_sequence, unpad_sequence, unpack_sequence (``nn.utils.rnn.*``)
"""
from . import rnn  # noqa: F401
from .clip_grad import (clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .rnn import (PackedSequence, pack_padded_sequence, pack_sequence,  # noqa: F401
                  pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "rnn", "PackedSequence",
           "pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "pad_sequence",
           "unpack_sequence", "unpad_sequence"]
