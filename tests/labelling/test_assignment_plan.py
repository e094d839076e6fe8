"""The Django-free assignment strategy: even spread, double-labelled sample, determinism."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labelling.assignment_plan import (
    PlanError,
    PlannedAssignment,
    double_labelled_count,
    plan_assignments,
    workload,
)


def doubled(plan: list[PlannedAssignment]) -> set:
    return {p.question for p in plan if p.slot == 2}


def test_default_share_double_labels_a_fifth_of_the_questions():
    plan = plan_assignments(questions=range(100), labellers=["ana", "ben", "cem"])
    assert len(doubled(plan)) == 20
    assert len(plan) == 120
    assert Counter(p.slot for p in plan) == {1: 100, 2: 20}


def test_an_absolute_count_wins_over_the_share():
    plan = plan_assignments(
        questions=range(150), labellers=["ana", "ben"], double_share=0.9, double_count=30
    )
    assert len(doubled(plan)) == 30


def test_second_labeller_always_differs_from_the_first():
    plan = plan_assignments(questions=range(60), labellers=["ana", "ben"], double_share=0.5)
    by_question: dict = {}
    for p in plan:
        by_question.setdefault(p.question, []).append(p.labeller)
    for question in doubled(plan):
        first, second = by_question[question]
        assert first != second


def test_work_is_spread_evenly_counting_second_labels():
    plan = plan_assignments(questions=range(101), labellers=list("abcdefg"), double_count=33)
    load = workload(plan)
    assert set(load) == set("abcdefg")
    assert sum(load.values()) == 134
    assert max(load.values()) - min(load.values()) <= 1


def test_every_question_gets_exactly_one_first_labeller_in_question_order():
    questions = [f"q{i}" for i in range(12)]
    plan = plan_assignments(questions=questions, labellers=["a", "b", "c"])
    firsts = [p.question for p in plan if p.slot == 1]
    assert firsts == questions
    # Slot 2 of a question comes right after its slot 1.
    for i, p in enumerate(plan):
        if p.slot == 2:
            assert plan[i - 1].question == p.question and plan[i - 1].slot == 1


def test_same_seed_same_plan_and_another_seed_another_plan():
    kwargs = {"questions": range(50), "labellers": ["a", "b", "c"]}
    assert plan_assignments(**kwargs, seed=7) == plan_assignments(**kwargs, seed=7)
    assert plan_assignments(**kwargs, seed=7) != plan_assignments(**kwargs, seed=8)


def test_without_labellers_every_slot_is_left_unclaimed():
    plan = plan_assignments(questions=range(10), labellers=[], double_count=3)
    assert len(plan) == 13
    assert all(p.labeller is None for p in plan)


def test_current_load_evens_out_a_top_up_plan():
    plan = plan_assignments(
        questions=range(6), labellers=["busy", "idle"], double_share=0, current_load={"busy": 4}
    )
    assert workload(plan) == {"idle": 5, "busy": 1}


def test_a_single_labeller_gets_everything_when_nothing_is_double_labelled():
    plan = plan_assignments(questions=range(5), labellers=["solo"], double_share=0)
    assert workload(plan) == {"solo": 5}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labellers": ["solo"], "double_share": 0.2}, "at least two labellers"),
        ({"labellers": ["a", "b"], "double_count": 11}, "only 10 to plan"),
        ({"labellers": ["a", "b"], "double_count": -1}, "cannot be negative"),
        ({"labellers": ["a", "b"], "double_share": 1.5}, "between 0 and 1"),
        ({"labellers": ["a", "a"]}, "labeller appears twice"),
    ],
)
def test_impossible_plans_are_refused_with_a_clear_message(kwargs, message):
    with pytest.raises(PlanError, match=message):
        plan_assignments(questions=range(10), **kwargs)


def test_duplicate_questions_are_refused():
    with pytest.raises(PlanError, match="question appears twice"):
        plan_assignments(questions=[1, 1], labellers=["a", "b"])


def test_share_rounds_half_up():
    assert double_labelled_count(questions=5) == 1
    assert double_labelled_count(questions=2) == 0
    assert double_labelled_count(questions=3, double_share=0.5) == 2
    assert double_labelled_count(questions=4, double_share=1) == 4


def test_the_module_needs_no_django():
    import subprocess
    import sys

    code = (
        "import sys, labelling.assignment_plan; "
        "sys.exit(1 if any(m == 'django' or m.startswith('django.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@settings(max_examples=150, deadline=None)
@given(
    questions=st.integers(min_value=0, max_value=80),
    labellers=st.integers(min_value=2, max_value=9),
    share=st.floats(min_value=0, max_value=1),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_spread_and_distinct_pairs_hold_for_any_sizes(questions, labellers, share, seed):
    plan = plan_assignments(
        questions=range(questions),
        labellers=range(labellers),
        double_share=share,
        seed=seed,
    )
    load = Counter(p.labeller for p in plan)
    counts = [load.get(labeller, 0) for labeller in range(labellers)]
    assert max(counts) - min(counts) <= 1
    pairs: dict = {}
    for p in plan:
        pairs.setdefault(p.question, set()).add(p.labeller)
    assert all(len(people) == (2 if q in doubled(plan) else 1) for q, people in pairs.items())
    assert len(doubled(plan)) == double_labelled_count(questions=questions, double_share=share)
