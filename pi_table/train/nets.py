"""The reader's two networks (PyTorch, training only) and their ONNX export.

Shapes and outputs are those :mod:`pi_table.vision.reader` expects.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


def cbr(cin: int, cout: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
    """3x3 convolution, batch norm, ReLU."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class DetectorNet(nn.Module):
    """CenterNet-style die detector (Zhou et al. 2019), stride-4 outputs, about 0.1 M weights.

    Input: Bx3xHxW float32 RGB 0..1 (H, W multiples of 32). Outputs: heat Bx1xH/4xW/4 (0..1),
    size Bx2xH/4xW/4 (box w, h in cells, >= 0), offset Bx2xH/4xW/4 (0..1 cells).
    """

    def __init__(self, width: float = 1):
        super().__init__()
        # width scales the backbone's channels (1: 24, 40, 64, 80 at strides 4, 8, 16, 32).
        c4, c8, c16, c32 = (int(round(n * width)) for n in (24, 40, 64, 80))
        self.s4 = nn.Sequential(cbr(3, 16, 2), cbr(16, c4, 2))
        self.s8 = nn.Sequential(cbr(c4, c8, 2), cbr(c8, c8))
        self.s16 = nn.Sequential(cbr(c8, c16, 2), cbr(c16, c16), cbr(c16, c16, dilation=2))
        self.s32 = nn.Sequential(cbr(c16, c32, 2), cbr(c32, c32), cbr(c32, c32, dilation=2))
        self.lat32 = nn.Conv2d(c32, 32, 1)
        self.lat16 = nn.Conv2d(c16, 32, 1)
        self.lat8 = nn.Conv2d(c8, 32, 1)
        self.lat4 = nn.Conv2d(c4, 32, 1)
        self.head = nn.Sequential(cbr(32, 24), nn.Conv2d(24, 5, 1))
        nn.init.constant_(self.head[-1].bias, 0.0)
        with torch.no_grad():
            self.head[-1].bias[0] = -4.0  # heat starts near 0 (focal-loss prior)

    def forward(self, x: torch.Tensor):
        f4 = self.s4(x)
        f8 = self.s8(f4)
        f16 = self.s16(f8)
        f32 = self.s32(f16)
        p = self.lat32(f32)
        p = self.lat16(f16) + F.interpolate(p, scale_factor=2.0, mode="nearest")
        p = self.lat8(f8) + F.interpolate(p, scale_factor=2.0, mode="nearest")
        p = self.lat4(f4) + F.interpolate(p, scale_factor=2.0, mode="nearest")
        out = self.head(p)
        heat = torch.sigmoid(out[:, 0:1])
        size = F.softplus(out[:, 1:3])
        offset = torch.sigmoid(out[:, 3:5])
        return heat, size, offset


