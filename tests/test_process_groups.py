"""jaxcourse.launch.process_groups: HLO replica groups, mapped to processes and axes."""
import pytest

from jaxcourse.launch.process_groups import (
    axes_of_groups,
    crosses_processes,
    grouped_collectives,
    processes_joined,
    replica_groups,
)

# Two lines of the step chapter 8 compiles on 2 processes x 2 devices (jax 0.10.2, CPU).
HLO = "\n".join([
    "  %all-reduce = f32[4,16]{1,0} all-reduce(%ynn_fusion.1), channel_id=1,"
    " replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add.clone",
    "  %broadcast_multiply_fusion = f32[4,16]{1,0} fusion(%all-reduce), kind=kLoop,"
    " calls=%fused_computation.4",
    "  %all-reduce.3 = (f32[16,16]{1,0}, f32[16,16]{1,0}) all-reduce(%dot.3, %dot.4),"
    " channel_id=2, replica_groups={{0,2},{1,3}}, use_global_device_ids=true,"
    " to_apply=%add.1.clone",
])
PROCESS_OF = [0, 0, 1, 1]  # a mesh of 2 x 2 whose rows are the processes


def test_both_spellings_of_the_groups_give_the_same_sets():
    assert replica_groups("replica_groups={{0,2},{1,3}}, x") == ((0, 2), (1, 3))
    assert replica_groups("replica_groups=[2,2]<=[2,2]T(1,0), x") == ((0, 2), (1, 3))
    assert replica_groups("replica_groups=[2,2]<=[4], x") == ((0, 1), (2, 3))
    with pytest.raises(ValueError, match="no replica groups"):
        replica_groups("%x = f32[4] add(%a, %b)")


def test_each_collective_is_read_once_with_its_shape_and_groups():
    found = grouped_collectives(HLO)
    assert [(op.name, op.kind, op.shape) for op in found] == [
        ("all-reduce", "all-reduce", "f32[4,16]"),
        ("all-reduce.3", "all-reduce", "(f32[16,16], f32[16,16])")]
    assert [op.groups for op in found] == [((0, 1), (2, 3)), ((0, 2), (1, 3))]


def test_the_model_axis_stays_in_a_process_and_the_data_axis_crosses():
    model, data = (op.groups for op in grouped_collectives(HLO))
    assert processes_joined(model, PROCESS_OF) == [(0,), (1,)]
    assert processes_joined(data, PROCESS_OF) == [(0, 1), (0, 1)]
    assert not crosses_processes(model, PROCESS_OF)
    assert crosses_processes(data, PROCESS_OF)
    assert axes_of_groups(model, (2, 2), ("data", "model")) == ("model",)
    assert axes_of_groups(data, (2, 2), ("data", "model")) == ("data",)
    names = ("data", "model")
    assert axes_of_groups(((0, 1, 2, 3),), (2, 2), names) == names
    assert axes_of_groups(((0, 3), (1, 2)), (2, 2), names) == ()
