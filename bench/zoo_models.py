"""The model zoo shared by bench/bench_vs_torch.py and scripts/zoo_accuracy.py (GPU machine, torch 2.x).

Each zoo entry knows how to make the PyTorch model with random weights, make seeded inputs of a batch size, export
the model with torch's default (dynamo) exporter with a dynamic batch dimension, and give kilnrt.build's dynamic-batch
shapes. Random weights are made to behave like a trained network's: BatchNorm statistics are recalibrated with a few
forward passes in train mode on random data, and zero-initialised classifier heads (torchvision's ViT) get random
weights so that the logits are not all zero.

Models: torchvision resnet50, mobilenet_v3_large, efficientnet_b0, convnext_tiny, vit_b_16, mobilenet_v3_small (the
small fixture model), and "bert": `transformers` BertModel with the bert-base config (12 layers, hidden 768, vocab
30522), sequence length 128, inputs input_ids + attention_mask (int64, rows padded to random lengths), outputs
last_hidden_state + pooler_output.

`transformers` on a GPU box without network access (pinned versions, 15 MB of wheels, carried in the ignored folder
.wheels of the repo):
    # on a machine with PyPI access, in the repo root:
    pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --no-deps -d .wheels \
        transformers==4.57.6 huggingface_hub==0.36.2 safetensors==0.8.0 regex==2026.11.15 pyyaml==6.0.3 \
        tqdm==4.70.1 requests==2.34.2 urllib3==2.8.0 idna==3.20 charset_normalizer==3.5.2 certifi==2026.10.18
    # on the GPU box (python 3.12), when `python3 -c "import transformers"` fails:
    pip install --no-index --no-deps --target /tmp/pydeps .wheels/*.whl && export PYTHONPATH=/tmp/pydeps:$PYTHONPATH
(tokenizers is not needed: BertModel takes token ids.) scripts/gpu_suite.sh does the second step by itself, for the
wheels whose distribution the box lacks. The H100 box of 2026-11-22 already had transformers 5.17.0 (used there); the
carried 4.57.6 set has only been through the suite's install step on a CPU machine (python 3.11, which took the four
pure-python / abi3 wheels it lacked), never imported next to torch 2.x: check it on the first box that needs it.
"""
import copy

import torch

SEQ_LEN = 128          # BERT sequence length
MAX_BATCH = 32         # kilnrt engines: one dynamic engine, batch 1..MAX_BATCH
OPT_BATCH = 8