class ClassifierNet(nn.Module):
    """Die-face classifier on SxS crops, with a box-refinement head.

    Input Bx3xSxS float32 RGB 0..1. Outputs logits B x classes, and box Bx4: the die's box in
    the crop's frame, (dx, dy) centre offset in crop sides and (lw, lh) log of width and height
    in crop sides (a second stage that corrects the detector's box, as in Faster R-CNN, Ren et
    al. 2015, which uses the same centre/log-size parametrisation).
    """

    def __init__(self, classes: int, width: float = 1, crop_size: int = 48):
        super().__init__()
        # width scales every layer's channels (1: 16, 32, 64, 96; cost grows as width squared).
        c = [int(round(n * width)) for n in (16, 32, 64, 96)]
        cells = max(1, crop_size // 16)  # the feature map is crop_size / 8; pooled by 2
        self.features = nn.Sequential(
            cbr(3, c[0]), nn.MaxPool2d(2),
            cbr(c[0], c[1]), cbr(c[1], c[1]), nn.MaxPool2d(2),
            cbr(c[1], c[2]), cbr(c[2], c[2]), nn.MaxPool2d(2),
            cbr(c[2], c[3]),
        )
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(c[3], classes)
        # Where the die is needs the layout, which global average pooling throws away: the
        # box head reads the pooled map (3x3 at 48 px crops) through a small bottleneck.
        self.where = nn.Sequential(nn.Conv2d(c[3], 16, 1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                                   nn.AdaptiveAvgPool2d(cells), nn.Flatten(), nn.Linear(16 * cells * cells, 4))

    def forward(self, x: torch.Tensor):
        f = self.features(x)
        box = self.where(f)
        g = F.adaptive_avg_pool2d(f, 1).flatten(1)
        return self.fc(self.drop(g)), box


class Residual(nn.Module):
    """Two 3x3 convolutions with batch norm and an identity shortcut (He et al. 2016)."""

    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(cbr(c, c), nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.body(x))


class NumeralNet(nn.Module):
    """Reads the numeral of a d8, d10 or percentile d10 from an SxS crop (64 px by default).

    Input Bx3xSxS float32 RGB 0..1; output logits B x classes. The crop is first turned to
    normalised grey, its high-pass (grey minus its 7x7 local mean) and that high-pass's
    magnitude, so that light ink on a dark die and dark ink on a light one look alike; with
    ``colour`` the normalised RGB channels go in too (dark red ink on a black die differs from
    it in hue more than in brightness). A small residual net (He et al. 2016): a stride-2 stem,
    then stages of ``channels`` each halving the resolution, global average pooling.

    Without the grey and high-pass input the net learnt rotated numerals on coloured dice very
    slowly (600 renders, 300 steps: 8% of numerals right from RGB, 41% from grey and high-pass).
    """

    def __init__(self, classes: int, channels=(24, 48, 96, 160), blocks=(1, 1, 2, 1), colour: bool = True,
                 planes: int = 0):
        super().__init__()
        self.colour = bool(colour)
        #: Input planes after RGB passed through as they are (the cocked model's die position, CoordConv).
        self.planes = int(planes)
        layers: list[nn.Module] = [cbr((6 if colour else 3) + self.planes, channels[0], 2)]
        for i, c in enumerate(channels):
            if i:
                layers.append(cbr(channels[i - 1], c, 2))
            layers += [Residual(c) for _ in range(blocks[i])]
        self.features = nn.Sequential(*layers)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(channels[-1], classes)

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        """Bx(3 + planes)xSxS RGB 0..1 (then the :attr:`planes`, passed through) -> (grey, high-pass,
        |high-pass|[, RGB][, planes]), each crop normalised."""
        if not self.planes:
            return self._prepare(x)
        return torch.cat([self._prepare(x[:, :3]), x[:, 3:]], dim=1)

    def _prepare(self, x: torch.Tensor) -> torch.Tensor:
        g = x.mean(dim=1, keepdim=True)
        g = (g - g.mean(dim=(2, 3), keepdim=True)) / (g.std(dim=(2, 3), keepdim=True) + 0.02)
        hp = g - F.avg_pool2d(g, 7, 1, 3, count_include_pad=False)
        hp = hp / (hp.std(dim=(2, 3), keepdim=True) + 0.02)
        out = [g, hp, hp.abs()]
        if self.colour:
            out.append((x - x.mean(dim=(1, 2, 3), keepdim=True)) / (x.std(dim=(1, 2, 3), keepdim=True) + 0.02))
        return torch.cat(out, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.features(self.prepare(x))
        return self.fc(self.drop(F.adaptive_avg_pool2d(f, 1).flatten(1)))


def export_detector(net: DetectorNet, path: Path, size: int = 320) -> None:
    """Write ``net`` as ONNX: input ``image`` (dynamic H, W), outputs heat, size_logit (the box
    sizes before their softplus, :func:`raw_size_output`), offset."""
    net.eval()
    dummy = torch.zeros(1, 3, size, size)
    torch.onnx.export(
        net, (dummy,), str(path), input_names=["image"], output_names=["heat", "size", "offset"],
        dynamic_axes={"image": {2: "h", 3: "w"}, "heat": {2: "gh", 3: "gw"}, "size": {2: "gh", 3: "gw"},
                      "offset": {2: "gh", 3: "gw"}},
        opset_version=17, dynamo=False,
    )
    raw_size_output(path)


def raw_size_output(path: Path) -> bool:
    """Make a detector ONNX file give its box sizes before their softplus, in place: the ``Softplus``
    node that makes output ``size`` is taken out and its input becomes output ``size_logit``
    (1x2xH/4xW/4 float32). The reader takes the softplus of the peaks alone, the same values bit
    for bit (:func:`pi_table.vision.reader.softplus_at`): the whole map's cost 0.34 of a
    320-pixel look's 5 ms here (models/history/detector.md, "Softplus at the peaks").

    Returns:
        True when the file was changed; False when it has no ``Softplus`` making ``size`` (already
        changed, so running it twice changes nothing).
    """
    import onnx

    model = onnx.load(str(path))
    graph = model.graph
    softplus = next((n for n in graph.node if n.op_type == "Softplus" and list(n.output) == ["size"]), None)
    if softplus is None:
        return False
    before = softplus.input[0]
    for node in graph.node:
        if node is not softplus and before in node.input:
            return False  # the sizes before the softplus feed another node too: left as it is
    for node in graph.node:
        for i, name in enumerate(node.output):
            if name == before:
                node.output[i] = "size_logit"
    graph.node.remove(softplus)
    output = next(o for o in graph.output if o.name == "size")
    output.name = "size_logit"
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return True


def export_classifier(net: nn.Module, path: Path, size: int) -> None:
    """Write ``net`` as ONNX: input ``crops`` (dynamic batch), outputs ``logits`` and, for a
    :class:`ClassifierNet`, ``box``."""
    net.eval()
    dummy = torch.zeros(2, 3 + getattr(net, "planes", 0), size, size)
    outputs = ["logits", "box"] if isinstance(net, ClassifierNet) else ["logits"]
    torch.onnx.export(
        net, (dummy,), str(path), input_names=["crops"], output_names=outputs,
        dynamic_axes={name: {0: "n"} for name in ["crops", *outputs]}, opset_version=17, dynamo=False,
    )


def quantize_int8(src: Path, dst: Path, batches, reduce_range: bool = False) -> None:
    """Write ``src`` (a float ONNX classifier, input ``crops``) to ``dst`` with int8 weights
    (per output channel) and uint8 activations, as onnxruntime's static quantization in
    QDQ format does (Jacob et al. 2018, "Quantization and Training of Neural Networks for
    Efficient Integer-Arithmetic-Only Inference"). ``batches`` are Nx3xSxS float32 crops in
    [0, 1] whose activation ranges (min/max) set the scales; deterministic for the same
    batches. A quarter of the float model's size, and faster on CPU.

    ``reduce_range``: weights in 7 bits. An x86 CPU without VNNI multiplies uint8 by
    int8 in pairs summed into int16 (AVX2's ``vpmaddubsw``), which saturates when both are near
    full range: a first layer fed raw pixels (uint8 0..255, the whole range) then reads wrong
    (the die classifier quantised without it agreed with its float self on 96% of crops; with
    it, on all). onnxruntime's quantization guide recommends it for such CPUs; ARM's dot
    products (a Raspberry Pi) do not saturate, and lose only the eighth bit."""
    import tempfile

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.it = iter(batches)

        def get_next(self):
            batch = next(self.it, None)
            return None if batch is None else {"crops": np.ascontiguousarray(batch, np.float32)}

    with tempfile.TemporaryDirectory() as tmp:
        pre = Path(tmp) / "pre.onnx"
        quant_pre_process(str(src), str(pre))
        quantize_static(str(pre), str(dst), Batches(), quant_format=QuantFormat.QDQ, per_channel=True,
                        weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, reduce_range=reduce_range)
    pad_first_conv(dst)


def pad_first_conv(path: Path, multiple: int = 4) -> bool:
    """Give the first convolution of a QDQ model (:func:`quantize_int8`'s) a multiple of ``multiple``
    input channels, in place: its quantized input gets zero channels (an ONNX ``Pad``) and its int8
    weights zeros for them. Every integer sum, and so every output, stays as it was, bit for bit:
    the added products are all 0 whatever the input's zero point. (With full 8-bit weights on an
    x86 CPU without VNNI the sums themselves saturate in 16 bits, and the zero channels change
    which products are summed together: there the outputs move a little; with ``reduce_range``
    weights, as the classifiers', they stay bit for bit there too.)

    Why: onnxruntime (1.32, x86 with AVX-512 VNNI) runs an int8 3x3 convolution over 3 input
    channels (the die classifier's first layer, on RGB crops) slowly: 2.7 of the 7.7 ms a
    20-crop batch took on one thread here; with 4 channels the layer took 1.9 ms and the batch
    6.7 ms (and the 6-plane numeral model, at 8, about 5% less). Throwaway timings with
    onnxruntime's profiler, models/history/classifier.md ("Four input channels").

    Args:
        path: an ONNX model whose first ``Conv`` reads a ``DequantizeLinear`` of its input and
            of int8 weights (QDQ format).
        multiple: the channel count to round up to.

    Returns:
        True when the model was changed; False when the first convolution already had such a
        channel count (so running it twice changes nothing), is not QDQ, or shares its
        dequantized input with another node.
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    conv = next((n for n in graph.node if n.op_type == "Conv"), None)
    made_by = {out: n for n in graph.node for out in n.output}
    x_dq, w_dq = (made_by.get(name) for name in conv.input[:2]) if conv is not None else (None, None)
    weights = {i.name: i for i in graph.initializer}
    if not (x_dq and w_dq and x_dq.op_type == w_dq.op_type == "DequantizeLinear" and w_dq.input[0] in weights):
        return False
    if any(x_dq.output[0] in n.input for n in graph.node if n is not conv):
        return False  # the input's dequantized values feed another node too, which must not see the zeros
    w_init = weights[w_dq.input[0]]
    w = numpy_helper.to_array(w_init)
    channels = -(-w.shape[1] // multiple) * multiple
    if channels == w.shape[1]:
        return False
    padded = np.zeros((w.shape[0], channels) + w.shape[2:], w.dtype)
    padded[:, : w.shape[1]] = w
    w_init.CopyFrom(numpy_helper.from_array(padded, w_init.name))
    pads = f"{conv.name}_input_channel_pads"
    graph.initializer.append(numpy_helper.from_array(np.array([0, 0, 0, 0, 0, channels - w.shape[1], 0, 0], np.int64), pads))
    pad = helper.make_node("Pad", [x_dq.input[0], pads], [f"{conv.name}_input_padded"], mode="constant",
                           name=f"{conv.name}_input_channel_pad")
    x_dq.input[0] = pad.output[0]
    graph.node.insert(list(graph.node).index(x_dq), pad)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return True


def export_int8(net: nn.Module, path: Path, size: int, batches, reduce_range: bool = False) -> None:
    """Write ``net`` as :func:`export_classifier` does, with int8 weights (:func:`quantize_int8` of
    a temporary float export; ``batches`` and ``reduce_range`` as there)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        float_path = Path(tmp) / "float.onnx"
        export_classifier(net, float_path, size)
        quantize_int8(float_path, path, batches, reduce_range=reduce_range)


def is_quantized(path: Path) -> bool:
    """True when the ONNX model at ``path`` holds quantized (QDQ) weights (:func:`quantize_int8`)."""
    import onnx

    return any(node.op_type == "DequantizeLinear" for node in onnx.load(str(path)).graph.node)


def onnx_weights(path: Path) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The float32 weights and biases of every ``Conv`` and ``Gemm`` of the ONNX model at ``path``,
    in graph order: int8 (QDQ) weights and int32 biases dequantized, ``(q - zero point) * scale``
    along each ``DequantizeLinear``'s axis. A first convolution padded by :func:`pad_first_conv`
    keeps its zero input channels (the caller trims them).

    Returns:
        ``[(weight, bias or None), ...]``: OxIxKxK for a convolution, OxI for a ``Gemm`` (its
        ``transB`` 1, as :func:`export_classifier` writes a Linear layer).

    Raises:
        ValueError: when the file is not an ONNX model, or naming the node, when a weight is neither an
            initializer nor a dequantized one.
    """
    import onnx
    from onnx import numpy_helper

    try:
        graph = onnx.load(str(path)).graph
    except Exception as e:  # noqa: BLE001 - protobuf's decode errors and the like: one message
        raise ValueError(f"{path} is not an ONNX model ({type(e).__name__})") from e
    init = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    made_by = {out: n for n in graph.node for out in n.output}

    def value(name: str, node) -> np.ndarray:
        if name in init:
            return init[name].astype(np.float32)
        dq = made_by.get(name)
        if dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] not in init:
            raise ValueError(f"{path}: {node.name}'s input {name} is not a stored weight")
        q = init[dq.input[0]].astype(np.float32)
        scale = init[dq.input[1]].astype(np.float32)
        zero = init[dq.input[2]].astype(np.float32) if len(dq.input) > 2 else np.zeros_like(scale)
        axis = next((a.i for a in dq.attribute if a.name == "axis"), 1)
        if scale.ndim:  # per channel along axis
            shape = [1] * q.ndim
            shape[axis] = -1
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        return (q - zero) * scale

    return [(value(n.input[1], n), value(n.input[2], n) if len(n.input) > 2 else None)
            for n in graph.node if n.op_type in ("Conv", "Gemm")]


def warm_start(net: nn.Module, path: Path, crops: torch.Tensor, fc_rows: list[int] | None = None) -> None:
    """Start ``net`` from the ONNX model at ``path`` (:func:`export_classifier`'s,
    :func:`quantize_int8`'s or :func:`export_detector`'s export of a net of the same shape), in
    place, so that training goes on from it (a warm restart, Loshchilov and Hutter 2017, "SGDR").

    The export folded each batch norm into the convolution before it (weight W, bias b). Here each
    such convolution keeps W, scaled to the standard deviation a fresh layer starts with (batch norm
    makes the net blind to that scale), and its batch norm is set from the statistics of the
    convolution's outputs over ``crops``: mean m and standard deviation s per channel, so that
    gamma = s, beta = m + b and the running statistics give back W x + b. A convolution with no
    batch norm after it (a detector's lateral and output layers) and the final fully connected
    layer, if the net has one (``net.fc``), take the file's weights and biases as they are. With
    ``crops`` the training's own, the net in training and in eval mode reads as the exported model
    did (before its int8 rounding).

    Args:
        net: a :class:`NumeralNet` or :class:`DetectorNet` whose layers match the file's.
        path: the ONNX model.
        crops: Bx3xHxW float32 RGB 0..1 training inputs for the statistics (a few hundred crops,
            or a few dozen detector patches).
        fc_rows: for a net that reads more classes than the file (new classes added), the row of
            ``net.fc`` each of the file's classes goes to, in the file's order; the other rows keep
            their fresh weights, their biases set to the file's mean bias. None: the same classes.

    Raises:
        ValueError: when the file's layers do not match the net's, naming the first that differs.
    """
    weights = onnx_weights(path)
    mods = list(net.modules())
    convs = [m for m in mods if isinstance(m, nn.Conv2d)]
    # a convolution's batch norm is the module right after it (cbr's Sequential: conv, norm, ReLU)
    norm_of = {id(m): mods[i + 1] for i, m in enumerate(mods[:-1])
               if isinstance(m, nn.Conv2d) and isinstance(mods[i + 1], nn.BatchNorm2d)}
    fc = getattr(net, "fc", None)
    if len(weights) != len(convs) + (fc is not None):
        raise ValueError(f"{path}: {len(weights)} weighted layers, the net has {len(convs)} convolutions"
                         + (" and a fc" if fc is not None else ""))
    # a padded first convolution's zero input channels dropped
    layers = [(np.ascontiguousarray(w[:, : conv.in_channels]), b) for conv, (w, b) in zip(convs, weights)]
    for i, (conv, (w, _)) in enumerate(zip(convs, layers)):
        if tuple(w.shape) != tuple(conv.weight.shape):
            raise ValueError(f"{path}: layer {i} has weights {tuple(w.shape)}, the net {tuple(conv.weight.shape)}")
    if fc is not None:
        fc_shape, out = tuple(weights[-1][0].shape), fc.weight.shape[0]
        if fc_rows is not None:
            if len(set(fc_rows)) != len(fc_rows) or not all(0 <= r < out for r in fc_rows):
                raise ValueError(f"fc_rows {fc_rows} are not distinct rows of the net's {out}")
            if fc_shape[0] != len(fc_rows):
                raise ValueError(f"{path}: fc gives {fc_shape[0]} scores, {len(fc_rows)} classes named for them")
        wanted = (out if fc_rows is None else len(fc_rows), fc.weight.shape[1])
        if fc_shape != wanted:
            raise ValueError(f"{path}: fc has weights {fc_shape}, the net {wanted}")
    was_training = net.training
    outputs: dict = {}
    hooks = [conv.register_forward_hook(lambda m, _, out: outputs.__setitem__(m, out.detach())) for conv in convs]
    with torch.no_grad():
        if fc is not None:  # the file's rows where they go; a new class's row keeps its fresh weights
            rows = list(range(fc.weight.shape[0])) if fc_rows is None else list(fc_rows)
            fc.bias.fill_(float(np.mean(weights[-1][1])))
            fc.weight[rows] = torch.from_numpy(weights[-1][0])
            fc.bias[rows] = torch.from_numpy(weights[-1][1])
        for conv, (w, b) in zip(convs, layers):  # the layers with no batch norm first: the file's as they are
            if id(conv) not in norm_of:
                conv.weight.copy_(torch.from_numpy(w))
                if b is not None:
                    conv.bias.copy_(torch.from_numpy(b))
        for conv, (w, b) in zip(convs, layers):
            norm = norm_of.get(id(conv))
            if norm is None:
                continue
            w = torch.from_numpy(w)
            b = torch.from_numpy(b if b is not None else np.zeros(conv.out_channels, np.float32))
            fresh = math.sqrt(2.0 / (conv.in_channels * conv.kernel_size[0] * conv.kernel_size[1]))  # He et al. 2015
            c = fresh / float(w.std())
            conv.weight.copy_(c * w)
            # for now (eval mode, running mean 0 and variance 1, gamma 1 / c, beta b) the layer gives W x + b
            norm.reset_running_stats()
            norm.running_var.fill_(1.0 - norm.eps)
            norm.weight.fill_(1.0 / c)
            norm.bias.copy_(b)
            net.eval()
            net(crops)  # every layer before this one is already the file's, so its inputs are right
            z = outputs[conv]  # c W x
            mean, std = z.mean(dim=(0, 2, 3)), z.std(dim=(0, 2, 3)).clamp_min(1e-6)
            norm.running_mean.copy_(mean)
            norm.running_var.copy_(std**2 - norm.eps)
            norm.weight.copy_(std / c)
            norm.bias.copy_(mean / c + b)
    for hook in hooks:
        hook.remove()
    net.train(was_training)
