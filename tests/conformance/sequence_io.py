"""Sequence graph I/O for the conformance runner.

kilnrt engines take and return tensors; ONNX sequences are values inside graphs (src/ops/sequence). ONNX's node cases
of the sequence ops mostly take or return sequences, so the runner rewrites them (lower_sequence_io) to keep the
sequence ops under test: sequence inputs are built inside the graph from tensor inputs, sequence outputs are read
back element by element (plus their length).
"""
import numpy as np


def _sequence_elem(vi):
    """The element TypeProto.Tensor of a sequence-of-tensors ValueInfo, else None."""
    if vi.type.WhichOneof("value") != "sequence_type":
        return None
    elem = vi.type.sequence_type.elem_type
    return elem.tensor_type if elem.WhichOneof("value") == "tensor_type" else None


def lower_sequence_io(model, inputs, outputs):
    """kilnrt engines take and return tensors; sequences live inside graphs. A case whose graph inputs / outputs are
    sequences of tensors is rewritten so that its sequence ops still run and are checked: a sequence input of n
    elements becomes n tensor inputs NAME__k joined by SequenceConstruct (SequenceEmpty of the element dtype when
    n == 0); a sequence output of m expected elements becomes NAME__len = SequenceLength (expected m) and the
    outputs NAME__k = SequenceAt(NAME, k). Returns (model, inputs, outputs), unchanged when nothing is a sequence;
    raises ValueError when a sequence I/O cannot be lowered (optional / map types stay excluded)."""
    from onnx import TensorProto, helper, numpy_helper
    graph = model.graph
    if not any(_sequence_elem(vi) is not None for vi in list(graph.input) + list(graph.output)):
        return model, inputs, outputs
    m = type(model)()
    m.CopyFrom(model)
    g = m.graph
    new_inputs, new_in_data, front = [], [], []
    for vi, data in zip(list(g.input), list(inputs)):
        elem = _sequence_elem(vi)
        if elem is None:
            new_inputs.append(vi)
            new_in_data.append(data)
            continue
        names = []
        for k, a in enumerate(data):
            a = np.asarray(a)
            names.append("%s__%d" % (vi.name, k))
            new_inputs.append(helper.make_tensor_value_info(names[-1], elem.elem_type, a.shape))
            new_in_data.append(a)
        if names:
            front.append(helper.make_node("SequenceConstruct", names, [vi.name]))
        else:
            front.append(helper.make_node("SequenceEmpty", [], [vi.name], dtype=elem.elem_type))
    new_outputs, new_out_data, back = [], [], []
    for vi, data in zip(list(g.output), list(outputs)):
        elem = _sequence_elem(vi)
        if elem is None:
            new_outputs.append(vi)
            new_out_data.append(data)
            continue
        if not isinstance(data, (list, tuple)):
            raise ValueError("expected data of sequence output %s is not a list" % vi.name)
        back.append(helper.make_node("SequenceLength", [vi.name], [vi.name + "__len"]))
        new_outputs.append(helper.make_tensor_value_info(vi.name + "__len", TensorProto.INT64, ()))
        new_out_data.append(np.array(len(data), dtype=np.int64))
        for k, a in enumerate(data):
            a = np.asarray(a)
            pos = "%s__pos%d" % (vi.name, k)
            g.initializer.append(numpy_helper.from_array(np.array(k, dtype=np.int64), pos))
            back.append(helper.make_node("SequenceAt", [vi.name, pos], ["%s__%d" % (vi.name, k)]))
            new_outputs.append(helper.make_tensor_value_info("%s__%d" % (vi.name, k), elem.elem_type, a.shape))
            new_out_data.append(a)
    for vi in new_inputs + new_outputs:
        if vi.type.WhichOneof("value") != "tensor_type":
            raise ValueError("%s is not a tensor or a sequence of tensors" % vi.name)
    nodes = front + list(g.node) + back
    del g.node[:]
    g.node.extend(nodes)
    del g.input[:]
    g.input.extend(new_inputs)
    del g.output[:]
    g.output.extend(new_outputs)
    return m, new_in_data, new_out_data
