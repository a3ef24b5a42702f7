"""The zoo's model list: every architecture, how to build it with random weights, and its inputs.

Nothing here downloads anything: torchvision models get weights=None (and weights_backbone=None),
timm models pretrained=False, transformers models are built from Config objects. Every builder seeds
torch first, so the exporter (CPU) and the PyTorch timing worker (GPU) build the same weights.

A spec's inputs have a symbolic leading dim ("batch"); every other dim is fixed (sequence lengths and
image sizes included), so `ingot bench --batch N` binds everything.
"""
import dataclasses
from typing import Callable, List, Optional, Tuple

import torch

IMAGE = "image"  # float32 N(0,1) in the numerics check
TOKENS = "tokens"  # int64 token ids in [1, min(vocab, 1000))
AUDIO = "audio"  # float32 N(0,1) (raw waveform or log-mel features)

SEQ = 128  # text models: fixed sequence length


@dataclasses.dataclass
class Input:
    name: str
    shape: Tuple[int, ...]  # without the batch dim
    kind: str = IMAGE
    vocab: int = 1000  # TOKENS: ids are drawn from [1, min(vocab, 1000))

    @property
    def dtype(self):
        return torch.int64 if self.kind == TOKENS else torch.float32


@dataclasses.dataclass
class Spec:
    name: str
    source: str  # torchvision | timm | transformers
    family: str
    make: Callable[[], torch.nn.Module]
    inputs: List[Input]
    batches: Tuple[int, int] = (1, 64)
    channels_last: bool = False  # also time PyTorch in channels_last (image models)
    cost: float = 1.0  # rough GPU-side cost (export excluded), for balancing shards
    note: str = ""
    export_kwargs: Optional[dict] = None


def image(h=224, w=None, name="input"):
    return [Input(name, (3, h, w or h), IMAGE)]


# ---- wrappers: one tensor (or a tuple of tensors) out, whatever the library returns ------------------


class FirstOutput(torch.nn.Module):
    """Keeps one output: a dict's key, a ModelOutput's attribute, or element 0 of a tuple."""

    def __init__(self, m, key=None):
        super().__init__()
        self.m = m
        self.key = key

    def forward(self, *xs):
        y = self.m(*xs)
        if self.key is not None:
            return y[self.key]
        if isinstance(y, (tuple, list)):
            return y[0]
        return y


