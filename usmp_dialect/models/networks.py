"""The synthetic networks: architectures with random weights, built with `ModelBuilder`.

A network function takes the weight seed and its options and returns the builder and the
output activation. The MLPerf Tiny models themselves are real (examples/mlperf_tiny); what is
built here is what no small bundled file gives, a network whose size is a parameter.
"""

from __future__ import annotations

from usmp_dialect.models.builder import Activation, ModelBuilder


def _make_divisible(value: float, divisor: int = 8) -> int:
    """Keras' channel rounding: the nearest multiple of `divisor`, at most 10 % below."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


EXPORT_STYLES = ("tflite", "keras", "pytorch")


def _correct_pad(size: int) -> tuple[int, int]:
    """Keras' `imagenet_utils.correct_pad` for a 3x3 kernel: (before, after)."""
    return (size % 2, 1)


def mobilenetv2(
    seed: int,
    resolution: int = 224,
    width_multiplier: float = 1.0,
    classes: int = 1000,
    export: str = "tflite",
) -> tuple[ModelBuilder, Activation]:
    """MobileNetV2 image classification (Keras' layout): RxRx3 -> classes, softmax.

    `export`: how the converter wrote the stride-2 layers. `tflite`: SAME padding everywhere.
    `keras`: as `keras.applications.MobileNetV2` converts, a ZeroPadding2D (PAD, Keras'
    `correct_pad`) before each stride-2 depthwise convolution, which is VALID. `pytorch`: as a
    PyTorch model converts, an NCHW 1x3xRxR input transposed to NHWC (TRANSPOSE) at the head,
    and an explicit PAD of 1 on every side before each stride-2 3x3 convolution (VALID; the
    stride-1 ones, whose symmetric padding equals SAME, stay SAME)."""
    if resolution < 32:
        raise ValueError(f"resolution must be at least 32 (got {resolution})")
    if width_multiplier <= 0:
        raise ValueError(f"width_multiplier must be positive (got {width_multiplier})")
    if classes < 1:
        raise ValueError(f"classes must be at least 1 (got {classes})")
    if export not in EXPORT_STYLES:
        raise ValueError(f"export must be one of {', '.join(EXPORT_STYLES)} (got '{export}')")
    pytorch = export == "pytorch"
    shape = (1, 3, resolution, resolution) if pytorch else (1, resolution, resolution, 3)
    net = ModelBuilder(seed, shape)
    x = net.transpose(net.input, (0, 2, 3, 1)) if pytorch else net.input

    def strided(y: Activation, channels: int, depthwise: bool) -> Activation:
        """A stride-2 3x3 convolution as `export` writes it."""
        if export == "tflite" or (export == "keras" and not depthwise):
            return net.conv(y, channels, 3, 2, "relu6", depthwise=depthwise)
        _, height, width, _ = y.shape
        pads = ((1, 1), (1, 1)) if pytorch else (_correct_pad(height), _correct_pad(width))
        padded = net.pad(y, pads)
        return net.conv(padded, channels, 3, 2, "relu6", depthwise=depthwise, same=False)

    channels = _make_divisible(32 * width_multiplier)
    x = strided(x, channels, depthwise=False)
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2)]
    settings += [(6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    for expansion, base_channels, repeats, first_stride in settings:
        out_channels = _make_divisible(base_channels * width_multiplier)
        for index in range(repeats):
            stride = first_stride if index == 0 else 1
            y = x
            if expansion != 1:
                y = net.conv(y, channels * expansion, 1, 1, "relu6")
            y = strided(y, 0, depthwise=True) if stride == 2 else net.depthwise(y, 1, "relu6")
            y = net.conv(y, out_channels, 1, 1, "none")
            x = net.add(x, y) if stride == 1 and channels == out_channels else y
            channels = out_channels
    last_channels = _make_divisible(1280 * max(1.0, width_multiplier))
    x = net.conv(x, last_channels, 1, 1, "relu6")
    x = net.flatten(net.global_average_pool(x))
    return net, net.softmax(net.fully_connected(x, classes, "none"))
