"""Multiply-accumulates of a TFLite operator, from its static shapes (the `macs` of the
`usmp.operator` attribute on its function).

Counted as the usual model profilers do: every tap of every window, padding included. CONV_2D:
output elements x filter height x width x input channels (the filter is `[O, H, W, I]`);
DEPTHWISE_CONV_2D: output elements x filter height x width (one input channel per output
channel); FULLY_CONNECTED: output elements x input depth (the weights are `[units, depth]`);
UNIDIRECTIONAL_SEQUENCE_LSTM: output elements x 4 gates x (input features + units), the input
and recurrent products of every gate at every step. Every other operator counts 0: pooling,
elementwise arithmetic, softmax and data movement are not multiply-accumulates.
"""

from __future__ import annotations

import math

from usmp_dialect.frontends.tflite.reader import Graph, Operator


def operator_macs(graph: Graph, op: Operator) -> int:
    """The multiply-accumulates of one run of `op` (0 for operators that do none)."""
    if op.opcode == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        return _lstm_macs(graph, op)
    if op.opcode not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
        return 0
    if len(op.inputs) < 2 or op.inputs[1] < 0 or not op.outputs or op.outputs[0] < 0:
        return 0
    weights = graph.tensors[op.inputs[1]].shape
    outputs = math.prod(graph.tensors[op.outputs[0]].shape)
    if op.opcode == "CONV_2D" and len(weights) == 4:
        return outputs * math.prod(weights[1:])
    if op.opcode == "DEPTHWISE_CONV_2D" and len(weights) == 4:
        return outputs * weights[1] * weights[2]
    if op.opcode == "FULLY_CONNECTED" and weights:
        return outputs * weights[-1]
    return 0


def _lstm_macs(graph: Graph, op: Operator) -> int:
    if len(op.inputs) < 9 or min(op.inputs[0], op.inputs[8]) < 0 or not op.outputs:
        return 0
    features = graph.tensors[op.inputs[0]].shape[-1:]
    units = graph.tensors[op.inputs[8]].shape[:1]  # recurrent-to-output weights [units, units]
    if not features or not units or op.outputs[0] < 0:
        return 0
    outputs = math.prod(graph.tensors[op.outputs[0]].shape)
    return outputs * 4 * (features[0] + units[0])