class DictToTuple(torch.nn.Module):
    """A detection backbone returns an OrderedDict of feature maps: export them as a tuple."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return tuple(self.m(x).values())


class HFHidden(torch.nn.Module):
    """A transformers model called with keyword inputs; returns last_hidden_state (or logits)."""

    def __init__(self, m, arg, key="last_hidden_state", ones_mask=False):
        super().__init__()
        self.m = m
        self.arg = arg
        self.key = key
        self.ones_mask = ones_mask

    def forward(self, x):
        kw = {self.arg: x}
        if self.ones_mask:
            # transformers 5 looks for packed sequences in the position ids when no mask is given, with
            # torch.diff, which has no ONNX export; an explicit all-ones mask skips that
            kw["attention_mask"] = torch.ones_like(x)
        return getattr(self.m(**kw), self.key)


# ---- builders -------------------------------------------------------------------------------------------


def tv(fn, **kw):
    def make():
        import torchvision

        return getattr(torchvision.models, fn)(weights=None, **kw)

    return make


def tv_seg(fn):
    def make():
        import torchvision

        return FirstOutput(getattr(torchvision.models.segmentation, fn)(weights=None, weights_backbone=None), "out")

    return make


def tv_det_backbone(fn):
    def make():
        import torchvision

        det = getattr(torchvision.models.detection, fn)(weights=None, weights_backbone=None)
        return DictToTuple(det.backbone)

    return make


def timm_model(name, **kw):
    def make():
        import timm

        return timm.create_model(name, pretrained=False, **kw)

    return make


def hf(model_cls, config_cls, arg="input_ids", key="last_hidden_state", wrap=None, ones_mask=False, **cfg):
    def make():
        import transformers

        config = getattr(transformers, config_cls)(**cfg)
        m = getattr(transformers, model_cls)(config)
        if wrap:
            m = wrap(m)
        return HFHidden(m, arg, key, ones_mask)

    return make


def tokens(vocab):
    return [Input("input_ids", (SEQ,), TOKENS, vocab)]


# albert's default config is albert-xxlarge (hidden 4096); albert-base's sizes instead
ALBERT_BASE = dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072)
# DebertaV2Config's defaults are deberta-v2-xlarge; deberta-v3-base's config (relative attention with
# log buckets, c2p + p2c, shared keys) instead
DEBERTA_V3_BASE = dict(
    vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
    max_position_embeddings=512, relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
    share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False, max_relative_positions=-1,
    layer_norm_eps=1e-7, type_vocab_size=0)


def _specs():
    S = Spec
    seg = (1, 16)
    L = [
        # torchvision classification: one or more of every family
        S("resnet50", "torchvision", "resnet", tv("resnet50"), image(), channels_last=True),
        S("resnext50_32x4d", "torchvision", "resnext", tv("resnext50_32x4d"), image(), channels_last=True),
        S("wide_resnet50_2", "torchvision", "wide_resnet", tv("wide_resnet50_2"), image(), channels_last=True,
          cost=1.3),
        S("vgg16_bn", "torchvision", "vgg", tv("vgg16_bn"), image(), channels_last=True, cost=1.6),
        S("densenet121", "torchvision", "densenet", tv("densenet121"), image(), channels_last=True, cost=1.3),
        S("mobilenet_v2", "torchvision", "mobilenet_v2", tv("mobilenet_v2"), image(), channels_last=True),
        S("mobilenet_v3_large", "torchvision", "mobilenet_v3", tv("mobilenet_v3_large"), image(),
          channels_last=True),
        S("efficientnet_b0", "torchvision", "efficientnet", tv("efficientnet_b0"), image(), channels_last=True),
        S("efficientnet_v2_s", "torchvision", "efficientnet_v2", tv("efficientnet_v2_s"), image(384),
          channels_last=True, cost=1.3, note="384x384 (its eval size)"),
        S("regnet_y_1_6gf", "torchvision", "regnet", tv("regnet_y_1_6gf"), image(), channels_last=True),
        S("convnext_tiny", "torchvision", "convnext", tv("convnext_tiny"), image(), channels_last=True),
        S("shufflenet_v2_x1_0", "torchvision", "shufflenet", tv("shufflenet_v2_x1_0"), image(),
          channels_last=True),
        S("squeezenet1_1", "torchvision", "squeezenet", tv("squeezenet1_1"), image(), channels_last=True),
        S("mnasnet1_0", "torchvision", "mnasnet", tv("mnasnet1_0"), image(), channels_last=True),
        S("googlenet", "torchvision", "googlenet", tv("googlenet", aux_logits=False, init_weights=True), image(),
          channels_last=True, note="no aux heads"),
        S("inception_v3", "torchvision", "inception", tv("inception_v3", aux_logits=False, init_weights=True),
          image(299), channels_last=True, note="299x299, no aux head"),
        S("vit_b_16", "torchvision", "vit", tv("vit_b_16"), image(), channels_last=True),
        S("swin_t", "torchvision", "swin", tv("swin_t"), image(), channels_last=True),
        S("maxvit_t", "torchvision", "maxvit", tv("maxvit_t"), image(), channels_last=True, cost=1.3),
        # torchvision segmentation at 1024x512 (width x height)
        S("fcn_resnet50", "torchvision", "fcn", tv_seg("fcn_resnet50"), image(512, 1024), seg, channels_last=True,
          cost=2.5, note="1024x512, batch 16"),
        S("deeplabv3_mobilenet_v3_large", "torchvision", "deeplabv3", tv_seg("deeplabv3_mobilenet_v3_large"),
          image(512, 1024), seg, channels_last=True, cost=2.0, note="1024x512, batch 16"),
        S("lraspp_mobilenet_v3_large", "torchvision", "lraspp", tv_seg("lraspp_mobilenet_v3_large"),
          image(512, 1024), seg, channels_last=True, cost=1.6, note="1024x512, batch 16"),
        # torchvision detection: the backbones (the heads' box decoding and NMS are not a tensor program)
        S("fasterrcnn_resnet50_fpn_backbone", "torchvision", "detection backbone",
          tv_det_backbone("fasterrcnn_resnet50_fpn"), image(640), channels_last=True, cost=2.0,
          note="ResNet-50 (FrozenBatchNorm) + FPN, 640x640, 5 feature maps"),
        S("fasterrcnn_mobilenet_v3_large_fpn_backbone", "torchvision", "detection backbone",
          tv_det_backbone("fasterrcnn_mobilenet_v3_large_fpn"), image(640), channels_last=True, cost=1.3,
          note="MobileNetV3 + FPN, 640x640"),
        S("ssdlite320_mobilenet_v3_large_backbone", "torchvision", "detection backbone",
          tv_det_backbone("ssdlite320_mobilenet_v3_large"), image(320), channels_last=True,
          note="MobileNetV3 + SSDLite extra layers, 320x320, 6 feature maps"),
        # timm
        S("timm_deit_small", "timm", "deit (ViT)", timm_model("deit_small_patch16_224"), image(), channels_last=True),
        S("timm_mobilevit_s", "timm", "mobilevit (hybrid)", timm_model("mobilevit_s"), image(256),
          channels_last=True, note="256x256"),
        S("timm_levit_128s", "timm", "levit (hybrid)", timm_model("levit_128s"), image(), channels_last=True),
        S("timm_coat_lite_tiny", "timm", "coat (hybrid)", timm_model("coat_lite_tiny"), image(), channels_last=True),
        S("timm_pvt_v2_b0", "timm", "pvt_v2 (hybrid)", timm_model("pvt_v2_b0"), image(), channels_last=True),
        S("timm_mixnet_s", "timm", "mixnet", timm_model("mixnet_s"), image(), channels_last=True),
        S("timm_ghostnet_100", "timm", "ghostnet", timm_model("ghostnet_100"), image(), channels_last=True),
        S("timm_mobilenetv3_large_100", "timm", "mobilenetv3", timm_model("mobilenetv3_large_100"), image(),
          channels_last=True),
        S("timm_efficientnet_b0", "timm", "efficientnet", timm_model("efficientnet_b0"), image(), channels_last=True),
        S("timm_convnextv2_atto", "timm", "convnextv2", timm_model("convnextv2_atto"), image(), channels_last=True),
        S("timm_regnety_016", "timm", "regnety", timm_model("regnety_016"), image(), channels_last=True),
        S("timm_resnet50d", "timm", "resnet-d", timm_model("resnet50d"), image(), channels_last=True),
        S("timm_resnetv2_50x1_bit", "timm", "resnetv2 (StdConv)", timm_model("resnetv2_50x1_bit"), image(),
          channels_last=True),
        S("timm_poolformer_s12", "timm", "poolformer", timm_model("poolformer_s12"), image(), channels_last=True),
        S("timm_hrnet_w18_small", "timm", "hrnet", timm_model("hrnet_w18_small"), image(), channels_last=True),
        # transformers, from Config objects
        S("hf_bert", "transformers", "bert", hf("BertModel", "BertConfig", add_pooling_layer=False),
          tokens(30522), note="bert-base config, seq 128"),
        S("hf_roberta", "transformers", "roberta", hf("RobertaModel", "RobertaConfig"), tokens(50265),
          note="roberta-base config, seq 128"),
        S("hf_distilbert", "transformers", "distilbert", hf("DistilBertModel", "DistilBertConfig"), tokens(30522),
          note="distilbert-base config, seq 128"),
        S("hf_albert", "transformers", "albert", hf("AlbertModel", "AlbertConfig", **ALBERT_BASE), tokens(30000),
          note="albert-base sizes (the default config is xxlarge), seq 128"),
        S("hf_electra", "transformers", "electra", hf("ElectraModel", "ElectraConfig"), tokens(30522),
          note="electra-small config (the default), seq 128"),
        S("hf_deberta_v3", "transformers", "deberta", hf("DebertaV2Model", "DebertaV2Config", **DEBERTA_V3_BASE),
          tokens(128100), note="deberta-v3-base config (the default is v2-xlarge), seq 128"),
        S("hf_t5_encoder", "transformers", "t5 (encoder)", hf("T5EncoderModel", "T5Config"), tokens(32128),
          note="t5-small config, encoder only, seq 128"),
        S("hf_gpt2", "transformers", "gpt2 (decoder)", hf("GPT2Model", "GPT2Config", ones_mask=True, use_cache=False),
          tokens(50257), note="gpt2 (124M) config, fixed length 128, no KV cache, hidden states out"),
        S("hf_vit", "transformers", "vit", hf("ViTModel", "ViTConfig", arg="pixel_values", add_pooling_layer=False),
          image(name="pixel_values"), note="vit-base-patch16-224 config"),
        S("hf_clip_vision", "transformers", "clip vision", hf("CLIPVisionModel", "CLIPVisionConfig",
                                                                  arg="pixel_values"),
          image(name="pixel_values"), note="ViT-B/32 config"),
        S("hf_segformer", "transformers", "segformer",
          hf("SegformerForSemanticSegmentation", "SegformerConfig", arg="pixel_values", key="logits"),
          image(512, name="pixel_values"), channels_last=True, cost=1.3, note="mit-b0 config, 512x512, logits"),
        S("hf_wav2vec2", "transformers", "wav2vec2 (speech)", hf("Wav2Vec2Model", "Wav2Vec2Config",
                                                               arg="input_values"),
          [Input("input_values", (16000,), AUDIO)], note="wav2vec2-base config, 1 s of 16 kHz audio"),
        S("hf_whisper_encoder", "transformers", "whisper (speech encoder)",
          hf("WhisperModel", "WhisperConfig", arg="input_features", wrap=lambda m: m.get_encoder()),
          [Input("input_features", (80, 3000), AUDIO)], cost=1.3,
          note="WhisperConfig default sizes, encoder only, 80 mel x 3000 frames (30 s)"),
    ]
    return L


SPECS = _specs()
BY_NAME = {s.name: s for s in SPECS}


# ---- random weights that make a numerics check mean something ------------------------------------------


@torch.no_grad()
def fix_tiny(model, g):
    """Zero-init heads, zero-init residual gammas and 1e-6 layer scales (ConvNeXt, PoolFormer) make a
    numerics check blind to whole layers (all-zero logits; blocks that are identities): parameters with
    |x| < 1e-4 become N(0, 0.02) (matrices) or U(0.5, 1) (scales); biases stay."""
    for name, p in model.named_parameters():
        if not p.is_floating_point() or p.numel() == 0 or p.abs().max() >= 1e-4:
            continue
        leaf = name.rsplit(".", 1)[-1]
        if p.dim() >= 2:
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        elif "bias" not in leaf:
            p.copy_(torch.rand(p.shape, generator=g) * 0.5 + 0.5)


@torch.no_grad()
def calibrate_batchnorm(model, xs):
    """Running statistics from one training-mode batch, as training would leave them: random weights
    with BatchNorm at mean 0 / var 1 blow activations up layer after layer (torchvision's Inception-v3
    ends near 1e12, past fp16's range). Returns whether the model has BatchNorm layers."""
    bns = [m for m in model.modules()
           if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.track_running_stats]
    if not bns:
        return False
    saved = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: after one batch, the batch's statistics
    for m in model.modules():  # only BatchNorm in training mode: no dropout, no stochastic depth
        m.training = isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
    try:
        model(*xs)
    finally:
        for m, mom in zip(bns, saved):
            m.momentum = mom
        model.eval()
    return True


@torch.no_grad()
def perturb_norms(model, g):
    """BatchNorm at gamma 1 / beta 0 (and LayerNorm at 1 / 0) is close to an identity, so BN folding and
    norm affines would go untested: weights and running variances x U(0.75, 1.25), biases + N(0, 0.05),
    running means + N(0, 0.1) running standard deviations (relative: an absolute shift turns a channel
    with a tiny variance into a large constant, and deep networks chaotic)."""
    for m in model.modules():
        if "Norm" not in type(m).__name__:
            continue
        ts = dict(list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)))
        ts = {k: t for k, t in ts.items() if t is not None and t.is_floating_point() and t.numel() > 0}
        if "running_mean" in ts and "running_var" in ts:
            mean, var = ts["running_mean"], ts["running_var"]
            mean.add_((torch.randn(mean.shape, generator=g) * 0.1).to(mean.device, mean.dtype) * var.sqrt())
            var.mul_((torch.rand(var.shape, generator=g) * 0.5 + 0.75).to(var.device, var.dtype))
        if "weight" in ts:
            w = ts["weight"]
            w.mul_((torch.rand(w.shape, generator=g) * 0.5 + 0.75).to(w.device, w.dtype))
        if "bias" in ts:
            b = ts["bias"]
            b.add_((torch.randn(b.shape, generator=g) * 0.05).to(b.device, b.dtype))