class ZooModel:
    """One zoo entry. `kind`: "cnn" (NCHW image input, channels_last makes sense for torch), "vit" (image input,
    no convolutions after the patch embedding) or "text" (BERT)."""

    def __init__(self, name, make, kind, classifier):
        self.name = name
        self._make = make
        self.kind = kind
        self.classifier = classifier
        self.note = ""  # set by make() / export(), e.g. the attention implementation used
        if kind == "text":
            self.input_names = ["input_ids", "attention_mask"]
            self.output_names = ["last_hidden_state", "pooler_output"]
        else:
            self.input_names = ["x"]
            self.output_names = ["y"]

    @property
    def is_cnn(self):
        return self.kind == "cnn"

    def make(self, device="cuda"):
        """The model with random weights, recalibrated, in eval mode, float32, on `device`."""
        torch.manual_seed(0)
        model = self._make(self).to(device)
        recalibrate(model, self, device)
        return model

    def inputs(self, batch, seed, device="cuda"):
        """Seeded inputs of a batch size, as a tuple in input order (float32 images, or int64 ids + mask)."""
        g = torch.Generator(device="cpu").manual_seed(seed)
        if self.kind != "text":
            return (torch.randn(batch, 3, 224, 224, generator=g).to(device),)
        ids = torch.randint(1000, 30000, (batch, SEQ_LEN), generator=g, dtype=torch.int64)
        ids[:, 0] = 101  # [CLS]
        # Some padding in every batch: rows keep between half and all of their tokens; row 0 of a batch larger than
        # one is full length, a single row is padded.
        keep = torch.randint(SEQ_LEN // 2, SEQ_LEN + 1, (batch,), generator=g)
        keep[0] = SEQ_LEN if batch > 1 else SEQ_LEN - 27
        mask = (torch.arange(SEQ_LEN)[None, :] < keep[:, None]).to(torch.int64)
        ids = torch.where(mask.bool(), ids, torch.zeros_like(ids))  # [PAD] = 0
        return (ids.to(device), mask.to(device))

    def kilnrt_shapes(self, min_batch=1, opt_batch=OPT_BATCH, max_batch=MAX_BATCH):
        """kilnrt.build's shapes= for one dynamic-batch engine."""
        tail = (SEQ_LEN,) if self.kind == "text" else (3, 224, 224)
        return {n: ((min_batch,) + tail, (opt_batch,) + tail, (max_batch,) + tail) for n in self.input_names}

    def static_shapes(self, batch):
        tail = (SEQ_LEN,) if self.kind == "text" else (3, 224, 224)
        return {n: (batch,) + tail for n in self.input_names}

    def export(self, model, path):
        """Exports with torch's default exporter (dynamo=True) and a dynamic batch dimension."""
        batch = torch.export.Dim("batch", min=1, max=64)
        torch.onnx.export(model, self.inputs(2, seed=1234), path, input_names=self.input_names,
                          output_names=self.output_names, dynamo=True,
                          dynamic_shapes=tuple({0: batch} for _ in self.input_names))
        return path


def recalibrate(model, spec, device="cuda"):
    """BatchNorm statistics from a few train-mode forward passes on random data (what a trained network's running
    statistics would roughly look like for these weights), then eval mode."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and float(m.weight.abs().max()) == 0.0:
                torch.nn.init.normal_(m.weight, std=0.02)
    has_bn = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    if has_bn:
        model.train()
        with torch.no_grad():
            for i in range(4):
                model(*spec.inputs(16, seed=10_000 + i, device=device))
    model.eval()


def _torchvision(arch):
    def make(spec):
        import torchvision
        return getattr(torchvision.models, arch)(weights=None)
    return make


def _import_transformers():
    try:
        import transformers
    except ImportError as e:
        raise RuntimeError("the 'bert' zoo model needs the transformers package: %s (offline: see the docstring of "
                           "bench/zoo_models.py for the carried wheels)" % e) from None
    return transformers


class BertForExport(torch.nn.Module):
    """BertModel with positional (input_ids, attention_mask) and a (last_hidden_state, pooler_output) tuple."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)
        return out[0], out[1]


def make_bert(spec, attn=None):
    """bert-base with random weights (transformers' own initialisation, std 0.02). `attn`: the attention
    implementation ("sdpa", transformers' default on torch 2.x, or "eager"); None = spec.attn."""
    transformers = _import_transformers()
    attn = attn or getattr(spec, "attn", "sdpa")
    config = transformers.BertConfig(attn_implementation=attn)  # bert-base-uncased's shape
    model = transformers.BertModel(config, add_pooling_layer=True)
    impl = getattr(model.config, "_attn_implementation", attn)
    spec.note = "transformers %s, attention %s" % (transformers.__version__, impl)
    return BertForExport(model)


def zoo():
    """{name: ZooModel}, in the benchmark's default order."""
    entries = [
        ZooModel("mobilenet_v3_small", _torchvision("mobilenet_v3_small"), "cnn", True),
        ZooModel("resnet50", _torchvision("resnet50"), "cnn", True),
        ZooModel("mobilenet_v3_large", _torchvision("mobilenet_v3_large"), "cnn", True),
        ZooModel("efficientnet_b0", _torchvision("efficientnet_b0"), "cnn", True),
        ZooModel("convnext_tiny", _torchvision("convnext_tiny"), "cnn", True),
        ZooModel("vit_b_16", _torchvision("vit_b_16"), "vit", True),
        ZooModel("bert", make_bert, "text", False),
    ]
    return {e.name: e for e in entries}


def select(names):
    """ZooModel list for a comma-separated list of names ("all" = every model but mobilenet_v3_small)."""
    models = zoo()
    if names in ("all", "", None):
        return [m for n, m in models.items() if n != "mobilenet_v3_small"]
    out = []
    for n in names.split(","):
        if n not in models:
            raise SystemExit("unknown model %r; known: %s" % (n, ", ".join(models)))
        out.append(models[n])
    return out


def torch_variant(model, spec, prec, channels_last):
    """A copy of the fp32 reference model in the precision (and memory format) PyTorch is timed in."""
    m = copy.deepcopy(model)
    if prec == "fp16":
        m = m.half()
    elif prec == "bf16":
        m = m.to(torch.bfloat16)
    if channels_last:
        m = m.to(memory_format=torch.channels_last)
    return m


def torch_inputs(inputs, prec, channels_last):
    """Inputs matching torch_variant: float inputs cast to the precision, images in channels_last when asked."""
    out = []
    for t in inputs:
        if t.is_floating_point():
            t = t.half() if prec == "fp16" else t.to(torch.bfloat16) if prec == "bf16" else t
            if channels_last and t.dim() == 4:
                t = t.contiguous(memory_format=torch.channels_last)
        out.append(t)
    return tuple(out)


def as_tuple(outputs):
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


def accuracy(got, ref):
    """(mean-centred cosine, max abs error / std of the reference), in float64."""
    g = got.detach().double().flatten()
    r = ref.detach().double().flatten()
    a = g - g.mean()
    b = r - r.mean()
    cos = float((a @ b) / (a.norm() * b.norm() + 1e-300))
    err = float((g - r).abs().max() / (r.std() + 1e-300))
    return cos, err


def run_engine(engine, spec, inputs):
    """Runs a kilnrt engine on device inputs; returns the outputs as a tuple in spec.output_names order."""
    result = engine.run(dict(zip(spec.input_names, inputs)))
    return tuple(result[n] for n in spec.output_names)


def reference_settings():
    """PyTorch reference: strict fp32 (TF32 off), deterministic cuDNN choice not required."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
