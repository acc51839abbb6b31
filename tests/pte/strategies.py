"""Hypothesis strategies for valid `Program`s with their constants and extra segments."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from refsim.pte import model as m

small_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
int64s = st.integers(-(1 << 63), (1 << 63) - 1)
doubles = st.floats(allow_nan=False, width=64)


@dataclass
class Case:
    """A valid program and the data `write_program` needs for it."""

    program: m.Program
    constants: list[bytes]
    segments: list[bytes]


@st.composite
def tensors(draw, constants: list[bytes], arenas: tuple[int, ...]) -> m.Tensor:
    scalar_type = draw(st.sampled_from(m.ScalarType))
    rank = draw(st.integers(0, 4))
    sizes = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    dim_order = tuple(draw(st.permutations(range(rank))))
    t = m.Tensor(scalar_type, sizes, dim_order)
    kinds = ["runtime", "constant"] + (["planned"] if len(arenas) > 1 else [])
    kind = draw(st.sampled_from(kinds))
    extra = draw(
        st.none()
        | st.builds(
            m.ExtraTensorInfo,
            fully_qualified_name=st.none() | small_text,
            device_type=st.sampled_from(m.DeviceType),
            device_index=st.integers(-128, 127),
        )
    )
    fields = {
        "shape_dynamism": draw(st.sampled_from(m.ShapeDynamism)),
        "requires_grad": draw(st.booleans()),
        "layout": draw(st.integers(-128, 127)),
        "extra": extra,
    }
    if kind == "constant":
        reuse = [k for k in range(1, len(constants)) if len(constants[k]) == t.nbytes]
        if reuse and draw(st.booleans()):
            k = draw(st.sampled_from(reuse))
        else:
            # Few distinct byte patterns, so that identical blobs (deduplication) happen.
            constants.append(bytes([draw(st.integers(0, 3))]) * t.nbytes)
            k = len(constants) - 1
        fields["data_buffer_idx"] = k
    elif kind == "planned":
        memory_id = draw(st.integers(1, len(arenas) - 1))
        room = arenas[memory_id] - t.nbytes
        if room >= 0:
            fields["allocation"] = m.Allocation(memory_id, draw(st.integers(0, room)))
    return m.Tensor(scalar_type, sizes, dim_order, **fields)


@st.composite
def plans(draw, name: str, constants: list[bytes], n_delegate_blobs: int) -> m.ExecutionPlan:
    arenas = (0, *draw(st.lists(st.integers(0, 2048), max_size=2)))
    values: list[m.EValue] = []

    def indices_of(*kinds: type) -> list[int]:
        return [i for i, v in enumerate(values) if isinstance(v, kinds)]

    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from([m.ValueKind.TENSOR, m.ValueKind.TENSOR, *m.ValueKind]))
        if kind == m.ValueKind.TENSOR:
            values.append(draw(tensors(constants, arenas)))
        elif kind == m.ValueKind.NULL:
            values.append(m.Null())
        elif kind == m.ValueKind.INT:
            values.append(m.Int(draw(int64s)))
        elif kind == m.ValueKind.BOOL:
            values.append(m.Bool(draw(st.booleans())))
        elif kind == m.ValueKind.DOUBLE:
            values.append(m.Double(draw(doubles)))
        elif kind == m.ValueKind.STRING:
            values.append(m.String(draw(small_text)))
        elif kind == m.ValueKind.DOUBLE_LIST:
            values.append(m.DoubleList(tuple(draw(st.lists(doubles, max_size=4)))))
        elif kind == m.ValueKind.BOOL_LIST:
            values.append(m.BoolList(tuple(draw(st.lists(st.booleans(), max_size=4)))))
        else:
            pool = {
                m.ValueKind.INT_LIST: indices_of(m.Int),
                m.ValueKind.TENSOR_LIST: indices_of(m.Tensor),
                m.ValueKind.OPTIONAL_TENSOR_LIST: [*indices_of(m.Tensor, m.Null), -1],
            }[kind]
            items = tuple(draw(st.lists(st.sampled_from(pool), max_size=4))) if pool else ()
            values.append(m.EVALUE_TYPES[kind](items))

    n = len(values)
    value_index = st.integers(0, n - 1) if n else st.nothing()
    index_lists = st.lists(value_index, max_size=4) if n else st.just([])
    operators = tuple(
        draw(
            st.lists(
                st.builds(m.Operator, small_text.filter(bool), st.sampled_from(["", "out", "Tensor_out"])),
                max_size=3,
            )
        )
    )
    delegates: tuple[m.BackendDelegate, ...] = ()
    if n_delegate_blobs and draw(st.booleans()):
        specs = st.lists(st.builds(m.CompileSpec, small_text, st.binary(max_size=4)), max_size=2)
        index = draw(st.integers(0, n_delegate_blobs - 1))
        delegates = (m.BackendDelegate(draw(small_text), m.DataLocation.INLINE, index, tuple(draw(specs))),)
    conds = indices_of(m.Bool, m.Tensor)
    frees = indices_of(m.Tensor)
    chains = []
    for _ in range(draw(st.integers(0, 2))):
        instructions: list[m.Instruction] = []
        for _ in range(draw(st.integers(0, 4))):
            options = []
            if operators and n:
                options.append(
                    st.builds(m.KernelCall, st.integers(0, len(operators) - 1), index_lists.map(tuple))
                )
            if delegates and n:
                options.append(st.builds(m.DelegateCall, st.just(0), index_lists.map(tuple)))
            if n:
                options.append(st.builds(m.MoveCall, value_index, value_index))
            if conds:
                options.append(st.builds(m.JumpFalseCall, st.sampled_from(conds), st.integers(0, 4)))
            if frees:
                options.append(st.builds(m.FreeCall, st.sampled_from(frees)))
            if options:
                instructions.append(draw(st.one_of(options)))
        # Jump destinations were drawn before the chain's length was known.
        instructions = [
            m.JumpFalseCall(i.cond_value_index, min(i.destination_instruction, len(instructions)))
            if isinstance(i, m.JumpFalseCall)
            else i
            for i in instructions
        ]
        frames = st.builds(m.Frame, st.none() | small_text, st.integers(-(1 << 31), (1 << 31) - 1))
        stacktrace = draw(
            st.none()
            | st.lists(
                st.lists(frames, max_size=2).map(tuple),
                min_size=len(instructions),
                max_size=len(instructions),
            ).map(tuple)
        )
        chains.append(
            m.Chain(tuple(draw(index_lists)), tuple(draw(index_lists)), tuple(instructions), stacktrace)
        )
    devices = st.builds(
        m.NonConstBufferDevice, st.integers(0, len(arenas) - 1), st.sampled_from(m.DeviceType)
    )
    return m.ExecutionPlan(
        name=name,
        values=tuple(values),
        inputs=tuple(draw(index_lists)),
        outputs=tuple(draw(index_lists)),
        chains=tuple(chains),
        operators=operators,
        delegates=delegates,
        non_const_buffer_sizes=arenas,
        container_meta_type=draw(st.none() | st.builds(m.ContainerMetadata, small_text, small_text)),
        non_const_buffer_device=draw(st.none() | st.lists(devices, max_size=2).map(tuple)),
    )


@st.composite
def cases(draw, max_plans: int = 2) -> Case:
    constants = [b""]
    delegate_blobs = tuple(draw(st.lists(st.binary(max_size=8), max_size=2)))
    # method names are C strings for ExecuTorch (the writer refuses a NUL in one)
    names = draw(
        st.lists(small_text.filter(lambda n: "\x00" not in n), min_size=1, max_size=max_plans, unique=True)
    )
    execution_plan = tuple(draw(plans(name, constants, len(delegate_blobs))) for name in names)
    segments = draw(st.lists(st.binary(max_size=40), max_size=2))
    keys = draw(st.lists(small_text, max_size=len(segments) + 1, unique=True)) if segments else []
    named = tuple(m.NamedData(key, draw(st.integers(1, len(segments)))) for key in keys)
    program = m.Program(
        execution_plan=execution_plan,
        backend_delegate_data=delegate_blobs,
        named_data=named,
    )
    return Case(program, constants, segments)