def build(spec, calibrate=True, device="cpu", perturb=True, calib_batch=2):
    """The model with the zoo's random weights, in eval mode: seeded init, fix_tiny, BatchNorm statistics
    from a batch of calib_batch seeded inputs, perturb_norms. With calibrate=False the BatchNorm statistics
    stay at their init (for loading a state dict saved by export.py)."""
    torch.manual_seed(0)
    m = spec.make()
    m.eval()
    fix_tiny(m, torch.Generator().manual_seed(1234))
    if calibrate:
        m.to(device)
        calibrate_batchnorm(m, example_inputs(spec, calib_batch, device=device, seed=99))
    if perturb:
        perturb_norms(m, torch.Generator().manual_seed(4321))
    return m


@torch.no_grad()
def sensitivity(model, xs):
    """Relative change of output 0 when the float inputs change by 1e-7 (relative): about 1e-6 for a
    well-conditioned network; a chaotic one (some random weights make one) has no meaningful reference."""
    def out0(ys):
        return ys[0] if isinstance(ys, (tuple, list)) else ys

    y = out0(model(*xs)).double()
    y2 = out0(model(*[x * (1 + 1e-7) if x.is_floating_point() else x for x in xs])).double()
    return float((y2 - y).norm() / y.norm().clamp_min(1e-30))


def example_inputs(spec, batch, device="cpu", dtype=None, seed=0):
    """Random inputs for tracing and timing (the numerics inputs come from numpy, in export.py)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    xs = []
    for i in spec.inputs:
        if i.kind == TOKENS:
            x = torch.randint(1, min(i.vocab, 1000), (batch,) + i.shape, generator=g)
        else:
            x = torch.randn((batch,) + i.shape, generator=g)
            if dtype is not None:
                x = x.to(dtype)
        xs.append(x.to(device))
    return xs
