"""The memory planner on random interval sets: every plan valid, exact == brute force on tiny
cases, the suite no worse than any algorithm, the bound never above an arena."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.planner import (
    ALGORITHMS,
    Buffer,
    Plan,
    PlanError,
    Step,
    align,
    lifetimes,
    lower_bound,
    plan,
    plan_all,
    plan_steps,
    verify,
)
from compiler.planner.greedy import Problem
from compiler.planner.search import branch_and_bound


@st.composite
def buffer_sets(draw, max_buffers=14, max_size=300, horizon=12, mem_ids=(1, 1, 1, 2)):
    n = draw(st.integers(1, max_buffers))
    out = []
    for k in range(n):
        first = draw(st.integers(0, horizon - 1))
        last = draw(st.integers(first, min(horizon - 1, first + draw(st.integers(0, 6)))))
        size = draw(st.one_of(st.integers(0, max_size), st.sampled_from([0, 1, 15, 16, 17, 64])))
        out.append(Buffer(f"b{k}", size, first, last, draw(st.sampled_from(mem_ids))))
    return out


def overlapping_pairs(buffers, p: Plan, alignment=16):
    """The oracle: every pair of buffers, O(n^2), no sorting tricks."""
    bad = []
    for a, b in itertools.combinations(buffers, 2):
        if a.mem_id != b.mem_id or not a.size or not b.size:
            continue
        if a.first <= b.last and b.first <= a.last:
            oa, ob = p.offsets[a.name], p.offsets[b.name]
            if oa < ob + align(b.size, alignment) and ob < oa + align(a.size, alignment):
                bad.append((a.name, b.name))
    return bad


def check_plan(buffers, p: Plan, alignment=16):
    assert set(p.offsets) == {b.name for b in buffers}
    assert all(off % alignment == 0 and off >= 0 for off in p.offsets.values())
    assert overlapping_pairs(buffers, p, alignment) == []
    for b in buffers:
        if b.size:
            assert p.offsets[b.name] + align(b.size, alignment) <= p.arenas[b.mem_id]
    assert p.lower_bound == lower_bound(buffers, alignment) <= p.arena_bytes


@given(buffer_sets())
def test_every_algorithm_gives_a_valid_plan_above_the_bound_and_best_is_smallest(buffers):
    plans = plan_all(buffers, time_limit_s=0.5)
    assert set(plans) == set(ALGORITHMS)
    for p in plans.values():
        check_plan(buffers, p)
    best = plan(buffers, time_limit_s=0.5)
    check_plan(buffers, best)
    assert best.algorithm.startswith("best:")
    for p in plans.values():
        assert sum(best.arenas.values()) <= sum(p.arenas.values()), p.algorithm


def brute_force(buffers, alignment=16) -> int:
    """The smallest arena over every assignment of aligned offsets (backtracking on the grid)."""
    units = [align(b.size, alignment) // alignment for b in buffers]
    ceiling = sum(units)
    best = [ceiling]
    offs = [0] * len(buffers)

    def go(k, top):
        if top >= best[0]:
            return
        if k == len(buffers):
            best[0] = top
            return
        for x in range(ceiling - units[k] + 1):
            if all(
                not (buffers[j].first <= buffers[k].last and buffers[k].first <= buffers[j].last)
                or x + units[k] <= offs[j]
                or offs[j] + units[j] <= x
                for j in range(k)
            ):
                offs[k] = x
                go(k + 1, max(top, x + units[k]))

    go(0, 0)
    return best[0] * alignment


@given(buffer_sets(max_buffers=6, max_size=64, horizon=5, mem_ids=(1,)))
def test_exact_equals_brute_force_on_tiny_cases(buffers):
    buffers = [b for b in buffers if b.size]
    if not buffers:
        buffers = [Buffer("only", 16, 0, 0)]
    problem = Problem.build(buffers, 16)
    # started from a poor incumbent so the tree search itself must find the optimum
    from compiler.planner.greedy import greedy_by_size

    offsets, proven = branch_and_bound(problem, 10.0, incumbent=greedy_by_size(problem))
    assert proven
    top = max(o + s for o, s in zip(offsets, problem.sizes, strict=True))
    assert top == brute_force(buffers)
    assert plan(buffers, algorithm="exact", time_limit_s=10.0).arena_bytes == top


def test_the_search_beats_the_one_pass_planners_where_they_fragment():
    # found by a random search: every one-pass order leaves a 16-byte hole under "e"
    buffers = [
        Buffer("a", 16, 0, 2),
        Buffer("b", 80, 0, 0),
        Buffer("c", 32, 0, 3),
        Buffer("d", 80, 3, 3),
        Buffer("e", 64, 1, 4),
    ]
    plans = plan_all(buffers)
    assert lower_bound(buffers) == 176
    for name in ("greedy_by_size", "executorch_greedy", "first_fit"):
        assert plans[name].arena_bytes == 192, name
    assert plans["exact"].arena_bytes == plans["local_search"].arena_bytes == 176
    assert plan(buffers).arena_bytes == 176


def test_lifetimes_follow_the_steps_and_the_graph_io():
    steps = [
        Step("conv", ("x",), ("y", "scratch")),
        Step("pool", ("y",), ("z",)),
        Step("fc", ("z",), ("out",)),
    ]
    sizes = {"x": 100, "y": 200, "scratch": 30, "z": 50, "out": 10, "unused": 999}
    got = lifetimes(steps, sizes, graph_inputs=("x",), graph_outputs=("out", "y"))
    assert got == [
        Buffer("x", 100, 0, 0),
        Buffer("y", 200, 0, 2),
        Buffer("scratch", 30, 0, 0),
        Buffer("z", 50, 1, 2),
        Buffer("out", 10, 2, 2),
    ]
    assert lower_bound(got) == align(100) + align(200) + align(30)
    with pytest.raises(PlanError, match="'w'"):
        lifetimes([Step("s", ("w",), ())], sizes)


def test_verify_rejects_overlaps_misalignment_missing_offsets_and_arena_overflow():
    buffers = [Buffer("a", 32, 0, 1), Buffer("b", 32, 1, 2), Buffer("c", 32, 2, 3)]
    good = Plan({"a": 0, "b": 32, "c": 0}, 64, "hand", lower_bound(buffers), {1: 64})
    verify(buffers, good)
    with pytest.raises(PlanError, match=r"'a'.*'b'"):
        verify(buffers, Plan({"a": 0, "b": 16, "c": 0}, 64, "hand", 64, {1: 64}))
    with pytest.raises(PlanError, match="multiple of 16"):
        verify(buffers, Plan({"a": 0, "b": 40, "c": 0}, 96, "hand", 64, {1: 96}))
    with pytest.raises(PlanError, match="no offset"):
        verify(buffers, Plan({"a": 0, "b": 32}, 64, "hand", 64, {1: 64}))
    with pytest.raises(PlanError, match="beyond arena"):
        verify(buffers, Plan({"a": 0, "b": 32, "c": 0}, 48, "hand", 64, {1: 48}))
    with pytest.raises(PlanError, match="unknown planner"):
        plan(buffers, algorithm="nope")
    with pytest.raises(PlanError, match="power of two"):
        plan(buffers, alignment=24)
    with pytest.raises(PlanError, match="twice"):
        plan([*buffers, buffers[0]])


def test_separate_arenas_are_planned_apart():
    buffers = [Buffer("a", 100, 0, 3), Buffer("b", 100, 0, 3, mem_id=2), Buffer("c", 16, 1, 2, mem_id=2)]
    p = plan(buffers)
    assert p.arenas == {1: 112, 2: 128}
    assert p.arena_bytes == 112 and p.offsets["a"] == 0 and p.offsets["b"] == 0


def test_plan_steps_reports_the_given_and_the_chosen_bound():
    steps = [
        Step("a", ("x",), ("a",)),
        Step("b", ("a",), ("b",)),
        Step("s", ("x",), ("s",)),
        Step("add", ("b", "s"), ("y",)),
    ]
    sizes = {"x": 96, "a": 48, "b": 96, "s": 16, "y": 16}
    io = {"graph_inputs": ("x",), "graph_outputs": ("y",)}
    fixed = plan_steps(steps, sizes, reorder=False, **io)
    moved = plan_steps(steps, sizes, **io)
    assert fixed.given_bound == fixed.chosen_bound == 240  # x + a + b at step b
    assert moved.given_bound == 240 and moved.chosen_bound == 160 < moved.given_bound
    names = [s.name for s in moved.steps]
    assert names.index("s") < names.index("b")  # the shortcut runs before x's big consumer chain ends
    assert moved.plan.arena_bytes == moved.chosen_bound
    verify(moved.buffers, moved.plan)
